/* SPDX-License-Identifier: MIT */
/*
 * heap.h - GC heap snapshots: the object graph from the runtime's heap-walk
 * events, its dominator tree (true retained sizes), shortest retention paths,
 * duplicated strings, comparison of snapshots, and clrtap's snapshot file.
 * See docs/internals/heap.md and docs/formats/gcdump.md.
 *
 * Nodes are the objects the runtime reported, sorted by address (node index =
 * position). Edges are resolved to node indexes; a reference to an address
 * that is no node is counted (unresolved_edges) and dropped. Roots are
 * (node, kind, flags); weak roots are dropped, as dotnet-gcdump does.
 */
#ifndef CLRTAP_HEAP_HEAP_H
#define CLRTAP_HEAP_HEAP_H

#include "common/compat.h"

#include <signal.h>

#include "common/strbuf.h"
#include "ipc/ipc.h"
#include "nettrace/nettrace.h"
#include "task/task.h"

#define HEAP_NONE UINT32_MAX
#define HEAP_MAX_NODES (200u * 1000 * 1000)  /* default cap on objects */
#define HEAP_MAX_EDGES (1000u * 1000 * 1000) /* default cap on references */
#define HEAP_MAX_TYPES (4u * 1000 * 1000)
#define HEAP_MAX_ROOTS (100u * 1000 * 1000)
#define HEAP_TYPE_NAME_MAX 4096 /* bytes of one type name (UTF-8) */
#define HEAP_DUP_KEEP 200       /* duplicated string values kept in a snapshot */
#define HEAP_STRING_MAX_CHARS 4096 /* longer strings are not compared */
#define HEAP_STRING_VALUE_MAX 256  /* bytes of a duplicated value kept (UTF-8) */

/* Root kinds (as the runtime reports them: nt_gc_root_kind), plus ours. */
enum heap_root_kind {
	HEAP_ROOT_STACK = 0,
	HEAP_ROOT_FINALIZER = 1,
	HEAP_ROOT_HANDLE = 2,
	HEAP_ROOT_OLDER = 3,
	HEAP_ROOT_SIZEDREF = 4,
	HEAP_ROOT_OVERFLOW = 5,
	HEAP_ROOT_DEPENDENT = 6, /* ConditionalWeakTable value whose key is alive */
	HEAP_ROOT_STATIC = 7,    /* GCBulkRootStaticVar */
	HEAP_ROOT_KINDS
};
/* "stack", "finalizer queue", "strong handle", "pinning handle", ... */
const char *heap_root_kind_name(unsigned kind, uint32_t flags);

struct heap_type {
	uint64_t id;  /* the runtime's TypeID (method table) */
	char *name;   /* C#-like, e.g. System.Collections.Generic.List<Foo> */
};

struct heap_root {
	uint32_t node;
	uint8_t kind;
	uint32_t flags;
};

/* A duplicated string value: count copies of the same content. */
struct heap_dupstr {
	char *value;     /* UTF-8, cut at HEAP_STRING_VALUE_MAX bytes (then truncated is set) */
	uint32_t chars;  /* length in UTF-16 units */
	bool truncated;
	uint64_t count;
	uint64_t bytes;  /* all copies */
	uint64_t wasted; /* (count - 1) x one copy */
};

/* How the string contents were read, and what could not be. */
struct heap_string_stats {
	bool read;               /* contents were read at all */
	const char *how;         /* "process_vm_readv after the snapshot GC" */
	uint64_t strings;        /* string objects in the graph */
	uint64_t compared;       /* read and verified */
	uint64_t moved;          /* method table or length no longer matched: a GC moved them */
	uint64_t unreadable;     /* process_vm_readv failed */
	uint64_t too_long;       /* longer than HEAP_STRING_MAX_CHARS: not compared */
	uint64_t dup_values;     /* distinct values with >= 2 copies */
	uint64_t dup_copies;     /* copies of those values */
	uint64_t wasted;         /* bytes of all copies beyond the first */
};

/* What is known about the collection (kept in the snapshot file). */
struct heap_meta {
	uint32_t pid;
	int64_t time;           /* unix seconds at collection */
	uint32_t pointer_size;
	uint32_t gc_count;      /* the induced GC's number */
	uint32_t gc_depth, gc_reason, gc_type;
	uint64_t pause_ns;      /* SuspendEE begin .. RestartEE end around the GC (0: unknown) */
	uint64_t gc_ns;         /* GCStart .. GCEnd */
	uint64_t lost_events;   /* events the runtime dropped (0 when the graph is used) */
	uint64_t unresolved_edges; /* references to addresses that were no node */
	uint64_t weak_roots;    /* roots dropped because they are weak */
	uint32_t attempts;      /* heap sessions it took */
	bool lossless;          /* the runtime's Block buffering was in force: it could not drop events */
	char process[64];       /* command name */
};

