/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/sym: the line parsers on text captured from a real
 * .NET 10 process (tests/data/sym/) and on corrupt lines, the symbol tables,
 * and the symbolizer on this very process: its own ELF symbols, a perf map
 * written here for an anonymous mapping (overlaps, appends, a replaced file)
 * and, when a .NET runtime is installed, CoreLib mapped here as the runtime
 * maps it (R2R names through lib/pe).
 */
#include "common/compat.h"

#include <glob.h>
#include <setjmp.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "pe/pe.h"
#include "sym/sym.h"
#include "sym/sym_internal.h"

#define DATA CT_SRCDIR "/tests/data/sym/"

static void read_data(const char *name, struct strbuf *sb)
{
	char path[512];

	snprintf(path, sizeof(path), DATA "%s", name);
	assert_int_equal(strbuf_read_file(sb, path), 0);
}

static bool piece_is(const char *p, size_t len, const char *want)
{
	return p && strlen(want) == len && !memcmp(p, want, len);
}

/* Calls fn for every line of a data file; returns the line count. */
static size_t each_line(const struct strbuf *sb, void (*fn)(const char *, size_t, void *), void *ctx)
{
	size_t pos = 0, n = 0;

	while (pos < sb->len) {
		const char *nl = memchr(sb->buf + pos, '\n', sb->len - pos);
		size_t ll = nl ? (size_t)(nl - (sb->buf + pos)) : sb->len - pos;

		fn(sb->buf + pos, ll, ctx);
		pos += ll + 1;
		n++;
	}
	return n;
}

static void check_pm_line(const char *p, size_t len, void *ctx)
{
	struct sym_pm_line pl;
	size_t *managed = ctx;

	assert_int_equal(sym_parse_perfmap_line(p, len, &pl), 0);
	assert_true(pl.size > 0);
	assert_non_null(pl.name);
	assert_null(memchr(pl.name, ' ', pl.name_len) && !pl.stub ? pl.name : NULL);
	if (pl.stub)
		return;
	(*managed)++;
	/* "Ns.Type::Method", then "(...)", "[Tier]" and the module apart */
	assert_non_null(memmem(pl.name, pl.name_len, "::", 2));
	assert_null(memchr(pl.name, '(', pl.name_len));
	assert_non_null(pl.sig);
	assert_int_equal(pl.sig[0], '(');
	assert_int_equal(pl.sig[pl.sig_len - 1], ')');
	assert_non_null(pl.tier);
	assert_true(pl.tier_len > 0);
	assert_non_null(pl.module);
}

static void test_perfmap_real(void **state)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 20);
	size_t managed = 0, n;

	read_data("perfmap-cpusplit.map", &sb);
	n = each_line(&sb, check_pm_line, &managed);
	assert_int_equal(n, 39);
	assert_int_equal(managed, 39);
	strbuf_release(&sb);

	managed = 0;
	read_data("perfmap-stubs.map", &sb);
	n = each_line(&sb, check_pm_line, &managed);
	assert_true(n > managed && managed > 0);
	strbuf_release(&sb);
}

