/* SPDX-License-Identifier: MIT */
/*
 * doctor.c - Dr-Dotnet's symptom table as rules: each rule reads what one
 * session saw (lib/tracestats, lib/counters) and the memory breakdown, and
 * gives a finding with its severity, evidence and the command that digs
 * deeper. Thresholds are documented in docs/cmd/doctor.md.
 */
#include "common/compat.h"

#include <time.h>

#include "analyze/analyze.h"
#include "common/term.h"
#include "flame/flame.h"

static const char *const sev_names[] = { "info", "notice", "warning", "critical" };

const char *analyze_severity_name(enum an_severity s)
{
	return (unsigned)s < ARRAY_SIZE(sev_names) ? sev_names[s] : "?";
}

static struct an_finding *add(struct an_finding *f, size_t *n, enum an_severity sev, double w,
			      const char *analyzer, pid_t pid)
{
	struct an_finding *x;

	if (*n == AN_MAX_FINDINGS)
		return NULL;
	x = &f[(*n)++];
	memset(x, 0, sizeof(*x));
	x->severity = sev;
	x->weight = w;
	x->analyzer = analyzer;
	snprintf(x->next, sizeof(x->next), "clrtap analyze -p %d %s -d 10", (int)pid, analyzer);
	return x;
}

static double mib(uint64_t kb)
{
	return (double)kb / 1024.0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct an_finding *x = a, *y = b;

	if (x->severity != y->severity)
		return x->severity > y->severity ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return 0;
}

static void exceptions_rule(const struct ts_result *r, double d, pid_t pid, struct an_finding *f,
			    size_t *n)
{
	double rate = (double)r->exceptions_total / d;
	enum an_severity sev = rate >= 100 ? AN_WARNING : rate >= 1 ? AN_NOTICE : AN_INFO;
	struct an_finding *x;

	if (!r->exceptions_total)
		return;
	x = add(f, n, sev, rate >= 100 ? 1.0 : rate / 100.0, "exceptions", pid);
	if (!x)
		return;
	snprintf(x->title, sizeof(x->title), "%.1f exceptions per second", rate);
	if (r->nexc_types) {
		const struct ts_exc_type *t = &r->exc_types[0];
		const struct ts_exception *e = r->nexceptions ? &r->exceptions[0] : NULL;

		snprintf(x->evidence, sizeof(x->evidence),
			 "%" PRIu64 " thrown in %.1f s (%" PRIu64 " first throws, %" PRIu64
			 " rethrown by awaits); most: %s x%" PRIu64 "%s%s", r->exceptions_total, d,
			 r->exceptions_first, r->exceptions_rethrown,
			 t->type, t->count, e && e->thrown_at ? ", thrown in " : "",
			 e && e->thrown_at ? e->thrown_at : "");
	}
}

/* under this many kept samples, doctor names no hottest method */
#define DOCTOR_FEW_SAMPLES 50

