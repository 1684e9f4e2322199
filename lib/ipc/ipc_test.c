/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/ipc's encoders and decoders, on replies captured from a
 * real .NET 10.0.12 runtime (tests/data/ipc/, made by
 * tests/tools/capture-ipc.py against `sample.dll idle` started with
 * env -i PATH=/usr/bin:/bin HOME=/root CLRTAP_CAPTURE=1) plus hand-made
 * corrupt variants.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "ipc/ipc.h"

static void load(const char *name, struct strbuf *sb)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/tests/data/ipc/%s", CT_SRCDIR, name);
	strbuf_init(sb, 1 << 20);
	assert_int_equal(strbuf_read_file(sb, path), 0);
}

static void test_header_real(void **state)
{
	struct strbuf sb;
	struct ipc_header h;

	load("process-info3.bin", &sb);
	assert_int_equal(ipc_parse_header((uint8_t *)sb.buf, sb.len, &h), 0);
	assert_int_equal(h.size, sb.len);
	assert_int_equal(h.set, 0xff);
	assert_int_equal(h.id, 0x00);
	strbuf_release(&sb);
}

static void test_header_bad(void **state)
{
	uint8_t b[20] = "DOTNET_IPC_V1";
	struct ipc_header h;

	ct_put_le16(b + 14, 19);
	assert_int_equal(ipc_parse_header(b, sizeof(b), &h), -EPROTO); /* size < 20 */
	ct_put_le16(b + 14, 20);
	assert_int_equal(ipc_parse_header(b, sizeof(b), &h), 0);
	assert_int_equal(ipc_parse_header(b, 19, &h), -EPROTO); /* short */
	b[3] = 'X';
	assert_int_equal(ipc_parse_header(b, sizeof(b), &h), -EPROTO); /* magic */
}

