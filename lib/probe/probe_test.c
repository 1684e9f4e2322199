/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/probe: patterns, signatures, near names, perf map lines, histograms. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/strparse.h"
#include "probe/probe.h"

static void norm_is(const char *in, const char *want)
{
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(probe_sig_normalize(in, &sb), 0);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void test_normalize(void **state)
{
	norm_is("(int32, string)", "(int32,string)");
	norm_is("(int, int)", "(int32,int32)");
	norm_is("(long,double,bool,char,byte,short,float)",
		"(int64,float64,bool,char,uint8,int16,float32)");
	norm_is("(class System.Collections.Generic.List`1<int32>,valuetype System.Guid&)",
		"(System.Collections.Generic.List`1[int32],System.Guid&)");
	norm_is("(native int)", "(nativeint)");
	norm_is("(nint)", "(nativeint)");
	norm_is("(System.String)", "(string)");
	norm_is("()", "()");
	/* words that only start like an alias stay */
	norm_is("(integer, longer)", "(integer,longer)");
	/* the runtime's spelling: assembly prefixes, nested '/', comments, md arrays, fnptr */
	norm_is("(valuetype [System.Runtime]System.Decimal)", "(System.Decimal)");
	norm_is("(class [Microsoft.AspNetCore.Http.Abstractions]Microsoft.AspNetCore.Http.HttpContext)",
		"(Microsoft.AspNetCore.Http.HttpContext)");
	norm_is("(class [System.Runtime]System.Collections.Generic.IEnumerable`1<valuetype "
		"[System.Runtime]System.Collections.Generic.KeyValuePair`2<string,object>>)",
		"(System.Collections.Generic.IEnumerable`1[System.Collections.Generic.KeyValuePair`2[string,object]])");
	norm_is("(class System.Collections.Concurrent.ConcurrentDictionary`2/Tables<!0,!1>,!1&)",
		"(System.Collections.Concurrent.ConcurrentDictionary`2+Tables[!0,!1],!1&)");
	norm_is("(object,System.Span`1 /* MT: 0x7f0b9dd2fe30 */<object>)", "(object,System.Span`1[object])");
	norm_is("(int32[0...,0...],uint8[])", "(int32[,],uint8[])");
	norm_is("(method void *(int32),int32)", "(fnptr,int32)");
	norm_is("(decimal, System.Decimal)", "(System.Decimal,System.Decimal)");
	/* metadata generic instantiations and arrays keep their brackets */
	norm_is("(System.Span`1[uint8], int32[], !!0[])", "(System.Span`1[uint8],int32[],!!0[])");
}

static void base_is(const char *in, const char *want)
{
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(probe_pm_name_base(in, &sb), 0);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void test_name_base(void **state)
{
	base_is("N.T::M", "N.T::M");
	base_is("System.Collections.Concurrent.ConcurrentDictionary`2[System.Int64,System.__Canon]::"
		"TryAddInternal", "System.Collections.Concurrent.ConcurrentDictionary`2::TryAddInternal");
	base_is("System.Collections.Generic.Dictionary`2+Enumerator[System.Int64,System.__Canon]::"
		"MoveNext", "System.Collections.Generic.Dictionary`2+Enumerator::MoveNext");
	base_is("A`1[B`1[C+D]]::M", "A`1::M");
	base_is("dynamicClass::lambda_method3", "dynamicClass::lambda_method3");
}

/*
 * Real perf map lines (tests/data/probe/web.map, captured from the web
 * fixture with 'clrtap perfmap on') against the signatures lib/pe reads from
 * the metadata of the same methods: each must match its own, and only it.
 */
static bool pm_matches_md(const char *line, const char *md_name, const char *md_sig)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, n = STRBUF_INIT;
	struct probe_pm_entry e;
	bool ok;

	assert_int_equal(probe_pm_parse(line, strlen(line), &e), 0);
	assert_int_equal(probe_sig_normalize(e.args, &a), 0);
	assert_int_equal(probe_sig_normalize(md_sig, &b), 0);
	assert_int_equal(probe_pm_name_base(e.name, &n), 0);
	ok = !strcmp(a.buf, b.buf) && !strcmp(n.buf, md_name);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&n);
	return ok;
}