static void cpu_rule(const struct an_session *s, const struct ts_result *r, double d, unsigned ncpus,
		     pid_t pid, struct an_finding *f, size_t *n)
{
	/*
	 * Two views: the runtime's cpu-usage counter (percent of all cores,
	 * what the process got), and the sample profiler's share of samples
	 * that found a thread running managed code, times the threads sampled:
	 * how many threads were running managed code. The sampler samples every
	 * managed thread, running or not, and its "managed" type does not mean
	 * running (a thread blocked in a lock or in epoll counts): the samples of
	 * threads whose CPU time did not advance were left out of the flame
	 * (s->oncpu.waiting) but count in all. Without that filter the figure is
	 * thread time, waiting included, and the finding says so.
	 */
	uint64_t all = r->samples.managed + r->samples.external + r->samples.other + s->oncpu.waiting;
	uint64_t running = r->samples.managed - CT_MIN(r->samples.managed, r->samples.left_out);
	size_t nth = s->ss ? stacks_sampler_nthreads(s->ss) : 0;
	double busy = all && nth ? (double)running * (double)nth / (double)all : 0;
	double share = s->cpu_n ? s->cpu_sum / (double)s->cpu_n / 100.0 : 0;
	double cores = share * (ncpus ? ncpus : 1);
	bool oncpu = s->tc != NULL;
	enum an_severity sev = busy >= 0.8 || cores >= 0.4 ? AN_WARNING :
			       busy >= 0.3 || cores >= 0.2 ? AN_NOTICE : AN_INFO;
	struct flame_top *ft = NULL;
	struct an_finding *x;
	size_t nt = 0, i, best = SIZE_MAX;
	uint64_t total = r->flame ? flame_total(r->flame) : 0, unnamed = 0;

	if (!oncpu && cores < 0.05)
		return; /* thread time alone does not tell a busy process */
	if (busy < 0.1 && cores < 0.05)
		return;
	x = add(f, n, sev, (oncpu ? busy / (nth ? (double)nth : 1.0) : 0) + share, "hotpaths", pid);
	if (!x)
		return;
	if (oncpu)
		snprintf(x->title, sizeof(x->title),
			 "CPU busy: %.1f threads running managed code, %.2f of %u cores used", busy,
			 cores, ncpus);
	else
		snprintf(x->title, sizeof(x->title), "CPU busy: %.2f of %u cores used", cores, ncpus);
	if (total < DOCTOR_FEW_SAMPLES) {
		/* a handful of samples names no hottest method (the runtime's
		 * sampler keeps few on-CPU ones on a saturated machine) */
		snprintf(x->evidence, sizeof(x->evidence),
			 "%" PRIu64 " managed samples in %.1f s (%s): too few to name the hottest method; "
			 "run clrtap analyze -p %d hotpaths -d 30, or clrtap profile --engine perf",
			 total, d, analyze_cpu_basis(s), (int)pid);
	} else if (!flame_top(r->flame, &ft, &nt) && nt) {
		/* the hottest named method: "[unknown]" and the like are code the
		 * trace did not name, never a method */
		for (i = 0; i < nt; i++) {
			if (ft[i].name[0] == '[') {
				unnamed += ft[i].self;
				continue;
			}
			if (best == SIZE_MAX || ft[i].self > ft[best].self)
				best = i;
		}
		if (best != SIZE_MAX)
			snprintf(x->evidence, sizeof(x->evidence),
				 "%" PRIu64 " managed samples in %.1f s (%s); hottest method %s "
				 "(%.0f%% self); %.0f%% of the samples in unnamed code",
				 running, d, analyze_cpu_basis(s), ft[best].name, 100.0 * (double)ft[best].self / (double)total,
				 100.0 * (double)unnamed / (double)total);
		else
			snprintf(x->evidence, sizeof(x->evidence),
				 "%" PRIu64 " managed samples in %.1f s (%s), all in unnamed code",
				 running, d, analyze_cpu_basis(s));
	}
	free(ft);
}

static void gc_rule(const struct ts_result *r, double d, pid_t pid, struct an_finding *f, size_t *n)
{
	const struct ts_gc *g = &r->gc;
	uint64_t induced = g->induced_by_gen[0] + g->induced_by_gen[1] + g->induced_by_gen[2];
	enum an_severity sev = g->paused_pct >= 10 ? AN_WARNING : g->paused_pct >= 2 || induced ?
			       AN_NOTICE : AN_INFO;
	struct an_finding *x;

	if (!g->count)
		return;
	x = add(f, n, sev, g->paused_pct / 100.0, "pauses", pid);
	if (!x)
		return;
	snprintf(x->title, sizeof(x->title), "%" PRIu64 " GCs in %.1f s, %.1f%% of the time paused",
		 g->count, d, g->paused_pct);
	snprintf(x->evidence, sizeof(x->evidence),
		 "gen0/1/2 %" PRIu64 "/%" PRIu64 "/%" PRIu64 ", induced %" PRIu64
		 "; pause p50 %.2f ms, max %.2f ms",
		 g->by_gen[0], g->by_gen[1], g->by_gen[2], induced, (double)g->pause_p50_ns / 1e6,
		 (double)g->pause_max_ns / 1e6);
}

