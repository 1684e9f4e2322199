/* SPDX-License-Identifier: MIT */
/*
 * tracestats.h - what happened in a nettrace stream, in one streaming pass:
 * event counts per provider and event, exceptions grouped by type and
 * message (with one symbolized stack each), GC counts per generation and
 * reason and pause-time percentiles, allocations per type (allocation
 * ticks), lock contention, and the sampled stacks of the sample profiler
 * aggregated into a struct flame.
 *
 * Feed it the events of a reader (tracestats_run does the loop, or call
 * tracestats_add_event from your own handler), then tracestats_finish, which
 * symbolizes the stacks (method load events and the rundown at the end of
 * the stream name the code) and computes the figures; then read
 * tracestats_result() or render it with tracestats_format_text/_json.
 *
 * Memory is bounded by struct ts_limits whatever the stream size: every
 * group table has a cap; what does not fit is counted in an "other" bucket
 * and reported as such. See docs/internals/tracestats.md.
 */
#ifndef CLRTAP_TRACESTATS_TRACESTATS_H
#define CLRTAP_TRACESTATS_TRACESTATS_H

#include "common/compat.h"
#include "common/strbuf.h"
#include "flame/flame.h"
#include "nettrace/nettrace.h"
#include "task/task.h"

struct ts_limits {
	uint32_t max_event_kinds; /* distinct provider/event pairs (default 4096) */
	uint32_t max_exc_groups;  /* distinct exception type+message (default 1024) */
	uint32_t max_alloc_types; /* distinct allocated type names (default 8192) */
	uint32_t max_stacks;      /* distinct sampled stacks (default 262144) */
	size_t max_stack_bytes;   /* memory for their IPs (default 64 MiB) */
	uint32_t max_frames;      /* frames kept per stack, leaf side (default 512) */
	uint32_t max_pauses;      /* pauses kept for percentiles, sampled beyond (default 1M) */
	uint32_t max_threads;     /* threads with an open ContentionStart (default 65536) */
	uint32_t max_string;      /* bytes kept of a type name or message (default 1024) */
	bool thread_time;         /* flame: also samples of threads outside managed code */
	/* exception frames: source file and line (lib/srcline), reading the assemblies
	 * the trace names and their PDBs from this machine */
	bool lines;
	/* flame: a named stack (root first) it returns true for is left out
	 * (counted in ts_samples.left_out); NULL: none is */
	bool (*flame_skip)(void *ctx, const char *const *names, size_t n);
	void *flame_skip_ctx;
};

void ts_limits_default(struct ts_limits *l);

/* ----- results ----- */

struct ts_event_kind {
	const char *provider;
	uint32_t id;
	const char *name; /* the metadata's name, else a known runtime name, else "Event<id>" */
	uint64_t count;
};

struct ts_provider {
	const char *provider;
	uint64_t count;
};

/*
 * Every exception event is counted; first and rethrown split the count where
 * the throw's stack tells them apart (a rethrow: the same exception passed on
 * by ExceptionDispatchInfo.Throw, as every await of a faulted task does, or
 * the runtime's rethrown flag). count - first - rethrown were not told apart
 * (no stack, no names).
 */
struct ts_exception {
	const char *type;
	const char *message;
	uint64_t count;
	uint64_t first, rethrown;
	const char *thrown_at;     /* method holding ExceptionEIP, or NULL */
	const char *const *frames; /* the first occurrence's stack, leaf first */
	const char *const *raw_frames; /* the same frames' runtime names (NULL: unnamed), or NULL */
	uint32_t nframes;
};

/* Exceptions by type (every exception counted, past the group cap too). */
struct ts_exc_type {
	const char *type;
	uint64_t count;
	uint32_t messages;    /* distinct messages (type+message groups) */
	bool messages_capped; /* more messages than the group cap kept: messages is a floor */
	uint64_t first, rethrown; /* as in struct ts_exception */
};

