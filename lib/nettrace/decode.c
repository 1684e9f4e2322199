/* SPDX-License-Identifier: MIT */
/*
 * decode.c - payload decoders for the runtime's native events, whose
 * metadata carries no field list (layouts from the CLR event manifest; see
 * docs/formats/nettrace.md for the versions checked against real bytes).
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/utf16.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

int nt_str16_utf8(const struct nt_str16 *s, struct strbuf *out)
{
	if (!s->p || !s->nunits)
		return 0;
	return utf16le_to_utf8(out, s->p, s->nunits, false);
}

bool nt_str16_eq(const struct nt_str16 *s, const char *z)
{
	size_t n = strlen(z), i;

	if (n != s->nunits)
		return false;
	for (i = 0; i < n; i++)
		if (ct_le16(s->p + 2 * i) != (uint8_t)z[i] || (uint8_t)z[i] >= 0x80)
			return false;
	return true;
}

static void cur_ptr(struct cursor *c, unsigned ptr_size, uint64_t *v)
{
	uint32_t v32;

	if (ptr_size == 4) {
		cur_u32(c, &v32);
		*v = v32;
	} else {
		cur_u64(c, v);
	}
}

static int check_ptr(unsigned ptr_size)
{
	return ptr_size == 4 || ptr_size == 8 ? 0 : -EINVAL;
}

static void cur_guid(struct cursor *c, uint8_t g[16])
{
	const uint8_t *p = cur_take(c, 16);

	if (p)
		memcpy(g, p, 16);
}

int nt_decode_method_load(const void *p, size_t len, unsigned version, unsigned ptr_size,
			  struct nt_method_load *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u64(&c, &out->method_id);
	cur_u64(&c, &out->module_id);
	cur_u64(&c, &out->start);
	cur_u32(&c, &out->size);
	cur_u32(&c, &out->token);
	cur_u32(&c, &out->flags);
	nt_cur_str16(&c, &out->ns);
	nt_cur_str16(&c, &out->name);
	nt_cur_str16(&c, &out->sig);
	if (version >= 1)
		cur_u16(&c, &out->clr_instance);
	if (version >= 2)
		cur_u64(&c, &out->rejit_id);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_module_load(const void *p, size_t len, unsigned version, unsigned ptr_size,
			  struct nt_module_load *out)
{
	struct cursor c;
	uint32_t reserved;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u64(&c, &out->module_id);
	cur_u64(&c, &out->assembly_id);
	cur_u32(&c, &out->flags);
	cur_u32(&c, &reserved);
	nt_cur_str16(&c, &out->il_path);
	nt_cur_str16(&c, &out->native_path);
	if (version >= 1)
		cur_u16(&c, &out->clr_instance);
	if (version >= 2) {
		cur_guid(&c, out->managed_pdb_sig);
		cur_u32(&c, &out->managed_pdb_age);
		nt_cur_str16(&c, &out->managed_pdb_path);
		cur_guid(&c, out->native_pdb_sig);
		cur_u32(&c, &out->native_pdb_age);
		nt_cur_str16(&c, &out->native_pdb_path);
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_gc_start(const void *p, size_t len, unsigned version, unsigned ptr_size,
		       struct nt_gc_start *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u32(&c, &out->count);
	if (version >= 1)
		cur_u32(&c, &out->depth);
	cur_u32(&c, &out->reason);
	if (version >= 1) {
		cur_u32(&c, &out->type);
		cur_u16(&c, &out->clr_instance);
	}
	if (version >= 2)
		cur_u64(&c, &out->client_seq);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_gc_end(const void *p, size_t len, unsigned version, unsigned ptr_size,
		     struct nt_gc_end *out)
{
	struct cursor c;
	uint16_t d16;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u32(&c, &out->count);
	if (version >= 1) {
		cur_u32(&c, &out->depth);
		cur_u16(&c, &out->clr_instance);
	} else {
		cur_u16(&c, &d16);
		out->depth = d16;
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_gc_heap_stats(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    struct nt_gc_heap_stats *out)
{
	struct cursor c;
	int i;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	for (i = 0; i < 4; i++) {
		cur_u64(&c, &out->gen_size[i]);
		cur_u64(&c, &out->promoted[i]);
	}
	cur_u64(&c, &out->finalization_promoted_size);
	cur_u64(&c, &out->finalization_promoted_count);
	cur_u32(&c, &out->pinned_objects);
	cur_u32(&c, &out->sink_blocks);
	cur_u32(&c, &out->gc_handles);
	if (version >= 1)
		cur_u16(&c, &out->clr_instance);
	if (version >= 2) {
		cur_u64(&c, &out->gen_size[4]);
		cur_u64(&c, &out->promoted[4]);
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_gc_alloc_tick(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    struct nt_gc_alloc_tick *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (check_ptr(ptr_size))
		return -EINVAL;
	cur_init(&c, p, len);
	cur_u32(&c, &out->amount);
	cur_u32(&c, &out->kind);
	if (version >= 1)
		cur_u16(&c, &out->clr_instance);
	if (version >= 2) {
		cur_u64(&c, &out->amount64);
		cur_ptr(&c, ptr_size, &out->type_id);
		nt_cur_str16(&c, &out->type_name);
		cur_u32(&c, &out->heap_index);
	} else {
		out->amount64 = out->amount;
	}
	if (version >= 3)
		cur_ptr(&c, ptr_size, &out->address);
	if (version >= 4)
		cur_u64(&c, &out->object_size);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_gc_triggered(const void *p, size_t len, unsigned version, unsigned ptr_size,
			   struct nt_gc_triggered *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u32(&c, &out->reason);
	cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_suspend_ee(const void *p, size_t len, unsigned version, unsigned ptr_size,
			 struct nt_suspend_ee *out)
{
	struct cursor c;
	uint16_t r16;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	if (version >= 1) {
		cur_u32(&c, &out->reason);
		cur_u32(&c, &out->count);
		cur_u16(&c, &out->clr_instance);
	} else {
		cur_u16(&c, &r16);
		out->reason = r16;
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_restart_ee(const void *p, size_t len, unsigned version, unsigned ptr_size,
			 struct nt_suspend_ee *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	if (version >= 1)
		cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_exception(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_exception *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (check_ptr(ptr_size))
		return -EINVAL;
	if (version < 1)
		return len ? -EBADMSG : 0; /* version 0 has no payload */
	cur_init(&c, p, len);
	nt_cur_str16(&c, &out->type);
	nt_cur_str16(&c, &out->message);
	cur_ptr(&c, ptr_size, &out->eip);
	cur_u32(&c, &out->hresult);
	cur_u16(&c, &out->flags);
	cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_contention_start(const void *p, size_t len, unsigned version, unsigned ptr_size,
			       struct nt_contention *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (check_ptr(ptr_size))
		return -EINVAL;
	if (version < 1)
		return 0; /* version 0 has no payload */
	cur_init(&c, p, len);
	cur_u8(&c, &out->flags);
	cur_u16(&c, &out->clr_instance);
	if (version >= 2) {
		cur_ptr(&c, ptr_size, &out->lock_id);
		cur_ptr(&c, ptr_size, &out->object_id);
		cur_u64(&c, &out->owner_thread_id);
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_contention_stop(const void *p, size_t len, unsigned version, unsigned ptr_size,
			      struct nt_contention *out)
{
	struct cursor c;
	uint64_t bits;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u8(&c, &out->flags);
	cur_u16(&c, &out->clr_instance);
	if (version >= 1) {
		cur_u64(&c, &bits);
		memcpy(&out->duration_ns, &bits, sizeof(bits));
	}
	return c.err ? -EBADMSG : 0;
}

int nt_decode_tp_worker(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_tp_worker *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_u32(&c, &out->active);
	cur_u32(&c, &out->retired);
	cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

static void cur_f64(struct cursor *c, double *d)
{
	uint64_t bits;

	cur_u64(c, &bits);
	memcpy(d, &bits, sizeof(bits));
}

int nt_decode_tp_adjust_sample(const void *p, size_t len, unsigned version, unsigned ptr_size,
			       struct nt_tp_adjust *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_f64(&c, &out->throughput);
	cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_tp_adjust(const void *p, size_t len, unsigned version, unsigned ptr_size,
			struct nt_tp_adjust *out)
{
	struct cursor c;

	memset(out, 0, sizeof(*out));
	cur_init(&c, p, len);
	cur_f64(&c, &out->throughput);
	cur_u32(&c, &out->new_count);
	cur_u32(&c, &out->reason);
	cur_u16(&c, &out->clr_instance);
	return c.err ? -EBADMSG : 0;
}

int nt_decode_thread_sample(const void *p, size_t len, unsigned version, unsigned ptr_size,
			    uint32_t *type)
{
	struct cursor c;

	cur_init(&c, p, len);
	cur_u32(&c, type);
	return c.err ? -EBADMSG : 0;
}
