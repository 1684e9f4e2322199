/* SPDX-License-Identifier: MIT */
/*
 * task.c - the analyze and doctor tasks: the workflows of `clrtap analyze`
 * and `clrtap doctor` on a live process; the result is the --json document
 * (docs/cmd/analyze.md, docs/cmd/doctor.md), with report.md (and, for
 * analyze, report.html) as artifacts when there is an output directory.
 */
#include "common/compat.h"

#include "analyze/analyze.h"
#include "common/exitcode.h"
#include "common/log.h"
#include "proc/proc.h"

/* the names of lib/analyze's table (analyze_test checks they are the same) */
#define ANALYZERS "allocations contention deadlock exceptions hotpaths leaks memory pauses stacks strings " \
		  "survivors threadpool"

const struct task_param analyze_task_params[] = {
	{ "analyzer", TASK_P_ENUM, NULL, 0, 0, ANALYZERS, "the question (clrtap analyze --list)", TASK_PF_REQUIRED },
	{ "duration", TASK_P_DURATION, "5", 0.1, 3600, NULL, "how long to watch the process", 0 },
	{ "top", TASK_P_INT, "10", 1, 1000, NULL, "rows of each table", 0 },
};
const size_t analyze_task_nparams = ARRAY_SIZE(analyze_task_params);

const struct task_param doctor_task_params[] = {
	{ "duration", TASK_P_DURATION, "10", 0.1, 3600, NULL, "how long to watch the process", 0 },
};
const size_t doctor_task_nparams = ARRAY_SIZE(doctor_task_params);

int analyze_fail_exit(enum an_fail f, int err)
{
	switch (f) {
	case AN_FAIL_USAGE: return EXIT_USAGE;
	case AN_FAIL_NO_PROCESS: return EXIT_NO_PROCESS;
	case AN_FAIL_PROTOCOL: return EXIT_PROTOCOL;
	case AN_FAIL_BAD_INPUT: return EXIT_BAD_INPUT;
	case AN_FAIL_PARTIAL: return EXIT_PARTIAL;
	case AN_FAIL_INTERRUPTED: return EXIT_INTERRUPTED;
	case AN_FAIL_ERRNO: return ct_exit_for(err);
	default: return EXIT_ERROR;
	}
}

int task_run_analyze(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r)
{
	const struct an_analyzer *an = analyze_analyzer_find(task_arg(a, "analyzer")->s);
	double dur = task_arg(a, "duration")->d;
	volatile sig_atomic_t local = 0;
	struct an_report *rep = NULL;
	struct strbuf sb = STRBUF_INIT;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ct_json j;
	const char *msg;
	int err, fd;

	if (!an)
		return task_fail(r, -EINVAL, "unknown analyzer '%s'", task_arg(a, "analyzer")->s);
	if (task_target(a, r, &t, &ep, 5000))
		return r->err;
	if (analyze_report_new(&rep, an, (unsigned)task_arg(a, "top")->i))
		return task_fail(r, -ENOMEM, "out of memory");
	ct_info("analyzing pid %d (%s) for %.1f s", (int)t.pid, an->name, dur);
	if (analyze_report_live(rep, &ep, t.pid, (int64_t)(dur * 1000), task_stop_flag(ctx, &local))) {
		enum an_fail f = analyze_report_failure(rep, &err, &msg);

		task_fail(r, err ? err : -EIO, "%s", msg ? msg : "the analysis failed");
		r->exit_code = analyze_fail_exit(f, err);
		goto out;
	}
	if (ctx && ctx->outdir_fd >= 0) {
		err = analyze_report_md(rep, &sb);
		if (!err)
			err = task_artifact_write(ctx, r, "report.md", "text/markdown", sb.buf, sb.len);
		if (err)
			ct_warn("cannot write report.md: %s", strerror(-err));
		fd = task_artifact_open(ctx, r, "report.html", "text/html");
		if (fd < 0 || analyze_report_html(rep, fd))
			ct_warn("cannot write report.html");
		if (fd >= 0)
			close(fd);
	}
	ct_json_init(&j, &r->json);
	err = analyze_report_json(rep, &j);
	if (!err)
		err = ct_json_finish(&j);
	if (err) {
		strbuf_reset(&r->json);
		task_fail(r, err, "cannot make the report: %s", strerror(-err));
	} else if (analyze_report_partial(rep)) {
		task_fail(r, -EINTR, "%s", analyze_report_partial(rep));
		r->exit_code = EXIT_PARTIAL;
	}
out:
	strbuf_release(&sb);
	analyze_report_free(rep);
	return r->err;
}

int task_run_doctor(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r)
{
	double dur = task_arg(a, "duration")->d;
	volatile sig_atomic_t local = 0;
	struct an_doctor *d;
	struct strbuf sb = STRBUF_INIT;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ct_json j;
	int err;

	if (task_target(a, r, &t, &ep, 5000))
		return r->err;
	d = calloc(1, sizeof(*d));
	if (!d)
		return task_fail(r, -ENOMEM, "out of memory");
	ct_info("examining pid %d for %.1f s", (int)t.pid, dur);
	if (analyze_doctor_run(&ep, t.pid, (int64_t)(dur * 1000), task_stop_flag(ctx, &local), d)) {
		task_fail(r, d->err ? d->err : -EIO, "%s", d->msg);
		r->exit_code = analyze_fail_exit(d->fail, d->err);
		goto out;
	}
	if (ctx && ctx->outdir_fd >= 0) {
		(void)analyze_doctor_text(d, false, &sb);
		err = strbuf_error(&sb);
		if (!err)
			err = task_artifact_write(ctx, r, "report.md", "text/markdown", sb.buf, sb.len);
		if (err)
			ct_warn("cannot write report.md: %s", strerror(-err));
	}
	ct_json_init(&j, &r->json);
	err = analyze_doctor_json(d, &j);
	if (!err)
		err = ct_json_finish(&j);
	if (err) {
		strbuf_reset(&r->json);
		task_fail(r, err, "cannot make the report: %s", strerror(-err));
	} else if (d->partial[0]) {
		task_fail(r, -EINTR, "%s; the findings cover what came before", d->partial);
		r->exit_code = EXIT_PARTIAL;
	}
out:
	strbuf_release(&sb);
	free(d);
	return r->err;
}