static void test_process_info_versions(void **state)
{
	static const struct {
		const char *file;
		unsigned version;
	} files[] = {
		{ "process-info3.bin", 3 },
		{ "process-info2.bin", 2 },
		{ "process-info1.bin", 1 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		struct ipc_process_info pi;
		struct strbuf sb;

		load(files[i].file, &sb);
		assert_int_equal(ipc_parse_process_info((uint8_t *)sb.buf + 20, sb.len - 20,
							files[i].version, &pi),
				 0);
		assert_int_equal(pi.version, files[i].version);
		assert_int_equal(pi.pid, 12578);
		assert_string_equal(pi.os, "Linux");
		assert_string_equal(pi.arch, "x64");
		assert_non_null(strstr(pi.cmdline, "/usr/share/dotnet/dotnet "));
		assert_non_null(strstr(pi.cmdline, "sample/sample.dll idle"));
		if (files[i].version >= 2) {
			assert_string_equal(pi.assembly, "sample");
			assert_string_equal(pi.clr_version, "10.0.12");
		} else {
			assert_null(pi.assembly);
		}
		if (files[i].version == 3)
			assert_string_equal(pi.rid, "linux-x64");
		else
			assert_null(pi.rid);
		ipc_process_info_release(&pi);
		strbuf_release(&sb);
	}
}

/* Every cut of a real ProcessInfo3 payload fails cleanly (no crash, no leak). */
static void test_process_info_truncated(void **state)
{
	struct ipc_process_info pi;
	struct strbuf sb;
	size_t cut, ok = 0;

	load("process-info3.bin", &sb);
	for (cut = 0; cut < sb.len - 20; cut++) {
		int err = ipc_parse_process_info((uint8_t *)sb.buf + 20, cut, 3, &pi);

		/* The RID string is last: only cuts before it may parse (v1 fields only). */
		if (err == 0) {
			ok++;
			ipc_process_info_release(&pi);
		} else {
			assert_int_equal(err, -EPROTO);
		}
	}
	assert_int_equal(ok, 0);
	strbuf_release(&sb);
}

static void test_process_info_corrupt(void **state)
{
	struct ipc_process_info pi;
	struct strbuf sb;
	uint8_t *p;

	load("process-info3.bin", &sb);
	p = (uint8_t *)sb.buf + 20;
	/* command line string count (after version, pid, cookie) overruns */
	ct_put_le32(p + 4 + 8 + 16, 0x7fffffff);
	assert_int_equal(ipc_parse_process_info(p, sb.len - 20, 3, &pi), -EPROTO);
	/* a count that fits, but whose last unit is not NUL */
	ct_put_le32(p + 4 + 8 + 16, 3);
	assert_int_equal(ipc_parse_process_info(p, sb.len - 20, 3, &pi), -EPROTO);
	assert_int_equal(ipc_parse_process_info(p, sb.len - 20, 4, &pi), -EINVAL);
	strbuf_release(&sb);
}

struct env_seen {
	int n;
	bool path, mark;
};

static int env_cb(const char *e, void *ctx)
{
	struct env_seen *s = ctx;

	s->n++;
	if (!strcmp(e, "PATH=/usr/bin:/bin"))
		s->path = true;
	if (!strcmp(e, "CLRTAP_CAPTURE=1"))
		s->mark = true;
	return 0;
}

static void test_env_real(void **state)
{
	struct env_seen seen = { 0 };
	struct strbuf sb;
	uint32_t nbytes;

	load("process-env.bin", &sb);
	/* header, then u32 nIncomingBytes + u16 reserved, then the block */
	assert_int_equal(ct_le16((uint8_t *)sb.buf + 14), 26);
	nbytes = ct_le32((uint8_t *)sb.buf + 20);
	assert_int_equal(nbytes, sb.len - 26);
	assert_int_equal(ipc_parse_env_block((uint8_t *)sb.buf + 26, nbytes, env_cb, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_true(seen.path);
	assert_true(seen.mark);
	/* A count larger than the bytes can hold is refused before any callback. */
	memset(&seen, 0, sizeof(seen));
	ct_put_le32((uint8_t *)sb.buf + 26, 1000000);
	assert_int_equal(ipc_parse_env_block((uint8_t *)sb.buf + 26, nbytes, env_cb, &seen), -EPROTO);
	assert_int_equal(seen.n, 0);
	strbuf_release(&sb);
}

static void test_error_real(void **state)
{
	struct ipc_error e;
	struct strbuf sb;
	char msg[256];

	load("error-unknown-command.bin", &sb);
	assert_int_equal((uint8_t)sb.buf[17], 0xff);
	assert_int_equal(ipc_parse_error((uint8_t *)sb.buf + 20, sb.len - 20, &e), 0);
	assert_int_equal(e.hresult, IPC_E_UNKNOWN_COMMAND);
	assert_string_equal(ipc_hresult_name(e.hresult), "DS_IPC_E_UNKNOWN_COMMAND");
	ipc_strerror(-EREMOTEIO, &e, msg, sizeof(msg));
	assert_non_null(strstr(msg, "0x80131385"));
	assert_int_equal(ipc_parse_error((uint8_t *)sb.buf + 20, 3, &e), -EPROTO);
	assert_null(ipc_hresult_name(0x12345678));
	strbuf_release(&sb);
}

static void test_encode_string(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	const uint8_t want[] = { 3, 0, 0, 0, 'h', 0, 0xe9, 0, 0, 0 };

	assert_int_equal(ipc_encode_string(&sb, "h\xc3\xa9"), 0);
	assert_int_equal(sb.len, sizeof(want));
	assert_memory_equal(sb.buf, want, sizeof(want));
	strbuf_reset(&sb);
	assert_int_equal(ipc_encode_string(&sb, NULL), 0);
	assert_int_equal(sb.len, 4);
	assert_int_equal(ct_le32((uint8_t *)sb.buf), 0);
	/* a supplementary-plane character takes a surrogate pair */
	strbuf_reset(&sb);
	assert_int_equal(ipc_encode_string(&sb, "\xf0\x9f\x98\x80"), 0);
	assert_int_equal(ct_le32((uint8_t *)sb.buf), 3);
	assert_int_equal(ct_le16((uint8_t *)sb.buf + 4), 0xd83d);
	assert_int_equal(ct_le16((uint8_t *)sb.buf + 6), 0xde00);
	strbuf_release(&sb);
}

static void test_encode_collect(void **state)
{
	const struct ipc_provider prov[] = {
		{ "Microsoft-Windows-DotNETRuntime", 0x8000, 2, NULL },
		{ "System.Runtime", 0, 4, "EventCounterIntervalSec=1" },
	};
	struct ipc_trace_config cfg = {
		.buffer_mb = 64, .rundown = true, .stackwalk = true,
		.providers = prov, .nproviders = 2,
	};
	struct strbuf sb = STRBUF_INIT;
	struct ipc_header h;
	const uint8_t *p;

	/* CollectTracing4: buffer, format, rundown keyword, stackwalk, providers */
	assert_int_equal(ipc_encode_collect_tracing(&sb, 4, &cfg), 0);
	assert_int_equal(ipc_parse_header((uint8_t *)sb.buf, sb.len, &h), 0);
	assert_int_equal(h.size, sb.len);
	assert_int_equal(h.set, 0x02);
	assert_int_equal(h.id, 0x05);
	p = (uint8_t *)sb.buf + 20;
	assert_int_equal(ct_le32(p), 64);
	assert_int_equal(ct_le32(p + 4), 1);
	assert_int_equal(ct_le64(p + 8), 0x80020139ull);
	assert_int_equal(p[16], 1);
	assert_int_equal(ct_le32(p + 17), 2);
	assert_int_equal(ct_le64(p + 21), 0x8000);
	assert_int_equal(ct_le32(p + 29), 2);
	assert_int_equal(ct_le32(p + 33), strlen(prov[0].name) + 1);

	/* CollectTracing2: u8 rundown in place of the keyword, no stackwalk */
	strbuf_reset(&sb);
	assert_int_equal(ipc_encode_collect_tracing(&sb, 2, &cfg), 0);
	assert_int_equal((uint8_t)sb.buf[17], 0x03);
	p = (uint8_t *)sb.buf + 20;
	assert_int_equal(p[8], 1);
	assert_int_equal(ct_le32(p + 9), 2);

	/* CollectTracing5 carries a session type first and an empty filter per provider */
	strbuf_reset(&sb);
	assert_int_equal(ipc_encode_collect_tracing(&sb, 5, &cfg), 0);
	assert_int_equal((uint8_t)sb.buf[17], 0x06);
	assert_int_equal(ct_le32((uint8_t *)sb.buf + 20), 0);
	{
		size_t len5 = sb.len;

		/* CollectTracing6: the CollectTracing5 payload and a u32 buffering mode (1 Block) */
		strbuf_reset(&sb);
		cfg.lossless = true;
		assert_int_equal(ipc_encode_collect_tracing(&sb, 6, &cfg), 0);
		assert_int_equal((uint8_t)sb.buf[17], 0x07);
		assert_int_equal(sb.len, len5 + 4);
		assert_int_equal(ct_le16((uint8_t *)sb.buf + 14), sb.len);
		assert_int_equal(ct_le32((uint8_t *)sb.buf + 20), 0);
		assert_int_equal(ct_le32((uint8_t *)sb.buf + sb.len - 4), 1);
		strbuf_reset(&sb);
		cfg.lossless = false;
		assert_int_equal(ipc_encode_collect_tracing(&sb, 6, &cfg), 0);
		assert_int_equal(ct_le32((uint8_t *)sb.buf + sb.len - 4), 0);
		strbuf_reset(&sb);
	}

	/* bad configs */
	cfg.nproviders = 0;
	assert_int_equal(ipc_encode_collect_tracing(&sb, 4, &cfg), -EINVAL);
	cfg.nproviders = 2;
	assert_int_equal(ipc_encode_collect_tracing(&sb, 7, &cfg), -EINVAL);
	strbuf_release(&sb);
}

static void test_encode_too_big(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ipc_provider many[1000];
	struct ipc_trace_config cfg = { .providers = many, .nproviders = 1000 };
	size_t i;

	assert_int_equal(ipc_encode_header(&sb, 1, 1, 65536), -EMSGSIZE);
	for (i = 0; i < ARRAY_SIZE(many); i++)
		many[i] = (struct ipc_provider){ "A-Provider-Name-That-Is-Long-Enough", 0, 4, NULL };
	/* 1000 providers do not fit in one 64 KiB frame: refused, not truncated */
	assert_int_equal(ipc_encode_collect_tracing(&sb, 4, &cfg), -EMSGSIZE);
	strbuf_release(&sb);
}

static void test_provider_parse(void **state)
{
	char a[] = "Microsoft-Windows-DotNETRuntime:0x8018:Informational:a=1;b=2";
	char b[] = "System.Runtime";
	char c[] = "X:ff:2";
	char d[] = "X:zz";
	char e[] = "X:1:6";
	char f[] = ":1:2";
	struct ipc_provider p;
	const struct ipc_provider *pp;
	uint64_t rk;
	size_t n;

	assert_int_equal(ipc_provider_parse(a, &p), 0);
	assert_string_equal(p.name, "Microsoft-Windows-DotNETRuntime");
	assert_int_equal(p.keywords, 0x8018);
	assert_int_equal(p.level, 4);
	assert_string_equal(p.arguments, "a=1;b=2");
	assert_int_equal(ipc_provider_parse(b, &p), 0);
	assert_int_equal(p.keywords, ~0ull);
	assert_int_equal(p.level, 5);
	assert_null(p.arguments);
	assert_int_equal(ipc_provider_parse(c, &p), 0);
	assert_int_equal(p.keywords, 0xff);
	assert_int_equal(p.level, 2);
	assert_int_equal(ipc_provider_parse(d, &p), -EINVAL);
	assert_int_equal(ipc_provider_parse(e, &p), -EINVAL);
	assert_int_equal(ipc_provider_parse(f, &p), -EINVAL);
	assert_int_equal(ipc_profile_lookup("gc-collect", &pp, &n, &rk), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rk, 1);
	assert_int_equal(ipc_profile_lookup("nope", &pp, &n, &rk), -ENOENT);
}

static void test_stream_prologue(void **state)
{
	static const uint8_t v5[] = "Nettrace\x14\0\0\0!FastSerialization.1";
	static const uint8_t v6[] = "Nettrace\0\0\0\0\x06\0\0\0\0\0\0\0";
	static const uint8_t huge[] = "Nettrace\xff\xff\xff\x7f";
	static const uint8_t badser[] = "Nettrace\x14\0\0\0!FastSerialization.9";
	size_t need;

	assert_int_equal(ipc_stream_check_prologue(v5, 32, &need), 0);
	assert_int_equal(need, 32);
	assert_int_equal(ipc_stream_check_prologue(v5, 31, &need), -EAGAIN);
	assert_int_equal(ipc_stream_check_prologue(v5, 5, &need), -EAGAIN);
	assert_int_equal(ipc_stream_check_prologue(v6, 20, &need), 0);
	assert_int_equal(need, 20);
	/* A header length of 0x7fffffff (a hostile fake) is refused at once. */
	assert_int_equal(ipc_stream_check_prologue(huge, 12, &need), -EBADMSG);
	assert_int_equal(ipc_stream_check_prologue(badser, 32, &need), -EBADMSG);
	/* Random bytes are refused from the first byte that differs. */
	assert_int_equal(ipc_stream_check_prologue((const uint8_t *)"Nx", 2, &need), -EBADMSG);
	assert_int_equal(ipc_stream_check_prologue((const uint8_t *)"", 0, &need), -EAGAIN);
}

#include "ipc/fakert_test.h"

static int count_sink(void *ctx, const void *buf, size_t n)
{
	(void)buf;
	*(uint64_t *)ctx += n;
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The rundown is drained while StopTracing waits: no stall up to the timeout. */
static void test_session_drains_while_stopping(void **state)
{
	const struct ipc_provider prov = { "P", 0, 4, NULL };
	struct ipc_trace_config cfg = { .providers = &prov, .nproviders = 1, .stackwalk = true };
	struct ipc_session_opts o = { 0 };
	struct ipc_session_result res;
	struct ipc_endpoint ep = { 0 };
	struct ipc_error rerr;
	struct fake_rt f;
	uint64_t got = 0;
	int64_t t0;

	fake_start(&f, false);
	ep.path = f.path;
	ep.timeout_ms = 4000;
	o.sink = count_sink;
	o.ctx = &got;
	o.duration_ms = 100;
	t0 = mono_ms();
	assert_int_equal(ipc_session_run(&ep, &cfg, &o, &res, &rerr), 0);
	/* with a blocking stop this took the whole 4 s timeout */
	assert_true(mono_ms() - t0 < 2500);
	assert_true(res.complete);
	assert_true(res.stopped);
	assert_int_equal(res.stop_error, 0);
	assert_int_equal(got, 32 + (8u << 20) + 1);
	assert_int_equal(res.bytes, got);
	fake_stop(&f);
}

/* A target that stalls after the prologue costs the duration plus the timeout. */
static void test_session_stall_is_bounded(void **state)
{
	const struct ipc_provider prov = { "P", 0, 4, NULL };
	struct ipc_trace_config cfg = { .providers = &prov, .nproviders = 1 };
	struct ipc_session_opts o = { 0 };
	struct ipc_session_result res;
	struct ipc_endpoint ep = { 0 };
	struct ipc_error rerr;
	struct fake_rt f;
	uint64_t got = 0;
	int64_t t0, took;

	fake_start(&f, true);
	ep.path = f.path;
	ep.timeout_ms = 500;
	o.sink = count_sink;
	o.ctx = &got;
	o.duration_ms = 200;
	t0 = mono_ms();
	assert_int_equal(ipc_session_run(&ep, &cfg, &o, &res, &rerr), -ETIMEDOUT);
	took = mono_ms() - t0;
	assert_true(took >= 700 && took < 2000);
	assert_false(res.complete);
	assert_int_equal(got, 32);
	fake_stop(&f);
}

/* One short session against a fake (old_runtime: no CollectTracing6); the version accepted. */
static unsigned lossless_session(bool lossless, bool old_runtime, struct fake_rt *f)
{
	static const struct ipc_provider prov = { "P", 0, 4, NULL };
	const struct ipc_trace_config cfg = { .lossless = lossless, .providers = &prov, .nproviders = 1 };
	uint64_t got = 0;
	struct ipc_session_opts o = { .sink = count_sink, .ctx = &got, .duration_ms = 50 };
	struct ipc_endpoint ep = { .timeout_ms = 4000 };
	struct ipc_session_result res = { 0 };
	struct ipc_error rerr;

	fake_start_old(f, false, old_runtime);
	ep.path = f->path;
	assert_int_equal(ipc_session_run(&ep, &cfg, &o, &res, &rerr), 0);
	assert_true(res.complete && got > 0);
	fake_stop(f);
	return res.version;
}

/*
 * Lossless where the runtime has it: CollectTracing6 (Block) first; a runtime
 * that does not know it answers "unknown command" and the session starts with
 * CollectTracing4 (lossy). The accepted version is reported either way.
 */
static void test_session_lossless_fallback(void **state)
{
	struct fake_rt f;

	(void)state;
	/* a runtime with CollectTracing6 (.NET 11+): accepted at once */
	assert_int_equal(lossless_session(true, false, &f), 6);
	assert_int_equal(f.nids, 1);
	assert_int_equal(f.ids[0], 0x07);
	/* one without: "unknown command", then CollectTracing4 */
	assert_int_equal(lossless_session(true, true, &f), 4);
	assert_int_equal(f.nids, 2);
	assert_int_equal(f.ids[0], 0x07);
	assert_int_equal(f.ids[1], 0x05);
	/* not asked for: CollectTracing4 at once */
	assert_int_equal(lossless_session(false, true, &f), 4);
	assert_int_equal(f.nids, 1);
	assert_int_equal(f.ids[0], 0x05);
}

static void test_connect_nobody(void **state)
{
	struct ipc_endpoint ep = { "/nonexistent/dotnet-diagnostic-1-1-socket", 200, 0, 0 };
	struct ipc_process_info pi;
	struct ipc_error e;

	assert_int_equal(ipc_process_info(&ep, &pi, &e), -ENOENT);
}

/*
 * The peer check: a socket this process listens on is not "the target" pid
 * of its parent: refused before anything is sent, both pids named. A link
 * or a file under the socket's name is never followed or connected to.
 */
static void test_peer_check(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char lnk[sizeof(sa.sun_path) + 8], reg[sizeof(sa.sun_path) + 8], want[64];
	struct ipc_endpoint ep = { sa.sun_path, 500, getppid(), 0 };
	struct ipc_process_info pi;
	struct ipc_error e;
	int s, c, fd;
	char b;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/clrtap-ipc-test-%d.sock", (int)getpid());
	snprintf(lnk, sizeof(lnk), "%s.lnk", sa.sun_path);
	snprintf(reg, sizeof(reg), "%s.reg", sa.sun_path);
	unlink(sa.sun_path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 4), 0);
	assert_int_equal(ipc_process_info(&ep, &pi, &e), -EXDEV);
	snprintf(want, sizeof(want), "served by pid %d", (int)getpid());
	assert_non_null(strstr(e.message, want));
	snprintf(want, sizeof(want), "not by pid %d", (int)getppid());
	assert_non_null(strstr(e.message, want));
	/* It connected, looked, and closed without a byte. */
	c = accept(s, NULL, NULL);
	assert_true(c >= 0);
	assert_int_equal(read(c, &b, 1), 0);
	close(c);
	/* A link to the socket, and a plain file, under the name: refused. */
	assert_int_equal(symlink(sa.sun_path, lnk), 0);
	ep.path = lnk;
	assert_int_equal(ipc_process_info(&ep, &pi, &e), -ELOOP);
	fd = open(reg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	ep.path = reg;
	assert_int_equal(ipc_process_info(&ep, &pi, &e), -ENOTSOCK);
	assert_int_equal(accept(s, NULL, NULL), -1); /* nobody else connected */
	unlink(lnk);
	unlink(reg);
	unlink(sa.sun_path);
	close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_real),
		cmocka_unit_test(test_header_bad),
		cmocka_unit_test(test_process_info_versions),
		cmocka_unit_test(test_process_info_truncated),
		cmocka_unit_test(test_process_info_corrupt),
		cmocka_unit_test(test_env_real),
		cmocka_unit_test(test_error_real),
		cmocka_unit_test(test_encode_string),
		cmocka_unit_test(test_encode_collect),
		cmocka_unit_test(test_encode_too_big),
		cmocka_unit_test(test_provider_parse),
		cmocka_unit_test(test_stream_prologue),
		cmocka_unit_test(test_session_drains_while_stopping),
		cmocka_unit_test(test_session_stall_is_bounded),
		cmocka_unit_test(test_session_lossless_fallback),
		cmocka_unit_test(test_connect_nobody),
		cmocka_unit_test(test_peer_check),
	};

	return cmocka_run_group_tests_name("ipc", tests, NULL, NULL);
}
