/* SPDX-License-Identifier: MIT */
/*
 * asyncflow_test.c - lib/nettrace/asyncflow.c on the TPL events of the sample
 * fixture's async-chain mode (tests/data/nettrace/tpl-async-chain.nettrace.gz:
 * .NET 10.0.12, TplEventSource keywords 0x2A, 0.2 s), and on hand-made events.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "common/strparse.h"
#include "nettrace/nettrace.h"

#define DATA CT_SRCDIR "/tests/data/nettrace/"
#define OK(x) assert_int_equal(0, (x))

static ssize_t gz_read(void *ctx, void *buf, size_t len)
{
	int n = gzread((gzFile)ctx, buf, (unsigned)CT_MIN(len, (size_t)INT_MAX));

	return n < 0 ? -EIO : n;
}

struct run {
	struct nt_asyncflow *af;
	unsigned begins;   /* executions resumed (TraceSynchronousWorkBegin, Work 2) */
	unsigned price4;   /* ... of Price, with the chain Price, Order, Checkout, (unnamed) */
	unsigned other;    /* ... with another chain */
	unsigned order3, checkout2;
	unsigned price_run, run1; /* with the namer: Price ... Run, and Run alone */
	unsigned named;           /* the namer's calls */
};

/* A namer as profile's: here every task begun before the trace is Run. */
static bool namer(void *ctx, const struct nt_event *ev, char *out, size_t len)
{
	(void)ev;
	((struct run *)ctx)->named++;
	return ct_strlcpy(out, "<Run>d__1", len) < len;
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct run *r = ctx;
	const char *c[8];
	size_t n;
	int32_t work;

	if (!nt_asyncflow_event(r->af, ev) || ev->meta->event_id != 17 || ev->payload_len < 8)
		return 0;
	memcpy(&work, ev->payload + 4, 4);
	if (work != 2)
		return 0;
	r->begins++;
	n = nt_asyncflow_chain(r->af, (uint32_t)ev->thread_id, c, 8);
	if (n == 4 && c[0] && !strcmp(c[0], "<Price>d__4") && c[1] && !strcmp(c[1], "<Order>d__3") &&
	    c[2] && !strcmp(c[2], "<Checkout>d__2") && !c[3])
		r->price4++;
	else if (n == 3 && c[0] && !strcmp(c[0], "<Order>d__3") && !strcmp(c[1], "<Checkout>d__2") && !c[2])
		r->order3++;
	else if (n == 2 && c[0] && !strcmp(c[0], "<Checkout>d__2") && !c[1])
		r->checkout2++;
	else if (n == 4 && c[0] && !strcmp(c[0], "<Price>d__4") && c[3] && !strcmp(c[3], "<Run>d__1"))
		r->price_run++;
	else if (n == 1 && c[0] && !strcmp(c[0], "<Run>d__1"))
		r->run1++;
	else
		r->other++;
	return 0;
}

static void run_trace(struct run *r, bool with_namer)
{
	const struct nt_handlers h = { .event = on_event };
	struct nt_asyncflow_stats st;
	struct nt_reader *rd;
	gzFile gz = gzopen(DATA "tpl-async-chain.nettrace.gz", "rb");

	assert_non_null(gz);
	OK(nt_asyncflow_new(&r->af));
	if (with_namer)
		nt_asyncflow_set_namer(r->af, namer, r);
	OK(nt_reader_new(&rd, gz_read, gz, NULL));
	OK(nt_reader_run(rd, &h, r));
	nt_asyncflow_stats(r->af, &st);
	assert_int_equal(959, st.events);
	assert_int_equal(0, st.tasks_dropped + st.threads_dropped + st.names_dropped);
	nt_reader_free(rd);
	gzclose(gz);
	nt_asyncflow_free(r->af);
}

/* 0.2 s of Run -> Checkout -> Order -> Price, a yield at every await: each
 * resumption's chain is the instance's awaiters, innermost first. Run began
 * before the trace: without a namer its resumptions have no chain, and the
 * chains above Checkout end in an unnamed caller. */
static void test_trace(void **state)
{
	struct run r = { 0 };

	(void)state;
	run_trace(&r, false);
	assert_int_equal(192, r.begins);
	assert_int_equal(32, r.price4);   /* Price, after its yield */
	assert_int_equal(63, r.order3);   /* Order, after its yield and after Price */
	assert_int_equal(63, r.checkout2);
	assert_int_equal(34, r.other);    /* Run's own resumptions: not known */
	assert_int_equal(0, r.price_run + r.run1 + r.named);
	memset(&r, 0, sizeof(r));
	run_trace(&r, true); /* Run named when it resumes, from then on */
	assert_int_equal(192, r.begins);
	assert_int_equal(3, r.named); /* Run, and a Checkout and an Order begun before the trace */
	assert_int_equal(32, r.price_run); /* every Price now under Order, Checkout, Run */
	assert_int_equal(0, r.price4);
	assert_int_equal(34, r.run1);       /* the fake namer's three, resumed 34 times */
	assert_int_equal(126, r.other);     /* Order and Checkout, now under Run */
}

