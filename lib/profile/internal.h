/* SPDX-License-Identifier: MIT */
/*
 * internal.h - inside lib/profile only: the session's fields (opaque to
 * every other folder), the start of one engine, and the profile task's
 * helpers.
 */
#ifndef CLRTAP_PROFILE_INTERNAL_H
#define CLRTAP_PROFILE_INTERNAL_H

#include "profile/profile.h"

struct profile_session {
	pid_t pid;
	bool dotnet;
	struct perfmap_use pm;
	int pm_err;               /* turning the perf map on failed (0: fine) */
	bool pm_flushed;          /* turned off before the last read (perfmap_use_flush) */
	struct ipc_error pm_rerr;
	struct sym_proc *sp;
	struct perf_sampler *smp;
	struct profile *prof;
	struct profile_unwinder *uw;
	enum profile_engine engine;
	struct profile_ep *ep;    /* the EventPipe engine (smp, sp and pm unused) */
	struct ipc_error ep_rerr; /* what the runtime said when the EventPipe session failed */
	uint64_t start_ns, end_ns, last_refresh_ns;
	bool target_gone;
	bool stopped;
	enum profile_stage failed_stage; /* where profile_session_start failed */
	struct perf_prio prio;           /* clrtap's own priority, raised for the session */
	struct srcline *lines;           /* profile_session_lines (owned) */
};

/*
 * Turns the perf map on (for a .NET target), opens the symbolizer and starts
 * sampling with o->engine (PERF or EVENTPIPE) into s (caller's storage). On
 * failure everything is undone (the perf map too) and failed_stage says
 * which step failed.
 */
int profile_session_start(struct profile_session *s, const struct profile_session_opts *o);
/* Releases what s holds, not s itself. */
void profile_session_release(struct profile_session *s);
/* A signal count the processing goes on past (profile_opts.stop_above). */
void profile_session_stop_above(struct profile_session *s, sig_atomic_t v);
void profile_set_stop_above(struct profile *p, sig_atomic_t v);

#endif
