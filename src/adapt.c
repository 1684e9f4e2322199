/* SPDX-License-Identifier: MIT */
/*
 * adapt.c - ADAPTER (issue 25, replaced at the merge): the dump and gcdump
 * rows of the task table (lib/task/adapt.c) run the command itself, in the
 * child clrtap of task_spawn, with its artifacts written in the task's output
 * directory (fd 5). The result is the command's own --json output on stdout
 * (captured, never stderr). When lib/heap's tasks land, this file goes
 * (profile and probe are tasks of their own: lib/profile/task.c, lib/probe/task.c).
 */
#include "common/compat.h"

#include <sys/mman.h>

#include "cli.h"
#include "common/exitcode.h"
#include "task/task.h"

#define MAX_ARGS 24

struct argv_b {
	char *v[MAX_ARGS + 1];
	char store[MAX_ARGS][600];
	int n;
};

static void arg(struct argv_b *b, const char *fmt, ...) PRINTF(2, 3);
static void arg(struct argv_b *b, const char *fmt, ...)
{
	va_list ap;

	if (b->n >= MAX_ARGS)
		return;
	va_start(ap, fmt);
	vsnprintf(b->store[b->n], sizeof(b->store[0]), fmt, ap);
	va_end(ap);
	b->v[b->n] = b->store[b->n];
	b->v[++b->n] = NULL;
}

/* Runs a command with its stdout into out (NULL: dropped); its exit code. */
static int run_cmd(int (*fn)(int, char **), struct argv_b *b, struct strbuf *out)
{
	int mfd = memfd_create("clrtap-task-out", MFD_CLOEXEC), saved, code;
	char buf[65536];
	ssize_t n;

	if (mfd < 0)
		return cli_error(EXIT_ERROR, "cannot capture the output: %s", strerror(errno));
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(mfd, STDOUT_FILENO);
	code = fn(b->n, b->v);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	if (out && lseek(mfd, 0, SEEK_SET) == 0)
		while ((n = read(mfd, buf, sizeof(buf))) > 0 && !strbuf_add(out, buf, (size_t)n))
			;
	close(mfd);
	return code;
}

int cli_task_adapter(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	const char *name = a->task->name;
	struct argv_b b = { .n = 0 };
	char dir[400], fdp[32];
	ssize_t n;
	int code = EXIT_ERROR;

	/* the directory's own path: a dump is written by the target's runtime, not by us */
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", c ? c->outdir_fd : -1);
	if (!c || c->outdir_fd != TASK_CHILD_DIR_FD || (n = readlink(fdp, dir, sizeof(dir) - 1)) <= 0 ||
	    (size_t)n >= sizeof(dir) - 1)
		return task_fail(r, -EINVAL, "%s needs the task's output directory", name);
	dir[n] = 0;
	cli_last_error[0] = 0;
	if (!strcmp(name, "dump")) {
		arg(&b, "dump"), arg(&b, "-p"), arg(&b, "%d", a->pid), arg(&b, "--type"), arg(&b, "%s", task_arg(a, "type")->s);
		arg(&b, "-o"), arg(&b, "%s/core.dump", dir), arg(&b, "--json");
		code = run_cmd(cmd_dump, &b, &r->json);
	} else if (!strcmp(name, "gcdump")) {
		arg(&b, "gcdump"), arg(&b, "collect"), arg(&b, "-p"), arg(&b, "%d", a->pid);
		arg(&b, "-o"), arg(&b, "%s/heap.gcdump", dir);
		code = run_cmd(cmd_gcdump, &b, NULL);
		if (code == EXIT_OK || code == EXIT_PARTIAL) {
			struct argv_b rb = { .n = 0 };
			int rc;

			arg(&rb, "gcdump"), arg(&rb, "report"), arg(&rb, "%s/heap.gcdump", dir), arg(&rb, "--json");
			arg(&rb, "--top"), arg(&rb, "0");
			rc = run_cmd(cmd_gcdump, &rb, &r->json);
			if (rc)
				code = rc;
		}
	} else {
		return task_fail(r, -ENOTSUP, "no adapter for %s", name);
	}
	if (code != EXIT_OK) {
		task_fail(r, -EIO, "%s", cli_last_error[0] ? cli_last_error : "the command failed");
		r->exit_code = code;
		if (code != EXIT_PARTIAL)
			strbuf_reset(&r->json);
	}
	return r->err;
}
