/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/analyze/memgrowth.c: the rate of a kind growing
 * evenly, native judged as malloc heap + other anonymous together, small
 * moves named as no growth, the series' bound.
 */
#include "common/compat.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analyze/analyze.h"

static void point(struct an_mem_series *s, double t, uint64_t gc_kb, uint64_t other_kb, uint64_t malloc_kb)
{
	struct an_memory m = { 0 };

	m.rss_kb[AN_MEM_GC_HEAP] = gc_kb;
	m.rss_kb[AN_MEM_OTHER_ANON] = other_kb;
	m.rss_kb[AN_MEM_NATIVE] = malloc_kb;
	m.rss_kb[AN_MEM_IMAGES] = 30 << 10;
	m.total_kb = gc_kb + other_kb + malloc_kb + (30 << 10);
	assert_int_equal(analyze_mem_series_add(s, t, &m), 0);
}

static void test_native_rate(void **state)
{
	struct an_mem_series s = { 0 };
	struct an_mem_growth g;
	int i;

	(void)state;
	/* 8 MiB/s: 6 of other anonymous, 2 of malloc heap; the GC heap flat */
	for (i = 0; i <= 16; i++)
		point(&s, 100 + i * 0.5, 10 << 10, (20 << 10) + (uint64_t)(i * 3 << 10), (5 << 10) + (uint64_t)(i << 10));
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.points, 17);
	assert_true(g.span_s > 7.99 && g.span_s < 8.01);
	assert_int_equal(g.grew, AN_MEM_GREW_NATIVE);
	assert_string_equal(analyze_mem_growth_name(g.grew), "native");
	assert_int_equal(g.delta_kb[AN_MEM_GREW_NATIVE], 64 << 10);
	assert_true(fabs(g.rate_kb_s[AN_MEM_GREW_NATIVE] - 8192) < 1);
	assert_true(fabs(g.rate_kb_s[AN_MEM_GC_HEAP]) < 1e-6);
	assert_int_equal(g.total_delta_kb, 64 << 10);
	analyze_mem_series_release(&s);
}

static void test_small_moves_and_gc(void **state)
{
	struct an_mem_series s = { 0 };
	struct an_mem_growth g;

	(void)state;
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.grew, -1);
	assert_null(analyze_mem_growth_name(g.grew));
	point(&s, 0, 100 << 10, 20 << 10, 5 << 10);
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.points, 1);
	assert_int_equal(g.grew, -1);
	/* 7 MiB more: under the 8 MiB floor */
	point(&s, 2, 107 << 10, 20 << 10, 5 << 10);
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.grew, -1);
	/* 50 MiB of GC heap beats 10 of native */
	point(&s, 4, 150 << 10, 30 << 10, 5 << 10);
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.grew, AN_MEM_GC_HEAP);
	assert_int_equal(g.delta_kb[AN_MEM_GC_HEAP], 50 << 10);
	/* a shrinking kind is no growth */
	analyze_mem_series_release(&s);
	point(&s, 0, 150 << 10, 30 << 10, 5 << 10);
	point(&s, 1, 50 << 10, 30 << 10, 5 << 10);
	analyze_mem_growth(&s, &g);
	assert_int_equal(g.grew, -1);
	assert_int_equal(g.delta_kb[AN_MEM_GC_HEAP], -(100 << 10));
	analyze_mem_series_release(&s);
}

static void test_bounded(void **state)
{
	struct an_mem_series s = { 0 };
	struct an_mem_growth g;
	int i;

	(void)state;
	for (i = 0; i < 5 * AN_MEM_SERIES_MAX; i++)
		point(&s, i, 10 << 10, (uint64_t)i * 1024, 0);
	assert_true(s.n <= AN_MEM_SERIES_MAX);
	assert_true(s.p[0].t_s == 0);
	assert_true(s.p[s.n - 1].t_s == 5 * AN_MEM_SERIES_MAX - 1);
	analyze_mem_growth(&s, &g);
	assert_true(fabs(g.rate_kb_s[AN_MEM_OTHER_ANON] - 1024) < 1e-3);
	analyze_mem_series_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_rate),
		cmocka_unit_test(test_small_moves_and_gc),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
