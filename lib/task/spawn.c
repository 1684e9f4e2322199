/* SPDX-License-Identifier: MIT */
/*
 * spawn.c - THE one child runner: a task run in a child clrtap process
 * ("clrtap __task NAME", src/main.c), for the tasks that merit isolation
 * (TASK_F_ISOLATE: docs/ARCHITECTURE.md, "The task table").
 *
 * The child gets:
 *   fd 3  the request: {"kind":NAME,"pid":N,"params":{...}}, the shape of a
 *         POST /api/v1/sessions body, read by the same reader (lib/serve/body.c);
 *   fd 4  where it writes its result: a fixed frame (struct frame: err, exit
 *         code, message, artifacts, the JSON's length) and then the result
 *         JSON itself, at most TASK_RESULT_MAX bytes;
 *   fd 5  the output directory (when the caller gave one);
 *   fd 2  its log for a person: forwarded line by line to ctx->log, never
 *         read for a result;
 *   fd 0, 1  /dev/null.
 * It runs in its own process group with PR_SET_PDEATHSIG (SIGTERM: the task
 * stops and restores the target as on Ctrl-C) and a umask of 077. The
 * caller's stop flag becomes SIGTERM to the group, then SIGKILL after
 * TASK_SPAWN_GRACE_MS.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "common/io.h"
#include "common/exitcode.h"
#include "task/task.h"

#define TASK_SPAWN_GRACE_MS 8000
#define FRAME_MAGIC "CTTASK1"

struct frame {
	char magic[8];
	int32_t err;
	int32_t exit_code;
	char message[256];
	uint32_t nartifacts;
	struct task_artifact artifacts[TASK_MAX_ARTIFACTS];
	uint64_t json_len;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Writes to a pipe whose reader may be gone without a SIGPIPE (a library
 * must not rely on its caller ignoring it): blocked in this thread for the
 * write, and a SIGPIPE the write raised is taken back.
 */
static int write_pipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old;
	struct timespec none = { 0, 0 };
	int err;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	err = ct_write_all(fd, buf, len);
	if (err == -EPIPE)
		while (sigtimedwait(&pipe_set, NULL, &none) > 0)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

int task_request_json(const struct task_args *a, struct strbuf *out)
{
	const struct task *t = a->task;
	struct ct_json j;
	size_t i;

	ct_json_init(&j, out);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "kind", t->name);
	ct_json_kv_i64(&j, "pid", a->pid);
	ct_json_kv_obj_begin(&j, "params");
	for (i = 0; i < t->nparams; i++) {
		const struct task_param *p = &t->params[i];
		const struct task_value *v = &a->v[i];
		char num[64];

		if (!v->set)
			continue;
		ct_json_key(&j, p->name);
		switch (p->type) {
		case TASK_P_BOOL:
			ct_json_str(&j, v->b ? "true" : "false");
			break;
		case TASK_P_INT:
			snprintf(num, sizeof(num), "%lld", v->i);
			ct_json_str(&j, num);
			break;
		case TASK_P_NUM:
			snprintf(num, sizeof(num), "%.17g", v->d);
			ct_json_str(&j, num);
			break;
		case TASK_P_DURATION:
			/* the value was parsed to whole milliseconds */
			snprintf(num, sizeof(num), "%lldms", (long long)(v->d * 1000.0 + 0.5));
			ct_json_str(&j, num);
			break;
		default:
			ct_json_str(&j, v->s);
			break;
		}
	}
	ct_json_obj_end(&j);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}

int task_result_write(int fd, const struct task_result *r)
{
	struct frame f;
	int err;

	memset(&f, 0, sizeof(f));
	memcpy(f.magic, FRAME_MAGIC, sizeof(f.magic));
	f.err = r->err;
	f.exit_code = r->exit_code;
	memcpy(f.message, r->message, sizeof(f.message));
	f.message[sizeof(f.message) - 1] = 0;
	f.nartifacts = (uint32_t)CT_MIN(r->nartifacts, (size_t)TASK_MAX_ARTIFACTS);
	memcpy(f.artifacts, r->artifacts, sizeof(f.artifacts));
	f.json_len = strbuf_error(&r->json) ? 0 : r->json.len;
	if ((err = write_pipe(fd, &f, sizeof(f))))
		return err;
	return f.json_len ? write_pipe(fd, r->json.buf, f.json_len) : 0;
}

