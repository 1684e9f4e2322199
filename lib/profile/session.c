/* SPDX-License-Identifier: MIT */
/*
 * session.c - one profiling session: the target's perf map on for its
 * length, the symbolizer, the sampler feeding raw stacks into a profile.
 * Shared by `clrtap profile` and `clrtap top`.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "common/log.h"
#include "profile/profile.h"

#define REFRESH_NS 1000000000ull

int profile_session_start(struct profile_session *s, const struct profile_session_opts *o)
{
	struct sym_opts so = { 0 };
	int rc;

	memset(s, 0, sizeof(*s));
	s->pid = o->pid;
	s->pm.guard_fd = -1;
	/* Before anything else: a busy target must not starve the tool (see lib/perf/prio.c). */
	if (!o->no_boost)
		(void)perf_prio_raise(&s->prio);
	if (o->target) {
		s->dotnet = true;
		s->pm_err = profile_perfmap_begin(&s->pm, o->target, o->timeout_ms, &s->pm_rerr);
		if (s->pm_err)
			ct_debug("profile: perf map not turned on: %s", strerror(-s->pm_err));
	}
	rc = profile_new(&s->prof, &o->profile);
	if (rc)
		goto fail;
	/* Sampling first: its refusal says best why a process cannot be profiled. */
	s->failed_stage = PROFILE_STAGE_PERF;
	rc = perf_sampler_open(&s->smp, o->pid, &o->sampler, profile_add_stack, s->prof);
	if (rc)
		goto fail;
	so.kernel = !o->sampler.no_kernel;
	so.cache_dir = o->sym_cache_dir;
	so.perfmap_path = s->dotnet && s->pm.map_path[0] ? s->pm.map_path : NULL;
	s->failed_stage = PROFILE_STAGE_SYM;
	rc = sym_proc_open(&s->sp, o->pid, &so);
	if (rc)
		goto fail;
	if (o->sampler.off_cpu && profile_unwinder_new(&s->uw, s->sp) == 0)
		perf_sampler_set_unwind(s->smp, profile_unwind_user, s->uw);
	s->failed_stage = PROFILE_STAGE_NONE;
	s->start_ns = perf_now_ns();
	s->last_refresh_ns = s->start_ns;
	return 0;
fail:
	profile_session_close(s);
	perf_prio_restore(&s->prio);
	return rc;
}

int profile_session_tick(struct profile_session *s, int timeout_ms)
{
	uint64_t now;
	int rc;

	if (s->stopped)
		return s->target_gone ? -ESRCH : 0;
	rc = perf_sampler_poll(s->smp, timeout_ms);
	now = perf_now_ns();
	if (rc == -ESRCH) {
		s->target_gone = true;
		s->end_ns = now;
		return rc;
	}
	if (now - s->last_refresh_ns >= REFRESH_NS) {
		(void)sym_proc_refresh(s->sp);
		s->last_refresh_ns = now;
	}
	return rc;
}

int profile_session_stop(struct profile_session *s)
{
	int rc;

	if (s->stopped)
		return 0;
	if (!s->end_ns)
		s->end_ns = perf_now_ns();
	rc = perf_sampler_finish(s->smp, s->end_ns);
	s->stopped = true;
	/* The runtime writes a perf map line when it publishes code: read the last ones. */
	if (!s->target_gone)
		(void)sym_proc_refresh(s->sp);
	return rc;
}

int profile_session_build(struct profile_session *s, struct flame *f, struct profile_summary *sum)
{
	return profile_build(s->prof, s->sp, profile_session_comm, s, f, sum);
}

int profile_session_build_ex(struct profile_session *s, struct flame *f,
			     struct profile_summary *sum, unsigned flags)
{
	return profile_build_ex(s->prof, s->sp, profile_session_comm, s, f, sum, flags);
}

int profile_session_restore(struct profile_session *s, struct ipc_error *rerr)
{
	if (!s->pm.turned_on && s->pm.guard_fd < 0)
		return 0;
	return profile_perfmap_end(&s->pm, rerr);
}

int profile_session_restore_within(struct profile_session *s, int wait_ms, struct ipc_error *rerr)
{
	struct ipc_endpoint ep = { s->pm.sock, wait_ms };
	int rc;

	if (!s->pm.turned_on || s->pm.guard_fd < 0 || wait_ms <= 0)
		return profile_session_restore(s, rerr);
	rc = ipc_perfmap_disable(&ep, rerr);
	if (rc == -ETIMEDOUT) {
		/*
		 * The target's diagnostics thread is slow (a busy target): the
		 * watcher, which restores the perf map when this end of its pipe
		 * closes without the "done" byte, sends DisablePerfMap again and
		 * removes the map file; clrtap neither waits for it nor for the
		 * watcher. A second DisablePerfMap is harmless.
		 */
		close(s->pm.guard_fd);
		s->pm.guard_fd = -1;
		s->pm.guard = 0;
		s->pm.turned_on = false;
		return 1;
	}
	/* Answered (or refused): the rest as usual, without a second request. */
	s->pm.turned_on = false;
	if (!s->pm.file_existed)
		(void)unlink(s->pm.map_path);
	(void)profile_perfmap_end(&s->pm, NULL);
	return rc;
}

void profile_session_close(struct profile_session *s)
{
	struct ipc_error rerr;

	perf_sampler_close(s->smp);
	s->smp = NULL;
	profile_unwinder_free(s->uw);
	s->uw = NULL;
	(void)profile_session_restore(s, &rerr);
	sym_proc_close(s->sp);
	s->sp = NULL;
	profile_free(s->prof);
	s->prof = NULL;
	/*
	 * The raised priority is kept: the commands exit right after, and the
	 * freeing and the exit itself would otherwise wait behind the target's
	 * threads (seconds at 500 busy threads). It ends with the process.
	 */
}

const char *profile_session_comm(void *ctx, uint32_t tid)
{
	struct profile_session *s = ctx;

	return s->smp ? perf_sampler_comm(s->smp, tid) : NULL;
}
