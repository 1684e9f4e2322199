/* SPDX-License-Identifier: MIT */
/*
 * async.h - pending async chains read from a heap snapshot (async.c).
 *
 * An async method suspended at an await lives on the heap as a state
 * machine box (AsyncStateMachineBox<TResult, Type+<Method>d__N>), on no
 * thread. The box holds the awaited task (its awaiter field) and the
 * awaited task holds the box as its continuation, directly or in its list of
 * continuations: a reference each way. An awaiting caller's box and its
 * callee's box are tied the same way. From a box that is tied so to an
 * object of a Task type that is no box (the task of a TaskCompletionSource,
 * a Task.Delay timer, a Task.WhenAll, ...), the chain is followed outward
 * through the boxes tied to it, one at a time; where a box is tied to more
 * than one other, the chain stops there (cut) rather than guess.
 */
#ifndef CLRTAP_HEAP_ASYNC_H
#define CLRTAP_HEAP_ASYNC_H

#include "common/compat.h"

#include "common/json.h"
#include "common/strbuf.h"
#include "heap/heap.h"

#define HEAP_ASYNC_MAX_DEPTH 64 /* frames of one chain */

struct heap_async_group {
	const char *awaited;   /* the awaited object's type */
	const char *source;    /* the object that owns it (a TaskCompletionSource<T>), or NULL */
	char **frames;         /* outermost first: "Type::Method [async]" (or the box's state machine type) */
	const char **raw_frames; /* the same, the boxes' type names (in the graph: valid while it is) */
	uint32_t nframes;
	bool cut;              /* the outward walk stopped at a box tied to more than one */
	uint64_t count;        /* chains of this shape */
};

struct heap_async_loose {
	char *frame;           /* a box's method */
	uint64_t count;
};

struct heap_async {
	uint64_t boxes;                 /* state machine boxes in the snapshot */
	uint64_t chained;               /* boxes on a followed chain */
	struct heap_async_group *groups; /* by count, descending */
	uint32_t ngroups;
	struct heap_async_loose *loose;  /* boxes on no followed chain, by method */
	uint32_t nloose;
};

int heap_async_chains(const struct heap_graph *g, struct heap_async **out);
/*
 * The one JSON shape of pending chains (stacks --async, dump analyze
 * --async): keys state_machines, on_chains, chains, not_followed, written
 * into the object j has open.
 */
void heap_async_json(const struct heap_async *a, struct ct_json *j);
/* The chains and the boxes on none, as text lines (names terminal-escaped). */
int heap_async_text(const struct heap_async *a, struct strbuf *out);
void heap_async_free(struct heap_async *a);

#endif
