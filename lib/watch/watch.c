/* SPDX-License-Identifier: MIT */
/*
 * watch.c - rule and action parsing, and when a rule fires.
 */
#include "common/compat.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>

#include "common/strparse.h"
#include "watch/watch.h"

#define MAX_TOKENS 32

const char *watch_kind_name(enum watch_kind k)
{
	switch (k) {
	case WATCH_CPU: return "cpu";
	case WATCH_RSS: return "rss";
	case WATCH_COUNTER: return "counter";
	case WATCH_EXCEPTION: return "exception";
	case WATCH_EXIT: return "exit";
	case WATCH_GC_PAUSE: return "gc-pause";
	case WATCH_CGROUP_MEM: return "cgroup-memory";
	case WATCH_CRASH: return "crash";
	case WATCH_REQUEST: return "request";
	case WATCH_STATUS: return "status";
	case WATCH_MEM_GROWTH: return "memory-growth";
	}
	return "?";
}

const char *watch_action_name(enum watch_action_kind k)
{
	switch (k) {
	case WATCH_ACT_PROFILE: return "profile";
	case WATCH_ACT_STACKS: return "stacks";
	case WATCH_ACT_TRACE: return "trace";
	case WATCH_ACT_DUMP: return "dump";
	case WATCH_ACT_GCDUMP: return "gcdump";
	case WATCH_ACT_EXEC: return "exec";
	case WATCH_ACT_ANALYZE: return "analyze";
	}
	return "?";
}

static int fail(char *err, size_t errlen, const char *fmt, ...) PRINTF(3, 4);
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A decimal number "12", "1.5", ".5" at the start of s; *end after it. */
static int parse_number(const char *s, double *v, const char **end)
{
	double x = 0, scale = 1;
	bool digits = false;
	const char *p = s;

	while (*p >= '0' && *p <= '9') {
		x = x * 10 + (*p++ - '0');
		digits = true;
		if (x > 1e18)
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			scale /= 10;
			x += (*p++ - '0') * scale;
			digits = true;
			if (scale < 1e-9)
				return -EINVAL;
		}
	}
	if (!digits)
		return -EINVAL;
	*v = x;
	*end = p;
	return 0;
}

int watch_parse_duration(const char *s, int64_t *ms)
{
	double v, f;
	const char *u;

	if (parse_number(s, &v, &u))
		return -EINVAL;
	if (!*u || !strcmp(u, "s"))
		f = 1000;
	else if (!strcmp(u, "ms"))
		f = 1;
	else if (!strcmp(u, "m"))
		f = 60000;
	else if (!strcmp(u, "h"))
		f = 3600000;
	else
		return -EINVAL;
	v *= f;
	if (v > (double)WATCH_MAX_MS)
		return -EINVAL;
	*ms = (int64_t)(v + 0.5);
	return 0;
}

int watch_parse_size(const char *s, double *bytes)
{
	static const struct {
		const char *u;
		double f;
	} units[] = {
		{ "", 1 },	   { "B", 1 },		 { "K", 1024 },	     { "KB", 1024 },
		{ "KiB", 1024 },   { "M", 1048576 },	 { "MB", 1048576 },  { "MiB", 1048576 },
		{ "G", 1073741824 }, { "GB", 1073741824 }, { "GiB", 1073741824 },
	};
	double v;
	const char *u;
	size_t i;

	if (parse_number(s, &v, &u))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(u, units[i].u)) {
			*bytes = v * units[i].f;
			return 0;
		}
	return -EINVAL;
}

/* Splits text into tokens in buf: blanks separate, '<' and '>' are tokens. */
static int tokenize(const char *text, char *buf, size_t buflen, char **tok, size_t *ntok,
		    char *err, size_t errlen)
{
	size_t n = 0, o = 0;
	const char *p = text;

	while (*p) {
		if (*p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		if (n == MAX_TOKENS)
			return fail(err, errlen, "too many words (at most %d)", MAX_TOKENS);
		tok[n++] = buf + o;
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					return fail(err, errlen, "a control character in the rule");
				buf[o++] = *p;
			}
			if (*p != '"')
				return fail(err, errlen, "a '\"' without its closing '\"'");
			p++;
		} else if (*p == '<' || *p == '>') {
			buf[o++] = *p++;
		} else {
			while (*p && *p != ' ' && *p != '\t' && *p != '<' && *p != '>') {
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					return fail(err, errlen, "a control character in the rule");
				buf[o++] = *p++;
			}
		}
		buf[o++] = 0;
		if (o >= buflen)
			return fail(err, errlen, "rule too long");
	}
	*ntok = n;
	return 0;
}

