/* SPDX-License-Identifier: MIT */
/*
 * pe_test.c - unit tests for lib/pe against committed samples
 * (tests/data/pe, described in tests/data/pe/README.md) and the framework
 * installed on this machine.
 *
 * Expected values come from independent sources, recorded next to each
 * assertion:
 *  - crossgen2 10.0.12's own perf maps of the samples it compiled
 *    (tests/data/pe/src/, files ending .r2rmap.txt: "RVA size name");
 *  - a throwaway C# program using System.Reflection.Metadata and
 *    System.Reflection.PortableExecutable, with its own NativeArray
 *    decoder ("xcheck" below), run on the same files.
 */
#include "common/compat.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "pe/pe.h"

#define DATA CT_SRCDIR "/tests/data/pe/"
#define FW_ROOT "/usr/share/dotnet/shared/Microsoft.NETCore.App"

static struct pe_file *open_ok(const char *path)
{
	struct pe_file *pf = NULL;

	assert_int_equal(pe_file_open(path, NULL, &pf), 0);
	assert_non_null(pf);
	return pf;
}

static const struct pe_method *find_one(struct pe_file *pf, const char *pattern)
{
	const struct pe_method *ms;
	uint32_t idx[4];
	size_t n, nm;

	assert_int_equal(pe_file_methods(pf, &ms, &nm), 0);
	assert_int_equal(pe_file_find(pf, pattern, idx, ARRAY_SIZE(idx), &n), 0);
	if (n != 1)
		fail_msg("%s: %zu matches", pattern, n);
	return &ms[idx[0]];
}

static size_t count_matches(struct pe_file *pf, const char *pattern)
{
	size_t n = 0;

	assert_int_equal(pe_file_find(pf, pattern, NULL, 0, &n), 0);
	return n;
}

static void assert_bytes_at(struct pe_file *pf, uint64_t off, const char *hex)
{
	size_t len, i, n = strlen(hex) / 2;
	const uint8_t *b = pe_file_bytes(pf, &len);
	char got[64];

	assert_true(off + n <= len);
	for (i = 0; i < n && i < 31; i++)
		snprintf(got + 2 * i, 3, "%02x", b[off + i]);
	assert_string_equal(got, hex);
}

/* ---- lib1.r2r.dll: crossgen2 output of tests/data/pe/src/Lib1.cs ---- */

static void test_lib1_headers(void **state)
{
	struct pe_file *pf = open_ok(DATA "lib1.r2r.dll");
	const struct pe_info *in = pe_file_info(pf);
	uint32_t rva, size;
	uint64_t off;

	assert_int_equal(in->machine_raw, 0xFD1D); /* 0x8664 ^ 0x7B79 */
	assert_int_equal(in->machine, PE_MACHINE_AMD64);
	assert_int_equal(in->os, PE_OS_LINUX);
	assert_true(in->pe32plus);
	assert_true(in->has_cli);
	assert_int_equal(in->cli_flags & 0x4, 0x4); /* IL_LIBRARY */
	assert_string_equal(in->assembly_name, "lib1");
	assert_true(in->is_r2r);
	assert_false(in->composite);
	assert_int_equal(in->r2r_major, 16); /* crossgen2 10.0.12 writes 16.0 */
	assert_int_equal(in->r2r_minor, 0);
	assert_int_equal(in->r2r_flags, 0x4b);
	assert_int_equal(in->ncomponents, 1);
	/* xcheck: section 102 at rva 0x3133c size 132 = 11 x 12-byte entries */
	assert_int_equal(pe_file_r2r_section(pf, 0, PE_R2R_RUNTIME_FUNCTIONS, &rva, &size), 0);
	assert_int_equal(rva, 0x3133c);
	assert_int_equal(size, 132);
	assert_int_equal(pe_file_r2r_section(pf, 0, PE_R2R_HOT_COLD_MAP, &rva, &size), -ENOENT);
	/* metadata rows (xcheck: typedefs 5, methoddefs 11, typerefs 17, memberrefs 19) */
	assert_int_equal(pe_md_rows(pf, PE_MD_TYPEDEF), 5);
	assert_int_equal(pe_md_rows(pf, PE_MD_METHODDEF), 11);
	assert_int_equal(pe_md_rows(pf, PE_MD_TYPEREF), 17);
	assert_int_equal(pe_md_rows(pf, PE_MD_MEMBERREF), 19);
	assert_int_equal(pe_md_rows(pf, PE_MD_ASSEMBLYREF), 1);
	assert_int_equal(pe_file_rva_to_offset(pf, 0x10870, &off), 0);
	assert_int_equal(off, 0x870);
	assert_int_equal(pe_file_offset_to_rva(pf, 0x870, &rva), 0);
	assert_int_equal(rva, 0x10870);
	assert_int_equal(pe_file_rva_to_offset(pf, 0x7fffffff, &off), -ENOENT);
	pe_file_close(pf);
}

