/* SPDX-License-Identifier: MIT */
/*
 * flame_fuzz.c - libFuzzer harness for lib/flame: parse folded-stack text
 * with flame_read_folded, then run flame_top and every writer on whatever
 * was added (output goes to /dev/null). Seed corpus: tests/data/flame/.
 */
#include "common/compat.h"

#include <fcntl.h>

#include "flame/flame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	struct flame_opts o = { .title = "fuzz", .period = 1000 };
	struct flame_top *top;
	struct flame *f;
	size_t n, i;
	int fmt;

	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (flame_new(&f))
		return 0;
	flame_set_max_nodes(f, 1 << 16);
	(void)flame_read_folded(f, (const char *)data, size);
	if (flame_top(f, &top, &n) == 0) {
		for (i = 1; i < n; i++)
			if (top[i - 1].self < top[i].self)
				abort(); /* not sorted */
		free(top);
	}
	if (size && (data[0] & 1))
		o.unit = "nanoseconds";
	for (fmt = FLAME_FOLDED; fmt <= FLAME_PPROF; fmt++)
		if (flame_write(f, (enum flame_format)fmt, devnull, &o))
			abort();
	flame_free(f);
	return 0;
}
