/* SPDX-License-Identifier: MIT */
/*
 * clrtap top - a live view of the hottest frames of a process (self and
 * total % of the last second's CPU samples), refreshed each second. The
 * sampling session is lib/profile's, as for `clrtap profile`, on either
 * engine (perf_event, or EventPipe where perf_event_open is denied).
 */
#include "common/compat.h"

#include <signal.h>
#include <time.h>

#include "cli.h"
#include "flame/flame.h"
#include "profile/profile.h"

static int resolve(const struct cli_target_opts *to, struct proc_target *t, bool *dotnet,
		   enum profile_engine engine, bool *no_access)
{
	struct ipc_endpoint ep;
	int err;

	*dotnet = false;
	if (to->name || !to->pid) {
		err = cli_resolve_target(to, t, &ep);
		*dotnet = err == EXIT_OK;
		return err;
	}
	err = proc_target_find(to->pid, t);
	switch (err) {
	case 0:
		*dotnet = true;
		return EXIT_OK;
	case -ESRCH:
		return cli_error(EXIT_NO_PROCESS, "no process with pid %d", (int)to->pid);
	case -ENOENT:
		if (engine == PROFILE_ENGINE_EVENTPIPE)
			return cli_error(EXIT_NOT_DOTNET, "pid %d has no diagnostics socket: --engine "
					 "eventpipe needs a .NET process", (int)to->pid);
		return EXIT_OK; /* said once sampling works (else the refusal names both) */
	case -EACCES:
		*no_access = true;
		return EXIT_OK; /* perf_event_open's refusal explains */
	case -ELOOP:
	case -ENOTSOCK:
		cli_warn("pid %d's diagnostics socket %s is not the target's socket: native and "
			 "kernel frames only",
			 (int)to->pid, t->sock_tpath);
		return EXIT_OK;
	default:
		return cli_error(ct_exit_for(err), "cannot inspect pid %d: %s", (int)to->pid,
				 strerror(-err));
	}
}

static void show(struct profile_session *s, pid_t pid, int lines, bool tty, bool kernel,
		 unsigned iter)
{
	struct profile_ep_stats es = { 0 };
	struct perf_sampler_stats st;
	struct profile_summary sum;
	struct flame_top *top = NULL;
	struct flame *f = NULL;
	char clock[16];
	time_t now = time(NULL);
	struct tm tm;
	size_t n = 0, i;
	uint64_t total;
	int shown = 0;

	if (flame_new(&f))
		return;
	if (profile_session_build_ex(s, f, &sum, kernel ? 0 : PROFILE_BUILD_NO_KERNEL)) {
		flame_free(f);
		return;
	}
	profile_session_reset(s);
	if (profile_session_ep(s))
		profile_ep_stats(profile_session_ep(s), &es);
	profile_session_sampler_stats(s, &st);
	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	total = flame_total(f);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	if (profile_session_ep(s))
		printf("clrtap top - pid %d - %s - %llu managed-code samples in the last second, "
		       "%s (EventPipe engine: managed frames only), %llu events lost in all\n",
		       (int)pid, clock, (unsigned long long)total,
		       es.oncpu != TASKCPU_NONE ? "on-CPU" : "thread time, waiting included",
		       (unsigned long long)es.dropped_events);
	else
		printf("clrtap top - pid %d - %s - %llu samples in the last second, %u threads, %llu "
		       "lost in all (perf_event engine)\n",
		       (int)pid, clock, (unsigned long long)total, st.threads,
		       (unsigned long long)st.lost);
	printf("%7s %7s  %s\n", "SELF%", "TOTAL%", "FRAME");
	if (total && flame_top(f, &top, &n) == 0) {
		for (i = 0; i < n && shown < lines; i++) {
			if (!top[i].self)
				break;
			printf("%7.1f %7.1f  %s\n", 100.0 * (double)top[i].self / (double)total,
			       100.0 * (double)top[i].total / (double)total, cli_safe(top[i].name));
			shown++;
		}
	}
	if (!tty)
		printf("-- %u\n", iter);
	fflush(stdout);
	free(top);
	flame_free(f);
}

