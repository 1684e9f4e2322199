/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/live with no .NET process: a fake runtime
 * (ipc/fakert_test.h) answers CollectTracing and sends a trace recorded from
 * a real runtime (tests/data/nettrace/runtime-gc-contention.nettrace); what
 * live_session_run hands the caller is compared with the same file read
 * directly by lib/nettrace.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "live/live.h"
#include "ipc/fakert_test.h"

#define TRACE CT_SRCDIR "/tests/data/nettrace/runtime-gc-contention.nettrace"
#define DAMAGED CT_SRCDIR "/tests/data/nettrace/flipped-bytes.nettrace"

struct counts {
	uint64_t events, last_ts;
	uint64_t stop_after; /* a handler stops the session after this many (0: never) */
	bool opened;
};

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct counts *c = ctx;

	c->events++;
	c->last_ts = (uint64_t)ev->timestamp;
	return c->stop_after && c->events >= c->stop_after;
}

static void on_opened(void *ctx, const struct nt_trace_info *ti)
{
	((struct counts *)ctx)->opened = ti != NULL;
}

static const struct nt_handlers handlers = { .event = on_event };

/* The events in the file, read directly. */
static uint64_t direct_count(const char *path)
{
	struct counts c = { 0 };
	struct nt_reader *r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(nt_reader_new(&r, nt_read_fd, &fd, NULL), 0);
	assert_int_equal(nt_reader_open(r), 0);
	assert_int_equal(nt_reader_run(r, &handlers, &c), 0);
	nt_reader_free(r);
	close(fd);
	return c.events;
}

struct run {
	struct strbuf file;
	struct fake_rt f;
	struct ipc_endpoint ep;
	struct ipc_trace_config cfg;
	struct ipc_provider prov;
	struct live_session_opts o;
	struct live_session_result res;
	volatile sig_atomic_t stop;
	struct counts c;
};

static void run_start(struct run *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->file, 1 << 20);
	assert_int_equal(strbuf_read_file(&r->file, path), 0);
	fake_start(&r->f, false);
	r->f.stream = r->file.buf;
	r->f.stream_len = r->file.len;
	r->ep.path = r->f.path;
	r->ep.timeout_ms = 4000;
	r->prov = (struct ipc_provider){ "Microsoft-Windows-DotNETRuntime", 0x1, 5, NULL };
	r->cfg = (struct ipc_trace_config){ .providers = &r->prov, .nproviders = 1 };
	r->o.ep = &r->ep;
	r->o.cfg = &r->cfg;
	r->o.stop = &r->stop;
	r->o.h = &handlers;
	r->o.ctx = &r->c;
	r->o.opened = on_opened;
}

static void run_end(struct run *r)
{
	fake_stop(&r->f);
	strbuf_release(&r->file);
}

/* Every event of the stream reaches the handler, once; the session is stopped at its duration. */
static void test_live_whole_stream(void **state)
{
	uint64_t want = direct_count(TRACE);
	struct run r;
	int tee[2];
	struct strbuf copy = STRBUF_INIT_MAX(1 << 20);

	(void)state;
	assert_true(want > 100);
	run_start(&r, TRACE);
	assert_int_equal(pipe2(tee, O_CLOEXEC), 0);
	assert_int_equal(fcntl(tee[1], F_SETPIPE_SZ, 1 << 20) >= (int)r.file.len, true);
	r.o.tee_fd = tee[1];
	r.o.duration_ms = 300;
	assert_int_equal(live_session_run(&r.o, &r.res), 0);
	close(tee[1]);
	for (;;) {
		char buf[65536];
		ssize_t n = read(tee[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		assert_int_equal(strbuf_add(&copy, buf, (size_t)n), 0);
	}
	close(tee[0]);
	assert_int_equal(r.res.session_err, 0);
	assert_int_equal(r.res.reader_err, 0);
	assert_true(r.c.opened);
	assert_true(r.res.info_valid);
	assert_int_equal(r.c.events, want);
	assert_int_equal(r.res.stats.events, want);
	assert_int_equal(r.res.bytes, r.file.len);
	/* the tee holds the stream byte for byte */
	assert_int_equal(copy.len, r.file.len);
	assert_memory_equal(copy.buf, r.file.buf, r.file.len);
	assert_int_equal(r.f.stop_id, 0x01); /* StopTracing was sent */
	strbuf_release(&copy);
	run_end(&r);
}

/* A handler that says stop ends the session early: NT_STOPPED, StopTracing sent, no hang. */
static void test_live_handler_stops(void **state)
{
	struct run r;

	(void)state;
	run_start(&r, TRACE);
	r.c.stop_after = 10;
	r.o.duration_ms = 0; /* until stopped */
	assert_int_equal(live_session_run(&r.o, &r.res), 0);
	assert_int_equal(r.res.reader_err, NT_STOPPED);
	assert_int_equal(r.c.events, 10);
	assert_int_equal(r.stop, 1);
	assert_int_equal(r.f.stop_id, 0x01);
	run_end(&r);
}

/* Damage in the stream: the reader's error and where, the session still ended cleanly. */
static void test_live_damaged_stream(void **state)
{
	struct run r;

	(void)state;
	run_start(&r, DAMAGED);
	r.o.duration_ms = 0;
	assert_int_equal(live_session_run(&r.o, &r.res), 0);
	assert_true(r.res.reader_err < 0);
	assert_true(r.res.reader_offset > 0);
	assert_true(r.res.reader_offset < r.file.len);
	assert_true(r.res.reader_msg[0] != '\0');
	assert_int_equal(r.stop, 1);
	assert_int_equal(r.f.stop_id, 0x01);
	run_end(&r);
}

/* No stop flag is a caller's error, refused before anything starts. */
static void test_live_needs_stop(void **state)
{
	struct live_session_opts o = { 0 };
	struct live_session_result res;

	(void)state;
	assert_int_equal(live_session_run(&o, &res), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_whole_stream),
		cmocka_unit_test(test_live_handler_stops),
		cmocka_unit_test(test_live_damaged_stream),
		cmocka_unit_test(test_live_needs_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
