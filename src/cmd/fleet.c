/* SPDX-License-Identifier: MIT */
/*
 * clrtap fleet - continuous CPU profiling of every .NET process on this
 * node, pushed to Grafana Pyroscope, an OpenTelemetry Collector (OTLP
 * profiles) and/or gzipped pprof files. The workflow is lib/fleet.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "cli.h"
#include "fleet/fleet.h"

#ifndef CLRTAP_VERSION
#define CLRTAP_VERSION "unknown"
#endif

/* A header value or name from the command line or a file: no CR, LF or NUL. */
static bool header_safe(const char *s)
{
	for (; *s; s++)
		if (*s == '\r' || *s == '\n')
			return false;
	return true;
}

/* The first line of a secret file (at most 4 KiB), without its newline. */
static int read_secret(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	char *nl;

	if (fd < 0)
		return -errno;
	n = read(fd, out, cap - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	out[n] = '\0';
	nl = strpbrk(out, "\r\n");
	if (nl)
		*nl = '\0';
	return out[0] ? 0 : -ENODATA;
}

static int parse_pids(const char *s, pid_t *pids, size_t cap, size_t *n)
{
	const char *p = s;

	*n = 0;
	while (*p) {
		char num[16];
		size_t l = strcspn(p, ",");
		uint32_t v;

		if (!l || l >= sizeof(num) || *n == cap)
			return -EINVAL;
		memcpy(num, p, l);
		num[l] = '\0';
		if (ct_parse_u32(num, 10, &v) || !v || v > 4194304)
			return -EINVAL;
		pids[(*n)++] = (pid_t)v;
		p += l;
		if (*p == ',')
			p++;
	}
	return *n ? 0 : -EINVAL;
}

int cmd_fleet(int argc, char **argv)
{
	const char *engine_s = NULL, *pids_s = NULL, *metrics_s = NULL, *bearer_file = NULL,
		   *basic_file = NULL, *header = NULL, *env_s = NULL,
		   *types_s = NULL, *compress_s = NULL;
	int hz = 19, queue = 256;
	int64_t window_ms = 10000, scan_ms = 2000, duration_ms = 0, retry_ms = 30000,
		flush_ms = 3000, http_ms = 10000;
	uint64_t dir_max = (uint64_t)256 << 20, queue_bytes = (uint64_t)16 << 20, spool_max = (uint64_t)64 << 20;
	struct fleet_opts o = { 0 };
	static pid_t pids[64];
	static char bearer[4096], basic[4096], maddr[64], env_name[256];
	char why[512] = "";
	struct fleet_summary sum;
	int k;
	const struct cli_option opts[] = {
		{ 0, "pyroscope", CLI_OPT_STRING, &o.pyroscope_url, "URL", "push to Grafana Pyroscope's /ingest (pprof)" },
		{ 0, "otlp", CLI_OPT_STRING, &o.otlp_url, "URL", "push OTLP profiles to URL/v1development/profiles (HTTP/protobuf)" },
		{ 0, "dir", CLI_OPT_STRING, &o.dir, "DIR", "write gzipped pprof files clrtap-<ms>-<pid>.pb.gz into DIR" },
		{ 0, "dir-max", CLI_OPT_SIZE, &dir_max, "SIZE", "cap of those files, oldest removed first (default 256M)" },
		{ 0, "otlp-compression", CLI_OPT_STRING, &compress_s, "gzip|none", "OTLP request bodies gzipped (default) or not" },
		{ 0, "spool", CLI_OPT_STRING, &o.spool_dir, "DIR", "windows the memory queue cannot hold go to DIR (kept across restarts)" },
		{ 0, "spool-max", CLI_OPT_SIZE, &spool_max, "SIZE", "cap of the spool, oldest dropped first (default 64M)" },
		{ 0, "window", CLI_OPT_DURATION, &window_ms, "SEC", "one profile per process every SEC (default 10s)" },
		{ 'F', "frequency", CLI_OPT_INT, &hz, "HZ", "perf_event samples per second per thread (default 19)" },
		{ 0, "types", CLI_OPT_STRING, &types_s, "LIST", "profile types: cpu (always), alloc, exceptions, lock (comma-separated)" },
		{ 0, "engine", CLI_OPT_STRING, &engine_s, "ENGINE", "auto (default), perf or eventpipe" },
		{ 0, "pids", CLI_OPT_STRING, &pids_s, "LIST", "only these pids (comma-separated; default: every .NET process)" },
		{ 0, "env-match", CLI_OPT_STRING, &env_s, "NAME[=VALUE]", "only processes started with NAME (=VALUE) in their environment" },
		{ 0, "scan", CLI_OPT_DURATION, &scan_ms, "SEC", "look for new processes every SEC (default 2s)" },
		{ 0, "metrics", CLI_OPT_STRING, &metrics_s, "ADDR:PORT", "serve Prometheus /metrics there (e.g. 127.0.0.1:9465)" },
		{ 0, "tenant", CLI_OPT_STRING, &o.tenant, "ID", "X-Scope-OrgID header (Pyroscope tenant)" },
		{ 0, "bearer-file", CLI_OPT_STRING, &bearer_file, "FILE", "Authorization: Bearer <first line of FILE>" },
		{ 0, "basic-file", CLI_OPT_STRING, &basic_file, "FILE", "basic auth, FILE's first line is user:password" },
		{ 0, "header", CLI_OPT_STRING, &header, "'NAME: VALUE'", "one more header on every push" },
		{ 0, "cacert", CLI_OPT_STRING, &o.cacert, "FILE", "CA bundle to verify TLS with (default: the system's)" },
		{ 0, "host-name", CLI_OPT_STRING, &o.host_name, "NAME", "host.name label (default: this host's name)" },
		{ 0, "queue", CLI_OPT_INT, &queue, "N", "windows queued per exporter before the oldest is let go (default 256)" },
		{ 0, "queue-bytes", CLI_OPT_SIZE, &queue_bytes, "SIZE", "bytes queued per exporter (default 16M)" },
		{ 0, "retry-max", CLI_OPT_DURATION, &retry_ms, "SEC", "longest wait between retries (default 30s)" },
		{ 0, "http-timeout", CLI_OPT_DURATION, &http_ms, "SEC", "time limit of one push (default 10s)" },
		{ 0, "flush", CLI_OPT_DURATION, &flush_ms, "SEC", "at SIGTERM: time to push what is left (default 3s)" },
		{ 'd', "duration", CLI_OPT_DURATION, &duration_ms, "SEC", "stop after SEC (default: until SIGTERM)" },
		{ 0 },
	};
	int first, code, err;

	if (cli_parse(argc, argv,
		      "clrtap fleet [--pyroscope URL] [--otlp URL] [--dir DIR] [--window SEC] [-F HZ] "
		      "[--metrics ADDR:PORT] ...",
		      opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (!o.pyroscope_url && !o.otlp_url && !o.dir)
		return cli_error(EXIT_USAGE, "nothing to export to: give --pyroscope, --otlp and/or --dir");
	if (engine_s && profile_engine_parse(engine_s, &o.engine))
		return cli_error(EXIT_USAGE, "unknown engine '%s' (auto, perf, eventpipe)", engine_s);
	if (compress_s && strcmp(compress_s, "gzip") && strcmp(compress_s, "none"))
		return cli_error(EXIT_USAGE, "--otlp-compression is gzip or none, not '%s'", compress_s);
	o.otlp_gzip = !compress_s || !strcmp(compress_s, "gzip");
	if (o.spool_dir && (!o.pyroscope_url && !o.otlp_url))
		return cli_error(EXIT_USAGE, "--spool holds pushes: give --pyroscope or --otlp");
	if (spool_max < 16384)
		return cli_error(EXIT_USAGE, "--spool-max must be at least 16K");
	o.spool_max_bytes = spool_max;
	if (types_s && fleet_types_parse(types_s, &o.types))
		return cli_error(EXIT_USAGE, "--types takes cpu, alloc, exceptions and lock, comma-separated, not '%s'", types_s);
	if (hz < 1 || hz > 1000)
		return cli_error(EXIT_USAGE, "-F must be 1..1000");
	if (window_ms < 1000 || window_ms > 3600000)
		return cli_error(EXIT_USAGE, "--window must be 1s..1h");
	if (scan_ms < 100 || queue < 1 || queue > 100000 || queue_bytes < 4096)
		return cli_error(EXIT_USAGE, "--scan must be at least 0.1s, --queue 1..100000, --queue-bytes at least 4K");
	if (pids_s && parse_pids(pids_s, pids, sizeof(pids) / sizeof(pids[0]), &o.nonly))
		return cli_error(EXIT_USAGE, "--pids takes up to 64 comma-separated pids, not '%s'", pids_s);
	if (env_s) {
		size_t l = strcspn(env_s, "=");

		if (!l || l >= sizeof(env_name) || !header_safe(env_s))
			return cli_error(EXIT_USAGE, "--env-match must be NAME or NAME=VALUE (a name of 1..255 bytes)");
		memcpy(env_name, env_s, l);
		env_name[l] = '\0';
		o.env_name = env_name;
		o.env_value = env_s[l] == '=' ? env_s + l + 1 : NULL;
	}
	if (o.tenant && (!header_safe(o.tenant) || !*o.tenant || strlen(o.tenant) > 256))
		return cli_error(EXIT_USAGE, "--tenant must be 1..256 bytes without line breaks");
	if (header && (!header_safe(header) || !strchr(header, ':') || *header == ':' || strlen(header) > 1000))
		return cli_error(EXIT_USAGE, "--header must be 'Name: value' on one line");
	if (o.host_name && (!*o.host_name || strlen(o.host_name) > 253))
		return cli_error(EXIT_USAGE, "--host-name must be 1..253 bytes");
	if (metrics_s) {
		const char *colon = strrchr(metrics_s, ':');
		uint32_t port;
		size_t l = colon ? (size_t)(colon - metrics_s) : 0;

		if (!colon || !l || l >= sizeof(maddr) || ct_parse_u32(colon + 1, 10, &port) || port > 65535)
			return cli_error(EXIT_USAGE, "--metrics must be ADDR:PORT (an IP address), not '%s'", metrics_s);
		memcpy(maddr, metrics_s, l);
		maddr[l] = '\0';
		if (maddr[0] == '[' && l > 2 && maddr[l - 1] == ']') {
			memmove(maddr, maddr + 1, l - 2);
			maddr[l - 2] = '\0';
		}
		o.metrics_addr = maddr;
		o.metrics_port = port;
	}
	if (bearer_file) {
		err = read_secret(bearer_file, bearer, sizeof(bearer));
		if (err)
			return cli_error(EXIT_USAGE, "cannot read a token from %s: %s", bearer_file, strerror(-err));
		o.bearer = bearer;
	}
	if (basic_file) {
		err = read_secret(basic_file, basic, sizeof(basic));
		if (err || !strchr(basic, ':'))
			return cli_error(EXIT_USAGE, "%s must hold user:password on its first line", basic_file);
		o.basic = basic;
	}
	if (header)
		o.headers[o.nheaders++] = header;
	o.only = pids_s ? pids : NULL;
	o.window_ms = (int)window_ms;
	o.hz = (unsigned)hz;
	o.timeout_ms = 5000;
	o.scan_ms = (int)scan_ms;
	o.dir_max_bytes = dir_max;
	o.queue_max = (size_t)queue;
	o.queue_max_bytes = (size_t)queue_bytes;
	o.retry_max_ms = (int)(retry_ms > 0 ? retry_ms : 1000);
	o.http_timeout_ms = (int)(http_ms > 0 ? http_ms : 10000);
	o.flush_ms = (int)flush_ms;
	o.version = CLRTAP_VERSION;
	cli_catch_stop_signals();
	o.duration_ms = duration_ms;
	o.stop = &cli_stop_requested;
	err = fleet_run(&o, &sum, why, sizeof(why));
	if (err)
		return cli_error(err == -EINVAL ? EXIT_USAGE : EXIT_ERROR, "%s", why[0] ? why : strerror(-err));
	/* what happened, on stderr: a supervisor's log keeps it */
	fprintf(stderr, "clrtap fleet: stopped: %" PRIu64 " processes profiled (%" PRIu64
		" could not be), %" PRIu64 " windows, %" PRIu64 " samples",
		sum.st.procs_seen, sum.st.procs_failed, sum.st.windows, sum.st.samples);
	for (k = 0; k < FLEET_EXP_N; k++)
		if (sum.ex[k].configured)
			fprintf(stderr, "; %s: %" PRIu64 " sent, %" PRIu64 " failed attempts, %" PRIu64
				" windows dropped", fleet_exp_name((enum fleet_exp_kind)k), sum.ex[k].sent,
				sum.ex[k].failed, sum.ex[k].dropped);
	for (k = 0; k < FLEET_EXP_N; k++)
		if (sum.ex[k].spool_on)
			fprintf(stderr, "; %s spool: %" PRIu64 " windows written, %zu waiting", fleet_exp_name((enum fleet_exp_kind)k),
				sum.ex[k].spooled, sum.ex[k].spool_depth);
	fputc('\n', stderr);
	return EXIT_OK;
}