static void test_lib1_names(void **state)
{
	struct pe_file *pf = open_ok(DATA "lib1.r2r.dll");
	struct strbuf sb = STRBUF_INIT;
	uint32_t v;

	assert_int_equal(pe_md_type_name(pf, 0x02000002, &sb), 0);
	assert_string_equal(sb.buf, "Lib1.Calc");
	strbuf_reset(&sb);
	/* nested types use '+' */
	/* row order: <Module>, Calc, Box`1, Calc+Inner, Calc+Inner+Deep */
	assert_int_equal(pe_md_type_name(pf, 0x02000004, &sb), 0);
	assert_string_equal(sb.buf, "Lib1.Calc+Inner");
	strbuf_reset(&sb);
	assert_int_equal(pe_md_type_name(pf, 0x02000005, &sb), 0);
	assert_string_equal(sb.buf, "Lib1.Calc+Inner+Deep");
	strbuf_reset(&sb);
	assert_int_equal(pe_md_type_name(pf, 0x02000003, &sb), 0);
	assert_string_equal(sb.buf, "Lib1.Box`1");
	strbuf_reset(&sb);
	assert_int_equal(pe_md_method_name(pf, 0x0600000b, &sb), 0);
	assert_string_equal(sb.buf, "Lib1.Calc+Inner+Deep::First");
	strbuf_reset(&sb);
	assert_int_equal(pe_md_type_name(pf, 0x02000099, &sb), -ENOENT);
	/* Module name, GenericParam of Box`1 */
	assert_int_equal(pe_md_get(pf, PE_MD_MODULE, 1, 1, &v), 0);
	assert_string_equal(pe_md_string(pf, v), "lib1.dll");
	assert_int_equal(pe_md_get(pf, PE_MD_GENERICPARAM, 1, 3, &v), 0);
	assert_string_equal(pe_md_string(pf, v), "T");
	assert_int_equal(pe_md_get(pf, PE_MD_TYPEDEF, 2, 3, &v), 0);
	assert_int_equal(v >> 24, PE_MD_TYPEREF); /* Calc extends [System.Runtime]System.Object */
	assert_int_equal(pe_md_type_name(pf, v, &sb), 0);
	assert_string_equal(sb.buf, "System.Object");
	assert_int_equal(pe_md_method_owner(pf, 4), 2); /* Pick is Calc's */
	/* MemberRefs: parent a nested TypeRef; parent a TypeSpec (field ref) */
	{
		struct pe_sig *s;

		strbuf_reset(&sb);
		assert_int_equal(pe_md_method_name(pf, 0x0A000003, &sb), 0);
		assert_string_equal(sb.buf, "System.Diagnostics.DebuggableAttribute::.ctor");
		assert_int_equal(pe_md_method_sig(pf, 0x0A000003, &s), 0);
		assert_string_equal(s->text, "(System.Diagnostics.DebuggableAttribute+DebuggingModes)");
		assert_int_equal(s->ret.et, PE_ET_VOID);
		assert_int_equal(s->params[0].token >> 24, PE_MD_TYPEREF);
		pe_sig_free(s);
		strbuf_reset(&sb);
		assert_int_equal(pe_md_method_name(pf, 0x0A000011, &sb), 0);
		assert_string_equal(sb.buf, "Lib1.Box`1[!0]::Value");
		assert_int_equal(pe_md_method_sig(pf, 0x0A000011, &s), -EBADMSG); /* a field */
		strbuf_reset(&sb);
		assert_int_equal(pe_md_type_name(pf, 0x1B000001, &sb), 0);
		assert_string_equal(sb.buf, "Lib1.Box`1[!0]");
	}
	strbuf_release(&sb);
	pe_file_close(pf);
}

