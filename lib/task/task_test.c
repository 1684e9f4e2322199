/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/task: argument parsing and bounds, results, the table's rows. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "analyze/analyze.h"
#include "common/exitcode.h"
#include "ipc/ipc.h"
#include "task/task.h"

static const struct task_param tparams[] = {
	{ "duration", TASK_P_DURATION, "3", 0.001, 3600, NULL, "how long", 0 },
	{ "count", TASK_P_BOOL, "false", 0, 0, NULL, "count only", 0 },
	{ "interval", TASK_P_INT, "1", 1, 3600, NULL, "seconds between values", 0 },
	{ "budget", TASK_P_NUM, "5", 0.01, 1000, NULL, "share of a core", 0 },
	{ "method", TASK_P_STRING, NULL, 0, 16, NULL, "Ns.Type::Method", TASK_PF_REQUIRED },
	{ "engine", TASK_P_ENUM, "auto", 0, 0, "auto perf eventpipe", "sampler", 0 },
	{ "output", TASK_P_STRING, NULL, 0, 0, NULL, "a file", TASK_PF_CLI_ONLY },
	{ "pattern", TASK_P_STRING, NULL, 0, 0, ".:_()", "Ns.Type::M", 0 },
};

static int trun_calls;

static int trun(const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	trun_calls++;
	if (task_arg(a, "count")->b)
		return task_fail(r, -ESRCH, "no such process %d\n(gone)", a->pid);
	return strbuf_addf(&r->json, "{\"method\":\"%s\"}", task_arg(a, "method")->s);
}

static const struct task ttask = { "t.test", "a test task", tparams, ARRAY_SIZE(tparams), TASK_F_TARGET, trun };