static int copy_name(char *dst, const char *src, const char *what, char *err, size_t errlen)
{
	size_t n = strlen(src);

	if (!n)
		return fail(err, errlen, "empty %s", what);
	if (n >= WATCH_MAX_NAME)
		return fail(err, errlen, "%s longer than %d bytes", what, WATCH_MAX_NAME - 1);
	memcpy(dst, src, n + 1);
	return 0;
}

/*
 * "request > DUR" or "status CLASS", then [ "path" PREFIX ] [ "times" N "in"
 * DUR ]. *next is the first word after them.
 */
static int parse_request(char **tok, size_t n, struct watch_rule *r, size_t *next, char *err,
			 size_t errlen)
{
	size_t i;
	int64_t ms;

	if (!strcmp(tok[0], "request")) {
		r->kind = WATCH_REQUEST;
		r->above = true;
		if (n < 3 || strcmp(tok[1], ">") || watch_parse_duration(tok[2], &ms))
			return fail(err, errlen, "'request' needs '>' and a duration, e.g. request > 500ms");
		r->threshold = (double)ms;
		i = 3;
	} else {
		const char *c = n > 1 ? tok[1] : "";
		uint32_t code;

		r->kind = WATCH_STATUS;
		if (strlen(c) == 3 && c[0] >= '1' && c[0] <= '5' && !strcmp(c + 1, "xx")) {
			r->status_lo = (c[0] - '0') * 100;
			r->status_hi = r->status_lo + 99;
		} else if (strlen(c) == 3 && !ct_parse_u32(c, 10, &code) && code >= 100 && code <= 599) {
			r->status_lo = r->status_hi = (int)code;
		} else {
			return fail(err, errlen, "'status' needs a class or a code: 5xx, 4xx, ..., or e.g. 503");
		}
		i = 2;
	}
	if (i + 1 < n && !strcmp(tok[i], "path")) {
		if (tok[i + 1][0] != '/')
			return fail(err, errlen, "'%s': a path starts with '/', e.g. path /api/", tok[i + 1]);
		if (copy_name(r->path, tok[i + 1], "path", err, errlen))
			return -EINVAL;
		i += 2;
	}
	if (i < n && !strcmp(tok[i], "times")) {
		uint32_t c;

		if (i + 3 >= n || ct_parse_u32(tok[i + 1], 10, &c) || !c || c > WATCH_WINDOW_MAX ||
		    strcmp(tok[i + 2], "in") || watch_parse_duration(tok[i + 3], &r->win_ms) || !r->win_ms)
			return fail(err, errlen, "'times' needs N (1..%d), 'in' and a duration, e.g. times 5 in 10s",
				    WATCH_WINDOW_MAX);
		r->win_n = c;
		i += 4;
	}
	*next = i;
	return 0;
}

