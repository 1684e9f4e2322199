/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <math.h>

#include "common/json.h"
#include "common/utf16.h"

static const char hexdig[] = "0123456789abcdef";

static int add_u(struct strbuf *sb, uint32_t v)
{
	char b[6] = { '\\', 'u', hexdig[v >> 12 & 15], hexdig[v >> 8 & 15], hexdig[v >> 4 & 15],
		      hexdig[v & 15] };

	return strbuf_add(sb, b, sizeof(b));
}

/* Characters a page's <script> element must not see raw. */
static bool html_special(unsigned char c)
{
	return c == '<' || c == '>' || c == '&';
}

/*
 * Bytes that pass through unchanged: printable ASCII except '"' and '\'
 * (and, for a page, '<', '>' and '&').
 */
static bool plain(unsigned char c, bool html)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && !(html && html_special(c));
}

/* Length of the run at s[0..len) that is copied unchanged. */
static size_t plain_run(const char *s, size_t len, bool html)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (plain(c, html)) {
			i++;
			continue;
		}
		if (c < 0x80)
			break;
		n = utf8_valid(s + i, len - i, &cp);
		if (!n || cp <= 0x9f || cp == 0x2028 || cp == 0x2029)
			break;
		i += n;
	}
	return i;
}

static int escape(struct strbuf *sb, const char *s, size_t len, bool html)
{
	size_t i = 0;

	while (i < len && !sb->err) {
		size_t run = plain_run(s + i, len - i, html);
		unsigned char c;
		uint32_t cp;
		size_t n;

		if (run) {
			(void)strbuf_add(sb, s + i, run);
			i += run;
			continue;
		}
		c = (unsigned char)s[i];
		switch (c) {
		case '"':
			(void)strbuf_add(sb, "\\\"", 2);
			i++;
			continue;
		case '\\':
			(void)strbuf_add(sb, "\\\\", 2);
			i++;
			continue;
		case '\b':
			(void)strbuf_add(sb, "\\b", 2);
			i++;
			continue;
		case '\f':
			(void)strbuf_add(sb, "\\f", 2);
			i++;
			continue;
		case '\n':
			(void)strbuf_add(sb, "\\n", 2);
			i++;
			continue;
		case '\r':
			(void)strbuf_add(sb, "\\r", 2);
			i++;
			continue;
		case '\t':
			(void)strbuf_add(sb, "\\t", 2);
			i++;
			continue;
		default:
			break;
		}
		if (c < 0x80) { /* other C0 controls, DEL, and a page's <, >, & */
			(void)add_u(sb, c);
			i++;
			continue;
		}
		n = utf8_valid(s + i, len - i, &cp);
		if (!n && html) {
			(void)strbuf_add(sb, "\xef\xbf\xbd", 3); /* a page shows U+FFFD */
			i++;
		} else if (!n) {
			(void)add_u(sb, 0xdc00 | c); /* surrogateescape */
			i++;
		} else { /* C1 control, U+2028, U+2029 */
			(void)add_u(sb, cp);
			i += n;
		}
	}
	return sb->err;
}

int ct_json_escape(struct strbuf *sb, const char *s, size_t len)
{
	return escape(sb, s, len, false);
}

int ct_json_escape_html(struct strbuf *sb, const char *s, size_t len)
{
	return escape(sb, s, len, true);
}

static void fail(struct ct_json *j, int err)
{
	if (!j->err)
		j->err = err;
}

static bool bit(const uint64_t *set, unsigned i)
{
	return set[i / 64] >> (i % 64) & 1;
}

static void set_bit(uint64_t *set, unsigned i, bool v)
{
	if (v)
		set[i / 64] |= (uint64_t)1 << (i % 64);
	else
		set[i / 64] &= ~((uint64_t)1 << (i % 64));
}

static bool in_obj(const struct ct_json *j)
{
	return j->depth && bit(j->is_obj, j->depth - 1);
}