struct heap_graph {
	struct heap_meta meta;
	uint32_t nnodes;
	uint64_t *addr;       /* [nnodes], ascending */
	uint64_t *size;       /* [nnodes] */
	uint32_t *type;       /* [nnodes] index into types */
	uint32_t *edge_start; /* [nnodes + 1] */
	uint32_t *edges;      /* [nedges] target node indexes */
	uint32_t nedges;
	struct heap_type *types;
	uint32_t ntypes;
	struct heap_root *roots;
	uint32_t nroots;
	struct heap_dupstr *dups; /* sorted by wasted bytes, descending */
	uint32_t ndups;
	struct heap_string_stats strings;
};

void heap_graph_free(struct heap_graph *g);
/* Total shallow bytes. */
uint64_t heap_graph_bytes(const struct heap_graph *g);
/* Index of the type named name (exact; of several, the one with the most objects), or HEAP_NONE. */
uint32_t heap_graph_type_find(const struct heap_graph *g, const char *name);

/* ----- building a graph from the heap-walk events (graph.c) ----- */

struct heap_limits {
	uint32_t max_nodes, max_edges;
};

struct heap_builder;

int heap_builder_new(struct heap_builder **out, const struct heap_limits *lim);
void heap_builder_free(struct heap_builder *b);
/*
 * Feeds one event. Returns 0, 1 when the snapshot's GC has ended (the heap
 * walk is complete: stop the session), or a negative errno (-EBADMSG for a
 * malformed payload, -EFBIG past a cap, -ENOMEM).
 */
int heap_builder_event(struct heap_builder *b, const struct nt_event *ev, int64_t qpc_freq);
/* Whether the GC was seen to end, and how many nodes/edges arrived so far. */
bool heap_builder_done(const struct heap_builder *b);
void heap_builder_counts(const struct heap_builder *b, uint64_t *nodes, uint64_t *edges);
/* Blocks lost in the node/edge/root streams (index gaps), edges left over. */
uint64_t heap_builder_lost(const struct heap_builder *b);
/* What is known so far about the GC (pid, gc, pause...). */
struct heap_meta *heap_builder_meta(struct heap_builder *b);
/*
 * The nodes as they arrived (for reading strings before the graph is built):
 * calls fn(ctx, address, size) for every node whose type is named type_name.
 */
int heap_builder_nodes_of_type(const struct heap_builder *b, const char *type_name,
			       int (*fn)(void *ctx, uint64_t addr, uint64_t size, uint64_t type_id),
			       void *ctx);
/*
 * Builds the graph (the builder keeps nothing afterwards). -ENODATA when the
 * GC produced no nodes; -EPROTO when the streams were not consistent (lost
 * blocks, edges left over): the graph would be wrong.
 */
int heap_builder_finish(struct heap_builder *b, struct heap_graph **out);

/* ----- duplicated strings (strings.c) ----- */

struct heap_strings;
int heap_strings_new(struct heap_strings **out);
void heap_strings_free(struct heap_strings *s);
/*
 * Reads the string objects at the given addresses from process pid with
 * process_vm_readv and checks each still has its method table (type_id) and a
 * length that fits its size. Call heap_strings_add for each object, then
 * heap_strings_read.
 */
int heap_strings_add(struct heap_strings *s, uint64_t addr, uint64_t size, uint64_t type_id);
int heap_strings_read(struct heap_strings *s, pid_t pid);
/* Moves the duplicated values (top HEAP_DUP_KEEP) and the stats into g. */
int heap_strings_store(struct heap_strings *s, struct heap_graph *g);
/* Pure helper (tested): checks a string object's bytes; fills UTF-16 units. */
int heap_string_parse(const uint8_t *obj, size_t len, uint64_t size, uint64_t type_id,
		      const uint8_t **units, uint32_t *nunits);

/* ----- analysis (dom.c, paths.c) ----- */

struct heap_analysis {
	uint32_t n;           /* nodes + 1: index n-1 is the virtual root */
	uint32_t *idom;       /* [n] immediate dominator (node index; root = n-1; HEAP_NONE unreachable) */
	uint64_t *retained;   /* [n] retained bytes (0 when unreachable) */
	uint32_t reachable;   /* nodes reached from the roots */
	uint64_t unreachable_bytes;
	/* per type */
	uint64_t *type_count, *type_shallow, *type_retained; /* [ntypes] */
};

