/* SPDX-License-Identifier: MIT */
/*
 * task.c - the `probe` task: methods found by name in a live process, their
 * calls seen by hardware breakpoints (JIT code) and uprobes (ReadyToRun
 * code) after a self-test proves each mechanism fires here, within a cost
 * budget (handover.c: over it the in-process ReJIT profiler takes over, or
 * the probe stops), the target's perf map on for the run and back off
 * after. Calls go to the caller's hook as they happen (the CLI's live lines)
 * and, capped, into the result as records; the result's JSON is
 * docs/tasks/probe.md. Never prints.
 */
#include "common/compat.h"

#include <stdarg.h>
#include <time.h>

#include "common/exitcode.h"
#include "common/log.h"
#include "perf/perf.h"
#include "perfmap/perfmap.h"
#include "probe/run.h"

const struct task_param probe_task_params[] = {
	{ "method", TASK_P_STRING, NULL, 0, 512, ".:_`<>,()[]*",
	  "Namespace.Type::Method, optionally with (signature)", TASK_PF_REQUIRED },
	{ "duration", TASK_P_DURATION, "5", 0.1, 3600, NULL, "how long to probe", 0 },
	{ "args", TASK_P_BOOL, "true", 0, 0, NULL, "decode the arguments of each call", 0 },
	{ "ret", TASK_P_BOOL, "true", 0, 0, NULL, "the return value", 0 },
	{ "latency", TASK_P_BOOL, "true", 0, 0, NULL, "each call's latency", 0 },
	{ "stack", TASK_P_BOOL, "false", 0, 0, NULL, "the caller stack of each call", 0 },
	{ "lines", TASK_P_BOOL, "false", 0, 0, NULL,
	  "the stack's managed frames with their source file and line (portable PDBs)", 0 },
	{ "count", TASK_P_BOOL, "false", 0, 0, NULL, "only count calls (no records)", 0 },
	{ "budget", TASK_P_NUM, "5", 0.01, 1000, NULL,
	  "the share of one core (percent) the probe may take from the target", 0 },
	{ "no_rejit", TASK_P_BOOL, "false", 0, 0, NULL,
	  "over the budget, stop instead of handing over to the ReJIT profiler", 0 },
	{ "via", TASK_P_ENUM, "native", 0, 0, "native uprobe breakpoint rejit",
	  "native: uprobes on ReadyToRun code, breakpoints on JIT code; or only one of them; or "
	  "the in-process ReJIT profiler", 0 },
	{ "strlen", TASK_P_INT, "64", 1, 1000000, NULL, "characters of a string shown", 0 },
	{ "records", TASK_P_INT, "1000", 0, 100000, NULL, "call records kept in the result", 0 },
};
const size_t probe_task_nparams = ARRAY_SIZE(probe_task_params);

uint64_t prun_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void prun_say(struct probe_run *w, enum ct_log_level lvl, bool stmt, const char *fmt, ...)
{
	char buf[PROBE_STATEMENT_MAX * 4];
	va_list ap;

	va_start(ap, fmt);
	ct_log_vto(w->ctx ? w->ctx->log : NULL, w->ctx ? w->ctx->log_ctx : NULL, lvl, buf, sizeof(buf),
		   fmt, ap);
	va_end(ap);
	if (stmt && w->r && w->r->nstatements < PROBE_STATEMENTS_MAX)
		snprintf(w->r->statements[w->r->nstatements++], PROBE_STATEMENT_MAX, "%.511s", buf);
}

int prun_fail(struct probe_run *w, int err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->res->message, sizeof(w->res->message), fmt, ap);
	va_end(ap);
	w->res->exit_code = code;
	return w->res->err = err;
}

static int check(struct probe_run *w)
{
	const struct probe_run_opts *o = w->o;

	if (o->pid <= 0)
		return prun_fail(w, -EINVAL, EXIT_USAGE, "probe needs a target pid");
	if (!o->pattern && !o->list)
		return prun_fail(w, -EINVAL, EXIT_USAGE,
				 "say which method: clrtap probe -p PID 'Ns.Type::Method'");
	if (o->via && strcmp(o->via, "rejit") && strcmp(o->via, "native") &&
	    strcmp(o->via, "uprobe") && strcmp(o->via, "breakpoint"))
		return prun_fail(w, -EINVAL, EXIT_USAGE, "--via takes rejit, native, uprobe or "
				 "breakpoint, not '%s'", o->via);
	if (o->strlen_max < 1 || o->strlen_max > 1000000)
		return prun_fail(w, -EINVAL, EXIT_USAGE, "--strlen must be 1..1000000");
	if (!(o->budget_pct > 0 && o->budget_pct <= 1000))
		return prun_fail(w, -EINVAL, EXIT_USAGE, "the budget is a share of one core in percent, "
				 "more than 0 and at most 1000");
	if (o->duration_ms < 0)
		return prun_fail(w, -EINVAL, EXIT_USAGE, "the duration must not be negative");
	return 0;
}

