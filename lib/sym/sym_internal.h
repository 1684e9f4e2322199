/* SPDX-License-Identifier: MIT */
/*
 * sym_internal.h - what lib/sym's files share: the line parsers (pure
 * functions over bytes, unit-tested and fuzzed), the string arena, and the
 * ELF and kernel symbol tables.
 */
#ifndef CLRTAP_SYM_SYM_INTERNAL_H
#define CLRTAP_SYM_SYM_INTERNAL_H

#include "common/compat.h"
#include "sym/sym.h"

/* Caps on what the target (or the kernel) can make us hold. */
#define SYM_MAPS_MAX_BYTES ((size_t)64 << 20)      /* /proc/PID/maps text */
#define SYM_MAPS_MAX_ENTRIES 1000000
#define SYM_LINE_MAX 65536                          /* one perf map / kallsyms line */
#define SYM_PERFMAP_MAX_BYTES ((uint64_t)1 << 30)   /* perf map file read in total */
#define SYM_PERFMAP_MAX_ENTRIES 8000000
/* Memory of one perf map's index: entries, sort index and their names. */
#define SYM_PERFMAP_MAX_MEM ((uint64_t)64 << 20)
#define SYM_ARENA_MAX_BYTES ((size_t)1 << 30)       /* all names held */
#define SYM_ELF_MAX_SYMS 4000000                    /* per ELF file */
#define SYM_KALLSYMS_MAX_BYTES ((size_t)256 << 20)
#define SYM_KALLSYMS_MAX_SYMS 4000000

/* ---- line parsers: (p, len) need not be NUL-terminated ---- */

/* "start-end perms offset major:minor inode   path" */
struct sym_maps_line {
	uint64_t start, end, pgoff, inode;
	uint32_t dev_major, dev_minor;
	char perms[5];
	const char *path; /* points into the line; path_len 0 if anonymous */
	size_t path_len;  /* without a " (deleted)" suffix */
	bool deleted;
};
int sym_parse_maps_line(const char *p, size_t len, struct sym_maps_line *out);

/* sym_parse_perfmap_line and struct sym_pm_line: sym.h (probe uses them too). */

/* "ffffffff81000000 T name\t[module]" */
struct sym_ks_line {
	uint64_t addr;
	char type;
	const char *name;
	size_t name_len;
	const char *module; /* without brackets, or NULL */
	size_t module_len;
};
int sym_parse_kallsyms_line(const char *p, size_t len, struct sym_ks_line *out);

/* Hex number (optional 0x) at p[0..len): all of it. */
int sym_parse_hex(const char *p, size_t len, uint64_t *out);

/* ---- string arena: stable pointers until sym_arena_free ---- */

struct sym_arena_chunk;
struct sym_arena {
	struct sym_arena_chunk *head;
	size_t total; /* bytes allocated */
	size_t max;
};
/* Copies s[0..len) + NUL; NULL on -ENOMEM or over the cap. */
const char *sym_arena_strndup(struct sym_arena *a, const char *s, size_t len);
void sym_arena_free(struct sym_arena *a);

/* ---- symbol tables (ELF, kernel) ---- */

struct sym_entry {
	uint64_t addr, size; /* size 0: unknown, reaches to the next symbol */
	const char *name;
	const char *module;  /* kernel: module name, NULL for the core kernel */
	bool synthetic;      /* "sub_<addr>" from .eh_frame_hdr: a function start with no name */
};

struct sym_table {
	struct sym_entry *v;
	size_t n, cap;
};
int sym_table_add(struct sym_table *t, const struct sym_entry *e, size_t max);
/* Sorts by address and drops duplicates (keeps the first with a size). */
void sym_table_sort(struct sym_table *t);
/* The symbol covering addr, or NULL. */
const struct sym_entry *sym_table_find(const struct sym_table *t, uint64_t addr);
void sym_table_free(struct sym_table *t);

/* An ELF file's symbols, in link-time addresses, and its PT_LOAD segments. */
struct sym_elf {
	struct sym_table syms;
	struct sym_elf_seg {
		uint64_t offset, filesz, vaddr;
	} segs[16];
	size_t nsegs;
	bool from_debug_file; /* .symtab of a separate debug file */
	bool has_symtab;
	int srv_source;       /* the debug file came from sym_srv (enum sym_srv_source), or 0 */
};
/*
 * Loads path (opened as given); debug files are looked for under root
 * (the target's "/proc/PID/root", or "" for clrtap's own view) for the
 * target path tpath. Names go into arena.
 */
int sym_elf_load(struct sym_elf *e, const char *path, const char *root, const char *tpath,
		 struct sym_arena *arena);
/* File offset -> link-time address; false if no segment holds it. */
/*
 * Whether sym_elf_load would find a separate debug file for the ELF file at
 * path (as the target sees it: tpath, inside root): a cached table of a
 * stripped file gives way to a debug file installed since.
 */
bool sym_elf_debug_file_found(const char *path, const char *root, const char *tpath);
/*
 * Whether the open file fd is an ELF debug file for build-id id[0..len):
 * its build-id note equal and a .symtab. 0 or -EBADMSG (sym_srv.c: a
 * served file is checked before it is kept).
 */
int sym_elf_check_debug(int fd, const uint8_t *id, size_t len);
/* The GNU build-id of the ELF file at path (opened as given): 0, or -ENOENT (none). */
int sym_elf_file_build_id(const char *path, uint8_t *id, size_t cap, size_t *len);
bool sym_elf_off_to_vaddr(const struct sym_elf *e, uint64_t off, uint64_t *vaddr);
void sym_elf_free(struct sym_elf *e);

/* Reads kallsyms text (whole file) into t. -EACCES when addresses are hidden. */
int sym_kallsyms_load(struct sym_table *t, const char *text, size_t len, struct sym_arena *arena);

#endif
