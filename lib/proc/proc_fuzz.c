/* SPDX-License-Identifier: MIT */
/*
 * proc_fuzz.c - libFuzzer harness for the parser of /proc/PID/cgroup text
 * (a container's own process writes its cgroup names).
 */
#include "common/compat.h"

#include "proc/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_container c;

	proc_parse_cgroup((const char *)data, size, &c);
	if (strlen(c.id) != 0 && strlen(c.id) != 64)
		__builtin_trap();
	if (strlen(c.pod) != 0 && strlen(c.pod) != 36)
		__builtin_trap();
	return 0;
}
