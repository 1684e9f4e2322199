/* SPDX-License-Identifier: MIT */
/*
 * analyze.h - one-question reports over the existing engines: which events
 * each analyzer needs, one EventPipe session (or a .nettrace file) fed to
 * lib/tracestats, lib/stacks and lib/counters at once, and the resident
 * memory of a process broken down from /proc/PID/smaps.
 *
 * Nothing here prints: commands render the results (src/cmd/analyze.c,
 * src/cmd/doctor.c). See docs/cmd/analyze.md.
 */
#ifndef CLRTAP_ANALYZE_ANALYZE_H
#define CLRTAP_ANALYZE_ANALYZE_H

#include "common/compat.h"

#include <signal.h>

#include "common/strbuf.h"
#include "common/json.h"
#include "counters/counters.h"
#include "proc/taskcpu.h"
#include "live/live.h"
#include "ipc/ipc.h"
#include "stacks/stacks.h"
#include "tracestats/tracestats.h"
#include "task/task.h"

/* What an analyzer needs from a session. */
#define AN_NEED_EXCEPTIONS 0x1u
#define AN_NEED_GC 0x2u
#define AN_NEED_ALLOC 0x4u
#define AN_NEED_CONTENTION 0x8u
#define AN_NEED_SAMPLES 0x10u /* the sample profiler */
#define AN_NEED_COUNTERS 0x20u /* System.Runtime counters, 1 s interval */
#define AN_NEED_SMAPS 0x40u   /* /proc/PID/smaps: live only */
#define AN_NEED_HEAP 0x80u    /* a heap snapshot (lib/heap, an induced gen-2 GC): live only */
#define AN_NEED_HEAPS 0x100u  /* several heap snapshots over the duration: live only */
#define AN_NEED_LIVE_ONLY (AN_NEED_SMAPS | AN_NEED_HEAP | AN_NEED_HEAPS)
#define AN_NEED_LOCKS 0x200u
#define AN_NEED_CODE 0x400u   /* JIT'd code ranges (method load and rundown events) */
#define AN_NEED_ONCPU 0x800u  /* live: the flame keeps only samples of running threads (lib/proc/taskcpu) */  /* contention events kept per thread and per lock (lib/analyze/locks.c) */

struct an_analyzer {
	const char *name;
	const char *help;
	unsigned need;
	const char *next; /* what to run next, "%d" is the pid */
};

/* The table, sorted by name; NULL past the end. */
const struct an_analyzer *analyze_analyzer_at(size_t i);
const struct an_analyzer *analyze_analyzer_find(const char *name);

/* A JIT'd method's code. */
struct an_code_range {
	uint64_t start;
	uint32_t size;
};
#define AN_CODE_MAX (1u << 20)

/* Everything one session fed. */
struct an_session {
	unsigned need;
	struct tracestats *ts;
	struct stacks_sampler *ss;       /* with AN_NEED_SAMPLES */
	struct counters_decoder *cd;     /* with AN_NEED_COUNTERS */
	struct an_locks *locks;          /* with AN_NEED_LOCKS */
	struct an_code_range *code;      /* with AN_NEED_CODE: JIT'd methods, unsorted */
	size_t ncode, code_cap;
	bool code_capped;                /* more methods than AN_CODE_MAX */
	double gc_gen[5];                /* gen-0/1/2, loh, poh size counters, bytes (-1: none) */
	double gc_gen_first[5];          /* the first value of each (-1: none) */
	double gc_committed_mb;          /* gc-committed counter (-1: none) */
	struct counters_table counters;  /* last value of each counter */
	uint64_t counter_values;         /* values received */
	double cpu_max, tp_queue_max, tp_threads_max; /* maxima over the session (-1: none) */
	double tp_queue_last, tp_completed;           /* last queue length; items completed in all */
	double cpu_sum; uint64_t cpu_n; /* cpu-usage (percent of all cores) */
	double working_set_mb, gc_heap_mb;
	/* AN_NEED_ONCPU: set oncpu_pid before analyze_session_live; each managed
	 * sample of a thread that was not running is left out of the flame */
	pid_t oncpu_pid;
	struct taskcpu *tc;              /* NULL: thread time, waiting included */
	int oncpu_err;                   /* why there is no filter (negative errno), 0 */
	struct taskcpu_stats oncpu;      /* the filter's figures, after the session */
	int64_t qpc_freq;                /* the trace's timestamp frequency */
	int add_err;                     /* first engine error (negative errno) */
	int ts_read_err;                 /* offline: the reader's error */
	bool finished;
};

