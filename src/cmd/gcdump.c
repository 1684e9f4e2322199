/* SPDX-License-Identifier: MIT */
/*
 * clrtap gcdump - heap snapshots: collect one (a forced, blocking gen-2 GC
 * that walks the heap), report types with true retained sizes (dominator
 * tree), the largest retainers, shortest retention paths and duplicated
 * strings; compare snapshots (diff) and take them in a row (watch) to find
 * what only grows. docs/cmd/gcdump.md. Parsing and text only: the
 * workflows and their JSON are lib/heap (gcdump.c, report.c, leaks.c).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <time.h>

#include "cli.h"
#include "common/io.h"
#include "heap/heap.h"

#define USAGE "clrtap gcdump collect|report|diff|watch ..."

static bool is_tty;

static void on_progress(void *ctx, const struct heap_progress *p)
{
	char a[32], b[32];

	(void)ctx;
	if (!is_tty)
		return;
	fprintf(stderr, "\r\033[Kclrtap: %s %s objects, %s references (%" PRIu64 " KiB of events)%s",
		p->gc_ended ? "heap walk done:" : p->gc_started ? "walking the heap:" : "waiting for the GC:",
		heap_thousands(p->nodes, a, sizeof(a)), heap_thousands(p->edges, b, sizeof(b)), p->bytes >> 10,
		p->attempt > 1 ? " (second session)" : "");
	fflush(stderr);
}

struct target_args {
	struct cli_target_opts to;
	struct heap_gcdump_params p;
	const char *nettrace;
	int timeout_s; /* --timeout-s, deprecated */
	struct proc_target t;
	struct ipc_endpoint ep;
};

#define TARGET_EXTRA(ta) \
	{ 0, "gc-timeout", CLI_OPT_DURATION, &(ta)->p.gc_timeout_ms, "DUR", "give up on the snapshot after DUR (default 30s)" }, \
	{ 0, "timeout-s", CLI_OPT_INT | CLI_DEPRECATED, &(ta)->timeout_s, "S", "--gc-timeout" }, \
	{ 0, "buffer", CLI_OPT_INT, &(ta)->p.buffer_mb, "MB", "the runtime's session buffer (default 256)" }, \
	{ 0, "no-strings", CLI_OPT_BOOL, &(ta)->p.no_strings, NULL, "do not read string contents from the target" }, \
	{ 0, "max-objects", CLI_OPT_INT, &(ta)->p.max_objects, "N", "refuse heaps with more objects (default 200000000; 5N references)" }

static int check_target_args(struct target_args *ta)
{
	char why[128];

	if (ta->timeout_s) {
		if (ta->timeout_s < 1 || ta->timeout_s > 86400)
			return cli_error(EXIT_USAGE, "--timeout-s must be 1..86400");
		ta->p.gc_timeout_ms = (int64_t)ta->timeout_s * 1000;
	}
	if (heap_gcdump_params_check(&ta->p, why, sizeof(why)))
		return cli_error(EXIT_USAGE, "%s", why);
	return 0;
}

/* The target, once: the stop signals caught, progress on a terminal. */
static int open_target(struct target_args *ta, struct heap_collect_opts *o)
{
	int code = cli_resolve_target(&ta->to, &ta->t, &ta->ep);

	if (code)
		return code;
	is_tty = isatty(2);
	/* before the first sentence: a Ctrl-C right after it is seen, never the default action */
	cli_catch_stop_signals();
	ta->p.stop = &cli_stop_requested;
	ta->p.progress = on_progress;
	heap_gcdump_collect_opts(&ta->p, &ta->ep, o);
	return EXIT_OK;
}