/* Before a member of the innermost container: the comma, and the newline. */
static void separator(struct ct_json *j)
{
	if (bit(j->has_item, j->depth - 1))
		(void)strbuf_addch(j->sb, ',');
	if (bit(j->lines, j->depth - 1))
		(void)strbuf_addch(j->sb, '\n');
	set_bit(j->has_item, j->depth - 1, true);
}

/* Before any value: checks the position and writes the separator. */
static bool value_ok(struct ct_json *j)
{
	if (j->err)
		return false;
	if (!j->depth) {
		if (j->done) {
			fail(j, -EINVAL);
			return false;
		}
		return true;
	}
	if (in_obj(j)) {
		if (!j->have_key) {
			fail(j, -EINVAL);
			return false;
		}
		j->have_key = false;
		return true;
	}
	separator(j);
	return true;
}

/* After a value: a top-level value completes the document. */
static void value_done(struct ct_json *j)
{
	if (!j->depth)
		j->done = true;
	if (j->sb->err)
		fail(j, j->sb->err);
}

void ct_json_init(struct ct_json *j, struct strbuf *sb)
{
	memset(j, 0, sizeof(*j));
	j->sb = sb;
	j->err = sb->err;
}

int ct_json_finish(struct ct_json *j)
{
	if (!j->err && (j->depth || !j->done || j->have_key))
		fail(j, -EINVAL);
	if (!j->err && j->sb->err)
		fail(j, j->sb->err);
	return j->err;
}

static void begin(struct ct_json *j, bool obj, bool lines)
{
	if (!value_ok(j))
		return;
	if (j->depth >= CT_JSON_MAX_DEPTH) {
		fail(j, -E2BIG);
		return;
	}
	(void)strbuf_addch(j->sb, obj ? '{' : '[');
	set_bit(j->is_obj, j->depth, obj);
	set_bit(j->has_item, j->depth, false);
	set_bit(j->lines, j->depth, lines);
	j->depth++;
	if (j->sb->err)
		fail(j, j->sb->err);
}

static void end(struct ct_json *j, bool obj)
{
	if (j->err)
		return;
	if (!j->depth || in_obj(j) != obj || j->have_key) {
		fail(j, -EINVAL);
		return;
	}
	j->depth--;
	if (bit(j->lines, j->depth))
		(void)strbuf_addch(j->sb, '\n');
	(void)strbuf_addch(j->sb, obj ? '}' : ']');
	value_done(j);
}

void ct_json_obj_begin(struct ct_json *j)
{
	begin(j, true, false);
}

void ct_json_obj_begin_lines(struct ct_json *j)
{
	begin(j, true, true);
}

void ct_json_arr_begin_lines(struct ct_json *j)
{
	begin(j, false, true);
}

void ct_json_obj_end(struct ct_json *j)
{
	end(j, true);
}

void ct_json_arr_begin(struct ct_json *j)
{
	begin(j, false, false);
}

void ct_json_arr_end(struct ct_json *j)
{
	end(j, false);
}

static void quoted(struct ct_json *j, const char *s, size_t len)
{
	(void)strbuf_addch(j->sb, '"');
	(void)ct_json_escape(j->sb, s, len);
	(void)strbuf_addch(j->sb, '"');
}

void ct_json_keyn(struct ct_json *j, const char *key, size_t len)
{
	if (j->err)
		return;
	if (!in_obj(j) || j->have_key || !key) {
		fail(j, -EINVAL);
		return;
	}
	separator(j);
	quoted(j, key, len);
	(void)strbuf_addch(j->sb, ':');
	j->have_key = true;
	if (j->sb->err)
		fail(j, j->sb->err);
}

void ct_json_key(struct ct_json *j, const char *key)
{
	ct_json_keyn(j, key, key ? strlen(key) : 0);
}

