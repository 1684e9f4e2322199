/* SPDX-License-Identifier: MIT */
/*
 * report.c - the analyze workflow as a library: run one analyzer over a live
 * process (an EventPipe session, /proc, or heap snapshots) or a .nettrace
 * file into a struct an_report, then render it as Markdown, JSON (into the
 * caller's ct_json) or one offline HTML page. Nothing is printed and nothing
 * exits: a failure is a negative errno plus a class and a message
 * (analyze_report_failure) the caller turns into its exit code or HTTP
 * error; the stop flag is the caller's. clrtap analyze and clrtap serve
 * both call it. Names the target chose go through the terminal escaping rule
 * (lib/common/term) in Markdown and HTML, exact in JSON.
 */
#include "common/compat.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "analyze/analyze.h"
#include "srcline/srcline.h"
#include "common/io.h"
#include "common/json.h"
#include "common/term.h"
#include "flame/flame.h"
#include "heap/heap.h"

/* below this many kept samples, hotpaths says its shares are rough */
#define HOTPATHS_FEW_SAMPLES 50

#define MAX_GROUPS 64
#define MAX_NOTES 8

struct an_report {
	const struct an_analyzer *a;
	struct an_session *s;
	struct an_memory mem;
	bool have_mem;
	struct heap_graph *heap;
	struct heap_analysis *ha;
	struct heap_typestat *ts;
	size_t nts;
	struct an_deadlock *dl;
	struct heap_series series_h; /* leaks: the snapshots' totals, the first and last graph */
	struct heap_leaks leaks;
	unsigned nsnap;
	pid_t pid;
	const char *file;
	double duration_s;
	unsigned top;
	const char *notes[MAX_NOTES];
	size_t nnotes;
	char partial[640];
	bool runtime_mem;       /* memory: the session for the runtime's view ran */
	char partial_rt[640];   /* memory: why it did not */
	char excess[256];       /* memory: the GC range's excess over its committed bytes */
	struct an_mem_series series; /* memory: the kinds over the duration */
	struct an_mem_growth mgrowth;
	double period_s;        /* memory: between two points of the series */
	bool series_final;      /* memory: the series' last point is the final read */
	double read_s;          /* memory: time spent reading smaps */
	unsigned nread;         /* memory: readings of smaps */
	enum an_fail fail;
	int err;
	char msg[640];
};

static int fail(struct an_report *r, enum an_fail f, int err, const char *fmt, ...) PRINTF(4, 5);
static int fail(struct an_report *r, enum an_fail f, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->fail = f;
	r->err = err < 0 ? err : -EIO;
	return r->err;
}

static void note(struct an_report *r, const char *s)
{
	if (r->nnotes < MAX_NOTES)
		r->notes[r->nnotes++] = s;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static const char *measured(const struct an_report *r)
{
	switch (r->a->need & ~AN_NEED_GC) {
	case AN_NEED_EXCEPTIONS: return "the runtime's exception events (type, message, throwing stack)";
	case AN_NEED_ALLOC: return "the runtime's AllocationTick events (one about every 100 KB allocated)";
	case AN_NEED_CONTENTION | AN_NEED_LOCKS:
		return "the runtime's ContentionStart/Stop events with stacks (lock and owner from ContentionStart V2, .NET 8+)";
	case AN_NEED_CONTENTION | AN_NEED_LOCKS | AN_NEED_SAMPLES:
		return "the runtime's ContentionStart/Stop events (lock and owner thread, .NET 8+) with stacks, and the sample profiler's stacks of every thread";
	case AN_NEED_COUNTERS | AN_NEED_SAMPLES:
		return "System.Runtime thread-pool counters (1 s) and the sample profiler's stacks of the pool's workers";
	case AN_NEED_SAMPLES: return "the sample profiler's managed stacks (every thread, about every ms)";
	case AN_NEED_SMAPS | AN_NEED_CODE | AN_NEED_COUNTERS:
		return "/proc/PID/smaps (at the start, periodically and at the end), /proc/PID/status and the cgroup's memory files; a session over the duration for the runtime's JIT'd code ranges (method rundown) and GC generation counters";
	case AN_NEED_HEAPS: return "3 heap snapshots (each an induced blocking gen-2 GC and heap walk) spread over the duration, retained sizes by dominators";
	case AN_NEED_HEAP: return "a heap snapshot (an induced blocking gen-2 GC and heap walk), string contents read with process_vm_readv";
	default: return "the runtime's GC events (GCStart/End, SuspendEE/RestartEE)";
	}
}

/* The layout's GC heap is under half of the GC's committed bytes (counter). */
static bool gc_unrecognized(const struct an_memory *m)
{
	return m->gc_committed >= 64.0 * 1048576.0 &&
	       (double)m->rss_kb[AN_MEM_GC_HEAP] * 1024.0 < m->gc_committed / 2;
}

/* The notes on what the analyzer cannot see. */
static void limits(struct an_report *r)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	const char *n = r->a->name;

	if (res && res->dropped_events)
		note(r, "the runtime lost events (its buffer was full): every count is a floor");
	if (res && res->order_forced)
		note(r, "the time order of events across threads (the reader's window was full)");
	if (r->partial[0])
		note(r, r->partial);
	if (!strcmp(n, "exceptions")) {
		note(r, "exceptions thrown before or after the window");
		note(r, "whether each one was caught: these are first-chance events");
	} else if (!strcmp(n, "allocations")) {
		note(r, "each allocation: ticks sample about one per 100 KB, so bytes are estimates and rare small types may be missing");
		note(r, "what stays alive (use clrtap gcdump report)");
	} else if (!strcmp(n, "pauses")) {
		note(r, "GCs outside the window; time the threads lost for other reasons");
	} else if (!strcmp(n, "contention")) {
		note(r, "which thread held the lock before .NET 8 (ContentionStart V1 names the waiter only); locks are listed from V2 events");
		note(r, "waits on non-Monitor primitives (SemaphoreSlim, ManualResetEvent)");
	} else if (!strcmp(n, "deadlock")) {
		note(r, "locks without contention events: SemaphoreSlim, ManualResetEvent, ReaderWriterLockSlim, native mutexes");
		note(r, "a wait that began before the session: its ContentionStart is not repeated, so its owner is not told (listed as blocked before the session)");
		if (r->dl && r->dl->starts && !r->dl->starts_v2)
			note(r, "lock owners: this runtime's ContentionStart has no owner field (before .NET 8), so no cycle can be proven");
		if (r->dl && r->dl->dropped)
			note(r, "some waits: more threads or locks than the tables hold");
	} else if (!strcmp(n, "hotpaths")) {
		note(r, "native frames and time in native code (use clrtap profile --engine perf)");
	} else if (!strcmp(n, "stacks")) {
		note(r, "threads without managed frames; a stack is one moment of each thread");
	} else if (!strcmp(n, "leaks")) {
		note(r, "each snapshot forced a full blocking GC in the target");
		note(r, "growth that is not monotonic across the snapshots (caches that also shrink), and what holds the growth (use clrtap gcdump watch)");
	} else if (!strcmp(n, "threadpool")) {
		note(r, "the runtime's thread-injection decisions (ThreadPoolWorkerThreadAdjustment events)");
		note(r, "async continuations that never got a thread: only the queue length shows them");
	} else if (!strcmp(n, "survivors")) {
		note(r, "the snapshot forced a full blocking GC in the target: what survives it is what is reachable");
		note(r, "which of these grow (use clrtap analyze -p PID leaks)");
	} else if (!strcmp(n, "strings")) {
		note(r, "the snapshot forced a full blocking GC in the target; strings freed before it are not counted");
		if (r->heap && r->heap->strings.moved + r->heap->strings.unreadable + r->heap->strings.too_long)
			note(r, "some strings could not be compared (moved, unreadable or too long): counts are floors");
	} else if (!strcmp(n, "memory")) {
		note(r, "which objects fill the GC heap (use clrtap gcdump report) and which native code called malloc (use clrtap agent native-memory)");
		note(r, "the GC heap is inferred from the layout (anonymous memory inside the GC's big reservation)");
		if (r->mem.truncated)
			note(r, "smaps was over the size cap: the breakdown covers the first mappings only");
		if (r->partial_rt[0])
			note(r, r->partial_rt);
		if (r->mem.gc_excess_kb) {
			snprintf(r->excess, sizeof(r->excess),
				 "%.1f MiB found in the GC's range is more than the GC says it committed: a neighbouring mapping the kernel merged with it, counted as other anonymous memory",
				 r->mem.gc_excess_kb / 1024.0);
			note(r, r->excess);
		}
		if (gc_unrecognized(&r->mem))
			note(r, "the GC's reservation was not recognized in the layout: the GC says it committed more than twice what is counted as GC heap here, the rest is in other anonymous memory");
		note(r, "GC bookkeeping and the runtime's loader heaps (type data) apart from other anonymous memory: the runtime does not say where they are");
	}
}

