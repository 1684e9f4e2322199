/* SPDX-License-Identifier: MIT */
/*
 * payload.c - walking self-describing (EventSource) payloads along their
 * metadata field list, and the EventCounters helper built on it.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/strbuf.h"
#include "common/utf16.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

struct walk {
	struct cursor c;
	const uint8_t *base; /* payload start, for DataLoc */
	size_t base_len;
	nt_value_fn fn;
	void *ctx;
	uint64_t budget; /* values left; bounds the work on empty structs */
};

/* Size of a fixed-size scalar, 0 when variable or unknown. */
static unsigned scalar_size(uint8_t type)
{
	switch (type) {
	case NT_T_I8:
	case NT_T_U8:
	case NT_T_CHAR8:
	case NT_T_BOOL8:
		return 1;
	case NT_T_CHAR16:
	case NT_T_I16:
	case NT_T_U16:
		return 2;
	case NT_T_BOOL32:
	case NT_T_I32:
	case NT_T_U32:
	case NT_T_F32:
		return 4;
	case NT_T_I64:
	case NT_T_U64:
	case NT_T_F64:
	case NT_T_DATETIME:
		return 8;
	case NT_T_DECIMAL:
	case NT_T_GUID:
		return 16;
	default:
		return 0;
	}
}

/* Byte size of a fixed-size type (for RelLoc/DataLoc elements); 0 if not fixed. */
static size_t fixed_size(const struct nt_field *f, unsigned depth)
{
	size_t sum = 0, s;
	uint16_t i;

	if (depth > NT_MAX_DEPTH)
		return 0;
	if (f->type == NT_T_OBJECT) {
		for (i = 0; i < f->nfields; i++) {
			s = fixed_size(&f->fields[i], depth + 1);
			if (!s)
				return 0;
			sum += s;
		}
		return sum;
	}
	if (f->type == NT_T_FIXEDARRAY && f->elem) {
		s = fixed_size(f->elem, depth + 1);
		return s * f->fixed_count;
	}
	return scalar_size(f->type);
}

static int emit(struct walk *w, struct nt_value *v)
{
	if (!w->budget)
		return -EBADMSG;
	w->budget--;
	return w->fn(w->ctx, v);
}

static int walk_one(struct walk *w, const struct nt_field *f, unsigned depth, int32_t index);

static int walk_fields(struct walk *w, const struct nt_field *f, uint32_t n, unsigned depth)
{
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = walk_one(w, &f[i], depth, -1);
		if (ret)
			return ret;
	}
	return 0;
}

static int walk_elems(struct walk *w, const struct nt_field *f, uint32_t count, unsigned depth)
{
	uint32_t i;
	int ret;

	if (!f->elem)
		return -EBADMSG;
	for (i = 0; i < count; i++) {
		ret = walk_one(w, f->elem, depth + 1, (int32_t)i);
		if (ret)
			return ret;
	}
	return 0;
}

static int walk_loc(struct walk *w, const struct nt_field *f, unsigned depth, struct nt_value *v)
{
	uint32_t loc, size, off;
	size_t esize, start;
	struct cursor saved;
	int ret;

	if (cur_u32(&w->c, &loc))
		return -EBADMSG;
	size = loc >> 16;
	off = loc & 0xffff;
	if (!f->elem)
		return -EBADMSG;
	esize = fixed_size(f->elem, depth + 1);
	if (!esize)
		return -ENOTSUP;
	if (f->type == NT_T_RELLOC)
		start = (size_t)(w->c.p + w->c.off - w->base) + off;
	else
		start = off;
	if (start > w->base_len || size > w->base_len - start || size % esize)
		return -EBADMSG;
	v->kind = NT_V_ARRAY_BEGIN;
	v->count = (uint32_t)(size / esize);
	ret = emit(w, v);
	if (ret)
		return ret;
	saved = w->c;
	cur_init(&w->c, w->base + start, size);
	ret = walk_elems(w, f, v->count, depth);
	w->c = saved;
	if (ret)
		return ret;
	v->kind = NT_V_ARRAY_END;
	return emit(w, v);
}

