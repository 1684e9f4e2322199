/* SPDX-License-Identifier: MIT */
/*
 * utf16.h - UTF-16LE <-> UTF-8 conversion for strings from the runtime, and
 * the UTF-8 encoder and validator shared by the JSON writer and the terminal
 * sanitizer.
 * Unpaired surrogates become U+FFFD; conversion stops at the first NUL unit
 * when stop_at_nul is set.
 */
#ifndef CLRTAP_COMMON_UTF16_H
#define CLRTAP_COMMON_UTF16_H

#include "common/compat.h"
#include "common/strbuf.h"

/* Appends nunits UTF-16LE code units from p to out as UTF-8. */
int utf16le_to_utf8(struct strbuf *out, const uint8_t *p, size_t nunits, bool stop_at_nul);
/*
 * Appends s (UTF-8, NUL-terminated) to out as UTF-16LE, with a terminating
 * 0x0000 unit; *nunits (if not NULL) gets the unit count including it.
 * Invalid UTF-8 bytes become U+FFFD.
 */
int utf8_to_utf16le(struct strbuf *out, const char *s, uint32_t *nunits);

/* Appends code point cp (<= U+10FFFF) as UTF-8. */
int utf8_put(struct strbuf *out, uint32_t cp);
/*
 * Length of the valid UTF-8 sequence at s[0..len) (1..4) with its code point
 * in *cp, or 0 when s[0] does not start one: a stray continuation byte, a
 * truncated or overlong sequence, an encoded surrogate, a code point above
 * U+10FFFF (len must be > 0).
 */
size_t utf8_valid(const char *s, size_t len, uint32_t *cp);

#endif
