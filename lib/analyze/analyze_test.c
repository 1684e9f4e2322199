/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/analyze: the smaps breakdown (every kind, totals,
 * hostile file names), the analyzer table, doctor's ranking, lock-wait
 * cycles from contention events.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "analyze/analyze.h"

#define HDR(range, perms, inode, path) range " " perms " 00000000 00:00 " inode "          " path "\n"
#define BODY(rss, flags) "Size:  4 kB\nRss:   " rss " kB\nPss:   1 kB\nVmFlags: rd " flags "\n"

static const char smaps[] =
	HDR("55a842180000-55a842186000", "r--p", "1234", "/usr/share/dotnet/dotnet") BODY("24", "mr")
	HDR("55a862cae000-55a862e26000", "rw-p", "0", "[heap]") BODY("1372", "wr")
	/* a malloc arena: MAP_NORESERVE */
	HDR("7f25cc000000-7f25cc021000", "rw-p", "0", "") BODY("100", "wr nr")
	HDR("7f25cc021000-7f25d0000000", "---p", "0", "") BODY("0", "nr")
	/* a large malloc right below the GC's reservation */
	HDR("7f25d0000000-7f25d1001000", "rw-p", "0", "") BODY("16000", "wr")
	/* the GC: committed parts inside a 300 GiB PROT_NONE reservation */
	HDR("7f25d1001000-7f25d1100000", "rw-p", "0", "") BODY("800", "wr ac")
	HDR("7f25d1100000-7f25d2000000", "---p", "0", "") BODY("0", "")
	HDR("7f25d2000000-7f25d2400000", "rw-p", "0", "") BODY("3000", "wr ac")
	/* a neighbouring committed region the kernel did not merge (4 MiB boundary) */
	HDR("7f25d2400000-7f25d2800000", "rw-p", "0", "") BODY("500", "wr ac")
	HDR("7f25d2800000-7f30d2400000", "---p", "0", "") BODY("0", "")
	/* a thread stack above its guard page */
	HDR("7f30e0000000-7f30e0001000", "---p", "0", "") BODY("0", "")
	HDR("7f30e0001000-7f30e0801000", "rw-p", "0", "") BODY("40", "wr gd")
	HDR("7f31d5250000-7f31d5251000", "r-xs", "77", "/memfd:doublemapper (deleted)") BODY("4", "ex")
	/* a hostile file name (the kernel escapes newlines as \\012) */
	HDR("7f31d6000000-7f31d6001000", "r--p", "99", "/tmp/ [heap] Rss: 99 kB\\012") BODY("8", "rd")
	HDR("7ffdf5752000-7ffdf5773000", "rw-p", "0", "[stack]") BODY("44", "gd")
	HDR("7f3254f0e000-7f3254f10000", "r-xp", "0", "[vdso]") BODY("4", "ex");

static void test_memory_parse(void **state)
{
	struct an_memory m;
	uint64_t sum = 0;
	int k;

	(void)state;
	memset(&m, 0, sizeof(m));
	analyze_memory_parse(smaps, sizeof(smaps) - 1, &m);
	assert_int_equal(m.rss_kb[AN_MEM_IMAGES], 24 + 8);
	assert_int_equal(m.rss_kb[AN_MEM_NATIVE], 1372 + 100);
	assert_int_equal(m.rss_kb[AN_MEM_OTHER_ANON], 16000);
	assert_int_equal(m.rss_kb[AN_MEM_GC_HEAP], 800 + 3000 + 500);
	assert_int_equal(m.rss_kb[AN_MEM_STACKS], 40 + 44);
	assert_int_equal(m.rss_kb[AN_MEM_CODE_HEAPS], 4);
	assert_int_equal(m.code_exec_kb, 4); /* r-xs: an executable view */
	assert_int_equal(m.code_rw_kb, 0);
	assert_int_equal(m.ncode_maps, 1);
	assert_int_equal(m.code_maps[0].start, 0x7f31d5250000ull);
	for (k = 0; k < AN_MEM_KINDS; k++)
		sum += m.rss_kb[k];
	assert_int_equal(sum, m.total_kb);
	assert_int_equal(m.rss_kb[AN_MEM_OTHER], 4);
	assert_int_equal(analyze_memory_dominant(&m), AN_MEM_NATIVE);
	assert_string_equal(analyze_mem_kind_name(AN_MEM_GC_HEAP), "gc_heap");
	/* empty and garbage */
	analyze_memory_parse("", 0, &m);
	assert_int_equal(m.total_kb, 0);
	analyze_memory_parse("Rss: 5 kB\nzz-yy\n", 16, &m);
	assert_int_equal(m.total_kb, 0);
}

