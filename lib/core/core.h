/* SPDX-License-Identifier: MIT */
/*
 * core.h - an ELF core file (Linux x86_64, also aarch64) as untrusted input.
 *
 * Reads the files the kernel, gdb's gcore, the runtime's createdump and
 * `clrtap dump` write: ELF64 little-endian, e_type ET_CORE. What is read:
 * the PT_LOAD segments (target memory), and in the PT_NOTE segments the
 * "CORE" notes NT_PRSTATUS (one per thread: tid, pr_cursig, registers),
 * NT_PRPSINFO (pid, command name), NT_SIGINFO (the signal), NT_FILE (the
 * mapped files) and NT_AUXV. Every size and offset is checked against the
 * file's size before it is used, and counts are capped (CORE_MAX_*). Paths
 * recorded in the dump are data: the reader never opens them.
 * docs/internals/postmortem.md describes the format and the caps.
 *
 * Strings it returns (comm, paths) are the dump's bytes, NUL-terminated:
 * escape them before they reach a terminal, JSON or a label.
 *
 * A core_file is read-only after core_open(): any number of threads may call
 * core_read() and the lookups at once. Strings and structs it returns live
 * until core_close(). A file opened by path is mapped read-only; it must not
 * be truncated by someone else while it is open (as with every mmap reader).
 */
#ifndef CLRTAP_CORE_CORE_H
#define CLRTAP_CORE_CORE_H

#include "common/compat.h"

struct core_file;                 /* opaque */

/* Caps: a file over one of them is refused (-EBADMSG, why names the cap). */
#define CORE_MAX_THREADS 65536        /* NT_PRSTATUS notes */
#define CORE_MAX_LOADS (1u << 20)     /* PT_LOAD segments */
#define CORE_MAX_MAPPINGS (1u << 20)  /* NT_FILE entries */
#define CORE_MAX_NOTES (1u << 22)     /* notes of every kind */
#define CORE_MAX_PATH 4096            /* bytes of one NT_FILE path, NUL included */
#define CORE_MAX_AUXV 1024            /* NT_AUXV entries */

struct core_regs {                /* x86_64 user_regs_struct order; aarch64: x0..x30, sp (pc is ip) */
	uint64_t ip, sp, fp;          /* the ones every caller needs */
	uint64_t gpr[32];             /* raw, in the kernel's order for the machine */
	unsigned ngpr;
	uint16_t machine;             /* EM_X86_64 / EM_AARCH64 */
};

struct core_thread {
	int tid;
	int signo;                    /* pr_cursig from NT_PRSTATUS (0 = not the signalled one) */
	/* NB: the kernel writes the fatal signal on EVERY thread, the dumping one first; createdump
	   (.NET 10) writes it on the crashing thread only, in no particular place. */
	struct core_regs regs;
};

struct core_mapping {
	uint64_t start, end, file_offset;   /* from NT_FILE */
	const char *path;                    /* as recorded in the dump: NEVER opened by the core reader */
};

struct core_info {
	int pid; char comm[17];              /* NT_PRPSINFO */
	int signo, si_code; uint64_t fault_addr;  /* NT_SIGINFO of the dumping thread if present */
	size_t nthreads, nmappings, nloads;
	uint16_t machine;
	bool truncated;                       /* some PT_LOAD lies beyond the end of the file */
};

/* Opens and validates (size caps, every header bounded); -EINVAL/-EBADMSG for a bad file (exit 8, bad-input),
   -ENOENT etc. for I/O. why gets one line for a person. */
int core_open(const char *path, struct core_file **out, char *why, size_t whylen);
void core_close(struct core_file *c);
const struct core_info *core_info(const struct core_file *c);
const struct core_thread *core_thread(const struct core_file *c, size_t i);     /* NULL past the end */
const struct core_mapping *core_mapping(const struct core_file *c, size_t i);   /* NULL past the end */
/* Reads target memory at addr: bytes copied (may be short at the end of a mapped range; zeros for a
   PT_LOAD's part past p_filesz), -EFAULT if addr is not in the dump. Never reads outside the file. */
ssize_t core_read(const struct core_file *c, uint64_t addr, void *buf, size_t len);
/* The mapping that covers addr, or NULL. */
const struct core_mapping *core_mapping_at(const struct core_file *c, uint64_t addr);
/* NT_AUXV value for a type (AT_*), 0 if absent. */
uint64_t core_auxv(const struct core_file *c, uint64_t type);

/* ---- additions beyond the contract ---- */

/*
 * core_open over bytes in memory (unit tests, the fuzz harness): the same
 * checks. data must stay valid and unchanged until core_close().
 */
int core_open_mem(const void *data, size_t size, struct core_file **out, char *why, size_t whylen);

/*
 * 0 when every PT_LOAD's bytes are in the file; -EBADMSG and a why line
 * ("truncated: ...", with the sizes) when some lie past its end. A reader
 * that must not answer from a partial dump calls this after core_open().
 * core_read() never returns bytes that are missing: it stops before them
 * (-EFAULT when the first byte is missing).
 */
int core_check_complete(const struct core_file *c, char *why, size_t whylen);

/* One PT_LOAD segment, sorted by start, never overlapping. */
struct core_load {
	uint64_t start, end;   /* target addresses [start, end) (p_vaddr, p_vaddr + p_memsz) */
	uint64_t file_offset;  /* p_offset */
	uint64_t filesz;       /* p_filesz: bytes past it read as zeros */
	uint64_t avail;        /* bytes of filesz present in the file (< filesz: truncated) */
	uint32_t flags;        /* p_flags (PF_R, PF_W, PF_X) */
};
const struct core_load *core_load(const struct core_file *c, size_t i);          /* NULL past the end */

/* The x86_64 / aarch64 register names in core_regs.gpr order ("rip"), NULL past the end. */
const char *core_reg_name(uint16_t machine, unsigned i);

#endif
