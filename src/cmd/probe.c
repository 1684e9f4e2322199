/* SPDX-License-Identifier: MIT */
/*
 * clrtap probe - dynamic tracing of .NET methods by name: where their code
 * is (--list, --emit), and a line per call with arguments, return value,
 * latency and stack, following the method across tier-up. The work is in
 * lib/probe; this file parses options, prints, and restores the perf map.
 */
#include "common/compat.h"

#include <signal.h>
#include <time.h>

#include "agent/agent.h"
#include "cli.h"
#include "perf/perf.h"
#include "perfmap/perfmap.h"
#include "probe/probe.h"

#define MAX_METHODS 16
#define MAX_LIST 100000

struct out_ctx {
	bool count_only, want_ret;
	const char *hist_arg; /* NULL, "latency", a parameter name or index */
	struct probe_hist hist;
	uint64_t calls;
};

/* Where code goes unwatched: proven not to fire here, or left out by --via. */
static const char *g_where = "on this machine";

static void fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000ull);
	struct tm tm;

	localtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%06u", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ns % 1000000000ull / 1000));
}

static void fmt_dur(uint64_t ns, char *buf, size_t len)
{
	if (ns < 10000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
}

static int hist_index(const struct probe_method *m, const char *arg)
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

static void on_call(void *vctx, const struct probe_call *c)
{
	struct out_ctx *o = vctx;
	char ts[32], lat[32];

	o->calls++;
	if (o->hist_arg) {
		if (!strcmp(o->hist_arg, "latency")) {
			if (c->has_entry && c->has_ret)
				probe_hist_add(&o->hist, (int64_t)c->latency_ns);
		} else {
			int i = hist_index(c->method, o->hist_arg);

			if (i >= 0 && c->arg_valid[i])
				probe_hist_add(&o->hist, c->arg_num[i]);
		}
	}
	if (o->count_only)
		return;
	fmt_time(c->time_ns, ts, sizeof(ts));
	/* names and argument values come from the target: through cli_safe() */
	printf("%s tid=%u %s(%s)", ts, c->tid, cli_safe(c->method->name),
	       c->args ? cli_safe(c->args) : (c->has_entry ? "" : "?"));
	if (c->ret)
		printf(" = %s", cli_safe(c->ret));
	else if (o->want_ret && c->has_entry)
		printf(" = ? (return not seen)");
	if (c->has_entry && c->has_ret) {
		fmt_dur(c->latency_ns, lat, sizeof(lat));
		printf(" %s", lat);
	}
	printf(" [%s]", c->method->code[c->version].tier);
	if (!c->has_entry)
		printf(" (entry not seen)");
	putchar('\n');
	if (c->stack)
		printf("    at %s\n", cli_safe(c->stack));
	fflush(stdout);
}

static void on_note(void *vctx, enum probe_note_kind k, const char *msg)
{
	(void)vctx;
	if (k == PROBE_NOTE_WARN)
		cli_warn("%s", msg);
	else
		cli_print_line(stderr, "", msg);
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

static void print_method(const struct probe_method *m, const char *emit)
{
	size_t i;
	bool any = false;

	if (emit) {
		for (i = 0; i < m->ncode; i++) {
			const struct probe_code *c = &m->code[i];

			if (c->kind != PROBE_CODE_R2R)
				continue;
			any = true;
			if (!strcmp(emit, "perf"))
				printf("perf probe -x %s --add 0x%" PRIx64 "   # %s%s\n",
				       cli_safe(m->image), c->file_offset, cli_safe(m->name),
				       cli_safe(m->sig));
			else
				printf("bpftrace -e 'uprobe:%s:0x%" PRIx64 " /pid == $1/ { printf(\"%s "
				       "arg0=%%ld arg1=%%ld\\n\", arg0, arg1); }'   # file offset\n",
				       cli_safe(m->image), c->file_offset, cli_safe(m->name));
		}
		if (!any)
			printf("# %s%s: no ReadyToRun code (JIT only: no uprobe possible)\n",
			       cli_safe(m->name), cli_safe(m->sig));
		return;
	}
	printf("%s%s %s [%s]\n", cli_safe(m->name), cli_safe(m->sig), cli_safe(m->ret),
	       cli_safe(m->module));
	for (i = 0; i < m->ncode; i++) {
		const struct probe_code *c = &m->code[i];

		if (c->kind == PROBE_CODE_R2R)
			printf("    R2R  %s+0x%" PRIx64 " size %" PRIu64 " addr 0x%" PRIx64 "%s%s\n",
			       cli_safe(m->image), c->file_offset, c->size, c->addr,
			       c->inst[0] ? " " : "", cli_safe(c->inst));
		else
			printf("    JIT  0x%" PRIx64 " size %" PRIu64 " %s%s%s\n", c->addr, c->size,
			       cli_safe(c->tier), c->inst[0] ? " " : "", cli_safe(c->inst));
	}
	if (!m->ncode)
		printf("    not compiled (never called yet, or inlined into its callers: probing it "
		       "names the callers the JIT inlines it into)\n");
}

/* Waits until the perf map stops growing (the runtime writes existing code). */
static void settle_perfmap(struct probe_proc *pp)
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

static void settle_perfmap_cb(void *pp)
{
	settle_perfmap(pp);
}

/* Inlining seen for methods without code of their own (from the JIT's events). */
#define MAX_INL 32
struct inl_seen {
	char inlinee[PROBE_PM_NAME_MAX], inliner[PROBE_PM_NAME_MAX];
	unsigned count;
	bool failed;
};
static struct inl_seen inl_seen[MAX_INL];
static size_t n_inl_seen;

static void report_inlining(struct probe_inl *inl)
{
	struct probe_inline_ev ev[16];
	size_t k, n, j;

	if (!inl)
		return;
	n = probe_inl_take(inl, ev, ARRAY_SIZE(ev));
	for (k = 0; k < n; k++) {
		struct inl_seen *x = NULL;

		for (j = 0; j < n_inl_seen; j++)
			if (inl_seen[j].failed == !ev[k].inlined &&
			    !strcmp(inl_seen[j].inlinee, ev[k].inlinee) &&
			    (!ev[k].inlined || !strcmp(inl_seen[j].inliner, ev[k].inliner)))
				x = &inl_seen[j];
		if (x) {
			x->count++;
			continue;
		}
		if (n_inl_seen == MAX_INL)
			continue;
		x = &inl_seen[n_inl_seen++];
		ct_strlcpy(x->inlinee, ev[k].inlinee, sizeof(x->inlinee));
		ct_strlcpy(x->inliner, ev[k].inliner, sizeof(x->inliner));
		x->count = 1;
		x->failed = !ev[k].inlined;
		if (ev[k].inlined)
			fprintf(stderr, "clrtap: %s was inlined into %s%s%s: its calls run inside that "
					"code, not on their own; probe %s instead\n", cli_safe(ev[k].inlinee),
				cli_safe(ev[k].inliner), strcmp(ev[k].compiled, ev[k].inliner) ? " (within " : "",
				strcmp(ev[k].compiled, ev[k].inliner) ? cli_safe(ev[k].compiled) : "",
				cli_safe(ev[k].inliner));
		else
			fprintf(stderr, "clrtap: the JIT did not inline %s into %s: %s\n", cli_safe(ev[k].inlinee),
				cli_safe(ev[k].inliner), ev[k].reason[0] ? cli_safe(ev[k].reason) : "no reason given");
	}
}

/* Summary line of a method that never had code of its own. */
static void summary_no_code(const struct probe_method *m, bool listened)
{
	size_t j;
	bool any = false;

	for (j = 0; j < n_inl_seen; j++) {
		if (inl_seen[j].failed || strcmp(inl_seen[j].inlinee, m->name))
			continue;
		fprintf(stderr, "%s%s", any ? ", " : "clrtap: ", any ? "" : cli_safe(m->name));
		if (!any)
			fprintf(stderr, "%s: no code of its own: inlined into ", cli_safe(m->sig));
		fprintf(stderr, "%s (%u time%s)", cli_safe(inl_seen[j].inliner), inl_seen[j].count,
			inl_seen[j].count == 1 ? "" : "s");
		any = true;
	}
	if (any)
		fputs("; its calls are counted only by probing those\n", stderr);
	else if (strchr(m->name, '`'))
		/* a generic type: an instantiation precompiled in another image is not searched */
		fprintf(stderr, "clrtap: %s%s: calls NOT counted: no code of it that clrtap can find "
				"ran (code of a generic type's instantiation precompiled into another "
				"assembly is not searched); '--via rejit' sees every call\n",
			cli_safe(m->name), cli_safe(m->sig));
	else
		fprintf(stderr, "clrtap: %s%s: no code of its own ran, so no call was seen%s\n", cli_safe(m->name),
			cli_safe(m->sig), listened ? "; the JIT did not inline it while clrtap listened (not "
					   "called, or inlined into code compiled before)" : "");
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
	{
		const char *t = m->code[*first_v].tier;

		return strstr(t, "Instrumented") || strstr(t, "Tier1") || strstr(t, "OSR") ? first : 0;
	}
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

static void summary(struct probe_session *s, struct probe_method **ms, size_t n, bool listened)
{
	uint64_t start = probe_session_start_ns(s);
	size_t i, v;

	for (i = 0; i < n; i++) {
		uint64_t total = 0, rets = 0;
		uint64_t prev_last = 0, lost_since, unfound, late;
		size_t lost_v = 0, unfound_v = 0, late_v = 0;

		for (v = 0; v < ms[i]->ncode; v++) {
			const struct probe_version_stats *st = probe_session_stats(s, i, v);

			total += st->entries;
			rets += st->returns;
		}
		if (!ms[i]->ncode) {
			summary_no_code(ms[i], listened);
			continue;
		}
		lost_since = unwatched_since(s, i, ms[i], &lost_v);
		for (v = 0; v < ms[i]->ncode; v++)
			if (probe_session_stats(s, i, v)->armed_ns)
				break;
		if (ms[i]->ncode && v == ms[i]->ncode) {
			/* nothing of it was ever watched: a 0 here would be a guess */
			if (lost_since)
				fprintf(stderr, "clrtap: %s%s: calls NOT counted: its [%s] code cannot "
						"be watched %s\n", cli_safe(ms[i]->name), cli_safe(ms[i]->sig),
					ms[i]->code[lost_v].tier, g_where);
			else
				fprintf(stderr, "clrtap: %s%s: calls NOT counted: none of its code could "
						"be armed\n", cli_safe(ms[i]->name), cli_safe(ms[i]->sig));
			continue;
		}
		unfound = unfound_before(ms[i], &unfound_v);
		if (unfound && !total) {
			/* a 0 here would be false: the calls ran on code clrtap never saw */
			fprintf(stderr, "clrtap: %s%s: calls NOT counted: until +%.3fs it ran code "
					"clrtap did not find (its first code seen, [%s], replaces earlier "
					"code), and no call was seen after; '--via rejit' sees every call\n",
				cli_safe(ms[i]->name), cli_safe(ms[i]->sig),
				(double)(unfound - start) / 1e9, ms[i]->code[unfound_v].tier);
			continue;
		}
		late = unfound ? 0 : armed_late(s, i, ms[i], &late_v);
		if (late && !total) {
			/* a 0 here would be a guess: its first calls ran before it was armed */
			fprintf(stderr, "clrtap: %s%s: no call seen after +%.3fs, when its first code "
					"([%s], compiled at +%.3fs) was armed; calls before that are NOT "
					"counted; '--via rejit' sees every call\n",
				cli_safe(ms[i]->name), cli_safe(ms[i]->sig), (double)(late - start) / 1e9,
				ms[i]->code[late_v].tier,
				(double)(ms[i]->code[late_v].seen_ns - start) / 1e9);
			continue;
		}
		fprintf(stderr, "clrtap: %s%s: %" PRIu64 " calls", cli_safe(ms[i]->name),
			cli_safe(ms[i]->sig), total);
		if (late)
			fprintf(stderr, " counted from +%.3fs, when its first code ([%s], compiled at "
					"+%.3fs) was armed; calls before that are NOT counted",
				(double)(late - start) / 1e9, ms[i]->code[late_v].tier,
				(double)(ms[i]->code[late_v].seen_ns - start) / 1e9);
		if (unfound)
			fprintf(stderr, " counted from +%.3fs; before that it ran code clrtap did not "
					"find (its first code seen, [%s], replaces earlier code): those calls "
					"are NOT counted", (double)(unfound - start) / 1e9,
				ms[i]->code[unfound_v].tier);
		if (rets)
			fprintf(stderr, ", %" PRIu64 " returns seen", rets);
		if (lost_since > 1)
			fprintf(stderr, " counted until +%.3fs; from then on calls ran [%s] code that "
					"clrtap cannot watch %s and are NOT counted",
				(double)(lost_since - start) / 1e9, ms[i]->code[lost_v].tier, g_where);
		else if (lost_since)
			fprintf(stderr, " counted on the code clrtap can watch; calls to its [%s] code "
					"are NOT counted (cannot be watched %s)",
				ms[i]->code[lost_v].tier, g_where);
		fputc('\n', stderr);
		for (v = 0; v < ms[i]->ncode; v++) {
			const struct probe_version_stats *st = probe_session_stats(s, i, v);
			const struct probe_code *c = &ms[i]->code[v];

			if (st->handed) {
				fprintf(stderr, "clrtap:   [%s] ReJIT'd code: its calls are counted by "
						"the profiler (below)\n", c->tier);
				continue;
			}
			if (st->unwatchable && strcmp(g_where, "on this machine")) {
				fprintf(stderr, "clrtap:   [%s] not watched %s; its calls are not counted\n",
					c->tier, g_where);
				continue;
			}
			if (st->unwatchable) {
				fprintf(stderr, "clrtap:   [%s] not watched: %s do not fire on this machine; "
						"its calls are not counted\n", c->tier,
					c->kind == PROBE_CODE_JIT ? "hardware execute breakpoints" :
								    "uprobes");
				continue;
			}
			if (!st->armed_ns && !st->entries) {
				fprintf(stderr, "clrtap:   [%s] never armed (%s): its calls are not "
						"counted\n", c->tier, c->kind == PROBE_CODE_JIT ?
						"no hardware breakpoint slot left" : "image not mapped");
				continue;
			}
			fprintf(stderr, "clrtap:   [%s] %" PRIu64 " calls (%s%s)", c->tier, st->entries,
				st->how[0] ? st->how : "not armed",
				st->armed_ns ? "" : ", never armed");
			if (c->seen_ns && st->armed_ns && prev_last) {
				/* calls between the last hit on older code and arming this one */
				if (st->armed_ns > prev_last && (!st->first_ns || st->first_ns >= st->armed_ns))
					fprintf(stderr, "; armed %.1f ms after the last call on older code: "
							"calls in that window may be missed",
						(double)(st->armed_ns - prev_last) / 1e6);
				else
					fprintf(stderr, "; armed before older code stopped being called: "
							"no gap");
			}
			fputc('\n', stderr);
			if (st->last_ns > prev_last)
				prev_last = st->last_ns;
		}
		if (ms[i]->dropped_versions)
			fprintf(stderr, "clrtap:   more code versions than followed (%d)\n",
				PROBE_MAX_VERSIONS);
	}
	if (probe_session_lost(s))
		fprintf(stderr, "clrtap: %" PRIu64 " samples lost (ring buffer full)\n",
			probe_session_lost(s));
	if (probe_session_foreign(s))
		fprintf(stderr, "clrtap: %" PRIu64 " hits in other processes dropped (per-CPU events: "
				"other processes running the same code take the trap too)\n",
			probe_session_foreign(s));
}

static double ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

static bool has_kind(const struct probe_method *m, enum probe_code_kind k)
{
	size_t v;

	for (v = 0; v < m->ncode; v++)
		if (m->code[v].kind == k)
			return true;
	return false;
}

/* Says in plain words what a mechanism that does not fire here hides. */
static void say_unseen(enum probe_mech_kind k, const struct probe_mech *m)
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
	if (k == PROBE_MECH_HWBP)
		fprintf(stderr,
			"clrtap: hardware execute breakpoints do not fire on this machine (%s).\n"
			"clrtap:   What cannot be seen: calls to JIT-compiled code (Tier0, tier-1 and OSR "
			"code: every method of the app itself, and framework methods once they tier up).\n"
			"clrtap:   Why: %s.\n"
			"clrtap:   What would see them: the in-process ReJIT profiler ('--via rejit', "
			"exact on every tier); framework methods are still seen on their ReadyToRun code (uprobes) "
			"until they tier up.\n",
			how, refused ? "the kernel refuses hardware execute breakpoints here (a kernel "
				       "or virtual machine without usable debug registers)" :
				       "the kernel accepts the breakpoint but the CPU never reports "
				       "it, as in virtual machines whose hypervisor does not pass the "
				       "debug registers through");
	else
		fprintf(stderr,
			"clrtap: uprobes do not fire on this machine (%s).\n"
			"clrtap:   What cannot be seen: calls to ReadyToRun (precompiled framework) code.\n"
			"clrtap:   Why: %s.\n"
			"clrtap:   What would see them: the in-process ReJIT profiler ('--via rejit', "
			"exact on every tier); JIT-compiled code is still seen by hardware breakpoints.\n",
			how, refused ? "the kernel refuses uprobes here (a kernel built without them, or "
				       "a filesystem that does not support them)" :
				       "the kernel accepts the probe but it is never hit (a kernel built "
				       "without working uprobes, or a filesystem that does not support "
				       "them)");
}

/* The mechanism self-tests a set of methods needs (uprobe only where one
 * has ReadyToRun code). */
struct mech_tests {
	struct probe_mech hw, up;
	int hw_err, up_err;
	bool any_r2r;
};

static void run_mech_tests(struct probe_method **ms, size_t n, struct mech_tests *mt)
{
	memset(mt, 0, sizeof(*mt));
	for (size_t i = 0; i < n; i++)
		mt->any_r2r |= has_kind(ms[i], PROBE_CODE_R2R);
	mt->hw_err = probe_mech_check(PROBE_MECH_HWBP, &mt->hw);
	mt->up_err = mt->any_r2r ? probe_mech_check(PROBE_MECH_UPROBE, &mt->up) : -ENOENT;
}

/* "mechanism: ..." for one method: which code gets which mechanism here;
 * named: prefix and the method's name first (the start lines on stderr). */
static void print_plan(FILE *f, const char *prefix, bool named, const struct probe_method *m,
		       const struct mech_tests *mt)
{
	char plan[1024];

	probe_mech_plan(m, &mt->hw, mt->hw_err, &mt->up, mt->up_err, plan, sizeof(plan));
	if (named)
		fprintf(f, "%s%s%s: mechanism: %s\n", prefix, cli_safe(m->name), cli_safe(m->sig),
			plan);
	else
		fprintf(f, "%smechanism: %s\n", prefix, plan);
}

/* --via rejit: the same request through `clrtap agent probe`. */
static int probe_via_rejit(const struct cli_target_opts *to, const char *pattern, bool count,
			   int64_t duration_ms)
{
	char pid[16], secs[32];
	char *av[12];
	int ac = 0;

	if (!pattern)
		return cli_error(EXIT_USAGE, "say which method: clrtap probe -p PID 'Ns.Type::Method'");
	av[ac++] = "probe"; /* argv[0] "probe": cmd_agent prints in probe's shape */
	av[ac++] = "probe";
	if (to->name) {
		av[ac++] = "-n";
		av[ac++] = (char *)to->name;
	} else {
		snprintf(pid, sizeof(pid), "%d", (int)to->pid);
		av[ac++] = "-p";
		av[ac++] = pid;
	}
	if (!count)
		av[ac++] = "--args";
	if (duration_ms > 0) {
		/* the same duration syntax: exact milliseconds */
		snprintf(secs, sizeof(secs), "%lldms", (long long)duration_ms);
		av[ac++] = "-d";
		av[ac++] = secs;
	}
	av[ac++] = (char *)pattern;
	av[ac] = NULL;
	return cmd_agent(ac, av);
}

/* ---- the cost budget (lib/probe/budget.c) ---- */

enum bstate { B_NATIVE = 0, B_HANDING, B_REJIT };

struct budget {
	double pct;              /* share of one core the probe may take */
	bool rejit_ok;           /* the hand-over to ReJIT is allowed */
	bool args;               /* arguments asked (not --count) */
	unsigned hw_ns, up_ns;   /* cost of one hit here */
	bool hw_measured, up_measured;
	enum bstate state;
	uint64_t t0, last_ns, handed_ns, placed_ns;
	uint64_t prev[MAX_METHODS][PROBE_MAX_VERSIONS];
	uint64_t rj_prev, rj_prev_ns;
	double native_cost_ns;   /* every hit so far x its mechanism's cost */
	double peak_share;       /* the highest share a window had */
	double win_cost[10];     /* the last ten windows: cost (ns), length (ns) */
	uint64_t win_dt[10];
	size_t win_i;
	bool rejit_args;         /* the ReJIT probes record arguments */
	bool over;               /* stopped: over the budget */
	struct probe_rejit *rj;
	char specs[MAX_METHODS][PROBE_PM_NAME_MAX + 256];
	const char *names[MAX_METHODS];
	const char *specp[MAX_METHODS];
	uint64_t rj_count[MAX_METHODS], rj_final[MAX_METHODS];
	bool rj_final_seen[MAX_METHODS], rj_placed;
	char action[512];        /* what the budget made clrtap do, for the summary and JSON */
	int rj_status;
	bool json;
	bool stack;              /* --stack: the ReJIT records carry the caller's stack */
	struct probe_proc *pp;   /* names the stacks' IPs (perf map) */
	const char *last_method; /* the method of the last call line (its own frame is dropped) */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fmt_ns(double ns, char *buf, size_t len)
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
static double rejit_ns(const struct budget *b, bool args)
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

static void rejit_line(void *vctx, const char *line)
{
	struct budget *b = vctx;
	struct probe_rejit_line rl;
	size_t i;

	if (probe_rejit_parse_line(line, &rl))
		return;
	switch (rl.kind) {
	case PROBE_RJ_PLACED:
		if (!b->rj_placed)
			b->placed_ns = mono_ns();
		b->rj_placed = true;
		fprintf(stderr, "clrtap: ReJIT: %s\n", cli_safe(line));
		break;
	case PROBE_RJ_COUNT:
	case PROBE_RJ_FINAL:
		for (i = 0; i < MAX_METHODS && b->specp[i]; i++) {
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
		if (b->rejit_args && !b->json) {
			printf("%s\n", cli_safe(line)); /* the child's cli_safe'd line: unchanged */
			fflush(stdout);
		}
		b->last_method = NULL;
		for (i = 0; i < MAX_METHODS && b->specp[i]; i++) {
			size_t l = strlen(b->specp[i]);

			if (!strncmp(line + 5, b->specp[i], l) && line[5 + l] == ' ')
				b->last_method = b->names[i];
		}
		break;
	case PROBE_RJ_STACK:
		if (b->rejit_args && !b->json && b->pp) {
			struct strbuf sb = STRBUF_INIT_MAX(8192), fr = STRBUF_INIT_MAX(2048);
			size_t k, shown = 0;

			/* leaf first: the probed method's own code (it called the stub), then its callers */
			for (k = 0; k < rl.nips; k++) {
				strbuf_reset(&fr);
				(void)probe_proc_symbolize(b->pp, rl.ips[k] - (k ? 1 : 0), &fr);
				if (!k && b->last_method && !strncmp(fr.buf, b->last_method,
								     strlen(b->last_method)))
					continue;
				(void)strbuf_addf(&sb, "%s%s", shown++ ? " <- " : "", fr.buf);
			}
			printf("    at %s\n", cli_safe(sb.buf));
			fflush(stdout);
			strbuf_release(&sb);
			strbuf_release(&fr);
		}
		break;
	default:
		fprintf(stderr, "clrtap: ReJIT: %s\n", cli_safe(line));
		break;
	}
}

/* Starts the hand-over to ReJIT; false when it cannot (then the probe stops). */
static bool start_rejit(struct budget *b, struct probe_method **ms, size_t n, pid_t pid)
{
	char why[256];
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		if (rejit_spec(ms[i], b->specs[i], sizeof(b->specs[i]))) {
			snprintf(why, sizeof(why), "%s%s: its parameter types are not ones the ReJIT "
				 "profiler can match", ms[i]->name, ms[i]->sig);
			fprintf(stderr, "clrtap: cannot hand over to ReJIT: %s\n", cli_safe(why));
			return false;
		}
		b->specp[i] = b->specs[i];
		b->names[i] = ms[i]->name;
	}
	err = probe_rejit_start(pid, b->specp, n, b->rejit_args, b->rejit_args && b->stack, &b->rj);
	if (err) {
		fprintf(stderr, "clrtap: cannot start the ReJIT profiler: %s\n", strerror(-err));
		return false;
	}
	b->handed_ns = mono_ns();
	return true;
}

static bool hand_over(struct budget *b, struct probe_session *s, struct probe_method **ms,
		      size_t n, pid_t pid, double share, double rate)
{
	char c1[32];
	size_t i;

	/* counting in place of argument decoding when the arguments would not fit either */
	b->rejit_args = b->args && rate * rejit_ns(b, true) / 1e7 <= b->pct;
	if (!start_rejit(b, ms, n, pid))
		return false;
	for (i = 0; s && i < n; i++)
		probe_session_hand_over(s, i);
	fmt_ns(rejit_ns(b, b->rejit_args), c1, sizeof(c1));
	snprintf(b->action, sizeof(b->action),
		 "handed to ReJIT at +%.3fs: %.0f calls/s cost %.1f%% of a core, over the %g%% "
		 "budget; ReJIT %s costs about %s a call (%.2f%% of a core)%s",
		 (double)(mono_ns() - b->t0) / 1e9, rate, share, b->pct,
		 b->rejit_args ? (b->stack ? "with arguments and stacks" : "with arguments") :
				 "counting", c1, rate * rejit_ns(b, b->rejit_args) / 1e7,
		 b->args && !b->rejit_args ? "; arguments are no longer shown (counting only: "
					     "ReJIT with arguments would be over the budget too)" : "");
	fprintf(stderr, "clrtap: budget: %s\n", b->action);
	fprintf(stderr, "clrtap: budget: the ReJIT profiler stays loaded in the target afterwards, "
			"dormant (the runtime never lets a profiler that used ReJIT detach); "
			"--no-rejit refuses it. The breakpoints stay on the old code until it is no "
			"longer called, so no call is missed meanwhile\n");
	b->state = B_HANDING;
	return true;
}

/*
 * Every 100 ms: the share of a core the probe took since the last check,
 * from the hits of each code version and its mechanism's cost (ReJIT: its
 * counts). Returns true when the probe must stop (over the budget, nothing
 * cheaper).
 */
static bool budget_check(struct budget *b, struct probe_session *s, struct probe_method **ms,
			 size_t n, pid_t pid)
{
	uint64_t now = mono_ns(), dt = now - b->last_ns, hits = 0, rj = 0;
	double cost = 0, share, rate, avg;
	size_t i, v;

	if (dt < (b->last_ns == b->t0 ? 50000000ull : 100000000ull))
		return false;
	for (i = 0; i < n; i++) {
		for (v = 0; s && v < ms[i]->ncode && v < PROBE_MAX_VERSIONS; v++) {
			const struct probe_version_stats *st = probe_session_stats(s, i, v);
			uint64_t d = st->entries - b->prev[i][v];

			b->prev[i][v] = st->entries;
			hits += d;
			cost += (double)d * hit_cost(b, ms[i]->code[v].kind);
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

		share += probe_budget_share((double)(rj - b->rj_prev) * rejit_ns(b, b->rejit_args), rdt);
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
	b->win_cost[b->win_i % 10] = share * (double)dt / 100.0;
	b->win_dt[b->win_i % 10] = dt;
	b->win_i++;
	{
		double c = 0;
		uint64_t d = 0;

		for (i = 0; i < 10 && i < b->win_i; i++) {
			c += b->win_cost[i];
			d += b->win_dt[i];
		}
		avg = d >= 1000000000ull ? probe_budget_share(c, d) : 0;
	}
	if (b->state == B_HANDING && b->rj) {
		int st;

		if (probe_rejit_exited(b->rj, &st)) {
			b->rj_status = st;
			snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: the ReJIT profiler "
				 "could not start (clrtap agent probe exit %d: its message above)",
				 (double)(now - b->t0) / 1e9, st);
			return true;
		}
		if (b->rj_placed && now - b->placed_ns > 500000000ull) {
			/* from now on ReJIT's cost: the breakpoint's windows before are not its */
			b->state = B_REJIT;
			b->win_i = 0;
			memset(b->win_cost, 0, sizeof(b->win_cost));
			memset(b->win_dt, 0, sizeof(b->win_dt));
		}
		else if (!b->rj_placed && now - b->handed_ns > 5000000000ull) {
			snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: over the %g%% budget "
				 "and ReJIT was not in place within 5 s", (double)(now - b->t0) / 1e9,
				 b->pct);
			return true;
		}
		return false; /* the breakpoints stay while the profiler takes over */
	}
	if (avg <= b->pct && share <= 10 * b->pct)
		return false;
	if (share <= 10 * b->pct)
		share = avg; /* what the message says: the second's average */
	if (b->state == B_NATIVE && b->rejit_ok &&
	    rate * PROBE_REJIT_COUNT_NS / 1e7 <= b->pct && hand_over(b, s, ms, n, pid, share, rate))
		return false;
	snprintf(b->action, sizeof(b->action), "stopped at +%.3fs: %.0f calls/s cost %.1f%% of a "
		 "core, over the %g%% budget%s", (double)(now - b->t0) / 1e9, rate, share, b->pct,
		 b->state != B_NATIVE ? " even under ReJIT" :
		 !b->rejit_ok ? " (the ReJIT hand-over was refused: --no-rejit or --via)" :
		 rate * PROBE_REJIT_COUNT_NS / 1e7 > b->pct ? " even under ReJIT's count" :
		 " and ReJIT could not take over");
	return true;
}

/* What the probe cost the target, per method and in all (stderr and JSON). */
static void budget_summary(struct budget *b, struct probe_session *s, struct probe_method **ms,
			   size_t n, pid_t pid, int rc)
{
	uint64_t now = mono_ns(), wall = now - b->t0, tn = 0, tr = 0;
	double cost = 0;
	char c1[32], c2[32], c3[32];
	size_t i, v;

	for (i = 0; i < n; i++) {
		uint64_t nat = 0, rj = b->rj_final_seen[i] ? b->rj_final[i] : b->rj_count[i];
		double mc = 0;

		for (v = 0; s && v < ms[i]->ncode && v < PROBE_MAX_VERSIONS; v++) {
			const struct probe_version_stats *st = probe_session_stats(s, i, v);

			nat += st->entries;
			mc += (double)st->entries * hit_cost(b, ms[i]->code[v].kind);
		}
		mc += (double)rj * rejit_ns(b, b->rejit_args);
		tn += nat;
		tr += rj;
		cost += mc;
		if (b->rj)
			fprintf(stderr, "clrtap: %s%s: %" PRIu64 " calls in all: %" PRIu64 " on the code "
					"clrtap's breakpoint/uprobe watched, %" PRIu64 " counted by ReJIT%s\n",
				cli_safe(ms[i]->name), cli_safe(ms[i]->sig), nat + rj, nat, rj,
				b->rj_final_seen[i] ? "" : " (its last report: the final count did not come)");
	}
	fmt_ns(b->hw_ns, c1, sizeof(c1));
	fmt_ns(b->up_ns, c2, sizeof(c2));
	fmt_ns(cost, c3, sizeof(c3));
	fprintf(stderr, "clrtap: cost to the target (estimated): ");
	if (s)
		fprintf(stderr, "%" PRIu64 " breakpoint/uprobe hits x (%s a breakpoint hit%s, %s an "
				"uprobe hit%s)%s", tn, c1, b->hw_measured ? ", measured here" : ", assumed",
			c2, b->up_measured ? ", measured here" : ", assumed", b->rj ? " + " : "");
	if (b->rj)
		fprintf(stderr, "%" PRIu64 " ReJIT calls x ~%.0f ns", tr, rejit_ns(b, b->rejit_args));
	fprintf(stderr, " = %s of CPU over %.1f s: %.2f%% of one core on average (peak %.1f%% in a "
			"100 ms window; budget %g%%)\n", c3, (double)wall / 1e9,
		probe_budget_share(cost, wall), b->peak_share, b->pct);
	if (b->action[0] && !b->over)
		fprintf(stderr, "clrtap: budget: %s\n", b->action);
	if (!b->json)
		return;
	{
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)pid);
		ct_json_kv_arr_begin(&j, "methods");
		for (i = 0; i < n; i++) {
			uint64_t nat = 0, rj = b->rj_final_seen[i] ? b->rj_final[i] : b->rj_count[i];

			for (v = 0; s && v < ms[i]->ncode && v < PROBE_MAX_VERSIONS; v++)
				nat += probe_session_stats(s, i, v)->entries;
			ct_json_obj_begin(&j);
			ct_json_kv_str(&j, "method", ms[i]->name);
			ct_json_kv_str(&j, "signature", ms[i]->sig);
			ct_json_kv_u64(&j, "calls", nat + rj);
			ct_json_kv_u64(&j, "calls_native", nat);
			ct_json_kv_u64(&j, "calls_rejit", rj);
			ct_json_kv_bool(&j, "rejit_counts_final", !b->rj || b->rj_final_seen[i]);
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		ct_json_kv_obj_begin(&j, "budget");
		ct_json_kv_double(&j, "percent_of_core", b->pct);
		ct_json_kv_u64(&j, "breakpoint_hit_ns", b->hw_ns);
		ct_json_kv_bool(&j, "breakpoint_hit_measured", b->hw_measured);
		ct_json_kv_u64(&j, "uprobe_hit_ns", b->up_ns);
		ct_json_kv_bool(&j, "uprobe_hit_measured", b->up_measured);
		ct_json_kv_u64(&j, "rejit_call_ns", (uint64_t)rejit_ns(b, b->rejit_args));
		ct_json_kv_double(&j, "cost_ns", cost);
		ct_json_kv_double(&j, "seconds", (double)wall / 1e9);
		ct_json_kv_double(&j, "share_percent", probe_budget_share(cost, wall));
		ct_json_kv_double(&j, "peak_share_percent", b->peak_share);
		ct_json_kv_str(&j, "mechanism", b->rj ? (b->rejit_args ? "rejit-args" : "rejit-count") :
							"native");
		ct_json_kv_bool(&j, "handed_to_rejit", b->rj != NULL);
		ct_json_kv_bool(&j, "stopped_over_budget", b->over);
		ct_json_kv_str(&j, "action", b->action);
		ct_json_obj_end(&j);
		ct_json_kv_u64(&j, "exit_code", (uint64_t)rc);
		ct_json_obj_end(&j);
		(void)cli_json_out(&j, stdout);
		strbuf_release(&sb);
	}
}

/*
 * --via rejit --stack (or --json): the ReJIT profiler from the start (no breakpoint),
 * its records' stacks named here from the perf map. The budget still
 * applies (stopped over it: exit 11).
 */
static int run_rejit_direct(struct budget *b, struct probe_method **ms, size_t n, pid_t pid,
			    int64_t duration_ms)
{
	int rc = EXIT_OK, st;

	b->rejit_args = b->args;
	if (!start_rejit(b, ms, n, pid))
		return EXIT_ERROR;
	b->state = B_HANDING;
	fprintf(stderr, "clrtap: --via rejit: the in-process profiler %s (about %.0f ns a call: at "
			"most %.0f calls/s in the %g%% budget); it stays loaded in the target "
			"afterwards, dormant\n", !b->args ? "counts every call" : b->stack ?
			"records every call with its stack" : "records every call",
		rejit_ns(b, b->args), b->pct * 1e7 / rejit_ns(b, b->args), b->pct);
	while (!cli_stop_requested) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (probe_rejit_poll(b->rj, rejit_line, b) == 1)
			break;
		(void)probe_proc_refresh(b->pp, NULL); /* the re-JIT'd code's perf map lines */
		if (budget_check(b, NULL, ms, n, pid)) {
			b->over = !b->rj_status; /* else: the profiler could not start */
			fprintf(stderr, "clrtap: %s%s\n", b->over ? "budget: " : "", b->action);
			break;
		}
		if (duration_ms && (int64_t)((mono_ns() - b->t0) / 1000000) >= duration_ms)
			break;
		nanosleep(&ts, NULL);
	}
	st = probe_rejit_stop(b->rj, 6000, rejit_line, b);
	if (st && st != 130)
		rc = st; /* the agent's own exit code: 20-22 say why it could not attach */
	if (b->over)
		rc = EXIT_OVER_BUDGET;
	budget_summary(b, NULL, ms, n, pid, rc);
	return rc;
}

int cmd_probe(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool list = false, args = false, ret = false, latency = false, stack = false, lines = false,
	     count = false, no_wait = false, no_rejit = false, json = false;
	const char *emit = NULL, *hist = NULL, *via = NULL, *budget_opt = NULL;
	struct budget bg = { 0 };
	int strlen_max = 64;
	int64_t duration_ms = 0; /* 0: until Ctrl-C */
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'l', "list", CLI_OPT_BOOL, &list, NULL,
		  "list matching methods and where their code is (default pattern: all)" },
		{ 0, "emit", CLI_OPT_STRING, &emit, "perf|bpftrace",
		  "print the perf probe / bpftrace command for the R2R code of the matches" },
		{ 'a', "args", CLI_OPT_BOOL, &args, NULL, "show arguments (default unless --count)" },
		{ 'r', "ret", CLI_OPT_BOOL, &ret, NULL, "show the return value" },
		{ 'L', "latency", CLI_OPT_BOOL, &latency, NULL, "show the time from entry to return" },
		{ 's', "stack", CLI_OPT_BOOL, &stack, NULL, "show the caller stack of each call" },
		{ 0, "lines", CLI_OPT_BOOL, &lines, NULL,
		  "--stack's managed frames with their source file and line (portable PDBs)" },
		{ 'c', "count", CLI_OPT_BOOL, &count, NULL, "only count calls (summary at exit)" },
		{ 0, "hist", CLI_OPT_STRING, &hist, "ARG|latency",
		  "histogram of an integer argument (name or index) or of latency, at exit" },
		{ 'd', "duration", CLI_OPT_DURATION, &duration_ms, "SECONDS", "stop after SECONDS (a fraction is fine; default, or 0: Ctrl-C)" },
		{ 0, "strlen", CLI_OPT_INT, &strlen_max, "N", "characters of a string shown (64)" },
		{ 0, "no-wait", CLI_OPT_BOOL, &no_wait, NULL,
		  "fail instead of waiting when the method has no code yet" },
		{ 0, "via", CLI_OPT_STRING, &via, "rejit|native|uprobe|breakpoint",
		  "rejit: clrtap's in-process profiler (exact on every tier; it stays loaded, "
		  "dormant, afterwards: docs/cmd/agent.md); native (default): uprobe on "
		  "ReadyToRun code, breakpoint on JIT code; uprobe or breakpoint: only that one" },
		{ 0, "budget", CLI_OPT_STRING, &budget_opt, "PCT",
		  "the share of one core the probe may take from the target (default 5%); over it "
		  "the probe is handed to ReJIT, or stopped (exit 11)" },
		{ 0, "no-rejit", CLI_OPT_BOOL, &no_rejit, NULL,
		  "never hand a probe over budget to the ReJIT profiler (it would stay loaded, "
		  "dormant): stop it instead" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL,
		  "no line per call: one JSON object at the end (counts, cost, budget)" },
		{ 0 },
	};
	struct probe_method *found[MAX_METHODS];
	struct probe_open_opts po = { 0 };
	struct probe_session_opts so = { 0 };
	struct out_ctx oc = { 0 };
	struct probe_session *sess = NULL;
	struct probe_inl *inl = NULL;
	struct probe_proc *pp = NULL;
	struct perfmap_use pmu;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	const char *pattern;
	bool enabled_pm = false;
	size_t n = 0, i;
	int first, code, err, rc = EXIT_OK, major;
	struct timespec t0, tn, ta;
	struct perf_prio prio = { 0 };
	double attach_ms = -1;
	char pdesc[160];

	if (cli_parse(argc, argv,
		      "clrtap probe (-p PID | -n NAME) [--list|--emit perf|bpftrace] 'Ns.Type::Method[(sig)]' [options]",
		      opts, &first, &code))
		return code;
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s' (quote the pattern)",
				 argv[first + 1]);
	pattern = first < argc ? argv[first] : NULL;
	{
		bool show = args || ret || latency || stack;

		if ((code = cli_conflict(list, "--list", !!emit, "--emit", "choose one")) ||
		    (code = cli_conflict(list || emit, list ? "--list" : "--emit",
					 show || count || hist || duration_ms, "probing options",
					 "it prints where the code is and exits")) ||
		    (code = cli_conflict(count, "--count", show, "--args/--ret/--latency/--stack",
					 "--count only counts calls")))
			return code;
	}
	if (lines && !stack)
		return cli_error(EXIT_USAGE, "--lines goes with --stack (the lines of the callers)");
	if (via && strcmp(via, "rejit") && strcmp(via, "native") && strcmp(via, "uprobe") &&
	    strcmp(via, "breakpoint"))
		return cli_error(EXIT_USAGE, "--via takes rejit, native, uprobe or breakpoint, not '%s'",
				 via);
	bg.pct = 5;
	if (budget_opt && probe_budget_parse(budget_opt, &bg.pct))
		return cli_error(EXIT_USAGE, "--budget takes a share of one core in percent, more "
					     "than 0 and at most 1000 ('2%%', '0.5'), not '%s'", budget_opt);
	/* with --stack the records' stacks are named here (perf map): the direct run below */
	if (via && !strcmp(via, "rejit") && !(stack && !count) && !json)
		return probe_via_rejit(&to, pattern, count, duration_ms);
	if (json && list)
		return cli_error(EXIT_USAGE, "--json goes with a probe, not with --list or --emit");
	if (json)
		count = true;
	if (emit && strcmp(emit, "perf") && strcmp(emit, "bpftrace"))
		return cli_error(EXIT_USAGE, "--emit takes perf or bpftrace, not '%s'", emit);
	if (emit)
		list = true;
	if (!pattern && !list)
		return cli_error(EXIT_USAGE, "say which method: clrtap probe -p PID 'Ns.Type::Method'");
	if (!pattern)
		pattern = "*";
	if (strlen_max < 1 || strlen_max > 1000000)
		return cli_error(EXIT_USAGE, "--strlen must be 1..1000000");
	perfmap_use_init(&pmu);
	code = cli_resolve_target(&to, &t, &ep);

	if (code)
		return code;
	/*
	 * A target with hundreds of busy threads would starve clrtap while it
	 * opens events and drains rings (issue 16): raised first, as profile.
	 */
	if (!list)
		(void)perf_prio_raise(&prio);

	/*
	 * The perf map tells where JIT'd code is: on for the command if it was
	 * off, with the lease and SIGKILL watcher every command shares (lib/perfmap).
	 */
	err = perfmap_use_begin(&pmu, &t, ep.timeout_ms, &rerr);
	if (err && !pmu.map_path[0])
		return cli_error(EXIT_ERROR, "cannot tell where the perf map of %d is", (int)t.pid);
	if (err)
		cli_warn("cannot turn the perf map on (%s): JIT'd code will not be found",
			 strerror(-err));
	enabled_pm = pmu.turned_on;
	po.perfmap_path = pmu.map_path;
	po.perfmap_tpath = pmu.map_tpath;
	po.jitdump_tpath = pmu.jitdump ? pmu.jitdump_tpath : NULL;
	po.jitdump_path = pmu.jitdump ? pmu.jitdump_path : NULL;
	po.root = t.other_mntns ? t.root : "";
	err = probe_proc_open(t.pid, &po, &pp);
	if (err) {
		rc = ct_exit_for(err);
		cli_error(rc, "cannot read the assemblies of %d: %s", (int)t.pid, strerror(-err));
		goto out;
	}
	if (enabled_pm)
		settle_perfmap(pp);
	if (lines && (err = probe_proc_lines(pp, &ep, &rerr)))
		cli_warn("no source lines: %s", strerror(-err));
	/*
	 * .NET 11 buffers its perf map until it is turned off, but writes
	 * jitdump as code is published: read when a clrtap turned it on with
	 * the map (pmu.jitdump), new code found at once as on .NET 8 to 10.
	 * Without it (the map on before clrtap, jitdump off) the code that exists
	 * now is read whole by turning the map off and on again; code compiled
	 * later (first calls, tier-up) shows only as the runtime writes its
	 * buffer out, so its calls can go unseen: said, with the way that sees
	 * them.
	 */
	major = emit || pmu.jitdump ? 0 : perfmap_runtime_major(&t, ep.timeout_ms);
	if (major >= PERFMAP_BUFFERED_MAJOR) {
		if (perfmap_use_reread(&pmu, settle_perfmap_cb, pp, &rerr) < 0)
			cli_warn("cannot turn the perf map off and on to read it whole: JIT code "
				 "may not be found");
		cli_warn("this runtime (.NET %d) buffers its perf map: JIT code compiled from now on "
			 "(a first call, tier-up) is seen late or not at all, and its calls are NOT "
			 "counted; --via rejit sees every call on every tier (.NET 8 to 10 write "
			 "their map at once)",
			 major);
	}

	if (list) {
		struct probe_method **all = calloc(MAX_LIST, sizeof(*all));

		if (!all) {
			rc = cli_error(EXIT_ERROR, "out of memory");
			goto out;
		}
		struct mech_tests mt;

		err = probe_proc_find(pp, pattern, all, MAX_LIST, &n);
		if (!emit)
			run_mech_tests(all, CT_MIN(n, (size_t)MAX_LIST), &mt);
		for (i = 0; i < n && i < MAX_LIST; i++) {
			print_method(all[i], emit);
			if (!emit)
				print_plan(stdout, "    ", false, all[i], &mt);
		}
		free(all);
		if (err)
			cli_warn("listing stopped early: %s", strerror(-err));
		if (!n)
			rc = cli_error(EXIT_ERROR, "no method matches '%s'", pattern);
		goto out;
	}

	err = probe_proc_find(pp, pattern, found, MAX_METHODS, &n);
	if (err && err != -E2BIG) {
		rc = cli_error(ct_exit_for(err), "cannot search methods: %s", strerror(-err));
		goto out;
	}
	if (!n) {
		char *sug[8];
		int ns = probe_proc_suggest(pp, pattern, sug, 8);

		fprintf(stderr, "clrtap: no method matches '%s' in %zu assemblies of %d\n", cli_safe(pattern),
			probe_proc_nimages(pp), (int)t.pid);
		for (i = 0; ns > 0 && i < (size_t)ns; i++) {
			fprintf(stderr, "%s %s\n", i ? "              " : "clrtap: did you mean",
				cli_safe(sug[i]));
			free(sug[i]);
		}
		rc = EXIT_ERROR;
		goto out;
	}
	if (n > MAX_METHODS) {
		rc = cli_error(EXIT_USAGE, "'%s' matches %zu methods (at most %d): narrow it", pattern,
			       n, MAX_METHODS);
		goto out;
	}
	if (hist && strcmp(hist, "latency")) {
		for (i = 0; i < n; i++)
			if (hist_index(found[i], hist) < 0)
				break;
		if (i < n) {
			rc = cli_error(EXIT_USAGE, "--hist %s: %s%s has no such argument", hist,
				       found[i]->name, found[i]->sig);
			goto out;
		}
	}

	if (n > 1) {
		/* overloads (or a wildcard): all of them, said in one line */
		struct strbuf sb = STRBUF_INIT_MAX(8192);

		for (i = 0; i < n; i++)
			(void)strbuf_addf(&sb, "%s'%s%s'", i ? ", " : "", found[i]->name, found[i]->sig);
		fprintf(stderr, "clrtap: '%s' matches %zu methods, tracing all: %s%s\n", cli_safe(pattern), n,
			cli_safe(sb.buf), strchr(pattern, '(') ? "" : " (add '(signature)' to pick one)");
		strbuf_release(&sb);
	}
	if (via && !strcmp(via, "rejit")) {
		bg.args = !count;
		bg.stack = stack && !count;
		bg.json = json;
		bg.pp = pp;
		bg.t0 = bg.last_ns = mono_ns();
		cli_catch_stop_signals();
		rc = run_rejit_direct(&bg, found, n, t.pid, duration_ms);
		goto out;
	}
	/* prove the mechanisms fire here before showing a count made with them */
	{
		struct mech_tests mt;
		struct probe_mech hw, up;
		bool any_r2r;
		size_t k = 0;

		run_mech_tests(found, n, &mt);
		/* the budget's cost of a hit: measured by the self-test; else assumed */
		bg.hw_measured = !mt.hw_err && mt.hw.hit_ns;
		bg.hw_ns = bg.hw_measured ? mt.hw.hit_ns : 10000;
		bg.up_measured = !mt.up_err && mt.up.hit_ns;
		bg.up_ns = bg.up_measured ? mt.up.hit_ns : 3000;
		hw = mt.hw;
		up = mt.up;
		any_r2r = mt.any_r2r;
		err = mt.hw_err;
		if (err)
			cli_warn("cannot self-test hardware breakpoints (%s): counts of JIT'd code are "
				 "unproven on this machine", strerror(-err));
		else if (!hw.fires) {
			so.no_hwbp = true;
			say_unseen(PROBE_MECH_HWBP, &hw);
		}
		if (any_r2r) {
			err = mt.up_err;
			if (err)
				cli_warn("cannot self-test uprobes (%s): counts of ReadyToRun code are "
					 "unproven on this machine", strerror(-err));
			else if (!up.fires) {
				so.no_uprobe = true;
				say_unseen(PROBE_MECH_UPROBE, &up);
			}
		}
		if (via && !strcmp(via, "uprobe")) {
			g_where = "with --via uprobe (hardware breakpoints not used)";
			so.no_hwbp = true;
			so.unwatched_where = g_where;
		} else if (via && !strcmp(via, "breakpoint")) {
			g_where = "with --via breakpoint (uprobes not used)";
			so.no_uprobe = true;
			so.unwatched_where = g_where;
		}
		for (i = 0; i < n; i++) {
			bool r2r = has_kind(found[i], PROBE_CODE_R2R);

			print_plan(stderr, "clrtap: ", true, found[i], &mt);
			if (so.unwatched_where)
				fprintf(stderr, "clrtap:   but only %s is used: %s\n",
					!strcmp(via, "uprobe") ? "the uprobe" : "the hardware breakpoint",
					g_where);

			/* JIT code can come to any method (tier-up); R2R code is there or not */
			if ((r2r && !so.no_uprobe) || !so.no_hwbp) {
				found[k++] = found[i];
				continue;
			}
			if (!found[i]->ncode && !no_wait) {
				/* no code yet: still worth waiting to say whether it gets inlined */
				fprintf(stderr, "clrtap: %s%s: no code yet; its JIT code could not be "
						"watched %s (calls will NOT be counted): waiting "
						"only to tell whether the JIT inlines it\n", cli_safe(found[i]->name),
					cli_safe(found[i]->sig), g_where);
				found[k++] = found[i];
				continue;
			}
			fprintf(stderr, "clrtap: %s%s: NOT traced: it has %s code clrtap can watch %s "
					"(a count would be a false 0)\n", cli_safe(found[i]->name),
				cli_safe(found[i]->sig), r2r ? "no" : "only JIT-compiled code, no", g_where);
		}
		if (!k) {
			rc = cli_error(EXIT_ERROR, "nothing to trace: no method matching '%s' can be "
						   "watched %s", pattern, g_where);
			goto out;
		}
		n = k;
	}

	so.args = args || !count;
	so.ret = ret;
	so.latency = latency || (hist && !strcmp(hist, "latency"));
	so.stack = stack;
	so.count_only = count && !hist;
	so.strlen_max = (unsigned)strlen_max;
	oc.count_only = count;
	oc.want_ret = so.ret || so.latency;
	oc.hist_arg = hist;

	cli_catch_stop_signals();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = probe_session_new(pp, found, n, &so, on_call, on_note, &oc, &sess);
	if (err) {
		rc = cli_error(err == -EACCES || err == -EPERM ? EXIT_PERMISSION : EXIT_ERROR,
			       "perf_event_open: %s", strerror(-err));
		goto out;
	}
	/* methods without code of their own: listen to the JIT's inlining decisions */
	if (!no_wait) {
		const char *names[MAX_METHODS];
		size_t nn = 0;

		for (i = 0; i < n; i++)
			if (!found[i]->ncode)
				names[nn++] = found[i]->name;
		if (nn) {
			err = probe_inl_start(&ep, names, nn, &inl);
			if (err)
				cli_warn("cannot read the JIT's inlining events (%s): if the method is "
					 "inlined, clrtap cannot say into what", strerror(-err));
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &ta);
	err = probe_session_arm(sess);
	attach_ms = ms_since(&ta);
	if (err == -ENOENT) {
		if (no_wait) {
			rc = cli_error(EXIT_ERROR, "%s%s has no code yet (not called, or inlined)",
				       found[0]->name, found[0]->sig);
			goto out;
		}
		fprintf(stderr, "clrtap: %s%s has no code yet: waiting for it to be compiled (a method "
				"inlined into all its callers never is)\n", cli_safe(found[0]->name),
			cli_safe(found[0]->sig));
	} else if (err) {
		rc = cli_error(ct_exit_for(err), "cannot arm the probe: %s", strerror(-err));
		goto out;
	}
	perf_prio_describe(&prio, pdesc, sizeof(pdesc));
	fprintf(stderr, "clrtap: attached in %.1f ms: %u threads; uprobes %s, breakpoints %s; "
			"clrtap priority: %s\n", attach_ms, probe_session_threads(sess),
		probe_session_per_cpu(sess, true) ? "per CPU (filtered by pid)" : "per thread",
		probe_session_per_cpu(sess, false) ? "per CPU (filtered by pid)" : "per thread", pdesc);
	bg.args = so.args && !count;
	bg.stack = stack;
	bg.pp = pp;
	bg.json = json;
	bg.rejit_ok = !no_rejit && (!via || !strcmp(via, "native"));
	bg.t0 = bg.last_ns = mono_ns();
	{
		char c1[32], c2[32];

		fmt_ns(bg.hw_ns, c1, sizeof(c1));
		fmt_ns(bg.up_ns, c2, sizeof(c2));
		fprintf(stderr, "clrtap: budget: %g%% of one core; a hit costs the target %s under a "
				"breakpoint (%s), %s under an uprobe (%s): at most %.0f and %.0f calls/s; "
				"over it the probe %s\n", bg.pct, c1,
			bg.hw_measured ? "measured here" : "assumed", c2,
			bg.up_measured ? "measured here" : "assumed", bg.pct * 1e7 / bg.hw_ns,
			bg.pct * 1e7 / bg.up_ns, bg.rejit_ok ? "is handed to the ReJIT profiler "
			"(--no-rejit: stopped instead)" : "is stopped (exit 11)");
	}
	fprintf(stderr, "clrtap: tracing %zu method(s) in %d; Ctrl-C to stop\n", n, (int)t.pid);
	while (!cli_stop_requested) {
		err = probe_session_poll(sess, 2);
		if (err == -ESRCH) {
			fprintf(stderr, "clrtap: process %d exited\n", (int)t.pid);
			break;
		}
		if (err) {
			cli_warn("%s", strerror(-err));
			break;
		}
		report_inlining(inl);
		(void)probe_rejit_poll(bg.rj, rejit_line, &bg);
		if (budget_check(&bg, sess, found, n, t.pid)) {
			bg.over = true;
			fprintf(stderr, "clrtap: budget: %s\n", bg.action);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &tn);
		if (duration_ms && (int64_t)(tn.tv_sec - t0.tv_sec) * 1000 +
					   (tn.tv_nsec - t0.tv_nsec) / 1000000 >= duration_ms)
			break;
	}
	if (bg.rj) {
		int st = probe_rejit_stop(bg.rj, 6000, rejit_line, &bg);

		if (st && st != 130 && !bg.rj_status)
			cli_warn("the ReJIT probe ended with exit code %d", st);
	}
	probe_session_flush(sess);
	report_inlining(inl);
	summary(sess, found, n, inl != NULL);
	if (bg.over)
		rc = EXIT_OVER_BUDGET;
	budget_summary(&bg, sess, found, n, t.pid, rc);
	if (hist) {
		struct strbuf sb = STRBUF_INIT;

		printf("histogram of %s:\n", hist);
		err = probe_hist_format(&oc.hist, !strcmp(hist, "latency") ? "ns" : "", &sb);
		if (!err)
			err = strbuf_fwrite(&sb, stdout);
		if (err)
			cli_warn("cannot print the histogram: %s", strerror(-err));
		strbuf_release(&sb);
	}
out:
	probe_rejit_free(bg.rj);
	probe_inl_stop(inl);
	if (sess && attach_ms >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &ta);
		probe_session_free(sess);
		fprintf(stderr, "clrtap: detached in %.1f ms\n", ms_since(&ta));
	} else {
		probe_session_free(sess);
	}
	probe_proc_close(pp);
	probe_hist_free(&oc.hist);
	err = perfmap_use_end(&pmu, &rerr);
	if (err && err != -ECONNREFUSED && err != -ENOENT && kill(t.pid, 0) == 0)
		cli_warn("could not turn the perf map back off: %s", strerror(-err));
	perf_prio_restore(&prio);
	(void)base_name;
	/* the last word (serve shows a session's last line) */
	if (bg.over)
		fprintf(stderr, "clrtap: probe stopped over its budget: %s\n", bg.action);
	return rc;
}
