/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/utf16.h"
#include "nettrace/nt_internal.h"

#define NO_CHILD UINT32_MAX

void nt_mbuild_init(struct nt_mbuild *b, uint32_t max_fields, size_t max_str)
{
	memset(b, 0, sizeof(*b));
	strbuf_init(&b->str, max_str);
	b->max_fields = max_fields;
}

void nt_mbuild_release(struct nt_mbuild *b)
{
	strbuf_release(&b->str);
	FREE_AND_NULL(b->f);
	b->nf = b->fcap = 0;
}

int nt_cur_str16(struct cursor *c, struct nt_str16 *s)
{
	size_t left = cur_left(c), i;
	const uint8_t *p = c->p + c->off;

	s->p = NULL;
	s->nunits = 0;
	if (c->err)
		return c->err;
	for (i = 0; i + 1 < left; i += 2) {
		if (p[i] == 0 && p[i + 1] == 0) {
			if (i / 2 > UINT32_MAX)
				break;
			s->p = p;
			s->nunits = (uint32_t)(i / 2);
			c->off += i + 2;
			return 0;
		}
	}
	c->err = -EBADMSG;
	return c->err;
}

/* Appends a NUL-terminated UTF-8 copy of a UTF-16 string; *off gets its offset. */
static int put_str16(struct nt_mbuild *b, const struct nt_str16 *s, uint32_t *off)
{
	int err;

	if (b->str.len > UINT32_MAX / 2)
		return -EFBIG;
	*off = (uint32_t)b->str.len;
	err = utf16le_to_utf8(&b->str, s->p, s->nunits, true);
	if (!err)
		err = strbuf_add(&b->str, "", 1);
	return err;
}

static int put_utf8(struct nt_mbuild *b, const uint8_t *p, size_t n, uint32_t *off)
{
	int err;

	if (b->str.len > UINT32_MAX / 2)
		return -EFBIG;
	*off = (uint32_t)b->str.len;
	err = strbuf_add(&b->str, p, n);
	if (!err)
		err = strbuf_add(&b->str, "", 1);
	return err;
}

/* Reserves n consecutive field slots; *first gets the index of the first one. */
static int reserve(struct nt_mbuild *b, uint32_t n, uint32_t *first)
{
	uint32_t i;

	if (n > b->max_fields || b->nf > b->max_fields - n)
		return -EFBIG;
	if (b->nf + n > b->fcap) {
		uint32_t ncap = b->fcap ? b->fcap : 16;
		struct nt_sfield *nf;

		while (ncap < b->nf + n)
			ncap *= 2;
		nf = realloc(b->f, (size_t)ncap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		b->f = nf;
		b->fcap = ncap;
	}
	*first = b->nf;
	for (i = 0; i < n; i++) {
		struct nt_sfield *f = &b->f[b->nf + i];

		f->name = 0;
		f->type = 0;
		f->nfields = 0;
		f->fixed_count = 0;
		f->child = NO_CHILD;
	}
	b->nf += n;
	return 0;
}

/* Type codes with a known size or encoding in V5 (TypeCode.Object..String). */
static bool v5_scalar_type(uint32_t t)
{
	return t >= NT_T_BOOL32 && t <= NT_T_STRING;
}

/* V5 "V1" field list: per field {u32 type, [u32 n + n fields if Object], str16 name}. */
static int v1_fields(struct nt_mbuild *b, struct cursor *c, uint32_t first, uint32_t n,
		     unsigned depth)
{
	uint32_t i;
	int err;

	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		uint32_t slot = first + i, type, cnt, child, name;
		struct nt_str16 s;

		if (cur_u32(c, &type))
			return -EBADMSG;
		if (type == NT_T_OBJECT) {
			if (cur_u32(c, &cnt))
				return -EBADMSG;
			/* each member takes at least 4 bytes of type + 2 of name */
			if (cnt > cur_left(c) / 6 || cnt > UINT16_MAX)
				return -EBADMSG;
			err = reserve(b, cnt, &child);
			if (err)
				return err;
			b->f[slot].child = cnt ? child : NO_CHILD;
			b->f[slot].nfields = (uint16_t)cnt;
			err = v1_fields(b, c, child, cnt, depth + 1);
			if (err)
				return err;
		} else if (!v5_scalar_type(type)) {
			return -EBADMSG;
		}
		b->f[slot].type = (uint8_t)type;
		if (nt_cur_str16(c, &s))
			return -EBADMSG;
		err = put_str16(b, &s, &name);
		if (err)
			return err;
		b->f[slot].name = name;
	}
	return 0;
}

