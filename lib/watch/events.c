/* SPDX-License-Identifier: MIT */
/*
 * events.c - ASP.NET Core request ends from DiagnosticSource, and names for
 * the frames of an event's stack from a rundown.
 */
#include "common/compat.h"

#include <math.h>

#include "common/strparse.h"
#include "srcline/srcline.h"
#include "watch/events.h"

#define DS_PROVIDER "Microsoft-Diagnostics-DiagnosticSource"
/*
 * DiagnosticSourceEventSource's FilterAndPayloadSpecs: the activity name
 * itself must be enabled (the hosting layer creates the activity only then),
 * and Start too (without it no Stop is written, measured on .NET 10); Start
 * carries nothing ("-": no implicit payload). Stop: the request's method,
 * path, query, status, and the activity's duration and trace id.
 */
#define DS_SPECS                                                                                     \
	"FilterAndPayloadSpecs=\""                                                                   \
	"Microsoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn:-\n"                       \
	"Microsoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn.Start@Activity1Start:-\n"  \
	"Microsoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop@Activity1Stop:-"      \
	"Request.Method;Request.Path;Request.QueryString;Response.StatusCode;"                      \
	"Duration=*Activity.Duration.TotalMilliseconds;TraceId=*Activity.TraceId\""
#define STOP_EVENT "Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop"
/* rundown: Loader 0x8, Jit 0x10, NGen 0x20 (ReadyToRun code), end rundown 0x100 */
#define RUNDOWN_KEYWORDS 0x138ull
#define RUNDOWN_ILMAP 0x20000ull /* JittedMethodILToNativeMap: source lines */
#define RUNDOWN_STREAM_MAX ((size_t)128 << 20)
#define NAME_FRAMES 256

const struct ipc_provider *watch_request_provider(void)
{
	/* Messages 0x1 and Events 0x2: with Events alone nothing came (.NET 10) */
	static const struct ipc_provider p = { DS_PROVIDER, 0x3, 5, DS_SPECS };

	return &p;
}

struct req_walk {
	struct watch_request *q;
	struct strbuf key, val;
	bool stop_event;
	bool in_args;
	int have; /* 1: key seen for the current pair */
};

static void copy_capped(char *dst, size_t cap, const char *src, bool *cut)
{
	size_t n = strlen(src);

	if (n >= cap) {
		n = cap - 1;
		*cut = true;
	}
	memcpy(dst, src, n);
	dst[n] = 0;
}

static void req_pair(struct req_walk *w)
{
	struct watch_request *q = w->q;
	const char *k = w->key.buf ? w->key.buf : "", *v = w->val.buf ? w->val.buf : "";

	if (!strcmp(k, "Method"))
		copy_capped(q->method, sizeof(q->method), v, &q->truncated);
	else if (!strcmp(k, "Path"))
		copy_capped(q->path, sizeof(q->path), v, &q->truncated);
	else if (!strcmp(k, "QueryString"))
		copy_capped(q->query, sizeof(q->query), v, &q->truncated);
	else if (!strcmp(k, "TraceId"))
		copy_capped(q->trace_id, sizeof(q->trace_id), v, &q->truncated);
	else if (!strcmp(k, "StatusCode")) {
		uint32_t c;

		if (!ct_parse_u32(v, 10, &c) && c <= 999)
			q->status = (int)c;
	} else if (!strcmp(k, "Duration")) {
		char *end;
		double d = strtod(v, &end);

		if (end != v && !*end && d >= 0 && isfinite(d))
			q->ms = d;
	}
}

static int req_value(void *ctx, const struct nt_value *v)
{
	struct req_walk *w = ctx;
	const char *name = v->field && v->field->name ? v->field->name : "";

	if (v->kind == NT_V_ARRAY_BEGIN && v->depth == 0 && !strcmp(name, "Arguments")) {
		w->in_args = true;
		return 0;
	}
	if (v->kind == NT_V_ARRAY_END && v->depth == 0) {
		w->in_args = false;
		return 0;
	}
	if (v->kind != NT_V_SCALAR || v->field->type != NT_T_STRING)
		return 0;
	if (v->depth == 0 && !strcmp(name, "EventName")) {
		strbuf_reset(&w->val);
		(void)nt_str16_utf8(&v->str, &w->val);
		w->stop_event = w->val.buf && !strcmp(w->val.buf, STOP_EVENT);
		return w->stop_event ? 0 : 1; /* another event: stop the walk */
	}
	if (!w->in_args)
		return 0;
	if (!strcmp(name, "Key")) {
		strbuf_reset(&w->key);
		(void)nt_str16_utf8(&v->str, &w->key);
		w->have = 1;
	} else if (!strcmp(name, "Value") && w->have) {
		strbuf_reset(&w->val);
		(void)nt_str16_utf8(&v->str, &w->val);
		req_pair(w);
		w->have = 0;
	}
	return 0;
}