static void test_real_signatures(void **state)
{
	static const struct {
		const char *line, *name, *sig;
	} pairs[] = {
		{ "0x7f0b9dc96c30 dc instance void [System.Net.Primitives] System.Net.IPAddress::.ctor("
		  "valuetype [System.Runtime]System.ReadOnlySpan`1<uint8>)[QuickJitted]",
		  "System.Net.IPAddress::.ctor", "(System.ReadOnlySpan`1[uint8])" },
		{ "0x7f0b9dc96d20 d7 instance void [System.Net.Primitives] System.Net.IPAddress::.ctor("
		  "valuetype [System.Runtime]System.ReadOnlySpan`1<uint8>,int64)[QuickJitted]",
		  "System.Net.IPAddress::.ctor", "(System.ReadOnlySpan`1[uint8], int64)" },
		{ "0x7f0b9dc9a940 1f instance class [System.Runtime]System.Threading.Tasks.Task [sample] "
		  "Clrtap.Fixtures.FixtureLifetime::WaitForStartAsync(valuetype [System.Runtime]"
		  "System.Threading.CancellationToken)[QuickJitted]",
		  "Clrtap.Fixtures.FixtureLifetime::WaitForStartAsync",
		  "(System.Threading.CancellationToken)" },
		{ "0x7f0b9dc8cc10 674 instance bool [System.Collections.Concurrent] System.Collections."
		  "Concurrent.ConcurrentDictionary`2[Microsoft.Extensions.DependencyInjection.ServiceLookup."
		  "ServiceCacheKey,System.__Canon]::TryAddInternal(class System.Collections.Concurrent."
		  "ConcurrentDictionary`2/Tables<!0,!1>,!0,valuetype [System.Private.CoreLib]System."
		  "Nullable`1<int32>,!1,bool,bool,!1&)[QuickJitted]",
		  "System.Collections.Concurrent.ConcurrentDictionary`2::TryAddInternal",
		  "(System.Collections.Concurrent.ConcurrentDictionary`2+Tables[!0,!1], !0, "
		  "System.Nullable`1[int32], !1, bool, bool, !1&)" },
		{ "0x7f0b9dca1f70 1a7 int32 [System.Net.Primitives] System.Net.IPAddressParser::"
		  "FormatIPv4Address(uint32,valuetype [System.Runtime]System.Span`1<!!0>)[QuickJitted]",
		  "System.Net.IPAddressParser::FormatIPv4Address", "(uint32, System.Span`1[!!0])" },
		{ "0x7f0b9dc94fc0 164 instance class System.Diagnostics.Metrics.Counter`1<!!0> "
		  "[System.Diagnostics.DiagnosticSource] System.Diagnostics.Metrics.Meter::CreateCounter("
		  "string,string,string,class [System.Runtime]System.Collections.Generic.IEnumerable`1<"
		  "valuetype [System.Runtime]System.Collections.Generic.KeyValuePair`2<string,object>>)"
		  "[QuickJitted]",
		  "System.Diagnostics.Metrics.Meter::CreateCounter",
		  "(string, string, string, System.Collections.Generic.IEnumerable`1[System.Collections."
		  "Generic.KeyValuePair`2[string,object]])" },
		/* a 'dotnet new webapi' app (tests/data/probe/webapi.map): the example */
		{ "0x7fbbf005c420 b23 instance class [System.Runtime]System.Threading.Tasks.Task "
		  "[Microsoft.AspNetCore.Routing] Microsoft.AspNetCore.Routing.EndpointMiddleware::Invoke("
		  "class [Microsoft.AspNetCore.Http.Abstractions]Microsoft.AspNetCore.Http.HttpContext)"
		  "[OptimizedTier1]",
		  "Microsoft.AspNetCore.Routing.EndpointMiddleware::Invoke",
		  "(Microsoft.AspNetCore.Http.HttpContext)" },
		/* an argument list longer than 512 bytes */
		{ "0x7fbbf014a4e0 281 instance void [Microsoft.AspNetCore.Mvc.Core] Microsoft.AspNetCore."
		  "Mvc.Infrastructure.ResourceInvoker::.ctor(class [System.Diagnostics.DiagnosticSource]"
		  "System.Diagnostics.DiagnosticListener,class [Microsoft.Extensions.Logging.Abstractions]"
		  "Microsoft.Extensions.Logging.ILogger,class Microsoft.AspNetCore.Mvc.Infrastructure."
		  "IActionContextAccessor,class Microsoft.AspNetCore.Mvc.Infrastructure."
		  "IActionResultTypeMapper,class [Microsoft.AspNetCore.Mvc.Abstractions]Microsoft."
		  "AspNetCore.Mvc.ActionContext,class [Microsoft.AspNetCore.Mvc.Abstractions]Microsoft."
		  "AspNetCore.Mvc.Filters.IFilterMetadata[],class [System.Runtime]System.Collections."
		  "Generic.IList`1<class [Microsoft.AspNetCore.Mvc.Abstractions]Microsoft.AspNetCore.Mvc."
		  "ModelBinding.IValueProviderFactory>)[OptimizedTier1]",
		  "Microsoft.AspNetCore.Mvc.Infrastructure.ResourceInvoker::.ctor",
		  "(System.Diagnostics.DiagnosticListener, Microsoft.Extensions.Logging.ILogger, "
		  "Microsoft.AspNetCore.Mvc.Infrastructure.IActionContextAccessor, Microsoft.AspNetCore."
		  "Mvc.Infrastructure.IActionResultTypeMapper, Microsoft.AspNetCore.Mvc.ActionContext, "
		  "Microsoft.AspNetCore.Mvc.Filters.IFilterMetadata[], System.Collections.Generic.IList`1["
		  "Microsoft.AspNetCore.Mvc.ModelBinding.IValueProviderFactory])" },
		/* the sample fixture's probe-sigs targets (tests/data/probe/sigs.map) */
		{ "0x7f6b0f885fd0 35 int32 [sample] Clrtap.Fixtures.SigTargets::WithToken(int32,valuetype [System.Runtime]System.Threading.CancellationToken)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithToken", "(int32, System.Threading.CancellationToken)" },
		{ "0x7f6b0f886020 5c int32 [sample] Clrtap.Fixtures.SigTargets::WithContext(class [Microsoft.AspNetCore.Http.Abstractions]Microsoft.AspNetCore.Http.HttpContext)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithContext", "(Microsoft.AspNetCore.Http.HttpContext)" },
		{ "0x7f6b0f886090 24 int64 [sample] Clrtap.Fixtures.SigTargets::WithDate(valuetype [System.Runtime]System.DateTime)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithDate", "(System.DateTime)" },
		{ "0x7f6b0f8860d0 52 valuetype [System.Runtime]System.Decimal [sample] Clrtap.Fixtures.SigTargets::WithDecimal(valuetype [System.Runtime]System.Decimal,int32)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithDecimal", "(System.Decimal, int32)" },
		{ "0x7f6b0f886140 2e int32 [sample] Clrtap.Fixtures.SigTargets::WithSpan(valuetype [System.Runtime]System.Span`1<uint8>)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithSpan", "(System.Span`1[uint8])" },
		{ "0x7f6b0f886190 1b int32 [sample] Clrtap.Fixtures.SigTargets::WithChars(valuetype [System.Runtime]System.ReadOnlySpan`1<char>)[QuickJitted]",
		  "Clrtap.Fixtures.SigTargets::WithChars", "(System.ReadOnlySpan`1[char])" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pairs); i++)
		assert_true(pm_matches_md(pairs[i].line, pairs[i].name, pairs[i].sig));
	/* the other overloads do not match */
	assert_false(pm_matches_md(pairs[0].line, pairs[0].name, "(System.ReadOnlySpan`1[uint16])"));
	assert_false(pm_matches_md(pairs[1].line, pairs[1].name,
				   "(System.ReadOnlySpan`1[uint16], uint32)"));
	assert_false(pm_matches_md(pairs[5].line, pairs[5].name, "(string, string, string)"));
}