static void test_lib1_methods(void **state)
{
	struct pe_file *pf = open_ok(DATA "lib1.r2r.dll");
	const struct pe_method *ms, *m;
	const struct pe_range *r;
	size_t n;

	assert_int_equal(pe_file_methods(pf, &ms, &n), 0);
	/*
	 * crossgen2's lib1.ni.r2rmap lists 11 methods; xcheck: 7 in
	 * MethodDefEntryPoints (1 with fixups) + 4 InstanceMethodEntryPoints.
	 */
	assert_int_equal(n, 11);
	/* r2rmap: 00010870 35 System.Int64 Lib1.Calc::Fibonacci(System.Int32) */
	m = find_one(pf, "*::Fibonacci*");
	assert_string_equal(m->name, "Lib1.Calc::Fibonacci");
	assert_string_equal(m->sig, "(int32)");
	assert_int_equal(m->token, 0x06000001);
	assert_int_equal(m->entry_rva, 0x10870);
	assert_int_equal(m->code_size, 0x35);
	assert_int_equal(m->entry_offset, 0x870);
	assert_int_equal(m->flags, 0);
	/* xcheck: first bytes at 0x870 = 55415753488d6c24 (push rbp; push r15; ...) */
	assert_bytes_at(pf, m->entry_offset, "55415753488d6c24");
	/* r2rmap: 000108C0 2D System.String Lib1.Calc::Join(String, String[], Int32&) */
	m = find_one(pf, "Lib1.Calc::Join(string, string[], int32&)");
	assert_int_equal(m->entry_rva, 0x108c0);
	assert_int_equal(m->code_size, 0x2d);
	assert_int_equal(m->flags, PE_METHOD_FIXUPS); /* xcheck: fix 1 */
	assert_bytes_at(pf, m->entry_offset, "53488bde8b7a0801");
	m = find_one(pf, "*Deep::First*");
	assert_string_equal(m->name, "Lib1.Calc+Inner+Deep::First");
	assert_int_equal(m->entry_rva, 0x10920);
	assert_int_equal(m->code_size, 0x0f);
	/* generic code from InstanceMethodEntryPoints */
	m = find_one(pf, "Lib1.Box`1[System.__Canon]::Set*");
	assert_string_equal(m->sig, "(System.__Canon)");
	assert_int_equal(m->entry_rva, 0x10940);
	assert_int_equal(m->code_size, 0x0c);
	assert_int_equal(m->token, 0x06000007);
	assert_true(m->flags & PE_METHOD_INSTANCE);
	m = find_one(pf, "Lib1.Calc::Pick*");
	assert_string_equal(m->name, "Lib1.Calc::Pick[System.__Canon]");
	assert_string_equal(m->sig, "(System.__Canon, System.__Canon, bool)");
	assert_int_equal(m->entry_rva, 0x10960);
	assert_int_equal(m->code_size, 0x0a);
	assert_int_equal(count_matches(pf, "Lib1.Calc::*"), 5);
	assert_int_equal(count_matches(pf, "*::.ctor"), 3);
	assert_int_equal(count_matches(pf, "*"), 11);
	assert_int_equal(count_matches(pf, "Nope::*"), 0);

	/* address -> method */
	assert_int_equal(pe_file_lookup_rva(pf, 0x10870 + 0x20, &m, &r), 0);
	assert_string_equal(m->name, "Lib1.Calc::Fibonacci");
	assert_int_equal(r->kind, PE_RANGE_MAIN);
	assert_int_equal(pe_file_lookup_rva(pf, 0x10870 + 0x34, &m, NULL), 0);
	assert_string_equal(m->name, "Lib1.Calc::Fibonacci");
	/* 0x108a5..0x108b0 is alignment padding between methods */
	assert_int_equal(pe_file_lookup_rva(pf, 0x10870 + 0x35, &m, NULL), -ENOENT);
	assert_int_equal(pe_file_lookup_rva(pf, 0x1086f, &m, NULL), -ENOENT);
	assert_int_equal(pe_file_lookup_offset(pf, 0x8b3, &m, NULL), 0);
	assert_string_equal(m->name, "Lib1.Calc::Add");
	pe_file_close(pf);
}

