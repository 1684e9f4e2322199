/* SPDX-License-Identifier: MIT */
/*
 * natmem.h - clrtap's side of the profiler's sampled native allocations
 * (profiler/natmem.c): reads the tables from the target through
 * /proc/PID/mem, groups samples by stack, estimates bytes, and checks after
 * the detach that every patched GOT slot holds its original value again.
 * docs/internals/natmem.md. Functions return 0 or a negative errno.
 */
#ifndef CLRTAP_NATMEM_NATMEM_H
#define CLRTAP_NATMEM_NATMEM_H

#include "common/compat.h"
#include "common/hashtab.h"
#include "agent/natmem_proto.h"

struct sym_proc;

#define NATMEM_MAX_STACKS 65536 /* distinct stacks kept; more are counted, not kept */

struct natmem_stack {
	uint64_t frames[NM_FRAMES]; /* return addresses, leaf first */
	uint32_t n;
	uint64_t hash;
	uint64_t alloc_samples, live_samples;
	double alloc_bytes, live_bytes;   /* estimates */
	double alloc_var, live_var;       /* their variances */
};

struct natmem {
	pid_t pid;
	int fd;            /* /proc/PID/mem */
	uint64_t table;    /* the mapping in the target */
	struct nm_header h;
	bool have_header;
	uint64_t next_seq;     /* the next ring sample to take (1-based) */
	uint64_t ring_lost;    /* samples overwritten in the ring before clrtap read them */
	uint64_t torn;         /* entries read while being written (dropped) */
	uint64_t stacks_dropped; /* samples whose stack did not fit NATMEM_MAX_STACKS */
	uint64_t ring_taken, live_taken;
	struct natmem_stack *st;
	uint32_t nst, cap;
	struct ct_itab idx;
};

/* The estimated bytes a sample of size bytes stands for at a mean interval. */
double natmem_weight(uint64_t size, uint64_t interval);

/* Opens /proc/PID/mem and reads the header at table (magic and version checked). */
int natmem_open(struct natmem *m, pid_t pid, uint64_t table);
/* Reads the header and the ring samples written since the last poll. */
int natmem_poll(struct natmem *m);
/* Reads the live table: the live view (call once, at the end, before the detach). */
int natmem_read_live(struct natmem *m);
/* The parts of the above that take bytes already read (tests, fuzzer):
 * a header (magic, version and sizes checked: -EPROTO), the NM_RING ring
 * entries (samples after the last taken, up to the header's count), the
 * NM_LIVE_SLOTS live entries. */
int natmem_header_take(struct natmem *m, const struct nm_header *h);
int natmem_take_ring(struct natmem *m, const struct nm_sample *ring);
int natmem_take_live(struct natmem *m, const struct nm_live *lt);
/* Adds one sample (from the ring, or the live table): bounded and checked. */
int natmem_add_sample(struct natmem *m, const struct nm_sample *s, bool live);
/*
 * After the detach: reads every GOT slot the profiler patched and counts
 * those holding their original value again, those still holding clrtap's
 * hook, and those that could not be read (their module went away).
 */
int natmem_got_check(struct natmem *m, uint32_t *restored, uint32_t *hooked, uint32_t *unreadable);
/* Sorts stacks by live (live) or churned (alloc - live) bytes, descending. */
void natmem_sort(struct natmem *m, bool live);
/* A frame's name: "Ns.Type::Method" (managed), "function (libfoo.so)", "0x... (libfoo.so)". */
void natmem_frame_name(struct sym_proc *sp, uint64_t ret_addr, char *buf, size_t len, bool *managed);
void natmem_close(struct natmem *m);

struct ct_json;
struct strbuf;
/* The two views, top rows each (stacks that read the same once named are
 * one row), as "live" and "churn" arrays into an open JSON object. */
void natmem_report_json(struct natmem *m, struct sym_proc *sp, int top, struct ct_json *j);
/* The same as text (target-controlled names: pass through cli_safe). */
void natmem_report_text(struct natmem *m, struct sym_proc *sp, int top, struct strbuf *out);
struct flame;
/* The live view (live) or the churn into f, weighted by estimated bytes. */
int natmem_flame(struct natmem *m, struct sym_proc *sp, bool live, struct flame *f);

#endif
