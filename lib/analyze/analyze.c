/* SPDX-License-Identifier: MIT */
/*
 * analyze.c - the analyzer table and one session feeding the engines:
 * lib/tracestats (exceptions, GC, allocations, contention, CPU samples),
 * lib/stacks (one stack per thread) and lib/counters (System.Runtime).
 */
#include "common/compat.h"

#include "analyze/analyze.h"
#include "common/log.h"

#define RUNTIME "Microsoft-Windows-DotNETRuntime"
#define SAMPLER "Microsoft-DotNETCore-SampleProfiler"

/* Runtime keywords */
#define KW_GC 0x1ull
#define KW_LOADER 0x8ull
#define KW_JIT 0x10ull
#define KW_CONTENTION 0x4000ull
#define KW_EXCEPTION 0x8000ull

static const struct an_analyzer analyzers[] = {
	{ "allocations", "allocated bytes by type (allocation ticks, about one per 100 KB)",
	  AN_NEED_ALLOC | AN_NEED_GC, "clrtap gcdump report -p %d (what stays alive), clrtap analyze -p %d pauses" },
	{ "contention", "lock contention: waits, wait time and the stacks that waited",
	  AN_NEED_CONTENTION | AN_NEED_LOCKS, "clrtap stacks -p %d (who holds the lock now)" },
	{ "deadlock", "threads waiting on each other's locks: the cycle, each thread's lock, owner and stack",
	  AN_NEED_CONTENTION | AN_NEED_LOCKS | AN_NEED_SAMPLES, "clrtap stacks -p %d (every thread's stack now)" },
	{ "exceptions", "exceptions thrown: type, count, messages and the throwing stack",
	  AN_NEED_EXCEPTIONS, "clrtap trace collect -p %d --profile exceptions -d 30 (keep the raw events)" },
	{ "hotpaths", "CPU: the methods the sampled managed stacks spend their time in",
	  AN_NEED_SAMPLES | AN_NEED_ONCPU, "clrtap profile -p %d -d 10 -o cpu.html (a flame graph)" },
	{ "leaks", "types whose count and retained bytes grow across 3 heap snapshots over -d",
	  AN_NEED_HEAPS, "clrtap gcdump watch -p %d (more snapshots, with retention paths)" },
	{ "memory", "resident memory by what holds it (smaps, the runtime's JIT code ranges and GC counters), with the cgroup limit",
	  AN_NEED_SMAPS | AN_NEED_CODE | AN_NEED_COUNTERS,
	  "clrtap gcdump report -p %d (GC heap by type), clrtap counters -p %d" },
	{ "pauses", "GC pauses: count, reasons, generations, p50/p95/p99/max",
	  AN_NEED_GC, "clrtap analyze -p %d allocations (what makes the GCs)" },
	{ "stacks", "every thread's managed stack, threads grouped by method",
	  AN_NEED_SAMPLES, "clrtap stacks -p %d (the merged tree)" },
	{ "strings", "duplicated strings on the GC heap: value, copies, wasted bytes",
	  AN_NEED_HEAP, "clrtap gcdump collect -p %d -o heap.gcdump, then clrtap gcdump report heap.gcdump --path System.String" },
	{ "survivors", "what survives a full GC: types by retained bytes (dominator tree), with counts",
	  AN_NEED_HEAP, "clrtap gcdump collect -p %d -o heap.gcdump, then clrtap gcdump report heap.gcdump --path TYPE (retention paths)" },
	{ "threadpool", "thread-pool starvation: queue length, threads, blocked workers and the blocking call",
	  AN_NEED_COUNTERS | AN_NEED_SAMPLES, "clrtap stacks -p %d (every worker's stack), clrtap counters -p %d" },
};

const struct an_analyzer *analyze_analyzer_at(size_t i)
{
	return i < ARRAY_SIZE(analyzers) ? &analyzers[i] : NULL;
}