/* A block the kernel merged with the GC's first region: resident GC memory
 * beyond what the GC committed goes to other anonymous memory. */
static void test_memory_gc_excess(void **state)
{
	struct an_session s;
	struct an_memory m;
	int k;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (k = 0; k < 5; k++)
		s.gc_gen[k] = -1;
	memset(&m, 0, sizeof(m));
	m.rss_kb[AN_MEM_GC_HEAP] = 60u << 10;   /* 60 MiB in the GC's range */
	m.rss_kb[AN_MEM_OTHER_ANON] = 1u << 10;
	s.gc_committed_mb = 4.194304;           /* the GC committed 4 MiB */
	analyze_memory_runtime(&m, &s);
	assert_int_equal(m.gc_excess_kb, (60u << 10) - (4u << 10));
	assert_int_equal(m.rss_kb[AN_MEM_GC_HEAP], 4u << 10);
	assert_int_equal(m.rss_kb[AN_MEM_OTHER_ANON], 57u << 10);

	/* within the slack (a quarter + 16 MiB): left as it is */
	memset(&m, 0, sizeof(m));
	m.rss_kb[AN_MEM_GC_HEAP] = 20u << 10;
	analyze_memory_runtime(&m, &s);
	assert_int_equal(m.gc_excess_kb, 0);
	assert_int_equal(m.rss_kb[AN_MEM_GC_HEAP], 20u << 10);

	/* no committed figure: nothing moved */
	memset(&m, 0, sizeof(m));
	m.rss_kb[AN_MEM_GC_HEAP] = 60u << 10;
	s.gc_committed_mb = -1;
	analyze_memory_runtime(&m, &s);
	assert_int_equal(m.gc_excess_kb, 0);
}

static void test_table(void **state)
{
	const struct an_analyzer *a, *prev = NULL;
	size_t i;

	(void)state;
	for (i = 0; (a = analyze_analyzer_at(i)); prev = a, i++) {
		if (prev)
			assert_true(strcmp(prev->name, a->name) < 0);
		assert_ptr_equal(analyze_analyzer_find(a->name), a);
	}
	assert_true(i >= 7);
	assert_null(analyze_analyzer_find("nosuch"));
	assert_true(analyze_analyzer_find("memory")->need & AN_NEED_SMAPS);
}

static void test_doctor_memory_limit(void **state)
{
	struct an_finding f[AN_MAX_FINDINGS];
	struct an_session *s;
	struct an_memory m = { 0 };
	size_t n;

	(void)state;
	assert_int_equal(analyze_session_new(&s, AN_NEED_GC), 0);
	assert_int_equal(analyze_session_finish(s), 0);
	m.rss_kb[AN_MEM_GC_HEAP] = m.total_kb = 950 * 1024;
	m.cgroup_max = 1000ll << 20;
	m.cgroup_current = 960ll << 20;
	n = analyze_findings(s, &m, 42, 2.0, 2, f);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].severity, AN_CRITICAL);
	assert_string_equal(f[0].analyzer, "memory");
	assert_string_equal(f[0].next, "clrtap analyze -p 42 memory -d 10");
	assert_non_null(strstr(f[0].title, "GC heap"));
	m.cgroup_max = -1;
	n = analyze_findings(s, &m, 42, 2.0, 2, f);
	assert_int_equal(f[0].severity, AN_INFO);
	analyze_session_free(s);
}

