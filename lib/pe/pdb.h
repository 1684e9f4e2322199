/* SPDX-License-Identifier: MIT */
/*
 * pdb.h - portable PDB reader: IL offset of a method -> source file, line
 * and column.
 *
 * A portable PDB is ECMA-335 metadata with its own tables (Document,
 * MethodDebugInformation with sequence-point blobs, ...) and a "#Pdb" stream
 * holding the PDB id. It lives in a file next to the assembly or inside the
 * assembly (an "embedded portable PDB" debug directory entry, deflated). The
 * assembly's CodeView debug directory entry names the id its PDB must have;
 * a PDB whose id differs is refused (-ESTALE), never used.
 *
 * Line rule (the runtime's own, System.Diagnostics.StackTrace through
 * StackTraceSymbols): the last sequence point whose IL offset is <= the
 * frame's IL offset, hidden sequence points skipped. An IL offset before the
 * first visible sequence point has no line (-ENOENT).
 *
 * Errors: -ENOENT nothing (no PDB, no debug info for the method, no line),
 * -ESTALE a PDB whose id does not match the assembly, -EBADMSG corrupt,
 * -EPROTO not a portable PDB (e.g. a Windows PDB), -EFBIG over a cap,
 * -ENOMEM.
 */
#ifndef CLRTAP_PE_PDB_H
#define CLRTAP_PE_PDB_H

#include "common/compat.h"
#include "pe/pe.h"

struct pe_pdb;

#define PE_PDB_MAX_SIZE ((size_t)256 << 20)      /* PDB file / inflated size cap */
#define PE_PDB_MAX_DOCUMENTS ((uint32_t)1 << 20) /* Document rows */
#define PE_PDB_MAX_PATH 4096                     /* a document name */

/* Where the PDB was found (pe_pdb_source()). */
enum pe_pdb_src {
	PE_PDB_SRC_FILE = 1,     /* a .pdb file */
	PE_PDB_SRC_EMBEDDED = 2, /* the assembly's embedded portable PDB */
	PE_PDB_SRC_MEMORY = 3,   /* pe_pdb_open_mem() */
};

struct pe_srcline {
	const char *file;     /* document name as stored (owned by the pe_pdb) */
	uint32_t line;        /* 1-based start line */
	uint32_t column;      /* 1-based start column */
	uint32_t end_line;
	uint32_t end_column;
	uint32_t sp_il_offset; /* IL offset of the sequence point used */
};

/*
 * The PDB id the assembly asks for (CodeView entry of a portable PDB: GUID +
 * the entry's time stamp), and the PDB path recorded at build time (owned by
 * pf's bytes, copied into path, NUL-terminated, may be truncated). -ENOENT
 * when the assembly has no portable-PDB CodeView entry.
 */
int pe_file_pdb_id(const struct pe_file *pf, uint8_t id[20], char *path, size_t path_len);

/*
 * Opens the assembly's PDB: the embedded one when present, else
 * <dir of the assembly>/<file name of the recorded path>, else
 * <assembly path without .dll/.exe>.pdb. The id must match (else -ESTALE,
 * with the later candidates not tried). Files are opened through
 * opts->open_fn when set (the target's root). opts may be NULL.
 */
int pe_pdb_open_for(const struct pe_file *pf, const char *asm_path,
		    const struct pe_open_opts *opts, struct pe_pdb **out);
/* A portable PDB in memory (copied). No id check. */
int pe_pdb_open_mem(const void *data, size_t len, struct pe_pdb **out);
void pe_pdb_close(struct pe_pdb *pdb);

/* The PDB's own id (20 bytes) and where it came from. */
const uint8_t *pe_pdb_id(const struct pe_pdb *pdb);
enum pe_pdb_src pe_pdb_source(const struct pe_pdb *pdb);

/*
 * method_token: a MethodDef token (0x06xxxxxx). il_offset: the frame's IL
 * offset. Applies the line rule above.
 */
int pe_pdb_line(struct pe_pdb *pdb, uint32_t method_token, uint32_t il_offset,
		struct pe_srcline *out);

#endif
