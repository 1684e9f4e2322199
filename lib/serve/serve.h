/* SPDX-License-Identifier: MIT */
/*
 * serve.h - clrtap's HTTP server (clrtap serve): a REST API under /api/v1,
 * Prometheus /metrics, server-sent live views and the embedded web UI, on
 * Debian's libmicrohttpd; session history in SQLite.
 *
 * Pieces (each its own file):
 *   route.c    request routing and the checks of every id and name a request
 *              carries (pure functions: unit-tested and fuzzed);
 *   body.c     the small JSON reader of POST /api/v1/sessions bodies (fuzzed);
 *   db.c       session history (SQLite);
 *   args.c     a session request as a task's arguments (the kinds are the
 *              tasks of lib/task's table, GET /api/v1/tasks);
 *   run.c      running a session: a worker thread per session runs its task,
 *              in the thread (task_run) or, for TASK_F_ISOLATE tasks, in a
 *              child clrtap (task_spawn); the report is the task's result;
 *   procs.c    .NET process list, process info, top rows;
 *   metrics.c  a bounded cache of System.Runtime counters per process
 *              (lib/counters), Prometheus text;
 *   http.c     libmicrohttpd glue: auth, caps, responses, SSE.
 * Every function returns 0 or a negative errno and never prints.
 */
#ifndef CLRTAP_SERVE_SERVE_H
#define CLRTAP_SERVE_SERVE_H

#include "common/compat.h"
#include "common/json.h"
#include "common/strbuf.h"

#define SERVE_MAX_BODY 65536          /* bytes of a request body */
#define SERVE_MAX_URL 2048            /* bytes of a request path */
#define SERVE_MAX_PARAMS 24           /* params of one session (TASK_MAX_PARAMS) */
#define SERVE_MAX_PARAM_LEN 512       /* bytes of one param value */
#define SERVE_MAX_ARTIFACTS 8
#define SERVE_ID_LEN 18               /* "s-" + 16 hex digits */
#define SERVE_MAX_NAME 128            /* artifact names */

/* ------------------------------------------------------------------------ */
/* Routing (route.c)                                                         */

enum serve_route_id {
	SERVE_R_NONE = 0,
	SERVE_R_PROCESSES,        /* GET /api/v1/processes */
	SERVE_R_PROCESS,          /* GET /api/v1/processes/{pid} */
	SERVE_R_COUNTERS_LIVE,    /* GET /api/v1/processes/{pid}/counters/live */
	SERVE_R_TOP_LIVE,         /* GET /api/v1/top/live */
	SERVE_R_SESSIONS,         /* GET|POST /api/v1/sessions */
	SERVE_R_SESSION,          /* GET|DELETE /api/v1/sessions/{id} */
	SERVE_R_ARTIFACT,         /* GET /api/v1/sessions/{id}/artifacts/{name} */
	SERVE_R_REPORT,           /* GET /api/v1/sessions/{id}/report */
	SERVE_R_EVENTS,           /* GET /api/v1/sessions/{id}/events */
	SERVE_R_OPENAPI,          /* GET /api/v1/openapi.json */
	SERVE_R_TASKS,            /* GET /api/v1/tasks: the task table (the kinds and their params) */
	SERVE_R_METRICS,          /* GET /metrics */
	SERVE_R_ASSET,            /* GET / and /ui/... : the embedded UI */
};

struct serve_route {
	enum serve_route_id id;
	pid_t pid;
	char session[SERVE_ID_LEN + 1];
	char name[SERVE_MAX_NAME + 1]; /* artifact name, or UI asset path ("index.html") */
};

/*
 * Matches path (no query string) against the routes. Returns 0 with r filled,
 * -ENOENT (no such route, or an id/name that is not well-formed: a request
 * never names a file), -EINVAL (a pid that is not a positive decimal).
 * The method is checked by the caller (serve_route_allows).
 */
int serve_route_match(const char *path, struct serve_route *r);
/* Whether method (GET, POST, DELETE, HEAD) is served on route id. */
bool serve_route_allows(enum serve_route_id id, const char *method);

/* "s-" followed by exactly 16 lowercase hex digits. */
bool serve_session_id_valid(const char *s);
/* 1..SERVE_MAX_NAME of [A-Za-z0-9._-], not starting with '.'. */
bool serve_artifact_name_valid(const char *s);
/* A UI asset path: segments of [A-Za-z0-9._-] not starting with '.'. */
bool serve_asset_path_valid(const char *s);
/* Strict decimal pid 1..INT_MAX. */
int serve_parse_pid(const char *s, size_t len, pid_t *pid);
/* Constant-time comparison of a presented bearer header with the token. */
bool serve_auth_ok(const char *header, const char *token);
/* Whether a listen host is loopback (127.0.0.0/8, ::1, "localhost"). */
bool serve_host_is_loopback(const char *host);
/* Splits "HOST:PORT" or "[V6]:PORT"; host gets at most hostlen bytes. */
int serve_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port);
/* Content type from a file name's extension. */
const char *serve_content_type(const char *name);

