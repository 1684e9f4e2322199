/* SPDX-License-Identifier: MIT */
/*
 * adapt.c - ADAPTER ROWS (issue 25, to be replaced at the merge): profile,
 * probe, dump and gcdump still keep their workflows in src/cmd on this
 * branch, so their rows run the command itself, in the child clrtap of
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

const struct task_param adapt_profile_params[] = {
	{ "duration", TASK_P_DURATION, "3", 0.1, 3600, NULL, "how long to sample", 0 },
	{ "engine", TASK_P_ENUM, "auto", 0, 0, "auto perf eventpipe",
	  "auto (perf_event, else EventPipe), perf or eventpipe (managed frames only)", 0 },
	{ "frequency", TASK_P_INT, "99", 1, 10000, NULL, "samples per second per thread", 0 },
};
const size_t adapt_profile_nparams = ARRAY_SIZE(adapt_profile_params);

const struct task_param adapt_probe_params[] = {
	{ "method", TASK_P_STRING, NULL, 0, 512, ".:_`<>,()[]*", "Namespace.Type::Method", TASK_PF_REQUIRED },
	{ "duration", TASK_P_DURATION, "5", 0.1, 3600, NULL, "how long to probe", 0 },
	{ "ret", TASK_P_BOOL, "true", 0, 0, NULL, "the return value", 0 },
	{ "latency", TASK_P_BOOL, "true", 0, 0, NULL, "each call's latency", 0 },
	{ "count", TASK_P_BOOL, "false", 0, 0, NULL, "only count calls", 0 },
	{ "budget", TASK_P_NUM, "5", 0.01, 1000, NULL, "the share of one core (percent) the probe may take", 0 },
	{ "no_rejit", TASK_P_BOOL, "false", 0, 0, NULL, "stop a probe over budget instead of handing it to ReJIT", 0 },
};
const size_t adapt_probe_nparams = ARRAY_SIZE(adapt_probe_params);

const struct task_param adapt_dump_params[] = {
	{ "type", TASK_P_ENUM, "mini", 0, 0, "mini heap triage full", "what the dump holds", 0 },
};
const size_t adapt_dump_nparams = ARRAY_SIZE(adapt_dump_params);

const size_t adapt_gcdump_nparams = 0;
