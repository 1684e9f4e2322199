/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/perf's record handling: the input's first 16
 * bytes choose sample_type / sample_regs_user / read_format bits and the
 * ring's head position, the rest is the ring's data area (records as the
 * kernel would write them, possibly wrapping). perf_ring_drain walks it and
 * perf_sample_parse decodes every PERF_RECORD_SAMPLE.
 * Seeds: tests/data/perf/.
 */
#include "common/compat.h"

#include "perf/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
	struct perf_event_attr attr;
	uint64_t sink;
};

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct fuzz_ctx *f = ctx;
	struct perf_sample s;
	uint64_t i;

	if (h->type != PERF_RECORD_SAMPLE)
		return 0;
	if (perf_sample_parse(&f->attr, h, &s) < 0)
		return 0;
	for (i = 0; i < s.nr; i++)
		f->sink += s.callchain[i];
	for (i = 0; i < s.nregs; i++)
		f->sink += s.regs[i];
	for (i = 0; i < s.stack_dyn_size; i++)
		f->sink += s.stack[i];
	for (i = 0; i < s.raw_size; i++)
		f->sink += s.raw[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t types[] = {
		PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP,	  PERF_SAMPLE_TID,	PERF_SAMPLE_TIME,
		PERF_SAMPLE_ADDR,	PERF_SAMPLE_ID,	  PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
		PERF_SAMPLE_PERIOD,	PERF_SAMPLE_READ, PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_RAW,
		PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
	};
	struct fuzz_ctx f;
	struct perf_ring r;
	struct perf_event_mmap_page *meta;
	size_t page = 4096, dsize = 4096, i;
	uint8_t *base;
	uint16_t bits, regs;
	uint32_t head;

	if (size < 16)
		return 0;
	memset(&f, 0, sizeof(f));
	memcpy(&bits, data, 2);
	memcpy(&regs, data + 2, 2);
	memcpy(&head, data + 4, 4);
	for (i = 0; i < ARRAY_SIZE(types); i++)
		if (bits & (1u << i))
			f.attr.sample_type |= types[i];
	f.attr.sample_regs_user = regs;
	f.attr.read_format = data[8] & 0x1f;
	f.attr.branch_sample_type = (data[9] & 1) ? PERF_SAMPLE_BRANCH_HW_INDEX : 0;
	data += 16;
	size -= 16;
	if (size > dsize)
		size = dsize;
	base = calloc(1, page + dsize);
	if (!base)
		return 0;
	memcpy(base + page, data, size);
	meta = (struct perf_event_mmap_page *)base;
	/* data_tail at an offset inside the ring, so records may wrap (8-aligned, as the kernel's) */
	meta->data_tail = (head % dsize) & ~(uint64_t)7;
	meta->data_head = meta->data_tail + size;
	memset(&r, 0, sizeof(r));
	r.fd = -1;
	r.base = base;
	r.data_size = dsize;
	r.mmap_size = page + dsize;
	r.scratch = malloc(65536);
	r.scratch_size = 65536;
	if (r.scratch) {
		/* the bytes start at data_tail: rotate them there */
		size_t t = (size_t)(meta->data_tail % dsize), k;

		for (k = 0; k < size; k++)
			base[page + (t + k) % dsize] = data[k];
		(void)perf_ring_drain(&r, on_record, &f);
	}
	free(r.scratch);
	free(base);
	return (int)(f.sink & 0);
}
