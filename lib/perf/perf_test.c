/* SPDX-License-Identifier: MIT */
/*
 * perf_test.c - the ring buffer and sample parser against the real kernel
 * (a cpu-clock event on this test's own thread), plus malformed records.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

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

/* ---- sampler: a child process that spins, then one that sleeps ---- */

struct counted {
	unsigned cpu, off, kernel_frames;
	uint64_t off_ns;
	uint32_t tid;
};

static int on_stack(void *ctx, const struct perf_stack *st)
{
	struct counted *c = ctx;

	if (st->kind == PERF_STACK_CPU)
		c->cpu++;
	else {
		c->off++;
		c->off_ns += st->weight;
	}
	c->kernel_frames += st->nkernel;
	c->tid = st->tid;
	return 0;
}

static pid_t spawn(bool sleepy)
{
	pid_t p = fork();

	if (p == 0) {
		uint64_t i;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
		for (;;) {
			if (sleepy) {
				struct timespec ts = { 0, 5000000 };

				nanosleep(&ts, NULL);
			} else {
				for (i = 0; i < 1000000; i++)
					sink += i;
			}
		}
	}
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void test_sampler(void **state)
{
	struct perf_sampler_opts o = { .hz = 999, .cpu = true, .off_cpu = true };
	struct perf_sampler_stats st;
	struct perf_sampler *s;
	struct counted c = { 0 };
	pid_t busy, sleepy;
	int i, rc;

	(void)state;
	busy = spawn(false);
	rc = perf_sampler_open(&s, busy, &o, on_stack, &c);
	if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS) {
		reap(busy);
		skip();
		return;
	}
	assert_int_equal(rc, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(perf_sampler_poll(s, 60), 0);
	assert_int_equal(perf_sampler_finish(s, perf_now_ns()), 0);
	perf_sampler_stats(s, &st);
	assert_true(c.cpu > 20);
	assert_int_equal(c.tid, (uint32_t)busy);
	assert_int_equal(st.threads, 1);
	assert_int_equal(st.samples, c.cpu);
	perf_sampler_close(s);
	reap(busy);

	memset(&c, 0, sizeof(c));
	sleepy = spawn(true);
	assert_int_equal(perf_sampler_open(&s, sleepy, &o, on_stack, &c), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(perf_sampler_poll(s, 60), 0);
	reap(sleepy);
	/* Gone: the poll says so once everything was read. */
	assert_int_equal(perf_sampler_poll(s, 0), -ESRCH);
	assert_int_equal(perf_sampler_finish(s, perf_now_ns()), 0);
	assert_true(c.off > 10);
	/* 5 ms sleeps, each at least 5 ms off CPU */
	assert_true(c.off_ns >= (uint64_t)c.off * 4000000ull);
	perf_sampler_close(s);
	assert_int_equal(perf_sampler_open(&s, sleepy, &o, on_stack, &c), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_sampling),
		cmocka_unit_test(test_short_record),
		cmocka_unit_test(test_pmu_lookups),
		cmocka_unit_test(test_sampler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
