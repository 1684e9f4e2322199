/* SPDX-License-Identifier: MIT */
/*
 * strbuf.h - a growable, NUL-terminated byte buffer with a size cap.
 *
 * Invariants: buf is never NULL (an empty strbuf points at a shared empty
 * string until the first append), buf[len] == '\0', len <= max.
 * Every buffer filled from outside bytes (a socket, a file, another process)
 * is created with an explicit cap; an append that would pass the cap fails
 * with -EMSGSIZE and leaves the buffer as it was.
 *
 * Mutators return 0 or a negative errno (-ENOMEM, -EMSGSIZE).
 *
 * Errors are sticky: the first failed append records its errno in err, and
 * every later append is a no-op that returns that same error, so a run of
 * appends may ignore the individual results as long as the writer checks
 * strbuf_error() (or writes through strbuf_fwrite(), which refuses a buffer
 * with an error) once, at the end. strbuf_reset() and strbuf_release() clear
 * the error (the buffer starts again), and so does strbuf_rollback() (back to
 * a mark taken before the failed appends); strbuf_setlen() does not.
 */
#ifndef CLRTAP_COMMON_STRBUF_H
#define CLRTAP_COMMON_STRBUF_H

#include "common/compat.h"

extern char strbuf_empty[];

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max; /* cap on len; STRBUF_UNBOUNDED (1 TiB) when "unbounded" */
	int err;    /* first append error (negative errno), 0 if none; sticky */
};

#define STRBUF_UNBOUNDED ((size_t)1 << 40)
#define STRBUF_INIT { strbuf_empty, 0, 0, STRBUF_UNBOUNDED, 0 }
#define STRBUF_INIT_MAX(m) { strbuf_empty, 0, 0, (m), 0 }

void strbuf_init(struct strbuf *sb, size_t max);
/* Frees the memory and leaves an empty buffer with the same cap. */
void strbuf_release(struct strbuf *sb);
/* Ownership of the bytes passes to the caller (free()); sb is reset. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_reset(struct strbuf *sb);

int strbuf_grow(struct strbuf *sb, size_t extra) WARN_UNUSED;
int strbuf_add(struct strbuf *sb, const void *data, size_t n);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, int c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) PRINTF(2, 3);
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
void strbuf_setlen(struct strbuf *sb, size_t len);
/*
 * Undoes the appends since mark (a length taken before them) and clears the
 * error they left: for code that gives up on one piece and goes on. A failed
 * append leaves the buffer as it was, so what precedes the mark is whole.
 */
void strbuf_rollback(struct strbuf *sb, size_t mark);

/* The sticky error: 0, or the negative errno of the first failed append. */
static inline int strbuf_error(const struct strbuf *sb)
{
	return sb->err;
}

/*
 * Writes the buffer to f, the final check of a run of appends: a buffer with
 * a sticky error writes nothing and returns that error; otherwise 0, or -EIO
 * when the write fails.
 */
int strbuf_fwrite(const struct strbuf *sb, FILE *f);

/*
 * Reads the whole file at path into sb (appending), failing with -EFBIG when
 * it is longer than sb's cap. Returns 0 or a negative errno.
 */
int strbuf_read_file(struct strbuf *sb, const char *path);

#endif
