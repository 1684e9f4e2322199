/* SPDX-License-Identifier: MIT */
/*
 * probe.h - dynamic tracing of .NET methods by name in a live process.
 *
 * Three parts (docs/internals/probe.md):
 *  - patterns (pattern.c): "Ns.Type::Method[(sig)]" with '*' and '?',
 *    C# aliases in signatures, near-name suggestions, and the parser of the
 *    runtime's perf map lines (outside bytes: fuzzed by probe_fuzz.c);
 *  - resolution (resolve.c): every managed assembly mapped in the target,
 *    its metadata (every method, compiled or not) and ReadyToRun code
 *    (lib/pe), plus the JIT'd code versions the perf map lists;
 *  - sessions (session.c): uprobes on R2R code and hardware execute
 *    breakpoints on JIT'd code through perf_event_open (owned by file
 *    descriptors: nothing survives clrtap, even SIGKILL), argument and
 *    return value decoding, entry/return matching, tier following.
 *
 * Nothing here prints; results go to callbacks. Errors are negative errnos.
 */
#ifndef CLRTAP_PROBE_PROBE_H
#define CLRTAP_PROBE_PROBE_H

#include "common/compat.h"
#include "common/strbuf.h"
#include "ipc/ipc.h"
#include "pe/pe.h"
#include "task/task.h"

/* ---- patterns (pure functions) ---- */

/*
 * Normalizes a signature for comparison: drops spaces, "class "/"valuetype "
 * prefixes, turns C# aliases into metadata names (int -> int32, double ->
 * float64, byte -> uint8 ...) and '<' '>' into '[' ']'. "(int, string)" ->
 * "(int32,string)". Output capped by out's max (-EMSGSIZE).
 */
int probe_sig_normalize(const char *sig, struct strbuf *out);

/*
 * The perf map names a method of a generic type with its instantiation:
 * "Ns.Dict`2[System.Int64,System.__Canon]::TryAdd", "Ns.Dict`2+Node[K,V]::.ctor".
 * Appends the metadata name ("Ns.Dict`2::TryAdd", "Ns.Dict`2+Node::.ctor").
 */
int probe_pm_name_base(const char *name, struct strbuf *out);

/*
 * Matches a method against a user pattern "Ns.Type::Method" or
 * "Ns.Type::Method(sig)" ('*' any run, '?' one byte). name is
 * "Ns.Type::Method", sig is "(int32, string)". A pattern without "::" is
 * matched against the method name alone ("Work", "Calc*").
 */
bool probe_pattern_match(const char *pattern, const char *name, const char *sig);
/*
 * A pattern without "::" that looks like a type ("MyApp.*", "Ns.Type": a
 * dot after its first byte) also matches every method of the types it
 * matches: namepat (the pattern without its signature) against the type part
 * of name "Ns.Type::Method".
 */
bool probe_pattern_type_match(const char *namepat, const char *name);

/* Edit distance (Levenshtein, case-insensitive), stops counting at cap. */
unsigned probe_edit_distance(const char *a, const char *b, unsigned cap);

/* One line of perf-PID.map, split. */
#define PROBE_PM_NAME_MAX 1024
#define PROBE_PM_ARGS_MAX 4096 /* ASP.NET Core has argument lists past 512 bytes */
struct probe_pm_entry {
	uint64_t start, size;
	bool instance;
	char module[128];           /* "System.Private.CoreLib" ("" for stubs) */
	char name[PROBE_PM_NAME_MAX]; /* "Ns.Type::Method" */
	char args[PROBE_PM_ARGS_MAX]; /* "(int32,string)" as written */
	char tier[40];              /* "QuickJitted", "OptimizedTier1", ... or "" */
};
/*
 * Parses "<start> <size> [instance ]<ret> [<module>] <Ns.Type::Method>(<args>)[<tier>]"
 * (len bytes, no newline needed). Returns 0, -EBADMSG for a malformed line,
 * -ENOENT for a line that is not a managed method (stubs).
 */
int probe_pm_parse(const char *line, size_t len, struct probe_pm_entry *e);

/* ---- resolution ---- */

enum probe_code_kind { PROBE_CODE_R2R = 1, PROBE_CODE_JIT = 2 };

