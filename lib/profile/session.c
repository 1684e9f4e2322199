/* SPDX-License-Identifier: MIT */
/*
 * session.c - one profiling session: the target's perf map on for its
 * length, the symbolizer, the sampler feeding raw stacks into a profile.
 * Shared by `clrtap profile` and `clrtap top`.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "common/log.h"
#include "profile/internal.h"
#include "srcline/srcline.h"
#include "sym/sym_srv.h"

#define REFRESH_NS 1000000000ull

/* The EventPipe engine: no perf map, no symbolizer, no perf events. */
static int session_start_ep(struct profile_session *s, const struct profile_session_opts *o)
{
	struct profile_ep_opts eo = { 0 };
	int rc;

	memset(s, 0, sizeof(*s));
	s->pid = o->pid;
	perfmap_use_init(&s->pm); /* never used: the perf map is not touched */
	s->engine = PROFILE_ENGINE_EVENTPIPE;
	s->dotnet = true;
	s->failed_stage = PROFILE_STAGE_EP;
	if (!o->target)
		return -ENOENT;
	rc = profile_new(&s->prof, &o->profile);
	if (rc)
		return rc;
	eo.socket = o->target->socket;
	eo.timeout_ms = o->timeout_ms;
	eo.pid = o->pid;
	eo.samples = o->ep_samples;
	eo.async = o->ep_async;
	eo.endpoints = o->ep_endpoints;
	eo.prime = o->ep_prime;
	rc = profile_ep_start(&s->ep, &eo, s->prof, &s->ep_rerr);
	if (rc) {
		profile_session_release(s);
		return rc;
	}
	s->failed_stage = PROFILE_STAGE_NONE;
	s->start_ns = perf_now_ns();
	return 0;
}

int profile_session_start(struct profile_session *s, const struct profile_session_opts *o)
{
	struct sym_opts so = { 0 };
	int rc;

	if (o->engine == PROFILE_ENGINE_EVENTPIPE)
		return session_start_ep(s, o);
	memset(s, 0, sizeof(*s));
	s->pid = o->pid;
	perfmap_use_init(&s->pm);
	/* Before anything else: a busy target must not starve the tool (see lib/perf/prio.c). */
	if (!o->no_boost)
		(void)perf_prio_raise(&s->prio);
	if (o->target) {
		s->dotnet = true;
		s->pm_err = perfmap_use_begin(&s->pm, o->target, o->timeout_ms, &s->pm_rerr);
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
	so.perfmap_tpath = s->dotnet && s->pm.map_tpath[0] ? s->pm.map_tpath : NULL;
	so.jitdump_tpath = s->dotnet && s->pm.jitdump ? s->pm.jitdump_tpath : NULL;
	s->failed_stage = PROFILE_STAGE_SYM;
	sym_srv_hold(true); /* no download while sampling: released by profile_session_stop */
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
	profile_session_release(s);
	perf_prio_restore(&s->prio);
	return rc;
}

int profile_session_tick(struct profile_session *s, int timeout_ms)
{
	uint64_t now;
	int rc;

	if (s->stopped)
		return s->target_gone ? -ESRCH : 0;
	rc = s->ep ? profile_ep_wait(s->ep, timeout_ms) : perf_sampler_poll(s->smp, timeout_ms);
	now = perf_now_ns();
	if (rc == -ESRCH) {
		s->target_gone = true;
		s->end_ns = now;
		return rc;
	}
	if (!s->ep && now - s->last_refresh_ns >= REFRESH_NS) {
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
	if (s->ep) {
		s->stopped = true;
		return profile_ep_stop(s->ep, 60000);
	}
	rc = perf_sampler_finish(s->smp, s->end_ns);
	s->stopped = true;
	sym_srv_hold(false);
	/*
	 * The runtime writes a perf map line when it publishes code: read the
	 * last ones. .NET 11 writes its map out only when it is turned off:
	 * turn it off first when this command alone turned it on.
	 */
	if (!s->target_gone) {
		struct ipc_error rerr;

		s->pm_flushed = perfmap_use_flush(&s->pm, &rerr) == 1;
		(void)sym_proc_refresh(s->sp);
	}
	return rc;
}

int profile_session_build(struct profile_session *s, struct flame *f, struct profile_summary *sum)
{
	return profile_session_build_ex(s, f, sum, 0);
}

int profile_session_build_ex(struct profile_session *s, struct flame *f,
			     struct profile_summary *sum, unsigned flags)
{
	int rc;

	if (s->ep)
		profile_ep_lock(s->ep);
	rc = profile_build_ex(s->prof, s->sp, profile_session_comm, s, f, sum, flags);
	if (s->ep)
		profile_ep_unlock(s->ep);
	return rc;
}

void profile_session_reset(struct profile_session *s)
{
	if (s->ep)
		profile_ep_lock(s->ep);
	profile_reset(s->prof);
	if (s->ep)
		profile_ep_unlock(s->ep);
}

int profile_session_restore(struct profile_session *s, struct ipc_error *rerr)
{
	if (!s->pm.turned_on && s->pm.guard_fd < 0 && s->pm.lease_fd < 0)
		return 0;
	return perfmap_use_end(&s->pm, rerr);
}

int profile_session_restore_within(struct profile_session *s, int wait_ms, struct ipc_error *rerr)
{
	if (!s->pm.turned_on && s->pm.guard_fd < 0 && s->pm.lease_fd < 0)
		return 0;
	return perfmap_use_end_within(&s->pm, wait_ms, rerr);
}

void profile_session_release(struct profile_session *s)
{
	struct ipc_error rerr;

	srcline_free(s->lines);
	s->lines = NULL;
	sym_srv_hold(false);
	if (s->engine == PROFILE_ENGINE_EVENTPIPE) {
		/* no perf map, sampler or symbolizer in this session */
		profile_ep_free(s->ep);
		s->ep = NULL;
		profile_free(s->prof);
		s->prof = NULL;
		return;
	}
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

	if (s->ep)
		return profile_ep_comm(s->ep, tid);
	return s->smp ? perf_sampler_comm(s->smp, tid) : NULL;
}

void profile_session_close(struct profile_session *s)
{
	if (!s)
		return;
	profile_session_release(s);
	free(s);
}

void profile_session_info(const struct profile_session *s, struct profile_session_info *i)
{
	memset(i, 0, sizeof(*i));
	i->pid = s->pid;
	i->dotnet = s->dotnet;
	i->engine = s->engine;
	i->ep = s->ep;
	i->pm_err = s->pm_err;
	i->pm_rerr = s->pm_rerr;
	i->pm_jitdump = s->pm.jitdump;
	i->start_ns = s->start_ns;
	i->end_ns = s->end_ns;
	i->target_gone = s->target_gone;
}

void profile_session_sampler_stats(const struct profile_session *s, struct perf_sampler_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (s->smp)
		perf_sampler_stats(s->smp, st);
}

void profile_session_set_prio(struct profile_session *s, const struct perf_prio *p)
{
	s->prio = *p;
}

void profile_session_stop_above(struct profile_session *s, sig_atomic_t v)
{
	if (s->prof)
		profile_set_stop_above(s->prof, v);
}

struct profile_ep *profile_session_ep(const struct profile_session *s)
{
	return s->ep;
}
