/* SPDX-License-Identifier: MIT */
/*
 * handover.c - a probe run's cost budget (lib/probe/budget.c's figures):
 * every 100 ms the share of a core the probe took; over the budget, the
 * hand-over to the in-process ReJIT profiler (clrtap agent probe) or a
 * stop; the ReJIT profiler's lines; and what it all cost the target.
 */
#include "common/compat.h"

#include <time.h>

#include "agent/agent.h"
#include "common/exitcode.h"
#include "probe/run.h"

void prun_fmt_ns(double ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

static unsigned hit_cost(const struct budget *b, enum probe_code_kind k)
{
	return k == PROBE_CODE_R2R ? b->up_ns : b->hw_ns;
}

/* ReJIT's cost of a call: counting, recording (with the stack when asked) */
double prun_rejit_ns(const struct budget *b, bool args)
{
	return !args ? PROBE_REJIT_COUNT_NS : b->stack ? PROBE_REJIT_STACK_NS : PROBE_REJIT_ARGS_NS;
}

/* The agent spec of a method ("Ns.Type::M(int32,string)"), or -EINVAL when
 * its parameter types are not ones the profiler can match. */
static int rejit_spec(const struct probe_method *m, char *out, size_t len)
{
	char cfg[2048];
	size_t cl = 0;

	if (snprintf(out, len, "%s%s", m->name, m->nsig ? m->nsig : "") >= (int)len)
		return -ENAMETOOLONG;
	return agent_config_add_probe(cfg, sizeof(cfg), &cl, out);
}

/* A ReJIT record kept in the result (its line as the profiler wrote it). */
static void keep_rejit_call(struct probe_run *w, const char *line)
{
	struct probe_result *r = w->r;
	struct probe_rec *rec;

	r->calls_total++;
	if (r->nrecs >= r->max_records || r->rec_bytes > PROBE_RECORDS_BYTES)
		return;
	rec = &r->recs[r->nrecs];
	memset(rec, 0, sizeof(*rec));
	rec->method_name = strdup(w->bg.last_method ? w->bg.last_method : "");
	snprintf(rec->tier, sizeof(rec->tier), "rejit");
	rec->t_s = (double)(prun_mono_ns() - w->t0_mono) / 1e9;
	rec->args = strdup(line);
	if (!rec->method_name || !rec->args) {
		free(rec->method_name);
		free(rec->args);
		return;
	}
	r->rec_bytes += strlen(line);
	r->nrecs++;
}

/* The stack of the last ReJIT record, named from the perf map (leaf first). */
static void rejit_stack(struct probe_run *w, const struct probe_rejit_line *rl)
{
	struct budget *b = &w->bg;
	struct strbuf sb = STRBUF_INIT_MAX(8192), fr = STRBUF_INIT_MAX(2048);
	size_t k, shown = 0;

	/* leaf first: the probed method's own code (it called the stub), then its callers */
	for (k = 0; k < rl->nips; k++) {
		strbuf_reset(&fr);
		(void)probe_proc_symbolize(b->pp, rl->ips[k] - (k ? 1 : 0), &fr);
		if (!k && b->last_method && !strncmp(fr.buf, b->last_method, strlen(b->last_method)))
			continue;
		(void)strbuf_addf(&sb, "%s%s", shown++ ? " <- " : "", fr.buf);
	}
	if (w->o->hooks.on_rejit)
		w->o->hooks.on_rejit(w->o->hooks.ctx, sb.buf, true);
	if (w->r->nrecs && w->r->recs[w->r->nrecs - 1].method_name &&
	    !w->r->recs[w->r->nrecs - 1].stack)
		w->r->recs[w->r->nrecs - 1].stack = strdup(sb.buf);
	strbuf_release(&sb);
	strbuf_release(&fr);
}

void prun_rejit_line(void *vctx, const char *line)
{
	struct probe_run *w = vctx;
	struct budget *b = &w->bg;
	struct probe_rejit_line rl;
	size_t i;

	if (probe_rejit_parse_line(line, &rl))
		return;
	switch (rl.kind) {
	case PROBE_RJ_PLACED:
		if (!b->rj_placed)
			b->placed_ns = prun_mono_ns();
		b->rj_placed = true;
		prun_say(w, CT_LOG_INFO, false, "ReJIT: %s", line);
		break;
	case PROBE_RJ_COUNT:
	case PROBE_RJ_FINAL:
		for (i = 0; i < PROBE_RUN_MAX_METHODS && b->specp[i]; i++) {
			if (strcmp(b->specp[i], rl.spec))
				continue;
			if (rl.kind == PROBE_RJ_FINAL) {
				/* overloads under one spec: one line each */
				b->rj_final[i] = (b->rj_final_seen[i] ? b->rj_final[i] : 0) + rl.count;
				b->rj_final_seen[i] = true;
			} else {
				b->rj_count[i] = rl.count;
			}
		}
		break;
	case PROBE_RJ_CALL:
		b->last_method = NULL;
		for (i = 0; i < PROBE_RUN_MAX_METHODS && b->specp[i]; i++) {
			size_t l = strlen(b->specp[i]);

			if (!strncmp(line + 5, b->specp[i], l) && line[5 + l] == ' ')
				b->last_method = b->names[i];
		}
		if (b->rejit_args) {
			if (w->o->hooks.on_rejit)
				w->o->hooks.on_rejit(w->o->hooks.ctx, line, false);
			keep_rejit_call(w, line);
		}
		break;
	case PROBE_RJ_STACK:
		if (b->rejit_args && b->pp)
			rejit_stack(w, &rl);
		break;
	default:
		prun_say(w, CT_LOG_INFO, false, "ReJIT: %s", line);
		break;
	}
}

/* Starts the hand-over to ReJIT; false when it cannot (then the probe stops). */
static bool start_rejit(struct probe_run *w)
{
	struct budget *b = &w->bg;
	size_t i;
	int err;

	for (i = 0; i < w->n; i++) {
		if (rejit_spec(w->found[i], b->specs[i], sizeof(b->specs[i]))) {
			prun_say(w, CT_LOG_INFO, true, "cannot hand over to ReJIT: %s%s: its parameter "
				 "types are not ones the ReJIT profiler can match", w->found[i]->name,
				 w->found[i]->sig);
			return false;
		}
		b->specp[i] = b->specs[i];
		b->names[i] = w->found[i]->name;
	}
	err = probe_rejit_start(w->pid, b->specp, w->n, b->rejit_args, b->rejit_args && b->stack,
				&b->rj);
	if (err) {
		prun_say(w, CT_LOG_INFO, true, "cannot start the ReJIT profiler: %s", strerror(-err));
		return false;
	}
	b->handed_ns = prun_mono_ns();
	return true;
}

static bool hand_over(struct probe_run *w, double share, double rate)
{
	struct budget *b = &w->bg;
	char c1[32];
	size_t i;

	/* counting in place of argument decoding when the arguments would not fit either */
	b->rejit_args = b->args && rate * prun_rejit_ns(b, true) / 1e7 <= b->pct;
	if (!start_rejit(w))
		return false;
	for (i = 0; w->sess && i < w->n; i++)
		probe_session_hand_over(w->sess, i);
	prun_fmt_ns(prun_rejit_ns(b, b->rejit_args), c1, sizeof(c1));
	snprintf(b->action, sizeof(b->action),
		 "handed to ReJIT at +%.3fs: %.0f calls/s cost %.1f%% of a core, over the %g%% "
		 "budget; ReJIT %s costs about %s a call (%.2f%% of a core)%s",
		 (double)(prun_mono_ns() - b->t0) / 1e9, rate, share, b->pct,
		 b->rejit_args ? (b->stack ? "with arguments and stacks" : "with arguments") :
				 "counting", c1, rate * prun_rejit_ns(b, b->rejit_args) / 1e7,
		 b->args && !b->rejit_args ? "; arguments are no longer shown (counting only: "
					     "ReJIT with arguments would be over the budget too)" : "");
	prun_say(w, CT_LOG_INFO, true, "budget: %s", b->action);
	prun_say(w, CT_LOG_INFO, true, "budget: the ReJIT profiler stays loaded in the target "
		 "afterwards, dormant (the runtime never lets a profiler that used ReJIT detach); "
		 "--no-rejit refuses it. The breakpoints stay on the old code until it is no longer "
		 "called, so no call is missed meanwhile");
	b->state = B_HANDING;
	return true;
}

/* The share of a core over the last windows (0 until they cover a second). */
static double window_avg(struct budget *b, double share, uint64_t dt)
{
	double c = 0;
	uint64_t d = 0;
	size_t i;

	b->win_cost[b->win_i % 10] = share * (double)dt / 100.0;
	b->win_dt[b->win_i % 10] = dt;
	b->win_i++;
	for (i = 0; i < 10 && i < b->win_i; i++) {
		c += b->win_cost[i];
		d += b->win_dt[i];
	}
	return d >= 1000000000ull ? probe_budget_share(c, d) : 0;
}

/* While ReJIT takes over: true when the probe must stop. */
static bool handing(struct budget *b, uint64_t now)
{
	int st;

	if (probe_rejit_exited(b->rj, &st)) {
		b->rj_status = st;
		snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: the ReJIT profiler could not "
			 "start (clrtap agent probe exit %d: its message above)",
			 (double)(now - b->t0) / 1e9, st);
		return true;
	}
	if (b->rj_placed && now - b->placed_ns > 500000000ull) {
		/* from now on ReJIT's cost: the breakpoint's windows before are not its */
		b->state = B_REJIT;
		b->win_i = 0;
		memset(b->win_cost, 0, sizeof(b->win_cost));
		memset(b->win_dt, 0, sizeof(b->win_dt));
	} else if (!b->rj_placed && now - b->handed_ns > 5000000000ull) {
		snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: over the %g%% budget and "
			 "ReJIT was not in place within 5 s", (double)(now - b->t0) / 1e9, b->pct);
		return true;
	}
	return false; /* the breakpoints stay while the profiler takes over */
}

