/* SPDX-License-Identifier: MIT */
/*
 * plan.c - what a session of each kind runs: the clrtap command lines, with
 * every parameter checked against the kind's list, and artifacts under fixed
 * names in the session's own directory (no name comes from the request).
 */
#include "common/compat.h"

#include <math.h>

#include "analyze/analyze.h"
#include "probe/probe.h"
#include "serve/serve.h"

struct kind_def {
	const char *kind;
	const char *params; /* accepted keys, space-separated */
	double default_duration;
};

static const struct kind_def kinds[] = {
	{ "analyze", "analyzer duration", 5 },
	{ "counters", "duration counters interval", 5 },
	{ "doctor", "duration", 10 },
	{ "dump", "type", 0 },
	{ "gcdump", "", 0 },
	{ "probe", "method duration args ret latency count budget no_rejit", 5 },
	{ "profile", "duration engine frequency", 3 },
	{ "stacks", "", 0 },
	{ "trace", "duration profile providers", 3 },
};

const char *serve_kinds(void)
{
	return "analyze, counters, doctor, dump, gcdump, probe, profile, stacks, trace";
}

static int add(struct serve_plan *p, struct serve_step *st, const char *fmt, ...) PRINTF(3, 4);
static int add(struct serve_plan *p, struct serve_step *st, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	if (st->argc + 1 >= SERVE_MAX_ARGV)
		return -E2BIG;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	if (strbuf_add(&p->arena, &s, sizeof(s))) {
		free(s);
		return -ENOMEM;
	}
	st->argv[st->argc++] = s;
	st->argv[st->argc] = NULL;
	return 0;
}

void serve_plan_release(struct serve_plan *p)
{
	size_t i, n = p->arena.len / sizeof(char *);

	for (i = 0; i < n; i++) {
		char *s;

		memcpy(&s, p->arena.buf + i * sizeof(char *), sizeof(s));
		free(s);
	}
	strbuf_release(&p->arena);
	memset(p, 0, sizeof(*p));
}

static bool in_list(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, " ");

		if (n == wl && !strncmp(p, word, n))
			return true;
		p += n;
		while (*p == ' ')
			p++;
	}
	return false;
}

/* Seconds: digits with up to 3 decimals, 0 < d <= 3600. */
static int parse_duration(const char *s, double *d)
{
	size_t i, dot = 0, ndec = 0;
	bool seen = false;

	if (!*s || strlen(s) > 12)
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] == '.') {
			if (dot || i == 0)
				return -EINVAL;
			dot = i;
		} else if (s[i] >= '0' && s[i] <= '9') {
			seen = true;
			if (dot)
				ndec++;
		} else {
			return -EINVAL;
		}
	}
	if (!seen || ndec > 3 || (dot && ndec == 0))
		return -EINVAL;
	*d = strtod(s, NULL);
	if (!(*d > 0) || *d > 3600)
		return -EINVAL;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v)
{
	unsigned long x = 0;
	size_t i;

	if (!*s || strlen(s) > 9)
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		x = x * 10 + (unsigned long)(s[i] - '0');
	}
	if (x < lo || x > hi)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

static bool one_of(const char *s, const char *list)
{
	return in_list(list, s);
}

/* Only characters of names and specs; never a leading '-' (an option). */
static bool chars_ok(const char *s, const char *extra)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || strchr(extra, c)))
			return false;
	}
	return true;
}

static bool truthy(const char *v)
{
	return v && !strcmp(v, "true");
}

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), -EINVAL)

int serve_plan_build(struct serve_plan *p, const char *exe, const char *dir,
		     const struct serve_session_req *req, char *why, size_t why_len)
{
	const struct kind_def *k = NULL;
	struct serve_step *st;
	const char *v;
	char dur[32] = "";
	size_t i;
	int err = 0;

	memset(p, 0, sizeof(*p));
	strbuf_init(&p->arena, 1 << 20);
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (!strcmp(kinds[i].kind, req->kind))
			k = &kinds[i];
	}
	if (!k)
		return WHY("unknown kind (kinds: %s)", serve_kinds());
	for (i = 0; i < req->nparams; i++) {
		if (!in_list(k->params, req->params[i].key))
			return WHY("unknown param '%s' for %s (accepted: %s)", req->params[i].key,
				   k->kind, *k->params ? k->params : "none");
	}
	p->duration_s = k->default_duration;
	if ((v = serve_param_get(req, "duration"))) {
		if (parse_duration(v, &p->duration_s))
			return WHY("duration must be a number of seconds, 0 < d <= 3600, at most 3 decimals");
	}
	if (p->duration_s > 0)
		snprintf(dur, sizeof(dur), "%.3f", p->duration_s);
	st = &p->steps[0];
	p->nsteps = 1;
