/* SPDX-License-Identifier: MIT */
/*
 * stacks.h - the managed stack of every thread of a process at one moment,
 * merged into a call tree (threads that share a call path share its nodes,
 * each node counts the threads through it).
 *
 * The stacks come from an EventPipe session with the sample profiler
 * (Microsoft-DotNETCore-SampleProfiler) and a rundown: the first
 * ThreadSample of each thread is kept, the rundown's MethodDCEndVerbose
 * events (and any MethodLoadVerbose) name the code, and once the stream has
 * ended each kept stack is symbolized and added to the tree.
 */
#ifndef CLRTAP_STACKS_STACKS_H
#define CLRTAP_STACKS_STACKS_H

#include "common/compat.h"
#include "common/json.h"
#include "ipc/ipc.h"
#include "nettrace/nettrace.h"
#include "task/task.h"

#define STACKS_MAX_THREADS 65536   /* threads kept */
#define STACKS_MAX_FRAMES 4096     /* frames of one stack (deeper: the root end is cut) */
#define STACKS_MAX_NODES (1u << 22) /* nodes of one tree */
#define STACKS_UNRESOLVED "[unresolved frames]"

/* ------------------------------------------------------------------------ */
/* Tree                                                                      */

struct stacks_node {
	const char *name;  /* frame name; "" for the root */
	uint32_t count;    /* threads whose stack goes through this node */
	struct stacks_node **children;
	size_t nchildren;
	uint64_t *tids;    /* threads whose stack ends here (their leaf frame), ascending */
	size_t ntids;
};

struct stacks_tree;

int stacks_tree_new(struct stacks_tree **out);
void stacks_tree_free(struct stacks_tree *t);

/*
 * Adds one thread: frames[0] is the outermost frame (the thread's entry),
 * frames[n-1] the innermost. Names are copied (interned). n == 0 is refused
 * (-EINVAL); -E2BIG past STACKS_MAX_NODES; -ENOMEM.
 */
int stacks_tree_add(struct stacks_tree *t, uint64_t tid, const char *const *frames, size_t n);

/*
 * The root (name "", count = threads added). Children are ordered by count,
 * highest first, then by name; thread ids ascending. Valid until the next
 * stacks_tree_add or stacks_tree_free.
 */
const struct stacks_node *stacks_tree_root(struct stacks_tree *t);

/* ------------------------------------------------------------------------ */
/* Collecting from a session                                                 */

struct stacks_thread {
	uint64_t tid;      /* OS thread id as the target sees it */
	uint64_t *ips;     /* leaf first */
	uint32_t nframes;  /* 0: the sample had no managed frame */
	uint32_t type;     /* enum nt_sample_type of the kept sample */
};

struct stacks_sampler;

int stacks_sampler_new(struct stacks_sampler **out);
void stacks_sampler_free(struct stacks_sampler *s);

/*
 * Feeds an event of the session (nt_handlers.event): method load/rundown
 * events are recorded, the first ThreadSample of each thread is kept.
 * Returns 0 or a negative errno (-EFBIG/-E2BIG over the caps, -ENOMEM);
 * undecodable events are skipped.
 */
int stacks_sampler_event(struct stacks_sampler *s, const struct nt_event *ev);

/* Records a code range by hand (name copied), e.g. from a perf map. */
int stacks_sampler_add_method(struct stacks_sampler *s, uint64_t start, uint32_t size,
			      const char *name);

/* Threads kept so far, in order of their first sample. */
size_t stacks_sampler_nthreads(const struct stacks_sampler *s);
const struct stacks_thread *stacks_sampler_thread(const struct stacks_sampler *s, size_t i);

/*
 * The name of frame i (0 = leaf) of thread th: "Namespace.Type::Method" or
 * NULL when no method covers it (return addresses are looked up at ip - 1).
 */
const char *stacks_sampler_frame(struct stacks_sampler *s, const struct stacks_thread *th,
				 uint32_t i);
/* The same frame as the runtime names it (common/clrname.h), or NULL. */
const char *stacks_sampler_frame_raw(struct stacks_sampler *s, const struct stacks_thread *th,
				     uint32_t i);

/*
 * Adds every kept thread with at least one managed frame to t, frames
 * symbolized; runs of unresolved frames become one STACKS_UNRESOLVED frame.
 * Returns the number of threads added or a negative errno.
 */
int stacks_sampler_build(struct stacks_sampler *s, struct stacks_tree *t);

/* ------------------------------------------------------------------------ */
/* Thread names                                                              */

struct stacks_names;

/*
 * Reads the name (comm) of every thread of pid from /proc/<pid>/task/<tid>/status,
 * keyed by the id the target knows it by (the last NSpid field, so it works
 * for targets in other PID namespaces). Returns 0, -ESRCH/-EACCES/-errno
 * (the task directory cannot be read), -E2BIG (more than STACKS_MAX_THREADS)
 * or -ENOMEM. Free with stacks_names_free.
 */
int stacks_names_load(struct stacks_names **out, pid_t pid);
void stacks_names_free(struct stacks_names *n);
/* The name of thread nstid, or NULL. */
const char *stacks_names_get(const struct stacks_names *n, uint64_t nstid);

/* ------------------------------------------------------------------------ */
/* The whole workflow (clrtap stacks and clrtap serve's stacks sessions)     */

/*
 * One capture: a short sample-profiler session with a rundown on ep, the
 * first sample of each thread symbolized into the tree, thread names read
 * right after the session. stop is the caller's own flag (a session's, or
 * the CLI's Ctrl-C flag): no process globals.
 */
struct stacks_capture_opts {
	int sample_ms;                   /* how long the sampler runs (1..60000) */
	bool no_names;                   /* do not read thread names */
	volatile sig_atomic_t *stop;
};

enum stacks_capture_stage {
	STACKS_STAGE_NONE = 0,
	STACKS_STAGE_SESSION, /* the EventPipe session failed: res, rerr (ipc_session_strerror) */
	STACKS_STAGE_READ,    /* the stream could not be read: bad_offset, msg */
	STACKS_STAGE_BUILD,   /* memory, or the tree could not be built */
};

struct stacks_capture {
	pid_t pid;
	struct stacks_sampler *sampler;
	struct stacks_tree *tree;
	struct stacks_names *names;   /* NULL: none */
	bool incomplete;              /* the stream ended without its end marker */
	/* on failure */
	enum stacks_capture_stage stage;
	struct ipc_session_result res;
	struct ipc_error rerr;
	uint64_t bad_offset;
	char msg[256];
};

/*
 * Runs the capture. Returns 0 (c filled), or a negative errno with c->stage
 * saying where it failed. Release c with stacks_capture_release either way.
 */
int stacks_capture_run(const struct ipc_endpoint *ep, pid_t pid,
		       const struct stacks_capture_opts *o, struct stacks_capture *c);
void stacks_capture_release(struct stacks_capture *c);
/* Whether any frame of a thread's stack is named managed code. */
bool stacks_thread_has_managed(struct stacks_sampler *s, const struct stacks_thread *th);
/*
 * The capture as JSON (the document of `clrtap stacks --json`): pid,
 * threads_sampled, threads_with_managed_frames, threads (tid, name, frames),
 * tree (frame, count, threads, children).
 */
void stacks_capture_json(const struct stacks_capture *c, struct ct_json *j);

/* The stacks task (task.c; lib/task/table.c lists it). */
extern const struct task_param stacks_task_params[];
extern const size_t stacks_task_nparams;
int task_run_stacks(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r);

#endif
