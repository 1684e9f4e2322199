/* SPDX-License-Identifier: MIT */
/*
 * procev_fuzz.c - libFuzzer harness for the process-events connector's
 * datagram parser (lengths from the bytes are checked before use).
 */
#include "common/compat.h"

#include "proc/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_exit_ev(void *ctx, pid_t pid, pid_t tgid, int status)
{
	(void)pid;
	(void)tgid;
	(void)status;
	(*(size_t *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;

	proc_events_parse(data, size, on_exit_ev, &n);
	if (n > size / 16 + 1)
		__builtin_trap();
	return 0;
}