static void test_lib1_sigs(void **state)
{
	struct pe_file *pf = open_ok(DATA "lib1.r2r.dll");
	const struct pe_method *m;
	struct pe_sig *s;

	m = find_one(pf, "Lib1.Calc::Join*");
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_true(s->has_this); /* instance method */
	assert_int_equal(s->callconv, 0x20);
	assert_int_equal(s->nparams, 3);
	assert_int_equal(s->ret.et, PE_ET_STRING);
	assert_int_equal(s->params[0].et, PE_ET_STRING);
	assert_string_equal(s->param_names[0], "a");
	assert_int_equal(s->params[1].et, PE_ET_SZARRAY);
	assert_int_equal(s->params[1].elem_et, PE_ET_STRING);
	assert_string_equal(s->params[1].name, "string[]");
	assert_string_equal(s->param_names[1], "parts");
	assert_int_equal(s->params[2].et, PE_ET_I4);
	assert_true(s->params[2].byref);
	assert_string_equal(s->params[2].name, "int32&");
	assert_string_equal(s->param_names[2], "count");
	assert_string_equal(s->text, "(string, string[], int32&)");
	pe_sig_free(s);

	m = find_one(pf, "Lib1.Calc::Fibonacci*");
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_false(s->has_this); /* static */
	assert_int_equal(s->ret.et, PE_ET_I8);
	assert_int_equal(s->nparams, 1);
	assert_int_equal(s->params[0].et, PE_ET_I4);
	assert_string_equal(s->param_names[0], "n");
	pe_sig_free(s);

	m = find_one(pf, "*::Scale*");
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_true(s->has_this);
	assert_int_equal(s->ret.et, PE_ET_R8);
	assert_int_equal(s->params[0].et, PE_ET_R8);
	assert_int_equal(s->params[1].et, PE_ET_R4);
	pe_sig_free(s);

	/* generic method: metadata sig has MVAR; the instance substitutes __Canon */
	assert_int_equal(pe_md_method_sig(pf, 0x06000004, &s), 0);
	assert_int_equal(s->callconv, PE_CALLCONV_GENERIC);
	assert_int_equal(s->generic_count, 1);
	assert_int_equal(s->ret.et, PE_ET_MVAR);
	assert_string_equal(s->text, "(!!0, !!0, bool)");
	assert_int_equal(s->params[2].et, PE_ET_BOOLEAN);
	pe_sig_free(s);
	m = find_one(pf, "Lib1.Calc::Pick*");
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_int_equal(s->params[0].et, PE_ET_CANON_ZAPSIG);
	assert_string_equal(s->params[0].name, "System.__Canon");
	assert_string_equal(s->param_names[0], "a");
	pe_sig_free(s);
	/* generic type: VAR in the metadata */
	assert_int_equal(pe_md_method_sig(pf, 0x06000007, &s), 0);
	assert_string_equal(s->text, "(!0)");
	assert_int_equal(s->params[0].et, PE_ET_VAR);
	assert_int_equal(s->params[0].number, 0);
	pe_sig_free(s);
	pe_file_close(pf);
}

/* ---- app.r2r.dll: funclets; app-hotcold.r2r.dll: hot/cold split ---- */

static void test_funclets(void **state)
{
	struct pe_file *pf = open_ok(DATA "app.r2r.dll");
	const struct pe_method *m, *m2;
	const struct pe_range *rs, *r;
	size_t nr;

	/* r2rmap: 00010AE0 D6 System.Int32 App.Program::Guarded(System.Int32) */
	m = find_one(pf, "App.Program::Guarded(int32)");
	assert_int_equal(m->entry_rva, 0x10ae0);
	assert_int_equal(m->code_size, 0xd6);
	/* body + catch filter + catch + finally */
	assert_int_equal(m->nranges, 4);
	assert_int_equal(pe_file_ranges(pf, &rs, &nr), 0);
	assert_int_equal(nr, 5);
	r = &rs[m->first_range];
	assert_int_equal(r[0].kind, PE_RANGE_MAIN);
	assert_int_equal(r[0].end_rva - r[0].begin_rva, 0x5e);
	assert_int_equal(r[1].kind, PE_RANGE_FUNCLET);
	assert_int_equal(r[1].begin_rva, 0x10b3e);
	assert_int_equal(r[2].kind, PE_RANGE_FUNCLET);
	assert_int_equal(r[3].kind, PE_RANGE_FUNCLET);
	assert_int_equal(r[3].end_rva, 0x10bb6);
	assert_int_equal(pe_file_lookup_rva(pf, 0x10b80, &m2, &r), 0);
	assert_ptr_equal(m2, m);
	assert_int_equal(r->kind, PE_RANGE_FUNCLET);
	/* xcheck: Main rid 2 rf 4 rva 0x10bc0-0x10d8b, bytes 554157534883ec10 */
	m = find_one(pf, "App.Program::Main(string[])");
	assert_int_equal(m->rf_index, 4);
	assert_int_equal(m->code_size, 0x1cb);
	assert_bytes_at(pf, m->entry_offset, "554157534883ec10");
	pe_file_close(pf);
}

