/* SPDX-License-Identifier: MIT */
/*
 * json_check.h - a small strict JSON parser for tests: the unit tests and the
 * fuzz harness of the JSON writer check every document it writes with it.
 * Test support only (static functions; not in the library).
 *
 * json_check() accepts exactly one RFC 8259 value surrounded by optional
 * whitespace: raw bytes in strings must be valid UTF-8 at or above 0x20;
 * escapes are the eight short forms and \uXXXX; numbers follow the grammar
 * exactly (no leading zeros, no "+", no bare "."); nesting is capped.
 * Every string (keys and values, in document order) is decoded into strs as
 * records of a 4-byte length (host order) and the bytes, reversing the
 * writer's rule: a surrogate pair is one code point, a lone \uDC80..\uDCFF is
 * the raw byte 0x80..0xFF (PEP 383 surrogateescape). Any other lone surrogate
 * is grammatical JSON but cannot come from the writer: rejected.
 * Returns 0, or -EBADMSG with the offset of the fault in *where.
 */
#ifndef CLRTAP_COMMON_JSON_CHECK_H
#define CLRTAP_COMMON_JSON_CHECK_H

#include "common/compat.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/utf16.h"

struct json_check {
	const unsigned char *p, *end, *start;
	struct strbuf *strs;
	unsigned depth;
};

static int jc_value(struct json_check *c);

static void jc_ws(struct json_check *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int jc_hex4(struct json_check *c, uint32_t *v)
{
	int i;

	*v = 0;
	if (c->end - c->p < 4)
		return -EBADMSG;
	for (i = 0; i < 4; i++) {
		unsigned char h = *c->p++;

		*v <<= 4;
		if (h >= '0' && h <= '9')
			*v |= (uint32_t)(h - '0');
		else if (h >= 'a' && h <= 'f')
			*v |= (uint32_t)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F')
			*v |= (uint32_t)(h - 'A' + 10);
		else
			return -EBADMSG;
	}
	return 0;
}

static int jc_string(struct json_check *c)
{
	struct strbuf dec = STRBUF_INIT;
	uint32_t len32;
	int err = -EBADMSG;

	c->p++; /* the opening quote */
	for (;;) {
		uint32_t cp, lo;
		size_t n;

		if (c->p >= c->end)
			goto out;
		if (*c->p == '"') {
			c->p++;
			break;
		}
		if (*c->p < 0x20)
			goto out;
		if (*c->p != '\\') {
			n = utf8_valid((const char *)c->p, (size_t)(c->end - c->p), &cp);
			if (!n)
				goto out;
			(void)strbuf_add(&dec, c->p, n);
			c->p += n;
			continue;
		}
		if (++c->p >= c->end)
			goto out;
		switch (*c->p++) {
		case '"': (void)strbuf_addch(&dec, '"'); continue;
		case '\\': (void)strbuf_addch(&dec, '\\'); continue;
		case '/': (void)strbuf_addch(&dec, '/'); continue;
		case 'b': (void)strbuf_addch(&dec, '\b'); continue;
		case 'f': (void)strbuf_addch(&dec, '\f'); continue;
		case 'n': (void)strbuf_addch(&dec, '\n'); continue;
		case 'r': (void)strbuf_addch(&dec, '\r'); continue;
		case 't': (void)strbuf_addch(&dec, '\t'); continue;
		case 'u': break;
		default: goto out;
		}
		if (jc_hex4(c, &cp))
			goto out;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
				goto out;
			c->p += 2;
			if (jc_hex4(c, &lo) || lo < 0xdc00 || lo > 0xdfff)
				goto out;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		} else if (cp >= 0xdc80 && cp <= 0xdcff) {
			(void)strbuf_addch(&dec, (int)(cp & 0xff));
			continue;
		} else if (cp >= 0xdc00 && cp <= 0xdfff) {
			goto out;
		}
		(void)utf8_put(&dec, cp);
	}
	err = strbuf_error(&dec);
	if (!err && c->strs) {
		len32 = (uint32_t)dec.len;
		(void)strbuf_add(c->strs, &len32, sizeof(len32));
		(void)strbuf_add(c->strs, dec.buf, dec.len);
	}
out:
	strbuf_release(&dec);
	return err;
}

static bool jc_digit(const struct json_check *c)
{
	return c->p < c->end && *c->p >= '0' && *c->p <= '9';
}

static int jc_number(struct json_check *c)
{
	if (*c->p == '-')
		c->p++;
	if (!jc_digit(c))
		return -EBADMSG;
	if (*c->p == '0')
		c->p++;
	else
		while (jc_digit(c))
			c->p++;
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		if (!jc_digit(c))
			return -EBADMSG;
		while (jc_digit(c))
			c->p++;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!jc_digit(c))
			return -EBADMSG;
		while (jc_digit(c))
			c->p++;
	}
	return 0;
}

static int jc_literal(struct json_check *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return -EBADMSG;
	c->p += n;
	return 0;
}

static int jc_container(struct json_check *c, bool obj)
{
	int err;

	if (++c->depth > CT_JSON_MAX_DEPTH)
		return -EBADMSG;
	c->p++;
	jc_ws(c);
	if (c->p < c->end && *c->p == (obj ? '}' : ']')) {
		c->p++;
		c->depth--;
		return 0;
	}
	for (;;) {
		jc_ws(c);
		if (obj) {
			if (c->p >= c->end || *c->p != '"')
				return -EBADMSG;
			err = jc_string(c);
			if (err)
				return err;
			jc_ws(c);
			if (c->p >= c->end || *c->p != ':')
				return -EBADMSG;
			c->p++;
		}
		err = jc_value(c);
		if (err)
			return err;
		jc_ws(c);
		if (c->p >= c->end)
			return -EBADMSG;
		if (*c->p == ',') {
			c->p++;
			continue;
		}
		if (*c->p != (obj ? '}' : ']'))
			return -EBADMSG;
		c->p++;
		c->depth--;
		return 0;
	}
}

static int jc_value(struct json_check *c)
{
	jc_ws(c);
	if (c->p >= c->end)
		return -EBADMSG;
	switch (*c->p) {
	case '{': return jc_container(c, true);
	case '[': return jc_container(c, false);
	case '"': return jc_string(c);
	case 't': return jc_literal(c, "true");
	case 'f': return jc_literal(c, "false");
	case 'n': return jc_literal(c, "null");
	default: return jc_number(c);
	}
}

static UNUSED int json_check(const char *s, size_t len, struct strbuf *strs, size_t *where)
{
	struct json_check c = { (const unsigned char *)s, (const unsigned char *)s + len,
				(const unsigned char *)s, strs, 0 };
	int err = jc_value(&c);

	if (!err) {
		jc_ws(&c);
		if (c.p != c.end)
			err = -EBADMSG;
	}
	if (where)
		*where = (size_t)(c.p - c.start);
	return err;
}

#endif
