/* SPDX-License-Identifier: MIT */
/*
 * run.c - running sessions. Each session has a worker thread and its own
 * directory (root/<id>, 0700). The worker runs the session's clrtap command
 * lines (plan.c) as child processes of the clrtap binary, each in its own
 * process group with its own stderr (the session's log sink) and the
 * session's own stop flag: cancel sends SIGINT to the group (the command
 * stops cleanly and writes what it has, leaving the target as found), then
 * SIGKILL after 5 s. A target that dies makes that command fail with its exit
 * code; the server is not affected. Artifacts are the regular files the
 * commands made in the directory, recorded in the history with their sizes.
 *
 * stacks, counters, trace, analyze and doctor run in the worker thread
 * itself through their libraries (lib/stacks, lib/counters, lib/ipc,
 * lib/tracestats, lib/analyze), with the session's stop flag and a per-thread log sink
 * writing the session's stderr.txt.
 *
 * Why child processes for the rest: those commands' workflows still live in
 * src/cmd (and print, and use process-wide signal state), so the server runs
 * the very same code as the CLI by running the CLI. See docs/cmd/serve.md.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "analyze/analyze.h"
#include "common/io.h"
#include "common/log.h"
#include "counters/counters.h"
#include "ipc/ipc.h"
#include "live/live.h"
#include "proc/proc.h"
#include "stacks/stacks.h"
#include "tracestats/tracestats.h"
#include "serve/internal.h"

#define SESSIONS_MAX 64

struct rsession {
	char id[SERVE_ID_LEN + 1];
	char dir[3072];
	struct serve_plan plan;
	struct srv_runner *r;
	pthread_t th;
	volatile sig_atomic_t cancel; /* DELETE asked for it: the session is "cancelled" */
	volatile sig_atomic_t stop;   /* the stop flag the libraries get (they set it too) */
	volatile bool done;
	pid_t child;
	pid_t target;
	int log_fd; /* in-process kinds: the session's stderr.txt */
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
	serve_plan_release(&s->plan);
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