int watch_request_decode(const struct nt_event *ev, struct watch_request *out)
{
	struct req_walk w = { 0 };
	int rc;

	if (ev->meta->provider_kind == NT_PROV_RUNTIME || !ev->meta->provider ||
	    strcmp(ev->meta->provider, DS_PROVIDER) || !ev->meta->event_name ||
	    strcmp(ev->meta->event_name, "Activity1Stop"))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->status = -1;
	out->ms = NAN;
	w.q = out;
	/* a value longer than 4 KiB is cut by the buffer's cap (sticky error) */
	strbuf_init(&w.key, 256);
	strbuf_init(&w.val, 4096);
	rc = nt_payload_walk(ev->meta, ev->payload, ev->payload_len, ev->pointer_size, req_value, &w);
	strbuf_release(&w.key);
	strbuf_release(&w.val);
	if (rc < 0)
		return rc;
	return w.stop_event ? 0 : -ENOENT;
}

bool watch_request_match(const struct watch_rule *r, const struct watch_request *q)
{
	if (r->path[0] && strncmp(q->path, r->path, strlen(r->path)))
		return false;
	if (r->kind == WATCH_REQUEST)
		return !isnan(q->ms) && q->ms > r->threshold;
	if (r->kind == WATCH_STATUS)
		return q->status >= r->status_lo && q->status <= r->status_hi;
	return false;
}

/* ----- names for a stack ----- */

static int mem_sink(void *ctx, const void *buf, size_t n)
{
	return strbuf_add(ctx, buf, n);
}

struct named {
	struct nt_methods *m;
	struct srcline *sl; /* NULL: no lines */
};

static int on_method(void *ctx, const struct nt_event *ev)
{
	struct named *nd = ctx;
	int rc = nt_methods_add_event(nd->m, ev);

	/* a damaged record or a full line table: fewer lines, the names go on */
	if (nd->sl && rc >= 0 && srcline_add_event(nd->sl, ev) == -ENOMEM)
		rc = -ENOMEM;
	return rc < 0 && rc != -EBADMSG ? rc : 0;
}

int watch_stack_name(const struct ipc_endpoint *ep, const uint64_t *ips, uint32_t n, bool lines,
		     volatile sig_atomic_t *stop, struct strbuf *out, uint32_t *named)
{
	/* JIT 0x10 verbose: methods compiled while the session runs are named too
	 * (and their IL-to-native maps, 0x20000, for the lines) */
	const struct ipc_provider prov = { "Microsoft-Windows-DotNETRuntime",
					   lines ? 0x20010 : 0x10, 5, NULL };
	const struct nt_handlers h = { .event = on_method };
	struct strbuf stream = STRBUF_INIT_MAX(RUNDOWN_STREAM_MAX);
	const struct ipc_trace_config cfg = {
		.providers = &prov, .nproviders = 1, .buffer_mb = 32,
		.rundown = true, .stackwalk = false,
		.rundown_keyword = RUNDOWN_KEYWORDS | (lines ? RUNDOWN_ILMAP : 0),
	};
	/* stopped at once: what matters is the rundown */
	const struct ipc_session_opts so = {
		.sink = mem_sink, .ctx = &stream, .stop = stop, .duration_ms = 1,
		.max_bytes = RUNDOWN_STREAM_MAX,
	};
	struct ipc_session_result res;
	struct ipc_error rerr = { 0 };
	struct named nd = { NULL, NULL };
	struct nt_reader *r = NULL;
	struct nt_membuf mb;
	const char *names[NAME_FRAMES];
	uint32_t idx[NAME_FRAMES];
	char line[PE_PDB_MAX_PATH + 1024];
	size_t k, cnt;
	int err;

	*named = 0;
	err = ipc_session_run(ep, &cfg, &so, &res, &rerr);
	if (!err)
		err = nt_methods_new(&nd.m, 0, 0);
	if (!err && lines && srcline_new_proc(ep->pid, &nd.sl))
		nd.sl = NULL;
	if (!err) {
		mb.p = (const uint8_t *)stream.buf;
		mb.len = stream.len;
		mb.off = 0;
		err = nt_reader_new(&r, nt_read_mem, &mb, NULL);
	}
	if (!err) {
		err = nt_reader_run(r, &h, &nd);
		if (err > 0)
			err = 0;
	}
	if (!err) {
		/* root first, unknown runs collapsed; written leaf first */
		cnt = nt_methods_name_stack_idx(nd.m, ips, n > NAME_FRAMES ? NAME_FRAMES : n, names,
						idx, NAME_FRAMES);
		/* the runtime's managed exception dispatch above the throw is not the app's */
		while (cnt > 1 && !strncmp(names[cnt - 1], "System.Runtime.EH::", 19))
			cnt--;
		for (k = cnt; k-- > 0;) {
			bool known = strcmp(names[k], "[unknown]") != 0;

			if (known && srcline_name(nd.sl, ips[idx[k]], idx[k] > 0, names[k], line,
						  sizeof(line)) == 1)
				(void)strbuf_addstr(out, line);
			else
				(void)strbuf_addstr(out, names[k]);
			(void)strbuf_addstr(out, "\n");
			if (known)
				(*named)++;
		}
		err = strbuf_error(out);
	}
	nt_reader_free(r);
	nt_methods_free(nd.m);
	srcline_free(nd.sl);
	strbuf_release(&stream);
	return err;
}
