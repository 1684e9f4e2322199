/* SPDX-License-Identifier: MIT */
/*
 * tfile.c - the one way clrtap touches a target's files (proc.h, "Files of a
 * target"). Every path is resolved under the target's root directory fd and
 * can never leave it: the kernel does it with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS); on kernels without openat2 (before 5.6) a walk
 * below does the same one component at a time with O_PATH | O_NOFOLLOW,
 * reading each symlink itself and resolving it against the target's root.
 * The last component is never followed, unless a directory is asked for.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "common/strparse.h"
#include "proc/proc.h"

#define WALK_MAX_LINKS 40
#define WALK_PATH_MAX 4096

static int walk_only = -1; /* -1: not decided yet (CLRTAP_NO_OPENAT2=1 in the environment) */

void proc_tfile_walk_only(bool on)
{
	walk_only = on;
}

/* Tests of the fallback on kernels that have openat2: CLRTAP_NO_OPENAT2=1. */
static bool use_walk_only(void)
{
	if (walk_only < 0) {
		const char *e = getenv("CLRTAP_NO_OPENAT2");

		walk_only = e && !strcmp(e, "1");
	}
	return walk_only;
}

int proc_root_open(pid_t pid, int *rootfd)
{
	char path[64];
	int fd;

	*rootfd = -1;
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	/* This one link is the point: it is the target's root, as the kernel knows it. */
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return -ESRCH;
		if (errno == EPERM)
			return -EACCES;
		return -errno;
	}
	*rootfd = fd;
	return 0;
}

/* Puts head and a '/' in front of rest (capacity WALK_PATH_MAX). */
static int path_prepend(char *rest, const char *head)
{
	size_t hl = strlen(head), rl = strlen(rest);

	if (hl + 1 + rl + 1 > WALK_PATH_MAX)
		return -ENAMETOOLONG;
	memmove(rest + hl + 1, rest, rl + 1);
	memcpy(rest, head, hl);
	rest[hl] = '/';
	return 0;
}

/* Back to the root: cur becomes a copy of rootfd, nothing resolved yet. */
static int restart(int rootfd, int *cur, char *done)
{
	done[0] = '\0';
	if (*cur >= 0)
		close(*cur);
	*cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	return *cur < 0 ? -errno : 0;
}

/*
 * The walk: rest holds what is left to resolve; done the components already
 * resolved (all directories, no links), so that ".." can restart from the
 * root instead of trusting a directory's own "..".
 */
