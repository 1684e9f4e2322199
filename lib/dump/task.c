/* SPDX-License-Identifier: MIT */
/*
 * task.c - the dump task of the task table: the runtime writes a core dump
 * of the target, kept as the artifact "core.dump" in the task's output folder.
 * Result: docs/tasks/dump.md (the same JSON as `clrtap dump --json`).
 */
#include "common/compat.h"

#include "common/exitcode.h"
#include "common/strparse.h"
#include "dump/dump.h"

const struct task_param dump_task_params[] = {
	{ "type", TASK_P_ENUM, "full", 0, 0, "mini heap triage full", "what the dump holds (createdump's types)", 0 },
	{ "crash_report", TASK_P_BOOL, "false", 0, 0, NULL, "also createdump's JSON crash report (core.dump.crashreport.json)",
	  0 },
	{ "timeout", TASK_P_DURATION, "300s", 1, 3600, NULL, "how long to wait for the runtime to write the dump", 0 },
};
const size_t dump_task_nparams = ARRAY_SIZE(dump_task_params);

/* A file dump_run wrote into the output folder, listed as an artifact. */
static void artifact(struct task_result *r, const char *name, const char *mime)
{
	if (r->nartifacts >= TASK_MAX_ARTIFACTS)
		return;
	ct_strlcpy(r->artifacts[r->nartifacts].name, name, sizeof(r->artifacts[0].name));
	ct_strlcpy(r->artifacts[r->nartifacts].mime, mime, sizeof(r->artifacts[0].mime));
	r->nartifacts++;
}

int task_run_dump(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	const char *type = task_arg(a, "type")->s;
	char dir[PROC_PATH_MAX / 2], fdpath[64], host_path[PROC_PATH_MAX];
	struct dump_opts o = { .type_name = type, .host_path = host_path };
	struct dump_result *res;
	struct ipc_endpoint ep;
	struct proc_target t;
	ssize_t n;
	int err;

	if (!c || c->outdir_fd < 0)
		return task_fail(r, -EINVAL, "dump needs an output folder for the core file");
	/* the runtime writes by path: the folder's absolute path */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", c->outdir_fd);
	n = readlink(fdpath, dir, sizeof(dir) - 1);
	if (n <= 0 || dir[0] != '/')
		return task_fail(r, n < 0 ? -errno : -ENOENT, "cannot name the output folder");
	dir[n] = 0;
	snprintf(host_path, sizeof(host_path), "%s/core.dump", dir);
	(void)dump_type_parse(type, &o.type);
	o.crash_report = task_arg(a, "crash_report")->b;
	o.stop = c->stop;
	if ((err = task_target(a, r, &t, &ep, (int)(task_arg(a, "timeout")->d * 1000))))
		return err;
	o.t = &t;
	o.ep = &ep;
	if (!(res = malloc(sizeof(*res))))
		return task_fail(r, -ENOMEM, "out of memory");
	err = dump_run(&o, res);
	if (err) {
		task_fail(r, err, "%s", res->message);
		r->exit_code = res->exit_code;
	} else {
		artifact(r, "core.dump", "application/octet-stream");
		if (res->crash_report)
			artifact(r, "core.dump.crashreport.json", "application/json");
		if ((err = dump_result_json(&o, res, &r->json)))
			task_fail(r, err, "cannot write the result: %s", strerror(-err));
	}
	free(res);
	return err;
}
