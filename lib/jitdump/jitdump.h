/* SPDX-License-Identifier: MIT */
/*
 * jitdump.h - reads the runtime's jitdump file (jit-PID.dump, perf's jitdump
 * format: a file header, then records; JIT_CODE_LOAD gives a code address,
 * size and name). .NET 11 buffers its perf map but writes jitdump as code is
 * published, so the commands that follow JIT code live read it there.
 *
 * The file is the target's: every size is checked, a record is capped
 * (JITDUMP_REC_MAX), a name too (JITDUMP_NAME_MAX), and the code bytes that
 * follow each name are skipped, never read. Reading is incremental: each
 * refresh goes on from the offset the last one stopped at, a record the
 * runtime is still writing is left for the next.
 */
#ifndef CLRTAP_JITDUMP_JITDUMP_H
#define CLRTAP_JITDUMP_JITDUMP_H

#include "common/compat.h"

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" in the writer's byte order */
#define JITDUMP_HDR_MIN 40u       /* the version 1 file header */
#define JITDUMP_REC_HDR 16u       /* id, total size, timestamp */
#define JITDUMP_LOAD_FIXED 40u    /* pid, tid, vma, code address, size, index */
#define JITDUMP_REC_MAX (64u << 20)
#define JITDUMP_NAME_MAX 4096u
#define JITDUMP_HDR_MAX 4096u
/* bytes of the file one refresh moves over at most (code bytes are skipped) */
#define JITDUMP_REFRESH_MAX (256ull << 20)

enum { JITDUMP_CODE_LOAD = 0 };

struct jitdump_load {
	uint64_t addr, size;
	const char *name; /* not NUL-terminated; the target's text */
	size_t name_len;
};

/*
 * The file header at the start of buf: its size (*hdr_size, at least
 * JITDUMP_HDR_MIN). -EAGAIN: not all there yet; -EPROTO: the other byte
 * order; -EINVAL: not a jitdump file.
 */
int jitdump_parse_header(const uint8_t *buf, size_t len, uint32_t *hdr_size);

/*
 * Records from buf, which starts at a record; avail is how many bytes the
 * file holds from there (>= len): a record is taken only when all of it is in
 * the file, its code bytes need not be in buf. Calls load for each
 * JIT_CODE_LOAD (a nonzero return stops, and is returned); other records are
 * skipped, so is a load whose name is over JITDUMP_NAME_MAX (*skipped counts
 * them). *consumed: bytes of whole records gone over (may exceed len).
 * Returns 0, -EINVAL at a malformed record (*consumed stops before it).
 */
int jitdump_parse_records(const uint8_t *buf, size_t len, uint64_t avail,
			  int (*load)(void *ctx, const struct jitdump_load *l), void *ctx,
			  uint64_t *consumed, uint64_t *skipped);

/* The reading state of one file. */
struct jitdump_reader {
	uint64_t off;     /* next record (0: the header is still to read) */
	uint64_t ino, dev;
	uint64_t stamp;   /* the header's timestamp: a file written anew differs */
	uint64_t loads, skipped;
	uint64_t prejit;  /* ReadyToRun code ("[PreJIT]"): not passed on */
	bool bad;         /* malformed: no more is read */
};
void jitdump_reader_init(struct jitdump_reader *r);

/*
 * Reads what the file gained since the last call, calling line(ctx) with
 * each code load as a perf map line ("START SIZE NAME", control bytes of the
 * name made '?'); ReadyToRun code the runtime lists when the map is turned on
 * ("[PreJIT]", "[PreJit-cold]") is left out: the images name it. The file is opened inside the target's root (pid, tpath as
 * the target sees it), or at hpath when tpath is NULL (tests). A file
 * replaced (another inode, or its header's timestamp changed: written anew)
 * is read from its start. Returns 0 (also when the
 * file is not there yet), -EINVAL once it is found malformed, -ELOOP/-EISDIR/...
 * when the target put something else there, or line's negative return.
 */
int jitdump_refresh(struct jitdump_reader *r, pid_t pid, const char *tpath, const char *hpath,
		    int (*line)(void *ctx, const char *line, size_t len), void *ctx);

#endif