/* ContentionStart V2 / Stop V1 events by hand */
static void cont_event(struct an_locks *l, bool start, uint64_t tid, uint64_t lock, uint64_t owner)
{
	static const struct nt_metadata mstart = { .provider_kind = NT_PROV_RUNTIME, .event_id = 81, .version = 2 };
	static const struct nt_metadata mstop = { .provider_kind = NT_PROV_RUNTIME, .event_id = 91, .version = 1 };
	uint8_t p[27] = { 0 };
	uint64_t ips[2] = { 0x1000, 0x2000 };
	struct nt_event ev = { 0 };
	double ns = 1e6;

	ev.meta = start ? &mstart : &mstop;
	ev.thread_id = tid;
	ev.pointer_size = 8;
	ev.payload = p;
	if (start) {
		uint64_t obj = lock + 1;

		memcpy(p + 3, &lock, 8);
		memcpy(p + 11, &obj, 8);
		memcpy(p + 19, &owner, 8);
		ev.payload_len = 27;
		ev.stack = ips;
		ev.nframes = 2;
	} else {
		memcpy(p + 3, &ns, 8);
		ev.payload_len = 11;
	}
	assert_int_equal(analyze_locks_event(l, &ev), 0);
}

static void test_lock_cycles(void **state)
{
	struct an_locks *l;
	struct an_lock_cycle c[4];
	const struct an_lock_stat *ls;
	uint64_t starts, stops, v2, dropped;
	size_t n;

	(void)state;
	assert_int_equal(analyze_locks_new(&l), 0);
	/* 30 waits for 10 (lock 1) and gets it: not open */
	cont_event(l, true, 30, 1, 10);
	cont_event(l, false, 30, 0, 0);
	/* a cycle 12 -> 11 -> 13 -> 12, and 14 waiting for 12 outside it */
	cont_event(l, true, 12, 2, 11);
	cont_event(l, true, 11, 3, 13);
	cont_event(l, true, 14, 2, 12);
	cont_event(l, true, 13, 4, 12);
	/* a Stop of a wait that began before: kept closed */
	cont_event(l, false, 40, 0, 0);
	/* a thread that names itself as owner: no cycle */
	cont_event(l, true, 50, 5, 50);
	n = analyze_locks_cycles(l, c, 4);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].n, 3);
	assert_int_equal(analyze_locks_wait(l, c[0].wait[0])->tid, 11);
	assert_int_equal(analyze_locks_wait(l, c[0].wait[1])->tid, 13);
	assert_int_equal(analyze_locks_wait(l, c[0].wait[2])->tid, 12);
	analyze_locks_counts(l, &starts, &stops, &v2, &dropped);
	assert_int_equal(starts, 6);
	assert_int_equal(stops, 2);
	assert_int_equal(v2, 6);
	assert_int_equal(dropped, 0);
	/* per lock: lock 1 has the only timed wait (1 ms) and comes first */
	assert_int_equal(analyze_locks_by_wait(l, &ls), 5);
	assert_int_equal(ls[0].lock_id, 1);
	assert_int_equal(ls[0].total_ns, 1000000);
	assert_int_equal(ls[0].object_id, 2);
	analyze_locks_free(l);
}

static void test_html(void **state)
{
	static const char md[] = "# clrtap analyze x\n\n- target: pid 1\n\n## Result\n\n**No deadlock** seen, `a`.\n\n"
				 "| n | type |\n|---:|---|\n| 3 | A<img src=x onerror=alert(1)> |\n\n"
				 "    Frame::One\n\n    Frame::Two\n\ntext & \"q\"";
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	assert_int_equal(analyze_html_from_md(md, strlen(md), "t <b>", &sb), 0);
	assert_non_null(strstr(sb.buf, "<title>t &lt;b&gt;</title>"));
	assert_non_null(strstr(sb.buf, "<h1>clrtap analyze x</h1>\n<ul>\n<li>target: pid 1</li>\n</ul>\n<h2>Result</h2>"));
	assert_non_null(strstr(sb.buf, "<p><b>No deadlock</b> seen, <code>a</code>.</p>"));
	assert_non_null(strstr(sb.buf, "<table>\n<tr><th>n</th><th>type</th></tr>\n"
				       "<tr><td>3</td><td>A&lt;img src=x onerror=alert(1)&gt;</td></tr>\n</table>"));
	assert_non_null(strstr(sb.buf, "<pre>Frame::One\n\nFrame::Two\n</pre>"));
	assert_non_null(strstr(sb.buf, "<p>text &amp; &quot;q&quot;</p>"));
	assert_null(strstr(sb.buf, "<img"));
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_parse),
		cmocka_unit_test(test_memory_gc_excess),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_lock_cycles),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_doctor_memory_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