/* Every captured line: parsed, and nothing of the runtime's spelling left after normalizing. */
static size_t check_real_map(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	size_t pos = 0, n = 0;

	assert_int_equal(strbuf_read_file(&sb, path), 0);
	while (pos < sb.len) {
		char *nl = memchr(sb.buf + pos, '\n', sb.len - pos);
		size_t len = nl ? (size_t)(nl - (sb.buf + pos)) : sb.len - pos;
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		struct probe_pm_entry e;

		if (probe_pm_parse(sb.buf + pos, len, &e) == 0) {
			assert_int_equal(probe_sig_normalize(e.args, &a), 0);
			assert_int_equal(probe_pm_name_base(e.name, &b), 0);
			if (strstr(a.buf, "]System") || strstr(a.buf, "]Microsoft") ||
			    strstr(a.buf, "valuetype") || strstr(a.buf, "classSystem") ||
			    strstr(a.buf, "/") || strstr(a.buf, "MT:") || strchr(b.buf, '['))
				fail_msg("not normalized: %s -> %s %s", e.args, b.buf, a.buf);
			n++;
		}
		strbuf_release(&a);
		strbuf_release(&b);
		pos += len + 1;
	}
	strbuf_release(&sb);
	return n;
}

static void test_real_map(void **state)
{
	/* the sample fixture's web mode, and a 'dotnet new webapi' app with a controller under load */
	assert_true(check_real_map(CT_SRCDIR "/tests/data/probe/web.map") >= 300);
	assert_true(check_real_map(CT_SRCDIR "/tests/data/probe/webapi.map") >= 200);
}

