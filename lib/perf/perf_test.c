/* SPDX-License-Identifier: MIT */
/*
 * perf_test.c - the ring buffer and sample parser against the real kernel
 * (a cpu-clock event on this test's own thread), plus malformed records.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "perf/perf.h"

struct seen {
	const struct perf_event_attr *attr;
	unsigned samples, with_chain, bad;
	uint32_t tid;
};

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct seen *s = ctx;
	struct perf_sample ps;

	if (h->type != PERF_RECORD_SAMPLE)
		return 0;
	if (perf_sample_parse(s->attr, h, &ps) < 0) {
		s->bad++;
		return 0;
	}
	s->samples++;
	if (ps.nr > 1)
		s->with_chain++;
	s->tid = ps.tid;
	return 0;
}

static volatile uint64_t sink;

static void test_self_sampling(void **state)
{
	struct perf_event_attr attr;
	struct perf_ring ring;
	struct seen s = { 0 };
	uint64_t i;
	int fd, rc;

	(void)state;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_freq = 1000;
	attr.freq = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	attr.exclude_kernel = 1;
	attr.disabled = 1;
	fd = perf_open(&attr, 0, -1, -1, 0);
	if (fd == -EACCES || fd == -EPERM || fd == -ENOSYS) {
		skip();
		return;
	}
	assert_true(fd >= 0);
	rc = perf_ring_open(&ring, fd, 4);
	assert_int_equal(rc, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < 200000000ull; i++)
		sink += i * 7;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	s.attr = &attr;
	rc = perf_ring_drain(&ring, on_record, &s);
	assert_true(rc > 0);
	assert_true(s.samples > 5);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.tid, (uint32_t)syscall(SYS_gettid));
	assert_true(s.with_chain > 0);
	/* Drained: nothing left. */
	assert_int_equal(perf_ring_drain(&ring, on_record, &s), 0);
	perf_ring_close(&ring);
}

static void test_short_record(void **state)
{
	struct perf_event_attr attr;
	struct perf_sample ps;
	uint64_t buf[8] = { 0 };
	struct perf_event_header *h = (struct perf_event_header *)buf;

	(void)state;
	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
	h->type = PERF_RECORD_SAMPLE;
	/* ip, tid, then a callchain that claims 1000 entries in a 64-byte record. */
	h->size = sizeof(buf);
	buf[1] = 0x1234;
	buf[2] = 7;
	buf[3] = 1000;
	assert_int_equal(perf_sample_parse(&attr, h, &ps), -EBADMSG);
	buf[3] = 2;
	assert_int_equal(perf_sample_parse(&attr, h, &ps), 0);
	assert_int_equal(ps.ip, 0x1234);
	assert_int_equal(ps.nr, 2);
	/* Header says shorter than the fields. */
	h->size = 16;
	assert_int_equal(perf_sample_parse(&attr, h, &ps), -EBADMSG);
}

static void test_pmu_lookups(void **state)
{
	int t;

	(void)state;
	t = perf_pmu_type("uprobe");
	if (t < 0) {
		skip();
		return;
	}
	assert_true(t > 0);
	assert_int_equal(perf_pmu_format_bit("uprobe", "retprobe"), 0);
	assert_true(perf_pmu_type("no-such-pmu") < 0);
	assert_true(perf_tracepoint_id("no_such_sys", "nothing") < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_sampling),
		cmocka_unit_test(test_short_record),
		cmocka_unit_test(test_pmu_lookups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
