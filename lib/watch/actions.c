/* SPDX-License-Identifier: MIT */
/*
 * actions.c - what a firing runs. Each action gets a folder of its own
 * (OUTDIR/FIRE-ACTION-PID). clrtap's actions are tasks of the task table
 * (lib/task), run on a thread of their own: in this process (task_run), or
 * in a child clrtap through task_spawn, the one child runner, for
 * TASK_F_ISOLATE ones. The folder is the task's output folder; its result
 * JSON is kept as result.json and its log as log.txt. `exec:COMMAND` runs
 * `sh -c COMMAND` (spawn_shell): no clrtap binary is started here. A time limit asks the task to stop (the
 * runner's SIGTERM and SIGKILL for a child), or sends the shell's group
 * SIGINT, then SIGKILL.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/io.h"
#include "watch/engine_int.h"

#define KILL_GRACE_MS 5000

/* The task of an action and its arguments (durations in seconds). */
struct plan {
	const char *task;
	const char *k[3], *v[3];
	char dur[32];
};

static void fmt_sec(char *buf, size_t len, int64_t ms)
{
	snprintf(buf, len, "%gs", (double)ms / 1000.0); /* "2s", "1.5s", "0.25s" */
}

/* The table's task for an action (exec has none: it runs sh -c). */
static void plan_of(const struct watch_action *a, struct plan *p)
{
	memset(p, 0, sizeof(*p));
	fmt_sec(p->dur, sizeof(p->dur), a->duration_ms ? a->duration_ms : 5000);
	switch (a->kind) {
	case WATCH_ACT_PROFILE:
		p->task = "profile";
		p->k[0] = "duration", p->v[0] = p->dur;
		break;
	case WATCH_ACT_TRACE:
		p->task = "trace";
		p->k[0] = "duration", p->v[0] = p->dur;
		break;
	case WATCH_ACT_STACKS:
		p->task = "stacks";
		p->k[0] = "sample_ms", p->v[0] = "200";
		break;
	case WATCH_ACT_DUMP:
		p->task = "dump";
		break;
	case WATCH_ACT_GCDUMP:
		p->task = "gcdump.collect";
		break;
	case WATCH_ACT_ANALYZE:
		p->task = "analyze";
		p->k[0] = "duration", p->v[0] = p->dur;
		p->k[1] = "analyzer", p->v[1] = a->cmd;
		break;
	case WATCH_ACT_EXEC:
		break;
	}
}

