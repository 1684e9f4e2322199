/* SPDX-License-Identifier: MIT */
/*
 * dump.c - the dump workflow (dump.h): the output file made next to its
 * final name, the target's own file when it lives in another mount
 * namespace, the runtime's dump command, the copy out and the rename.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>

#include "common/exitcode.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strparse.h"
#include "dump/dump.h"

int dump_type_parse(const char *s, enum ipc_dump_type *t)
{
	static const struct {
		const char *name;
		enum ipc_dump_type type;
	} types[] = {
		{ "mini", IPC_DUMP_MINI },
		{ "heap", IPC_DUMP_HEAP },
		{ "triage", IPC_DUMP_TRIAGE },
		{ "full", IPC_DUMP_FULL },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		if (!strcmp(s, types[i].name)) {
			*t = types[i].type;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Where the dump goes: the directory of PATH (opened once, so that every step
 * names the same directory), its final name, and a fresh temporary name next
 * to it that clrtap created itself (O_EXCL). The runtime's createdump removes
 * its output path when it fails: it only ever sees the temporary name, and
 * PATH is replaced (rename) only by a complete dump.
 */
struct out_file {
	int dirfd;
	char dir[PROC_PATH_MAX];
	char base[256];
	char tmp[300];                 /* temporary name in dir */
	char tmp_path[PROC_PATH_MAX + 300];
	int fd;                        /* open on tmp */
	struct stat st;                /* of tmp when created */
};

static int out_open(struct out_file *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dl = (size_t)(slash - path);
	struct stat st;
	unsigned r;
	int i;

	o->dirfd = o->fd = -1;
	if (!slash || dl >= sizeof(o->dir) || strlen(slash + 1) >= sizeof(o->base) || !slash[1])
		return -ENAMETOOLONG;
	memcpy(o->dir, path, dl ? dl : 1);
	o->dir[dl ? dl : 1] = '\0';
	ct_strlcpy(o->base, slash + 1, sizeof(o->base));
	o->dirfd = open(o->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0)
		return -errno;
	/* Only a regular file is ever replaced: never a device, FIFO, link or directory. */
	if (!fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		return -EINVAL;
	for (i = 0; i < 100; i++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned)getpid() * 2654435761u + (unsigned)i;
		snprintf(o->tmp, sizeof(o->tmp), ".%.200s.clrtap-%08x.tmp", o->base, r);
		o->fd = openat(o->dirfd, o->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (o->fd >= 0 || errno != EEXIST)
			break;
	}
	if (o->fd < 0)
		return -errno;
	if (fstat(o->fd, &o->st))
		return -errno;
	snprintf(o->tmp_path, sizeof(o->tmp_path), "%s%s%s", o->dir, dl ? "/" : "", o->tmp);
	return 0;
}

/* Removes the temporary file if it is still the one clrtap made. */
static void out_discard(struct out_file *o)
{
	struct stat st;

	if (o->dirfd >= 0 && o->tmp[0] && !fstatat(o->dirfd, o->tmp, &st, AT_SYMLINK_NOFOLLOW) &&
	    st.st_dev == o->st.st_dev && st.st_ino == o->st.st_ino)
		(void)unlinkat(o->dirfd, o->tmp, 0);
	o->tmp[0] = '\0';
}

/* The complete dump takes PATH's name. */
static int out_commit(struct out_file *o)
{
	struct stat st;

	if (fsync(o->fd) && errno != EINVAL)
		return -errno;
	if (!fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		return -EINVAL;
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->base))
		return -errno;
	o->tmp[0] = '\0';
	return 0;
}

static void out_close(struct out_file *o)
{
	out_discard(o);
	if (o->fd >= 0)
		close(o->fd);
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->fd = o->dirfd = -1;
}

/* Copies len bytes of in (from offset 0) to out. */
static int copy_fd(int in, int out, off_t len)
{
	off_t off = 0;

	while (off < len) {
		ssize_t n = sendfile(out, in, &off, (size_t)(len - off));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* the file shrank while being copied */
	}
	return 0;
}