int probe_task_check(const struct probe_run_opts *o, struct task_result *res)
{
	struct probe_run w = { .o = o, .res = res };

	return check(&w);
}

/* ---- the target: its perf map on for the run, its assemblies open ---- */

struct target {
	struct perfmap_use pmu;
	struct proc_target t;
	struct ipc_endpoint ep;
};

static int open_target(struct probe_run *w, struct target *tg)
{
	struct probe_open_opts po = { 0 };
	struct ipc_error rerr;
	int err, major;

	err = proc_target_find(w->o->pid, &tg->t);
	if (err)
		return prun_fail(w, err, ct_exit_for(err), err == -ESRCH ? "no process with pid %d" :
				 err == -ENOENT ? "pid %d has no diagnostics socket (not a .NET process?)" :
				 "cannot reach pid %d's diagnostics socket", (int)w->o->pid);
	ipc_endpoint_init(&tg->ep, &tg->t, w->o->timeout_ms);
	w->pid = tg->t.pid;
	/* The perf map tells where JIT'd code is: on for the run if it was off, with the lease
	 * and SIGKILL watcher every command shares (lib/perfmap). */
	err = perfmap_use_begin(&tg->pmu, &tg->t, tg->ep.timeout_ms, &rerr);
	if (err && !tg->pmu.map_path[0])
		return prun_fail(w, err, EXIT_ERROR, "cannot tell where the perf map of %d is",
				 (int)w->pid);
	if (err)
		prun_say(w, CT_LOG_WARN, true, "cannot turn the perf map on (%s): JIT'd code will not "
			 "be found", strerror(-err));
	po.perfmap_path = tg->pmu.map_path;
	po.perfmap_tpath = tg->pmu.map_tpath;
	po.jitdump_tpath = tg->pmu.jitdump ? tg->pmu.jitdump_tpath : NULL;
	po.jitdump_path = tg->pmu.jitdump ? tg->pmu.jitdump_path : NULL;
	po.root = tg->t.other_mntns ? tg->t.root : "";
	err = probe_proc_open(w->pid, &po, &w->pp);
	if (err)
		return prun_fail(w, err, ct_exit_for(err), "cannot read the assemblies of %d: %s",
				 (int)w->pid, strerror(-err));
	if (tg->pmu.turned_on)
		prun_settle_perfmap(w->pp);
	if (w->o->lines && w->o->stack && (err = probe_proc_lines(w->pp, &tg->ep, &rerr)))
		prun_say(w, CT_LOG_WARN, false, "no source lines: %s", strerror(-err));
	/*
	 * .NET 11 buffers its perf map until it is turned off, but writes jitdump
	 * as code is published: read when a clrtap turned it on with the map
	 * (pmu.jitdump). Without it the code that exists now is read whole by
	 * turning the map off and on again; code compiled later shows only as the
	 * runtime writes its buffer out, so its calls can go unseen: said.
	 */
	major = w->o->emit || tg->pmu.jitdump ? 0 : perfmap_runtime_major(&tg->t, tg->ep.timeout_ms);
	if (major >= PERFMAP_BUFFERED_MAJOR) {
		if (perfmap_use_reread(&tg->pmu, prun_settle_perfmap_cb, w->pp, &rerr) < 0)
			prun_say(w, CT_LOG_WARN, true, "cannot turn the perf map off and on to read it "
				 "whole: JIT code may not be found");
		prun_say(w, CT_LOG_WARN, true, "this runtime (.NET %d) buffers its perf map: JIT code "
			 "compiled from now on (a first call, tier-up) is seen late or not at all, and "
			 "its calls are NOT counted; --via rejit sees every call on every tier (.NET 8 "
			 "to 10 write their map at once)", major);
	}
	return 0;
}

