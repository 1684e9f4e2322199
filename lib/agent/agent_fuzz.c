/* SPDX-License-Identifier: MIT */
/*
 * agent_fuzz.c - libFuzzer harness for what clrtap reads from the target on
 * behalf of the profiler: the payloads of the profiler's events (they come
 * from a process clrtap does not trust) and /proc/PID/maps text.
 */
#include "common/compat.h"

#include "agent/agent.h"
#include "agent/ilrw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_event ev;
	enum agent_libc l;

	if (size < 1)
		return 0;
	if (!agent_event_decode(data[0] % (PRF_EV_MAX + 2), data + 1, size - 1, &ev)) {
		char line[512];

		if (strlen(ev.text) >= sizeof(ev.text))
			__builtin_trap();
		if (ev.id == PRF_EV_CALL && !agent_call_format(&ev, "T", line, sizeof(line)) &&
		    strlen(line) >= sizeof(line))
			__builtin_trap();
	}
	{
		static uint8_t out[1 << 16];
		static const uint8_t pre[] = { 0x00, 0x00 }, at[] = { 0x25, 0x26 };
		struct ilrw_edit e = { pre, 2, at, 2, 1 };
		size_t n = 0;

		if (!ilrw_prepend(data, size, pre, 2, 2, out, sizeof(out), &n) && n > sizeof(out))
			__builtin_trap();
		if (!ilrw_rewrite(data, size, &e, out, sizeof(out), &n) && n > sizeof(out))
			__builtin_trap();
	}
	l = agent_libc_from_maps((const char *)data, size);
	if (l != AGENT_LIBC_UNKNOWN && l != AGENT_LIBC_GLIBC && l != AGENT_LIBC_MUSL)
		__builtin_trap();
	return 0;
}