static void next_cmd(const struct an_report *r, char *buf, size_t len)
{
	if (r->file)
		snprintf(buf, len, "clrtap trace report %s", r->file);
	else
		snprintf(buf, len, r->a->next, (int)r->pid, (int)r->pid);
}

/* Thread-pool verdict: starving when work waited in the queue while most
 * workers were blocked in one method. */
static bool starving(struct an_report *r, struct an_stack_group *g, int *ng, uint32_t *workers)
{
	int i;

	*ng = analyze_stack_groups(r->s, g, MAX_GROUPS, true);
	*workers = 0;
	for (i = 0; i < *ng; i++)
		*workers += g[i].threads;
	return r->s->tp_queue_max >= 10 && *ng > 0 && g[0].threads * 2 >= *workers;
}

static int by_retained(const void *a, const void *b)
{
	const struct heap_typestat *x = a, *y = b;

	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* ----- Markdown ----- */

static void md_stack(struct strbuf *f, const char *const *frames, uint32_t n, unsigned max)
{
	uint32_t i;

	for (i = 0; i < n && i < max; i++)
		strbuf_addf(f, "    %s\n", ct_term_safe(frames[i]));
	if (n > max)
		strbuf_addf(f, "    ... %u more frames\n", n - max);
}

static void md_dl_thread(struct strbuf *f, const struct an_dl_thread *t)
{
	strbuf_addf(f, "- thread %" PRIu64 "%s%s%s waits%s%s for lock 0x%" PRIx64 " (object 0x%" PRIx64
		"), held by thread %" PRIu64 "\n\n", t->tid, t->name[0] ? " (" : "", t->name[0] ? ct_term_safe(t->name) : "",
		t->name[0] ? ")" : "", t->site ? " in " : "", t->site ? ct_term_safe(t->site) : "", t->lock_id,
		t->object_id, t->owner);
	md_stack(f, t->frames, t->nframes, 12);
	strbuf_addf(f, "\n");
}

/* The contended locks (ContentionStart V2), by wait time. */
static void md_locks(struct strbuf *f, struct an_report *r)
{
	const struct an_lock_stat *ls;
	size_t i, n = analyze_locks_by_wait(r->s->locks, &ls);

	if (!n)
		return;
	strbuf_addf(f, "\n## Locks by wait time\n\n| waits | total ms | max ms | lock | object | first waiter in |\n"
		   "|---:|---:|---:|---|---|---|\n");
	for (i = 0; i < n && i < r->top; i++) {
		const char *frames[1], *site;
		uint32_t more;

		analyze_frames(r->s, ls[i].ips, ls[i].nips, frames, 1, &site, &more);
		strbuf_addf(f, "| %" PRIu64 " | %.1f | %.3f | 0x%" PRIx64 " | 0x%" PRIx64 " | %s |\n", ls[i].waits,
			(double)ls[i].total_ns / 1e6, (double)ls[i].max_ns / 1e6, ls[i].lock_id, ls[i].object_id,
			site ? ct_term_safe(site) : "");
	}
}

static const char *const gen_names[5] = { "gen0", "gen1", "gen2", "loh", "poh" };

/* memory: how each kind moved over the duration, and the one that grew */
static void md_mem_growth(struct strbuf *f, const struct an_report *r)
{
	const struct an_mem_growth *g = &r->mgrowth;
	int k;

	if (g->points < 2) {
		strbuf_addf(f, "\nGrowth: not measured (one reading of smaps).\n");
		return;
	}
	strbuf_addf(f, "\n### Growth over %.1f s (%zu readings)\n\n", g->span_s, g->points);
	strbuf_addf(f, "| kind | start MiB | end MiB | growth MiB | rate MiB/s |\n|---|---:|---:|---:|---:|\n");
	for (k = 0; k <= AN_MEM_GREW_NATIVE; k++)
		strbuf_addf(f, "| %s | %.1f | %.1f | %+.1f | %+.2f |\n",
			    k == AN_MEM_GREW_NATIVE ? "native (malloc heap + other anonymous)" :
			    analyze_mem_kind_label((enum an_mem_kind)k),
			    (double)g->start_kb[k] / 1024.0, (double)g->end_kb[k] / 1024.0,
			    (double)g->delta_kb[k] / 1024.0, g->rate_kb_s[k] / 1024.0);
	strbuf_addf(f, "| **total** | | | %+.1f | %+.2f |\n\n", (double)g->total_delta_kb / 1024.0,
		    g->total_rate_kb_s / 1024.0);
	if (g->grew >= 0)
		strbuf_addf(f, "**Growth: %s grew by %.1f MiB in %.1f s, %.2f MiB/s.**\n",
			    analyze_mem_growth_label(g->grew), (double)g->delta_kb[g->grew] / 1024.0, g->span_s,
			    g->rate_kb_s[g->grew] / 1024.0);
	else
		strbuf_addf(f, "No kind grew by 8 MiB (and 2%% of the start) in %.1f s.\n", g->span_s);
	if (r->runtime_mem && r->s->gc_gen_first[0] >= 0) {
		strbuf_addf(f, "\nGC heap by generation over the session (the runtime's counters, first and last; logical sizes after a GC):");
		for (k = 0; k < 5; k++)
			if (r->s->gc_gen_first[k] >= 0 && r->s->gc_gen[k] >= 0)
				strbuf_addf(f, " %s %.1f -> %.1f MiB%s", gen_names[k], r->s->gc_gen_first[k] / 1048576.0,
					    r->s->gc_gen[k] / 1048576.0, k < 4 ? "," : ".");
		strbuf_addf(f, "\n");
	}
}

/* What the runtime told about its memory: the code views, the generations. */
static void md_runtime_memory(struct strbuf *f, struct an_report *r)
{
	const struct an_memory *m = &r->mem;
	size_t k;

	strbuf_addf(f, "JIT code and stub heaps: %.1f MiB in executable views", (double)m->code_exec_kb / 1024.0);
	if (m->code_jit_known)
		strbuf_addf(f, " (%.1f MiB of them in views holding the %" PRIu64
			    " methods the runtime JIT'd, %.1f KiB of code; the rest: stubs, precode)",
			    (double)m->code_jit_kb / 1024.0, m->jit_methods, (double)m->jit_bytes / 1024.0);
	strbuf_addf(f, ", %.1f MiB in writable views.\n", (double)m->code_rw_kb / 1024.0);
	if (m->gc_gen[0] < 0 && m->gc_gen[2] < 0)
		return;
	strbuf_addf(f, "GC heap by generation (the runtime's counters, after its last GC; logical sizes):");
	for (k = 0; k < 5; k++)
		if (m->gc_gen[k] >= 0)
			strbuf_addf(f, " %s %.1f MiB%s", gen_names[k], m->gc_gen[k] / 1048576.0, k < 4 ? "," : "");
	if (m->gc_committed >= 0)
		strbuf_addf(f, "; committed by the GC %.1f MiB", m->gc_committed / 1048576.0);
	strbuf_addf(f, ".\n");
}

static void md_body(struct strbuf *f, struct an_report *r)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	const char *n = r->a->name;
	size_t i;

	if (!strcmp(n, "exceptions")) {
		strbuf_addf(f, "%" PRIu64 " exceptions thrown: %" PRIu64 " first throws, %" PRIu64
			    " rethrown (the same exception passed on by an await, through ExceptionDispatchInfo.Throw)",
			    res->exceptions_total, res->exceptions_first, res->exceptions_rethrown);
		if (res->exceptions_total > res->exceptions_first + res->exceptions_rethrown)
			strbuf_addf(f, ", %" PRIu64 " not told apart (no stack or names)",
				    res->exceptions_total - res->exceptions_first - res->exceptions_rethrown);
		strbuf_addf(f, ".\n\n");
		if (res->nexc_types)
			strbuf_addf(f, "| count | first throws | rethrown | type | distinct messages |\n|---:|---:|---:|---|---:|\n");
		for (i = 0; i < res->nexc_types && i < r->top; i++)
			strbuf_addf(f, "| %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %s | %u%s |\n",
				res->exc_types[i].count, res->exc_types[i].first, res->exc_types[i].rethrown,
				ct_term_safe(res->exc_types[i].type), res->exc_types[i].messages,
				res->exc_types[i].messages_capped ? "+" : "");
		for (i = 0; i < res->nexceptions && i < r->top; i++) {
			const struct ts_exception *e = &res->exceptions[i];

			strbuf_addf(f, "\n### %s x%" PRIu64 "\n\nmessage: %s\n", ct_term_safe(e->type), e->count,
				ct_term_safe(e->message));
			if (e->thrown_at)
				strbuf_addf(f, "thrown in: %s\n", ct_term_safe(e->thrown_at));
			strbuf_addf(f, "\n");
			md_stack(f, e->frames, e->nframes, 12);
		}
	} else if (!strcmp(n, "allocations")) {
		strbuf_addf(f, "%.1f MiB sampled in %" PRIu64 " allocation ticks.\n\n",
			(double)res->alloc_bytes / 1048576.0, res->alloc_samples);
		if (res->nallocs)
			strbuf_addf(f, "| share | MiB | ticks | type |\n|---:|---:|---:|---|\n");
		for (i = 0; i < res->nallocs && i < r->top; i++)
			strbuf_addf(f, "| %.1f%% | %.1f | %" PRIu64 " | %s |\n",
				pct(res->allocs[i].bytes, res->alloc_bytes),
				(double)res->allocs[i].bytes / 1048576.0, res->allocs[i].samples,
				ct_term_safe(res->allocs[i].type));
	} else if (!strcmp(n, "pauses")) {
		const struct ts_gc *g = &res->gc;

		strbuf_addf(f, "%" PRIu64 " GCs (gen0 %" PRIu64 ", gen1 %" PRIu64 ", gen2 %" PRIu64
			"; induced %" PRIu64 ", background %" PRIu64 ").\n\n",
			g->count, g->by_gen[0], g->by_gen[1], g->by_gen[2],
			g->induced_by_gen[0] + g->induced_by_gen[1] + g->induced_by_gen[2], g->background);
		strbuf_addf(f, "| pauses | p50 ms | p95 ms | p99 ms | max ms | total ms | paused |\n"
			   "|---:|---:|---:|---:|---:|---:|---:|\n");
		strbuf_addf(f, "| %" PRIu64 " | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f%% |\n", g->pauses,
			(double)g->pause_p50_ns / 1e6, (double)g->pause_p95_ns / 1e6,
			(double)g->pause_p99_ns / 1e6, (double)g->pause_max_ns / 1e6,
			(double)g->pause_total_ns / 1e6, g->paused_pct);
		strbuf_addf(f, "\nPauses measured from %s.\n", g->pause_source ? g->pause_source : "nothing (no pause seen)");
	} else if (!strcmp(n, "contention")) {
		const struct ts_contention *c = &res->contention;

		strbuf_addf(f, "%" PRIu64 " contended lock acquisitions, %.1f ms waited (max %.3f ms, %" PRIu64
			" timed).\n", c->starts, (double)c->total_ns / 1e6, (double)c->max_ns / 1e6, c->timed);
		for (i = 0; i < res->ncontention_sites && i < r->top; i++) {
			const struct ts_contention_site *s = &res->contention_sites[i];

			strbuf_addf(f, "\n### %" PRIu64 " waits, %.1f ms\n\n", s->count, (double)s->total_ns / 1e6);
			md_stack(f, s->frames, s->nframes, 12);
		}
		md_locks(f, r);
	} else if (!strcmp(n, "deadlock")) {
		const struct an_deadlock *d = r->dl;
		size_t c, k;

		strbuf_addf(f, "%" PRIu64 " contended lock waits began in the session (%" PRIu64
			" naming lock and owner), %" PRIu64 " ended.\n\n", d->starts, d->starts_v2, d->stops);
		if (!d->ncycles)
			strbuf_addf(f, "**No deadlock** seen: no cycle of threads waiting on each other's locks.\n");
		for (c = 0; c < d->ncycles; c++) {
			strbuf_addf(f, "### Deadlock %zu: %zu threads wait on each other's locks\n\n", c + 1, d->cycles[c].n);
			for (k = 0; k < d->cycles[c].n; k++) {
				const struct an_dl_thread *t = &d->cycles[c].t[k];

				md_dl_thread(f, t);
			}
		}
		if (d->nwaiting) {
			strbuf_addf(f, "\n%zu thread(s) still waiting at the end, outside any cycle:\n\n", d->nwaiting);
			for (k = 0; k < d->nwaiting && k < ARRAY_SIZE(d->waiting); k++)
				md_dl_thread(f, &d->waiting[k]);
		}
		if (d->nblocked) {
			strbuf_addf(f, "\nThreads inside a lock enter since before the session (owner not told):\n\n"
				   "| threads | method | enter | thread ids |\n|---:|---|---|---|\n");
			for (k = 0; k < d->nblocked; k++) {
				uint32_t x;

				strbuf_addf(f, "| %u | %s | %s | ", d->blocked[k].threads, ct_term_safe(d->blocked[k].method),
					ct_term_safe(d->blocked[k].call));
				for (x = 0; x < d->blocked[k].threads && x < ARRAY_SIZE(d->blocked[k].tids); x++)
					strbuf_addf(f, "%s%" PRIu64, x ? " " : "", d->blocked[k].tids[x]);
				strbuf_addf(f, " |\n");
			}
			if (d->blocked_threads >= 2 && !d->ncycles)
				strbuf_addf(f, "\n%u threads sat in a lock enter for the whole session: **a deadlock is likely but "
					   "unproven** (the owners are not told for waits that began before the session).\n",
					d->blocked_threads);
		}
	} else if (!strcmp(n, "hotpaths")) {
		struct flame_top *ft = NULL;
		size_t nt = 0;
		uint64_t total = res->flame ? flame_total(res->flame) : 0;
		char why[384];

		analyze_cpu_basis_why(r->s, why, sizeof(why));
		strbuf_addf(f, "%" PRIu64 " samples in managed code (%s).\n\n%s.\n\n", total,
			    analyze_cpu_basis(r->s), ct_term_safe(why));
		if (total < HOTPATHS_FEW_SAMPLES)
			strbuf_addf(f, "**Too few samples to rank methods** (%" PRIu64 ", under %d): the "
				       "shares below are rough. Run longer (-d) or sample the CPU with "
				       "clrtap profile --engine perf.\n\n",
				    total, HOTPATHS_FEW_SAMPLES);
		if (total && !flame_top(res->flame, &ft, &nt)) {
			strbuf_addf(f, "| self %% | self | total %% | method |\n|---:|---:|---:|---|\n");
			for (i = 0; i < nt && i < r->top; i++) {
				if (!ft[i].self)
					break;
				strbuf_addf(f, "| %.1f | %" PRIu64 " | %.1f | %s |\n", pct(ft[i].self, total),
					ft[i].self, pct(ft[i].total, total), ct_term_safe(ft[i].name));
			}
		}
		free(ft);
	} else if (!strcmp(n, "stacks")) {
		struct an_stack_group g[MAX_GROUPS];
		int ng = analyze_stack_groups(r->s, g, MAX_GROUPS, false);

		strbuf_addf(f, "%zu threads sampled; grouped by their first frame outside System/Microsoft:\n\n",
			stacks_sampler_nthreads(r->s->ss));
		strbuf_addf(f, "| threads | method | thread ids |\n|---:|---|---|\n");
		for (i = 0; ng > 0 && i < (size_t)ng; i++) {
			uint32_t k;

			strbuf_addf(f, "| %u | %s | ", g[i].threads, ct_term_safe(g[i].method));
			for (k = 0; k < g[i].threads && k < ARRAY_SIZE(g[i].tids); k++)
				strbuf_addf(f, "%s%" PRIu64, k ? " " : "", g[i].tids[k]);
			strbuf_addf(f, " |\n");
		}
	} else if (!strcmp(n, "leaks")) {
		unsigned last = r->nsnap - 1;

		strbuf_addf(f, "%zu types grew in count and retained bytes across %u snapshots.\n\n", r->leaks.n,
			r->nsnap);
		if (r->leaks.n)
			strbuf_addf(f, "| type | count first → last | retained KiB first → last |\n|---|---:|---:|\n");
		for (i = 0; i < r->leaks.n && i < r->top; i++)
			strbuf_addf(f, "| %s | %" PRIu64 " → %" PRIu64 " | %.1f → %.1f |\n", ct_term_safe(r->leaks.gr[i].name),
				r->leaks.gr[i].count[0], r->leaks.gr[i].count[last],
				(double)r->leaks.gr[i].retained[0] / 1024.0, (double)r->leaks.gr[i].retained[last] / 1024.0);
	} else if (!strcmp(n, "threadpool")) {
		struct an_stack_group g[MAX_GROUPS];
		uint32_t workers;
		int ng;
		bool st = starving(r, g, &ng, &workers);

		strbuf_addf(f, "Queue length max %.0f (last %.0f), pool threads max %.0f, %u workers sampled.\n\n",
			r->s->tp_queue_max, r->s->tp_queue_last, r->s->tp_threads_max, workers);
		if (st)
			strbuf_addf(f, "**Starvation**: work waited in the queue while %u of %u workers were blocked in %s%s%s.\n\n",
				g[0].threads, workers, ct_term_safe(g[0].method), g[0].call ? ", calling " : "",
				g[0].call ? ct_term_safe(g[0].call) : "");
		else
			strbuf_addf(f, "No starvation seen.\n\n");
		if (ng > 0)
			strbuf_addf(f, "| workers | method | calling |\n|---:|---|---|\n");
		for (i = 0; ng > 0 && i < (size_t)ng && i < r->top; i++)
			strbuf_addf(f, "| %u | %s | %s |\n", g[i].threads, ct_term_safe(g[i].method),
				g[i].call ? ct_term_safe(g[i].call) : "");
	} else if (!strcmp(n, "survivors")) {
		strbuf_addf(f, "%u objects survive, %.1f MiB reachable from %u roots.\n\n", r->ha->reachable,
			(double)(heap_graph_bytes(r->heap) - r->ha->unreachable_bytes) / 1048576.0, r->heap->nroots);
		strbuf_addf(f, "| retained KiB | shallow KiB | count | type |\n|---:|---:|---:|---|\n");
		for (i = 0; i < r->nts && i < r->top; i++)
			strbuf_addf(f, "| %.1f | %.1f | %" PRIu64 " | %s |\n", (double)r->ts[i].retained / 1024.0,
				(double)r->ts[i].shallow / 1024.0, r->ts[i].count, ct_term_safe(r->ts[i].name));
	} else if (!strcmp(n, "strings")) {
		const struct heap_graph *g = r->heap;

		strbuf_addf(f, "%" PRIu64 " strings on the heap, %" PRIu64 " compared; %" PRIu64
			" values with copies, %.1f KiB wasted.\n\n", g->strings.strings, g->strings.compared,
			g->strings.dup_values, (double)g->strings.wasted / 1024.0);
		if (g->ndups)
			strbuf_addf(f, "| copies | wasted KiB | chars | value |\n|---:|---:|---:|---|\n");
		for (i = 0; i < g->ndups && i < r->top; i++)
			strbuf_addf(f, "| %" PRIu64 " | %.1f | %u | %s%s |\n", g->dups[i].count,
				(double)g->dups[i].wasted / 1024.0, g->dups[i].chars, ct_term_safe(g->dups[i].value),
				g->dups[i].truncated ? "..." : "");
	} else if (!strcmp(n, "memory")) {
		const struct an_memory *m = &r->mem;
		enum an_mem_kind k, d = analyze_memory_dominant(m);

		strbuf_addf(f, "| kind | MiB | share | mappings |\n|---|---:|---:|---:|\n");
		for (k = 0; k < AN_MEM_KINDS; k++)
			strbuf_addf(f, "| %s | %.1f | %.1f%% | %" PRIu64 " |\n", analyze_mem_kind_label(k),
				(double)m->rss_kb[k] / 1024.0, pct(m->rss_kb[k], m->total_kb), m->mappings[k]);
		strbuf_addf(f, "| **total** | %.1f | | %" PRIu64 " |\n\n", (double)m->total_kb / 1024.0, m->nmappings);
		md_runtime_memory(f, r);
		if (m->vmrss_kb)
			strbuf_addf(f, "VmRSS is %.1f MiB (the total is %.2f%% off).\n", (double)m->vmrss_kb / 1024.0,
				100.0 * fabs((double)m->total_kb - (double)m->vmrss_kb) / (double)m->vmrss_kb);
		if (m->cgroup_max > 0)
			strbuf_addf(f, "cgroup: %.1f MiB used of a %.1f MiB limit.\n",
				(double)m->cgroup_current / 1048576.0, (double)m->cgroup_max / 1048576.0);
		else if (m->cgroup_max == -1)
			strbuf_addf(f, "cgroup: %.1f MiB used, no memory limit.\n",
				(double)m->cgroup_current / 1048576.0);
		md_mem_growth(f, r);
		strbuf_addf(f, "\nMost resident memory is %s: %.1f of %.1f MiB.\n",
			d == AN_MEM_NATIVE ? "native, outside the GC heap (malloc heap and other anonymous memory)" :
			analyze_mem_kind_label(d),
			(double)(d == AN_MEM_NATIVE ? m->rss_kb[AN_MEM_NATIVE] + m->rss_kb[AN_MEM_OTHER_ANON] :
				 m->rss_kb[d]) / 1024.0, (double)m->total_kb / 1024.0);
	}
}

