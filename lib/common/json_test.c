/* SPDX-License-Identifier: MIT */
/* Unit tests for the JSON writer (lib/common/json.c) and the terminal sanitizer. */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/json.h"
#include "common/json_check.h"
#include "common/strbuf.h"
#include "common/term.h"

/* Checks that doc parses and that its strings decode to want[0..n). */
static void assert_doc(const struct strbuf *doc, const char *const *want, const size_t *wlen,
		       size_t n)
{
	struct strbuf strs = STRBUF_INIT;
	size_t where = 0, off = 0, i;
	uint32_t len;

	if (json_check(doc->buf, doc->len, &strs, &where))
		fail_msg("not JSON at offset %zu: %s", where, doc->buf);
	for (i = 0; i < n; i++) {
		assert_true(off + 4 <= strs.len);
		memcpy(&len, strs.buf + off, 4);
		off += 4;
		assert_int_equal(len, wlen ? wlen[i] : strlen(want[i]));
		assert_memory_equal(strs.buf + off, want[i], len);
		off += len;
	}
	assert_int_equal(off, strs.len);
	strbuf_release(&strs);
}

static void test_json_shape(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "a", "x\"y\n");
	ct_json_kv_str(&j, "b", NULL);
	ct_json_kv_u64(&j, "c", UINT64_MAX);
	ct_json_kv_bool(&j, "d", true);
	ct_json_kv_i64(&j, "e", INT64_MIN);
	ct_json_kv_double(&j, "f", 0.5);
	ct_json_kv_double(&j, "g", 1.0 / 0.0);
	ct_json_kv_arr_begin(&j, "h");
	ct_json_str(&j, "bare");
	ct_json_arr_begin(&j);
	ct_json_arr_end(&j);
	ct_json_obj_begin(&j);
	ct_json_obj_end(&j);
	ct_json_null(&j);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_string_equal(sb.buf, "{\"a\":\"x\\\"y\\n\",\"b\":null,\"c\":18446744073709551615,"
				    "\"d\":true,\"e\":-9223372036854775808,\"f\":0.5,\"g\":null,"
				    "\"h\":[\"bare\",[],{},null]}");
	strbuf_release(&sb);
}

/* An environment entry without '=' or with an empty name is still one member. */
static void test_json_lines(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	ct_json_init(&j, &sb);
	ct_json_obj_begin_lines(&j);
	ct_json_kv_u64(&j, "a", 1);
	ct_json_key(&j, "v");
	ct_json_arr_begin_lines(&j);
	ct_json_obj_begin(&j);
	ct_json_kv_u64(&j, "x", 1);
	ct_json_kv_u64(&j, "y", 2);
	ct_json_obj_end(&j);
	ct_json_u64(&j, 2);
	ct_json_arr_end(&j);
	ct_json_kv_arr_begin(&j, "e");
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_string_equal(sb.buf, "{\n\"a\":1,\n\"v\":[\n{\"x\":1,\"y\":2},\n2\n],\n\"e\":[]\n}");
	assert_int_equal(json_check(sb.buf, sb.len, NULL, NULL), 0);
	strbuf_release(&sb);
}

static void test_json_keys(void **state)
{
	static const char *const want[] = { "", "B", "A\x1b[31m\"\\\n", "1", "k\xff", "v\xc3" };
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "", "B");
	ct_json_kv_str(&j, "A\x1b[31m\"\\\n", "1");
	ct_json_kv_str(&j, "k\xff", "v\xc3");
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_string_equal(sb.buf, "{\"\":\"B\",\"A\\u001b[31m\\\"\\\\\\n\":\"1\","
				    "\"k\\udcff\":\"v\\udcc3\"}");
	assert_doc(&sb, want, NULL, ARRAY_SIZE(want));
	strbuf_release(&sb);
}

static void test_json_escape_rule(void **state)
{
	/* every control, DEL, C1 as UTF-8, U+2028/9, valid non-BMP, bad bytes, a NUL */
	static const char in[] = "\x01\x1f\x7f\xc2\x80\xc2\x9f\xc2\xa0\xe2\x80\xa8\xe2\x80\xa9"
				 "\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80\xe2\x82\0z";
	static const char want[] = "\"\\u0001\\u001f\\u007f\\u0080\\u009f\xc2\xa0\\u2028\\u2029"
				   "\xf0\x9f\x98\x80\\udced\\udca0\\udc80\\udcc0\\udcaf\\udcf4"
				   "\\udc90\\udc80\\udc80\\udce2\\udc82\\u0000z\"";
	const char *w[1] = { in };
	size_t wl[1] = { sizeof(in) - 1 };
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	ct_json_init(&j, &sb);
	ct_json_strn(&j, in, sizeof(in) - 1);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_string_equal(sb.buf, want);
	assert_doc(&sb, w, wl, 1);
	strbuf_release(&sb);
}

