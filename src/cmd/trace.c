/* SPDX-License-Identifier: MIT */
/*
 * clrtap trace collect - an EventPipe session over the diagnostics socket,
 * written to a .nettrace file. Ctrl-C stops it cleanly: StopTracing on a
 * second connection, then the rundown, then the end of the stream.
 * clrtap trace report / convert - read a .nettrace file back (lib/tracestats):
 * a summary of what happened, and the sampled stacks as a flame graph or
 * another profile format (lib/flame).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "cli.h"
#include "common/io.h"
#include "flame/flame.h"
#include "nettrace/nettrace.h"
#include "tracestats/tracestats.h"

#define MAX_PROVIDERS 64
#define DEFAULT_MAX_SIZE (1ull << 30)

struct sink {
	int fd; /* first: ct_fd_sink writes to it */
	bool tty;
};

static void progress(void *ctx, uint64_t bytes)
{
	struct sink *s = ctx;

	if (s->tty)
		fprintf(stderr, "\r%s %.1f MiB received ", cli_stop_requested ? "stopping:" : "tracing:",
			(double)bytes / (1024.0 * 1024.0));
}

static int collect(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	const char *providers_s = NULL, *profile = NULL, *out = NULL, *name, *help;
	int64_t duration = 0;
	uint64_t max_size = DEFAULT_MAX_SIZE;
	int buffer_mb = 256;
	bool no_rundown = false, no_stacks = false, list = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "providers", CLI_OPT_STRING, &providers_s, "SPECS",
		  "Name[:Keywords[:Level[:k=v;...]]], comma-separated" },
		{ 0, "profile", CLI_OPT_STRING, &profile, "NAME", "a named set of providers (--list-profiles)" },
		{ 'd', "duration", CLI_OPT_DURATION, &duration, "SECONDS",
		  "stop after this long, e.g. 1.5 (default and 0: until Ctrl-C)" },
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "FILE", "the .nettrace file (default trace.nettrace)" },
		{ 0, "max-size", CLI_OPT_SIZE, &max_size, "SIZE",
		  "stop at this file size, e.g. 200M (default 1G; 0: no cap)" },
		{ 0, "buffer", CLI_OPT_INT, &buffer_mb, "MB", "the runtime's circular buffer (default 256)" },
		{ 0, "no-rundown", CLI_OPT_BOOL, &no_rundown, NULL, "skip the method rundown at the end" },
		{ 0, "no-stacks", CLI_OPT_BOOL, &no_stacks, NULL, "do not collect stacks" },
		{ 0, "list-profiles", CLI_OPT_BOOL, &list, NULL, "list the profiles and exit" },
		{ 0 },
	};
	struct ipc_provider provs[MAX_PROVIDERS];
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct ipc_session_result res;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	struct sink sink = { .fd = -1 };
	struct strbuf partial = STRBUF_INIT;
	struct cli_outfile of = { .fd = -1 };
	char *specs = NULL, why[512];
	int first, code, err, err2 = -ENOMEM;

	if (cli_parse(argc, argv,
		      "clrtap trace collect (-p PID | -n NAME) [--profile NAME] [--providers SPECS] "
		      "[-d SECONDS] [-o FILE]",
		      opts, &first, &code))
		return code;
	for (size_t i = 0; list && (name = ipc_profile_name(i, &help)); i++)
		printf("  %-14s %s\n", name, help);
	if (list)
		return EXIT_OK;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	err = ipc_trace_config_build(profile, providers_s, buffer_mb, !no_rundown, !no_stacks, &cfg, provs,
				     MAX_PROVIDERS, &specs, why, sizeof(why));
	if (err) {
		code = cli_error(err == -ENOMEM ? EXIT_ERROR : EXIT_USAGE, "%s", why);
		goto out;
	}
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		goto out;
	if (!out)
		out = "trace.nettrace";
	/* An unnamed file beside the output: OUT appears only when complete. */
	code = cli_outfile_open(&of, out);
	if (code)
		goto out;
	sink.fd = of.fd;
	sink.tty = isatty(STDERR_FILENO);

	cli_catch_stop_signals();
	so.sink = ct_fd_sink;
	so.progress = progress;
	so.ctx = &sink;
	so.stop = &cli_stop_requested;
	so.duration_ms = duration;
	so.max_bytes = max_size;

	cli_info("tracing pid %d with %zu provider%s into %s; %s", (int)t.pid, cfg.nproviders,
		 cfg.nproviders == 1 ? "" : "s", out, duration ? "waiting for the duration" : "Ctrl-C stops");
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	if (sink.tty)
		fputc('\n', stderr);
	if (fsync(of.fd) && errno != EINVAL && !err)
		err = -errno;
	if (!err && res.complete) {
		err2 = cli_outfile_keep(&of, out);
		if (err2 || cli_outfile_close(&of)) {
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(err2 ? -err2 : errno));
			goto out;
		}
		if (res.target_ended)
			cli_warn("the target closed the session before clrtap stopped it (did it exit?)");
		printf("wrote %s (%" PRIu64 " bytes)\n", out, res.bytes);
		code = EXIT_OK;
		goto out;
	}
	/* Failed: keep nothing that could pass for a trace; a partial stream under its own name. */
	ipc_session_strerror(err ?: -EPROTO, &res, &ep, &rerr, why, sizeof(why));
	if (res.bytes == 0 || res.bad_prologue)
		code = cli_error(res.bad_prologue ? EXIT_PROTOCOL : ct_exit_for(err ?: -EPROTO),
				 "cannot trace: %s; kept nothing, %s not written", why, out);
	else if (strbuf_addf(&partial, "%s.partial", out) || (err2 = cli_outfile_keep(&of, partial.buf)))
		code = cli_error(EXIT_ERROR, "cannot keep the partial trace: %s", strerror(-err2));
	else if (err == -EFBIG)
		code = cli_error(EXIT_PARTIAL, "stopped at --max-size (%" PRIu64 " bytes): kept %s, "
				 "incomplete (no rundown, no end); %s not written",
				 res.bytes, partial.buf, out);
	else if (err)
		code = cli_error(EXIT_PARTIAL, "trace broke off after %" PRIu64 " bytes: %s; kept %s, "
				 "incomplete; %s not written", res.bytes, why, partial.buf, out);
	else
		code = cli_error(EXIT_PARTIAL, "the stream ended without its end marker after %" PRIu64
				 " bytes: kept %s, incomplete; %s not written",
				 res.bytes, partial.buf, out);
