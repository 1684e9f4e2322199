/* SPDX-License-Identifier: MIT */
/*
 * profile.h - from raw perf stacks (lib/perf's sampler) to named frames
 * (lib/sym) to an aggregated flame (lib/flame), for `clrtap profile` and
 * `clrtap top`; plus the perf map handling of a session: turn the target's
 * perf map on for the session and back off after, even if clrtap is killed.
 *
 * Frame names (root first in the flame, leaf last):
 *   managed code (JIT or ReadyToRun)   Ns.Type::Method            (Nested types Outer+Inner)
 *   runtime stubs from the perf map    the perf map's name, e.g. "stub<12> ..."
 *   native code                        libcoreclr.so!Function
 *   kernel                             [k] function
 *   an address with no symbol          [libfoo.so] (its module), [jit] (JIT memory
 *                                      with no perf map entry), [unknown]
 *   thread root (opts.thread_roots)    [thread] name
 */
#ifndef CLRTAP_PROFILE_PROFILE_H
#define CLRTAP_PROFILE_PROFILE_H

#include "common/compat.h"

#include <signal.h>

#include "flame/flame.h"
#include "ipc/ipc.h"
#include "perf/perf.h"
#include "proc/proc.h"
#include "sym/sym.h"

struct profile;

struct profile_opts {
	bool thread_roots;    /* a "[thread] NAME" root frame per thread */
	bool keep_samples;    /* keep every sample for profile_write_raw */
	bool cpu_in_ns;       /* on-CPU weight = period ns (for --wall); else 1 per sample */
	size_t max_stacks;    /* distinct stacks kept (0: 1 << 20); past it -E2BIG */
	/* When set and it becomes non-zero, profile_build_ex stops naming stacks and
	 * returns what it has (profile_summary.partial): a signal during processing. */
	const volatile sig_atomic_t *stop;
};

int profile_new(struct profile **out, const struct profile_opts *o);
void profile_free(struct profile *p);
/* Forgets every stack (for `top`, between refreshes). */
void profile_reset(struct profile *p);

/* A perf_stack_fn: ctx is the struct profile. */
int profile_add_stack(void *ctx, const struct perf_stack *st);

/* Thread name for a tid (NULL if unknown), for thread roots and raw output. */
typedef const char *(*profile_comm_fn)(void *ctx, uint32_t tid);

struct profile_summary {
	uint64_t cpu_samples;      /* on-CPU samples */
	uint64_t offcpu_intervals; /* off-CPU intervals */
	uint64_t offcpu_ns;        /* their total */
	uint64_t frames;           /* frames over all samples (each sample counted) */
	uint64_t unnamed;          /* of which had no name */
	uint64_t leaves;           /* leaf frames (one per sample / interval) */
	uint64_t unnamed_leaves;   /* samples whose leaf frame had no name */
	uint64_t addr_named;       /* frames named only "sub_<addr>" (function start from
				    * unwind tables: no symbol table or debug file) */
	uint64_t addr_named_leaves;
	uint64_t kernel_frames;    /* of which were kernel frames */
	uint64_t managed_frames;   /* of which were managed code (JIT or R2R) */
	uint64_t native_frames;    /* of which were named native code */
	size_t stacks;             /* distinct stacks */
	bool dropped;              /* distinct-stack cap reached: some samples dropped */
	uint64_t dropped_samples;
	bool partial;              /* stopped by opts.stop: only stacks_named of stacks are in */
	size_t stacks_named;
};

/*
 * Names every stack through sp and adds it to f (root first). Weights: on-CPU
 * samples count 1 (or their period in ns with cpu_in_ns); off-CPU intervals
 * their ns. sum may be NULL.
 */
int profile_build(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		  struct flame *f, struct profile_summary *sum);
/* Flags for profile_build_ex. */
#define PROFILE_BUILD_NO_KERNEL 1u /* leave kernel frames out (e.g. to rank user frames) */
#define PROFILE_BUILD_TO_MANAGED 2u /* cut each stack after its innermost managed frame
				     * (stacks without one are left whole) */
int profile_build_ex(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		     struct flame *f, struct profile_summary *sum, unsigned flags);

/*
 * Writes every kept sample as text, perf-script style:
 *   <comm> <tid> <time s>: <weight> cpu-clock|off-cpu
 *   \t<addr> <frame name> (<kind>)   (leaf first; kind: jit r2r native kernel stub ?)
 *   <blank line>
 * Needs keep_samples. Returns 0 or a negative errno.
 */
int profile_write_raw(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		      int fd);

/*
 * The name of one frame into buf (see the top of this file). leaf: addr is
 * the sampled instruction itself, not a return address. Returns 1 when it
 * was named, 0 when not (buf then holds the placeholder).
 */