const struct an_analyzer *analyze_analyzer_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(analyzers); i++)
		if (!strcmp(analyzers[i].name, name))
			return &analyzers[i];
	return NULL;
}

/* On-CPU (the filter ran): a stack caught switching out of managed code
 * (a blocking wait, a P/Invoke's stub) is not managed code running. */
static bool skip_not_running(void *ctx, const char *const *names, size_t n)
{
	const struct an_session *s = ctx;

	return s->tc && nt_stack_waits(names, n);
}

int analyze_session_new(struct an_session **out, unsigned need)
{
	struct an_session *s = calloc(1, sizeof(*s));
	struct ts_limits lim;
	int err, k;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->need = need;
	s->cpu_max = s->tp_queue_max = s->tp_threads_max = -1;
	s->working_set_mb = s->gc_heap_mb = -1;
	s->gc_gen[0] = s->gc_gen[1] = s->gc_gen[2] = s->gc_gen[3] = s->gc_gen[4] = -1;
	for (k = 0; k < 5; k++)
		s->gc_gen_first[k] = -1;
	s->gc_committed_mb = -1;
	ts_limits_default(&lim);
	if (need & AN_NEED_ONCPU) {
		lim.flame_skip = skip_not_running;
		lim.flame_skip_ctx = s;
	}
	err = tracestats_new(&s->ts, &lim);
	if (!err && (need & (AN_NEED_SAMPLES | AN_NEED_LOCKS)))
		err = stacks_sampler_new(&s->ss); /* LOCKS: its method table names the wait stacks */
	if (!err && (need & AN_NEED_COUNTERS))
		err = counters_decoder_new(&s->cd, NULL);
	if (!err && (need & AN_NEED_LOCKS))
		err = analyze_locks_new(&s->locks);
	if (err) {
		analyze_session_free(s);
		return err;
	}
	*out = s;
	return 0;
}

void analyze_session_free(struct an_session *s)
{
	if (!s)
		return;
	taskcpu_free(s->tc);
	tracestats_free(s->ts);
	stacks_sampler_free(s->ss);
	counters_decoder_free(s->cd);
	analyze_locks_free(s->locks);
	free(s->code);
	counters_table_release(&s->counters);
	free(s);
}

int analyze_session_config(unsigned need, struct ipc_provider *provs, size_t *n,
			   struct ipc_trace_config *cfg)
{
	uint64_t kw = KW_LOADER | KW_JIT;
	uint32_t level = 4;

	*n = 0;
	if (need & (AN_NEED_GC | AN_NEED_ALLOC))
		kw |= KW_GC;
	if (need & AN_NEED_ALLOC)
		level = 5; /* AllocationTick is verbose */
	if (need & AN_NEED_EXCEPTIONS)
		kw |= KW_EXCEPTION;
	if (need & (AN_NEED_CONTENTION | AN_NEED_LOCKS))
		kw |= KW_CONTENTION;
	provs[(*n)++] = (struct ipc_provider){ RUNTIME, kw, level, NULL };
	if (need & AN_NEED_SAMPLES)
		provs[(*n)++] = (struct ipc_provider){ SAMPLER, 0, 4, NULL };
	if (need & AN_NEED_COUNTERS)
		provs[(*n)++] = (struct ipc_provider){ "System.Runtime", 0, 4, "EventCounterIntervalSec=1" };
	memset(cfg, 0, sizeof(*cfg));
	cfg->providers = provs;
	cfg->nproviders = *n;
	cfg->buffer_mb = 64;
	cfg->rundown = true; /* method names for the stacks */
	cfg->stackwalk = true;
	return 0;
}

static void max_of(double *m, double v)
{
	if (v > *m)
		*m = v;
}

/* 0..4 for gen-0/1/2-size, loh-size, poh-size; -1 for any other counter */
static int gen_index(const char *name)
{
	static const char *const gens[5] = { "gen-0-size", "gen-1-size", "gen-2-size", "loh-size", "poh-size" };
	int k;

	for (k = 0; k < 5; k++)
		if (!strcmp(name, gens[k]))
			return k;
	return -1;
}

