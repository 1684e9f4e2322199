/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for common/clrname.h: any bytes as a frame name, at
 * output sizes from 1 byte up. It checks that a result of 1 is a
 * NUL-terminated string that fits, that every output size gives the same
 * answer (0 for all, or the same text wherever it fits), and that the result
 * is a function of the input (two calls agree).
 * A violation aborts.
 */
#include "common/compat.h"

#include <stdlib.h>

#include "common/clrname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 16, 200, 4096 };
	char big[4096], again[4096];
	char *in = malloc(size + 1);
	int ref, rc;
	size_t i;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	ref = ct_clrname_pretty(in, size, big, sizeof(big));
	if (ref != 0 && ref != 1 && ref != -EMSGSIZE)
		abort();
	if (ref == 1) {
		if (!memchr(big, '\0', sizeof(big)))
			abort();
		if (ct_clrname_pretty(in, size, again, sizeof(again)) != 1 || strcmp(big, again))
			abort();
	}
	for (i = 0; i < ARRAY_SIZE(caps); i++) {
		char *out = malloc(caps[i]);

		if (!out)
			break;
		memset(out, 'x', caps[i]);
		rc = ct_clrname_pretty(in, size, out, caps[i]);
		if (rc == 0) {
			if (ref != 0)
				abort();
		} else if (rc == 1) {
			if (strnlen(out, caps[i]) >= caps[i] || ref != 1 || strcmp(out, big))
				abort();
		} else if (rc != -EMSGSIZE) {
			abort();
		}
		free(out);
	}
	free(in);
	return 0;
}
