/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/serve's pure parts: routing and the checks of ids and
 * names, the session-request reader, the command lines of each kind, folded
 * stacks to JSON, listen addresses, bearer tokens.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "serve/internal.h"
#include "serve/serve.h"
#include "task/task.h"

static void test_routes(void **state)
{
	struct serve_route r;

	(void)state;
	assert_int_equal(serve_route_match("/api/v1/processes", &r), 0);
	assert_int_equal(r.id, SERVE_R_PROCESSES);
	assert_int_equal(serve_route_match("/api/v1/processes/1234", &r), 0);
	assert_int_equal(r.id, SERVE_R_PROCESS);
	assert_int_equal(r.pid, 1234);
	assert_int_equal(serve_route_match("/api/v1/processes/1234/counters/live", &r), 0);
	assert_int_equal(r.id, SERVE_R_COUNTERS_LIVE);
	assert_int_equal(serve_route_match("/api/v1/top/live", &r), 0);
	assert_int_equal(r.id, SERVE_R_TOP_LIVE);
	assert_int_equal(serve_route_match("/api/v1/sessions", &r), 0);
	assert_int_equal(r.id, SERVE_R_SESSIONS);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef", &r), 0);
	assert_int_equal(r.id, SERVE_R_SESSION);
	assert_string_equal(r.session, "s-0123456789abcdef");
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/artifacts/report.json", &r), 0);
	assert_int_equal(r.id, SERVE_R_ARTIFACT);
	assert_string_equal(r.name, "report.json");
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/report", &r), 0);
	assert_int_equal(r.id, SERVE_R_REPORT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/events", &r), 0);
	assert_int_equal(r.id, SERVE_R_EVENTS);
	assert_int_equal(serve_route_match("/api/v1/openapi.json", &r), 0);
	assert_int_equal(r.id, SERVE_R_OPENAPI);
	assert_int_equal(serve_route_match("/metrics", &r), 0);
	assert_int_equal(r.id, SERVE_R_METRICS);
	assert_int_equal(serve_route_match("/", &r), 0);
	assert_int_equal(r.id, SERVE_R_ASSET);
	assert_string_equal(r.name, "index.html");
	assert_int_equal(serve_route_match("/ui/js/app.js", &r), 0);
	assert_string_equal(r.name, "js/app.js");

	/* bad pids */
	assert_int_equal(serve_route_match("/api/v1/processes/0", &r), -EINVAL);
	assert_int_equal(serve_route_match("/api/v1/processes/012", &r), -EINVAL);
	assert_int_equal(serve_route_match("/api/v1/processes/12abc", &r), -EINVAL);
	assert_int_equal(serve_route_match("/api/v1/processes/99999999999", &r), -EINVAL);
	assert_int_equal(serve_route_match("/api/v1/processes/-1", &r), -EINVAL);
	/* traversal and malformed ids: never a route */
	assert_int_equal(serve_route_match("/api/v1/sessions/..", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdeF", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef0", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/artifacts/..", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/artifacts/.hidden", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/artifacts/a/b", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/sessions/s-0123456789abcdef/artifacts/a%2fb", &r), -ENOENT);
	assert_int_equal(serve_route_match("/ui/../etc/passwd", &r), -ENOENT);
	assert_int_equal(serve_route_match("/ui/a//b", &r), -ENOENT);
	assert_int_equal(serve_route_match("/ui/a/", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v2/processes", &r), -ENOENT);
	assert_int_equal(serve_route_match("/api/v1/a/b/c/d/e/f/g/h/i", &r), -ENOENT);
	assert_int_equal(serve_route_match("api/v1/processes", &r), -ENOENT);
	assert_int_equal(serve_route_match("", &r), -ENOENT);

	assert_true(serve_route_allows(SERVE_R_SESSIONS, "POST"));
	assert_true(serve_route_allows(SERVE_R_SESSION, "DELETE"));
	assert_false(serve_route_allows(SERVE_R_PROCESSES, "POST"));
	assert_false(serve_route_allows(SERVE_R_METRICS, "DELETE"));
	assert_true(serve_route_allows(SERVE_R_METRICS, "HEAD"));
}

static void test_auth(void **state)
{
	(void)state;
	assert_true(serve_auth_ok(NULL, NULL));
	assert_true(serve_auth_ok("Bearer abcdef0123456789", "abcdef0123456789"));
	assert_false(serve_auth_ok("Bearer abcdef012345678", "abcdef0123456789"));
	assert_false(serve_auth_ok("Bearer abcdef01234567890", "abcdef0123456789"));
	assert_false(serve_auth_ok("bearer abcdef0123456789", "abcdef0123456789"));
	assert_false(serve_auth_ok("Bearer ", "abcdef0123456789"));
	assert_false(serve_auth_ok(NULL, "abcdef0123456789"));
	assert_true(serve_host_is_loopback("127.0.0.1"));
	assert_true(serve_host_is_loopback("127.1.2.3"));
	assert_true(serve_host_is_loopback("::1"));
	assert_false(serve_host_is_loopback("0.0.0.0"));
	assert_false(serve_host_is_loopback("10.0.0.1"));
	assert_false(serve_host_is_loopback("::"));
}

static void test_browser_checks(void **state)
{
	const char *addrs[] = { "127.0.0.1" }, *addrs6[] = { "::1" }, *allow[] = { "box.example" };
	struct serve_host_rules r = { addrs, 1, true, allow, 1, 8477 };
	struct serve_host_rules r6 = { addrs6, 1, true, NULL, 0, 80 };

	(void)state;
	assert_true(serve_host_ok("127.0.0.1:8477", &r));
	assert_true(serve_host_ok("localhost:8477", &r));
	assert_true(serve_host_ok("LocalHost:8477", &r));
	assert_true(serve_host_ok("box.example:8477", &r));
	assert_true(serve_host_ok("BOX.example:8477", &r));
	/* DNS rebinding: a foreign name for the right address */
	assert_false(serve_host_ok("evil.example:8477", &r));
	assert_false(serve_host_ok("evil.example", &r));
	assert_false(serve_host_ok("localhost.evil.example:8477", &r));
	assert_false(serve_host_ok("127.0.0.1.evil.example:8477", &r));
	assert_false(serve_host_ok("box.example.evil:8477", &r));
	/* wrong or missing port, malformed */
	assert_false(serve_host_ok("127.0.0.1:8478", &r));
	assert_false(serve_host_ok("127.0.0.1", &r));
	assert_false(serve_host_ok("127.0.0.1:", &r));
	assert_false(serve_host_ok("127.0.0.1:08477x", &r));
	assert_false(serve_host_ok("127.0.0.2:8477", &r));
	assert_false(serve_host_ok("", &r));
	assert_false(serve_host_ok(NULL, &r));
	assert_false(serve_host_ok(":8477", &r));
	assert_false(serve_host_ok("::1:8477", &r));
	assert_true(serve_host_ok("[::1]", &r6));
	assert_true(serve_host_ok("[0:0::1]:80", &r6));
	assert_true(serve_host_ok("localhost", &r6));
	assert_false(serve_host_ok("[::1]:81", &r6));
	assert_false(serve_host_ok("[::2]", &r6));
	assert_false(serve_host_ok("[localhost]", &r6));
	assert_false(serve_host_ok("[::1", &r6));
	r.loopback = false;
	assert_false(serve_host_ok("localhost:8477", &r));

	assert_true(serve_origin_ok(NULL, "127.0.0.1:8477"));
	assert_true(serve_origin_ok("http://127.0.0.1:8477", "127.0.0.1:8477"));
	assert_true(serve_origin_ok("http://LOCALHOST:8477", "localhost:8477"));
	assert_false(serve_origin_ok("http://127.0.0.1:9000", "127.0.0.1:8477"));
	assert_false(serve_origin_ok("http://evil.example", "127.0.0.1:8477"));
	assert_false(serve_origin_ok("https://127.0.0.1:8477", "127.0.0.1:8477"));
	assert_false(serve_origin_ok("null", "127.0.0.1:8477"));
	assert_false(serve_origin_ok("http://127.0.0.1:8477/", "127.0.0.1:8477"));

	assert_true(serve_ctype_is_json("application/json"));
	assert_true(serve_ctype_is_json("Application/JSON; charset=utf-8"));
	assert_false(serve_ctype_is_json("text/plain"));
	assert_false(serve_ctype_is_json("application/x-www-form-urlencoded"));
	assert_false(serve_ctype_is_json("multipart/form-data; boundary=x"));
	assert_false(serve_ctype_is_json("application/jsonx"));
	assert_false(serve_ctype_is_json("text/plain; application/json"));
	assert_false(serve_ctype_is_json(NULL));
}

static void test_listen(void **state)
{
	char host[64];
	unsigned port;

	(void)state;
	assert_int_equal(serve_parse_listen("127.0.0.1:8080", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8080);
	assert_int_equal(serve_parse_listen("[::1]:0", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 0);
	assert_int_equal(serve_parse_listen("127.0.0.1", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(serve_parse_listen("127.0.0.1:65536", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(serve_parse_listen("127.0.0.1:8x", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(serve_parse_listen(":80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(serve_parse_listen("[::1:80", host, sizeof(host), &port), -EINVAL);
}

static void test_body(void **state)
{
	struct serve_session_req req;
	const char *why;
	const char *ok = "{ \"kind\": \"profile\", \"pid\": 42, \"params\": {\"duration\": 3, "
			 "\"engine\":\"perf\", \"ret\": true, \"m\":\"A\\u0041\"} }";

	(void)state;
	assert_int_equal(serve_session_req_parse(ok, strlen(ok), &req, &why), 0);
	assert_string_equal(req.kind, "profile");
	assert_int_equal(req.pid, 42);
	assert_int_equal(req.nparams, 4);
	assert_string_equal(serve_param_get(&req, "duration"), "3");
	assert_false(req.params[0].is_string);
	assert_string_equal(serve_param_get(&req, "engine"), "perf");
	assert_true(req.params[1].is_string);
	assert_string_equal(serve_param_get(&req, "ret"), "true");
	assert_string_equal(serve_param_get(&req, "m"), "AA");
	assert_null(serve_param_get(&req, "nope"));

#define BAD(s) assert_int_equal(serve_session_req_parse(s, strlen(s), &req, &why), -EINVAL)
	BAD("");
	BAD("[]");
	BAD("{\"kind\":\"profile\"}");                       /* no pid */
	BAD("{\"pid\":1}");                                  /* no kind */
	BAD("{\"kind\":\"profile\",\"pid\":0}");
	BAD("{\"kind\":\"profile\",\"pid\":-3}");
	BAD("{\"kind\":\"profile\",\"pid\":\"12\"}");
	BAD("{\"kind\":\"profile\",\"pid\":1,\"x\":1}");     /* unknown key */
	BAD("{\"kind\":\"profile\",\"pid\":1,\"pid\":2}");   /* repeated */
	BAD("{\"kind\":\"profile\",\"pid\":1,\"params\":{\"a\":{}}}");
	BAD("{\"kind\":\"profile\",\"pid\":1,\"params\":{\"a\":1,\"a\":2}}");
	BAD("{\"kind\":\"p\\nq\",\"pid\":1}");
	BAD("{\"kind\":\"p\\u0000\",\"pid\":1}");
	BAD("{\"kind\":\"profile\",\"pid\":1} x");
	BAD("{\"kind\":\"profile\",\"pid\":1");
	BAD("{\"kind\":\"profileprofileprofileprofileprofile\",\"pid\":1}");
#undef BAD
	assert_non_null(why);
}

static int args(const char *body, struct task_args *a, char *why, size_t wl)
{
	struct serve_session_req req;
	const char *w;

	assert_int_equal(serve_session_req_parse(body, strlen(body), &req, &w), 0);
	return serve_session_args(&req, a, why, wl);
}

/* A session request becomes the arguments of its task (lib/task's table). */
static void test_args(void **state)
{
	struct task_args a;
	char why[256];

	(void)state;
	assert_int_equal(args("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":2.5}}", &a, why,
			      sizeof(why)), 0);
	assert_string_equal(a.task->name, "profile");
	assert_int_equal(a.pid, 7);
	assert_true(task_arg(&a, "duration")->d == 2.5);
	assert_true(task_arg(&a, "duration")->set);
	task_args_release(&a);

	assert_int_equal(args("{\"kind\":\"analyze\",\"pid\":7,\"params\":{\"analyzer\":\"exceptions\"}}",
			      &a, why, sizeof(why)), 0);
	assert_string_equal(task_arg(&a, "analyzer")->s, "exceptions");
	assert_true(task_arg(&a, "duration")->d == 5); /* the table's default */
	assert_false(task_arg(&a, "duration")->set);
	task_args_release(&a);

	assert_int_equal(args("{\"kind\":\"probe\",\"pid\":7,\"params\":{\"method\":\"A.B::C\","
			      "\"budget\":\"0.5\",\"no_rejit\":true}}", &a, why, sizeof(why)), 0);
	assert_string_equal(task_arg(&a, "method")->s, "A.B::C");
	assert_true(task_arg(&a, "budget")->d == 0.5);
	assert_true(task_arg(&a, "no_rejit")->b);
	task_args_release(&a);

#define BADA(b, w) do { assert_int_equal(args(b, &a, why, sizeof(why)), -EINVAL); \
			assert_non_null(strstr(why, w)); task_args_release(&a); } while (0)
	BADA("{\"kind\":\"nope\",\"pid\":7}", "unknown kind (kinds: analyze, counters, doctor");
	BADA("{\"kind\":\"doctor\",\"pid\":7,\"params\":{\"analyzer\":\"memory\"}}", "unknown param 'analyzer'");
	BADA("{\"kind\":\"analyze\",\"pid\":7}", "needs analyzer");
	BADA("{\"kind\":\"analyze\",\"pid\":7,\"params\":{\"analyzer\":\"gc\"}}", "analyzer must be one of");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":0}}", "duration must be from");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":3601}}", "duration must be from");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":\"1.2345\"}}", "invalid duration");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":\"1e3\"}}", "invalid duration");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"duration\":\"../x\"}}", "invalid duration");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"output\":\"/etc/passwd\"}}", "unknown param 'output'");
	BADA("{\"kind\":\"profile\",\"pid\":7,\"params\":{\"engine\":\"--bundle=/\"}}", "engine must be one of");
	BADA("{\"kind\":\"probe\",\"pid\":7}", "needs method");
	BADA("{\"kind\":\"probe\",\"pid\":7,\"params\":{\"method\":\"A.B::C\",\"budget\":\"--json\"}}", "budget must be");
	BADA("{\"kind\":\"probe\",\"pid\":7,\"params\":{\"method\":\"A.B::C\",\"budget\":\"0\"}}", "budget must be");
	BADA("{\"kind\":\"dump\",\"pid\":7,\"params\":{\"type\":\"../../x\"}}", "type must be one of");
	BADA("{\"kind\":\"probe\",\"pid\":7,\"params\":{\"method\":\"../../etc/passwd\"}}", "only letters, digits");
	BADA("{\"kind\":\"trace\",\"pid\":7,\"params\":{\"providers\":\"--output=/etc/x\"}}", "no leading '-'");
	BADA("{\"kind\":\"counters\",\"pid\":7,\"params\":{\"counters\":\"/etc/passwd\"}}", "only letters, digits");
	BADA("{\"kind\":\"counters\",\"pid\":7,\"params\":{\"interval\":\"0\"}}", "interval must be");
#undef BADA
}

/* The served OpenAPI document: the template's markers replaced by the task table. */
static void test_openapi(void **state)
{
	struct strbuf tmpl = STRBUF_INIT, out = STRBUF_INIT;

	(void)state;
	assert_int_equal(strbuf_read_file(&tmpl, CT_SRCDIR "/lib/serve/openapi.json"), 0);
	assert_int_equal(serve_openapi_build(tmpl.buf, tmpl.len, &out), 0);
	assert_null(strstr(out.buf, "@TASK_"));
	assert_non_null(strstr(out.buf, "\"enum\": [\"analyze\",\"counters\",\"doctor\","));
	assert_non_null(strstr(out.buf, "\"x-clrtap-tasks\": {\"tasks\":[{\"name\":\"analyze\""));
	strbuf_reset(&out);
	assert_int_equal(serve_openapi_build("{\"a\":1}", 7, &out), -EINVAL);
	strbuf_release(&out);
	strbuf_release(&tmpl);
}

static void test_names(void **state)
{
	(void)state;
	assert_true(serve_session_id_valid("s-00000000deadbeef"));
	assert_false(serve_session_id_valid("s-00000000deadbee"));
	assert_false(serve_session_id_valid("x-00000000deadbeef"));
	assert_true(serve_artifact_name_valid("profile.folded"));
	assert_false(serve_artifact_name_valid(".."));
	assert_false(serve_artifact_name_valid("a/b"));
	assert_false(serve_artifact_name_valid(""));
	assert_string_equal(serve_content_type("a.json"), "application/json");
	assert_string_equal(serve_content_type("core.dump"), "application/octet-stream");
	assert_string_equal(serve_content_type("report.md"), "text/markdown; charset=utf-8");
	assert_string_equal(ct_exit_name(3), "no-process");
	assert_string_equal(ct_exit_name(130), "interrupted");
}

static int ndropped;
static void on_drop(const char *dir, void *ctx)
{
	(void)dir;
	(void)ctx;
	ndropped++;
}

/* The history: insert, run, end, list, artifacts, recovery after a crash, pruning. */
static void test_db(void **state)
{
	char path[] = "/tmp/clrtap-serve-test-XXXXXX", db_path[64], dir[128], name[64], st[32];
	struct serve_session_req req;
	struct srv_db_end end = { .status = "failed", .exit_code = 3, .err_code = 3,
				  .err_message = "no process with pid 42" };
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	const char *why;
	const char *body = "{\"kind\":\"profile\",\"pid\":42,\"params\":{\"duration\":2.5,\"engine\":\"perf\"}}";
	sqlite3 *db;

	(void)state;
	assert_non_null(mkdtemp(path));
	snprintf(db_path, sizeof(db_path), "%s/h.db", path);
	assert_int_equal(srv_db_open(db_path, &db), 0);
	assert_int_equal(serve_session_req_parse(body, strlen(body), &req, &why), 0);
	assert_int_equal(srv_db_insert(db, "s-0000000000000001", &req, "dotnet", "/d/1", 2.5, 1000), 0);
	assert_int_equal(srv_db_insert(db, "s-0000000000000002", &req, "dotnet", "/d/2", 2.5, 2000), 0);
	assert_int_equal(srv_db_insert(db, "s-0000000000000003", &req, "dotnet", "/d/3", 2.5, 3000), 0);
	assert_int_equal(srv_db_set_running(db, "s-0000000000000001", 1100), 0);
	assert_int_equal(srv_db_set_end(db, "s-0000000000000001", &end, 1600), 0);
	assert_int_equal(srv_db_add_artifact(db, "s-0000000000000002", "report.json", 12, true), 0);
	assert_int_equal(srv_db_set_running(db, "s-0000000000000002", 2100), 0);

	ct_json_init(&j, &sb);
	assert_int_equal(srv_db_session_json(db, "s-0000000000000001", &j), 0);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_non_null(strstr(sb.buf, "\"params\":{\"duration\":2.5,\"engine\":\"perf\"}"));
	assert_non_null(strstr(sb.buf, "\"status\":\"failed\""));
	assert_non_null(strstr(sb.buf, "\"progress\":{\"elapsed_s\":0.5,\"duration_s\":2.5}"));
	assert_non_null(strstr(sb.buf, "\"error\":{\"code\":3,\"name\":\"no-process\",\"message\":\"no process with pid 42\"}"));
	assert_non_null(strstr(sb.buf, "\"created\":\"1970-01-01T00:00:01.000Z\""));
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	assert_int_equal(srv_db_session_json(db, "s-00000000000000ff", &j), -ENOENT);

	/* artifacts only by the recorded name */
	assert_int_equal(srv_db_artifact_dir(db, "s-0000000000000002", "report.json", dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/d/2");
	assert_int_equal(srv_db_artifact_dir(db, "s-0000000000000002", "../report.json", dir, sizeof(dir)), -ENOENT);
	assert_int_equal(srv_db_artifact_dir(db, "s-0000000000000001", "report.json", dir, sizeof(dir)), -ENOENT);
	assert_int_equal(srv_db_report(db, "s-0000000000000002", name, sizeof(name), dir, sizeof(dir), st, sizeof(st)), 0);
	assert_string_equal(name, "report.json");
	assert_int_equal(srv_db_report(db, "s-0000000000000001", name, sizeof(name), dir, sizeof(dir), st, sizeof(st)), -ENOENT);
	assert_string_equal(st, "failed");

	/* newest first */
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	assert_int_equal(srv_db_list_json(db, &j), 0);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_true(strstr(sb.buf, "s-0000000000000003") < strstr(sb.buf, "s-0000000000000001"));

	/* a server that died: queued and running become failed (130) */
	srv_db_close(db);
	assert_int_equal(srv_db_open(db_path, &db), 0);
	assert_int_equal(srv_db_recover(db), 0);
	assert_int_equal(srv_db_status(db, "s-0000000000000002", st, sizeof(st)), 0);
	assert_string_equal(st, "failed");
	assert_int_equal(srv_db_status(db, "s-0000000000000003", st, sizeof(st)), 0);
	assert_string_equal(st, "failed");

	/* keep 1: the two older go, with their directories */
	assert_int_equal(srv_db_prune(db, 1, 36500, on_drop, NULL), 0);
	assert_int_equal(ndropped, 2);
	assert_int_equal(srv_db_status(db, "s-0000000000000001", st, sizeof(st)), -ENOENT);
	assert_int_equal(srv_db_status(db, "s-0000000000000003", st, sizeof(st)), 0);
	assert_int_equal(srv_db_artifact_dir(db, "s-0000000000000002", "report.json", dir, sizeof(dir)), -ENOENT);
	srv_db_close(db);
	strbuf_release(&sb);
	unlink(db_path);
	snprintf(dir, sizeof(dir), "%s/h.db-wal", path);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/h.db-shm", path);
	unlink(dir);
	rmdir(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes), cmocka_unit_test(test_auth),
		cmocka_unit_test(test_browser_checks),
		cmocka_unit_test(test_listen), cmocka_unit_test(test_body),
		cmocka_unit_test(test_args),   cmocka_unit_test(test_openapi),
		cmocka_unit_test(test_names),  cmocka_unit_test(test_db),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
