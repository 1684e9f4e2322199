/* SPDX-License-Identifier: MIT */
/*
 * clrtap profile - sample a live process with perf_event (on-CPU, off-CPU or
 * both) and write a flame graph, folded stacks, speedscope or pprof with
 * every frame named: JIT and ReadyToRun managed code, native, kernel.
 * Where perf_event_open is denied, the EventPipe engine samples managed
 * stacks through the runtime instead (--engine; lib/profile/engine*.c).
 * This file parses the options and prints the result as text; the run is
 * the profile task (lib/profile/task.c), whose JSON --json prints.
 */
#include "common/compat.h"

#include <time.h>

#include "cli.h"
#include "profile/profile.h"

struct prof_args {
	struct cli_target_opts to;
	int hz;
	int64_t duration_ms; /* 0: until Ctrl-C */
	const char *out, *bundle, *engine;
	bool off_cpu, wall, threads, no_kernel, json, lines, async, async_both, by_endpoint;
	struct cli_symbol_opts syms;
};

static int cmp_endpoint(const void *x, const void *y)
{
	const struct profile_ep_endpoint *p = x, *q = y;

	return p->samples != q->samples ? (p->samples > q->samples ? -1 : 1) : strcmp(p->name, q->name);
}

/* --by-endpoint: the samples of each request path, by share of those tied to a request. */
static void print_endpoints(const struct profile_ep_stats *es)
{
	struct profile_ep_endpoint v[PROFILE_EP_ENDPOINTS];
	uint64_t tied = es->endpoint_other;
	uint32_t i, n = CT_MIN(es->nendpoints, (uint32_t)PROFILE_EP_ENDPOINTS);

	memcpy(v, es->endpoints, n * sizeof(v[0]));
	for (i = 0; i < n; i++)
		tied += v[i].samples;
	qsort(v, n, sizeof(v[0]), cmp_endpoint);
	printf("endpoints: %llu requests began; %llu samples taken while serving one, %llu of "
	       "threads serving none known (requests begun before the session are not known)\n",
	       (unsigned long long)es->requests, (unsigned long long)tied,
	       (unsigned long long)es->endpoint_none);
	for (i = 0; i < n; i++)
		printf("  %5.1f %%  %8llu  %s\n", tied ? 100.0 * (double)v[i].samples / (double)tied : 0.0,
		       (unsigned long long)v[i].samples, cli_safe(v[i].name));
	if (es->endpoint_other)
		printf("  %5.1f %%  %8llu  (more paths than %d)\n",
		       100.0 * (double)es->endpoint_other / (double)tied,
		       (unsigned long long)es->endpoint_other, PROFILE_EP_ENDPOINTS);
	if (es->requests_other)
		printf("  (%llu requests past 1024 distinct paths are counted as \"(other paths)\")\n",
		       (unsigned long long)es->requests_other);
}

/* The EventPipe engine's lines. */
static void print_ep_summary(const struct profile_result *r)
{
	const struct profile_ep_stats *es = &r->es;
	const struct profile_summary *sum = &r->sum;

	if (r->off_cpu)
		printf("basis: samples of threads outside managed code (blocked, waiting or in native "
		       "code)\n");
	else if (r->wall)
		printf("basis: thread time, waiting included (every managed thread, running or "
		       "not)\n");
	else if (es->oncpu != TASKCPU_NONE)
		printf("basis: on-CPU: %llu samples of threads that were not running left out (each "
		       "thread's CPU time read from /proc/PID/task/TID/%s every %u ms), %llu that "
		       "caught their thread switching out of managed code (a blocking wait or a "
		       "P/Invoke's stub at the leaf) left out, %llu of threads not polled at their "
		       "time kept\n",
		       (unsigned long long)es->waiting, taskcpu_source_name(es->oncpu),
		       es->oncpu_interval_ms, (unsigned long long)sum->left_out,
		       (unsigned long long)es->unknown);
	else
		printf("basis: thread time, waiting included (the threads' CPU times could not be "
		       "read from /proc: %s)\n",
		       strerror(es->oncpu_err ? -es->oncpu_err : ENOENT));
	printf("samples: %llu kept of %llu ThreadSample events (%llu in managed code, %llu "
	       "outside it) at the runtime's %.3g ms interval\n",
	       (unsigned long long)sum->cpu_samples,
	       (unsigned long long)(es->managed + es->external + es->other),
	       (unsigned long long)es->managed, (unsigned long long)es->external,
	       (double)es->sampling_ns / 1e6);
	if (sum->cpu_samples < 50)
		printf("samples: too few kept (%llu) for the shares to mean much: run longer (-d), "
		       "or sample the CPU with --engine perf\n",
		       (unsigned long long)sum->cpu_samples);
	if (es->external >= 100 && es->managed * 50 < es->external)
		printf("samples: nearly all marked outside managed code by the runtime: idle threads, "
		       "or .NET 9, which marks running threads so too (.NET 8, 10 and 11 tell them "
		       "apart): on-CPU managed time may not be seen; --wall keeps every thread's "
		       "samples, --engine perf samples the CPU\n");
	if (r->async)
		printf("async: %llu TPL events read (%.0f per second, each written with a stack walk "
		       "in the target); of the samples taken: %llu in a resumed async "
		       "method shown under the methods awaiting it, %llu in one nothing awaited, %llu "
		       "in none, %llu whose method's frame was not found (shown as sampled)\n",
		       (unsigned long long)es->async_events,
		       r->secs > 0 ? (double)es->async_events / r->secs : 0.0,
		       (unsigned long long)es->async_logical,
		       (unsigned long long)es->async_alone, (unsigned long long)es->async_none,
		       (unsigned long long)es->async_unattributed);
	if (r->by_endpoint)
		print_endpoints(es);
	printf("lost events: %llu%s\n", (unsigned long long)es->dropped_events,
	       es->complete ? "" : " (the stream ended without its end marker)");
	printf("methods named from the trace: %zu\n", es->methods);
	printf("unnamed frames: %.2f %% (%llu of %llu)\n",
	       sum->frames ? 100.0 * (double)sum->unnamed / (double)sum->frames : 0.0,
	       (unsigned long long)sum->unnamed, (unsigned long long)sum->frames);
	printf("kernel stacks: no (EventPipe sees managed frames only)\n");
}

