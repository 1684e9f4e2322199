/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/agent: libc detection, causes, config, event decoding. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "agent/ilrw.h"

static void test_libc_from_maps(void **state)
{
	static const char glibc[] =
		"7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
		"7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n";
	static const char musl[] =
		"7f00-7f01 r-xp 00000000 08:01 1 /lib/ld-musl-x86_64.so.1\n"
		"7f02-7f03 r--p 00000000 08:01 3 /usr/share/dotnet/shared/libcoreclr.so\n";
	static const char both[] = "1-2 r-xp 0 0:0 1 /lib/ld-musl-x86_64.so.1\n"
				   "3-4 r-xp 0 0:0 1 /lib/libc.so.6\n";
	static const char none[] = "1-2 r-xp 0 0:0 1 /lib/libfoo.so\n[stack]\n";
	/* Debian's musl: the loader is a link to x86_64-linux-musl/libc.so */
	static const char deb_musl[] =
		"7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-musl/libc.so\n"
		"7f02-7f03 r--p 00000000 08:01 3 /opt/app/libcoreclr.so\n";
	static const char not_musl[] = "1-2 r-xp 0 0:0 1 /usr/lib/x86_64-linux-gnu/libc.so\n"
				       "3-4 r-xp 0 0:0 1 /opt/musl/libc.so.1\n";
	/* A file merely containing the name elsewhere does not count. */
	static const char tricky[] = "1-2 r-xp 0 0:0 1 /tmp/libc.so.6.d/readme\n";

	assert_int_equal(agent_libc_from_maps(glibc, strlen(glibc)), AGENT_LIBC_GLIBC);
	assert_int_equal(agent_libc_from_maps(musl, strlen(musl)), AGENT_LIBC_MUSL);
	assert_int_equal(agent_libc_from_maps(both, strlen(both)), AGENT_LIBC_UNKNOWN);
	assert_int_equal(agent_libc_from_maps(none, strlen(none)), AGENT_LIBC_UNKNOWN);
	assert_int_equal(agent_libc_from_maps(tricky, strlen(tricky)), AGENT_LIBC_UNKNOWN);
	assert_int_equal(agent_libc_from_maps(deb_musl, strlen(deb_musl)), AGENT_LIBC_MUSL);
	assert_int_equal(agent_libc_from_maps(not_musl, strlen(not_musl)), AGENT_LIBC_UNKNOWN);
	/* Not NUL-terminated: only len bytes are read. */
	assert_int_equal(agent_libc_from_maps(musl, 50), AGENT_LIBC_MUSL);
	assert_int_equal(agent_libc_from_maps("", 0), AGENT_LIBC_UNKNOWN);
}

static void test_libc_detect_self(void **state)
{
	enum agent_libc l;

	assert_int_equal(agent_libc_detect(getpid(), &l), 0);
	assert_int_equal(l, AGENT_LIBC_GLIBC); /* the unit tests link glibc */
}

static void test_causes(void **state)
{
	char buf[512];

	assert_int_equal(agent_cause_from_hresult((int32_t)0x8013136A, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, true), AGENT_SLOT_TAKEN);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x80131375, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, true), AGENT_TOO_OLD);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x8007007E, AGENT_LIBC_MUSL,
						  AGENT_LIBC_GLIBC, true), AGENT_WRONG_LIBC);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x8007007E, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, false), AGENT_NOT_IN_TARGET);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x80131515, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, true), AGENT_NOT_SUPPORTED);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x80131385, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, true), AGENT_NOT_SUPPORTED);
	assert_int_equal(agent_cause_from_hresult((int32_t)0x80070057, AGENT_LIBC_GLIBC,
						  AGENT_LIBC_GLIBC, true), AGENT_REFUSED);
	agent_cause_text(AGENT_TOO_OLD, (int32_t)0x80131375, buf, sizeof(buf));
	assert_non_null(strstr(buf, ".NET 8"));
	assert_non_null(strstr(buf, "0x80131375"));
	assert_string_equal(agent_cause_name(AGENT_WRONG_LIBC), "wrong-libc");
}

static void test_config(void **state)
{
	struct agent_config c = { 250, 10000, 15 };
	char buf[PRF_CONFIG_MAX], small[8];
	size_t n;

	assert_int_equal(agent_config_encode(&c, buf, sizeof(buf), &n), 0);
	assert_string_equal(buf, "hb=250;wait=10000;feat=15");
	assert_int_equal(n, strlen(buf));
	assert_int_equal(agent_config_encode(&c, small, sizeof(small), &n), -ENOSPC);
}