int analyze_report_md(struct an_report *r, struct strbuf *f)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	char next[256];
	size_t i;

	strbuf_addf(f, "# clrtap analyze %s\n\n", r->a->name);
	if (r->file)
		strbuf_addf(f, "- source: %s\n", ct_term_safe(r->file));
	else
		strbuf_addf(f, "- target: pid %d\n", (int)r->pid);
	strbuf_addf(f, "- measured: %s\n", measured(r));
	if (r->have_mem)
		strbuf_addf(f, "- for: %.1f s (smaps read every %.2f s or more: %u readings, %.1f ms each)\n",
			    r->duration_s, r->period_s, r->nread, r->nread ? r->read_s * 1000 / r->nread : 0);
	else if (res)
		strbuf_addf(f, "- for: %.1f s (%" PRIu64 " events)\n", r->duration_s, res->events);
	else
		strbuf_addf(f, "- for: %s\n", r->nsnap ? "3 snapshots over the duration" :
			r->heap ? "one snapshot" : "one snapshot, now");
	strbuf_addf(f, "\n## Result\n\n");
	md_body(f, r);
	strbuf_addf(f, "\n## Not seen\n\n");
	for (i = 0; i < r->nnotes; i++)
		strbuf_addf(f, "- %s\n", r->notes[i]);
	next_cmd(r, next, sizeof(next));
	strbuf_addf(f, "\n## Next\n\n- %s\n", next);
	return strbuf_error(f);
}