/* One body of native code for a method. */
struct probe_code {
	enum probe_code_kind kind;
	char tier[40];     /* "ReadyToRun", "QuickJitted", "OptimizedTier1", ... */
	uint64_t addr;     /* entry address in the target (0 if the image is not mapped executable) */
	uint64_t size;     /* main body size */
	uint64_t file_offset; /* R2R: file offset of the entry (the uprobe point) */
	uint64_t cold_offset, cold_size; /* R2R hot/cold split: cold part (0 if none) */
	uint64_t seen_ns;  /* CLOCK_MONOTONIC when clrtap learned of it (0: at start) */
	char inst[128];    /* JIT code of a generic type: its instantiation "[System.Int64,...]" */
};

#define PROBE_MAX_VERSIONS 12

struct probe_method {
	char *name;      /* "Ns.Type::Method" */
	char *sig;       /* "(int32, string)" */
	char *nsig;      /* sig normalized (probe_sig_normalize), what the perf map is matched on */
	char *ret;       /* "string" */
	char *module;    /* assembly name */
	char *image;     /* image path as the target sees it */
	char *host_image; /* path clrtap opens (through /proc/PID/root) */
	uint32_t token;
	struct pe_sig *psig;  /* decoded signature (params, names, this) */
	struct probe_code code[PROBE_MAX_VERSIONS];
	size_t ncode;
	bool dropped_versions; /* more versions than PROBE_MAX_VERSIONS came */
};

/*
 * Is code[a] newer than code[b], i.e. more likely the version that runs now?
 * Higher tier first (the runtime only moves up: QuickJitted < InstrumentedTier
 * < InstrumentedTierOptimized < OptimizedTier1; OSR code, entered mid-call,
 * last), then learned later, then later in the perf map.
 */
bool probe_code_newer(const struct probe_code *code, size_t a, size_t b);

struct probe_proc;

struct probe_open_opts {
	const char *perfmap_path; /* host path of perf-NSPID.map, or NULL (tests; watched) */
	const char *perfmap_tpath; /* the same as the target sees it: what is read, or NULL */
	const char *jitdump_tpath; /* jit-NSPID.dump as the target sees it: read too, or NULL */
	const char *jitdump_path;  /* the same, host path: watched for new code, or NULL */
	const char *root;         /* "/proc/PID/root" prefix for target paths, or "" */
};

/* Reads /proc/PID/maps and opens every mapped managed assembly. */
int probe_proc_open(pid_t pid, const struct probe_open_opts *o, struct probe_proc **out);
void probe_proc_close(struct probe_proc *pp);

/* Callback for probe_proc_find: return non-zero to stop. */
typedef int (*probe_method_fn)(void *ctx, const struct probe_method *m);

/*
 * Every method (compiled or not) whose name matches pattern. Methods found
 * are kept in pp (returned pointers live until close) with their code
 * versions filled: R2R from the image, JIT from the perf map as last read.
 * *n gets the count; up to max pointers go to out.
 */
int probe_proc_find(struct probe_proc *pp, const char *pattern, struct probe_method **out,
		    size_t max, size_t *n);
/*
 * When nothing matched: up to max near names ("Ns.Type::Method(sig)") into
 * out[] (each a strdup'd string the caller frees). Returns how many.
 */
int probe_proc_suggest(struct probe_proc *pp, const char *pattern, char **out, size_t max);

/*
 * Reads new perf map lines; for every found method, adds new JIT versions.
 * *added gets how many versions were added (may be NULL).
 */
int probe_proc_refresh(struct probe_proc *pp, size_t *added);

/* Names a code address: "Ns.Type::Method" (+ tier), or "module+0xoff". */
int probe_proc_symbolize(struct probe_proc *pp, uint64_t addr, struct strbuf *out);
/*
 * Managed frames named by probe_proc_symbolize get " in FILE:line N" from
 * sl (lib/srcline, owned from now on).
 */
struct srcline;
void probe_proc_set_lines(struct probe_proc *pp, struct srcline *sl);
/* srcline_new_proc + srcline_collect on ep (one rundown) + probe_proc_set_lines,
 * and srcline_follow_start for the code compiled later (until close; ep's
 * path must outlive pp). */
int probe_proc_lines(struct probe_proc *pp, const struct ipc_endpoint *ep, struct ipc_error *rerr);

/*
 * Address -> (file clrtap can open, file offset) when addr is in an
 * executable file mapping; -ENOENT for anonymous/JIT memory.
 */