static void test_clsid(void **state)
{
	static const uint8_t want[16] = { 0xe0, 0xa9, 0xa7, 0xc1, 0x11, 0x7a, 0x1b, 0x4c,
					  0x9e, 0x11, 0xc1, 0x7a, 0x90, 0x00, 0x00, 0x01 };
	uint8_t got[16];

	agent_clsid(PRF_MODE_MAIN, got);
	assert_memory_equal(got, want, 16);
	agent_clsid(PRF_MODE_NOTIFICATION, got);
	assert_int_equal(got[0], 0xe1);
	assert_int_equal(got[15], 0x02);
}

static size_t put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return n;
}

static void test_decode(void **state)
{
	uint8_t buf[256];
	size_t n = 0;
	uint32_t proto = 1, mode = 1, feat = 6, gen = 3, pid = 42;
	uint16_t ma = 10, mi = 0, bu = 12;
	struct agent_event ev;
	/* "vé" in UTF-16LE + NUL */
	static const uint8_t ver[] = { 'v', 0, 0xe9, 0, 0, 0 };

	n += put(buf + n, &proto, 4);
	n += put(buf + n, &mode, 4);
	n += put(buf + n, &feat, 4);
	n += put(buf + n, &ma, 2);
	n += put(buf + n, &mi, 2);
	n += put(buf + n, &bu, 2);
	n += put(buf + n, &gen, 4);
	n += put(buf + n, &pid, 4);
	n += put(buf + n, ver, sizeof(ver));
	assert_int_equal(agent_event_decode(PRF_EV_HELLO, buf, n, &ev), 0);
	assert_int_equal(ev.mode, 1);
	assert_int_equal(ev.features, 6);
	assert_int_equal(ev.rt_major, 10);
	assert_int_equal(ev.rt_build, 12);
	assert_int_equal(ev.generation, 3);
	assert_int_equal(ev.pid, 42);
	assert_string_equal(ev.text, "v\xc3\xa9");
	/* every truncation fails cleanly */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(agent_event_decode(PRF_EV_HELLO, buf, k, &ev), -EBADMSG);
	/* a string without its terminator */
	assert_int_equal(agent_event_decode(PRF_EV_HELLO, buf, n - 2, &ev), -EBADMSG);
	assert_int_equal(agent_event_decode(99, buf, n, &ev), -ENOENT);
	{ /* Flushed: the nonce and the generation */
		uint64_t nonce = 0x1122334455667789ull;

		n = put(buf, &nonce, 8);
		n += put(buf + n, &gen, 4);
		assert_int_equal(agent_event_decode(PRF_EV_FLUSHED, buf, n, &ev), 0);
		assert_true(ev.seq == nonce);
		assert_int_equal(ev.generation, 3);
		assert_int_equal(agent_event_decode(PRF_EV_FLUSHED, buf, n - 1, &ev), -EBADMSG);
	}
	/* Detaching */
	{
		uint32_t d[2] = { PRF_DETACH_SESSION_ENDED, 7 };

		assert_int_equal(agent_event_decode(PRF_EV_DETACHING, (uint8_t *)d, 8, &ev), 0);
		assert_int_equal(ev.reason, PRF_DETACH_SESSION_ENDED);
		assert_int_equal(ev.generation, 7);
	}
}