/*
 * Every 100 ms: the share of a core the probe took since the last check,
 * from the hits of each code version and its mechanism's cost (ReJIT: its
 * counts). Returns true when the probe must stop (over the budget, nothing
 * cheaper).
 */
bool prun_budget_check(struct probe_run *w)
{
	struct budget *b = &w->bg;
	uint64_t now = prun_mono_ns(), dt = now - b->last_ns, hits = 0, rj = 0;
	double cost = 0, share, rate, avg;
	size_t i, v;

	if (dt < (b->last_ns == b->t0 ? 50000000ull : 100000000ull))
		return false;
	for (i = 0; i < w->n; i++) {
		for (v = 0; w->sess && v < w->found[i]->ncode && v < PROBE_MAX_VERSIONS; v++) {
			const struct probe_version_stats *st = probe_session_stats(w->sess, i, v);
			uint64_t d = st->entries - b->prev[i][v];

			b->prev[i][v] = st->entries;
			hits += d;
			cost += (double)d * hit_cost(b, w->found[i]->code[v].kind);
		}
		rj += b->rj_count[i];
	}
	b->native_cost_ns += cost;
	share = probe_budget_share(cost, dt);
	rate = (double)hits * 1e9 / (double)dt;
	/*
	 * The profiler reports its counts every 250 ms, and they reach clrtap
	 * in bursts (EventPipe flushes): its share is the average since its
	 * first report, once that is a second old.
	 */
	if (rj && !b->rj_prev_ns) {
		b->rj_prev = rj;
		b->rj_prev_ns = now;
	} else if (rj > b->rj_prev && now - b->rj_prev_ns >= 1000000000ull) {
		uint64_t rdt = now - b->rj_prev_ns;

		share += probe_budget_share((double)(rj - b->rj_prev) * prun_rejit_ns(b, b->rejit_args),
					    rdt);
		rate += (double)(rj - b->rj_prev) * 1e9 / (double)rdt;
	}
	b->last_ns = now;
	if (share > b->peak_share)
		b->peak_share = share;
	/*
	 * Over the budget: on average over the last second, or ten times over
	 * it in one window (a hot method is found within 50 ms; a method near
	 * the budget is not handed over on one busy window).
	 */
	avg = window_avg(b, share, dt);
	if (b->state == B_HANDING && b->rj)
		return handing(b, now);
	if (avg <= b->pct && share <= 10 * b->pct)
		return false;
	if (share <= 10 * b->pct)
		share = avg; /* what the message says: the second's average */
	if (b->state == B_NATIVE && b->rejit_ok &&
	    rate * PROBE_REJIT_COUNT_NS / 1e7 <= b->pct && hand_over(w, share, rate))
		return false;
	snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: %.0f calls/s cost %.1f%% of a "
		 "core, over the %g%% budget%s", (double)(now - b->t0) / 1e9, rate, share, b->pct,
		 b->state != B_NATIVE ? " even under ReJIT" :
		 !b->rejit_ok ? " (the ReJIT hand-over was refused: --no-rejit or --via)" :
		 rate * PROBE_REJIT_COUNT_NS / 1e7 > b->pct ? " even under ReJIT's count" :
		 " and ReJIT could not take over");
	return true;
}

