/* SPDX-License-Identifier: MIT */
/*
 * pdb_test.c - unit tests for the portable PDB reader (lib/pe/pe_pdb.c)
 * against tests/data/pdb/ (see its README.md).
 *
 * The expected file:line:column of each (method token, IL offset) is what
 * the runtime itself printed for the same frames, running the same
 * binaries (StackFrame.GetILOffset/GetFileLineNumber/GetFileColumnNumber of
 * `new StackTrace(true)` and of a caught exception's StackTrace):
 *   Debug:   0x06000001 24 16:17  0x06000004 1 42:9  0x06000002 31 24:13  0x06000004 10 45:13
 *   Release: 0x06000001 18 16:17  0x06000004 0 42:9  0x06000002 26 24:13  0x06000004 8 45:13
 */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "common/strbuf.h"
#include "pe/pdb.h"
#include "pe/pe.h"

#define DATA CT_SRCDIR "/tests/data/pdb/"
#define SRC "/src/lines/Program.cs" /* PathMap of the build */

struct want {
	uint32_t token, il, line, col;
};

static const struct want debug_frames[] = {
	{ 0x06000001, 24, 16, 17 }, /* Work: the StackTrace inside the loop */
	{ 0x06000004, 1, 42, 9 },   /* Main: Work(10) */
	{ 0x06000002, 31, 24, 13 }, /* Thrower: the throw site */
	{ 0x06000004, 10, 45, 13 }, /* Main: Thrower(5) */
};

static const struct want release_frames[] = {
	{ 0x06000001, 18, 16, 17 },
	{ 0x06000004, 0, 42, 9 },
	{ 0x06000002, 26, 24, 13 },
	{ 0x06000004, 8, 45, 13 },
};

static struct pe_pdb *open_for(const char *dll, enum pe_pdb_src src)
{
	struct pe_file *pf = NULL;
	struct pe_pdb *pdb = NULL;

	assert_int_equal(pe_file_open(dll, NULL, &pf), 0);
	assert_int_equal(pe_pdb_open_for(pf, dll, NULL, &pdb), 0);
	assert_int_equal(pe_pdb_source(pdb), src);
	pe_file_close(pf);
	return pdb;
}

static void check_frames(struct pe_pdb *pdb, const struct want *w, size_t n)
{
	struct pe_srcline sl;
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(pe_pdb_line(pdb, w[i].token, w[i].il, &sl), 0);
		assert_string_equal(sl.file, SRC);
		if (sl.line != w[i].line || sl.column != w[i].col)
			fail_msg("0x%08x+%u: %u:%u, the runtime says %u:%u", w[i].token, w[i].il,
				 sl.line, sl.column, w[i].line, w[i].col);
		assert_true(sl.sp_il_offset <= w[i].il);
	}
}

static void test_separate_debug(void **state)
{
	struct pe_pdb *pdb = open_for(DATA "lines-debug.dll", PE_PDB_SRC_FILE);
	struct pe_srcline sl;

	(void)state;
	check_frames(pdb, debug_frames, ARRAY_SIZE(debug_frames));
	/* Work's first sequence point is its opening brace at IL 0 */
	assert_int_equal(pe_pdb_line(pdb, 0x06000001, 0, &sl), 0);
	assert_int_equal(sl.line, 10);
	assert_int_equal(sl.sp_il_offset, 0);
	/* no such method; not a MethodDef token */
	assert_int_equal(pe_pdb_line(pdb, 0x06000063, 0, &sl), -ENOENT);
	assert_int_equal(pe_pdb_line(pdb, 0x02000001, 0, &sl), -EINVAL);
	pe_pdb_close(pdb);
}

static void test_embedded_release(void **state)
{
	struct pe_pdb *pdb = open_for(DATA "lines-release-embedded.dll", PE_PDB_SRC_EMBEDDED);

	(void)state;
	check_frames(pdb, release_frames, ARRAY_SIZE(release_frames));
	pe_pdb_close(pdb);
}

static void test_ids(void **state)
{
	struct pe_file *pf = NULL;
	struct pe_pdb *pdb = open_for(DATA "lines-debug.dll", PE_PDB_SRC_FILE);
	uint8_t id[20];
	char path[256];

	(void)state;
	assert_int_equal(pe_file_open(DATA "lines-debug.dll", NULL, &pf), 0);
	assert_int_equal(pe_file_pdb_id(pf, id, path, sizeof(path)), 0);
	assert_memory_equal(id, pe_pdb_id(pdb), 20);
	assert_string_equal(path, "/src/lines/obj/Debug/net10.0/lines.pdb");
	pe_file_close(pf);
	pe_pdb_close(pdb);
}

