/* SPDX-License-Identifier: MIT */
/*
 * core_fuzz.c - libFuzzer harness for lib/core: open a core file from
 * memory, then walk its threads, mapped files and auxv and read memory at
 * the edges of every segment. Seed corpus: tests/data/core/.
 */
#include "common/compat.h"

#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct core_mapping *m;
	const struct core_thread *t;
	const struct core_load *l;
	struct core_file *c;
	uint8_t buf[256];
	uint64_t sum = 0;
	char why[256];
	size_t i;

	if (core_open_mem(data, size, &c, why, sizeof(why))) {
		if (!why[0] || strchr(why, '\n'))
			__builtin_trap(); /* every refusal has one line for a person */
		return 0;
	}
	(void)core_check_complete(c, why, sizeof(why));
	for (i = 0; (t = core_thread(c, i)) != NULL; i++) {
		sum += t->regs.ip + (uint64_t)t->tid;
		(void)core_read(c, t->regs.sp, buf, sizeof(buf));
	}
	for (i = 0; (m = core_mapping(c, i)) != NULL; i++) {
		sum += strlen(m->path);
		if (core_mapping_at(c, m->start) != m || core_mapping_at(c, m->end - 1) != m)
			__builtin_trap();
	}
	for (i = 0; (l = core_load(c, i)) != NULL; i++) {
		(void)core_read(c, l->start, buf, sizeof(buf));
		(void)core_read(c, l->end - 1, buf, sizeof(buf));
		(void)core_read(c, l->start + (l->end - l->start) / 2, buf, sizeof(buf));
		if (core_read(c, l->end - 1, buf, 1) != 1 && l->avail == l->filesz)
			__builtin_trap(); /* a whole segment reads to its end */
	}
	sum += core_auxv(c, 6 /* AT_PAGESZ */);
	(void)core_read(c, 0, buf, sizeof(buf));
	(void)core_read(c, UINT64_MAX, buf, sizeof(buf));
	sink = sum;
	core_close(c);
	return 0;
}