int probe_proc_addr_file(struct probe_proc *pp, uint64_t addr, const char **host_path,
			 uint64_t *off);

/* Reads target memory (process_vm_readv, then /proc/PID/mem). */
int probe_proc_read(struct probe_proc *pp, uint64_t addr, void *buf, size_t len);

/* Number of assemblies opened. */
size_t probe_proc_nimages(const struct probe_proc *pp);
pid_t probe_proc_pid(const struct probe_proc *pp);
/* The perf map file clrtap reads (host path), or NULL. */
const char *probe_proc_perfmap_path(const struct probe_proc *pp);
/* The host path of the jitdump file read beside the map, or NULL. */
const char *probe_proc_jitdump_path(const struct probe_proc *pp);

/* ---- mechanisms (mech.c) ---- */

/*
 * Does an attach mechanism fire on this machine? A child process arms it on
 * one of its own functions and calls it PROBE_MECH_CALLS times. Cached per
 * boot ($CLRTAP_CACHE_DIR, /var/cache/clrtap for root, else
 * $XDG_CACHE_HOME/clrtap). CLRTAP_TEST_MECH_HWBP / CLRTAP_TEST_MECH_UPROBE
 * = broken|works force the answer (not cached).
 */
#define PROBE_MECH_CALLS 1000
enum probe_mech_kind { PROBE_MECH_HWBP = 0, PROBE_MECH_UPROBE = 1 };
struct probe_mech {
	bool tested;   /* a result exists */
	bool fires;    /* every call was seen */
	bool forced;   /* from CLRTAP_TEST_MECH_* */
	bool cached;   /* from this boot's cache */
	unsigned calls, hits;
	int err;       /* perf_event_open's error (negative errno), 0 if it opened */
	unsigned hit_ns; /* measured cost of one hit to the process hit (CPU ns; 0: not measured) */
};
/* Returns 0 with *m filled, or a negative errno when the test could not run. */
int probe_mech_check(enum probe_mech_kind k, struct probe_mech *m);
/* Parses one cache line "BOOTID fires|silent CALLS HITS ERR [HIT_NS]" (-ESTALE: other boot). */
int probe_mech_parse(const char *buf, size_t len, const char *boot, struct probe_mech *m);

/*
 * Which mechanism each kind of code of m gets on this machine, as one line
 * for the user: ReadyToRun code -> uprobe, JIT code (present, or to come
 * with tier-up or a first call) -> hardware breakpoint, each with what its
 * self-test said (hw/up NULL or *_err != 0: the test could not run, so the
 * mechanism is unproven); where one does not fire or is unproven, which
 * calls are not seen; and that '--via rejit' sees every call on every tier.
 * -ENOSPC if len is short (buf then holds a cut line).
 */
int probe_mech_plan(const struct probe_method *m, const struct probe_mech *hw, int hw_err,
		    const struct probe_mech *up, int up_err, char *buf, size_t len);

/* ---- inlining (inline.c) ---- */

/* One JIT inlining decision about a watched method. */
struct probe_inline_ev {
	bool inlined;          /* MethodJitInliningSucceeded (else Failed) */
	char inlinee[PROBE_PM_NAME_MAX];  /* "Ns.Type::Method" */
	char inliner[PROBE_PM_NAME_MAX];  /* the method it went into */
	char compiled[PROBE_PM_NAME_MAX]; /* the method the JIT was compiling */
	char reason[160];      /* Failed: the JIT's reason */
	uint64_t mono_ns;      /* when clrtap read it */
};
/* Decodes the payload of event 185 (failed false) or 186 (failed true). */
int probe_inline_decode(const void *payload, size_t len, bool failed, struct probe_inline_ev *ev);

/*
 * Listens to the JIT's inlining events (EventPipe, JitTracing keyword) for
 * the methods named ("Ns.Type::Method"). Returns once the session is on (a
 * bounded wait), or an error (the runtime refused, no answer in 3 s).
 * Only code compiled from now on is reported.
 */
struct probe_inl;
int probe_inl_start(const struct ipc_endpoint *ep, const char *const *names, size_t n,
		    struct probe_inl **out);