static void test_perfmap_lines(void **state)
{
	struct sym_pm_line pl;
	const char *l;

	l = "0x7fb9f12942e0 b2 instance valuetype [System.Runtime]System.Nullable`1<valuetype "
	    "[System.Runtime]System.TimeSpan> [sample] Clrtap.Fixtures.Options::Duration(string)"
	    "[QuickJitted]\n";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_int_equal(pl.start, 0x7fb9f12942e0ULL);
	assert_int_equal(pl.size, 0xb2);
	assert_false(pl.stub);
	assert_true(piece_is(pl.name, pl.name_len, "Clrtap.Fixtures.Options::Duration"));
	assert_true(piece_is(pl.sig, pl.sig_len, "(string)"));
	assert_true(piece_is(pl.tier, pl.tier_len, "QuickJitted"));
	assert_true(piece_is(pl.module, pl.module_len, "sample"));

	l = "0x7fb9f1294470 18 valuetype System.Runtime.CompilerServices.StaticsHelpers/"
	    "ThreadLocalData* [System.Private.CoreLib] System.Threading.Thread::"
	    "GetThreadStaticsBase()[QuickJitted]";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(piece_is(pl.name, pl.name_len, "System.Threading.Thread::GetThreadStaticsBase"));
	assert_true(piece_is(pl.module, pl.module_len, "System.Private.CoreLib"));
	assert_true(piece_is(pl.sig, pl.sig_len, "()"));

	/* generic instantiation and a nested closure class */
	l = "7f0000001000 42a !0 [System.Private.CoreLib] System.RuntimeType+IGenericCacheEntry`1"
	    "[System.__Canon]::CreateAndCache(class System.RuntimeType)[QuickJitted]";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(piece_is(pl.name, pl.name_len,
			     "System.RuntimeType+IGenericCacheEntry`1[System.__Canon]::CreateAndCache"));
	assert_true(piece_is(pl.sig, pl.sig_len, "(class System.RuntimeType)"));
	l = "0x1000 2b instance void [sample] Clrtap.Fixtures.Program+<>c__DisplayClass3_0::<Main>b__0()"
	    "[OptimizedTier1OSR]";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(piece_is(pl.name, pl.name_len,
			     "Clrtap.Fixtures.Program+<>c__DisplayClass3_0::<Main>b__0"));
	assert_true(piece_is(pl.tier, pl.tier_len, "OptimizedTier1OSR"));

	/* without tier, without signature, without module */
	l = "1000 10 [sample] A.B::C(int32)";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(piece_is(pl.name, pl.name_len, "A.B::C"));
	assert_null(pl.tier);
	l = "1000 10 A.B::C";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(piece_is(pl.name, pl.name_len, "A.B::C"));
	assert_null(pl.module);
	assert_null(pl.sig);

	/* stubs */
	l = "0x7f3780e40000 10000 stub ReportStubBlock<Unknown>\r\n";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(pl.stub);
	assert_true(piece_is(pl.name, pl.name_len, "ReportStubBlock<Unknown>"));
	l = "0x10 4 stub<7> ThePrecode";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(pl.stub);
	assert_true(piece_is(pl.name, pl.name_len, "ThePrecode"));

	/* corrupt */
	static const char *const bad[] = {
		"", "\n", "0x1000", "0x1000 10", "0x1000 10   ", "zz 10 name", "0x 10 name",
		"0x1000 g name", "10000000000000000 1 name", "ffffffffffffffff 2 name",
		"-1 2 name",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(sym_parse_perfmap_line(bad[i], strlen(bad[i]), &pl), -EBADMSG);
	/* odd but parseable: unbalanced brackets leave the whole text as name */
	l = "1 1 ((((]]]]";
	assert_int_equal(sym_parse_perfmap_line(l, strlen(l), &pl), 0);
	assert_true(pl.name_len > 0);
}

static void check_maps_line(const char *p, size_t len, void *ctx)
{
	struct sym_maps_line ml;
	size_t *dm = ctx;

	assert_int_equal(sym_parse_maps_line(p, len, &ml), 0);
	assert_true(ml.end > ml.start);
	if (ml.path && piece_is(ml.path, ml.path_len, "/memfd:doublemapper")) {
		assert_true(ml.deleted);
		(*dm)++;
	}
}

static void test_maps(void **state)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 20);
	struct sym_maps_line ml;
	size_t dm = 0;
	const char *l;

	read_data("maps-cpusplit.txt", &sb);
	assert_int_equal(each_line(&sb, check_maps_line, &dm), 243);
	assert_true(dm > 10);
	strbuf_release(&sb);

	l = "7fb9f0280000-7fb9f0dcc000 r-xp 00000000 fe:00 350922                     "
	    "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/System.Private.CoreLib.dll\n";
	assert_int_equal(sym_parse_maps_line(l, strlen(l), &ml), 0);
	assert_int_equal(ml.start, 0x7fb9f0280000ULL);
	assert_int_equal(ml.end, 0x7fb9f0dcc000ULL);
	assert_string_equal(ml.perms, "r-xp");
	assert_int_equal(ml.dev_major, 0xfe);
	assert_int_equal(ml.inode, 350922);
	assert_false(ml.deleted);
	assert_true(piece_is(ml.path, ml.path_len,
			     "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/System.Private.CoreLib.dll"));

	l = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ";
	assert_int_equal(sym_parse_maps_line(l, strlen(l), &ml), 0);
	assert_null(ml.path);
	l = "1000-2000 r-xp 00001000 08:01 77 /opt/my app/lib x.so (deleted)";
	assert_int_equal(sym_parse_maps_line(l, strlen(l), &ml), 0);
	assert_true(ml.deleted);
	assert_true(piece_is(ml.path, ml.path_len, "/opt/my app/lib x.so"));

	static const char *const bad[] = {
		"", "1000 r-xp 0 0:0 0", "2000-1000 r-xp 0 00:00 0", "1000-2000 r-x 0 00:00 0",
		"1000-2000 r-xp 0 0000 0", "1000-2000 r-xp 0 00:00 x1", "1000-2000 r-xp zz 00:00 0",
		"1000-2000", "1000-2000 r-xp 0 00:00",
		"1000-2000 r-xp 0 00:00 99999999999999999999999",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(sym_parse_maps_line(bad[i], strlen(bad[i]), &ml), -EBADMSG);
}

