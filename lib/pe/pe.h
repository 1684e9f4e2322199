/* SPDX-License-Identifier: MIT */
/*
 * pe.h - reader for .NET assemblies: PE/COFF, ECMA-335 metadata and the
 * ReadyToRun (R2R) native code tables.
 *
 * Two jobs: name any address inside an R2R image (profiler symbolization),
 * and find the file offset of a method's precompiled code by name and
 * signature (uprobe placement). docs/formats/readytorun.md describes the
 * formats as implemented; docs/internals/pe.md describes this API and its
 * memory bounds.
 *
 * A struct pe_file is an open image. It is read-only after the first call
 * that builds its method table (pe_file_methods() or any lookup); it is not
 * safe to use one pe_file from two threads at once before that, and safe to
 * read concurrently after it.
 *
 * All strings returned as `const char *` belong to the pe_file and live until
 * pe_file_close(). Every function returns 0 or a negative errno:
 * -EBADMSG corrupt input, -EPROTO a valid file of a kind this reader does not
 * handle (not .NET, not R2R, unknown table), -ENOENT not found, -EFBIG /
 * -EMSGSIZE over a size cap, -ENOMEM, -EINVAL bad argument.
 */
#ifndef CLRTAP_PE_PE_H
#define CLRTAP_PE_PE_H

#include "common/compat.h"
#include "common/strbuf.h"

struct pe_file;

/* Default caps (see docs/internals/pe.md). */
#define PE_DEFAULT_MAX_FILE_SIZE ((uint64_t)1 << 30)  /* 1 GiB */
#define PE_DEFAULT_MAX_NAMES_BYTES ((size_t)256 << 20) /* method-name arena */
#define PE_MAX_MODULES 256 /* other assemblies opened to resolve names */

/* pe_open_opts.flags */
#define PE_OPEN_NO_RESOLVE 0x1 /* never open other files (components, references) */

struct pe_open_opts {
	uint64_t max_file_size;  /* 0: PE_DEFAULT_MAX_FILE_SIZE */
	size_t max_names_bytes;  /* 0: PE_DEFAULT_MAX_NAMES_BYTES */
	/*
	 * NULL-terminated list of directories searched for component and
	 * referenced assemblies (<dir>/<AssemblyName>.dll), after the image's
	 * own directory. Copied at open.
	 */
	const char *const *search_dirs;
	unsigned flags;
	/*
	 * Opens a file (the image and every assembly it resolves) read-only:
	 * 0 and *fd, or a negative errno. NULL: open(2). A target's files are
	 * opened inside its root this way (lib/proc's proc_target_file_open).
	 */
	int (*open_fn)(void *ctx, const char *path, int *fd);
	void *open_ctx;
};

/* Operating system encoded in the COFF Machine field (Machine = arch ^ os). */
enum pe_os {
	PE_OS_WINDOWS = 0,
	PE_OS_LINUX = 0x7B79,
	PE_OS_APPLE = 0x4644,
	PE_OS_FREEBSD = 0xADC4,
	PE_OS_NETBSD = 0x1993,
	PE_OS_SUNOS = 0x1992,
};

#define PE_MACHINE_I386 0x014C
#define PE_MACHINE_ARMNT 0x01C4
#define PE_MACHINE_AMD64 0x8664
#define PE_MACHINE_ARM64 0xAA64
#define PE_MACHINE_LOONGARCH64 0x6264
#define PE_MACHINE_RISCV64 0x5064

/* ReadyToRun header flags (READYTORUN_FLAG_*). */
#define PE_R2R_FLAG_PLATFORM_NEUTRAL_SOURCE 0x001
#define PE_R2R_FLAG_SKIP_TYPE_VALIDATION 0x002
#define PE_R2R_FLAG_PARTIAL 0x004
#define PE_R2R_FLAG_NONSHARED_PINVOKE_STUBS 0x008
#define PE_R2R_FLAG_EMBEDDED_MSIL 0x010
#define PE_R2R_FLAG_COMPONENT 0x020
#define PE_R2R_FLAG_MULTIMODULE_VERSION_BUBBLE 0x040
#define PE_R2R_FLAG_UNRELATED_R2R_CODE 0x080
#define PE_R2R_FLAG_PLATFORM_NATIVE_IMAGE 0x100

