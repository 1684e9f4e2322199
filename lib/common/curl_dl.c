/* SPDX-License-Identifier: MIT */
/* curl_dl.c - libcurl through dlopen (curl_dl.h). */
#include "common/compat.h"

#include <dlfcn.h>
#include <pthread.h>

#include "common/curl_dl.h"

#define CURL_SONAME "libcurl.so.4"

struct ct_curl_api ct_cu;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[256];

static void load(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		const char *e = dlerror();

		snprintf(failure, sizeof(failure), "cannot load %s: %s", CURL_SONAME,
			 e ? e : "not found");
		return;
	}
#define SET(f)                                                                               \
	*(void **)&ct_cu.f = dlsym(h, #f);                                                   \
	if (!ct_cu.f && !failure[0])                                                         \
		snprintf(failure, sizeof(failure), "%s has no %s", CURL_SONAME, #f);
	CT_CURL_FUNCS(SET)
#undef SET
	if (!failure[0] && ct_cu.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		snprintf(failure, sizeof(failure), "libcurl did not initialise");
}

int ct_curl_load(char *why, size_t len)
{
	pthread_once(&once, load);
	if (failure[0]) {
		if (why && len)
			snprintf(why, len, "%s (install libcurl4)", failure);
		return -ENOENT;
	}
	return 0;
}
