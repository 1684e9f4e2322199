/* SPDX-License-Identifier: MIT */
/*
 * json.h - the one JSON writer: every --json output (and counters collect
 * --format json) goes through it. (The flame graph files, speedscope JSON
 * and the data block of the HTML page, have their own streaming escaper in
 * lib/flame, which also escapes '<', '>' and '&' for HTML.)
 *
 * The writer appends compact JSON to a strbuf. It tracks nesting and commas
 * itself, so a caller never writes a separator; it escapes every key and
 * every string value. Misuse (a value in an object without a key, a key in an
 * array, an end that does not match its begin, a second top-level value,
 * nesting deeper than CT_JSON_MAX_DEPTH) is an error, as is any strbuf
 * failure. Errors are sticky: after the first one every call is a no-op, and
 * ct_json_finish() returns it. So callers ignore the results of the
 * individual calls and check ct_json_finish() once.
 *
 * String escaping (ct_json_escape), byte by byte over the input:
 *   - '"' and '\' as \" and \\; \b \f \n \r \t by their short forms; every
 *     other byte below 0x20, and 0x7f, as \u00XX;
 *   - valid UTF-8 is copied unchanged, except U+0080..U+009F (C1 controls),
 *     U+2028 and U+2029, which are written as \uXXXX: a JSON document printed
 *     to a terminal carries no raw control character, and it is also valid
 *     JavaScript;
 *   - each byte that is not part of a valid UTF-8 sequence (a stray
 *     continuation byte, a truncated or overlong sequence, an encoded
 *     surrogate, a code point above U+10FFFF, 0xC0, 0xC1, 0xF5..0xFF) is
 *     written as the lone low surrogate \uDCXX, XX being the byte. This is
 *     the "surrogateescape" rule of Python's PEP 383: the output is
 *     grammatical JSON (RFC 8259) and the exact input bytes come back with
 *     s.encode("utf-8", "surrogateescape") in Python. Parsers that replace
 *     lone surrogates (jq, Go) show U+FFFD there. Valid UTF-8 never produces
 *     a surrogate escape, so the rule is unambiguous.
 * Keys are escaped by the same rule; an empty key is written as "".
 */
#ifndef CLRTAP_COMMON_JSON_H
#define CLRTAP_COMMON_JSON_H

#include "common/compat.h"
#include "common/strbuf.h"

/* deep enough for a call tree of STACKS_MAX_FRAMES frames (two levels a frame) */
#define CT_JSON_MAX_DEPTH 16384

struct ct_json {
	struct strbuf *sb;
	int err;        /* first error (negative errno); sticky */
	unsigned depth; /* open objects and arrays */
	bool have_key;  /* a key was written; its value comes next */
	bool done;      /* a complete top-level value was written */
	/* per level: bit set = object (else array); bit set = has a member */
	uint64_t is_obj[CT_JSON_MAX_DEPTH / 64];
	uint64_t has_item[CT_JSON_MAX_DEPTH / 64];
	uint64_t lines[CT_JSON_MAX_DEPTH / 64]; /* bit set = one member a line */
};

/* Starts a writer that appends one JSON value to sb. */
void ct_json_init(struct ct_json *j, struct strbuf *sb);
/*
 * 0 when exactly one complete value was written and nothing failed; else
 * the sticky error (-EINVAL for misuse or an unfinished value, or the
 * strbuf's -ENOMEM/-EMSGSIZE).
 */
int ct_json_finish(struct ct_json *j);

void ct_json_obj_begin(struct ct_json *j);
void ct_json_obj_end(struct ct_json *j);
void ct_json_arr_begin(struct ct_json *j);
void ct_json_arr_end(struct ct_json *j);
/*
 * The same, with each member on a line of its own (a newline before each
 * member and before the end; whitespace JSON allows): for long lists that
 * people or line tools read, e.g. ps rows or counters values.
 */
void ct_json_obj_begin_lines(struct ct_json *j);
void ct_json_arr_begin_lines(struct ct_json *j);

/* A member name inside an object; NULL is misuse. */
void ct_json_key(struct ct_json *j, const char *key);
void ct_json_keyn(struct ct_json *j, const char *key, size_t len);

/* Values. A NULL string is written as null. */
void ct_json_str(struct ct_json *j, const char *s);
void ct_json_strn(struct ct_json *j, const char *s, size_t len);
void ct_json_u64(struct ct_json *j, uint64_t v);
void ct_json_i64(struct ct_json *j, int64_t v);
/* NaN and infinities (not JSON numbers) are written as null. */
void ct_json_double(struct ct_json *j, double v);
void ct_json_bool(struct ct_json *j, bool v);
void ct_json_null(struct ct_json *j);

/* Members: key and value in one call. */
void ct_json_kv_str(struct ct_json *j, const char *key, const char *s);
void ct_json_kv_u64(struct ct_json *j, const char *key, uint64_t v);
void ct_json_kv_i64(struct ct_json *j, const char *key, int64_t v);
void ct_json_kv_double(struct ct_json *j, const char *key, double v);
void ct_json_kv_bool(struct ct_json *j, const char *key, bool v);
void ct_json_kv_null(struct ct_json *j, const char *key);
void ct_json_kv_obj_begin(struct ct_json *j, const char *key);
void ct_json_kv_arr_begin(struct ct_json *j, const char *key);

/* Appends s[0..len) escaped by the rule above, without the quotes. */
int ct_json_escape(struct strbuf *sb, const char *s, size_t len);
/*
 * The same for a string that a page's <script> element holds (the flame
 * graph's and speedscope's): '<', '>' and '&' escaped too, so no "</script>"
 * or "<!--" can appear, and an invalid byte shown as U+FFFD, not kept.
 */
int ct_json_escape_html(struct strbuf *sb, const char *s, size_t len);

/*
 * The one frame shape: {"name","module"} from a frame name as clrtap writes
 * it ("Ns.Type::Method", "libfoo.so!function", "[k] function"): the module
 * when the name carries one ("[kernel]" for kernel frames), else null.
 * ct_json_frame_members writes the two members into an open object.
 */
void ct_json_frame(struct ct_json *j, const char *name);
void ct_json_frame_members(struct ct_json *j, const char *name);

#endif