static int walk(int rootfd, const char *path, int flags, mode_t mode, int *out)
{
	char *rest = NULL, *done = NULL, *link = NULL;
	int cur = -1, links = 0, err = 0;

	*out = -1;
	rest = malloc(WALK_PATH_MAX);
	done = malloc(WALK_PATH_MAX);
	link = malloc(WALK_PATH_MAX);
	if (!rest || !done || !link) {
		err = -ENOMEM;
		goto out;
	}
	if (strlen(path) >= WALK_PATH_MAX) {
		err = -ENAMETOOLONG;
		goto out;
	}
	ct_strlcpy(rest, path, WALK_PATH_MAX);
	if ((err = restart(rootfd, &cur, done)))
		goto out;
	for (;;) {
		char comp[NAME_MAX + 1];
		size_t cl, skip = strspn(rest, "/");
		bool last;
		struct stat st;
		int nfd;
		ssize_t ln;

		memmove(rest, rest + skip, strlen(rest + skip) + 1);
		cl = strcspn(rest, "/");
		if (cl == 0) {
			/* The path named a directory already reached ("/", "a/."). */
			if (flags & O_CREAT) {
				err = -EISDIR;
				goto out;
			}
			nfd = openat(cur, ".", (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC);
			/* "." of an O_PATH walk fd: the directory itself. */
			if (nfd < 0)
				err = -errno;
			else
				*out = nfd;
			goto out;
		}
		if (cl > NAME_MAX) {
			err = -ENAMETOOLONG;
			goto out;
		}
		memcpy(comp, rest, cl);
		comp[cl] = '\0';
		memmove(rest, rest + cl, strlen(rest + cl) + 1);
		/* A directory's own last link is followed too (inside the root). */
		last = rest[strspn(rest, "/")] == '\0' && !(flags & O_DIRECTORY);
		if (!strcmp(comp, ".")) {
			if (last)
				rest[0] = '\0';
			continue;
		}
		if (!strcmp(comp, "..")) {
			/* Up one from what was resolved, never above the root: re-walk it. */
			char *slash = strrchr(done, '/');

			if (slash)
				*slash = '\0';
			else
				done[0] = '\0';
			if (done[0] && (err = path_prepend(rest, done)))
				goto out;
			if ((err = restart(rootfd, &cur, done)))
				goto out;
			continue;
		}
		if (last) {
			nfd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
			if (nfd < 0) {
				err = -errno;
				goto out;
			}
			*out = nfd;
			goto out;
		}
		nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			err = -errno;
			goto out;
		}
		if (fstat(nfd, &st)) {
			err = -errno;
			close(nfd);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			ln = readlinkat(nfd, "", link, WALK_PATH_MAX - 1);
			close(nfd);
			if (ln < 0) {
				err = -errno;
				goto out;
			}
			link[ln] = '\0';
			if (++links > WALK_MAX_LINKS || ln == 0) {
				err = -ELOOP;
				goto out;
			}
			if ((err = path_prepend(rest, link)))
				goto out;
			/* Absolute: from the target's root, not ours. */
			if (link[0] == '/' && (err = restart(rootfd, &cur, done)))
				goto out;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(nfd);
			err = -ENOTDIR;
			goto out;
		}
		if (strlen(done) + 1 + cl + 1 > WALK_PATH_MAX) {
			close(nfd);
			err = -ENAMETOOLONG;
			goto out;
		}
		if (done[0])
			ct_strlcpy(done + strlen(done), "/", 2);
		ct_strlcpy(done + strlen(done), comp, cl + 1);
		close(cur);
		cur = nfd;
	}
out:
	if (cur >= 0)
		close(cur);
	free(rest);
	free(done);
	free(link);
	return err;
}

/* Opens path under rootfd; the last component is not followed. */
static int resolve(int rootfd, const char *path, int flags, mode_t mode, int *out)
{
	static bool no_openat2;
	struct open_how how;
	long fd;

	*out = -1;
	if (!path || !path[0])
		return -ENOENT;
	if (!use_walk_only() && !no_openat2) {
		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_CLOEXEC);
		if (!(flags & O_DIRECTORY))
			how.flags |= O_NOFOLLOW;
		how.mode = (flags & O_CREAT) ? mode : 0;
		how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
		for (int tries = 0; tries < 8; tries++) {
			fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
			if (fd >= 0 || errno != EAGAIN)
				break; /* EAGAIN: a rename raced the walk; try again */
		}
		if (fd >= 0) {
			*out = (int)fd;
			return 0;
		}
		if (errno != ENOSYS)
			return errno == EXDEV ? -ELOOP : -errno;
		no_openat2 = true;
	}
	return walk(rootfd, path, flags, mode, out);
}

/* Splits path into its directory (opened under rootfd) and a final name. */
static int open_parent(int rootfd, const char *path, int *dirfd, const char **base)
{
	char dir[WALK_PATH_MAX];
	const char *slash;
	size_t dl;

	*dirfd = -1;
	if (!path || !path[0])
		return -ENOENT;
	slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
		return -EINVAL;
	dl = slash ? (size_t)(slash - path) : 0;
	if (dl + 2 > sizeof(dir))
		return -ENAMETOOLONG;
	if (dl == 0) {
		ct_strlcpy(dir, slash ? "/" : ".", sizeof(dir));
	} else {
		memcpy(dir, path, dl);
		dir[dl] = '\0';
	}
	return resolve(rootfd, dir, O_PATH | O_DIRECTORY, 0, dirfd);
}

int proc_tpath_open(int rootfd, const char *path, int flags, int *fd)
{
	struct stat st;
	int err, f;

	err = resolve(rootfd, path, O_PATH | (flags & O_DIRECTORY), 0, &f);
	if (err)
		return err;
	if (fstat(f, &st)) {
		err = -errno;
		close(f);
		return err;
	}
	if (S_ISLNK(st.st_mode)) {
		close(f);
		return -ELOOP;
	}
	*fd = f;
	return 0;
}