/* ReadyToRun section types used by this reader. */
#define PE_R2R_COMPILER_IDENTIFIER 100
#define PE_R2R_IMPORT_SECTIONS 101
#define PE_R2R_RUNTIME_FUNCTIONS 102
#define PE_R2R_METHODDEF_ENTRY_POINTS 103
#define PE_R2R_EXCEPTION_INFO 104
#define PE_R2R_DEBUG_INFO 105
#define PE_R2R_DELAY_LOAD_METHOD_CALL_THUNKS 106
#define PE_R2R_AVAILABLE_TYPES 108
#define PE_R2R_INSTANCE_ENTRY_POINTS 109
#define PE_R2R_MANIFEST_METADATA 112
#define PE_R2R_COMPONENT_ASSEMBLIES 115
#define PE_R2R_OWNER_COMPOSITE_EXECUTABLE 116
#define PE_R2R_MANIFEST_ASSEMBLY_MVIDS 118
#define PE_R2R_HOT_COLD_MAP 120

/* Pass as `component` to pe_file_r2r_section() for the image-wide header. */
#define PE_COMPONENT_GLOBAL UINT32_MAX

struct pe_section {
	char name[9]; /* NUL-terminated, may be shorter than 8 */
	uint32_t virtual_address;
	uint32_t virtual_size;
	uint32_t raw_offset; /* PointerToRawData */
	uint32_t raw_size;   /* SizeOfRawData */
	uint32_t characteristics; /* 0x20000000 exec, 0x40000000 read, 0x80000000 write */
};

struct pe_info {
	uint16_t machine_raw; /* COFF Machine as stored */
	uint16_t machine;     /* architecture, OS override removed (PE_MACHINE_*) */
	enum pe_os os;
	bool pe32plus;
	uint64_t image_base;
	uint32_t section_alignment;
	uint32_t file_alignment;
	uint32_t size_of_image;
	uint32_t size_of_headers;
	uint16_t nsections;

	bool has_cli;     /* COR20 (CLI) header present */
	uint32_t cli_flags; /* COMIMAGE_FLAGS_*: 0x4 IL_LIBRARY marks R2R */
	uint32_t metadata_rva, metadata_size;
	const char *assembly_name; /* Assembly table row 1, or NULL */

	bool is_r2r;     /* a READYTORUN_HEADER was found */
	uint16_t r2r_major, r2r_minor;
	uint32_t r2r_flags; /* PE_R2R_FLAG_* */
	uint32_t r2r_header_rva;
	bool r2r_via_export; /* header found through the RTR_HEADER export */
	bool composite;   /* has a ComponentAssemblies section */
	bool component;   /* COMPONENT flag: the code is in owner_composite */
	const char *owner_composite; /* OwnerCompositeExecutable, or NULL */
	const char *compiler_id;     /* CompilerIdentifier, or NULL */
	uint32_t ncomponents; /* composite: component count; other R2R: 1; else 0 */
};

/*
 * Opens and maps path read-only, parses the PE headers, the CLI header and
 * metadata (when present) and the R2R header (when present). A composite
 * image also opens the component assemblies' IL files it finds (see
 * pe_open_opts) to name methods. opts may be NULL. On success *out owns the
 * mapping; free with pe_file_close().
 */
int pe_file_open(const char *path, const struct pe_open_opts *opts, struct pe_file **out);
/*
 * Same over bytes in memory; data is not copied and must outlive *out.
 * No other file is ever opened (PE_OPEN_NO_RESOLVE is implied).
 */
int pe_file_open_mem(const void *data, size_t len, const struct pe_open_opts *opts,
		     struct pe_file **out);
/*
 * Only a metadata blob (the "BSJB" root, as a module's metadata lies in a
 * process's memory): the pe_md_* lookups work on it, nothing else does.
 * data must outlive *out.
 */
int pe_md_open_mem(const void *data, size_t len, struct pe_file **out);
/* Frees everything, including assemblies it opened. NULL is fine. */
void pe_file_close(struct pe_file *pf);

