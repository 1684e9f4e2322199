/* SPDX-License-Identifier: MIT */
/*
 * body.c - the one JSON document clrtap serve reads: the body of
 * POST /api/v1/sessions. A strict little reader for exactly that shape
 * (an object of kind, pid and a flat params object); anything else is
 * refused with a reason. Strings keep printable ASCII and UTF-8 bytes;
 * escapes are the short forms and \uXXXX below U+0080 (control characters
 * are refused: no parameter needs them).
 */
#include "common/compat.h"

#include "serve/serve.h"

struct rd {
	const char *p, *end;
	const char *why;
};

static void ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int fail(struct rd *r, const char *why)
{
	if (!r->why)
		r->why = why;
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string into out (outlen bytes with the NUL). */
static int string(struct rd *r, char *out, size_t outlen)
{
	size_t o = 0;

	if (r->p >= r->end || *r->p != '"')
		return fail(r, "a string was expected");
	r->p++;
	while (r->p < r->end && *r->p != '"') {
		unsigned char c = (unsigned char)*r->p++;

		if (c < 0x20)
			return fail(r, "a control character in a string");
		if (c == '\\') {
			if (r->p >= r->end)
				return fail(r, "a string is not closed");
			c = (unsigned char)*r->p++;
			switch (c) {
			case '"': case '\\': case '/': break;
			case 'b': case 'f': case 'n': case 'r': case 't':
				return fail(r, "a control character in a string");
			case 'u': {
				int v = 0, i, h;

				if (r->end - r->p < 4)
					return fail(r, "a bad \\u escape");
				for (i = 0; i < 4; i++) {
					h = hexval(r->p[i]);
					if (h < 0)
						return fail(r, "a bad \\u escape");
					v = v * 16 + h;
				}
				r->p += 4;
				if (v < 0x20 || v >= 0x80)
					return fail(r, "\\u escapes are only accepted for printable ASCII");
				c = (unsigned char)v;
				break;
			}
			default:
				return fail(r, "a bad escape in a string");
			}
		}
		if (o + 1 >= outlen)
			return fail(r, "a string is too long");
		out[o++] = (char)c;
	}
	if (r->p >= r->end)
		return fail(r, "a string is not closed");
	r->p++;
	out[o] = 0;
	return 0;
}

/* A number, true or false, as text. */
static int scalar(struct rd *r, char *out, size_t outlen)
{
	const char *s = r->p;
	size_t n;

	if (r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) {
		r->p += 4;
	} else if (r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) {
		r->p += 5;
	} else {
		if (r->p < r->end && *r->p == '-')
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "a value must be a string, a number or a boolean");
		while (r->p < r->end && ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' ||
					 *r->p == 'e' || *r->p == 'E' || *r->p == '+' || *r->p == '-'))
			r->p++;
	}
	n = (size_t)(r->p - s);
	if (n + 1 > outlen)
		return fail(r, "a number is too long");
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

static int expect(struct rd *r, char c, const char *why)
{
	ws(r);
	if (r->p >= r->end || *r->p != c)
		return fail(r, why);
	r->p++;
	return 0;
}

static int params(struct rd *r, struct serve_session_req *req)
{
	if (expect(r, '{', "params must be an object"))
		return -EINVAL;
	ws(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		return 0;
	}
	for (;;) {
		struct serve_param *pm;
		size_t i;

		if (req->nparams >= SERVE_MAX_PARAMS)
			return fail(r, "too many params");
		pm = &req->params[req->nparams];
		ws(r);
		if (string(r, pm->key, sizeof(pm->key)))
			return -EINVAL;
		for (i = 0; i < req->nparams; i++) {
			if (!strcmp(req->params[i].key, pm->key))
				return fail(r, "a param is given twice");
		}
		if (expect(r, ':', "':' expected"))
			return -EINVAL;
		ws(r);
		if (r->p < r->end && *r->p == '"') {
			pm->is_string = true;
			if (string(r, pm->value, sizeof(pm->value)))
				return -EINVAL;
		} else {
			pm->is_string = false;
			if (scalar(r, pm->value, sizeof(pm->value)))
				return -EINVAL;
		}
		req->nparams++;
		ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		return expect(r, '}', "',' or '}' expected in params");
	}
}

int serve_session_req_parse(const char *buf, size_t len, struct serve_session_req *req,
			    const char **why)
{
	struct rd r = { .p = buf, .end = buf + len };
	bool have_kind = false, have_pid = false, have_params = false;
	char key[32], num[32];

	memset(req, 0, sizeof(*req));
	*why = NULL;
	if (len > SERVE_MAX_BODY) {
		*why = "the body is too big";
		return -EINVAL;
	}
	if (expect(&r, '{', "the body must be a JSON object"))
		goto bad;
	ws(&r);
	if (r.p < r.end && *r.p == '}') {
		r.p++;
		goto end;
	}
	for (;;) {
		ws(&r);
		if (string(&r, key, sizeof(key)))
			goto bad;
		if (expect(&r, ':', "':' expected"))
			goto bad;
		ws(&r);
		if (!strcmp(key, "kind") && !have_kind) {
			have_kind = true;
			if (string(&r, req->kind, sizeof(req->kind)))
				goto bad;
		} else if (!strcmp(key, "pid") && !have_pid) {
			have_pid = true;
			if (scalar(&r, num, sizeof(num)) || serve_parse_pid(num, strlen(num), &req->pid)) {
				fail(&r, "pid must be a positive integer");
				goto bad;
			}
		} else if (!strcmp(key, "params") && !have_params) {
			have_params = true;
			if (params(&r, req))
				goto bad;
		} else {
			fail(&r, "unknown or repeated key (kind, pid, params)");
			goto bad;
		}
		ws(&r);
		if (r.p < r.end && *r.p == ',') {
			r.p++;
			continue;
		}
		if (expect(&r, '}', "',' or '}' expected"))
			goto bad;
		break;
	}
end:
	ws(&r);
	if (r.p != r.end) {
		fail(&r, "text after the JSON object");
		goto bad;
	}
	if (!have_kind) {
		*why = "kind is missing";
		return -EINVAL;
	}
	if (!have_pid) {
		*why = "pid is missing";
		return -EINVAL;
	}
	return 0;
bad:
	*why = r.why ? r.why : "bad JSON";
	return -EINVAL;
}

const char *serve_param_get(const struct serve_session_req *req, const char *key)
{
	size_t i;

	for (i = 0; i < req->nparams; i++) {
		if (!strcmp(req->params[i].key, key))
			return req->params[i].value;
	}
	return NULL;
}