/* The page-safe form: no "</script>" or "<!--" can appear; a bad byte is U+FFFD. */
static void test_json_escape_html(void **state)
{
	static const char in[] = "</script><!--&\"\xff\x01\xe2\x80\xa8\xc3\xbcz";
	static const char want[] = "\\u003c/script\\u003e\\u003c!--\\u0026\\\"\xef\xbf\xbd"
				   "\\u0001\\u2028\xc3\xbcz";
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	assert_int_equal(ct_json_escape_html(&sb, in, sizeof(in) - 1), 0);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
	assert_int_equal(ct_json_escape(&sb, "<&>", 3), 0);
	assert_string_equal(sb.buf, "<&>");
	strbuf_release(&sb);
}

static void test_json_misuse(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;

	/* a value in an object without a key */
	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_u64(&j, 1);
	ct_json_kv_u64(&j, "a", 1); /* no-op after the error */
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	assert_string_equal(sb.buf, "{");
	strbuf_reset(&sb);

	/* a key in an array; a mismatched end; two top-level values; unfinished */
	ct_json_init(&j, &sb);
	ct_json_arr_begin(&j);
	ct_json_key(&j, "a");
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	ct_json_arr_begin(&j);
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	ct_json_u64(&j, 1);
	ct_json_u64(&j, 2);
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	assert_string_equal(sb.buf, "1");
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_key(&j, "a");
	ct_json_obj_end(&j);
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	assert_int_equal(ct_json_finish(&j), -EINVAL);
	strbuf_release(&sb);
}

static void test_json_depth_and_cap(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct strbuf small = STRBUF_INIT_MAX(10);
	struct ct_json j;
	unsigned i;

	ct_json_init(&j, &sb);
	for (i = 0; i < CT_JSON_MAX_DEPTH; i++)
		ct_json_arr_begin(&j);
	for (i = 0; i < CT_JSON_MAX_DEPTH; i++)
		ct_json_arr_end(&j);
	assert_int_equal(ct_json_finish(&j), 0);
	assert_int_equal(json_check(sb.buf, sb.len, NULL, NULL), 0);
	strbuf_reset(&sb);
	ct_json_init(&j, &sb);
	for (i = 0; i <= CT_JSON_MAX_DEPTH; i++)
		ct_json_arr_begin(&j);
	assert_int_equal(ct_json_finish(&j), -E2BIG);
	strbuf_release(&sb);

	/* the strbuf's cap is the writer's error, and it sticks */
	ct_json_init(&j, &small);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "key", "a long value");
	ct_json_kv_u64(&j, "k", 1);
	assert_int_equal(ct_json_finish(&j), -EMSGSIZE);
	assert_int_equal(strbuf_error(&small), -EMSGSIZE);
	strbuf_release(&small);
}

static void test_json_check_rejects(void **state)
{
	static const char *const bad[] = { "", "{,\"B\":1}", "{\"a\":1,}", "[1,]", "01", "1.", "-",
					   "+1", "\"\x01\"", "\"\xff\"", "\"\\udc00\"", "\"\\ud800\"",
					   "[1] [2]", "{\"a\"}", "nul", "\"\\x\"", "[" };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(json_check(bad[i], strlen(bad[i]), NULL, NULL), -EBADMSG);
	static const char good[] = " {\"a\":[1,-0.5e+3,true,false,null,\"\\ud83d\\ude00\"]} ";

	assert_int_equal(json_check(good, strlen(good), NULL, NULL), 0);
}

static void test_term_escape(void **state)
{
	static const char in[] = "a\\b\n\r\t\x1b[31m\x7f\xc2\x9b\xe2\x80\xae\xc3\xa9\xff\xe2\x82 ok";
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	assert_int_equal(ct_term_escape(&sb, in, sizeof(in) - 1), 0);
	assert_string_equal(sb.buf, "a\\\\b\\n\\r\\t\\x1b[31m\\x7f\\u{009b}\\u{202e}\xc3\xa9"
				    "\\xff\\xe2\\x82 ok");
	assert_true(ct_term_is_safe("plain \xc3\xa9", 8));
	assert_false(ct_term_is_safe("\x1b", 1));
	strbuf_reset(&sb);
	assert_int_equal(ct_term_escape_str(&sb, NULL), 0);
	assert_string_equal(sb.buf, "(null)");
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_json_keys),
		cmocka_unit_test(test_json_escape_rule),
		cmocka_unit_test(test_json_escape_html),
		cmocka_unit_test(test_json_misuse),
		cmocka_unit_test(test_json_depth_and_cap),
		cmocka_unit_test(test_json_check_rejects),
		cmocka_unit_test(test_term_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
