/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/utf16.h"

int utf8_put(struct strbuf *out, uint32_t cp)
{
	uint8_t b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xc0 | (cp >> 6));
		b[1] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xe0 | (cp >> 12));
		b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | (cp >> 18));
		b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return strbuf_add(out, b, n);
}

size_t utf8_valid(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c, min;
	size_t n, i;

	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		n = 2;
		c = u[0] & 0x1f;
		min = 0x80;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		n = 3;
		c = u[0] & 0x0f;
		min = 0x800;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		n = 4;
		c = u[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

int utf16le_to_utf8(struct strbuf *out, const uint8_t *p, size_t nunits, bool stop_at_nul)
{
	size_t i;
	int err = 0;

	for (i = 0; i < nunits && !err; i++) {
		uint32_t u = ct_le16(p + 2 * i);

		if (u == 0 && stop_at_nul)
			break;
		if (u >= 0xd800 && u <= 0xdbff && i + 1 < nunits) {
			uint32_t lo = ct_le16(p + 2 * (i + 1));

			if (lo >= 0xdc00 && lo <= 0xdfff) {
				err = utf8_put(out, 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00));
				i++;
				continue;
			}
		}
		if (u >= 0xd800 && u <= 0xdfff)
			u = 0xfffd;
		err = utf8_put(out, u);
	}
	return err;
}

static int put_unit(struct strbuf *out, uint32_t u)
{
	uint8_t b[2];

	ct_put_le16(b, (uint16_t)u);
	return strbuf_add(out, b, 2);
}

/* Decodes one UTF-8 sequence at s; returns its length (>= 1), cp in *cp. */
static size_t next_cp(const unsigned char *s, uint32_t *cp)
{
	unsigned n, i;
	uint32_t v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		v = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		v = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		v = s[0] & 0x07;
	} else {
		*cp = 0xfffd;
		return 1;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*cp = 0xfffd;
			return 1;
		}
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		v = 0xfffd;
	*cp = v;
	return n;
}

int utf8_to_utf16le(struct strbuf *out, const char *s, uint32_t *nunits)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t count = 0;
	int err = 0;

	while (*p && !err) {
		uint32_t cp;

		p += next_cp(p, &cp);
		if (cp >= 0x10000) {
			cp -= 0x10000;
			err = put_unit(out, 0xd800 + (cp >> 10));
			if (!err)
				err = put_unit(out, 0xdc00 + (cp & 0x3ff));
			count += 2;
		} else {
			err = put_unit(out, cp);
			count++;
		}
	}
	if (!err)
		err = put_unit(out, 0);
	if (nunits)
		*nunits = count + 1;
	return err;
}
