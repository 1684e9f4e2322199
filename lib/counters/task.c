/* SPDX-License-Identifier: MIT */
/*
 * task.c - the counters task: counters_run for a while into the document of
 * `counters collect --format json`, {"pid","interval_sec","values":[...]}
 * (docs/tasks/counters.md), plus "task", "partial" and "values_total".
 */
#include "common/compat.h"

#include "common/exitcode.h"
#include "counters/counters.h"
#include "ipc/ipc.h"
#include "proc/proc.h"
#include "task/task.h"

const struct task_param counters_task_params[] = {
	{ "duration", TASK_P_DURATION, "5", 1, 3600, NULL, "how long to read counters", 0 },
	{ "interval", TASK_P_INT, "1", 1, 3600, NULL, "publishing interval in seconds", 0 },
	{ "counters", TASK_P_STRING, "System.Runtime", 0, 512, "-,[]._",
	  "EventSources, e.g. System.Runtime[cpu-usage,alloc-rate]", 0 },
};
const size_t counters_task_nparams = ARRAY_SIZE(counters_task_params);

struct ctask {
	struct ct_json j;
};

static int add_value(void *ctx, const struct counters_value *v, const char *ts)
{
	struct ctask *c = ctx;

	counters_json_value(&c->j, v, ts);
	return c->j.err;
}

int task_run_counters(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r)
{
	struct counters_spec spec = { 0 };
	struct counters_run_opts o = { 0 };
	struct counters_run_result cr;
	struct ctask c;
	struct proc_target t;
	struct ipc_endpoint ep;
	volatile sig_atomic_t local = 0;
	const char *list = task_arg(a, "counters")->s;
	int err;

	err = counters_spec_add(&spec, list, false);
	if (err) {
		task_fail(r, -EINVAL, "bad counters '%s': %s", list,
			  err == -E2BIG ? "too many or too long names" : "syntax is Source[name,...],...");
		r->exit_code = EXIT_USAGE;
		goto out;
	}
	if (task_target(a, r, &t, &ep, 5000))
		goto out;
	ct_json_init(&c.j, &r->json);
	ct_json_obj_begin_lines(&c.j);
	ct_json_kv_str(&c.j, "task", "counters");
	ct_json_kv_i64(&c.j, "pid", t.pid);
	ct_json_kv_i64(&c.j, "interval_sec", task_arg(a, "interval")->i);
	ct_json_key(&c.j, "values");
	ct_json_arr_begin_lines(&c.j);
	o.spec = &spec;
	o.interval = (unsigned)task_arg(a, "interval")->i;
	o.duration_ms = (int64_t)(task_arg(a, "duration")->d * 1000);
	o.stop = task_stop_flag(ctx, &local);
	o.value = add_value;
	o.ctx = &c;
	counters_run(&ep, &o, &cr);
	ct_json_arr_end(&c.j);
	ct_json_kv_u64(&c.j, "values_total", cr.nvalues);
	ct_json_kv_bool(&c.j, "partial", cr.err && !cr.nothing_read);
	ct_json_obj_end(&c.j);
	if ((err = ct_json_finish(&c.j))) {
		task_fail(r, err, "cannot make the counters document: %s", strerror(-err));
		strbuf_reset(&r->json);
	} else if (cr.err) {
		task_fail(r, cr.err, "%s", cr.message);
		r->exit_code = cr.exit_code;
		if (cr.nothing_read)
			strbuf_reset(&r->json); /* nothing seen: the error object, not an empty list */
	}
out:
	counters_spec_release(&spec);
	return r->err;
}
