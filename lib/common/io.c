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