static void test_newest(void **state)
{
	/* the order the runtime lists existing code when the perf map is turned on late */
	struct probe_code c[5];

	memset(c, 0, sizeof(c));
	ct_strlcpy(c[0].tier, "OptimizedTier1", sizeof(c[0].tier));
	ct_strlcpy(c[1].tier, "QuickJitted", sizeof(c[1].tier));
	ct_strlcpy(c[2].tier, "OptimizedTier1OSR", sizeof(c[2].tier));
	ct_strlcpy(c[3].tier, "InstrumentedTier", sizeof(c[3].tier));
	ct_strlcpy(c[4].tier, "QuickJitted", sizeof(c[4].tier));
	assert_true(probe_code_newer(c, 0, 1));
	assert_true(probe_code_newer(c, 0, 3));
	assert_true(probe_code_newer(c, 3, 1));
	assert_true(probe_code_newer(c, 1, 2));  /* OSR is never the entry that runs now */
	assert_true(probe_code_newer(c, 4, 1));  /* same tier: later in the map */
	assert_false(probe_code_newer(c, 1, 4));
	c[1].seen_ns = 5;                        /* same tier: learned later */
	assert_true(probe_code_newer(c, 1, 4));
	assert_false(probe_code_newer(c, 1, 0)); /* a lower tier learned later is still older */
}

/* UTF-16LE, NUL-terminated, appended to a payload */
static void put16(struct strbuf *sb, const char *z)
{
	for (; *z; z++) {
		assert_int_equal(strbuf_addch(sb, *z), 0);
		assert_int_equal(strbuf_addch(sb, 0), 0);
	}
	assert_int_equal(strbuf_add(sb, "\0\0", 2), 0);
}

static void test_inline_decode(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct probe_inline_ev ev;
	const char *f[9] = { "Clrtap.Fixtures.SigTargets", "InlineCaller", "int32  (int32)",
			     "Clrtap.Fixtures.SigTargets", "InlineCaller", "int32  (int32)",
			     "System.Collections.Generic.List`1[System.__Canon]", "get_Count", "int32  ()" };
	size_t i;

	for (i = 0; i < 9; i++)
		put16(&sb, f[i]);
	assert_int_equal(strbuf_add(&sb, "\x01\0", 2), 0); /* ClrInstanceID */
	assert_int_equal(probe_inline_decode(sb.buf, sb.len, false, &ev), 0);
	assert_true(ev.inlined);
	assert_string_equal(ev.inliner, "Clrtap.Fixtures.SigTargets::InlineCaller");
	assert_string_equal(ev.compiled, "Clrtap.Fixtures.SigTargets::InlineCaller");
	assert_string_equal(ev.inlinee, "System.Collections.Generic.List`1::get_Count");
	/* failed: FailAlways + reason after the nine names */
	sb.len -= 2;
	assert_int_equal(strbuf_add(&sb, "\0\0\0\0", 4), 0);
	put16(&sb, "too many il bytes");
	assert_int_equal(probe_inline_decode(sb.buf, sb.len, true, &ev), 0);
	assert_false(ev.inlined);
	assert_string_equal(ev.reason, "too many il bytes");
	/* names keep the target's exact bytes: the CLI escapes them when it prints */
	sb.len = 0;
	for (i = 0; i < 9; i++)
		put16(&sb, i == 7 ? "get_\x1b[2JCount" : f[i]);
	assert_int_equal(probe_inline_decode(sb.buf, sb.len, false, &ev), 0);
	assert_non_null(strstr(ev.inlinee, "get_\x1b[2JCount"));
	put16(&sb, "x");
	/* cut anywhere: an error, never a read past the end */
	for (i = 0; i < sb.len - 2; i += 3)
		assert_int_not_equal(probe_inline_decode(sb.buf, i, true, &ev), 0);
	strbuf_release(&sb);
}