static void contention_rule(const struct ts_result *r, double d, pid_t pid, struct an_finding *f,
			    size_t *n)
{
	double rate = (double)r->contention.starts / d;
	double waited = (double)r->contention.total_ns / 1e9;
	enum an_severity sev = rate >= 50 || waited >= d ? AN_WARNING : rate >= 1 ? AN_NOTICE : AN_INFO;
	struct an_finding *x;

	if (!r->contention.starts)
		return;
	x = add(f, n, sev, waited / d, "contention", pid);
	if (!x)
		return;
	snprintf(x->title, sizeof(x->title), "lock contention: %.1f waits per second", rate);
	snprintf(x->evidence, sizeof(x->evidence), "%" PRIu64 " waits, %.2f s waited in all (%.1f s session)",
		 r->contention.starts, waited, d);
}

static void threadpool_rule(struct an_session *s, pid_t pid, struct an_finding *f, size_t *n)
{
	struct an_stack_group g[16];
	struct an_finding *x;
	int ng;

	if (s->tp_queue_max < 10)
		return;
	x = add(f, n, s->tp_queue_max >= 50 ? AN_WARNING : AN_NOTICE, s->tp_queue_max / 100.0,
		"threadpool", pid);
	if (!x)
		return;
	snprintf(x->title, sizeof(x->title), "thread-pool queue up to %.0f work items (starvation?)",
		 s->tp_queue_max);
	ng = analyze_stack_groups(s, g, ARRAY_SIZE(g), true);
	if (ng > 0)
		snprintf(x->evidence, sizeof(x->evidence),
			 "queue max %.0f, pool threads max %.0f; %u workers blocked in %s%s%s",
			 s->tp_queue_max, s->tp_threads_max, g[0].threads, g[0].method,
			 g[0].call ? ", calling " : "", g[0].call ? g[0].call : "");
	else
		snprintf(x->evidence, sizeof(x->evidence),
			 "System.Runtime threadpool-queue-length max %.0f, threadpool-thread-count max %.0f",
			 s->tp_queue_max, s->tp_threads_max);
}

static void memory_rule(const struct an_memory *m, pid_t pid, struct an_finding *f, size_t *n)
{
	enum an_mem_kind k = analyze_memory_dominant(m);
	uint64_t kb = k == AN_MEM_NATIVE ? m->rss_kb[AN_MEM_NATIVE] + m->rss_kb[AN_MEM_OTHER_ANON] :
		      m->rss_kb[k];
	double used = m->cgroup_max > 0 && m->cgroup_current >= 0 ?
		      (double)m->cgroup_current / (double)m->cgroup_max : 0;
	enum an_severity sev = used >= 0.9 ? AN_CRITICAL : used >= 0.75 ? AN_WARNING : AN_INFO;
	const struct an_mem_growth *g = m->growth;
	struct an_finding *x;

	if (g && g->grew >= 0 && sev < AN_NOTICE)
		sev = AN_NOTICE;
	x = add(f, n, sev, used, "memory", pid);
	if (!x)
		return;
	if (g && g->grew >= 0)
		snprintf(x->title, sizeof(x->title),
			 "resident memory %.1f MiB, grew %.1f MiB in %.1f s: %s grew %.1f MiB (%.2f MiB/s)",
			 mib(m->total_kb), (double)g->total_delta_kb / 1024.0, g->span_s,
			 analyze_mem_growth_name(g->grew), (double)g->delta_kb[g->grew] / 1024.0,
			 g->rate_kb_s[g->grew] / 1024.0);
	else
		snprintf(x->title, sizeof(x->title), "resident memory %.1f MiB, most of it %s", mib(m->total_kb),
			 k == AN_MEM_NATIVE ? "native (outside the GC heap)" : analyze_mem_kind_label(k));
	if (m->cgroup_max > 0)
		snprintf(x->evidence, sizeof(x->evidence),
			 "%.1f MiB %s; cgroup uses %.1f of %.1f MiB (%.0f%%)", mib(kb),
			 analyze_mem_kind_name(k), (double)m->cgroup_current / 1048576.0,
			 (double)m->cgroup_max / 1048576.0, used * 100);
	else
		snprintf(x->evidence, sizeof(x->evidence), "%.1f MiB %s; GC heap %.1f MiB; no cgroup memory limit",
			 mib(kb), analyze_mem_kind_name(k), mib(m->rss_kb[AN_MEM_GC_HEAP]));
}

