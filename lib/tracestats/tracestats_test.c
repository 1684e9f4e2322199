/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/tracestats: exact figures from the real runtime samples
 * in tests/data/nettrace/ (see its README), caps, damaged input, and
 * synthetic events for the paths the samples do not take.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "tracestats/tracestats.h"

#define DATA CT_SRCDIR "/tests/data/nettrace/"

static void load(struct strbuf *sb, const char *name)
{
	assert_int_equal(strbuf_read_file(sb, name), 0);
}

/* Runs tracestats over a memory buffer; returns the reader's result. */
static int run_mem(const void *p, size_t len, const struct ts_limits *lim, struct tracestats **out)
{
	struct nt_membuf mb = { p, len, 0 };
	struct nt_reader *r;
	int err;

	assert_int_equal(tracestats_new(out, lim), 0);
	assert_int_equal(nt_reader_new(&r, nt_read_mem, &mb, NULL), 0);
	err = tracestats_run(*out, r);
	nt_reader_free(r);
	assert_int_equal(tracestats_finish(*out), 0);
	return err;
}

static const struct ts_event_kind *kind(const struct ts_result *r, const char *prov,
					const char *name)
{
	size_t i;

	for (i = 0; i < r->nkinds; i++)
		if (!strcmp(r->kinds[i].provider, prov) && !strcmp(r->kinds[i].name, name))
			return &r->kinds[i];
	return NULL;
}

static const struct flame_top *top_of(struct flame_top *ft, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(ft[i].name, name))
			return &ft[i];
	return NULL;
}