int analyze_session_new(struct an_session **out, unsigned need);
void analyze_session_free(struct an_session *s);

/* Providers for need into provs (capacity 4); counters args in *args. */
int analyze_session_config(unsigned need, struct ipc_provider *provs, size_t *n,
			   struct ipc_trace_config *cfg);

/* Runs the live session (lib/live) for duration_ms. */
int analyze_session_live(struct an_session *s, const struct ipc_endpoint *ep,
			 int64_t duration_ms, volatile sig_atomic_t *stop,
			 struct live_session_result *res);

/* The basis of the CPU views (hotpaths, doctor's CPU finding): "on-CPU"
 * when the filter ran, else "thread time, waiting included". */
const char *analyze_cpu_basis(const struct an_session *s);
/* One sentence: how the basis was told (or why it could not be). */
void analyze_cpu_basis_why(const struct an_session *s, char *buf, size_t len);

/* Reads a .nettrace file from fd to its end (reader errors in ts_read_err). */
int analyze_session_file(struct an_session *s, int fd);

/* Symbolizes and computes (tracestats_finish). Once. */
int analyze_session_finish(struct an_session *s);

/* Threads of a stacks sample grouped by their first non-framework frame. */
struct an_stack_group {
	const char *method;   /* owned by the sampler */
	const char *call;     /* the frame it called (leafward), e.g. Task::Wait; NULL at the leaf */
	uint32_t threads;
	uint64_t tids[16];    /* the first 16 */
};
/* Fills up to max groups, count descending; returns the number or -errno.
 * pool: only thread-pool workers (a ThreadPoolWorkQueue::Dispatch frame). */
int analyze_stack_groups(struct an_session *s, struct an_stack_group *g, size_t max, bool pool);

/* ----- memory: /proc/PID/smaps ----- */

enum an_mem_kind {
	AN_MEM_GC_HEAP,    /* anonymous memory inside a reservation of >= 4 GiB (the GC's regions) */
	AN_MEM_CODE_HEAPS, /* the runtime's double-mapped executable memory (JIT code, stubs) */
	AN_MEM_NATIVE,     /* [heap] and malloc arenas (MAP_NORESERVE mappings) */
	AN_MEM_STACKS,     /* [stack] and anonymous mappings right above a guard page */
	AN_MEM_IMAGES,     /* file-backed mappings: the runtime, libraries, assemblies */
	AN_MEM_OTHER_ANON, /* other anonymous memory: large mallocs, runtime bookkeeping */
	AN_MEM_OTHER,      /* vdso, shared memory, ... */
	AN_MEM_KINDS
};

struct an_mem_growth;

#define AN_MEM_CODE_MAPS 1024 /* executable code views kept for the JIT split */

struct an_memory {
	uint64_t rss_kb[AN_MEM_KINDS];
	uint64_t mappings[AN_MEM_KINDS];
	uint64_t total_kb;      /* sum of every mapping's Rss */
	uint64_t vmrss_kb;      /* /proc/PID/status VmRSS (0: unknown) */
	uint64_t nmappings;
	bool truncated;         /* smaps was larger than the cap */
	int64_t cgroup_max;     /* bytes; -1: no limit, -2: unknown */
	int64_t cgroup_current; /* bytes; -1: unknown */
	/* code_heaps split by the views' permissions, and (analyze_memory_code)
	 * the executable views holding the JIT'd methods the runtime named */
	uint64_t code_exec_kb, code_rw_kb;
	bool code_jit_known;
	uint64_t code_jit_kb, jit_methods, jit_bytes;
	size_t ncode_maps;
	struct { uint64_t start, end, rss_kb; } code_maps[AN_MEM_CODE_MAPS]; /* executable views */
	/* the GC heap by generation from the runtime's counters (bytes; -1: not told) */
	double gc_gen[5];
	double gc_committed; /* bytes, -1: not told */
	/* anonymous memory in the GC's range beyond what the GC committed,
	 * moved to other_anon (analyze_memory_runtime) */
	uint64_t gc_excess_kb;
	/* set by the caller when the memory was also measured earlier: how
	 * each kind moved over that span (NULL: one snapshot) */
	const struct an_mem_growth *growth;
};

