/* SPDX-License-Identifier: MIT */
/*
 * log.h - libraries never print: they report through this callback.
 * With no callback set, messages are dropped. The CLI installs one that
 * writes to stderr (src/main.c); a serve session's thread sets its own sink
 * (ct_log_set_thread). The profiler library does not link this code.
 */
#ifndef CLRTAP_COMMON_LOG_H
#define CLRTAP_COMMON_LOG_H

#include "common/compat.h"

#include <stdarg.h>

enum ct_log_level { CT_LOG_WARN = 0, CT_LOG_INFO = 1, CT_LOG_DEBUG = 2 };

typedef void (*ct_log_fn)(enum ct_log_level level, const char *msg);

void ct_log_set(ct_log_fn fn, enum ct_log_level max_level);
void ct_log(enum ct_log_level level, const char *fmt, ...) PRINTF(2, 3);
/*
 * A sink for the calling thread only (a clrtap serve session's own log):
 * while set, this thread's messages go there instead of the process-wide
 * callback; it gets warnings and info, never debug. NULL removes it.
 */
typedef void (*ct_log_ctx_fn)(void *ctx, enum ct_log_level level, const char *msg);
void ct_log_set_thread(ct_log_ctx_fn fn, void *ctx);

/*
 * Formats into buf (len bytes) and hands the line to fn (a task's own sink,
 * task_ctx.log) or, when fn is NULL, to ct_log's sinks.
 */
void ct_log_vto(ct_log_ctx_fn fn, void *ctx, enum ct_log_level level, char *buf, size_t len,
		const char *fmt, va_list ap);

#define ct_warn(...) ct_log(CT_LOG_WARN, __VA_ARGS__)
#define ct_info(...) ct_log(CT_LOG_INFO, __VA_ARGS__)
#define ct_debug(...) ct_log(CT_LOG_DEBUG, __VA_ARGS__)

#endif
