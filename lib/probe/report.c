/* SPDX-License-Identifier: MIT */
/*
 * report.c - what a probe run says besides its calls: the per-method
 * summary (what was counted, from when, on which code, what was NOT
 * counted and why), the mechanisms that do not fire here, the JIT's
 * inlining of a method without code of its own. Lines go to the task's log;
 * the ones a person needs to read the counts are also the result's
 * statements (docs/tasks/probe.md).
 */
#include "common/compat.h"

#include <time.h>

#include "common/strparse.h"
#include "probe/run.h"

/* Waits until the perf map stops growing (the runtime writes existing code). */
void prun_settle_perfmap(struct probe_proc *pp)
{
	int i, quiet = 0;

	for (i = 0; i < 100 && quiet < 3; i++) {
		size_t added = 0;
		struct timespec ts = { 0, 20000000 };

		nanosleep(&ts, NULL);
		(void)probe_proc_refresh(pp, &added);
		quiet = added ? 0 : quiet + 1;
	}
}

void prun_settle_perfmap_cb(void *pp)
{
	prun_settle_perfmap(pp);
}

/* Inlining seen for methods without code of their own (from the JIT's events). */
void prun_report_inlining(struct probe_run *w)
{
	struct probe_inline_ev ev[16];
	size_t k, n, j;

	if (!w->inl)
		return;
	n = probe_inl_take(w->inl, ev, ARRAY_SIZE(ev));
	for (k = 0; k < n; k++) {
		struct inl_seen *x = NULL;

		for (j = 0; j < w->n_inl_seen; j++)
			if (w->inl_seen[j].failed == !ev[k].inlined &&
			    !strcmp(w->inl_seen[j].inlinee, ev[k].inlinee) &&
			    (!ev[k].inlined || !strcmp(w->inl_seen[j].inliner, ev[k].inliner)))
				x = &w->inl_seen[j];
		if (x) {
			x->count++;
			continue;
		}
		if (w->n_inl_seen == PROBE_RUN_MAX_INL)
			continue;
		x = &w->inl_seen[w->n_inl_seen++];
		ct_strlcpy(x->inlinee, ev[k].inlinee, sizeof(x->inlinee));
		ct_strlcpy(x->inliner, ev[k].inliner, sizeof(x->inliner));
		x->count = 1;
		x->failed = !ev[k].inlined;
		if (ev[k].inlined)
			prun_say(w, CT_LOG_INFO, true, "%s was inlined into %s%s%s: its calls run inside "
				 "that code, not on their own; probe %s instead", ev[k].inlinee,
				 ev[k].inliner, strcmp(ev[k].compiled, ev[k].inliner) ? " (within " : "",
				 strcmp(ev[k].compiled, ev[k].inliner) ? ev[k].compiled : "", ev[k].inliner);
		else
			prun_say(w, CT_LOG_INFO, false, "the JIT did not inline %s into %s: %s",
				 ev[k].inlinee, ev[k].inliner,
				 ev[k].reason[0] ? ev[k].reason : "no reason given");
	}
}

/* Summary line of a method that never had code of its own. */
static void summary_no_code(struct probe_run *w, const struct probe_method *m, bool listened)
{
	struct strbuf sb = STRBUF_INIT_MAX(8192);
	size_t j;
	bool any = false;

	for (j = 0; j < w->n_inl_seen; j++) {
		if (w->inl_seen[j].failed || strcmp(w->inl_seen[j].inlinee, m->name))
			continue;
		if (!any)
			(void)strbuf_addf(&sb, "%s%s: no code of its own: inlined into ", m->name, m->sig);
		else
			(void)strbuf_addstr(&sb, ", ");
		(void)strbuf_addf(&sb, "%s (%u time%s)", w->inl_seen[j].inliner, w->inl_seen[j].count,
				  w->inl_seen[j].count == 1 ? "" : "s");
		any = true;
	}
	if (any)
		prun_say(w, CT_LOG_INFO, true, "%s; its calls are counted only by probing those", sb.buf);
	else if (strchr(m->name, '`'))
		/* a generic type: an instantiation precompiled in another image is not searched */
		prun_say(w, CT_LOG_INFO, true, "%s%s: calls NOT counted: no code of it that clrtap can "
			 "find ran (code of a generic type's instantiation precompiled into another "
			 "assembly is not searched); '--via rejit' sees every call", m->name, m->sig);
	else
		prun_say(w, CT_LOG_INFO, true, "%s%s: no code of its own ran, so no call was seen%s",
			 m->name, m->sig, listened ? "; the JIT did not inline it while clrtap listened "
			 "(not called, or inlined into code compiled before)" : "");
	strbuf_release(&sb);
}