static void test_hot_cold(void **state)
{
	struct pe_file *pf = open_ok(DATA "app-hotcold.r2r.dll");
	const struct pe_method *m, *m2;
	const struct pe_range *rs, *r;
	uint32_t rva, size;
	size_t nr;

	assert_int_equal(pe_file_r2r_section(pf, 0, PE_R2R_HOT_COLD_MAP, &rva, &size), 0);
	assert_int_equal(size, 8); /* one {cold, hot} pair */
	/* r2rmap (hot part only): 00010AF0 5E ... Guarded */
	m = find_one(pf, "App.Program::Guarded*");
	assert_int_equal(m->entry_rva, 0x10af0);
	assert_int_equal(m->code_size, 0xd6); /* same total as unsplit */
	assert_int_equal(m->nranges, 4);
	assert_int_equal(pe_file_ranges(pf, &rs, &nr), 0);
	r = &rs[m->first_range];
	assert_int_equal(r[0].end_rva - r[0].begin_rva, 0x5e);
	assert_int_equal(r[1].kind, PE_RANGE_COLD);
	assert_int_equal(r[1].begin_rva, 0x116d0);
	assert_int_equal(r[3].kind, PE_RANGE_COLD);
	assert_int_equal(pe_file_lookup_rva(pf, 0x11710, &m2, &r), 0);
	assert_ptr_equal(m2, m);
	assert_int_equal(r->kind, PE_RANGE_COLD);
	/* Main follows the hot part, not the cold ones */
	m = find_one(pf, "App.Program::Main*");
	assert_int_equal(m->entry_rva, 0x10b50);
	assert_int_equal(m->code_size, 0x1cb);
	assert_int_equal(m->nranges, 1);
	pe_file_close(pf);
}

/* ---- composite image built by crossgen2 --composite from lib1 + app ---- */

static void test_composite(void **state)
{
	struct pe_file *pf = open_ok(DATA "composite/appcomp.r2r.dll"), *st;
	const struct pe_info *in = pe_file_info(pf);
	const struct pe_method *ms, *m;
	struct pe_open_opts o = { .flags = PE_OPEN_NO_RESOLVE };
	uint32_t rva, size;
	size_t n;

	assert_true(in->is_r2r);
	assert_true(in->composite);
	assert_true(in->r2r_via_export); /* RTR_HEADER export */
	assert_int_equal(in->r2r_flags, 0x48); /* no flag says "composite" */
	assert_int_equal(in->ncomponents, 2);
	assert_int_equal(pe_file_r2r_section(pf, PE_COMPONENT_GLOBAL, PE_R2R_COMPONENT_ASSEMBLIES,
					     &rva, &size), 0);
	assert_int_equal(size, 32);
	assert_int_equal(pe_file_r2r_section(pf, 0, PE_R2R_METHODDEF_ENTRY_POINTS, &rva, &size), 0);
	assert_int_equal(pe_file_r2r_section(pf, 1, PE_R2R_METHODDEF_ENTRY_POINTS, &rva, &size), 0);
	assert_int_equal(pe_file_methods(pf, &ms, &n), 0);
	/* appcomp.ni.r2rmap lists 16 methods */
	assert_int_equal(n, 16);
	/* r2rmap: 00010D50 35 System.Int64 Lib1.Calc::Fibonacci(System.Int32) */
	m = find_one(pf, "*::Fibonacci(int32)");
	assert_int_equal(m->entry_rva, 0x10d50);
	assert_int_equal(m->code_size, 0x35);
	assert_int_equal(m->component, 0);
	assert_string_equal(m->module, "lib1");
	/* r2rmap: 00010B10 D6 System.Int32 App.Program::Guarded(System.Int32) */
	m = find_one(pf, "App.Program::Guarded(int32)");
	assert_int_equal(m->entry_rva, 0x10b10);
	assert_int_equal(m->code_size, 0xd6);
	assert_int_equal(m->component, 1);
	/* r2rmap: 00010E20 04 Lib1.Box`1[System.Int32]::Set(System.Int32) */
	m = find_one(pf, "Lib1.Box`1[int32]::Set*");
	assert_string_equal(m->sig, "(int32)");
	assert_int_equal(m->entry_rva, 0x10e20);
	assert_int_equal(m->code_size, 4);
	pe_file_close(pf);

	/* the component stub: no code, names its owner */
	st = open_ok(DATA "composite/lib1.dll");
	in = pe_file_info(st);
	assert_true(in->component);
	assert_string_equal(in->owner_composite, "appcomp.r2r.dll");
	assert_int_equal(pe_file_methods(st, &ms, &n), -EPROTO);
	pe_file_close(st);

	/* without the component IL files: the code is there, names are not */
	assert_int_equal(pe_file_open(DATA "composite/appcomp.r2r.dll", &o, &pf), 0);
	assert_int_equal(pe_file_methods(pf, &ms, &n), 0);
	assert_int_equal(n, 16);
	assert_int_equal(pe_file_lookup_rva(pf, 0x10d60, &m, NULL), 0);
	assert_true(m->flags & PE_METHOD_UNRESOLVED);
	assert_int_equal(m->token, 0x06000001);
	assert_int_equal(m->code_size, 0x35);
	pe_file_close(pf);
}