static void test_call_format(void **state)
{
	struct agent_event ev = { 0 };
	char buf[512];
	double d = 3.25;

	ev.id = PRF_EV_CALL;
	/* (int, float, bool, char, string, null string) -> string, instance */
	ev.kinds = PRF_K_INT | PRF_K_FLOAT << 4 | PRF_K_BOOL << 8 | PRF_K_CHAR << 12 |
		   PRF_K_STRING << 16 | PRF_K_NULL << 20;
	ev.retkind = PRF_K_STRING | 6u << 8 | 1u << 16;
	ev.a[0] = (uint64_t)-5;
	memcpy(&ev.a[1], &d, 8);
	ev.a[2] = 1;
	ev.a[3] = 'Z';
	ev.self = 0x1234;
	snprintf(ev.text, sizeof(ev.text), "h\xc3\xa9\x1e" "ok");
	assert_int_equal(agent_call_format(&ev, "Ns.T", buf, sizeof(buf)), 0);
	assert_string_equal(buf,
			    "(this=Ns.T@0x1234, -5, 3.25, true, 'Z', \"h\xc3\xa9\", null) -> \"ok\"");
	assert_int_equal(agent_call_format(&ev, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "(this=0x1234, -5, 3.25, true, 'Z', \"h\xc3\xa9\", null) -> \"ok\"");
	/* void, no parameters, static */
	memset(&ev, 0, sizeof(ev));
	ev.retkind = PRF_K_VOID;
	assert_int_equal(agent_call_format(&ev, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "() -> void");
	/* 0.1 is printed as 0.1, not 0.10000000000000001 */
	d = 0.1;
	ev.retkind = PRF_K_FLOAT;
	memcpy(&ev.ret, &d, 8);
	assert_int_equal(agent_call_format(&ev, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "() -> 0.1");
	assert_int_equal(agent_call_format(&ev, NULL, buf, 4), -ENOSPC);
}

static void test_ilrw_prepend(void **state)
{
	/* fat body: 4 bytes of code, one small EH clause try [0,2) handler [2,4) */
	static const uint8_t in[] = {
		0x1B, 0x30, 0x03, 0x00, 0x04, 0, 0, 0, 0x11, 0, 0, 0x11, /* fat, MoreSects|InitLocals */
		0x00, 0xDE, 0x00, 0x2A, /* nop; leave.s 0; ret */
		0x01, 0x10, 0x00, 0x00, /* small EH section, 16 bytes */
		0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x02, 0x01, 0x00, 0x00, 0x01,
	};
	static const uint8_t prefix[] = { 0x00, 0x00, 0x00 };
	uint8_t out[256];
	size_t n = 0;

	assert_int_equal(ilrw_body_size(in, sizeof(in)), sizeof(in));
	assert_int_equal(ilrw_prepend(in, sizeof(in), prefix, 3, 2, out, sizeof(out), &n), 0);
	assert_int_equal(out[0] & 3, 3);
	assert_int_equal(out[0] & 0x10, 0x10);             /* InitLocals kept */
	assert_int_equal(out[4], 7);                       /* code size 4 + 3 */
	assert_int_equal(out[8], 0x11);                    /* local sig token kept */
	assert_memory_equal(out + 15, in + 12, 4);         /* code after the prefix */
	assert_int_equal(out[20], 0x41);                   /* fat EH table */
	assert_int_equal(out[24 + 4], 3);                  /* try offset 0 + 3 */
	assert_int_equal(out[24 + 12], 5);                 /* handler offset 2 + 3 */
	assert_int_equal(n, 24 + 24);
	assert_int_equal(ilrw_prepend(in, sizeof(in), prefix, 3, 2, out, 20, &n), -ENOSPC);
	assert_int_equal(ilrw_prepend(in, 10, prefix, 3, 2, out, sizeof(out), &n), -EINVAL);
}

static void test_ilrw_rewrite(void **state)
{
	/* ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.0; ret */
	static const uint8_t in[] = { 0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x16, 0x2A };
	static const uint8_t prefix[] = { 0x00 }, at_ret[] = { 0x25, 0x26 };
	static const uint8_t want[] = { 0x00, 0x02, 0x39, 0x04, 0x00, 0x00, 0x00, 0x17, 0x25,
					0x26, 0x2A, 0x16, 0x25, 0x26, 0x2A };
	struct ilrw_edit e = { prefix, 1, at_ret, 2, 1 };
	uint8_t out[128];
	size_t n = 0;
	/* an undefined opcode (0x24) is refused */
	static const uint8_t bad[] = { 0x06, 0x24, 0x2A };

	assert_int_equal(ilrw_rewrite(in, sizeof(in), &e, out, sizeof(out), &n), 0);
	assert_int_equal(n, 12 + sizeof(want));
	assert_int_equal(out[4], sizeof(want));
	assert_int_equal(out[2], 9); /* max stack 8 + 1 */
	assert_memory_equal(out + 12, want, sizeof(want));
	assert_int_equal(ilrw_rewrite(bad, sizeof(bad), &e, out, sizeof(out), &n), -EINVAL);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc_from_maps),
		cmocka_unit_test(test_libc_detect_self),
		cmocka_unit_test(test_causes),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_clsid),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_call_format),
		cmocka_unit_test(test_ilrw_prepend),
		cmocka_unit_test(test_ilrw_rewrite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