/* When the first code clrtap cannot watch appeared (0: none; 1: there from the start). */
static uint64_t unwatched_since(struct probe_session *s, size_t i, const struct probe_method *m,
				size_t *first_v)
{
	uint64_t since = 0;
	size_t v;

	for (v = 0; v < m->ncode; v++) {
		const struct probe_version_stats *st = probe_session_stats(s, i, v);
		uint64_t t = m->code[v].seen_ns ? m->code[v].seen_ns : 1;

		if (st->unwatchable && (!since || t < since)) {
			since = t;
			*first_v = v;
		}
	}
	return since;
}

/*
 * A method clrtap found no code for at start, whose first code it then
 * learned is a tier that only replaces earlier code (instrumented, tier-1,
 * OSR): that earlier code ran where clrtap did not look (e.g. precompiled
 * code it could not find). Returns when that first version appeared (its
 * index in *first_v), 0 when every call could have been seen.
 */
static uint64_t unfound_before(const struct probe_method *m, size_t *first_v)
{
	uint64_t first = 0;
	size_t v;
	const char *t;

	for (v = 0; v < m->ncode; v++) {
		if (!m->code[v].seen_ns)
			return 0; /* code there from the start */
		if (!first || m->code[v].seen_ns < first) {
			first = m->code[v].seen_ns;
			*first_v = v;
		}
	}
	if (!first)
		return 0;
	t = m->code[*first_v].tier;
	return strstr(t, "Instrumented") || strstr(t, "Tier1") || strstr(t, "OSR") ? first : 0;
}

/*
 * A method with no code at start whose first code (a first compile, not a
 * replacement) appeared during the session: the runtime runs it as soon as it
 * is published, before clrtap can arm it, so calls in between are not seen.
 * Returns when that code was armed (its index in *first_v), 0 otherwise.
 */
static uint64_t armed_late(struct probe_session *s, size_t i, const struct probe_method *m,
			   size_t *first_v)
{
	uint64_t first = 0;
	size_t v, f = 0;

	for (v = 0; v < m->ncode; v++) {
		if (!m->code[v].seen_ns)
			return 0; /* code there from the start */
		if (!first || m->code[v].seen_ns < first) {
			first = m->code[v].seen_ns;
			f = v;
		}
	}
	if (!first)
		return 0;
	*first_v = f;
	return probe_session_stats(s, i, f)->armed_ns;
}

/* The lines of each code version of method i. */
static void summary_versions(struct probe_run *w, size_t i)
{
	const struct probe_method *m = w->found[i];
	struct strbuf sb = STRBUF_INIT_MAX(4096);
	uint64_t prev_last = 0;
	size_t v;

	for (v = 0; v < m->ncode; v++) {
		const struct probe_version_stats *st = probe_session_stats(w->sess, i, v);
		const struct probe_code *c = &m->code[v];

		if (st->handed) {
			prun_say(w, CT_LOG_INFO, false, "  [%s] ReJIT'd code: its calls are counted by the "
				 "profiler (below)", c->tier);
			continue;
		}
		if (st->unwatchable && strcmp(w->where, "on this machine")) {
			prun_say(w, CT_LOG_INFO, false, "  [%s] not watched %s; its calls are not counted",
				 c->tier, w->where);
			continue;
		}
		if (st->unwatchable) {
			prun_say(w, CT_LOG_INFO, false, "  [%s] not watched: %s do not fire on this machine; "
				 "its calls are not counted", c->tier, c->kind == PROBE_CODE_JIT ?
				 "hardware execute breakpoints" : "uprobes");
			continue;
		}
		if (!st->armed_ns && !st->entries) {
			prun_say(w, CT_LOG_INFO, false, "  [%s] never armed (%s): its calls are not counted",
				 c->tier, c->kind == PROBE_CODE_JIT ? "no hardware breakpoint slot left" :
				 "image not mapped");
			continue;
		}
		strbuf_reset(&sb);
		(void)strbuf_addf(&sb, "  [%s] %" PRIu64 " calls (%s%s)", c->tier, st->entries,
				  st->how[0] ? st->how : "not armed", st->armed_ns ? "" : ", never armed");
		if (c->seen_ns && st->armed_ns && prev_last) {
			/* calls between the last hit on older code and arming this one */
			if (st->armed_ns > prev_last && (!st->first_ns || st->first_ns >= st->armed_ns))
				(void)strbuf_addf(&sb, "; armed %.1f ms after the last call on older code: "
						  "calls in that window may be missed",
						  (double)(st->armed_ns - prev_last) / 1e6);
			else
				(void)strbuf_addstr(&sb, "; armed before older code stopped being called: "
						    "no gap");
		}
		prun_say(w, CT_LOG_INFO, false, "%s", sb.buf);
		if (st->last_ns > prev_last)
			prev_last = st->last_ns;
	}
	if (m->dropped_versions)
		prun_say(w, CT_LOG_INFO, true, "  more code versions than followed (%d)",
			 PROBE_MAX_VERSIONS);
	strbuf_release(&sb);
}

