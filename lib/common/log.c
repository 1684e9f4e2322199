/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/log.h"

static ct_log_fn log_fn;
static enum ct_log_level log_max = CT_LOG_WARN;
static __thread ct_log_ctx_fn thread_fn;
static __thread void *thread_ctx;

void ct_log_set_thread(ct_log_ctx_fn fn, void *ctx)
{
	thread_fn = fn;
	thread_ctx = ctx;
}

void ct_log_set(ct_log_fn fn, enum ct_log_level max_level)
{
	log_fn = fn;
	log_max = max_level;
}

void ct_log(enum ct_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	/* a thread's own sink (a serve session's log) takes info too, as the CLI prints it */
	if (thread_fn ? level > CT_LOG_INFO : (!log_fn || level > log_max))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (thread_fn)
		thread_fn(thread_ctx, level, msg);
	else
		log_fn(level, msg);
}

void ct_log_vto(ct_log_ctx_fn fn, void *ctx, enum ct_log_level level, char *buf, size_t len,
		const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
	if (fn)
		fn(ctx, level, buf);
	else
		ct_log(level, "%s", buf); /* no sink of the caller's own: the process's (or thread's) */
}
