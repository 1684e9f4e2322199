/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/common: caps, bounds, UTF-16 and number parsing. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "common/io.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "common/utf16.h"

static void test_strbuf_cap(void **state)
{
	struct strbuf sb = STRBUF_INIT_MAX(8);

	assert_string_equal(sb.buf, "");
	assert_int_equal(strbuf_addstr(&sb, "12345"), 0);
	/* past the cap: refused, buffer unchanged and still valid */
	assert_int_equal(strbuf_addstr(&sb, "6789"), -EMSGSIZE);
	assert_int_equal(sb.len, 5);
	assert_string_equal(sb.buf, "12345");
	/* the error sticks: later appends that would fit are no-ops */
	assert_int_equal(strbuf_error(&sb), -EMSGSIZE);
	assert_int_equal(strbuf_addf(&sb, "%d", 6), -EMSGSIZE);
	assert_int_equal(strbuf_addch(&sb, 'x'), -EMSGSIZE);
	assert_int_equal(strbuf_add(&sb, "", 0), -EMSGSIZE);
	assert_string_equal(sb.buf, "12345");
	/* a rollback to a mark before the failure clears it too */
	strbuf_rollback(&sb, 2);
	assert_int_equal(strbuf_error(&sb), 0);
	assert_string_equal(sb.buf, "12");
	assert_int_equal(strbuf_addstr(&sb, "345"), 0);
	/* reset starts again */
	strbuf_reset(&sb);
	assert_int_equal(strbuf_error(&sb), 0);
	assert_int_equal(strbuf_addf(&sb, "%d", 12345678), 0);
	assert_string_equal(sb.buf, "12345678");
	assert_int_equal(strbuf_addch(&sb, 'x'), -EMSGSIZE);
	strbuf_release(&sb);
	assert_int_equal(strbuf_error(&sb), 0);
	assert_int_equal(strbuf_grow(&sb, SIZE_MAX), -EMSGSIZE);
	strbuf_release(&sb);
	assert_int_equal(sb.len, 0);
	assert_int_equal(sb.max, 8);
}

static void test_strbuf_fwrite(void **state)
{
	struct strbuf sb = STRBUF_INIT_MAX(4);
	char out[16] = "";
	FILE *f = fmemopen(out, sizeof(out), "w");

	assert_non_null(f);
	(void)strbuf_addstr(&sb, "ab");
	assert_int_equal(strbuf_fwrite(&sb, f), 0);
	(void)strbuf_addstr(&sb, "cdef"); /* over the cap */
	(void)strbuf_addstr(&sb, "c");    /* would fit, but the error sticks */
	assert_int_equal(strbuf_fwrite(&sb, f), -EMSGSIZE);
	fclose(f);
	assert_string_equal(out, "ab");
	strbuf_release(&sb);
}

static void test_write_all(void **state)
{
	char big[200000], back[200000];
	int fds[2];
	size_t got = 0;

	(void)state;
	memset(big, 'q', sizeof(big));
	assert_int_equal(pipe(fds), 0);
	/* More than a pipe holds: the writer must loop while a child drains. */
	if (fork() == 0) {
		close(fds[0]);
		_exit(ct_write_all(fds[1], big, sizeof(big)) == 0 ? 0 : 1);
	}
	close(fds[1]);
	while (got < sizeof(back)) {
		ssize_t n = read(fds[0], back + got, sizeof(back) - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	assert_int_equal(got, sizeof(big));
	assert_memory_equal(big, back, sizeof(big));
	assert_int_equal(ct_write_all(-1, "x", 1), -EBADF);
}

static void test_cursor_bounds(void **state)
{
	const uint8_t b[] = { 1, 2, 3, 4, 5, 0x80, 0x80 };
	struct cursor c;
	uint32_t v32;
	uint16_t v16;
	uint64_t v64;

	cur_init(&c, b, sizeof(b));
	assert_int_equal(cur_u32(&c, &v32), 0);
	assert_int_equal(v32, 0x04030201);
	assert_int_equal(cur_u32(&c, &v32), -EBADMSG); /* only 3 left */
	assert_int_equal(v32, 0);
	/* the error sticks: later reads fail too */
	assert_int_equal(cur_u16(&c, &v16), -EBADMSG);
	assert_int_equal(cur_left(&c), 0);

	/* a varint that never ends within its byte budget */
	cur_init(&c, b + 5, 2);
	assert_int_equal(cur_varu64(&c, &v64, 10), -EBADMSG);
	{
		const uint8_t lone[] = { 0xff, 0xff, 0xff, 0xff, 0x7f };

		cur_init(&c, lone, sizeof(lone));
		assert_int_equal(cur_varu32(&c, &v32), -EBADMSG); /* > 32 bits */
	}
	{
		const uint8_t two[] = { 0xac, 0x02 };

		cur_init(&c, two, sizeof(two));
		assert_int_equal(cur_varu32(&c, &v32), 0);
		assert_int_equal(v32, 300);
	}
}

static void test_utf16(void **state)
{
	struct strbuf u16 = STRBUF_INIT, u8 = STRBUF_INIT;
	const char *s = "Zo\xc3\xab \xe2\x9c\x93 \xf0\x9f\x98\x80";
	uint32_t n;

	assert_int_equal(utf8_to_utf16le(&u16, s, &n), 0);
	assert_int_equal(n, 9); /* Z o ë sp ✓ sp (surrogate pair) NUL */
	assert_int_equal(utf16le_to_utf8(&u8, (uint8_t *)u16.buf, n, true), 0);
	assert_string_equal(u8.buf, s);
	/* an unpaired high surrogate becomes U+FFFD */
	strbuf_reset(&u8);
	{
		const uint8_t lone[] = { 0x3d, 0xd8, 'A', 0 };

		assert_int_equal(utf16le_to_utf8(&u8, lone, 2, true), 0);
		assert_string_equal(u8.buf, "\xef\xbf\xbd" "A");
	}
	strbuf_release(&u16);
	strbuf_release(&u8);
}

static void test_parse(void **state)
{
	uint64_t u;
	pid_t p;
	int i;

	assert_int_equal(ct_parse_u64("18446744073709551615", 10, &u), 0);
	assert_int_equal(ct_parse_u64("18446744073709551616", 10, &u), -ERANGE);
	assert_int_equal(ct_parse_u64("-1", 10, &u), -EINVAL);
	assert_int_equal(ct_parse_u64("0x8000", 0, &u), 0);
	assert_int_equal(u, 0x8000);
	assert_int_equal(ct_parse_pid("0", &p), -ERANGE);
	assert_int_equal(ct_parse_pid("12a", &p), -EINVAL);
	assert_int_equal(ct_parse_pid("", &p), -EINVAL);
	assert_int_equal(ct_parse_int("-42", &i), 0);
	assert_int_equal(i, -42);
	assert_int_equal(ct_parse_int("99999999999", &i), -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strbuf_cap),
		cmocka_unit_test(test_strbuf_fwrite),
		cmocka_unit_test(test_write_all),
		cmocka_unit_test(test_cursor_bounds),
		cmocka_unit_test(test_utf16),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