/* Runs one step; returns its exit code (128 + signal when killed). */
static int run_step(struct rsession *s, size_t k)
{
	const struct serve_step *st = &s->plan.steps[k];
	char out[PATH_MAX], err[PATH_MAX];
	int ofd, efd, status = 0;
	int64_t sigint_at = 0;
	pid_t pid;

	if (*st->stdout_name)
		snprintf(out, sizeof(out), "%s/%s", s->dir, st->stdout_name);
	else
		snprintf(out, sizeof(out), "%s/stdout-%zu.txt", s->dir, k + 1);
	snprintf(err, sizeof(err), "%s/stderr.txt", s->dir);
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	efd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ofd < 0 || efd < 0) {
		if (ofd >= 0)
			close(ofd);
		if (efd >= 0)
			close(efd);
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t set;
		int nfd = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		umask(077); /* every file the command makes is its owner's alone */
		sigemptyset(&set);
		sigprocmask(SIG_SETMASK, &set, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (nfd >= 0)
			dup2(nfd, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(st->argv[0], st->argv);
		_exit(127);
	}
	close(ofd);
	close(efd);
	if (pid < 0)
		return 1;
	setpgid(pid, pid);
	s->child = pid;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (s->cancel && !sigint_at) {
			kill(-pid, SIGINT);
			sigint_at = srv_now_ms();
		} else if (sigint_at && srv_now_ms() - sigint_at > 5000) {
			kill(-pid, SIGKILL);
		}
		nanosleep(&ts, NULL);
	}
	s->child = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
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

static int session_error(struct rsession *s, int code, const char *fmt, ...) PRINTF(3, 4);
static int session_error(struct rsession *s, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* an error line (no "warning: "), as cli_error prints it */
	session_log(s, CT_LOG_INFO, msg);
	return code;
}

/* stacks in this thread: lib/stacks, with the session's stop flag and log. */
static int run_stacks(struct rsession *s)
{
	struct stacks_capture_opts co = { .sample_ms = 10, .stop = &s->stop, .lines = true };
	struct stacks_capture cap;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	char path[PATH_MAX], why[512];
	int err, code = 0, fd;

	err = proc_target_find(s->target, &t);
	if (err) {
		proc_target_strerror(s->target, err, &t, why, sizeof(why));
		return session_error(s, ct_exit_for(err), "%s", why);
	}
	ipc_endpoint_init(&ep, &t, 5000);
	err = stacks_capture_run(&ep, t.pid, &co, &cap);
	if (err) {
		if (cap.stage == STACKS_STAGE_SESSION) {
			ipc_session_strerror(err, &cap.res, &ep, &cap.rerr, why, sizeof(why));
			code = session_error(s, cap.res.bad_prologue || err == -EFBIG ? 6 : ct_exit_for(err),
					     "%s: %s", cap.res.bytes ? "the session broke off"
								     : "cannot sample the stacks", why);
		} else if (cap.stage == STACKS_STAGE_READ) {
			code = session_error(s, err == -EBADMSG ? 6 : ct_exit_for(err),
					     "cannot read the session stream (byte %" PRIu64 "): %s",
					     cap.bad_offset, cap.msg);
		} else {
			code = session_error(s, 1, "cannot build the tree: %s", strerror(-err));
		}
		goto out;
	}
	if (cap.incomplete)
		ct_warn("the stream ended without its end marker: stacks may be missing");
	ct_json_init(&j, &sb);
	stacks_capture_json(&cap, &j);
	if (ct_json_finish(&j) || strbuf_addch(&sb, '\n')) {
		code = session_error(s, 1, "cannot make the JSON document: %s", strerror(ENOMEM));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/report.json", s->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || ct_write_all(fd, sb.buf, sb.len))
		code = session_error(s, 1, "cannot write %s", path);
	if (fd >= 0)
		close(fd);
out:
	stacks_capture_release(&cap);
	strbuf_release(&sb);
	return code;
}

/* counters in this thread: lib/counters, the document of `counters collect --format json`. */
struct cctx {
	struct counters_spec spec;
	struct counters_decoder *dec;
	struct counters_clock clock;
	struct ct_json j;
	struct strbuf doc;
	unsigned interval;
	uint64_t nvalues;
	char last_notice[256];
};

static int c_value(void *ctx, const struct counters_value *cv)
{
	struct cctx *c = ctx;
	struct counters_value v = *cv;
	char ts[80];

	if (!counters_spec_wants(&c->spec, v.meter, v.source, v.name))
		return 0;
	if (v.interval_sec <= 0)
		v.interval_sec = c->interval;
	counters_clock_format(&c->clock, v.timestamp, ts, sizeof(ts));
	counters_json_value(&c->j, &v, ts);
	c->nvalues++;
	return strbuf_error(&c->doc);
}

static int c_notice(void *ctx, const char *msg)
{
	struct cctx *c = ctx;

	if (strcmp(c->last_notice, msg)) {
		ct_warn("%s", msg);
		snprintf(c->last_notice, sizeof(c->last_notice), "%s", msg);
	}
	return 0;
}

static const struct counters_handlers c_handlers = { .value = c_value, .notice = c_notice };

static int c_event(void *ctx, const struct nt_event *ev)
{
	struct cctx *c = ctx;
	int err = counters_decode(c->dec, ev, &c_handlers, c);

	if (err == -EBADMSG) {
		ct_warn("a counter event could not be decoded (skipped)");
		return 0;
	}
	return err < 0 ? err : 0;
}

static void c_opened(void *ctx, const struct nt_trace_info *ti)
{
	struct cctx *c = ctx;

	counters_clock_set(&c->clock, ti);
}

static int write_file(struct rsession *s, const char *name, const struct strbuf *sb)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	err = ct_write_all(fd, sb->buf, sb->len);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* Ends the document j, built into sb (err: how building it went), and writes it as name. */
static int write_json_file(struct rsession *s, const char *name, struct ct_json *j,
			   struct strbuf *sb, int err)
{
	if (!err)
		err = ct_json_finish(j);
	if (!err)
		err = strbuf_addch(sb, '\n');
	if (!err)
		err = write_file(s, name, sb);
	return err;
}

static int run_counters(struct rsession *s)
{
	struct cctx c = { .doc = STRBUF_INIT_MAX((size_t)512 << 20) };
	struct counters_session cs = { 0 };
	struct ipc_trace_config cfg = { 0 };
	struct live_session_opts live = { 0 };
	struct live_session_result res;
	struct nt_handlers h = { .event = c_event };
	struct proc_target t;
	struct ipc_endpoint ep;
	char why[512];
	int err, code = 0;

	c.interval = s->plan.interval;
	err = counters_spec_add(&c.spec, s->plan.counters, false);
	if (err) {
		code = session_error(s, 2, "bad --counters '%s': %s", s->plan.counters,
				     err == -E2BIG ? "too many or too long names"
						   : "syntax is Source[name,...],...");
		goto out;
	}
	err = proc_target_find(s->target, &t);
	if (err) {
		proc_target_strerror(s->target, err, &t, why, sizeof(why));
		code = session_error(s, ct_exit_for(err), "%s", why);
		goto out;
	}
	ipc_endpoint_init(&ep, &t, 5000);
	err = counters_session_init(&cs, &c.spec, c.interval, 1000, 20);
	if (!err)
		err = counters_decoder_new(&c.dec, cs.session_id);
	if (err) {
		code = session_error(s, 1, "cannot set up the session: %s", strerror(-err));
		goto out;
	}
	ct_json_init(&c.j, &c.doc);
	ct_json_obj_begin_lines(&c.j);
	ct_json_kv_i64(&c.j, "pid", t.pid);
	ct_json_kv_i64(&c.j, "interval_sec", c.interval);
	ct_json_key(&c.j, "values");
	ct_json_arr_begin_lines(&c.j);
	cfg.providers = cs.providers;
	cfg.nproviders = cs.nproviders;
	cfg.buffer_mb = 16;
	live.ep = &ep;
	live.cfg = &cfg;
	live.stop = &s->stop;
	live.duration_ms = (int64_t)(s->plan.duration_s * 1000);
	live.h = &h;
	live.prompt = true; /* the latest values, not one flush late */
	live.opened = c_opened;
	live.ctx = &c;
	err = live_session_run(&live, &res);
	if (err) {
		code = session_error(s, 1, "cannot run the session: %s", strerror(-err));
		goto out;
	}
	if (res.session_err && (res.session.bytes == 0 || res.session.bad_prologue)) {
		ipc_session_strerror(res.session_err, &res.session, &ep, &res.rerr, why, sizeof(why));
		code = session_error(s, res.session.bad_prologue ? 6 : ct_exit_for(res.session_err),
				     "cannot read counters: %s; no file written", why);
		goto out;
	}
	ct_json_arr_end(&c.j);
	ct_json_obj_end(&c.j);
	if (ct_json_finish(&c.j) || strbuf_addch(&c.doc, '\n')) {
		code = session_error(s, 1, "cannot write counters.json");
		goto out;
	}
	if (res.reader_err < 0 && res.session.target_ended && !res.session.complete) {
		/* the message last: it is the session's error */
		if (c.nvalues && !write_file(s, "counters.json.partial", &c.doc))
			ct_info("kept the %" PRIu64 " values read in counters.json.partial", c.nvalues);
		code = session_error(s, 9, "the target went away during the session (%" PRIu64
				     " values read)", c.nvalues);
		goto out;
	}
	if (res.reader_err < 0) {
		code = session_error(s, 6, "the session stream broke at byte %" PRIu64 ": %s (%s)",
				     res.reader_offset, res.reader_msg, strerror(-res.reader_err));
		goto out;
	}
	if (res.session_err) {
		ipc_session_strerror(res.session_err, &res.session, &ep, &res.rerr, why, sizeof(why));
		code = session_error(s, ct_exit_for(res.session_err), "the session ended badly: %s",
				     why);
		goto out;
	}
	if (res.session.target_ended)
		ct_warn("the target ended the session (did it exit?)");
	err = write_file(s, "counters.json", &c.doc);
	if (err)
		code = session_error(s, 1, "cannot write counters.json: %s", strerror(-err));
out:
	strbuf_release(&c.doc);
	counters_decoder_free(c.dec);
	counters_session_release(&cs);
	counters_spec_release(&c.spec);
	return code;
}

/* trace in this thread: the calls of `trace collect` and `trace report --json`. */
#define TRACE_MAX_PROVIDERS 64

static int fd_sink(void *ctx, const void *buf, size_t n)
{
	return ct_write_all(*(int *)ctx, buf, n);
}

static int trace_report(struct rsession *s, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	struct tracestats *ts = NULL;
	const char *stage;
	char path[PATH_MAX];
	int fd, err, read_err, code = 0;

	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return session_error(s, 1, "cannot open %s: %s", path, strerror(errno));
	err = tracestats_load_fd(fd, false, &ts, &read_err, &stage);
	close(fd);
	if (err)
		return session_error(s, 1, "cannot %s %s: %s", stage, path, strerror(-err));
	err = tracestats_format_json(ts, 10, path, &sb);
	if (!err)
		err = write_file(s, "report.json", &sb);
	if (err)
		code = session_error(s, 1, "cannot write the report: %s", strerror(-err));
	else if (read_err)
		code = session_error(s, 8, "%s is damaged or truncated: only the events before it were read",
				     path);
	strbuf_release(&sb);
	tracestats_free(ts);
	return code;
}

static int run_trace(struct rsession *s)
{
	struct ipc_provider provs[TRACE_MAX_PROVIDERS];
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct ipc_session_result res;
	struct ipc_error rerr;
	struct proc_target t;
	struct ipc_endpoint ep;
	char why[512], tmp[PATH_MAX], out[PATH_MAX], specs[SERVE_MAX_PARAM_LEN + 1];
	size_t np = 0;
	int fd, err, code = 0;

	if (*s->plan.trace_profile) {
		const struct ipc_provider *pp;
		size_t n, i;

		if (ipc_profile_lookup(s->plan.trace_profile, &pp, &n, &cfg.rundown_keyword))
			return session_error(s, 2, "unknown profile '%s' (see --list-profiles)",
					     s->plan.trace_profile);
		for (i = 0; i < n && np < TRACE_MAX_PROVIDERS; i++)
			provs[np++] = pp[i];
	}
	if (*s->plan.providers) {
		char *save = NULL, *tok;

		snprintf(specs, sizeof(specs), "%s", s->plan.providers);
		for (tok = strtok_r(specs, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (np == TRACE_MAX_PROVIDERS)
				return session_error(s, 2, "more than %d providers", TRACE_MAX_PROVIDERS);
			if (ipc_provider_parse(tok, &provs[np]))
				return session_error(s, 2, "bad provider spec '%s'", tok);
			np++;
		}
	}
	if (!np)
		return session_error(s, 2, "no provider to trace");
	err = proc_target_find(s->target, &t);
	if (err) {
		proc_target_strerror(s->target, err, &t, why, sizeof(why));
		return session_error(s, ct_exit_for(err), "%s", why);
	}
	ipc_endpoint_init(&ep, &t, 5000);
	cfg.providers = provs;
	cfg.nproviders = np;
	cfg.buffer_mb = 256;
	cfg.rundown = true;
	cfg.stackwalk = true;
	snprintf(tmp, sizeof(tmp), "%s/trace.nettrace.tmp", s->dir);
	snprintf(out, sizeof(out), "%s/trace.nettrace", s->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return session_error(s, 1, "cannot write %s: %s", tmp, strerror(errno));
	so.sink = fd_sink;
	so.ctx = &fd;
	so.stop = &s->stop;
	so.duration_ms = (int64_t)(s->plan.duration_s * 1000);
	ct_info("tracing pid %d with %zu provider%s into %s", (int)t.pid, np, np == 1 ? "" : "s",
		out);
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	if (close(fd) && !err)
		err = -errno;
	if (!err && res.complete) {
		if (rename(tmp, out))
			return session_error(s, 1, "cannot write %s: %s", out, strerror(errno));
		if (res.target_ended)
			ct_warn("the target closed the session before clrtap stopped it (did it exit?)");
		return trace_report(s, "trace.nettrace");
	}
	if (res.bytes == 0 || res.bad_prologue) {
		unlink(tmp);
		ipc_session_strerror(err ?: -EPROTO, &res, &ep, &rerr, why, sizeof(why));
		return session_error(s, res.bad_prologue ? 6 : ct_exit_for(err ?: -EPROTO),
				     "cannot trace: %s; kept nothing, %s not written", why, out);
	}
	snprintf(out, sizeof(out), "%s/trace.nettrace.partial", s->dir);
	if (rename(tmp, out))
		return session_error(s, 1, "cannot keep the partial trace: %s", strerror(errno));
	if (err) {
		ipc_session_strerror(err, &res, &ep, &rerr, why, sizeof(why));
		code = session_error(s, 9, "trace broke off after %" PRIu64 " bytes: %s; kept %s, "
				     "incomplete", res.bytes, why, out);
	} else {
		code = session_error(s, 9, "the stream ended without its end marker after %" PRIu64
				     " bytes: kept %s, incomplete", res.bytes, out);
	}
	return code;
}

/* analyze in this thread: lib/analyze's workflow, the calls of `clrtap analyze`. */
static int analyze_exit_for(enum an_fail f, int err)
{
	switch (f) {
	case AN_FAIL_USAGE: return 2;
	case AN_FAIL_NO_PROCESS: return 3;
	case AN_FAIL_PROTOCOL: return 6;
	case AN_FAIL_BAD_INPUT: return 8;
	case AN_FAIL_PARTIAL: return 9;
	case AN_FAIL_INTERRUPTED: return 130;
	case AN_FAIL_ERRNO: return ct_exit_for(err);
	default: return 1;
	}
}

static int run_analyze(struct rsession *s)
{
	const struct an_analyzer *a = analyze_analyzer_find(s->plan.analyzer);
	struct an_report *r = NULL;
	struct strbuf sb = STRBUF_INIT;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ct_json j;
	char why[512], path[PATH_MAX];
	const char *msg;
	int err, fd, code = 0;

	if (!a)
		return session_error(s, 2, "unknown analyzer '%s'", s->plan.analyzer);
	err = proc_target_find(s->target, &t);
	if (err) {
		proc_target_strerror(s->target, err, &t, why, sizeof(why));
		return session_error(s, ct_exit_for(err), "%s", why);
	}
	ipc_endpoint_init(&ep, &t, 5000);
	if (analyze_report_new(&r, a, 10))
		return session_error(s, 1, "out of memory");
	ct_info("analyzing pid %d (%s) for %.1f s", (int)t.pid, a->name, s->plan.duration_s);
	if (analyze_report_live(r, &ep, t.pid, (int64_t)(s->plan.duration_s * 1000), &s->stop)) {
		enum an_fail f = analyze_report_failure(r, &err, &msg);

		code = session_error(s, analyze_exit_for(f, err), "%s", msg ? msg : "the analysis failed");
		goto out;
	}
	/* report.md and report.html first: report.json is the report the UI waits for */
	err = analyze_report_md(r, &sb);
	if (!err)
		err = write_file(s, "report.md", &sb);
	if (err)
		ct_warn("cannot write report.md: %s", strerror(-err));
	snprintf(path, sizeof(path), "%s/report.html", s->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || analyze_report_html(r, fd))
		ct_warn("cannot write report.html");
	if (fd >= 0)
		close(fd);
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	err = write_json_file(s, "report.json", &j, &sb, analyze_report_json(r, &j));
	if (err)
		code = session_error(s, 1, "cannot write report.json: %s", strerror(-err));
	else if (analyze_report_partial(r))
		code = session_error(s, 9, "%s", analyze_report_partial(r));
out:
	strbuf_release(&sb);
	analyze_report_free(r);
	return code;
}

/* doctor in this thread: analyze_doctor_run, the document of `clrtap doctor --json`. */
static int run_doctor(struct rsession *s)
{
	struct an_doctor *d;
	struct strbuf sb = STRBUF_INIT;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ct_json j;
	char why[512];
	int err, code = 0;

	err = proc_target_find(s->target, &t);
	if (err) {
		proc_target_strerror(s->target, err, &t, why, sizeof(why));
		return session_error(s, ct_exit_for(err), "%s", why);
	}
	ipc_endpoint_init(&ep, &t, 5000);
	d = calloc(1, sizeof(*d));
	if (!d)
		return session_error(s, 1, "out of memory");
	ct_info("examining pid %d for %.1f s", (int)t.pid, s->plan.duration_s);
	if (analyze_doctor_run(&ep, t.pid, (int64_t)(s->plan.duration_s * 1000), &s->stop, d)) {
		code = session_error(s, d->fail == AN_FAIL_ERRNO ? ct_exit_for(d->err) :
					d->fail == AN_FAIL_PROTOCOL ? 6 : 1, "%s", d->msg);
		goto out;
	}
	/* the text of `clrtap doctor` as report.md */
	(void)analyze_doctor_text(d, false, &sb);
	err = strbuf_error(&sb);
	if (!err)
		err = write_file(s, "report.md", &sb);
	if (err)
		ct_warn("cannot write report.md: %s", strerror(-err));
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	err = write_json_file(s, "report.json", &j, &sb, analyze_doctor_json(d, &j));
	if (err)
		code = session_error(s, 1, "cannot write report.json: %s", strerror(-err));
	else if (d->partial[0])
		code = session_error(s, 9, "%s; the findings cover what came before", d->partial);
out:
	strbuf_release(&sb);
	free(d);
	return code;
}

static int run_inproc(struct rsession *s)
{
	char path[PATH_MAX];
	int code = 1;

	snprintf(path, sizeof(path), "%s/stderr.txt", s->dir);
	s->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	ct_log_set_thread(session_log, s);
	if (s->plan.inproc == SERVE_INPROC_STACKS)
		code = run_stacks(s);
	else if (s->plan.inproc == SERVE_INPROC_COUNTERS)
		code = run_counters(s);
	else if (s->plan.inproc == SERVE_INPROC_TRACE)
		code = run_trace(s);
	else if (s->plan.inproc == SERVE_INPROC_ANALYZE)
		code = run_analyze(s);
	else if (s->plan.inproc == SERVE_INPROC_DOCTOR)
		code = run_doctor(s);
	ct_log_set_thread(NULL, NULL);
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
	return code;
}

/* The last "clrtap: " line of stderr.txt: the CLI's own message. */
static void last_message(struct rsession *s, char *msg, size_t len)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 20);
	char path[PATH_MAX];
	const char *p, *best = NULL;

	*msg = 0;
	snprintf(path, sizeof(path), "%s/stderr.txt", s->dir);
	if (strbuf_read_file(&sb, path)) {
		strbuf_release(&sb);
		return;
	}
	for (p = sb.buf; p && *p;) {
		const char *nl = strchr(p, '\n');

		if (!strncmp(p, "clrtap: ", 8) && strncmp(p, "clrtap: warning", 15))
			best = p;
		p = nl ? nl + 1 : NULL;
	}
	if (best) {
		best += 8;
		snprintf(msg, len, "%.*s", (int)strcspn(best, "\n"), best);
	}
	strbuf_release(&sb);
}

static void make_report(struct rsession *s)
{
	struct strbuf in = STRBUF_INIT_MAX(256u << 20), out = STRBUF_INIT;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", s->dir, s->plan.folded);
	if (strbuf_read_file(&in, path))
		goto done;
	if (serve_folded_to_json(in.buf, in.len, &out))
		goto done;
	snprintf(path, sizeof(path), "%s/%s", s->dir, s->plan.report);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		(void)ct_write_all(fd, out.buf, out.len);
		close(fd);
	}
done:
	strbuf_release(&in);
	strbuf_release(&out);
}

static void record_artifacts(struct rsession *s)
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
		/* an empty report (a failed step) is not a report */
		srv_db_add_artifact(s->r->db, s->id, e->d_name, (uint64_t)st.st_size,
				    *s->plan.report && !strcmp(e->d_name, s->plan.report) &&
					    st.st_size > 0);
	}
	closedir(d);
}