static int walk_one(struct walk *w, const struct nt_field *f, unsigned depth, int32_t index)
{
	struct nt_value v;
	const uint8_t *p;
	unsigned size;
	uint16_t n16;
	int ret;

	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	memset(&v, 0, sizeof(v));
	v.field = f;
	v.depth = depth;
	v.index = index;
	switch (f->type) {
	case NT_T_OBJECT:
		v.kind = NT_V_OBJECT_BEGIN;
		ret = emit(w, &v);
		if (!ret)
			ret = walk_fields(w, f->fields, f->nfields, depth + 1);
		if (ret)
			return ret;
		v.kind = NT_V_OBJECT_END;
		return emit(w, &v);
	case NT_T_ARRAY:
	case NT_T_FIXEDARRAY:
		if (f->type == NT_T_ARRAY) {
			if (cur_u16(&w->c, &n16))
				return -EBADMSG;
			v.count = n16;
		} else {
			v.count = f->fixed_count;
		}
		v.kind = NT_V_ARRAY_BEGIN;
		ret = emit(w, &v);
		if (!ret)
			ret = walk_elems(w, f, v.count, depth);
		if (ret)
			return ret;
		v.kind = NT_V_ARRAY_END;
		return emit(w, &v);
	case NT_T_RELLOC:
	case NT_T_DATALOC:
		return walk_loc(w, f, depth, &v);
	case NT_T_STRING:
		p = w->c.p + w->c.off;
		if (nt_cur_str16(&w->c, &v.str))
			return -EBADMSG;
		v.raw = p;
		v.raw_len = v.str.nunits * 2 + 2;
		break;
	case NT_T_VARINT:
	case NT_T_VARUINT:
		p = w->c.p + w->c.off;
		if (cur_varu64(&w->c, &v.u, 10))
			return -EBADMSG;
		v.raw = p;
		v.raw_len = (uint32_t)(w->c.p + w->c.off - p);
		if (f->type == NT_T_VARINT) {
			v.i = (int64_t)(v.u >> 1) ^ -(int64_t)(v.u & 1);
			v.u = (uint64_t)v.i;
		} else {
			v.i = (int64_t)v.u;
		}
		break;
	default:
		size = scalar_size(f->type);
		if (!size)
			return -ENOTSUP;
		p = cur_take(&w->c, size);
		if (!p)
			return -EBADMSG;
		v.raw = p;
		v.raw_len = size;
		switch (f->type) {
		case NT_T_I8:
			v.i = (int8_t)p[0];
			break;
		case NT_T_U8:
		case NT_T_CHAR8:
		case NT_T_BOOL8:
			v.i = p[0];
			break;
		case NT_T_I16:
			v.i = (int16_t)ct_le16(p);
			break;
		case NT_T_U16:
		case NT_T_CHAR16:
			v.i = ct_le16(p);
			break;
		case NT_T_I32:
		case NT_T_BOOL32:
			v.i = (int32_t)ct_le32(p);
			break;
		case NT_T_U32:
			v.i = ct_le32(p);
			break;
		case NT_T_F32: {
			uint32_t b = ct_le32(p);
			float fl;

			memcpy(&fl, &b, sizeof(fl));
			v.f = fl;
			break;
		}
		case NT_T_F64: {
			uint64_t b = ct_le64(p);

			memcpy(&v.f, &b, sizeof(v.f));
			break;
		}
		case NT_T_I64:
		case NT_T_U64:
		case NT_T_DATETIME:
			v.i = (int64_t)ct_le64(p);
			break;
		default: /* decimal, guid: raw bytes only */
			break;
		}
		if (f->type == NT_T_U64)
			v.u = ct_le64(p);
		else
			v.u = (uint64_t)v.i;
		break;
	}
	v.kind = NT_V_SCALAR;
	return emit(w, &v);
}

int nt_payload_walk(const struct nt_metadata *m, const void *p, size_t len, unsigned ptr_size,
		    nt_value_fn fn, void *ctx)
{
	struct walk w;

	if (!m || !fn || (!p && len))
		return -EINVAL;
	cur_init(&w.c, p, len);
	w.base = p;
	w.base_len = len;
	w.fn = fn;
	w.ctx = ctx;
	/* every value but an empty struct takes at least one byte */
	w.budget = (uint64_t)len * 4 + 4096;
	return walk_fields(&w, m->fields, m->nfields, 0);
}

