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
	int fd;
	bool tty;
};

static int write_sink(void *ctx, const void *buf, size_t n)
{
	struct sink *s = ctx;

	return ct_write_all(s->fd, buf, n);
}

static void progress(void *ctx, uint64_t bytes)
{
	struct sink *s = ctx;

	if (s->tty)
		fprintf(stderr, "\r%s %.1f MiB received ", cli_stop_requested ? "stopping:" : "tracing:",
			(double)bytes / (1024.0 * 1024.0));
}

static void list_profiles(void)
{
	const char *name, *help;
	size_t i;

	for (i = 0; (name = ipc_profile_name(i, &help)); i++)
		printf("  %-14s %s\n", name, help);
}

static int collect(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	const char *providers_s = NULL, *profile = NULL, *out = NULL;
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
	struct strbuf partial = STRBUF_INIT, probe_msg = STRBUF_INIT_MAX(IPC_MAX_FRAME);
	struct cli_outfile of = { .fd = -1 };
	char *specs = NULL;
	size_t np = 0;
	int first, code, err, err2 = -ENOMEM;

	if (cli_parse(argc, argv,
		      "clrtap trace collect (-p PID | -n NAME) [--profile NAME] [--providers SPECS] "
		      "[-d SECONDS] [-o FILE]",
		      opts, &first, &code))
		return code;
	if (list) {
		list_profiles();
		return EXIT_OK;
	}
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (!profile && !providers_s)
		profile = "cpu-sampling";
	if (profile) {
		const struct ipc_provider *pp;
		size_t n, i;

		if (ipc_profile_lookup(profile, &pp, &n, &cfg.rundown_keyword))
			return cli_error(EXIT_USAGE, "unknown profile '%s' (see --list-profiles)",
					 profile);
		for (i = 0; i < n; i++)
			provs[np++] = pp[i];
	}
	if (providers_s) {
		char *save = NULL, *tok;
		size_t from_profile = np;

		specs = strdup(providers_s);
		if (!specs)
			return cli_error(EXIT_ERROR, "out of memory");
		for (tok = strtok_r(specs, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (np == MAX_PROVIDERS) {
				code = cli_error(EXIT_USAGE, "more than %d providers", MAX_PROVIDERS);
				goto out;
			}
			if (ipc_provider_parse(tok, &provs[np])) {
				code = cli_error(EXIT_USAGE, "bad provider spec '%s'", tok);
				goto out;
			}
			np++;
		}
		if (np == from_profile) {
			code = cli_error(EXIT_USAGE, "--providers '%s' names no provider", providers_s);
			goto out;
		}
	}
	if (!np) {
		code = cli_error(EXIT_USAGE, "no provider to trace");
		goto out;
	}
	if (buffer_mb <= 0) {
		code = cli_error(EXIT_USAGE, "--buffer must be positive");
		goto out;
	}
	cfg.providers = provs;
	cfg.nproviders = np;
	cfg.buffer_mb = (uint32_t)buffer_mb;
	cfg.rundown = !no_rundown;
	cfg.stackwalk = !no_stacks;
	/* What the runtime cannot be sent is a usage error, found before any file exists. */
	err = ipc_encode_collect_tracing(&probe_msg, 4, &cfg);
	if (err) {
		code = cli_error(EXIT_USAGE, "%s", err == -EMSGSIZE ?
				 "the provider list does not fit in one request (64 KiB)" :
				 "a provider spec cannot be sent");
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
	so.sink = write_sink;
	so.progress = progress;
	so.ctx = &sink;
	so.stop = &cli_stop_requested;
	so.duration_ms = duration;
	so.max_bytes = max_size;

	cli_info("tracing pid %d with %zu provider%s into %s; %s", (int)t.pid, np,
		 np == 1 ? "" : "s", out, duration ? "waiting for the duration" : "Ctrl-C stops");
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	if (sink.tty)
		fputc('\n', stderr);
	if (fsync(of.fd) && errno != EINVAL && !err)
		err = -errno;
	if (!err && res.complete) {
		int e = cli_outfile_keep(&of, out);

		if (e) {
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(-e));
			goto out;
		}
		if (cli_outfile_close(&of)) {
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(errno));
			goto out;
		}
		if (res.target_ended)
			cli_warn("the target closed the session before clrtap stopped it (did it exit?)");
		printf("wrote %s (%" PRIu64 " bytes)\n", out, res.bytes);
		code = EXIT_OK;
		goto out;
	}
	/* Failed: keep nothing that could pass for a trace; a partial stream under its own name. */
	if (res.bytes == 0 || res.bad_prologue) {
		char why[512];

		ipc_session_strerror(err ?: -EPROTO, &res, &ep, &rerr, why, sizeof(why));
		code = cli_error(res.bad_prologue ? EXIT_PROTOCOL : ct_exit_for(err ?: -EPROTO),
				 "cannot trace: %s; kept nothing, %s not written", why, out);
		goto out;
	}
	if (strbuf_addf(&partial, "%s.partial", out) || (err2 = cli_outfile_keep(&of, partial.buf))) {
		code = cli_error(EXIT_ERROR, "cannot keep the partial trace: %s", strerror(-err2));
		goto out;
	}
	if (err == -EFBIG)
		code = cli_error(EXIT_PARTIAL, "stopped at --max-size (%" PRIu64 " bytes): kept %s, "
				 "incomplete (no rundown, no end); %s not written",
				 res.bytes, partial.buf, out);
	else if (err) {
		char why[512];

		ipc_session_strerror(err, &res, &ep, &rerr, why, sizeof(why));
		code = cli_error(EXIT_PARTIAL, "trace broke off after %" PRIu64 " bytes: %s; kept %s, "
				 "incomplete; %s not written", res.bytes, why, partial.buf, out);
	}
	else
		code = cli_error(EXIT_PARTIAL, "the stream ended without its end marker after %" PRIu64
				 " bytes: kept %s, incomplete; %s not written",
				 res.bytes, partial.buf, out);
out:
	cli_outfile_drop(&of);
	strbuf_release(&partial);
	strbuf_release(&probe_msg);
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
	struct ts_limits lim;
	const char *stage;
	int fd, err;

	memset(l, 0, sizeof(*l));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_error(errno == EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot open %s: %s",
				 path, strerror(errno));
	ts_limits_default(&lim);
	lim.thread_time = thread_time;
	lim.lines = lines;
	err = tracestats_load_fd_lim(fd, &lim, &l->ts, &l->read_err, &stage);
	close(fd);
	if (err)
		return cli_error(EXIT_ERROR, "cannot %s %s: %s", stage, path, strerror(-err));
	return EXIT_OK;
}

