/* SPDX-License-Identifier: MIT */
/*
 * clrtap serve - the REST API, /metrics, live views and the web UI
 * (lib/serve). Thin: options, the token, the default database path; then it
 * waits for Ctrl-C or SIGTERM.
 */
#include "common/compat.h"

#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "serve/serve.h"

/* build/gen/webassets.c (scripts/embed-web.sh): web/ files and the OpenAPI document */
extern const struct serve_asset clrtap_web_assets[];
extern const size_t clrtap_web_nassets;
extern const unsigned char clrtap_openapi_json[];
extern const size_t clrtap_openapi_json_len;

#define MAX_ONLY 64

static int read_token(const char *path, char *tok, size_t len)
{
	struct strbuf sb = STRBUF_INIT_MAX(4096);
	struct stat st;
	int err;

	if (stat(path, &st))
		return cli_error(EXIT_USAGE, "cannot read --token-file %s: %s", path, strerror(errno));
	if (st.st_mode & 0077)
		return cli_error(EXIT_USAGE, "--token-file %s is readable by others (chmod 600 it)", path);
	err = strbuf_read_file(&sb, path);
	if (err) {
		strbuf_release(&sb);
		return cli_error(EXIT_USAGE, "cannot read --token-file %s: %s", path, strerror(-err));
	}
	while (sb.len && (sb.buf[sb.len - 1] == '\n' || sb.buf[sb.len - 1] == '\r' ||
			  sb.buf[sb.len - 1] == ' '))
		sb.len--;
	if (sb.len < 16 || sb.len >= len || strcspn(sb.buf, " \t\r\n") < sb.len) {
		strbuf_release(&sb);
		return cli_error(EXIT_USAGE, "--token-file %s: the token must be one line of 16..255 "
					     "characters without blanks", path);
	}
	snprintf(tok, len, "%.*s", (int)sb.len, sb.buf);
	strbuf_release(&sb);
	return 0;
}