/*
 * The browser-facing checks (docs/SECURITY.md, "The web surface").
 *
 * serve_host_ok: whether a request's Host header names this server: a
 * literal address among addrs (the address the connection arrived at, the
 * --listen address), "localhost" when loopback is true (the connection
 * arrived on a loopback address), or one of the names in allow (--allow-host,
 * case-insensitive); the port, when given, must be port (absent: port 80).
 * A missing or malformed Host is refused. A DNS-rebinding page sends its own
 * name, which is none of these.
 */
struct serve_host_rules {
	const char *const *addrs;  /* IP literals, no brackets */
	size_t naddrs;
	bool loopback;
	const char *const *allow;  /* host names */
	size_t nallow;
	unsigned port;
};
bool serve_host_ok(const char *host, const struct serve_host_rules *rules);
/* Whether an Origin header is this server's own origin: "http://" + the
 * (already checked) Host header, case-insensitive. NULL origin is true. */
bool serve_origin_ok(const char *origin, const char *host);
/* Whether a Content-Type header is application/json (parameters allowed). */
bool serve_ctype_is_json(const char *ctype);

/* ------------------------------------------------------------------------ */
/* Session requests (body.c)                                                 */

struct serve_param {
	char key[64];
	char value[SERVE_MAX_PARAM_LEN + 1]; /* numbers and booleans as text */
	bool is_string;
};

struct serve_session_req {
	char kind[32];
	pid_t pid;
	struct serve_param params[SERVE_MAX_PARAMS];
	size_t nparams;
};

/*
 * Parses {"kind":"...","pid":N,"params":{"k":"v"|N|true,...}}: an object,
 * params an object of strings, numbers and booleans (no nesting beyond).
 * Unknown top-level keys are refused. Returns 0, or -EINVAL with a reason in
 * why (a static string).
 */
int serve_session_req_parse(const char *buf, size_t len, struct serve_session_req *req,
			    const char **why);
/* The value of param key, or NULL. */
const char *serve_param_get(const struct serve_session_req *req, const char *key);

/* ------------------------------------------------------------------------ */
/* Session kinds: the task table (args.c)                                    */

struct task_args;
/*
 * The arguments of the task a request names (kind = a task of lib/task's
 * table): every param checked by the task's parameter list; CLI-only params
 * refused. Returns 0, or -EINVAL with a message in why. Release a with
 * task_args_release either way.
 */
int serve_session_args(const struct serve_session_req *req, struct task_args *a, char *why, size_t why_len);
/* The kinds that can be started (the table's names), comma-separated, for messages. */
const char *serve_kinds(void);
/* GET /api/v1/tasks: task_table_json's object (openapi.c). */
int serve_tasks_json(struct strbuf *out);
/*
 * The served OpenAPI document: the template (lib/serve/openapi.json) with
 * its markers "@TASK_NAMES@" and "@TASK_TABLE@" replaced from the task
 * table. -EINVAL when a marker is missing.
 */
int serve_openapi_build(const char *tmpl, size_t len, struct strbuf *out);

/* ------------------------------------------------------------------------ */
/* The server (http.c)                                                       */

struct serve_asset {
	const char *path;          /* "index.html", "app.js" */
	const char *content_type;
	const unsigned char *data;
	size_t len;
};

struct serve_config {
	const char *listen_host;   /* NULL with unix_path */
	unsigned listen_port;
	const char *unix_path;     /* a 0600 Unix socket instead of TCP */
	const char *token;         /* NULL: no token asked (the unix socket) */
	const char *const *allow_hosts; /* names a Host header may carry besides the address */
	size_t nallow_hosts;
	const char *db_path;       /* SQLite file; sessions live beside it */
	const char *exe;           /* the clrtap binary task_spawn runs for isolated tasks */
	const pid_t *only_pids;    /* /metrics: only these (n_only_pids), else all */
	size_t n_only_pids;
	const struct serve_asset *assets;
	size_t nassets;
	const char *openapi;       /* the OpenAPI document */
	size_t openapi_len;
	unsigned max_sessions;     /* kept in history (default 200) */
	unsigned max_age_days;     /* kept in history (default 30) */
	unsigned max_running;      /* sessions at once (default 8) */
	unsigned max_connections;  /* default 64 */
};

struct serve_server;

/* Opens the history, binds, starts serving on libmicrohttpd's threads. */
int serve_server_start(const struct serve_config *cfg, struct serve_server **out, char *why,
		       size_t why_len);
/* The bound TCP port (useful with port 0). */
unsigned serve_server_port(const struct serve_server *s);
/* Cancels running sessions, stops serving, frees. */
void serve_server_stop(struct serve_server *s);

#endif
