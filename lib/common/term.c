/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/term.h"
#include "common/utf16.h"

static bool escaped_cp(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0x061c ||
	       cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* Length of the unchanged run at s[0..len), 0 when s[0] needs an escape. */
static size_t safe_run(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			i++;
			continue;
		}
		if (c < 0x80)
			break;
		n = utf8_valid(s + i, len - i, &cp);
		if (!n || escaped_cp(cp))
			break;
		i += n;
	}
	return i;
}

bool ct_term_is_safe(const char *s, size_t len)
{
	return safe_run(s, len) == len;
}

int ct_term_escape(struct strbuf *sb, const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && !sb->err) {
		size_t run = safe_run(s + i, len - i);
		unsigned char c;
		uint32_t cp;
		size_t n;

		if (run) {
			(void)strbuf_add(sb, s + i, run);
			i += run;
			continue;
		}
		c = (unsigned char)s[i];
		if (c == '\\') {
			(void)strbuf_add(sb, "\\\\", 2);
			i++;
		} else if (c == '\n') {
			(void)strbuf_add(sb, "\\n", 2);
			i++;
		} else if (c == '\r') {
			(void)strbuf_add(sb, "\\r", 2);
			i++;
		} else if (c == '\t') {
			(void)strbuf_add(sb, "\\t", 2);
			i++;
		} else if (c < 0x80) {
			(void)strbuf_addf(sb, "\\x%02x", c);
			i++;
		} else if ((n = utf8_valid(s + i, len - i, &cp)) != 0) {
			(void)strbuf_addf(sb, "\\u{%04x}", cp);
			i += n;
		} else {
			(void)strbuf_addf(sb, "\\x%02x", c);
			i++;
		}
	}
	return sb->err;
}

int ct_term_escape_str(struct strbuf *sb, const char *s)
{
	if (!s)
		return strbuf_addstr(sb, "(null)");
	return ct_term_escape(sb, s, strlen(s));
}

const char *ct_term_safe(const char *s)
{
	static __thread struct strbuf ring[CT_TERM_SAFE_SLOTS];
	static __thread unsigned next;
	struct strbuf *sb = &ring[next++ % CT_TERM_SAFE_SLOTS];
	size_t len;

	if (!s)
		return "(null)";
	len = strlen(s);
	if (len <= CT_TERM_SAFE_INPUT && ct_term_is_safe(s, len))
		return s;
	if (!sb->max)
		strbuf_init(sb, 0); /* zeroed (thread-local): set up once */
	strbuf_reset(sb);
	/* An escape is at most 4 bytes a byte: the input cap bounds the output. */
	(void)ct_term_escape(sb, s, CT_MIN(len, (size_t)CT_TERM_SAFE_INPUT));
	if (len > CT_TERM_SAFE_INPUT)
		(void)strbuf_addstr(sb, "...");
	return strbuf_error(sb) ? "(out of memory)" : sb->buf;
}
