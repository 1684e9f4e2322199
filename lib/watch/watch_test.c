/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "watch/engine.h"
#include "watch/watch.h"

static void test_rules(void **state)
{
	struct watch_rule r;
	char err[256];

	(void)state;
	assert_int_equal(watch_rule_parse("cpu > 80% for 2s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_CPU);
	assert_true(r.above);
	assert_true(r.threshold == 80);
	assert_int_equal(r.for_ms, 2000);
	assert_int_equal(watch_rule_parse("cpu<3 for 500ms cooldown 1m count 2", &r, err, sizeof(err)), 0);
	assert_false(r.above);
	assert_true(r.threshold == 3);
	assert_int_equal(r.for_ms, 500);
	assert_int_equal(r.cooldown_ms, 60000);
	assert_int_equal(r.count, 2);
	assert_int_equal(watch_rule_parse("rss > 1.5GB", &r, err, sizeof(err)), 0);
	assert_true(r.threshold == 1.5 * 1073741824.0);
	assert_int_equal(watch_rule_parse("System.Runtime/gc-heap-size > 500MB for 30s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_COUNTER);
	assert_string_equal(r.source, "System.Runtime");
	assert_string_equal(r.name, "gc-heap-size");
	assert_true(r.unit_bytes);
	assert_true(watch_rule_test(&r, 600, "MB"));
	assert_false(watch_rule_test(&r, 500, "MB"));
	assert_false(watch_rule_test(&r, 1e12, "%"));
	assert_int_equal(watch_rule_parse("System.Runtime/exception-count > 10", &r, err, sizeof(err)), 0);
	assert_false(r.unit_bytes);
	assert_true(watch_rule_test(&r, 11, ""));
	assert_int_equal(watch_rule_parse("exception Clrtap.Fixtures.FixtureException cooldown 5s", &r, err, sizeof(err)), 0);
	assert_string_equal(r.name, "Clrtap.Fixtures.FixtureException");
	assert_int_equal(r.cooldown_ms, 5000);
	assert_int_equal(watch_rule_parse("gc-pause > 50ms cooldown 1s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_GC_PAUSE);
	assert_true(r.threshold == 50);
	assert_true(watch_rule_test(&r, 50.5, NULL));
	assert_false(watch_rule_test(&r, 50, NULL));
	assert_int_equal(watch_rule_parse("exit", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_EXIT);
	assert_int_equal(watch_rule_parse("crash count 1", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_CRASH);
	assert_int_equal(watch_rule_parse("exception * message \"not  found\" count 1", &r, err, sizeof(err)), 0);
	assert_string_equal(r.name, "*");
	assert_string_equal(r.message, "not  found");
	assert_int_equal(r.count, 1);
	assert_int_equal(watch_rule_parse("exception System.IO.IOException message disk", &r, err, sizeof(err)), 0);
	assert_string_equal(r.name, "System.IO.IOException");
	assert_string_equal(r.message, "disk");
	assert_int_equal(watch_rule_parse("threadpool-queue > 100 for 5s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_COUNTER);
	assert_false(r.meter);
	assert_string_equal(r.source, "System.Runtime");
	assert_string_equal(r.name, "threadpool-queue-length");
	assert_true(r.threshold == 100);
	assert_int_equal(r.for_ms, 5000);
	assert_int_equal(watch_rule_parse("exception-rate > 50 for 3s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_COUNTER);
	assert_string_equal(r.source, "System.Runtime");
	assert_string_equal(r.name, "exception-count");
	assert_true(r.threshold == 50);
	assert_int_equal(watch_rule_parse("cgroup-memory > 80%", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_CGROUP_MEM);
	assert_true(r.threshold == 80);
	assert_true(watch_rule_test(&r, 80.5, NULL));
	assert_int_equal(watch_rule_parse("meter System.Runtime/dotnet.gc.heap.total_allocated > 10MB", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_COUNTER);
	assert_true(r.meter);
	assert_string_equal(r.source, "System.Runtime");
	assert_string_equal(r.name, "dotnet.gc.heap.total_allocated");
	assert_true(watch_rule_test(&r, 20e6, "By"));
}

static void test_bad_rules(void **state)
{
	static const char *bad[] = {
		"", "   ", "cpu", "cpu >", "cpu = 5", "cpu > x", "cpu > 5MB", "rss > 5%", "rss > -1",
		"exception", "exception X for 2s", "exit for 1s", "cpu > 5 for", "cpu > 5 for 2y",
		"cpu > 5 count 0", "cpu > 5 banana 2", "/x > 1", "S/ > 1", "S/a/b > 1", "S/a > 1parsec",
		"gpu > 5", "cpu > 5 \x01", "cpu > 5 for 31d", "gc-pause < 5ms", "gc-pause > 5MB",
		"gc-pause > 5ms for 1s", "exception *", "crash for 1s", "crash x", "exception X message", "exception X message \"open",
		"cgroup-memory > 5", "cgroup-memory > 101%", "cgroup-memory > 5MB", "meter > 5", "meter x > 5",
		"threadpool-queue > 5MB x", "exception * message \"a\x01\"",
		"request", "request < 5ms", "request > 5x", "request > 5MB", "request > 5ms for 1s",
		"status", "status 6xx", "status 5x", "status 99", "status 5xx path api",
		"status 5xx times 0 in 1s", "status 5xx times 3", "status 5xx times 3 in 0",
		"status 5xx times 10001 in 1s", "request-rate > 5MB", "cpu > 5 do", "cpu > 5 do reboot",
		"cpu > 5 do stacks do stacks do stacks do stacks do stacks",
	};
	struct watch_rule r;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = 0;
		assert_int_equal(watch_rule_parse(bad[i], &r, err, sizeof(err)), -EINVAL);
		assert_true(err[0] != 0);
	}
	assert_int_equal(watch_rule_parse("gpu > 5", &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'gpu': unknown trigger"));
}

static void test_state(void **state)
{
	struct watch_rule r;
	struct watch_state s = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(watch_rule_parse("cpu > 50 for 1s cooldown 10s count 2", &r, err, sizeof(err)), 0);
	assert_int_equal(watch_state_feed(&r, &s, 0, true, false), WATCH_QUIET);
	assert_int_equal(watch_state_feed(&r, &s, 500, false, false), WATCH_QUIET);
	assert_int_equal(watch_state_feed(&r, &s, 600, true, false), WATCH_QUIET);
	assert_int_equal(watch_state_feed(&r, &s, 1599, true, false), WATCH_QUIET);
	assert_int_equal(watch_state_feed(&r, &s, 1600, true, false), WATCH_FIRE);
	assert_int_equal(watch_state_feed(&r, &s, 2600, true, false), WATCH_COOLDOWN);
	assert_int_equal(s.suppressed, 1u);
	assert_int_equal(watch_state_feed(&r, &s, 11600, true, false), WATCH_FIRE);
	assert_int_equal(watch_state_feed(&r, &s, 30000, true, false), WATCH_EXHAUSTED);
	assert_int_equal(s.fired, 2u);
	/* the default cooldown; busy: the last firing's actions still run */
	memset(&s, 0, sizeof(s));
	assert_int_equal(watch_rule_parse("cpu > 50", &r, err, sizeof(err)), 0);
	assert_true(r.cooldown_default);
	assert_int_equal(r.cooldown_ms, WATCH_DEFAULT_COOLDOWN_MS);
	assert_int_equal(watch_state_feed(&r, &s, 0, true, false), WATCH_FIRE);
	assert_int_equal(watch_state_feed(&r, &s, 250, true, false), WATCH_COOLDOWN);
	assert_int_equal(watch_state_feed(&r, &s, 59999, true, false), WATCH_COOLDOWN);
	assert_int_equal(watch_state_feed(&r, &s, 60000, true, true), WATCH_BUSY);
	assert_int_equal(watch_state_feed(&r, &s, 60250, true, false), WATCH_FIRE);
	assert_int_equal(watch_rule_parse("cpu > 50 cooldown 0", &r, err, sizeof(err)), 0);
	assert_false(r.cooldown_default);
	assert_int_equal(r.cooldown_ms, 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(watch_state_feed(&r, &s, 0, true, false), WATCH_FIRE);
	assert_int_equal(watch_state_feed(&r, &s, 250, true, true), WATCH_BUSY);
	assert_int_equal(s.busy, 1u);
	assert_int_equal(watch_state_feed(&r, &s, 500, true, false), WATCH_FIRE);
}

static void test_requests(void **state)
{
	struct watch_rule r;
	struct watch_state s = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(watch_rule_parse("request > 500ms", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_REQUEST);
	assert_true(r.threshold == 500);
	assert_int_equal(r.win_n, 0);
	assert_int_equal(watch_window_add(&r, &s, 0), 1);
	assert_int_equal(watch_rule_parse("status 5xx path /api/ times 3 in 10s cooldown 1s do stacks do \"exec:echo a b\"",
					  &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_STATUS);
	assert_int_equal(r.status_lo, 500);
	assert_int_equal(r.status_hi, 599);
	assert_string_equal(r.path, "/api/");
	assert_int_equal(r.win_n, 3);
	assert_int_equal(r.win_ms, 10000);
	assert_int_equal(r.cooldown_ms, 1000);
	assert_int_equal(r.nactions, 2);
	assert_int_equal(r.actions[0].kind, WATCH_ACT_STACKS);
	assert_int_equal(r.actions[1].kind, WATCH_ACT_EXEC);
	assert_string_equal(r.actions[1].cmd, "echo a b");
	/* three within 10 s: the third fires, the window starts over */
	assert_int_equal(watch_window_add(&r, &s, 0), 0);
	assert_int_equal(watch_window_add(&r, &s, 20000), 0);
	assert_int_equal(watch_window_add(&r, &s, 25000), 0);
	assert_int_equal(watch_window_add(&r, &s, 30000), 1);
	assert_int_equal(watch_window_add(&r, &s, 30001), 0);
	assert_int_equal(watch_window_add(&r, &s, 30002), 0);
	assert_int_equal(watch_window_add(&r, &s, 50000), 0);
	assert_int_equal(watch_window_add(&r, &s, 50001), 0);
	assert_int_equal(watch_window_add(&r, &s, 50002), 1);
	watch_state_release(&s);
	assert_int_equal(watch_rule_parse("exception RealApp.Ledger+ReconcileFault", &r, err, sizeof(err)), 0);
	assert_true(watch_exception_match(&r, "ReconcileFault"));
	assert_true(watch_exception_match(&r, "RealApp.Ledger+ReconcileFault"));
	assert_false(watch_exception_match(&r, "Fault"));
	assert_false(watch_exception_match(&r, "Other.ReconcileFault"));
	assert_false(watch_exception_match(&r, ""));
	assert_int_equal(watch_rule_parse("exception System.Exception", &r, err, sizeof(err)), 0);
	assert_false(watch_exception_match(&r, "Exception"));
	assert_int_equal(watch_rule_parse("status 503", &r, err, sizeof(err)), 0);
	assert_int_equal(r.status_lo, 503);
	assert_int_equal(r.status_hi, 503);
	assert_int_equal(watch_rule_parse("request-rate > 1000 for 5s", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, WATCH_COUNTER);
	assert_string_equal(r.source, "Microsoft.AspNetCore.Hosting");
	assert_string_equal(r.name, "requests-per-second");
}

static void test_actions(void **state)
{
	struct watch_action a;
	char err[256];

	(void)state;
	assert_int_equal(watch_action_parse("profile:3s", &a, err, sizeof(err)), 0);
	assert_int_equal(a.kind, WATCH_ACT_PROFILE);
	assert_int_equal(a.duration_ms, 3000);
	assert_int_equal(watch_action_parse("stacks", &a, err, sizeof(err)), 0);
	assert_int_equal(a.kind, WATCH_ACT_STACKS);
	assert_int_equal(watch_action_parse("exec:echo hi:there", &a, err, sizeof(err)), 0);
	assert_string_equal(a.cmd, "echo hi:there");
	assert_int_equal(watch_action_parse("stacks:2s", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("exec", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("profile:0", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("reboot", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("profiler", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("analyze:exceptions", &a, err, sizeof(err)), 0);
	assert_int_equal(a.kind, WATCH_ACT_ANALYZE);
	assert_string_equal(a.cmd, "exceptions");
	assert_int_equal(a.duration_ms, 0);
	assert_int_equal(watch_action_parse("analyze:hotpaths:2s", &a, err, sizeof(err)), 0);
	assert_string_equal(a.cmd, "hotpaths");
	assert_int_equal(a.duration_ms, 2000);
	assert_int_equal(watch_action_parse("analyze", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("analyze:", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("analyze:Hot-Paths", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("analyze:hotpaths:0", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(watch_action_parse("analyze:abcdefghijklmnopqrstuvwxyzabcdef", &a, err, sizeof(err)), -EINVAL);
}

static void on_line(void *ctx, const char *json, size_t len)
{
	struct strbuf *sb = ctx;

	strbuf_add(sb, json, len);
	strbuf_addch(sb, '\n');
}

/* The engine: rules and actions checked as they are added; a run with nothing to watch ends at once. */
static void test_engine(void **state)
{
	struct strbuf lines = STRBUF_INIT;
	struct watch_config c = { .max_actions = 4, .action_limit_ms = 1000, .outdir = "/nonexistent",
				  .log_line = on_line, .ctx = &lines };
	struct watch_action a = { .kind = WATCH_ACT_STACKS };
	struct watch *w;
	char why[256];
	int i;

	(void)state;
	assert_int_equal(watch_engine_new(&w, &c), 0);
	assert_int_equal(watch_engine_add_rule(w, "cpu > 80% for 2s", why, sizeof(why)), 0);
	assert_int_equal(watch_engine_add_rule(w, "memory-growth lungs > 1MB/s", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'lungs': not a kind of memory"));
	assert_int_equal(watch_engine_add_rule(w, "cpu >", why, sizeof(why)), -EINVAL);
	assert_int_equal(watch_engine_nrules(w), 1);
	for (i = 0; i < WATCH_MAX_ACTIONS; i++)
		assert_int_equal(watch_engine_add_action(w, &a), 0);
	assert_int_equal(watch_engine_add_action(w, &a), -E2BIG);
	/* no target, not --all: the one round finds nothing alive and the log ends */
	assert_int_equal(watch_engine_run(w), 0);
	assert_non_null(strstr(lines.buf, "\"event\":\"end\",\"fired\":0}\n"));
	assert_null(strstr(lines.buf, "action"));
	watch_engine_free(w);
	strbuf_release(&lines);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_bad_rules),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_actions),
		cmocka_unit_test(test_engine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
