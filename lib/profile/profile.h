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
#include "perfmap/perfmap.h"
#include "proc/proc.h"
#include "proc/taskcpu.h"
#include "sym/sym.h"
#include "task/task.h"

struct profile;

struct profile_opts {
	bool thread_roots;    /* a "[thread] NAME" root frame per thread */
	bool keep_samples;    /* keep every sample for profile_write_raw */
	bool cpu_in_ns;       /* on-CPU weight = period ns (for --wall); else 1 per sample */
	size_t max_stacks;    /* distinct stacks kept (0: 1 << 20); past it -E2BIG */
	/* When set and it becomes non-zero, profile_build_ex stops naming stacks and
	 * returns what it has (profile_summary.partial): a signal during processing. */
	const volatile sig_atomic_t *stop;
	sig_atomic_t stop_above; /* stop only when *stop exceeds this (a further signal) */
};

int profile_new(struct profile **out, const struct profile_opts *o);
void profile_free(struct profile *p);
/* Forgets every stack (for `top`, between refreshes). */
void profile_reset(struct profile *p);

/* A perf_stack_fn: ctx is the struct profile. */
int profile_add_stack(void *ctx, const struct perf_stack *st);

/*
 * Names a whole stack (ips leaf first) into names, root first, at most cap,
 * and into idx (when not NULL) the index in ips each name is for;
 * returns the count, or PROFILE_NAMER_SKIP to leave the stack out of the
 * profile (counted in profile_summary.left_out). Set one when the addresses are not the process's own
 * (the EventPipe engine names them from the trace's method events); without
 * one, frames are named through lib/sym.
 */
typedef size_t (*profile_namer_fn)(void *ctx, const uint64_t *ips, unsigned nr,
				   const char **names, uint32_t *idx, size_t cap);
#define PROFILE_NAMER_SKIP ((size_t)-1)
void profile_set_namer(struct profile *p, profile_namer_fn fn, void *ctx);

/*
 * Managed frames get " in FILE:line N" from sl (lib/srcline; not owned,
 * NULL: none), named through lib/sym or by the namer.
 */
struct srcline;
void profile_set_lines(struct profile *p, struct srcline *sl);

/* Thread name for a tid (NULL if unknown), for thread roots and raw output. */
typedef const char *(*profile_comm_fn)(void *ctx, uint32_t tid);

