/* SPDX-License-Identifier: MIT */
/*
 * perf.h - perf_event_open and its ring buffers, for sampling (profile, top)
 * and for uprobes / breakpoints (probe).
 *
 * Every kernel object here is owned by a file descriptor: when clrtap exits,
 * even by SIGKILL, the kernel drops the events, uprobes and breakpoints.
 */
#ifndef CLRTAP_PERF_PERF_H
#define CLRTAP_PERF_PERF_H

#include "common/compat.h"

#include <linux/perf_event.h>
#include <sched.h>

/* perf_event_open(2). Returns an fd (O_CLOEXEC) or a negative errno. */
int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd, unsigned long flags);

/* One mmap'd ring buffer: 1 metadata page + 2^n data pages. */
struct perf_ring {
	int fd;
	void *base;
	size_t data_size;
	size_t mmap_size;
	uint64_t lost;       /* samples the kernel reported lost (PERF_RECORD_LOST) */
	uint8_t *scratch;    /* for records that wrap around the end of the ring */
	size_t scratch_size;
};

/* Maps a ring of 2^pages_log2 data pages on fd. On success the ring owns fd
 * (perf_ring_close closes it); on failure the caller still does. */
int perf_ring_open(struct perf_ring *r, int fd, unsigned pages_log2);
/* Unmaps and closes the fd. Safe on a zeroed ring. */
void perf_ring_close(struct perf_ring *r);

/*
 * Calls fn(ctx, header, record) for each record now in the ring (a record
 * that wraps is copied to scratch first), then advances the tail. Stops early
 * when fn returns non-zero and returns that value; otherwise returns the
 * number of records read (>= 0). PERF_RECORD_LOST records are counted into
 * r->lost and also passed to fn.
 */
typedef int (*perf_record_fn)(void *ctx, const struct perf_event_header *h);
int perf_ring_drain(struct perf_ring *r, perf_record_fn fn, void *ctx);

/* A PERF_RECORD_SAMPLE split into its fields, as selected by sample_type. */
struct perf_sample {
	uint64_t id, ip, time, addr, period, stream_id;
	uint32_t pid, tid, cpu;
	uint64_t nr;                /* callchain length (PERF_CONTEXT_* markers included) */
	const uint64_t *callchain;
	uint32_t raw_size;
	const uint8_t *raw;
	uint64_t regs_abi;          /* 0: no user registers (e.g. kernel thread) */
	unsigned nregs;
	const uint64_t *regs;       /* in the order of the bits of sample_regs_user */
	uint64_t stack_size;        /* user stack copy */
	const uint8_t *stack;
	uint64_t stack_dyn_size;
};

/*
 * Parses a PERF_RECORD_SAMPLE record h according to attr's sample_type,
 * sample_regs_user and read_format. Pointers point into the record. Returns 0
 * or -EBADMSG when the record is shorter than its fields say.
 */
int perf_sample_parse(const struct perf_event_attr *attr, const struct perf_event_header *h,
		      struct perf_sample *s);

/* Dynamic PMU type from /sys/bus/event_source/devices/NAME/type ("uprobe", "kprobe"). */
int perf_pmu_type(const char *name);
/* The config bit of a PMU's format attribute, e.g. ("uprobe", "retprobe") -> 0. */
int perf_pmu_format_bit(const char *pmu, const char *attr);
/* A tracepoint's id from tracefs ("sched", "sched_switch"), or a negative errno. */
int perf_tracepoint_id(const char *sys, const char *name);

