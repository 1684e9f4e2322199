/* SPDX-License-Identifier: MIT */
/*
 * route.c - request routing and the shape checks of everything a request
 * names. No request path reaches the file system: session ids and artifact
 * names are checked here and then only looked up in the session's own list.
 */
#include "common/compat.h"

#include <arpa/inet.h>
#include <strings.h>

#include "serve/serve.h"

int serve_parse_pid(const char *s, size_t len, pid_t *pid)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 10 || s[0] == '0')
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v == 0 || v > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

bool serve_session_id_valid(const char *s)
{
	size_t i;

	if (strncmp(s, "s-", 2) || strlen(s) != SERVE_ID_LEN)
		return false;
	for (i = 2; i < SERVE_ID_LEN; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

static bool segment_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > SERVE_MAX_NAME || s[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		if (!name_char(s[i]))
			return false;
	}
	return true;
}

bool serve_artifact_name_valid(const char *s)
{
	return segment_valid(s, strlen(s));
}

bool serve_asset_path_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > SERVE_MAX_NAME)
		return false;
	while (*s) {
		const char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);

		if (!segment_valid(s, n))
			return false;
		s += n;
		if (*s == '/')
			s++;
		else
			break;
		if (!*s)
			return false; /* trailing slash */
	}
	return true;
}

/* Splits "/a/b/c" into segments; max + 1 when there are more than max. */
static size_t split(const char *path, const char **seg, size_t *len, size_t max)
{
	size_t n = 0;
	const char *p = path + 1;

	for (;;) {
		const char *e = strchr(p, '/');

		if (n == max)
			return max + 1;
		seg[n] = p;
		len[n] = e ? (size_t)(e - p) : strlen(p);
		n++;
		if (!e)
			return n;
		p = e + 1;
	}
}

static bool seg_is(const char *seg, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(seg, word, len);
}

static int copy_seg(char *out, size_t outlen, const char *seg, size_t len)
{
	if (len >= outlen)
		return -ENOENT;
	memcpy(out, seg, len);
	out[len] = 0;
	return 0;
}

int serve_route_match(const char *path, struct serve_route *r)
{
	const char *seg[8];
	size_t len[8], n;

	memset(r, 0, sizeof(*r));
	if (!path || strlen(path) > SERVE_MAX_URL || path[0] != '/')
		return -ENOENT;
	if (!strcmp(path, "/metrics")) {
		r->id = SERVE_R_METRICS;
		return 0;
	}
	if (!strcmp(path, "/") || !strcmp(path, "/ui") || !strcmp(path, "/ui/")) {
		r->id = SERVE_R_ASSET;
		snprintf(r->name, sizeof(r->name), "index.html");
		return 0;
	}
	if (!strncmp(path, "/ui/", 4)) {
		if (!serve_asset_path_valid(path + 4))
			return -ENOENT;
		r->id = SERVE_R_ASSET;
		return copy_seg(r->name, sizeof(r->name), path + 4, strlen(path + 4));
	}
	n = split(path, seg, len, ARRAY_SIZE(seg));
	if (n < 3 || n > ARRAY_SIZE(seg) || !seg_is(seg[0], len[0], "api") ||
	    !seg_is(seg[1], len[1], "v1"))
		return -ENOENT;
	if (n == 3 && seg_is(seg[2], len[2], "openapi.json")) {
		r->id = SERVE_R_OPENAPI;
		return 0;
	}
	if (n == 3 && seg_is(seg[2], len[2], "tasks")) {
		r->id = SERVE_R_TASKS;
		return 0;
	}
	if (n == 3 && seg_is(seg[2], len[2], "processes")) {
		r->id = SERVE_R_PROCESSES;
		return 0;
	}
	if (seg_is(seg[2], len[2], "processes") && (n == 4 || n == 6)) {
		if (serve_parse_pid(seg[3], len[3], &r->pid))
			return -EINVAL;
		if (n == 4) {
			r->id = SERVE_R_PROCESS;
			return 0;
		}
		if (seg_is(seg[4], len[4], "counters") && seg_is(seg[5], len[5], "live")) {
			r->id = SERVE_R_COUNTERS_LIVE;
			return 0;
		}
		return -ENOENT;
	}
	if (n == 4 && seg_is(seg[2], len[2], "top") && seg_is(seg[3], len[3], "live")) {
		r->id = SERVE_R_TOP_LIVE;
		return 0;
	}
	if (!seg_is(seg[2], len[2], "sessions"))
		return -ENOENT;
	if (n == 3) {
		r->id = SERVE_R_SESSIONS;
		return 0;
	}
	if (copy_seg(r->session, sizeof(r->session), seg[3], len[3]) ||
	    !serve_session_id_valid(r->session))
		return -ENOENT;
	if (n == 4) {
		r->id = SERVE_R_SESSION;
		return 0;
	}
	if (n == 5 && seg_is(seg[4], len[4], "report")) {
		r->id = SERVE_R_REPORT;
		return 0;
	}
	if (n == 5 && seg_is(seg[4], len[4], "events")) {
		r->id = SERVE_R_EVENTS;
		return 0;
	}
	if (n == 6 && seg_is(seg[4], len[4], "artifacts")) {
		if (!segment_valid(seg[5], len[5]))
			return -ENOENT;
		r->id = SERVE_R_ARTIFACT;
		return copy_seg(r->name, sizeof(r->name), seg[5], len[5]);
	}
	return -ENOENT;
}