/* Lengauer-Tarjan over the graph with a virtual root whose children are the roots. */
int heap_analyze(const struct heap_graph *g, struct heap_analysis **out);
void heap_analysis_free(struct heap_analysis *a);

/* Shortest paths from the roots (breadth-first). */
struct heap_paths {
	uint32_t *parent; /* [nnodes] previous node on a shortest path; HEAP_NONE for roots/unreached */
	uint8_t *rootkind; /* [nnodes] root kind of rooted nodes, 0xff otherwise */
	uint32_t *rootflags;
	uint32_t *depth;
	uint32_t *anchor; /* [nnodes] the node of its path at depth 7 (itself when shallower) */
};
int heap_paths_new(const struct heap_graph *g, struct heap_paths **out);
void heap_paths_free(struct heap_paths *p);

/* Objects of one type grouped by the type sequence of their shortest path. */
struct heap_path_group {
	uint32_t *types;    /* type indexes, root first, the object's type last */
	uint32_t ntypes;
	uint8_t rootkind;
	uint32_t rootflags;
	uint64_t count;     /* objects with this path */
	uint64_t retained;  /* their retained bytes */
	uint32_t example;   /* one of them (node index) */
};
/* Groups of type t, most objects first; at most max groups (the rest are merged into count of none). */
int heap_paths_group(const struct heap_graph *g, const struct heap_paths *p,
		     const struct heap_analysis *a, uint32_t type, size_t max,
		     struct heap_path_group **out, size_t *n, uint64_t *unreached);
void heap_path_groups_free(struct heap_path_group *gr, size_t n);
/* "[strong handle] Object[] -> List<Foo> -> Foo[] -> Foo" */
int heap_path_group_format(const struct heap_graph *g, const struct heap_path_group *gr,
			   struct strbuf *out);

/* ----- snapshot file (snapfile.c, docs/formats/gcdump.md) ----- */

#define HEAP_FILE_MAX ((size_t)8 << 30) /* cap on a snapshot file read back */
int heap_file_write(const struct heap_graph *g, int fd);
/* -EBADMSG (corrupt, truncated: *why says where), -EFBIG (past a cap), -ENOMEM. */
int heap_file_parse(const uint8_t *p, size_t len, struct heap_graph **out, const char **why);
int heap_file_read(const char *path, struct heap_graph **out, const char **why);

/* ----- live collection (collect.c) ----- */

struct heap_progress {
	uint64_t bytes, nodes, edges;
	bool gc_started, gc_ended;
	unsigned attempt;
};

struct heap_collect_opts {
	const struct ipc_endpoint *ep;
	pid_t pid;               /* host pid, for reading strings; 0: do not read */
	uint32_t buffer_mb;      /* the runtime's session buffer (default 256) */
	int timeout_ms;          /* for the whole snapshot (default 30000) */
	volatile sig_atomic_t *stop;
	struct heap_limits limits;
	void (*progress)(void *ctx, const struct heap_progress *p);
	void *ctx;
	int tee_fd;              /* > 0: the heap session's raw nettrace bytes are also written here */
};

struct heap_collect_result {
	int stage_err;            /* which error, as returned */
	const char *stage;        /* where it failed: "flush", "session", "stream", "graph" */
	struct ipc_error rerr;
	char msg[256];            /* a sentence for the user */
	bool target_ended;        /* the process went away during the snapshot */
	uint64_t bytes;           /* stream bytes read */
};

/*
 * Takes one snapshot: a short type-table flush session, then the heap
 * session (which makes the runtime run an induced, blocking gen-2 GC and walk
 * the heap), the graph streamed into a builder (the stream is not kept),
 * string contents read right after the GC ends. Retries once when the GC
 * came without a heap walk.
 */
int heap_collect(const struct heap_collect_opts *o, struct heap_graph **out,
		 struct heap_collect_result *res);

/*
 * A snapshot from a saved heap session (offline.c). -EBADMSG damaged trace,
 * -ENODATA no complete heap-walk GC in it, -EPROTO events lost; msg says
 * which in a sentence.
 */
int heap_nettrace_read(const char *path, const struct heap_limits *lim, struct heap_graph **out,
		       char *msg, size_t msglen);

/* ----- comparison (diff.c) ----- */

/* Per-type totals of one snapshot, keyed by type name. */
struct heap_typestat {
	const char *name;
	uint64_t count, shallow, retained;
};
/* Sorted by name; names point into g. */
int heap_typestats(const struct heap_graph *g, const struct heap_analysis *a,
		   struct heap_typestat **out, size_t *n);