/* ---------------------------------------------------------------------------
 * Sampling sessions (sampler.c): every thread of one process, threads created
 * later included, for `clrtap profile` and `clrtap top`. Three ways, the
 * first one permitted is used (enum perf_sampler_mode):
 *
 * cgroup:  one event per CPU (and kind) counting only the tasks of the
 *          target's cgroup (PERF_FLAG_PID_CGROUP, cgroup v2); samples of
 *          other processes of that cgroup are dropped by pid
 *          (PERF_SAMPLE_TID). Setup and teardown cost ncpu events whatever
 *          the thread count, threads created later are covered by the
 *          kernel, nothing is rescanned.
 * cpu:     the same with system-wide per-CPU events (the target is in the
 *          root cgroup, or cgroups are not usable), on-CPU only: off-CPU
 *          would take a stack copy at every context switch of every process,
 *          so off-CPU events are then per thread (the next mode).
 * thread:  one event per (thread, CPU) with inherit set, so threads the
 *          target creates later inherit the event; all events of one CPU
 *          write into one ring (PERF_EVENT_IOC_SET_OUTPUT). Threads the scan
 *          missed are found by re-reading /proc/PID/task on every poll (FORK
 *          records say which threads are already covered). Used when
 *          per-CPU events are not permitted (perf_event_paranoid > 0 without
 *          CAP_PERFMON) and for off-CPU without a cgroup. Note that a thread's
 *          cpu-clock is then counted per (thread, CPU) event: a thread that
 *          runs less than a period on each CPU during the session gives no
 *          sample (at hundreds of threads sharing few CPUs, most of them).
 *   on-CPU:  cpu-clock every 1e9/hz ns of the thread's CPU time, callchain.
 *   off-CPU: the context-switches software event (a sample with the stack at
 *            every switch-out) plus PERF_RECORD_SWITCH records (switch-in
 *            time); blocked time = switch-in - switch-out, in ns. Switches
 *            where the thread was preempted (still runnable) are not counted.
 * Times are CLOCK_MONOTONIC ns.
 */

enum perf_stack_kind {
	PERF_STACK_CPU = 1,    /* weight: the sampling period in ns */
	PERF_STACK_OFFCPU = 2, /* weight: ns blocked */
};

#define PERF_SAMPLER_MAX_STACK 127

struct perf_stack {
	enum perf_stack_kind kind;
	uint32_t pid, tid;
	uint64_t time;        /* CLOCK_MONOTONIC ns (switch-out time for off-CPU) */
	uint64_t weight;      /* ns */
	unsigned nr;          /* frames in ips, leaf first, markers removed */
	unsigned nkernel;     /* the first nkernel frames are kernel addresses */
	const uint64_t *ips;  /* valid during the callback only */
};

/*
 * Off-CPU samples also carry the user registers and a copy of the top of
 * the user stack, because the frame-pointer walk of the kernel stops in
 * libc (built without frame pointers) right where a thread blocks. A hook
 * can unwind from them (CFI for native code, frame pointers for JIT code)
 * and replace the user part of the chain.
 */
struct perf_user_state {
	uint64_t ip, sp, bp;
	const uint8_t *stack; /* copy of [sp, sp + stack_size) */
	uint64_t stack_size;
};
/* Writes up to cap frames (leaf first) to out; returns how many (0: keep the kernel's). */
typedef unsigned (*perf_unwind_fn)(void *ctx, const struct perf_user_state *u, uint64_t *out,
				   unsigned cap);
/* bytes of user stack copied with each off-CPU sample */
#define PERF_SAMPLER_STACK_COPY 16384

/* Called for every stack; a non-zero return stops the poll with that value. */
typedef int (*perf_stack_fn)(void *ctx, const struct perf_stack *st);

struct perf_sampler_opts {
	unsigned hz;            /* on-CPU sampling frequency (0: 99); at most 10000 */
	bool cpu;               /* on-CPU samples */
	bool off_cpu;           /* off-CPU blocked time */
	bool no_kernel;         /* do not ask for kernel stacks */
	unsigned ring_pages_log2; /* data pages per CPU ring, 2^n (0: 7, 512 KiB) */
	bool per_thread;        /* force the per-(thread, CPU) events (tests, benchmarks) */
};

enum perf_sampler_mode {
	PERF_SAMPLER_THREAD = 0, /* per (thread, CPU), inherited */
	PERF_SAMPLER_CGROUP,     /* per CPU, the target's cgroup, filtered by pid */
	PERF_SAMPLER_CPU,        /* per CPU, system-wide, filtered by pid */
};