static int gen_token(char *tok, size_t len)
{
	unsigned char rnd[24];
	size_t i;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return cli_error(EXIT_ERROR, "cannot make a token: %s", strerror(errno));
	for (i = 0; i < sizeof(rnd) && 2 * i + 2 < len; i++)
		snprintf(tok + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

static int default_db(char *out, size_t len)
{
	const char *home = getenv("HOME");
	char dir[PATH_MAX - 16];

	if (geteuid() == 0) {
		snprintf(dir, sizeof(dir), "/var/lib/clrtap");
	} else {
		if (!home || !*home)
			return cli_error(EXIT_USAGE, "no HOME: give --db PATH");
		snprintf(dir, sizeof(dir), "%s/.local/state/clrtap", home);
	}
	/* best effort for each level; the open reports what fails */
	{
		char *p;

		for (p = dir + 1; *p; p++) {
			if (*p == '/') {
				*p = 0;
				mkdir(dir, 0700);
				*p = '/';
			}
		}
		mkdir(dir, 0700);
	}
	snprintf(out, len, "%s/serve.db", dir);
	return 0;
}

static int parse_pids(const char *s, pid_t *pids, size_t *n)
{
	while (*s) {
		size_t l = strcspn(s, ",");

		if (*n == MAX_ONLY || serve_parse_pid(s, l, &pids[*n]))
			return -EINVAL;
		(*n)++;
		s += l;
		if (*s == ',')
			s++;
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	const char *listen = NULL, *unix_path = NULL, *token_file = NULL, *db = NULL, *pids_s = NULL;
	int max_sessions = 200, max_age = 30, max_running = 8;
	const struct cli_option opts[] = {
		{ 0, "listen", CLI_OPT_STRING, &listen, "HOST:PORT",
		  "TCP address (default 127.0.0.1:8477); not loopback: a token is required" },
		{ 0, "unix", CLI_OPT_STRING, &unix_path, "PATH", "a Unix socket (mode 0600) instead of TCP" },
		{ 0, "token-file", CLI_OPT_STRING, &token_file, "FILE",
		  "the bearer token (one line, file mode 0600); else one is made when needed" },
		{ 0, "db", CLI_OPT_STRING, &db, "PATH",
		  "session history (default /var/lib/clrtap/serve.db as root, else ~/.local/state/clrtap)" },
		{ 0, "pid", CLI_OPT_STRING, &pids_s, "PID[,PID...]", "/metrics only for these processes" },
		{ 0, "max-sessions", CLI_OPT_INT, &max_sessions, "N", "sessions kept in the history (default 200)" },
		{ 0, "max-age", CLI_OPT_INT, &max_age, "DAYS", "days a session is kept (default 30)" },
		{ 0, "max-running", CLI_OPT_INT, &max_running, "N", "sessions running at once (default 8)" },
		{ 0 },
	};
	struct serve_config cfg = { 0 };
	struct serve_server *srv = NULL;
	pid_t only[MAX_ONLY];
	size_t nonly = 0;
	char host[256], token[256] = "", dbpath[PATH_MAX], exe[PATH_MAX], why[512];
	unsigned port = 8477;
	bool need_token;
	ssize_t n;
	int first, code, err;

	if (cli_parse(argc, argv,
		      "clrtap serve [--listen HOST:PORT | --unix PATH] [--token-file FILE] [--db PATH]",
		      opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (listen && unix_path)
		return cli_error(EXIT_USAGE, "give either --listen or --unix, not both");
	if (max_sessions < 1 || max_age < 1 || max_running < 1 || max_running > 64)
		return cli_error(EXIT_USAGE, "--max-sessions and --max-age must be at least 1, "
					     "--max-running 1..64");
	if (pids_s && parse_pids(pids_s, only, &nonly))
		return cli_error(EXIT_USAGE, "bad --pid '%s': PID[,PID...], at most %d", pids_s, MAX_ONLY);
	snprintf(host, sizeof(host), "127.0.0.1");
	if (listen && serve_parse_listen(listen, host, sizeof(host), &port))
		return cli_error(EXIT_USAGE, "bad --listen '%s': HOST:PORT or [IPv6]:PORT", listen);
	need_token = !unix_path && !serve_host_is_loopback(host);
	if (token_file) {
		code = read_token(token_file, token, sizeof(token));
		if (code)
			return code;
	} else if (need_token) {
		code = gen_token(token, sizeof(token));
		if (code)
			return code;
	}
	if (!db) {
		code = default_db(dbpath, sizeof(dbpath));
		if (code)
			return code;
		db = dbpath;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return cli_error(EXIT_ERROR, "cannot find clrtap's own binary: %s", strerror(errno));
	exe[n] = 0;

	cfg.listen_host = unix_path ? NULL : host;
	cfg.listen_port = port;
	cfg.unix_path = unix_path;
	cfg.token = *token ? token : NULL;
	cfg.db_path = db;
	cfg.exe = exe;
	cfg.only_pids = nonly ? only : NULL;
	cfg.n_only_pids = nonly;
	cfg.assets = clrtap_web_assets;
	cfg.nassets = clrtap_web_nassets;
	cfg.openapi = (const char *)clrtap_openapi_json;
	cfg.openapi_len = clrtap_openapi_json_len;
	cfg.max_sessions = (unsigned)max_sessions;
	cfg.max_age_days = (unsigned)max_age;
	cfg.max_running = (unsigned)max_running;

	signal(SIGPIPE, SIG_IGN);
	err = serve_server_start(&cfg, &srv, why, sizeof(why));
	if (err)
		return cli_error(EXIT_ERROR, "%s", why);
	if (unix_path)
		printf("clrtap serve: listening on unix:%s (mode 0600)\n", unix_path);
	else
		printf("clrtap serve: listening on http://%s%s%s:%u/\n", strchr(host, ':') ? "[" : "",
		       host, strchr(host, ':') ? "]" : "", serve_server_port(srv));
	if (cfg.token && !token_file)
		printf("clrtap serve: token %s (send 'Authorization: Bearer TOKEN'; the UI: /?token=TOKEN)\n",
		       token);
	printf("clrtap serve: history in %s; the API can dump and probe processes: it is "
	       "root-equivalent\n", db);
	fflush(stdout);
	cli_catch_stop_signals();
	while (!cli_stop_requested) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	cli_info("stopping: cancelling running sessions");
	serve_server_stop(srv);
	return EXIT_OK;
}