/* Threads waiting on each other's locks (a proven cycle: critical), or
 * threads inside a lock enter for the whole session (a likely deadlock). */
static void deadlock_rule(struct an_session *s, pid_t pid, struct an_finding *f, size_t *n)
{
	struct an_deadlock *d = malloc(sizeof(*d));
	struct an_finding *x;
	size_t k, len = 0;

	if (!d || !s->locks || analyze_deadlock_find(s, pid, d))
		goto out;
	if (d->ncycles) {
		x = add(f, n, AN_CRITICAL, (double)d->ncycles, "deadlock", pid);
		if (!x)
			goto out;
		snprintf(x->title, sizeof(x->title), "deadlock: %zu thread(s) wait on each other's locks",
			 d->cycles[0].n);
		for (k = 0; k < d->cycles[0].n && len < sizeof(x->evidence); k++) {
			const struct an_dl_thread *t = &d->cycles[0].t[k];
			int w = snprintf(x->evidence + len, sizeof(x->evidence) - len,
					 "%sthread %" PRIu64 "%s%s%s in %s waits for thread %" PRIu64, k ? "; " : "",
					 t->tid, t->name[0] ? " (" : "", t->name, t->name[0] ? ")" : "",
					 t->site ? t->site : "?", t->owner);

			if (w < 0)
				break;
			len += (size_t)w;
		}
	} else if (d->blocked_threads >= 2) {
		x = add(f, n, AN_WARNING, (double)d->blocked_threads / 100.0, "deadlock", pid);
		if (!x)
			goto out;
		snprintf(x->title, sizeof(x->title),
			 "%u threads in a lock enter for the whole session (a deadlock is likely)", d->blocked_threads);
		for (k = 0; k < d->nblocked && len < sizeof(x->evidence); k++) {
			int w = snprintf(x->evidence + len, sizeof(x->evidence) - len, "%s%u in %s", k ? "; " : "",
					 d->blocked[k].threads, d->blocked[k].method);

			if (w < 0)
				break;
			len += (size_t)w;
		}
	}
out:
	free(d);
}

size_t analyze_findings(struct an_session *s, const struct an_memory *mem, pid_t pid,
			double duration_s, unsigned ncpus, struct an_finding *f)
{
	const struct ts_result *r = tracestats_result(s->ts);
	double d = duration_s > 0.1 ? duration_s : 0.1;
	size_t n = 0;

	exceptions_rule(r, d, pid, f, &n);
	cpu_rule(s, r, d, ncpus, pid, f, &n);
	gc_rule(r, d, pid, f, &n);
	contention_rule(r, d, pid, f, &n);
	threadpool_rule(s, pid, f, &n);
	deadlock_rule(s, pid, f, &n);
	if (mem)
		memory_rule(mem, pid, f, &n);
	qsort(f, n, sizeof(*f), cmp_finding);
	return n;
}

/* ----- the doctor workflow: one session, the memory breakdown, the findings ----- */

#define DOCTOR_NEED (AN_NEED_EXCEPTIONS | AN_NEED_GC | AN_NEED_CONTENTION | AN_NEED_LOCKS | AN_NEED_SAMPLES | \
		     AN_NEED_COUNTERS | AN_NEED_ONCPU)

static int doctor_fail(struct an_doctor *d, enum an_fail f, int err, const char *what, const char *why)
{
	snprintf(d->msg, sizeof(d->msg), "%s: %s", what, why);
	d->fail = f;
	d->err = err < 0 ? err : -EIO;
	return d->err;
}