static void test_names(void **state)
{
	char b[64];

	(void)state;
	assert_true(nt_asyncflow_is_movenext("N.Shop+<Price>d__4::MoveNext", "<Price>d__4"));
	assert_true(nt_asyncflow_is_movenext("N.Orders+<Get>d__3`1[System.__Canon]::MoveNext", "<Get>d__3`1"));
	assert_false(nt_asyncflow_is_movenext("N.Shop+<Price>d__40::MoveNext", "<Price>d__4"));
	assert_false(nt_asyncflow_is_movenext("N.Shop+<Price>d__4::SetStateMachine", "<Price>d__4"));
	assert_false(nt_asyncflow_is_movenext("<Price>d__4::MoveNext", "<Price>d__4"));
	assert_false(nt_asyncflow_is_movenext("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+"
					      "AsyncStateMachineBox`1[System.Int64,N.Shop+<Price>d__4]::MoveNext",
					      "<Price>d__4"));
	assert_true(nt_asyncflow_box_machine("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+"
					     "AsyncStateMachineBox`1[System.Int64,N.Shop+<Run>d__1]::MoveNext",
					     b, sizeof(b)));
	assert_string_equal("<Run>d__1", b);
	assert_false(nt_asyncflow_box_machine("N.Shop+<Run>d__1::MoveNext", b, sizeof(b)));
	assert_false(nt_asyncflow_box_machine("AsyncStateMachineBox`1[System.Int64,N.Shop+<Run>d__1]::MoveNext",
					      b, 4)); /* does not fit */
	assert_false(nt_asyncflow_box_machine("AsyncStateMachineBox`1[]::MoveNext", b, sizeof(b)));
}

/* ---- hand-made events: requests handed from threads to tasks ---- */

static const struct nt_metadata m_tpl[] = {
	{ .provider = NT_AF_PROVIDER, .event_id = 10 }, { .provider = NT_AF_PROVIDER, .event_id = 14 },
	{ .provider = NT_AF_PROVIDER, .event_id = 17 }, { .provider = NT_AF_PROVIDER, .event_id = 18 },
};
static const struct nt_metadata m_start = { .provider = NT_AF_HOSTING_PROVIDER, .event_id = 3 };
static const struct nt_metadata m_stop = { .provider = NT_AF_HOSTING_PROVIDER, .event_id = 4 };

static void feed(struct nt_asyncflow *a, const struct nt_metadata *m, uint32_t tid, uint8_t act,
		 const void *payload, size_t len)
{
	uint8_t id[16] = { act }, zero[16] = { 0 };
	struct nt_event ev = { .meta = m, .thread_id = tid, .activity_id = id,
			       .related_activity_id = zero, .payload = payload,
			       .payload_len = (uint32_t)len };

	assert_true(nt_asyncflow_event(a, &ev));
}

/* UTF-16LE of an ASCII string, NUL included, appended at p; returns the bytes. */
static size_t u16(uint8_t *p, const char *s)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)*s;
		p[n++] = 0;
	} while (*s++);
	return n;
}

static void test_requests(void **state)
{
	struct nt_asyncflow *a;
	uint8_t start[128], op[64];
	int32_t wait[5] = { 1, 0, 10, 2, 11 }, work[2] = { 10, 2 }, end = 2;
	size_t n;

	(void)state;
	OK(nt_asyncflow_new(&a));
	n = u16(start, "GET");
	n += u16(start + n, "/x\x1b[31m");
	feed(a, &m_start, 1, 7, start, n);
	assert_string_equal(nt_asyncflow_request(a, 1), "GET /x?[31m"); /* no control byte */
	assert_null(nt_asyncflow_request(a, 2));
	memcpy(op, &work[0], 4); /* task 10 created while thread 1 serves it */
	n = 4 + u16(op + 4, "Async: <Handle>d__0");
	feed(a, &m_tpl[1], 1, 0, op, n);
	feed(a, &m_tpl[0], 1, 0, wait, sizeof(wait)); /* 10 awaited by 11: the request suspends */
	assert_null(nt_asyncflow_request(a, 1));
	feed(a, &m_tpl[2], 2, 0, work, sizeof(work)); /* 10 resumes on thread 2 */
	assert_string_equal(nt_asyncflow_request(a, 2), "GET /x?[31m");
	feed(a, &m_tpl[3], 2, 0, &end, sizeof(end));
	assert_null(nt_asyncflow_request(a, 2));
	/* a synchronous request: from its start to its stop on the same thread */
	n = u16(start, "POST");
	n += u16(start + n, "/y");
	feed(a, &m_start, 3, 8, start, n);
	assert_string_equal(nt_asyncflow_request(a, 3), "POST /y");
	feed(a, &m_stop, 3, 9, NULL, 0); /* another request's stop: not this one */
	assert_string_equal(nt_asyncflow_request(a, 3), "POST /y");
	feed(a, &m_stop, 3, 8, NULL, 0);
	assert_null(nt_asyncflow_request(a, 3));
	feed(a, &m_start, 4, 9, start, 5); /* a cut payload: no name, no request */
	assert_null(nt_asyncflow_request(a, 4));
	nt_asyncflow_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