struct profile_summary {
	uint64_t cpu_samples;      /* on-CPU samples */
	uint64_t left_out;         /* samples the namer left out (PROFILE_NAMER_SKIP) */
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
	uint64_t line_frames;      /* managed frames with a source line (profile_set_lines) */
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

/* ---- the target's perf map for the length of a session: lib/perfmap ---- */

/* ---- user stacks of off-CPU samples (unwind.c) ---- */

/* CFI (libdw, .eh_frame) for native frames, frame pointers for JIT/R2R code. */
struct profile_unwinder;
int profile_unwinder_new(struct profile_unwinder **out, struct sym_proc *sp);
void profile_unwinder_free(struct profile_unwinder *u);
/* A perf_unwind_fn (ctx = the unwinder). */
unsigned profile_unwind_user(void *ctx, const struct perf_user_state *us, uint64_t *out,
			     unsigned cap);

/* ---- engines ---- */

enum profile_engine {
	PROFILE_ENGINE_AUTO = 0,  /* perf_event, else EventPipe when perf_event_open is denied */
	PROFILE_ENGINE_PERF,      /* perf_event: every frame, any thread, on/off-CPU */
	PROFILE_ENGINE_EVENTPIPE, /* the runtime's sample profiler over the diagnostics socket */
};
/* "perf_event" / "EventPipe" (NULL for AUTO). */
const char *profile_engine_name(enum profile_engine e);
/* --engine's value: "auto", "perf" or "eventpipe"; -EINVAL for anything else. */
int profile_engine_parse(const char *s, enum profile_engine *e);
/* Why -F cannot set the EventPipe engine's rate (a clause, for messages). */
extern const char profile_engine_ep_rate[];

/* ---- why perf_event_open was refused (diagnose.c) ---- */

enum profile_perf_cause {
	PROFILE_PERF_CAUSE_UNKNOWN = 0,
	PROFILE_PERF_CAUSE_SECCOMP,  /* a seccomp filter answers for the syscall */
	PROFILE_PERF_CAUSE_BLOCKED,  /* the syscall is blocked before the kernel looks (no seccomp
				      * filter seen in /proc/self/status) */
	PROFILE_PERF_CAUSE_PARANOID, /* perf_event_paranoid >= 3 and no CAP_PERFMON/SYS_ADMIN */
	PROFILE_PERF_CAUSE_KERNEL,   /* kernel samples needed (off-CPU), paranoid >= 2, no cap */
	PROFILE_PERF_CAUSE_PTRACE,   /* no ptrace access to the target */
	PROFILE_PERF_CAUSE_LSM,      /* everything above is fine: a security module (AppArmor,
				      * SELinux) or a resource limit refuses it */
};

struct profile_perf_diag {
	enum profile_perf_cause cause;
	int err;             /* the error perf_event_open gave the sampler (negative) */
	int probe_err;       /* the bare syscall with a NULL attr: -EFAULT when it reached
			      * the kernel's own checks */
	int self_err;        /* a user-only software event on clrtap itself (0: allowed) */
	int seccomp;         /* Seccomp: of /proc/self/status (0 none, 1 strict, 2 filter; -1) */
	int paranoid;        /* kernel.perf_event_paranoid (-100 when unreadable) */
	bool cap_perfmon, cap_sys_admin, cap_sys_ptrace;
	bool ptrace_ok;      /* /proc/PID/environ could be opened (ptrace read access) */
};

/* Finds out why perf_event_open refused to sample pid with err (-EPERM/-EACCES). */
void profile_perf_diagnose(pid_t pid, int err, bool need_kernel, struct profile_perf_diag *d);
/* A short phrase naming the cause, and the fixes that fit it (static strings). */
const char *profile_perf_cause_text(enum profile_perf_cause c);

/* ---- the EventPipe engine (engine_ep.c) ---- */

#define PROFILE_EP_MANAGED 1u  /* samples of threads running managed code */
#define PROFILE_EP_EXTERNAL 2u /* samples of threads outside it (native, blocked, waiting) */

/* Runtime events with stacks (profile_ep_opts.events), each into its own flame. */
#define PROFILE_EP_EV_ALLOC 1u /* GCAllocationTick (GC keyword, verbose): one per ~100 KB
				* allocated; weight the bytes since the last one; leaf frame
				* the type of the object that crossed the threshold */
#define PROFILE_EP_EV_EXC 2u   /* ExceptionThrown: weight 1; leaf frame the exception type */
#define PROFILE_EP_EV_LOCK 4u  /* ContentionStop of a managed lock (.NET 8+: with its wait
				* time): weight the wait in ns, 1 on older runtimes */
#define PROFILE_EP_EV_N 3
#define PROFILE_EP_EV_MAX_NODES ((size_t)1 << 16) /* per flame: past it events are dropped */

struct profile_ep_opts {
	const char *socket; /* the diagnostics socket, as clrtap reaches it */
	unsigned events;    /* PROFILE_EP_EV_*: runtime events with stacks (profile_ep_take) */
	bool no_sampling;   /* events only: no sample profiler (prof may be NULL) */
	int timeout_ms;     /* IPC timeout */
	pid_t pid;          /* for thread names and liveness */
	unsigned samples;   /* PROFILE_EP_* (0: managed only) */
	bool prime;         /* a rundown-only session first (names for `top`) */
	bool thread_time;   /* keep every sample of the kinds asked (no on-CPU filter) */
	unsigned async;     /* PROFILE_EP_ASYNC_*: logical callers from the TPL events (0: none) */
	bool endpoints;     /* a root frame "[endpoint] GET /path" per ASP.NET Core request served */
};
#define PROFILE_EP_ENDPOINTS 64 /* paths counted apart in the stats (the flame has them all) */
struct profile_ep_endpoint {
	const char *name; /* "GET /api/x" (valid while the engine lives) */
	uint64_t samples;
};
#define PROFILE_EP_ASYNC_LOGICAL 1u /* awaiting methods instead of the thread's dispatch frames */
#define PROFILE_EP_ASYNC_BOTH 2u    /* awaiting methods, then the thread's own frames above */

