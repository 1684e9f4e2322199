/* SPDX-License-Identifier: MIT */
/*
 * clrtap trace collect - an EventPipe session over the diagnostics socket,
 * written to a .nettrace file. Ctrl-C stops it cleanly: StopTracing on a
 * second connection, then the rundown, then the end of the stream.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>

#include "cli.h"

#define MAX_PROVIDERS 64

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

struct sink {
	int fd;
	bool tty;
};

static int write_sink(void *ctx, const void *buf, size_t n)
{
	struct sink *s = ctx;
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = write(s->fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void progress(void *ctx, uint64_t bytes)
{
	struct sink *s = ctx;

	if (s->tty)
		fprintf(stderr, "\r%s %.1f MiB received ", stop_requested ? "stopping:" : "tracing:",
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
	int duration = 0, buffer_mb = 256;
	bool no_rundown = false, no_stacks = false, list = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "providers", CLI_OPT_STRING, &providers_s, "SPECS",
		  "Name[:Keywords[:Level[:k=v;...]]], comma-separated" },
		{ 0, "profile", CLI_OPT_STRING, &profile, "NAME", "a named set of providers (--list-profiles)" },
		{ 'd', "duration", CLI_OPT_INT, &duration, "SECONDS", "stop after this long (default: Ctrl-C)" },
		{ 'o', "output", CLI_OPT_STRING, &out, "FILE", "the .nettrace file (default trace.nettrace)" },
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
	struct sigaction sa;
	struct sink sink;
	char *specs = NULL;
	size_t np = 0;
	int first, code, err;

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
	}
	if (duration < 0 || buffer_mb <= 0) {
		code = cli_error(EXIT_USAGE, "duration and buffer must be positive");
		goto out;
	}
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		goto out;

	cfg.providers = provs;
	cfg.nproviders = np;
	cfg.buffer_mb = (uint32_t)buffer_mb;
	cfg.rundown = !no_rundown;
	cfg.stackwalk = !no_stacks;
	if (!out)
		out = "trace.nettrace";
	sink.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (sink.fd < 0) {
		code = cli_error(errno == EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot write %s: %s",
				 out, strerror(errno));
		goto out;
	}
	sink.tty = isatty(STDERR_FILENO);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	so.sink = write_sink;
	so.progress = progress;
	so.ctx = &sink;
	so.stop = &stop_requested;
	so.duration_ms = (int64_t)duration * 1000;

	cli_info("tracing pid %d with %zu provider%s into %s; %s", (int)t.pid, np,
		 np == 1 ? "" : "s", out, duration ? "waiting for the duration" : "Ctrl-C stops");
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	if (sink.tty)
		fputc('\n', stderr);
	if (close(sink.fd) && !err)
		err = -errno;
	if (err && res.bytes == 0) {
		code = cli_ipc_error("cannot trace", err, &rerr);
		goto out;
	}
	if (err) {
		code = cli_error(EXIT_PARTIAL, "trace interrupted after %" PRIu64 " bytes: %s (%s is incomplete)",
				 res.bytes, strerror(-err), out);
		goto out;
	}
	if (res.target_ended)
		cli_warn("the target closed the session before clrtap stopped it (did it exit?)");
	if (!res.complete) {
		code = cli_error(EXIT_PARTIAL, "the stream ended without its end marker: %s is incomplete",
				 out);
		goto out;
	}
	printf("wrote %s (%" PRIu64 " bytes)\n", out, res.bytes);
	code = EXIT_OK;
out:
	free(specs);
	return code;
}

int cmd_trace(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: clrtap trace collect (-p PID | -n NAME) [options]\n"
		       "       clrtap trace collect --list-profiles\n\n"
		       "'clrtap trace collect --help' lists the options.\n");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "collect"))
		return collect(argc - 1, argv + 1);
	return cli_error(EXIT_USAGE, "unknown trace subcommand '%s' (collect)", argv[1]);
}
