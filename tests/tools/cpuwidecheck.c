/* SPDX-License-Identifier: MIT */
/*
 * cpuwidecheck - does this kernel accept, and fire, CPU-wide (pid -1, cpu N)
 * uprobe and hardware execute breakpoint events? Tells a test which kind of
 * machine it runs on, independently of clrtap (no clrtap library code): for
 * each kind, one counting event per CPU on a function of this program, the
 * function called 1000 times, the counts of all CPUs summed. Prints two
 * lines:
 *   "uprobe fires 1000/1000" | "uprobe silent N/1000" | "uprobe refused ERRNO-TEXT"
 *   "hwbp fires 1000/1000"   | "hwbp silent N/1000"   | "hwbp refused ERRNO-TEXT"
 * Exit 0 in all cases (the answer is the output), 1 on a usage error.
 */
#include "common/compat.h"

#include <inttypes.h>
#include <limits.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CALLS 1000
#define MAXCPU 1024

__attribute__((noinline)) static int target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3;
}

/* The file offset of addr in this program's executable mapping. */
static int self_offset(uint64_t addr, char *path, size_t cap, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	ssize_t n;

	n = readlink("/proc/self/exe", path, cap - 1);
	if (!f || n <= 0) {
		if (f)
			fclose(f);
		return -1;
	}
	path[n] = '\0';
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, fo;
		char *e, *perms;

		lo = strtoull(line, &e, 16);
		if (*e != '-')
			continue;
		hi = strtoull(e + 1, &e, 16);
		if (*e != ' ')
			continue;
		perms = e + 1;
		if (strlen(perms) < 6)
			continue;
		fo = strtoull(perms + 5, NULL, 16);
		if (addr >= lo && addr < hi && perms[2] == 'x') {
			*off = addr - lo + fo;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -1;
}

static int pmu_type(const char *name)
{
	char p[128], buf[32];
	FILE *f;
	int t = -1;

	snprintf(p, sizeof(p), "/sys/bus/event_source/devices/%s/type", name);
	f = fopen(p, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		t = (int)strtol(buf, NULL, 10);
	fclose(f);
	return t;
}

static void run(const char *label, struct perf_event_attr *a)
{
	int (*volatile fn)(int) = target;
	static int fds[MAXCPU];
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t sum = 0;
	int cpu, i, opened = 0, err = 0, acc = 0;

	if (ncpu < 1 || ncpu > MAXCPU)
		ncpu = 1;
	for (cpu = 0; cpu < ncpu; cpu++) {
		fds[cpu] = (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, 0);
		if (fds[cpu] >= 0)
			opened++;
		else if (errno != ENODEV) /* an offline CPU */
			err = errno;
	}
	if (!opened || err) {
		printf("%s refused %s\n", label, strerror(err ? err : ENODEV));
		for (cpu = 0; cpu < ncpu; cpu++)
			if (fds[cpu] >= 0)
				close(fds[cpu]);
		return;
	}
	for (i = 0; i < CALLS; i++)
		acc += fn(i);
	for (cpu = 0; cpu < ncpu; cpu++) {
		uint64_t c = 0;

		if (fds[cpu] < 0)
			continue;
		if (read(fds[cpu], &c, sizeof(c)) == (ssize_t)sizeof(c))
			sum += c;
		close(fds[cpu]);
	}
	printf("%s %s %" PRIu64 "/%d\n", label, sum >= CALLS ? "fires" : "silent", sum, CALLS);
	(void)acc;
}

int main(int argc, char **argv)
{
	struct perf_event_attr a;
	char path[PATH_MAX];
	uint64_t off = 0;
	int ut;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: cpuwidecheck\n");
		return 1;
	}
	ut = pmu_type("uprobe");
	if (ut < 0) {
		printf("uprobe refused no uprobe PMU\n");
	} else if (self_offset((uint64_t)(uintptr_t)target, path, sizeof(path), &off)) {
		printf("uprobe refused cannot find own code\n");
	} else {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = (uint32_t)ut;
		a.config1 = (uint64_t)(uintptr_t)path;
		a.config2 = off;
		a.exclude_kernel = 1;
		run("uprobe", &a);
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)target;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	run("hwbp", &a);
	return 0;
}
