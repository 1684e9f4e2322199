/* SPDX-License-Identifier: MIT */
/*
 * flame_out.c - the writers' output sink (buffered writes to an fd, with an
 * optional gzip stream) and the string escapers: JSON (also safe inside an
 * HTML <script>) and XML/HTML text. Every escaper decodes UTF-8 and replaces
 * what is not valid with U+FFFD so outputs are always valid UTF-8.
 */
#include "common/compat.h"

#include <zlib.h>

#include "common/io.h"
#include "common/json.h"
#include "flame/flame_int.h"

#define FLUSH_AT ((size_t)64 << 10)

void flame_out_init(struct flame_out *o, int fd)
{
	o->fd = fd;
	o->err = 0;
	o->z = NULL;
	strbuf_init(&o->sb, STRBUF_UNBOUNDED);
}

int flame_out_gzip(struct flame_out *o)
{
	z_stream *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	/* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
	if (deflateInit2(z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	o->z = z;
	return 0;
}

static void flush(struct flame_out *o, bool final)
{
	if (o->err) {
		strbuf_reset(&o->sb);
		return;
	}
	if (o->z) {
		z_stream *z = o->z;
		unsigned char tmp[16384];
		int rc;

		z->next_in = (unsigned char *)o->sb.buf;
		z->avail_in = (uInt)o->sb.len;
		do {
			z->next_out = tmp;
			z->avail_out = sizeof(tmp);
			rc = deflate(z, final ? Z_FINISH : Z_NO_FLUSH);
			if (rc == Z_STREAM_ERROR) {
				o->err = -EIO;
				break;
			}
			if (sizeof(tmp) - z->avail_out) {
				int err = ct_write_all(o->fd, tmp, sizeof(tmp) - z->avail_out);

				if (err) {
					o->err = err;
					break;
				}
			}
		} while (z->avail_out == 0 || (final && rc != Z_STREAM_END));
	} else if (o->sb.len) {
		o->err = ct_write_all(o->fd, o->sb.buf, o->sb.len);
	}
	strbuf_reset(&o->sb);
}

void flame_out_maybe_flush(struct flame_out *o)
{
	if (o->sb.len >= FLUSH_AT)
		flush(o, false);
}

int flame_out_finish(struct flame_out *o)
{
	flush(o, true);
	if (o->z) {
		deflateEnd(o->z);
		free(o->z);
		o->z = NULL;
	}
	strbuf_release(&o->sb);
	return o->err;
}

void flame_out_add(struct flame_out *o, const void *p, size_t n)
{
	if (!o->err && strbuf_add(&o->sb, p, n))
		o->err = -ENOMEM;
}

void flame_out_str(struct flame_out *o, const char *s)
{
	flame_out_add(o, s, strlen(s));
}

void flame_out_f(struct flame_out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!o->err && strbuf_vaddf(&o->sb, fmt, ap))
		o->err = -ENOMEM;
	va_end(ap);
}

size_t flame_utf8_next(const char *str, size_t len, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t c = s[0], min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		goto bad;
	}
	if (len < n)
		goto bad;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			goto bad;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*cp = c;
	return n;
bad:
	*cp = 0xfffd;
	return 1;
}

void flame_out_cp(struct flame_out *o, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	flame_out_add(o, b, n);
}

void flame_out_json_str(struct flame_out *o, const char *s, size_t len)
{
	if (!o->err && ct_json_escape_html(&o->sb, s, len))
		o->err = -ENOMEM;
}

void flame_out_xml_str(struct flame_out *o, const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = flame_utf8_next(s + i, len - i, &cp);

		switch (cp) {
		case '&':
			flame_out_add(o, "&amp;", 5);
			break;
		case '<':
			flame_out_add(o, "&lt;", 4);
			break;
		case '>':
			flame_out_add(o, "&gt;", 4);
			break;
		case '"':
			flame_out_add(o, "&quot;", 6);
			break;
		case '\'':
			flame_out_add(o, "&#39;", 5);
			break;
		default:
			/* XML 1.0 forbids most control characters even as references. */
			if ((cp < 0x20 && cp != '\t') || cp == 0x7f || cp == 0xfffe || cp == 0xffff)
				cp = 0xfffd;
			flame_out_cp(o, cp);
		}
		i += n;
	}
}

void flame_out_xml_lines(struct flame_out *o, const char *text)
{
	while (*text) {
		const char *e = strchr(text, '\n');
		size_t l = e ? (size_t)(e - text) : strlen(text);

		flame_out_xml_str(o, text, l);
		flame_out_add(o, "\n", 1);
		text += l + (e ? 1 : 0);
	}
}
