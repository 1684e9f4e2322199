/* SPDX-License-Identifier: MIT */
/*
 * task.c - the stacks task: stacks_capture_run, the document of
 * `clrtap stacks --json` (docs/tasks/stacks.md).
 */
#include "common/compat.h"

#include "common/exitcode.h"
#include "common/log.h"
#include "proc/proc.h"
#include "stacks/stacks.h"

const struct task_param stacks_task_params[] = {
	{ "sample_ms", TASK_P_INT, "10", 1, 60000, NULL, "how long the stack sampler runs, in milliseconds", 0 },
	{ "lines", TASK_P_BOOL, "false", 0, 0, NULL,
	  "managed frames with their source file and line (portable PDBs; docs/internals/lines.md)", 0 },
};
const size_t stacks_task_nparams = ARRAY_SIZE(stacks_task_params);

int task_run_stacks(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r)
{
	volatile sig_atomic_t local = 0;
	struct stacks_capture_opts co = { .sample_ms = (int)task_arg(a, "sample_ms")->i,
					  .lines = task_arg(a, "lines")->b,
					  .stop = task_stop_flag(ctx, &local) };
	struct stacks_capture cap;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ct_json j;
	char why[512];
	int err;

	if (task_target(a, r, &t, &ep, 5000))
		return r->err;
	err = stacks_capture_run(&ep, t.pid, &co, &cap);
	if (err) {
		if (cap.stage == STACKS_STAGE_SESSION) {
			ipc_session_strerror(err, &cap.res, &ep, &cap.rerr, why, sizeof(why));
			task_fail(r, err, "%s: %s", cap.res.bytes ? "the session broke off" : "cannot sample the stacks",
				  why);
			if (cap.res.bad_prologue || err == -EFBIG)
				r->exit_code = EXIT_PROTOCOL;
		} else if (cap.stage == STACKS_STAGE_READ) {
			task_fail(r, err, "cannot read the session stream (byte %" PRIu64 "): %s", cap.bad_offset, cap.msg);
			if (err == -EBADMSG)
				r->exit_code = EXIT_PROTOCOL;
		} else {
			task_fail(r, err, "cannot build the tree: %s", strerror(-err));
			r->exit_code = EXIT_ERROR;
		}
		goto out;
	}
	if (cap.incomplete)
		ct_warn("the stream ended without its end marker: stacks may be missing");
	ct_json_init(&j, &r->json);
	stacks_capture_json(&cap, &j);
	if ((err = ct_json_finish(&j))) {
		strbuf_reset(&r->json);
		task_fail(r, err, "cannot make the JSON document: %s", strerror(-err));
	}
out:
	stacks_capture_release(&cap);
	return r->err;
}