static void *worker(void *arg)
{
	struct rsession *s = arg;
	struct srv_db_end end = { .err_code = -1 };
	char msg[512];
	size_t k;
	int code = 0;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	srv_db_set_running(s->r->db, s->id, srv_now_ms());
	if (s->plan.inproc)
		code = run_inproc(s);
	for (k = 0; k < s->plan.nsteps; k++) {
		/* a cancelled first step still gets its report step (partial data) */
		if (k > 0 && code != 0 && code != 9)
			break;
		code = run_step(s, k);
	}
	if (*s->plan.folded && (code == 0 || s->cancel))
		make_report(s);
	record_artifacts(s);
	end.exit_code = code;
	if (s->cancel) {
		end.status = "cancelled";
	} else if (code == 0) {
		end.status = "done";
	} else {
		end.status = "failed";
		end.err_code = code;
		last_message(s, msg, sizeof(msg));
		if (!*msg)
			snprintf(msg, sizeof(msg), "the command exited with code %d", code);
		end.err_message = msg;
	}
	srv_db_set_end(s->r->db, s->id, &end, srv_now_ms());
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

	*code = 2;
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
	err = serve_plan_build(&s->plan, r->exe, s->dir, req, why, why_len);
	if (err) {
		rsession_free(s);
		return err;
	}
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
		*code = 1;
		snprintf(why, why_len, "%zu sessions are running: the limit (wait for one to end)",
			 running);
		rsession_free(s);
		return -EBUSY;
	}
	if (mkdirat(r->rootfd, s->id, 0700)) {
		err = -errno;
		pthread_mutex_unlock(&r->lock);
		*code = 1;
		snprintf(why, why_len, "cannot make the session's directory: %s", strerror(-err));
		rsession_free(s);
		return err;
	}
	srv_proc_name(req->pid, pname, sizeof(pname));
	err = srv_db_insert(r->db, s->id, req, pname, s->dir, s->plan.duration_s, srv_now_ms());
	if (!err)
		err = -pthread_create(&s->th, NULL, worker, s);
	if (err) {
		pthread_mutex_unlock(&r->lock);
		*code = 1;
		snprintf(why, why_len, "cannot start the session: %s", strerror(-err));
		rsession_free(s);
		return err;
	}
	r->s[slot] = s;
	pthread_mutex_unlock(&r->lock);
	snprintf(id, SERVE_ID_LEN + 1, "%s", s->id);
	return 0;
}
