/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the GC heap bulk-event decoders (gcheap.c): layouts for
 * 8- and 4-byte pointers, counts that do not fit the payload, variable-size
 * values (BulkType names and type parameters, static roots' field names).
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>

#include "common/cursor.h"
#include "nettrace/nettrace.h"

struct pb {
	uint8_t b[512];
	size_t n;
};

static void u8(struct pb *p, uint8_t v)
{
	p->b[p->n++] = v;
}

static void u16(struct pb *p, uint16_t v)
{
	ct_put_le16(p->b + p->n, v);
	p->n += 2;
}

static void u32(struct pb *p, uint32_t v)
{
	ct_put_le32(p->b + p->n, v);
	p->n += 4;
}

static void u64(struct pb *p, uint64_t v)
{
	ct_put_le64(p->b + p->n, v);
	p->n += 8;
}

static void ptr(struct pb *p, unsigned ps, uint64_t v)
{
	if (ps == 4)
		u32(p, (uint32_t)v);
	else
		u64(p, v);
}

static void str16(struct pb *p, const char *s)
{
	while (*s)
		u16(p, (uint8_t)*s++);
	u16(p, 0);
}

static void test_nodes_edges(void **state)
{
	unsigned ps;

	(void)state;
	for (ps = 4; ps <= 8; ps += 4) {
		struct pb p = { .n = 0 };
		struct nt_gc_bulk b;
		struct nt_gc_node n;

		u32(&p, 7);
		u32(&p, 2);
		u16(&p, 1);
		ptr(&p, ps, 0x1000);
		u64(&p, 32);
		u64(&p, 0xA1);
		u64(&p, 3);
		ptr(&p, ps, 0x2000);
		u64(&p, 24);
		u64(&p, 0xA2);
		u64(&p, 0);
		assert_int_equal(nt_decode_gc_bulk_node(p.b, p.n, ps, &b), 0);
		assert_int_equal(b.index, 7);
		assert_int_equal(b.count, 2);
		nt_gc_bulk_node_get(&b, 1, &n);
		assert_int_equal(n.address, 0x2000);
		assert_int_equal(n.size, 24);
		assert_int_equal(n.type_id, 0xA2);
		assert_int_equal(n.edge_count, 0);
		/* one byte short */
		assert_int_equal(nt_decode_gc_bulk_node(p.b, p.n - 1, ps, &b), -EBADMSG);
		/* a count larger than the payload */
		ct_put_le32(p.b + 4, 0xffffffffu);
		assert_int_equal(nt_decode_gc_bulk_node(p.b, p.n, ps, &b), -EBADMSG);

		p.n = 0;
		u32(&p, 0);
		u32(&p, 2);
		u16(&p, 1);
		ptr(&p, ps, 0x3000);
		u32(&p, 0);
		ptr(&p, ps, 0x4000);
		u32(&p, 0);
		assert_int_equal(nt_decode_gc_bulk_edge(p.b, p.n, ps, &b), 0);
		assert_int_equal(nt_gc_bulk_edge_get(&b, 1), 0x4000);
	}
	assert_int_equal(nt_decode_gc_bulk_node("", 0, 8, &(struct nt_gc_bulk){ 0 }), -EBADMSG);
	assert_int_equal(nt_decode_gc_bulk_node("0123456789", 10, 2, &(struct nt_gc_bulk){ 0 }), -EINVAL);
}

static void test_roots(void **state)
{
	struct pb p = { .n = 0 };
	struct nt_gc_bulk b;
	struct nt_gc_root r;
	struct nt_gc_cwt c;
	struct nt_gc_static_root s;
	size_t off = 0;
	uint32_t i = 0;

	(void)state;
	u32(&p, 0);
	u32(&p, 1);
	u16(&p, 1);
	u64(&p, 0x5000);
	u8(&p, 2);
	u32(&p, NT_ROOT_FLAG_PINNING);
	u64(&p, 0x77);
	assert_int_equal(nt_decode_gc_bulk_root(p.b, p.n, 8, &b), 0);
	nt_gc_bulk_root_get(&b, 0, &r);
	assert_int_equal(r.address, 0x5000);
	assert_int_equal(r.kind, 2);
	assert_int_equal(r.flags, NT_ROOT_FLAG_PINNING);
	assert_int_equal(r.root_id, 0x77);

	p.n = 0;
	u32(&p, 0);
	u32(&p, 1);
	u16(&p, 1);
	u64(&p, 1);
	u64(&p, 2);
	u64(&p, 3);
	assert_int_equal(nt_decode_gc_bulk_cwt(p.b, p.n, 8, &b), 0);
	nt_gc_bulk_cwt_get(&b, 0, &c);
	assert_int_equal(c.value, 2);

	p.n = 0;
	u32(&p, 2);
	u64(&p, 1);
	u16(&p, 1);
	u64(&p, 0x10);
	u64(&p, 0x6000);
	u64(&p, 0xA1);
	u32(&p, 0);
	str16(&p, "Leaked");
	u64(&p, 0x11);
	u64(&p, 0x7000);
	u64(&p, 0xA2);
	u32(&p, 0);
	str16(&p, "Holder");
	assert_int_equal(nt_decode_gc_bulk_static_root(p.b, p.n, 8, &b), 0);
	assert_int_equal(nt_gc_bulk_static_root_next(&b, &off, &i, &s), 0);
	assert_int_equal(s.object, 0x6000);
	assert_true(nt_str16_eq(&s.field, "Leaked"));
	assert_int_equal(nt_gc_bulk_static_root_next(&b, &off, &i, &s), 0);
	assert_true(nt_str16_eq(&s.field, "Holder"));
	assert_int_equal(nt_gc_bulk_static_root_next(&b, &off, &i, &s), 1);
	/* the name's terminator cut off */
	off = 0;
	i = 0;
	assert_int_equal(nt_decode_gc_bulk_static_root(p.b, p.n - 2, 8, &b), 0);
	assert_int_equal(nt_gc_bulk_static_root_next(&b, &off, &i, &s), 0);
	assert_int_equal(nt_gc_bulk_static_root_next(&b, &off, &i, &s), -EBADMSG);
}

static void test_bulk_type(void **state)
{
	struct pb p = { .n = 0 };
	struct nt_gc_bulk b;
	struct nt_bulk_type t;
	size_t off = 0;
	uint32_t i = 0;

	(void)state;
	u32(&p, 2);
	u16(&p, 1);
	u64(&p, 0xA1);
	u64(&p, 0x99);
	u32(&p, 0);
	u32(&p, 0);
	u8(&p, 0x12);
	str16(&p, "System.Collections.Generic.List`1");
	u32(&p, 1);
	u64(&p, 0xA2);
	u64(&p, 0xA2);
	u64(&p, 0x99);
	u32(&p, 0);
	u32(&p, 0x8);
	u8(&p, 0x1d);
	str16(&p, "Foo[]");
	u32(&p, 0);
	assert_int_equal(nt_decode_bulk_type(p.b, p.n, 8, &b), 0);
	assert_int_equal(nt_bulk_type_next(&b, &off, &i, &t), 0);
	assert_int_equal(t.type_id, 0xA1);
	assert_int_equal(t.nparams, 1);
	assert_true(nt_str16_eq(&t.name, "System.Collections.Generic.List`1"));
	assert_int_equal(nt_bulk_type_next(&b, &off, &i, &t), 0);
	assert_int_equal(t.flags, 0x8);
	assert_true(nt_str16_eq(&t.name, "Foo[]"));
	assert_int_equal(nt_bulk_type_next(&b, &off, &i, &t), 1);
	/* the second value cut short */
	off = 0;
	i = 0;
	assert_int_equal(nt_decode_bulk_type(p.b, p.n - 12, 8, &b), 0);
	assert_int_equal(nt_bulk_type_next(&b, &off, &i, &t), 0);
	assert_int_equal(nt_bulk_type_next(&b, &off, &i, &t), -EBADMSG);
	/* more values announced than could fit */
	ct_put_le32(p.b, 1000);
	assert_int_equal(nt_decode_bulk_type(p.b, p.n, 8, &b), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodes_edges),
		cmocka_unit_test(test_roots),
		cmocka_unit_test(test_bulk_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
