/* SPDX-License-Identifier: MIT */
/*
 * reader_int.h - the nettrace reader's state, shared by reader.c (input,
 * header, block framing, event and metadata blobs, delivery) and regions.c
 * (threads and drop detection; the stack, label, sequence point and thread
 * blocks of a region). Nothing outside these two files includes it.
 */
#ifndef CLRTAP_NETTRACE_READER_INT_H
#define CLRTAP_NETTRACE_READER_INT_H

#include "common/compat.h"
#include "common/cursor.h"
#include "common/hashtab.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

#define IBUF_SIZE (64 * 1024)
#define BLOCK_CHUNK (1024 * 1024) /* block buffers grow by what actually arrives */
#define MAX_TYPE_NAME 64

enum rstate {
	RS_NEW,        /* nothing read */
	RS_BLOCKS,     /* before a block header */
	RS_INBLOCK,    /* a block is loaded and being processed */
	RS_BLOCK_TAIL, /* V5: the EndObject byte after the block content is due */
	RS_DONE,
	RS_ERROR,
};

enum bkind {
	BK_UNKNOWN,
	BK_EVENT,
	BK_META,
	BK_STACK,
	BK_SP,
	BK_THREAD,   /* V6 */
	BK_RMTHREAD, /* V6 */
	BK_LABEL,    /* V6 */
};

/* Event header state; compressed headers are deltas against the previous one. */
struct hdr {
	uint32_t meta, seq, proc, stack, label, payload;
	uint64_t tid, ctid;
	uint64_t ts;
	uint8_t act[16], rel[16];
};

struct thr {
	uint64_t key; /* V5: OS thread id; V6: thread index */
	uint64_t os_tid;
	uint64_t events, dropped;
	uint32_t last;
	uint32_t gen; /* sequence-point generation of the last activity */
	bool removed; /* V6 RemoveThread / flushed */
	bool has_os_tid;
};

struct stk {
	size_t off; /* into ips */
	uint32_t n;
};

struct label {
	uint8_t act[16], rel[16];
	uint8_t has; /* bit0 act, bit1 rel */
};

struct nt_reader {
	nt_read_fn read;
	void *rctx;
	struct nt_limits lim;

	/* input */
	uint8_t *ibuf;
	size_t ilen, ipos;
	uint64_t off;
	bool eof;

	enum rstate state;
	int err;
	uint64_t err_off;
	char errmsg[192];

	struct nt_trace_info info;
	bool v6;

	/* the current block */
	uint8_t *blk;
	size_t blk_cap;
	size_t blk_len;      /* bytes present */
	size_t blk_declared; /* bytes the header promised */
	uint64_t blk_off;    /* stream offset of the content */
	uint64_t blk_hdr_off;
	enum bkind blk_kind;
	bool blk_done;
	bool compressed;
	struct cursor bc;
	struct hdr h;

	/* metadata: open addressing id -> record; all[] owns every record */
	struct ct_itab mtab; /* live records by id: indices into all */
	uint32_t mcount;
	struct nt_metadata **all;
	size_t nall, allcap;
	size_t mbytes;
	struct nt_mbuild mb;

	/* stacks of the current sequence-point region */
	uint64_t *ips;
	size_t nips, ipscap;
	struct stk *stk;
	uint32_t nstk, stkcap, stk_first;

	/* V6 label lists of the current region */
	struct label *lab;
	uint32_t nlab, labcap, lab_first;

	/* threads: dense array + open addressing index (slot = index + 1) */
	struct thr *thr;
	size_t nthr, thrcap;
	struct ct_itab tidx; /* threads by key: indices into thr */
	uint32_t gen;

	/* the time-order window */
	struct nt_order ord;
	int64_t rel_upto;   /* every held event up to this timestamp may go out */
	bool rel_all;       /* every held event may go out (sequence point, end, damage) */
	bool quiet;         /* a callback aborted: nothing more is delivered */
	bool have_last;
	int64_t last_ts;    /* of the last event delivered */

	struct nt_stats st;
};

/* What an event keeps while it waits in the window (the payload follows it):
 * the event with its pointers resolved again when it goes out. */
struct held {
	struct nt_event ev;
	uint32_t stk;     /* index into stk[] of the region, UINT32_MAX for none */
	uint8_t act[16], rel[16];
};

/* reader.c */
/* Records the first error (its message for nt_reader_error) and returns err. */
PRINTF(4, 5) int nt_rd_fail(struct nt_reader *r, int err, uint64_t off, const char *fmt, ...);
/* V6 sequence point flag 2: metadata ids may be reused from here on. */
void nt_rd_meta_flush(struct nt_reader *r);

/* regions.c: each handles the block loaded at r->bc; 0 or a negative errno. */
int nt_rd_stack_block(struct nt_reader *r);
int nt_rd_sp_block(struct nt_reader *r, int64_t *ts);
int nt_rd_thread_block(struct nt_reader *r);
int nt_rd_rmthread_block(struct nt_reader *r);
int nt_rd_label_block(struct nt_reader *r);
/* Counts an event's sequence number against its capture thread (drops). */
int nt_rd_seq_event(struct nt_reader *r, uint64_t key, uint32_t seq);
/* The thread with that key (V5: OS thread id, V6: index), or NULL. */
struct thr *nt_rd_thr_find(struct nt_reader *r, uint64_t key);

#endif