/* Where threads waited for a lock: one ContentionStart stack. */
struct ts_contention_site {
	uint64_t count;                 /* ContentionStart events with this stack */
	uint64_t timed, total_ns, max_ns; /* their waits, where the end was seen */
	const char *const *frames;      /* leaf first */
	const char *const *raw_frames;  /* the same frames' runtime names (NULL: unnamed), or NULL */
	uint32_t nframes;
};

struct ts_alloc {
	const char *type;
	uint64_t bytes;   /* sum of AllocationAmount64 (or AllocationAmount) */
	uint64_t samples; /* allocation tick events */
};

#define TS_GC_REASONS 16 /* reasons 0..14 by value, 15 = any other */
#define TS_GC_GENS 3

struct ts_gc {
	uint64_t count;                          /* GCStart events */
	uint64_t by_gen[TS_GC_GENS];             /* by Depth */
	uint64_t by_reason[TS_GC_REASONS];       /* by Reason */
	uint64_t induced_by_gen[TS_GC_GENS];     /* reasons Induced, InducedNotForced, InducedLowMemory, InducedCompacting */
	uint64_t background;                     /* Type 1 */
	const char *pause_source;                /* "SuspendEE/RestartEE", "GCStart/GCEnd" or NULL (no pauses seen) */
	uint64_t pauses;                         /* pauses measured */
	uint64_t pause_total_ns, pause_max_ns;
	uint64_t pause_p50_ns, pause_p95_ns, pause_p99_ns;
	bool pause_sampled;                      /* more pauses than max_pauses: percentiles from a uniform sample */
	double paused_pct;                       /* pause_total_ns / trace duration * 100 */
	uint64_t other_suspensions;              /* SuspendEE for reasons other than GC */
};

struct ts_contention {
	uint64_t starts, stops;
	uint64_t timed;          /* stops with a known wait time */
	uint64_t total_ns, max_ns;
	uint64_t unmatched;      /* stops without a start and without a duration field */
};

struct ts_samples {
	uint64_t managed, external, other; /* ThreadSample by type */
	uint64_t in_flame;                 /* samples added to the flame */
	uint64_t dropped;                  /* not kept: distinct-stack cap reached */
	uint32_t stacks;                   /* distinct stacks */
	uint64_t truncated;                /* stacks cut to max_frames */
	uint64_t left_out;                 /* samples lim.flame_skip left out of the flame */
};

struct ts_error {
	int code;        /* 0, or the reader's negative errno */
	uint64_t offset; /* stream offset of the damage */
	const char *msg; /* the reader's description (copied) */
};

struct ts_result {
	struct nt_trace_info info;
	bool have_info;
	uint64_t bytes;  /* stream bytes consumed */
	uint64_t events; /* events delivered */
	uint64_t dropped_events; /* lost in the runtime (sequence gaps) */
	/* the reader's time-order window (nettrace.h): events let out before their
	 * order was known (the window was full), and those that then came late */
	uint64_t order_forced, order_late;
	int64_t first_ts, last_ts;
	int64_t start_ts;     /* session start (header sync time) or first_ts */
	uint64_t duration_ns; /* start_ts to last_ts */
	uint64_t runtime_events; /* events of Microsoft-Windows-DotNETRuntime (not rundown) */
	uint64_t methods; /* code ranges known to the symbolizer */

	const struct ts_event_kind *kinds; size_t nkinds; /* count descending */
	uint64_t other_kinds_events;       /* events of kinds past the cap */
	const struct ts_provider *providers; size_t nproviders;

	const struct ts_exception *exceptions; size_t nexceptions; /* count descending */
	uint64_t exceptions_total, exceptions_other; /* other: groups past the cap */
	uint64_t exceptions_first, exceptions_rethrown; /* the rest were not told apart */
	const struct ts_exc_type *exc_types; size_t nexc_types; /* count descending */
	uint64_t exc_types_other; /* exceptions of types past the type cap */

	struct ts_gc gc;

	const struct ts_alloc *allocs; size_t nallocs; /* bytes descending */
	uint64_t alloc_bytes, alloc_samples;
	uint64_t alloc_other_bytes, alloc_other_samples; /* types past the cap */