int watch_rule_parse(const char *text, struct watch_rule *r, char *err, size_t errlen)
{
	char buf[WATCH_MAX_TEXT * 2 + MAX_TOKENS * 2];
	char *tok[MAX_TOKENS];
	size_t n = 0, i = 0;
	const char *slash;
	int rc;

	memset(r, 0, sizeof(*r));
	if (strlen(text) > WATCH_MAX_TEXT)
		return fail(err, errlen, "rule longer than %d bytes", WATCH_MAX_TEXT);
	rc = tokenize(text, buf, sizeof(buf), tok, &n, err, errlen);
	if (rc)
		return rc;
	if (!n)
		return fail(err, errlen, "empty rule");
	slash = strchr(tok[0], '/');
	if (!strcmp(tok[0], "exit") || !strcmp(tok[0], "crash")) {
		r->kind = tok[0][1] == 'x' ? WATCH_EXIT : WATCH_CRASH;
		i = 1;
	} else if (!strcmp(tok[0], "exception")) {
		r->kind = WATCH_EXCEPTION;
		if (n < 2)
			return fail(err, errlen, "'exception' needs a type name (e.g. System.InvalidOperationException)");
		rc = copy_name(r->name, tok[1], "exception type", err, errlen);
		if (rc)
			return rc;
		i = 2;
		if (n > 3 && !strcmp(tok[2], "message")) {
			rc = copy_name(r->message, tok[3], "exception message", err, errlen);
			if (rc)
				return rc;
			i = 4;
		} else if (!strcmp(r->name, "*")) {
			return fail(err, errlen, "'exception *' needs 'message TEXT' (any type whose message contains TEXT)");
		}
	} else if (!strcmp(tok[0], "cgroup-memory")) {
		const char *u;
		double v;

		r->kind = WATCH_CGROUP_MEM;
		if (n < 3 || (strcmp(tok[1], ">") && strcmp(tok[1], "<")))
			return fail(err, errlen, "'cgroup-memory' needs '>' or '<' and a share of the limit, e.g. 80%%");
		r->above = tok[1][0] == '>';
		if (parse_number(tok[2], &v, &u) || strcmp(u, "%") || v > 100)
			return fail(err, errlen, "'%s': cgroup-memory takes a percentage of the limit (0..100%%)", tok[2]);
		r->threshold = v;
		i = 3;
	} else if (!strcmp(tok[0], "memory-growth")) {
		char size[64];
		size_t tl;

		/* "memory-growth KIND > 8MB/s": KIND is checked by the caller
		 * (the kinds of analyze memory, "native", "total") */
		r->kind = WATCH_MEM_GROWTH;
		if (n < 4 || (strcmp(tok[2], ">") && strcmp(tok[2], "<")))
			return fail(err, errlen, "'memory-growth' needs a kind, '>' or '<' and a rate, e.g. memory-growth native > 8MB/s");
		if (strspn(tok[1], "abcdefghijklmnopqrstuvwxyz_") != strlen(tok[1]))
			return fail(err, errlen, "'%s': not a kind of memory (e.g. native, gc_heap)", tok[1]);
		rc = copy_name(r->name, tok[1], "memory kind", err, errlen);
		if (rc)
			return rc;
		r->above = tok[2][0] == '>';
		tl = strlen(tok[3]);
		if (tl < 3 || tl >= sizeof(size) || strcmp(tok[3] + tl - 2, "/s"))
			return fail(err, errlen, "'%s': memory-growth takes a size a second, e.g. 8MB/s", tok[3]);
		memcpy(size, tok[3], tl - 2);
		size[tl - 2] = 0;
		if (watch_parse_size(size, &r->threshold))
			return fail(err, errlen, "'%s': memory-growth takes a size a second, e.g. 8MB/s", tok[3]);
		i = 4;
	} else if (!strcmp(tok[0], "gc-pause")) {
		int64_t ms;

		r->kind = WATCH_GC_PAUSE;
		r->above = true;
		if (n < 3 || strcmp(tok[1], ">") || watch_parse_duration(tok[2], &ms))
			return fail(err, errlen, "'gc-pause' needs '>' and a duration, e.g. gc-pause > 50ms");
		r->threshold = (double)ms;
		i = 3;
	} else if (!strcmp(tok[0], "request") || !strcmp(tok[0], "status")) {
		rc = parse_request(tok, n, r, &i, err, errlen);
		if (rc)
			return rc;
	} else if (!strcmp(tok[0], "request-rate")) {
		/* the hosting layer's own EventCounter: requests in the last 1 s */
		double v;
		const char *u;

		r->kind = WATCH_COUNTER;
		memcpy(r->source, "Microsoft.AspNetCore.Hosting", sizeof("Microsoft.AspNetCore.Hosting"));
		memcpy(r->name, "requests-per-second", sizeof("requests-per-second"));
		if (n < 3 || (strcmp(tok[1], ">") && strcmp(tok[1], "<")) || parse_number(tok[2], &v, &u) || *u)
			return fail(err, errlen, "'request-rate' needs '>' or '<' and requests per second, e.g. request-rate > 1000");
		r->above = tok[1][0] == '>';
		r->threshold = v;
		i = 3;
	} else if (!strcmp(tok[0], "cpu") || !strcmp(tok[0], "rss") || slash ||
		   !strcmp(tok[0], "threadpool-queue") || !strcmp(tok[0], "exception-rate") ||
		   !strcmp(tok[0], "meter")) {
		const char *th, *u;
		double v;

		if (!strcmp(tok[0], "meter")) {
			/* "meter METER/INSTRUMENT OP N": the rest as a counter */
			if (n < 2 || !strchr(tok[1], '/'))
				return fail(err, errlen, "'meter' needs METER/INSTRUMENT, e.g. meter System.Runtime/dotnet.gc.heap.total_allocated");
			r->meter = true;
			memmove(&tok[0], &tok[1], (n - 1) * sizeof(tok[0]));
			n--;
			slash = strchr(tok[0], '/');
		}
		if (!strcmp(tok[0], "cpu"))
			r->kind = WATCH_CPU;
		else if (!strcmp(tok[0], "rss"))
			r->kind = WATCH_RSS;
		else if (!strcmp(tok[0], "threadpool-queue") && !r->meter) {
			/* the runtime's own counter of work items waiting */
			r->kind = WATCH_COUNTER;
			memcpy(r->source, "System.Runtime", sizeof("System.Runtime"));
			memcpy(r->name, "threadpool-queue-length", sizeof("threadpool-queue-length"));
		} else if (!strcmp(tok[0], "exception-rate") && !r->meter) {
			/* first-chance exceptions in the last 1 s interval: per second */
			r->kind = WATCH_COUNTER;
			memcpy(r->source, "System.Runtime", sizeof("System.Runtime"));
			memcpy(r->name, "exception-count", sizeof("exception-count"));
		} else {
			char src[WATCH_MAX_NAME];
			size_t sl = (size_t)(slash - tok[0]);

			r->kind = WATCH_COUNTER;
			if (!sl || sl >= sizeof(src) || !slash[1] || strchr(slash + 1, '/'))
				return fail(err, errlen, "'%s': a counter is SOURCE/NAME, e.g. System.Runtime/gc-heap-size", tok[0]);
			memcpy(src, tok[0], sl);
			src[sl] = 0;
			if (copy_name(r->source, src, "counter source", err, errlen) ||
			    copy_name(r->name, slash + 1, "counter name", err, errlen))
				return -EINVAL;
		}
		if (n < 3 || (strcmp(tok[1], ">") && strcmp(tok[1], "<")))
			return fail(err, errlen, "'%s' needs '>' or '<' and a threshold", tok[0]);
		r->above = tok[1][0] == '>';
		th = tok[2];
		if (r->kind == WATCH_CPU) {
			if (parse_number(th, &v, &u) || (*u && strcmp(u, "%")))
				return fail(err, errlen, "'%s': cpu takes a percentage of one core, e.g. 80%%", th);
			if (v > 100000)
				return fail(err, errlen, "'%s': cpu percentage too large", th);
			r->threshold = v;
		} else if (r->kind == WATCH_RSS) {
			if (watch_parse_size(th, &r->threshold))
				return fail(err, errlen, "'%s': rss takes a size, e.g. 500MB", th);
		} else {
			if (parse_number(th, &v, &u))
				return fail(err, errlen, "'%s': not a number", th);
			if (*u) {
				if (watch_parse_size(th, &r->threshold))
					return fail(err, errlen, "'%s': unknown unit (sizes: B, KB, MB, GB)", th);
				r->unit_bytes = true;
			} else {
				r->threshold = v;
			}
		}
		i = 3;
	} else {
		return fail(err, errlen, "'%s': unknown trigger (cpu, rss, SOURCE/COUNTER, meter, threadpool-queue, exception-rate, cgroup-memory, memory-growth, exception, gc-pause, exit, crash, request, status, request-rate)", tok[0]);
	}
	r->cooldown_ms = WATCH_DEFAULT_COOLDOWN_MS;
	r->cooldown_default = true;
	while (i < n) {
		const char *w = tok[i];

		if (i + 1 >= n)
			return fail(err, errlen, "'%s': expected 'for DUR', 'cooldown DUR', 'count N' or 'do ACTION'", w);
		if (!strcmp(w, "do")) {
			char aerr[200];

			if (r->nactions == WATCH_RULE_ACTIONS)
				return fail(err, errlen, "at most %d 'do' actions in a rule", WATCH_RULE_ACTIONS);
			if (watch_action_parse(tok[i + 1], &r->actions[r->nactions], aerr, sizeof(aerr)))
				return fail(err, errlen, "'do %s': %s", tok[i + 1], aerr);
			r->nactions++;
		} else if (!strcmp(w, "for")) {
			if (r->kind == WATCH_EXCEPTION || r->kind == WATCH_EXIT || r->kind == WATCH_GC_PAUSE ||
			    r->kind == WATCH_CRASH || r->kind == WATCH_REQUEST || r->kind == WATCH_STATUS)
				return fail(err, errlen, "'for' does not apply to '%s' (it is an instant)", watch_kind_name(r->kind));
			if (watch_parse_duration(tok[i + 1], &r->for_ms))
				return fail(err, errlen, "'%s': not a duration (e.g. 500ms, 2s, 1m)", tok[i + 1]);
		} else if (!strcmp(w, "cooldown")) {
			if (watch_parse_duration(tok[i + 1], &r->cooldown_ms))
				return fail(err, errlen, "'%s': not a duration (e.g. 500ms, 2s, 1m)", tok[i + 1]);
			r->cooldown_default = false;
		} else if (!strcmp(w, "count")) {
			uint32_t c;

			if (ct_parse_u32(tok[i + 1], 10, &c) || !c || c > 1000000)
				return fail(err, errlen, "'%s': count is 1..1000000", tok[i + 1]);
			r->count = c;
		} else {
			return fail(err, errlen, "'%s': expected 'for', 'cooldown', 'count' or 'do'", w);
		}
		i += 2;
	}
	return 0;
}