struct heap_growth {
	char *name;
	uint64_t *count;     /* [nsnap] */
	uint64_t *retained;  /* [nsnap] */
};
/*
 * Types whose count and retained bytes both grow strictly from each snapshot
 * to the next (absent = 0), sorted by retained growth.
 */
int heap_growth_find(struct heap_typestat *const *stats, const size_t *nstats, size_t nsnap,
		     struct heap_growth **out, size_t *n);
void heap_growth_free(struct heap_growth *gr, size_t n);

/* ----- the one leak comparison (leaks.c) ----- */

/* Snapshots reduced to per-type totals as they come; the first and the last graph are kept. */
struct heap_series {
	struct heap_typestat **stats; /* [n], names owned */
	size_t *nstats;
	size_t n, cap;
	struct heap_graph *first, *last;
};
int heap_series_init(struct heap_series *s, size_t cap);
/* Takes g (freed on error too). -E2BIG past cap, -ENOMEM. */
int heap_series_add(struct heap_series *s, struct heap_graph *g);
void heap_series_release(struct heap_series *s);
/*
 * Takes nsnap snapshots interval_ms apart into s (each(ctx, i, g) sees each
 * one before it is reduced; nonzero stops). A stop between snapshots is
 * -EINTR; s->n says how many were taken; res describes the last failure.
 */
int heap_series_collect(struct heap_series *s, const struct heap_collect_opts *o, unsigned nsnap,
			int64_t interval_ms, int (*each)(void *ctx, unsigned i, const struct heap_graph *g),
			void *ctx, struct heap_collect_result *res);

struct heap_leaks {
	struct heap_growth *gr;  /* types that grow in every snapshot, by retained growth */
	size_t n, nsnap;
	long *holder;            /* [n]: the growing type (index) holding all of gr[i]'s objects, or -1 */
	size_t ntop;             /* growing types not held by another */
	bool *with_paths;        /* [n]: paths are known (the heaviest top-level ones) */
	const struct heap_graph *first, *last;
	struct heap_analysis *a;
	struct heap_paths *p, *fp;
};
/* Compares the series (it must outlive l). */
int heap_leaks_compare(const struct heap_series *s, struct heap_leaks *l);
void heap_leaks_release(struct heap_leaks *l);
/* Up to 3 path groups of gr[i] in the last snapshot; -ENOENT without paths. */
int heap_leaks_paths(const struct heap_leaks *l, size_t i, struct heap_path_group **pg, size_t *n);
/* Objects of gr[i] on the path formatted as want in the first snapshot (0: none or unknown). */
uint64_t heap_leaks_first_count(const struct heap_leaks *l, size_t i, const char *want);

/* ----- JSON forms (report.c, leaks.c): docs/tasks/gcdump.md ----- */
struct ct_json;
#define HEAP_REPORT_RETAINERS 20
#define HEAP_REPORT_STRINGS 20
void heap_json_addr(struct ct_json *j, const char *key, uint64_t addr);
void heap_path_groups_json(struct ct_json *j, const struct heap_graph *g, const struct heap_path_group *gr,
			   size_t n);
/* The one shape of a duplicated string: {"value","truncated","chars","copies","bytes","wasted_bytes"}. */
void heap_dupstr_json(struct ct_json *j, const struct heap_dupstr *d);
/* The "strings" member: what was read and the top duplicated values. */
void heap_strings_json(struct ct_json *j, const struct heap_graph *g, size_t top);
/* Members of a snapshot's summary (pid, process, gc, objects, bytes, ...). */
void heap_snapshot_json(struct ct_json *j, const struct heap_graph *g);
/* Members "snapshots" (when labels), "growing" (top 0: all). */
void heap_leaks_json(struct ct_json *j, const struct heap_leaks *l, const char *const *labels, size_t top);

/* One snapshot's report (report.c). */
struct heap_report {
	const struct heap_graph *g;
	struct heap_analysis *a;
	struct heap_paths *p;           /* with a path or want_paths */
	uint32_t *order;                /* type indexes by retained bytes; the first ntop are shown */
	size_t ntop;
	uint32_t ret[HEAP_REPORT_RETAINERS]; /* the largest retainers */
	size_t nret;
	const char *path;               /* TYPE or 0xADDR asked for, or NULL */
	uint32_t pobj, ptype;           /* the object or type of path (HEAP_NONE) */
	struct heap_path_group *gr;     /* ptype's path groups */
	size_t ngr;
	uint64_t unreached;
};
/* -EINVAL: path names no object of the snapshot (why says so); -ENOMEM. top 0: all types. */
int heap_report_build(const struct heap_graph *g, int top, const char *path, bool want_paths,
		      struct heap_report *r, char *why, size_t whylen);
