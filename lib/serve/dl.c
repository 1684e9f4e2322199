/* SPDX-License-Identifier: MIT */
/*
 * dl.c - see dl.h. The sonames are the ABI the headers describe: Debian's
 * libmicrohttpd12 and libsqlite3-0.
 */
#include "common/compat.h"

#include <dlfcn.h>
#include <pthread.h>

#define SRV_DL_IMPL
#include "serve/dl.h"

#define MHD_SONAME "libmicrohttpd.so.12"
#define SQLITE_SONAME "libsqlite3.so.0"

struct srv_dl srv_dl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[256];

static void *sym(void *mhd, void *sq, const char *name)
{
	void *p = dlsym(!strncmp(name, "MHD_", 4) ? mhd : sq, name);

	if (!p && !failure[0])
		snprintf(failure, sizeof(failure), "%s has no %s",
			 !strncmp(name, "MHD_", 4) ? MHD_SONAME : SQLITE_SONAME, name);
	return p;
}

static void load(void)
{
	void *mhd = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	void *sq = dlopen(SQLITE_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e = NULL;

	if (!mhd || !sq) {
		e = dlerror();
		snprintf(failure, sizeof(failure), "cannot load %s: %s", !mhd ? MHD_SONAME : SQLITE_SONAME,
			 e ? e : "not found");
		return;
	}
#define SRV_DL_SET(f) *(void **)&srv_dl.f = sym(mhd, sq, #f);
	SRV_DL_FUNCS(SRV_DL_SET)
#undef SRV_DL_SET
	/* the handles stay open for the life of the process */
}

int srv_dl_load(char *why, size_t len)
{
	pthread_once(&once, load);
	if (failure[0]) {
		if (why && len)
			snprintf(why, len, "%s (install libmicrohttpd12 and libsqlite3-0)", failure);
		return -ENOENT;
	}
	return 0;
}
