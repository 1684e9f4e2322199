/* SPDX-License-Identifier: MIT */
/*
 * hwbpcheck - do hardware execute breakpoints fire on this machine? Tells a
 * test which kind of machine it runs on, independently of clrtap (no clrtap
 * library code): arms a PERF_TYPE_BREAKPOINT / HW_BREAKPOINT_X event on its
 * own function, calls it 1000 times and prints
 *   "fires 1000/1000"    every call seen,
 *   "silent N/1000"      accepted but (some) calls not seen,
 *   "refused ERRNO-TEXT" perf_event_open said no.
 * Exit 0 in all three cases (the answer is the output), 1 on a usage error.
 */
#include "common/compat.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CALLS 1000

__attribute__((noinline)) static int target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3;
}

int main(int argc, char **argv)
{
	int (*volatile fn)(int) = target;
	struct perf_event_attr a;
	uint64_t count = 0;
	int fd, i, acc = 0;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: hwbpcheck\n");
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)target;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		printf("refused %s\n", strerror(errno));
		return 0;
	}
	for (i = 0; i < CALLS; i++)
		acc += fn(i);
	if (read(fd, &count, sizeof(count)) != (ssize_t)sizeof(count)) {
		printf("refused read: %s\n", strerror(errno));
		return 0;
	}
	close(fd);
	printf("%s %llu/%d\n", count >= CALLS ? "fires" : "silent", (unsigned long long)count,
	       CALLS);
	return acc == 42 ? 0 : 0;
}