const struct pe_info *pe_file_info(const struct pe_file *pf);
/* The section table (*n entries); owned by pf. */
const struct pe_section *pe_file_sections(const struct pe_file *pf, size_t *n);
/* The whole file's bytes; owned by pf. */
const uint8_t *pe_file_bytes(const struct pe_file *pf, size_t *len);
/* Optional-header data directory idx (0 export, 14 CLI ...). -ENOENT if absent. */
int pe_file_data_dir(const struct pe_file *pf, unsigned idx, uint32_t *rva, uint32_t *size);
/*
 * RVA -> file offset through the section with
 * VirtualAddress <= rva < VirtualAddress + SizeOfRawData (or the headers).
 */
int pe_file_rva_to_offset(const struct pe_file *pf, uint32_t rva, uint64_t *off);
/* The reverse: file offset -> RVA. */
int pe_file_offset_to_rva(const struct pe_file *pf, uint64_t off, uint32_t *rva);
/*
 * Finds R2R section `type` in the global header (component ==
 * PE_COMPONENT_GLOBAL) or a composite component's header. For a
 * non-composite image, component 0 is the global header.
 */
int pe_file_r2r_section(const struct pe_file *pf, uint32_t component, uint32_t type,
			uint32_t *rva, uint32_t *size);

/* ---- ECMA-335 metadata ---- */

enum pe_md_table {
	PE_MD_MODULE = 0x00,
	PE_MD_TYPEREF = 0x01,
	PE_MD_TYPEDEF = 0x02,
	PE_MD_FIELD = 0x04,
	PE_MD_METHODDEF = 0x06,
	PE_MD_PARAM = 0x08,
	PE_MD_MEMBERREF = 0x0A,
	PE_MD_TYPESPEC = 0x1B,
	PE_MD_ASSEMBLY = 0x20,
	PE_MD_ASSEMBLYREF = 0x23,
	PE_MD_NESTEDCLASS = 0x29,
	PE_MD_GENERICPARAM = 0x2A,
	PE_MD_METHODSPEC = 0x2B,
	PE_MD_NTABLES = 0x2D, /* tables 0x00..0x2C are known */
};

/* Row count of a table (0 when absent or no metadata). */
uint32_t pe_md_rows(const struct pe_file *pf, unsigned table);
/*
 * Reads column col (0-based, in ECMA-335 II.22 order) of row rid (1-based).
 * Constants come as numbers; simple indexes as RIDs; coded indexes as
 * tokens (table << 24 | rid, 0 for a null reference); #Strings, #Blob and
 * #GUID columns as heap offsets/indexes.
 */
int pe_md_get(const struct pe_file *pf, unsigned table, uint32_t rid, unsigned col,
	      uint32_t *val);
/* #Strings entry at idx ("" when out of range); owned by pf. */
const char *pe_md_string(const struct pe_file *pf, uint32_t idx);
/* #Blob entry at idx: *p, *len. */
int pe_md_blob(const struct pe_file *pf, uint32_t idx, const uint8_t **p, uint32_t *len);
/* #GUID entry (1-based); copies 16 bytes. */
int pe_md_guid(const struct pe_file *pf, uint32_t idx, uint8_t out[16]);
/*
 * Appends the full name of a TypeDef/TypeRef/TypeSpec token:
 * "Namespace.Type", nested "Namespace.Outer+Inner", generic "List`1",
 * instantiated "List`1[int32]".
 */
int pe_md_type_name(struct pe_file *pf, uint32_t token, struct strbuf *out);
/* Appends "Namespace.Type::Method" for a MethodDef or MemberRef token. */
int pe_md_method_name(struct pe_file *pf, uint32_t token, struct strbuf *out);
/* MethodDef RID -> owning TypeDef RID (0 if none). */
uint32_t pe_md_method_owner(struct pe_file *pf, uint32_t method_rid);

/* ---- Signatures ---- */