#define AN_SMAPS_MAX (64u << 20)

/* Short name ("gc_heap") and a label ("GC heap") of a kind. */
const char *analyze_mem_kind_name(enum an_mem_kind k);
const char *analyze_mem_kind_label(enum an_mem_kind k);

/* Parses smaps text (need not be NUL-terminated) into m (totals only). */
void analyze_memory_parse(const char *text, size_t len, struct an_memory *m);

/* Reads /proc/PID/smaps, VmRSS and the cgroup's memory.max/current. */
int analyze_memory_read(pid_t pid, struct an_memory *m);

/* Splits the executable code views by the JIT'd methods of s (sorts
 * s->code) and takes the GC generation sizes of s's counters. */
void analyze_memory_runtime(struct an_memory *m, struct an_session *s);

/* Moves GC-heap KiB beyond what the GC committed (bytes; < 0: unknown),
 * with slack, to other anonymous memory; returns the KiB moved. */
uint64_t analyze_memory_gc_excess(uint64_t rss_kb[AN_MEM_KINDS], double committed);

/* The kind holding the most, counting native + other anonymous together as
 * "native" (returns AN_MEM_NATIVE then). */
enum an_mem_kind analyze_memory_dominant(const struct an_memory *m);

/* ----- memory over time (memgrowth.c): smaps kinds sampled over a span ----- */

#define AN_MEM_SERIES_MAX 512 /* points kept; when full every other one is dropped */
#define AN_MEM_GREW_NATIVE AN_MEM_KINDS /* an_mem_growth.grew: native heap + other anonymous */
#define AN_MEM_GREW_TOTAL (AN_MEM_KINDS + 1) /* all kinds (analyze_mem_window_rate) */

struct an_mem_point {
	double t_s; /* since the first point */
	uint64_t rss_kb[AN_MEM_KINDS];
	uint64_t total_kb;
};

struct an_mem_series {
	struct an_mem_point *p;
	size_t n, cap;
	double t0; /* CLOCK_MONOTONIC seconds of the first point */
};

struct an_mem_growth {
	double span_s;  /* first to last point */
	size_t points;
	int64_t delta_kb[AN_MEM_KINDS + 1];   /* last - first; [AN_MEM_GREW_NATIVE]: native + other anon */
	double rate_kb_s[AN_MEM_KINDS + 1];   /* least-squares slope over the points */
	uint64_t start_kb[AN_MEM_KINDS + 1], end_kb[AN_MEM_KINDS + 1];
	int64_t total_delta_kb;
	double total_rate_kb_s;
	int grew; /* the kind that grew most (AN_MEM_GREW_NATIVE for native), -1: none grew */
};

/* A point of m's kinds at now (CLOCK_MONOTONIC seconds); 0 or -ENOMEM. */
int analyze_mem_series_add(struct an_mem_series *s, double now, const struct an_memory *m);
void analyze_mem_series_release(struct an_mem_series *s);
/* Growth of each kind over the series (needs 2 points; else points < 2
 * and grew -1). A kind "grew" when it gained at least 8 MiB and 2 % of the
 * first total; native memory is judged as one (malloc heap + other anon). */
