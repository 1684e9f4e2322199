/* SPDX-License-Identifier: MIT */
/*
 * task.c - the `profile` task: one sampling session of a process (engine
 * chosen as asked, perf_event or EventPipe), its flame written to a path or
 * into the task's output folder, and the result as a C struct (for the CLI's
 * text) and the JSON of docs/tasks/profile.md. Never prints: warnings go to
 * the task's log and, for a person reading the result, to its statements.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "common/exitcode.h"
#include "common/io.h"
#include "common/log.h"
#include "profile/bundle.h"
#include "profile/internal.h"
#include "sym/sym.h"

#define TOP_MAX PROFILE_TOP_MAX

const struct task_param profile_task_params[] = {
	{ "duration", TASK_P_DURATION, "3", 0.1, 3600, NULL, "how long to sample", 0 },
	{ "frequency", TASK_P_INT, "99", 1, 10000, NULL,
	  "samples per second per thread (perf engine only)", 0 },
	{ "engine", TASK_P_ENUM, "auto", 0, 0, "auto perf eventpipe",
	  "auto (perf_event, else EventPipe when perf_event_open is denied), perf or eventpipe", 0 },
	{ "off_cpu", TASK_P_BOOL, "false", 0, 0, NULL,
	  "blocked time instead of CPU time (weights in ns)", 0 },
	{ "wall", TASK_P_BOOL, "false", 0, 0, NULL, "on-CPU + off-CPU time (weights in ns)", 0 },
	{ "threads", TASK_P_BOOL, "false", 0, 0, NULL, "a root frame per thread name", 0 },
	{ "no_kernel", TASK_P_BOOL, "false", 0, 0, NULL, "user stacks only", 0 },
	{ "output", TASK_P_STRING, NULL, 0, 4096, NULL,
	  "output file; format from the name: .folded .html .svg .speedscope.json .pb.gz",
	  TASK_PF_CLI_ONLY },
	{ "bundle", TASK_P_STRING, NULL, 0, 4096, NULL,
	  "also write DIR/profile-PID-TIMESTAMP/ with folded, html, raw samples and a tar.gz",
	  TASK_PF_CLI_ONLY },
	{ "lines", TASK_P_BOOL, "false", 0, 0, NULL,
	  "managed frames with their source file and line (portable PDBs; one rundown after sampling)",
	  0 },
	{ "async", TASK_P_ENUM, "off", 0, 0, "off logical both",
	  "async code: a resumed method under the methods awaiting it (logical), or with the thread's "
	  "frames too (both); EventPipe engine, from the runtime's TPL events", 0 },
	{ "by_endpoint", TASK_P_BOOL, "false", 0, 0, NULL,
	  "ASP.NET Core: a root frame per request path, and CPU per endpoint (EventPipe engine)", 0 },
};
const size_t profile_task_nparams = ARRAY_SIZE(profile_task_params);

/* ---- what the run says ---- */

struct run {
	const struct profile_run_opts *o;
	const struct task_ctx *ctx;
	struct task_result *res;
	struct profile_result *r;
	const struct proc_target *t;
};

static void say(struct run *w, enum ct_log_level lvl, bool statement, const char *fmt, ...)
	PRINTF(4, 5);
static void say(struct run *w, enum ct_log_level lvl, bool statement, const char *fmt, ...)
{
	char buf[PROFILE_STATEMENT_MAX];
	va_list ap;

	va_start(ap, fmt);
	ct_log_vto(w->ctx ? w->ctx->log : NULL, w->ctx ? w->ctx->log_ctx : NULL, lvl, buf, sizeof(buf),
		   fmt, ap);
	va_end(ap);
	if (statement && w->r->nstatements < PROFILE_STATEMENTS_MAX)
		snprintf(w->r->statements[w->r->nstatements++], PROFILE_STATEMENT_MAX, "%s", buf);
}