static bool artifact_ok(const struct task_artifact *a)
{
	size_t i, n = strnlen(a->name, sizeof(a->name));

	if (!n || n == sizeof(a->name) || a->name[0] == '.' || strnlen(a->mime, sizeof(a->mime)) == sizeof(a->mime))
		return false;
	for (i = 0; i < n; i++) {
		char c = a->name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* The frame and the JSON read so far, checked. */
static int take_result(const struct strbuf *in, struct task_result *r)
{
	struct frame f;
	size_t i;

	if (in->len < sizeof(f))
		return -EPROTO;
	memcpy(&f, in->buf, sizeof(f));
	if (memcmp(f.magic, FRAME_MAGIC, sizeof(f.magic)) || f.json_len > TASK_RESULT_MAX ||
	    f.json_len != in->len - sizeof(f) || f.nartifacts > TASK_MAX_ARTIFACTS || f.err > 0 ||
	    f.exit_code < 0 || f.exit_code > 255)
		return -EPROTO;
	f.message[sizeof(f.message) - 1] = 0;
	task_message_clean(f.message);
	r->err = f.err;
	r->exit_code = f.exit_code;
	memcpy(r->message, f.message, sizeof(r->message));
	r->nartifacts = 0;
	for (i = 0; i < f.nartifacts; i++)
		if (artifact_ok(&f.artifacts[i]))
			r->artifacts[r->nartifacts++] = f.artifacts[i];
	strbuf_reset(&r->json);
	return strbuf_add(&r->json, in->buf + sizeof(f), (size_t)f.json_len);
}

/* Forwards complete lines of the child's stderr to the log ("clrtap: [warning: ]..."). */
static void forward_log(const struct task_ctx *c, struct strbuf *lb, bool flush)
{
	char *p = lb->buf, *nl;
	size_t used = 0;

	while ((nl = memchr(p, '\n', lb->len - used)) || (flush && used < lb->len)) {
		size_t n = nl ? (size_t)(nl - p) : lb->len - used;
		enum ct_log_level lv = CT_LOG_INFO;
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)CT_MIN(n, sizeof(line) - 1), p);
		used += n + (nl ? 1 : 0);
		p += n + (nl ? 1 : 0);
		{
			char *m = line;

			if (!strncmp(m, "clrtap: ", 8))
				m += 8;
			if (!strncmp(m, "warning: ", 9)) {
				m += 9;
				lv = CT_LOG_WARN;
			}
			task_message_clean(m);
			if (c && c->log && *m)
				c->log(c->log_ctx, lv, m);
		}
		if (!nl)
			break;
	}
	if (used) {
		memmove(lb->buf, lb->buf + used, lb->len - used);
		strbuf_setlen(lb, lb->len - used);
	}
	/* a line longer than the buffer is cut, never kept growing */
	if (lb->len > 4000)
		strbuf_setlen(lb, 0);
}

static NORETURN void child(const char *exe, const char *name, int in_fd, int out_fd, int err_fd, int dir_fd,
			   pid_t parent)
{
	char *argv[] = { (char *)exe, (char *)"__task", (char *)name, NULL };
	sigset_t set;
	int nfd, fd;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(EXIT_INTERRUPTED); /* the parent is already gone */
	umask(077);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	/* the fds land on 3, 4, 5 (moved above 9 first, so no dup2 clobbers another) */
	in_fd = fcntl(in_fd, F_DUPFD, 10);
	out_fd = fcntl(out_fd, F_DUPFD, 10);
	err_fd = fcntl(err_fd, F_DUPFD, 10);
	if (dir_fd >= 0)
		dir_fd = fcntl(dir_fd, F_DUPFD, 10);
	nfd = open("/dev/null", O_RDWR);
	if (in_fd < 0 || out_fd < 0 || err_fd < 0 || nfd < 0)
		_exit(EXIT_ERROR);
	dup2(nfd, 0);
	dup2(nfd, 1);
	dup2(err_fd, 2);
	dup2(in_fd, 3);
	dup2(out_fd, 4);
	if (dir_fd >= 0)
		dup2(dir_fd, 5);
	fd = dir_fd >= 0 ? 6 : 5;
	if (close_range((unsigned)fd, ~0U, 0))
		for (; fd < 4096; fd++)
			close(fd);
	execv(exe, argv);
	_exit(127);
}

int task_spawn(const char *exe, const struct task *t, const struct task_args *a, const struct task_ctx *c,
	       struct task_result *r)
{
	struct strbuf req = STRBUF_INIT_MAX(1 << 20), in = STRBUF_INIT_MAX(TASK_RESULT_MAX + sizeof(struct frame));
	struct strbuf lb = STRBUF_INIT_MAX(8192);
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int64_t term_at = 0;
	bool out_open = true, err_open = true, too_big = false, stopped = false;
	int status = 0, err;
	char why[256];
	pid_t pid, self = getpid();