struct profile_ep_stats {
	uint64_t managed, external, other; /* ThreadSample events by type */
	uint64_t kept;                     /* added to the profile */
	uint64_t dropped_events;           /* lost in the runtime (sequence gaps) */
	uint64_t bytes;                    /* stream bytes */
	uint32_t sampling_ns;              /* the runtime's sampling interval */
	size_t methods;                    /* code ranges named */
	bool primed;                       /* the priming rundown worked */
	bool complete;                     /* the stream ended with its end marker */
	bool stream_ended;                 /* the runtime ended it (the process exited) */
	/* the on-CPU filter (lib/proc/taskcpu): each thread's CPU time polled from /proc */
	enum taskcpu_source oncpu;         /* TASKCPU_NONE: no filter, thread time */
	int oncpu_err;                     /* why not (negative errno), 0 */
	unsigned oncpu_interval_ms;        /* the polling interval */
	uint64_t waiting;                  /* samples left out: the thread was not running */
	uint64_t left_out;                 /* ... caught switching out of managed code (set
					    * from profile_summary.left_out after a build) */
	uint64_t unknown;                  /* samples kept without knowing (thread not polled) */
	double running_share;              /* of the samples with a known state, the running share */
	uint64_t ev_seen[PROFILE_EP_EV_N];    /* events by kind (index: bit number) */
	uint64_t ev_dropped[PROFILE_EP_EV_N]; /* not added: the flame's cap, no stack, memory */
	/* --async: kept samples by what the TPL events told of their thread */
	uint64_t async_logical;      /* in a resumed async method awaited by others: callers shown */
	uint64_t async_alone;        /* in a resumed async method nothing awaits (yet) */
	uint64_t async_none;         /* in no resumed async method */
	uint64_t async_unattributed; /* in one whose MoveNext frame was not found: as sampled */
	uint64_t async_events;       /* TPL events read */
	/* --by-endpoint */
	uint64_t requests, requests_other; /* RequestStart events; past the cap of paths */
	uint64_t endpoint_none;  /* samples of a thread serving no request known */
	uint64_t endpoint_other; /* samples of a request past PROFILE_EP_ENDPOINTS paths */
	struct profile_ep_endpoint endpoints[PROFILE_EP_ENDPOINTS];
	uint32_t nendpoints;
};

struct profile_ep;
/* Starts sampling into prof (and sets prof's namer). */
int profile_ep_start(struct profile_ep **out, const struct profile_ep_opts *o,
		     struct profile *prof, struct ipc_error *rerr);
/* Waits up to timeout_ms. 0, -ESRCH when the stream ended by itself (target gone). */
int profile_ep_wait(struct profile_ep *e, int timeout_ms);
/* Stops the session and reads its rundown (grace_ms at most). */
int profile_ep_stop(struct profile_ep *e, int grace_ms);
/* Holds the reader off prof and the names (around a build while it runs). */
void profile_ep_lock(struct profile_ep *e);
void profile_ep_unlock(struct profile_ep *e);
void profile_ep_stats(struct profile_ep *e, struct profile_ep_stats *st);
/* A profile_namer_fn (ctx = the engine). */
size_t profile_ep_name_stack(void *ctx, const uint64_t *ips, unsigned nr, const char **names,
			     uint32_t *idx, size_t cap);
/* Takes the flame of one event kind (PROFILE_EP_EV_*) collected so far and
 * starts a new one. Returns 0 (*out is the caller's) or a negative errno. */
struct flame;
int profile_ep_take(struct profile_ep *e, unsigned kind, struct flame **out);
/* The name of a thread by the tid the runtime reports (NULL if unknown). */
const char *profile_ep_comm(struct profile_ep *e, uint32_t tid);
void profile_ep_free(struct profile_ep *e);

/* ---- a whole session: perf map, symbolizer, sampler, stacks ---- */

struct profile_session_opts {
	pid_t pid;
	const struct proc_target *target; /* a .NET target (perf map handled), or NULL */
	enum profile_engine engine;       /* PERF (AUTO is the caller's choice) or EVENTPIPE */
	unsigned ep_samples;              /* EventPipe: PROFILE_EP_* */
	unsigned ep_async;                /* EventPipe: PROFILE_EP_ASYNC_* */
	bool ep_endpoints;                /* EventPipe: a root frame per request path */
	bool ep_prime;                    /* EventPipe: names before the first refresh (top) */
	int timeout_ms;                   /* IPC timeout */
	struct perf_sampler_opts sampler;
	struct profile_opts profile;
	bool no_boost;                    /* keep clrtap's priority as it is (perf_prio_raise) */
	const char *sym_cache_dir;        /* sym_opts.cache_dir: NULL default, "" none */
};

enum profile_stage { PROFILE_STAGE_NONE = 0, PROFILE_STAGE_SYM, PROFILE_STAGE_PERF, PROFILE_STAGE_EP };

