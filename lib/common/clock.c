/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/clock.h"

void ct_deadline(clockid_t clk, int64_t ms, struct timespec *ts)
{
	clock_gettime(clk, ts);
	if (ms < 0)
		ms = 0;
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}