static int take_snapshot(struct target_args *ta, struct heap_graph **g)
{
	struct heap_collect_opts o;
	struct heap_collect_result res = { 0 };
	char msg[512];
	int code = open_target(ta, &o), err;

	if (code)
		return code;
	cli_info("forcing a full, blocking gen-2 GC in pid %d to walk its heap (the process pauses for it)",
		 (int)ta->t.pid);
	if (ta->nettrace) {
		o.tee_fd = open(ta->nettrace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o.tee_fd < 0)
			return cli_error(EXIT_ERROR, "cannot write %s: %s", ta->nettrace, strerror(errno));
	}
	err = heap_collect(&o, g, &res);
	if (o.tee_fd > 0)
		close(o.tee_fd);
	if (is_tty)
		fprintf(stderr, "\r\033[K");
	return err ? cli_error(heap_collect_explain(&res, err, msg, sizeof(msg)), "%s", msg) : EXIT_OK;
}

static int load(const char *path, struct heap_graph **g)
{
	char msg[512];
	int code;

	return heap_load(path, g, msg, sizeof(msg), &code) ? cli_error(code, "%s", msg) : EXIT_OK;
}

/* Prints sb (a JSON document gets its newline) unless err; releases sb. */
static int print_out(struct strbuf *sb, int err, bool json)
{
	if (!err && json)
		err = strbuf_addch(sb, '\n');
	if (!err)
		err = strbuf_fwrite(sb, stdout);
	strbuf_release(sb);
	return err ? cli_error(EXIT_ERROR, "cannot write the output: %s", strerror(-err)) : EXIT_OK;
}
#define print_text(sb) print_out(sb, 0, false)
#define print_json(sb, err) print_out(sb, err, true)

