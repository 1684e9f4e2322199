/* SPDX-License-Identifier: MIT */
/*
 * clrtap doctor - a short battery over one EventPipe session (exceptions,
 * GC, contention, the sample profiler and System.Runtime counters) plus the
 * memory breakdown of /proc/PID/smaps, turned into findings ranked by
 * severity, each with its evidence and the command that digs deeper. The
 * workflow is lib/analyze's analyze_doctor_run; this file is the command
 * line: options, target, Ctrl-C, output and exit code.
 */
#include "common/compat.h"

#include "analyze/analyze.h"
#include "cli.h"
#include "common/json.h"

/* The findings as JSON or text into sb, then to out (a file) or stdout. */
static int print(const struct an_doctor *d, bool json, const char *out)
{
	struct strbuf sb = STRBUF_INIT;
	int err, code = EXIT_OK;

	if (json) {
		struct ct_json j;

		ct_json_init(&j, &sb);
		analyze_doctor_json(d, &j);
		err = ct_json_finish(&j);
		if (!err)
			err = strbuf_addch(&sb, '\n');
	} else {
		err = analyze_doctor_text(d, !out, &sb);
	}
	if (err)
		code = cli_error(EXIT_ERROR, "cannot format the findings: %s", strerror(-err));
	else if (out)
		code = cli_write_file(out, sb.buf, sb.len);
	else if (strbuf_fwrite(&sb, stdout) || fflush(stdout) || ferror(stdout))
		code = cli_error(EXIT_ERROR, "cannot write to standard output");
	strbuf_release(&sb);
	return code;
}

int cmd_doctor(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	int64_t duration = cli_task_default_ms("doctor", "duration", 10000);
	char dhelp[160];
	const char *out = NULL;
	bool json = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'd', "duration", CLI_OPT_DURATION, &duration, "SECONDS", cli_task_help("doctor", "duration", "0: until Ctrl-C", dhelp, sizeof(dhelp)) },
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "FILE", "write the findings to FILE (.json: JSON, else text)" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "JSON on standard output" },
		{ 0 },
	};
	struct an_doctor *d;
	struct proc_target t;
	struct ipc_endpoint ep;
	int first, code;

	if (cli_parse(argc, argv, "clrtap doctor (-p PID | -n NAME) [-d DUR] [-o FILE] [--json]", opts, &first,
		      &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	d = malloc(sizeof(*d));
	if (!d)
		return cli_error(EXIT_ERROR, "out of memory");
	cli_catch_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	if (duration)
		cli_info("examining pid %d for %.1f s", (int)t.pid, (double)duration / 1000);
	else
		cli_info("examining pid %d until Ctrl-C", (int)t.pid);
	cli_countdown_start("doctor", duration);
	code = analyze_doctor_run(&ep, t.pid, duration, &cli_stop_requested, d);
	cli_countdown_stop();
	if (code) {
		code = cli_error(analyze_fail_exit(d->fail, d->err), "%s", d->msg);
		free(d);
		return code;
	}
	if (d->partial[0])
		cli_warn("%s; the findings cover what came before", d->partial);
	if (out)
		json = strlen(out) > 5 && !strcmp(out + strlen(out) - 5, ".json");
	code = print(d, json, out);
	if (!code && out)
		cli_info("wrote %s", out);
	if (!code && d->partial[0])
		code = EXIT_PARTIAL;
	free(d);
	return code;
}