bool watch_rule_test(const struct watch_rule *r, double v, const char *units)
{
	if (isnan(v))
		return false;
	if (r->kind == WATCH_COUNTER && r->unit_bytes) {
		if (!units)
			return false;
		if (!strcmp(units, "MB"))
			v *= 1e6;
		else if (!strcmp(units, "KB"))
			v *= 1e3;
		else if (!strcmp(units, "GB"))
			v *= 1e9;
		else if (strcmp(units, "B") && strcmp(units, "bytes") && strcmp(units, "By"))
			return false;
	}
	return r->above ? v > r->threshold : v < r->threshold;
}

enum watch_verdict watch_state_feed(const struct watch_rule *r, struct watch_state *s,
				    int64_t now_ms, bool cond, bool busy)
{
	if (!cond) {
		s->holding = false;
		return WATCH_QUIET;
	}
	if (!s->holding) {
		s->holding = true;
		s->since_ms = now_ms;
	}
	if (now_ms - s->since_ms < r->for_ms)
		return WATCH_QUIET;
	if (r->count && s->fired >= r->count) {
		s->since_ms = now_ms;
		return WATCH_EXHAUSTED;
	}
	if (s->fired_ever && now_ms - s->last_fire_ms < r->cooldown_ms) {
		s->suppressed++;
		s->since_ms = now_ms;
		return WATCH_COOLDOWN;
	}
	if (busy) {
		s->busy++;
		s->since_ms = now_ms;
		return WATCH_BUSY;
	}
	s->said = false;
	s->fired_ever = true;
	s->last_fire_ms = now_ms;
	s->fired++;
	s->since_ms = now_ms; /* must hold for_ms again */
	return WATCH_FIRE;
}

