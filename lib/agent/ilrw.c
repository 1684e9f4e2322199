/* SPDX-License-Identifier: MIT */
/*
 * ilrw.c - prepend IL to a method body (see ilrw.h). Every length is
 * checked against the bytes available; nothing is trusted.
 */
#include "common/compat.h"

#include "agent/ilrw.h"

#define F_TINY 0x2
#define F_FAT 0x3
#define F_MORESECTS 0x8
#define S_EHTABLE 0x1
#define S_FAT 0x40
#define S_MORESECTS 0x80
#define CL_FILTER 0x1

struct clause {
	uint32_t flags, try_off, try_len, h_off, h_len, extra;
};

static uint32_t rd16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

struct body {
	size_t hdr, code_size, end;
	unsigned maxstack;
	uint32_t flags, localsig;
	size_t nclauses;
	size_t sect_off; /* first extra section, 0 if none */
};

/* Parses the header and walks the sections; clauses go to cl if not NULL. */
static int parse(const uint8_t *in, size_t len, struct body *b, struct clause *cl)
{
	size_t off;

	memset(b, 0, sizeof(*b));
	if (len < 1)
		return -EINVAL;
	if ((in[0] & 3) == F_TINY) {
		b->hdr = 1;
		b->code_size = in[0] >> 2;
		b->maxstack = 8;
		b->end = 1 + b->code_size;
		return b->end <= len ? 0 : -EINVAL;
	}
	if ((in[0] & 3) != F_FAT || len < 12)
		return -EINVAL;
	b->flags = rd16(in) & 0xfff;
	b->hdr = (size_t)(rd16(in) >> 12) * 4;
	if (b->hdr < 12 || b->hdr > len)
		return -EINVAL;
	b->maxstack = rd16(in + 2);
	b->code_size = rd32(in + 4);
	b->localsig = rd32(in + 8);
	if (b->code_size > ILRW_MAX_BODY)
		return -EFBIG;
	if (b->code_size > len - b->hdr)
		return -EINVAL;
	b->end = b->hdr + b->code_size;
	if (!(b->flags & F_MORESECTS))
		return 0;
	off = (b->end + 3) & ~(size_t)3;
	b->sect_off = off;
	for (;;) {
		uint8_t kind;
		size_t dsize, n, csize, i;

		if (off + 4 > len)
			return -EINVAL;
		kind = in[off];
		if (kind & S_FAT) {
			dsize = in[off + 1] | (size_t)in[off + 2] << 8 | (size_t)in[off + 3] << 16;
			csize = 24;
		} else {
			dsize = in[off + 1];
			csize = 12;
		}
		if (dsize < 4 || dsize > len - off)
			return -EINVAL;
		if (kind & S_EHTABLE) {
			n = (dsize - 4) / csize;
			if (b->nclauses + n > ILRW_MAX_CLAUSES)
				return -EFBIG;
			for (i = 0; cl && i < n; i++) {
				const uint8_t *c = in + off + 4 + i * csize;
				struct clause *o = &cl[b->nclauses + i];

				if (csize == 24) {
					o->flags = rd32(c);
					o->try_off = rd32(c + 4);
					o->try_len = rd32(c + 8);
					o->h_off = rd32(c + 12);
					o->h_len = rd32(c + 16);
					o->extra = rd32(c + 20);
				} else {
					o->flags = rd16(c);
					o->try_off = rd16(c + 2);
					o->try_len = c[4];
					o->h_off = rd16(c + 5);
					o->h_len = c[7];
					o->extra = rd32(c + 8);
				}
			}
			b->nclauses += n;
		}
		off += dsize;
		b->end = off;
		if (!(kind & S_MORESECTS))
			break;
		off = (off + 3) & ~(size_t)3;
	}
	return 0;
}

long ilrw_body_size(const uint8_t *in, size_t len)
{
	struct body b;
	int err = parse(in, len, &b, NULL);

	return err ? err : (long)b.end;
}

int ilrw_prepend(const uint8_t *in, size_t len, const uint8_t *prefix, size_t plen,
		 unsigned stack, uint8_t *out, size_t cap, size_t *outlen)
{
	struct clause cl[ILRW_MAX_CLAUSES]; /* 3 KiB on the stack: calls may run concurrently */
	struct body b;
	size_t code, need, off, i;
	unsigned maxstack;
	int err;

	if (plen > 256)
		return -EINVAL;
	err = parse(in, len, &b, NULL);
	if (err)
		return err;
	err = parse(in, len, &b, cl);
	if (err)
		return err;
	code = b.code_size + plen;
	if (code > ILRW_MAX_BODY)
		return -EFBIG;
	need = 12 + code;
	if (b.nclauses)
		need = ((need + 3) & ~(size_t)3) + 4 + 24 * b.nclauses;
	if (need > cap)
		return -ENOSPC;
	maxstack = b.maxstack > stack ? b.maxstack : stack;
	if (maxstack > 0xffff)
		maxstack = 0xffff;
	/* Fat header: flags (InitLocals kept), size 3 dwords. */
	wr16(out, (3u << 12) | F_FAT | (b.flags & 0x10) | (b.nclauses ? F_MORESECTS : 0));
	wr16(out + 2, maxstack);
	wr32(out + 4, (uint32_t)code);
	wr32(out + 8, b.localsig);
	memcpy(out + 12, prefix, plen);
	memcpy(out + 12 + plen, in + b.hdr, b.code_size);
	off = 12 + code;
	if (b.nclauses) {
		size_t dsize = 4 + 24 * b.nclauses;

		while (off & 3)
			out[off++] = 0;
		out[off] = S_EHTABLE | S_FAT;
		out[off + 1] = (uint8_t)dsize;
		out[off + 2] = (uint8_t)(dsize >> 8);
		out[off + 3] = (uint8_t)(dsize >> 16);
		off += 4;
		for (i = 0; i < b.nclauses; i++) {
			const struct clause *c = &cl[i];

			wr32(out + off, c->flags);
			wr32(out + off + 4, c->try_off + (uint32_t)plen);
			wr32(out + off + 8, c->try_len);
			wr32(out + off + 12, c->h_off + (uint32_t)plen);
			wr32(out + off + 16, c->h_len);
			wr32(out + off + 20,
			     (c->flags & CL_FILTER) ? c->extra + (uint32_t)plen : c->extra);
			off += 24;
		}
	}
	*outlen = off;
	return 0;
}
