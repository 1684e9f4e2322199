/* SPDX-License-Identifier: MIT */
/*
 * run.c - running sessions. Each session has a worker thread and its own
 * directory (root/<id>, 0700, the task's output directory: artifacts under
 * fixed names). The worker runs the session's task from the table
 * (lib/task): in this thread with task_run, or for a TASK_F_ISOLATE task
 * (a perf sampler, a probe's breakpoints or ReJIT, a dump) in a child clrtap
 * through task_spawn, the one child runner. Either way it gets the session's
 * stop flag (DELETE sets it; a child gets SIGTERM, then SIGKILL after a
 * grace) and a log sink that writes the session's stderr.txt. The task's
 * result JSON is the session's report (report.json); a failure's message
 * and exit code are the task's own (lib/common/exitcode.c). A target that
 * dies fails that session only; the server is not affected.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "common/io.h"
#include "common/log.h"
#include "proc/proc.h"
#include "task/task.h"
#include "serve/internal.h"

#define SESSIONS_MAX 64

struct rsession {
	char id[SERVE_ID_LEN + 1];
	char dir[3072];
	const struct task *task;
	struct task_args args;
	struct srv_runner *r;
	pthread_t th;
	volatile sig_atomic_t cancel; /* DELETE asked for it: the session is "cancelled" */
	volatile sig_atomic_t stop;   /* the stop flag the task gets (libraries set it too) */
	volatile bool done;
	pid_t target;
	int log_fd; /* the session's stderr.txt */
};

struct srv_runner {
	sqlite3 *db;
	char exe[PATH_MAX];
	char root[3000];
	int rootfd;
	unsigned max_running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rsession *s[SESSIONS_MAX];
};

int srv_runner_new(sqlite3 *db, const char *exe, const char *root, unsigned max_running,
		   struct srv_runner **out)
{
	struct srv_runner *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->db = db;
	snprintf(r->exe, sizeof(r->exe), "%s", exe);
	snprintf(r->root, sizeof(r->root), "%s", root);
	r->max_running = max_running ? CT_MIN(max_running, SESSIONS_MAX) : 8;
	if (mkdir(root, 0700) && errno != EEXIST) {
		int e = -errno;

		free(r);
		return e;
	}
	r->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (r->rootfd < 0) {
		int e = -errno;

		free(r);
		return e;
	}
	/* a directory an older clrtap made 0755 is closed to others */
	{
		struct stat st;

		if (!fstat(r->rootfd, &st) && (st.st_mode & 0077))
			fchmod(r->rootfd, 0700);
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	*out = r;
	return 0;
}

int srv_runner_dirfd(const struct srv_runner *r)
{
	return r->rootfd;
}

void srv_runner_dir(const struct srv_runner *r, const char *id, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", r->root, id);
}

static void rsession_free(struct rsession *s)
{
	task_args_release(&s->args);
	free(s);
}

/* Reaps finished workers. Called with the lock held. */
static void reap_locked(struct srv_runner *r)
{
	size_t i;

	for (i = 0; i < SESSIONS_MAX; i++) {
		if (r->s[i] && r->s[i]->done) {
			pthread_join(r->s[i]->th, NULL);
			rsession_free(r->s[i]);
			r->s[i] = NULL;
		}
	}
}

void srv_runner_free(struct srv_runner *r)
{
	size_t i;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < SESSIONS_MAX; i++) {
		if (r->s[i]) {
			r->s[i]->cancel = 1;
			r->s[i]->stop = 1;
		}
	}
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < SESSIONS_MAX; i++) {
		if (r->s[i]) {
			pthread_join(r->s[i]->th, NULL);
			rsession_free(r->s[i]);
			r->s[i] = NULL;
		}
	}
	close(r->rootfd);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

/* The session's own log sink: its stderr.txt, lines as the CLI writes them. */
static void session_log(void *ctx, enum ct_log_level level, const char *msg)
{
	struct rsession *s = ctx;
	char line[1200];
	int n = snprintf(line, sizeof(line), "clrtap: %s%s\n", level == CT_LOG_WARN ? "warning: " : "",
			 msg);

	if (s->log_fd >= 0 && n > 0)
		(void)ct_write_all(s->log_fd, line, (size_t)CT_MIN((size_t)n, sizeof(line) - 1));
}

static void record_artifacts(struct rsession *s, bool have_report)
{
	int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	DIR *d;
	struct dirent *e;

	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!serve_artifact_name_valid(e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		srv_db_add_artifact(s->r->db, s->id, e->d_name, (uint64_t)st.st_size,
				    have_report && !strcmp(e->d_name, "report.json") && st.st_size > 0);
	}
	closedir(d);
}

