/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/counters: spec syntax, session providers, number
 * parsing, and decoding of a real session (tests/data/counters/README.md).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "counters/counters.h"

#define DATA CT_SRCDIR "/tests/data/counters/"
#define SESSION "5c1e4d1a-0000-4000-8000-c1a7a9000001"

static void test_spec(void **state)
{
	struct counters_spec s = { 0 };

	(void)state;
	assert_int_equal(counters_spec_add(&s, "System.Runtime", false), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].name, "System.Runtime");
	assert_int_equal(s.v[0].nnames, 0);
	assert_true(counters_spec_wants(&s, false, "System.Runtime", "cpu-usage"));
	assert_false(counters_spec_wants(&s, true, "System.Runtime", "cpu-usage"));
	assert_false(counters_spec_wants(&s, false, "Other", "cpu-usage"));

	assert_int_equal(counters_spec_add(&s, "A.B[x,y-z],C,A.B[w]", false), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[1].name, "A.B");
	assert_int_equal(s.v[1].nnames, 3);
	assert_string_equal(s.v[1].names[2], "w");
	assert_true(counters_spec_wants(&s, false, "A.B", "y-z"));
	assert_false(counters_spec_wants(&s, false, "A.B", "q"));
	assert_true(counters_spec_wants(&s, false, "C", "anything"));
	/* given again without a list: all names */
	assert_int_equal(counters_spec_add(&s, "A.B", false), 0);
	assert_int_equal(s.n, 3);
	assert_true(counters_spec_wants(&s, false, "A.B", "q"));
	/* a whole source stays whole */
	assert_int_equal(counters_spec_add(&s, "C[only]", false), 0);
	assert_true(counters_spec_wants(&s, false, "C", "anything"));
	/* meters are their own kind */
	assert_int_equal(counters_spec_add(&s, "System.Runtime[dotnet.gc.collections]", true), 0);
	assert_int_equal(s.n, 4);
	assert_true(counters_spec_wants(&s, true, "System.Runtime", "dotnet.gc.collections"));
	assert_false(counters_spec_wants(&s, true, "System.Runtime", "dotnet.timer.count"));
	counters_spec_release(&s);

	assert_int_equal(counters_spec_add(&s, "", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A,", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, ",A", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A[", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A[x", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A[]", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A[x]B", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A;B", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A=1", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, "A\\x", false), -EINVAL);
	assert_int_equal(counters_spec_add(&s, " A", false), -EINVAL);
	counters_spec_release(&s);
}

static void test_spec_caps(void **state)
{
	struct counters_spec s = { 0 };
	struct strbuf sb = STRBUF_INIT;
	char longname[COUNTERS_MAX_NAME_LEN + 1];
	int i;

	(void)state;
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(counters_spec_add(&s, longname, false), -E2BIG);
	for (i = 0; i <= COUNTERS_MAX_SOURCES; i++)
		assert_int_equal(strbuf_addf(&sb, "%sS%d", i ? "," : "", i), 0);
	assert_int_equal(counters_spec_add(&s, sb.buf, false), -E2BIG);
	counters_spec_release(&s);
	strbuf_reset(&sb);
	assert_int_equal(strbuf_addstr(&sb, "S["), 0);
	for (i = 0; i <= COUNTERS_MAX_NAMES; i++)
		assert_int_equal(strbuf_addf(&sb, "%sn%d", i ? "," : "", i), 0);
	assert_int_equal(strbuf_addstr(&sb, "]"), 0);
	assert_int_equal(counters_spec_add(&s, sb.buf, false), -E2BIG);
	counters_spec_release(&s);
	strbuf_release(&sb);
}

static void test_session(void **state)
{
	struct counters_spec s = { 0 };
	struct counters_session cs;
	char want[512];

	(void)state;
	assert_int_equal(counters_spec_add(&s, "System.Runtime,Microsoft.AspNetCore.Hosting", false), 0);
	assert_int_equal(counters_session_init(&cs, &s, 0, 0, 0), -EINVAL);
	counters_session_release(&cs);
	assert_int_equal(counters_session_init(&cs, &s, 2, 0, 0), 0);
	assert_int_equal(cs.nproviders, 2);
	assert_string_equal(cs.session_id, "");
	assert_string_equal(cs.providers[1].name, "Microsoft.AspNetCore.Hosting");
	assert_int_equal(cs.providers[1].keywords, 0);
	assert_int_equal(cs.providers[1].level, 4);
	assert_string_equal(cs.providers[0].arguments, "EventCounterIntervalSec=2");
	assert_string_equal(cs.providers[1].arguments, "EventCounterIntervalSec=2");
	counters_session_release(&cs);

	assert_int_equal(counters_spec_add(&s, "System.Runtime,Microsoft.AspNetCore.Hosting[x]", true), 0);
	assert_int_equal(counters_session_init(&cs, &s, 5, 300, 7), 0);
	assert_int_equal(cs.nproviders, 3);
	assert_int_equal(strlen(cs.session_id), 36);
	assert_int_equal(cs.session_id[14], '4');
	assert_string_equal(cs.providers[2].name, "System.Diagnostics.Metrics");
	assert_int_equal(cs.providers[2].keywords, 0x2);
	snprintf(want, sizeof(want),
		 "SessionId=%s;Metrics=System.Runtime,Microsoft.AspNetCore.Hosting;RefreshInterval=5;"
		 "MaxTimeSeries=300;MaxHistograms=7",
		 cs.session_id);
	assert_string_equal(cs.providers[2].arguments, want);
	assert_string_equal(cs.providers[0].arguments, "EventCounterIntervalSec=5");
	counters_session_release(&cs);
	counters_spec_release(&s);
}

static void test_parse_double(void **state)
{
	double v;

	(void)state;
	assert_int_equal(counters_parse_double("12", &v), 0);
	assert_true(v == 12.0);
	assert_int_equal(counters_parse_double("-0.5", &v), 0);
	assert_true(v == -0.5);
	assert_int_equal(counters_parse_double("1.5E-05", &v), 0);
	assert_true(v == 1.5e-05);
	assert_int_equal(counters_parse_double("0.02388800000000002", &v), 0);
	assert_true(v == 0.02388800000000002);
	assert_int_equal(counters_parse_double("NaN", &v), 0);
	assert_true(isnan(v));
	assert_int_equal(counters_parse_double("\xe2\x88\x9e", &v), 0);
	assert_true(isinf(v) && v > 0);
	assert_int_equal(counters_parse_double("-Infinity", &v), 0);
	assert_true(isinf(v) && v < 0);
	assert_int_equal(counters_parse_double("", &v), -EINVAL);
	assert_int_equal(counters_parse_double(" 1", &v), -EINVAL);
	assert_int_equal(counters_parse_double("1 ", &v), -EINVAL);
	assert_int_equal(counters_parse_double("0x10", &v), -EINVAL);
	assert_int_equal(counters_parse_double("inf", &v), -EINVAL);
	assert_int_equal(counters_parse_double("1e999", &v), -EINVAL);
	assert_int_equal(counters_parse_double("1,5", &v), -EINVAL);
}

/* ----- the captured session ----- */

struct seen {
	struct counters_decoder *dec;
	struct counters_table table;
	int ev_values, meter_values, quantiles, notices, bad;
	int sr_values, hosting_ev, hosting_meter;
	double first_alloc_rate, first_cpu, first_heap, first_total_alloc;
	double total_requests[4];
	int ntotal;
	double first_p50;
	char p50_tags[512];
	char alloc_units[16], heap_units[16], meter_alloc_units[16];
};

static int on_value(void *ctx, const struct counters_value *v)
{
	struct seen *s = ctx;

	assert_int_equal(counters_table_update(&s->table, v), 0);
	if (v->meter) {
		s->meter_values++;
		if (!strcmp(v->source, "Microsoft.AspNetCore.Hosting"))
			s->hosting_meter++;
		if (v->kind == COUNTERS_QUANTILE) {
			s->quantiles++;
			if (s->quantiles == 1) {
				s->first_p50 = v->value;
				snprintf(s->p50_tags, sizeof(s->p50_tags), "%s", v->tags);
			}
		}
		if (!strcmp(v->name, "dotnet.gc.heap.total_allocated") && s->first_total_alloc < 0) {
			s->first_total_alloc = v->value;
			assert_int_equal(v->kind, COUNTERS_DELTA);
			snprintf(s->meter_alloc_units, sizeof(s->meter_alloc_units), "%s", v->units);
		}
		return 0;
	}
	s->ev_values++;
	assert_string_equal(v->tags, "");
	if (!strcmp(v->source, "System.Runtime"))
		s->sr_values++;
	else if (!strcmp(v->source, "Microsoft.AspNetCore.Hosting"))
		s->hosting_ev++;
	if (!strcmp(v->name, "alloc-rate") && s->first_alloc_rate < 0) {
		s->first_alloc_rate = v->value;
		assert_int_equal(v->kind, COUNTERS_DELTA);
		snprintf(s->alloc_units, sizeof(s->alloc_units), "%s", v->units);
		assert_string_equal(v->display_name, "Allocation Rate");
	}
	if (!strcmp(v->name, "cpu-usage") && s->first_cpu < 0) {
		s->first_cpu = v->value;
		assert_int_equal(v->kind, COUNTERS_MEAN);
	}
	if (!strcmp(v->name, "gc-heap-size") && s->first_heap < 0) {
		s->first_heap = v->value;
		snprintf(s->heap_units, sizeof(s->heap_units), "%s", v->units);
	}
	if (!strcmp(v->name, "total-requests") && s->ntotal < 4)
		s->total_requests[s->ntotal++] = v->value;
	return 0;
}

static int on_notice(void *ctx, const char *msg)
{
	struct seen *s = ctx;

	(void)msg;
	s->notices++;
	return 0;
}

static const struct counters_handlers handlers = { on_value, on_notice };

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct seen *s = ctx;
	int n = counters_decode(s->dec, ev, &handlers, s);

	if (n < 0)
		s->bad++;
	return 0;
}

static void read_capture(struct seen *s, const char *session)
{
	const struct nt_handlers h = { .event = on_event };
	struct nt_reader *r;
	int fd = open(DATA "web-counters.nettrace", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	memset(s, 0, sizeof(*s));
	s->first_alloc_rate = s->first_cpu = s->first_heap = s->first_total_alloc = -1;
	assert_int_equal(counters_decoder_new(&s->dec, session), 0);
	assert_int_equal(nt_reader_new(&r, nt_read_fd, &fd, NULL), 0);
	assert_int_equal(nt_reader_run(r, &h, s), 0);
	nt_reader_free(r);
	close(fd);
	counters_decoder_free(s->dec);
}

static void test_capture(void **state)
{
	struct seen s;
	size_t i;
	bool found = false;

	(void)state;
	read_capture(&s, SESSION);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.notices, 0);
	assert_int_equal(s.ev_values, 62);
	assert_int_equal(s.sr_values, 54);
	assert_int_equal(s.hosting_ev, 8);
	assert_int_equal(s.meter_values, 52);
	assert_int_equal(s.hosting_meter, 8);
	assert_int_equal(s.quantiles, 6);
	assert_true(s.first_alloc_rate == 264504.0);
	assert_string_equal(s.alloc_units, "B");
	assert_true(s.first_cpu == 1.7192175941379146);
	assert_true(s.first_heap == 3.1735600000000002);
	assert_string_equal(s.heap_units, "MB");
	assert_true(s.first_total_alloc == 225664.0);
	assert_string_equal(s.meter_alloc_units, "By");
	assert_int_equal(s.ntotal, 2);
	assert_true(s.total_requests[0] == 81.0);
	assert_true(s.total_requests[1] == 95.0);
	assert_true(s.first_p50 == 0.00015377998352050781);
	assert_string_equal(s.p50_tags,
			    "http.request.method=GET,http.response.status_code=200,http.route=/api/fibonacci,"
			    "network.protocol.version=1.1,url.scheme=http,Percentile=50");
	/* 27 EventCounters of System.Runtime, 4 of Hosting, 29 + 4 meter series */
	assert_int_equal(s.table.n, 27 + 4 + 29 + 4);
	for (i = 1; i < s.table.n; i++)
		assert_true(s.table.v[i - 1].meter <= s.table.v[i].meter);
	for (i = 0; i < s.table.n; i++) {
		const struct counters_series *se = &s.table.v[i];

		if (!se->meter && !strcmp(se->name, "total-requests")) {
			assert_true(se->value == 95.0);
			assert_int_equal(se->updates, 2);
			found = true;
		}
	}
	assert_true(found);
	counters_table_release(&s.table);

	/* Another session's meter events are not ours. */
	read_capture(&s, "00000000-0000-4000-8000-000000000000");
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.ev_values, 62);
	assert_int_equal(s.meter_values, 0);
	counters_table_release(&s.table);
}