/* ----- JSON ----- */

static void json_stack(struct ct_json *j, const char *key, const char *const *frames, uint32_t n)
{
	uint32_t i;

	ct_json_kv_arr_begin(j, key);
	for (i = 0; i < n && i < 64; i++)
		ct_json_str(j, frames[i]);
	ct_json_arr_end(j);
}

static void json_dl_thread(struct ct_json *j, const struct an_dl_thread *t)
{
	ct_json_obj_begin(j);
	ct_json_kv_u64(j, "tid", t->tid);
	if (t->name[0])
		ct_json_kv_str(j, "name", t->name);
	else
		ct_json_kv_null(j, "name");
	ct_json_kv_u64(j, "lock_id", t->lock_id);
	ct_json_kv_u64(j, "object_id", t->object_id);
	ct_json_kv_u64(j, "held_by", t->owner);
	ct_json_kv_bool(j, "native_lock", t->native);
	if (t->site)
		ct_json_kv_str(j, "site", t->site);
	else
		ct_json_kv_null(j, "site");
	json_stack(j, "stack", t->frames, t->nframes);
	ct_json_obj_end(j);
}

static void json_locks(struct ct_json *j, struct an_report *r)
{
	const struct an_lock_stat *ls;
	size_t i, n = analyze_locks_by_wait(r->s->locks, &ls);

	ct_json_kv_arr_begin(j, "locks");
	for (i = 0; i < n && i < r->top; i++) {
		const char *frames[AN_DL_FRAMES], *site;
		uint32_t more, nf = analyze_frames(r->s, ls[i].ips, ls[i].nips, frames, AN_DL_FRAMES, &site, &more);

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "lock_id", ls[i].lock_id);
		ct_json_kv_u64(j, "object_id", ls[i].object_id);
		ct_json_kv_u64(j, "waits", ls[i].waits);
		ct_json_kv_u64(j, "timed", ls[i].timed);
		ct_json_kv_double(j, "total_ms", (double)ls[i].total_ns / 1e6);
		ct_json_kv_double(j, "max_ms", (double)ls[i].max_ns / 1e6);
		if (site)
			ct_json_kv_str(j, "site", site);
		else
			ct_json_kv_null(j, "site");
		json_stack(j, "stack", frames, nf);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

static void json_mem_growth(struct ct_json *j, const struct an_report *r)
{
	const struct an_mem_growth *g = &r->mgrowth;
	size_t i;
	int k;

	ct_json_kv_obj_begin(j, "growth");
	ct_json_kv_double(j, "span_s", g->span_s);
	ct_json_kv_u64(j, "readings", g->points);
	ct_json_kv_double(j, "period_s", r->period_s);
	ct_json_kv_u64(j, "smaps_reads", r->nread);
	ct_json_kv_double(j, "smaps_read_ms_mean", r->nread ? r->read_s * 1000 / r->nread : 0);
	if (g->grew >= 0)
		ct_json_kv_str(j, "grew", analyze_mem_growth_name(g->grew));
	else
		ct_json_kv_null(j, "grew");
	ct_json_kv_arr_begin(j, "kinds");
	for (k = 0; g->points >= 2 && k <= AN_MEM_GREW_NATIVE; k++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "kind", k == AN_MEM_GREW_NATIVE ? "native" : analyze_mem_kind_name((enum an_mem_kind)k));
		ct_json_kv_u64(j, "start_bytes", g->start_kb[k] * 1024);
		ct_json_kv_u64(j, "end_bytes", g->end_kb[k] * 1024);
		ct_json_kv_i64(j, "growth_bytes", g->delta_kb[k] * 1024);
		ct_json_kv_double(j, "rate_bytes_per_s", g->rate_kb_s[k] * 1024);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_obj_begin(j, "gc_generations");
	for (k = 0; k < 5; k++) {
		if (!r->runtime_mem || r->s->gc_gen_first[k] < 0 || r->s->gc_gen[k] < 0) {
			ct_json_kv_null(j, gen_names[k]);
			continue;
		}
		ct_json_kv_obj_begin(j, gen_names[k]);
		ct_json_kv_u64(j, "first_bytes", (uint64_t)r->s->gc_gen_first[k]);
		ct_json_kv_u64(j, "last_bytes", (uint64_t)r->s->gc_gen[k]);
		ct_json_obj_end(j);
	}
	ct_json_obj_end(j);
	ct_json_kv_i64(j, "total_growth_bytes", g->total_delta_kb * 1024);
	ct_json_kv_double(j, "total_rate_bytes_per_s", g->total_rate_kb_s * 1024);
	ct_json_kv_arr_begin(j, "series");
	for (i = 0; i < r->series.n; i++) {
		const struct an_mem_point *p = &r->series.p[i];

		ct_json_obj_begin(j);
		ct_json_kv_double(j, "t_s", p->t_s);
		for (k = 0; k < AN_MEM_KINDS; k++)
			ct_json_kv_u64(j, analyze_mem_kind_name((enum an_mem_kind)k), p->rss_kb[k] * 1024);
		ct_json_kv_u64(j, "total", p->total_kb * 1024);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

static void json_body(struct ct_json *j, struct an_report *r)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	const char *n = r->a->name;
	size_t i;

	ct_json_kv_obj_begin(j, "result");
	if (!strcmp(n, "exceptions")) {
		ct_json_kv_u64(j, "total", res->exceptions_total);
		/* first throws and rethrows (an await passing the same exception on) apart */
		ct_json_kv_u64(j, "first", res->exceptions_first);
		ct_json_kv_u64(j, "rethrown", res->exceptions_rethrown);
		ct_json_kv_arr_begin(j, "types");
		for (i = 0; i < res->nexc_types && i < r->top; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "type", res->exc_types[i].type);
			ct_json_kv_u64(j, "count", res->exc_types[i].count);
			ct_json_kv_u64(j, "first", res->exc_types[i].first);
			ct_json_kv_u64(j, "rethrown", res->exc_types[i].rethrown);
			ct_json_kv_u64(j, "messages", res->exc_types[i].messages);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		ct_json_kv_arr_begin(j, "groups");
		for (i = 0; i < res->nexceptions && i < r->top; i++) {
			const struct ts_exception *e = &res->exceptions[i];

			ct_json_obj_begin(j);
			ct_json_kv_str(j, "type", e->type);
			ct_json_kv_str(j, "message", e->message);
			ct_json_kv_u64(j, "count", e->count);
			ct_json_kv_u64(j, "first", e->first);
			ct_json_kv_u64(j, "rethrown", e->rethrown);
			if (e->thrown_at)
				ct_json_kv_str(j, "thrown_at", e->thrown_at);
			else
				ct_json_kv_null(j, "thrown_at");
			json_stack(j, "stack", e->frames, e->nframes);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "allocations")) {
		ct_json_kv_u64(j, "bytes", res->alloc_bytes);
		ct_json_kv_u64(j, "ticks", res->alloc_samples);
		ct_json_kv_arr_begin(j, "types");
		for (i = 0; i < res->nallocs && i < r->top; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "type", res->allocs[i].type);
			ct_json_kv_u64(j, "bytes", res->allocs[i].bytes);
			ct_json_kv_u64(j, "ticks", res->allocs[i].samples);
			ct_json_kv_double(j, "share_pct", pct(res->allocs[i].bytes, res->alloc_bytes));
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "pauses")) {
		const struct ts_gc *g = &res->gc;

		ct_json_kv_u64(j, "gcs", g->count);
		ct_json_kv_arr_begin(j, "by_gen");
		for (i = 0; i < TS_GC_GENS; i++)
			ct_json_u64(j, g->by_gen[i]);
		ct_json_arr_end(j);
		ct_json_kv_u64(j, "induced", g->induced_by_gen[0] + g->induced_by_gen[1] + g->induced_by_gen[2]);
		ct_json_kv_u64(j, "background", g->background);
		ct_json_kv_u64(j, "pauses", g->pauses);
		if (g->pause_source)
			ct_json_kv_str(j, "pause_source", g->pause_source);
		else
			ct_json_kv_null(j, "pause_source");
		ct_json_kv_double(j, "p50_ms", (double)g->pause_p50_ns / 1e6);
		ct_json_kv_double(j, "p95_ms", (double)g->pause_p95_ns / 1e6);
		ct_json_kv_double(j, "p99_ms", (double)g->pause_p99_ns / 1e6);
		ct_json_kv_double(j, "max_ms", (double)g->pause_max_ns / 1e6);
		ct_json_kv_double(j, "total_ms", (double)g->pause_total_ns / 1e6);
		ct_json_kv_double(j, "paused_pct", g->paused_pct);
	} else if (!strcmp(n, "contention")) {
		ct_json_kv_u64(j, "waits", res->contention.starts);
		ct_json_kv_u64(j, "timed", res->contention.timed);
		ct_json_kv_double(j, "total_ms", (double)res->contention.total_ns / 1e6);
		ct_json_kv_double(j, "max_ms", (double)res->contention.max_ns / 1e6);
		ct_json_kv_arr_begin(j, "sites");
		for (i = 0; i < res->ncontention_sites && i < r->top; i++) {
			const struct ts_contention_site *s = &res->contention_sites[i];

			ct_json_obj_begin(j);
			ct_json_kv_u64(j, "waits", s->count);
			ct_json_kv_double(j, "total_ms", (double)s->total_ns / 1e6);
			ct_json_kv_double(j, "max_ms", (double)s->max_ns / 1e6);
			json_stack(j, "stack", s->frames, s->nframes);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		json_locks(j, r);
	} else if (!strcmp(n, "deadlock")) {
		const struct an_deadlock *d = r->dl;
		size_t c, k;

		ct_json_kv_u64(j, "deadlocks", d->ncycles);
		ct_json_kv_u64(j, "waits", d->starts);
		ct_json_kv_u64(j, "waits_with_owner", d->starts_v2);
		ct_json_kv_u64(j, "waits_ended", d->stops);
		ct_json_kv_arr_begin(j, "cycles");
		for (c = 0; c < d->ncycles; c++) {
			ct_json_obj_begin(j);
			ct_json_kv_arr_begin(j, "threads");
			for (k = 0; k < d->cycles[c].n; k++)
				json_dl_thread(j, &d->cycles[c].t[k]);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		ct_json_kv_u64(j, "still_waiting", d->nwaiting);
		ct_json_kv_arr_begin(j, "waiting");
		for (k = 0; k < d->nwaiting && k < ARRAY_SIZE(d->waiting); k++)
			json_dl_thread(j, &d->waiting[k]);
		ct_json_arr_end(j);
		ct_json_kv_bool(j, "suspected", !d->ncycles && d->blocked_threads >= 2);
		ct_json_kv_arr_begin(j, "blocked_before");
		for (k = 0; k < d->nblocked; k++) {
			uint32_t x;

			ct_json_obj_begin(j);
			ct_json_kv_str(j, "method", d->blocked[k].method);
			ct_json_kv_str(j, "enter", d->blocked[k].call);
			ct_json_kv_u64(j, "threads", d->blocked[k].threads);
			ct_json_kv_arr_begin(j, "tids");
			for (x = 0; x < d->blocked[k].threads && x < ARRAY_SIZE(d->blocked[k].tids); x++)
				ct_json_u64(j, d->blocked[k].tids[x]);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "hotpaths")) {
		struct flame_top *ft = NULL;
		size_t nt = 0;
		uint64_t total = res->flame ? flame_total(res->flame) : 0;
		char why[384];

		analyze_cpu_basis_why(r->s, why, sizeof(why));
		ct_json_kv_u64(j, "samples", total);
		ct_json_kv_bool(j, "too_few_samples", total < HOTPATHS_FEW_SAMPLES);
		ct_json_kv_str(j, "basis", analyze_cpu_basis(r->s));
		ct_json_kv_str(j, "basis_why", why);
		if (r->s->tc) {
			ct_json_kv_str(j, "thread_cpu_source", taskcpu_source_name(r->s->oncpu.source));
			ct_json_kv_u64(j, "thread_cpu_interval_ms", r->s->oncpu.interval_ms);
			ct_json_kv_u64(j, "samples_waiting", r->s->oncpu.waiting);
			ct_json_kv_u64(j, "samples_leaving_managed_code", res->samples.left_out);
			ct_json_kv_u64(j, "samples_state_unknown", r->s->oncpu.unknown);
		}
		ct_json_kv_arr_begin(j, "methods");
		if (total && !flame_top(res->flame, &ft, &nt))
			for (i = 0; i < nt && i < r->top && ft[i].self; i++) {
				ct_json_obj_begin(j);
				ct_json_kv_str(j, "method", ft[i].name);
				ct_json_kv_u64(j, "self", ft[i].self);
				ct_json_kv_double(j, "self_pct", pct(ft[i].self, total));
				ct_json_kv_u64(j, "total", ft[i].total);
				ct_json_kv_double(j, "total_pct", pct(ft[i].total, total));
				ct_json_obj_end(j);
			}
		ct_json_arr_end(j);
		free(ft);
	} else if (!strcmp(n, "stacks")) {
		struct an_stack_group g[MAX_GROUPS];
		int ng = analyze_stack_groups(r->s, g, MAX_GROUPS, false);

		ct_json_kv_u64(j, "threads", stacks_sampler_nthreads(r->s->ss));
		ct_json_kv_arr_begin(j, "groups");
		for (i = 0; ng > 0 && i < (size_t)ng; i++) {
			uint32_t k;

			ct_json_obj_begin(j);
			ct_json_kv_str(j, "method", g[i].method);
			ct_json_kv_u64(j, "threads", g[i].threads);
			ct_json_kv_arr_begin(j, "tids");
			for (k = 0; k < g[i].threads && k < ARRAY_SIZE(g[i].tids); k++)
				ct_json_u64(j, g[i].tids[k]);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "leaks")) {
		unsigned k;

		ct_json_kv_u64(j, "snapshots", r->nsnap);
		ct_json_kv_arr_begin(j, "growing");
		for (i = 0; i < r->leaks.n && i < r->top; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "type", r->leaks.gr[i].name);
			ct_json_kv_arr_begin(j, "count");
			for (k = 0; k < r->nsnap; k++)
				ct_json_u64(j, r->leaks.gr[i].count[k]);
			ct_json_arr_end(j);
			ct_json_kv_arr_begin(j, "retained_bytes");
			for (k = 0; k < r->nsnap; k++)
				ct_json_u64(j, r->leaks.gr[i].retained[k]);
			ct_json_arr_end(j);
			ct_json_kv_str(j, "held_by", r->leaks.holder[i] >= 0 ? r->leaks.gr[r->leaks.holder[i]].name : NULL);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "threadpool")) {
		struct an_stack_group g[MAX_GROUPS];
		uint32_t workers;
		int ng;
		bool st = starving(r, g, &ng, &workers);

		ct_json_kv_bool(j, "starvation", st);
		ct_json_kv_double(j, "queue_max", r->s->tp_queue_max);
		ct_json_kv_double(j, "queue_last", r->s->tp_queue_last);
		ct_json_kv_double(j, "threads_max", r->s->tp_threads_max);
		ct_json_kv_u64(j, "workers_sampled", workers);
		ct_json_kv_arr_begin(j, "blocked");
		for (i = 0; ng > 0 && i < (size_t)ng && i < r->top; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "method", g[i].method);
			if (g[i].call)
				ct_json_kv_str(j, "calling", g[i].call);
			else
				ct_json_kv_null(j, "calling");
			ct_json_kv_u64(j, "workers", g[i].threads);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "survivors")) {
		ct_json_kv_u64(j, "objects", r->ha->reachable);
		ct_json_kv_u64(j, "reachable_bytes", heap_graph_bytes(r->heap) - r->ha->unreachable_bytes);
		ct_json_kv_u64(j, "roots", r->heap->nroots);
		ct_json_kv_arr_begin(j, "types");
		for (i = 0; i < r->nts && i < r->top; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "type", r->ts[i].name);
			ct_json_kv_u64(j, "count", r->ts[i].count);
			ct_json_kv_u64(j, "shallow_bytes", r->ts[i].shallow);
			ct_json_kv_u64(j, "retained_bytes", r->ts[i].retained);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	} else if (!strcmp(n, "strings")) {
		const struct heap_graph *g = r->heap;

		ct_json_kv_u64(j, "strings", g->strings.strings);
		ct_json_kv_u64(j, "compared", g->strings.compared);
		ct_json_kv_u64(j, "not_compared", g->strings.moved + g->strings.unreadable + g->strings.too_long);
		ct_json_kv_u64(j, "wasted_bytes", g->strings.wasted);
		ct_json_kv_arr_begin(j, "duplicates");
		for (i = 0; i < g->ndups && i < r->top; i++)
			heap_dupstr_json(j, &g->dups[i]); /* the one duplicated-string shape */
		ct_json_arr_end(j);
	} else if (!strcmp(n, "memory")) {
		const struct an_memory *m = &r->mem;
		enum an_mem_kind k, d = analyze_memory_dominant(m);

		ct_json_kv_arr_begin(j, "kinds");
		for (k = 0; k < AN_MEM_KINDS; k++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "kind", analyze_mem_kind_name(k));
			ct_json_kv_str(j, "label", analyze_mem_kind_label(k));
			ct_json_kv_u64(j, "rss_bytes", m->rss_kb[k] * 1024);
			ct_json_kv_u64(j, "mappings", m->mappings[k]);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		ct_json_kv_obj_begin(j, "code_heaps");
		ct_json_kv_u64(j, "exec_bytes", m->code_exec_kb * 1024);
		ct_json_kv_u64(j, "writable_bytes", m->code_rw_kb * 1024);
		if (m->code_jit_known) {
			ct_json_kv_u64(j, "jit_views_bytes", m->code_jit_kb * 1024);
			ct_json_kv_u64(j, "jit_methods", m->jit_methods);
			ct_json_kv_u64(j, "jit_code_bytes", m->jit_bytes);
		} else {
			ct_json_kv_null(j, "jit_views_bytes");
			ct_json_kv_null(j, "jit_methods");
			ct_json_kv_null(j, "jit_code_bytes");
		}
		ct_json_obj_end(j);
		ct_json_kv_obj_begin(j, "gc_generations");
		for (k = 0; k < 5; k++) {
			if (m->gc_gen[k] >= 0)
				ct_json_kv_u64(j, gen_names[k], (uint64_t)m->gc_gen[k]);
			else
				ct_json_kv_null(j, gen_names[k]);
		}
		ct_json_kv_u64(j, "excess_moved_to_other_anon", m->gc_excess_kb * 1024);
		if (m->gc_committed >= 0)
			ct_json_kv_u64(j, "committed", (uint64_t)m->gc_committed);
		else
			ct_json_kv_null(j, "committed");
		ct_json_obj_end(j);
		ct_json_kv_u64(j, "total_bytes", m->total_kb * 1024);
		ct_json_kv_u64(j, "vmrss_bytes", m->vmrss_kb * 1024);
		ct_json_kv_bool(j, "truncated", m->truncated);
		if (m->cgroup_max >= 0)
			ct_json_kv_i64(j, "cgroup_max_bytes", m->cgroup_max);
		else
			ct_json_kv_null(j, "cgroup_max_bytes");
		if (m->cgroup_current >= 0)
			ct_json_kv_i64(j, "cgroup_current_bytes", m->cgroup_current);
		else
			ct_json_kv_null(j, "cgroup_current_bytes");
		ct_json_kv_str(j, "mostly", d == AN_MEM_NATIVE ? "native" : analyze_mem_kind_name(d));
		json_mem_growth(j, r);
	}
	ct_json_obj_end(j);
}

int analyze_report_json(struct an_report *r, struct ct_json *j)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	char next[256];
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_str(j, "analyzer", r->a->name);
	if (r->file)
		ct_json_kv_str(j, "file", r->file);
	else
		ct_json_kv_i64(j, "pid", r->pid);
	ct_json_kv_str(j, "measured", measured(r));
	ct_json_kv_double(j, "duration_s", r->duration_s);
	if (res) {
		ct_json_kv_u64(j, "events", res->events);
		ct_json_kv_u64(j, "dropped_events", res->dropped_events);
		ct_json_kv_bool(j, "time_ordered", !res->order_forced);
	}
	ct_json_kv_bool(j, "partial", r->partial[0] != 0);
	json_body(j, r);
	ct_json_kv_arr_begin(j, "not_seen");
	for (i = 0; i < r->nnotes; i++)
		ct_json_str(j, r->notes[i]);
	ct_json_arr_end(j);
	next_cmd(r, next, sizeof(next));
	ct_json_kv_arr_begin(j, "next");
	ct_json_str(j, next);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	return j->err;
}