/* Method i's line; false when its calls were not counted at all. */
static bool summary_method(struct probe_run *w, size_t i, uint64_t start,
			   struct probe_result_method *rm)
{
	const struct probe_method *m = w->found[i];
	struct strbuf sb = STRBUF_INIT_MAX(8192);
	uint64_t total = 0, rets = 0, lost_since, unfound, late;
	size_t v, lost_v = 0, unfound_v = 0, late_v = 0;

	for (v = 0; v < m->ncode; v++) {
		total += probe_session_stats(w->sess, i, v)->entries;
		rets += probe_session_stats(w->sess, i, v)->returns;
	}
	lost_since = unwatched_since(w->sess, i, m, &lost_v);
	for (v = 0; v < m->ncode; v++)
		if (probe_session_stats(w->sess, i, v)->armed_ns)
			break;
	if (v == m->ncode) {
		/* nothing of it was ever watched: a 0 here would be a guess */
		if (lost_since)
			prun_say(w, CT_LOG_INFO, true, "%s%s: calls NOT counted: its [%s] code cannot be "
				 "watched %s", m->name, m->sig, m->code[lost_v].tier, w->where);
		else
			prun_say(w, CT_LOG_INFO, true, "%s%s: calls NOT counted: none of its code could "
				 "be armed", m->name, m->sig);
		return false;
	}
	unfound = unfound_before(m, &unfound_v);
	if (unfound && !total) {
		/* a 0 here would be false: the calls ran on code clrtap never saw */
		prun_say(w, CT_LOG_INFO, true, "%s%s: calls NOT counted: until +%.3fs it ran code clrtap "
			 "did not find (its first code seen, [%s], replaces earlier code), and no call "
			 "was seen after; '--via rejit' sees every call", m->name, m->sig,
			 (double)(unfound - start) / 1e9, m->code[unfound_v].tier);
		return false;
	}
	late = unfound ? 0 : armed_late(w->sess, i, m, &late_v);
	if (late && !total) {
		/* a 0 here would be a guess: its first calls ran before it was armed */
		prun_say(w, CT_LOG_INFO, true, "%s%s: no call seen after +%.3fs, when its first code "
			 "([%s], compiled at +%.3fs) was armed; calls before that are NOT counted; "
			 "'--via rejit' sees every call", m->name, m->sig, (double)(late - start) / 1e9,
			 m->code[late_v].tier, (double)(m->code[late_v].seen_ns - start) / 1e9);
		return false;
	}
	(void)strbuf_addf(&sb, "%s%s: %" PRIu64 " calls", m->name, m->sig, total);
	if (late) {
		(void)strbuf_addf(&sb, " counted from +%.3fs, when its first code ([%s], compiled at "
				  "+%.3fs) was armed; calls before that are NOT counted",
				  (double)(late - start) / 1e9, m->code[late_v].tier,
				  (double)(m->code[late_v].seen_ns - start) / 1e9);
		rm->counted_from_s = (double)(late - start) / 1e9;
	}
	if (unfound) {
		(void)strbuf_addf(&sb, " counted from +%.3fs; before that it ran code clrtap did not "
				  "find (its first code seen, [%s], replaces earlier code): those calls "
				  "are NOT counted", (double)(unfound - start) / 1e9,
				  m->code[unfound_v].tier);
		rm->counted_from_s = (double)(unfound - start) / 1e9;
	}
	if (rets)
		(void)strbuf_addf(&sb, ", %" PRIu64 " returns seen", rets);
	if (lost_since > 1) {
		(void)strbuf_addf(&sb, " counted until +%.3fs; from then on calls ran [%s] code that "
				  "clrtap cannot watch %s and are NOT counted",
				  (double)(lost_since - start) / 1e9, m->code[lost_v].tier, w->where);
		rm->counted_until_s = (double)(lost_since - start) / 1e9;
	} else if (lost_since) {
		(void)strbuf_addf(&sb, " counted on the code clrtap can watch; calls to its [%s] code "
				  "are NOT counted (cannot be watched %s)", m->code[lost_v].tier, w->where);
	}
	/* a plain count is the record's; what limits it is a statement */
	prun_say(w, CT_LOG_INFO, late || unfound || lost_since, "%s", sb.buf);
	strbuf_release(&sb);
	return true;
}

