/* SPDX-License-Identifier: MIT */
/*
 * http.c - the server on libmicrohttpd: one thread per connection (a slow or
 * streaming client holds only its own thread; at most max_connections), a
 * 30 s idle timeout, capped header memory and body size, bearer-token auth
 * when a token is in force, JSON errors with the CLI's exit codes.
 */
#include "common/compat.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "proc/proc.h"
#include "common/log.h"
#include "serve/internal.h"

struct serve_server {
	struct serve_config cfg;
	struct MHD_Daemon *d;
	sqlite3 *db;
	struct srv_runner *runner;
	struct srv_procs *procs;
	struct srv_metrics *metrics;
	int listen_fd;
	unsigned port;
	volatile bool stopping;
	struct strbuf openapi; /* the template with the task table filled in (openapi.c) */
	struct strbuf tasks;   /* GET /api/v1/tasks */
};

struct conn {
	struct strbuf body;
	bool too_big;
	unsigned refused;   /* HTTP status of a request refused on its headers, else 0 */
	int refused_code;
	char refused_msg[400];
};

/* ----- responses ----- */

/* On every response: no page of another origin may frame it, and no address
 * (which may hold ?token=) leaves in a Referer. No CORS header is ever sent. */
static void secure_headers(struct MHD_Response *r)
{
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Content-Security-Policy", "frame-ancestors 'none'");
}

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status, const char *ctype,
				const void *data, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	secure_headers(r);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, struct ct_json *j)
{
	if (ct_json_finish(j))
		return send_buf(c, 500, "application/json",
				"{\"error\":{\"code\":1,\"name\":\"error\",\"message\":\"out of memory\"}}",
				63);
	strbuf_addch(j->sb, '\n');
	return send_buf(c, status, "application/json", j->sb->buf, j->sb->len);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, int code,
				  const char *fmt, ...) PRINTF(4, 5);
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, int code,
				  const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	char msg[1024];
	va_list ap;
	enum MHD_Result ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_obj_begin(&j, "error");
	ct_json_kv_i64(&j, "code", code);
	ct_json_kv_str(&j, "name", ct_exit_name(code));
	ct_json_kv_str(&j, "message", msg);
	ct_json_obj_end(&j);
	ct_json_obj_end(&j);
	ret = send_json(c, status, &j);
	strbuf_release(&sb);
	return ret;
}

/* HTTP status for a CLI exit code. */
static unsigned status_for(int code)
{
	switch (code) {
	case EXIT_USAGE: return 400;
	case EXIT_NO_PROCESS: return 404;
	case EXIT_NOT_DOTNET: return 400;
	case EXIT_PERMISSION: case EXIT_NOT_TARGET: return 403;
	default: return 500;
	}
}

static enum MHD_Result send_proc_error(struct MHD_Connection *c, pid_t pid, int err,
				      const struct proc_target *t)
{
	char why[PROC_PATH_MAX * 2 + 256];
	int code = ct_exit_for(err);

	proc_target_strerror(pid, err, t, why, sizeof(why));
	return send_error(c, status_for(code), code, "%s", why);
}

/* ----- server-sent events ----- */

enum sse_kind { SSE_COUNTERS, SSE_TOP, SSE_EVENTS };

struct sse {
	struct serve_server *s;
	enum sse_kind kind;
	pid_t pid;
	char id[SERVE_ID_LEN + 1];
	uint64_t seq;
	int64_t t0, last_send, last_top;
	struct srv_top *top;
	struct strbuf pending;
	size_t pending_off;
	bool finished;
	int64_t max_ms;     /* stop after this (0: never) */
};

static void sse_free(void *cls)
{
	struct sse *e = cls;

	srv_top_free(e->top);
	strbuf_release(&e->pending);
	free(e);
}

static void sse_event(struct sse *e, const char *name, const char *data, size_t len)
{
	strbuf_addf(&e->pending, "event: %s\ndata: ", name);
	strbuf_add(&e->pending, data, len);
	strbuf_addstr(&e->pending, "\n\n");
}

/* A session's events: only its end (a probe's calls are records of its report). */
static void sse_fill_events(struct sse *e)
{
	char st[32];

	if (srv_runner_active(e->s->runner, e->id))
		return;
	srv_db_status(e->s->db, e->id, st, sizeof(st));
	strbuf_addf(&e->pending, "event: end\ndata: {\"status\":\"%s\"}\n\n", st);
	e->finished = true;
}