static void test_jit_samples(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	const struct ts_result *r;
	const struct ts_event_kind *k;
	struct flame_top *ft;
	struct tracestats *ts;
	size_t n;

	load(&sb, DATA "runtime-jit-samples.nettrace");
	assert_int_equal(run_mem(sb.buf, sb.len, NULL, &ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->events, 662);
	assert_int_equal(r->error.code, 0);
	assert_int_equal(r->info.pid, 25875);
	assert_int_equal(r->methods, 46);
	k = kind(r, "Microsoft-DotNETCore-SampleProfiler", "ThreadSample");
	assert_non_null(k);
	assert_int_equal(k->count, 514);
	k = kind(r, "Microsoft-Windows-DotNETRuntime", "MethodLoadVerbose");
	assert_non_null(k);
	assert_int_equal(k->count, 46); /* v1 and v2 are one kind */
	assert_int_equal(kind(r, "Microsoft-Windows-DotNETRuntime", "ExceptionThrown")->count, 2);
	assert_int_equal(r->providers[0].count, 514);

	assert_int_equal(r->exceptions_total, 2);
	assert_int_equal(r->nexceptions, 2);
	assert_string_equal(r->exceptions[0].type, "System.InvalidOperationException");
	assert_string_equal(r->exceptions[0].message, "clrtap sample failure 1");
	assert_string_equal(r->exceptions[1].message, "clrtap sample failure 2");
	assert_int_equal(r->exceptions[0].count, 1);
	assert_int_equal(r->exceptions[0].nframes, 3);
	assert_string_equal(r->exceptions[0].frames[1], "ClrtapSample.Burner::ThrowOne");
	assert_string_equal(r->exceptions[0].frames[2], "ClrtapSample.Program::Main");
	/* by type: two messages of one type */
	assert_int_equal(r->nexc_types, 1);
	assert_string_equal(r->exc_types[0].type, "System.InvalidOperationException");
	assert_int_equal(r->exc_types[0].count, 2);
	assert_int_equal(r->exc_types[0].messages, 2);
	assert_false(r->exc_types[0].messages_capped);
	assert_true(r->runtime_events > 0);
	assert_true(r->start_ts <= r->first_ts);

	assert_int_equal(r->samples.managed, 300);
	assert_int_equal(r->samples.external, 214);
	assert_int_equal(r->samples.in_flame, 300);
	assert_int_equal(flame_total(r->flame), 300);
	assert_int_equal(flame_top(r->flame, &ft, &n), 0);
	assert_non_null(top_of(ft, n, "ClrtapSample.Burner::SpinHot"));
	assert_true(top_of(ft, n, "ClrtapSample.Burner::SpinHot")->self > 0);
	free(ft);

	assert_int_equal(tracestats_format_text(ts, 5, "x.nettrace", &out), 0);
	assert_non_null(strstr(out.buf, "        2          2  System.InvalidOperationException\n"));
	assert_non_null(strstr(out.buf, "1  clrtap sample failure 1\n"));
	assert_non_null(strstr(out.buf, "thrown in ClrtapSample.Burner::ThrowOne (2 thrown here)"));
	assert_non_null(strstr(out.buf, "at ClrtapSample.Burner::ThrowOne"));
	strbuf_reset(&out);
	assert_int_equal(tracestats_format_json(ts, 5, "x\"y", &out), 0);
	assert_non_null(strstr(out.buf, "\"file\":\"x\\\"y\",\"complete\":true"));
	assert_non_null(strstr(out.buf, "\"name\":\"ThreadSample\",\"count\":514"));
	assert_int_equal(out.buf[out.len - 2], '}');
	tracestats_free(ts);

	/* thread time: External samples too */
	{
		struct ts_limits lim;

		ts_limits_default(&lim);
		lim.thread_time = true;
		assert_int_equal(run_mem(sb.buf, sb.len, &lim, &ts), 0);
		assert_int_equal(flame_total(tracestats_result(ts)->flame), 514);
		tracestats_free(ts);
	}
	strbuf_release(&out);
	strbuf_release(&sb);
}

static void test_gc_contention(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	const struct ts_result *r;
	struct tracestats *ts;

	load(&sb, DATA "runtime-gc-contention.nettrace");
	assert_int_equal(run_mem(sb.buf, sb.len, NULL, &ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->events, 179);
	assert_int_equal(r->gc.count, 2);
	assert_int_equal(r->gc.by_gen[2], 2);
	assert_int_equal(r->gc.by_reason[1], 2);
	assert_int_equal(r->gc.induced_by_gen[2], 2);
	assert_string_equal(r->gc.pause_source, "SuspendEE/RestartEE");
	assert_int_equal(r->gc.pauses, 2);
	assert_true(r->gc.pause_max_ns > 0 && r->gc.pause_max_ns < 1000000000);
	assert_true(r->gc.pause_p50_ns <= r->gc.pause_p95_ns);
	assert_int_equal(r->gc.pause_p99_ns, r->gc.pause_max_ns);
	assert_true(r->gc.paused_pct > 0 && r->gc.paused_pct < 100);
	assert_int_equal(r->alloc_samples, 48);
	assert_string_equal(r->allocs[0].type, "System.Byte[]");
	assert_int_equal(r->allocs[0].samples, 41);
	assert_int_equal(r->contention.starts, 3);
	assert_int_equal(r->contention.stops, 3);
	assert_int_equal(r->contention.timed, 3);
	assert_true(r->contention.max_ns > 0 && r->contention.max_ns <= r->contention.total_ns);
	/* the starts' stacks: every start at some site, the waits shared out among them */
	{
		uint64_t starts = 0, ns = 0;
		size_t i;

		assert_true(r->ncontention_sites >= 1);
		for (i = 0; i < r->ncontention_sites; i++) {
			starts += r->contention_sites[i].count;
			ns += r->contention_sites[i].total_ns;
		}
		assert_int_equal(starts, 3);
		assert_int_equal(ns, r->contention.total_ns);
	}
	assert_int_equal(tracestats_format_json(ts, 10, NULL, &out), 0);
	assert_non_null(strstr(out.buf, "\"by_reason\":{\"Induced\":2}"));
	assert_non_null(strstr(out.buf, "\"file\":null"));
	tracestats_free(ts);
	strbuf_release(&out);
	strbuf_release(&sb);
}

static void test_caps(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	const struct ts_result *r;
	struct tracestats *ts;
	struct ts_limits lim;

	load(&sb, DATA "runtime-jit-samples.nettrace");
	ts_limits_default(&lim);
	lim.max_exc_groups = 1;
	lim.max_stacks = 2;
	lim.max_event_kinds = 3;
	lim.max_frames = 2;
	assert_int_equal(run_mem(sb.buf, sb.len, &lim, &ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->nexceptions, 1);
	assert_int_equal(r->exceptions_other, 1);
	assert_int_equal(r->exceptions_total, 2);
	assert_int_equal(r->exceptions[0].nframes, 2);
	assert_int_equal(r->nkinds, 3);
	assert_true(r->other_kinds_events > 0);
	assert_int_equal(r->samples.stacks, 2);
	assert_true(r->samples.dropped > 0);
	assert_true(r->samples.truncated > 0);
	assert_int_equal(r->samples.in_flame + r->samples.dropped, 300);
	assert_int_equal(tracestats_format_text(ts, 3, NULL, &out), 0);
	assert_non_null(strstr(out.buf, "fell past the cap of distinct messages"));
	/* past the group cap the type still counts every exception */
	assert_int_equal(r->nexc_types, 1);
	assert_int_equal(r->exc_types[0].count, 2);
	assert_int_equal(r->exc_types[0].messages, 1);
	assert_true(r->exc_types[0].messages_capped);
	tracestats_free(ts);

	strbuf_reset(&out);
	load(&out, DATA "runtime-gc-contention.nettrace");
	lim.max_alloc_types = 1;
	lim.max_pauses = 1;
	assert_int_equal(run_mem(out.buf, out.len, &lim, &ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->nallocs, 1);
	assert_int_equal(r->alloc_other_samples + r->allocs[0].samples, 48);
	assert_int_equal(r->gc.pauses, 2);
	assert_true(r->gc.pause_sampled);
	tracestats_free(ts);
	strbuf_release(&out);
	strbuf_release(&sb);
}

static void test_damaged(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	const struct ts_result *r;
	struct tracestats *ts;
	uint64_t prev = 0;
	size_t cut;

	load(&sb, DATA "trunc-in-block.nettrace");
	assert_int_equal(run_mem(sb.buf, sb.len, NULL, &ts), -EBADMSG);
	r = tracestats_result(ts);
	assert_int_equal(r->error.code, -EBADMSG);
	assert_int_equal(r->error.offset, 12323);
	assert_int_equal(r->events, 137);
	assert_non_null(r->error.msg);
	assert_int_equal(tracestats_format_json(ts, 10, "t", &out), 0);
	assert_non_null(strstr(out.buf, "\"complete\":false,\"error\":{\"errno\":74,\"offset\":12323"));
	tracestats_free(ts);
	strbuf_release(&out);

	/* every prefix of a real stream: no failure but the reader's, counts only grow */
	strbuf_reset(&sb);
	load(&sb, DATA "runtime-gc-contention.nettrace");
	for (cut = 0; cut < sb.len; cut += 7) {
		int err = run_mem(sb.buf, cut, NULL, &ts);

		r = tracestats_result(ts);
		assert_int_equal(err, -EBADMSG);
		assert_true(r->events >= prev);
		assert_true(r->gc.count <= 2 && r->contention.starts <= 3);
		prev = r->events;
		tracestats_free(ts);
	}

	/* not a nettrace stream at all */
	assert_int_equal(run_mem("hello", 5, NULL, &ts), -EBADMSG);
	assert_int_equal(tracestats_result(ts)->events, 0);
	tracestats_free(ts);
	strbuf_release(&sb);
}

/* ----- synthetic events ----- */

static struct nt_metadata meta_rt(uint32_t id, uint32_t version)
{
	struct nt_metadata m = { 0 };

	m.id = id + 1000 * version;
	m.provider_kind = NT_PROV_RUNTIME;
	m.provider = "Microsoft-Windows-DotNETRuntime";
	m.event_id = id;
	m.event_name = "";
	m.version = version;
	return m;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void test_synthetic_gc_pairs_and_contention(void **state)
{
	struct nt_metadata start = meta_rt(1, 2), end = meta_rt(2, 1);
	struct nt_metadata cstart = meta_rt(81, 0), cstop = meta_rt(91, 0);
	struct nt_trace_info info = { .qpc_freq = 1000, .format = 5 };
	struct nt_event ev = { 0 };
	uint8_t gs[30] = { 0 }, ge[10] = { 0 }, cs[3] = { 0 };
	const struct ts_result *r;
	struct tracestats *ts;
	int i;

	assert_int_equal(tracestats_new(&ts, NULL), 0);
	tracestats_set_info(ts, &info);
	ev.pointer_size = 8;
	/* three blocking gen1 GCs of 2, 4 and 6 ms (1 tick = 1 ms), no SuspendEE events */
	for (i = 0; i < 3; i++) {
		put32(gs, (uint32_t)i + 1); /* Count */
		put32(gs + 4, 1);            /* Depth */
		put32(gs + 8, 0);            /* Reason AllocSmall */
		put32(gs + 12, 0);           /* Type blocking */
		ev.meta = &start;
		ev.payload = gs;
		ev.payload_len = sizeof(gs);
		ev.timestamp = 100 * i;
		assert_int_equal(tracestats_add_event(ts, &ev), 0);
		put32(ge, (uint32_t)i + 1);
		put32(ge + 4, 1);
		ev.meta = &end;
		ev.payload = ge;
		ev.payload_len = sizeof(ge);
		ev.timestamp = 100 * i + 2 * (i + 1);
		assert_int_equal(tracestats_add_event(ts, &ev), 0);
	}
	/* contention v0 (no duration): paired per thread, 5 and 30 ms, interleaved */
	ev.payload = cs;
	ev.payload_len = sizeof(cs);
	ev.meta = &cstart, ev.thread_id = 7, ev.timestamp = 300;
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	ev.meta = &cstart, ev.thread_id = 8, ev.timestamp = 301;
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	ev.meta = &cstop, ev.thread_id = 7, ev.timestamp = 305;
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	ev.meta = &cstop, ev.thread_id = 8, ev.timestamp = 331;
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	ev.meta = &cstop, ev.thread_id = 9, ev.timestamp = 340; /* no start */
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	ev.timestamp = 1000;
	assert_int_equal(tracestats_add_event(ts, &ev), 0);
	assert_int_equal(tracestats_finish(ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->gc.count, 3);
	assert_int_equal(r->gc.by_gen[1], 3);
	assert_int_equal(r->gc.by_reason[0], 3);
	assert_string_equal(r->gc.pause_source, "GCStart/GCEnd");
	assert_int_equal(r->gc.pauses, 3);
	assert_int_equal(r->gc.pause_p50_ns, 4000000);
	assert_int_equal(r->gc.pause_max_ns, 6000000);
	assert_int_equal(r->gc.pause_total_ns, 12000000);
	assert_int_equal(r->duration_ns, 1000000000);
	assert_true(r->gc.paused_pct > 1.19 && r->gc.paused_pct < 1.21);
	assert_int_equal(r->contention.starts, 2);
	assert_int_equal(r->contention.stops, 4);
	assert_int_equal(r->contention.timed, 2);
	assert_int_equal(r->contention.total_ns, 35000000);
	assert_int_equal(r->contention.max_ns, 30000000);
	assert_int_equal(r->contention.unmatched, 2);
	/* names of native events come from the table */
	assert_int_equal(kind(r, "Microsoft-Windows-DotNETRuntime", "GCStart")->count, 3);
	assert_int_equal(kind(r, "Microsoft-Windows-DotNETRuntime", "ContentionStop")->count, 4);
	assert_int_equal(tracestats_finish(ts), -EINVAL);
	assert_int_equal(tracestats_add_event(ts, &ev), -EINVAL);
	tracestats_free(ts);
	assert_string_equal(tracestats_gc_reason_name(10), "InducedCompacting");
	assert_null(tracestats_gc_reason_name(99));
	assert_null(tracestats_runtime_event_name(NT_PROV_OTHER, 1));
	/* events a real ASP.NET app sends that were printed as Event159/Event300 */
	assert_string_equal(tracestats_runtime_event_name(NT_PROV_RUNTIME, 159), "R2RGetEntryPoint");
	assert_string_equal(tracestats_runtime_event_name(NT_PROV_RUNTIME, 160), "R2RGetEntryPointStart");
	assert_string_equal(tracestats_runtime_event_name(NT_PROV_RUNTIME, 300), "ExecutionCheckpoint");
	assert_string_equal(tracestats_runtime_event_name(NT_PROV_RUNDOWN, 300), "ExecutionCheckpointDCEnd");
	assert_string_equal(tracestats_runtime_event_name(NT_PROV_RUNDOWN, 280), "TieredCompilationSettingsDCStart");
}

static const struct ts_exc_type *etype(const struct ts_result *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nexc_types; i++)
		if (!strcmp(r->exc_types[i].type, name))
			return &r->exc_types[i];
	return NULL;
}

/*
 * First throws apart from rethrows (async-rethrows.nettrace.gz, README):
 * three failures in an async method awaited through two more frames are 3
 * throws and 9 rethrows by ExceptionDispatchInfo.Throw, whatever the flags.
 */
static void test_async_rethrows(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	struct tracestats *ts;
	const struct ts_result *r;
	const struct ts_exc_type *t;
	gzFile gz = gzopen(DATA "async-rethrows.nettrace.gz", "rb");
	char buf[65536];
	int n;

	assert_non_null(gz);
	while ((n = gzread(gz, buf, sizeof(buf))) > 0)
		assert_int_equal(strbuf_add(&sb, buf, (size_t)n), 0);
	gzclose(gz);
	assert_int_equal(run_mem(sb.buf, sb.len, NULL, &ts), 0);
	r = tracestats_result(ts);
	assert_int_equal(r->exceptions_total, 21);
	assert_int_equal(r->exceptions_first, 12);
	assert_int_equal(r->exceptions_rethrown, 9);
	t = etype(r, "System.InvalidOperationException");
	assert_non_null(t);
	assert_int_equal(t->count, 12);
	assert_int_equal(t->first, 3);
	assert_int_equal(t->rethrown, 9);
	t = etype(r, "System.NotSupportedException");
	assert_non_null(t);
	assert_int_equal(t->first, 6);
	assert_int_equal(t->rethrown, 0);
	t = etype(r, "System.ApplicationException");
	assert_non_null(t);
	assert_int_equal(t->first, 1);
	assert_int_equal(r->exceptions[0].first + r->exceptions[0].rethrown, r->exceptions[0].count);
	{ /* each frame shown in the source's form keeps the runtime's name beside it */
		uint32_t k, async_frames = 0;

		assert_non_null(r->exceptions[0].raw_frames);
		for (k = 0; k < r->exceptions[0].nframes; k++) {
			const char *f = r->exceptions[0].frames[k], *raw = r->exceptions[0].raw_frames[k];

			if (!strcmp(f, "P::L3 [async]")) {
				assert_string_equal(raw, "P+<L3>d__0::MoveNext");
				async_frames++;
			}
		}
		assert_int_equal(async_frames, 1);
	}
	assert_int_equal(tracestats_format_text(ts, 10, "x.nettrace", &out), 0);
	assert_non_null(strstr(out.buf, "  12 first throws, 9 rethrown\n"));
	assert_non_null(strstr(out.buf, "           3 first throws, 9 rethrown\n"));
	assert_non_null(strstr(out.buf, "(3 thrown here)"));
	strbuf_reset(&out);
	assert_int_equal(tracestats_format_json(ts, 10, "x.nettrace", &out), 0);
	assert_non_null(strstr(out.buf, "\"first\":12,\"rethrown\":9"));
	tracestats_free(ts);
	strbuf_release(&sb);
	strbuf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jit_samples),
		cmocka_unit_test(test_async_rethrows),
		cmocka_unit_test(test_gc_contention),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_synthetic_gc_pairs_and_contention),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
