/* SPDX-License-Identifier: MIT */
/*
 * sym_srv.h - debug files for native code the ELF file itself cannot name,
 * by GNU build-id, from sources the user configured: a debuginfod server
 * (through Debian's libdebuginfod, loaded with dlopen), a Microsoft-style
 * symbol server (SSQP keys "_.debug/elf-buildid-sym-<id>/_.debug", then
 * "<file>/elf-buildid-<id>/<file>", over HTTP, libcurl loaded with dlopen),
 * and the local cache directory that keeps
 * what they served (DIR/debug/<id>.debug). docs/internals/symsrv.md.
 *
 * Process-wide: a command configures it once, lib/sym asks it when a
 * stripped ELF file has no debug file on the machine. Without
 * sym_srv_configure nothing is looked up; with no server configured only
 * the cache directory is read (no network).
 *
 * Every served file is outside bytes: at most SYM_SRV_MAX_FILE, an ELF file
 * whose build-id is the one asked for and that has a .symtab, else it is
 * refused and not kept.
 */
#ifndef CLRTAP_SYM_SYM_SRV_H
#define CLRTAP_SYM_SYM_SRV_H

#include "common/compat.h"

#define SYM_SRV_MAX_FILE ((uint64_t)1 << 30)        /* one debug file */
#define SYM_SRV_CACHE_MAX ((uint64_t)4 << 30)       /* DIR/debug, all files */
#define SYM_SRV_TIMEOUT_MS 20000                    /* one download, default */
#define SYM_SRV_MAX_SERVERS 8

enum sym_srv_source {
	SYM_SRV_NONE = 0,
	SYM_SRV_CACHE,      /* DIR/debug/<id>.debug */
	SYM_SRV_DEBUGINFOD, /* fetched now from a debuginfod server */
	SYM_SRV_SSQP,       /* fetched now from a symbol server */
};

struct sym_srv_opts {
	/* debuginfod URLs (space-separated); NULL: $DEBUGINFOD_URLS; "" none */
	const char *debuginfod;
	/* symbol server base URLs (space, comma or ';' separated); NULL: $CLRTAP_SYMBOL_SERVER; "" none */
	const char *servers;
	/* the cache's root (files in ROOT/debug); NULL: $CLRTAP_CACHE_DIR, else SYM_CACHE_DEFAULT_DIR; "" none */
	const char *cache_dir;
	int timeout_ms; /* one download; 0: SYM_SRV_TIMEOUT_MS */
};

/*
 * Configures the process's symbol sources (again: replaces). -EINVAL with
 * why for a URL that is not http:// or https:// or too many servers.
 */
int sym_srv_configure(const struct sym_srv_opts *o, char *why, size_t wlen);
/* Whether a server (not only the cache) is configured. */
bool sym_srv_servers(void);

/*
 * While held, nothing is downloaded (the cache is still read): a profiler
 * holds it while it samples. Releasing it bumps sym_srv_epoch(), so that
 * lib/sym loads again the images it could not name while held.
 */
void sym_srv_hold(bool hold);
unsigned sym_srv_epoch(void);
/* How many lookups found nothing because of the hold (lib/sym: retry later). */
unsigned sym_srv_held_misses(void);

/*
 * The debug file for build-id id[0..len) (file: the library's file name, for
 * the SSQP image key when it is a plain name, and the log): a path in the
 * cache directory and where it came from. -ENOENT
 * when no source has it (or none is configured), -EAGAIN while held.
 */
int sym_srv_find(const uint8_t *id, size_t len, const char *file, char *path, size_t cap,
		 enum sym_srv_source *src);

const char *sym_srv_source_name(enum sym_srv_source s);

struct sym_srv_stats {
	bool configured, servers;
	unsigned from_cache, from_debuginfod, from_ssqp, not_found, refused, failed, held;
	char last_error[192]; /* the last download's failure, or "" */
};
void sym_srv_stats(struct sym_srv_stats *st);

#endif