int cmd_top(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	int hz = -1, iterations = 0, lines = 20;
	int64_t duration_ms = 0; /* 0: until Ctrl-C */
	bool kernel = false;
	const char *engine_s = NULL;
	enum profile_engine engine = PROFILE_ENGINE_AUTO;
	struct profile_engine_choice ch;
	char msg[2048];
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'F', "frequency", CLI_OPT_INT, &hz, "HZ", "samples per second per thread (default 99)" },
		{ 'd', "duration", CLI_OPT_DURATION, &duration_ms, "SEC", "stop after SEC seconds (default, or 0: Ctrl-C)" },
		{ 'i', "iterations", CLI_OPT_INT, &iterations, "N", "stop after N refreshes" },
		{ 0, "top", CLI_OPT_INT, &lines, "N", "rows shown (default 20)" },
		{ 0, "lines", CLI_OPT_INT | CLI_DEPRECATED, &lines, "N", "--top" },
		{ 0, "kernel", CLI_OPT_BOOL, &kernel, NULL, "rank kernel frames too (default: user frames)" },
		{ 0, "engine", CLI_OPT_STRING, &engine_s, "ENGINE",
		  "auto (default: perf_event, else EventPipe when perf_event_open is denied), perf or "
		  "eventpipe" },
		{ 0 },
	};
	struct profile_session_opts so = { 0 };
	struct profile_session *s = NULL;
	struct profile_session_info si;
	struct proc_target t;
	uint64_t next, deadline;
	unsigned iter = 0;
	int first, code, rc;
	bool dotnet, no_access = false, hz_given, tty = isatty(STDOUT_FILENO);

	/* -n is the target's name everywhere; iterations are -i/--iterations (and -n N as a count
	 * is accepted when it is a number, like top(1)) */
	if (cli_parse(argc, argv,
		      "clrtap top (-p PID | -n NAME) [-F HZ] [-d SEC] [-i ITER] [--top N] "
		      "[--engine auto|perf|eventpipe]", opts,
		      &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (to.pid && to.name) {
		uint32_t v;

		if (ct_parse_u32(to.name, 10, &v) == 0 && v > 0 && v < 1000000) {
			iterations = (int)v;
			to.name = NULL;
		}
	}
	if (engine_s && profile_engine_parse(engine_s, &engine))
		return cli_error(EXIT_USAGE, "unknown engine '%s' (auto, perf, eventpipe)", engine_s);
	if (hz != -1 && engine == PROFILE_ENGINE_EVENTPIPE)
		return cli_error(EXIT_USAGE, "-F does not apply to --engine eventpipe: %s",
				 profile_engine_ep_rate);
	hz_given = hz != -1;
	if (hz == -1)
		hz = 99;
	if (hz < 1 || hz > 10000)
		return cli_error(EXIT_USAGE, "-F must be 1..10000");
	if (iterations < 0 || lines < 1)
		return cli_error(EXIT_USAGE, "-i and --top must be positive");
	code = resolve(&to, &t, &dotnet, engine, &no_access);
	if (code)
		return code;
	so.pid = to.pid ? to.pid : t.pid;
	so.target = dotnet ? &t : NULL;
	so.timeout_ms = to.timeout_ms;
	so.sampler.hz = (unsigned)hz;
	so.sampler.cpu = true;
	so.engine = engine;
	so.ep_samples = PROFILE_EP_MANAGED;
	so.ep_prime = true; /* names for the code compiled before, from the first refresh */
	cli_catch_stop_signals();
	rc = profile_session_start_engine(&s, &so, &ch);
	if (rc && (ch.perf_err || ch.ep_err)) {
		if (no_access && ch.ep_err == -ENOENT)
			ch.ep_err = -EACCES; /* the socket is behind /proc/PID/root */
		profile_engine_explain(&ch, so.pid, msg, sizeof(msg));
		return cli_error(ch.perf_err ? EXIT_PERMISSION : ct_exit_for(ch.ep_err), "%s", msg);
	}
	if (rc) {
		if (rc == -EACCES || rc == -EPERM)
			return cli_error(EXIT_PERMISSION,
					 "not allowed to sample pid %d with perf_event_open: it needs "
					 "the target to be yours (or CAP_SYS_PTRACE) and either "
					 "CAP_PERFMON (or root) or kernel.perf_event_paranoid <= 2",
					 (int)so.pid);
		if (rc == -ESRCH)
			return cli_error(EXIT_NO_PROCESS, "pid %d is gone", (int)so.pid);
		return cli_error(ct_exit_for(rc), "cannot sample pid %d: %s", (int)so.pid,
				 strerror(-rc));
	}
	if (ch.fell_back)
		cli_warn("%s (%s): sampling with the runtime's EventPipe "
			 "sample profiler instead (managed frames only)",
			 profile_engine_refused(&ch), profile_perf_cause_short(ch.diag.cause));
	if (ch.fell_back && hz_given)
		cli_warn("-F %d is not used by the EventPipe engine: %s", hz,
			 profile_engine_ep_rate);
	profile_session_info(s, &si);
	if (!dotnet && !si.ep)
		cli_info("pid %d is not a .NET process: native and kernel frames only", (int)so.pid);
	if (si.dotnet && si.pm_err)
		cli_warn("cannot turn the perf map on (%s): JIT-compiled frames stay unnamed",
			 strerror(-si.pm_err));
	if (si.dotnet && !si.ep && !si.pm_err && !si.pm_jitdump) {
		int major = perfmap_runtime_major(&t, to.timeout_ms);

		if (major >= PERFMAP_BUFFERED_MAJOR)
			cli_warn("this runtime (.NET %d) buffers its perf map: the live view names "
				 "JIT-compiled frames only as the runtime writes its buffer out; "
				 "'clrtap profile' (it reads the map whole at its end) or --engine "
				 "eventpipe names them",
				 major);
	}
	if (!si.ep) {
		struct perf_sampler_stats st;

		profile_session_sampler_stats(s, &st);
		if (!st.kernel)
			cli_warn("kernel stacks not permitted (kernel.perf_event_paranoid >= 2 and no "
				 "CAP_PERFMON): sampling user stacks only");
	}
	next = si.start_ns + 1000000000ull;
	deadline = duration_ms ? si.start_ns + (uint64_t)duration_ms * 1000000ull : UINT64_MAX;
	code = EXIT_OK;
	while (!cli_stop_requested) {
		uint64_t now = perf_now_ns();

		if (now >= next) {
			show(s, so.pid, lines, tty, kernel, ++iter);
			next += 1000000000ull;
			if ((iterations && iter >= (unsigned)iterations) || now >= deadline)
				break;
			continue;
		}
		rc = profile_session_tick(s, (int)((next - now) / 1000000ull) + 1);
		if (rc == -ESRCH) {
			show(s, so.pid, lines, tty, kernel, ++iter);
			cli_info("pid %d exited", (int)so.pid);
			break;
		}
		if (rc < 0) {
			code = cli_error(ct_exit_for(rc), "sampling failed: %s", strerror(-rc));
			break;
		}
	}
	profile_session_close(s);
	return code;
}
