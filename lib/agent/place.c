/* SPDX-License-Identifier: MIT */
/*
 * place.c - putting the profiler library inside the target's filesystem.
 *
 * The target (often a container clrtap does not trust) controls every path
 * under /proc/PID/root. The temp directory is opened inside the target's
 * root with lib/proc's one way to reach a target's files (proc_tdir_open:
 * no link leads out of it), and files are created O_EXCL|O_NOFOLLOW in that
 * directory.
 * The file name carries a hash of the library's bytes, so a build never
 * replaces another: the runtime may have an older one mapped, and writing
 * over a mapped library crashes the target (dotnet/runtime#80683).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "agent/agent.h"
#include "common/io.h"
#include "common/log.h"
#include "common/strbuf.h"

#define LIB_MAX (16u << 20)

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Is the existing file name in dirfd exactly our bytes, owned by us? */
static int same_file(int dirfd, const char *name, const struct strbuf *lib)
{
	struct strbuf have = STRBUF_INIT_MAX(LIB_MAX);
	struct stat st;
	char buf[65536];
	int fd, err = 0;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (size_t)st.st_size != lib->len) {
		err = -EEXIST;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		if (strbuf_add(&have, buf, (size_t)n)) {
			err = -EEXIST;
			goto out;
		}
	}
	if (have.len != lib->len || memcmp(have.buf, lib->buf, lib->len))
		err = -EEXIST;
out:
	close(fd);
	strbuf_release(&have);
	return err;
}

static int write_new(int dirfd, const char *tmp, const char *name, const struct strbuf *lib)
{
	int fd, err;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = ct_write_all(fd, lib->buf, lib->len);
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	close(fd);
	if (!err) {
		if (syscall(SYS_renameat2, dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0) {
			return 0;
		} else if (errno == EINVAL || errno == ENOSYS) {
			/* The filesystem cannot rename without replacing: a hard
			 * link fails just the same when the name exists. */
			err = linkat(dirfd, tmp, dirfd, name, 0) ? -errno : 0;
		} else {
			err = -errno;
		}
	}
	unlinkat(dirfd, tmp, 0);
	return err;
}

int agent_place(const struct proc_target *t, const char *src, enum agent_libc l,
		char *target_path, size_t len, bool *reused)
{
	struct strbuf lib = STRBUF_INIT_MAX(LIB_MAX);
	char name[96], tmp[128], dir[PROC_PATH_MAX];
	int rootfd = -1, dirfd = -1, err;
	size_t dl;

	*reused = false;
	err = strbuf_read_file(&lib, src);
	if (err)
		goto out;
	if (lib.len == 0) {
		err = -ENOENT;
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s", t->tmpdir[0] ? t->tmpdir : "/tmp");
	dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dir[--dl] = '\0';
	if (dir[0] != '/') {
		err = -EINVAL;
		goto out;
	}
	snprintf(name, sizeof(name), "clrtap-profiler-%016" PRIx64 "-%s.so",
		 fnv1a(lib.buf, lib.len), agent_libc_name(l));
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	err = proc_root_open(t->pid, &rootfd);
	if (err)
		goto out;
	err = proc_tdir_open(rootfd, dir, &dirfd);
	if (err)
		goto out;
	if (snprintf(target_path, len, "%s/%s", strcmp(dir, "/") ? dir : "", name) >= (int)len) {
		err = -ENAMETOOLONG;
		goto out;
	}
	err = same_file(dirfd, name, &lib);
	if (err == 0) {
		*reused = true;
		goto out;
	}
	if (err != -ENOENT)
		goto out;
	err = write_new(dirfd, tmp, name, &lib);
	if (err == -EEXIST) {
		/* Someone else placed it meanwhile: use it only if it is ours. */
		err = same_file(dirfd, name, &lib);
		*reused = err == 0;
	}
	if (err)
		ct_debug("agent: placing %s in %s: %s", name, dir, strerror(-err));
out:
	if (dirfd >= 0)
		close(dirfd);
	if (rootfd >= 0)
		close(rootfd);
	strbuf_release(&lib);
	return err;
}
