/* SPDX-License-Identifier: MIT */
/*
 * taskcpu.h - was a thread running at a given moment? Each thread of a
 * process has its on-CPU time polled from /proc/PID/task/TID/schedstat
 * (nanoseconds; /proc/.../stat utime+stime in clock ticks where schedstat is
 * absent) by a poller thread, so that a stack sample taken by someone else
 * (the runtime's EventPipe sample profiler, which samples every managed
 * thread, blocked or not) can be weighed by the share of its interval the
 * thread really ran. Times are CLOCK_MONOTONIC nanoseconds (the runtime's
 * QueryPerformanceCounter on Linux); threads are named by their tid in the
 * target's own PID namespace (what the runtime reports).
 *
 * Cost: one pread per thread per interval (the interval grows with the
 * thread count: at most ~10,000 reads per second), 16 bytes per thread per
 * interval kept for at most TASKCPU_HORIZON_S seconds.
 */
#ifndef CLRTAP_PROC_TASKCPU_H
#define CLRTAP_PROC_TASKCPU_H

#include "common/compat.h"

#define TASKCPU_HORIZON_S 30 /* points older than this behind the newest are dropped */
#define TASKCPU_MAX_THREADS 4096

enum taskcpu_source {
	TASKCPU_NONE,      /* nothing readable: running and waiting cannot be told apart */
	TASKCPU_SCHEDSTAT, /* /proc/.../schedstat: on-CPU nanoseconds */
	TASKCPU_STAT,      /* /proc/.../stat utime+stime: clock ticks (coarse) */
};

struct taskcpu_stats {
	enum taskcpu_source source;
	unsigned interval_ms;   /* the last polling interval */
	uint64_t polls;         /* rounds */
	uint64_t reads;         /* per-thread reads */
	uint32_t threads;       /* threads seen */
	bool threads_capped;    /* more than TASKCPU_MAX_THREADS */
	/* taskcpu_keep's verdicts */
	uint64_t kept, waiting, unknown;
	double running_sum;     /* the sum of the fractions of the samples with a known one */
};

struct taskcpu;

/* Starts polling pid's threads (a first round before it returns). -errno:
 * the process is gone, or not one thread's CPU time could be read. */
int taskcpu_start(struct taskcpu **out, pid_t pid);

/*
 * The fraction (0..2, see taskcpu.c) of the polling interval around t_ns that the thread
 * nstid spent on a CPU. 0; -EAGAIN: not polled past t_ns yet (ask again
 * later); -ENOENT: the thread or the moment is not covered.
 */
int taskcpu_running(struct taskcpu *tc, uint32_t nstid, uint64_t t_ns, double *frac);

/*
 * Whether to keep a sample of nstid at t_ns as on-CPU: each thread's kept
 * samples follow its running fractions (error diffusion: with fraction f,
 * a share f of its samples are kept). Waits up to wait_ms for the poller
 * to pass t_ns. *known: false when the thread's CPU time did not cover the
 * sample (then it is kept, and counted as unknown).
 */
bool taskcpu_keep(struct taskcpu *tc, uint32_t nstid, uint64_t t_ns, int wait_ms, bool *known);

/* Stops polling (queries are still answered from what was polled). */
void taskcpu_stop(struct taskcpu *tc);
void taskcpu_stats(struct taskcpu *tc, struct taskcpu_stats *st);
const char *taskcpu_source_name(enum taskcpu_source s);
void taskcpu_free(struct taskcpu *tc);

/* For tests: parse one schedstat ("run wait slices") or stat line into
 * on-CPU nanoseconds (stat: utime+stime ticks times 1e9/hz). */
int taskcpu_parse_schedstat(const char *s, size_t len, uint64_t *run_ns);
int taskcpu_parse_stat(const char *s, size_t len, long hz, uint64_t *run_ns);

#endif
