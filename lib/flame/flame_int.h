/* SPDX-License-Identifier: MIT */
/*
 * flame_int.h - lib/flame internals shared by the aggregator (flame.c) and
 * the writers (flame_folded.c, flame_html.c, flame_svg.c, flame_speedscope.c,
 * flame_pprof.c). Not for use outside lib/flame.
 */
#ifndef CLRTAP_FLAME_FLAME_INT_H
#define CLRTAP_FLAME_FLAME_INT_H

#include "common/compat.h"
#include "common/hashtab.h"
#include "common/strbuf.h"
#include "flame/flame.h"

/*
 * One trie node: a distinct call path prefix. Node 0 is the virtual root
 * ("all"); its name is unused. The parent/name pair is unique and a child's
 * index is always larger than its parent's. Totals are not kept per node
 * (that would touch every node of every stack); flame_view_build sums them.
 */
#define FLAME_PCACHE_BITS 12
#define FLAME_PCACHE (1u << FLAME_PCACHE_BITS)

struct flame_node {
	uint32_t name;   /* index into flame.names */
	uint32_t parent; /* node index */
	uint64_t self;   /* weight of stacks ending here */
	uint64_t hits;   /* number of flame_add calls ending here */
};

struct flame_name {
	const char *s; /* NUL-terminated, in the arena */
	uint32_t len;
	uint32_t hash;
};

struct flame {
	struct flame_node *nodes;
	size_t nnodes, anodes;
	size_t max_nodes;
	struct ct_itab kids; /* nodes by (parent, name); the root is not in it */

	struct flame_name *names;
	size_t nnames, anames;
	struct ct_itab ntab; /* names by content */
	char *arena;    /* current block for name bytes */
	size_t arena_left;
	char **blocks;
	size_t nblocks, ablocks;
	size_t name_bytes;

	uint64_t total;
	uint64_t adds;
	uint64_t truncated; /* stacks cut at FLAME_MAX_DEPTH */

	struct flame_pcache {
		const char *p; /* the caller's pointer */
		const char *s; /* the interned copy */
		uint32_t name;
	} pcache[FLAME_PCACHE];        /* caller's string pointer -> name (a hint) */
	uint32_t hint[FLAME_MAX_DEPTH]; /* the previous stack's nodes */
	size_t nhint;
};

/*
 * A sorted, read-only view for the writers: children of each node sorted by
 * name (byte order), names ranked, per-name totals.
 */
struct flame_view {
	const struct flame *f;
	uint32_t *kid;       /* node indexes grouped by parent, sorted by name */
	uint32_t *kstart;    /* children of node i: kid[kstart[i] .. kstart[i+1]) */
	uint64_t *total;     /* per node: weight of stacks through it */
	uint32_t *rank;      /* name index -> position among used names (byte order) */
	uint32_t *byrank;    /* position -> name index */
	size_t nused;        /* names that carry weight */
	uint64_t *nself;     /* per name index */
	uint64_t *ntotal;    /* per name index, counted once per stack */
	uint32_t maxdepth;   /* deepest node (root = 0) */
};

int flame_view_build(const struct flame *f, struct flame_view *v);
void flame_view_free(struct flame_view *v);

/*
 * Depth-first walk of a view, children in name order, without recursion:
 * every writer goes through it. After FLAME_WALK_ENTER the entered node is
 * stk[sp] and its path from the root is stk[1..sp]; flame_walk_skip() then
 * steps over its subtree (no LEAVE for it). FLAME_WALK_LEAVE comes after a
 * node's subtree, the root's (node 0) last.
 */
enum { FLAME_WALK_END = 0, FLAME_WALK_ENTER, FLAME_WALK_LEAVE };
struct flame_walk {
	const struct flame_view *v;
	uint32_t stk[FLAME_MAX_DEPTH + 2], pos[FLAME_MAX_DEPTH + 2];
	int sp;
};
void flame_walk_init(struct flame_walk *w, const struct flame_view *v);
int flame_walk_next(struct flame_walk *w, uint32_t *node);
void flame_walk_skip(struct flame_walk *w);

/* Buffered output to an fd, optionally through gzip. */
struct flame_out {
	int fd;
	int err;
	struct strbuf sb;
	void *z; /* z_stream when gzip'ing */
};

void flame_out_init(struct flame_out *o, int fd);
int flame_out_gzip(struct flame_out *o);
/* Flushes the buffer when it is large; call after appending. */
void flame_out_maybe_flush(struct flame_out *o);
/* Writes everything (and ends the gzip stream); returns 0 or first error. */
int flame_out_finish(struct flame_out *o);
void flame_out_add(struct flame_out *o, const void *p, size_t n);
void flame_out_str(struct flame_out *o, const char *s);
void flame_out_f(struct flame_out *o, const char *fmt, ...) PRINTF(2, 3);

/*
 * Decodes one code point of s (len bytes left) for escaping: returns the
 * number of bytes consumed (>= 1) and stores the code point, or U+FFFD for an
 * invalid, overlong or surrogate sequence (consuming one byte).
 */
size_t flame_utf8_next(const char *s, size_t len, uint32_t *cp);
/* Appends cp as UTF-8. */
void flame_out_cp(struct flame_out *o, uint32_t cp);
/* JSON string body (no quotes) by the one JSON escaper, page-safe:
 * ct_json_escape_html (also < > &, so it may sit in a <script>). */
void flame_out_json_str(struct flame_out *o, const char *s, size_t len);
/* XML/HTML text or attribute: & < > " ' escaped, control characters and
 * invalid UTF-8 become U+FFFD. */
void flame_out_xml_str(struct flame_out *o, const char *s, size_t len);
/* Escaped lines of text ('\n'-separated), each ending in a newline (notes). */
void flame_out_xml_lines(struct flame_out *o, const char *text);

int flame_write_folded(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts);
int flame_write_html(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts);
int flame_write_svg(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts);
int flame_write_speedscope(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts);
int flame_write_pprof(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts);

/* "samples" unless opts says "nanoseconds". */
bool flame_opts_is_ns(const struct flame_opts *opts);

#endif
