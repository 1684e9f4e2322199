/* SPDX-License-Identifier: MIT */
/* Unit tests for common/clrname.h on names taken from real runtimes' method
 * events, perf maps and heap snapshots (the sample and realapp fixtures, ASP.NET Core). */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/clrname.h"

static void pretty_is(const char *raw, const char *want)
{
	char out[512];
	int rc = ct_clrname_pretty(raw, strlen(raw), out, sizeof(out));

	if (!want) {
		if (rc != 0)
			fail_msg("%s: changed to %s", raw, out);
		return;
	}
	if (rc != 1)
		fail_msg("%s: not changed (%d)", raw, rc);
	assert_string_equal(out, want);
}

static void test_async(void **state)
{
	(void)state;
	pretty_is("Clrtap.Fixtures.Shop+<Price>d__4::MoveNext", "Clrtap.Fixtures.Shop::Price [async]");
	pretty_is("Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+"
		  "<ProcessRequests>d__237`1[System.__Canon]::MoveNext",
		  "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol::ProcessRequests [async]");
	pretty_is("Microsoft.Extensions.Hosting.HostingAbstractionsHostExtensions+<WaitForShutdownAsync>d__5::MoveNext",
		  "Microsoft.Extensions.Hosting.HostingAbstractionsHostExtensions::WaitForShutdownAsync [async]");
	/* the outer type generic: its instantiation stays */
	pretty_is("System.Threading.RateLimiting.DefaultPartitionedRateLimiter`2+<RunTimer>d__14"
		  "[Microsoft.AspNetCore.Http.HttpContext,Microsoft.AspNetCore.RateLimiting.DefaultKeyType]::MoveNext",
		  "System.Threading.RateLimiting.DefaultPartitionedRateLimiter`2"
		  "[Microsoft.AspNetCore.Http.HttpContext,Microsoft.AspNetCore.RateLimiting.DefaultKeyType]::RunTimer [async]");
	/* an async local function in a closure of a generic type */
	pretty_is("Microsoft.AspNetCore.Server.Kestrel.Core.Internal.ConnectionDispatcher`1+<>c__DisplayClass10_0+"
		  "<<StartAcceptingConnectionsCore>g__AcceptConnectionsAsync|0>d"
		  "[Microsoft.AspNetCore.Connections.ConnectionContext]::MoveNext",
		  "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.ConnectionDispatcher`1"
		  "[Microsoft.AspNetCore.Connections.ConnectionContext]::StartAcceptingConnectionsCore "
		  "[async local AcceptConnectionsAsync]");
	/* an async lambda; top-level statements */
	pretty_is("Program+<>c+<<Main>b__0_0>d::MoveNext", "Program::Main [async lambda]");
	pretty_is("Program+<<Main>$>d__0::MoveNext", "Program::<Main>$ [async]");
}

static void test_type_arguments(void **state)
{
	(void)state;
	/* the box that resumes a state machine, and the builder that starts one */
	pretty_is("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1"
		  "[System.Int64,Clrtap.Fixtures.Shop+<Price>d__4]::ExecuteFromThreadPool",
		  "System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1"
		  "[System.Int64,Clrtap.Fixtures.Shop::Price]::ExecuteFromThreadPool");
	pretty_is("System.Runtime.CompilerServices.AsyncMethodBuilderCore::Start[Clrtap.Fixtures.Shop+<Price>d__4]",
		  "System.Runtime.CompilerServices.AsyncMethodBuilderCore::Start[Clrtap.Fixtures.Shop::Price]");
	/* an instantiated state machine as an argument, nested */
	pretty_is("AsyncStateMachineBox`1[System.Threading.Tasks.VoidTaskResult,"
		  "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.ConnectionDispatcher`1+<>c__DisplayClass10_0+"
		  "<<StartAcceptingConnectionsCore>g__AcceptConnectionsAsync|0>d"
		  "[Microsoft.AspNetCore.Connections.ConnectionContext]]::MoveNext",
		  "AsyncStateMachineBox`1[System.Threading.Tasks.VoidTaskResult,"
		  "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.ConnectionDispatcher`1"
		  "[Microsoft.AspNetCore.Connections.ConnectionContext]::StartAcceptingConnectionsCore]::MoveNext");
	pretty_is("System.Collections.Generic.Dictionary`2[System.String,System.Int32]::Add", NULL);
	pretty_is("A::B[X[Y,Z],W]", NULL);
}

static void test_lambdas_locals(void **state)
{
	(void)state;
	pretty_is("Clrtap.Fixtures.Shop+<>c::<.cctor>b__5_0", "Clrtap.Fixtures.Shop::.cctor [lambda]");
	pretty_is("Program+<>c::<Main>b__0_0", "Program::Main [lambda]");
	pretty_is("Program+<>c__DisplayClass0_0::<Main>b__1", "Program::Main [lambda]");
	pretty_is("Microsoft.AspNetCore.Builder.WebApplicationBuilder+<>c__1`1[System.String]::<Build>b__1_0",
		  "Microsoft.AspNetCore.Builder.WebApplicationBuilder::Build [lambda]");
	pretty_is("Clrtap.Fixtures.Shop::<Price>g__Burn|4_0", "Clrtap.Fixtures.Shop::Price [local Burn]");
	pretty_is("System.Threading.Thread::<PollGC>g__PollGCWorker|0",
		  "System.Threading.Thread::PollGC [local PollGCWorker]");
}

static void test_unchanged(void **state)
{
	char out[8] = "x";

	(void)state;
	pretty_is("Clrtap.Fixtures.CpuSplit::HotA", NULL);
	pretty_is("System.Threading.ThreadPoolWorkQueue::Dispatch", NULL);
	pretty_is("System.Collections.Generic.List`1[System.__Canon]::Add", NULL);
	pretty_is("Program::<Main>$", NULL);
	pretty_is("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1"
		  "[System.__Canon,System.__Canon]::MoveNext", NULL);
	pretty_is("Type+<M>d__X::MoveNext", NULL);  /* not a compiler's number */
	pretty_is("<Price>d__2::MoveNext", NULL);   /* no enclosing type */
	pretty_is("Type+<Price>d__2::Dispose", NULL); /* not the resumption */
	pretty_is("[unknown]", NULL);
	pretty_is("libc.so.6!__poll", NULL);
	pretty_is("::", NULL);
	pretty_is("<<<>>>::<", NULL);
	pretty_is("", NULL);
	/* too small: an error, never a cut name */
	assert_int_equal(ct_clrname_pretty("A+<B>d__1::MoveNext", 19, out, 4), -EMSGSIZE);
}

static void test_display_switch(void **state)
{
	char out[128];
	const char *raw = "Program+<>c::<Main>b__0_0";

	(void)state;
	assert_string_equal(ct_clrname_display(raw, out, sizeof(out)), "Program::Main [lambda]");
	ct_clrname_set_raw(true);
	assert_ptr_equal(ct_clrname_display(raw, out, sizeof(out)), raw);
	ct_clrname_set_raw(false);
	assert_null(ct_clrname_display(NULL, out, sizeof(out)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_type_arguments),
		cmocka_unit_test(test_lambdas_locals),
		cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_display_switch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
