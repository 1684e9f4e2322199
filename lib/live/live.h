/* SPDX-License-Identifier: MIT */
/*
 * live.h - an EventPipe session read as it arrives. One workflow for every
 * command that reads a session live (counters, watch, analyze, gcdump
 * collect, probe's inlining listener): lib/ipc runs the session on a second
 * thread and writes the stream into a pipe (and, if asked, a copy into a
 * file); lib/nettrace reads the pipe on the calling thread and hands each
 * event to the caller's handlers.
 *
 * Stopping: *stop (the caller's flag, also set by signal handlers) ends the
 * session; so does a handler returning non-zero, a tick returning non-zero,
 * or damage in the stream. Whatever the reader no longer wants is drained so
 * the session thread never blocks on a full pipe.
 */
#ifndef CLRTAP_LIVE_H
#define CLRTAP_LIVE_H

#include "common/compat.h"

#include <signal.h>

#include "ipc/ipc.h"
#include "nettrace/nettrace.h"

struct live_session_opts {
	const struct ipc_endpoint *ep;
	const struct ipc_trace_config *cfg;
	volatile sig_atomic_t *stop; /* required: set to end the session */
	int64_t duration_ms;         /* 0: until *stop */
	const struct nt_handlers *h;
	void *ctx; /* for h, idle, tick and opened */
	const struct nt_limits *limits; /* NULL: defaults */
	/* called when no bytes are waiting, before the reader blocks (may be NULL) */
	void (*idle)(void *ctx);
	/* called before every read and at least every tick_ms while nothing
	 * arrives (tick_ms > 0); non-zero ends the session (may be NULL) */
	int (*tick)(void *ctx);
	int tick_ms;
	/* called once the trace header is read (may be NULL) */
	void (*opened)(void *ctx, const struct nt_trace_info *ti);
	/* Events wait in the reader's time-order window until the stream says
	 * nothing older can come, which for the last events of a flush is the
	 * next flush. prompt: whenever the stream pauses (nothing waiting in the
	 * pipe), what is held goes out at once; for displays that need the
	 * latest values (counters, watch), whose analyses do not pair events of
	 * different threads. Not for gcdump or anything that does. */
	bool prompt;
	int tee_fd;         /* > 0: every byte of the stream is also written here */
	size_t pipe_bytes;  /* > 0: ask for a pipe this big (best effort) */
};

struct live_session_result {
	struct ipc_session_result session;
	int session_err;        /* what ipc_session_run returned */
	struct ipc_error rerr;  /* when session_err is -EREMOTEIO */
	int reader_err;         /* what nt_reader_run returned (NT_STOPPED, 0, <0) */
	uint64_t reader_offset; /* where the stream was damaged, with reader_err < 0 */
	char reader_msg[128];
	struct nt_trace_info info; /* valid when info_valid */
	bool info_valid;
	struct nt_stats stats; /* the reader's counts (events, dropped ...) */
	uint64_t bytes;        /* bytes the reader took from the pipe */
};

/* Returns 0 once the session is over (see res for how it went), or a
 * negative errno when it could not be run at all (pipe, thread, memory). */
int live_session_run(const struct live_session_opts *o, struct live_session_result *res);

#endif
