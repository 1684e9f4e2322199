/* SPDX-License-Identifier: MIT */
/*
 * strparse.h - checked number parsing (atoi and friends are banned).
 * Each returns 0 or -EINVAL (not a number, trailing junk) / -ERANGE.
 */
#ifndef CLRTAP_COMMON_STRPARSE_H
#define CLRTAP_COMMON_STRPARSE_H

#include "common/compat.h"

int ct_parse_u64(const char *s, int base, uint64_t *out);
int ct_parse_i64(const char *s, int base, int64_t *out);
int ct_parse_u32(const char *s, int base, uint32_t *out);
int ct_parse_int(const char *s, int *out);
/* Parses a decimal pid > 0. */
int ct_parse_pid(const char *s, pid_t *out);

/*
 * The one duration syntax of clrtap (every --duration, --timeout and the
 * task table's duration params): a decimal number, up to 6 decimals, with
 * an optional unit ms, s (the default), m or h; at most 30 days, never
 * finer than a millisecond, never negative. Returns 0 with *ms set, or -EINVAL.
 */
int ct_parse_duration(const char *s, int64_t *ms);

/* Copies src into dst (size n, NUL-terminated, truncating). Returns strlen(src). */
size_t ct_strlcpy(char *dst, const char *src, size_t n);

#endif