/* ---- committed framework file (MIT): System.Net.WebHeaderCollection 10.0.12 ---- */

static void test_webheader(void **state)
{
	struct pe_file *pf = open_ok(DATA "System.Net.WebHeaderCollection.dll");
	const struct pe_method *ms, *m;
	const struct pe_range *rs;
	size_t n, nr, i, nfix = 0, ninst = 0;

	assert_int_equal(pe_file_methods(pf, &ms, &n), 0);
	/*
	 * xcheck: runtime_functions 62, methoddef_entrypoints 59 (42 with
	 * fixups), instance_entrypoints 1.
	 */
	assert_int_equal(n, 60);
	for (i = 0; i < n; i++) {
		if (ms[i].flags & PE_METHOD_INSTANCE)
			ninst++;
		else if (ms[i].flags & PE_METHOD_FIXUPS)
			nfix++;
	}
	assert_int_equal(ninst, 1);
	assert_int_equal(nfix, 42);
	assert_int_equal(pe_file_ranges(pf, &rs, &nr), 0);
	assert_int_equal(nr, 62); /* every runtime function belongs to a method */
	/* xcheck: rid 22 rf 18 rva 0x11e40-0x11ed1 off 0x1e40 bytes 5541574156535048 */
	m = find_one(pf, "System.Net.WebHeaderCollection::Set(string, string)");
	assert_int_equal(m->token, 0x06000016);
	assert_int_equal(m->entry_rva, 0x11e40);
	assert_int_equal(m->code_size, 0x91);
	assert_int_equal(m->entry_offset, 0x1e40);
	assert_bytes_at(pf, m->entry_offset, "5541574156535048");
	/* enum parameter from a TypeDef of this module: underlying int32 */
	m = find_one(pf, "System.Net.WebHeaderCollection::Set(System.Net.HttpRequestHeader, string)");
	{
		struct pe_sig *s;

		assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
		assert_int_equal(s->params[0].et, PE_ET_VALUETYPE);
		assert_true(s->params[0].valuetype);
		assert_int_equal(s->params[0].enum_et, PE_ET_I4);
		assert_int_equal(s->params[0].token >> 24, PE_MD_TYPEDEF);
		pe_sig_free(s);
	}
	/* xcheck: rid 1 System.SR::GetUsingResourceKeysSwitchValue rva 0x11930 */
	assert_int_equal(pe_file_lookup_rva(pf, 0x11931, &m, NULL), 0);
	assert_string_equal(m->name, "System.SR::GetUsingResourceKeysSwitchValue");
	/* the one instance entry: generic method over an inline array type */
	m = find_one(pf, "<PrivateImplementationDetails>::InlineArrayAsReadOnlySpan*");
	assert_string_equal(m->name, "<PrivateImplementationDetails>::InlineArrayAsReadOnlySpan"
				     "[<>y__InlineArray2`1[System.__Canon],System.__Canon]");
	assert_int_equal(m->entry_rva, 0x14870);
	pe_file_close(pf);
}

/* ---- the framework on this machine ---- */

static int fw_dir(char *buf, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(FW_ROOT);
	int found = 0;

	if (!d)
		return 0;
	/* the first version directory, in any order; there is one on this box */
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(buf, len, FW_ROOT "/%s", de->d_name);
		found = 1;
		break;
	}
	closedir(d);
	return found;
}

