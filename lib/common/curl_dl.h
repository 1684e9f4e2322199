/* SPDX-License-Identifier: MIT */
/*
 * curl_dl.h - libcurl (Debian's libcurl4, the OpenSSL build: TLS verified
 * against the system's CAs), loaded with dlopen on first use so that the
 * binary has no hard dependency on it and no command pays for it at start
 * (see lib/serve/dl.h for why). Used by lib/fleet (exports) and lib/sym
 * (symbol servers).
 */
#ifndef CLRTAP_COMMON_CURL_DL_H
#define CLRTAP_COMMON_CURL_DL_H

#include "common/compat.h"

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#define CT_CURL_FUNCS(X)                                                                     \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform)        \
	X(curl_easy_getinfo) X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_slist_append)  \
	X(curl_slist_free_all) X(curl_mime_init) X(curl_mime_addpart) X(curl_mime_name)       \
	X(curl_mime_filename) X(curl_mime_data) X(curl_mime_type) X(curl_mime_free)

#define CT_CURL_MEMBER(f) __typeof__(f) *f;
struct ct_curl_api {
	CT_CURL_FUNCS(CT_CURL_MEMBER)
};
#undef CT_CURL_MEMBER

/* Filled by ct_curl_load (once, thread-safe). */
extern struct ct_curl_api ct_cu;

/* 0, or -ENOENT with why ("cannot load libcurl.so.4: ... (install libcurl4)"). */
int ct_curl_load(char *why, size_t len);

#endif
