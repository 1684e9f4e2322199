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
			printf("    R2R  %s+0x%" PRIx64 " size %" PRIu64 " addr 0x%" PRIx64 "\n",
			       cli_safe(m->image), c->file_offset, c->size, c->addr);
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

static void summary(struct probe_session *s, struct probe_method **ms, size_t n, bool listened)
{
	uint64_t start = probe_session_start_ns(s);
	size_t i, v;

	for (i = 0; i < n; i++) {
		uint64_t total = 0, rets = 0;
		uint64_t prev_last = 0, lost_since;
		size_t lost_v = 0;

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
		fprintf(stderr, "clrtap: %s%s: %" PRIu64 " calls", cli_safe(ms[i]->name),
			cli_safe(ms[i]->sig), total);
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
	char pid[16], secs[16];
	char *av[12];
	int ac = 0;

	if (!pattern)
		return cli_error(EXIT_USAGE, "say which method: clrtap probe -p PID 'Ns.Type::Method'");
	av[ac++] = "agent";
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
		/* agent takes whole seconds */
		snprintf(secs, sizeof(secs), "%d", (int)((duration_ms + 999) / 1000));
		av[ac++] = "--seconds";
		av[ac++] = secs;
	}
	av[ac++] = (char *)pattern;
	av[ac] = NULL;
	return cmd_agent(ac, av);
}

int cmd_probe(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool list = false, args = false, ret = false, latency = false, stack = false,
	     count = false, no_wait = false;
	const char *emit = NULL, *hist = NULL, *via = NULL;
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
	int first, code, err, rc = EXIT_OK;
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
	if (via && strcmp(via, "rejit") && strcmp(via, "native") && strcmp(via, "uprobe") &&
	    strcmp(via, "breakpoint"))
		return cli_error(EXIT_USAGE, "--via takes rejit, native, uprobe or breakpoint, not '%s'",
				 via);
	if (via && !strcmp(via, "rejit"))
		return probe_via_rejit(&to, pattern, count, duration_ms);
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
	po.root = t.other_mntns ? t.root : "";
	err = probe_proc_open(t.pid, &po, &pp);
	if (err) {
		rc = ct_exit_for(err);
		cli_error(rc, "cannot read the assemblies of %d: %s", (int)t.pid, strerror(-err));
		goto out;
	}
	if (enabled_pm)
		settle_perfmap(pp);

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
	/* prove the mechanisms fire here before showing a count made with them */
	{
		struct mech_tests mt;
		struct probe_mech hw, up;
		bool any_r2r;
		size_t k = 0;

		run_mech_tests(found, n, &mt);
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
		clock_gettime(CLOCK_MONOTONIC, &tn);
		if (duration_ms && (int64_t)(tn.tv_sec - t0.tv_sec) * 1000 +
					   (tn.tv_nsec - t0.tv_nsec) / 1000000 >= duration_ms)
			break;
	}
	probe_session_flush(sess);
	report_inlining(inl);
	summary(sess, found, n, inl != NULL);
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
	return rc;
}