	if (!t || !a || a->task != t || task_args_check(a, why, sizeof(why))) {
		task_fail(r, -EINVAL, "%s", t && a && a->task == t ? why : "arguments of another task");
		r->exit_code = EXIT_USAGE;
		goto error_json;
	}
	if ((err = task_request_json(a, &req))) {
		task_fail(r, err, "%s: cannot write the request: %s", t->name, strerror(-err));
		goto error_json;
	}
	if (pipe2(inp, O_CLOEXEC) || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		task_fail(r, -errno, "%s: cannot make a pipe: %s", t->name, strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0)
		child(exe, t->name, inp[0], outp[1], errp[1], c ? c->outdir_fd : -1, self);
	if (pid < 0) {
		task_fail(r, -errno, "%s: cannot start a process: %s", t->name, strerror(errno));
		goto out;
	}
	setpgid(pid, pid);
	close(inp[0]);
	close(outp[1]);
	close(errp[1]);
	inp[0] = outp[1] = errp[1] = -1;
	/* the request is small (<= 1 MiB, the pipe takes 64 KiB at once): written before reading */
	(void)write_pipe(inp[1], req.buf, req.len); /* a child gone early is told by its missing result */
	close(inp[1]);
	inp[1] = -1;
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	while (out_open || err_open) {
		struct pollfd pf[2] = { { outp[0], out_open ? POLLIN : 0, 0 }, { errp[0], err_open ? POLLIN : 0, 0 } };
		char buf[65536];
		ssize_t n;

		if (c && c->stop && *c->stop && !term_at) {
			kill(-pid, SIGTERM);
			term_at = now_ms();
			stopped = true;
		} else if (term_at && now_ms() - term_at > TASK_SPAWN_GRACE_MS) {
			kill(-pid, SIGKILL);
		}
		if (poll(pf, 2, 100) < 0 && errno != EINTR)
			break;
		if (out_open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(outp[0], buf, sizeof(buf));
			if (n > 0 && !too_big && strbuf_add(&in, buf, (size_t)n)) {
				too_big = true; /* the child is ended: nothing it says is kept */
				kill(-pid, SIGKILL);
			}
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				out_open = false;
		}
		if (err_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(errp[0], buf, sizeof(buf));
			if (n > 0) {
				if (strbuf_add(&lb, buf, (size_t)n))
					strbuf_rollback(&lb, 0); /* a runaway line is dropped */
				forward_log(c, &lb, false);
			}
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				err_open = false;
		}
	}
	forward_log(c, &lb, true);
	/* both pipes closed: the child has exited or is about to; a grace, then SIGKILL */
	if (!term_at)
		term_at = now_ms();
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (now_ms() - term_at > TASK_SPAWN_GRACE_MS)
			kill(-pid, SIGKILL);
		usleep(20 * 1000);
	}
	/* what is left of the group (a helper the task started) goes with it */
	kill(-pid, SIGKILL);
	if (too_big) {
		task_fail(r, -EMSGSIZE, "%s: the result passed %zu bytes: refused", t->name, (size_t)TASK_RESULT_MAX);
	} else if (take_result(&in, r)) {
		if (WIFSIGNALED(status))
			task_fail(r, -EPROTO, "%s: the task's process ended by signal %d without a result",
				  t->name, WTERMSIG(status));
		else
			task_fail(r, -EPROTO, "%s: the task's process exited with code %d without a result",
				  t->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		if (stopped)
			r->exit_code = EXIT_INTERRUPTED;
	}
out:
	if (r->err && (!r->json.len || strbuf_error(&r->json)))
		task_error_json(&r->json, r->exit_code, r->message);
	for (int i = 0; i < 2; i++) {
		if (inp[i] >= 0)
			close(inp[i]);
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	strbuf_release(&req);
	strbuf_release(&in);
	strbuf_release(&lb);
	return r->err;
error_json:
	task_error_json(&r->json, r->exit_code, r->message);
	strbuf_release(&req);
	return r->err;
}

pid_t task_spawn_stream(const char *exe, const char *const *argv, int deathsig, int *out_fd)
{
	int p[2];
	pid_t pid, parent = getpid();

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		/* ends with its parent, even on SIGKILL */
		(void)prctl(PR_SET_PDEATHSIG, deathsig);
		if (getppid() != parent)
			_exit(EXIT_INTERRUPTED);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(p[1], 1) < 0)
			_exit(127);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	(void)fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	*out_fd = p[0];
	return pid;
}