/* Takes up to max events read so far. */
size_t probe_inl_take(struct probe_inl *li, struct probe_inline_ev *out, size_t max);
/* Ends the session and frees li (NULL is fine). */
void probe_inl_stop(struct probe_inl *li);

/* ---- sessions ---- */

#define PROBE_MAX_ARGS 16

struct probe_call {
	uint64_t time_ns;      /* CLOCK_REALTIME of the entry (or return if no entry) */
	uint64_t mono_ns;
	uint32_t tid;
	const struct probe_method *method;
	int version;           /* index into method->code */
	const char *args;      /* "value=5, toBase=16" (NULL unless args were asked) */
	bool has_entry, has_ret;
	const char *ret;       /* decoded return value, or NULL */
	uint64_t latency_ns;   /* valid when has_entry && has_ret */
	int64_t arg_num[PROBE_MAX_ARGS]; /* integer values of the arguments (for --hist) */
	bool arg_valid[PROBE_MAX_ARGS];
	const char *stack;     /* "A <- B <- C" (--stack), or NULL */
};

enum probe_note_kind {
	PROBE_NOTE_INFO = 0,
	PROBE_NOTE_ATTACH,     /* code armed */
	PROBE_NOTE_TRANSITION, /* a new code version appeared */
	PROBE_NOTE_WARN,
};

struct probe_session_opts {
	bool args, ret, latency, stack;
	unsigned strlen_max;  /* chars of a string shown (default 64) */
	bool wait_compile;    /* wait for JIT code when a method has none yet */
	bool count_only;      /* entries are only counted: no registers or stack sampled */
	bool no_hwbp;         /* hardware execute breakpoints proven not to fire here */
	bool no_uprobe;       /* uprobes proven not to fire here */
	/* Set when no_hwbp/no_uprobe were chosen by the user, not proven
	 * (e.g. "with --via uprobe"): said instead of "on this machine". */
	const char *unwatched_where;
};

typedef void (*probe_call_fn)(void *ctx, const struct probe_call *c);
typedef void (*probe_note_fn)(void *ctx, enum probe_note_kind kind, const char *msg);

struct probe_session;

/* Per code version counts, for the summary. */
struct probe_version_stats {
	uint64_t entries, returns;
	uint64_t first_ns, last_ns; /* first/last entry hit (CLOCK_MONOTONIC) */
	uint64_t armed_ns;          /* when its entry was armed (0: never) */
	unsigned ret_sites, ret_armed, tail_sites;
	bool armed;
	bool unwatchable;           /* its mechanism does not fire here: calls are not counted */
	bool handed;                /* came after probe_session_hand_over: not armed here */
	char how[24];               /* "uprobe", "hw-breakpoint", "" */
};

int probe_session_new(struct probe_proc *pp, struct probe_method **methods, size_t n,
		      const struct probe_session_opts *o, probe_call_fn on_call,
		      probe_note_fn on_note, void *ctx, struct probe_session **out);
/* Arms what can be armed now (returns -ENOENT when nothing has code yet). */
int probe_session_arm(struct probe_session *s);
/*
 * One step: waits up to timeout_ms for samples, decodes them, follows new
 * code versions. Returns 0, or -ESRCH when the target is gone.
 */
int probe_session_poll(struct probe_session *s, int timeout_ms);
/* Flushes pending calls (entries without a seen return are reported). */
void probe_session_flush(struct probe_session *s);
/* Stats for method i, version v. */
const struct probe_version_stats *probe_session_stats(const struct probe_session *s, size_t i,
						     size_t v);
/*
 * Another mechanism (the in-process ReJIT profiler) takes method i over:
 * the code versions it has now stay armed (calls that still run them are
 * counted here, so none is lost while the other one starts), code versions
 * that come later (the re-JIT'd code) are not armed (stats: handed).
 */
void probe_session_hand_over(struct probe_session *s, size_t i);
uint64_t probe_session_lost(const struct probe_session *s);
/*
 * Whether the uprobes (uprobe true) or the breakpoints are per-CPU events
 * of every process, filtered by pid (else per thread of the target).
 */
bool probe_session_per_cpu(const struct probe_session *s, bool uprobe);
/* Hits of per-CPU events in other processes (dropped, not counted as calls). */
uint64_t probe_session_foreign(const struct probe_session *s);
unsigned probe_session_threads(const struct probe_session *s);
/* CLOCK_MONOTONIC when the session started (probe_code.seen_ns is relative to it). */
uint64_t probe_session_start_ns(const struct probe_session *s);
/* Closes every perf event (the kernel drops uprobes and breakpoints). */
void probe_session_free(struct probe_session *s);

