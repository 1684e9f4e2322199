/* SPDX-License-Identifier: MIT */
/*
 * result.c - the probe task's result as JSON (docs/tasks/probe.md): the
 * methods and their counts, the call records (arguments split by the
 * method's signature, the return value, the latency, the stack as frames in
 * the one frame shape), the budget, and the statements.
 */
#include "common/compat.h"

#include "common/json.h"
#include "probe/probe.h"

/* The declaring type of "Ns.Type::Method" into buf. */
static const char *declaring_type(const char *name, char *buf, size_t len)
{
	const char *c = strstr(name, "::");

	snprintf(buf, len, "%.*s", c ? (int)(c - name) : (int)strlen(name), name);
	return buf;
}

static void arg(struct ct_json *j, const char *name, const char *type, const char *v, size_t vlen)
{
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "name", name);
	if (type)
		ct_json_kv_str(j, "type", type);
	else
		ct_json_kv_null(j, "type");
	ct_json_key(j, "value");
	ct_json_strn(j, v, vlen);
	ct_json_obj_end(j);
}

/*
 * "this=0x1, a=5, b=\"x\"" split at the names the signature gives, in its
 * order; false when the text does not follow them (then it is one value).
 */
static bool split_args(struct ct_json *j, const struct probe_method *m, const char *text)
{
	const struct pe_sig *sig = m->psig;
	char names[PROBE_MAX_ARGS + 1][128], tbuf[512];
	const char *types[PROBE_MAX_ARGS + 1];
	size_t n = 0, i;
	const char *p = text;

	if (!sig)
		return false;
	if (sig->has_this && !sig->explicit_this) {
		snprintf(names[n], sizeof(names[0]), "this");
		types[n++] = declaring_type(m->name, tbuf, sizeof(tbuf));
	}
	for (i = 0; i < sig->nparams && n <= PROBE_MAX_ARGS; i++) {
		const char *pn = sig->param_names && sig->param_names[i] && sig->param_names[i][0] ?
					 sig->param_names[i] : NULL;

		if (pn)
			snprintf(names[n], sizeof(names[0]), "%s", pn);
		else
			snprintf(names[n], sizeof(names[0]), "arg%zu", i);
		types[n++] = sig->params[i].name;
	}
	if (i < sig->nparams)
		return false;
	/* check the whole text first: nothing is written unless every name is where it should be */
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		if (strncmp(p, names[i], l) || p[l] != '=')
			return false;
		p += l + 1;
		if (i + 1 < n) {
			char next[136];
			const char *q;

			snprintf(next, sizeof(next), ", %s=", names[i + 1]);
			if (!(q = strstr(p, next)))
				return false;
			p = q + 2;
		}
	}
	if (!n && text[0])
		return false;
	ct_json_arr_begin(j);
	for (p = text, i = 0; i < n; i++) {
		const char *v = p + strlen(names[i]) + 1, *end;

		if (i + 1 < n) {
			char next[136];

			snprintf(next, sizeof(next), ", %s=", names[i + 1]);
			end = strstr(v, next);
		} else {
			end = v + strlen(v);
		}
		arg(j, names[i], types[i], v, (size_t)(end - v));
		p = end + 2;
	}
	ct_json_arr_end(j);
	return true;
}

static void stack(struct ct_json *j, const char *s)
{
	const char *p = s, *e;

	ct_json_arr_begin(j);
	while (*p) {
		char fr[1024];

		e = strstr(p, " <- ");
		snprintf(fr, sizeof(fr), "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
		ct_json_frame(j, fr);
		if (!e)
			break;
		p = e + 4;
	}
	ct_json_arr_end(j);
}

static void record(struct ct_json *j, const struct probe_rec *c)
{
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "method", c->method ? c->method->name : c->method_name);
	ct_json_kv_str(j, "tier", c->tier);
	if (c->tid)
		ct_json_kv_u64(j, "tid", c->tid);
	else
		ct_json_kv_null(j, "tid");
	ct_json_kv_double(j, "t_s", c->t_s);
	ct_json_key(j, "args");
	if (!c->args)
		ct_json_null(j);
	else if (!c->method || !split_args(j, c->method, c->args)) {
		/* the text as the line shows it (a ReJIT record, or names not where expected) */
		ct_json_arr_begin(j);
		arg(j, "", NULL, c->args, strlen(c->args));
		ct_json_arr_end(j);
	}
	if (c->ret) {
		ct_json_kv_obj_begin(j, "ret");
		if (c->method && c->method->ret)
			ct_json_kv_str(j, "type", c->method->ret);
		else
			ct_json_kv_null(j, "type");
		ct_json_kv_str(j, "value", c->ret);
		ct_json_obj_end(j);
	} else {
		ct_json_kv_null(j, "ret");
	}
	if (c->has_entry && c->has_ret)
		ct_json_kv_u64(j, "latency_ns", c->latency_ns);
	else
		ct_json_kv_null(j, "latency_ns");
	ct_json_key(j, "stack");
	if (c->stack)
		stack(j, c->stack);
	else
		ct_json_null(j);
	ct_json_kv_bool(j, "entry_seen", c->has_entry || !c->method);
	ct_json_obj_end(j);
}