int analyze_doctor_run(const struct ipc_endpoint *ep, pid_t pid, int64_t duration_ms,
		       volatile sig_atomic_t *stop, struct an_doctor *d)
{
	struct live_session_result res;
	struct an_session *s = NULL;
	struct an_memory mem;
	struct an_mem_series series = { 0 };
	struct an_mem_growth growth;
	struct timespec t0, t1;
	char why[512];
	long ncpu;
	int err;

	memset(d, 0, sizeof(*d));
	d->pid = pid;
	err = analyze_session_new(&s, DOCTOR_NEED);
	if (err)
		return doctor_fail(d, AN_FAIL_ERROR, err, "cannot start", strerror(-err));
	s->oncpu_pid = pid;
	/* memory at the start too: its growth over the session */
	if (!analyze_memory_read(pid, &mem))
		(void)analyze_mem_series_add(&series, 0, &mem);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = analyze_session_live(s, ep, duration_ms, stop, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		doctor_fail(d, AN_FAIL_ERROR, err, "cannot run the session", strerror(-err));
		goto out;
	}
	switch (analyze_live_outcome(&res, ep, &err, why, sizeof(why))) {
	case AN_NO_SESSION:
		doctor_fail(d, AN_FAIL_ERRNO, err, "cannot examine", why);
		goto out;
	case AN_BAD_STREAM:
		doctor_fail(d, AN_FAIL_PROTOCOL, err, "cannot examine", why);
		goto out;
	case AN_TARGET_GONE:
	case AN_BROKEN:
		snprintf(d->partial, sizeof(d->partial), "%s", why);
		break;
	case AN_OK:
		break;
	}
	err = analyze_session_finish(s);
	if (err) {
		doctor_fail(d, AN_FAIL_ERROR, err, "cannot summarize", strerror(-err));
		goto out;
	}
	d->duration_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	d->events = tracestats_result(s->ts)->events;
	d->dropped_events = tracestats_result(s->ts)->dropped_events;
	d->counter_values = s->counter_values;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	err = analyze_memory_read(pid, &mem);
	if (!err && series.n && !analyze_mem_series_add(&series, d->duration_s, &mem)) {
		analyze_mem_growth(&series, &growth);
		mem.growth = &growth;
	}
	d->n = analyze_findings(s, err ? NULL : &mem, pid, d->duration_s, ncpu > 0 ? (unsigned)ncpu : 1, d->f);
	err = 0;
out:
	analyze_mem_series_release(&series);
	analyze_session_free(s);
	return err ? d->err : 0;
}

bool analyze_doctor_alarming(const struct an_doctor *d)
{
	return d->n && d->f[0].severity >= AN_WARNING;
}

static void text_str(struct strbuf *sb, const char *s, bool term_safe)
{
	if (term_safe)
		(void)ct_term_escape_str(sb, s);
	else
		(void)strbuf_addstr(sb, s);
}

int analyze_doctor_text(const struct an_doctor *d, bool term_safe, struct strbuf *sb)
{
	size_t i;

	strbuf_addf(sb, "clrtap doctor: pid %d, watched %.1f s (exceptions, GC, locks, CPU samples, "
		    "counters, memory)\n\n", (int)d->pid, d->duration_s);
	if (!analyze_doctor_alarming(d))
		strbuf_addf(sb, "Nothing alarming.\n\n");
	for (i = 0; i < d->n; i++) {
		const struct an_finding *f = &d->f[i];

		strbuf_addf(sb, "%zu. [%s] ", i + 1, analyze_severity_name(f->severity));
		text_str(sb, f->title, term_safe);
		if (f->evidence[0]) {
			strbuf_addf(sb, "\n   evidence: ");
			text_str(sb, f->evidence, term_safe);
		}
		strbuf_addf(sb, "\n   next: %s\n", f->next);
	}
	return strbuf_error(sb);
}

int analyze_doctor_json(const struct an_doctor *d, struct ct_json *j)
{
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_i64(j, "pid", d->pid);
	ct_json_kv_double(j, "duration_s", d->duration_s);
	ct_json_kv_u64(j, "events", d->events);
	ct_json_kv_u64(j, "dropped_events", d->dropped_events);
	ct_json_kv_u64(j, "counter_values", d->counter_values);
	if (d->partial[0])
		ct_json_kv_str(j, "partial", d->partial);
	else
		ct_json_kv_null(j, "partial");
	ct_json_kv_bool(j, "alarming", analyze_doctor_alarming(d));
	ct_json_kv_arr_begin(j, "findings");
	for (i = 0; i < d->n; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "severity", analyze_severity_name(d->f[i].severity));
		ct_json_kv_str(j, "analyzer", d->f[i].analyzer);
		ct_json_kv_str(j, "title", d->f[i].title);
		ct_json_kv_str(j, "evidence", d->f[i].evidence);
		ct_json_kv_str(j, "next", d->f[i].next);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	return j->err;
}
