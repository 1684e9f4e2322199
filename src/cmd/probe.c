/* SPDX-License-Identifier: MIT */
/*
 * clrtap probe - dynamic tracing of .NET methods by name: where their code
 * is (--list, --emit), and a line per call with arguments, return value,
 * latency and stack, following the method across tier-up. The run is the
 * probe task (lib/probe/task.c); this file parses the options and prints
 * the calls as they come, the listing, the histogram, or the task's JSON.
 */
#include "common/compat.h"

#include <time.h>

#include "agent/agent.h"
#include "cli.h"
#include "probe/probe.h"

struct out_ctx {
	bool count_only, want_ret, json;
	const char *hist_arg; /* NULL, "latency", a parameter name or index */
	struct probe_hist hist;
	uint64_t calls;
};

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
			int i = probe_method_arg_index(c->method, o->hist_arg);

			if (i >= 0 && c->arg_valid[i])
				probe_hist_add(&o->hist, c->arg_num[i]);
		}
	}
	if (o->count_only || o->json)
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

/* A ReJIT record line (the agent's, already made safe) or its stack, named here. */
static void on_rejit(void *vctx, const char *text, bool stack)
{
	struct out_ctx *o = vctx;

	if (o->json)
		return;
	if (stack)
		printf("    at %s\n", cli_safe(text));
	else
		printf("%s\n", cli_safe(text));
	fflush(stdout);
}

/* --list and --emit: each method, where its code is, and the mechanism here. */
static void on_method(void *vctx, const struct probe_method *m, const char *plan)
{
	const char *emit = vctx;
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
	if (plan)
		printf("    %s\n", cli_safe(plan));
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

/* The checks of the options among themselves, before any work; an exit code. */
static int check_options(bool list, const char *emit, bool show, bool count, const char *hist,
			 int64_t duration_ms, bool json)
{
	int code;

	if ((code = cli_conflict(list, "--list", !!emit, "--emit", "choose one")) ||
	    (code = cli_conflict(list || emit, list ? "--list" : "--emit",
				 show || count || hist || duration_ms, "probing options",
				 "it prints where the code is and exits")) ||
	    (code = cli_conflict(count, "--count", show, "--args/--ret/--latency/--stack",
				 "--count only counts calls")))
		return code;
	if (json && (list || emit))
		return cli_error(EXIT_USAGE, "--json goes with a probe, not with --list or --emit");
	if (emit && strcmp(emit, "perf") && strcmp(emit, "bpftrace"))
		return cli_error(EXIT_USAGE, "--emit takes perf or bpftrace, not '%s'", emit);
	return EXIT_OK;
}

/* What the run ends with on stdout: the histogram, or the JSON. */
static int finish(struct task_result *res, struct out_ctx *oc, bool json)
{
	struct strbuf sb = STRBUF_INIT;
	int code = res->exit_code, err = 0;
	const struct probe_result *r = res->data;

	if (res->err)
		code = cli_error(res->exit_code, "%s", res->message);
	else if (json && (strbuf_fwrite(&res->json, stdout) || putchar('\n') == EOF))
		code = EXIT_ERROR;
	else if (oc->hist_arg) {
		printf("histogram of %s:\n", oc->hist_arg);
		err = probe_hist_format(&oc->hist, !strcmp(oc->hist_arg, "latency") ? "ns" : "", &sb);
		if (!err)
			err = strbuf_fwrite(&sb, stdout);
		if (err)
			cli_warn("cannot print the histogram: %s", strerror(-err));
	}
	strbuf_release(&sb);
	/* the last word (serve shows a session's last line) */
	if (r && r->over_budget)
		fprintf(stderr, "clrtap: probe stopped over its budget: %s\n", cli_safe(r->action));
	return code;
}

int cmd_probe(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool list = false, args = false, ret = false, latency = false, stack = false, lines = false,
	     count = false, no_wait = false, no_rejit = false, json = false;
	const char *emit = NULL, *hist = NULL, *via = NULL, *budget_opt = NULL;
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
		  "no line per call: the task's result at the end, one JSON object (docs/tasks/probe.md: "
		  "counts, call records with --args/--ret/--latency/--stack, cost, budget)" },
		{ 0 },
	};
	struct probe_run_opts o = { 0 };
	struct out_ctx oc = { 0 };
	struct task_ctx ctx = { .stop = &cli_stop_requested, .log = cli_log_sink, .outdir_fd = -1 };
	struct task_result res;
	struct proc_target t;
	struct ipc_endpoint ep;
	bool show = args || ret || latency || stack;
	int first, code;

	if (cli_parse(argc, argv,
		      "clrtap probe (-p PID | -n NAME) [--list|--emit perf|bpftrace] 'Ns.Type::Method[(sig)]' [options]",
		      opts, &first, &code))
		return code;
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s' (quote the pattern)",
				 argv[first + 1]);
	show = args || ret || latency || stack;
	if ((code = check_options(list, emit, show, count, hist, duration_ms, json)))
		return code;
	if (lines && !stack)
		return cli_error(EXIT_USAGE, "--lines goes with --stack (the lines of the callers)");
	o.pattern = first < argc ? argv[first] : NULL;
	o.budget_pct = 5;
	if (budget_opt && probe_budget_parse(budget_opt, &o.budget_pct))
		return cli_error(EXIT_USAGE, "--budget takes a share of one core in percent, more "
					     "than 0 and at most 1000 ('2%%', '0.5'), not '%s'", budget_opt);
	o.via = via;
	o.list = list || emit;
	o.emit = !!emit;
	/* --json alone counts; with --args/--ret/--latency/--stack it keeps the call records */
	o.count = count || (json && !show);
	o.args = args || !o.count;
	o.ret = ret;
	o.latency = latency || (hist && !strcmp(hist, "latency"));
	o.stack = stack;
	o.lines = lines;
	o.count_only = o.count && !hist;
	o.hist_arg = hist;
	o.no_wait = no_wait;
	o.no_rejit = no_rejit;
	o.strlen_max = strlen_max < 1 ? 0 : (unsigned)strlen_max;
	o.duration_ms = duration_ms;
	o.timeout_ms = to.timeout_ms;
	o.pid = 1; /* the options are checked before the target is looked for */
	task_result_init(&res);
	if (probe_task_check(&o, &res))
		return cli_error(res.exit_code, "%s", res.message);
	/* with --stack the records' stacks are named here (perf map): the task's own run */
	if (via && !strcmp(via, "rejit") && !(stack && !count) && !json)
		return probe_via_rejit(&to, o.pattern, count, duration_ms);
	if ((code = cli_resolve_target(&to, &t, &ep)))
		return code;
	o.pid = t.pid;
	oc.count_only = o.count;
	oc.json = json;
	oc.want_ret = o.ret || o.latency;
	oc.hist_arg = hist;
	o.hooks.on_call = on_call;
	o.hooks.on_rejit = on_rejit;
	o.hooks.on_method = on_method;
	o.hooks.ctx = o.list ? (void *)emit : (void *)&oc;
	if (!o.list)
		cli_catch_stop_signals();
	(void)probe_task_run(&o, &ctx, &res);
	code = finish(&res, &oc, json);
	probe_hist_free(&oc.hist);
	task_result_release(&res);
	return code;
}
