/* SPDX-License-Identifier: MIT */
/*
 * term.h - the one rule for text that clrtap prints to a terminal (stdout,
 * stderr, log lines) and that a target chose: command lines, environment
 * names, assembly, method and type names, exception messages, thread names,
 * paths inside a container. Such text never reaches the terminal with a raw
 * control byte, so a target cannot move the cursor, recolour, retitle or
 * fake lines of clrtap's output.
 *
 * ct_term_escape() rule, over the bytes of the input:
 *   - printable ASCII (0x20..0x7e) is copied unchanged, except '\', which
 *     is doubled;
 *   - newline, carriage return and tab are written as \n, \r and \t;
 *   - every other byte below 0x20 and DEL as \xNN (ESC is \x1b);
 *   - valid UTF-8 is copied unchanged, except the C1 controls U+0080..U+009F,
 *     the line and paragraph separators U+2028/U+2029 and the bidirectional
 *     controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which
 *     are written as \u{XXXX};
 *   - each byte that is not part of valid UTF-8 is written as \xNN.
 * So the text is unambiguous: every escape starts with a '\' that was not in
 * the input, and the input can be read back from it. The --json output holds
 * the exact strings as JSON (common/json.h).
 */
#ifndef CLRTAP_COMMON_TERM_H
#define CLRTAP_COMMON_TERM_H

#include "common/compat.h"
#include "common/strbuf.h"

/* Appends s[0..len) to sb by the rule above. 0 or sb's sticky error. */
int ct_term_escape(struct strbuf *sb, const char *s, size_t len);
/* The same for a NUL-terminated string; NULL appends "(null)". */
int ct_term_escape_str(struct strbuf *sb, const char *s);
/* true when s[0..len) would be copied unchanged. */
bool ct_term_is_safe(const char *s, size_t len);

/*
 * s by the rule above, for printing: s itself when nothing needs escaping,
 * else one of CT_TERM_SAFE_SLOTS rotating per-thread buffers (valid until
 * the CT_TERM_SAFE_SLOTS-th next call). Input past CT_TERM_SAFE_INPUT bytes
 * is cut and marked "...". NULL gives "(null)". (cli_safe is this.)
 */
#define CT_TERM_SAFE_SLOTS 8
#define CT_TERM_SAFE_INPUT 65536
const char *ct_term_safe(const char *s);

#endif
