/* SPDX-License-Identifier: MIT */
/*
 * proc_fuzz.c - libFuzzer harness for the parser of /proc/PID/cgroup text
 * (a container's own process writes its cgroup names), and of the thread
 * CPU-time lines lib/proc/taskcpu reads (stat holds the thread's own name).
 */
#include "common/compat.h"

#include "proc/proc.h"
#include "proc/taskcpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_container c;
	uint64_t run;

	proc_parse_cgroup((const char *)data, size, &c);
	(void)taskcpu_parse_schedstat((const char *)data, size, &run);
	(void)taskcpu_parse_stat((const char *)data, size, 100, &run);
	if (strlen(c.id) != 0 && strlen(c.id) != 64)
		__builtin_trap();
	if (strlen(c.pod) != 0 && strlen(c.pod) != 36)
		__builtin_trap();
	return 0;
}