/* Not a nettrace file at all (no magic): nothing to report, only an error. */
static bool not_nettrace(const struct loaded *l)
{
	const struct ts_result *res = tracestats_result(l->ts);

	return l->read_err == -EBADMSG && !res->events && res->error.offset == 0;
}

/* The exit code and message for a damaged or unreadable stream. */
static int read_failure(const char *path, const struct loaded *l)
{
	const struct ts_result *res = tracestats_result(l->ts);
	int e = l->read_err;
	bool bad = e == -EBADMSG || e == -EFBIG || e == -ENOTSUP;

	if (not_nettrace(l))
		return cli_error(EXIT_BAD_INPUT, "%s is not a nettrace file (%s at byte offset 0)",
				 path, res->error.msg);
	return cli_error(bad ? EXIT_BAD_INPUT : EXIT_ERROR,
			 "%s is %s at byte offset %" PRIu64 ": %s; only the %" PRIu64
			 " events before it were read",
			 path, e == -EFBIG ? "over a reader limit" :
			       e == -ENOTSUP ? "in an unsupported format" : "damaged or truncated",
			 res->error.offset, res->error.msg, res->events);
}

static int64_t sync_unix_ns(const struct ts_result *res)
{
	const uint16_t *u = res->info.sync_utc;
	struct tm tm = { 0 };
	time_t t;

	if (!res->have_info || !u[0])
		return 0;
	tm.tm_year = u[0] - 1900;
	tm.tm_mon = u[1] - 1;
	tm.tm_mday = u[3];
	tm.tm_hour = u[4];
	tm.tm_min = u[5];
	tm.tm_sec = u[6];
	t = timegm(&tm);
	if (t <= 0 || t > (time_t)1 << 33) /* a damaged header: no time rather than an overflow */
		return 0;
	return (int64_t)t * 1000000000 + (int64_t)u[7] * 1000000;
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
	struct cli_outfile of;
	static struct strbuf partial = STRBUF_INIT;
	const char *base = strrchr(src, '/');
	int err, code;

	*written = NULL;
	if (l->read_err && !flame_total(res->flame))
		return EXIT_OK; /* nothing true to write: the caller reports the damage */

	fo.title = base ? base + 1 : src;
	fo.unit = "samples";
	fo.period = res->info.sampling_ns;
	fo.duration_ns = res->duration_ns;
	fo.time_unix_ns = sync_unix_ns(res);
	if (l->read_err) {
		strbuf_reset(&partial);
		if (strbuf_addf(&partial, "%s.partial", out))
			return cli_error(EXIT_ERROR, "out of memory");
		out = partial.buf;
	}
	code = cli_outfile_open(&of, out);
	if (code)
		return code;
	err = flame_write(res->flame, fmt, of.fd, &fo);
	if (!err)
		err = cli_outfile_keep(&of, out);
	if (cli_outfile_close(&of) && !err)
		err = -errno;
	cli_outfile_drop(&of);
	if (err)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", out, strerror(-err));
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
	if (not_nettrace(&l)) {
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

static const struct {
	const char *name;
	enum flame_format fmt;
	const char *ext;
} formats[] = {
	{ "speedscope", FLAME_SPEEDSCOPE, ".speedscope.json" },
	{ "folded", FLAME_FOLDED, ".folded" },
	{ "html", FLAME_HTML, ".html" },
	{ "svg", FLAME_SVG, ".svg" },
	{ "pprof", FLAME_PPROF, ".pb.gz" },
};

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
	size_t i = 0, n;
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
		for (i = 0; i < ARRAY_SIZE(formats) && strcmp(formats[i].name, format); i++)
			;
		if (i == ARRAY_SIZE(formats))
			return cli_error(EXIT_USAGE,
					 "unknown format '%s' (speedscope, folded, html, svg, pprof)",
					 format);
		/* an output named for another format would hold what its name denies */
		if (out && flame_format_from_path(out) >= 0 &&
		    flame_format_from_path(out) != (int)formats[i].fmt)
			return cli_error(EXIT_USAGE, "-f %s with -o %s: the name says another format; "
					 "name it *%s or drop -f", format, out, formats[i].ext);
	} else if (out) {
		int f = flame_format_from_path(out);

		for (i = 0; i < ARRAY_SIZE(formats) && (int)formats[i].fmt != f; i++)
			;
		if (i == ARRAY_SIZE(formats))
			i = 0;
	}
	if (!out) {
		const char *in = argv[first];

		n = strlen(in);
		if (n > 9 && !strcmp(in + n - 9, ".nettrace"))
			n -= 9;
		if (strbuf_add(&name, in, n) || strbuf_addstr(&name, formats[i].ext))
			return cli_error(EXIT_ERROR, "out of memory");
		out = name.buf;
	}
	code = load(argv[first], thread_time, lines, &l);
	if (code)
		goto done;
	code = write_flame(&l, argv[first], out, formats[i].fmt, &written);
	res = tracestats_result(l.ts);
	if (!code && written)
		printf("wrote %s (%s, %" PRIu64 " samples, %u distinct stacks%s)\n", written,
		       formats[i].name, flame_total(res->flame), res->samples.stacks,
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
