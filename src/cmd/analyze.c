/* SPDX-License-Identifier: MIT */
/*
 * clrtap analyze - one question, one report: the command line around the
 * lib/analyze workflow (analyze_report_live/_file and the renderers):
 * options, the target, Ctrl-C, the output file and the exit code. Each
 * report says what it measured, for how long, what it could not see, and
 * what to run next. See docs/cmd/analyze.md.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "analyze/analyze.h"
#include "cli.h"
#include "common/json.h"

static void list_analyzers(void)
{
	const struct an_analyzer *a;
	size_t i;

	for (i = 0; (a = analyze_analyzer_at(i)); i++)
		printf("  %-12s %s%s\n", a->name, a->help,
		       a->need & (AN_NEED_SMAPS | AN_NEED_HEAP | AN_NEED_HEAPS) ? " (live only)" : "");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), k = strlen(suffix);

	return l > k && !strcasecmp(s + l - k, suffix);
}

/* Writes the report to stdout or (through an unnamed file) to out:
 * .json -> JSON, .html/.htm -> HTML, anything else -> Markdown. */
static int emit(struct an_report *r, const char *out, bool json)
{
	struct cli_outfile of = { .fd = -1 };
	FILE *f = stdout;
	bool html = false;
	int code, err;

	if (out) {
		json = ends_with(out, ".json");
		html = ends_with(out, ".html") || ends_with(out, ".htm");
		code = cli_outfile_open(&of, out);
		if (code)
			return code;
		f = html ? NULL : fdopen(dup(of.fd), "w");
		if (!html && !f) {
			cli_outfile_drop(&of);
			return cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(errno));
		}
	}
	if (html) {
		err = analyze_report_html(r, of.fd);
	} else if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		err = analyze_report_json(r, &j);
		if (!err && cli_json_out(&j, f))
			err = -EIO;
		strbuf_release(&sb);
	} else {
		struct strbuf sb = STRBUF_INIT;

		err = analyze_report_md(r, &sb);
		if (!err)
			err = strbuf_fwrite(&sb, f);
		strbuf_release(&sb);
	}
	if (out) {
		if (f && fclose(f))
			err = err ? err : -EIO;
		if (!err)
			err = cli_outfile_keep(&of, out);
		if (!err && cli_outfile_close(&of))
			err = -EIO;
		cli_outfile_drop(&of);
		if (err)
			return cli_error(EXIT_ERROR, "cannot write %s", out);
		cli_info("wrote %s", out);
	} else if (err || fflush(stdout)) {
		return cli_error(EXIT_ERROR, "cannot write to standard output");
	}
	return EXIT_OK;
}

/* The exit code of a failed run, with its message. */
static int failed(const struct an_report *r)
{
	const char *msg;
	int err;
	enum an_fail f = analyze_report_failure(r, &err, &msg);

	return cli_error(analyze_fail_exit(f, err), "%s", msg);
}

static int run_file(struct an_report *r, const char *path)
{
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_error(errno == EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot open %s: %s", path,
				 strerror(errno));
	err = analyze_report_file(r, fd, path);
	close(fd);
	return err ? failed(r) : EXIT_OK;
}

static int run_live(struct an_report *r, const struct an_analyzer *a, const struct cli_target_opts *to,
		    int64_t duration_ms)
{
	struct proc_target t;
	struct ipc_endpoint ep;
	int code;

	code = cli_resolve_target(to, &t, &ep);
	if (code)
		return code;
	cli_catch_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	if (a->need & AN_NEED_HEAPS)
		cli_info("3 heap snapshots of pid %d over %.1f s (each an induced gen-2 GC)", (int)t.pid,
			 (double)duration_ms / 1000);
	else if (a->need & AN_NEED_HEAP)
		cli_info("taking a heap snapshot of pid %d (an induced gen-2 GC)", (int)t.pid);
	else if (!(a->need & AN_NEED_SMAPS) && duration_ms)
		cli_info("analyzing pid %d (%s) for %.1f s", (int)t.pid, a->name, (double)duration_ms / 1000);
	else if (!(a->need & AN_NEED_SMAPS))
		cli_info("analyzing pid %d (%s) until Ctrl-C", (int)t.pid, a->name);
	cli_countdown_start(a->name, duration_ms);
	code = analyze_report_live(r, &ep, t.pid, duration_ms, &cli_stop_requested);
	cli_countdown_stop();
	if (code)
		return failed(r);
	if (analyze_report_partial(r))
		cli_warn("%s", analyze_report_partial(r));
	return EXIT_OK;
}

int cmd_analyze(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	int64_t duration = cli_task_default_ms("analyze", "duration", 5000);
	char dhelp[160], thelp[160];
	const char *out = NULL, *name, *file = NULL;
	bool json = false, list = false;
	int top = (int)cli_task_default_int("analyze", "top", 10);
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'd', "duration", CLI_OPT_DURATION, &duration, "SECONDS", cli_task_help("analyze", "duration", "0: until Ctrl-C", dhelp, sizeof(dhelp)) },
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "FILE", "write the report to FILE (.md, .json or .html)" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "JSON on standard output" },
		{ 0, "top", CLI_OPT_INT, &top, "N", cli_task_help("analyze", "top", NULL, thelp, sizeof(thelp)) },
		{ 'l', "list", CLI_OPT_BOOL, &list, NULL, "list the analyzers and exit" },
		{ 0 },
	};
	const struct an_analyzer *a;
	struct an_report *r = NULL;
	int first, code;

	if (cli_parse(argc, argv,
		      "clrtap analyze (-p PID | -n NAME) ANALYZER [-d SECONDS] [-o report.md|.json|.html] [--json]\n"
		      "       clrtap analyze FILE.nettrace ANALYZER [-o ...] [--json]",
		      opts, &first, &code))
		return code;
	if (list) {
		list_analyzers();
		return EXIT_OK;
	}
	if (argc - first == 2) {
		file = argv[first];
		name = argv[first + 1];
	} else if (argc - first == 1) {
		name = argv[first];
	} else {
		return cli_error(EXIT_USAGE, "which analyzer? (clrtap analyze -p PID ANALYZER; --list)");
	}
	a = analyze_analyzer_find(name);
	if (!a)
		return cli_error(EXIT_USAGE, "unknown analyzer '%s' (see clrtap analyze --list)", name);
	if (file && (to.pid || to.name))
		return cli_error(EXIT_USAGE, "either a file or -p/-n, not both");
	if (!file && !to.pid && !to.name)
		return cli_error(EXIT_USAGE, "no target: -p PID, -n NAME or a .nettrace file");
	if (file && (a->need & (AN_NEED_SMAPS | AN_NEED_HEAP | AN_NEED_HEAPS)))
		return cli_error(EXIT_USAGE, "'%s' reads a live process; it cannot run on a file", a->name);
	if (top < 1 || top > 1000)
		return cli_error(EXIT_USAGE, "--top must be 1..1000");
	if (!duration && !file && (a->need & AN_NEED_HEAPS))
		return cli_error(EXIT_USAGE, "'%s' compares snapshots taken over -d: it needs -d > 0", a->name);
	if (analyze_report_new(&r, a, (unsigned)top))
		return cli_error(EXIT_ERROR, "out of memory");
	code = file ? run_file(r, file) : run_live(r, a, &to, duration);
	if (!code) {
		code = emit(r, out, json);
		if (!code && analyze_report_partial(r))
			code = EXIT_PARTIAL;
	}
	analyze_report_free(r);
	return code;
}