	struct ts_contention contention;
	const struct ts_contention_site *contention_sites; size_t ncontention_sites; /* wait descending */
	uint64_t contention_sites_other; /* starts past the site cap */
	struct ts_samples samples;
	const struct flame *flame; /* the sampled stacks (root first); NULL before finish */
	bool thread_time;          /* the flame also holds samples outside managed code */
	struct ts_error error;
};

struct tracestats;

int tracestats_new(struct tracestats **out, const struct ts_limits *limits);
void tracestats_free(struct tracestats *ts);
/* Source lines from sl (owned from now on; a live process's: srcline_new_proc)
 * instead of ts_limits.lines' own; before any event is fed. */
struct srcline;
void tracestats_set_lines(struct tracestats *ts, struct srcline *sl);

/* Trace header facts (timestamp frequency); tracestats_run sets it itself. */
void tracestats_set_info(struct tracestats *ts, const struct nt_trace_info *info);

/* The reader's counts: runtime losses and the time-order window's. */
void tracestats_set_reader_stats(struct tracestats *ts, const struct nt_stats *st);

/* Accounts one event. Returns 0 or a negative errno (-ENOMEM only: caps never fail). */
int tracestats_add_event(struct tracestats *ts, const struct nt_event *ev);

/*
 * Reads r to its end feeding every event. Returns 0, or the reader's error
 * (negative errno) after every event before the damage was accounted; the
 * error, its offset and message are kept for the result. Call
 * tracestats_finish afterwards in both cases.
 */
int tracestats_run(struct tracestats *ts, struct nt_reader *r);

/* Symbolizes, sorts, computes percentiles and builds the flame. Once. */
int tracestats_finish(struct tracestats *ts);

/* Valid after tracestats_finish, until tracestats_free. */
const struct ts_result *tracestats_result(const struct tracestats *ts);

/* Names: GC reason (e.g. "Induced"), NULL when unknown. */
const char *tracestats_gc_reason_name(unsigned reason);
/* Name of a native runtime / rundown event, NULL when unknown. */
const char *tracestats_runtime_event_name(enum nt_provider kind, uint32_t id);

/*
 * Renders the result. top caps each list (0: 10). source names the input in
 * the output (may be NULL). Output is appended to out: give it no small cap
 * (its size is bounded by the table caps and top).
 */
int tracestats_format_text(const struct tracestats *ts, unsigned top, const char *source,
			   struct strbuf *out);
int tracestats_format_json(const struct tracestats *ts, unsigned top, const char *source,
			   struct strbuf *out);

/*
 * A whole nettrace stream read from fd into a new tracestats (`trace report`
 * and clrtap serve's trace sessions). *out is set also when the stream is
 * damaged (*read_err: the reader's error, as tracestats_run returns it).
 * Returns 0, or a negative errno with *stage "read" (no memory for the
 * reader) or "summarize" (tracestats_finish failed); then *out is NULL.
 */
int tracestats_load_fd(int fd, bool thread_time, struct tracestats **out, int *read_err,
		       const char **stage);
/* Same with every limit given (NULL: the defaults). */
int tracestats_load_fd_lim(int fd, const struct ts_limits *lim, struct tracestats **out,
			   int *read_err, const char **stage);
/* Opens path and loads it (ts_limits_default with thread_time and lines); *stage "open" when it cannot. */
int tracestats_load_path(const char *path, bool thread_time, bool lines, struct tracestats **out, int *read_err,
			 const char **stage);
/* The stream was no nettrace file at all (no magic): nothing to report. */
bool tracestats_not_nettrace(const struct tracestats *ts, int read_err);
/* One line on a damaged or unreadable stream into buf; returns its exit code (EXIT_BAD_INPUT or EXIT_ERROR). */
int tracestats_damage_text(const struct tracestats *ts, int read_err, const char *path, char *buf, size_t len);

/* The trace task (task.c; lib/task/table.c lists it). */
extern const struct task_param trace_task_params[];
extern const size_t trace_task_nparams;
int task_run_trace(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r);

#endif
