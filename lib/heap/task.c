/* SPDX-License-Identifier: MIT */
/*
 * task.c - the gcdump tasks of the task table (lib/task/table.c):
 * gcdump.collect, gcdump.report and gcdump.diff, their parameters as data
 * and their runs over the workflows of gcdump.c. Results:
 * docs/tasks/gcdump.md (the same JSON as `clrtap gcdump ... --json`).
 */
#include "common/compat.h"

#include <fcntl.h>

#include "common/exitcode.h"
#include "heap/heap.h"
#include "proc/proc.h"
#include "task/task.h"

#define SNAPSHOT_PARAMS \
	{ "gc_timeout", TASK_P_DURATION, "30s", 0.001, 86400, NULL, "give up on the snapshot after this long", 0 }, \
	{ "buffer", TASK_P_INT, "256", 1, 4096, NULL, "the runtime's session buffer, MB", 0 }, \
	{ "max_objects", TASK_P_INT, "200000000", 1, HEAP_MAX_NODES, NULL, \
	  "refuse heaps with more objects (and 5x as many references)", 0 }, \
	{ "no_strings", TASK_P_BOOL, "false", 0, 0, NULL, "do not read string contents from the target", 0 }

const struct task_param gcdump_collect_task_params[] = { SNAPSHOT_PARAMS };
const size_t gcdump_collect_task_nparams = ARRAY_SIZE(gcdump_collect_task_params);

#define REPORT_PARAMS(top) \
	SNAPSHOT_PARAMS, \
	{ "top", TASK_P_INT, top, 0, 1000000, NULL, "types listed (0: all)", 0 }, \
	{ "path", TASK_P_STRING, NULL, 0, 4096, NULL, \
	  "shortest retention paths of this type's objects, or of the object at 0xADDR", 0 }

const struct task_param gcdump_report_task_params[] = { REPORT_PARAMS("30") };
const size_t gcdump_report_task_nparams = ARRAY_SIZE(gcdump_report_task_params);

/* serve's "gcdump" kind: the same run, every type by default (the snapshot kept with an output folder) */
const struct task_param gcdump_task_params[] = { REPORT_PARAMS("0") };
const size_t gcdump_task_nparams = ARRAY_SIZE(gcdump_task_params);

const struct task_param gcdump_diff_task_params[] = {
	{ "files", TASK_P_STRING, NULL, 0, 65536, NULL, "the snapshot files in order, separated by ':' (as PATH)",
	  TASK_PF_REQUIRED | TASK_PF_CLI_ONLY },
};
const size_t gcdump_diff_task_nparams = ARRAY_SIZE(gcdump_diff_task_params);

/* The snapshot parameters from the arguments. */
static void snapshot_params(const struct task_args *a, const struct task_ctx *c, struct heap_gcdump_params *p)
{
	heap_gcdump_params_default(p);
	p->gc_timeout_ms = (int64_t)(task_arg(a, "gc_timeout")->d * 1000);
	p->buffer_mb = (int)task_arg(a, "buffer")->i;
	p->max_objects = (int)task_arg(a, "max_objects")->i;
	p->no_strings = task_arg(a, "no_strings")->b;
	p->stop = task_stop_flag(c, NULL);
}

static int take(const struct task_args *a, const struct task_ctx *c, struct heap_graph **g, struct task_result *r)
{
	struct heap_gcdump_params p;
	struct heap_collect_opts o;
	struct heap_collect_result res = { 0 };
	struct proc_target t;
	struct ipc_endpoint ep;
	int err;

	snapshot_params(a, c, &p);
	if ((err = task_target(a, r, &t, &ep, 5000)))
		return err;
	heap_gcdump_collect_opts(&p, &ep, &o);
	ct_log(CT_LOG_INFO, "forcing a full, blocking gen-2 GC in pid %d to walk its heap", a->pid);
	err = heap_collect(&o, g, &res);
	if (err) {
		int code = heap_collect_explain(&res, err, r->message, sizeof(r->message));

		task_fail(r, err, "%s", r->message);
		r->exit_code = code;
	}
	return err;
}