int proc_tdir_open(int rootfd, const char *path, int *fd)
{
	return resolve(rootfd, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0, fd);
}

int proc_tfile_open(int rootfd, const char *path, uint64_t max_size, int *fd, struct stat *st)
{
	struct stat sb;
	int err, f, fl;

	*fd = -1;
	err = resolve(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, &f);
	if (err)
		return err;
	if (fstat(f, &sb)) {
		err = -errno;
		close(f);
		return err;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(f);
		return S_ISDIR(sb.st_mode) ? -EISDIR : -EINVAL;
	}
	if (max_size && (uint64_t)sb.st_size > max_size) {
		close(f);
		return -EFBIG;
	}
	/* A regular file: reads never block anyway; make them plain. */
	fl = fcntl(f, F_GETFL);
	if (fl >= 0)
		(void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
	if (st)
		*st = sb;
	*fd = f;
	return 0;
}

int proc_tfile_create(int rootfd, const char *path, mode_t mode, int *fd)
{
	const char *base;
	int dirfd, err = 0, f;

	*fd = -1;
	err = open_parent(rootfd, path, &dirfd, &base);
	if (err)
		return err;
	f = openat(dirfd, base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		   mode);
	if (f < 0)
		err = -errno;
	else
		*fd = f;
	close(dirfd);
	return err;
}

int proc_tfile_unlink(int rootfd, const char *path, const struct stat *expect)
{
	const char *base;
	struct stat st;
	int dirfd, err;

	err = open_parent(rootfd, path, &dirfd, &base);
	if (err)
		return err;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		err = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	} else if (expect && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino)) {
		err = -ESTALE;
	} else if (unlinkat(dirfd, base, 0)) {
		err = -errno;
	}
	close(dirfd);
	return err;
}

int proc_tfile_rename(int rootfd, const char *from, const char *to, const struct stat *expect)
{
	const char *fb, *tb;
	struct stat st;
	int fd1 = -1, fd2 = -1, err;

	err = open_parent(rootfd, from, &fd1, &fb);
	if (!err)
		err = open_parent(rootfd, to, &fd2, &tb);
	if (err)
		goto out;
	if (fstatat(fd1, fb, &st, AT_SYMLINK_NOFOLLOW))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (expect && (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino))
		err = -ESTALE;
	else if (!fstatat(fd2, tb, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		err = -EINVAL; /* never replace a directory, device, FIFO, socket or link */
	else if (renameat(fd1, fb, fd2, tb))
		err = -errno;
out:
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	return err;
}

const char *proc_tfile_strerror(int err)
{
	switch (err) {
	case -ELOOP:
		return "is a symbolic link (or leads out of the target's root)";
	case -EINVAL:
		return "is not a regular file";
	case -EFBIG:
		return "is larger than clrtap reads";
	case -ESTALE:
		return "was replaced while clrtap worked on it";
	default:
		return strerror(-err);
	}
}

int proc_target_file_open(pid_t pid, const char *path, uint64_t max_size, int *fd,
			  struct stat *st)
{
	int root, err;

	*fd = -1;
	err = proc_root_open(pid, &root);
	if (err)
		return err;
	err = proc_tfile_open(root, path, max_size, fd, st);
	close(root);
	return err;
}

int proc_target_file_unlink(pid_t pid, const char *path, const struct stat *expect)
{
	int root, err;

	err = proc_root_open(pid, &root);
	if (err)
		return err;
	err = proc_tfile_unlink(root, path, expect);
	close(root);
	return err;
}

int proc_map_file_path(pid_t pid, uint64_t start, uint64_t end, char *out, size_t outlen)
{
	int n, fd;

	n = snprintf(out, outlen, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	if (n < 0 || (size_t)n >= outlen)
		return -ENAMETOOLONG;
	/* The kernel lets only CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE) follow these. */
	fd = open(out, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == EPERM ? -EACCES : -errno;
	close(fd);
	return 0;
}
