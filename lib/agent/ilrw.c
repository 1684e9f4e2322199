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

/* ------------------------------------------------------------ decoding */

enum { OP_NONE, OP_BR_SHORT, OP_BR_LONG, OP_SWITCH, OP_RET, OP_BAD };

/* Operand size and kind of the instruction at p (avail bytes). */
static int decode(const uint8_t *p, size_t avail, size_t *size, int *kind)
{
	uint8_t op;

	if (avail < 1)
		return -EINVAL;
	op = p[0];
	*kind = OP_NONE;
	if (op == 0xFE) {
		static const int8_t ext[0x1F] = {
			/* 00 arglist */ 0, 0, 0, 0, 0, 0, /* 06 ldftn */ 4, /* 07 ldvirtftn */ 4,
			/* 08 */ -1, /* 09 ldarg */ 2, 2, 2, 2, 2, /* 0E stloc */ 2,
			/* 0F localloc */ 0, /* 10 */ -1, /* 11 endfilter */ 0, /* 12 unaligned */ 1,
			/* 13 volatile */ 0, /* 14 tail */ 0, /* 15 initobj */ 4,
			/* 16 constrained */ 4, /* 17 cpblk */ 0, /* 18 initblk */ 0, /* 19 no. */ 1,
			/* 1A rethrow */ 0, /* 1B */ -1, /* 1C sizeof */ 4, /* 1D refanytype */ 0,
			/* 1E readonly */ 0,
		};
		if (avail < 2 || p[1] >= sizeof(ext) || ext[p[1]] < 0)
			return -EINVAL;
		*size = 2 + (size_t)ext[p[1]];
		return *size <= avail ? 0 : -EINVAL;
	}
	if (op >= 0x0E && op <= 0x13)
		*size = 2;
	else if (op == 0x1F || op == 0xDE || (op >= 0x2B && op <= 0x37))
		*size = 2;
	else if (op == 0x20 || op == 0x22 || op == 0x27 || op == 0x28 || op == 0x29 ||
		 (op >= 0x38 && op <= 0x44) || op == 0xDD)
		*size = 5;
	else if (op == 0x21 || op == 0x23)
		*size = 9;
	else if ((op >= 0x6F && op <= 0x75) || op == 0x79 || (op >= 0x7B && op <= 0x81) ||
		 op == 0x8C || op == 0x8D || op == 0x8F || op == 0xA3 || op == 0xA4 ||
		 op == 0xA5 || op == 0xC2 || op == 0xC6 || op == 0xD0)
		*size = 5;
	else if (op == 0x45) {
		uint32_t n;

		if (avail < 5)
			return -EINVAL;
		n = rd32(p + 1);
		if (n > (avail - 5) / 4)
			return -EINVAL;
		*size = 5 + 4 * (size_t)n;
		*kind = OP_SWITCH;
		return 0;
	} else if (op == 0x24 || op == 0x77 || op == 0x78 || (op >= 0xA6 && op <= 0xB2) ||
		   (op >= 0xBB && op <= 0xC1) || op == 0xC4 || op == 0xC5 ||
		   (op >= 0xC7 && op <= 0xCF) || op > 0xE0)
		return -EINVAL; /* unused opcodes */
	else
		*size = 1;
	if (op == 0x2A)
		*kind = OP_RET;
	else if ((op >= 0x2B && op <= 0x37) || op == 0xDE)
		*kind = OP_BR_SHORT;
	else if ((op >= 0x38 && op <= 0x44) || op == 0xDD)
		*kind = OP_BR_LONG;
	return *size <= avail ? 0 : -EINVAL;
}

static uint8_t long_form(uint8_t op)
{
	return op == 0xDE ? 0xDD : (uint8_t)(op + 0x0D);
}

