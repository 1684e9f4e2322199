/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <fcntl.h>

#include "common/strbuf.h"

char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t max)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->max = max ? max : STRBUF_UNBOUNDED;
	sb->err = 0;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, sb->max);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *ret;

	if (len)
		*len = sb->len;
	if (!sb->alloc) {
		ret = calloc(1, 1);
	} else {
		ret = sb->buf;
	}
	strbuf_init(sb, sb->max);
	return ret;
}

void strbuf_reset(struct strbuf *sb)
{
	strbuf_setlen(sb, 0);
	sb->err = 0;
}

void strbuf_rollback(struct strbuf *sb, size_t mark)
{
	strbuf_setlen(sb, mark);
	sb->err = 0;
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (!sb->alloc)
		return;
	if (len > sb->len)
		len = sb->len;
	sb->len = len;
	sb->buf[len] = '\0';
}

static int fail(struct strbuf *sb, int err)
{
	if (!sb->err)
		sb->err = err;
	return err;
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need, nalloc;
	char *nb;

	if (sb->err)
		return sb->err;
	if (extra > sb->max || sb->len > sb->max - extra)
		return fail(sb, -EMSGSIZE);
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return 0;
	nalloc = sb->alloc ? sb->alloc : 64;
	while (nalloc < need) {
		if (nalloc > SIZE_MAX / 2)
			return fail(sb, -ENOMEM);
		nalloc *= 2;
	}
	nb = realloc(sb->alloc ? sb->buf : NULL, nalloc);
	if (!nb)
		return fail(sb, -ENOMEM);
	if (!sb->alloc)
		nb[0] = '\0';
	sb->buf = nb;
	sb->alloc = nalloc;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t n)
{
	int err = strbuf_grow(sb, n);

	if (err)
		return err;
	if (n)
		memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;

	return strbuf_add(sb, &ch, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n, err;

	if (sb->err)
		return sb->err;
	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return fail(sb, -EINVAL);
	err = strbuf_grow(sb, (size_t)n);
	if (err)
		return err;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return err;
}

int strbuf_fwrite(const struct strbuf *sb, FILE *f)
{
	if (sb->err)
		return sb->err;
	if (sb->len && fwrite(sb->buf, 1, sb->len, f) != sb->len)
		return -EIO;
	return 0;
}

int strbuf_read_file(struct strbuf *sb, const char *path)
{
	char tmp[8192];
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		err = strbuf_add(sb, tmp, (size_t)n);
		if (err == -EMSGSIZE)
			err = -EFBIG;
		if (err)
			break;
	}
	close(fd);
	return err;
}