struct perf_sampler;

/*
 * Starts sampling every thread of pid. Kernel stacks are asked for unless
 * no_kernel; when that is refused (-EACCES/-EPERM: kernel.perf_event_paranoid
 * without CAP_PERFMON) on-CPU sampling falls back to user stacks only (see
 * perf_sampler_kernel). Returns -ESRCH (no such process), -EACCES/-EPERM (not
 * allowed to sample it at all; off-CPU without kernel access is refused),
 * or another negative errno.
 */
int perf_sampler_open(struct perf_sampler **out, pid_t pid, const struct perf_sampler_opts *o,
		      perf_stack_fn fn, void *ctx);
/*
 * Waits up to timeout_ms for data, drains every ring (calling fn), and opens
 * events on threads not covered yet. Returns 0, fn's non-zero value, or
 * -ESRCH once the process is gone (everything it produced was delivered).
 */
int perf_sampler_poll(struct perf_sampler *s, int timeout_ms);
/* Drains what is left and, for off-CPU, delivers threads still blocked at
 * end_ns (CLOCK_MONOTONIC) with the time blocked so far. Stops sampling. */
int perf_sampler_finish(struct perf_sampler *s, uint64_t end_ns);
void perf_sampler_close(struct perf_sampler *s);
/* Sets the unwind hook for off-CPU samples (NULL: the kernel's chain only). */
void perf_sampler_set_unwind(struct perf_sampler *s, perf_unwind_fn fn, void *ctx);

struct perf_sampler_stats {
	uint64_t samples;      /* on-CPU samples delivered */
	uint64_t switches;     /* off-CPU intervals delivered */
	uint64_t lost;         /* records the kernel dropped (ring full) */
	uint64_t throttled;    /* THROTTLE records (perf_event_max_sample_rate) */
	uint64_t bad;          /* malformed records skipped */
	unsigned threads;      /* thread mode: threads covered (opened or inherited);
				* per-CPU modes: threads of the target that delivered a sample */
	unsigned events;       /* perf events open */
	bool kernel;           /* kernel stacks are being collected */
	enum perf_sampler_mode mode;        /* of the on-CPU events */
	enum perf_sampler_mode offcpu_mode; /* of the off-CPU events */
	uint64_t other;        /* per-CPU modes: records of other processes dropped */
	char cgroup[256];      /* cgroup mode: the target's cgroup (v2 path) */
};
/* "thread", "cgroup", "cpu" */
const char *perf_sampler_mode_name(enum perf_sampler_mode m);
void perf_sampler_stats(const struct perf_sampler *s, struct perf_sampler_stats *st);
/* The thread's name (comm) as last seen, or NULL. */
const char *perf_sampler_comm(const struct perf_sampler *s, uint32_t tid);
/* CLOCK_MONOTONIC now, in ns. */
uint64_t perf_now_ns(void);

/* ---------------------------------------------------------------------------
 * clrtap's own priority while it works (prio.c): the lowest real-time
 * priority (SCHED_FIFO 1, reset on fork) where permitted, else the lowest
 * nice value permitted, so a target with many runnable threads cannot starve
 * the tool (issue 16). Restore undoes it.
 */
enum perf_prio_kind {
	PERF_PRIO_NONE = 0,     /* unchanged: not permitted */
	PERF_PRIO_FIFO,         /* SCHED_FIFO value */
	PERF_PRIO_NICE,         /* nice value */
	PERF_PRIO_ALREADY_RT,   /* clrtap was started real-time: left alone */
};
struct perf_prio {
	enum perf_prio_kind kind;
	int value;
	int old_policy, old_nice;
	struct sched_param old_param;
};
/* Returns 0, or -EPERM when nothing could be raised (p->kind NONE). */
int perf_prio_raise(struct perf_prio *p);
void perf_prio_restore(struct perf_prio *p);
/* One line for the command's output: what was done. */
void perf_prio_describe(const struct perf_prio *p, char *buf, size_t len);

#endif
