/* SPDX-License-Identifier: MIT */
/*
 * gcdump.c - the gcdump workflows as library code (collect, report, diff,
 * watch): the collection options from their parameters, what a failed
 * snapshot means (a sentence and an exit code), saving and loading
 * snapshots, and each workflow's result JSON (docs/tasks/gcdump.md). The
 * CLI (src/cmd/gcdump.c) and the task table (task.c) both run these.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/exitcode.h"
#include "common/io.h"
#include "common/json.h"
#include "heap/heap.h"

void heap_gcdump_params_default(struct heap_gcdump_params *p)
{
	memset(p, 0, sizeof(*p));
	p->gc_timeout_ms = 30000;
	p->buffer_mb = 256;
	p->max_objects = HEAP_MAX_NODES;
	p->tee_fd = -1;
}

int heap_gcdump_params_check(const struct heap_gcdump_params *p, char *why, size_t whylen)
{
	if (p->gc_timeout_ms < 1 || p->gc_timeout_ms > (int64_t)86400 * 1000)
		snprintf(why, whylen, "--gc-timeout must be more than 0 and at most 24h");
	else if (p->buffer_mb < 1 || p->buffer_mb > 4096)
		snprintf(why, whylen, "--buffer must be 1..4096");
	else if (p->max_objects < 1 || (uint64_t)p->max_objects > HEAP_MAX_NODES)
		snprintf(why, whylen, "--max-objects must be 1..%u", HEAP_MAX_NODES);
	else
		return 0;
	return -EINVAL;
}

void heap_gcdump_collect_opts(const struct heap_gcdump_params *p, const struct ipc_endpoint *ep,
			      struct heap_collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ep = ep;
	o->pid = p->no_strings ? 0 : ep->pid;
	o->buffer_mb = (uint32_t)p->buffer_mb;
	o->timeout_ms = (int)p->gc_timeout_ms;
	o->limits.max_nodes = (uint32_t)p->max_objects;
	o->limits.max_edges = (uint64_t)p->max_objects * 5 > HEAP_MAX_EDGES ? HEAP_MAX_EDGES
									  : (uint32_t)p->max_objects * 5;
	o->stop = p->stop;
	o->progress = p->progress;
	o->ctx = p->progress_ctx;
	o->tee_fd = p->tee_fd > 0 ? p->tee_fd : 0;
}

int heap_collect_explain(const struct heap_collect_result *res, int err, char *msg, size_t len)
{
	const char *stage = res->stage ? res->stage : "";

	if (res->msg[0]) {
		snprintf(msg, len, "no snapshot: %s", res->msg);
		if (err == -EINTR)
			return EXIT_INTERRUPTED; /* nothing written */
		if (err == -EPROTO && !strcmp(stage, "stream"))
			return EXIT_PROTOCOL;
		return ct_exit_for(err);
	}
	if (!strcmp(stage, "session")) {
		char buf[512];

		ipc_strerror(err, &res->rerr, buf, sizeof(buf));
		snprintf(msg, len, "cannot start the heap session: %s", buf);
	} else {
		snprintf(msg, len, "no snapshot (%s): %s", stage[0] ? stage : "?", strerror(-err));
	}
	return ct_exit_for(err);
}

int heap_file_can_write(int dirfd, const char *path)
{
	char tmp[4096];
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	close(fd);
	unlinkat(dirfd, tmp, 0);
	return 0;
}

int heap_file_save(const struct heap_graph *g, int dirfd, const char *path)
{
	char tmp[4096];
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	err = heap_file_write(g, fd);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, path))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

int heap_load(const char *path, struct heap_graph **g, char *msg, size_t len, int *exit_code)
{
	const char *why = NULL;
	char magic[8] = { 0 }, m[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	bool nettrace = false;

	if (fd >= 0) {
		nettrace = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) && !memcmp(magic, "Nettrace", 8);
		close(fd);
	}
	/* a saved heap session, or clrtap's snapshot file */
	err = nettrace ? heap_nettrace_read(path, NULL, g, m, sizeof(m)) : heap_file_read(path, g, &why);
	if (!err)
		return 0;
	if (err == -ENOENT || err == -EACCES || (!nettrace && err == -EISDIR)) {
		*exit_code = err == -EACCES ? EXIT_PERMISSION : EXIT_ERROR;
		snprintf(msg, len, "cannot read %s: %s", path, strerror(-err));
	} else {
		*exit_code = err == -ENOMEM ? EXIT_ERROR : EXIT_BAD_INPUT;
		snprintf(msg, len, "%s: %s", path, m[0] ? m : why ? why : strerror(-err));
	}
	return err;
}

static void json_open(struct ct_json *j, struct strbuf *out, const char *task)
{
	ct_json_init(j, out);
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "task", task);
}

static void json_close(struct ct_json *j, bool partial)
{
	ct_json_kv_bool(j, "partial", partial);
	ct_json_obj_end(j);
}

int heap_gcdump_collect_json(const struct heap_graph *g, const char *artifact, struct strbuf *out)
{
	struct ct_json j;

	json_open(&j, out, "gcdump.collect");
	heap_snapshot_json(&j, g);
	ct_json_kv_arr_begin(&j, "artifacts");
	if (artifact)
		ct_json_str(&j, artifact);
	ct_json_arr_end(&j);
	json_close(&j, false);
	return ct_json_finish(&j);
}

int heap_gcdump_report_json(const struct heap_report *r, struct strbuf *out)
{
	struct ct_json j;

	json_open(&j, out, "gcdump.report");
	heap_report_json(r, &j);
	json_close(&j, false);
	return ct_json_finish(&j);
}

int heap_gcdump_leaks_json(const char *task, const struct heap_leaks *l, const char *const *labels,
			   bool partial, struct strbuf *out)
{
	struct ct_json j;

	json_open(&j, out, task);
	heap_leaks_json(&j, l, labels, 0);
	json_close(&j, partial);
	return ct_json_finish(&j);
}

int heap_gcdump_diff(const char *const *paths, size_t n, struct heap_series *s, struct heap_leaks *l,
		     char *msg, size_t len, int *exit_code)
{
	size_t i;
	int err;

	*exit_code = EXIT_ERROR;
	memset(l, 0, sizeof(*l));
	if (n < 2 || n > HEAP_DIFF_MAX) {
		*exit_code = EXIT_USAGE;
		snprintf(msg, len, n < 2 ? "diff needs at least two snapshot files" : "at most %d snapshots",
			 HEAP_DIFF_MAX);
		return -EINVAL;
	}
	if ((err = heap_series_init(s, n)))
		goto oom;
	for (i = 0; i < n; i++) {
		struct heap_graph *g = NULL;

		if ((err = heap_load(paths[i], &g, msg, len, exit_code)))
			return err;
		if ((err = heap_series_add(s, g)))
			goto oom;
	}
	if (!(err = heap_leaks_compare(s, l)))
		return 0;
oom:
	snprintf(msg, len, "cannot compare: %s", strerror(-err));
	return err;
}