static void statement(struct profile_result *r, const char *fmt, ...) PRINTF(2, 3);
static void statement(struct profile_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nstatements >= PROFILE_STATEMENTS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(r->statements[r->nstatements++], PROFILE_STATEMENT_MAX, fmt, ap);
	va_end(ap);
}

/* Fails with err and exit code; returns err. */
static int fail(struct run *w, int err, int code, const char *fmt, ...) PRINTF(4, 5);
static int fail(struct run *w, int err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (w->r) {
		/* the whole message (the engines' causes are long); the result's line is its start */
		vsnprintf(w->r->message, sizeof(w->r->message), fmt, ap);
		snprintf(w->res->message, sizeof(w->res->message), "%.255s", w->r->message);
	} else {
		vsnprintf(w->res->message, sizeof(w->res->message), fmt, ap);
	}
	va_end(ap);
	w->res->err = err;
	w->res->exit_code = code;
	return err;
}

static void timestamp(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(buf, len, "%Y%m%d-%H%M%S", &tm);
}

/* ---- the checks before any work ---- */

static int check_opts(struct run *w)
{
	const struct profile_run_opts *o = w->o;

	if (o->pid <= 0)
		return fail(w, -EINVAL, EXIT_USAGE, "profile needs a target pid");
	if (o->hz_given && o->engine == PROFILE_ENGINE_EVENTPIPE)
		return fail(w, -EINVAL, EXIT_USAGE, "-F does not apply to --engine eventpipe: %s",
			    profile_engine_ep_rate);
	if (o->hz < 1 || o->hz > 10000)
		return fail(w, -EINVAL, EXIT_USAGE, "-F must be 1..10000");
	if (o->duration_ms < 0)
		return fail(w, -EINVAL, EXIT_USAGE, "the duration must not be negative");
	if (o->off_cpu && o->wall)
		return fail(w, -EINVAL, EXIT_USAGE, "give --off-cpu or --wall, not both");
	if ((o->async || o->by_endpoint) && o->engine != PROFILE_ENGINE_EVENTPIPE)
		return fail(w, -EINVAL, EXIT_USAGE, "%s needs --engine eventpipe (the perf engine has "
			    "no TPL timeline yet)", o->by_endpoint ? "--by-endpoint" : "--async");
	if (o->off_cpu && o->no_kernel)
		return fail(w, -EINVAL, EXIT_USAGE,
			    "--off-cpu needs kernel samples (drop --no-kernel)");
	if (o->out && flame_format_from_path(o->out) < 0)
		return fail(w, -EINVAL, EXIT_USAGE,
			    "cannot tell the format of '%s': use .folded, .html, .svg, "
			    ".speedscope.json or .pb.gz", o->out);
	return 0;
}

int profile_task_check(const struct profile_run_opts *o, struct task_result *res)
{
	struct run w = { .o = o, .res = res };

	return check_opts(&w);
}

/* The target: a .NET one when its diagnostics socket is there; any process is profiled. */
static int resolve(struct run *w, struct proc_target *t, bool *dotnet, bool *no_access)
{
	pid_t pid = w->o->pid;
	int err = proc_target_find(pid, t);

	*dotnet = false;
	switch (err) {
	case 0:
		*dotnet = true;
		return 0;
	case -ESRCH:
		return fail(w, err, EXIT_NO_PROCESS, "no process with pid %d", (int)pid);
	case -ENOENT:
		if (w->o->engine == PROFILE_ENGINE_EVENTPIPE)
			return fail(w, err, EXIT_NOT_DOTNET, "pid %d has no diagnostics socket: "
				    "--engine eventpipe needs a .NET process", (int)pid);
		return 0; /* said once sampling works (else the refusal names both) */
	case -EACCES:
		*no_access = true; /* perf_event_open decides; its error names what is missing */
		return 0;
	case -ELOOP:
	case -ENOTSOCK:
		say(w, CT_LOG_WARN, true, "pid %d's diagnostics socket %s is not the target's socket "
		    "(a link or another kind of file): profiling native and kernel frames only",
		    (int)pid, t->sock_tpath);
		return 0;
	default:
		return fail(w, err, ct_exit_for(err), "cannot inspect pid %d: %s", (int)pid,
			    strerror(-err));
	}
}