static int cmd_collect(int argc, char **argv)
{
	struct target_args ta = { 0 };
	const char *out = NULL;
	bool json = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "FILE", "the snapshot file (default PID.heap)" },
		{ 0, "nettrace", CLI_OPT_STRING, &ta.nettrace, "FILE", "also keep the heap session's events as a .nettrace" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the result as JSON (the gcdump.collect task's)" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_graph *g = NULL;
	struct strbuf tb = STRBUF_INIT;
	char defpath[64];
	int first, code, err;

	heap_gcdump_params_default(&ta.p);
	if (cli_parse(argc, argv, "clrtap gcdump collect (-p PID | -n NAME) [-o FILE]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if ((code = check_target_args(&ta)))
		return code;
	/* no forced GC when the result could not be written anyway */
	if (out && (err = heap_file_can_write(AT_FDCWD, out)))
		return cli_error(err == -ENAMETOOLONG ? EXIT_USAGE : EXIT_ERROR, "cannot write %s.tmp: %s", out,
				 err == -ENAMETOOLONG ? "the path is too long" : strerror(-err));
	if ((code = take_snapshot(&ta, &g)))
		return code;
	if (!out) {
		snprintf(defpath, sizeof(defpath), "%u.heap", g->meta.pid);
		out = defpath;
	}
	if ((err = heap_file_save(g, AT_FDCWD, out))) {
		code = cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(-err));
	} else if (json) {
		struct strbuf sb = STRBUF_INIT;

		code = print_json(&sb, heap_gcdump_collect_json(g, out, &sb));
	} else {
		heap_text_collected(&tb, g, out);
		code = print_text(&tb);
	}
	heap_graph_free(g);
	return code;
}

static int write_html(const struct heap_report *r, const char *html)
{
	struct strbuf sb = STRBUF_INIT;
	int fd, err = heap_html_write(r->g, r->a, r->p, &sb);

	if (!err) {
		fd = open(html, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		err = fd < 0 ? -errno : ct_write_all(fd, sb.buf, sb.len);
		if (fd >= 0 && close(fd) && !err)
			err = -errno;
	}
	strbuf_release(&sb);
	if (err)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", html, strerror(-err));
	cli_info("wrote %s", html);
	return EXIT_OK;
}

static int cmd_report(int argc, char **argv)
{
	struct target_args ta = { 0 };
	const char *path_type = NULL, *html = NULL;
	bool json = false;
	int top = 30;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the report as JSON" },
		{ 0, "top", CLI_OPT_INT, &top, "N", "types shown (default 30; 0: all)" },
		{ 0, "path", CLI_OPT_STRING, &path_type, "TYPE|0xADDR", "shortest retention paths of TYPE's objects, or of one object" },
		{ 0, "html", CLI_OPT_OUTPUT, &html, "FILE", "also write a self-contained HTML view" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_graph *g = NULL;
	struct strbuf tb = STRBUF_INIT;
	struct heap_report r;
	char why[512];
	int first, code, err;

	heap_gcdump_params_default(&ta.p);
	if (cli_parse(argc, argv, "clrtap gcdump report (FILE | -p PID | -n NAME) [--json] [--path TYPE]",
		      opts, &first, &code))
		return code;
	if (top < 0)
		return cli_error(EXIT_USAGE, "--top must be >= 0");
	if ((code = check_target_args(&ta)))
		return code;
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	if (first < argc && (ta.to.pid || ta.to.name))
		return cli_error(EXIT_USAGE, "give a FILE or a process, not both");
	if (first == argc && !ta.to.pid && !ta.to.name)
		return cli_error(EXIT_USAGE, "give a snapshot FILE or -p PID / -n NAME");
	code = first < argc ? load(argv[first], &g) : take_snapshot(&ta, &g);
	if (code)
		return code;
	err = heap_report_build(g, top, path_type, html != NULL, &r, why, sizeof(why));
	if (err)
		code = cli_error(err == -EINVAL ? EXIT_USAGE : EXIT_ERROR, "%s", why);
	if (!code && html)
		code = write_html(&r, html);
	if (!code && json) {
		struct strbuf sb = STRBUF_INIT;

		code = print_json(&sb, heap_gcdump_report_json(&r, &sb));
	} else if (!code) {
		heap_text_report(&tb, &r);
		code = print_text(&tb);
	}
	heap_report_release(&r);
	heap_graph_free(g);
	return code;
}

static int print_leaks(const char *task, const struct heap_leaks *l, const char *const *labels, bool json,
		       bool partial)
{
	struct strbuf sb = STRBUF_INIT, tb = STRBUF_INIT;

	if (json)
		return print_json(&sb, heap_gcdump_leaks_json(task, l, labels, partial, &sb));
	heap_text_growth(&tb, l);
	return print_text(&tb);
}

static int cmd_diff(int argc, char **argv)
{
	bool json = false;
	const struct cli_option opts[] = {
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the result as JSON" },
		{ 0 },
	};
	struct heap_series s = { 0 };
	struct heap_leaks l;
	char msg[512];
	int first, code;

	if (cli_parse(argc, argv, "clrtap gcdump diff A B [C ...] [--json]", opts, &first, &code))
		return code;
	if (heap_gcdump_diff((const char *const *)(argv + first), (size_t)(argc - first), &s, &l, msg,
			     sizeof(msg), &code))
		code = cli_error(code, "%s", msg);
	else
		code = print_leaks("gcdump.diff", &l, (const char *const *)(argv + first), json, false);
	heap_leaks_release(&l);
	heap_series_release(&s);
	return code;
}

struct watch_ctx {
	const char *prefix;
	int count;
	int code;
};

static int on_snapshot(void *ctx, unsigned i, const struct heap_graph *g)
{
	struct watch_ctx *w = ctx;

	if (w->prefix) {
		char path[4096];
		int err;

		snprintf(path, sizeof(path), "%s-%u.heap", w->prefix, i + 1);
		if ((err = heap_file_save(g, AT_FDCWD, path))) {
			w->code = cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-err));
			return err;
		}
	}
	cli_info("snapshot %u of %d: %u objects, %" PRIu64 " bytes", i + 1, w->count, g->nnodes,
		 heap_graph_bytes(g));
	return 0;
}

static int gcdump_sub_watch(int argc, char **argv)
{
	struct target_args ta = { 0 };
	struct watch_ctx w = { NULL, 3, 0 };
	bool json = false;
	int64_t interval = 30000;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 0, "every", CLI_OPT_DURATION, &interval, "DUR", "time between snapshots (default 30s)" },
		{ 0, "snapshots", CLI_OPT_INT, &w.count, "N", "snapshots to take (default 3, at least 2)" },
		{ 0, "count", CLI_OPT_INT | CLI_DEPRECATED, &w.count, "N", "--snapshots" },
		{ 'o', "output", CLI_OPT_OUTPUT, &w.prefix, "PREFIX", "also write PREFIX-1.heap, PREFIX-2.heap, ..." },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the result as JSON" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_series s = { 0 };
	struct heap_leaks l = { 0 };
	struct heap_collect_opts o;
	struct heap_collect_result res;
	char *labels[HEAP_DIFF_MAX], msg[512];
	int first, code, err;
	size_t i;

	heap_gcdump_params_default(&ta.p);
	if (cli_parse(argc, argv, "clrtap gcdump watch (-p PID | -n NAME) [--every DUR] [--snapshots N]", opts,
		      &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (interval < 1 || interval > (int64_t)86400 * 1000)
		return cli_error(EXIT_USAGE, "--every must be more than 0 and at most 24h");
	if (w.count < 2 || w.count > HEAP_DIFF_MAX)
		return cli_error(EXIT_USAGE, "--snapshots must be 2..%d", HEAP_DIFF_MAX);
	if ((code = check_target_args(&ta)) || (code = open_target(&ta, &o)))
		return code;
	if (heap_series_init(&s, (size_t)w.count))
		return cli_error(EXIT_ERROR, "out of memory");
	cli_info("%d snapshots of pid %d: each forces a full, blocking gen-2 GC (the process pauses for it)", w.count,
		 (int)ta.t.pid);
	err = heap_series_collect(&s, &o, (unsigned)w.count, interval, on_snapshot, &w, &res);
	if (is_tty)
		fprintf(stderr, "\r\033[K");
	if (err && !cli_stop_requested) {
		code = w.code ? w.code : cli_error(heap_collect_explain(&res, err, msg, sizeof(msg)), "%s", msg);
	} else if (s.n < 2) {
		code = cli_error(s.n ? EXIT_PARTIAL : EXIT_INTERRUPTED, "interrupted after %zu snapshot%s: nothing to compare",
				 s.n, s.n == 1 ? "" : "s");
	} else if ((err = heap_leaks_compare(&s, &l))) {
		code = cli_error(EXIT_ERROR, "cannot compare: %s", strerror(-err));
	} else {
		for (i = 0; i < s.n; i++)
			if (asprintf(&labels[i], "snapshot %zu", i + 1) < 0)
				labels[i] = NULL;
		code = print_leaks("gcdump.watch", &l, (const char *const *)labels, json, s.n < (size_t)w.count);
		for (i = 0; i < s.n; i++)
			free(labels[i]);
		if (!code && s.n < (size_t)w.count)
			code = cli_error(EXIT_PARTIAL, "interrupted: compared the %zu snapshots taken", s.n);
	}
	heap_leaks_release(&l);
	heap_series_release(&s);
	return code;
}

int cmd_gcdump(int argc, char **argv)
{
	if (argc < 2)
		return cli_error(EXIT_USAGE, "say collect, report, diff or watch (see 'clrtap gcdump --help')");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		printf("usage: " USAGE "\n\n"
		       "  collect (-p PID | -n NAME) [-o FILE]    take a heap snapshot into FILE\n"
		       "  report (FILE | -p PID) [--json] [--path TYPE] [--html FILE]\n"
		       "                                          types, retained sizes, paths, duplicated strings\n"
		       "  diff A B [C ...] [--json]               types that grow in every snapshot\n"
		       "  watch (-p PID) [--every 30s] [--count N] snapshots in a row; what only grows\n\n"
		       "Each snapshot forces a full, blocking gen-2 GC in the target.\n"
		       "'clrtap gcdump SUBCOMMAND --help' lists the options.\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "collect"))
		return cmd_collect(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "watch"))
		return gcdump_sub_watch(argc - 1, argv + 1);
	return cli_error(EXIT_USAGE, "unknown gcdump subcommand '%s' (collect, report, diff, watch)", argv[1]);
}