void ct_json_strn(struct ct_json *j, const char *s, size_t len)
{
	if (!s) {
		ct_json_null(j);
		return;
	}
	if (!value_ok(j))
		return;
	quoted(j, s, len);
	value_done(j);
}

void ct_json_str(struct ct_json *j, const char *s)
{
	ct_json_strn(j, s, s ? strlen(s) : 0);
}

void ct_json_u64(struct ct_json *j, uint64_t v)
{
	if (!value_ok(j))
		return;
	(void)strbuf_addf(j->sb, "%" PRIu64, v);
	value_done(j);
}

void ct_json_i64(struct ct_json *j, int64_t v)
{
	if (!value_ok(j))
		return;
	(void)strbuf_addf(j->sb, "%" PRId64, v);
	value_done(j);
}

void ct_json_double(struct ct_json *j, double v)
{
	if (!isfinite(v)) {
		ct_json_null(j);
		return;
	}
	if (!value_ok(j))
		return;
	/* the shortest of %.15g..%.17g that reads back as v ("1e+300" is JSON) */
	{
		char b[32];
		int prec;

		for (prec = 15; prec < 17; prec++) {
			snprintf(b, sizeof(b), "%.*g", prec, v);
			if (strtod(b, NULL) == v)
				break;
		}
		snprintf(b, sizeof(b), "%.*g", prec, v);
		(void)strbuf_addstr(j->sb, b);
	}
	value_done(j);
}

void ct_json_bool(struct ct_json *j, bool v)
{
	if (!value_ok(j))
		return;
	(void)strbuf_addstr(j->sb, v ? "true" : "false");
	value_done(j);
}

void ct_json_null(struct ct_json *j)
{
	if (!value_ok(j))
		return;
	(void)strbuf_addstr(j->sb, "null");
	value_done(j);
}

void ct_json_kv_str(struct ct_json *j, const char *key, const char *s)
{
	ct_json_key(j, key);
	ct_json_str(j, s);
}

void ct_json_kv_u64(struct ct_json *j, const char *key, uint64_t v)
{
	ct_json_key(j, key);
	ct_json_u64(j, v);
}

void ct_json_kv_i64(struct ct_json *j, const char *key, int64_t v)
{
	ct_json_key(j, key);
	ct_json_i64(j, v);
}

void ct_json_kv_double(struct ct_json *j, const char *key, double v)
{
	ct_json_key(j, key);
	ct_json_double(j, v);
}

void ct_json_kv_bool(struct ct_json *j, const char *key, bool v)
{
	ct_json_key(j, key);
	ct_json_bool(j, v);
}

void ct_json_kv_null(struct ct_json *j, const char *key)
{
	ct_json_key(j, key);
	ct_json_null(j);
}

void ct_json_kv_obj_begin(struct ct_json *j, const char *key)
{
	ct_json_key(j, key);
	ct_json_obj_begin(j);
}

void ct_json_kv_arr_begin(struct ct_json *j, const char *key)
{
	ct_json_key(j, key);
	ct_json_arr_begin(j);
}

void ct_json_frame_members(struct ct_json *j, const char *name)
{
	const char *bang = strchr(name, '!');

	if (!strncmp(name, "[k] ", 4)) {
		ct_json_kv_str(j, "name", name + 4);
		ct_json_kv_str(j, "module", "[kernel]");
	} else if (bang && bang != name && !memchr(name, ':', (size_t)(bang - name)) &&
		   !memchr(name, ' ', (size_t)(bang - name))) {
		ct_json_kv_str(j, "name", bang + 1);
		ct_json_key(j, "module");
		ct_json_strn(j, name, (size_t)(bang - name));
	} else {
		/* managed code and placeholders: the name says no module */
		ct_json_kv_str(j, "name", name);
		ct_json_kv_null(j, "module");
	}
}

void ct_json_frame(struct ct_json *j, const char *name)
{
	ct_json_obj_begin(j);
	ct_json_frame_members(j, name);
	ct_json_obj_end(j);
}
