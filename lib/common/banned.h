/* SPDX-License-Identifier: MIT */
/*
 * banned.h - functions clrtap code must not call. Included last by compat.h.
 * Unbounded copies and formatters, non-reentrant time and tokenizer calls,
 * and unchecked number parsing (use ct_parse_* from common/strparse.h).
 */
#ifndef CLRTAP_COMMON_BANNED_H
#define CLRTAP_COMMON_BANNED_H

#define CT_BANNED(func) sorry_##func##_is_banned_in_clrtap

#undef strcpy
#define strcpy(x, y) CT_BANNED(strcpy)
#undef strcat
#define strcat(x, y) CT_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) CT_BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) CT_BANNED(strncat)
#undef sprintf
#define sprintf(...) CT_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) CT_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) CT_BANNED(strtok)
#undef gmtime
#define gmtime(t) CT_BANNED(gmtime)
#undef localtime
#define localtime(t) CT_BANNED(localtime)
#undef ctime
#define ctime(t) CT_BANNED(ctime)
#undef asctime
#define asctime(t) CT_BANNED(asctime)
#undef mktemp
#define mktemp(x) CT_BANNED(mktemp)
#undef atoi
#define atoi(x) CT_BANNED(atoi)
#undef atol
#define atol(x) CT_BANNED(atol)
#undef sscanf
#define sscanf(...) CT_BANNED(sscanf)

#endif
