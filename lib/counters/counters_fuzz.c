/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/counters. An input starting with the nettrace
 * magic is a stream: every event goes through counters_decode (EventCounters
 * and MetricsEventSource payloads, number and quantile strings) and the
 * values into a table. Otherwise the first byte picks: even, the rest is a
 * --counters/--meters spec (also turned into providers); odd, a number
 * string for counters_parse_double.
 * Seeds: tests/data/counters/.
 */
#include "common/compat.h"

#include "counters/counters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
	struct counters_decoder *dec;
	struct counters_table table;
	uint64_t sink;
};

static int on_value(void *ctx, const struct counters_value *v)
{
	struct fuzz_ctx *f = ctx;

	f->sink += strlen(v->source) + strlen(v->name) + strlen(v->tags) + strlen(v->units) +
		   strlen(v->display_name);
	(void)counters_table_update(&f->table, v);
	return 0;
}

static int on_notice(void *ctx, const char *msg)
{
	struct fuzz_ctx *f = ctx;

	f->sink += strlen(msg);
	return 0;
}

static const struct counters_handlers handlers = { on_value, on_notice };

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct fuzz_ctx *f = ctx;

	(void)counters_decode(f->dec, ev, &handlers, f);
	return 0;
}

static void fuzz_stream(const uint8_t *data, size_t size)
{
	const struct nt_handlers h = { .event = on_event };
	struct nt_membuf mb = { data, size, 0 };
	struct fuzz_ctx f = { 0 };
	struct nt_limits lim;
	struct nt_reader *r;

	nt_limits_default(&lim);
	lim.max_block = 1 << 20;
	lim.max_metadata_bytes = 1 << 20;
	lim.max_stack_bytes = 1 << 20;
	if (counters_decoder_new(&f.dec, size & 1 ? "5c1e4d1a-0000-4000-8000-c1a7a9000001" : NULL))
		return;
	if (!nt_reader_new(&r, nt_read_mem, &mb, &lim)) {
		(void)nt_reader_run(r, &h, &f);
		nt_reader_free(r);
	}
	counters_table_release(&f.table);
	counters_decoder_free(f.dec);
}

static void fuzz_spec(const uint8_t *data, size_t size)
{
	struct counters_spec s = { 0 };
	struct counters_session cs;
	char *text = strndup((const char *)data, size);

	if (!text)
		return;
	(void)counters_spec_add(&s, text, size & 1);
	if (s.n && !counters_session_init(&cs, &s, 1, 0, 0))
		counters_session_release(&cs);
	if (s.n)
		(void)counters_spec_wants(&s, false, s.v[0].name, "x");
	counters_spec_release(&s);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	double v;

	if (size == 0)
		return 0;
	if (size >= 8 && !memcmp(data, "Nettrace", 8)) {
		fuzz_stream(data, size);
		return 0;
	}
	if (data[0] % 2 == 0) {
		fuzz_spec(data + 1, size - 1);
		return 0;
	}
	s = strndup((const char *)data + 1, size - 1);
	if (s)
		(void)counters_parse_double(s, &v);
	free(s);
	return 0;
}