#define A(...) do { if ((err = add(p, st, __VA_ARGS__))) goto oom; } while (0)
	A("%s", exe);
	if (!strcmp(k->kind, "profile")) {
		unsigned hz;

		A("profile");
		A("-p");
		A("%d", (int)req->pid);
		A("-d");
		A("%s", dur);
		A("-o");
		A("%s/profile.folded", dir);
		if ((v = serve_param_get(req, "engine"))) {
			if (!one_of(v, "auto perf eventpipe"))
				return WHY("engine must be auto, perf or eventpipe");
			A("--engine");
			A("%s", v);
		}
		if ((v = serve_param_get(req, "frequency"))) {
			if (parse_uint(v, 1, 10000, &hz))
				return WHY("frequency must be 1..10000");
			A("-F");
			A("%u", hz);
		}
		snprintf(p->folded, sizeof(p->folded), "profile.folded");
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "analyze")) {
		/* in-process: lib/analyze, the calls of `clrtap analyze` */
		char names[512];
		const struct an_analyzer *a;
		size_t n = 0;

		p->inproc = SERVE_INPROC_ANALYZE;
		p->nsteps = 0;
		names[0] = 0;
		for (i = 0; (a = analyze_analyzer_at(i)); i++)
			n += (size_t)snprintf(names + CT_MIN(n, sizeof(names) - 1),
					      sizeof(names) - CT_MIN(n, sizeof(names) - 1), "%s%s",
					      i ? ", " : "", a->name);
		v = serve_param_get(req, "analyzer");
		if (!v)
			return WHY("analyze needs params.analyzer (%s)", names);
		a = analyze_analyzer_find(v);
		if (!a || strlen(a->name) >= sizeof(p->analyzer))
			return WHY("unknown analyzer (analyzers: %s)", names);
		snprintf(p->analyzer, sizeof(p->analyzer), "%s", a->name);
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "doctor")) {
		/* in-process: lib/analyze analyze_doctor_run, as `clrtap doctor --json` */
		p->inproc = SERVE_INPROC_DOCTOR;
		p->nsteps = 0;
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "trace")) {
		/* in-process: the calls of `trace collect` and `trace report --json` */
		p->inproc = SERVE_INPROC_TRACE;
		p->nsteps = 0;
		if ((v = serve_param_get(req, "profile"))) {
			if (!chars_ok(v, "-") || strlen(v) > 64)
				return WHY("profile must be a profile name (clrtap trace collect --list-profiles)");
			snprintf(p->trace_profile, sizeof(p->trace_profile), "%s", v);
		}
		if ((v = serve_param_get(req, "providers"))) {
			if (!chars_ok(v, "-:,=*"))
				return WHY("providers: only letters, digits and . _ - : , = * are accepted");
			snprintf(p->providers, sizeof(p->providers), "%s", v);
		}
		if (!*p->trace_profile && !*p->providers)
			snprintf(p->trace_profile, sizeof(p->trace_profile), "cpu-sampling");
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "counters")) {
		/* in-process: lib/counters, the same calls and document as `counters collect` */
		p->inproc = SERVE_INPROC_COUNTERS;
		p->nsteps = 0;
		p->interval = 1;
		snprintf(p->counters, sizeof(p->counters), "System.Runtime");
		if ((v = serve_param_get(req, "counters"))) {
			if (!chars_ok(v, "-,[]"))
				return WHY("counters: syntax is Source[name,...],... (letters, digits, . _ - , [ ])");
			snprintf(p->counters, sizeof(p->counters), "%s", v);
		}
		if ((v = serve_param_get(req, "interval"))) {
			if (parse_uint(v, 1, 3600, &p->interval))
				return WHY("interval must be 1..3600 seconds");
		}
		snprintf(p->report, sizeof(p->report), "counters.json");
	} else if (!strcmp(k->kind, "stacks")) {
		/* in-process: lib/stacks, the same calls as `clrtap stacks --json` */
		p->inproc = SERVE_INPROC_STACKS;
		p->nsteps = 0;
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "probe")) {
		const char *b;

		v = serve_param_get(req, "method");
		if (!v)
			return WHY("probe needs params.method ('Ns.Type::Method')");
		if (!chars_ok(v, ":`<>,()[]*") || !strstr(v, "::"))
			return WHY("method must look like Ns.Type::Method (letters, digits, . _ : ` < > , ( ) [ ] *)");
		A("probe");
		A("-p");
		A("%d", (int)req->pid);
		A("-d");
		A("%s", dur);
		if (truthy(serve_param_get(req, "count"))) {
			A("--count");
		} else {
			if (truthy(serve_param_get(req, "ret")))
				A("--ret");
			if (truthy(serve_param_get(req, "latency")))
				A("--latency");
		}
		if ((b = serve_param_get(req, "budget"))) {
			double pct;

			if (probe_budget_parse(b, &pct))
				return WHY("budget must be a share of one core in percent, more than 0 "
					   "and at most 1000 (\"2%%\", \"0.5\")");
			A("--budget");
			A("%s", b);
		}
		if (truthy(serve_param_get(req, "no_rejit")))
			A("--no-rejit");
		A("--");
		A("%s", v);
		snprintf(st->stdout_name, sizeof(st->stdout_name), "probe.txt");
		p->stream_events = true;
	} else if (!strcmp(k->kind, "dump")) {
		v = serve_param_get(req, "type");
		if (v && !one_of(v, "mini heap triage full"))
			return WHY("type must be mini, heap, triage or full");
		A("dump");
		A("-p");
		A("%d", (int)req->pid);
		A("--type");
		A("%s", v ? v : "mini");
		A("-o");
		A("%s/core.dump", dir);
		A("--json");
		snprintf(st->stdout_name, sizeof(st->stdout_name), "report.json");
		snprintf(p->report, sizeof(p->report), "report.json");
	} else if (!strcmp(k->kind, "gcdump")) {
		A("gcdump");
		A("collect");
		A("-p");
		A("%d", (int)req->pid);
		A("-o");
		A("%s/heap.gcdump", dir);
		st = &p->steps[1];
		p->nsteps = 2;
		A("%s", exe);
		A("gcdump");
		A("report");
		A("%s/heap.gcdump", dir);
		A("--json");
		A("--top");
		A("0");
		snprintf(st->stdout_name, sizeof(st->stdout_name), "report.json");
		snprintf(p->report, sizeof(p->report), "report.json");
	}