static void test_kallsyms(void **state)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 20);
	struct sym_arena ar = { 0 };
	struct sym_table t = { 0 };
	const struct sym_entry *e;
	struct sym_ks_line kl;
	const char *l;

	l = "ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";
	assert_int_equal(sym_parse_kallsyms_line(l, strlen(l), &kl), 0);
	assert_int_equal(kl.addr, 0xffffffffc0201000ULL);
	assert_int_equal(kl.type, 't');
	assert_true(piece_is(kl.name, kl.name_len, "ftrace_trampoline"));
	assert_true(piece_is(kl.module, kl.module_len, "__builtin__ftrace"));
	l = "ffffffff81000000 T _stext";
	assert_int_equal(sym_parse_kallsyms_line(l, strlen(l), &kl), 0);
	assert_null(kl.module);
	static const char *const bad[] = { "", "ffff", "ffff T", "ffff TT x", "xyz T a",
					   "ffff T a\tmod", "ffff T a\t[]" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(sym_parse_kallsyms_line(bad[i], strlen(bad[i]), &kl), -EBADMSG);

	read_data("kallsyms.txt", &sb);
	assert_int_equal(sym_kallsyms_load(&t, sb.buf, sb.len, &ar), 0);
	assert_true(t.n > 10);
	e = sym_table_find(&t, 0xffffffffc0201010ULL);
	assert_non_null(e);
	assert_string_equal(e->name, "ftrace_trampoline");
	assert_string_equal(e->module, "__builtin__ftrace");
	assert_null(sym_table_find(&t, 0x1000));
	sym_table_free(&t);
	strbuf_release(&sb);

	/* kptr_restrict: every address 0 */
	l = "0000000000000000 T _stext\n0000000000000000 t foo\n";
	assert_int_equal(sym_kallsyms_load(&t, l, strlen(l), &ar), -EACCES);
	sym_table_free(&t);
	sym_arena_free(&ar);
}

static void test_table(void **state)
{
	struct sym_table t = { 0 };
	struct sym_entry e = { 0 };

	e.addr = 0x100, e.size = 0x10, e.name = "sized";
	assert_int_equal(sym_table_add(&t, &e, 10), 0);
	e.addr = 0x200, e.size = 0, e.name = "unsized";
	assert_int_equal(sym_table_add(&t, &e, 10), 0);
	e.addr = 0x100, e.size = 0, e.name = "alias";
	assert_int_equal(sym_table_add(&t, &e, 10), 0);
	sym_table_sort(&t);
	assert_int_equal(t.n, 2);
	assert_string_equal(sym_table_find(&t, 0x10f)->name, "sized");
	assert_null(sym_table_find(&t, 0x110));
	assert_null(sym_table_find(&t, 0xff));
	assert_string_equal(sym_table_find(&t, 0x5000)->name, "unsized");
	for (int i = 0; i < 8; i++)
		assert_int_equal(sym_table_add(&t, &e, 10), 0);
	assert_int_equal(sym_table_add(&t, &e, 10), -E2BIG);
	sym_table_free(&t);
}