static void close_target(struct probe_run *w, struct target *tg)
{
	struct ipc_error rerr;
	int err = perfmap_use_end(&tg->pmu, &rerr);

	if (err && err != -ECONNREFUSED && err != -ENOENT && kill(tg->t.pid, 0) == 0)
		prun_say(w, CT_LOG_WARN, true, "could not turn the perf map back off: %s",
			 strerror(-err));
}

/* ---- finding the methods ---- */

#define MAX_LIST 100000

static int list(struct probe_run *w)
{
	struct probe_method **all = calloc(MAX_LIST, sizeof(*all));
	const char *pattern = w->o->pattern ? w->o->pattern : "*";
	struct mech_tests mt;
	char plan[1536];
	size_t n = 0, i;
	int err;

	if (!all)
		return prun_fail(w, -ENOMEM, EXIT_ERROR, "out of memory");
	err = probe_proc_find(w->pp, pattern, all, MAX_LIST, &n);
	if (!w->o->emit)
		prun_mech_tests(all, CT_MIN(n, (size_t)MAX_LIST), &mt);
	for (i = 0; i < n && i < MAX_LIST; i++) {
		if (!w->o->emit)
			prun_plan(all[i], &mt, false, plan, sizeof(plan));
		if (w->o->hooks.on_method)
			w->o->hooks.on_method(w->o->hooks.ctx, all[i], w->o->emit ? NULL : plan);
	}
	free(all);
	if (err)
		prun_say(w, CT_LOG_WARN, true, "listing stopped early: %s", strerror(-err));
	if (!n)
		return prun_fail(w, -ENOENT, EXIT_ERROR, "no method matches '%s'", pattern);
	return 0;
}

static int find(struct probe_run *w)
{
	const char *pattern = w->o->pattern;
	struct strbuf sb = STRBUF_INIT_MAX(8192);
	size_t i;
	int err;

	err = probe_proc_find(w->pp, pattern, w->found, PROBE_RUN_MAX_METHODS, &w->n);
	if (err && err != -E2BIG)
		return prun_fail(w, err, ct_exit_for(err), "cannot search methods: %s", strerror(-err));
	if (!w->n) {
		char *sug[8];
		int ns = probe_proc_suggest(w->pp, pattern, sug, 8);

		for (i = 0; ns > 0 && i < (size_t)ns; i++) {
			prun_say(w, CT_LOG_INFO, false, "%s %s", i ? "             " : "did you mean",
				 sug[i]);
			free(sug[i]);
		}
		return prun_fail(w, -ENOENT, EXIT_ERROR, "no method matches '%s' in %zu assemblies of %d",
				 pattern, probe_proc_nimages(w->pp), (int)w->pid);
	}
	if (w->n > PROBE_RUN_MAX_METHODS)
		return prun_fail(w, -E2BIG, EXIT_USAGE, "'%s' matches %zu methods (at most %d): narrow "
				 "it", pattern, w->n, PROBE_RUN_MAX_METHODS);
	if (w->o->hist_arg && strcmp(w->o->hist_arg, "latency"))
		for (i = 0; i < w->n; i++)
			if (probe_method_arg_index(w->found[i], w->o->hist_arg) < 0)
				return prun_fail(w, -EINVAL, EXIT_USAGE, "--hist %s: %s%s has no such "
						 "argument", w->o->hist_arg, w->found[i]->name,
						 w->found[i]->sig);
	if (w->n > 1) {
		/* overloads (or a wildcard): all of them, said in one line */
		for (i = 0; i < w->n; i++)
			(void)strbuf_addf(&sb, "%s'%s%s'", i ? ", " : "", w->found[i]->name,
					  w->found[i]->sig);
		prun_say(w, CT_LOG_INFO, false, "'%s' matches %zu methods, tracing all: %s%s", pattern,
			 w->n, sb.buf, strchr(pattern, '(') ? "" : " (add '(signature)' to pick one)");
	}
	strbuf_release(&sb);
	return 0;
}

/*
 * Proves the mechanisms fire here before a count made with them is shown;
 * keeps the methods that can be watched. so gets what is left out.
 */