static void test_args_defaults_and_set(void **state)
{
	struct task_args a;
	char why[256];

	assert_int_equal(task_args_init(&a, &ttask, 42), 0);
	assert_false(task_arg(&a, "duration")->set);
	assert_true(task_arg(&a, "duration")->d == 3.0);
	assert_int_equal(task_arg(&a, "interval")->i, 1);
	assert_string_equal(task_arg(&a, "engine")->s, "auto");
	assert_null(task_arg(&a, "method")->s);
	assert_null(task_arg(&a, "nope"));
	/* the required one is missing */
	assert_int_equal(task_args_check(&a, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "needs method"));

	/* the one duration syntax, in seconds, within bounds */
	assert_int_equal(task_args_set(&a, "duration", "1.5m", why, sizeof(why)), 0);
	assert_true(task_arg(&a, "duration")->d == 90.0);
	assert_true(task_arg(&a, "duration")->set);
	assert_int_equal(task_args_set(&a, "duration", "250ms", why, sizeof(why)), 0);
	assert_true(task_arg(&a, "duration")->d == 0.25);
	assert_int_equal(task_args_set(&a, "duration", "2h", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "from 0.001s to 3600s"));
	assert_int_equal(task_args_set(&a, "duration", "-1", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "duration", "3x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "invalid duration for duration"));
	assert_true(task_arg(&a, "duration")->d == 0.25); /* a refused value changes nothing */

	assert_int_equal(task_args_set(&a, "interval", "3601", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "interval", "0x10", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "interval", "10", why, sizeof(why)), 0);
	assert_int_equal(task_arg(&a, "interval")->i, 10);
	assert_int_equal(task_args_set(&a, "budget", "0.5", why, sizeof(why)), 0);
	assert_int_equal(task_args_set(&a, "budget", "nan", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "budget", "1e9", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "count", "yes", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "engine", "dtrace", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "auto perf eventpipe"));
	assert_int_equal(task_args_set(&a, "engine", "perf", why, sizeof(why)), 0);
	/* strings: capped, no control characters; earlier strings survive the store growing */
	assert_int_equal(task_args_set(&a, "method", "A.B::Seventeen__x", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "method", "A.B::\nC", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "method", "A.B::C", why, sizeof(why)), 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(task_args_set(&a, "output", "/tmp/some/longer/path/name/to/grow/the/store", why,
					       sizeof(why)), 0);
	assert_string_equal(task_arg(&a, "method")->s, "A.B::C");
	assert_string_equal(task_arg(&a, "engine")->s, "perf");
	/* a STRING with choices: those characters only, no leading '-' */
	assert_int_equal(task_args_set(&a, "pattern", "A.B::C(int)", why, sizeof(why)), 0);
	assert_int_equal(task_args_set(&a, "pattern", "../../etc/passwd", why, sizeof(why)), -EINVAL);
	assert_int_equal(task_args_set(&a, "pattern", "-x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "no leading '-'"));
	assert_string_equal(task_arg(&a, "pattern")->s, "A.B::C(int)");
	assert_int_equal(task_args_set(&a, "nope", "1", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "takes no parameter 'nope'"));
	assert_int_equal(task_args_check(&a, why, sizeof(why)), 0);
	task_args_release(&a);

	/* a target task without a pid */
	assert_int_equal(task_args_init(&a, &ttask, 0), 0);
	assert_int_equal(task_args_set(&a, "method", "A::B", why, sizeof(why)), 0);
	assert_int_equal(task_args_check(&a, why, sizeof(why)), -EINVAL);
	task_args_release(&a);
}

static void test_run_and_fail(void **state)
{
	struct task_args a;
	struct task_result r;
	char why[128];

	trun_calls = 0;
	task_args_init(&a, &ttask, 42);
	task_result_init(&r);
	/* bad arguments never reach run */
	assert_int_equal(task_run(&ttask, &a, NULL, &r), -EINVAL);
	assert_int_equal(trun_calls, 0);
	assert_int_equal(r.exit_code, EXIT_USAGE);
	assert_non_null(strstr(r.json.buf, "\"error\":"));
	task_result_release(&r);

	task_result_init(&r);
	task_args_set(&a, "method", "A::B", why, sizeof(why));
	assert_int_equal(task_run(&ttask, &a, NULL, &r), 0);
	assert_string_equal(r.json.buf, "{\"method\":\"A::B\"}");
	task_result_release(&r);

	/* a failure: its exit code, a message without control characters, the error object */
	task_result_init(&r);
	task_args_set(&a, "count", "true", why, sizeof(why));
	assert_int_equal(task_run(&ttask, &a, NULL, &r), -ESRCH);
	assert_int_equal(r.exit_code, EXIT_NO_PROCESS);
	assert_string_equal(r.message, "no such process 42 (gone)");
	assert_string_equal(r.json.buf,
			    "{\"error\":\"no-process\",\"exit_code\":3,\"message\":\"no such process 42 (gone)\"}");
	task_result_release(&r);
	task_args_release(&a);
}

static void test_help_and_json(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	assert_int_equal(task_help_text(&ttask, "output", &sb), 0);
	assert_non_null(strstr(sb.buf, "--duration TIME"));
	assert_non_null(strstr(sb.buf, "(default 3s; 0.001s..3600s)"));
	assert_non_null(strstr(sb.buf, "(default auto; auto perf eventpipe)"));
	assert_non_null(strstr(sb.buf, "[required]"));
	assert_null(strstr(sb.buf, "--output"));
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	ct_json_arr_begin(&j);
	for (size_t i = 0; i < ARRAY_SIZE(tparams); i++)
		task_param_json(&j, &tparams[i]);
	ct_json_arr_end(&j);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_non_null(strstr(sb.buf, "{\"name\":\"engine\",\"type\":\"enum\",\"default\":\"auto\","
				       "\"choices\":[\"auto\",\"perf\",\"eventpipe\"]"));
	strbuf_release(&sb);
}

/* Every row of the real table: sorted, unique, well-formed params whose defaults parse. */
static void test_table_rows(void **state)
{
	const struct task *const *all;
	size_t n, i, k, m;
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	all = task_all(&n);
	for (i = 0; i < n; i++) {
		const struct task *t = all[i];
		struct task_args a;

		if (i)
			assert_true(strcmp(all[i - 1]->name, t->name) < 0);
		assert_ptr_equal(task_find(t->name), t);
		assert_non_null(t->summary);
		assert_non_null(t->run);
		assert_true(t->nparams <= TASK_MAX_PARAMS);
		for (k = 0; k < t->nparams; k++) {
			const struct task_param *p = &t->params[k];

			assert_non_null(p->help);
			assert_true(strspn(p->name, "abcdefghijklmnopqrstuvwxyz_0123456789") == strlen(p->name));
			for (m = 0; m < k; m++)
				assert_string_not_equal(p->name, t->params[m].name);
			if (p->flags & TASK_PF_REQUIRED)
				assert_null(p->def);
			if (p->type == TASK_P_ENUM)
				assert_non_null(p->choices);
		}
		/* every default parses under its own bounds */
		assert_int_equal(task_args_init(&a, t, 1), 0);
		task_args_release(&a);
	}
	assert_null(task_find("no-such-task"));
	ct_json_init(&j, &sb);
	assert_int_equal(task_table_json(&j), 0);
	assert_int_equal(ct_json_finish(&j), 0);
	strbuf_release(&sb);
}

/* Choices copied from another library's table are that table, word for word. */
static bool same_words(const char *choices, const char *(*at)(size_t i))
{
	size_t i, n = 0;
	const char *p = choices;

	while (*p) {
		p += strcspn(p, " ");
		p += strspn(p, " ");
		n++;
	}
	for (i = 0; at(i); i++) {
		const char *w = at(i), *q = choices;
		bool found = false;

		while (*q && !found) {
			size_t k = strcspn(q, " ");

			found = k == strlen(w) && !strncmp(q, w, k);
			q += k;
			q += strspn(q, " ");
		}
		if (!found)
			return false;
	}
	return i == n;
}

static const char *analyzer_at(size_t i)
{
	const struct an_analyzer *a = analyze_analyzer_at(i);

	return a ? a->name : NULL;
}

static const char *profile_at(size_t i)
{
	const char *help;

	return ipc_profile_name(i, &help);
}

static void test_table_choices(void **state)
{
	const struct task *an = task_find("analyze"), *tr = task_find("trace");

	assert_non_null(an);
	assert_non_null(tr);
	assert_true(same_words(an->params[0].choices, analyzer_at));
	assert_true(same_words(tr->params[1].choices, profile_at));
}

/* The child runner's failures: no result frame is an error, never a guess; the stop flag ends the child. */
static void test_spawn_without_result(void **state)
{
	struct task_args a;
	struct task_result r;
	struct task_ctx c = { .outdir_fd = -1 };
	volatile sig_atomic_t stop = 0;
	char why[64], script[] = "/tmp/clrtap-task-test-XXXXXX";
	int fd;

	task_args_init(&a, &ttask, 42);
	task_args_set(&a, "method", "A::B", why, sizeof(why));
	/* a program that cannot run */
	task_result_init(&r);
	assert_int_equal(task_spawn("/nonexistent/clrtap", &ttask, &a, &c, &r), -EPROTO);
	assert_int_equal(r.exit_code, EXIT_PROTOCOL);
	assert_non_null(strstr(r.message, "exited with code 127 without a result"));
	assert_non_null(strstr(r.json.buf, "\"error\":\"protocol\""));
	task_result_release(&r);
	/* a child that runs until stopped: SIGTERM to its group, reported as interrupted */
	fd = mkstemp(script);
	assert_true(fd >= 0);
	assert_true(write(fd, "#!/bin/sh\nsleep 30 & wait\n", 27) == 27);
	fchmod(fd, 0700);
	close(fd);
	stop = 1;
	c.stop = &stop;
	task_result_init(&r);
	assert_int_equal(task_spawn(script, &ttask, &a, &c, &r), -EPROTO);
	assert_int_equal(r.exit_code, EXIT_INTERRUPTED);
	assert_non_null(strstr(r.message, "ended by signal 15 without a result"));
	task_result_release(&r);
	unlink(script);
	task_args_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args_defaults_and_set),
		cmocka_unit_test(test_run_and_fail),
		cmocka_unit_test(test_help_and_json),
		cmocka_unit_test(test_table_rows),
		cmocka_unit_test(test_table_choices),
		cmocka_unit_test(test_spawn_without_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