#undef A
	return 0;
oom:
	return WHY("%s", strerror(-err));
}

/* ----- profile report ----- */

int serve_folded_to_json(const char *folded, size_t len, struct strbuf *out)
{
	struct ct_json j;
	const char *p = folded, *end = folded + len;
	uint64_t total = 0;

	ct_json_init(&j, out);
	ct_json_obj_begin(&j);
	ct_json_kv_arr_begin(&j, "stacks");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *sp = le;
		uint64_t count = 0, mul = 1;

		/* "frame;frame;frame COUNT" : the count is after the last blank */
		while (sp > p && sp[-1] >= '0' && sp[-1] <= '9') {
			sp--;
			if (le - sp > 19)
				break;
		}
		if (sp > p && sp < le && sp[-1] == ' ' && le - sp <= 19) {
			const char *d;
			const char *f = p, *fe = sp - 1;

			for (d = le; d > sp; d--) {
				count += (uint64_t)(d[-1] - '0') * mul;
				mul *= 10;
			}
			ct_json_obj_begin(&j);
			ct_json_kv_arr_begin(&j, "frames");
			while (f < fe) {
				const char *semi = memchr(f, ';', (size_t)(fe - f));
				const char *e = semi ? semi : fe;

				ct_json_strn(&j, f, (size_t)(e - f));
				f = semi ? semi + 1 : fe;
			}
			ct_json_arr_end(&j);
			ct_json_kv_u64(&j, "count", count);
			ct_json_obj_end(&j);
			total += count;
		}
		p = nl ? nl + 1 : end;
	}
	ct_json_arr_end(&j);
	ct_json_kv_u64(&j, "total", total);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}