bool serve_route_allows(enum serve_route_id id, const char *method)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	switch (id) {
	case SERVE_R_SESSIONS:
		return get || !strcmp(method, "POST");
	case SERVE_R_SESSION:
		return get || !strcmp(method, "DELETE");
	case SERVE_R_NONE:
		return false;
	default:
		return get;
	}
}

bool serve_auth_ok(const char *header, const char *token)
{
	size_t hl, tl, i;
	unsigned char diff = 0;

	if (!token)
		return true;
	if (!header || strncmp(header, "Bearer ", 7))
		return false;
	header += 7;
	hl = strlen(header);
	tl = strlen(token);
	for (i = 0; i < tl; i++)
		diff |= (unsigned char)(token[i] ^ (i < hl ? header[i] : 0));
	return diff == 0 && hl == tl && tl > 0;
}

bool serve_host_is_loopback(const char *host)
{
	return !strcmp(host, "localhost") || !strcmp(host, "::1") || !strncmp(host, "127.", 4);
}

int serve_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port)
{
	const char *colon;
	size_t hl;
	unsigned long v = 0;
	const char *p;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - s - 1);
		colon = close + 1;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	p = colon + 1;
	if (!*p || strlen(p) > 5)
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*port = (unsigned)v;
	return 0;
}

const char *serve_content_type(const char *name)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".json", "application/json" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".txt", "text/plain; charset=utf-8" },
		{ ".md", "text/markdown; charset=utf-8" },
		{ ".folded", "text/plain; charset=utf-8" },
		{ ".csv", "text/csv; charset=utf-8" },
		{ ".ico", "image/x-icon" },
	};
	size_t i, nl = strlen(name);

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		size_t el = strlen(types[i].ext);

		if (nl >= el && !strcmp(name + nl - el, types[i].ext))
			return types[i].type;
	}
	return "application/octet-stream";
}


/* ----- the browser-facing checks ----- */

/* Whether a and b (len bytes of a) are the same IP address. */
static bool same_addr(const char *a, size_t alen, const char *b)
{
	unsigned char x[16], y[16];
	char buf[64];

	if (alen >= sizeof(buf))
		return false;
	memcpy(buf, a, alen);
	buf[alen] = 0;
	if (inet_pton(AF_INET, buf, x) == 1)
		return inet_pton(AF_INET, b, y) == 1 && !memcmp(x, y, 4);
	if (inet_pton(AF_INET6, buf, x) == 1)
		return inet_pton(AF_INET6, b, y) == 1 && !memcmp(x, y, 16);
	return false;
}

bool serve_host_ok(const char *host, const struct serve_host_rules *rules)
{
	const char *name, *port = NULL;
	size_t nlen, i;
	bool literal6 = false;

	if (!host || !*host || strlen(host) > 300)
		return false;
	if (host[0] == '[') {
		const char *close = strchr(host, ']');

		if (!close || (close[1] && close[1] != ':'))
			return false;
		name = host + 1;
		nlen = (size_t)(close - name);
		port = close[1] ? close + 2 : NULL;
		literal6 = true;
	} else {
		const char *colon = strchr(host, ':');

		if (colon && strchr(colon + 1, ':'))
			return false; /* an IPv6 literal must be bracketed */
		name = host;
		nlen = colon ? (size_t)(colon - host) : strlen(host);
		port = colon ? colon + 1 : NULL;
	}
	if (!nlen)
		return false;
	if (port) {
		unsigned long v = 0;
		const char *p;

		if (!*port || strlen(port) > 5)
			return false;
		for (p = port; *p; p++) {
			if (*p < '0' || *p > '9')
				return false;
			v = v * 10 + (unsigned long)(*p - '0');
		}
		if (v != rules->port)
			return false;
	} else if (rules->port != 80) {
		return false;
	}
	for (i = 0; i < rules->naddrs; i++) {
		if (same_addr(name, nlen, rules->addrs[i]))
			return true;
	}
	if (literal6)
		return false;
	if (rules->loopback && nlen == 9 && !strncasecmp(name, "localhost", 9))
		return true;
	for (i = 0; i < rules->nallow; i++) {
		if (strlen(rules->allow[i]) == nlen && !strncasecmp(name, rules->allow[i], nlen))
			return true;
	}
	return false;
}

bool serve_origin_ok(const char *origin, const char *host)
{
	if (!origin)
		return true;
	if (!host || strncasecmp(origin, "http://", 7))
		return false;
	return !strcasecmp(origin + 7, host);
}

bool serve_ctype_is_json(const char *ctype)
{
	size_t n = strlen("application/json");

	if (!ctype)
		return false;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	if (strncasecmp(ctype, "application/json", n))
		return false;
	ctype += n;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	return !*ctype || *ctype == ';';
}
