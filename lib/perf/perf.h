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

#endif
