/* SPDX-License-Identifier: MIT */
/*
 * engine.c - which engine samples a session: perf_event unless it is denied
 * (then EventPipe, under --engine auto), why, and the notes every output
 * carries about it. Shared by `clrtap profile` and `clrtap top`.
 */
#include "common/compat.h"

#include "common/strbuf.h"
#include "profile/internal.h"

static const char *cause_short(enum profile_perf_cause c)
{
	switch (c) {
	case PROFILE_PERF_CAUSE_SECCOMP:
		return "a seccomp filter denies the system call";
	case PROFILE_PERF_CAUSE_BLOCKED:
		return "the system call is blocked";
	case PROFILE_PERF_CAUSE_PARANOID:
		return "kernel.perf_event_paranoid >= 3 and no CAP_PERFMON";
	case PROFILE_PERF_CAUSE_KERNEL:
		return "kernel stacks not allowed (perf_event_paranoid >= 2, no CAP_PERFMON)";
	case PROFILE_PERF_CAUSE_PTRACE:
		return "no ptrace access to the target";
	case PROFILE_PERF_CAUSE_LSM:
		return "a security module or a limit refuses it";
	default:
		return "cause unknown";
	}
}

const char *profile_perf_cause_short(enum profile_perf_cause c)
{
	return cause_short(c);
}

const char *profile_engine_refused(const struct profile_engine_choice *c)
{
	/* perf_event_open passed; the symbolizer's /proc/PID/map_files did not */
	return c->maps_denied ? "reading the target's memory mappings was refused"
			      : "perf_event_open was denied";
}

static int start_engine(struct profile_session *s, struct profile_session_opts *o,
			struct profile_engine_choice *c)
{
	enum profile_engine asked = o->engine;
	int rc;

	c->asked = asked;
	if (asked != PROFILE_ENGINE_EVENTPIPE) {
		o->engine = PROFILE_ENGINE_PERF;
		rc = profile_session_start(s, o);
		o->engine = asked;
		if (!rc) {
			c->used = PROFILE_ENGINE_PERF;
			return 0;
		}
		/* the symbolizer reads /proc/PID/map_files: a ptrace access check, which
		 * CAP_PERFMON lets perf_event_open pass (and the mappings not); ENOSYS: the
		 * call is blocked (a container profile) or the kernel has no perf events */
		if (!(s->failed_stage == PROFILE_STAGE_PERF &&
		      (rc == -EPERM || rc == -EACCES || rc == -ENOSYS)) &&
		    !(s->failed_stage == PROFILE_STAGE_SYM && (rc == -EPERM || rc == -EACCES)))
			return rc;
		c->perf_err = rc;
		c->maps_denied = s->failed_stage == PROFILE_STAGE_SYM;
		profile_perf_diagnose(o->pid, rc, o->sampler.off_cpu, &c->diag);
		/* perf_event_open passed (CAP_PERFMON skips its ptrace check), the maps did
		 * not: without CAP_SYS_PTRACE that is the cause, whatever environ said */
		if (c->maps_denied && !c->diag.cap_sys_ptrace)
			c->diag.cause = PROFILE_PERF_CAUSE_PTRACE;
		if (asked == PROFILE_ENGINE_PERF)
			return rc;
		c->fell_back = true;
		if (!o->target) {
			c->ep_err = -ENOENT;
			return rc;
		}
	}
	o->engine = PROFILE_ENGINE_EVENTPIPE;
	rc = profile_session_start(s, o);
	o->engine = asked;
	if (rc) {
		c->ep_err = rc;
		c->ep_rerr = s->ep_rerr;
		return rc;
	}
	c->used = PROFILE_ENGINE_EVENTPIPE;
	return 0;
}

int profile_session_start_engine(struct profile_session **out, struct profile_session_opts *o,
				 struct profile_engine_choice *c)
{
	struct profile_session *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	memset(c, 0, sizeof(*c));
	if (!s)
		return -ENOMEM;
	rc = start_engine(s, o, c);
	c->failed_stage = s->failed_stage;
	if (rc) {
		free(s); /* released by the failed start */
		return rc;
	}
	*out = s;
	return 0;
}

