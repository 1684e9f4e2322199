/* SPDX-License-Identifier: MIT */
#ifndef CLRTAP_COMMON_CLOCK_H
#define CLRTAP_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * The clock CLK's time MS milliseconds from now, normalized: the absolute
 * deadline pthread_cond_timedwait takes (CLOCK_REALTIME for a default
 * condition variable).
 */
void ct_deadline(clockid_t clk, int64_t ms, struct timespec *ts);

#endif