static void *worker(void *arg)
{
	struct rsession *s = arg;
	struct srv_db_end end = { .err_code = -1 };
	struct task_result res;
	struct task_ctx ctx = { .stop = &s->stop, .log = session_log, .log_ctx = s, .outdir_fd = -1 };
	bool have_report = false;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	srv_db_set_running(s->r->db, s->id, srv_now_ms());
	task_result_init(&res);
	ctx.outdir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	s->log_fd = ctx.outdir_fd < 0 ? -1 : openat(ctx.outdir_fd, "stderr.txt",
						     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ctx.outdir_fd < 0)
		task_fail(&res, -errno, "cannot open the session's directory: %s", strerror(errno));
	else if (s->task->flags & TASK_F_ISOLATE)
		task_spawn(s->r->exe, s->task, &s->args, &ctx, &res);
	else
		task_run(s->task, &s->args, &ctx, &res);
	/* the result is the report: whole, or partial (EXIT_PARTIAL, "partial": true) */
	if ((!res.err || res.exit_code == EXIT_PARTIAL) && res.json.len && !strbuf_error(&res.json) &&
	    ctx.outdir_fd >= 0) {
		int fd = openat(ctx.outdir_fd, "report.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				0600);

		have_report = fd >= 0 && !ct_write_all(fd, res.json.buf, res.json.len) &&
			      !ct_write_all(fd, "\n", 1);
		if (fd >= 0)
			close(fd);
	}
	if (res.err)
		session_log(s, CT_LOG_INFO, res.message);
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
	if (ctx.outdir_fd >= 0)
		close(ctx.outdir_fd);
	record_artifacts(s, have_report);
	end.exit_code = res.exit_code;
	if (s->cancel) {
		end.status = "cancelled";
	} else if (!res.err) {
		end.status = "done";
	} else {
		end.status = "failed";
		end.err_code = res.exit_code;
		end.err_message = res.message;
	}
	srv_db_set_end(s->r->db, s->id, &end, srv_now_ms());
	task_result_release(&res);
	pthread_mutex_lock(&s->r->lock);
	s->done = true;
	pthread_cond_broadcast(&s->r->cond);
	pthread_mutex_unlock(&s->r->lock);
	return NULL;
}

static struct rsession *find_locked(struct srv_runner *r, const char *id)
{
	size_t i;

	for (i = 0; i < SESSIONS_MAX; i++) {
		if (r->s[i] && !strcmp(r->s[i]->id, id))
			return r->s[i];
	}
	return NULL;
}

bool srv_runner_active(struct srv_runner *r, const char *id)
{
	struct rsession *s;
	bool yes;

	pthread_mutex_lock(&r->lock);
	s = find_locked(r, id);
	yes = s && !s->done;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

int srv_runner_cancel(struct srv_runner *r, const char *id)
{
	struct rsession *s;
	struct timespec until;

	pthread_mutex_lock(&r->lock);
	s = find_locked(r, id);
	if (!s || s->done) {
		pthread_mutex_unlock(&r->lock);
		return -ENOENT;
	}
	s->cancel = 1;
	s->stop = 1;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 8;
	while (!s->done) {
		if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int srv_runner_start(struct srv_runner *r, const struct serve_session_req *req, char *id,
		     int *code, char *why, size_t why_len)
{
	struct rsession *s;
	struct proc_target t;
	unsigned char rnd[8];
	char pname[64];
	size_t i, slot = SESSIONS_MAX, running = 0;
	int err;

	*code = EXIT_USAGE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		free(s);
		return -EIO;
	}
	snprintf(s->id, sizeof(s->id), "s-");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(s->id + 2 + 2 * i, 3, "%02x", rnd[i]);
	s->r = r;
	s->target = req->pid;
	s->log_fd = -1;
	srv_runner_dir(r, s->id, s->dir, sizeof(s->dir));
	err = serve_session_args(req, &s->args, why, why_len);
	if (err) {
		rsession_free(s);
		return err;
	}
	s->task = s->args.task;
	/* the target first, with the CLI's words */
	err = proc_target_find(req->pid, &t);
	if (err) {
		*code = ct_exit_for(err);
		proc_target_strerror(req->pid, err, &t, why, why_len);
		rsession_free(s);
		return err == -ESRCH || err == -EACCES || err == -ELOOP || err == -ENOTSOCK ? err
											     : -ENOENT;
	}
	pthread_mutex_lock(&r->lock);
	reap_locked(r);
	for (i = 0; i < SESSIONS_MAX; i++) {
		if (r->s[i])
			running++;
		else if (slot == SESSIONS_MAX)
			slot = i;
	}
	if (running >= r->max_running || slot == SESSIONS_MAX) {
		pthread_mutex_unlock(&r->lock);
		*code = EXIT_ERROR;
		snprintf(why, why_len, "%zu sessions are running: the limit (wait for one to end)",
			 running);
		rsession_free(s);
		return -EBUSY;
	}
	if (mkdirat(r->rootfd, s->id, 0700)) {
		err = -errno;
		pthread_mutex_unlock(&r->lock);
		*code = EXIT_ERROR;
		snprintf(why, why_len, "cannot make the session's directory: %s", strerror(-err));
		rsession_free(s);
		return err;
	}
	srv_proc_name(req->pid, pname, sizeof(pname));
	err = srv_db_insert(r->db, s->id, req, pname, s->dir,
			    task_arg(&s->args, "duration") ? task_arg(&s->args, "duration")->d : 0, srv_now_ms());
	if (!err)
		err = -pthread_create(&s->th, NULL, worker, s);
	if (err) {
		pthread_mutex_unlock(&r->lock);
		*code = EXIT_ERROR;
		snprintf(why, why_len, "cannot start the session: %s", strerror(-err));
		rsession_free(s);
		return err;
	}
	r->s[slot] = s;
	pthread_mutex_unlock(&r->lock);
	snprintf(id, SERVE_ID_LEN + 1, "%s", s->id);
	return 0;
}
