/* SPDX-License-Identifier: MIT */
/*
 * compat.h - the first include of every .c file in clrtap.
 *
 * Rule for lib/common: it depends on nothing above it (no lib/<x> and no
 * src/ header may be included from here).
 */
#ifndef CLRTAP_COMMON_COMPAT_H
#define CLRTAP_COMMON_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* ARRAY_SIZE refuses pointers: the second term is a compile error for them. */
#define CT_BUILD_BUG_ON_ZERO(e) ((int)(sizeof(struct { int : (-!!(e)); })))
#define CT_SAME_TYPE(a, b) __builtin_types_compatible_p(__typeof__(a), __typeof__(b))
#define CT_MUST_BE_ARRAY(a) CT_BUILD_BUG_ON_ZERO(CT_SAME_TYPE((a), &(a)[0]))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]) + CT_MUST_BE_ARRAY(a))

#define UNUSED __attribute__((unused))
#define NORETURN __attribute__((noreturn))
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#define WARN_UNUSED __attribute__((warn_unused_result))

#define CT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CT_MAX(a, b) ((a) > (b) ? (a) : (b))

/* free() and set to NULL. */
#define FREE_AND_NULL(p) \
	do { \
		free(p); \
		(p) = NULL; \
	} while (0)

#include "common/banned.h"

#endif