static int plan(struct probe_run *w, struct probe_session_opts *so)
{
	const char *via = w->o->via;
	struct mech_tests mt;
	struct budget *b = &w->bg;
	char line[1536];
	size_t i, k = 0;

	prun_mech_tests(w->found, w->n, &mt);
	/* the budget's cost of a hit: measured by the self-test; else assumed */
	b->hw_measured = !mt.hw_err && mt.hw.hit_ns;
	b->hw_ns = b->hw_measured ? mt.hw.hit_ns : 10000;
	b->up_measured = !mt.up_err && mt.up.hit_ns;
	b->up_ns = b->up_measured ? mt.up.hit_ns : 3000;
	if (mt.hw_err)
		prun_say(w, CT_LOG_WARN, true, "cannot self-test hardware breakpoints (%s): counts of "
			 "JIT'd code are unproven on this machine", strerror(-mt.hw_err));
	else if (!mt.hw.fires) {
		so->no_hwbp = true;
		prun_say_unseen(w, PROBE_MECH_HWBP, &mt.hw);
	}
	if (mt.any_r2r && mt.up_err)
		prun_say(w, CT_LOG_WARN, true, "cannot self-test uprobes (%s): counts of ReadyToRun "
			 "code are unproven on this machine", strerror(-mt.up_err));
	else if (mt.any_r2r && !mt.up.fires) {
		so->no_uprobe = true;
		prun_say_unseen(w, PROBE_MECH_UPROBE, &mt.up);
	}
	if (via && !strcmp(via, "uprobe")) {
		w->where = "with --via uprobe (hardware breakpoints not used)";
		so->no_hwbp = true;
		so->unwatched_where = w->where;
	} else if (via && !strcmp(via, "breakpoint")) {
		w->where = "with --via breakpoint (uprobes not used)";
		so->no_uprobe = true;
		so->unwatched_where = w->where;
	}
	for (i = 0; i < w->n; i++) {
		struct probe_method *m = w->found[i];
		bool r2r = prun_has_kind(m, PROBE_CODE_R2R);

		prun_plan(m, &mt, true, line, sizeof(line));
		prun_say(w, CT_LOG_INFO, false, "%s", line);
		if (so->unwatched_where)
			prun_say(w, CT_LOG_INFO, false, "  but only %s is used: %s",
				 !strcmp(via, "uprobe") ? "the uprobe" : "the hardware breakpoint", w->where);
		/* JIT code can come to any method (tier-up); R2R code is there or not */
		if ((r2r && !so->no_uprobe) || !so->no_hwbp) {
			w->found[k++] = m;
			continue;
		}
		if (!m->ncode && !w->o->no_wait) {
			/* no code yet: still worth waiting to say whether it gets inlined */
			prun_say(w, CT_LOG_INFO, true, "%s%s: no code yet; its JIT code could not be "
				 "watched %s (calls will NOT be counted): waiting only to tell whether the "
				 "JIT inlines it", m->name, m->sig, w->where);
			w->found[k++] = m;
			continue;
		}
		prun_say(w, CT_LOG_INFO, true, "%s%s: NOT traced: it has %s code clrtap can watch %s (a "
			 "count would be a false 0)", m->name, m->sig,
			 r2r ? "no" : "only JIT-compiled code, no", w->where);
	}
	if (!k)
		return prun_fail(w, -ENOENT, EXIT_ERROR, "nothing to trace: no method matching '%s' can "
				 "be watched %s", w->o->pattern, w->where);
	w->n = k;
	return 0;
}

/* ---- the calls ---- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void keep_call(struct probe_run *w, const struct probe_call *c)
{
	struct probe_result *r = w->r;
	struct probe_rec *rec;
	size_t bytes;

	r->calls_total++;
	if (r->nrecs >= r->max_records || r->rec_bytes > PROBE_RECORDS_BYTES)
		return;
	rec = &r->recs[r->nrecs];
	memset(rec, 0, sizeof(*rec));
	rec->method = c->method;
	snprintf(rec->tier, sizeof(rec->tier), "%s", c->method->code[c->version].tier);
	rec->tid = c->tid;
	rec->t_s = c->mono_ns >= w->t0_mono ? (double)(c->mono_ns - w->t0_mono) / 1e9 : 0;
	rec->args = dup_or_null(c->args);
	rec->ret = dup_or_null(c->ret);
	rec->stack = dup_or_null(c->stack);
	rec->has_entry = c->has_entry;
	rec->has_ret = c->has_ret;
	rec->latency_ns = c->latency_ns;
	bytes = (c->args ? strlen(c->args) : 0) + (c->ret ? strlen(c->ret) : 0) +
		(c->stack ? strlen(c->stack) : 0);
	if ((c->args && !rec->args) || (c->ret && !rec->ret) || (c->stack && !rec->stack)) {
		free(rec->args);
		free(rec->ret);
		free(rec->stack);
		return;
	}
	r->rec_bytes += bytes;
	r->nrecs++;
}

static void on_call(void *ctx, const struct probe_call *c)
{
	struct probe_run *w = ctx;

	if (!w->o->count)
		keep_call(w, c);
	else
		w->r->calls_total++;
	if (w->o->hooks.on_call)
		w->o->hooks.on_call(w->o->hooks.ctx, c);
}

static void on_note(void *ctx, enum probe_note_kind k, const char *msg)
{
	prun_say(ctx, k == PROBE_NOTE_WARN ? CT_LOG_WARN : CT_LOG_INFO, k == PROBE_NOTE_WARN, "%s", msg);
}

/* ---- the run ---- */

