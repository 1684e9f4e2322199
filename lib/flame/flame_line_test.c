/* SPDX-License-Identifier: MIT */
/*
 * flame_line_test.c - frame names carrying a source line
 * ("NAME in FILE:line N") split for pprof and speedscope; anything else is
 * not a line.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "flame/flame_int.h"

static bool split(const char *s, size_t *nl, char *file, uint32_t *line)
{
	const char *f;
	size_t fl;

	if (!flame_name_line(s, strlen(s), nl, &f, &fl, line))
		return false;
	memcpy(file, f, fl);
	file[fl] = '\0';
	return true;
}

static void test_split(void **state)
{
	char file[128];
	size_t nl;
	uint32_t line;

	(void)state;
	assert_true(split("A.B::C in /src/x.cs:line 44", &nl, file, &line));
	assert_int_equal(nl, 6);
	assert_string_equal(file, "/src/x.cs");
	assert_int_equal(line, 44);
	/* the first " in " splits: a method name has no spaces, a path may */
	assert_true(split("A::M in /a in b/x.cs:line 7", &nl, file, &line));
	assert_string_equal(file, "/a in b/x.cs");
	assert_int_equal(nl, 4);
	/* not lines */
	assert_false(split("A::M", &nl, file, &line));
	assert_false(split("A::M in /x.cs:line ", &nl, file, &line));
	assert_false(split("A::M in /x.cs:line 0", &nl, file, &line));
	assert_false(split("A::M in /x.cs:line 99999999999", &nl, file, &line));
	assert_false(split("A::M /x.cs:line 4", &nl, file, &line));
	assert_false(split(" in :line 4", &nl, file, &line));
	assert_false(split(":line 4", &nl, file, &line));
	assert_false(split("4", &nl, file, &line));
	assert_false(split("", &nl, file, &line));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