void prun_summary(struct probe_run *w, bool listened)
{
	uint64_t start = probe_session_start_ns(w->sess);
	size_t i;

	for (i = 0; i < w->n; i++) {
		struct probe_result_method *rm = &w->r->methods[i];

		rm->counted_until_s = -1;
		if (!w->found[i]->ncode) {
			summary_no_code(w, w->found[i], listened);
			continue;
		}
		rm->counted = summary_method(w, i, start, rm);
		if (rm->counted)
			summary_versions(w, i);
	}
	w->r->lost = probe_session_lost(w->sess);
	if (w->r->lost)
		prun_say(w, CT_LOG_INFO, true, "%" PRIu64 " samples lost (ring buffer full)", w->r->lost);
	if (probe_session_foreign(w->sess))
		prun_say(w, CT_LOG_INFO, false, "%" PRIu64 " hits in other processes dropped (per-CPU "
			 "events: other processes running the same code take the trap too)",
			 probe_session_foreign(w->sess));
}

bool prun_has_kind(const struct probe_method *m, enum probe_code_kind k)
{
	size_t v;

	for (v = 0; v < m->ncode; v++)
		if (m->code[v].kind == k)
			return true;
	return false;
}

/* Says in plain words what a mechanism that does not fire here hides. */
void prun_say_unseen(struct probe_run *w, enum probe_mech_kind k, const struct probe_mech *m)
{
	bool refused = !m->forced && m->err;
	char how[160];

	if (m->forced)
		snprintf(how, sizeof(how), "forced by CLRTAP_TEST_MECH_%s", k == PROBE_MECH_HWBP ?
			 "HWBP" : "UPROBE");
	else if (m->err)
		snprintf(how, sizeof(how), "perf_event_open refused it: %s", strerror(-m->err));
	else
		snprintf(how, sizeof(how), "self-test: %u of %u calls seen", m->hits, m->calls);
	if (k == PROBE_MECH_HWBP) {
		prun_say(w, CT_LOG_INFO, true, "hardware execute breakpoints do not fire on this machine "
			 "(%s).", how);
		prun_say(w, CT_LOG_INFO, false, "  What cannot be seen: calls to JIT-compiled code "
			 "(Tier0, tier-1 and OSR code: every method of the app itself, and framework "
			 "methods once they tier up).");
		prun_say(w, CT_LOG_INFO, false, "  Why: %s.", refused ? "the kernel refuses hardware "
			 "execute breakpoints here (a kernel or virtual machine without usable debug "
			 "registers)" : "the kernel accepts the breakpoint but the CPU never reports it, "
			 "as in virtual machines whose hypervisor does not pass the debug registers "
			 "through");
		prun_say(w, CT_LOG_INFO, false, "  What would see them: the in-process ReJIT profiler "
			 "('--via rejit', exact on every tier); framework methods are still seen on "
			 "their ReadyToRun code (uprobes) until they tier up.");
		return;
	}
	prun_say(w, CT_LOG_INFO, true, "uprobes do not fire on this machine (%s).", how);
	prun_say(w, CT_LOG_INFO, false, "  What cannot be seen: calls to ReadyToRun (precompiled "
		 "framework) code.");
	prun_say(w, CT_LOG_INFO, false, "  Why: %s.", refused ? "the kernel refuses uprobes here (a "
		 "kernel built without them, or a filesystem that does not support them)" :
		 "the kernel accepts the probe but it is never hit (a kernel built without working "
		 "uprobes, or a filesystem that does not support them)");
	prun_say(w, CT_LOG_INFO, false, "  What would see them: the in-process ReJIT profiler "
		 "('--via rejit', exact on every tier); JIT-compiled code is still seen by hardware "
		 "breakpoints.");
}

void prun_mech_tests(struct probe_method **ms, size_t n, struct mech_tests *mt)
{
	memset(mt, 0, sizeof(*mt));
	for (size_t i = 0; i < n; i++)
		mt->any_r2r |= prun_has_kind(ms[i], PROBE_CODE_R2R);
	mt->hw_err = probe_mech_check(PROBE_MECH_HWBP, &mt->hw);
	mt->up_err = mt->any_r2r ? probe_mech_check(PROBE_MECH_UPROBE, &mt->up) : -ENOENT;
}

void prun_plan(const struct probe_method *m, const struct mech_tests *mt, bool named, char *buf,
	       size_t len)
{
	char plan[1024];

	probe_mech_plan(m, &mt->hw, mt->hw_err, &mt->up, mt->up_err, plan, sizeof(plan));
	if (named)
		snprintf(buf, len, "%s%s: mechanism: %s", m->name, m->sig, plan);
	else
		snprintf(buf, len, "mechanism: %s", plan);
}

int probe_method_arg_index(const struct probe_method *m, const char *arg)
{
	uint32_t i;
	int v;

	for (i = 0; i < m->psig->nparams && i < PROBE_MAX_ARGS; i++)
		if (m->psig->param_names && m->psig->param_names[i] &&
		    !strcmp(m->psig->param_names[i], arg))
			return (int)i;
	if (!ct_parse_int(arg, &v) && v >= 0 && (uint32_t)v < m->psig->nparams && v < PROBE_MAX_ARGS)
		return v;
	return -1;
}
