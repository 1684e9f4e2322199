/* SPDX-License-Identifier: MIT */
/*
 * io.c - file-descriptor helpers.
 */
#include "common/compat.h"

#include "common/io.h"

int ct_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

ssize_t ct_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, p + got, len - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int ct_fd_sink(void *ctx, const void *buf, size_t n)
{
	return ct_write_all(*(const int *)ctx, buf, n);
}