/* ECMA-335 element types, plus the R2R-only codes seen in R2R signatures. */
enum pe_et {
	PE_ET_END = 0x00,
	PE_ET_VOID = 0x01,
	PE_ET_BOOLEAN = 0x02,
	PE_ET_CHAR = 0x03,
	PE_ET_I1 = 0x04,
	PE_ET_U1 = 0x05,
	PE_ET_I2 = 0x06,
	PE_ET_U2 = 0x07,
	PE_ET_I4 = 0x08,
	PE_ET_U4 = 0x09,
	PE_ET_I8 = 0x0A,
	PE_ET_U8 = 0x0B,
	PE_ET_R4 = 0x0C,
	PE_ET_R8 = 0x0D,
	PE_ET_STRING = 0x0E,
	PE_ET_PTR = 0x0F,
	PE_ET_BYREF = 0x10,
	PE_ET_VALUETYPE = 0x11,
	PE_ET_CLASS = 0x12,
	PE_ET_VAR = 0x13,
	PE_ET_ARRAY = 0x14,
	PE_ET_GENERICINST = 0x15,
	PE_ET_TYPEDBYREF = 0x16,
	PE_ET_I = 0x18,
	PE_ET_U = 0x19,
	PE_ET_FNPTR = 0x1B,
	PE_ET_OBJECT = 0x1C,
	PE_ET_SZARRAY = 0x1D,
	PE_ET_MVAR = 0x1E,
	PE_ET_CMOD_REQD = 0x1F,
	PE_ET_CMOD_OPT = 0x20,
	PE_ET_INTERNAL = 0x21,
	PE_ET_VAR_ZAPSIG = 0x3B,
	PE_ET_NATIVE_ARRAY_TEMPLATE_ZAPSIG = 0x3C,
	PE_ET_NATIVE_VALUETYPE_ZAPSIG = 0x3D,
	PE_ET_CANON_ZAPSIG = 0x3E, /* System.__Canon (shared generic code) */
	PE_ET_MODULE_ZAPSIG = 0x3F,
	PE_ET_SENTINEL = 0x41,
	PE_ET_PINNED = 0x45,
};

/* One parameter or return type, flattened for argument decoding. */
struct pe_type {
	uint8_t et;       /* enum pe_et of the type, BYREF and modifiers removed */
	bool byref;       /* passed by reference (ELEMENT_TYPE_BYREF) */
	bool valuetype;   /* VALUETYPE, or GENERICINST of a value type */
	uint8_t elem_et;  /* SZARRAY/ARRAY/PTR: element's code; else 0 */
	uint8_t enum_et;  /* VALUETYPE enum defined in the same module: underlying code */
	uint32_t token;   /* CLASS/VALUETYPE/GENERICINST: TypeDef/TypeRef/TypeSpec token */
	uint32_t number;  /* VAR/MVAR: generic parameter index; ARRAY: rank */
	const char *name; /* display name: "int32", "string", "System.Guid", "!0" */
};

#define PE_CALLCONV_MASK 0x0F
#define PE_CALLCONV_VARARG 0x05
#define PE_CALLCONV_GENERIC 0x10
#define PE_CALLCONV_HASTHIS 0x20
#define PE_CALLCONV_EXPLICITTHIS 0x40

struct pe_sig {
	uint8_t callconv;       /* first signature byte */
	bool has_this;          /* instance method: `this` is the hidden first argument */
	bool explicit_this;
	uint32_t generic_count; /* method generic parameters */
	uint32_t nparams;       /* fixed parameters (vararg extras not counted) */
	struct pe_type ret;
	struct pe_type *params;   /* nparams entries */
	const char **param_names; /* nparams entries, "" when unknown */
	const char *text;         /* "(int32, string)" */
};

/*
 * Decodes the signature of a MethodDef or MemberRef token of pf's metadata.
 * *out is one allocation; free with pe_sig_free().
 */
int pe_md_method_sig(struct pe_file *pf, uint32_t token, struct pe_sig **out);
void pe_sig_free(struct pe_sig *sig);

/* ---- ReadyToRun methods ---- */

enum pe_range_kind {
	PE_RANGE_MAIN = 0,    /* the method body; begin is the entry point */
	PE_RANGE_FUNCLET = 1, /* catch/finally/filter handler body */
	PE_RANGE_COLD = 2,    /* hot/cold split: the cold part */
};

struct pe_range {
	uint32_t begin_rva, end_rva; /* [begin, end) */
	uint64_t file_offset;        /* of begin_rva */
	uint32_t method;             /* index into the method array */
	uint32_t rf_index;           /* RUNTIME_FUNCTIONS index */
	uint8_t kind;                /* enum pe_range_kind */
};

