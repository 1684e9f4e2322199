/* SPDX-License-Identifier: MIT */
/*
 * dac.h - the runtime's own data access layer (libmscordaccore.so) over a
 * core file, from C: a data target (ICLRDataTarget, a COM vtable written
 * here) that answers the DAC's reads from lib/core, and thin wrappers over
 * the DAC interfaces clrtap uses (ISOSDacInterface, IXCLRDataProcess stack
 * walks). docs/internals/postmortem.md says why, which runtimes, and how the
 * matching DAC is found.
 *
 * Every answer from the DAC is built from the dump's bytes: addresses and
 * counts it returns are untrusted, and every buffer handed to it is bounded.
 * The DAC keeps process-wide state (its PAL): one struct dac at a time, from
 * one thread.
 */
#ifndef CLRTAP_DAC_DAC_H
#define CLRTAP_DAC_DAC_H

#include "common/compat.h"

struct core_file;
struct dac;

/* What dac_find found: the DAC to load and how it was matched. */
struct dac_found {
	char path[PATH_MAX];        /* libmscordaccore.so */
	char runtime_dir[PATH_MAX]; /* the dump's own path to libcoreclr.so's directory */
	char version[64];           /* "10.0.12" (the directory name of the match), "" if unknown */
	char build_id[41];          /* the dump's libcoreclr.so build id, hex, "" if not in the dump */
	const char *how;            /* "build id", "--dac" */
	uint64_t coreclr_base;      /* where libcoreclr.so is mapped in the dump */
};

/*
 * Finds the DAC for the runtime in the dump: the dump's libcoreclr.so (its
 * NT_FILE path and, from the dump's memory, its GNU build id), then a
 * libcoreclr.so with that build id among: the dump's own directory for it,
 * the runtimes under /usr/share/dotnet, /usr/lib/dotnet, $DOTNET_ROOT and the
 * NuGet runtime packs (~/.nuget/packages/microsoft.netcore.app.runtime.*);
 * the DAC beside it. user_dac (--dac) is taken as given (its libcoreclr.so
 * build id is still compared when both are known).
 * -ENODATA: no libcoreclr.so in the dump (not a .NET process);
 * -ENOPKG: no matching DAC on this host. why gets one line.
 */
int dac_find(const struct core_file *c, const char *user_dac, struct dac_found *out, char *why,
	     size_t whylen);

/* Loads the DAC and creates its instance over the dump. -ELIBBAD / -EPROTO with why. */
int dac_open(const struct core_file *c, const struct dac_found *f, struct dac **out, char *why,
	     size_t whylen);
void dac_close(struct dac *d);

/* Reads of the dump's memory through the core reader (bounded); counted for the report. */
uint64_t dac_reads_failed(const struct dac *d);

struct dac_thread {
	uint64_t addr;           /* the runtime's Thread */
	uint32_t os_tid, managed_id;
	int32_t state;
	uint64_t alloc_ptr, alloc_limit;  /* its allocation context (to skip when walking the heap) */
	uint64_t last_thrown;    /* the last thrown object (0: none) */
};
/* The runtime's threads (at most max). */
int dac_threads(struct dac *d, struct dac_thread **out, size_t *n, size_t max);

struct dac_frame {
	uint64_t ip, sp;
	uint64_t md;             /* MethodDesc, 0 for a runtime frame without one */
	bool runtime;            /* an explicit runtime Frame (transition), not a method's own frame */
};
/* The managed stack of a thread, leaf first, at most max frames. */
int dac_stack(struct dac *d, uint32_t os_tid, struct dac_frame **out, size_t *n, size_t max);

/* "Ns.Type::Method" (the type as dac_mt_name names it). */
int dac_method_name(struct dac *d, uint64_t md, char *out, size_t cap);
/* "Ns.Type", "Ns.Outer+Inner", "System.Int32[]", generic arguments as the runtime writes them. */
int dac_mt_name(struct dac *d, uint64_t mt, char *out, size_t cap);

struct dac_mt {
	uint32_t base_size, component_size;
	bool contains_pointers, is_free;
	uint64_t parent, module;
	uint32_t token;
};
int dac_mt_info(struct dac *d, uint64_t mt, struct dac_mt *out);

struct dac_globals {
	uint64_t array_mt, string_mt, object_mt, exception_mt, free_mt;
};
int dac_globals(struct dac *d, struct dac_globals *out);

struct dac_exception {
	uint64_t message, inner, stack_trace;   /* objects (0: none) */
	int32_t hresult;
};
int dac_exception(struct dac *d, uint64_t obj, struct dac_exception *out);
/* A System.String object's contents as UTF-8 (cut to cap). */
int dac_string(struct dac *d, uint64_t obj, char *out, size_t cap);

/* The GC heap's regions/segments: [mem, end) each, with its generation (3 LOH, 4 POH). */
struct dac_segment {
	uint64_t mem, end;
	int gen;
};
int dac_segments(struct dac *d, struct dac_segment **out, size_t *n, size_t max, bool *server);
/* The generation-0 allocation contexts of the heap(s) (skipped by a heap walk). */
int dac_gen0_alloc(struct dac *d, uint64_t *ptrs, uint64_t *limits, size_t *n, size_t max);

/* Strong handles (the roots a heap graph starts from): object, handle type. */
struct dac_handle {
	uint64_t handle, object;
	uint32_t type;
};
int dac_handles(struct dac *d, struct dac_handle **out, size_t *n, size_t max);
/* Objects referenced from a thread's stack (GC-reported). */
int dac_stack_refs(struct dac *d, uint32_t os_tid, uint64_t **out, size_t *n, size_t max);

/* ----- statics (for naming a static field that roots an object) ----- */

/* Every module of every assembly of the system and app domains (at most max). */
int dac_modules(struct dac *d, uint64_t **out, size_t *n, size_t max);
/* The method tables of the types a module has loaded: fn(ctx, mt) for each. */
int dac_module_types(struct dac *d, uint64_t module, void (*fn)(void *ctx, uint64_t mt), void *ctx);
/* Where a module's metadata (the "BSJB" root) lies in the dump. */
int dac_module_metadata(struct dac *d, uint64_t module, uint64_t *addr, uint64_t *size);

struct dac_field {
	uint32_t token;          /* FieldDef */
	uint32_t offset;         /* from the static (or instance) base */
	uint32_t elem_type;      /* ELEMENT_TYPE_* */
	bool is_static, thread_local;
};
/* A type's own fields (instance and static), at most max. */
int dac_mt_fields(struct dac *d, uint64_t mt, struct dac_field *out, size_t *n, size_t max);
/* The GC statics base of a type (.NET 9 and later: ISOSDacInterface14); -EOPNOTSUPP before. */
int dac_static_base(struct dac *d, uint64_t mt, uint64_t *gc_base);

/*
 * Pure helpers (tested, fuzzed): a type name as the runtime writes it
 * (Dictionary`2+Entry[[K, asm],[V, asm]][]) as clrtap writes it
 * (Dictionary<K, V>+Entry[]), cut to cap; the GNU build id (hex) of an ELF
 * image from its first bytes (-EINVAL not ELF64, -ENOENT none).
 */
void dac_type_name(const char *raw, char *out, size_t cap);
int dac_build_id(const void *elf_head, size_t len, char *hex, size_t cap);

/* Reads the dump's memory (what the data target answers with). */
ssize_t dac_read(const struct dac *d, uint64_t addr, void *buf, size_t len);

#endif