int nt_value_format(const struct nt_value *v, struct strbuf *out)
{
	const uint8_t *g = v->raw;

	if (v->kind != NT_V_SCALAR)
		return -EINVAL;
	switch (v->field->type) {
	case NT_T_STRING:
		return nt_str16_utf8(&v->str, out);
	case NT_T_BOOL32:
	case NT_T_BOOL8:
		return strbuf_addstr(out, v->i ? "true" : "false");
	case NT_T_CHAR16:
		return utf16le_to_utf8(out, v->raw, 1, false);
	case NT_T_CHAR8:
		return strbuf_addch(out, (int)v->i);
	case NT_T_F32:
	case NT_T_F64:
		return strbuf_addf(out, "%.17g", v->f);
	case NT_T_U64:
	case NT_T_VARUINT:
		return strbuf_addf(out, "%" PRIu64, v->u);
	case NT_T_GUID:
		return strbuf_addf(out,
				   "%08" PRIx32 "-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
				   ct_le32(g), ct_le16(g + 4), ct_le16(g + 6), g[8], g[9], g[10],
				   g[11], g[12], g[13], g[14], g[15]);
	case NT_T_DECIMAL: {
		int i, err = 0;

		for (i = 0; i < 16 && !err; i++)
			err = strbuf_addf(out, "%02x", g[i]);
		return err;
	}
	default:
		return strbuf_addf(out, "%" PRId64, v->i);
	}
}

/* ------------------------------------------------------------------------ */
/* EventCounters                                                             */

struct counter_ctx {
	struct nt_counter *out;
	struct strbuf *sb;
	size_t off_name, off_disp, off_type, off_units; /* SIZE_MAX: not seen */
	bool has_mean, has_incr;
};

static int keep_str(struct counter_ctx *cc, const struct nt_value *v, size_t *off)
{
	int err;

	*off = cc->sb->len;
	err = nt_str16_utf8(&v->str, cc->sb);
	if (!err)
		err = strbuf_add(cc->sb, "", 1);
	return err;
}

static int counter_cb(void *ctx, const struct nt_value *v)
{
	struct counter_ctx *cc = ctx;
	const char *n = v->field->name;

	if (v->kind != NT_V_SCALAR || v->index >= 0)
		return 0;
	if (v->field->type == NT_T_STRING) {
		if (!strcmp(n, "Name"))
			return keep_str(cc, v, &cc->off_name);
		if (!strcmp(n, "DisplayName"))
			return keep_str(cc, v, &cc->off_disp);
		if (!strcmp(n, "CounterType"))
			return keep_str(cc, v, &cc->off_type);
		if (!strcmp(n, "DisplayUnits"))
			return keep_str(cc, v, &cc->off_units);
		return 0;
	}
	if (v->field->type == NT_T_F64 || v->field->type == NT_T_F32) {
		if (!strcmp(n, "Mean")) {
			cc->out->value = v->f;
			cc->has_mean = true;
		} else if (!strcmp(n, "Increment")) {
			cc->out->value = v->f;
			cc->has_incr = true;
		} else if (!strcmp(n, "Min")) {
			cc->out->min = v->f;
		} else if (!strcmp(n, "Max")) {
			cc->out->max = v->f;
		} else if (!strcmp(n, "IntervalSec")) {
			cc->out->interval_sec = v->f;
		}
		return 0;
	}
	if (v->field->type == NT_T_I32 && !strcmp(n, "Count"))
		cc->out->count = (int32_t)v->i;
	return 0;
}

int nt_counter_decode(const struct nt_metadata *m, const void *p, size_t len, unsigned ptr_size,
		      struct nt_counter *out, struct strbuf *sb)
{
	struct counter_ctx cc;
	int err;

	memset(out, 0, sizeof(*out));
	if (!m || strcmp(m->event_name, "EventCounters"))
		return -ENOENT;
	strbuf_reset(sb);
	memset(&cc, 0, sizeof(cc));
	cc.out = out;
	cc.sb = sb;
	cc.off_name = cc.off_disp = cc.off_type = cc.off_units = SIZE_MAX;
	err = nt_payload_walk(m, p, len, ptr_size, counter_cb, &cc);
	if (err)
		return err == -ENOTSUP ? -EBADMSG : err;
	if (cc.off_name == SIZE_MAX)
		return -ENOENT;
	/* pointers only now: sb may have moved while growing */
	out->name = sb->buf + cc.off_name;
	out->display_name = cc.off_disp == SIZE_MAX ? "" : sb->buf + cc.off_disp;
	out->counter_type = cc.off_type == SIZE_MAX ? "" : sb->buf + cc.off_type;
	out->units = cc.off_units == SIZE_MAX ? "" : sb->buf + cc.off_units;
	out->is_rate = cc.has_incr || !strcmp(out->counter_type, "Sum");
	return 0;
}
