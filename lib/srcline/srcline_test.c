/* SPDX-License-Identifier: MIT */
/*
 * srcline_test.c - unit tests for lib/srcline: synthetic runtime events
 * (method loads, module loads, IL-to-native maps in both orders) over the
 * committed tests/data/pdb/ assemblies, whose lines the runtime itself
 * printed (tests/data/pdb/src/runtime-*.txt).
 */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "srcline/srcline.h"

#define DATA CT_SRCDIR "/tests/data/pdb/"

struct evb {
	struct nt_metadata md;
	struct nt_event ev;
	uint8_t buf[4096];
	size_t len;
};

static void put(struct evb *e, const void *p, size_t n)
{
	assert_true(e->len + n <= sizeof(e->buf));
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void put64(struct evb *e, uint64_t v)
{
	uint8_t b[8];

	ct_put_le64(b, v);
	put(e, b, 8);
}

static void put32(struct evb *e, uint32_t v)
{
	uint8_t b[4];

	ct_put_le32(b, v);
	put(e, b, 4);
}

static void put16(struct evb *e, uint16_t v)
{
	uint8_t b[2];

	ct_put_le16(b, v);
	put(e, b, 2);
}

static void putstr(struct evb *e, const char *s)
{
	for (; *s; s++)
		put16(e, (uint8_t)*s);
	put16(e, 0);
}

static const struct nt_event *finish(struct evb *e, enum nt_provider prov, uint32_t id)
{
	e->md.provider_kind = prov;
	e->md.event_id = id;
	e->md.version = 0;
	e->ev.meta = &e->md;
	e->ev.payload = e->buf;
	e->ev.payload_len = (uint32_t)e->len;
	e->ev.pointer_size = 8;
	return &e->ev;
}

static int add_module(struct srcline *sl, enum nt_provider prov, uint32_t id, uint64_t mod,
		      const char *path)
{
	struct evb e = { .len = 0 };

	put64(&e, mod);
	put64(&e, 7); /* assembly */
	put32(&e, 0);
	put32(&e, 0);
	putstr(&e, path);
	putstr(&e, "");
	return srcline_add_event(sl, finish(&e, prov, id));
}

static int add_method(struct srcline *sl, enum nt_provider prov, uint32_t id, uint64_t mid,
		      uint64_t mod, uint64_t start, uint32_t size, uint32_t token)
{
	struct evb e = { .len = 0 };

	put64(&e, mid);
	put64(&e, mod);
	put64(&e, start);
	put32(&e, size);
	put32(&e, token);
	put32(&e, 0);
	putstr(&e, "Program");
	putstr(&e, "M");
	putstr(&e, "void ()");
	return srcline_add_event(sl, finish(&e, prov, id));
}

static int add_map(struct srcline *sl, enum nt_provider prov, uint32_t id, uint64_t mid,
		   const uint32_t *il, const uint32_t *nat, uint16_t n)
{
	struct evb e = { .len = 0 };
	uint8_t extent = 0;
	uint16_t i;

	put64(&e, mid);
	put64(&e, 0);
	put(&e, &extent, 1);
	put16(&e, n);
	for (i = 0; i < n; i++)
		put32(&e, il[i]);
	for (i = 0; i < n; i++)
		put32(&e, nat[i]);
	put16(&e, 0);
	return srcline_add_event(sl, finish(&e, prov, id));
}

static int look(struct srcline *sl, uint64_t ip, bool ret, struct pe_srcline *l, uint32_t *il,
		enum srcline_why *why)
{
	return srcline_lookup(sl, ip, ret, l, il, why);
}

/* Thrower (0x06000002) of the Debug build: IL 31 is the throw, line 24. */
static const uint32_t il_thrower[] = { 0xFFFFFFFEu, 0, 1, 31, 0xFFFFFFFDu };
static const uint32_t nat_thrower[] = { 0, 0x10, 0x14, 0x40, 0x60 };

static void test_runtime_order(void **state)
{
	struct srcline *sl;
	struct pe_srcline l;
	enum srcline_why why;
	uint32_t il;

	(void)state;
	assert_int_equal(srcline_new(NULL, &sl), 0);
	assert_int_equal(add_module(sl, NT_PROV_RUNTIME, 152, 0xAA, DATA "lines-debug.dll"), 0);
	/* tier 0 code, its map after it (runtime order) */
	assert_int_equal(add_method(sl, NT_PROV_RUNTIME, 143, 0x77, 0xAA, 0x10000, 0x80,
				    0x06000002), 0);
	assert_int_equal(add_map(sl, NT_PROV_RUNTIME, 190, 0x77, il_thrower, nat_thrower, 5), 0);
	assert_int_equal(look(sl, 0x10045, false, &l, &il, &why), 0);
	assert_int_equal(il, 31);
	assert_int_equal(l.line, 24);
	assert_int_equal(l.column, 13);
	assert_string_equal(l.file, "/src/lines/Program.cs");
	/* a return address at the start of the next range is still inside the call */
	assert_int_equal(look(sl, 0x10040, true, &l, &il, &why), 0);
	assert_int_equal(il, 1);
	assert_int_equal(l.line, 23); /* "if (x > 0)" */
	/* prolog and epilog: no line */
	assert_int_equal(look(sl, 0x10004, false, &l, &il, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_IL);
	assert_int_equal(look(sl, 0x10070, false, &l, &il, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_IL);
	/* outside any method */
	assert_int_equal(look(sl, 0x20000, false, &l, &il, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_METHOD);
	/* tier 1 code of the same method without a map: said */
	assert_int_equal(add_method(sl, NT_PROV_RUNTIME, 143, 0x77, 0xAA, 0x30000, 0x40,
				    0x06000002), 0);
	assert_int_equal(look(sl, 0x30010, false, &l, &il, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_MAP);
	/* and the tier 0 code kept its own map */
	assert_int_equal(look(sl, 0x10045, false, &l, &il, &why), 0);
	srcline_free(sl);
}

static void test_rundown_order(void **state)
{
	static const uint32_t il_work[] = { 0, 18 };
	static const uint32_t nat_work[] = { 0, 0x30 };
	struct srcline *sl;
	struct pe_srcline l;
	enum srcline_why why;
	uint32_t il;

	(void)state;
	assert_int_equal(srcline_new(NULL, &sl), 0);
	/* rundown: the map precedes its DCEnd */
	assert_int_equal(add_map(sl, NT_PROV_RUNDOWN, 150, 0x55, il_work, nat_work, 2), 0);
	assert_int_equal(add_method(sl, NT_PROV_RUNDOWN, 144, 0x55, 0xBB, 0x40000, 0x100,
				    0x06000001), 0);
	assert_int_equal(add_module(sl, NT_PROV_RUNDOWN, 154, 0xBB,
				    DATA "lines-release-embedded.dll"), 0);
	assert_int_equal(look(sl, 0x40031, false, &l, &il, &why), 0);
	assert_int_equal(il, 18);
	assert_int_equal(l.line, 16); /* Release: the runtime printed 16:17 for IL 18 */
	assert_int_equal(l.column, 17);
	srcline_free(sl);
}

static void test_no_pdb(void **state)
{
	static const uint32_t il[] = { 0 };
	static const uint32_t nat[] = { 0 };
	struct srcline *sl;
	struct pe_srcline l;
	enum srcline_why why;
	uint32_t o;

	(void)state;
	assert_int_equal(srcline_new(NULL, &sl), 0);
	/* an assembly with no PDB beside it: the R2R sample */
	assert_int_equal(add_module(sl, NT_PROV_RUNTIME, 152, 1,
				    CT_SRCDIR "/tests/data/pe/lib1.r2r.dll"), 0);
	assert_int_equal(add_method(sl, NT_PROV_RUNTIME, 143, 2, 1, 0x1000, 0x10, 0x06000001), 0);
	assert_int_equal(add_map(sl, NT_PROV_RUNTIME, 190, 2, il, nat, 1), 0);
	/* a module path that does not exist */
	assert_int_equal(add_module(sl, NT_PROV_RUNTIME, 152, 3, "/nonexistent/x.dll"), 0);
	assert_int_equal(add_method(sl, NT_PROV_RUNTIME, 143, 4, 3, 0x2000, 0x10, 0x06000001), 0);
	assert_int_equal(add_map(sl, NT_PROV_RUNTIME, 190, 4, il, nat, 1), 0);
	assert_int_equal(look(sl, 0x1004, false, &l, &o, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_PDB);
	assert_int_equal(look(sl, 0x2004, false, &l, &o, &why), -ENOENT);
	assert_int_equal(why, SRCLINE_NO_MODULE);
	/* a truncated map payload */
	{
		struct evb e = { .len = 0 };

		put64(&e, 9);
		assert_int_equal(srcline_add_event(sl, finish(&e, NT_PROV_RUNTIME, 190)), -EBADMSG);
	}
	srcline_free(sl);
}

/*
 * ReadyToRun code: a rundown body with no JIT map gets its IL offsets from
 * the image's debug info (lines-r2r.dll, see tests/data/pe/README.md); the
 * image's base is learnt from the body's MethodDef entry. srcline_name
 * writes the line into the name (in place too), and leaves a name without
 * one as it is.
 */
static void test_r2r_and_name(void **state)
{
	const uint64_t base = 0x7f0000000000ull;
	const struct pe_method *ms;
	struct pe_bound b[256];
	struct pe_file *pf = NULL;
	struct srcline *sl;
	struct pe_srcline l;
	enum srcline_why why;
	char buf[512], inplace[512];
	uint32_t il, idx, k;
	size_t n, nm, i;

	(void)state;
	assert_int_equal(pe_file_open(DATA "lines-r2r.dll", NULL, &pf), 0);
	assert_int_equal(pe_file_find(pf, "Clrtap.Lines.Driver::CallLoop", &idx, 1, &n), 0);
	assert_int_equal(pe_file_methods(pf, &ms, &nm), 0);
	assert_int_equal(pe_file_r2r_bounds(pf, ms[idx].rf_index, b, ARRAY_SIZE(b), &n), 0);
	assert_int_equal(srcline_new(NULL, &sl), 0);
	assert_int_equal(add_module(sl, NT_PROV_RUNDOWN, 154, 0xCC, DATA "lines-r2r.dll"), 0);
	assert_int_equal(add_method(sl, NT_PROV_RUNDOWN, 144, 0x99, 0xCC,
				    base + ms[idx].entry_rva, ms[idx].code_size, ms[idx].token), 0);
	/* every mapped entry's offset gives the line the PDB has for its IL offset */
	for (i = k = 0; i < n; i++) {
		if (b[i].il >= 0xFFFFFFFDu || (i + 1 < n && b[i + 1].native == b[i].native))
			continue;
		if (look(sl, base + ms[idx].entry_rva + b[i].native, false, &l, &il, &why))
			continue;
		assert_int_equal(il, b[i].il);
		assert_string_equal(l.file, "/src/lines-live/Program.cs");
		if (l.line == 92) {
			assert_int_equal(srcline_name(sl, base + ms[idx].entry_rva + b[i].native, false,
						      "Clrtap.Lines.Driver::CallLoop", buf, sizeof(buf)), 1);
			assert_string_equal(buf, "Clrtap.Lines.Driver::CallLoop in "
					    "/src/lines-live/Program.cs:line 92");
			snprintf(inplace, sizeof(inplace), "Clrtap.Lines.Driver::CallLoop");
			assert_int_equal(srcline_name(sl, base + ms[idx].entry_rva + b[i].native, false,
						      inplace, inplace, sizeof(inplace)), 1);
			assert_string_equal(inplace, buf);
			/* too small a buffer: the name alone, never a cut line */
			assert_int_equal(srcline_name(sl, base + ms[idx].entry_rva + b[i].native, false,
						      "Clrtap.Lines.Driver::CallLoop", buf, 40), 0);
			assert_string_equal(buf, "Clrtap.Lines.Driver::CallLoop");
		}
		k++;
	}
	assert_true(k > 2);
	/* no srcline, or no method: the name as it is */
	assert_int_equal(srcline_name(NULL, 0x1234, false, "A::B", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "A::B");
	assert_int_equal(srcline_name(sl, 0x1234, false, "A::B", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "A::B");
	srcline_free(sl);
	pe_file_close(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtime_order),
		cmocka_unit_test(test_rundown_order),
		cmocka_unit_test(test_no_pdb),
		cmocka_unit_test(test_r2r_and_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
