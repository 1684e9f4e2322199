/* SPDX-License-Identifier: MIT */
/*
 * ilrw.h - the one IL rewrite the profiler does: put a few instructions in
 * front of a method body. Shared by libclrtap-profiler (which calls it in
 * GetReJITParameters) and clrtap's unit tests and fuzzer; it uses nothing
 * but memcpy, so it builds for glibc and musl alike.
 *
 * A method body is a tiny header (1 byte: code size << 2 | 2) or a fat one
 * (12 bytes: flags and header size, max stack, code size, local signature
 * token) followed by the code and, for fat bodies with the MoreSects flag,
 * 4-byte aligned extra sections holding exception-handling clauses in small
 * (12-byte) or fat (24-byte) form. Branches are relative, so prepending code
 * moves no branch; only the clauses' absolute offsets move. The result is
 * always a fat header with one fat EH section.
 */
#ifndef CLRTAP_AGENT_ILRW_H
#define CLRTAP_AGENT_ILRW_H

#include <stddef.h>
#include <stdint.h>

#define ILRW_MAX_BODY (1u << 20)  /* refuse bodies larger than 1 MiB */
#define ILRW_MAX_CLAUSES 128

/*
 * Writes to out (cap bytes) the body in (len bytes available; the real size
 * is read from the header) with prefix (plen bytes of IL needing stack
 * slots) put before its first instruction. *outlen gets the new size.
 * Returns 0, -22 (EINVAL: not a valid body), -28 (ENOSPC: out too small),
 * or -27 (EFBIG: over the caps).
 */
int ilrw_prepend(const uint8_t *in, size_t len, const uint8_t *prefix, size_t plen,
		 unsigned stack, uint8_t *out, size_t cap, size_t *outlen);

/*
 * The general form: prefix before the first instruction and at_ret before
 * every ret (where the stack holds just the return value, if any). Needs
 * decoding every instruction: short branches become long ones, every
 * branch, switch and exception clause offset is moved. An unknown opcode
 * gives -22 (EINVAL) and nothing is written.
 */
struct ilrw_edit {
	const uint8_t *prefix;
	size_t plen;
	const uint8_t *at_ret; /* NULL: leave ret alone */
	size_t rlen;
	unsigned stack;        /* stack slots the inserted code needs */
};
int ilrw_rewrite(const uint8_t *in, size_t len, const struct ilrw_edit *e, uint8_t *out,
		 size_t cap, size_t *outlen);

/* Size of the body at in (header + code + sections), or a negative errno. */
long ilrw_body_size(const uint8_t *in, size_t len);

#endif