static void test_mech_parse(void **state)
{
	struct probe_mech m;
	const char *ok = "b0 fires 1000 1000 0", *silent = "b0 silent 1000 0 0";

	assert_int_equal(probe_mech_parse(ok, strlen(ok), "b0", &m), 0);
	assert_true(m.fires && m.cached && m.hits == 1000);
	assert_int_equal(probe_mech_parse(silent, strlen(silent), "b0", &m), 0);
	assert_false(m.fires);
	assert_int_equal(probe_mech_parse(ok, strlen(ok), "b1", &m), -ESTALE);
	assert_int_equal(probe_mech_parse("b0 maybe 1000 1000 0", 20, "b0", &m), -EBADMSG);
	assert_int_equal(probe_mech_parse("b0 fires 1000", 13, "b0", &m), -EBADMSG);
	assert_int_equal(probe_mech_parse("b0 fires 1000 99999 0", 21, "b0", &m), -EBADMSG);
	assert_int_equal(probe_mech_parse("b0 fires x 1 0", 14, "b0", &m), -EBADMSG);
	/* the measured cost of a hit: optional 6th field, bounded */
	assert_int_equal(probe_mech_parse("b0 fires 1000 1000 0 9700", 25, "b0", &m), 0);
	assert_int_equal(m.hit_ns, 9700);
	assert_int_equal(probe_mech_parse(ok, strlen(ok), "b0", &m), 0);
	assert_int_equal(m.hit_ns, 0);
	assert_int_equal(probe_mech_parse("b0 fires 1000 1000 0 x", 22, "b0", &m), -EBADMSG);
	assert_int_equal(probe_mech_parse("b0 fires 1000 1000 0 999999999", 30, "b0", &m), -EBADMSG);
}