/* The snapshot as the artifact snapshot.heap when there is an output folder. */
static int keep_snapshot(const struct heap_graph *g, const struct task_ctx *c, struct task_result *r,
			 const char **artifact)
{
	int err;

	*artifact = NULL;
	if (!c || c->outdir_fd < 0)
		return 0;
	if ((err = heap_file_save(g, c->outdir_fd, "snapshot.heap")))
		return task_fail(r, err, "cannot write snapshot.heap: %s", strerror(-err));
	*artifact = "snapshot.heap";
	snprintf(r->artifacts[r->nartifacts].name, sizeof(r->artifacts[0].name), "%s", *artifact);
	snprintf(r->artifacts[r->nartifacts++].mime, sizeof(r->artifacts[0].mime), "application/octet-stream");
	return 0;
}

/* A snapshot of the target, kept as an artifact when there is a folder. */
static int take_kept(const struct task_args *a, const struct task_ctx *c, struct heap_graph **g,
		     struct task_result *r, const char **artifact)
{
	int err = take(a, c, g, r);

	if (!err && (err = keep_snapshot(*g, c, r, artifact))) {
		heap_graph_free(*g);
		*g = NULL;
	}
	return err;
}

int task_run_gcdump_collect(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	struct heap_graph *g = NULL;
	const char *artifact = NULL;
	int err = take_kept(a, c, &g, r, &artifact);

	if (err)
		return err;
	err = heap_gcdump_collect_json(g, artifact, &r->json);
	heap_graph_free(g);
	return err ? task_fail(r, err, "cannot write the result: %s", strerror(-err)) : 0;
}

int task_run_gcdump_report(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	const struct task_value *path = task_arg(a, "path");
	struct heap_graph *g = NULL;
	struct heap_report rep;
	const char *artifact;
	char why[256];
	int err = take_kept(a, c, &g, r, &artifact);

	if (err)
		return err;
	err = heap_report_build(g, (int)task_arg(a, "top")->i, path->set ? path->s : NULL, false, &rep, why,
				sizeof(why));
	if (err) {
		task_fail(r, err, "%s", why);
		if (err == -EINVAL)
			r->exit_code = EXIT_USAGE;
	} else if ((err = heap_gcdump_report_json(&rep, &r->json))) {
		task_fail(r, err, "cannot write the result: %s", strerror(-err));
	}
	heap_report_release(&rep);
	heap_graph_free(g);
	return err;
}

int task_run_gcdump_diff(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	struct strbuf files = STRBUF_INIT;
	const char *paths[HEAP_DIFF_MAX];
	struct heap_series s = { 0 };
	struct heap_leaks l = { 0 };
	size_t n = 0;
	char *p, *save = NULL, why[256];
	int err, code;

	(void)c;
	if ((err = strbuf_addstr(&files, task_arg(a, "files")->s)))
		return task_fail(r, err, "out of memory");
	for (p = strtok_r(files.buf, ":", &save); p && n < HEAP_DIFF_MAX; p = strtok_r(NULL, ":", &save))
		paths[n++] = p;
	if (p) {
		n = HEAP_DIFF_MAX + 1; /* over the cap: heap_gcdump_diff says so */
	}
	err = heap_gcdump_diff(paths, n, &s, &l, why, sizeof(why), &code);
	if (err) {
		task_fail(r, err, "%s", why);
		r->exit_code = code;
	} else if ((err = heap_gcdump_leaks_json("gcdump.diff", &l, paths, false, &r->json))) {
		task_fail(r, err, "cannot write the result: %s", strerror(-err));
	}
	heap_leaks_release(&l);
	heap_series_release(&s);
	strbuf_release(&files);
	return err;
}
