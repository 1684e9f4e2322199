/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/cursor.h"

const uint8_t *cur_take(struct cursor *c, size_t n)
{
	const uint8_t *p;

	if (c->err)
		return NULL;
	if (n > c->len - c->off) {
		c->err = -EBADMSG;
		return NULL;
	}
	p = c->p + c->off;
	c->off += n;
	return p;
}

int cur_skip(struct cursor *c, size_t n)
{
	return cur_take(c, n) ? 0 : c->err;
}

int cur_u8(struct cursor *c, uint8_t *v)
{
	const uint8_t *p = cur_take(c, 1);

	*v = p ? p[0] : 0;
	return p ? 0 : c->err;
}

int cur_u16(struct cursor *c, uint16_t *v)
{
	const uint8_t *p = cur_take(c, 2);

	*v = p ? ct_le16(p) : 0;
	return p ? 0 : c->err;
}

int cur_u32(struct cursor *c, uint32_t *v)
{
	const uint8_t *p = cur_take(c, 4);

	*v = p ? ct_le32(p) : 0;
	return p ? 0 : c->err;
}

int cur_u64(struct cursor *c, uint64_t *v)
{
	const uint8_t *p = cur_take(c, 8);

	*v = p ? ct_le64(p) : 0;
	return p ? 0 : c->err;
}

int cur_varu64(struct cursor *c, uint64_t *v, unsigned maxbytes)
{
	uint64_t r = 0;
	unsigned i;

	*v = 0;
	for (i = 0; i < maxbytes; i++) {
		uint8_t b;

		if (cur_u8(c, &b))
			return c->err;
		if (i < 10)
			r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	c->err = -EBADMSG;
	return c->err;
}

int cur_varu32(struct cursor *c, uint32_t *v)
{
	uint64_t r;
	int err = cur_varu64(c, &r, 5);

	if (!err && r > UINT32_MAX) {
		c->err = -EBADMSG;
		err = c->err;
	}
	*v = err ? 0 : (uint32_t)r;
	return err;
}
