/* SPDX-License-Identifier: MIT */
/*
 * clrtap doctor - a short battery over one EventPipe session (exceptions,
 * GC, contention, the sample profiler and System.Runtime counters) plus the
 * memory breakdown of /proc/PID/smaps, turned into findings ranked by
 * severity, each with its evidence and the command that digs deeper
 * (lib/analyze).
 */
#include "common/compat.h"

#include <time.h>

#include "analyze/analyze.h"
#include "cli.h"
#include "common/json.h"

#define DOCTOR_NEED (AN_NEED_EXCEPTIONS | AN_NEED_GC | AN_NEED_CONTENTION | AN_NEED_SAMPLES | \
		     AN_NEED_COUNTERS)

static int print_json(pid_t pid, double d, const struct an_finding *f, size_t n, const char *partial,
		      const struct an_session *s)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	size_t i;
	int err;

	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_i64(&j, "pid", pid);
	ct_json_kv_double(&j, "duration_s", d);
	ct_json_kv_u64(&j, "events", tracestats_result(s->ts)->events);
	ct_json_kv_u64(&j, "dropped_events", tracestats_result(s->ts)->dropped_events);
	ct_json_kv_u64(&j, "counter_values", s->counter_values);
	if (partial)
		ct_json_kv_str(&j, "partial", partial);
	else
		ct_json_kv_null(&j, "partial");
	ct_json_kv_bool(&j, "alarming", n && f[0].severity >= AN_WARNING);
	ct_json_kv_arr_begin(&j, "findings");
	for (i = 0; i < n; i++) {
		ct_json_obj_begin(&j);
		ct_json_kv_str(&j, "severity", analyze_severity_name(f[i].severity));
		ct_json_kv_str(&j, "analyzer", f[i].analyzer);
		ct_json_kv_str(&j, "title", f[i].title);
		ct_json_kv_str(&j, "evidence", f[i].evidence);
		ct_json_kv_str(&j, "next", f[i].next);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	err = cli_json_out(&j, stdout);
	strbuf_release(&sb);
	return err ? cli_error(EXIT_ERROR, "cannot write to standard output") : EXIT_OK;
}

static int print_text(pid_t pid, double d, const struct an_finding *f, size_t n)
{
	size_t i;

	printf("clrtap doctor: pid %d, watched %.1f s (exceptions, GC, locks, CPU samples, counters, memory)\n\n",
	       (int)pid, d);
	if (!n || f[0].severity < AN_WARNING)
		printf("Nothing alarming.\n\n");
	for (i = 0; i < n; i++) {
		printf("%zu. [%s] %s\n", i + 1, analyze_severity_name(f[i].severity), cli_safe(f[i].title));
		if (f[i].evidence[0])
			printf("   evidence: %s\n", cli_safe(f[i].evidence));
		printf("   next: %s\n", f[i].next);
	}
	if (fflush(stdout) || ferror(stdout))
		return cli_error(EXIT_ERROR, "cannot write to standard output");
	return EXIT_OK;
}

int cmd_doctor(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	int64_t duration = 10000;
	bool json = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'd', "duration", CLI_OPT_DURATION, &duration, "SECONDS", "how long to watch (default 10)" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "JSON on standard output" },
		{ 0 },
	};
	struct an_finding f[AN_MAX_FINDINGS];
	struct live_session_result res;
	struct an_session *s = NULL;
	struct an_memory mem;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct timespec t0, t1;
	char why[512];
	const char *partial = NULL;
	long ncpu;
	size_t n;
	double d;
	int first, code, err;
	bool have_mem;

	if (cli_parse(argc, argv, "clrtap doctor (-p PID | -n NAME) [-d SECONDS] [--json]", opts, &first,
		      &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", cli_safe(argv[first]));
	if (duration <= 0)
		return cli_error(EXIT_USAGE, "-d must be positive");
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	if (analyze_session_new(&s, DOCTOR_NEED))
		return cli_error(EXIT_ERROR, "out of memory");
	cli_catch_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	cli_info("examining pid %d for %.1f s", (int)t.pid, (double)duration / 1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = analyze_session_live(s, &ep, duration, &cli_stop_requested, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		code = cli_error(EXIT_ERROR, "cannot run the session: %s", strerror(-err));
		goto out;
	}
	switch (analyze_live_outcome(&res, &ep, &err, why, sizeof(why))) {
	case AN_NO_SESSION:
		code = cli_error(cli_exit_for(err), "cannot examine: %s", why);
		goto out;
	case AN_BAD_STREAM:
		code = cli_error(EXIT_PROTOCOL, "cannot examine: %s", why);
		goto out;
	case AN_TARGET_GONE:
	case AN_BROKEN:
		cli_warn("%s; the findings cover what came before", why);
		partial = why;
		break;
	case AN_OK:
		break;
	}
	err = analyze_session_finish(s);
	if (err) {
		code = cli_error(EXIT_ERROR, "cannot summarize: %s", strerror(-err));
		goto out;
	}
	have_mem = !analyze_memory_read(t.pid, &mem);
	d = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	n = analyze_findings(s, have_mem ? &mem : NULL, t.pid, d, ncpu > 0 ? (unsigned)ncpu : 1, f);
	code = json ? print_json(t.pid, d, f, n, partial, s) : print_text(t.pid, d, f, n);
	if (!code && partial)
		code = EXIT_PARTIAL;
out:
	analyze_session_free(s);
	return code;
}