/* exception.txt in an action's folder: the throw that fired it, .NET style. */
static void write_throw_file(int dirfd, const struct pending *p)
{
	const char *nl = strchr(p->detail, '\n');
	struct strbuf sb = STRBUF_INIT;
	int fd;

	strbuf_addf(&sb, "%.*s: %s\n", nl ? (int)(nl - p->detail) : (int)strlen(p->detail), p->detail,
		    nl ? nl + 1 : "");
	if (p->stack) {
		const char *l = p->stack, *e;

		for (; *l && (e = strchr(l, '\n')); l = e + 1)
			strbuf_addf(&sb, "   at %.*s\n", (int)(e - l), l);
	} else if (p->stack_off) {
		strbuf_addstr(&sb, "   (no stack: --no-stacks)\n");
	} else if (p->stack_err) {
		strbuf_addf(&sb, "   (stack not named: %s)\n", strerror(-p->stack_err));
	} else {
		strbuf_addstr(&sb, "   (the event carried no stack)\n");
	}
	fd = openat(dirfd, "exception.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0 && !strbuf_error(&sb))
		(void)ct_write_all(fd, sb.buf, sb.len);
	if (fd >= 0)
		close(fd);
	strbuf_release(&sb);
}

/* The task's log lines, into the action's log.txt. */
static void task_log(void *ctx, enum ct_log_level level, const char *msg)
{
	struct running *rn = ctx;
	char line[1200];
	int n = snprintf(line, sizeof(line), "clrtap: %s%s\n", level == CT_LOG_WARN ? "warning: " : "", msg);

	if (rn->logfd >= 0 && n > 0)
		(void)ct_write_all(rn->logfd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void *task_main(void *arg)
{
	struct running *rn = arg;
	struct task_ctx c = { .stop = &rn->stop, .log = task_log, .log_ctx = rn, .outdir_fd = rn->dirfd };
	int fd;

	if (rn->task->flags & TASK_F_ISOLATE)
		(void)task_spawn("/proc/self/exe", rn->task, &rn->args, &c, &rn->res);
	else
		(void)task_run(rn->task, &rn->args, &c, &rn->res);
	fd = openat(rn->dirfd, "result.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		(void)ct_write_all(fd, rn->res.json.buf ? rn->res.json.buf : "", rn->res.json.len);
		(void)ct_write_all(fd, "\n", 1);
		close(fd);
	}
	__atomic_store_n(&rn->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static int start_task(struct running *rn, const struct plan *p, pid_t pid, struct ct_json *j)
{
	char why[256] = "";
	int err, i;

	rn->task = task_find(p->task);
	if (!rn->task) {
		ct_json_kv_str(j, "error", "no such task in this build");
		return -ENOENT;
	}
	err = task_args_init(&rn->args, rn->task, (int)pid);
	for (i = 0; !err && i < 3 && p->k[i]; i++)
		err = task_args_set(&rn->args, p->k[i], p->v[i], why, sizeof(why));
	if (!err)
		err = task_args_check(&rn->args, why, sizeof(why));
	if (err) {
		ct_json_kv_str(j, "error", why[0] ? why : strerror(-err));
		task_args_release(&rn->args);
		return err;
	}
	rn->logfd = openat(rn->dirfd, "log.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	task_result_init(&rn->res);
	rn->stop = 0;
	rn->done = false;
	rn->thread_on = !pthread_create(&rn->th, NULL, task_main, rn);
	if (!rn->thread_on) {
		ct_json_kv_str(j, "error", "no thread for the task");
		task_result_release(&rn->res);
		task_args_release(&rn->args);
		return -EAGAIN;
	}
	ct_json_kv_str(j, "task", rn->task->name);
	ct_json_kv_str(j, "runs", rn->task->flags & TASK_F_ISOLATE ? "child (task_spawn)" : "in-process");
	ct_json_kv_obj_begin(j, "params");
	for (i = 0; i < 3 && p->k[i]; i++)
		ct_json_kv_str(j, p->k[i], p->v[i]);
	ct_json_obj_end(j);
	return 0;
}

/*
 * `sh -c COMMAND` in its own group, output in the folder, told of the
 * firing by CLRTAP_WATCH_PID/DIR/RULE; dies with watch (PDEATHSIG: SIGINT).
 */
static pid_t spawn_shell(const struct running *rn, const char *const *argv, pid_t pid)
{
	pid_t parent = getpid(), child;
	char env[3][32];

	snprintf(env[0], sizeof(env[0]), "%d", (int)pid);
	snprintf(env[1], sizeof(env[1]), "%d", rn->rule);
	fflush(NULL);
	child = fork();
	if (child == 0) {
		int fd;

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGINT);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		fd = openat(rn->dirfd, "stdout.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 1);
		fd = openat(rn->dirfd, "stderr.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, 0);
		setenv("CLRTAP_WATCH_PID", env[0], 1);
		setenv("CLRTAP_WATCH_DIR", rn->dir, 1);
		setenv("CLRTAP_WATCH_RULE", env[1], 1);
		execv("/bin/sh", (char **)argv);
		_exit(127);
	}
	return child;
}

static int start_exec(struct running *rn, const struct watch_action *a, pid_t pid, struct ct_json *j)
{
	const char *argv[] = { "sh", "-c", a->cmd, NULL };
	size_t i;

	rn->child = spawn_shell(rn, argv, pid);
	if (rn->child < 0) {
		ct_json_kv_str(j, "error", strerror(errno));
		return -errno;
	}
	ct_json_kv_i64(j, "child", rn->child);
	ct_json_kv_arr_begin(j, "argv");
	for (i = 0; argv[i]; i++)
		ct_json_str(j, argv[i]);
	ct_json_arr_end(j);
	return 0;
}

static struct running *free_slot(struct watch *w)
{
	for (size_t i = 0; i < MAX_RUNNING; i++)
		if (!w->run[i].used)
			return &w->run[i];
	return NULL;
}

/* The action's folder, made (OUTDIR first, when it is the default one). */
static int make_dir(struct watch *w, struct running *rn, unsigned fire, const struct watch_action *a, pid_t pid)
{
	snprintf(rn->dir, sizeof(rn->dir), "%s/%u-%s-%d", w->outdir, fire, watch_action_name(a->kind), (int)pid);
	if ((mkdir(w->outdir, 0755) && errno != EEXIST) || (mkdir(rn->dir, 0755) && errno != EEXIST))
		return -errno;
	rn->dirfd = open(rn->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return rn->dirfd < 0 ? -errno : 0;
}

void watch_action_start(struct watch *w, unsigned fire, int ti, int ri, const struct watch_action *a,
			const struct pending *pd)
{
	struct target *tg = &w->targets[ti];
	struct running *rn = free_slot(w);
	struct ct_json j;
	struct strbuf sb;
	struct plan p;
	int err;

	watch_log_begin(&j, &sb, "action-start");
	ct_json_kv_u64(&j, "fire", fire);
	ct_json_kv_str(&j, "action", watch_action_name(a->kind));
	watch_log_target(&j, tg);
	if (!rn || watch_actions_running(w) >= (size_t)w->max_actions) {
		char why[128];

		snprintf(why, sizeof(why), "skipped: %d actions run already (at most %d at once: --max-actions)",
			 (int)watch_actions_running(w), w->max_actions);
		ct_json_kv_str(&j, "error", why);
		watch_log_end(w, &j, &sb);
		watch_say(w, true, "pid %d: %s action %s", (int)tg->pid, watch_action_name(a->kind), why);
		return;
	}
	if (tg->gone && a->kind != WATCH_ACT_EXEC) {
		ct_json_kv_str(&j, "error", "the target is gone; only exec actions run");
		watch_log_end(w, &j, &sb);
		return;
	}
	memset(rn, 0, sizeof(*rn));
	rn->logfd = -1;
	rn->rule = ri;
	if ((err = make_dir(w, rn, fire, a, tg->pid))) {
		ct_json_kv_str(&j, "error", strerror(-err));
		watch_log_end(w, &j, &sb);
		return;
	}
	if (pd->have_stack)
		write_throw_file(rn->dirfd, pd);
	plan_of(a, &p);
	err = p.task ? start_task(rn, &p, tg->pid, &j) : start_exec(rn, a, tg->pid, &j);
	if (err) {
		close(rn->dirfd);
		watch_log_end(w, &j, &sb);
		return;
	}
	rn->used = true;
	rn->target = ti;
	__atomic_add_fetch(&tg->busy[ri], 1, __ATOMIC_RELEASE);
	rn->fire = fire;
	rn->a = a;
	rn->start_ms = watch_now_ms();
	rn->deadline_ms = rn->start_ms + w->action_limit_ms;
	ct_json_kv_str(&j, "dir", rn->dir);
	watch_log_end(w, &j, &sb);
}

/* The files the action left in its folder. */
static void log_artifacts(struct ct_json *j, const struct running *rn)
{
	DIR *d = opendir(rn->dir);
	struct dirent *de;

	ct_json_kv_arr_begin(j, "artifacts");
	while (d && (de = readdir(d))) {
		struct stat st;
		char p[PATH_MAX + 300];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", rn->dir, de->d_name);
		if (lstat(p, &st) || !S_ISREG(st.st_mode) || !st.st_size)
			continue;
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "file", p);
		ct_json_kv_u64(j, "bytes", (uint64_t)st.st_size);
		ct_json_obj_end(j);
	}
	if (d)
		closedir(d);
	ct_json_arr_end(j);
}

static void finish_action(struct watch *w, struct running *rn, int status)
{
	struct target *tg = &w->targets[rn->target];
	bool alive = !tg->gone && watch_target_alive(tg);
	struct ct_json j;
	struct strbuf sb;

	watch_log_begin(&j, &sb, "action-end");
	ct_json_kv_u64(&j, "fire", rn->fire);
	ct_json_kv_str(&j, "action", watch_action_name(rn->a->kind));
	watch_log_target(&j, tg);
	ct_json_kv_str(&j, "dir", rn->dir);
	if (rn->task) {
		ct_json_kv_i64(&j, "exit_code", rn->res.exit_code);
		if (rn->res.err)
			ct_json_kv_str(&j, "error", rn->res.message);
	} else if (WIFEXITED(status)) {
		ct_json_kv_i64(&j, "exit_code", WEXITSTATUS(status));
	} else {
		ct_json_kv_i64(&j, "signal", WTERMSIG(status));
	}
	ct_json_kv_bool(&j, "timed_out", rn->timed_out);
	ct_json_kv_u64(&j, "ms", (uint64_t)(watch_now_ms() - rn->start_ms));
	ct_json_kv_bool(&j, "target_alive", alive);
	if (!alive)
		ct_json_kv_str(&j, "note", "the target exited while the action ran: its artifacts are partial or missing");
	else if (rn->timed_out)
		ct_json_kv_str(&j, "note", "the action hit its time limit and was stopped");
	log_artifacts(&j, rn);
	watch_log_end(w, &j, &sb);
	if (!alive)
		watch_say(w, true, "pid %d exited while its %s action ran; see %s", (int)tg->pid,
			  watch_action_name(rn->a->kind), rn->dir);
	__atomic_sub_fetch(&tg->busy[rn->rule], 1, __ATOMIC_RELEASE);
	if (rn->task) {
		task_result_release(&rn->res);
		task_args_release(&rn->args);
	}
	if (rn->logfd >= 0)
		close(rn->logfd);
	close(rn->dirfd);
	rn->used = false;
}

/* Ended actions are logged; one past its time limit is asked to stop, then killed. */
void watch_actions_reap(struct watch *w)
{
	int64_t t = watch_now_ms();
	int status = 0;

	for (size_t i = 0; i < MAX_RUNNING; i++) {
		struct running *rn = &w->run[i];

		if (!rn->used)
			continue;
		if (rn->task ? __atomic_load_n(&rn->done, __ATOMIC_ACQUIRE)
			     : waitpid(rn->child, &status, WNOHANG) == rn->child) {
			if (rn->task)
				pthread_join(rn->th, NULL);
			finish_action(w, rn, status);
			continue;
		}
		if (!rn->killed_ms && t >= rn->deadline_ms) {
			rn->timed_out = true;
			rn->killed_ms = t;
			if (rn->task)
				rn->stop = 1; /* the task keeps what it has; task_spawn's grace, then SIGKILL */
			else
				kill(-rn->child, SIGINT); /* Ctrl-C: clrtap's commands keep what they have */
		} else if (!rn->task && rn->killed_ms && t >= rn->killed_ms + KILL_GRACE_MS) {
			kill(-rn->child, SIGKILL);
		}
	}
}

size_t watch_actions_running(const struct watch *w)
{
	size_t i, n = 0;

	for (i = 0; i < MAX_RUNNING; i++)
		n += w->run[i].used;
	return n;
}

void watch_actions_stop(struct watch *w)
{
	for (size_t k = 0; k < MAX_RUNNING; k++) {
		struct running *rn = &w->run[k];

		if (!rn->used || rn->killed_ms)
			continue;
		rn->killed_ms = watch_now_ms();
		if (rn->task)
			rn->stop = 1;
		else
			kill(-rn->child, SIGINT);
	}
	while (watch_actions_running(w)) {
		watch_actions_reap(w);
		usleep(50 * 1000);
	}
}