/* Opaque: defined in lib/profile/internal.h. */
struct profile_session;

/* What a caller may know of a running session. */
struct profile_session_info {
	pid_t pid;
	bool dotnet;
	enum profile_engine engine;
	struct profile_ep *ep;    /* the EventPipe engine, or NULL (perf_event) */
	int pm_err;               /* turning the perf map on failed (0: fine) */
	struct ipc_error pm_rerr;
	bool pm_jitdump;          /* the runtime writes jitdump (clrtap turned the map on with it) */
	uint64_t start_ns, end_ns;
	bool target_gone;
};
void profile_session_info(const struct profile_session *s, struct profile_session_info *i);
/* The EventPipe engine of s, or NULL (perf_event). */
struct profile_ep *profile_session_ep(const struct profile_session *s);
/* The perf_event sampler's counts (zeroes for the EventPipe engine). */
void profile_session_sampler_stats(const struct profile_session *s, struct perf_sampler_stats *st);
/* clrtap's priority as raised by the caller, for the session's record. */
void profile_session_set_prio(struct profile_session *s, const struct perf_prio *p);

/* Waits up to timeout_ms, collects, refreshes symbols once a second.
 * Returns 0, or -ESRCH once the target is gone (s->target_gone). */
int profile_session_tick(struct profile_session *s, int timeout_ms);
/* Stops sampling and reads the last symbols (idempotent). */
int profile_session_stop(struct profile_session *s);
/* Builds the flame from the session's stacks (call after stop, or anytime for `top`). */
int profile_session_build(struct profile_session *s, struct flame *f, struct profile_summary *sum);
int profile_session_build_ex(struct profile_session *s, struct flame *f,
			     struct profile_summary *sum, unsigned flags);
/*
 * Source lines for the managed frames of the next builds (lines.c): after
 * stop, one rundown session of the target (lib/srcline: IL-to-native maps,
 * then the assemblies' portable PDBs), either engine. 0, or a negative errno (-EREMOTEIO with rerr); the profile is
 * built without lines then.
 */
int profile_session_lines(struct profile_session *s, const struct proc_target *t, int timeout_ms,
			  struct ipc_error *rerr);
/* Forgets the stacks so far (for `top`, between refreshes). */
void profile_session_reset(struct profile_session *s);
/* Restores the perf map (idempotent); the IPC error if that failed. Not for an
 * EventPipe session (nothing to restore: do not call it). */
int profile_session_restore(struct profile_session *s, struct ipc_error *rerr);
/*
 * Same, waiting at most wait_ms for the target's answer; when it does not
 * answer in time (a busy target), the restore is handed to the perf-map
 * watcher, which does it without clrtap waiting: returns 1.
 */
int profile_session_restore_within(struct profile_session *s, int wait_ms, struct ipc_error *rerr);
/* Everything else; restores the perf map if not done yet; frees s (NULL is fine). */
void profile_session_close(struct profile_session *s);
/* A profile_comm_fn over a session (ctx = the session). */
const char *profile_session_comm(void *ctx, uint32_t tid);

/* ---- choosing the engine (engine.c) ---- */

struct profile_engine_choice {
	enum profile_engine asked, used;
	bool fell_back;                /* auto: perf was denied, EventPipe used */
	int perf_err;                  /* perf_event_open's refusal (0: none) */
	bool maps_denied;              /* perf_event_open worked, but reading the target's
					* mappings (/proc/PID/map_files) was refused: perf_err */
	struct profile_perf_diag diag; /* why, when perf_err */
	int ep_err;                    /* the EventPipe session could not start (0: fine) */
	enum profile_stage failed_stage; /* where the last start failed */
	struct ipc_error ep_rerr;
};

/*
 * Starts s with o->engine: PERF, EVENTPIPE, or AUTO (perf_event; when opening
 * its events, or reading the target's memory maps, fails with EPERM/EACCES,
 * EventPipe if o->target is a .NET target). c says what was used and why; on failure what each engine said.
 */
int profile_session_start_engine(struct profile_session **s, struct profile_session_opts *o,
				 struct profile_engine_choice *c);
/* The message for a failed start (both causes when both engines failed). */
int profile_engine_explain(const struct profile_engine_choice *c, pid_t pid, char *buf,
			   size_t len);
/* The outputs' notes: engine, why, what it sees, rate, cost (lines). */
int profile_engine_notes(const struct profile_engine_choice *c, unsigned hz, unsigned ep_samples,
			 const struct profile_ep_stats *es, char *buf, size_t len);