/* How the samples were taken and at what priority clrtap ran (issue 16). */
static const char *mode_text(enum perf_sampler_mode m)
{
	switch (m) {
	case PERF_SAMPLER_CGROUP: return "per CPU in the target's cgroup, filtered by pid";
	case PERF_SAMPLER_CPU: return "per CPU system-wide, filtered by pid";
	default: return "per thread and CPU";
	}
}

static void print_engine(const struct profile_result *r)
{
	const struct perf_sampler_stats *st = &r->st;
	char prio[160];

	printf("events: %u", st->events);
	if (!r->off_cpu)
		printf("; on-CPU %s", mode_text(st->mode));
	if (r->off_cpu || r->wall)
		printf("; off-CPU %s", mode_text(st->offcpu_mode));
	if (st->cgroup[0])
		printf("; cgroup %s", st->cgroup);
	if (st->mode != PERF_SAMPLER_THREAD || st->offcpu_mode != PERF_SAMPLER_THREAD)
		printf("; %llu records of other processes dropped", (unsigned long long)st->other);
	printf("\n");
	perf_prio_describe(&r->prio, prio, sizeof(prio));
	printf("clrtap priority: %s\n", prio);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* The perf_event engine's lines. */
static void print_perf_summary(const struct profile_result *r)
{
	const struct perf_sampler_stats *st = &r->st;
	const struct profile_summary *sum = &r->sum;

	if (r->off_cpu || r->wall)
		printf("off-CPU: %.3f s blocked in %llu intervals\n", (double)sum->offcpu_ns / 1e9,
		       (unsigned long long)sum->offcpu_intervals);
	if (!r->off_cpu)
		printf("samples: %llu at %u Hz from %u threads\n",
		       (unsigned long long)sum->cpu_samples, r->hz, st->threads);
	printf("lost samples: %llu%s\n", (unsigned long long)st->lost,
	       st->throttled ? " (the kernel throttled sampling: see perf_event_max_sample_rate)" : "");
	if (sum->partial)
		printf("partial: stopped by a signal while processing: %zu of %zu distinct stacks "
		       "named and written\n", sum->stacks_named, sum->stacks);
	if (sum->dropped)
		printf("dropped: %llu samples past the distinct-stack cap\n",
		       (unsigned long long)sum->dropped_samples);
	printf("unnamed frames: %.2f %% (%llu of %llu)\n", pct(sum->unnamed, sum->frames),
	       (unsigned long long)sum->unnamed, (unsigned long long)sum->frames);
	printf("unnamed leaf frames: %.2f %% of samples (%llu of %llu)\n",
	       pct(sum->unnamed_leaves, sum->leaves), (unsigned long long)sum->unnamed_leaves,
	       (unsigned long long)sum->leaves);
	if (sum->addr_named)
		printf("frames named by address only (sub_<addr>: no symbols for that library): "
		       "%.2f %% of frames, %.2f %% of leaves\n", pct(sum->addr_named, sum->frames),
		       pct(sum->addr_named_leaves, sum->leaves));
	printf("kernel stacks: %s\n", st->kernel ? "yes" : "no (not permitted)");
	print_engine(r);
	if (!r->dotnet)
		printf("managed frames: none (not a .NET process)\n");
	else if (r->pm_err)
		printf("perf map: could not be turned on, JIT frames unnamed\n");
	else if (r->pm_before)
		printf("perf map: on before this command (%s), so not turned off to be read whole: a "
		       "runtime that buffers its map (.NET 11 writes it out only when it is turned "
		       "off) leaves its JIT frames unnamed; with the map off, clrtap turns it on and "
		       "off itself\n", r->pm_shared ? "by another clrtap" : "by the target's settings");
}

static void print_summary(const struct profile_result *r)
{
	size_t i, shown = 0;

	printf("wrote: %s\n", r->out_path);
	printf("%s\n", r->engine_line);
	printf("duration: %.1f s%s\n", r->secs,
	       r->target_gone ? " (the process exited)" : r->early ? " (stopped early)" : "");
	if (r->have_es)
		print_ep_summary(r);
	else
		print_perf_summary(r);
	if (r->total && r->ntop) {
		if (r->top_managed)
			printf("top (self: the innermost managed frame of the stack, else its user "
			       "leaf; %% of the time):\n");
		else
			printf("top (self %%, total %%):\n");
		for (i = 0; i < r->ntop && shown < 5; i++, shown++)
			printf("  %5.1f %5.1f  %s\n", pct(r->top[i].self, r->total),
			       pct(r->top[i].total, r->total), cli_safe(r->top[i].name));
	}
	if (!r->total && !r->target_gone)
		/* an empty profile says why and what to do */
		cli_warn("no samples: pid %d %s in %.1f s (idle?); profile while it works, with a "
			 "longer -d, or use %s to see where its threads wait", (int)r->pid,
			 r->off_cpu ? "never blocked" : "never ran on a CPU", r->secs,
			 r->off_cpu ? "--wall" : "--wall or --off-cpu");
	if (r->native_note[0]) {
		char note[sizeof(r->native_note)], *line, *save = NULL;

		memcpy(note, r->native_note, sizeof(note));
		for (line = strtok_r(note, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			printf("%s\n", cli_safe(line));
	}
	if (r->lines)
		printf("source lines: %.1f %% of managed frames (the others: no PDB, or code outside a "
		       "sequence point)\n", r->sum.managed_frames ? 100.0 * (double)r->sum.line_frames /
		       (double)r->sum.managed_frames : 0.0);
	printf("processing: %.0f ms (symbols, aggregation, output)\n", (double)r->processing_ns / 1e6);
	if (r->bundle_dir[0])
		printf("bundle: %s\n", r->bundle_dir);
	if (r->handed_off)
		printf("perf map: the target did not answer within 100 ms; the watcher turns it off\n");
}

/* -n NAME names a .NET process; -p PID any process (the task finds out which). */
static int target_pid(const struct prof_args *a, pid_t *pid)
{
	struct proc_target t;
	struct ipc_endpoint ep;
	int code;

	if (a->to.pid && !a->to.name) {
		*pid = a->to.pid;
		return EXIT_OK;
	}
	code = cli_resolve_target(&a->to, &t, &ep);
	*pid = t.pid;
	return code;
}

static void default_output(char *buf, size_t len, pid_t pid)
{
	time_t now = time(NULL);
	char ts[32];
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "profile-%d-%s.html", (int)pid, ts);
}

int cmd_profile(int argc, char **argv)
{
	struct prof_args a = { .hz = -1, .duration_ms = 10000 };
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&a.to),
		{ 'F', "frequency", CLI_OPT_INT, &a.hz, "HZ", "samples per second per thread (default 99, max 10000; perf engine only)" },
		{ 'd', "duration", CLI_OPT_DURATION, &a.duration_ms, "SEC", "how long to sample (default 10; 0: until Ctrl-C, which also stops early)" },
		{ 'o', "output", CLI_OPT_OUTPUT, &a.out, "FILE",
		  "output; format from the name: .folded .html .svg .speedscope.json .pb.gz "
		  "(default profile-PID-TIMESTAMP.html)" },
		{ 0, "off-cpu", CLI_OPT_BOOL, &a.off_cpu, NULL, "blocked time instead of CPU time (weights in ns)" },
		{ 0, "wall", CLI_OPT_BOOL, &a.wall, NULL, "on-CPU + off-CPU time (weights in ns)" },
		{ 0, "threads", CLI_OPT_BOOL, &a.threads, NULL, "a root frame per thread name" },
		{ 0, "no-kernel", CLI_OPT_BOOL, &a.no_kernel, NULL, "user stacks only" },
		{ 0, "lines", CLI_OPT_BOOL, &a.lines, NULL,
		  "managed frames with their source file and line (portable PDBs)" },
		{ 0, "bundle", CLI_OPT_STRING, &a.bundle, "DIR",
		  "also write DIR/profile-PID-TIMESTAMP/ with folded, html, raw samples and a tar.gz" },
		{ 0, "engine", CLI_OPT_STRING, &a.engine, "ENGINE",
		  "auto (default: perf_event, else EventPipe when perf_event_open is denied), perf or "
		  "eventpipe (managed frames only, through the diagnostics socket)" },
		{ 0, "async", CLI_OPT_BOOL, &a.async, NULL,
		  "a resumed async method under the async methods awaiting it, instead of the "
		  "thread-pool frames (TPL events; eventpipe engine)" },
		{ 0, "async-both", CLI_OPT_BOOL, &a.async_both, NULL,
		  "--async, with the thread's own frames above the awaiting methods" },
		{ 0, "by-endpoint", CLI_OPT_BOOL, &a.by_endpoint, NULL,
		  "ASP.NET Core: a root frame per request path served, and CPU per endpoint in the "
		  "summary (eventpipe engine)" },
		{ 0, "json", CLI_OPT_BOOL, &a.json, NULL,
		  "print the result as one JSON object (docs/tasks/profile.md) instead of the summary" },
		CLI_SYMBOL_OPTIONS(&a.syms),
		{ 0 },
	};
	struct profile_run_opts o = { 0 };
	struct task_ctx ctx = { .stop = &cli_stop_requested, .log = cli_log_sink, .outdir_fd = -1 };
	struct task_result res;
	char defpath[128];
	int first, code;

	if (cli_parse(argc, argv,
		      "clrtap profile (-p PID | -n NAME) [-F HZ] [-d SEC] [-o OUT] [--off-cpu|--wall] "
		      "[--lines] [--bundle DIR] [--engine auto|perf|eventpipe] [--async|--async-both] "
		      "[--by-endpoint] [--json]",
		      opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	code = cli_symbols_configure(&a.syms);
	if (code)
		return code;
	if (a.engine && profile_engine_parse(a.engine, &o.engine))
		return cli_error(EXIT_USAGE, "unknown engine '%s' (auto, perf, eventpipe)", a.engine);
	o.hz_given = a.hz != -1;
	o.hz = a.hz == -1 ? 99 : a.hz < 1 ? 0 : (unsigned)a.hz;
	o.duration_ms = a.duration_ms;
	o.off_cpu = a.off_cpu;
	o.wall = a.wall;
	o.threads = a.threads;
	o.no_kernel = a.no_kernel;
	o.lines = a.lines;
	o.async = a.async_both ? PROFILE_EP_ASYNC_BOTH : a.async ? PROFILE_EP_ASYNC_LOGICAL : 0;
	o.by_endpoint = a.by_endpoint;
	o.bundle = a.bundle;
	o.timeout_ms = a.to.timeout_ms;
	o.sym_cache_dir = getenv("CLRTAP_CACHE_DIR"); /* tests and benchmarks; "" for none */
	o.out = a.out ? a.out : "x.html"; /* checked now, named once the pid is known */
	o.pid = a.to.pid ? a.to.pid : 1;
	task_result_init(&res);
	if (profile_task_check(&o, &res)) /* bad options: before any work */
		goto done;
	code = target_pid(&a, &o.pid);
	if (code)
		return code;
	if (!a.out)
		default_output(defpath, sizeof(defpath), o.pid);
	o.out = a.out ? a.out : defpath;
	cli_catch_stop_signals();
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "clrtap: sampling pid %d for %.3g s (Ctrl-C to stop)\n", (int)o.pid,
			(double)a.duration_ms / 1e3);
	cli_countdown_start("sampling", a.duration_ms);
	(void)profile_task_run(&o, &ctx, &res);
	cli_countdown_stop();
done:
	if (res.err)
		code = cli_error(res.exit_code, "%s", res.data && ((struct profile_result *)res.data)->message[0] ?
				 ((struct profile_result *)res.data)->message : res.message);
	else if (a.json)
		code = strbuf_fwrite(&res.json, stdout) || putchar('\n') == EOF ? EXIT_ERROR : res.exit_code;
	else {
		print_summary(res.data);
		code = res.exit_code;
	}
	task_result_release(&res);
	return code;
}