static int start_session(struct probe_run *w, struct target *tg, struct probe_session_opts *so)
{
	const struct probe_run_opts *o = w->o;
	uint64_t ta;
	char pdesc[160], c1[32], c2[32];
	int err;

	err = probe_session_new(w->pp, w->found, w->n, so, on_call, on_note, w, &w->sess);
	if (err)
		return prun_fail(w, err, err == -EACCES || err == -EPERM ? EXIT_PERMISSION : EXIT_ERROR,
				 "perf_event_open: %s", strerror(-err));
	/* methods without code of their own: listen to the JIT's inlining decisions */
	if (!o->no_wait) {
		const char *names[PROBE_RUN_MAX_METHODS];
		size_t nn = 0, i;

		for (i = 0; i < w->n; i++)
			if (!w->found[i]->ncode)
				names[nn++] = w->found[i]->name;
		if (nn && (err = probe_inl_start(&tg->ep, names, nn, &w->inl)))
			prun_say(w, CT_LOG_WARN, false, "cannot read the JIT's inlining events (%s): if the "
				 "method is inlined, clrtap cannot say into what", strerror(-err));
	}
	ta = prun_mono_ns();
	err = probe_session_arm(w->sess);
	if (err == -ENOENT) {
		if (o->no_wait)
			return prun_fail(w, err, EXIT_ERROR, "%s%s has no code yet (not called, or "
					 "inlined)", w->found[0]->name, w->found[0]->sig);
		prun_say(w, CT_LOG_INFO, true, "%s%s has no code yet: waiting for it to be compiled (a "
			 "method inlined into all its callers never is)", w->found[0]->name,
			 w->found[0]->sig);
	} else if (err) {
		return prun_fail(w, err, ct_exit_for(err), "cannot arm the probe: %s", strerror(-err));
	}
	w->r->attach_ms = (double)(prun_mono_ns() - ta) / 1e6;
	w->armed = true;
	perf_prio_describe(&w->prio, pdesc, sizeof(pdesc));
	prun_say(w, CT_LOG_INFO, false, "attached in %.1f ms: %u threads; uprobes %s, breakpoints %s; "
		 "clrtap priority: %s", w->r->attach_ms, probe_session_threads(w->sess),
		 probe_session_per_cpu(w->sess, true) ? "per CPU (filtered by pid)" : "per thread",
		 probe_session_per_cpu(w->sess, false) ? "per CPU (filtered by pid)" : "per thread",
		 pdesc);
	prun_fmt_ns(w->bg.hw_ns, c1, sizeof(c1));
	prun_fmt_ns(w->bg.up_ns, c2, sizeof(c2));
	prun_say(w, CT_LOG_INFO, false, "budget: %g%% of one core; a hit costs the target %s under a "
		 "breakpoint (%s), %s under an uprobe (%s): at most %.0f and %.0f calls/s; over it the "
		 "probe %s", w->bg.pct, c1, w->bg.hw_measured ? "measured here" : "assumed", c2,
		 w->bg.up_measured ? "measured here" : "assumed", w->bg.pct * 1e7 / w->bg.hw_ns,
		 w->bg.pct * 1e7 / w->bg.up_ns, w->bg.rejit_ok ? "is handed to the ReJIT profiler "
		 "(--no-rejit: stopped instead)" : "is stopped (exit 11)");
	prun_say(w, CT_LOG_INFO, false, "tracing %zu method(s) in %d; Ctrl-C to stop", w->n,
		 (int)w->pid);
	return 0;
}

