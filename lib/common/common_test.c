/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/common: caps, bounds, UTF-16 and number parsing. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "common/hashtab.h"
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

/* ----- hashtab ----- */

struct ents {
	uint64_t key[5000];
	uint32_t n;
};

static uint64_t ent_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct ents *)ctx)->key[idx] & ~0xfull); /* collide in 16s */
}

static bool ent_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct ents *)ctx)->key[idx] == *(const uint64_t *)key;
}

static uint64_t key_hash(uint64_t k)
{
	return ct_hash_u64(k & ~0xfull);
}

static void test_itab(void **state)
{
	static struct ents e;
	struct ct_itab t = CT_ITAB_INIT;
	uint64_t k;
	uint32_t i, j;

	(void)state;
	e.n = 0;
	assert_int_equal(ct_itab_get(&t, key_hash(1), ent_eq, &e, &(uint64_t){ 1 }), UINT32_MAX);
	for (i = 0; i < 4000; i++) {
		uint32_t *slot;

		k = (uint64_t)i * 7919;
		assert_int_equal(ct_itab_reserve(&t, ent_hash, &e), 0);
		slot = ct_itab_slot(&t, key_hash(k), ent_eq, &e, &k);
		assert_int_equal(*slot, 0);
		e.key[e.n] = k;
		*slot = ct_itab_add(&t, e.n++);
	}
	assert_int_equal(t.n, 4000);
	assert_true(t.cap >= 8000); /* load at most one half */
	for (i = 0; i < 4000; i++) {
		k = (uint64_t)i * 7919;
		assert_int_equal(ct_itab_get(&t, key_hash(k), ent_eq, &e, &k), i);
		k++;
		assert_int_equal(ct_itab_get(&t, key_hash(k), ent_eq, &e, &k), UINT32_MAX);
	}
	/* compact to the even entries and index again */
	for (i = j = 0; i < e.n; i++)
		if (!(i & 1))
			e.key[j++] = e.key[i];
	e.n = j;
	assert_int_equal(ct_itab_rebuild(&t, e.n, ent_hash, &e), 0);
	assert_int_equal(t.n, 2000);
	for (i = 0; i < 4000; i++) {
		k = (uint64_t)i * 7919;
		assert_int_equal(ct_itab_get(&t, key_hash(k), ent_eq, &e, &k),
				 (i & 1) ? UINT32_MAX : i / 2);
	}
	ct_itab_clear(&t);
	assert_int_equal(t.n, 0);
	assert_int_equal(ct_itab_get(&t, key_hash(0), ent_eq, &e, &(uint64_t){ 0 }), UINT32_MAX);
	ct_itab_release(&t);
	assert_null(t.slot);
}

static int store_capped(void *ctx, const char *s, size_t len, const char **copy)
{
	size_t *left = ctx;

	if (len + 1 > *left)
		return -EFBIG;
	*left -= len + 1;
	*copy = strndup(s, len);
	return *copy ? 0 : -ENOMEM;
}

static void test_strset(void **state)
{
	struct ct_strset set = { 0 };
	const char *a, *b, *c, *d;
	size_t left = 32;
	char name[16];
	uint32_t i;

	(void)state;
	assert_int_equal(ct_strset_intern(&set, "Foo::Bar", 8, store_capped, &left, &a), 0);
	/* the same bytes, not NUL-terminated where they end: the one copy */
	assert_int_equal(ct_strset_intern(&set, "Foo::Bar::Baz", 8, store_capped, &left, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(ct_strset_intern(&set, "Foo::Ba", 7, store_capped, &left, &c), 0);
	assert_ptr_not_equal(a, c);
	assert_string_equal(c, "Foo::Ba");
	assert_int_equal(set.n, 2);
	/* the store's refusal comes back, and nothing is added */
	assert_int_equal(ct_strset_intern(&set, "a-name-longer-than-what-is-left", 31, store_capped,
					  &left, &d),
			 -EFBIG);
	assert_int_equal(set.n, 2);
	left = SIZE_MAX;
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		assert_int_equal(ct_strset_intern(&set, name, strlen(name), store_capped, &left, &d), 0);
	}
	assert_int_equal(set.n, 1002);
	assert_int_equal(ct_strset_intern(&set, "n500", 4, store_capped, &left, &d), 0);
	assert_ptr_equal(d, set.v[502]);
	for (i = 0; i < set.n; i++)
		free((char *)set.v[i]);
	ct_strset_release(&set);
	/* one hash function: the same bytes give the same hash, whatever the call */
	assert_true(ct_hash_str("abc") == ct_hash_bytes(CT_HASH_SEED, "abcdef", 3));
	assert_true(ct_hash_str("abc") != ct_hash_str("abd"));
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
		cmocka_unit_test(test_itab),
		cmocka_unit_test(test_strset),
	};

	return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