static void sse_fill(struct sse *e)
{
	int64_t now = srv_now_ms();
	double t = (double)(now - e->t0) / 1000.0;

	if (e->max_ms && now - e->t0 > e->max_ms) {
		e->finished = true;
		return;
	}
	if (e->kind == SSE_COUNTERS) {
		struct strbuf out = STRBUF_INIT;
		int err = srv_metrics_updates(e->s->metrics, e->pid, &e->seq, t, &out);
		const char *p = out.buf;

		while (*p) {
			const char *nl = strchr(p, '\n');

			sse_event(e, "counter", p, (size_t)(nl - p));
			p = nl + 1;
		}
		strbuf_release(&out);
		if (err == -ESRCH || err == -ENOENT) {
			strbuf_addf(&e->pending, "event: end\ndata: {\"reason\":\"%s\"}\n\n",
				    err == -ESRCH ? "process ended" : "not a .NET process");
			e->finished = true;
		}
	} else if (e->kind == SSE_TOP) {
		/* the first rows 1 s after the first sample (srv_top_new), then every 2 s */
		if (now - e->last_top >= (e->last_top == e->t0 ? 1000 : 2000)) {
			struct strbuf out = STRBUF_INIT;
			struct ct_json j;

			ct_json_init(&j, &out);
			if (!srv_top_json(e->top, &j) && !ct_json_finish(&j))
				sse_event(e, "top", out.buf, out.len);
			strbuf_release(&out);
			e->last_top = now;
		}
	} else {
		sse_fill_events(e);
	}
	if (!e->pending.len && now - e->last_send >= 1000)
		strbuf_addstr(&e->pending, ": keep-alive\n\n");
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *e = cls;
	size_t n;

	while (e->pending_off >= e->pending.len) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		strbuf_reset(&e->pending);
		e->pending_off = 0;
		if (e->finished || e->s->stopping)
			return MHD_CONTENT_READER_END_OF_STREAM;
		sse_fill(e);
		if (!e->pending.len)
			nanosleep(&ts, NULL);
	}
	n = CT_MIN(max, e->pending.len - e->pending_off);
	memcpy(buf, e->pending.buf + e->pending_off, n);
	e->pending_off += n;
	e->last_send = srv_now_ms();
	return (ssize_t)n;
}

