/* SPDX-License-Identifier: MIT */
/*
 * gcheap.c - decoders of the GC heap snapshot bulk events (BulkType,
 * GCBulkNode, GCBulkEdge, GCBulkRootEdge, GCBulkRootConditionalWeakTable-
 * ElementEdge, GCBulkRootStaticVar). Layouts: docs/formats/nettrace.md and
 * docs/formats/gcdump.md. Every view is checked once (count x stride fits in
 * the payload), so the _get accessors need no further checks.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

static uint64_t get_ptr(const uint8_t *p, unsigned ptr_size)
{
	return ptr_size == 4 ? ct_le32(p) : ct_le64(p);
}

/* u32 Index; u32 Count; u16 ClrInstanceID; Count x stride bytes. */
static int decode_fixed(const void *p, size_t len, unsigned ptr_size, unsigned stride,
			struct nt_gc_bulk *out)
{
	const uint8_t *b = p;

	memset(out, 0, sizeof(*out));
	if (ptr_size != 4 && ptr_size != 8)
		return -EINVAL;
	if (len < 10)
		return -EBADMSG;
	out->index = ct_le32(b);
	out->count = ct_le32(b + 4);
	out->clr_instance = ct_le16(b + 8);
	out->values = b + 10;
	out->values_len = len - 10;
	out->ptr_size = ptr_size;
	out->stride = stride;
	if ((uint64_t)out->count * stride > out->values_len)
		return -EBADMSG;
	return 0;
}

int nt_decode_gc_bulk_node(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	return decode_fixed(p, len, ptr_size, ptr_size + 24, out);
}

void nt_gc_bulk_node_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_node *out)
{
	const uint8_t *v = b->values + (size_t)i * b->stride;

	out->address = get_ptr(v, b->ptr_size);
	v += b->ptr_size;
	out->size = ct_le64(v);
	out->type_id = ct_le64(v + 8);
	out->edge_count = ct_le64(v + 16);
}

int nt_decode_gc_bulk_edge(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	return decode_fixed(p, len, ptr_size, ptr_size + 4, out);
}

uint64_t nt_gc_bulk_edge_get(const struct nt_gc_bulk *b, uint32_t i)
{
	return get_ptr(b->values + (size_t)i * b->stride, b->ptr_size);
}

int nt_decode_gc_bulk_root(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	return decode_fixed(p, len, ptr_size, 2 * ptr_size + 5, out);
}

void nt_gc_bulk_root_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_root *out)
{
	const uint8_t *v = b->values + (size_t)i * b->stride;

	out->address = get_ptr(v, b->ptr_size);
	v += b->ptr_size;
	out->kind = v[0];
	out->flags = ct_le32(v + 1);
	out->root_id = get_ptr(v + 5, b->ptr_size);
}

int nt_decode_gc_bulk_cwt(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	return decode_fixed(p, len, ptr_size, 3 * ptr_size, out);
}

void nt_gc_bulk_cwt_get(const struct nt_gc_bulk *b, uint32_t i, struct nt_gc_cwt *out)
{
	const uint8_t *v = b->values + (size_t)i * b->stride;

	out->key = get_ptr(v, b->ptr_size);
	out->value = get_ptr(v + b->ptr_size, b->ptr_size);
	out->root_id = get_ptr(v + 2 * b->ptr_size, b->ptr_size);
}

int nt_decode_bulk_type(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	const uint8_t *b = p;

	memset(out, 0, sizeof(*out));
	if (ptr_size != 4 && ptr_size != 8)
		return -EINVAL;
	if (len < 6)
		return -EBADMSG;
	out->count = ct_le32(b);
	out->clr_instance = ct_le16(b + 4);
	out->values = b + 6;
	out->values_len = len - 6;
	out->ptr_size = ptr_size;
	/* each value takes at least 31 bytes */
	if ((uint64_t)out->count * 31 > out->values_len)
		return -EBADMSG;
	return 0;
}

int nt_bulk_type_next(const struct nt_gc_bulk *b, size_t *off, uint32_t *i, struct nt_bulk_type *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (*i >= b->count)
		return 1;
	if (*off > b->values_len)
		return -EBADMSG;
	cur_init(&c, b->values + *off, b->values_len - *off);
	cur_u64(&c, &out->type_id);
	cur_u64(&c, &out->module_id);
	cur_u32(&c, &out->name_id);
	cur_u32(&c, &out->flags);
	cur_u8(&c, &out->cor_element_type);
	nt_cur_str16(&c, &out->name);
	cur_u32(&c, &out->nparams);
	if (!c.err && (uint64_t)out->nparams * 8 > cur_left(&c))
		return -EBADMSG;
	if (!c.err)
		cur_skip(&c, (size_t)out->nparams * 8);
	if (c.err)
		return -EBADMSG;
	*off += c.off;
	(*i)++;
	return 0;
}

int nt_decode_gc_bulk_static_root(const void *p, size_t len, unsigned ptr_size, struct nt_gc_bulk *out)
{
	const uint8_t *b = p;

	memset(out, 0, sizeof(*out));
	if (ptr_size != 4 && ptr_size != 8)
		return -EINVAL;
	if (len < 14)
		return -EBADMSG;
	out->count = ct_le32(b);
	out->clr_instance = ct_le16(b + 12);
	out->values = b + 14;
	out->values_len = len - 14;
	out->ptr_size = ptr_size;
	if ((uint64_t)out->count * 30 > out->values_len)
		return -EBADMSG;
	return 0;
}

int nt_gc_bulk_static_root_next(const struct nt_gc_bulk *b, size_t *off, uint32_t *i,
				struct nt_gc_static_root *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (*i >= b->count)
		return 1;
	if (*off > b->values_len)
		return -EBADMSG;
	cur_init(&c, b->values + *off, b->values_len - *off);
	cur_u64(&c, &out->root_id);
	cur_u64(&c, &out->object);
	cur_u64(&c, &out->type_id);
	cur_u32(&c, &out->flags);
	nt_cur_str16(&c, &out->field);
	if (c.err)
		return -EBADMSG;
	*off += c.off;
	(*i)++;
	return 0;
}