/* The tier of the method's newest code, or NULL. */
static const char *newest_tier(const struct probe_method *m)
{
	size_t v, best = 0;

	if (!m->ncode)
		return NULL;
	for (v = 1; v < m->ncode; v++)
		if (probe_code_newer(m->code, v, best))
			best = v;
	return m->code[best].tier;
}

static void methods(struct ct_json *j, const struct probe_result *r, uint64_t *total)
{
	size_t i;

	ct_json_kv_arr_begin(j, "methods");
	for (i = 0; i < r->nmethods; i++) {
		const struct probe_result_method *rm = &r->methods[i];
		const char *tier = newest_tier(rm->m);

		ct_json_obj_begin(j);
		ct_json_kv_str(j, "name", rm->m->name);
		ct_json_kv_str(j, "signature", rm->m->sig);
		if (tier)
			ct_json_kv_str(j, "tier", tier);
		else
			ct_json_kv_null(j, "tier");
		if (rm->counted) {
			/* the count clrtap saw; the statements say what limits it */
			ct_json_kv_u64(j, "calls", rm->calls);
			ct_json_kv_u64(j, "calls_native", rm->calls_native);
			ct_json_kv_u64(j, "calls_rejit", rm->calls_rejit);
			ct_json_kv_bool(j, "rejit_counts_final", rm->rejit_final);
			ct_json_kv_double(j, "counted_from_s", rm->counted_from_s);
			if (rm->counted_until_s >= 0)
				ct_json_kv_double(j, "counted_until_s", rm->counted_until_s);
			else
				ct_json_kv_null(j, "counted_until_s");
			*total += rm->calls;
		} else {
			/* not counted: a 0 would be a guess (a statement says why) */
			ct_json_kv_null(j, "calls");
			ct_json_kv_null(j, "counted_from_s");
		}
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

static void cost(struct ct_json *j, const struct probe_result *r)
{
	ct_json_kv_obj_begin(j, "cost");
	ct_json_kv_u64(j, "breakpoint_hit_ns", r->hw_ns);
	ct_json_kv_bool(j, "breakpoint_hit_measured", r->hw_measured);
	ct_json_kv_u64(j, "uprobe_hit_ns", r->up_ns);
	ct_json_kv_bool(j, "uprobe_hit_measured", r->up_measured);
	ct_json_kv_u64(j, "rejit_call_ns", r->rejit_call_ns);
	ct_json_kv_double(j, "cost_ns", r->cost_ns);
	ct_json_kv_double(j, "seconds", r->seconds);
	ct_json_kv_double(j, "share_pct", r->share_pct);
	ct_json_kv_double(j, "peak_share_pct", r->peak_share_pct);
	ct_json_kv_str(j, "action", r->action);
	ct_json_obj_end(j);
}

int probe_result_json(const struct probe_result *r, struct strbuf *sb)
{
	struct ct_json j;
	uint64_t total = 0;
	size_t i;

	ct_json_init(&j, sb);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "task", "probe");
	ct_json_kv_i64(&j, "pid", r->pid);
	ct_json_kv_str(&j, "pattern", r->pattern);
	ct_json_kv_str(&j, "mechanism", r->mechanism);
	methods(&j, r, &total);
	ct_json_kv_arr_begin(&j, "calls");
	for (i = 0; i < r->nrecs; i++)
		record(&j, &r->recs[i]);
	ct_json_arr_end(&j);
	ct_json_kv_u64(&j, "calls_total", total);
	ct_json_kv_u64(&j, "calls_shown", r->nrecs);
	ct_json_kv_u64(&j, "calls_cap", r->recs ? r->max_records : 0);
	ct_json_kv_double(&j, "budget_pct", r->budget_pct);
	ct_json_kv_bool(&j, "over_budget", r->over_budget);
	ct_json_kv_bool(&j, "handed_to_rejit", r->handed_to_rejit);
	ct_json_kv_bool(&j, "rejit_args", r->handed_to_rejit && r->rejit_args);
	cost(&j, r);
	ct_json_kv_u64(&j, "lost_events", r->lost);
	ct_json_kv_arr_begin(&j, "statements");
	for (i = 0; i < r->nstatements; i++)
		ct_json_str(&j, r->statements[i]);
	if (r->recs && r->calls_total > r->nrecs) {
		char cap[160];

		snprintf(cap, sizeof(cap), "more calls than records kept (at most %zu, %u MiB of text): "
			 "the first %zu are shown", r->max_records, PROBE_RECORDS_BYTES >> 20, r->nrecs);
		ct_json_str(&j, cap);
	}
	ct_json_arr_end(&j);
	ct_json_kv_bool(&j, "partial", r->partial);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}