/* The HTML page: hotpaths as lib/flame's flame graph page with the report as
 * its notes (one flame graph implementation), the others from the Markdown. */
int analyze_report_html(struct an_report *r, int fd)
{
	const struct ts_result *res = r->s ? tracestats_result(r->s->ts) : NULL;
	struct strbuf md = STRBUF_INIT, sb = STRBUF_INIT;
	char title[64];
	int err;

	err = analyze_report_md(r, &md);
	snprintf(title, sizeof(title), "clrtap analyze %s", r->a->name);
	if (err) {
		/* nothing */
	} else if (!strcmp(r->a->name, "hotpaths") && res && res->flame && flame_total(res->flame)) {
		struct flame_opts fo = { .title = title, .notes = md.buf };

		err = flame_write(res->flame, FLAME_HTML, fd, &fo);
	} else {
		err = analyze_html_from_md(md.buf, md.len, title, &sb);
		if (!err && r->have_mem && r->series.n >= 2) {
			/* the chart before the end of the body */
			static const char tail[] = "</body></html>\n";
			struct strbuf chart = STRBUF_INIT;

			if (sb.len >= sizeof(tail) - 1 && !memcmp(sb.buf + sb.len - (sizeof(tail) - 1), tail, sizeof(tail) - 1)) {
				sb.len -= sizeof(tail) - 1;
				sb.buf[sb.len] = 0;
				err = analyze_mem_svg(&r->series, &chart);
				if (!err)
					strbuf_add(&sb, chart.buf, chart.len);
				strbuf_addstr(&sb, tail);
				err = err ? err : strbuf_error(&sb);
			}
			strbuf_release(&chart);
		}
		if (!err)
			err = ct_write_all(fd, sb.buf, sb.len);
	}
	strbuf_release(&sb);
	strbuf_release(&md);
	return err;
}