void analyze_mem_growth(const struct an_mem_series *s, struct an_mem_growth *g);
/* "native" for AN_MEM_GREW_NATIVE, the kind's name otherwise, NULL for -1 */
const char *analyze_mem_growth_name(int grew);
const char *analyze_mem_growth_label(int grew);
/* The series as an inline SVG line chart (each kind holding >= 1 MiB, and
 * native), appended to o; nothing with under 2 points. */
int analyze_mem_svg(const struct an_mem_series *s, struct strbuf *o);
/* A kind by its name, "native" or "total" (AN_MEM_GREW_*); -1: unknown. */
int analyze_mem_growth_kind(const char *name);

/* The last AN_MEM_WINDOW readings (for a rate now, e.g. watch's rule on
 * growth); no allocation. */
#define AN_MEM_WINDOW 16
struct an_mem_window {
	struct an_mem_point p[AN_MEM_WINDOW]; /* oldest first; t_s: the caller's clock */
	unsigned n;
};

void analyze_mem_window_add(struct an_mem_window *w, double now, const struct an_memory *m);
/* Reads pid's smaps (analyze_memory_read) into the window at now. */
int analyze_mem_window_read(pid_t pid, struct an_mem_window *w, double now);
/* The least-squares rate (KiB/s) of kind k (a kind or AN_MEM_GREW_*) over
 * the window: 0, -ENODATA (under 2 readings), -EINVAL (k). */
int analyze_mem_window_rate(const struct an_mem_window *w, int k, double *kb_s);


/* ----- doctor: findings from one session and the memory breakdown ----- */

enum an_severity { AN_INFO, AN_NOTICE, AN_WARNING, AN_CRITICAL };

struct an_finding {
	enum an_severity severity;
	double weight;            /* ranks findings of one severity (larger first) */
	const char *analyzer;     /* the analyzer that digs deeper */
	char title[160];
	char evidence[640];       /* may hold target-chosen names: escape when printing */
	char next[160];           /* the exact command */
};

#define AN_MAX_FINDINGS 8

/* Builds the findings, ranked (most severe first). mem may be NULL.
 * duration_s is how long the session ran. Returns how many. */
size_t analyze_findings(struct an_session *s, const struct an_memory *mem, pid_t pid,
			double duration_s, unsigned ncpus, struct an_finding *f);

const char *analyze_severity_name(enum an_severity s);

/* How a live session went, for the command's message and exit code. */
enum an_outcome {
	AN_OK,            /* the session ran and its stream ended normally */
	AN_NO_SESSION,    /* nothing came: err says why */
	AN_BAD_STREAM,    /* the stream did not start as nettrace */
	AN_TARGET_GONE,   /* the target went away mid-session: what came is analyzed */
	AN_BROKEN,        /* the stream broke: what came is analyzed */
};
enum an_outcome analyze_live_outcome(const struct live_session_result *res,
				     const struct ipc_endpoint *ep, int *err, char *why, size_t len);

/* ----- leaks: types that only grow across heap snapshots ----- */

struct heap_growth;
struct heap_collect_opts;

/*
 * Takes nsnap (2..16) snapshots with heap_collect, interval_ms apart, and
 * finds the types whose count and retained bytes grow from each to the next
 * (heap_growth_find). *taken says how many were taken. Returns 0 or the
 * negative errno of the failed snapshot (msg says why).
 */
int analyze_leaks_run(const struct heap_collect_opts *o, unsigned nsnap, int64_t interval_ms,
		      struct heap_growth **out, size_t *n, unsigned *taken, char *msg, size_t msglen);

/* ----- locks: contention events by thread and by lock; deadlock cycles ----- */

#define AN_LOCKS_MAX_THREADS 4096
#define AN_LOCKS_MAX_LOCKS 4096
#define AN_LOCK_SITE_FRAMES 64
#define AN_CYCLE_MAX 16

/* A thread's last ContentionStart. */
struct an_lock_wait {
	uint64_t tid;              /* the waiting thread (OS id) */
	uint64_t lock_id, object_id, owner; /* ContentionStart V2 (.NET 8+) */
	bool owner_known;          /* the event was V2 */
	bool native;               /* a runtime-internal lock (flags 1) */
	bool open;                 /* no ContentionStop came after it: still waiting at the end */
	int64_t start;             /* trace timestamp */
	uint64_t waits;            /* ContentionStarts of this thread */
	uint64_t *ips;             /* where it waits, leaf first */
	uint32_t nips;
};

