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
#define MAX_ALLOW 8

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

/* --allow-host a,b: host names (letters, digits, '-', '.'), at most MAX_ALLOW. */
static int parse_hosts(char *s, const char **names, size_t *n)
{
	char *save = NULL, *t;

	for (t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t l = strlen(t);

		if (*n == MAX_ALLOW || l == 0 || l > 253 || t[0] == '-' || t[0] == '.' ||
		    strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != l)
			return -EINVAL;
		names[(*n)++] = t;
	}
	return *n ? 0 : -EINVAL;
}

int cmd_serve(int argc, char **argv)
{
	const char *listen = NULL, *unix_path = NULL, *token_file = NULL, *db = NULL, *pids_s = NULL,
		   *allow_s = NULL;
	int max_sessions = 200, max_age = 30, max_running = 8;
	const struct cli_option opts[] = {
		{ 0, "listen", CLI_OPT_STRING, &listen, "HOST:PORT",
		  "TCP address (default 127.0.0.1:8477); a token is required on every TCP address" },
		{ 0, "unix", CLI_OPT_STRING, &unix_path, "PATH",
		  "a Unix socket (mode 0600) instead of TCP: no token" },
		{ 0, "token-file", CLI_OPT_STRING, &token_file, "FILE",
		  "the bearer token (one line, file mode 0600); else one is made at each start" },
		{ 0, "allow-host", CLI_OPT_STRING, &allow_s, "NAME[,NAME...]",
		  "host names a request's Host header may carry besides the address (a proxy's)" },
		{ 0, "db", CLI_OPT_STRING, &db, "PATH",
		  "session history (default /var/lib/clrtap/serve.db as root, else ~/.local/state/clrtap)" },
		{ 0, "pids", CLI_OPT_STRING, &pids_s, "PID[,PID...]", "/metrics only for these processes" },
		{ 0, "pid", CLI_OPT_STRING | CLI_DEPRECATED, &pids_s, "PID[,PID...]", "--pids" },
		{ 0, "max-sessions", CLI_OPT_INT, &max_sessions, "N", "sessions kept in the history (default 200)" },
		{ 0, "max-age", CLI_OPT_INT, &max_age, "DAYS", "days a session is kept (default 30)" },
		{ 0, "max-running", CLI_OPT_INT, &max_running, "N", "sessions running at once (default 8)" },
		{ 0 },
	};
	struct serve_config cfg = { 0 };
	struct serve_server *srv = NULL;
	pid_t only[MAX_ONLY];
	const char *allow[MAX_ALLOW];
	size_t nonly = 0, nallow = 0;
	char allow_buf[2048];
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
		return cli_error(EXIT_USAGE, "bad --pids '%s': PID[,PID...], at most %d", pids_s, MAX_ONLY);
	if (allow_s) {
		snprintf(allow_buf, sizeof(allow_buf), "%s", allow_s);
		if (strlen(allow_s) >= sizeof(allow_buf) || parse_hosts(allow_buf, allow, &nallow))
			return cli_error(EXIT_USAGE, "bad --allow-host '%s': NAME[,NAME...] of letters, "
						     "digits, '-' and '.', at most %d", allow_s, MAX_ALLOW);
	}
	snprintf(host, sizeof(host), "127.0.0.1");
	if (listen && serve_parse_listen(listen, host, sizeof(host), &port))
		return cli_error(EXIT_USAGE, "bad --listen '%s': HOST:PORT or [IPv6]:PORT", listen);
	/* Every TCP address, loopback too: any local user and any page a local
	 * browser opens can reach loopback (docs/SECURITY.md, "The web surface").
	 * The 0600 Unix socket is the way without a token. */
	need_token = !unix_path;
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
	cfg.allow_hosts = allow;
	cfg.nallow_hosts = nallow;
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
	umask(077); /* the history, the sessions' files: the owner's alone */
	err = serve_server_start(&cfg, &srv, why, sizeof(why));
	if (err)
		return cli_error(EXIT_ERROR, "%s", why);
	if (unix_path) {
		printf("clrtap serve: listening on unix:%s (mode 0600)\n", unix_path);
	} else {
		char url[400];

		snprintf(url, sizeof(url), "http://%s%s%s:%u/", strchr(host, ':') ? "[" : "", host,
			 strchr(host, ':') ? "]" : "", serve_server_port(srv));
		printf("clrtap serve: listening on %s\n", url);
		if (!token_file)
			printf("clrtap serve: token %s (send 'Authorization: Bearer TOKEN'); the UI: "
			       "%s?token=%s\n", token, url, token);
		else
			printf("clrtap serve: the UI: %s?token=TOKEN (the token of %s)\n", url,
			       token_file);
	}
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