/* ---- cost budget and the ReJIT hand-over (budget.c) ---- */

/*
 * "2%", "2", "0.5%": the share of one CPU core a probe may take from the
 * target, in percent (0 < pct <= 1000). -EINVAL otherwise.
 */
int probe_budget_parse(const char *s, double *pct);
/* cost_ns of the target's CPU spent in window_ns, as a percentage of one core. */
double probe_budget_share(double cost_ns, uint64_t window_ns);

/* Per-call cost of the ReJIT probes, from bench/bench-rejit.sh and t-probe-budget.sh
 * on a loaded 2-CPU VM (22-48 ns counting in a tight loop, 70-190 ns in t-probe-budget's
 * ABAB rounds: the calli's GC transition); not measured per run. */
#define PROBE_REJIT_COUNT_NS 150
#define PROBE_REJIT_ARGS_NS 2500
#define PROBE_REJIT_STACK_NS 10000

/* One line of `clrtap agent probe --progress`. */
enum probe_rj_kind {
	PROBE_RJ_OTHER = 0,
	PROBE_RJ_PLACED, /* "probe SPEC: N method(s), ReJIT requested" */
	PROBE_RJ_COUNT,  /* "count SPEC [0xTOKEN]: N" */
	PROBE_RJ_FINAL,  /* "calls SPEC [0xTOKEN]: N" */
	PROBE_RJ_CALL,   /* "call SPEC (...) -> ..." */
	PROBE_RJ_STACK,  /* "stack 0xIP 0xIP ..." (the call before it; leaf first) */
};
#define PROBE_RJ_STACK_MAX 32
struct probe_rejit_line {
	enum probe_rj_kind kind;
	char spec[1024];
	uint32_t token;
	uint64_t count;
	uint64_t ips[PROBE_RJ_STACK_MAX];
	size_t nips;
};
/* Splits a line (NUL-terminated, no newline); -EBADMSG for a malformed count line. */
int probe_rejit_parse_line(const char *line, struct probe_rejit_line *out);

struct probe_rejit;
typedef void (*probe_rejit_line_fn)(void *ctx, const char *line);
/*
 * Starts `clrtap agent probe -p TARGET --progress [--args] [--stack] SPEC...` (this
 * binary, /proc/self/exe) with its stdout read here; its stderr is clrtap's.
 * The child gets SIGINT when clrtap dies.
 */
int probe_rejit_start(pid_t target, const char *const *specs, size_t n, bool args, bool stack,
		      struct probe_rejit **out);
/* Hands each complete line read so far to fn; 1 once the child exited and its output ended. */
int probe_rejit_poll(struct probe_rejit *r, probe_rejit_line_fn fn, void *ctx);
/* SIGINT (it flushes its counts, reverts, goes dormant), reads to the end; its exit status. */
int probe_rejit_stop(struct probe_rejit *r, int timeout_ms, probe_rejit_line_fn fn, void *ctx);
bool probe_rejit_exited(const struct probe_rejit *r, int *status);
void probe_rejit_free(struct probe_rejit *r);

/* ---- histograms ---- */

struct probe_hist {
	uint64_t count;
	int64_t min, max;
	uint64_t log2[65]; /* bucket k: values in [2^(k-1), 2^k), bucket 0: value <= 0 */
	int64_t *vals;      /* every value (for the linear view), capped */
	size_t nvals, cap;
};
void probe_hist_add(struct probe_hist *h, int64_t v);
/* Appends log2 and linear (10 buckets) views to out. unit: "ns" or "". */
int probe_hist_format(const struct probe_hist *h, const char *unit, struct strbuf *out);
void probe_hist_free(struct probe_hist *h);

/* ---- the probe task (task.c, report.c, handover.c; docs/tasks/probe.md) ---- */

/* How the caller sees calls as they happen (the CLI's live lines). */
struct probe_run_hooks {
	probe_call_fn on_call;  /* each call seen by a breakpoint or uprobe */
	/* each ReJIT record: its line ("call SPEC (...) = ..."), or (stack) its stack named */
	void (*on_rejit)(void *ctx, const char *text, bool stack);
	/* list mode: each matching method, with its plan ("mechanism: ...", NULL with emit) */
	void (*on_method)(void *ctx, const struct probe_method *m, const char *plan);
	void *ctx;
};

