/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/dac's parsers of bytes from a dump: a type name
 * (as the DAC hands it over from the dump's metadata) at several output
 * sizes, and an ELF image's first bytes for its build id. The output must be
 * a NUL-terminated string within its buffer; a violation aborts.
 */
#include "common/compat.h"

#include <stdlib.h>

#include "dac/dac.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 2, 16, 512 };
	char *in = malloc(size + 1), hex[41];
	size_t i;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	for (i = 0; i < ARRAY_SIZE(caps); i++) {
		char *out = malloc(caps[i]);

		if (!out)
			break;
		dac_type_name(in, out, caps[i]);
		if (!memchr(out, '\0', caps[i]))
			abort();
		free(out);
	}
	if (!dac_build_id(data, size, hex, sizeof(hex)) && !memchr(hex, '\0', sizeof(hex)))
		abort();
	free(in);
	return 0;
}
