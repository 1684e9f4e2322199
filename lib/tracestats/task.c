/* SPDX-License-Identifier: MIT */
/*
 * task.c - the trace task: an EventPipe session into trace.nettrace (the
 * calls of `trace collect`), then its report (`trace report --json`,
 * docs/cmd/trace.md) as the result. Needs an output directory: the trace is
 * an artifact (trace.nettrace, or trace.nettrace.partial when it broke off).
 */
#include "common/compat.h"

#include <fcntl.h>

#include "common/exitcode.h"
#include "common/io.h"
#include "common/log.h"
#include "ipc/ipc.h"
#include "proc/proc.h"
#include "tracestats/tracestats.h"

#define TRACE_MAX_PROVIDERS 64

const struct task_param trace_task_params[] = {
	{ "duration", TASK_P_DURATION, "3", 0.1, 3600, NULL, "how long to trace", 0 },
	{ "profile", TASK_P_ENUM, NULL, 0, 0, "contention cpu-sampling exceptions gc-collect gc-verbose jit",
	  "a named set of providers (clrtap trace collect --list-profiles); cpu-sampling without providers", 0 },
	{ "providers", TASK_P_STRING, NULL, 0, 512, "-:,=*._", "provider specs, Name[:Keywords[:Level]],...", 0 },
};
const size_t trace_task_nparams = ARRAY_SIZE(trace_task_params);

static int report(const struct task_ctx *ctx, struct task_result *r, const char *name)
{
	struct tracestats *ts = NULL;
	const char *stage;
	int fd, err, read_err;

	fd = openat(ctx->outdir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return task_fail(r, -errno, "cannot open %s: %s", name, strerror(errno));
	err = tracestats_load_fd(fd, false, &ts, &read_err, &stage);
	close(fd);
	if (err)
		return task_fail(r, err, "cannot %s %s: %s", stage, name, strerror(-err));
	strbuf_reset(&r->json);
	err = tracestats_format_json(ts, 10, name, &r->json);
	if (err) {
		strbuf_reset(&r->json);
		task_fail(r, err, "cannot make the report: %s", strerror(-err));
	} else if (read_err) {
		task_fail(r, read_err, "%s is damaged or truncated: only the events before it were read", name);
		r->exit_code = EXIT_BAD_INPUT;
	}
	tracestats_free(ts);
	return r->err;
}

int task_run_trace(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r)
{
	struct ipc_provider provs[TRACE_MAX_PROVIDERS];
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct ipc_session_result res;
	struct ipc_error rerr;
	struct proc_target t;
	struct ipc_endpoint ep;
	volatile sig_atomic_t local = 0;
	const char *profile = task_arg(a, "profile")->s, *providers = task_arg(a, "providers")->s;
	char why[512], *specs = NULL;
	int fd, err;

	if (!ctx || ctx->outdir_fd < 0)
		return task_fail(r, -EINVAL, "the trace task needs an output directory for trace.nettrace");
	err = ipc_trace_config_build(profile, providers, 256, true, true, &cfg, provs, TRACE_MAX_PROVIDERS,
				     &specs, why, sizeof(why));
	if (err) {
		free(specs);
		task_fail(r, err, "%s", why);
		if (err != -ENOMEM)
			r->exit_code = EXIT_USAGE;
		return r->err;
	}
	if (task_target(a, r, &t, &ep, 5000)) {
		free(specs);
		return r->err;
	}
	fd = openat(ctx->outdir_fd, "trace.nettrace.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		free(specs);
		return task_fail(r, -errno, "cannot write trace.nettrace.tmp: %s", strerror(errno));
	}
	so.sink = ct_fd_sink;
	so.ctx = &fd;
	so.stop = task_stop_flag(ctx, &local);
	so.duration_ms = (int64_t)(task_arg(a, "duration")->d * 1000);
	ct_info("tracing pid %d with %zu provider%s", (int)t.pid, cfg.nproviders, cfg.nproviders == 1 ? "" : "s");
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	free(specs);
	if (close(fd) && !err)
		err = -errno;
	if (!err && res.complete) {
		if (renameat(ctx->outdir_fd, "trace.nettrace.tmp", ctx->outdir_fd, "trace.nettrace"))
			return task_fail(r, -errno, "cannot write trace.nettrace: %s", strerror(errno));
		if (res.target_ended)
			ct_warn("the target closed the session before clrtap stopped it (did it exit?)");
		snprintf(r->artifacts[r->nartifacts].name, sizeof(r->artifacts[0].name), "trace.nettrace");
		snprintf(r->artifacts[r->nartifacts++].mime, sizeof(r->artifacts[0].mime), "application/octet-stream");
		return report(ctx, r, "trace.nettrace");
	}
	if (res.bytes == 0 || res.bad_prologue) {
		unlinkat(ctx->outdir_fd, "trace.nettrace.tmp", 0);
		ipc_session_strerror(err ?: -EPROTO, &res, &ep, &rerr, why, sizeof(why));
		task_fail(r, err ?: -EPROTO, "cannot trace: %s; kept nothing", why);
		if (res.bad_prologue)
			r->exit_code = EXIT_PROTOCOL;
		return r->err;
	}
	if (renameat(ctx->outdir_fd, "trace.nettrace.tmp", ctx->outdir_fd, "trace.nettrace.partial"))
		return task_fail(r, -errno, "cannot keep the partial trace: %s", strerror(errno));
	snprintf(r->artifacts[r->nartifacts].name, sizeof(r->artifacts[0].name), "trace.nettrace.partial");
	snprintf(r->artifacts[r->nartifacts++].mime, sizeof(r->artifacts[0].mime), "application/octet-stream");
	if (err) {
		ipc_session_strerror(err, &res, &ep, &rerr, why, sizeof(why));
		task_fail(r, err, "trace broke off after %" PRIu64 " bytes: %s; kept trace.nettrace.partial, incomplete",
			  res.bytes, why);
	} else {
		task_fail(r, -EPROTO, "the stream ended without its end marker after %" PRIu64
			  " bytes: kept trace.nettrace.partial, incomplete", res.bytes);
	}
	r->exit_code = EXIT_PARTIAL;
	return r->err;
}