int profile_engine_explain(const struct profile_engine_choice *c, pid_t pid, char *buf,
			   size_t len)
{
	char ipc[320];
	int n;

	if (c->perf_err && c->ep_err) {
		if (c->ep_err == -EACCES)
			snprintf(ipc, sizeof(ipc), "clrtap may not reach the diagnostics socket of pid "
				 "%d either (its /tmp is behind /proc/%d/root, which needs the same "
				 "ptrace access; or the socket's permissions)", (int)pid, (int)pid);
		else if (c->ep_err == -ENOENT)
			snprintf(ipc, sizeof(ipc), "pid %d has no diagnostics socket clrtap can reach "
				 "(not a .NET process, started with DOTNET_EnableDiagnostics=0, or its "
				 "/tmp is not visible from here)", (int)pid);
		else {
			char e[256];

			ipc_strerror(c->ep_err, &c->ep_rerr, e, sizeof(e));
			snprintf(ipc, sizeof(ipc), "its diagnostics socket refused the EventPipe session "
				 "(%s)", e);
		}
		n = snprintf(buf, len,
			     "cannot profile pid %d with either engine: %s (%s: %s), and the "
			     "EventPipe fallback is not available: %s",
			     (int)pid, profile_engine_refused(c), cause_short(c->diag.cause),
			     profile_perf_cause_text(c->diag.cause), ipc);
		return n < 0 ? -EINVAL : 0;
	}
	if (c->perf_err && c->maps_denied) {
		n = snprintf(buf, len, "not allowed to profile pid %d with perf_event: %s: %s",
			     (int)pid, profile_engine_refused(c),
			     profile_perf_cause_text(c->diag.cause));
		return n < 0 ? -EINVAL : 0;
	}
	if (c->perf_err) {
		n = snprintf(buf, len, "not allowed to sample pid %d with perf_event_open: %s",
			     (int)pid, profile_perf_cause_text(c->diag.cause));
		return n < 0 ? -EINVAL : 0;
	}
	if (c->ep_err == -EACCES) {
		n = snprintf(buf, len, "cannot start the EventPipe sample profiler in pid %d: clrtap "
			     "may not reach its diagnostics socket (its /tmp is behind /proc/%d/root, "
			     "which needs ptrace access: run clrtap as the target's user, or as root "
			     "with CAP_SYS_PTRACE and CAP_DAC_OVERRIDE; or the socket's permissions "
			     "refuse clrtap)", (int)pid, (int)pid);
		return n < 0 ? -EINVAL : 0;
	}
	if (c->ep_err) {
		char e[256];

		ipc_strerror(c->ep_err, &c->ep_rerr, e, sizeof(e));
		n = snprintf(buf, len, "cannot start the EventPipe sample profiler in pid %d: %s",
			     (int)pid, e);
		return n < 0 ? -EINVAL : 0;
	}
	buf[0] = '\0';
	return 0;
}

int profile_engine_notes(const struct profile_engine_choice *c, unsigned hz, unsigned ep_samples,
			 const struct profile_ep_stats *es, char *buf, size_t len)
{
	uint32_t sampling_ns = es ? es->sampling_ns : 0;
	struct strbuf sb;
	int rc = 0;

	strbuf_init(&sb, len);
	if (c->used == PROFILE_ENGINE_EVENTPIPE) {
		rc |= strbuf_addstr(&sb, "engine: EventPipe (the runtime's sample profiler, "
					 "Microsoft-DotNETCore-SampleProfiler, over the diagnostics "
					 "socket)\n");
		if (c->fell_back)
			rc |= strbuf_addf(&sb, "why: --engine auto, and %s (%s)\n",
					  profile_engine_refused(c), cause_short(c->diag.cause));
		else
			rc |= strbuf_addstr(&sb, "why: --engine eventpipe was asked for\n");
		rc |= strbuf_addstr(&sb, "sees: managed frames only (no native, runtime or kernel "
					 "frames); threads the runtime knows (managed threads) only\n");
		if (ep_samples == PROFILE_EP_MANAGED && es && es->oncpu != TASKCPU_NONE)
			rc |= strbuf_addf(&sb, "samples: on-CPU: the sampler samples every managed "
					       "thread, running or blocked (its \"managed\" type does "
					       "not mean running); a sample was kept only as far as its "
					       "thread's CPU time (/proc/PID/task/TID/%s, read every "
					       "%u ms) advanced around it: %llu samples of threads that "
					       "were not running left out, %llu that caught their thread "
					       "switching out of managed code (a blocking wait of the "
					       "runtime or a P/Invoke's stub at the leaf) left out, %llu "
					       "of threads not polled at their time kept\n",
					  taskcpu_source_name(es->oncpu), es->oncpu_interval_ms,
					  (unsigned long long)es->waiting,
					  (unsigned long long)es->left_out,
					  (unsigned long long)es->unknown);
		else if (ep_samples == PROFILE_EP_MANAGED)
			rc |= strbuf_addf(&sb, "samples: thread time, waiting included: samples the "
					       "sampler typed \"managed\", which includes threads "
					       "blocked in a lock or in the kernel (the threads' CPU "
					       "times could not be read from /proc: %s)\n",
					  strerror(es && es->oncpu_err ? -es->oncpu_err : ENOENT));
		else if (ep_samples == PROFILE_EP_EXTERNAL)
			rc |= strbuf_addstr(&sb, "samples: threads outside managed code only (blocked, "
						 "waiting or in native code), counted in samples\n");
		else
			rc |= strbuf_addstr(&sb, "samples: every managed thread, running or blocked "
						 "(thread time, waiting included), counted in samples\n");
		rc |= strbuf_addf(&sb, "rate: the runtime's sampling interval (%.3g ms per thread), "
				       "not -F\n",
				  (double)(sampling_ns ? sampling_ns : 1000000) / 1e6);
		rc |= strbuf_addstr(&sb, "cost: the runtime suspends all managed threads at each "
					 "sample; the cost grows with the number of threads");
	} else {
		rc |= strbuf_addf(&sb, "engine: perf_event (the kernel samples each thread at %u Hz)\n",
				  hz);
		rc |= strbuf_addf(&sb, "why: %s\n",
				  c->asked == PROFILE_ENGINE_PERF ? "--engine perf was asked for"
								   : "--engine auto, and "
								     "perf_event_open was allowed");
		rc |= strbuf_addstr(&sb, "sees: every thread, managed (JIT and ReadyToRun), native "
					 "and kernel frames");
	}
	if (!rc)
		snprintf(buf, len, "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	return rc ? -E2BIG : 0;
}