static enum MHD_Result send_sse(struct MHD_Connection *c, struct sse *e)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *max = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "max_s");

	e->t0 = e->last_send = e->last_top = srv_now_ms();
	strbuf_init(&e->pending, 1 << 20);
	if (max) {
		long v = strtol(max, NULL, 10);

		if (v > 0 && v <= 86400)
			e->max_ms = v * 1000;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, e, sse_free);
	if (!r) {
		sse_free(e);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	secure_headers(r);
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* ----- handlers ----- */

static enum MHD_Result h_file(struct MHD_Connection *c, int dirfd, const char *name,
			      const char *ctype, bool attach)
{
	struct MHD_Response *r;
	struct stat st;
	enum MHD_Result ret;
	char disp[SERVE_MAX_NAME + 64];
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return send_error(c, 404, EXIT_ERROR, "the artifact '%s' is gone from the disk", name);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return send_error(c, 404, EXIT_ERROR, "the artifact '%s' is not a regular file", name);
	}
	r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	secure_headers(r);
	if (attach) {
		snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
		MHD_add_response_header(r, "Content-Disposition", disp);
	}
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result h_session_file(struct serve_server *s, struct MHD_Connection *c,
				      const char *id, const char *name, bool report)
{
	char dir[PATH_MAX], rname[SERVE_MAX_NAME + 1], status[32];
	int dfd, sfd, err;
	enum MHD_Result ret;

	if (report) {
		err = srv_db_report(s->db, id, rname, sizeof(rname), dir, sizeof(dir), status,
				    sizeof(status));
		if (err == -ESRCH)
			return send_error(c, 404, EXIT_USAGE, "no session %s", id);
		if (err) {
			if (!strcmp(status, "queued") || !strcmp(status, "running"))
				return send_error(c, 409, EXIT_USAGE, "session %s is still %s: no report yet",
						  id, status);
			return send_error(c, 404, EXIT_USAGE, "session %s has no report (status %s)", id,
					  status);
		}
		name = rname;
	} else {
		err = srv_db_artifact_dir(s->db, id, name, dir, sizeof(dir));
		if (err) {
			if (srv_db_status(s->db, id, status, sizeof(status)))
				return send_error(c, 404, EXIT_USAGE, "no session %s", id);
			return send_error(c, 404, EXIT_USAGE, "session %s has no artifact '%s'", id, name);
		}
	}
	/* The name is one the server recorded; the directory is root/<id>. */
	dfd = srv_runner_dirfd(s->runner);
	sfd = openat(dfd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sfd < 0)
		return send_error(c, 404, EXIT_ERROR, "session %s's files are gone from the disk", id);
	ret = h_file(c, sfd, name, report ? "application/json" : serve_content_type(name), !report);
	close(sfd);
	return ret;
}

static enum MHD_Result h_session_post(struct serve_server *s, struct MHD_Connection *c,
				      struct conn *cn)
{
	struct serve_session_req req;
	const char *why = NULL;
	char id[SERVE_ID_LEN + 1], msg[512];
	int code = 0, err;
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	enum MHD_Result ret;

	if (serve_session_req_parse(cn->body.buf, cn->body.len, &req, &why))
		return send_error(c, 400, EXIT_USAGE, "bad session request: %s", why);
	err = srv_runner_start(s->runner, &req, id, &code, msg, sizeof(msg));
	if (err) {
		if (err == -EBUSY)
			return send_error(c, 409, code, "%s", msg);
		if (err == -EINVAL)
			return send_error(c, 400, EXIT_USAGE, "%s", msg);
		return send_error(c, status_for(code), code, "%s", msg);
	}
	ct_json_init(&j, &sb);
	srv_db_session_json(s->db, id, &j);
	ret = send_json(c, 201, &j);
	strbuf_release(&sb);
	return ret;
}

static bool asset_find(const struct serve_server *s, const char *path, const struct serve_asset **a)
{
	size_t i;

	for (i = 0; i < s->cfg.nassets; i++) {
		if (!strcmp(s->cfg.assets[i].path, path)) {
			*a = &s->cfg.assets[i];
			return true;
		}
	}
	return false;
}

static bool authorized(struct serve_server *s, struct MHD_Connection *c, const char *method)
{
	const char *h, *q;

	if (!s->cfg.token)
		return true;
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (serve_auth_ok(h, s->cfg.token))
		return true;
	/* EventSource and a first page load cannot send a header: ?token= on GET */
	q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	if (q && !strcmp(method, "GET")) {
		char hdr[300];

		snprintf(hdr, sizeof(hdr), "Bearer %s", q);
		return serve_auth_ok(hdr, s->cfg.token);
	}
	return false;
}

/* The address this connection arrived at, as a literal (IPv4-mapped as IPv4). */
static void local_addr(struct MHD_Connection *c, char *buf, size_t len, bool *loopback)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	*buf = 0;
	*loopback = false;
	if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in4->sin_addr, buf, (socklen_t)len);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], buf, (socklen_t)len);
		else
			inet_ntop(AF_INET6, &in6->sin6_addr, buf, (socklen_t)len);
	}
	*loopback = serve_host_is_loopback(buf);
}

static bool refuse(struct conn *cn, unsigned status, int code, const char *fmt, ...)
	PRINTF(4, 5);
static bool refuse(struct conn *cn, unsigned status, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cn->refused_msg, sizeof(cn->refused_msg), fmt, ap);
	va_end(ap);
	cn->refused = status;
	cn->refused_code = code;
	return true;
}

/*
 * What a browser on this machine could send on a page's behalf, checked on
 * the headers before any body is read (docs/SECURITY.md, "The web surface"):
 * a Host that is not this server's (DNS rebinding), an Origin of another
 * page, a cross-site fetch of the API, a POST without a JSON content type
 * (a "simple" cross-origin request that needs no preflight).
 */