bool watch_exception_match(const struct watch_rule *r, const char *type)
{
	size_t lt = strlen(type), ln = strlen(r->name);

	if (!strcmp(r->name, "*") || !strcmp(r->name, type))
		return true;
	/* a nested type: the runtime's event names only the innermost one */
	return lt && !strpbrk(type, ".+") && ln > lt + 1 && r->name[ln - lt - 1] == '+' &&
	       !strcmp(r->name + ln - lt, type);
}

int watch_window_add(const struct watch_rule *r, struct watch_state *s, int64_t at_ms)
{
	int64_t oldest;

	if (r->win_n <= 1)
		return 1;
	if (!s->win) {
		s->win = calloc(r->win_n, sizeof(*s->win));
		if (!s->win)
			return -ENOMEM;
	}
	/* a ring of the last win_n times; win_head is the next slot */
	s->win[s->win_head] = at_ms;
	s->win_head = (s->win_head + 1) % r->win_n;
	if (s->win_len < r->win_n)
		s->win_len++;
	if (s->win_len < r->win_n)
		return 0;
	oldest = s->win[s->win_head]; /* the full ring: the next slot holds the oldest */
	if (at_ms - oldest > r->win_ms)
		return 0;
	s->win_len = 0;
	return 1;
}

void watch_state_release(struct watch_state *s)
{
	free(s->win);
	s->win = NULL;
	s->win_len = s->win_head = 0;
}

