/* SPDX-License-Identifier: MIT */
/*
 * table.c - THE task table: every capability clrtap runs for serve, watch,
 * the fleet mode and the CLI, sorted by name (scripts/lint.sh checks the
 * order, lib/task/task_test.c checks every row: names, defaults, bounds).
 *
 * A row names the parameter array that lives next to its run function in
 * the capability's own library (e.g. lib/counters/task.c defines
 * counters_task_params[] and counters_task_nparams), so the table only
 * references them; the rows are turned into struct task once, at first use.
 */
#include "common/compat.h"

#include <pthread.h>

#include "analyze/analyze.h"
#include "counters/counters.h"
#include "dump/dump.h"
#include "heap/heap.h"
#include "probe/probe.h"
#include "profile/profile.h"
#include "stacks/stacks.h"
#include "task/task.h"
#include "tracestats/tracestats.h"

struct task_row {
	const char *name;
	const char *summary;
	const struct task_param *params;
	const size_t *nparams;
	unsigned flags;
	int (*run)(const struct task_args *args, const struct task_ctx *ctx, struct task_result *res);
};

/*
 * Sorted by name (scripts/lint.sh). Rows still to come at the merge of
 * issue 25: profile, probe (w-taskwf: lib/profile/task.c, lib/probe/task.c),
 * gcdump.collect, dump, watch.action.* (w-taskgw: lib/heap, lib/watch).
 */
static const struct task_row rows[] = {
	{ "analyze", "one question answered about a live process (clrtap analyze)", analyze_task_params,
	  &analyze_task_nparams, TASK_F_TARGET, task_run_analyze },
	{ "counters", "runtime counters for a while (clrtap counters collect --format json)", counters_task_params,
	  &counters_task_nparams, TASK_F_TARGET, task_run_counters },
	{ "doctor", "findings ranked, with evidence and the next command (clrtap doctor)", doctor_task_params,
	  &doctor_task_nparams, TASK_F_TARGET, task_run_doctor },
	{ "dump", "a core dump written by the runtime's own dump writer (createdump), copied out of a container",
	  dump_task_params, &dump_task_nparams, TASK_F_TARGET, task_run_dump },
	/* serve's "gcdump" kind: gcdump.report that keeps the snapshot, all types */
	{ "gcdump", "a heap snapshot and its report (gcdump collect + report)", gcdump_task_params,
	  &gcdump_task_nparams, TASK_F_TARGET | TASK_F_ISOLATE, task_run_gcdump_report },
	{ "gcdump.collect", "a heap snapshot: a forced, blocking gen-2 GC walks the heap (the process pauses)",
	  gcdump_collect_task_params, &gcdump_collect_task_nparams, TASK_F_TARGET | TASK_F_ISOLATE,
	  task_run_gcdump_collect },
	{ "gcdump.diff", "the types that grow in every one of a series of heap snapshots, and what holds them",
	  gcdump_diff_task_params, &gcdump_diff_task_nparams, TASK_F_ISOLATE, task_run_gcdump_diff },
	{ "gcdump.report", "types by retained bytes, the largest retainers, retention paths, duplicated strings",
	  gcdump_report_task_params, &gcdump_report_task_nparams, TASK_F_TARGET | TASK_F_ISOLATE,
	  task_run_gcdump_report },
	{ "probe", "calls of a .NET method as they happen: arguments, return, latency, stack (clrtap probe)",
	  probe_task_params, &probe_task_nparams, TASK_F_TARGET | TASK_F_ISOLATE, task_run_probe },
	{ "profile", "CPU (or off-CPU) samples of a process, named, as a flame and a top list (clrtap profile)",
	  profile_task_params, &profile_task_nparams, TASK_F_TARGET | TASK_F_ISOLATE, task_run_profile },
	{ "stacks", "the managed stack of every thread, merged (clrtap stacks)", stacks_task_params,
	  &stacks_task_nparams, TASK_F_TARGET, task_run_stacks },
	{ "trace", "an EventPipe trace and its report (trace collect + trace report)", trace_task_params,
	  &trace_task_nparams, TASK_F_TARGET, task_run_trace },
	{ NULL, NULL, NULL, NULL, 0, NULL } /* the end */
};

static struct task tasks[ARRAY_SIZE(rows)];
static const struct task *ptrs[ARRAY_SIZE(rows)];
static size_t ntasks;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#ifdef TASK_TEST_DEFAULT
/*
 * Test builds only (the Makefile's $(O)/tests/clrtap-tdef, for
 * tests/integration/t-tasks.sh): -DTASK_TEST_DEFAULT='"task","param","value"'
 * changes one default of the table, to show that --help, openapi.json,
 * GET /api/v1/tasks and the UI follow it. Never in a shipped binary.
 */
static const char *const test_default[3] = { TASK_TEST_DEFAULT };
static struct task_param test_params[TASK_MAX_PARAMS];

static void test_override(struct task *t)
{
	size_t k;

	if (strcmp(t->name, test_default[0]) || t->nparams > TASK_MAX_PARAMS)
		return;
	memcpy(test_params, t->params, t->nparams * sizeof(*t->params));
	for (k = 0; k < t->nparams; k++)
		if (!strcmp(test_params[k].name, test_default[1]))
			test_params[k].def = test_default[2];
	t->params = test_params;
}
#endif

static void build(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rows) && rows[i].name; i++) {
		struct task *t = &tasks[ntasks];

		t->name = rows[i].name;
		t->summary = rows[i].summary;
		t->params = rows[i].params;
		t->nparams = rows[i].nparams ? *rows[i].nparams : 0;
		t->flags = rows[i].flags;
		t->run = rows[i].run;
#ifdef TASK_TEST_DEFAULT
		test_override(t);
#endif
		ptrs[ntasks++] = t;
	}
}

const struct task *const *task_all(size_t *n)
{
	pthread_once(&once, build);
	*n = ntasks;
	return ptrs;
}

const struct task *task_find(const char *name)
{
	size_t lo = 0, hi, n;
	const struct task *const *all = task_all(&n);

	hi = n;
	while (name && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, all[mid]->name);

		if (!c)
			return all[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}
