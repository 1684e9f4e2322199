/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the JSON writer (lib/common/json.c). The input is
 * split at its first 0x00 byte into a key and a value (any bytes: controls,
 * quotes, invalid UTF-8). They are written as a member, as an array element
 * and as a top-level string; the harness then checks that:
 *   - the document parses with the strict parser of json_check.h;
 *   - every string decodes back to the exact input bytes (valid UTF-8
 *     unchanged, invalid bytes by the surrogateescape rule);
 *   - the document holds no raw byte below 0x20, no DEL and no C1 control;
 *   - the terminal sanitizer (common/term.h) leaves no control byte either;
 *   - the page-safe form (ct_json_escape_html) parses as a string, holds no
 *     '<', '>' or '&' and no control byte.
 * Then the same bytes drive the writer as a program (each byte one call:
 * begin/end of objects and arrays, keys, values, in any order, misuse
 * included): whenever ct_json_finish() says 0, the document must parse, and
 * a misused call must leave an error, never a malformed document.
 * A violation aborts.
 */
#include "common/compat.h"

#include "common/json.h"
#include "common/json_check.h"
#include "common/strbuf.h"
#include "common/term.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect(const struct strbuf *strs, size_t *off, const void *want, size_t len)
{
	uint32_t n;

	if (*off + 4 > strs->len)
		abort();
	memcpy(&n, strs->buf + *off, 4);
	*off += 4;
	if (n != len || *off + n > strs->len || memcmp(strs->buf + *off, want, len))
		abort();
	*off += n;
}

static void no_controls(const struct strbuf *sb, bool newline_ok)
{
	size_t i;

	for (i = 0; i < sb->len; i++) {
		unsigned char c = (unsigned char)sb->buf[i];

		if ((c < 0x20 && !(newline_ok && c == '\n')) || c == 0x7f)
			abort();
		/* C1 controls as UTF-8: 0xc2 0x80..0x9f */
		if (c == 0xc2 && i + 1 < sb->len && (unsigned char)sb->buf[i + 1] < 0xa0)
			abort();
	}
}

/* The bytes as a sequence of writer calls; returns ct_json_finish(). */
static int program(const uint8_t *data, size_t size, struct strbuf *sb)
{
	struct ct_json j;
	size_t i;

	ct_json_init(&j, sb);
	for (i = 0; i < size; i++) {
		const char *s = (const char *)data + i + 1;
		size_t n = CT_MIN((size_t)(data[i] >> 4), size - i - 1);

		switch (data[i] & 15) {
		case 0: ct_json_obj_begin(&j); break;
		case 1: ct_json_obj_end(&j); break;
		case 2: ct_json_arr_begin(&j); break;
		case 3: ct_json_arr_end(&j); break;
		case 4: ct_json_keyn(&j, s, n); i += n; break;
		case 5: ct_json_strn(&j, s, n); i += n; break;
		case 6: ct_json_u64(&j, data[i]); break;
		case 7: ct_json_i64(&j, -(int64_t)data[i]); break;
		case 8: ct_json_double(&j, (double)data[i] / 7.0); break;
		case 9: ct_json_bool(&j, data[i] & 16); break;
		case 10: ct_json_null(&j); break;
		case 11: ct_json_obj_begin_lines(&j); break;
		case 12: ct_json_arr_begin_lines(&j); break;
		case 13: ct_json_kv_str(&j, "k", NULL); break;
		case 14: ct_json_str(&j, NULL); break;
		default: ct_json_kv_obj_begin(&j, ""); break;
		}
	}
	return ct_json_finish(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *key = (const char *)data, *val;
	size_t klen, vlen, off = 0;
	struct strbuf sb = STRBUF_INIT, strs = STRBUF_INIT, term = STRBUF_INIT;
	const uint8_t *z;
	struct ct_json j;

	if (size > 4096)
		return 0;
	z = memchr(data, 0, size);
	klen = z ? (size_t)(z - data) : size;
	val = z ? (const char *)z + 1 : "";
	vlen = z ? size - klen - 1 : 0;

	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_keyn(&j, key, klen);
	ct_json_strn(&j, val, vlen);
	ct_json_kv_arr_begin(&j, "a");
	ct_json_strn(&j, key, klen);
	ct_json_strn(&j, (const char *)data, size);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	if (ct_json_finish(&j))
		abort();
	if (json_check(sb.buf, sb.len, &strs, NULL))
		abort();
	expect(&strs, &off, key, klen);
	expect(&strs, &off, val, vlen);
	expect(&strs, &off, "a", 1);
	expect(&strs, &off, key, klen);
	expect(&strs, &off, data, size);
	if (off != strs.len)
		abort();
	no_controls(&sb, false);

	if (ct_term_escape(&term, (const char *)data, size))
		abort();
	no_controls(&term, false);

	strbuf_reset(&sb);
	(void)strbuf_addch(&sb, '"');
	if (ct_json_escape_html(&sb, (const char *)data, size) || strbuf_addch(&sb, '"'))
		abort();
	if (json_check(sb.buf, sb.len, NULL, NULL) || memchr(sb.buf, '<', sb.len) ||
	    memchr(sb.buf, '>', sb.len) || memchr(sb.buf, '&', sb.len))
		abort();
	no_controls(&sb, false);

	strbuf_reset(&sb);
	if (!program(data, size, &sb)) {
		if (json_check(sb.buf, sb.len, NULL, NULL))
			abort();
		no_controls(&sb, true); /* the lines mode adds newlines between members */
	}

	strbuf_release(&sb);
	strbuf_release(&strs);
	strbuf_release(&term);
	return 0;
}