static int v2_fields(struct nt_mbuild *b, struct cursor *c, uint32_t first, uint32_t n,
		     unsigned depth);

/* V5 V2Params type: u32 type, [element type if Array], [u32 n + fields if Object]. */
static int v2_type(struct nt_mbuild *b, struct cursor *c, uint32_t slot, unsigned depth)
{
	uint32_t type, cnt, child;
	int err;

	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	if (cur_u32(c, &type))
		return -EBADMSG;
	if (type == NT_T_OBJECT) {
		if (cur_u32(c, &cnt))
			return -EBADMSG;
		/* each member takes at least a u32 size + name + u32 type */
		if (cnt > cur_left(c) / 10 || cnt > UINT16_MAX)
			return -EBADMSG;
		err = reserve(b, cnt, &child);
		if (err)
			return err;
		b->f[slot].child = cnt ? child : NO_CHILD;
		b->f[slot].nfields = (uint16_t)cnt;
		err = v2_fields(b, c, child, cnt, depth + 1);
		if (err)
			return err;
	} else if (type == NT_T_ARRAY) {
		err = reserve(b, 1, &child);
		if (err)
			return err;
		b->f[slot].child = child;
		b->f[child].name = b->f[slot].name;
		err = v2_type(b, c, child, depth + 1);
		if (err)
			return err;
	} else if (!v5_scalar_type(type)) {
		return -EBADMSG;
	}
	b->f[slot].type = (uint8_t)type;
	return 0;
}

/* V5 V2Params field list: per field {u32 size incl. itself, str16 name, type, padding}. */
static int v2_fields(struct nt_mbuild *b, struct cursor *c, uint32_t first, uint32_t n,
		     unsigned depth)
{
	uint32_t i;
	int err;

	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		uint32_t size, name;
		const uint8_t *p;
		struct cursor sub;
		struct nt_str16 s;

		if (cur_u32(c, &size) || size < 4)
			return -EBADMSG;
		p = cur_take(c, size - 4);
		if (!p)
			return -EBADMSG;
		cur_init(&sub, p, size - 4);
		if (nt_cur_str16(&sub, &s))
			return -EBADMSG;
		err = put_str16(b, &s, &name);
		if (err)
			return err;
		b->f[first + i].name = name;
		err = v2_type(b, &sub, first + i, depth);
		if (err)
			return err;
	}
	return 0;
}

/* Builds the final record: one allocation holding the struct, fields and strings. */
static int finish(struct nt_mbuild *b, const struct nt_metadata *hdr, uint32_t prov,
		  uint32_t ename, uint32_t top_first, uint32_t ntop, struct nt_metadata **out,
		  size_t *bytes)
{
	size_t fsz = (size_t)b->nf * sizeof(struct nt_field);
	size_t total = sizeof(struct nt_metadata) + fsz + b->str.len;
	struct nt_metadata *m;
	struct nt_field *fields;
	char *strs;
	uint32_t i;

	m = malloc(total);
	if (!m)
		return -ENOMEM;
	*m = *hdr;
	fields = (struct nt_field *)(m + 1);
	strs = (char *)fields + fsz;
	memcpy(strs, b->str.buf, b->str.len);
	for (i = 0; i < b->nf; i++) {
		const struct nt_sfield *s = &b->f[i];
		struct nt_field *f = &fields[i];

		f->name = strs + s->name;
		f->type = s->type;
		f->nfields = s->nfields;
		f->fixed_count = s->fixed_count;
		f->fields = NULL;
		f->elem = NULL;
		if (s->child != NO_CHILD) {
			if (s->type == NT_T_OBJECT)
				f->fields = &fields[s->child];
			else
				f->elem = &fields[s->child];
		}
	}
	m->provider = strs + prov;
	m->event_name = strs + ename;
	m->nfields = ntop;
	m->fields = ntop ? &fields[top_first] : NULL;
	*out = m;
	*bytes = total;
	return 0;
}