static bool refused(struct serve_server *s, struct MHD_Connection *c, const char *url,
		    const char *method, struct conn *cn)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
	bool ui = !strcmp(url, "/") || !strcmp(url, "/ui") || !strncmp(url, "/ui/", 4);

	if (!s->cfg.unix_path) {
		char local[INET6_ADDRSTRLEN] = "";
		const char *addrs[2] = { local, s->cfg.listen_host };
		struct serve_host_rules rules = { addrs, 2, false, s->cfg.allow_hosts,
						  s->cfg.nallow_hosts, s->port };

		local_addr(c, local, sizeof(local), &rules.loopback);
		if (!serve_host_ok(host, &rules))
			return refuse(cn, 403, EXIT_PERMISSION, "the Host header '%.100s' is not this server's "
				      "address: refused (a DNS-rebinding page sends its own name; "
				      "--allow-host NAME allows a name)", host ? host : "");
	}
	if (!serve_origin_ok(origin, host))
		return refuse(cn, 403, EXIT_PERMISSION, "a request of another origin (Origin: %.100s) is refused",
			      origin);
	if (!ui && site && strcmp(site, "same-origin") && strcmp(site, "none"))
		return refuse(cn, 403, EXIT_PERMISSION, "a %.20s request from a page of another origin is refused",
			      site);
	if (!strcmp(method, "POST") &&
	    !serve_ctype_is_json(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type")))
		return refuse(cn, 415, EXIT_USAGE, "a POST needs 'Content-Type: application/json'");
	return false;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct serve_server *s = cls;
	struct conn *cn = *con_cls;
	struct serve_route rt;
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	enum MHD_Result ret;
	int err;

	if (!cn) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");

		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		strbuf_init(&cn->body, SERVE_MAX_BODY);
		*con_cls = cn;
		if (refused(s, c, url, method, cn))
			return send_error(c, cn->refused, cn->refused_code, "%s", cn->refused_msg);
		if (cl && strtoull(cl, NULL, 10) > SERVE_MAX_BODY) {
			cn->too_big = true;
			return send_error(c, 413, EXIT_USAGE, "the request body is over %d bytes",
					  SERVE_MAX_BODY);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!cn->too_big && !cn->refused &&
		    strbuf_add(&cn->body, upload_data, *upload_data_size))
			cn->too_big = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (cn->refused)
		return send_error(c, cn->refused, cn->refused_code, "%s", cn->refused_msg);
	if (cn->too_big)
		return send_error(c, 413, EXIT_USAGE, "the request body is over %d bytes", SERVE_MAX_BODY);
	/* The UI's own files are the same public bytes in every build (no data
	 * of any target), and a <script src> cannot send the bearer header:
	 * they are served without the token; every /api/v1 call needs it. */
	if (!(!strcmp(method, "GET") &&
	      (!strcmp(url, "/") || !strcmp(url, "/ui") || !strncmp(url, "/ui/", 4))) &&
	    !authorized(s, c, method))
		return send_error(c, 401, EXIT_PERMISSION, "a bearer token is needed (Authorization: Bearer TOKEN)");
	err = serve_route_match(url, &rt);
	if (err == -EINVAL)
		return send_error(c, 400, EXIT_USAGE, "bad pid in '%s': a positive decimal number is expected",
				  url);
	if (err)
		return send_error(c, 404, EXIT_USAGE, "no such resource");
	if (!serve_route_allows(rt.id, method))
		return send_error(c, 405, EXIT_USAGE, "method %s is not allowed here", method);
	ct_json_init(&j, &sb);
	switch (rt.id) {
	case SERVE_R_PROCESSES:
		err = srv_procs_list_json(s->procs, &j);
		ret = err ? send_error(c, 500, EXIT_ERROR, "cannot scan /proc: %s", strerror(-err))
			  : send_json(c, 200, &j);
		break;
	case SERVE_R_PROCESS: {
		struct proc_target t;

		err = srv_procs_info_json(s->procs, rt.pid, &j, &t);
		ret = err ? send_proc_error(c, rt.pid, err, &t) : send_json(c, 200, &j);
		break;
	}
	case SERVE_R_COUNTERS_LIVE:
	case SERVE_R_TOP_LIVE:
	case SERVE_R_EVENTS: {
		struct sse *e = calloc(1, sizeof(*e));
		struct proc_target t;

		if (!e) {
			ret = MHD_NO;
			break;
		}
		e->s = s;
		e->pid = rt.pid;
		if (rt.id == SERVE_R_COUNTERS_LIVE) {
			e->kind = SSE_COUNTERS;
			err = proc_target_find(rt.pid, &t);
			if (err) {
				free(e);
				ret = send_proc_error(c, rt.pid, err, &t);
				break;
			}
		} else if (rt.id == SERVE_R_TOP_LIVE) {
			e->kind = SSE_TOP;
			if (srv_top_new(&e->top)) {
				free(e);
				ret = MHD_NO;
				break;
			}
		} else {
			char st[32];

			e->kind = SSE_EVENTS;
			snprintf(e->id, sizeof(e->id), "%s", rt.session);
			if (srv_db_status(s->db, rt.session, st, sizeof(st))) {
				free(e);
				ret = send_error(c, 404, EXIT_USAGE, "no session %s", rt.session);
				break;
			}
		}
		ret = send_sse(c, e);
		break;
	}
	case SERVE_R_SESSIONS:
		if (!strcmp(method, "POST")) {
			ret = h_session_post(s, c, cn);
			break;
		}
		srv_db_list_json(s->db, &j);
		ret = send_json(c, 200, &j);
		break;
	case SERVE_R_SESSION:
		if (!strcmp(method, "DELETE")) {
			char st[32];

			if (srv_db_status(s->db, rt.session, st, sizeof(st))) {
				ret = send_error(c, 404, EXIT_USAGE, "no session %s", rt.session);
				break;
			}
			if (srv_runner_cancel(s->runner, rt.session)) {
				ret = send_error(c, 409, EXIT_USAGE, "session %s is not running (status %s)",
						 rt.session, st);
				break;
			}
		}
		if (srv_db_session_json(s->db, rt.session, &j))
			ret = send_error(c, 404, EXIT_USAGE, "no session %s", rt.session);
		else
			ret = send_json(c, 200, &j);
		break;
	case SERVE_R_ARTIFACT:
		ret = h_session_file(s, c, rt.session, rt.name, false);
		break;
	case SERVE_R_REPORT:
		ret = h_session_file(s, c, rt.session, NULL, true);
		break;
	case SERVE_R_OPENAPI:
		ret = send_buf(c, 200, "application/json", s->openapi.buf, s->openapi.len);
		break;
	case SERVE_R_TASKS:
		ret = send_buf(c, 200, "application/json", s->tasks.buf, s->tasks.len);
		break;
	case SERVE_R_METRICS:
		err = srv_metrics_prometheus(s->metrics, s->cfg.only_pids, s->cfg.n_only_pids, &sb);
		ret = err ? send_error(c, 500, EXIT_ERROR, "cannot read metrics: %s", strerror(-err))
			  : send_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", sb.buf,
				     sb.len);
		break;
	case SERVE_R_ASSET: {
		const struct serve_asset *a;

		if (!asset_find(s, rt.name, &a))
			ret = send_error(c, 404, EXIT_USAGE, "no such resource");
		else
			ret = send_buf(c, 200, a->content_type, a->data, a->len);
		break;
	}
	default:
		ret = send_error(c, 404, EXIT_USAGE, "no such resource");
	}
	strbuf_release(&sb);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	if (cn) {
		strbuf_release(&cn->body);
		free(cn);
		*con_cls = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	ct_debug("http: %s", buf);
}

static void drop_dir(const char *dir, void *ctx)
{
	struct serve_server *s = ctx;
	const char *base = strrchr(dir, '/');
	int dfd, sfd;
	DIR *d;
	struct dirent *e;

	base = base ? base + 1 : dir;
	if (!serve_session_id_valid(base))
		return;
	dfd = srv_runner_dirfd(s->runner);
	sfd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sfd < 0)
		return;
	d = fdopendir(sfd);
	if (!d) {
		close(sfd);
		return;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	unlinkat(dfd, base, AT_REMOVEDIR);
}

static int unix_listen(const char *path, int *fdp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	/* a stale socket of ours may be replaced; nothing else */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* created 0600: umask for the bind, then chmod to be sure */
	{
		mode_t old = umask(0177);
		int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		int e = errno;

		umask(old);
		if (rc) {
			close(fd);
			return -e;
		}
	}
	if (chmod(path, 0600) || listen(fd, 64)) {
		int e = -errno;

		close(fd);
		return e;
	}
	*fdp = fd;
	return 0;
}

#define WHY(...) snprintf(why, why_len, __VA_ARGS__)

int serve_server_start(const struct serve_config *cfg, struct serve_server **out, char *why,
		       size_t why_len)
{
	struct serve_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage ss = { 0 };
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_ERROR_LOG;
	char root[PATH_MAX];
	const char *slash;
	int err;

	if (!s)
		return -ENOMEM;
	err = srv_dl_load(why, why_len);
	if (err) {
		free(s);
		return err;
	}
	s->cfg = *cfg;
	s->listen_fd = -1;
	strbuf_init(&s->openapi, 1 << 22);
	strbuf_init(&s->tasks, 1 << 22);
	if (serve_openapi_build(cfg->openapi, cfg->openapi_len, &s->openapi) || serve_tasks_json(&s->tasks)) {
		WHY("cannot build the OpenAPI document from the task table");
		err = -EINVAL;
		goto fail;
	}
	if (!s->cfg.max_sessions)
		s->cfg.max_sessions = 200;
	if (!s->cfg.max_age_days)
		s->cfg.max_age_days = 30;
	if (!s->cfg.max_connections)
		s->cfg.max_connections = 64;
	err = srv_db_open(cfg->db_path, &s->db);
	if (err) {
		WHY("cannot open the history database %s", cfg->db_path);
		goto fail;
	}
	srv_db_recover(s->db);
	slash = strrchr(cfg->db_path, '/');
	if (slash)
		snprintf(root, sizeof(root), "%.*s/sessions", (int)(slash - cfg->db_path),
			 cfg->db_path);
	else
		snprintf(root, sizeof(root), "sessions");
	err = srv_runner_new(s->db, cfg->exe, root, cfg->max_running, &s->runner);
	if (err) {
		WHY("cannot use the sessions directory %s: %s", root, strerror(-err));
		goto fail;
	}
	srv_db_prune(s->db, s->cfg.max_sessions, s->cfg.max_age_days, drop_dir, s);
	err = srv_procs_new(&s->procs);
	if (!err)
		err = srv_metrics_new(&s->metrics);
	if (err)
		goto fail;
	if (cfg->unix_path) {
		err = unix_listen(cfg->unix_path, &s->listen_fd);
		if (err) {
			WHY("cannot listen on %s: %s", cfg->unix_path,
			    err == -EEXIST ? "a file that is not a socket is there" : strerror(-err));
			goto fail;
		}
		s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET,
					s->listen_fd, MHD_OPTION_CONNECTION_LIMIT,
					s->cfg.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
					MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
					MHD_OPTION_NOTIFY_COMPLETED, completed, s,
					MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_END);
	} else {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		const char *host = strcmp(cfg->listen_host, "localhost") ? cfg->listen_host
									  : "127.0.0.1";

		if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
			in4->sin_family = AF_INET;
			in4->sin_port = htons((uint16_t)cfg->listen_port);
		} else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons((uint16_t)cfg->listen_port);
			flags |= MHD_USE_IPv6;
		} else {
			err = -EINVAL;
			WHY("'%s' is not an IP address", cfg->listen_host);
			goto fail;
		}
		s->d = MHD_start_daemon(flags, (uint16_t)cfg->listen_port, NULL, NULL, handle, s,
					MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
					MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections,
					MHD_OPTION_CONNECTION_TIMEOUT, 30u,
					MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
					MHD_OPTION_NOTIFY_COMPLETED, completed, s,
					MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_END);
	}
	if (!s->d) {
		err = -EADDRINUSE;
		WHY("cannot start the HTTP server (address in use or not available)");
		goto fail;
	}
	{
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

		s->port = di ? di->port : cfg->listen_port;
	}
	*out = s;
	return 0;
fail:
	serve_server_stop(s);
	return err ? err : -EIO;
}

unsigned serve_server_port(const struct serve_server *s)
{
	return s->port;
}

void serve_server_stop(struct serve_server *s)
{
	if (!s)
		return;
	s->stopping = true;
	if (s->d)
		MHD_stop_daemon(s->d);
	srv_runner_free(s->runner);
	srv_metrics_free(s->metrics);
	srv_procs_free(s->procs);
	if (s->db)
		srv_db_close(s->db);
	if (s->cfg.unix_path && s->listen_fd >= 0)
		unlink(s->cfg.unix_path);
	strbuf_release(&s->openapi);
	strbuf_release(&s->tasks);
	free(s);
}