static void test_budget(void **state)
{
	struct probe_rejit_line rl;
	char longspec[1200];
	double pct = 0;

	(void)state;
	assert_int_equal(probe_budget_parse("2%", &pct), 0);
	assert_true(pct == 2.0);
	assert_int_equal(probe_budget_parse("0.5", &pct), 0);
	assert_true(pct == 0.5);
	assert_int_equal(probe_budget_parse("0", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("-1%", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("%", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("2%%", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("1001", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("nan", &pct), -EINVAL);
	assert_int_equal(probe_budget_parse("1e1", &pct), 0);
	assert_true(probe_budget_share(20e6, 1000000000ull) == 2.0);
	assert_true(probe_budget_share(1, 0) == 0);

	assert_int_equal(probe_rejit_parse_line("count A.B::C(int32) [0x06000012]: 12345", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_COUNT);
	assert_string_equal(rl.spec, "A.B::C(int32)");
	assert_int_equal(rl.token, 0x06000012);
	assert_int_equal(rl.count, 12345);
	assert_int_equal(probe_rejit_parse_line("calls A.B::C [0x06000001]: 7", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_FINAL);
	assert_int_equal(rl.count, 7);
	assert_int_equal(probe_rejit_parse_line("probe A.B::C: 1 method, ReJIT requested", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_PLACED);
	assert_int_equal(probe_rejit_parse_line("probe A.B::C: ReJIT refused (HRESULT 0x80004005)", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_OTHER);
	assert_int_equal(probe_rejit_parse_line("call A.B::C (1) -> 2  30 ns", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_CALL);
	assert_int_equal(probe_rejit_parse_line("stack 0x7f00aa 0x1", &rl), 0);
	assert_int_equal(rl.kind, PROBE_RJ_STACK);
	assert_int_equal(rl.nips, 2);
	assert_true(rl.ips[0] == 0x7f00aa && rl.ips[1] == 1);
	assert_int_equal(probe_rejit_parse_line("stack 0x", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("stack 0x12 zz", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("stack 0x12345678901234567", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("count A.B::C [0x]: 1", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("count A.B::C [0x123456789]: 1", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("count A.B::C [0x1]: x", &rl), -EBADMSG);
	assert_int_equal(probe_rejit_parse_line("count A.B::C", &rl), -EBADMSG);
	memset(longspec, 'a', sizeof(longspec));
	memcpy(longspec, "count ", 6);
	snprintf(longspec + 1100, 100, " [0x1]: 1");
	assert_int_equal(probe_rejit_parse_line(longspec, &rl), -EBADMSG);
}

static void test_mech_plan(void **state)
{
	struct probe_method m = { .name = "A.B::C", .sig = "()" };
	struct probe_mech fires = { .tested = true, .fires = true }, silent = { .tested = true };
	char buf[512];

	/* R2R code, uprobes fire, breakpoints do not */
	m.ncode = 1;
	m.code[0].kind = PROBE_CODE_R2R;
	assert_int_equal(probe_mech_plan(&m, &silent, 0, &fires, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ReadyToRun code: uprobe (fires here); JIT code after tier-up: "
				 "hardware breakpoint (does NOT fire here: those calls are NOT seen); "
				 "--via rejit: every call on every tier (in-process profiler)");
	/* JIT code, the breakpoint self-test could not run */
	m.code[0].kind = PROBE_CODE_JIT;
	snprintf(m.code[0].tier, sizeof(m.code[0].tier), "OptimizedTier1");
	assert_int_equal(probe_mech_plan(&m, &fires, -EACCES, NULL, -ENOENT, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "JIT code (OptimizedTier1): hardware breakpoint (unproven: its "
				 "self-test could not run: its calls there are NOT seen); --via rejit: "
				 "every call on every tier (in-process profiler)");
	/* the map lists Tier1 before the instrumented code it replaced (a map turned
	 * on late, EndpointMiddleware::Invoke on a web app): the newest is named */
	m.ncode = 3;
	m.code[0].kind = PROBE_CODE_R2R;
	m.code[1].kind = PROBE_CODE_JIT;
	snprintf(m.code[1].tier, sizeof(m.code[1].tier), "OptimizedTier1");
	m.code[2].kind = PROBE_CODE_JIT;
	snprintf(m.code[2].tier, sizeof(m.code[2].tier), "InstrumentedTierOptimized");
	assert_int_equal(probe_mech_plan(&m, &fires, 0, &fires, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ReadyToRun code: uprobe (fires here); JIT code (OptimizedTier1): "
				 "hardware breakpoint (fires here); --via rejit: every call on every "
				 "tier (in-process profiler)");
	/* no code yet */
	m.ncode = 0;
	assert_int_equal(probe_mech_plan(&m, &fires, 0, NULL, 0, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "JIT code once compiled (not yet; or inlined into callers): "
				    "hardware breakpoint (fires here)"));
	assert_int_equal(probe_mech_plan(&m, &fires, 0, NULL, 0, buf, 20), -ENOSPC);
	assert_true(strlen(buf) < 20);
}

static void test_pattern(void **state)
{
	const char *n = "Clrtap.Fixtures.ProbeTargets::AddInts", *sig = "(int32, int32)";

	assert_true(probe_pattern_match("Clrtap.Fixtures.ProbeTargets::AddInts", n, sig));
	assert_true(probe_pattern_match("*::AddInts", n, sig));
	assert_true(probe_pattern_match("AddInts", n, sig));
	assert_true(probe_pattern_match("Add*", n, sig));
	assert_true(probe_pattern_match("Clrtap.*::Add?nts", n, sig));
	assert_true(probe_pattern_match("*::AddInts(int,int)", n, sig));
	assert_true(probe_pattern_match("*::AddInts(int32, int32)", n, sig));
	assert_true(probe_pattern_match("*::AddInts(*)", n, sig));
	assert_false(probe_pattern_match("*::AddInts(string)", n, sig));
	assert_false(probe_pattern_match("*::AddInt", n, sig));
	assert_false(probe_pattern_match("Other::AddInts", n, sig));
	assert_false(probe_pattern_match("ProbeTargets::AddInts", n, sig));
	/* no "::" but a dotted name: a type pattern, every method of the types */
	assert_true(probe_pattern_match("Clrtap.*", n, sig));
	assert_true(probe_pattern_match("Clrtap.Fixtures.ProbeTargets", n, sig));
	assert_true(probe_pattern_match("Clrtap.Fixtures.Probe*(int,int)", n, sig));
	assert_false(probe_pattern_match("Clrtap.Fixtures.Probe", n, sig));
	assert_false(probe_pattern_match("Other.*", n, sig));
	assert_false(probe_pattern_match(".ctor", n, sig));
	assert_true(probe_pattern_match(".ctor", "A.B::.ctor", "()"));
	assert_false(probe_pattern_type_match("*::AddInts", n));
	/* nested types use '+' */
	assert_true(probe_pattern_match("Clrtap.Fixtures.Outer+Inner::Nested",
					"Clrtap.Fixtures.Outer+Inner::Nested", "(int32)"));
	assert_true(probe_pattern_match("*+Inner::*", "Clrtap.Fixtures.Outer+Inner::Nested", "(int32)"));
	/* overloads */
	assert_true(probe_pattern_match("*::Overloaded(string)", "A.B::Overloaded", "(string)"));
	assert_false(probe_pattern_match("*::Overloaded(string)", "A.B::Overloaded", "(int32)"));
	/* types from other assemblies as C# writes them: without namespace or arity */
	assert_true(probe_pattern_match("*::Invoke(HttpContext)", "M.R.EndpointMiddleware::Invoke",
					"(Microsoft.AspNetCore.Http.HttpContext)"));
	assert_true(probe_pattern_match("*::WithSpan(Span<byte>)", "C.S::WithSpan", "(System.Span`1[uint8])"));
	assert_true(probe_pattern_match("*::WithToken(int, CancellationToken)", "C.S::WithToken",
					"(int32, System.Threading.CancellationToken)"));
	assert_true(probe_pattern_match("*::M(decimal, DateTime)", "C.S::M",
					"(System.Decimal, System.DateTime)"));
	assert_true(probe_pattern_match("*::M(IList<IValueProviderFactory>)", "C.S::M",
					"(System.Collections.Generic.IList`1[A.B.IValueProviderFactory])"));
	assert_false(probe_pattern_match("*::WithSpan(Span<char>)", "C.S::WithSpan", "(System.Span`1[uint8])"));
	assert_false(probe_pattern_match("*::Invoke(HttpContext, int)", "M.R.E::Invoke",
					 "(Microsoft.AspNetCore.Http.HttpContext)"));
	assert_false(probe_pattern_match("*::Invoke(Other.HttpContext)", "M.R.E::Invoke",
					 "(Microsoft.AspNetCore.Http.HttpContext)"));
	assert_true(probe_pattern_match("System.Convert::ToString(int,int)", "System.Convert::ToString",
					"(int32, int32)"));
	assert_false(probe_pattern_match("System.Convert::ToString(int)", "System.Convert::ToString",
					 "(int32, int32)"));
	/* generic instantiations in names */
	assert_true(probe_pattern_match("System.Collections.Generic.List`1*::Add",
					"System.Collections.Generic.List`1[System.__Canon]::Add",
					"(System.__Canon)"));
	/* no signature given: any */
	assert_true(probe_pattern_match("*::M", "T::M", NULL));
	assert_true(probe_pattern_match("*::M()", "T::M", NULL));
}

static void test_distance(void **state)
{
	assert_int_equal(probe_edit_distance("AddInts", "AddInts", 10), 0);
	assert_int_equal(probe_edit_distance("AddInt", "AddInts", 10), 1);
	assert_int_equal(probe_edit_distance("addints", "AddInts", 10), 0);
	assert_int_equal(probe_edit_distance("Nestd", "Nested", 10), 1);
	assert_int_equal(probe_edit_distance("kitten", "sitting", 10), 3);
	/* capped */
	assert_int_equal(probe_edit_distance("a", "completely different", 3), 3);
	assert_int_equal(probe_edit_distance("", "abc", 10), 3);
}

static void pm_ok(const char *line, uint64_t start, uint64_t size, bool inst, const char *mod,
		  const char *name, const char *args, const char *tier)
{
	struct probe_pm_entry e;

	assert_int_equal(probe_pm_parse(line, strlen(line), &e), 0);
	assert_true(e.start == start);
	assert_true(e.size == size);
	assert_int_equal(e.instance, inst);
	assert_string_equal(e.module, mod);
	assert_string_equal(e.name, name);
	assert_string_equal(e.args, args);
	assert_string_equal(e.tier, tier);
}

static void test_perfmap_lines(void **state)
{
	struct probe_pm_entry e;

	pm_ok("0x7fa3ca2754b0 1d int32 [sample] Clrtap.Fixtures.TierTarget::Work(int32)[QuickJitted]\n",
	      0x7fa3ca2754b0, 0x1d, false, "sample", "Clrtap.Fixtures.TierTarget::Work", "(int32)",
	      "QuickJitted");
	pm_ok("7FA3CA2754B0 8 instance int32 [sample] Clrtap.Fixtures.Counter::Increment(int32)[OptimizedTier1]",
	      0x7fa3ca2754b0, 8, true, "sample", "Clrtap.Fixtures.Counter::Increment", "(int32)",
	      "OptimizedTier1");
	pm_ok("0x10 1c3 instance valuetype System.Span`1<uint8> [System.Private.CoreLib] "
	      "System.Text.ValueUtf8Converter::ConvertAndTerminateString(valuetype System.ReadOnlySpan`1<char>)[InstrumentedTierOptimized]",
	      0x10, 0x1c3, true, "System.Private.CoreLib",
	      "System.Text.ValueUtf8Converter::ConvertAndTerminateString",
	      "(valuetype System.ReadOnlySpan`1<char>)", "InstrumentedTierOptimized");
	pm_ok("0x20 ef instance bool [System.Private.CoreLib] System.Collections.Concurrent.ConcurrentQueue`1[A.B+Work]::TryPeek(!0&,bool)[QuickJitted]",
	      0x20, 0xef, true, "System.Private.CoreLib",
	      "System.Collections.Concurrent.ConcurrentQueue`1[A.B+Work]::TryPeek", "(!0&,bool)",
	      "QuickJitted");
	/* no tier suffix (PerfMapShowOptimizationTiers=0) */
	pm_ok("0x30 4 void [m] N.T::M()", 0x30, 4, false, "m", "N.T::M", "()", "");
	/* a function pointer argument: nested parentheses */
	pm_ok("0x40 4 void [m] N.T::M(method void *(int32),int32)[Optimized]", 0x40, 4, false, "m",
	      "N.T::M", "(method void *(int32),int32)", "Optimized");
	/* stubs are not methods */
	assert_int_equal(probe_pm_parse("0x7f0e6fd0e920 12 stub CreateHelperArgMove<DynamicHelper>", 57, &e),
			 -ENOENT);
	/* damage */
	assert_int_equal(probe_pm_parse("", 0, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("zz 1 void [m] N.T::M()", 22, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 zz void [m] N.T::M()", 24, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 1 void [m N.T::M()", 22, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 1 void [m] N.T.M()", 22, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 1 void [m] N.T::M(", 22, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 1 void [m] N.T::M()x", 24, &e), -EBADMSG);
	assert_int_equal(probe_pm_parse("0x1 1 void [m] N.T::M()[Tier", 28, &e), -EBADMSG);
}

static void test_perfmap_file(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	size_t pos = 0, ok = 0, stubs = 0, bad = 0;

	assert_int_equal(strbuf_read_file(&sb, CT_SRCDIR "/tests/data/probe/perfmap.map"), 0);
	while (pos < sb.len) {
		char *nl = memchr(sb.buf + pos, '\n', sb.len - pos);
		size_t len = nl ? (size_t)(nl - (sb.buf + pos)) : sb.len - pos;
		struct probe_pm_entry e;
		int rc = probe_pm_parse(sb.buf + pos, len, &e);

		if (!rc)
			ok++;
		else if (rc == -ENOENT)
			stubs++;
		else
			bad++;
		pos += len + 1;
	}
	assert_true(ok >= 25);
	assert_true(stubs >= 1);
	assert_int_equal(bad, 0);
	strbuf_release(&sb);
}

static void test_hist(void **state)
{
	struct probe_hist h = { 0 };
	struct strbuf sb = STRBUF_INIT;
	int i;

	for (i = 0; i < 100; i++)
		probe_hist_add(&h, i);
	probe_hist_add(&h, -5);
	assert_int_equal(h.count, 101);
	assert_int_equal(h.min, -5);
	assert_int_equal(h.max, 99);
	assert_int_equal(h.log2[0], 2);  /* 0 and -5 */
	assert_int_equal(h.log2[1], 1);  /* 1 */
	assert_int_equal(h.log2[2], 2);  /* 2, 3 */
	assert_int_equal(h.log2[7], 36); /* 64..99 */
	assert_int_equal(probe_hist_format(&h, "ns", &sb), 0);
	assert_non_null(strstr(sb.buf, "count 101, min -5, max 99"));
	assert_non_null(strstr(sb.buf, "[64, 128)"));
	assert_non_null(strstr(sb.buf, "linear (ns, width 11)"));
	strbuf_release(&sb);
	probe_hist_free(&h);
	assert_int_equal(probe_hist_format(&h, "", &sb), 0);
	assert_non_null(strstr(sb.buf, "no values"));
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),     cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_distance),      cmocka_unit_test(test_perfmap_lines),
		cmocka_unit_test(test_perfmap_file),  cmocka_unit_test(test_hist),
		cmocka_unit_test(test_name_base),     cmocka_unit_test(test_real_signatures),
		cmocka_unit_test(test_real_map),      cmocka_unit_test(test_mech_parse), cmocka_unit_test(test_mech_plan),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_newest),        cmocka_unit_test(test_inline_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
