/* SPDX-License-Identifier: MIT */
/*
 * sym_cache.h - what lib/sym keeps of one image (an ELF file's function
 * symbols, or an R2R image's method code ranges) in a compact, position-free
 * form, shared by every sym_proc of this process mapping the same image and
 * kept between runs in an on-disk cache keyed by the SHA-256 of the image's
 * bytes. docs/internals/sym.md ("The symbol cache") describes the design.
 *
 * The cache files are clrtap's own, but they are parsed like any outside
 * bytes (sym_img_decode: every size capped, every offset checked, a
 * checksum over the whole): a corrupt or foreign file is a miss, never a
 * crash.
 */
#ifndef CLRTAP_SYM_SYM_CACHE_H
#define CLRTAP_SYM_SYM_CACHE_H

#include "common/compat.h"
#include "common/strbuf.h"
#include "sym/sym_internal.h"

#define SYM_IMG_ELF 1u
#define SYM_IMG_R2R 2u

#define SYM_IMG_NONE UINT32_MAX       /* no string */
#define SYM_IMG_SYNTHETIC 1u          /* ent flag: "sub_<addr>" from .eh_frame_hdr */
#define SYM_IMG_FROM_DEBUG 1u         /* img flag: ELF names from a separate debug file */
#define SYM_IMG_HAS_SYMTAB 2u         /* img flag: ELF .symtab */

/* Caps on what a cache file (or an image) can make us hold. */
#define SYM_IMG_MAX_ENTS ((uint64_t)8 << 20)
#define SYM_IMG_MAX_STR ((uint64_t)512 << 20)
#define SYM_IMG_MAX_FILE ((uint64_t)1 << 30)  /* an image read to be hashed and parsed */
#define SYM_CACHE_MAX_BYTES ((uint64_t)256 << 20) /* the cache directory, all files */
#define SYM_CACHE_DEFAULT_DIR "/var/cache/clrtap"

struct sym_img_ent {
	uint64_t start;  /* ELF: link-time address; R2R: file offset */
	uint64_t size;   /* 0 (ELF only): reaches to the next entry */
	uint32_t name;   /* offset into str */
	uint32_t sig;    /* offset into str, or SYM_IMG_NONE */
	uint32_t flags;  /* SYM_IMG_SYNTHETIC */
	uint32_t pad;
};

struct sym_img {
	struct sym_img *next; /* the process-wide list (sym_img_get) */
	unsigned refs;
	uint8_t key[32];      /* SHA-256 of the image's bytes */
	uint32_t kind;        /* SYM_IMG_ELF / SYM_IMG_R2R */
	uint32_t flags;       /* SYM_IMG_FROM_DEBUG, SYM_IMG_HAS_SYMTAB */
	struct sym_img_ent *v; /* sorted by start, starts distinct */
	size_t n;
	char *str;            /* NUL-terminated strings */
	size_t str_len;
	struct sym_elf_seg segs[16];
	size_t nsegs;
	bool from_disk;       /* read from the cache directory */
	int srv_source;       /* the debug file's sym_srv source (never on disk: such tables are private) */
};

/* Builders: from a loaded ELF file, from an R2R image's method table. */
int sym_img_from_elf(struct sym_img **out, const struct sym_elf *e);
struct pe_file;
int sym_img_from_pe(struct sym_img **out, struct pe_file *pf);
void sym_img_free(struct sym_img *im);

/* The entry covering addr (same rule as sym_table_find), or NULL. */
const struct sym_img_ent *sym_img_find(const struct sym_img *im, uint64_t addr);
static inline const char *sym_img_str(const struct sym_img *im, uint32_t off)
{
	return off == SYM_IMG_NONE ? NULL : im->str + off;
}
/* File offset -> link-time address (ELF); false if no segment holds it. */
bool sym_img_off_to_vaddr(const struct sym_img *im, uint64_t off, uint64_t *vaddr);

/* The on-disk form, and its parser (outside bytes: checked, capped, fuzzed). */
int sym_img_encode(const struct sym_img *im, struct strbuf *out);
/* -EBADMSG unless p is a whole, intact cache file for (kind, key). */
int sym_img_decode(const uint8_t *p, size_t len, uint32_t kind, const uint8_t key[32],
		   struct sym_img **out);

/*
 * SHA-256 of bytes, by libcrypto loaded on first use. sym_sha256_ok() says
 * whether it could be loaded; without it there are no keys, so no cache.
 */
bool sym_sha256_ok(void);
void sym_sha256(const void *p, size_t len, uint8_t out[32]);

/*
 * Reads a whole file (at most SYM_IMG_MAX_FILE) into a private copy, so that
 * what is hashed is exactly what is parsed, whatever the file's owner does
 * meanwhile. Free *buf with free().
 */
int sym_read_copy(const char *path, uint8_t **buf, size_t *len);

/*
 * The memo of a file's identity (sym_cache.c): the stat key, then the
 * (kind, content key) the file had when last read whole. get: 0, -ENOENT,
 * -EBADMSG (a damaged memo: a miss), or the directory's error.
 */
struct stat;
void sym_stat_key(const struct stat *st, uint8_t out[32]);
int sym_memo_get(const char *dir, const uint8_t skey[32], uint32_t *kind, uint8_t key[32]);
void sym_memo_put(const char *dir, const uint8_t skey[32], uint32_t kind, const uint8_t key[32]);

/* ---- the process-wide set and the directory ---- */

struct sym_cache_stats {
	uint64_t mem_hits, disk_hits, misses, stored, store_errors, pruned;
	bool disabled;        /* the directory is unusable (not ours, not creatable) */
};

/*
 * The image for (kind, key) if this process or the cache directory has it
 * (a new reference), else NULL. dir: NULL for SYM_CACHE_DEFAULT_DIR, "" for
 * no directory (memory only).
 */
struct sym_img *sym_img_get(const char *dir, uint32_t kind, const uint8_t key[32]);
/*
 * Adds a new image (key and kind set) to the process-wide set and writes it
 * to the directory (atomically; the directory is pruned to
 * SYM_CACHE_MAX_BYTES, least recently used first). Takes im's reference
 * and returns the one to use (an equal image already held wins).
 */
struct sym_img *sym_img_put_new(const char *dir, struct sym_img *im);
/*
 * DIR/SUB (DIR: NULL for SYM_CACHE_DEFAULT_DIR, "" for none: -ENOENT),
 * created if needed (0700), as an fd; -EPERM when it (or DIR) is not a
 * plain directory of ours that only we can write.
 */
int sym_cache_dir_open(const char *dir, const char *sub);
/* Deletes least recently used files of the directory until it holds at most max bytes. */
void sym_cache_prune(int dfd, uint64_t max);
/* Drops a reference. */
void sym_img_release(struct sym_img *im);
void sym_cache_stats(struct sym_cache_stats *st);

#endif