/* What the probe cost the target, per method and in all (the log and the result). */
void prun_budget_summary(struct probe_run *w)
{
	struct budget *b = &w->bg;
	struct probe_result *r = w->r;
	struct strbuf sb = STRBUF_INIT_MAX(4096);
	uint64_t wall = prun_mono_ns() - b->t0, tn = 0, tr = 0;
	double cost = 0;
	char c1[32], c2[32], c3[32];
	size_t i, v;

	for (i = 0; i < w->n; i++) {
		struct probe_result_method *rm = &r->methods[i];
		uint64_t nat = 0, rj = b->rj_final_seen[i] ? b->rj_final[i] : b->rj_count[i];
		double mc = 0;

		for (v = 0; w->sess && v < w->found[i]->ncode && v < PROBE_MAX_VERSIONS; v++) {
			const struct probe_version_stats *st = probe_session_stats(w->sess, i, v);

			nat += st->entries;
			mc += (double)st->entries * hit_cost(b, w->found[i]->code[v].kind);
		}
		mc += (double)rj * prun_rejit_ns(b, b->rejit_args);
		tn += nat;
		tr += rj;
		cost += mc;
		rm->calls = nat + rj;
		rm->calls_native = nat;
		rm->calls_rejit = rj;
		rm->rejit_final = !b->rj || b->rj_final_seen[i];
		if (b->rj)
			prun_say(w, CT_LOG_INFO, false, "%s%s: %" PRIu64 " calls in all: %" PRIu64 " on "
				 "the code clrtap's breakpoint/uprobe watched, %" PRIu64 " counted by "
				 "ReJIT%s", w->found[i]->name, w->found[i]->sig, nat + rj, nat, rj,
				 b->rj_final_seen[i] ? "" : " (its last report: the final count did not come)");
	}
	prun_fmt_ns(b->hw_ns, c1, sizeof(c1));
	prun_fmt_ns(b->up_ns, c2, sizeof(c2));
	prun_fmt_ns(cost, c3, sizeof(c3));
	(void)strbuf_addstr(&sb, "cost to the target (estimated): ");
	if (w->sess)
		(void)strbuf_addf(&sb, "%" PRIu64 " breakpoint/uprobe hits x (%s a breakpoint hit%s, %s "
				  "an uprobe hit%s)%s", tn, c1, b->hw_measured ? ", measured here" :
				  ", assumed", c2, b->up_measured ? ", measured here" : ", assumed",
				  b->rj ? " + " : "");
	if (b->rj)
		(void)strbuf_addf(&sb, "%" PRIu64 " ReJIT calls x ~%.0f ns", tr,
				  prun_rejit_ns(b, b->rejit_args));
	(void)strbuf_addf(&sb, " = %s of CPU over %.1f s: %.2f%% of one core on average (peak "
			  "%.1f%% in a 100 ms window; budget %g%%)", c3, (double)wall / 1e9,
			  probe_budget_share(cost, wall), b->peak_share, b->pct);
	prun_say(w, CT_LOG_INFO, false, "%s", sb.buf);
	strbuf_release(&sb);
	if (b->action[0] && !b->over)
		prun_say(w, CT_LOG_INFO, true, "budget: %s", b->action);
	r->budget_pct = b->pct;
	r->cost_ns = cost;
	r->seconds = (double)wall / 1e9;
	r->share_pct = probe_budget_share(cost, wall);
	r->peak_share_pct = b->peak_share;
	r->over_budget = b->over;
	r->handed_to_rejit = b->rj != NULL;
	r->rejit_args = b->rejit_args;
	r->hw_ns = b->hw_ns;
	r->up_ns = b->up_ns;
	r->hw_measured = b->hw_measured;
	r->up_measured = b->up_measured;
	r->rejit_call_ns = (unsigned)prun_rejit_ns(b, b->rejit_args);
	snprintf(r->action, sizeof(r->action), "%s", b->action);
}

