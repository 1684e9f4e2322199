/* SPDX-License-Identifier: MIT */
/*
 * cli_test.c - the one option parser and the value syntaxes every command
 * shares (durations, timeouts, sizes), with no target and no runtime.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cli.h"

static void test_duration(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} good[] = {
		{ "0", 0 },         { "5", 5000 },       { "5s", 5000 },    { "1.5", 1500 },
		{ "500ms", 500 },   { "2m", 120000 },    { "1h", 3600000 }, { "0.001", 1 },
		{ "1.25m", 75000 }, { "2592000", 2592000000LL }, /* 30 days */
	};
	static const char *const bad[] = {
		"", "-1", "+1", "5x", "5 s", "1.", ".5", "1.5ms", /* finer than a ms */
		"0.0001", "2592001", "721h", "1.0000001", "s", "5S", "1e3", "0x10",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++) {
		int64_t ms = -1;

		assert_int_equal(cli_parse_duration(good[i].s, &ms), 0);
		assert_int_equal(ms, good[i].ms);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		int64_t ms = 77;

		if (cli_parse_duration(bad[i], &ms) != -EINVAL)
			fail_msg("'%s' was taken as a duration (%lld ms)", bad[i], (long long)ms);
		assert_int_equal(ms, 77); /* left alone */
	}
}

static void test_timeout(void **state)
{
	bool legacy = true;
	int ms = 0;

	(void)state;
	assert_int_equal(cli_parse_timeout("5", &ms, &legacy), 0);
	assert_int_equal(ms, 5000);
	assert_false(legacy);
	assert_int_equal(cli_parse_timeout("250ms", &ms, &legacy), 0);
	assert_int_equal(ms, 250);
	/* a bare 4-digit number is the old millisecond spelling */
	assert_int_equal(cli_parse_timeout("5000", &ms, &legacy), 0);
	assert_int_equal(ms, 5000);
	assert_true(legacy);
	assert_int_equal(cli_parse_timeout("5000ms", &ms, &legacy), 0);
	assert_false(legacy);
	assert_int_not_equal(cli_parse_timeout("0", &ms, &legacy), 0);    /* above 0 */
	assert_int_not_equal(cli_parse_timeout("2h", &ms, &legacy), 0);   /* at most an hour */
	assert_int_not_equal(cli_parse_timeout("soon", &ms, &legacy), 0);
}

static void test_size(void **state)
{
	uint64_t b = 0;

	(void)state;
	assert_int_equal(cli_parse_size("0", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(cli_parse_size("64K", &b), 0);
	assert_int_equal(b, 65536);
	assert_int_equal(cli_parse_size("3MiB", &b), 0);
	assert_int_equal(b, 3u << 20);
	assert_int_equal(cli_parse_size("2g", &b), 0);
	assert_int_equal(b, 2ull << 30);
	assert_int_equal(cli_parse_size("5T", &b), -EINVAL);
	assert_int_equal(cli_parse_size("-1", &b), -EINVAL);
	assert_int_equal(cli_parse_size("18446744073709551615G", &b), -EINVAL); /* overflow */
	assert_int_equal(cli_parse_size("99999999999999999999", &b), -EINVAL);
}

struct opts {
	bool json;
	const char *out;
	int count;
	pid_t pid;
	int64_t dur;
	uint64_t size;
};

static int parse(struct opts *o, int *first, int *code, int argc, ...)
{
	const struct cli_option table[] = {
		{ 'j', "json", CLI_OPT_BOOL, &o->json, NULL, "JSON" },
		{ 0, "label", CLI_OPT_STRING, &o->out, "TEXT", "a label" },
		{ 'c', "count", CLI_OPT_INT, &o->count, "N", "how many" },
		{ 'p', "pid", CLI_OPT_PID, &o->pid, "PID", "the target" },
		{ 'd', "duration", CLI_OPT_DURATION, &o->dur, "DUR", "how long" },
		{ 0, "max-size", CLI_OPT_SIZE, &o->size, "SIZE", "a cap" },
		{ 0 },
	};
	char *argv[16];
	va_list ap;
	int i;

	va_start(ap, argc);
	for (i = 0; i < argc && i < 15; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[i] = NULL;
	memset(o, 0, sizeof(*o));
	o->count = -1;
	*first = -1;
	*code = -1;
	return cli_parse(argc, argv, "clrtap test [options] WORD", table, first, code);
}

static void test_parse(void **state)
{
	struct opts o;
	int first, code;

	(void)state;
	cli_cmd_name = "test";
	/* short, long, --name=value; options after the positional word (GNU permutation) */
	assert_int_equal(parse(&o, &first, &code, 8, "test", "-j", "--count=7", "word", "-p", "42",
			       "--duration", "1.5"),
			 0);
	assert_true(o.json);
	assert_int_equal(o.count, 7);
	assert_int_equal(o.pid, 42);
	assert_int_equal(o.dur, 1500);
	assert_int_equal(first, 7);
	/* "--" ends the options: what follows is positional even when it looks like one */
	assert_int_equal(parse(&o, &first, &code, 5, "test", "--label", "x", "--", "-j"), 0);
	assert_string_equal(o.out, "x");
	assert_false(o.json);
	assert_int_equal(first, 4);
	assert_int_equal(parse(&o, &first, &code, 3, "test", "--max-size", "2M"), 0);
	assert_int_equal(o.size, 2u << 20);
}

static void test_parse_errors(void **state)
{
	struct opts o;
	int first, code;

	(void)state;
	cli_cmd_name = "test";
	/* an unknown option, a missing argument, a bad value: usage (2), nothing set after */
	assert_int_equal(parse(&o, &first, &code, 2, "test", "--nope"), 1);
	assert_int_equal(code, EXIT_USAGE);
	assert_int_equal(parse(&o, &first, &code, 2, "test", "--count"), 1);
	assert_int_equal(code, EXIT_USAGE);
	assert_int_equal(parse(&o, &first, &code, 3, "test", "-c", "seven"), 1);
	assert_int_equal(code, EXIT_USAGE);
	assert_int_equal(parse(&o, &first, &code, 3, "test", "-p", "0"), 1); /* a pid is > 0 */
	assert_int_equal(code, EXIT_USAGE);
	assert_int_equal(parse(&o, &first, &code, 3, "test", "-d", "1.5x"), 1);
	assert_int_equal(code, EXIT_USAGE);
	assert_int_equal(parse(&o, &first, &code, 3, "test", "--max-size", "lots"), 1);
	assert_int_equal(code, EXIT_USAGE);
	/* --help answers and says so: 1 with exit code 0 */
	assert_int_equal(parse(&o, &first, &code, 2, "test", "--help"), 1);
	assert_int_equal(code, EXIT_OK);
}

static void test_conflict(void **state)
{
	(void)state;
	cli_cmd_name = "test";
	assert_int_equal(cli_conflict(true, "--json", false, "--html", NULL), 0);
	assert_int_equal(cli_conflict(true, "--json", true, "--html", "one output"), EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),   cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_size),       cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_conflict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