int profile_frame_name(struct sym_proc *sp, uint64_t addr, bool kernel, bool leaf, char *buf,
		       size_t len, enum sym_kind *kind);

/* ---- the target's perf map for the length of a session ---- */

struct profile_perfmap {
	bool was_on;           /* the target had it on already: left alone */
	bool turned_on;        /* this session turned it on */
	bool file_existed;     /* the map file existed before */
	char map_path[PROC_PATH_MAX]; /* host view */
	char sock[PROC_PATH_MAX];
	int timeout_ms;
	pid_t guard;           /* watcher that restores the setting if clrtap dies */
	int guard_fd;
};

/*
 * If the target's perf map is off, turns it on (perf map only: no jitdump)
 * and forks a small watcher process that turns it back off (and removes a
 * map file that did not exist before) if this process dies without calling
 * profile_perfmap_end, SIGKILL included. Call before opening perf events.
 * Returns 0, or the IPC error (*rerr filled); pm->map_path is valid either way.
 */
int profile_perfmap_begin(struct profile_perfmap *pm, const struct proc_target *t, int timeout_ms,
			  struct ipc_error *rerr);
/* Turns it back off when this session turned it on; stops the watcher. */
int profile_perfmap_end(struct profile_perfmap *pm, struct ipc_error *rerr);

/* ---- user stacks of off-CPU samples (unwind.c) ---- */

/* CFI (libdw, .eh_frame) for native frames, frame pointers for JIT/R2R code. */
struct profile_unwinder;
int profile_unwinder_new(struct profile_unwinder **out, struct sym_proc *sp);
void profile_unwinder_free(struct profile_unwinder *u);
/* A perf_unwind_fn (ctx = the unwinder). */
unsigned profile_unwind_user(void *ctx, const struct perf_user_state *us, uint64_t *out,
			     unsigned cap);

/* ---- a whole session: perf map, symbolizer, sampler, stacks ---- */

struct profile_session_opts {
	pid_t pid;
	const struct proc_target *target; /* a .NET target (perf map handled), or NULL */
	int timeout_ms;                   /* IPC timeout */
	struct perf_sampler_opts sampler;
	struct profile_opts profile;
	bool no_boost;                    /* keep clrtap's priority as it is (perf_prio_raise) */
	const char *sym_cache_dir;        /* sym_opts.cache_dir: NULL default, "" none */
};

enum profile_stage { PROFILE_STAGE_NONE = 0, PROFILE_STAGE_SYM, PROFILE_STAGE_PERF };

struct profile_session {
	pid_t pid;
	bool dotnet;
	struct profile_perfmap pm;
	int pm_err;               /* turning the perf map on failed (0: fine) */
	struct ipc_error pm_rerr;
	struct sym_proc *sp;
	struct perf_sampler *smp;
	struct profile *prof;
	struct profile_unwinder *uw;
	uint64_t start_ns, end_ns, last_refresh_ns;
	bool target_gone;
	bool stopped;
	enum profile_stage failed_stage; /* where profile_session_start failed */
	struct perf_prio prio;           /* clrtap's own priority, raised for the session */
};

/*
 * Turns the perf map on (for a .NET target), opens the symbolizer and starts
 * sampling. On failure everything is undone (the perf map too) and
 * failed_stage says which step failed.
 */
int profile_session_start(struct profile_session *s, const struct profile_session_opts *o);
/* Waits up to timeout_ms, collects, refreshes symbols once a second.
 * Returns 0, or -ESRCH once the target is gone (s->target_gone). */
int profile_session_tick(struct profile_session *s, int timeout_ms);
/* Stops sampling and reads the last symbols (idempotent). */
int profile_session_stop(struct profile_session *s);
/* Builds the flame from the session's stacks (call after stop, or anytime for `top`). */
int profile_session_build(struct profile_session *s, struct flame *f, struct profile_summary *sum);
int profile_session_build_ex(struct profile_session *s, struct flame *f,
			     struct profile_summary *sum, unsigned flags);
/* Restores the perf map (idempotent); the IPC error if that failed. */
int profile_session_restore(struct profile_session *s, struct ipc_error *rerr);
/*
 * Same, waiting at most wait_ms for the target's answer; when it does not
 * answer in time (a busy target), the restore is handed to the perf-map
 * watcher, which does it without clrtap waiting: returns 1.
 */
int profile_session_restore_within(struct profile_session *s, int wait_ms, struct ipc_error *rerr);
/* Everything else; restores the perf map if not done yet. */
void profile_session_close(struct profile_session *s);
/* A profile_comm_fn over a session (ctx = the session). */
const char *profile_session_comm(void *ctx, uint32_t tid);

#endif