/*
 * --via rejit with --stack (or JSON): the ReJIT profiler from the start (no
 * breakpoint), its records' stacks named here from the perf map. The budget
 * still applies (stopped over it: EXIT_OVER_BUDGET). Returns the exit code.
 */
int prun_rejit_direct(struct probe_run *w)
{
	const volatile sig_atomic_t *stop = w->ctx ? w->ctx->stop : NULL;
	struct budget *b = &w->bg;
	int rc = EXIT_OK, st;

	b->rejit_args = b->args;
	if (!start_rejit(w))
		return EXIT_ERROR;
	b->state = B_HANDING;
	prun_say(w, CT_LOG_INFO, true, "--via rejit: the in-process profiler %s (about %.0f ns a "
		 "call: at most %.0f calls/s in the %g%% budget); it stays loaded in the target "
		 "afterwards, dormant", !b->args ? "counts every call" : b->stack ?
		 "records every call with its stack" : "records every call",
		 prun_rejit_ns(b, b->args), b->pct * 1e7 / prun_rejit_ns(b, b->args), b->pct);
	while (!(stop && *stop)) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (probe_rejit_poll(b->rj, prun_rejit_line, w) == 1)
			break;
		(void)probe_proc_refresh(b->pp, NULL); /* the re-JIT'd code's perf map lines */
		if (prun_budget_check(w)) {
			b->over = !b->rj_status; /* else: the profiler could not start */
			prun_say(w, CT_LOG_INFO, true, "%s%s", b->over ? "budget: " : "", b->action);
			break;
		}
		if (w->o->duration_ms &&
		    (int64_t)((prun_mono_ns() - b->t0) / 1000000) >= w->o->duration_ms)
			break;
		nanosleep(&ts, NULL);
	}
	w->r->partial = stop && *stop;
	st = probe_rejit_stop(b->rj, 6000, prun_rejit_line, w);
	if (st && st != 130)
		rc = st; /* the agent's own exit code: 20-22 say why it could not attach */
	if (b->over)
		rc = EXIT_OVER_BUDGET;
	prun_budget_summary(w);
	return rc;
}
