/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/strparse.h"
#include "fleet/fleet.h"

static void test_clean(void **state)
{
	char out[FLEET_LABEL_MAX + 1], big[600];

	(void)state;
	fleet_label_clean("checkout-svc", 12, out, sizeof(out));
	assert_string_equal(out, "checkout-svc");
	/* label syntax, a line break, ESC, invalid UTF-8: all become '_' */
	fleet_label_clean("a},b=c{\"d\n\x1b[31m\xff", 16, out, sizeof(out));
	assert_string_equal(out, "a__b_c__d___31m_");
	fleet_label_clean("10.0.12+abc/x:y@z.q", 19, out, sizeof(out));
	assert_string_equal(out, "10.0.12+abc/x:y@z.q");
	memset(big, 'x', sizeof(big));
	fleet_label_clean(big, sizeof(big), out, sizeof(out));
	assert_int_equal(strlen(out), FLEET_LABEL_MAX);
	fleet_label_clean("abc", 3, out, 3);
	assert_string_equal(out, "ab");
}

static void test_name(void **state)
{
	struct fleet_labels l;
	struct strbuf sb = STRBUF_INIT, esc = STRBUF_INIT;

	(void)state;
	memset(&l, 0, sizeof(l));
	ct_strlcpy(l.service, "svc", sizeof(l.service));
	l.pid = 42;
	ct_strlcpy(l.host, "node-1", sizeof(l.host));
	ct_strlcpy(l.pod_name, "p_x", sizeof(l.pod_name));
	assert_int_equal(fleet_pyroscope_name(&l, &sb), 0);
	/* empty labels are left out, the order is fixed */
	assert_string_equal(sb.buf, "svc{service_name=svc,process_pid=42,host_name=node-1,k8s_pod_name=p_x}");
	assert_int_equal(fleet_url_escape(sb.buf, &esc), 0);
	assert_string_equal(esc.buf, "svc%7Bservice_name%3Dsvc%2Cprocess_pid%3D42%2Chost_name%3Dnode-1%2Ck8s_pod_name%3Dp_x%7D");
	strbuf_release(&sb);
	strbuf_release(&esc);
}

/* reads a varint at *p (test data is well-formed) */
static uint64_t varint(const uint8_t **p)
{
	uint64_t v = 0;
	int s = 0;

	while (**p & 0x80) {
		v |= (uint64_t)(**p & 0x7f) << s;
		s += 7;
		(*p)++;
	}
	v |= (uint64_t)**p << s;
	(*p)++;
	return v;
}

static void test_otlp(void **state)
{
	struct flame *f;
	struct flame_opts fo = { 0 };
	struct flame_otlp_attr a[2] = { { "service.name", "s\xff", 0, false },
					{ "process.pid", NULL, 42, true } };
	struct strbuf sb = STRBUF_INIT;
	const char *st1[] = { "main", "hot" }, *st2[] = { "main", "cold" };
	const uint8_t *p, *end;
	unsigned top[3] = { 0 };

	(void)state;
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(flame_add(f, st1, 2, 3), 0);
	assert_int_equal(flame_add(f, st2, 2, 1), 0);
	fo.period = 52631578;
	fo.time_unix_ns = 1700000000000000000ll;
	fo.duration_ns = 10000000000ull;
	assert_int_equal(flame_otlp_request(f, &fo, a, 2, "clrtap", "t", NULL, &sb), 0);
	/* top level: exactly one resource_profiles (1) and one dictionary (2) */
	p = (const uint8_t *)sb.buf;
	end = p + sb.len;
	while (p < end) {
		uint64_t key = varint(&p), len;

		assert_int_equal(key & 7, 2);
		assert_true((key >> 3) == 1 || (key >> 3) == 2);
		top[key >> 3]++;
		len = varint(&p);
		assert_true(len <= (uint64_t)(end - p));
		p += len;
	}
	assert_int_equal(top[1], 1);
	assert_int_equal(top[2], 1);
	/* the invalid byte of the attribute became U+FFFD */
	assert_non_null(memmem(sb.buf, sb.len, "s\xef\xbf\xbd", 4));
	assert_non_null(memmem(sb.buf, sb.len, "hot", 3));
	strbuf_release(&sb);
	flame_free(f);
}

static void test_types(void **state)
{
	unsigned t = 99;

	(void)state;
	assert_int_equal(fleet_types_parse("cpu", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(fleet_types_parse("cpu,alloc,exceptions,lock", &t), 0);
	assert_int_equal(t, PROFILE_EP_EV_ALLOC | PROFILE_EP_EV_EXC | PROFILE_EP_EV_LOCK);
	assert_int_equal(fleet_types_parse("lock", &t), 0);
	assert_int_equal(t, PROFILE_EP_EV_LOCK);
	assert_int_equal(fleet_types_parse("cpu,allocs", &t), -EINVAL);
	assert_int_equal(fleet_types_parse("alloc,,x", &t), -EINVAL);
	assert_string_equal(fleet_type_name(0), "alloc");
	assert_string_equal(fleet_type_name(2), "lock");
	assert_null(fleet_type_name(3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_otlp),
		cmocka_unit_test(test_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