static void test_corelib(void **state)
{
	char dir[512], path[600];
	struct pe_file *pf;
	const struct pe_method *ms, *m, *m2;
	const struct pe_range *r;
	struct pe_sig *s;
	size_t n, i;
	bool is_10012;

	if (!fw_dir(dir, sizeof(dir)))
		fail_msg("no runtime under " FW_ROOT);
	is_10012 = strstr(dir, "/10.0.12") != NULL;
	snprintf(path, sizeof(path), "%s/System.Private.CoreLib.dll", dir);
	pf = open_ok(path);
	assert_true(pe_file_info(pf)->is_r2r);
	assert_string_equal(pe_file_info(pf)->assembly_name, "System.Private.CoreLib");
	assert_int_equal(pe_file_methods(pf, &ms, &n), 0);
	if (is_10012) {
		/*
		 * 10.0.12, xcheck: runtime_functions 50482, methoddef_entrypoints
		 * 21579, instance_entrypoints 27076 (21579 + 27076 = 48655).
		 */
		assert_int_equal(n, 48655);
	} else {
		assert_true(n > 20000);
	}
	m = find_one(pf, "System.String::Concat(string, string)");
	assert_false(m->flags & PE_METHOD_INSTANCE);
	assert_true(m->code_size > 16);
	assert_int_not_equal(m->entry_offset, UINT64_MAX);
	if (is_10012) {
		/* xcheck: rid 2287 rf 1719 rva 0x157590-0x15767c off 0x147590 */
		assert_int_equal(m->token, 0x060008ef);
		assert_int_equal(m->entry_rva, 0x157590);
		assert_int_equal(m->code_size, 0xec);
		assert_int_equal(m->entry_offset, 0x147590);
		assert_bytes_at(pf, m->entry_offset, "5541574156415541");
	}
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_false(s->has_this);
	assert_int_equal(s->nparams, 2);
	assert_int_equal(s->ret.et, PE_ET_STRING);
	assert_int_equal(s->params[0].et, PE_ET_STRING);
	assert_int_equal(s->params[1].et, PE_ET_STRING);
	assert_string_equal(s->text, "(string, string)");
	pe_sig_free(s);
	/* an address in the middle of its code names it */
	assert_int_equal(pe_file_lookup_rva(pf, m->entry_rva + m->code_size / 2, &m2, &r), 0);
	assert_ptr_equal(m2, m);
	assert_int_equal(pe_file_lookup_offset(pf, m->entry_offset + 1, &m2, NULL), 0);
	assert_ptr_equal(m2, m);
	/* overloads are listed with their signatures */
	assert_true(count_matches(pf, "System.String::Concat*") >= 15);
	assert_true(count_matches(pf, "System.String::Concat(object, object)") == 1);
	/* instance method: HASTHIS */
	m = find_one(pf, "System.String::Equals(string)");
	assert_int_equal(pe_file_method_sig(pf, m, &s), 0);
	assert_true(s->has_this);
	assert_int_equal(s->ret.et, PE_ET_BOOLEAN);
	pe_sig_free(s);
	/* every range's file offset is inside the file and maps back */
	for (i = 0; i < n; i++) {
		uint32_t rva;

		if (ms[i].flags & PE_METHOD_SHARED)
			continue;
		assert_int_equal(pe_file_offset_to_rva(pf, ms[i].entry_offset, &rva), 0);
		assert_int_equal(rva, ms[i].entry_rva);
	}
	pe_file_close(pf);
}

/* ---- corrupt input ---- */