/* Polls until the duration ends, the target exits, the budget stops it or the stop flag. */
static void loop(struct probe_run *w)
{
	const volatile sig_atomic_t *stop = w->ctx ? w->ctx->stop : NULL;
	uint64_t t0 = prun_mono_ns();
	int err;

	while (!(stop && *stop)) {
		err = probe_session_poll(w->sess, 2);
		if (err == -ESRCH) {
			prun_say(w, CT_LOG_INFO, true, "process %d exited", (int)w->pid);
			break;
		}
		if (err) {
			prun_say(w, CT_LOG_WARN, true, "%s", strerror(-err));
			break;
		}
		prun_report_inlining(w);
		(void)probe_rejit_poll(w->bg.rj, prun_rejit_line, w);
		if (prun_budget_check(w)) {
			w->bg.over = true;
			prun_say(w, CT_LOG_INFO, true, "budget: %s", w->bg.action);
			break;
		}
		if (w->o->duration_ms &&
		    (int64_t)((prun_mono_ns() - t0) / 1000000ull) >= w->o->duration_ms)
			break;
	}
	w->r->partial = stop && *stop;
}

static int run_native(struct probe_run *w, struct target *tg)
{
	const struct probe_run_opts *o = w->o;
	struct probe_session_opts so = { 0 };
	int err, rc = EXIT_OK;

	if ((err = plan(w, &so)))
		return err;
	so.args = o->args || !o->count;
	so.ret = o->ret;
	so.latency = o->latency;
	so.stack = o->stack;
	so.count_only = o->count_only;
	so.strlen_max = o->strlen_max;
	w->bg.args = so.args && !o->count;
	w->bg.stack = o->stack;
	w->bg.pp = w->pp;
	w->bg.rejit_ok = !o->no_rejit && (!o->via || !strcmp(o->via, "native"));
	if ((err = start_session(w, tg, &so)))
		return err;
	w->bg.t0 = w->bg.last_ns = w->t0_mono = prun_mono_ns();
	loop(w);
	if (w->bg.rj) {
		int st = probe_rejit_stop(w->bg.rj, 6000, prun_rejit_line, w);

		if (st && st != 130 && !w->bg.rj_status)
			prun_say(w, CT_LOG_WARN, true, "the ReJIT probe ended with exit code %d", st);
	}
	probe_session_flush(w->sess);
	prun_report_inlining(w);
	prun_summary(w, w->inl != NULL);
	if (w->bg.over)
		rc = EXIT_OVER_BUDGET;
	prun_budget_summary(w);
	return rc;
}

/* The mechanism the counts came from, for the result. */
static void name_mechanism(struct probe_run *w)
{
	bool hw = false, up = false;
	size_t i, v;

	for (i = 0; w->sess && i < w->n; i++)
		for (v = 0; v < w->found[i]->ncode && v < PROBE_MAX_VERSIONS; v++) {
			const struct probe_version_stats *st = probe_session_stats(w->sess, i, v);

			if (!st->armed_ns && !st->entries)
				continue;
			hw |= w->found[i]->code[v].kind == PROBE_CODE_JIT;
			up |= w->found[i]->code[v].kind == PROBE_CODE_R2R;
		}
	snprintf(w->r->mechanism, sizeof(w->r->mechanism), "%s%s%s%s",
		 hw ? "breakpoint" : "", hw && up ? "+" : "", up ? "uprobe" : "",
		 w->bg.rj ? (hw || up ? "+rejit" : "rejit") : "");
	if (!w->r->mechanism[0])
		snprintf(w->r->mechanism, sizeof(w->r->mechanism), "none");
}

static void release_run(struct probe_run *w)
{
	probe_rejit_free(w->bg.rj);
	w->bg.rj = NULL;
	probe_inl_stop(w->inl);
	w->inl = NULL;
	if (w->sess) {
		uint64_t t = prun_mono_ns();

		probe_session_free(w->sess);
		if (w->armed)
			prun_say(w, CT_LOG_INFO, false, "detached in %.1f ms",
				 (double)(prun_mono_ns() - t) / 1e6);
		w->sess = NULL;
	}
}

