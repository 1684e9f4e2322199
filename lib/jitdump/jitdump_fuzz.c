/* SPDX-License-Identifier: MIT */
/*
 * jitdump_fuzz.c - libFuzzer harness for the jitdump reader: the target
 * writes jit-PID.dump. The input is a whole file: header, then records.
 */
#include "common/compat.h"

#include "jitdump/jitdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_load(void *ctx, const struct jitdump_load *l)
{
	size_t *n = ctx;

	if (l->name_len > JITDUMP_NAME_MAX || memchr(l->name, '\0', l->name_len))
		__builtin_trap();
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t used = 0, skipped = 0;
	uint32_t hs = 0;
	size_t n = 0, cut;

	if (jitdump_parse_header(data, size, &hs) == 0 &&
	    (hs < JITDUMP_HDR_MIN || hs > JITDUMP_HDR_MAX))
		__builtin_trap();
	if (hs > size)
		return 0;
	/* the records whole, then as a refresh sees a file being written */
	(void)jitdump_parse_records(data + hs, size - hs, size - hs, on_load, &n, &used, &skipped);
	cut = (size - hs) / 2;
	(void)jitdump_parse_records(data + hs, cut, size - hs, on_load, &n, &used, &skipped);
	if (used > size - hs)
		__builtin_trap();
	return 0;
}