/* One lock (V2 lock id) over the session. */
struct an_lock_stat {
	uint64_t lock_id, object_id;
	uint64_t waits, timed, total_ns, max_ns;
	uint64_t ips[AN_LOCK_SITE_FRAMES]; /* the first wait's stack, leaf first */
	uint32_t nips;
};

/* A cycle of the wait-for graph: wait[k]'s owner is wait[k+1]'s thread, and
 * the last one's owner is wait[0]'s thread (indexes of analyze_locks_wait). */
struct an_lock_cycle {
	size_t n;
	size_t wait[AN_CYCLE_MAX];
};

struct an_locks;
int analyze_locks_new(struct an_locks **out);
void analyze_locks_free(struct an_locks *l);
/* Feeds an event (only ContentionStart/Stop are looked at). */
int analyze_locks_event(struct an_locks *l, const struct nt_event *ev);
size_t analyze_locks_nwaits(const struct an_locks *l);
const struct an_lock_wait *analyze_locks_wait(const struct an_locks *l, size_t i);
void analyze_locks_counts(const struct an_locks *l, uint64_t *starts, uint64_t *stops,
			  uint64_t *starts_v2, uint64_t *dropped);
/* The locks by total wait (then waits), descending. */
size_t analyze_locks_by_wait(struct an_locks *l, const struct an_lock_stat **out);
/* Up to max cycles among the waits still open; returns how many. */
size_t analyze_locks_cycles(const struct an_locks *l, struct an_lock_cycle *c, size_t max);

/* ----- deadlock: the cycles, with stacks ----- */

#define AN_DL_FRAMES 32
#define AN_DL_CYCLES 8

struct an_dl_thread {
	uint64_t tid;
	char name[32];          /* the thread's name (live: /proc), "" unknown */
	uint64_t lock_id, object_id, owner; /* the lock it waits for and the thread holding it */
	bool native;            /* a runtime-internal lock */
	const char *site;       /* first frame outside System./Microsoft. of the wait (NULL: none) */
	const char *frames[AN_DL_FRAMES]; /* where it waits, leaf first (names owned by the sampler) */
	uint32_t nframes, more;
};

struct an_deadlock {
	uint64_t starts, stops, starts_v2, dropped; /* contention events seen */
	size_t ncycles;
	struct { size_t n; struct an_dl_thread t[AN_CYCLE_MAX]; } cycles[AN_DL_CYCLES];
	size_t nwaiting;        /* open waits outside every cycle (first 16 kept) */
	struct an_dl_thread waiting[16];
	/* threads sampled inside a Monitor/Lock enter with no ContentionStart in
	 * the session: waiting since before it, owner not told (call = the enter frame) */
	size_t nblocked;
	struct an_stack_group blocked[16];
	uint32_t blocked_threads; /* in all groups */
};

/* Symbolizes a stack of the session (the sampler's method table) into up to
 * max frames (unresolved ones skipped; *more: resolved ones past max); *site
 * is the first frame outside System./Microsoft./Interop. Returns the count. */
uint32_t analyze_frames(struct an_session *s, const uint64_t *ips, uint32_t n, const char **frames,
			uint32_t max, const char **site, uint32_t *more);

/* Fills d from a finished session with AN_NEED_LOCKS (pid > 0: thread names
 * from /proc). 0 or -EINVAL. */
int analyze_deadlock_find(struct an_session *s, pid_t pid, struct an_deadlock *d);

/* ----- HTML: a Markdown report as one self-contained, offline page ----- */

/* Appends the page for report md (len bytes) to o. 0 or the strbuf's error. */
int analyze_html_from_md(const char *md, size_t len, const char *title, struct strbuf *o);

/* ----- the workflow: one analyzer run into a report, rendered three ways ----- */