out:
	cli_outfile_drop(&of);
	strbuf_release(&partial);
	free(specs);
	return code;
}

/* ----- reading a file back ----- */

struct loaded {
	struct tracestats *ts;
	int read_err; /* the reader's error (negative errno) or 0 */
};

/*
 * Reads path through lib/tracestats. Returns EXIT_OK with l filled (also when
 * the file is damaged: l->read_err says so), or an exit code after printing
 * why (cannot open, out of memory).
 */
static int load(const char *path, bool thread_time, bool lines, struct loaded *l)
{
	const char *stage;
	int err = tracestats_load_path(path, thread_time, lines, &l->ts, &l->read_err, &stage);

	if (err)
		return cli_error(err == -EACCES && !strcmp(stage, "open") ? EXIT_PERMISSION : EXIT_ERROR,
				 "cannot %s %s: %s", stage, path, strerror(-err));
	return EXIT_OK;
}

/* The exit code and message for a damaged or unreadable stream. */
static int read_failure(const char *path, const struct loaded *l)
{
	char msg[PATH_MAX + 1024];
	int code = tracestats_damage_text(l->ts, l->read_err, path, msg, sizeof(msg));

	return cli_error(code, "%s", msg);
}

/*
 * Writes the sampled stacks of l to out in fmt, through a temporary name.
 * From a damaged input only what was read before the damage is written, and
 * under the name OUT.partial (nothing when no stack was read). *written gets
 * the name written, or NULL. Returns an exit code.
 */