struct probe_run_opts {
	pid_t pid;
	int timeout_ms;            /* IPC timeout (0: the default) */
	const char *pattern;       /* "Ns.Type::Method[(sig)]" */
	bool args, ret, latency, stack;
	bool lines;                /* stack's managed frames with source file and line */
	bool count;                /* only count calls */
	bool count_only;           /* nothing sampled at a hit (count and no histogram) */
	bool no_wait, no_rejit;
	const char *via;           /* NULL, "native", "uprobe", "breakpoint" or "rejit" */
	double budget_pct;         /* share of one core the probe may take */
	unsigned strlen_max;       /* characters of a string shown */
	int64_t duration_ms;       /* 0: until the task's stop flag */
	struct probe_run_hooks hooks;
	size_t max_records;        /* call records kept (0: PROBE_RECORDS_MAX) */
	const char *hist_arg;      /* a histogram of this argument (name or index) is made by the
				    * caller: checked against the methods found; "latency" too */
	bool list;                 /* only find the methods (hooks.on_method), no probe */
	bool emit;                 /* list: no mechanism self-test (the plan is not asked) */
};

#define PROBE_RECORDS_MAX 1000            /* call records kept in a result */
#define PROBE_RECORDS_BYTES (4u << 20)    /* and at most this much text in them */
#define PROBE_STATEMENTS_MAX 24
#define PROBE_STATEMENT_MAX 512

/* One call as the result keeps it (strings owned). */
struct probe_rec {
	const struct probe_method *method; /* NULL for a ReJIT record */
	char *method_name;                 /* ReJIT: the method; else NULL */
	char tier[32];
	uint32_t tid;                      /* 0: not known (ReJIT) */
	double t_s;                        /* since the probe started (-1: not known) */
	char *args, *ret, *stack;          /* as the live line shows them, or NULL */
	bool has_entry, has_ret;
	uint64_t latency_ns;
};

struct probe_result_method {
	const struct probe_method *m;
	bool counted;                      /* false: its calls could not be counted (a statement says why) */
	uint64_t calls, calls_native, calls_rejit;
	bool rejit_final;                  /* ReJIT's final count came (or no ReJIT) */
	double counted_from_s;             /* calls before this were not seen (0: from the start) */
	double counted_until_s;            /* -1: to the end */
};

struct probe_result {
	pid_t pid;
	char pattern[512];
	char mechanism[48];                /* "breakpoint", "uprobe", "breakpoint+uprobe", "rejit", ... */
	struct probe_result_method methods[16];
	size_t nmethods;
	struct probe_rec *recs;
	size_t nrecs, recs_cap;
	size_t rec_bytes;
	uint64_t calls_total;
	size_t max_records;
	double budget_pct, cost_ns, share_pct, peak_share_pct, seconds;
	bool over_budget, handed_to_rejit, rejit_args;
	bool hw_measured, up_measured;
	unsigned hw_ns, up_ns, rejit_call_ns;
	char action[512];
	uint64_t lost;                     /* samples lost (ring buffer full) */
	bool partial;                      /* stopped by the stop flag */
	double attach_ms;
	char statements[PROBE_STATEMENTS_MAX][PROBE_STATEMENT_MAX];
	size_t nstatements;
	struct probe_proc *pp;             /* keeps the methods alive for the records */
};

/* The index of argument arg (its name, or its index as text) of m, or -1. */
int probe_method_arg_index(const struct probe_method *m, const char *arg);

extern const struct task_param probe_task_params[];
extern const size_t probe_task_nparams;
int task_run_probe(const struct task_args *a, const struct task_ctx *ctx, struct task_result *res);
/* The same run from C options (the CLI): live calls through o->hooks, the records in the result. */
int probe_task_run(const struct probe_run_opts *o, const struct task_ctx *ctx,
		   struct task_result *res);
/* The checks made before any work (EXIT_USAGE into res): 0 or -EINVAL. */
int probe_task_check(const struct probe_run_opts *o, struct task_result *res);
int probe_result_json(const struct probe_result *r, struct strbuf *sb);
void probe_result_free(void *r);

#endif