/* The runtime writes as the target's user: hand it the fresh file. */
static void give_to(int fd, uid_t uid)
{
	if (geteuid() == 0 && uid != 0 && fchown(fd, uid, (gid_t)-1))
		ct_warn("cannot hand the dump file to uid %u: %s", (unsigned)uid, strerror(errno));
}

#define CRASH_REPORT_MAX ((uint64_t)64 << 20)

/*
 * createdump's crash report is "<dump path>.crashreport.json": give it the
 * name that goes with PATH (same directory), or copy it out of the target.
 */
static bool keep_crash_report(int rootfd, int dirfd, const char *tmpname, const char *target_path,
			      const char *host_path)
{
	char from[PROC_PATH_MAX + 400], to[PROC_PATH_MAX + 32];
	struct out_file o = { .dirfd = -1, .fd = -1 };
	struct stat st;
	int in = -1, err;

	snprintf(to, sizeof(to), "%s.crashreport.json", host_path);
	if (rootfd < 0) {
		const char *base = strrchr(to, '/') + 1;

		snprintf(from, sizeof(from), "%s.crashreport.json", tmpname);
		if (fstatat(dirfd, from, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			return false;
		if ((!fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode)) ||
		    renameat(dirfd, from, dirfd, base)) {
			ct_warn("the crash report stays at %s", from);
			return false;
		}
		return true;
	}
	snprintf(from, sizeof(from), "%s.crashreport.json", target_path);
	err = proc_tfile_open(rootfd, from, CRASH_REPORT_MAX, &in, &st);
	if (err)
		return false;
	err = out_open(&o, to);
	if (!err)
		err = copy_fd(in, o.fd, st.st_size);
	if (!err)
		err = out_commit(&o);
	if (err)
		ct_warn("cannot copy the crash report out to %s: %s", to, strerror(-err));
	out_close(&o);
	close(in);
	(void)proc_tfile_unlink(rootfd, from, &st);
	return !err;
}


static int fail(struct dump_result *r, int err, int code, const char *fmt, ...) PRINTF(4, 5);
static int fail(struct dump_result *r, int err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	r->exit_code = code;
	return err;
}

/* A fresh file inside the target's own temp dir, made (and later read) by clrtap. */
static int target_file(const struct proc_target *t, int *rootfd, char *path, size_t len, int *tfd,
		       struct stat *tst, struct dump_result *r)
{
	unsigned rnd = 0;
	int err = proc_root_open(t->pid, rootfd);

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (unsigned)time(NULL);
	snprintf(path, len, "%s%sclrtap-dump-%d-%ld-%08x.core", t->tmpdir, strcmp(t->tmpdir, "/") ? "/" : "",
		 (int)t->nspid, (long)time(NULL), rnd);
	if (!err)
		err = proc_tfile_create(*rootfd, path, 0600, tfd);
	if (!err && fstat(*tfd, tst))
		err = -errno;
	if (err)
		return fail(r, err, ct_exit_for(err), "cannot make the dump file %s inside pid %d's root: %s", path,
			    (int)t->pid, proc_tfile_strerror(err));
	give_to(*tfd, t->uid);
	return 0;
}

/* What the runtime wrote, in the file clrtap made, committed to its name. */
static int finish(const struct dump_opts *o, struct out_file *of, int tfd, struct dump_result *r)
{
	const char *host_path = o->host_path;
	struct stat st;
	int err = 0;

	if (tfd >= 0) {
		/* copy what the runtime wrote into the file clrtap made, as long as it was then */
		if (fstat(tfd, &st))
			err = -errno;
		if (!err)
			err = copy_fd(tfd, of->fd, st.st_size);
		if (err)
			return fail(r, err, ct_exit_for(err),
				    "the target wrote its dump, but it could not be copied to %s (%s): %s left as it "
				    "was, the target's copy removed", host_path, strerror(-err), host_path);
		r->copied = true;
	}
	if (fstat(of->fd, &st) || st.st_size == 0)
		return fail(r, -EREMOTEIO, EXIT_RUNTIME,
			    "the runtime said the dump was written, but it is empty: %s left as it was", host_path);
	if (geteuid() == 0 && fchown(of->fd, geteuid(), getegid()))
		ct_warn("cannot take the dump file back from the target's user: %s", strerror(errno));
	r->bytes = (uint64_t)st.st_size;
	err = out_commit(of);
	if (err)
		return fail(r, err, EXIT_ERROR, "cannot put the dump at %s: %s", host_path,
			    err == -EINVAL ? "it is no longer a regular file" : strerror(-err));
	return 0;
}

int dump_run(const struct dump_opts *o, struct dump_result *r)
{
	const struct proc_target *t = o->t;
	struct out_file of = { .dirfd = -1, .fd = -1 };
	struct ipc_error rerr;
	struct stat tst;
	char tmpname[300];
	int err, rootfd = -1, tfd = -1, tdirfd = -1;

	memset(r, 0, sizeof(*r));
	ct_strlcpy(r->path, o->host_path, sizeof(r->path));
	err = out_open(&of, o->host_path);
	if (err == -EINVAL) {
		fail(r, err, EXIT_USAGE, "%s exists and is not a regular file: clrtap does not replace it",
		     o->host_path);
		goto out;
	}
	if (err) {
		fail(r, err, err == -EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot write the dump to %s: %s",
		     o->host_path, strerror(-err));
		goto out;
	}
	if (t->other_mntns) {
		if ((err = target_file(t, &rootfd, r->target_path, sizeof(r->target_path), &tfd, &tst, r)))
			goto out;
	} else {
		ct_strlcpy(r->target_path, of.tmp_path, sizeof(r->target_path));
		give_to(of.fd, t->uid);
	}
	if (o->armed) {
		const char *slash = strrchr(r->target_path, '/');

		if (rootfd >= 0 && slash && proc_tpath_open(rootfd, t->tmpdir, O_DIRECTORY, &tdirfd))
			tdirfd = -1;
		o->armed(o->ctx, of.dirfd, of.tmp, tdirfd, tdirfd >= 0 ? slash + 1 : "");
	}
	err = ipc_dump(o->ep, r->target_path, o->type, o->crash_report ? IPC_DUMP_CRASHREPORT : 0, &rerr);
	if (o->stop && *o->stop) {
		r->interrupted = true;
		err = fail(r, -EINTR, EXIT_INTERRUPTED, "interrupted: no dump written, %s left as it was",
			   o->host_path);
		goto out;
	}
	if (err) {
		char buf[512];

		ipc_strerror(err, &rerr, buf, sizeof(buf));
		fail(r, err, ct_exit_for(err), "the runtime could not write the dump: %s", buf);
		goto out;
	}
	ct_strlcpy(tmpname, of.tmp, sizeof(tmpname));
	if ((err = finish(o, &of, tfd, r)))
		goto out;
	if (o->crash_report)
		r->crash_report = keep_crash_report(rootfd, of.dirfd, tmpname, r->target_path, o->host_path);
out:
	if (tdirfd >= 0)
		close(tdirfd);
	if (tfd >= 0) {
		/* only the file clrtap made, only inside the target's root */
		(void)proc_tfile_unlink(rootfd, r->target_path, &tst);
		close(tfd);
	}
	if (rootfd >= 0)
		close(rootfd);
	out_close(&of);
	return err;
}

int dump_result_json(const struct dump_opts *o, const struct dump_result *r, struct strbuf *out)
{
	struct ct_json j;

	ct_json_init(&j, out);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "task", "dump");
	ct_json_kv_u64(&j, "pid", (uint64_t)o->t->pid);
	ct_json_kv_str(&j, "type", o->type_name);
	ct_json_kv_str(&j, "path", r->path);
	ct_json_kv_u64(&j, "bytes", r->bytes);
	ct_json_kv_str(&j, "written_in_target_as", r->target_path);
	ct_json_kv_bool(&j, "copied_out_of_namespace", r->copied);
	ct_json_kv_bool(&j, "crash_report", r->crash_report);
	ct_json_kv_bool(&j, "partial", false);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}
