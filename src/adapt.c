/* SPDX-License-Identifier: MIT */
/*
 * adapt.c - ADAPTER (issue 25, replaced at the merge): the profile, probe,
 * dump and gcdump rows of the task table (lib/task/adapt.c) run the command
 * itself, in the child clrtap of task_spawn, with its artifacts written in
 * the task's output directory (fd 5). The result is the command's own --json
 * output on stdout (captured, never stderr); profile, which has no --json on
 * this branch, gets a summary of the samples it wrote (profile.folded). When
 * lib/profile's task_run_profile, lib/probe's task_run_probe and lib/heap's
 * tasks land, this file goes.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/mman.h>

#include "cli.h"
#include "common/exitcode.h"
#include "common/json.h"
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

static const char *dur(const struct task_args *a, char *buf, size_t len)
{
	snprintf(buf, len, "%lldms", (long long)(task_arg(a, "duration")->d * 1000 + 0.5));
	return buf;
}

/* profile: the samples of profile.folded, top methods by self samples (the leaf frame). */
struct leaf {
	char name[256];
	uint64_t self;
};

static int cmp_leaf(const void *x, const void *y)
{
	const struct leaf *a = x, *b = y;

	return a->self < b->self ? 1 : a->self > b->self ? -1 : strcmp(a->name, b->name);
}

static void profile_summary(const struct task_args *a, const struct task_ctx *c, struct task_result *r, int code)
{
	struct strbuf in = STRBUF_INIT_MAX((size_t)256 << 20);
	struct leaf *lv = NULL;
	size_t nl = 0, i;
	uint64_t total = 0;
	struct ct_json j;
	char buf[65536];
	ssize_t n;
	int fd = openat(c->outdir_fd, "profile.folded", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	const char *p;

	if (fd >= 0) {
		while ((n = read(fd, buf, sizeof(buf))) > 0 && !strbuf_add(&in, buf, (size_t)n))
			;
		close(fd);
	}
	for (p = in.buf; *p;) {
		const char *e = strchr(p, '\n') ? strchr(p, '\n') : p + strlen(p);
		const char *sp = e, *leaf;
		uint64_t cnt = 0;

		while (sp > p && sp[-1] != ' ')
			sp--;
		if (sp > p) {
			char num[24];

			snprintf(num, sizeof(num), "%.*s", (int)CT_MIN((size_t)(e - sp), sizeof(num) - 1), sp);
			cnt = strtoull(num, NULL, 10);
			for (leaf = sp - 1; leaf > p && leaf[-1] != ';'; leaf--)
				;
			for (i = 0; i < nl; i++)
				if ((size_t)(sp - 1 - leaf) == strlen(lv[i].name) && !strncmp(lv[i].name, leaf, (size_t)(sp - 1 - leaf)))
					break;
			if (i == nl && (nl & 255) == 0) {
				struct leaf *g = realloc(lv, (nl + 256) * sizeof(*lv));

				if (!g)
					break;
				lv = g;
			}
			if (i == nl) {
				snprintf(lv[nl].name, sizeof(lv[nl].name), "%.*s", (int)(sp - 1 - leaf), leaf);
				lv[nl++].self = 0;
			}
			lv[i].self += cnt;
			total += cnt;
		}
		p = *e ? e + 1 : e;
	}
	if (nl)
		qsort(lv, nl, sizeof(*lv), cmp_leaf);
	strbuf_reset(&r->json);
	ct_json_init(&j, &r->json);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "task", "profile");
	ct_json_kv_i64(&j, "pid", a->pid);
	ct_json_kv_double(&j, "duration_s", task_arg(a, "duration")->d);
	ct_json_kv_i64(&j, "frequency_hz", task_arg(a, "frequency")->i);
	ct_json_kv_u64(&j, "samples", total);
	ct_json_kv_arr_begin(&j, "statements");
	ct_json_str(&j, "this build's profile task is an adapter over clrtap profile: engine, lost samples and "
			"unnamed frames are in the session's messages, not here");
	ct_json_arr_end(&j);
	ct_json_kv_arr_begin(&j, "top");
	for (i = 0; i < nl && i < 20; i++) {
		ct_json_obj_begin(&j);
		ct_json_kv_str(&j, "name", lv[i].name);
		ct_json_kv_u64(&j, "self", lv[i].self);
		ct_json_kv_double(&j, "self_pct", total ? 100.0 * (double)lv[i].self / (double)total : 0);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);
	ct_json_kv_arr_begin(&j, "artifacts");
	ct_json_str(&j, "profile.folded");
	ct_json_arr_end(&j);
	ct_json_kv_bool(&j, "partial", code == EXIT_PARTIAL);
	ct_json_obj_end(&j);
	if (ct_json_finish(&j))
		strbuf_reset(&r->json);
	free(lv);
	strbuf_release(&in);
}

int cli_task_adapter(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	const char *name = a->task->name;
	struct argv_b b = { .n = 0 };
	char d[48], dir[400], fdp[32];
	ssize_t n;
	int code = EXIT_ERROR;

	/* the directory's own path: a dump is written by the target's runtime, not by us */
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", c ? c->outdir_fd : -1);
	if (!c || c->outdir_fd != TASK_CHILD_DIR_FD || (n = readlink(fdp, dir, sizeof(dir) - 1)) <= 0 ||
	    (size_t)n >= sizeof(dir) - 1)
		return task_fail(r, -EINVAL, "%s needs the task's output directory", name);
	dir[n] = 0;
	cli_last_error[0] = 0;
	if (!strcmp(name, "profile")) {
		arg(&b, "profile"), arg(&b, "-p"), arg(&b, "%d", a->pid), arg(&b, "-d"), arg(&b, "%s", dur(a, d, sizeof(d)));
		arg(&b, "-o"), arg(&b, "%s/profile.folded", dir), arg(&b, "--engine"), arg(&b, "%s", task_arg(a, "engine")->s);
		arg(&b, "-F"), arg(&b, "%lld", task_arg(a, "frequency")->i);
		code = run_cmd(cmd_profile, &b, NULL);
		if (code == EXIT_OK || code == EXIT_PARTIAL)
			profile_summary(a, c, r, code);
	} else if (!strcmp(name, "probe")) {
		arg(&b, "probe"), arg(&b, "-p"), arg(&b, "%d", a->pid), arg(&b, "-d"), arg(&b, "%s", dur(a, d, sizeof(d)));
		if (task_arg(a, "count")->b) {
			arg(&b, "--count");
		} else {
			if (task_arg(a, "ret")->b)
				arg(&b, "--ret");
			if (task_arg(a, "latency")->b)
				arg(&b, "--latency");
		}
		arg(&b, "--budget"), arg(&b, "%g", task_arg(a, "budget")->d);
		if (task_arg(a, "no_rejit")->b)
			arg(&b, "--no-rejit");
		arg(&b, "--json"), arg(&b, "--"), arg(&b, "%s", task_arg(a, "method")->s);
		code = run_cmd(cmd_probe, &b, &r->json);
	} else if (!strcmp(name, "dump")) {
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