static void write_file(const char *path, const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A perf map for an anonymous mapping of this process. */
static void test_self_perfmap(void **state)
{
	char path[] = "/tmp/clrtap-symtest-XXXXXX", line[512];
	struct sym_opts o = { 0 };
	struct sym_jit_entry je[4];
	struct sym_proc *sp;
	struct sym_frame f;
	size_t n;
	uint8_t *code;
	uint64_t a;
	int fd;

	code = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	a = (uint64_t)(uintptr_t)code;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(line, sizeof(line),
		 "0x%" PRIx64 " 100 int32 [sample] N.T::First(int32)[QuickJitted]\n"
		 "0x%" PRIx64 " 20 stub CreateHelper<DynamicHelper>\n"
		 /* re-jitted over the same start: the later entry wins */
		 "0x%" PRIx64 " 80 int32 [sample] N.T::Second(int32)[OptimizedTier1]\n",
		 a + 0x1000, a + 0x2000, a + 0x1000);
	write_file(path, line, "w");
	o.perfmap_path = path;
	assert_int_equal(sym_proc_open(&sp, getpid(), &o), 0);

	assert_int_equal(sym_lookup(sp, a + 0x1010, &f), 0);
	assert_int_equal(f.kind, SYM_JIT);
	assert_string_equal(f.name, "N.T::Second");
	assert_string_equal(f.sig, "(int32)");
	assert_string_equal(f.tier, "OptimizedTier1");
	assert_string_equal(f.module, "sample");
	assert_int_equal(f.offset, 0x10);
	/* past Second's end but inside First's */
	assert_int_equal(sym_lookup(sp, a + 0x10a0, &f), 0);
	assert_string_equal(f.name, "N.T::First");
	assert_int_equal(sym_lookup(sp, a + 0x2004, &f), 0);
	assert_int_equal(f.kind, SYM_STUB);
	assert_string_equal(f.name, "CreateHelper<DynamicHelper>");
	assert_int_equal(sym_lookup(sp, a + 0x3000, &f), -ENOENT);
	/* cached answers are the same */
	assert_int_equal(sym_lookup(sp, a + 0x3000, &f), -ENOENT);
	assert_int_equal(sym_lookup(sp, a + 0x2004, &f), 0);
	assert_int_equal(f.kind, SYM_STUB);

	/* appended: one whole line and half of another */
	snprintf(line, sizeof(line),
		 "0x%" PRIx64 " 40 void [sample] N.T::Third()[QuickJitted]\n0x%" PRIx64 " 40 vo",
		 a + 0x3000, a + 0x4000);
	write_file(path, line, "a");
	assert_int_equal(sym_proc_refresh(sp), 0);
	assert_int_equal(sym_lookup(sp, a + 0x3000, &f), 0);
	assert_string_equal(f.name, "N.T::Third");
	assert_int_equal(sym_lookup(sp, a + 0x4000, &f), -ENOENT);
	write_file(path, "id [sample] N.T::Fourth()[QuickJitted]\n", "a");
	assert_int_equal(sym_proc_refresh(sp), 0);
	assert_int_equal(sym_lookup(sp, a + 0x4000, &f), 0);
	assert_string_equal(f.name, "N.T::Fourth");

	assert_int_equal(sym_proc_find_jit(sp, "N.T::*", je, ARRAY_SIZE(je), &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(je[3].name, "N.T::Fourth");
	assert_int_equal(sym_proc_find_jit(sp, "*::First(int32)", je, ARRAY_SIZE(je), &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(je[0].start, a + 0x1000);

	/* a new file (the runtime restarted it): read from the start */
	unlink(path);
	snprintf(line, sizeof(line), "0x%" PRIx64 " 40 void [x] N.T::Fresh()[QuickJitted]\n",
		 a + 0x5000);
	write_file(path, line, "w");
	assert_int_equal(sym_proc_refresh(sp), 0);
	assert_int_equal(sym_lookup(sp, a + 0x1000, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_UNKNOWN); /* rw- anonymous: not code */
	assert_int_equal(sym_lookup(sp, a + 0x5001, &f), 0);
	assert_string_equal(f.name, "N.T::Fresh");

	sym_proc_close(sp);
	unlink(path);
	munmap(code, 0x10000);
}

static int UNUSED self_marker(int x)
{
	return x * 3 + 1;
}

/* ASan's shadow memory and quarantine make RSS say nothing about the bound. */
extern void __asan_init(void) __attribute__((weak));
static bool running_under_asan(void)
{
	return __asan_init != NULL;
}

static char perfmap_warning[1024];

static void keep_warning(enum ct_log_level level, const char *msg)
{
	if (level == CT_LOG_WARN && strstr(msg, "perf map"))
		snprintf(perfmap_warning, sizeof(perfmap_warning), "%s", msg);
}

/*
 * A perf map far larger than SYM_PERFMAP_MAX_MEM (issue 19: 10 million lines
 * once took 819 MB): the index stops at the bound, the early entries are
 * there, the late ones are not, and the process does not grow past it.
 */
static void test_perfmap_memory_bound(void **state)
{
	char path[] = "/tmp/clrtap-symtest-big-XXXXXX", line[160];
	const uint64_t base = 0x7f1000000000ULL, lines = 1200000;
	struct sym_opts o = { 0 };
	struct sym_proc *sp;
	struct sym_frame f;
	struct rusage ru0, ru1;
	uint64_t i;
	FILE *fp;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	for (i = 0; i < lines; i++) {
		snprintf(line, sizeof(line), "%" PRIx64 " 40 [big] Big.Type::Method_%" PRIu64 "(int32)"
			 "[Tier1]\n", base + i * 64, i);
		fputs(line, fp);
	}
	assert_int_equal(fclose(fp), 0);
	getrusage(RUSAGE_SELF, &ru0);
	o.perfmap_path = path;
	perfmap_warning[0] = 0;
	ct_log_set(keep_warning, CT_LOG_WARN);
	assert_int_equal(sym_proc_open(&sp, getpid(), &o), 0);
	ct_log_set(NULL, CT_LOG_WARN);
	getrusage(RUSAGE_SELF, &ru1);
	/* it says what was dropped: the bound, and where the unread rest starts */
	assert_non_null(strstr(perfmap_warning, "the symbol index is full"));
	assert_non_null(strstr(perfmap_warning, "64 MiB of memory"));
	assert_non_null(strstr(perfmap_warning, "is not read"));
	assert_int_equal(sym_lookup(sp, base + 8, &f), 0);
	assert_string_equal(f.name, "Big.Type::Method_0");
	/* the last line was dropped at the bound */
	assert_int_equal(sym_lookup(sp, base + (lines - 1) * 64 + 8, &f), -ENOENT);
	/* ru_maxrss is in KiB; the bound plus a read chunk and some slack (not under ASan) */
	if (!running_under_asan())
		assert_true(ru1.ru_maxrss - ru0.ru_maxrss <=
			    (long)((SYM_PERFMAP_MAX_MEM >> 10) + 16384));
	sym_proc_close(sp);
	unlink(path);
}

static void test_self_native(void **state)
{
	struct sym_opts o = { .no_perfmap = true };
	int (*volatile fp)(int) = self_marker;
	struct sym_proc *sp;
	struct sym_frame f;
	uint64_t a = (uint64_t)(uintptr_t)fp;

	assert_int_equal(sym_proc_open(&sp, getpid(), &o), 0);
	assert_int_equal(sym_lookup(sp, a + 1, &f), 0);
	assert_int_equal(f.kind, SYM_NATIVE);
	assert_string_equal(f.name, "self_marker");
	assert_string_equal(f.module, "sym_test");
	assert_int_equal(f.offset, 1);
	assert_int_equal(f.start, a);
	/* libc's memcpy-ish exported symbol */
	assert_int_equal(sym_lookup(sp, (uint64_t)(uintptr_t)&getpid, &f), 0);
	assert_int_equal(f.kind, SYM_NATIVE);
	assert_non_null(strstr(f.module, "libc"));
	/* nothing mapped at 0x1000 */
	assert_int_equal(sym_lookup(sp, 0x1000, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_UNKNOWN);
	assert_true(sym_is_kernel(0xffffffff81000000ULL));
	assert_false(sym_is_kernel(a));
	assert_int_equal(sym_lookup(sp, 0xffffffff81000000ULL, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_KERNEL);
	assert_int_equal(sym_proc_find_image(sp, "sym_test", &a, NULL, NULL), 0);
	assert_int_equal(sym_proc_find_image(sp, "no-such-image.so", NULL, NULL, NULL), -ENOENT);
	sym_proc_close(sp);
	assert_int_equal(sym_proc_open(&sp, 0, &o), -EINVAL);
}

static bool elf_has(const struct sym_elf *e, const char *name)
{
	for (size_t i = 0; i < e->syms.n; i++)
		if (!strcmp(e->syms.v[i].name, name))
			return true;
	return false;
}

/* Debug files: "<file>.dbg" beside it, then .gnu_debuglink in .debug/, build-id checked. */
static void test_debug_file(void **state)
{
	char dir[] = "/tmp/clrtap-symdbg-XXXXXX", cmd[3 * PATH_MAX], exe[PATH_MAX], f[600], g[600];
	struct sym_arena ar = { 0 };
	struct sym_elf e;
	ssize_t n;

	if (system("objcopy --version >/dev/null 2>&1")) {
		skip();
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && objcopy --only-keep-debug '%s' app.dbg && "
		 "objcopy --strip-all --add-gnu-debuglink=app.dbg '%s' app",
		 dir, exe, exe);
	assert_int_equal(system(cmd), 0);
	snprintf(f, sizeof(f), "%s/app", dir);

	/* the stripped file alone has only .dynsym */
	assert_int_equal(sym_elf_load(&e, f, "", NULL, &ar), 0);
	assert_false(e.has_symtab);
	assert_false(elf_has(&e, "self_marker"));
	sym_elf_free(&e);

	/* app.dbg beside it */
	assert_int_equal(sym_elf_load(&e, f, "", f, &ar), 0);
	assert_true(e.from_debug_file);
	assert_true(elf_has(&e, "self_marker"));
	assert_true(e.nsegs > 0);
	sym_elf_free(&e);

	/* through the debuglink in .debug/ */
	snprintf(cmd, sizeof(cmd), "cd %s && mkdir .debug && mv app.dbg .debug/", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sym_elf_load(&e, f, "", f, &ar), 0);
	assert_true(e.from_debug_file);
	assert_true(elf_has(&e, "self_marker"));
	sym_elf_free(&e);

	/* a debug file whose build-id differs (here: has none) is refused */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && objcopy --only-keep-debug --remove-section=.note.gnu.build-id '%s' app.dbg",
		 dir, exe);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "cd %s && rm -r .debug", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sym_elf_load(&e, f, "", f, &ar), 0);
	assert_false(e.from_debug_file);
	sym_elf_free(&e);

	/* not an ELF file */
	snprintf(g, sizeof(g), "%s/junk", dir);
	write_file(g, "MZ not elf", "w");
	assert_int_equal(sym_elf_load(&e, g, "", g, &ar), -EPROTO);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	sym_arena_free(&ar);
}

/* CoreLib mapped whole from file offset 0, as the runtime maps it. */
static void test_self_r2r(void **state)
{
	struct sym_opts o = { .no_perfmap = true };
	const struct pe_method *ms;
	struct pe_file *pf;
	struct sym_proc *sp;
	struct sym_frame f;
	glob_t g;
	uint32_t idx;
	size_t n, nm;
	uint64_t addr;
	void *map;
	int fd;
	off_t size;

	if (glob("/usr/share/dotnet/shared/Microsoft.NETCore.App/*/System.Private.CoreLib.dll", 0,
		 NULL, &g) || !g.gl_pathc) {
		skip();
		return;
	}
	fd = open(g.gl_pathv[0], O_RDONLY);
	assert_true(fd >= 0);
	size = lseek(fd, 0, SEEK_END);
	map = mmap(NULL, (size_t)size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(map != MAP_FAILED);
	assert_int_equal(pe_file_open(g.gl_pathv[0], NULL, &pf), 0);
	assert_int_equal(pe_file_methods(pf, &ms, &nm), 0);
	assert_int_equal(pe_file_find(pf, "System.String::Concat(string, string)", &idx, 1, &n), 0);
	assert_int_equal(n, 1);

	assert_int_equal(sym_proc_open(&sp, getpid(), &o), 0);
	assert_int_equal(sym_proc_offset_to_addr(sp, "System.Private.CoreLib.dll",
						 ms[idx].entry_offset, &addr), 0);
	assert_int_equal(addr, (uint64_t)(uintptr_t)map + ms[idx].entry_offset);
	assert_int_equal(sym_lookup(sp, addr + 3, &f), 0);
	assert_int_equal(f.kind, SYM_R2R);
	assert_string_equal(f.name, "System.String::Concat");
	assert_string_equal(f.sig, "(string, string)");
	assert_string_equal(f.module, "System.Private.CoreLib.dll");
	assert_string_equal(f.tier, "PreJIT");
	assert_int_equal(f.start, addr);
	assert_int_equal(f.offset, 3);
	/* the PE headers are no method */
	assert_int_equal(sym_lookup(sp, (uint64_t)(uintptr_t)map + 0x10, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_R2R);
	assert_string_equal(f.module, "System.Private.CoreLib.dll");
	sym_proc_close(sp);
	pe_file_close(pf);
	munmap(map, (size_t)size);
	globfree(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perfmap_real),
		cmocka_unit_test(test_perfmap_lines),
		cmocka_unit_test(test_maps),
		cmocka_unit_test(test_kallsyms),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_self_perfmap),
		cmocka_unit_test(test_perfmap_memory_bound),
		cmocka_unit_test(test_self_native),
		cmocka_unit_test(test_self_r2r),
		cmocka_unit_test(test_debug_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