static int write_flame(const struct loaded *l, const char *src, const char *out,
		       enum flame_format fmt, const char **written)
{
	const struct ts_result *res = tracestats_result(l->ts);
	struct flame_opts fo = { 0 };
	static struct strbuf partial = STRBUF_INIT;
	const char *base = strrchr(src, '/');
	int code;

	*written = NULL;
	if (l->read_err && !flame_total(res->flame))
		return EXIT_OK; /* nothing true to write: the caller reports the damage */

	fo.title = base ? base + 1 : src;
	fo.unit = "samples";
	fo.period = res->info.sampling_ns;
	fo.duration_ns = res->duration_ns;
	fo.time_unix_ns = res->have_info ? nt_sync_unix_ns(&res->info) : 0;
	if (l->read_err) {
		strbuf_reset(&partial);
		if (strbuf_addf(&partial, "%s.partial", out))
			return cli_error(EXIT_ERROR, "out of memory");
		out = partial.buf;
	}
	code = cli_write_flame(out, res->flame, fmt, &fo);
	if (code)
		return code;
	*written = out;
	if (!flame_total(res->flame))
		cli_warn("%s has no sampled stacks (collect with --profile cpu-sampling); %s is empty",
			 src, out);
	return EXIT_OK;
}

static int report(int argc, char **argv)
{
	const char *flame_out = NULL;
	bool json = false, thread_time = false, lines = false;
	int top = 10;
	const struct cli_option opts[] = {
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "machine-readable output" },
		{ 0, "lines", CLI_OPT_BOOL, &lines, NULL,
		  "exception frames: source file and line, from the assemblies the trace names and "
		  "their portable PDBs on this machine" },
		{ 0, "top", CLI_OPT_INT, &top, "N", "rows per table (default 10)" },
		{ 0, "flame", CLI_OPT_OUTPUT, &flame_out, "OUT",
		  "also write the sampled stacks; format from the name: .folded .html .svg "
		  ".speedscope.json .pb.gz" },
		{ 0, "thread-time", CLI_OPT_BOOL, &thread_time, NULL,
		  "stacks: also samples of threads outside managed code (waiting, native)" },
		{ 0 },
	};
	struct strbuf sb = STRBUF_INIT;
	struct loaded l;
	int first, code, fmt = 0, err;

	if (cli_parse(argc, argv, "clrtap trace report FILE [--json] [--top N] [--flame OUT]", opts,
		      &first, &code))
		return code;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "which .nettrace file? (clrtap trace report FILE)");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	if (top <= 0)
		return cli_error(EXIT_USAGE, "--top must be positive");
	if (flame_out) {
		fmt = flame_format_from_path(flame_out);
		if (fmt < 0)
			return cli_error(EXIT_USAGE,
					 "--flame %s: name it .folded, .html, .svg, .speedscope.json or .pb.gz",
					 flame_out);
	}
	code = load(argv[first], thread_time, lines, &l);
	if (code)
		return code;
	if (tracestats_not_nettrace(l.ts, l.read_err)) {
		/* one error line, no empty report on stdout */
		code = read_failure(argv[first], &l);
		tracestats_free(l.ts);
		return code;
	}
	if (json)
		err = tracestats_format_json(l.ts, (unsigned)top, argv[first], &sb);
	else
		err = tracestats_format_text(l.ts, (unsigned)top, argv[first], &sb);
	if (!err)
		err = strbuf_fwrite(&sb, stdout);
	fflush(stdout);
	strbuf_release(&sb);
	if (err) {
		tracestats_free(l.ts);
		return cli_error(EXIT_ERROR, "cannot write the report: %s", strerror(-err));
	}
	if (flame_out) {
		const char *written;

		code = write_flame(&l, argv[first], flame_out, (enum flame_format)fmt, &written);
		if (!code && !json && written)
			cli_info("wrote %s%s", written,
				 l.read_err ? " (stacks read before the damage only)" : "");
	}
	if (l.read_err)
		code = read_failure(argv[first], &l);
	tracestats_free(l.ts);
	return code;
}

