/* SPDX-License-Identifier: MIT */
/*
 * clrtap profile - sample a live process with perf_event (on-CPU, off-CPU or
 * both) and write a flame graph, folded stacks, speedscope or pprof with
 * every frame named: JIT and ReadyToRun managed code, native, kernel.
 * Where perf_event_open is denied, the EventPipe engine samples managed
 * stacks through the runtime instead (--engine; lib/profile/engine*.c).
 * The work is in lib/profile (session, naming), lib/perf (sampling),
 * lib/sym (names) and lib/flame (formats).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "common/io.h"
#include "common/log.h"
#include "flame/flame.h"
#include "profile/bundle.h"
#include "profile/profile.h"

struct prof_args {
	struct cli_target_opts to;
	int hz;
	int64_t duration_ms; /* 0: until Ctrl-C */
	const char *out, *bundle, *engine;
	bool off_cpu, wall, threads, no_kernel, quiet, async, async_both, by_endpoint;
	bool early; /* a signal stopped the recording */
};

static void timestamp(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(buf, len, "%Y%m%d-%H%M%S", &tm);
}

/* Resolves the target without requiring .NET: a native process is profiled too. */
static int resolve(const struct prof_args *a, struct proc_target *t, bool *dotnet,
		   bool *no_access)
{
	struct ipc_endpoint ep;
	int err;

	*dotnet = false;
	if (a->to.name || !a->to.pid) {
		err = cli_resolve_target(&a->to, t, &ep);
		*dotnet = err == EXIT_OK;
		return err;
	}
	err = proc_target_find(a->to.pid, t);
	switch (err) {
	case 0:
		*dotnet = true;
		return EXIT_OK;
	case -ESRCH:
		return cli_error(EXIT_NO_PROCESS, "no process with pid %d", (int)a->to.pid);
	case -ENOENT:
		if (a->engine && !strcmp(a->engine, "eventpipe"))
			return cli_error(EXIT_NOT_DOTNET, "pid %d has no diagnostics socket: --engine "
					 "eventpipe needs a .NET process", (int)a->to.pid);
		return EXIT_OK; /* said once sampling works (else the refusal names both) */
	case -EACCES:
		/* perf_event_open decides; its error names what is missing. */
		*no_access = true;
		return EXIT_OK;
	case -ELOOP:
	case -ENOTSOCK:
		cli_warn("pid %d's diagnostics socket %s is not the target's socket (a link or "
			 "another kind of file): profiling native and kernel frames only",
			 (int)a->to.pid, t->sock_tpath);
		return EXIT_OK;
	default:
		return cli_error(ct_exit_for(err), "cannot inspect pid %d: %s", (int)a->to.pid,
				 strerror(-err));
	}
}

static int perf_error(pid_t pid, int err, bool off_cpu)
{
	if (err == -EACCES || err == -EPERM)
		return cli_error(EXIT_PERMISSION,
				 "not allowed to sample pid %d with perf_event_open: it needs the "
				 "target to be yours (or CAP_SYS_PTRACE) and either CAP_PERFMON (or "
				 "root) or sysctl kernel.perf_event_paranoid <= %d%s",
				 (int)pid, off_cpu ? 1 : 2,
				 off_cpu ? " (off-CPU needs kernel samples)" : "");
	if (err == -ESRCH)
		return cli_error(EXIT_NO_PROCESS, "pid %d is gone", (int)pid);
	if (err == -EMFILE || err == -ENFILE)
		return cli_error(EXIT_ERROR, "too many open files for one event per thread and CPU "
					     "(raise ulimit -n)");
	return cli_error(ct_exit_for(err), "cannot sample pid %d: %s", (int)pid, strerror(-err));
}

static int write_flame(const struct flame *f, const char *path, enum flame_format fmt,
		       const struct flame_opts *fo)
{
	int fd, rc;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = flame_write(f, fmt, fd, fo);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return EXIT_OK;
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[PROC_PATH_MAX * 4];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = ct_write_all(fd, text, strlen(text));
	if (!rc)
		rc = ct_write_all(fd, "\n", 1);
	close(fd);
	if (rc)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return EXIT_OK;
}

