/* SPDX-License-Identifier: MIT */
/*
 * pe_internal.h - structures shared by the lib/pe sources. Not public.
 */
#ifndef CLRTAP_PE_PE_INTERNAL_H
#define CLRTAP_PE_PE_INTERNAL_H

#include "common/compat.h"
#include "common/cursor.h"
#include "common/strbuf.h"
#include "pe/pe.h"

#define PE_MAX_NAME_DEPTH 24  /* nesting / generic recursion in names */
#define PE_MAX_STR 1024       /* strings copied into pe_info */

/* Column kinds of metadata tables. */
enum pe_col_kind {
	PE_COL_U16,
	PE_COL_U32,
	PE_COL_STR,
	PE_COL_GUID,
	PE_COL_BLOB,
	PE_COL_IDX,  /* simple index; arg = table */
	PE_COL_CIDX, /* coded index; arg = enum pe_cidx */
	PE_COL_U8PAD, /* one byte + one padding byte (Constant.Type) */
};

#define PE_MD_MAX_COLS 9

struct pe_md_tab {
	uint32_t rows;
	uint32_t row_size;
	const uint8_t *base;
	uint8_t ncols;
	uint8_t col_off[PE_MD_MAX_COLS];
	uint8_t col_size[PE_MD_MAX_COLS];
};

struct pe_heap {
	const uint8_t *p;
	uint32_t len;
};

struct pe_md {
	bool present;
	bool uncompressed; /* "#-" stream */
	uint8_t heap_sizes;
	struct pe_heap strings, us, blob, guid;
	struct pe_md_tab tab[64];
	char *version; /* metadata version string (malloc) */
};

/* A loaded other assembly (component IL, or a referenced assembly). */
struct pe_modref {
	char *name;          /* assembly simple name (malloc) */
	struct pe_file *pf;  /* NULL when not found / not tried */
	bool tried;
	bool owned;          /* close pf with the root */
};

struct pe_comp {
	uint32_t cor_rva, cor_size;   /* embedded MSIL CLI header, or 0 */
	uint32_t core_rva, core_size; /* component READYTORUN_CORE_HEADER */
	uint32_t nsecs;
	const uint8_t *secs;          /* nsecs * 12 bytes */
	uint32_t mod;                 /* index into pe_file.mods */
	uint8_t mvid[16];
	bool has_mvid;
};

struct pe_file {
	const uint8_t *data;
	size_t len;
	bool mapped;
	char *path;  /* malloc, or NULL for memory images */
	char *dir;   /* directory of path */
	char **search_dirs; /* NULL-terminated copy, or NULL */
	struct pe_open_opts opts;
	struct pe_info info;

	struct pe_section *secs;
	uint32_t ndirs;
	uint32_t dirs[16][2];

	/* R2R global header */
	uint32_t r2r_nsecs;
	const uint8_t *r2r_secs;

	struct pe_md md;        /* this file's own metadata */
	struct pe_md manifest;  /* R2R ManifestMetadata, if any */

	/* name caches for this file's metadata */
	uint32_t *enclosing;    /* TypeDef rid -> enclosing TypeDef rid */
	uint32_t *method_owner; /* MethodDef rid -> TypeDef rid */
	uint32_t *tn_off;       /* TypeDef rid -> (offset+1) into tn_cache */
	struct strbuf tn_cache;
	bool caches_built;

	/* other assemblies (root file only) */
	struct pe_modref *mods;
	uint32_t nmods;
	struct pe_comp *comps;
	uint32_t ncomps;

	/* R2R method table */
	bool built;
	int build_err;
	struct pe_method *methods;
	size_t nmethods;
	struct pe_range *ranges;
	size_t nranges;
	uint32_t *sorted;  /* range indexes sorted by begin_rva */
	size_t nsorted;
	char *arena;
	struct pe_file **meth_mod; /* per method: module whose metadata has its token */
	uint64_t *inst_sig;   /* per method: file offset + 1 of its R2R method signature, or 0 */
};

/* pe.c */
/* Opens path read-only through opts->open_fn when set, else open(2). */
int pe_open_fd(const struct pe_open_opts *opts, const char *path, int *fd);
const uint8_t *pe_rva_ptr(const struct pe_file *pf, uint32_t rva, uint32_t size);
int pe_find_r2r_sec(const uint8_t *secs, uint32_t nsecs, uint32_t type, uint32_t *rva,
		    uint32_t *size);
char *pe_strndup_cap(const uint8_t *p, size_t maxlen);
/* R2R module index (see pe.c) -> the module's pe_file, loading it if needed. */

/* pe_md.c */
#define PE_MD_MAX_STREAMS 16
struct pe_md_stream {
	const char *name; /* NUL-terminated inside the root header */
	const uint8_t *p;
	uint32_t len;
};
/* The metadata root's streams (at most PE_MD_MAX_STREAMS); *version malloc'd when non-NULL. */
int pe_md_streams(const uint8_t *p, uint32_t len, struct pe_md_stream *st, unsigned *nst,
		  char **version);
int pe_md_parse(struct pe_md *md, const uint8_t *p, uint32_t len);
void pe_md_release(struct pe_md *md);
int pe_md_col(const struct pe_md *md, unsigned table, uint32_t rid, unsigned col,
	      uint32_t *val);
const char *pe_md_str(const struct pe_md *md, uint32_t idx);
int pe_md_blob_get(const struct pe_md *md, uint32_t idx, const uint8_t **p, uint32_t *len);
int pe_md_build_caches(struct pe_file *pf);
int pe_md_typedef_name(struct pe_file *pf, uint32_t rid, struct strbuf *out);
int pe_md_type_name_depth(struct pe_file *pf, uint32_t token, struct strbuf *out, int depth);
/* Underlying element type of an enum TypeDef of pf, or 0. */
uint8_t pe_md_enum_type(struct pe_file *pf, uint32_t typedef_rid);
/* ECMA compressed unsigned integer (II.23.2). */
int pe_cur_comp(struct cursor *c, uint32_t *v);

/* pe_sig.c */
struct pe_inst {
	uint32_t n;
	struct pe_type *types;  /* n descriptors (names point into names sb) */
	struct strbuf names;    /* NUL-separated names */
	uint32_t *name_off;
};

struct pe_sigctx {
	struct pe_file *root;   /* resolves module overrides; may be NULL */
	struct pe_file *mod;    /* metadata context for tokens; may be NULL */
	const struct pe_inst *tinst; /* type generic arguments, or NULL */
	const struct pe_inst *minst; /* method generic arguments, or NULL */
	bool r2r;               /* R2R signature: allow ZAPSIG codes */
};

int pe_sig_type(struct pe_sigctx *ctx, struct cursor *c, struct strbuf *out,
		struct pe_type *desc, int depth);
int pe_sig_decode(struct pe_sigctx *ctx, const uint8_t *blob, uint32_t len,
		  struct pe_file *names_mod, uint32_t method_rid, struct pe_sig **out);
void pe_inst_release(struct pe_inst *in);
int pe_inst_read(struct pe_sigctx *ctx, struct cursor *c, uint32_t n, struct pe_inst *in);

struct pe_file *pe_module_by_index(struct pe_file *root, uint32_t index);

#endif
