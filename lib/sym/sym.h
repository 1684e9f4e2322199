/* SPDX-License-Identifier: MIT */
/*
 * sym.h - names for addresses in a live .NET process: JIT'd code (perf map /
 * jitdump, including the W^X /memfd:doublemapper mappings), ReadyToRun code
 * (from the PE image through lib/pe, no crossgen), native code (ELF symbol
 * tables through libelf, with .gnu_debuglink / build-id debug files when
 * present) and kernel code (/proc/kallsyms).
 *
 * Files are read through /proc/PID/root so a target in another mount
 * namespace (a container) is symbolized from the host.
 */
#ifndef CLRTAP_SYM_SYM_H
#define CLRTAP_SYM_SYM_H

#include "common/compat.h"

struct sym_proc;

enum sym_kind {
	SYM_UNKNOWN = 0,
	SYM_JIT,    /* JIT'd managed code, named from the perf map / jitdump */
	SYM_R2R,    /* precompiled managed code, named from the R2R image */
	SYM_NATIVE, /* ELF code: libcoreclr.so, libc, ... */
	SYM_KERNEL, /* kernel, from kallsyms */
	SYM_STUB,   /* runtime stubs and helpers named by the perf map ("stub<...>") */
};

struct sym_frame {
	enum sym_kind kind;
	const char *name;   /* "Ns.Type::Method" for managed code; function name; NULL if unknown */
	const char *module; /* file name of the image ("System.Private.CoreLib.dll"), NULL if none */
	uint64_t start;     /* start address of the symbol (0 if unknown) */
	uint64_t offset;    /* addr - start */
	/*
	 * Added by lib/sym (may be NULL): the parameter list of a managed
	 * method ("(int32, string)") and its code version: the perf map's tier
	 * for JIT code ("QuickJitted", "OptimizedTier1", "OptimizedTier1OSR",
	 * "InstrumentedTier" ...), "PreJIT" for ReadyToRun code.
	 */
	const char *sig;
	const char *tier;
	/*
	 * Native code (SYM_NATIVE), also when no symbol covers the address:
	 * the ELF file as clrtap can open it and the address's link-time
	 * (file) address, for unwinders reading the file's CFI. NULL / 0 when
	 * the address is in no PT_LOAD segment.
	 */
	const char *elf_path;
	uint64_t elf_vaddr;
};

struct sym_opts {
	bool no_perfmap; /* do not read the perf map (tests) */
	bool kernel;     /* load kallsyms for kernel addresses */
	/* Added: read this perf map instead of the target's (host path), or NULL. */
	const char *perfmap_path;
	/*
	 * Or this one, as the target sees it (read inside its root through
	 * lib/proc: no link of the container's leads out), or NULL.
	 */
	const char *perfmap_tpath;
	/*
	 * Added: the jitdump file as the target sees it, read beside the perf
	 * map (.NET 11 writes it at once, its perf map buffered), or NULL.
	 */
	const char *jitdump_tpath;
	/* Added: entries in the per-address result cache (0: 16384; rounded to a power of 2). */
	uint32_t cache_slots;
	/* Added: the symbol cache directory (sym_cache.h): NULL /var/cache/clrtap, "" none. */
	const char *cache_dir;
};

/* Opens the symbol state of pid (as seen from here). Reads /proc/PID/maps. */
int sym_proc_open(struct sym_proc **out, pid_t pid, const struct sym_opts *o);
void sym_proc_close(struct sym_proc *sp);

/*
 * Re-reads /proc/PID/maps and any new perf-map lines. Cheap when nothing
 * changed; call it when lookups start failing or on a timer.
 */
int sym_proc_refresh(struct sym_proc *sp);

/*
 * Names addr. Returns 0 with *out filled (strings valid until close), or
 * -ENOENT with out->kind/module set as far as known (e.g. an address in
 * libfoo.so with no symbol: kind NATIVE, module "libfoo.so", name NULL).
 */
int sym_lookup(struct sym_proc *sp, uint64_t addr, struct sym_frame *out);

/* Kernel addresses (>= 0xffff800000000000 on x86-64). */
bool sym_is_kernel(uint64_t addr);

/* ---- Added for the prober and tests ---- */

/*
 * The first mapping of the image whose file name (last path component) is
 * basename, or whose full path (as the target sees it) equals basename:
 * its start address and file offset, and a path clrtap can open
 * ("/proc/PID/root/usr/share/dotnet/..."; owned by sp, valid until the next
 * refresh or close). Executable mappings are preferred. -ENOENT if the
 * image is not mapped. Any out pointer may be NULL.
 */