int watch_action_parse(const char *text, struct watch_action *a, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		enum watch_action_kind kind;
		bool dur;
	} kinds[] = {
		{ "profile", WATCH_ACT_PROFILE, true }, { "stacks", WATCH_ACT_STACKS, false },
		{ "trace", WATCH_ACT_TRACE, true },     { "dump", WATCH_ACT_DUMP, false },
		{ "gcdump", WATCH_ACT_GCDUMP, false },
	};
	const char *colon = strchr(text, ':');
	size_t nl = colon ? (size_t)(colon - text) : strlen(text), i;

	memset(a, 0, sizeof(*a));
	if (strlen(text) >= WATCH_MAX_TEXT)
		return fail(err, errlen, "action longer than %d bytes", WATCH_MAX_TEXT - 1);
	if (nl == 4 && !strncmp(text, "exec", 4)) {
		if (!colon || !colon[1])
			return fail(err, errlen, "'exec' needs a command: exec:COMMAND");
		a->kind = WATCH_ACT_EXEC;
		memcpy(a->cmd, colon + 1, strlen(colon + 1) + 1);
		return 0;
	}
	if (nl == 7 && !strncmp(text, "analyze", 7)) {
		const char *name = colon ? colon + 1 : "", *c2 = strchr(name, ':');
		size_t len = c2 ? (size_t)(c2 - name) : strlen(name);

		if (!len)
			return fail(err, errlen, "'analyze' needs an analyzer: analyze:NAME[:DUR] (clrtap analyze --list)");
		if (len > 31)
			return fail(err, errlen, "analyzer name longer than 31 bytes");
		for (i = 0; i < len; i++)
			if (name[i] < 'a' || name[i] > 'z')
				return fail(err, errlen, "'%.*s': an analyzer name is lower-case letters (clrtap analyze --list)",
					    (int)len, name);
		a->kind = WATCH_ACT_ANALYZE;
		memcpy(a->cmd, name, len);
		a->cmd[len] = 0;
		if (c2 && (watch_parse_duration(c2 + 1, &a->duration_ms) || !a->duration_ms))
			return fail(err, errlen, "'%s': not a duration (e.g. 5s)", c2 + 1);
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (strlen(kinds[i].name) != nl || strncmp(text, kinds[i].name, nl))
			continue;
		a->kind = kinds[i].kind;
		if (colon) {
			if (!kinds[i].dur)
				return fail(err, errlen, "'%s' takes no argument", kinds[i].name);
			if (watch_parse_duration(colon + 1, &a->duration_ms) || !a->duration_ms)
				return fail(err, errlen, "'%s': not a duration (e.g. 5s)", colon + 1);
		}
		return 0;
	}
	return fail(err, errlen, "unknown action (profile[:DUR], stacks, trace[:DUR], dump, gcdump, analyze:NAME[:DUR], exec:COMMAND)");
}
