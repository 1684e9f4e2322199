/* SPDX-License-Identifier: MIT */
/*
 * analyze_fuzz.c - libFuzzer harness for the /proc/PID/smaps parser (the
 * kernel writes it, but the target chooses its mappings' file names, which
 * may hold newlines and anything else).
 */
#include "common/compat.h"

#include "analyze/analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_memory m = { 0 };
	uint64_t sum = 0;
	int k;

	analyze_memory_parse((const char *)data, size, &m);
	for (k = 0; k < AN_MEM_KINDS; k++)
		sum += m.rss_kb[k];
	if (sum != m.total_kb)
		__builtin_trap();
	return 0;
}
