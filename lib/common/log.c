/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/log.h"

static ct_log_fn log_fn;
static enum ct_log_level log_max = CT_LOG_WARN;

void ct_log_set(ct_log_fn fn, enum ct_log_level max_level)
{
	log_fn = fn;
	log_max = max_level;
}

void ct_log(enum ct_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_fn || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg);
}