static int write_bundle(struct profile_session *s, const struct flame *f,
			const struct flame_opts *fo, const char *root, pid_t pid, char *dir,
			size_t dirlen)
{
	static const char *const names[] = { "profile.folded", "profile.html", "samples.txt",
					     "metadata.txt" };
	char ts[32], path[PROC_PATH_MAX * 4], prefix[64];
	int fd, rc, code;

	timestamp(ts, sizeof(ts));
	snprintf(prefix, sizeof(prefix), "profile-%d-%s", (int)pid, ts);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return cli_error(EXIT_ERROR, "cannot create %s: %s", root, strerror(errno));
	if (snprintf(dir, dirlen, "%s/%s", root, prefix) >= (int)dirlen)
		return cli_error(EXIT_USAGE, "bundle path too long");
	if (mkdir(dir, 0755) < 0)
		return cli_error(EXIT_ERROR, "cannot create %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/profile.folded", dir);
	code = write_flame(f, path, FLAME_FOLDED, fo);
	if (code)
		return code;
	snprintf(path, sizeof(path), "%s/profile.html", dir);
	code = write_flame(f, path, FLAME_HTML, fo);
	if (code)
		return code;
	snprintf(path, sizeof(path), "%s/samples.txt", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = profile_write_raw(s->prof, s->sp, profile_session_comm, s, fd);
	close(fd);
	if (rc)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	code = write_text(dir, "metadata.txt", fo->notes ? fo->notes : "");
	if (code)
		return code;
	snprintf(path, sizeof(path), "%s/%s.tar.gz", dir, prefix);
	rc = profile_tar_gz(path, dir, prefix, names, ARRAY_SIZE(names));
	if (rc)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return EXIT_OK;
}

static int cmp_endpoint(const void *x, const void *y)
{
	const struct profile_ep_endpoint *p = x, *q = y;

	return p->samples != q->samples ? (p->samples > q->samples ? -1 : 1) : strcmp(p->name, q->name);
}

/* --by-endpoint: the samples of each request path, by share of those tied to
 * a request. */
static void print_endpoints(struct profile_ep_stats *es)
{
	uint64_t tied = es->endpoint_other;
	uint32_t i;

	for (i = 0; i < es->nendpoints; i++)
		tied += es->endpoints[i].samples;
	qsort(es->endpoints, es->nendpoints, sizeof(es->endpoints[0]), cmp_endpoint);
	printf("endpoints: %llu requests began; %llu samples taken while serving one, %llu of "
	       "threads serving none known (requests begun before the session are not known)\n",
	       (unsigned long long)es->requests, (unsigned long long)tied,
	       (unsigned long long)es->endpoint_none);
	for (i = 0; i < es->nendpoints; i++)
		printf("  %5.1f %%  %8llu  %s\n", tied ? 100.0 * (double)es->endpoints[i].samples / (double)tied : 0.0,
		       (unsigned long long)es->endpoints[i].samples, es->endpoints[i].name);
	if (es->endpoint_other)
		printf("  %5.1f %%  %8llu  (more paths than %d)\n", 100.0 * (double)es->endpoint_other / (double)tied,
		       (unsigned long long)es->endpoint_other, PROFILE_EP_ENDPOINTS);
	if (es->requests_other)
		printf("  (%llu requests past 1024 distinct paths are counted as \"(other paths)\")\n",
		       (unsigned long long)es->requests_other);
}

/* The summary lines of the EventPipe engine. */
static void print_ep_summary(const struct prof_args *a, struct profile_session *s,
			     const struct profile_summary *sum, double seconds)
{
	struct profile_ep_stats es;

	profile_ep_stats(s->ep, &es);
	if (a->off_cpu)
		printf("basis: samples of threads outside managed code (blocked, waiting or in native "
		       "code)\n");
	else if (a->wall)
		printf("basis: thread time, waiting included (every managed thread, running or "
		       "not)\n");
	else if (es.oncpu != TASKCPU_NONE)
		printf("basis: on-CPU: %llu samples of threads that were not running left out (each "
		       "thread's CPU time read from /proc/PID/task/TID/%s every %u ms), %llu that "
		       "caught their thread switching out of managed code (a blocking wait or a "
		       "P/Invoke's stub at the leaf) left out, %llu of threads not polled at their "
		       "time kept\n",
		       (unsigned long long)es.waiting, taskcpu_source_name(es.oncpu),
		       es.oncpu_interval_ms, (unsigned long long)sum->left_out,
		       (unsigned long long)es.unknown);
	else
		printf("basis: thread time, waiting included (the threads' CPU times could not be "
		       "read from /proc: %s)\n",
		       strerror(es.oncpu_err ? -es.oncpu_err : ENOENT));
	printf("samples: %llu kept of %llu ThreadSample events (%llu in managed code, %llu "
	       "outside it) at the runtime's %.3g ms interval\n",
	       (unsigned long long)sum->cpu_samples,
	       (unsigned long long)(es.managed + es.external + es.other),
	       (unsigned long long)es.managed, (unsigned long long)es.external,
	       (double)es.sampling_ns / 1e6);
	if (sum->cpu_samples < 50)
		printf("samples: too few kept (%llu) for the shares to mean much: run longer (-d), "
		       "or sample the CPU with --engine perf\n",
		       (unsigned long long)sum->cpu_samples);
	if (es.external >= 100 && es.managed * 50 < es.external)
		printf("samples: nearly all marked outside managed code by the runtime: idle threads, "
		       "or .NET 9, which marks running threads so too (.NET 8, 10 and 11 tell them "
		       "apart): on-CPU managed time may not be seen; --wall keeps every thread's "
		       "samples, --engine perf samples the CPU\n");
	if (a->async || a->async_both)
		printf("async: %llu TPL events read (%.0f per second, each written with a stack walk "
		       "in the target); of the samples taken: %llu in a resumed async "
		       "method shown under the methods awaiting it, %llu in one nothing awaited, %llu "
		       "in none, %llu whose method's frame was not found (shown as sampled)\n",
		       (unsigned long long)es.async_events,
		       seconds > 0 ? (double)es.async_events / seconds : 0.0,
		       (unsigned long long)es.async_logical,
		       (unsigned long long)es.async_alone, (unsigned long long)es.async_none,
		       (unsigned long long)es.async_unattributed);
	if (a->by_endpoint)
		print_endpoints(&es);
	printf("lost events: %llu%s\n", (unsigned long long)es.dropped_events,
	       es.complete ? "" : " (the stream ended without its end marker)");
	printf("methods named from the trace: %zu\n", es.methods);
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

static void print_engine(const struct prof_args *a, const struct profile_session *s,
			 const struct perf_sampler_stats *st)
{
	char prio[160];

	printf("events: %u", st->events);
	if (!a->off_cpu)
		printf("; on-CPU %s", mode_text(st->mode));
	if (a->off_cpu || a->wall)
		printf("; off-CPU %s", mode_text(st->offcpu_mode));
	if (st->cgroup[0])
		printf("; cgroup %s", st->cgroup);
	if (st->mode != PERF_SAMPLER_THREAD || st->offcpu_mode != PERF_SAMPLER_THREAD)
		printf("; %llu records of other processes dropped", (unsigned long long)st->other);
	printf("\n");
	perf_prio_describe(&s->prio, prio, sizeof(prio));
	printf("clrtap priority: %s\n", prio);
}

static void print_summary(const struct prof_args *a, struct profile_session *s,
			  const struct flame *f, const struct flame *topf,
			  const struct profile_summary *sum, const char *what, const char *where,
			  const char *engine_line)
{
	struct perf_sampler_stats st;
	struct flame_top *top = NULL;
	double secs = (double)(s->end_ns - s->start_ns) / 1e9;
	uint64_t total = flame_total(f);
	size_t n = 0, i, shown = 0;

	printf("%s: %s\n", what, where);
	printf("%s\n", engine_line);
	printf("duration: %.1f s%s\n", secs,
	       s->target_gone ? " (the process exited)" : a->early ? " (stopped early)" : "");
	if (s->ep) {
		print_ep_summary(a, s, sum, secs);
		goto top;
	}
	perf_sampler_stats(s->smp, &st);
	if (a->off_cpu || a->wall)
		printf("off-CPU: %.3f s blocked in %llu intervals\n", (double)sum->offcpu_ns / 1e9,
		       (unsigned long long)sum->offcpu_intervals);
	if (!a->off_cpu)
		printf("samples: %llu at %d Hz from %u threads\n",
		       (unsigned long long)sum->cpu_samples, a->hz, st.threads);
	printf("lost samples: %llu%s\n", (unsigned long long)st.lost,
	       st.throttled ? " (the kernel throttled sampling: see perf_event_max_sample_rate)"
			    : "");
	if (sum->partial)
		printf("partial: stopped by a signal while processing: %zu of %zu distinct stacks "
		       "named and written\n",
		       sum->stacks_named, sum->stacks);
	if (sum->dropped)
		printf("dropped: %llu samples past the distinct-stack cap\n",
		       (unsigned long long)sum->dropped_samples);
	printf("unnamed frames: %.2f %% (%llu of %llu)\n",
	       sum->frames ? 100.0 * (double)sum->unnamed / (double)sum->frames : 0.0,
	       (unsigned long long)sum->unnamed, (unsigned long long)sum->frames);
	printf("unnamed leaf frames: %.2f %% of samples (%llu of %llu)\n",
	       sum->leaves ? 100.0 * (double)sum->unnamed_leaves / (double)sum->leaves : 0.0,
	       (unsigned long long)sum->unnamed_leaves, (unsigned long long)sum->leaves);
	if (sum->addr_named)
		printf("frames named by address only (sub_<addr>: no symbols for that library): "
		       "%.2f %% of frames, %.2f %% of leaves\n",
		       sum->frames ? 100.0 * (double)sum->addr_named / (double)sum->frames : 0.0,
		       sum->leaves ? 100.0 * (double)sum->addr_named_leaves / (double)sum->leaves : 0.0);
	printf("kernel stacks: %s\n", st.kernel ? "yes" : "no (not permitted)");
	print_engine(a, s, &st);
	if (!s->dotnet)
		printf("managed frames: none (not a .NET process)\n");
	else if (s->pm_err)
		printf("perf map: could not be turned on, JIT frames unnamed\n");
	else if (!s->pm_flushed && (s->pm.was_on || s->pm.shared) &&
		 sum->unnamed_leaves * 20 >= sum->leaves && sum->leaves)
		printf("perf map: on before this command (%s), so not turned off to be read whole: a "
		       "runtime that buffers its map (.NET 11 writes it out only when it is turned "
		       "off) leaves its JIT frames unnamed; with the map off, clrtap turns it on and "
		       "off itself\n",
		       s->pm.shared ? "by another clrtap" : "by the target's settings");
top:
	if (flame_top(topf, &top, &n) == 0 && total) {
		if (topf != f)
			printf("top (self: the innermost managed frame of the stack, else its user "
			       "leaf; %% of the time):\n");
		else
			printf("top (self %%, total %%):\n");
		for (i = 0; i < n && shown < 5; i++) {
			if (!strncmp(top[i].name, "[thread] ", 9))
				continue;
			printf("  %5.1f %5.1f  %s\n", 100.0 * (double)top[i].self / (double)total,
			       100.0 * (double)top[i].total / (double)total, cli_safe(top[i].name));
			shown++;
		}
	}
	free(top);
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
		{ 0, "bundle", CLI_OPT_STRING, &a.bundle, "DIR",
		  "also write DIR/profile-PID-TIMESTAMP/ with folded, html, raw samples and a tar.gz" },
		{ 0, "async", CLI_OPT_BOOL, &a.async, NULL,
		  "a resumed async method under the async methods awaiting it, instead of the "
		  "thread-pool frames (TPL events; eventpipe engine)" },
		{ 0, "async-both", CLI_OPT_BOOL, &a.async_both, NULL,
		  "--async, with the thread's own frames above the awaiting methods" },
		{ 0, "by-endpoint", CLI_OPT_BOOL, &a.by_endpoint, NULL,
		  "ASP.NET Core: a root frame per request path served, and CPU per endpoint in the "
		  "summary (eventpipe engine)" },
		{ 0, "engine", CLI_OPT_STRING, &a.engine, "ENGINE",
		  "auto (default: perf_event, else EventPipe when perf_event_open is denied), perf or "
		  "eventpipe (managed frames only, through the diagnostics socket)" },
		{ 0 },
	};
	struct profile_engine_choice ch;
	char notes[2048], msg[2048], engine_line[384];
	struct profile_session_opts so = { 0 };
	struct profile_summary sum;
	struct profile_session s;
	struct flame_opts fo = { 0 };
	enum profile_engine engine = PROFILE_ENGINE_AUTO;
	unsigned ep_samples;
	struct perf_prio prio;
	struct proc_target t;
	struct ipc_error rerr;
	struct flame *f = NULL, *uf = NULL;
	char defpath[128], bdir[PROC_PATH_MAX * 2], title[160];
	const char *out;
	uint64_t deadline, t_begin, t_stop = 0, t_done = 0;
	bool handed_off = false;
	int first, code, rc, fmt;
	bool dotnet, no_access = false, hz_given;

	if (cli_parse(argc, argv,
		      "clrtap profile (-p PID | -n NAME) [-F HZ] [-d SEC] [-o OUT] [--off-cpu|--wall] "
		      "[--bundle DIR] [--engine auto|perf|eventpipe] [--async|--async-both]",
		      opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (a.engine && profile_engine_parse(a.engine, &engine))
		return cli_error(EXIT_USAGE, "unknown engine '%s' (auto, perf, eventpipe)", a.engine);
	if ((a.async || a.async_both || a.by_endpoint) && engine != PROFILE_ENGINE_EVENTPIPE)
		return cli_error(EXIT_USAGE, "%s needs --engine eventpipe (the perf engine has no "
					     "TPL timeline yet)",
				 a.by_endpoint ? "--by-endpoint" : "--async");
	if (a.hz != -1 && engine == PROFILE_ENGINE_EVENTPIPE)
		return cli_error(EXIT_USAGE, "-F does not apply to --engine eventpipe: %s",
				 profile_engine_ep_rate);
	hz_given = a.hz != -1;
	if (a.hz == -1)
		a.hz = 99;
	if (a.hz < 1 || a.hz > 10000)
		return cli_error(EXIT_USAGE, "-F must be 1..10000");
	if (a.off_cpu && a.wall)
		return cli_error(EXIT_USAGE, "give --off-cpu or --wall, not both");
	if (a.off_cpu && a.no_kernel)
		return cli_error(EXIT_USAGE, "--off-cpu needs kernel samples (drop --no-kernel)");
	out = a.out;
	if (!out) {
		char ts[32];

		timestamp(ts, sizeof(ts));
		snprintf(defpath, sizeof(defpath), "profile-%d-%s.html", (int)a.to.pid, ts);
		out = defpath;
	}
	fmt = flame_format_from_path(out);
	if (fmt < 0)
		return cli_error(EXIT_USAGE, "cannot tell the format of '%s': use .folded, .html, .svg, "
					     ".speedscope.json or .pb.gz",
				 out);
	/* Raised before anything that waits on the target (see lib/perf/prio.c). */
	(void)perf_prio_raise(&prio);
	t_begin = perf_now_ns();
	code = resolve(&a, &t, &dotnet, &no_access);
	if (code)
		return code;
	if (!a.out && a.to.name) {
		char ts[32];

		timestamp(ts, sizeof(ts));
		snprintf(defpath, sizeof(defpath), "profile-%d-%s.html", (int)t.pid, ts);
	}

	so.pid = a.to.pid ? a.to.pid : t.pid;
	so.target = dotnet ? &t : NULL;
	so.timeout_ms = a.to.timeout_ms;
	so.sampler.hz = (unsigned)a.hz;
	so.sampler.cpu = !a.off_cpu;
	so.sampler.off_cpu = a.off_cpu || a.wall;
	so.sampler.no_kernel = a.no_kernel;
	so.profile.thread_roots = a.threads;
	so.profile.keep_samples = a.bundle != NULL;
	so.profile.cpu_in_ns = a.wall;
	so.engine = engine;
	ep_samples = a.off_cpu ? PROFILE_EP_EXTERNAL :
		     a.wall ? PROFILE_EP_MANAGED | PROFILE_EP_EXTERNAL : PROFILE_EP_MANAGED;
	so.ep_samples = ep_samples;
	so.ep_async = a.async_both ? PROFILE_EP_ASYNC_BOTH : a.async ? PROFILE_EP_ASYNC_LOGICAL : 0;
	so.ep_endpoints = a.by_endpoint;
	so.profile.stop = &cli_stop_requested; /* a second signal, during processing */
	so.no_boost = true; /* raised above */
	so.sym_cache_dir = getenv("CLRTAP_CACHE_DIR"); /* tests and benchmarks; "" for none */

	cli_catch_stop_signals();

	rc = profile_session_start_engine(&s, &so, &ch);
	s.prio = prio;
	if (rc) {
		if (ch.perf_err || ch.ep_err) {
			if (no_access && ch.ep_err == -ENOENT)
				ch.ep_err = -EACCES; /* the socket is behind /proc/PID/root */
			profile_engine_explain(&ch, so.pid, msg, sizeof(msg));
			return cli_error(ch.perf_err ? EXIT_PERMISSION : ct_exit_for(ch.ep_err), "%s", msg);
		}
		if (s.failed_stage == PROFILE_STAGE_PERF)
			return perf_error(so.pid, rc, so.sampler.off_cpu);
		if (rc == -ESRCH || rc == -EACCES || rc == -EPERM)
			return perf_error(so.pid, rc, so.sampler.off_cpu);
		return cli_error(ct_exit_for(rc), "cannot read the symbols of pid %d: %s",
				 (int)so.pid, strerror(-rc));
	}
	if (ch.fell_back)
		cli_warn("%s (%s): sampling with the runtime's EventPipe "
			 "sample profiler instead (managed frames only; --engine perf to fail instead)",
			 profile_engine_refused(&ch), profile_perf_cause_short(ch.diag.cause));
	if (ch.fell_back && hz_given)
		cli_warn("-F %d is not used by the EventPipe engine: %s", a.hz,
			 profile_engine_ep_rate);
	if (!dotnet && !s.ep)
		cli_info("pid %d is not a .NET process (no diagnostics socket): profiling native "
			 "and kernel frames only",
			 (int)so.pid);
	if (s.dotnet && s.pm_err) {
		if (s.pm_err == -EREMOTEIO && s.pm_rerr.hresult == IPC_E_UNKNOWN_COMMAND)
			cli_warn("this runtime cannot turn its perf map on at run time (.NET 8+): "
				 "JIT-compiled frames stay unnamed");
		else
			cli_warn("cannot turn the perf map on (%s): JIT-compiled frames stay unnamed",
				 strerror(-s.pm_err));
	}
	if (!a.no_kernel && !s.ep) {
		struct perf_sampler_stats st;

		perf_sampler_stats(s.smp, &st);
		if (!st.kernel)
			cli_warn("kernel stacks not permitted (kernel.perf_event_paranoid >= 2 and no "
				 "CAP_PERFMON): sampling user stacks only");
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "clrtap: sampling pid %d for %.3g s (Ctrl-C to stop)\n", (int)so.pid,
			(double)a.duration_ms / 1e3);

	ct_debug("profile: setup (target, perf map, events, symbols) %.0f ms",
		 (double)(s.start_ns - t_begin) / 1e6);
	deadline = a.duration_ms ? s.start_ns + (uint64_t)a.duration_ms * 1000000ull : UINT64_MAX;
	cli_countdown_start("sampling", a.duration_ms);
	while (!cli_stop_requested && perf_now_ns() < deadline) {
		uint64_t left = (deadline - perf_now_ns()) / 1000000ull;

		rc = profile_session_tick(&s, left < 100 ? (int)left + 1 : 100);
		if (rc == -ESRCH)
			break;
		if (rc < 0) {
			code = cli_error(ct_exit_for(rc), "sampling failed: %s", strerror(-rc));
			goto out;
		}
	}
	t_stop = perf_now_ns();
	cli_countdown_stop();
	/* The signal that ended the recording is spent: another one stops the processing. */
	a.early = cli_stop_requested;
	cli_stop_requested = 0;
	rc = profile_session_stop(&s);
	if (rc < 0) {
		code = cli_error(ct_exit_for(rc), "sampling failed: %s", strerror(-rc));
		goto out;
	}
	rc = flame_new(&f);
	if (!rc)
		rc = profile_session_build(&s, f, &sum);
	if (rc) {
		code = cli_error(ct_exit_for(rc), "cannot build the profile: %s", strerror(-rc));
		goto out;
	}
	if (s.ep) {
		struct profile_ep_stats es;

		profile_ep_stats(s.ep, &es);
		snprintf(title, sizeof(title), "clrtap profile: pid %d, %s (EventPipe engine)",
			 (int)so.pid,
			 a.off_cpu ? "samples outside managed code" :
			 a.wall || es.oncpu == TASKCPU_NONE ? "thread time, waiting included" :
			 "on-CPU samples of managed code");
		fo.unit = "samples";
		fo.period = es.sampling_ns;
		es.left_out = sum.left_out;
		profile_engine_notes(&ch, (unsigned)a.hz, ep_samples, &es, notes, sizeof(notes));
	} else {
		snprintf(title, sizeof(title), "clrtap profile: pid %d, %s (perf_event engine)",
			 (int)so.pid,
			 a.off_cpu ? "off-CPU time" : a.wall ? "wall time (on + off CPU)" : "CPU samples");
		fo.unit = a.off_cpu || a.wall ? "nanoseconds" : "samples";
		fo.period = a.off_cpu || a.wall ? 1 : 1000000000ull / (uint64_t)a.hz;
		profile_engine_notes(&ch, (unsigned)a.hz, 0, NULL, notes, sizeof(notes));
	}
	fo.title = title;
	fo.notes = notes;
	if (ch.fell_back)
		snprintf(engine_line, sizeof(engine_line), "engine: %s (--engine auto, and %s: %s)",
			 profile_engine_name(ch.used), profile_engine_refused(&ch),
			 profile_perf_cause_short(ch.diag.cause));
	else
		snprintf(engine_line, sizeof(engine_line), "engine: %s (%s)",
			 profile_engine_name(ch.used),
			 ch.asked == PROFILE_ENGINE_AUTO ? "auto: perf_event_open allowed" : "as asked");
	fo.duration_ns = s.end_ns - s.start_ns;
	fo.time_unix_ns = (int64_t)time(NULL) * 1000000000ll - (int64_t)fo.duration_ns;
	code = write_flame(f, out, (enum flame_format)fmt, &fo);
	if (code)
		goto out;
	if (a.bundle && !sum.partial) {
		code = write_bundle(&s, f, &fo, a.bundle, so.pid, bdir, sizeof(bdir));
		if (code)
			goto out;
	}
	t_done = perf_now_ns();
	/* Teardown after the result is written: the target's diagnostics thread may be slow to
	 * answer when the target is busy. */
	rc = profile_session_restore_within(&s, 100, &rerr);
	ct_debug("profile: perf map %s %.0f ms after the result",
		 rc == 1 ? "left to the watcher" : "restored", (double)(perf_now_ns() - t_done) / 1e6);
	if (rc == 1)
		handed_off = true;
	else if (rc && !s.target_gone)
		cli_warn("could not turn the perf map back off (%s): run 'clrtap perfmap -p %d off'",
			 strerror(-rc), (int)so.pid);
	if ((a.off_cpu || a.wall) && !s.ep && !sum.partial && flame_new(&uf) == 0 &&
	    profile_session_build_ex(&s, uf, NULL,
				     PROFILE_BUILD_NO_KERNEL | PROFILE_BUILD_TO_MANAGED) != 0) {
		flame_free(uf);
		uf = NULL;
	}
	print_summary(&a, &s, f, uf ? uf : f, &sum, "wrote", out, engine_line);
	if (!flame_total(f) && !s.target_gone)
		/* an empty profile says why and what to do */
		cli_warn("no samples: pid %d %s in %.1f s (idle?); profile while it works, with a "
			 "longer -d, or use %s to see where its threads wait",
			 (int)so.pid, a.off_cpu ? "never blocked" : "never ran on a CPU",
			 (double)(s.end_ns - s.start_ns) / 1e9, a.off_cpu ? "--wall" : "--wall or --off-cpu");
	printf("processing: %.0f ms (symbols, aggregation, output)\n",
	       (double)(t_done - t_stop) / 1e6);
	if (a.bundle && !sum.partial)
		printf("bundle: %s\n", bdir);
	if (handed_off)
		printf("perf map: the target did not answer within 100 ms; the watcher turns it off\n");
	code = sum.partial ? EXIT_PARTIAL : EXIT_OK;
out:
	cli_countdown_stop();
	flame_free(f);
	flame_free(uf);
	profile_session_close(&s);
	return code;
}