/* The Release build's PDB id beside the Debug assembly: refused. */
static void test_mismatch(void **state)
{
	char dir[] = "/tmp/pdbtest.XXXXXX", dll[128], pdbp[128];
	struct strbuf sb = STRBUF_INIT;
	struct pe_file *pf = NULL;
	struct pe_pdb *pdb = NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(dll, sizeof(dll), "%s/lines.dll", dir);
	snprintf(pdbp, sizeof(pdbp), "%s/lines.pdb", dir);
	assert_int_equal(strbuf_read_file(&sb, DATA "lines-debug.dll"), 0);
	f = fopen(dll, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(sb.buf, 1, sb.len, f), sb.len);
	fclose(f);
	strbuf_reset(&sb);
	assert_int_equal(strbuf_read_file(&sb, DATA "lines-debug.pdb"), 0);
	/* flip one byte of the id in the "#Pdb" stream */
	{
		char *p = memmem(sb.buf, sb.len, "#Pdb", 4);
		uint32_t off;

		assert_non_null(p);
		off = ct_le32((const uint8_t *)p - 8);
		assert_true(off + 20 <= sb.len);
		sb.buf[off + 3] ^= 0x5a;
	}
	f = fopen(pdbp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(sb.buf, 1, sb.len, f), sb.len);
	fclose(f);
	assert_int_equal(pe_file_open(dll, NULL, &pf), 0);
	assert_int_equal(pe_pdb_open_for(pf, dll, NULL, &pdb), -ESTALE);
	assert_null(pdb);
	/* and no PDB at all */
	assert_int_equal(unlink(pdbp), 0);
	assert_int_equal(pe_pdb_open_for(pf, dll, NULL, &pdb), -ENOENT);
	pe_file_close(pf);
	unlink(dll);
	rmdir(dir);
	strbuf_release(&sb);
}

/* Every prefix and a sweep of bit flips: clean errors, never a crash. */
static void test_damage(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct pe_srcline sl;
	size_t i;

	(void)state;
	assert_int_equal(strbuf_read_file(&sb, DATA "lines-debug.pdb"), 0);
	for (i = 0; i < sb.len; i += 5) {
		struct pe_pdb *pdb = NULL;

		if (pe_pdb_open_mem(sb.buf, i, &pdb) == 0) {
			(void)pe_pdb_line(pdb, 0x06000001, 24, &sl);
			pe_pdb_close(pdb);
		}
	}
	for (i = 0; i < sb.len; i += 3) {
		struct pe_pdb *pdb = NULL;
		uint32_t t;

		sb.buf[i] ^= 0x41;
		if (pe_pdb_open_mem(sb.buf, sb.len, &pdb) == 0) {
			for (t = 1; t <= 5; t++)
				(void)pe_pdb_line(pdb, 0x06000000 | t, 40, &sl);
			pe_pdb_close(pdb);
		}
		sb.buf[i] ^= 0x41;
	}
	strbuf_release(&sb);
}

/*
 * ReadyToRun debug info (lines-r2r.dll: tests/fixtures/lines published
 * ReadyToRun): Driver::CallLoop's bounds decode, sorted by native offset,
 * and its IL offsets map through the PDB to the lines of its two calls
 * (89: Probed.Target, 92: Thrower.ThrowIt), as the runtime printed them.
 */
static void test_r2r_bounds(void **state)
{
	struct pe_file *pf = NULL;
	struct pe_pdb *pdb = NULL;
	const struct pe_method *ms;
	struct pe_bound b[256];
	struct pe_srcline sl;
	bool l89 = false, l92 = false;
	uint32_t idx;
	size_t n, nm, i;

	(void)state;
	assert_int_equal(pe_file_open(DATA "lines-r2r.dll", NULL, &pf), 0);
	assert_true(pe_file_info(pf)->is_r2r);
	assert_int_equal(pe_pdb_open_for(pf, DATA "lines-r2r.dll", NULL, &pdb), 0);
	assert_int_equal(pe_file_find(pf, "Clrtap.Lines.Driver::CallLoop", &idx, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pe_file_methods(pf, &ms, &nm), 0);
	assert_int_equal(pe_file_r2r_bounds(pf, ms[idx].rf_index, b, ARRAY_SIZE(b), &n), 0);
	assert_true(n > 4);
	for (i = 0; i < n; i++) {
		if (i)
			assert_true(b[i].native >= b[i - 1].native);
		assert_true(b[i].native < ms[idx].code_size);
		if (b[i].il >= 0xFFFFFFFDu)
			continue;
		if (pe_pdb_line(pdb, ms[idx].token, b[i].il, &sl) == 0) {
			l89 |= sl.line == 89;
			l92 |= sl.line == 92;
		}
	}
	assert_true(l89 && l92);
	/* a cap below the count is said, never cut silently */
	assert_int_equal(pe_file_r2r_bounds(pf, ms[idx].rf_index, b, 2, &n), -EFBIG);
	/* an index past the table: none */
	assert_int_equal(pe_file_r2r_bounds(pf, 1u << 30, b, ARRAY_SIZE(b), &n), -ENOENT);
	pe_pdb_close(pdb);
	pe_file_close(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_separate_debug),
		cmocka_unit_test(test_embedded_release),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_mismatch),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_r2r_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