static void test_corrupt_files(void **state)
{
	static const struct {
		const char *name;
		int open_err;
		int methods_err;
	} cases[] = {
		{ "lib1-trunc-1024.dll", -EBADMSG, 0 },
		{ "lib1-trunc-3000.dll", -EBADMSG, 0 },
		{ "lib1-bad-lfanew.dll", -EBADMSG, 0 },
		{ "lib1-md-rows.dll", -EBADMSG, 0 },
		{ "lib1-md-sig.dll", -EBADMSG, 0 },
		{ "lib1-r2r-nsecs.dll", -EBADMSG, 0 },
		{ "lib1-nativearray-count.dll", 0, -EBADMSG },
		{ "lib1-rf-end.dll", 0, 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strbuf path = STRBUF_INIT;
		const struct pe_method *ms;
		struct pe_file *pf = NULL;
		size_t n;
		int err;

		assert_int_equal(strbuf_addf(&path, DATA "corrupt/%s", cases[i].name), 0);
		err = pe_file_open(path.buf, NULL, &pf);
		if (err != cases[i].open_err)
			fail_msg("%s: open %d", cases[i].name, err);
		if (!err) {
			err = pe_file_methods(pf, &ms, &n);
			if (err != cases[i].methods_err)
				fail_msg("%s: methods %d", cases[i].name, err);
			pe_file_close(pf);
		} else {
			assert_null(pf);
		}
		strbuf_release(&path);
	}
}

static void test_rf_end_before_begin(void **state)
{
	struct pe_file *pf = open_ok(DATA "corrupt/lib1-rf-end.dll");
	const struct pe_method *m;

	/* first runtime function's end RVA was set to 1: an empty range */
	m = find_one(pf, "*::Fibonacci*");
	assert_int_equal(m->code_size, 0);
	assert_int_equal(pe_file_lookup_rva(pf, 0x10870, &m, NULL), -ENOENT);
	assert_int_equal(pe_file_lookup_rva(pf, 0x108b0, &m, NULL), 0);
	pe_file_close(pf);
}

static void test_truncations(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	size_t cut;

	assert_int_equal(strbuf_read_file(&sb, DATA "lib1.r2r.dll"), 0);
	/* every prefix must fail cleanly or work; none may crash */
	for (cut = 0; cut < sb.len; cut += 7) {
		struct pe_file *pf = NULL;
		const struct pe_method *ms;
		size_t n;

		if (pe_file_open_mem(sb.buf, cut, NULL, &pf) == 0) {
			(void)pe_file_methods(pf, &ms, &n);
			pe_file_close(pf);
		}
	}
	strbuf_release(&sb);
}

static void test_bit_flips(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	unsigned bit;

	assert_int_equal(strbuf_read_file(&sb, DATA "app.r2r.dll"), 0);
	for (i = 0; i < sb.len; i += 3) {
		for (bit = 0; bit < 8; bit += 3) {
			struct pe_file *pf = NULL;
			const struct pe_method *ms;
			const struct pe_method *m;
			size_t n, k;

			sb.buf[i] ^= (char)(1 << bit);
			if (pe_file_open_mem(sb.buf, sb.len, NULL, &pf) == 0) {
				if (pe_file_methods(pf, &ms, &n) == 0)
					for (k = 0; k < n; k++)
						(void)pe_file_lookup_rva(pf, ms[k].entry_rva, &m, NULL);
				pe_file_close(pf);
			}
			sb.buf[i] ^= (char)(1 << bit);
		}
	}
	strbuf_release(&sb);
}

static void test_caps_and_args(void **state)
{
	struct pe_open_opts o = { .max_file_size = 1000 };
	struct pe_file *pf = NULL;
	static const uint8_t not_pe[64] = { 'E', 'L', 'F' };

	assert_int_equal(pe_file_open(DATA "lib1.r2r.dll", &o, &pf), -EFBIG);
	assert_null(pf);
	assert_int_equal(pe_file_open(DATA "does-not-exist.dll", NULL, &pf), -ENOENT);
	assert_int_equal(pe_file_open(DATA, NULL, &pf), -EINVAL); /* a directory */
	assert_int_equal(pe_file_open_mem(not_pe, sizeof(not_pe), NULL, &pf), -EPROTO);
	assert_int_equal(pe_file_open(NULL, NULL, &pf), -EINVAL);
	pe_file_close(NULL);
	/* names cap: the method table does not fit in 64 bytes */
	o.max_file_size = 0;
	o.max_names_bytes = 64;
	assert_int_equal(pe_file_open(DATA "lib1.r2r.dll", &o, &pf), 0);
	{
		const struct pe_method *ms;
		size_t n;

		assert_int_equal(pe_file_methods(pf, &ms, &n), -EMSGSIZE);
	}
	pe_file_close(pf);
}

static void test_glob(void **state)
{
	assert_true(pe_glob_match("*", ""));
	assert_true(pe_glob_match("System.String::Concat*", "System.String::Concat"));
	assert_true(pe_glob_match("*::Fibonacci*", "Lib1.Calc::Fibonacci"));
	assert_true(pe_glob_match("a?c", "abc"));
	assert_true(pe_glob_match("Box`1[*]::Get", "Box`1[System.__Canon]::Get"));
	assert_false(pe_glob_match("*::Fib", "Lib1.Calc::Fibonacci"));
	assert_false(pe_glob_match("a?c", "ac"));
	assert_true(pe_glob_match("*a*b*c", "xxaxxbxxc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lib1_headers),
		cmocka_unit_test(test_lib1_names),
		cmocka_unit_test(test_lib1_methods),
		cmocka_unit_test(test_lib1_sigs),
		cmocka_unit_test(test_funclets),
		cmocka_unit_test(test_hot_cold),
		cmocka_unit_test(test_composite),
		cmocka_unit_test(test_webheader),
		cmocka_unit_test(test_corelib),
		cmocka_unit_test(test_corrupt_files),
		cmocka_unit_test(test_rf_end_before_begin),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_caps_and_args),
		cmocka_unit_test(test_glob),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