static int convert(int argc, char **argv)
{
	const char *format = NULL, *out = NULL;
	bool thread_time = false, lines = false;
	const struct cli_option opts[] = {
		{ 'f', "format", CLI_OPT_STRING, &format, "FMT",
		  "speedscope (default), folded, html, svg or pprof" },
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "OUT",
		  "output file (default: FILE without .nettrace, plus the format's extension)" },
		{ 0, "thread-time", CLI_OPT_BOOL, &thread_time, NULL,
		  "also samples of threads outside managed code (waiting, native)" },
		{ 0, "lines", CLI_OPT_BOOL, &lines, NULL,
		  "frames with their source file and line (as trace report --lines)" },
		{ 0 },
	};
	const struct ts_result *res;
	const char *written = NULL;
	struct strbuf name = STRBUF_INIT;
	const struct flame_format_desc *ff;
	size_t n;
	struct loaded l;
	int first, code;

	if (cli_parse(argc, argv, "clrtap trace convert FILE [--format FMT] [-o OUT]", opts, &first,
		      &code))
		return code;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "which .nettrace file? (clrtap trace convert FILE)");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	if (format) {
		ff = flame_format_by_name(format);
		if (!ff)
			return cli_error(EXIT_USAGE,
					 "unknown format '%s' (speedscope, folded, html, svg, pprof)",
					 format);
		/* an output named for another format would hold what its name denies */
		if (out && flame_format_from_path(out) >= 0 && flame_format_from_path(out) != (int)ff->fmt)
			return cli_error(EXIT_USAGE, "-f %s with -o %s: the name says another format; "
					 "name it *%s or drop -f", format, out, ff->ext);
	} else {
		ff = flame_format_desc_of(out ? flame_format_from_path(out) : 0);
	}
	if (!out) {
		const char *in = argv[first];

		n = strlen(in);
		if (n > 9 && !strcmp(in + n - 9, ".nettrace"))
			n -= 9;
		if (strbuf_add(&name, in, n) || strbuf_addstr(&name, ff->ext))
			return cli_error(EXIT_ERROR, "out of memory");
		out = name.buf;
	}
	code = load(argv[first], thread_time, lines, &l);
	if (code)
		goto done;
	code = write_flame(&l, argv[first], out, ff->fmt, &written);
	res = tracestats_result(l.ts);
	if (!code && written)
		printf("wrote %s (%s, %" PRIu64 " samples, %u distinct stacks%s)\n", written,
		       ff->name, flame_total(res->flame), res->samples.stacks,
		       l.read_err ? "; incomplete: only those before the damage" : "");
	if (l.read_err) {
		code = read_failure(argv[first], &l);
		if (!written)
			cli_info("nothing written: no stack was read before the damage (%s not created)",
				 out);
	}
	tracestats_free(l.ts);
done:
	strbuf_release(&name);
	return code;
}

int cmd_trace(int argc, char **argv)
{
	if (argc < 2)
		return cli_error(EXIT_USAGE, "say collect, report or convert (see 'clrtap trace --help')");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: clrtap trace collect (-p PID | -n NAME) [options]\n"
		       "       clrtap trace collect --list-profiles\n"
		       "       clrtap trace report FILE [--json] [--top N] [--flame OUT]\n"
		       "       clrtap trace convert FILE [--format FMT] [-o OUT]\n\n"
		       "'clrtap trace SUBCOMMAND --help' lists the options.\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "collect"))
		return collect(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return convert(argc - 1, argv + 1);
	return cli_error(EXIT_USAGE, "unknown trace subcommand '%s' (collect, report, convert)",
			 argv[1]);
}