/* pe_method.flags */
#define PE_METHOD_INSTANCE 0x01  /* from InstanceMethodEntryPoints (generic code) */
#define PE_METHOD_FIXUPS 0x02    /* has fixups to resolve before first call */
#define PE_METHOD_UNBOXING 0x04  /* unboxing stub */
#define PE_METHOD_SHARED 0x08    /* its code is also an earlier method's code */
#define PE_METHOD_MEMBERREF 0x10 /* token is a MemberRef */
#define PE_METHOD_UNRESOLVED 0x20 /* its module's metadata was not found */

struct pe_method {
	const char *name;   /* "Ns.Type::Method", "Ns.Box`1[System.__Canon]::Get" */
	const char *sig;    /* "(int32, string)" */
	const char *module; /* assembly name of the metadata that defines the token */
	uint32_t token;     /* MethodDef (0x06..) or MemberRef (0x0A..) token */
	uint32_t component; /* composite: component index; else 0 */
	uint32_t rf_index;  /* entry RUNTIME_FUNCTION */
	uint32_t entry_rva;
	uint64_t entry_offset; /* file offset of the first instruction: the probe point */
	uint32_t code_size;    /* sum of the sizes of its ranges */
	uint32_t first_range;  /* its ranges: pe_file_ranges()[first_range ..] */
	uint32_t nranges;
	unsigned flags;        /* PE_METHOD_* */
};

/*
 * Builds (first call) and returns the table of every method with R2R code:
 * MethodDefEntryPoints of every component, then InstanceMethodEntryPoints.
 * -EPROTO when pf is not an R2R image with code (e.g. a component stub:
 * see pe_info.owner_composite).
 */
int pe_file_methods(struct pe_file *pf, const struct pe_method **methods, size_t *n);
/* All ranges, grouped by method (pe_method.first_range/nranges). */
int pe_file_ranges(struct pe_file *pf, const struct pe_range **ranges, size_t *n);
/*
 * Address -> method: the range containing rva (binary search over ranges
 * sorted by address). -ENOENT when rva is in no method's code.
 */
int pe_file_lookup_rva(struct pe_file *pf, uint32_t rva, const struct pe_method **m,
		       const struct pe_range **r);
/* Same for a file offset (e.g. addr - map_start + map_pgoff from /proc/PID/maps). */
int pe_file_lookup_offset(struct pe_file *pf, uint64_t off, const struct pe_method **m,
			  const struct pe_range **r);
/*
 * Name -> methods. pattern is matched against "name" or, when it contains
 * '(', against "name(sig)"; '*' matches any run and '?' one byte, e.g.
 * "System.String::Concat*", "*::Fibonacci*",
 * "System.String::Concat(string, string)". Writes up to max method indexes
 * to idx (may be NULL when max is 0) and the total match count to *n.
 * Returns 0 even when nothing matched (*n == 0).
 */
int pe_file_find(struct pe_file *pf, const char *pattern, uint32_t *idx, size_t max, size_t *n);
/*
 * Signature of a method of the table, with the type's and the method's
 * generic arguments substituted for instantiations. Free with pe_sig_free().
 */
int pe_file_method_sig(struct pe_file *pf, const struct pe_method *m, struct pe_sig **out);

/*
 * ReadyToRun debug info (the DebugInfo section, indexed like the RUNTIME_FUNCTIONS
 * by a method's entry rf_index): its bounds, native offset from the method's
 * start -> IL offset, sorted by native offset. il is the IL offset, or one of
 * the JIT's markers 0xFFFFFFFF (no mapping), 0xFFFFFFFE (prolog), 0xFFFFFFFD
 * (epilog). Both encodings: nibble triples (R2R major < 16) and the bit-packed
 * entries (16 and later; 3 source-type bits and the fat header from 17).
 * Writes at most cap entries (PE_R2R_MAX_BOUNDS is the format's cap here);
 * *n is the count. -ENOENT: no debug info for that method (or not R2R),
 * -EBADMSG damaged, -EFBIG more than cap.
 */
#define PE_R2R_MAX_BOUNDS 65536u
struct pe_bound {
	uint32_t native, il;
};
int pe_file_r2r_bounds(struct pe_file *pf, uint32_t rf_index, struct pe_bound *out, size_t cap,
		       size_t *n);

/* Simple glob: '*' and '?' only (no classes, no escapes). */
bool pe_glob_match(const char *pattern, const char *s);

#endif