int ilrw_rewrite(const uint8_t *in, size_t len, const struct ilrw_edit *e, uint8_t *out,
		 size_t cap, size_t *outlen)
{
	struct clause cl[ILRW_MAX_CLAUSES];
	struct body b;
	const uint8_t *code;
	uint32_t *map = NULL; /* old offset -> new offset (instruction starts and the end) */
	size_t o, n, need, off, i;
	unsigned maxstack;
	int err, kind;

	if (!e->at_ret)
		return ilrw_prepend(in, len, e->prefix, e->plen, e->stack, out, cap, outlen);
	if (e->plen > 4096 || e->rlen > 256)
		return -EINVAL;
	err = parse(in, len, &b, cl);
	if (err)
		return err;
	code = in + b.hdr;
	map = malloc((b.code_size + 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (o = 0; o <= b.code_size; o++)
		map[o] = UINT32_MAX;
	/* pass 1: new offsets */
	n = e->plen;
	for (o = 0; o < b.code_size; o += i) {
		err = decode(code + o, b.code_size - o, &i, &kind);
		if (err)
			goto out;
		map[o] = (uint32_t)n;
		if (kind == OP_RET)
			n += e->rlen + 1;
		else if (kind == OP_BR_SHORT)
			n += 5;
		else
			n += i;
		if (n > ILRW_MAX_BODY) {
			err = -EFBIG;
			goto out;
		}
	}
	map[b.code_size] = (uint32_t)n;
	need = 12 + n;
	if (b.nclauses)
		need = ((need + 3) & ~(size_t)3) + 4 + 24 * b.nclauses;
	if (need > cap) {
		err = -ENOSPC;
		goto out;
	}
	maxstack = b.maxstack + e->stack;
	if (maxstack > 0xffff)
		maxstack = 0xffff;
	wr16(out, (3u << 12) | F_FAT | (b.flags & 0x10) | (b.nclauses ? F_MORESECTS : 0));
	wr16(out + 2, maxstack);
	wr32(out + 4, (uint32_t)n);
	wr32(out + 8, b.localsig);
	memcpy(out + 12, e->prefix, e->plen);
	/* pass 2: copy and fix */
	for (o = 0; o < b.code_size; o += i) {
		uint8_t *w = out + 12 + map[o];

		decode(code + o, b.code_size - o, &i, &kind);
		if (kind == OP_RET) {
			memcpy(w, e->at_ret, e->rlen);
			w[e->rlen] = 0x2A;
		} else if (kind == OP_BR_SHORT || kind == OP_BR_LONG) {
			int64_t rel = kind == OP_BR_SHORT ? (int8_t)code[o + 1]
							  : (int32_t)rd32(code + o + 1);
			int64_t t = (int64_t)(o + i) + rel;

			if (t < 0 || t > (int64_t)b.code_size || map[t] == UINT32_MAX) {
				err = -EINVAL;
				goto out;
			}
			w[0] = kind == OP_BR_SHORT ? long_form(code[o]) : code[o];
			wr32(w + 1, (uint32_t)((int64_t)map[t] - (int64_t)(map[o] + 5)));
		} else if (kind == OP_SWITCH) {
			uint32_t cnt = rd32(code + o + 1);
			int64_t base_old = (int64_t)(o + i), base_new = (int64_t)map[o] + (int64_t)i;

			memcpy(w, code + o, 5);
			for (uint32_t k = 0; k < cnt; k++) {
				int64_t t = base_old + (int32_t)rd32(code + o + 5 + 4 * k);

				if (t < 0 || t > (int64_t)b.code_size || map[t] == UINT32_MAX) {
					err = -EINVAL;
					goto out;
				}
				wr32(w + 5 + 4 * k, (uint32_t)((int64_t)map[t] - base_new));
			}
		} else {
			memcpy(w, code + o, i);
		}
	}
	off = 12 + n;
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
			uint64_t te = (uint64_t)c->try_off + c->try_len, he = (uint64_t)c->h_off + c->h_len;

			if (te > b.code_size || he > b.code_size || map[c->try_off] == UINT32_MAX ||
			    map[te] == UINT32_MAX || map[c->h_off] == UINT32_MAX ||
			    map[he] == UINT32_MAX ||
			    ((c->flags & CL_FILTER) &&
			     (c->extra > b.code_size || map[c->extra] == UINT32_MAX))) {
				err = -EINVAL;
				goto out;
			}
			wr32(out + off, c->flags);
			wr32(out + off + 4, map[c->try_off]);
			wr32(out + off + 8, map[te] - map[c->try_off]);
			wr32(out + off + 12, map[c->h_off]);
			wr32(out + off + 16, map[he] - map[c->h_off]);
			wr32(out + off + 20, (c->flags & CL_FILTER) ? map[c->extra] : c->extra);
			off += 24;
		}
	}
	*outlen = off;
	err = 0;
out:
	free(map);
	return err;
}
