/* SPDX-License-Identifier: MIT */
/*
 * dump.h - a core dump through the runtime's own dump writer (createdump),
 * also for a target in another mount namespace: the runtime writes inside
 * its own filesystem view, clrtap copies the file out through
 * /proc/PID/root. The workflow of `clrtap dump` and of the dump task
 * (docs/tasks/dump.md).
 */
#ifndef CLRTAP_DUMP_DUMP_H
#define CLRTAP_DUMP_DUMP_H

#include "common/compat.h"

#include <signal.h>

#include "common/strbuf.h"
#include "ipc/ipc.h"
#include "proc/proc.h"
#include "task/task.h"

/* "mini", "heap", "triage", "full": -EINVAL for another word. */
int dump_type_parse(const char *s, enum ipc_dump_type *t);

struct dump_opts {
	const struct proc_target *t;
	const struct ipc_endpoint *ep;
	enum ipc_dump_type type;
	const char *type_name;
	const char *host_path;        /* absolute: where the dump goes, as seen from here */
	bool crash_report;            /* also createdump's PATH.crashreport.json */
	/* set while the runtime writes: stop the wait is not possible, but the files are removed after */
	const volatile sig_atomic_t *stop;
	/*
	 * Called once the runtime is about to write: the two files clrtap made
	 * (the temporary file next to host_path, relative to host_dirfd; the
	 * target's file, relative to target_dirfd, or -1) for a signal handler
	 * that must remove them at once (the fds stay open until dump_run
	 * returns). NULL: none.
	 */
	void (*armed)(void *ctx, int host_dirfd, const char *host_tmp, int target_dirfd, const char *target_name);
	void *ctx;
};

struct dump_result {
	int exit_code;                      /* enum exit_code */
	char message[PROC_PATH_MAX * 2 + 256]; /* when it failed: one sentence */
	char path[PROC_PATH_MAX];           /* the dump (host_path) */
	uint64_t bytes;
	char target_path[PROC_PATH_MAX + 300]; /* where the runtime wrote it, in its own view */
	bool copied;                        /* copied out of the target's mount namespace */
	bool crash_report;                  /* path.crashreport.json is there */
	bool interrupted;                   /* stop was set: nothing kept */
};

/* Writes the dump; 0, or a negative errno with r->exit_code and r->message. Never prints. */
int dump_run(const struct dump_opts *o, struct dump_result *r);
/* The result JSON (the dump task's, `clrtap dump --json`): docs/tasks/dump.md. */
int dump_result_json(const struct dump_opts *o, const struct dump_result *r, struct strbuf *out);

/* The dump task (task.c; a row of lib/task/table.c). */
extern const struct task_param dump_task_params[];
extern const size_t dump_task_nparams;
int task_run_dump(const struct task_args *a, const struct task_ctx *c, struct task_result *r);

#endif
