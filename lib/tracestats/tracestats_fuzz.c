/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/tracestats: the input is a nettrace stream read
 * through lib/nettrace into tracestats (half the time with tiny caps so the
 * "other" buckets and the pause reservoir are exercised), then finished and
 * rendered as text and JSON. Seed corpus: tests/data/tracestats/.
 */
#include "common/compat.h"

#include "tracestats/tracestats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_membuf mb = { data, size, 0 };
	struct strbuf sb = STRBUF_INIT;
	struct nt_reader *r = NULL;
	struct tracestats *ts = NULL;
	struct ts_limits lim;

	ts_limits_default(&lim);
	if (size & 1) {
		lim.max_event_kinds = 2;
		lim.max_exc_groups = 1;
		lim.max_alloc_types = 1;
		lim.max_stacks = 3;
		lim.max_stack_bytes = 256;
		lim.max_frames = 2;
		lim.max_pauses = 1;
		lim.max_threads = 1;
		lim.max_string = 8;
		lim.thread_time = true;
	}
	if (tracestats_new(&ts, &lim))
		return 0;
	if (nt_reader_new(&r, nt_read_mem, &mb, NULL)) {
		tracestats_free(ts);
		return 0;
	}
	(void)tracestats_run(ts, r);
	nt_reader_free(r);
	if (!tracestats_finish(ts)) {
		(void)tracestats_format_text(ts, 5, "fuzz", &sb);
		strbuf_reset(&sb);
		(void)tracestats_format_json(ts, 5, "fuzz", &sb);
	}
	strbuf_release(&sb);
	tracestats_free(ts);
	return 0;
}