static enum nt_provider provider_kind(const char *name)
{
	static const struct {
		const char *name;
		enum nt_provider kind;
	} known[] = {
		{ "Microsoft-Windows-DotNETRuntime", NT_PROV_RUNTIME },
		{ "Microsoft-Windows-DotNETRuntimeRundown", NT_PROV_RUNDOWN },
		{ "Microsoft-Windows-DotNETRuntimePrivate", NT_PROV_PRIVATE },
		{ "Microsoft-DotNETCore-SampleProfiler", NT_PROV_SAMPLEPROFILER },
		{ "Microsoft-DotNETCore-EventPipe", NT_PROV_EVENTPIPE },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(known); i++)
		if (!strcmp(name, known[i].name))
			return known[i].kind;
	return NT_PROV_OTHER;
}

static void reset(struct nt_mbuild *b)
{
	strbuf_reset(&b->str);
	b->nf = 0;
}

/* Undo a failed field parse: drop the field slots and strings added after the mark. */
static void rollback(struct nt_mbuild *b, size_t str_mark, uint32_t *ntop)
{
	strbuf_rollback(&b->str, str_mark);
	b->nf = 0;
	*ntop = 0;
}

int nt_meta_parse_v5(struct nt_mbuild *b, const uint8_t *p, size_t len, struct nt_metadata **out,
		     size_t *bytes)
{
	struct nt_metadata hdr;
	struct cursor c;
	struct nt_str16 s;
	uint32_t prov, ename, nfields = 0, top = 0, ntop = 0;
	size_t mark;
	int err;

	reset(b);
	memset(&hdr, 0, sizeof(hdr));
	cur_init(&c, p, len);
	cur_u32(&c, &hdr.id);
	if (nt_cur_str16(&c, &s))
		return -EBADMSG;
	err = put_str16(b, &s, &prov);
	if (err)
		return err;
	cur_u32(&c, &hdr.event_id);
	if (nt_cur_str16(&c, &s))
		return -EBADMSG;
	err = put_str16(b, &s, &ename);
	if (err)
		return err;
	cur_u64(&c, &hdr.keywords);
	cur_u32(&c, &hdr.version);
	cur_u32(&c, &hdr.level);
	if (c.err)
		return -EBADMSG;
	mark = b->str.len;

	/* The V1 field count may be absent altogether (nothing left). */
	if (cur_left(&c) >= 4) {
		cur_u32(&c, &nfields);
		if (nfields > cur_left(&c) / 6 || nfields > UINT16_MAX) {
			err = -EBADMSG;
		} else {
			err = reserve(b, nfields, &top);
			if (!err)
				err = v1_fields(b, &c, top, nfields, 0);
		}
		if (err == -ENOMEM)
			return err;
		if (err) {
			hdr.flags |= NT_META_BAD_FIELDS;
			rollback(b, mark, &ntop);
			goto done;
		}
		ntop = nfields;
	} else if (cur_left(&c)) {
		hdr.flags |= NT_META_BAD_FIELDS;
		goto done;
	}

	/* V5 tags: {u32 payload bytes, u8 kind, payload} until the record ends. */
	while (cur_left(&c)) {
		uint32_t tlen, cnt;
		uint8_t kind;
		const uint8_t *tp;
		struct cursor t;

		cur_u32(&c, &tlen);
		cur_u8(&c, &kind);
		tp = cur_take(&c, tlen);
		if (!tp) {
			hdr.flags |= NT_META_BAD_FIELDS;
			rollback(b, mark, &ntop);
			break;
		}
		cur_init(&t, tp, tlen);
		if (kind == 1) {
			if (!cur_u8(&t, &hdr.opcode))
				hdr.flags |= NT_META_HAS_OPCODE;
		} else if (kind == 2) {
			/* V2Params replaces the (empty) V1 list. */
			rollback(b, mark, &ntop);
			if (cur_u32(&t, &cnt) || cnt > cur_left(&t) / 10 || cnt > UINT16_MAX) {
				err = -EBADMSG;
			} else {
				err = reserve(b, cnt, &top);
				if (!err)
					err = v2_fields(b, &t, top, cnt, 0);
			}
			if (err == -ENOMEM)
				return err;
			if (err) {
				hdr.flags |= NT_META_BAD_FIELDS;
				rollback(b, mark, &ntop);
			} else {
				hdr.flags |= NT_META_FIELDS_V2;
				hdr.flags &= (uint8_t)~NT_META_BAD_FIELDS;
				ntop = cnt;
			}
		}
		/* other kinds: skipped */
	}
done:
	if (hdr.flags & NT_META_BAD_FIELDS)
		ct_debug("nettrace: metadata %u: field list not understood, fields dropped",
			 hdr.id);
	err = finish(b, &hdr, prov, ename, top, ntop, out, bytes);
	if (!err)
		(*out)->provider_kind = provider_kind((*out)->provider);
	return err;
}

