/* SPDX-License-Identifier: MIT */
/*
 * adapt.c - ADAPTER ROWS (issue 25, to be replaced at the merge): dump and
 * gcdump still keep their workflows in src/cmd on this branch, so their rows run the command itself, in the child clrtap of
 * task_spawn (TASK_F_ISOLATE), through a hook that "clrtap __task" sets
 * (src/adapt.c). The result is the command's own --json output where it has
 * one. When w-taskwf's task_run_profile / task_run_probe and w-taskgw's
 * gcdump and dump tasks land, their rows replace these (keep the param
 * names: serve's API and the UI use them) and this file goes.
 */
#include "common/compat.h"

#include "task/task.h"

static task_cli_fn hook;

void task_set_cli_adapter(task_cli_fn fn)
{
	hook = fn;
}

int task_run_cli_adapter(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	if (!hook)
		return task_fail(r, -ENOTSUP, "%s runs in a clrtap child process (task_spawn) on this build",
				 a->task->name);
	return hook(a, c, r);
}

const struct task_param adapt_dump_params[] = {
	{ "type", TASK_P_ENUM, "mini", 0, 0, "mini heap triage full", "what the dump holds", 0 },
};
const size_t adapt_dump_nparams = ARRAY_SIZE(adapt_dump_params);

const size_t adapt_gcdump_nparams = 0;