static void test_table_cap(void **state)
{
	struct counters_table t = { 0 };
	struct counters_value v = { .source = "S", .display_name = "", .units = "", .tags = "" };
	char name[32];
	int i;

	(void)state;
	for (i = 0; i < COUNTERS_MAX_SERIES; i++) {
		snprintf(name, sizeof(name), "n%05d", COUNTERS_MAX_SERIES - i);
		v.name = name;
		v.value = i;
		assert_int_equal(counters_table_update(&t, &v), 0);
	}
	v.name = "new";
	assert_int_equal(counters_table_update(&t, &v), -E2BIG);
	v.name = "n00001";
	v.value = -1;
	assert_int_equal(counters_table_update(&t, &v), 0);
	assert_string_equal(t.v[0].name, "n00001");
	assert_true(t.v[0].value == -1);
	assert_int_equal(t.n, COUNTERS_MAX_SERIES);
	counters_table_release(&t);
}

/* The document pieces (doc.c): wall-clock timestamps from the trace clock, one value. */
static void test_doc(void **state)
{
	struct nt_trace_info ti = { .sync_utc = { 2026, 11, 2, 24, 18, 13, 38, 500 },
				    .sync_qpc = 1000000, .qpc_freq = 1000000 };
	struct counters_clock c = { 0 };
	struct counters_value v = { .source = "System.Runtime", .name = "cpu-usage",
				    .display_name = "CPU Usage", .units = "%", .tags = "",
				    .kind = COUNTERS_MEAN, .value = 12.5, .interval_sec = 1 };
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	char ts[64];

	(void)state;
	counters_clock_format(&c, 5, ts, sizeof(ts));
	assert_string_equal(ts, "?");
	counters_clock_set(&c, &ti);
	counters_clock_format(&c, 1000000 + 2750000, ts, sizeof(ts)); /* +2.75 s */
	assert_string_equal(ts, "2026-11-24T18:13:41.250Z");
	counters_clock_format(&c, 1000000 - 600000, ts, sizeof(ts)); /* -0.6 s */
	assert_string_equal(ts, "2026-11-24T18:13:37.900Z");
	ct_json_init(&j, &sb);
	counters_json_value(&j, &v, ts);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_string_equal(sb.buf, "{\"timestamp\":\"2026-11-24T18:13:37.900Z\",\"source\":\"System.Runtime\","
				    "\"type\":\"eventcounters\",\"name\":\"cpu-usage\",\"display_name\":\"CPU Usage\","
				    "\"tags\":\"\",\"kind\":\"mean\",\"value\":12.5,\"units\":\"%\",\"interval_sec\":1}");
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_spec_caps),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_parse_double),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_table_cap),
		cmocka_unit_test(test_doc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