/* A few words naming a cause. */
const char *profile_perf_cause_short(enum profile_perf_cause c);
/* What was refused to the perf_event engine: "perf_event_open was denied", or
 * reading the target's memory mappings (perf_event_open worked). */
const char *profile_engine_refused(const struct profile_engine_choice *c);

/* ---- the profile task (task.c; docs/tasks/profile.md) ---- */

struct profile_run_opts {
	pid_t pid;                /* the target (any process; .NET when it has a socket) */
	int timeout_ms;           /* IPC timeout (0: the default) */
	unsigned hz;              /* perf engine: samples per second per thread */
	bool hz_given;            /* said by the caller (refused with the EventPipe engine) */
	int64_t duration_ms;      /* 0: until the task's stop flag */
	enum profile_engine engine;
	bool off_cpu, wall, threads, no_kernel;
	const char *out;          /* a path, format from its name; NULL: profile.folded in the
				   * task's folder (if any) */
	const char *bundle;       /* a folder for a bundle, or NULL */
	const char *sym_cache_dir; /* sym_opts.cache_dir */
	bool lines;               /* managed frames with their source file and line */
	unsigned async;           /* PROFILE_EP_ASYNC_* (EventPipe engine only) */
	bool by_endpoint;         /* a root frame per request path (EventPipe engine only) */
};

#define PROFILE_TOP_MAX 20
#define PROFILE_STATEMENTS_MAX 16
#define PROFILE_STATEMENT_MAX 320

struct profile_top_frame {
	char name[512];
	uint64_t self, total;     /* in the flame's unit */
};

/* The result of a run (task_result.data): everything the CLI's text shows. */
struct profile_result {
	pid_t pid;
	unsigned hz;
	bool off_cpu, wall;
	int64_t duration_ms;
	unsigned ep_samples;               /* PROFILE_EP_* asked */
	enum profile_engine engine;        /* used */
	struct profile_engine_choice ch;
	char engine_line[384];             /* "engine: perf_event (auto: ...)" */
	char out_path[4096];               /* where the flame went ("" none) */
	char bundle_dir[PROC_PATH_MAX * 2];
	double secs;                       /* sampled */
	bool early;                        /* the stop flag ended the sampling */
	sig_atomic_t stop_seen;
	bool target_gone, handed_off, dotnet;
	int pm_err;
	bool pm_before, pm_shared;         /* the perf map was on before (and not read whole) */
	struct perf_prio prio;
	uint64_t processing_ns;            /* from the end of sampling to the outputs written */
	struct profile_summary sum;
	bool have_st, have_es;
	struct perf_sampler_stats st;      /* perf_event engine */
	struct profile_ep_stats es;        /* EventPipe engine */
	uint64_t total;                    /* the flame's total weight */
	bool top_managed;                  /* top ranked by the innermost managed frame */
	struct profile_top_frame top[PROFILE_TOP_MAX];
	size_t ntop;
	char statements[PROFILE_STATEMENTS_MAX][PROFILE_STATEMENT_MAX];
	size_t nstatements;
	bool lines;                        /* lines were asked and their maps read */
	unsigned async;                    /* PROFILE_EP_ASYNC_* asked */
	bool by_endpoint;                  /* the endpoints were asked */
	char endpoint_names[PROFILE_EP_ENDPOINTS][256]; /* es.endpoints[].name point here */
	char native_note[4096];            /* which native libraries were named how (lines) */
	char message[2048];                /* the whole error message, when the run failed */
};

extern const struct task_param profile_task_params[];
extern const size_t profile_task_nparams;
/* The task: the run with its parameters from a; the result's data is a struct profile_result. */
int task_run_profile(const struct task_args *a, const struct task_ctx *ctx, struct task_result *res);
/* The same run from C options (the CLI); ctx->stop, ->log and ->outdir_fd are used. */
int profile_task_run(const struct profile_run_opts *o, const struct task_ctx *ctx,
		     struct task_result *res);
/* The checks of o made before any work (EXIT_USAGE into res): 0 or -EINVAL. */
int profile_task_check(const struct profile_run_opts *o, struct task_result *res);
/* The JSON of docs/tasks/profile.md, appended to sb; artifact names the folder's file or NULL. */
int profile_result_json(const struct profile_result *r, const char *artifact, struct strbuf *sb);
void profile_result_free(void *r);

#endif