static int perf_error(struct run *w, pid_t pid, int err, bool off_cpu)
{
	if (err == -EACCES || err == -EPERM)
		return fail(w, err, EXIT_PERMISSION,
			    "not allowed to sample pid %d with perf_event_open: it needs the "
			    "target to be yours (or CAP_SYS_PTRACE) and either CAP_PERFMON (or "
			    "root) or sysctl kernel.perf_event_paranoid <= %d%s",
			    (int)pid, off_cpu ? 1 : 2, off_cpu ? " (off-CPU needs kernel samples)" : "");
	if (err == -ESRCH)
		return fail(w, err, EXIT_NO_PROCESS, "pid %d is gone", (int)pid);
	if (err == -EMFILE || err == -ENFILE)
		return fail(w, err, EXIT_ERROR, "too many open files for one event per thread and "
			    "CPU (raise ulimit -n)");
	return fail(w, err, ct_exit_for(err), "cannot sample pid %d: %s", (int)pid, strerror(-err));
}

/* ---- writing ---- */

static int write_flame(struct run *w, const char *path, const struct flame *f,
		       enum flame_format fmt, const struct flame_opts *fo)
{
	int fd, rc;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(w, -errno, EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = flame_write(f, fmt, fd, fo);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		return fail(w, rc, EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return 0;
}

static int write_text(struct run *w, const char *dir, const char *name, const char *text)
{
	char path[PROC_PATH_MAX * 4];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(w, -errno, EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = ct_write_all(fd, text, strlen(text));
	if (!rc)
		rc = ct_write_all(fd, "\n", 1);
	close(fd);
	if (rc)
		return fail(w, rc, EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return 0;
}

static int write_bundle(struct run *w, struct profile_session *s, const struct flame *f,
			const struct flame_opts *fo)
{
	static const char *const names[] = { "profile.folded", "profile.html", "samples.txt",
					     "metadata.txt" };
	char ts[32], path[PROC_PATH_MAX * 4], prefix[64];
	const char *root = w->o->bundle;
	char *dir = w->r->bundle_dir;
	size_t dirlen = sizeof(w->r->bundle_dir);
	int fd, rc;

	timestamp(ts, sizeof(ts));
	snprintf(prefix, sizeof(prefix), "profile-%d-%s", (int)s->pid, ts);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return fail(w, -errno, EXIT_ERROR, "cannot create %s: %s", root, strerror(errno));
	if (snprintf(dir, dirlen, "%s/%s", root, prefix) >= (int)dirlen)
		return fail(w, -ENAMETOOLONG, EXIT_USAGE, "bundle path too long");
	if (mkdir(dir, 0755) < 0)
		return fail(w, -errno, EXIT_ERROR, "cannot create %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/profile.folded", dir);
	if ((rc = write_flame(w, path, f, FLAME_FOLDED, fo)))
		return rc;
	snprintf(path, sizeof(path), "%s/profile.html", dir);
	if ((rc = write_flame(w, path, f, FLAME_HTML, fo)))
		return rc;
	snprintf(path, sizeof(path), "%s/samples.txt", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(w, -errno, EXIT_ERROR, "cannot create %s: %s", path, strerror(errno));
	rc = profile_write_raw(s->prof, s->sp, profile_session_comm, s, fd);
	close(fd);
	if (rc)
		return fail(w, rc, EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	if ((rc = write_text(w, dir, "metadata.txt", fo->notes ? fo->notes : "")))
		return rc;
	snprintf(path, sizeof(path), "%s/%s.tar.gz", dir, prefix);
	rc = profile_tar_gz(path, dir, prefix, names, ARRAY_SIZE(names));
	if (rc)
		return fail(w, rc, EXIT_ERROR, "cannot write %s: %s", path, strerror(-rc));
	return 0;
}

/* The flame into o->out, or profile.folded in the task's folder (an artifact). */
static int write_outputs(struct run *w, struct profile_session *s, const struct flame *f,
			 const struct flame_opts *fo)
{
	struct task_result *res = w->res;
	int rc;

	if (w->o->out) {
		rc = write_flame(w, w->o->out,
				    f, (enum flame_format)flame_format_from_path(w->o->out), fo);
		if (rc)
			return rc;
		snprintf(w->r->out_path, sizeof(w->r->out_path), "%s", w->o->out);
	} else if (w->ctx && w->ctx->outdir_fd >= 0) {
		int fd = task_artifact_open(w->ctx, res, "profile.folded", "text/plain");

		if (fd < 0)
			return fail(w, -errno, EXIT_ERROR, "cannot create profile.folded: %s",
				    strerror(errno));
		rc = flame_write(f, FLAME_FOLDED, fd, fo);
		if (close(fd) < 0 && !rc)
			rc = -errno;
		if (rc)
			return fail(w, rc, EXIT_ERROR, "cannot write profile.folded: %s", strerror(-rc));
		snprintf(w->r->out_path, sizeof(w->r->out_path), "profile.folded");
	}
	if (w->o->bundle && !w->r->sum.partial)
		return write_bundle(w, s, f, fo);
	return 0;
}

/* ---- the run ---- */

static int start(struct run *w, struct profile_session **sp, struct profile_engine_choice *ch,
		 const struct proc_target *t, bool dotnet, bool no_access)
{
	const struct profile_run_opts *o = w->o;
	struct profile_session_opts so = { 0 };
	char msg[2048];
	int rc;

	so.pid = o->pid;
	so.target = dotnet ? t : NULL;
	so.timeout_ms = o->timeout_ms;
	so.sampler.hz = o->hz;
	so.sampler.cpu = !o->off_cpu;
	so.sampler.off_cpu = o->off_cpu || o->wall;
	so.sampler.no_kernel = o->no_kernel;
	so.profile.thread_roots = o->threads;
	so.profile.keep_samples = o->bundle != NULL;
	so.profile.cpu_in_ns = o->wall;
	so.engine = o->engine;
	so.ep_samples = w->r->ep_samples;
	so.ep_async = o->async;
	so.ep_endpoints = o->by_endpoint;
	so.profile.stop = w->ctx ? w->ctx->stop : NULL; /* a further signal, during processing */
	so.no_boost = true; /* raised by the caller of start */
	so.sym_cache_dir = o->sym_cache_dir;
	rc = profile_session_start_engine(sp, &so, ch);
	if (!rc)
		return 0;
	if (ch->perf_err || ch->ep_err) {
		if (no_access && ch->ep_err == -ENOENT)
			ch->ep_err = -EACCES; /* the socket is behind /proc/PID/root */
		profile_engine_explain(ch, so.pid, msg, sizeof(msg));
		return fail(w, ch->perf_err ? ch->perf_err : ch->ep_err,
			    ch->perf_err ? EXIT_PERMISSION : ct_exit_for(ch->ep_err), "%s", msg);
	}
	if (ch->failed_stage == PROFILE_STAGE_PERF || rc == -ESRCH || rc == -EACCES || rc == -EPERM)
		return perf_error(w, so.pid, rc, so.sampler.off_cpu);
	return fail(w, rc, ct_exit_for(rc), "cannot read the symbols of pid %d: %s", (int)so.pid,
		    strerror(-rc));
}

/* The warnings once sampling runs: what this session cannot see. */
static void started(struct run *w, struct profile_session *s, const struct profile_engine_choice *ch,
		    bool dotnet)
{
	const struct profile_run_opts *o = w->o;

	if (ch->fell_back)
		say(w, CT_LOG_WARN, true, "%s (%s): sampling with the runtime's EventPipe sample "
		    "profiler instead (managed frames only; --engine perf to fail instead)",
		    profile_engine_refused(ch), profile_perf_cause_short(ch->diag.cause));
	if (ch->fell_back && o->hz_given)
		say(w, CT_LOG_WARN, true, "-F %u is not used by the EventPipe engine: %s", o->hz,
		    profile_engine_ep_rate);
	if (!dotnet && !s->ep)
		say(w, CT_LOG_INFO, true, "pid %d is not a .NET process (no diagnostics socket): "
		    "profiling native and kernel frames only", (int)o->pid);
	if (s->dotnet && s->pm_err) {
		if (s->pm_err == -EREMOTEIO && s->pm_rerr.hresult == IPC_E_UNKNOWN_COMMAND)
			say(w, CT_LOG_WARN, true, "this runtime cannot turn its perf map on at run time "
			    "(.NET 8+): JIT-compiled frames stay unnamed");
		else
			say(w, CT_LOG_WARN, true, "cannot turn the perf map on (%s): JIT-compiled "
			    "frames stay unnamed", strerror(-s->pm_err));
	}
	if (!o->no_kernel && !s->ep) {
		struct perf_sampler_stats st;

		perf_sampler_stats(s->smp, &st);
		if (!st.kernel)
			say(w, CT_LOG_WARN, true, "kernel stacks not permitted (kernel.perf_event_paranoid "
			    ">= 2 and no CAP_PERFMON): sampling user stacks only");
	}
}

/* Samples until the duration ends, the target exits or the stop flag is set. */
static int sample(struct run *w, struct profile_session *s)
{
	const volatile sig_atomic_t *stop = w->ctx ? w->ctx->stop : NULL;
	uint64_t deadline = w->o->duration_ms ? s->start_ns + (uint64_t)w->o->duration_ms * 1000000ull
					      : UINT64_MAX;
	int rc;

	while (!(stop && *stop) && perf_now_ns() < deadline) {
		uint64_t left = (deadline - perf_now_ns()) / 1000000ull;

		rc = profile_session_tick(s, left < 100 ? (int)left + 1 : 100);
		if (rc == -ESRCH)
			break;
		if (rc < 0)
			return fail(w, rc, ct_exit_for(rc), "sampling failed: %s", strerror(-rc));
	}
	w->r->early = stop && *stop;
	w->r->stop_seen = stop ? *stop : 0;
	return 0;
}

static void flame_options(struct run *w, struct profile_session *s,
			  const struct profile_engine_choice *ch, struct flame_opts *fo,
			  char *title, size_t tlen, char *notes, size_t nlen)
{
	const struct profile_run_opts *o = w->o;

	if (s->ep) {
		struct profile_ep_stats es;

		profile_ep_stats(s->ep, &es);
		snprintf(title, tlen, "clrtap profile: pid %d, %s (EventPipe engine)", (int)o->pid,
			 o->off_cpu ? "samples outside managed code" :
			 o->wall || es.oncpu == TASKCPU_NONE ? "thread time, waiting included" :
			 "on-CPU samples of managed code");
		fo->unit = "samples";
		fo->period = es.sampling_ns;
		es.left_out = w->r->sum.left_out;
		profile_engine_notes(ch, o->hz, w->r->ep_samples, &es, notes, nlen);
	} else {
		snprintf(title, tlen, "clrtap profile: pid %d, %s (perf_event engine)", (int)o->pid,
			 o->off_cpu ? "off-CPU time" : o->wall ? "wall time (on + off CPU)" :
			 "CPU samples");
		fo->unit = o->off_cpu || o->wall ? "nanoseconds" : "samples";
		fo->period = o->off_cpu || o->wall ? 1 : 1000000000ull / (uint64_t)o->hz;
		profile_engine_notes(ch, o->hz, 0, NULL, notes, nlen);
	}
	fo->title = title;
	fo->notes = notes;
	fo->duration_ns = s->end_ns - s->start_ns;
	fo->time_unix_ns = (int64_t)time(NULL) * 1000000000ll - (int64_t)fo->duration_ns;
}

static void engine_line(struct profile_result *r, const struct profile_engine_choice *ch)
{
	if (ch->fell_back)
		snprintf(r->engine_line, sizeof(r->engine_line),
			 "engine: %s (--engine auto, and %s: %s)", profile_engine_name(ch->used),
			 profile_engine_refused(ch), profile_perf_cause_short(ch->diag.cause));
	else
		snprintf(r->engine_line, sizeof(r->engine_line), "engine: %s (%s)",
			 profile_engine_name(ch->used),
			 ch->asked == PROFILE_ENGINE_AUTO ? "auto: perf_event_open allowed" : "as asked");
}

/* The top frames (self first) of topf, [thread] roots left out, copied. */
static void keep_top(struct profile_result *r, const struct flame *f, const struct flame *topf)
{
	struct flame_top *top = NULL;
	size_t n = 0, i;

	r->total = flame_total(f);
	r->top_managed = topf != f;
	if (flame_top(topf, &top, &n))
		return;
	for (i = 0; i < n && r->ntop < TOP_MAX; i++) {
		if (!strncmp(top[i].name, "[thread] ", 9))
			continue;
		snprintf(r->top[r->ntop].name, sizeof(r->top[0].name), "%s", top[i].name);
		r->top[r->ntop].self = top[i].self;
		r->top[r->ntop].total = top[i].total;
		r->ntop++;
	}
	free(top);
}

/* The session's facts into r, for the text and the JSON. */
static void collect(struct run *w, struct profile_session *s, const struct profile_engine_choice *ch)
{
	struct profile_result *r = w->r;

	r->ch = *ch;
	r->engine = ch->used;
	r->dotnet = s->dotnet;
	r->pm_err = s->pm_err;
	r->target_gone = s->target_gone;
	r->secs = (double)(s->end_ns - s->start_ns) / 1e9;
	r->prio = s->prio;
	if (s->ep) {
		r->have_es = true;
		profile_ep_stats(s->ep, &r->es);
		/* the names live in the engine, which goes before the result is shown */
		for (uint32_t k = 0; k < r->es.nendpoints && k < PROFILE_EP_ENDPOINTS; k++) {
			snprintf(r->endpoint_names[k], sizeof(r->endpoint_names[k]), "%s",
				 r->es.endpoints[k].name ? r->es.endpoints[k].name : "");
			r->es.endpoints[k].name = r->endpoint_names[k];
		}
	} else {
		r->have_st = true;
		perf_sampler_stats(s->smp, &r->st);
		r->pm_before = !s->pm_flushed && (s->pm.was_on || s->pm.shared) &&
			       r->sum.unnamed_leaves * 20 >= r->sum.leaves && r->sum.leaves;
		r->pm_shared = s->pm.shared;
	}
	engine_line(r, ch);
}

/* What a person must know to read the numbers: the statements. */
static void state_limits(struct profile_result *r, const struct profile_run_opts *o)
{
	uint64_t kept = r->sum.cpu_samples;

	if (r->have_es) {
		if (kept < 50)
			statement(r, "fewer than 50 samples were kept (%llu): too few for the shares to "
				  "mean much", (unsigned long long)kept);
		if (r->es.dropped_events)
			statement(r, "%llu events were lost in the runtime",
				  (unsigned long long)r->es.dropped_events);
		if (!r->es.complete)
			statement(r, "the event stream ended without its end marker");
		statement(r, "kernel stacks: none (EventPipe sees managed frames only)");
	} else {
		if (!o->off_cpu && kept < 50)
			statement(r, "fewer than 50 samples were kept (%llu): too few for the shares to "
				  "mean much", (unsigned long long)kept);
		if (r->st.lost)
			statement(r, "%llu samples were lost (the kernel's ring was full)",
				  (unsigned long long)r->st.lost);
		if (r->st.throttled)
			statement(r, "the kernel throttled sampling (kernel.perf_event_max_sample_rate)");
		if (r->pm_before)
			statement(r, "the perf map was on before this session and not read whole: JIT "
				  "frames may be unnamed");
	}
	if (r->sum.partial)
		statement(r, "stopped while processing: %zu of %zu distinct stacks named",
			  r->sum.stacks_named, r->sum.stacks);
	if (r->sum.dropped)
		statement(r, "%llu samples dropped past the distinct-stack cap",
			  (unsigned long long)r->sum.dropped_samples);
	if (r->target_gone)
		statement(r, "the process exited during sampling");
	if (!r->total && !r->target_gone)
		statement(r, "no samples: pid %d %s in %.1f s", (int)o->pid,
			  o->off_cpu ? "never blocked" : "never ran on a CPU", r->secs);
}

/* Builds, writes and restores: after sampling. */
static int finish(struct run *w, struct profile_session *s, const struct profile_engine_choice *ch)
{
	const struct profile_run_opts *o = w->o;
	struct profile_result *r = w->r;
	struct flame *f = NULL, *uf = NULL;
	struct flame_opts fo = { 0 };
	char notes[2048], title[160];
	struct ipc_error rerr;
	uint64_t t_stop = perf_now_ns();
	int rc;

	profile_session_stop_above(s, r->stop_seen); /* a further signal stops the processing */
	rc = profile_session_stop(s);
	if (rc < 0)
		return fail(w, rc, ct_exit_for(rc), "sampling failed: %s", strerror(-rc));
	if (o->lines && w->t) {
		/* after sampling, never during it: one rundown brings the IL-to-native maps */
		rc = profile_session_lines(s, w->t, o->timeout_ms, &rerr);
		if (rc)
			say(w, CT_LOG_WARN, true, "no source lines: %s", strerror(-rc));
		else
			r->lines = true;
	}
	rc = flame_new(&f);
	if (!rc)
		rc = profile_session_build(s, f, &r->sum);
	if (rc) {
		flame_free(f);
		return fail(w, rc, ct_exit_for(rc), "cannot build the profile: %s", strerror(-rc));
	}
	if (!s->ep && s->sp) {
		struct strbuf nb = STRBUF_INIT_MAX(sizeof(r->native_note) - 1);

		if (!sym_proc_native_note(s->sp, &nb) && nb.len)
			snprintf(r->native_note, sizeof(r->native_note), "%s", nb.buf);
		strbuf_release(&nb);
	}
	flame_options(w, s, ch, &fo, title, sizeof(title), notes, sizeof(notes));
	rc = write_outputs(w, s, f, &fo);
	r->processing_ns = perf_now_ns() - t_stop;
	if (!rc) {
		/* Teardown after the result is written: a busy target's diagnostics thread may be
		 * slow to answer. */
		int prc = profile_session_restore_within(s, 100, &rerr);

		if (prc == 1)
			r->handed_off = true;
		else if (prc && !s->target_gone)
			say(w, CT_LOG_WARN, true, "could not turn the perf map back off (%s): run "
			    "'clrtap perfmap -p %d off'", strerror(-prc), (int)o->pid);
		if ((o->off_cpu || o->wall) && !s->ep && !r->sum.partial && flame_new(&uf) == 0 &&
		    profile_session_build_ex(s, uf, NULL, PROFILE_BUILD_NO_KERNEL |
						PROFILE_BUILD_TO_MANAGED) != 0) {
			flame_free(uf);
			uf = NULL;
		}
		collect(w, s, ch);
		keep_top(r, f, uf ? uf : f);
		state_limits(r, o);
	}
	flame_free(f);
	flame_free(uf);
	return rc;
}

void profile_result_free(void *p)
{
	free(p);
}

int profile_task_run(const struct profile_run_opts *o, const struct task_ctx *ctx,
		     struct task_result *res)
{
	struct profile_result *r = calloc(1, sizeof(*r));
	struct run w = { .o = o, .ctx = ctx, .res = res, .r = r };
	struct profile_engine_choice ch;
	struct profile_session *s = NULL;
	struct proc_target t;
	struct perf_prio prio;
	bool dotnet, no_access = false;
	int rc;

	if (!r)
		return fail(&w, -ENOMEM, EXIT_ERROR, "out of memory");
	res->data = r;
	res->free_data = profile_result_free;
	r->pid = o->pid;
	r->hz = o->hz;
	r->off_cpu = o->off_cpu;
	r->wall = o->wall;
	r->duration_ms = o->duration_ms;
	r->async = o->async;
	r->by_endpoint = o->by_endpoint;
	r->ep_samples = o->off_cpu ? PROFILE_EP_EXTERNAL :
			o->wall ? PROFILE_EP_MANAGED | PROFILE_EP_EXTERNAL : PROFILE_EP_MANAGED;
	if ((rc = check_opts(&w)))
		return rc;
	/* Raised before anything that waits on the target (see lib/perf/prio.c). */
	(void)perf_prio_raise(&prio);
	if ((rc = resolve(&w, &t, &dotnet, &no_access)))
		return rc;
	w.t = &t;
	if ((rc = start(&w, &s, &ch, &t, dotnet, no_access)))
		return rc;
	profile_session_set_prio(s, &prio);
	started(&w, s, &ch, dotnet);
	rc = sample(&w, s);
	if (!rc)
		rc = finish(&w, s, &ch);
	profile_session_close(s);
	if (rc)
		return rc;
	res->exit_code = r->sum.partial ? EXIT_PARTIAL : EXIT_OK;
	return profile_result_json(r, res->nartifacts ? res->artifacts[0].name : NULL, &res->json);
}

static int arg_text_ok(const struct task_args *a, const char *name, const char **out)
{
	const struct task_value *v = task_arg(a, name);

	*out = v && v->set && v->s && v->s[0] ? v->s : NULL;
	return 0;
}

int task_run_profile(const struct task_args *a, const struct task_ctx *ctx, struct task_result *res)
{
	struct profile_run_opts o = { 0 };
	const struct task_value *v;
	const char *eng = NULL;
	int err;

	o.pid = a->pid;
	o.timeout_ms = 0; /* the IPC default */
	v = task_arg(a, "duration");
	o.duration_ms = v ? (int64_t)(v->d * 1000.0 + 0.5) : 10000;
	v = task_arg(a, "frequency");
	o.hz = v ? (unsigned)v->i : 99;
	o.hz_given = v && v->set;
	(void)arg_text_ok(a, "engine", &eng);
	if (eng && profile_engine_parse(eng, &o.engine)) {
		task_fail(res, -EINVAL, "unknown engine '%s' (auto, perf, eventpipe)", eng);
		res->exit_code = EXIT_USAGE;
		return res->err;
	}
	o.off_cpu = (v = task_arg(a, "off_cpu")) && v->b;
	o.wall = (v = task_arg(a, "wall")) && v->b;
	o.threads = (v = task_arg(a, "threads")) && v->b;
	o.no_kernel = (v = task_arg(a, "no_kernel")) && v->b;
	(void)arg_text_ok(a, "output", &o.out);
	(void)arg_text_ok(a, "bundle", &o.bundle);
	o.sym_cache_dir = getenv("CLRTAP_CACHE_DIR");
	o.lines = (v = task_arg(a, "lines")) && v->b;
	if ((v = task_arg(a, "async")) && v->s)
		o.async = !strcmp(v->s, "both") ? PROFILE_EP_ASYNC_BOTH :
			  !strcmp(v->s, "logical") ? PROFILE_EP_ASYNC_LOGICAL : 0;
	o.by_endpoint = (v = task_arg(a, "by_endpoint")) && v->b;
	err = profile_task_run(&o, ctx, res);
	if (err && res->exit_code == EXIT_OK)
		res->exit_code = ct_exit_for(err);
	return err;
}
