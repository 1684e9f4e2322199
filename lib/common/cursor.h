/* SPDX-License-Identifier: MIT */
/*
 * cursor.h - bounds-checked little-endian reads over a byte range.
 *
 * Every parser of outside bytes reads through a cursor. A read that would
 * pass the end fails, sets cur->err to -EBADMSG and leaves the output zeroed;
 * later reads keep failing, so a parser may check cur->err once at the end of
 * a record instead of after every field.
 */
#ifndef CLRTAP_COMMON_CURSOR_H
#define CLRTAP_COMMON_CURSOR_H

#include "common/compat.h"

struct cursor {
	const uint8_t *p;
	size_t len;
	size_t off;
	int err; /* 0 or the first negative errno */
};

static inline void cur_init(struct cursor *c, const void *p, size_t len)
{
	c->p = p;
	c->len = len;
	c->off = 0;
	c->err = 0;
}

static inline size_t cur_left(const struct cursor *c)
{
	return c->err ? 0 : c->len - c->off;
}

/* Returns a pointer to the next n bytes and advances, or NULL (sets err). */
const uint8_t *cur_take(struct cursor *c, size_t n);
int cur_skip(struct cursor *c, size_t n);
int cur_u8(struct cursor *c, uint8_t *v);
int cur_u16(struct cursor *c, uint16_t *v);
int cur_u32(struct cursor *c, uint32_t *v);
int cur_u64(struct cursor *c, uint64_t *v);
/* Unsigned LEB128 of at most maxbytes bytes (5 for 32-bit, 10 for 64-bit). */
int cur_varu64(struct cursor *c, uint64_t *v, unsigned maxbytes);
int cur_varu32(struct cursor *c, uint32_t *v);

static inline uint16_t ct_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t ct_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t ct_le64(const uint8_t *p)
{
	return (uint64_t)ct_le32(p) | ((uint64_t)ct_le32(p + 4) << 32);
}

static inline void ct_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void ct_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void ct_put_le64(uint8_t *p, uint64_t v)
{
	ct_put_le32(p, (uint32_t)v);
	ct_put_le32(p + 4, (uint32_t)(v >> 32));
}

#endif