void heap_report_release(struct heap_report *r);
/* The report's members (the caller opens and closes the object). */
void heap_report_json(const struct heap_report *r, struct ct_json *j);

/* ----- the gcdump workflows (gcdump.c; their tasks in task.c) ----- */

#define HEAP_DIFF_MAX 1000 /* snapshots one diff compares */

/* The parameters of a live snapshot (gcdump collect/report/watch). */
struct heap_gcdump_params {
	int64_t gc_timeout_ms;   /* give up after (default 30 s) */
	int buffer_mb;           /* the runtime's session buffer (default 256) */
	int max_objects;         /* refuse larger heaps (default HEAP_MAX_NODES; 5x references) */
	bool no_strings;         /* do not read string contents */
	int tee_fd;              /* > 0: also keep the heap session's events here */
	volatile sig_atomic_t *stop;
	void (*progress)(void *ctx, const struct heap_progress *p);
	void *progress_ctx;
};
void heap_gcdump_params_default(struct heap_gcdump_params *p);
/* -EINVAL with a sentence naming the option. */
int heap_gcdump_params_check(const struct heap_gcdump_params *p, char *why, size_t whylen);
void heap_gcdump_collect_opts(const struct heap_gcdump_params *p, const struct ipc_endpoint *ep,
			      struct heap_collect_opts *o);
/* A failed heap_collect as a sentence; returns the exit code (EXIT_INTERRUPTED: stopped, nothing kept). */
int heap_collect_explain(const struct heap_collect_result *res, int err, char *msg, size_t len);
/* Whether path.tmp can be made under dirfd (checked before a GC is forced). */
int heap_file_can_write(int dirfd, const char *path);
/* Writes g to path under dirfd (AT_FDCWD: the working directory) through path.tmp and a rename. */
int heap_file_save(const struct heap_graph *g, int dirfd, const char *path);
/* A snapshot file or a saved heap session (.nettrace); on error a sentence and the exit code. */
int heap_load(const char *path, struct heap_graph **g, char *msg, size_t len, int *exit_code);
/* Loads n files (2..HEAP_DIFF_MAX) into s and compares them into l (the caller releases both). */
int heap_gcdump_diff(const char *const *paths, size_t n, struct heap_series *s, struct heap_leaks *l,
		     char *msg, size_t len, int *exit_code);
/* The result JSON of each workflow (one object; docs/tasks/gcdump.md). */
int heap_gcdump_collect_json(const struct heap_graph *g, const char *artifact, struct strbuf *out);
int heap_gcdump_report_json(const struct heap_report *r, struct strbuf *out);
int heap_gcdump_leaks_json(const char *task, const struct heap_leaks *l, const char *const *labels,
			   bool partial, struct strbuf *out);

/* ----- the same results as text for a person (text.c); names made terminal-safe ----- */
const char *heap_thousands(uint64_t v, char *buf, size_t len); /* 1234567 -> "1,234,567" */
void heap_text_collected(struct strbuf *sb, const struct heap_graph *g, const char *path);
void heap_text_report(struct strbuf *sb, const struct heap_report *r);
void heap_text_growth(struct strbuf *sb, const struct heap_leaks *l);

/* ----- the gcdump tasks (task.c; rows of lib/task/table.c, results in docs/tasks/gcdump.md) ----- */
extern const struct task_param gcdump_collect_task_params[];
extern const size_t gcdump_collect_task_nparams;
extern const struct task_param gcdump_report_task_params[];
extern const size_t gcdump_report_task_nparams;
extern const struct task_param gcdump_task_params[]; /* serve's "gcdump" kind: report, all types */
extern const size_t gcdump_task_nparams;
extern const struct task_param gcdump_diff_task_params[];
extern const size_t gcdump_diff_task_nparams;
int task_run_gcdump_collect(const struct task_args *a, const struct task_ctx *c, struct task_result *r);
int task_run_gcdump_report(const struct task_args *a, const struct task_ctx *c, struct task_result *r);
int task_run_gcdump_diff(const struct task_args *a, const struct task_ctx *c, struct task_result *r);

/* ----- HTML view (html.c) ----- */
int heap_html_write(const struct heap_graph *g, const struct heap_analysis *a,
		    const struct heap_paths *p, struct strbuf *out);

#endif
