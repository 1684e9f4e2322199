/* SPDX-License-Identifier: MIT */
/*
 * prio.c - clrtap's own CPU priority while it samples and processes.
 *
 * A target with N runnable threads gets N shares of the CPU against
 * clrtap's one under the fair scheduler: with 500 busy threads on 2 cores
 * clrtap runs about 0.4 % of the time, so draining the rings, naming the
 * frames and writing the result, which take a fraction of a second of CPU,
 * take minutes of wall time (issue 16). A profiler is most needed exactly
 * when the target saturates the machine. So clrtap asks for the lowest
 * real-time priority (SCHED_FIFO 1): it then runs whenever it is runnable,
 * and it is runnable only briefly (it sleeps in poll between drains).
 * SCHED_RESET_ON_FORK keeps children (the perf-map watcher) at normal
 * priority. The kernel still keeps a share for normal tasks (RT throttling,
 * or the fair server on newer kernels), so a runaway clrtap cannot take a
 * CPU whole. Without CAP_SYS_NICE, the lowest nice value RLIMIT_NICE
 * allows is taken instead; if nothing is allowed, the priority is unchanged
 * and the caller says so.
 */
#include "common/compat.h"

#include <sched.h>
#include <sys/resource.h>

#include "perf/perf.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

int perf_prio_raise(struct perf_prio *p)
{
	struct sched_param sp = { .sched_priority = 1 };
	int pol, nice_now, want;

	memset(p, 0, sizeof(*p));
	pol = sched_getscheduler(0);
	if (pol < 0)
		return -errno;
	p->old_policy = pol;
	if (sched_getparam(0, &p->old_param) < 0)
		return -errno;
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	if (nice_now == -1 && errno)
		return -errno;
	p->old_nice = nice_now;
	if ((pol & ~SCHED_RESET_ON_FORK) == SCHED_FIFO || (pol & ~SCHED_RESET_ON_FORK) == SCHED_RR) {
		p->kind = PERF_PRIO_ALREADY_RT; /* someone chose already: leave it */
		return 0;
	}
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0) {
		p->kind = PERF_PRIO_FIFO;
		p->value = 1;
		return 0;
	}
	/* Not allowed: the lowest nice value permitted (CAP_SYS_NICE or RLIMIT_NICE). */
	for (want = -20; want < nice_now; want++) {
		if (setpriority(PRIO_PROCESS, 0, want) == 0) {
			p->kind = PERF_PRIO_NICE;
			p->value = want;
			return 0;
		}
	}
	p->kind = PERF_PRIO_NONE;
	return -EPERM;
}

void perf_prio_restore(struct perf_prio *p)
{
	switch (p->kind) {
	case PERF_PRIO_FIFO:
		(void)sched_setscheduler(0, p->old_policy, &p->old_param);
		break;
	case PERF_PRIO_NICE:
		/* Raising nice back is always allowed. */
		(void)setpriority(PRIO_PROCESS, 0, p->old_nice);
		break;
	default:
		break;
	}
	p->kind = PERF_PRIO_NONE;
}

void perf_prio_describe(const struct perf_prio *p, char *buf, size_t len)
{
	switch (p->kind) {
	case PERF_PRIO_FIFO:
		snprintf(buf, len, "raised to SCHED_FIFO %d while sampling and processing", p->value);
		break;
	case PERF_PRIO_NICE:
		snprintf(buf, len, "raised to nice %d while sampling and processing (SCHED_FIFO not "
				   "permitted)",
			 p->value);
		break;
	case PERF_PRIO_ALREADY_RT:
		snprintf(buf, len, "left as started (already real-time)");
		break;
	default:
		snprintf(buf, len, "normal (not permitted to raise it: a busy target can slow clrtap)");
		break;
	}
}