static int find_deadlocks(struct an_report *r)
{
	if (strcmp(r->a->name, "deadlock"))
		return 0;
	r->dl = malloc(sizeof(*r->dl));
	if (!r->dl || analyze_deadlock_find(r->s, r->file ? 0 : r->pid, r->dl))
		return fail(r, AN_FAIL_ERROR, -ENOMEM, "out of memory");
	return 0;
}


/* ----- the workflow ----- */

int analyze_report_new(struct an_report **out, const struct an_analyzer *a, unsigned top)
{
	struct an_report *r = calloc(1, sizeof(*r));
	int err = 0;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->a = a;
	r->top = top ? top : 10;
	if (a->need & ~AN_NEED_LIVE_ONLY)
		err = analyze_session_new(&r->s, a->need);
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

int analyze_report_lines(struct an_report *r, pid_t pid)
{
	struct srcline *sl;
	int err;

	if (!r->s)
		return 0;
	err = pid > 0 ? srcline_new_proc(pid, &sl) : srcline_new(NULL, &sl);
	if (!err)
		tracestats_set_lines(r->s->ts, sl);
	return err;
}

void analyze_report_free(struct an_report *r)
{
	if (!r)
		return;
	analyze_session_free(r->s);
	free(r->ts);
	heap_analysis_free(r->ha);
	heap_graph_free(r->heap);
	heap_leaks_release(&r->leaks);
	heap_series_release(&r->series_h);
	analyze_mem_series_release(&r->series);
	free(r->dl);
	free(r);
}

enum an_fail analyze_report_failure(const struct an_report *r, int *err, const char **msg)
{
	*err = r->err;
	*msg = r->msg;
	return r->fail;
}

const char *analyze_report_partial(const struct an_report *r)
{
	return r->partial[0] ? r->partial : NULL;
}

int analyze_report_file(struct an_report *r, int fd, const char *name)
{
	const struct ts_result *res;
	int err;

	r->file = name;
	if (!r->s || (r->a->need & AN_NEED_LIVE_ONLY))
		return fail(r, AN_FAIL_USAGE, -EINVAL, "'%s' reads a live process; it cannot run on a file", r->a->name);
	err = analyze_session_file(r->s, fd);
	if (!err)
		err = analyze_session_finish(r->s);
	if (err)
		return fail(r, AN_FAIL_ERROR, err, "cannot read %s: %s", name, strerror(-err));
	res = tracestats_result(r->s->ts);
	if (r->s->ts_read_err) {
		if (!res->events)
			return fail(r, AN_FAIL_BAD_INPUT, r->s->ts_read_err, "%s is not a readable nettrace file (%s)", name,
				    res->error.msg ? res->error.msg : strerror(-r->s->ts_read_err));
		snprintf(r->partial, sizeof(r->partial),
			 "the file is damaged at byte %" PRIu64 ": only the events before it were read",
			 res->error.offset);
	}
	r->duration_s = (double)res->duration_ns / 1e9;
	err = find_deadlocks(r);
	if (!err)
		limits(r);
	return err;
}

static double since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int run_heap(struct an_report *r, const struct ipc_endpoint *ep, int64_t duration_ms,
		    volatile sig_atomic_t *stop)
{
	struct heap_collect_opts ho = { 0 };
	struct heap_collect_result hr = { 0 };
	struct timespec t0;
	int err;

	ho.ep = ep;
	ho.pid = r->pid;
	ho.buffer_mb = 256;
	ho.timeout_ms = 30000;
	ho.limits.max_nodes = HEAP_MAX_NODES;
	ho.limits.max_edges = HEAP_MAX_EDGES;
	ho.stop = stop;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (r->a->need & AN_NEED_HEAPS) {
		ho.pid = 0; /* no string contents needed */
		err = analyze_leaks_run(&ho, 3, duration_ms / 2, &r->series_h, &r->leaks, hr.msg, sizeof(hr.msg));
		r->nsnap = (unsigned)r->series_h.n;
		if (!err && r->nsnap < 3)
			return fail(r, AN_FAIL_INTERRUPTED, -EINTR, "interrupted after %u snapshots: nothing to compare",
				    r->nsnap);
	} else {
		if (strcmp(r->a->name, "strings"))
			ho.pid = 0; /* string contents only for strings */
		err = heap_collect(&ho, &r->heap, &hr);
	}
	if (err)
		return fail(r, hr.target_ended ? AN_FAIL_PARTIAL : AN_FAIL_ERRNO, err,
			    "cannot take the heap snapshot: %s", hr.msg[0] ? hr.msg : strerror(-err));
	r->duration_s = since(&t0);
	if (r->heap && !strcmp(r->a->name, "survivors")) {
		if (heap_analyze(r->heap, &r->ha) || heap_typestats(r->heap, r->ha, &r->ts, &r->nts))
			return fail(r, AN_FAIL_ERROR, -ENOMEM, "out of memory");
		if (r->nts)
			qsort(r->ts, r->nts, sizeof(*r->ts), by_retained);
	}
	limits(r);
	return 0;
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Sleeps until the monotonic time until (or a stop); false when stopped. */
static bool sleep_until(double until, volatile sig_atomic_t *stop)
{
	double left;

	while (!(stop && *stop) && (left = until - mono_s()) > 0) {
		long ns = (long)(CT_MIN(left, 0.1) * 1e9);

		nanosleep(&(struct timespec){ 0, ns }, NULL);
	}
	return !(stop && *stop);
}

static int mem_read_fail(struct an_report *r, int err)
{
	return fail(r, err == -ENOENT || err == -ESRCH ? AN_FAIL_NO_PROCESS : AN_FAIL_ERRNO, err,
		    "cannot read the memory map of pid %d: %s", (int)r->pid, strerror(-err));
}

/* memory: the smaps readings, on a thread of their own while the session runs */
struct mem_reader {
	struct an_report *r;
	volatile sig_atomic_t done; /* set by the session's thread: stop reading */
	int err;
};

static void *mem_reader_main(void *arg)
{
	struct mem_reader *x = arg;
	struct an_report *r = x->r;
	struct an_memory *m = malloc(sizeof(*m));
	double next = mono_s();

	if (!m) {
		x->err = -ENOMEM;
		return NULL;
	}
	while (!x->done) {
		double a = mono_s(), b;

		x->err = analyze_memory_read(r->pid, m);
		if (x->err)
			break;
		b = mono_s();
		r->read_s += b - a;
		r->nread++;
		x->err = analyze_mem_series_add(&r->series, a, m);
		if (x->err)
			break;
		/* the readings take at most 5 % of the time: the kernel's walk
		 * of the page tables grows with the target's resident memory */
		next = CT_MAX(next + r->period_s, b + 19 * (b - a));
		if (!sleep_until(next, &x->done))
			break;
	}
	free(m);
	return NULL;
}

/*
 * memory: smaps now and every period over the duration (0: until stopped)
 * on a thread, while the runtime's session (JIT'd code ranges, the GC's
 * counters every second) runs for the duration; then smaps at the end: the
 * breakdown is that of the end, the series says how each kind moved, the
 * counters' first and last values how each generation did.
 */
static int run_memory(struct an_report *r, const struct ipc_endpoint *ep, int64_t duration_ms,
		      volatile sig_atomic_t *stop)
{
	struct live_session_result res;
	struct mem_reader x = { .r = r };
	double t0 = mono_s();
	pthread_t th;
	char why[512];
	size_t i;
	int err, tries;

	r->period_s = duration_ms > 0 ? CT_MAX(0.25, CT_MIN(1.0, (double)duration_ms / 16000)) : 1.0;
	err = pthread_create(&th, NULL, mem_reader_main, &x);
	if (err)
		return fail(r, AN_FAIL_ERROR, -err, "cannot start the reader of smaps: %s", strerror(err));
	if (r->s) {
		err = analyze_session_live(r->s, ep, duration_ms, stop, &res);
		if (!err && analyze_live_outcome(&res, ep, &err, why, sizeof(why)) == AN_OK &&
		    !analyze_session_finish(r->s))
			r->runtime_mem = true;
		else
			snprintf(r->partial_rt, sizeof(r->partial_rt),
				 "the runtime's view (JIT'd code, generations): %s", err ? why : "no session");
	}
	/* without the session (it failed early), smaps is still read over -d */
	if (duration_ms > 0)
		sleep_until(t0 + (double)duration_ms / 1000, stop);
	else
		while (!(stop && *stop))
			nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	x.done = 1;
	pthread_join(th, NULL);
	if (x.err == -ENOMEM)
		return fail(r, AN_FAIL_ERROR, -ENOMEM, "out of memory");
	if (x.err)
		return mem_read_fail(r, x.err);
	for (tries = 0;; tries++) {
		double a = mono_s();

		err = analyze_memory_read(r->pid, &r->mem);
		if (err)
			return mem_read_fail(r, err);
		r->read_s += mono_s() - a;
		r->nread++;
		/* the series ends before the session's end (its rundown maps
		 * and JITs a little of its own) unless it would be one point */
		r->series_final = r->series.n < 2;
		if (r->series_final && analyze_mem_series_add(&r->series, a, &r->mem))
			return fail(r, AN_FAIL_ERROR, -ENOMEM, "out of memory");
		if (r->runtime_mem)
			analyze_memory_runtime(&r->mem, r->s);
		/* The runtime's own figure checks the layout inference: a GC
		 * heap under half of what the GC says it committed is a map
		 * read while the GC was changing it; read it again. */
		if (tries == 2 || !gc_unrecognized(&r->mem))
			break;
		if (r->series.n == 2 && r->series_final)
			r->series.n--;
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	/* A malloc'd block the kernel merged with the GC's range is moved out
	 * of the GC heap at every point, by the committed bytes of the end
	 * (the GC's commit grows, never below what a point then held). */
	if (r->runtime_mem)
		for (i = 0; i < r->series.n; i++)
			analyze_memory_gc_excess(r->series.p[i].rss_kb, r->mem.gc_committed);
	analyze_mem_growth(&r->series, &r->mgrowth);
	r->mem.growth = &r->mgrowth;
	r->duration_s = mono_s() - t0;
	r->have_mem = true;
	limits(r);
	return 0;
}

int analyze_report_live(struct an_report *r, const struct ipc_endpoint *ep, pid_t pid, int64_t duration_ms,
			volatile sig_atomic_t *stop)
{
	struct live_session_result res;
	struct timespec t0;
	char why[512];
	int err;

	r->pid = pid;
	if (r->a->need & AN_NEED_SMAPS)
		return run_memory(r, ep, duration_ms, stop);
	if (r->a->need & (AN_NEED_HEAP | AN_NEED_HEAPS))
		return run_heap(r, ep, duration_ms, stop);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r->s->oncpu_pid = pid;
	err = analyze_session_live(r->s, ep, duration_ms, stop, &res);
	if (err)
		return fail(r, AN_FAIL_ERROR, err, "cannot run the session: %s", strerror(-err));
	switch (analyze_live_outcome(&res, ep, &err, why, sizeof(why))) {
	case AN_NO_SESSION:
		return fail(r, AN_FAIL_ERRNO, err, "cannot analyze: %s", why);
	case AN_BAD_STREAM:
		return fail(r, AN_FAIL_PROTOCOL, err, "cannot analyze: %s", why);
	case AN_TARGET_GONE:
	case AN_BROKEN:
		snprintf(r->partial, sizeof(r->partial), "%s: the report covers only what came before", why);
		break;
	case AN_OK:
		break;
	}
	err = analyze_session_finish(r->s);
	if (err)
		return fail(r, AN_FAIL_ERROR, err, "cannot summarize: %s", strerror(-err));
	r->duration_s = since(&t0);
	err = find_deadlocks(r);
	if (!err)
		limits(r);
	return err;
}