static int on_value(void *ctx, const struct counters_value *v)
{
	struct an_session *s = ctx;
	int err, g;

	s->counter_values++;
	err = counters_table_update(&s->counters, v);
	if (err && err != -E2BIG)
		return err;
	if (v->meter || strcmp(v->source, "System.Runtime"))
		return 0;
	if (!strcmp(v->name, "cpu-usage")) {
		max_of(&s->cpu_max, v->value);
		s->cpu_sum += v->value;
		s->cpu_n++;
	}
	else if (!strcmp(v->name, "threadpool-queue-length")) {
		max_of(&s->tp_queue_max, v->value);
		s->tp_queue_last = v->value;
	} else if (!strcmp(v->name, "threadpool-completed-items-count"))
		s->tp_completed += v->value;
	else if (!strcmp(v->name, "threadpool-thread-count"))
		max_of(&s->tp_threads_max, v->value);
	else if (!strcmp(v->name, "working-set"))
		s->working_set_mb = v->value;
	else if (!strcmp(v->name, "gc-heap-size"))
		s->gc_heap_mb = v->value;
	else if ((g = gen_index(v->name)) >= 0) {
		s->gc_gen[g] = v->value;
		if (s->gc_gen_first[g] < 0)
			s->gc_gen_first[g] = v->value;
	} else if (!strcmp(v->name, "gc-committed"))
		s->gc_committed_mb = v->value;
	return 0;
}