/* Why a run failed: the caller's exit code (or HTTP error) class. */
enum an_fail {
	AN_FAIL_NONE,
	AN_FAIL_ERROR,       /* out of memory, cannot read: a general error */
	AN_FAIL_ERRNO,       /* classify the errno (no process, permission, not .NET, ...) */
	AN_FAIL_USAGE,       /* a live-only analyzer on a file */
	AN_FAIL_NO_PROCESS,  /* the process is gone */
	AN_FAIL_PROTOCOL,    /* the session stream is not nettrace */
	AN_FAIL_BAD_INPUT,   /* the file is not a readable nettrace file */
	AN_FAIL_PARTIAL,     /* the target went away during a heap snapshot */
	AN_FAIL_INTERRUPTED, /* stopped before there was anything to compare */
};

struct an_report;

/* A report for analyzer a with up to top rows per table (0: 10). */
int analyze_report_new(struct an_report **out, const struct an_analyzer *a, unsigned top);
void analyze_report_free(struct an_report *r);

/*
 * Runs the analyzer on a live process (ep and pid from the caller's target
 * resolution; duration_ms; *stop, which may be NULL, ends it early) or on a
 * .nettrace file read from fd (name is shown in the report). Returns 0 when
 * there is a report (maybe partial: analyze_report_partial) or a negative
 * errno; then analyze_report_failure says the class and the message.
 * Nothing is printed; the caller's ct_log sink gets what the engines log.
 */
int analyze_report_live(struct an_report *r, const struct ipc_endpoint *ep, pid_t pid, int64_t duration_ms,
			volatile sig_atomic_t *stop);
int analyze_report_file(struct an_report *r, int fd, const char *name);
enum an_fail analyze_report_failure(const struct an_report *r, int *err, const char **msg);
/* NULL, or why the report covers only part of the time (target gone, stream broke, damaged file). */
const char *analyze_report_partial(const struct an_report *r);

/* Appends the Markdown report to sb; the strbuf's error. */
int analyze_report_md(struct an_report *r, struct strbuf *sb);
/* The report as one JSON object into j (docs/cmd/analyze.md); j's error. */
int analyze_report_json(struct an_report *r, struct ct_json *j);
/* One self-contained, offline HTML page to fd. */
int analyze_report_html(struct an_report *r, int fd);

/* ----- doctor as a library: one session + memory into ranked findings ----- */

struct an_doctor {
	pid_t pid;
	double duration_s;
	uint64_t events, dropped_events, counter_values;
	struct an_finding f[AN_MAX_FINDINGS];
	size_t n;
	char partial[512];     /* "": the session ran to its end; else why it did not */
	enum an_fail fail;     /* when the run returned an error */
	int err;
	char msg[640];
};

/* Runs doctor's session on a resolved target. 0 (findings in d, maybe
 * partial) or a negative errno (d->fail, d->msg). Prints nothing. */
int analyze_doctor_run(const struct ipc_endpoint *ep, pid_t pid, int64_t duration_ms,
		       volatile sig_atomic_t *stop, struct an_doctor *d);
/* The most severe finding is a warning or worse. */
bool analyze_doctor_alarming(const struct an_doctor *d);
/* doctor --json's object into j (docs/cmd/doctor.md). */
int analyze_doctor_json(const struct an_doctor *d, struct ct_json *j);
/* The text of `clrtap doctor` (findings ranked, evidence, next command);
 * term_safe escapes what the target chose (titles, evidence) for a terminal. */
int analyze_doctor_text(const struct an_doctor *d, bool term_safe, struct strbuf *sb);

/* The exit code (enum exit_code) of a failed run: analyze, doctor, CLI and tasks. */
int analyze_fail_exit(enum an_fail f, int err);

/* The analyze and doctor tasks (task.c; lib/task/table.c lists them). */
extern const struct task_param analyze_task_params[];
extern const size_t analyze_task_nparams;
extern const struct task_param doctor_task_params[];
extern const size_t doctor_task_nparams;
int task_run_analyze(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r);
int task_run_doctor(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r);

#endif