static int probe_main(struct probe_run *w)
{
	struct target tg;
	int rc;

	perfmap_use_init(&tg.pmu);
	/* A target with hundreds of busy threads would starve clrtap while it opens events and
	 * drains rings (issue 16): raised first, as profile. */
	if (!w->o->list)
		(void)perf_prio_raise(&w->prio);
	rc = open_target(w, &tg);
	if (!rc && w->o->list)
		rc = list(w);
	else if (!rc && !(rc = find(w))) {
		size_t i;

		w->r->nmethods = w->n;
		for (i = 0; i < w->n; i++)
			w->r->methods[i].m = w->found[i];
		if (w->o->via && !strcmp(w->o->via, "rejit")) {
			w->bg.args = !w->o->count;
			w->bg.stack = w->o->stack && !w->o->count;
			w->bg.pp = w->pp;
			w->bg.t0 = w->bg.last_ns = w->t0_mono = prun_mono_ns();
			w->res->exit_code = prun_rejit_direct(w);
			for (i = 0; i < w->n; i++)
				w->r->methods[i].counted = true;
		} else {
			rc = run_native(w, &tg);
			if (rc >= 0)
				w->res->exit_code = rc, rc = 0;
		}
		if (!rc) {
			w->r->nmethods = w->n;
			for (i = 0; i < w->n; i++)
				w->r->methods[i].m = w->found[i];
			name_mechanism(w);
		}
	}
	release_run(w);
	close_target(w, &tg);
	perf_prio_restore(&w->prio);
	return rc;
}

void probe_result_free(void *p)
{
	struct probe_result *r = p;
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nrecs; i++) {
		free(r->recs[i].method_name);
		free(r->recs[i].args);
		free(r->recs[i].ret);
		free(r->recs[i].stack);
	}
	free(r->recs);
	probe_proc_close(r->pp);
	free(r);
}

int probe_task_run(const struct probe_run_opts *o, const struct task_ctx *ctx,
		   struct task_result *res)
{
	struct probe_result *r = calloc(1, sizeof(*r));
	struct probe_run *w = calloc(1, sizeof(*w));
	int rc;

	if (!r || !w) {
		free(r);
		free(w);
		return task_fail(res, -ENOMEM, "out of memory");
	}
	w->o = o;
	w->ctx = ctx;
	w->res = res;
	w->r = r;
	w->where = "on this machine";
	w->bg.pct = o->budget_pct;
	res->data = r;
	res->free_data = probe_result_free;
	r->pid = o->pid;
	snprintf(r->pattern, sizeof(r->pattern), "%s", o->pattern ? o->pattern : "*");
	r->max_records = o->max_records ? o->max_records : PROBE_RECORDS_MAX;
	rc = check(w);
	if (!rc && !o->count && !(r->recs = calloc(r->max_records, sizeof(*r->recs))))
		rc = prun_fail(w, -ENOMEM, EXIT_ERROR, "out of memory");
	if (!rc)
		rc = probe_main(w);
	r->pp = w->pp; /* the records point at its methods */
	free(w);
	if (rc)
		return rc;
	/* the stop flag is the normal end of an open-ended probe: its exit code stays */
	if (o->list)
		return 0;
	return probe_result_json(r, &res->json);
}

int task_run_probe(const struct task_args *a, const struct task_ctx *ctx, struct task_result *res)
{
	struct probe_run_opts o = { 0 };
	const struct task_value *v;
	int err;

	o.pid = a->pid;
	o.pattern = (v = task_arg(a, "method")) && v->s && v->s[0] ? v->s : NULL;
	o.duration_ms = (v = task_arg(a, "duration")) ? (int64_t)(v->d * 1000.0 + 0.5) : 10000;
	o.count = (v = task_arg(a, "count")) && v->b;
	o.args = !o.count && (v = task_arg(a, "args")) && v->b;
	o.ret = !o.count && (v = task_arg(a, "ret")) && v->b;
	o.latency = !o.count && (v = task_arg(a, "latency")) && v->b;
	o.stack = !o.count && (v = task_arg(a, "stack")) && v->b;
	o.lines = o.stack && (v = task_arg(a, "lines")) && v->b;
	o.count_only = o.count;
	o.budget_pct = (v = task_arg(a, "budget")) ? v->d : 5;
	o.no_rejit = (v = task_arg(a, "no_rejit")) && v->b;
	o.via = (v = task_arg(a, "via")) && v->s ? v->s : NULL;
	o.strlen_max = (v = task_arg(a, "strlen")) ? (unsigned)v->i : 64;
	o.max_records = (v = task_arg(a, "records")) ? (size_t)v->i : PROBE_RECORDS_MAX;
	if (!o.max_records)
		o.count = true;
	err = probe_task_run(&o, ctx, res);
	return err;
}