/* A JIT'd method's code range (MethodLoadVerbose, rundown MethodDC*Verbose). */
static int add_code(struct an_session *s, const struct nt_event *ev)
{
	const struct nt_metadata *m = ev->meta;
	struct nt_method_load ml;

	if (!m || !((m->provider_kind == NT_PROV_RUNTIME && m->event_id == 143) ||
		    (m->provider_kind == NT_PROV_RUNDOWN && (m->event_id == 143 || m->event_id == 144))))
		return 0;
	if (nt_decode_method_load(ev->payload, ev->payload_len, m->version, ev->pointer_size, &ml) ||
	    !ml.start || !ml.size || !(ml.flags & 0x8))
		return 0; /* MethodFlags 0x8: JIT'd (not ReadyToRun code, which lives in its image) */
	if (s->ncode >= AN_CODE_MAX) {
		s->code_capped = true;
		return 0;
	}
	if (s->ncode == s->code_cap) {
		size_t ncap = s->code_cap ? s->code_cap * 2 : 1024;
		struct an_code_range *nc = realloc(s->code, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		s->code = nc;
		s->code_cap = ncap;
	}
	s->code[s->ncode].start = ml.start;
	s->code[s->ncode++].size = ml.size;
	return 0;
}

/* Whether a sample goes to the flame: a managed sample of a thread that did
 * not run around its time does not (the sampler samples every managed
 * thread, blocked or not, and its "managed" type does not mean running). */
static bool oncpu_keep(struct an_session *s, const struct nt_event *ev)
{
	const struct nt_metadata *m = ev->meta;
	int64_t f = s->qpc_freq > 0 ? s->qpc_freq : 1000000000;
	uint32_t type;
	bool known;

	if (!s->tc || !m || m->provider_kind != NT_PROV_SAMPLEPROFILER || m->event_id != 0 ||
	    nt_decode_thread_sample(ev->payload, ev->payload_len, m->version, ev->pointer_size,
				    &type) || type != NT_SAMPLE_MANAGED)
		return true;
	return taskcpu_keep(s->tc, (uint32_t)ev->thread_id,
			    (uint64_t)((unsigned __int128)(uint64_t)ev->timestamp * 1000000000u /
				       (uint64_t)f),
			    150, &known);
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct an_session *s = ctx;
	static const struct counters_handlers ch = { on_value, NULL };
	int err = 0;

	if (oncpu_keep(s, ev))
		err = tracestats_add_event(s->ts, ev);
	if (!err && s->ss) {
		err = stacks_sampler_event(s->ss, ev);
		if (err == -EFBIG || err == -E2BIG)
			err = 0; /* the sampler keeps what fit */
	}
	if (!err && s->locks)
		err = analyze_locks_event(s->locks, ev);
	if (!err && (s->need & AN_NEED_CODE))
		err = add_code(s, ev);
	if (!err && s->cd) {
		int r = counters_decode(s->cd, ev, &ch, s);

		err = r < 0 && r != -EBADMSG ? r : 0;
	}
	if (err && !s->add_err)
		s->add_err = err;
	return err == -ENOMEM ? err : 0;
}

static void on_open(void *ctx, const struct nt_trace_info *ti)
{
	struct an_session *s = ctx;

	s->qpc_freq = ti->qpc_freq;
	tracestats_set_info(s->ts, ti);
}

int analyze_session_live(struct an_session *s, const struct ipc_endpoint *ep,
			 int64_t duration_ms, volatile sig_atomic_t *stop,
			 struct live_session_result *res)
{
	static const struct nt_handlers h = { .event = on_event };
	struct ipc_provider provs[4];
	struct ipc_trace_config cfg;
	struct live_session_opts o = { 0 };
	size_t n;
	int err;

	analyze_session_config(s->need, provs, &n, &cfg);
	o.ep = ep;
	o.cfg = &cfg;
	o.stop = stop;
	o.duration_ms = duration_ms;
	o.h = &h;
	o.opened = on_open;
	o.ctx = s;
	if ((s->need & AN_NEED_ONCPU) && s->oncpu_pid > 0 && !s->tc)
		s->oncpu_err = taskcpu_start(&s->tc, s->oncpu_pid);
	err = live_session_run(&o, res);
	if (!err)
		tracestats_set_reader_stats(s->ts, &res->stats);
	if (s->tc) {
		taskcpu_stop(s->tc);
		taskcpu_stats(s->tc, &s->oncpu);
	}
	return err;
}

const char *analyze_cpu_basis(const struct an_session *s)
{
	return s->tc ? "on-CPU" : "thread time, waiting included";
}

void analyze_cpu_basis_why(const struct an_session *s, char *buf, size_t len)
{
	uint64_t known = s->oncpu.kept + s->oncpu.waiting;
	uint64_t caught = s->finished ? tracestats_result(s->ts)->samples.left_out : 0;

	if (s->tc)
		snprintf(buf, len,
			 "on-CPU: each thread's CPU time was read from /proc (%s) every %u ms; of %" PRIu64
			 " managed samples, %" PRIu64 " found their thread not running and %" PRIu64
			 " caught it switching out of managed code (a blocking wait of the runtime or "
			 "a P/Invoke's stub at the leaf): both left out; %" PRIu64
			 " of a thread not polled at their time were kept",
			 taskcpu_source_name(s->oncpu.source), s->oncpu.interval_ms,
			 known + s->oncpu.unknown, s->oncpu.waiting, caught, s->oncpu.unknown);
	else if (!s->oncpu_pid)
		snprintf(buf, len, "thread time, waiting included: a trace file cannot tell running "
				   "threads from waiting ones (the sampler samples every managed thread)");
	else
		snprintf(buf, len, "thread time, waiting included: the threads' CPU times could not be "
				   "read from /proc (%s)", strerror(-s->oncpu_err));
}

int analyze_session_file(struct an_session *s, int fd)
{
	static const struct nt_handlers h = { .event = on_event };
	struct nt_reader *r = NULL;
	int err;

	err = nt_reader_new(&r, nt_read_fd, &fd, NULL);
	if (err)
		return err;
	err = nt_reader_open(r);
	if (!err) {
		struct nt_stats st;

		tracestats_set_info(s->ts, nt_reader_info(r));
		err = nt_reader_run(r, &h, s);
		nt_reader_stats(r, &st);
		tracestats_set_reader_stats(s->ts, &st);
	}
	nt_reader_free(r);
	if (err < 0 && err != -ENOMEM)
		s->ts_read_err = err;
	return err == -ENOMEM ? err : 0;
}

int analyze_session_finish(struct an_session *s)
{
	if (s->finished)
		return 0;
	s->finished = true;
	return tracestats_finish(s->ts);
}

/* ----- stacks grouped by method ----- */

static bool framework(const char *f)
{
	return !strncmp(f, "System.", 7) || !strncmp(f, "Microsoft.", 10) ||
	       !strncmp(f, "Interop", 7) || !strcmp(f, STACKS_UNRESOLVED);
}

static bool pool_worker(struct an_session *s, const struct stacks_thread *th)
{
	uint32_t f;

	for (f = 0; f < th->nframes; f++) {
		const char *name = stacks_sampler_frame(s->ss, th, f);

		if (name && !strncmp(name, "System.Threading.ThreadPoolWorkQueue::Dispatch", 46))
			return true;
	}
	return false;
}

int analyze_stack_groups(struct an_session *s, struct an_stack_group *g, size_t max, bool pool)
{
	size_t i, k, ng = 0, nt;

	if (!s->ss)
		return 0;
	nt = stacks_sampler_nthreads(s->ss);
	for (i = 0; i < nt; i++) {
		const struct stacks_thread *th = stacks_sampler_thread(s->ss, i);
		const char *m = NULL, *first = NULL, *call = NULL, *prev = NULL;
		uint32_t f;

		if (pool && !pool_worker(s, th))
			continue;
		for (f = 0; f < th->nframes; f++) {
			const char *name = stacks_sampler_frame(s->ss, th, f);

			if (!name)
				continue;
			if (!first)
				first = name;
			if (!framework(name)) {
				m = name;
				call = prev;
				break;
			}
			prev = name;
		}
		if (!m)
			m = first;
		if (!m)
			continue; /* no managed frame */
		for (k = 0; k < ng; k++)
			if (!strcmp(g[k].method, m))
				break;
		if (k == ng) {
			if (ng == max)
				continue;
			memset(&g[ng], 0, sizeof(g[ng]));
			g[ng].call = call;
			g[ng++].method = m;
		}
		if (g[k].threads < ARRAY_SIZE(g[k].tids))
			g[k].tids[g[k].threads] = th->tid;
		g[k].threads++;
	}
	/* count descending, stable enough for a handful of groups */
	for (i = 1; i < ng; i++)
		for (k = i; k > 0 && g[k].threads > g[k - 1].threads; k--) {
			struct an_stack_group t = g[k];

			g[k] = g[k - 1];
			g[k - 1] = t;
		}
	return (int)ng;
}

enum an_outcome analyze_live_outcome(const struct live_session_result *res,
				     const struct ipc_endpoint *ep, int *err, char *why, size_t len)
{
	*err = res->session_err;
	why[0] = 0;
	if (res->session_err && (res->session.bytes == 0 || res->session.bad_prologue)) {
		ipc_session_strerror(res->session_err, &res->session, ep, &res->rerr, why, len);
		return res->session.bad_prologue ? AN_BAD_STREAM : AN_NO_SESSION;
	}
	if (res->reader_err < 0 && res->session.target_ended && !res->session.complete) {
		snprintf(why, len, "the target went away during the session");
		*err = -ESRCH;
		return AN_TARGET_GONE;
	}
	if (res->reader_err < 0) {
		snprintf(why, len, "the session stream broke at byte %" PRIu64 ": %s", res->reader_offset,
			 res->reader_msg);
		*err = res->reader_err;
		return AN_BROKEN;
	}
	if (res->session_err) {
		ipc_session_strerror(res->session_err, &res->session, ep, &res->rerr, why, len);
		return AN_BROKEN;
	}
	return AN_OK;
}