int sym_proc_find_image(struct sym_proc *sp, const char *basename, uint64_t *map_start,
			uint64_t *pgoff, const char **path);

/*
 * File offset in an image -> address in the target: the mapping of the
 * image (basename or full path, as above) whose file range holds off.
 * Executable mappings are preferred. -ENOENT when no mapping holds it.
 */
int sym_proc_offset_to_addr(struct sym_proc *sp, const char *basename, uint64_t off,
			    uint64_t *addr);

/* One perf map entry. Strings owned by sp, valid until close. */
struct sym_jit_entry {
	uint64_t start, size;
	enum sym_kind kind; /* SYM_JIT or SYM_STUB */
	const char *name;   /* "Ns.Type::Method", or a stub's name */
	const char *sig;    /* "(int32)", or NULL */
	const char *tier;   /* "OptimizedTier1", or NULL */
	const char *module; /* assembly name from the line ("sample"), or NULL */
};

/*
 * Perf map entries (as last read: call sym_proc_refresh first for new
 * ones) whose name matches pattern (pe_glob_match: '*', '?'); when pattern
 * contains '(' it is matched against name+sig. In file order (the last is
 * the newest code). Writes up to max entries, *n gets the total match count.
 */
int sym_proc_find_jit(struct sym_proc *sp, const char *pattern, struct sym_jit_entry *out,
		      size_t max, size_t *n);

/*
 * The ELF images looked up so far whose internal functions have no name
 * (no .symtab, no debug file: "sub_<address>" from the unwind table), and
 * those named from a debug file that a symbol source (sym_srv.h) gave, as
 * one line each for a summary:
 *   "native names: libfoo.so (debuginfod), libbar.so (cache)"
 *   "native frames named by address only (stripped, no debug file): libcoreclr.so, ..."
 * plus a hint when no symbol server is configured. Empty when neither.
 */
struct strbuf;
int sym_proc_native_note(struct sym_proc *sp, struct strbuf *out);

/* How the functions of one native library are named (sym_proc_native_images). */
enum sym_native_names {
	SYM_NAMES_SYMTAB = 1,   /* its own .symtab */
	SYM_NAMES_DEBUG_FILE,   /* a debug file on the machine (beside it, /usr/lib/debug, ...) */
	SYM_NAMES_SERVED,       /* a debug file from a symbol source: source says which */
	SYM_NAMES_ADDRESS_ONLY, /* exported names only, the rest sub_<address> */
};
struct sym_native_image {
	const char *path;       /* as the target sees it (owned by sp) */
	const char *module;     /* file name */
	enum sym_native_names names;
	int source;             /* enum sym_srv_source for SYM_NAMES_SERVED */
	uint8_t build_id[64];
	size_t build_id_len;    /* 0: none */
};
/*
 * Loads every ELF image that backs an executable mapping of the process
 * (so the configured symbol sources are asked for the stripped ones: a
 * prefetch) and reports how each is named. Writes up to max, *n gets the
 * count. The [vdso] is left out.
 */
int sym_proc_native_images(struct sym_proc *sp, struct sym_native_image *out, size_t max,
			   size_t *n);

/* Counters for tests and the profiler's summary. */
struct sym_stats {
	uint64_t lookups, cache_hits;
	size_t nmaps, perfmap_entries, perfmap_bytes, images, kernel_syms;
};
void sym_proc_stats(const struct sym_proc *sp, struct sym_stats *st);

/*
 * A perf map line: "START SIZE TEXT", START and SIZE hex (0x optional).
 * The runtime's TEXT for managed code is
 *   [instance ]RETTYPE [Module] Ns.Type::Method(PARAMS)[Tier]
 * and for stubs "stub Name<Kind>". Pieces point into the line.
 */
struct sym_pm_line {
	uint64_t start, size;
	bool stub;
	bool instance;      /* TEXT starts with "instance " (the method has this) */
	const char *name;   /* "Ns.Type::Method" / stub name / whole TEXT */
	size_t name_len;
	const char *sig;    /* "(int32)" including the parentheses, or NULL */
	size_t sig_len;
	const char *tier;   /* "QuickJitted" without brackets, or NULL */
	size_t tier_len;
	const char *module; /* "sample" without brackets, or NULL */
	size_t module_len;
};
/* Returns 0 or -EBADMSG (not "START SIZE TEXT"). */
int sym_parse_perfmap_line(const char *p, size_t len, struct sym_pm_line *out);

#endif
