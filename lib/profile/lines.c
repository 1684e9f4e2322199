/* SPDX-License-Identifier: MIT */
/*
 * lines.c - source lines for a profile session's managed frames: one
 * rundown of the target into lib/srcline after sampling (never while it
 * samples), attached to the profile for its builds. See profile.h.
 */
#include "common/compat.h"

#include "common/log.h"
#include "profile/internal.h"
#include "srcline/srcline.h"

int profile_session_lines(struct profile_session *s, const struct proc_target *t, int timeout_ms,
			  struct ipc_error *rerr)
{
	struct ipc_endpoint ep;
	struct srcline *sl = NULL;
	uint64_t t0;
	size_t nb, nm;
	int rc;

	if (!t || !s->dotnet)
		return -ENOENT;
	if (s->target_gone)
		return -ESRCH;
	rc = srcline_new_proc(s->pid, &sl);
	if (rc)
		return rc;
	ipc_endpoint_init(&ep, t, timeout_ms);
	t0 = perf_now_ns();
	rc = srcline_collect(&ep, NULL, sl, rerr);
	srcline_counts(sl, &nb, &nm);
	ct_debug("profile: source lines: rundown of %zu code bodies, %zu IL maps in %.0f ms", nb, nm,
		 (double)(perf_now_ns() - t0) / 1e6);
	if (rc) {
		srcline_free(sl);
		return rc;
	}
	srcline_free(s->lines);
	s->lines = sl;
	profile_set_lines(s->prof, sl);
	return 0;
}
