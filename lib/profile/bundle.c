/* SPDX-License-Identifier: MIT */
/*
 * bundle.c - a .tar.gz of a few files (POSIX ustar, written here; gzip
 * through zlib), for `clrtap profile --bundle`.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "common/strparse.h"
#include "profile/profile.h"
#include "profile/bundle.h"

#define TAR_BLOCK 512

static void octal(char *field, size_t width, uint64_t v)
{
	/* width-1 digits, zero padded, then NUL */
	snprintf(field, width, "%0*llo", (int)(width - 1), (unsigned long long)v);
}

static int gz_write_all(gzFile gz, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
		int w = gzwrite(gz, p, chunk);

		if (w <= 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int add_file(gzFile gz, const char *dir, const char *prefix, const char *name)
{
	char path[PROC_PATH_MAX * 2], hdr[TAR_BLOCK], buf[65536];
	unsigned sum = 0;
	struct stat st;
	uint64_t left;
	size_t i;
	int fd, rc = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	memset(hdr, 0, sizeof(hdr));
	if (snprintf(hdr, 100, "%s/%s", prefix, name) >= 100) {
		close(fd);
		return -ENAMETOOLONG;
	}
	octal(hdr + 100, 8, 0644);
	octal(hdr + 108, 8, 0);
	octal(hdr + 116, 8, 0);
	octal(hdr + 124, 12, (uint64_t)st.st_size);
	octal(hdr + 136, 12, (uint64_t)st.st_mtime);
	memset(hdr + 148, ' ', 8);
	hdr[156] = '0';
	memcpy(hdr + 257, "ustar", 6);
	memcpy(hdr + 263, "00", 2);
	memcpy(hdr + 265, "root", 5);
	memcpy(hdr + 297, "root", 5);
	for (i = 0; i < TAR_BLOCK; i++)
		sum += (uint8_t)hdr[i];
	snprintf(hdr + 148, 8, "%06o", sum);
	hdr[155] = ' ';
	rc = gz_write_all(gz, hdr, sizeof(hdr));
	left = (uint64_t)st.st_size;
	while (!rc && left) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO; /* shrank while we read it */
			break;
		}
		rc = gz_write_all(gz, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	close(fd);
	if (!rc && (st.st_size % TAR_BLOCK)) {
		memset(buf, 0, TAR_BLOCK);
		rc = gz_write_all(gz, buf, TAR_BLOCK - (size_t)(st.st_size % TAR_BLOCK));
	}
	return rc;
}

int profile_tar_gz(const char *out_path, const char *dir, const char *prefix,
		   const char *const *names, size_t n)
{
	char zero[TAR_BLOCK * 2];
	gzFile gz;
	size_t i;
	int fd, rc = 0;

	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	gz = gzdopen(fd, "wb6");
	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	for (i = 0; i < n && !rc; i++)
		rc = add_file(gz, dir, prefix, names[i]);
	memset(zero, 0, sizeof(zero));
	if (!rc)
		rc = gz_write_all(gz, zero, sizeof(zero));
	if (gzclose(gz) != Z_OK && !rc)
		rc = -EIO;
	if (rc)
		unlink(out_path);
	return rc;
}