/* V6 string: varuint32 byte length + UTF-8. */
static int v6_string(struct nt_mbuild *b, struct cursor *c, uint32_t *off)
{
	uint32_t n;
	const uint8_t *p;

	if (cur_varu32(c, &n))
		return -EBADMSG;
	p = cur_take(c, n);
	if (!p)
		return -EBADMSG;
	return put_utf8(b, p, n, off);
}

static int v6_skip_string(struct cursor *c)
{
	uint32_t n;

	if (cur_varu32(c, &n) || cur_skip(c, n))
		return -EBADMSG;
	return 0;
}

static int v6_fields(struct nt_mbuild *b, struct cursor *c, uint32_t *first, uint16_t *n,
		     unsigned depth);

static int v6_type(struct nt_mbuild *b, struct cursor *c, uint32_t slot, unsigned depth)
{
	uint8_t type;
	uint16_t cnt;
	uint32_t child;
	int err;

	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	if (cur_u8(c, &type))
		return -EBADMSG;
	switch (type) {
	case NT_T_OBJECT:
		err = v6_fields(b, c, &child, &cnt, depth + 1);
		if (err)
			return err;
		b->f[slot].child = cnt ? child : NO_CHILD;
		b->f[slot].nfields = cnt;
		break;
	case NT_T_ARRAY:
	case NT_T_FIXEDARRAY:
	case NT_T_RELLOC:
	case NT_T_DATALOC:
		err = reserve(b, 1, &child);
		if (err)
			return err;
		b->f[slot].child = child;
		b->f[child].name = b->f[slot].name;
		err = v6_type(b, c, child, depth + 1);
		if (err)
			return err;
		if (type == NT_T_FIXEDARRAY && cur_u16(c, &b->f[slot].fixed_count))
			return -EBADMSG;
		break;
	default:
		if (!(v5_scalar_type(type) || type == NT_T_VARINT || type == NT_T_VARUINT ||
		      type == NT_T_CHAR8 || type == NT_T_BOOL8))
			return -EBADMSG;
		break;
	}
	b->f[slot].type = type;
	return 0;
}

/* V6 FieldDescriptions: u16 count, per field {u16 size excl. itself, string name, Type, rest}. */
static int v6_fields(struct nt_mbuild *b, struct cursor *c, uint32_t *first, uint16_t *n,
		     unsigned depth)
{
	uint16_t cnt, i;
	int err;

	*first = NO_CHILD;
	*n = 0;
	if (depth > NT_MAX_DEPTH)
		return -EBADMSG;
	if (cur_u16(c, &cnt))
		return -EBADMSG;
	/* each field takes at least 2 bytes of size + 1 of name + 1 of type */
	if (cnt > cur_left(c) / 4)
		return -EBADMSG;
	err = reserve(b, cnt, first);
	if (err)
		return err;
	for (i = 0; i < cnt; i++) {
		uint16_t size;
		const uint8_t *p;
		struct cursor sub;
		uint32_t name;

		if (cur_u16(c, &size))
			return -EBADMSG;
		p = cur_take(c, size);
		if (!p)
			return -EBADMSG;
		cur_init(&sub, p, size);
		err = v6_string(b, &sub, &name);
		if (err)
			return err;
		b->f[*first + i].name = name;
		err = v6_type(b, &sub, *first + i, depth);
		if (err)
			return err;
	}
	*n = cnt;
	return 0;
}

int nt_meta_parse_v6(struct nt_mbuild *b, const uint8_t *p, size_t len, struct nt_metadata **out,
		     size_t *bytes)
{
	struct nt_metadata hdr;
	struct cursor c, o;
	uint32_t prov, ename, top = 0;
	uint16_t ntop = 0, osize;
	const uint8_t *op;
	size_t mark;
	int err;

	reset(b);
	memset(&hdr, 0, sizeof(hdr));
	cur_init(&c, p, len);
	if (cur_varu32(&c, &hdr.id))
		return -EBADMSG;
	err = v6_string(b, &c, &prov);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	if (cur_varu32(&c, &hdr.event_id))
		return -EBADMSG;
	err = v6_string(b, &c, &ename);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	mark = b->str.len;

	err = v6_fields(b, &c, &top, &ntop, 0);
	if (err == -ENOMEM)
		return err;
	if (err) {
		uint32_t z;

		hdr.flags |= NT_META_BAD_FIELDS;
		rollback(b, mark, &z);
		ntop = 0;
		ct_debug("nettrace: metadata %u: field list not understood, fields dropped",
			 hdr.id);
		goto done; /* the optional part cannot be located any more */
	}

	/* OptionalMetadata: u16 size, then {u8 kind, data} items. */
	if (!cur_left(&c))
		goto done;
	if (cur_u16(&c, &osize) || !(op = cur_take(&c, osize)))
		return -EBADMSG;
	cur_init(&o, op, osize);
	while (cur_left(&o)) {
		uint8_t kind, v8;

		cur_u8(&o, &kind);
		switch (kind) {
		case 1:
			if (!cur_u8(&o, &hdr.opcode))
				hdr.flags |= NT_META_HAS_OPCODE;
			break;
		case 3:
			cur_u64(&o, &hdr.keywords);
			break;
		case 4: /* message template */
		case 5: /* description */
			v6_skip_string(&o);
			break;
		case 6: /* key/value */
			v6_skip_string(&o);
			v6_skip_string(&o);
			break;
		case 7: /* provider GUID */
			cur_skip(&o, 16);
			break;
		case 8:
			if (!cur_u8(&o, &v8))
				hdr.level = v8;
			break;
		case 9:
			if (!cur_u8(&o, &v8))
				hdr.version = v8;
			break;
		default:
			/* unknown kind: its size is unknown, stop here */
			o.err = -EBADMSG;
			break;
		}
		if (o.err) {
			ct_debug("nettrace: metadata %u: optional metadata not understood", hdr.id);
			break;
		}
	}
done:
	err = finish(b, &hdr, prov, ename, top, ntop, out, bytes);
	if (!err)
		(*out)->provider_kind = provider_kind((*out)->provider);
	return err;
}
