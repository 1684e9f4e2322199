/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the target-file functions (tfile.c): a directory stands in
 * for a container's root, full of the links and FIFOs a hostile container
 * plants, with "host" sentinel files outside it that nothing may touch. Every
 * test runs twice: with openat2 and with the component walk.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "proc/proc.h"

static char host[256], rootdir[300];
static int rootfd = -1;

static void put(const char *rel, const char *text)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", host, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void link_at(const char *target, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", host, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void sub(const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", host, rel);
}

/*
 * host/                      the "host"
 *   sentinel                 a host file ("HOST")
 *   hostdir/sentinel         a host directory with a file
 *   root/                    the container's root
 *     tmp/ok                 a plain file ("OK")
 *     tmp/abs -> HOST/sentinel      absolute link to the host's path
 *     tmp/rel -> ../../../../sentinel
 *     tmp/dirlink -> HOST/hostdir   (a directory of the same name inside: tmp2)
 *     tmp/fifo                a FIFO
 *     tmpl -> /tmp            an in-root absolute link to a directory
 *     magic -> /proc/self/root
 */
static int setup(void **state)
{
	char p[512], q[512];

	(void)state;
	snprintf(host, sizeof(host), "/tmp/clrtap-tfile-test.%d", (int)getpid());
	mkdir(host, 0755);
	sub("hostdir", p, sizeof(p));
	mkdir(p, 0755);
	put("sentinel", "HOST");
	put("hostdir/sentinel", "HOST");
	sub("root", rootdir, sizeof(rootdir));
	mkdir(rootdir, 0755);
	sub("root/tmp", p, sizeof(p));
	mkdir(p, 0755);
	put("root/tmp/ok", "OK");
	sub("sentinel", q, sizeof(q));
	link_at(q, "root/tmp/abs");
	link_at("../../../../../../../../sentinel", "root/tmp/rel");
	sub("hostdir", q, sizeof(q));
	link_at(q, "root/tmp/dirlink");
	sub("root/tmp/fifo", p, sizeof(p));
	assert_int_equal(mkfifo(p, 0600), 0);
	link_at("/tmp", "root/tmpl");
	link_at("/proc/self/root", "root/magic");
	rootfd = open(rootdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", host);
	return system(cmd) == 0 ? 0 : -1;
}

static void host_intact(void)
{
	char p[512], buf[16] = "";
	int fd;
	ssize_t n;

	sub("sentinel", p, sizeof(p));
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_int_equal(n, 4);
	assert_string_equal(buf, "HOST");
	sub("hostdir/sentinel", p, sizeof(p));
	assert_int_equal(access(p, F_OK), 0);
}

static void run_reads(void)
{
	char buf[16] = "", p[600];
	struct stat st;
	int fd;

	assert_int_equal(proc_tfile_open(rootfd, "/tmp/ok", 0, &fd, &st), 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 2);
	assert_int_equal(st.st_size, 2);
	close(fd);
	/* An in-root link on the way is followed, inside the root. */
	assert_int_equal(proc_tfile_open(rootfd, "/tmpl/ok", 0, &fd, NULL), 0);
	close(fd);
	assert_int_equal(proc_tfile_open(rootfd, "tmpl/../tmp/./ok", 0, &fd, NULL), 0);
	close(fd);
	/* The last component is never followed. */
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/abs", 0, &fd, NULL), -ELOOP);
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/rel", 0, &fd, NULL), -ELOOP);
	/* A directory link to the host's path resolves inside the root: nothing there. */
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/dirlink/sentinel", 0, &fd, NULL), -ENOENT);
	/* ".." stops at the root. */
	assert_int_equal(proc_tfile_open(rootfd, "/../../../../../../sentinel", 0, &fd, NULL),
			 -ENOENT);
	snprintf(p, sizeof(p), "%s/sentinel", host);
	assert_int_equal(proc_tfile_open(rootfd, p, 0, &fd, NULL), -ENOENT);
	/* No magic links: /proc/self/root inside does not lead to clrtap's root. */
	snprintf(p, sizeof(p), "/magic%s/sentinel", host);
	assert_int_not_equal(proc_tfile_open(rootfd, p, 0, &fd, NULL), 0);
	/* A FIFO is refused at once, not waited on. */
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/fifo", 0, &fd, NULL), -EINVAL);
	assert_int_equal(proc_tfile_open(rootfd, "/tmp", 0, &fd, NULL), -EISDIR);
	/* The size cap. */
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/ok", 1, &fd, NULL), -EFBIG);
	/* O_PATH: a socket-like lookup of a link is a refusal, of a FIFO an fd. */
	assert_int_equal(proc_tpath_open(rootfd, "/tmp/abs", 0, &fd), -ELOOP);
	assert_int_equal(proc_tpath_open(rootfd, "/tmp/fifo", 0, &fd), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	close(fd);
	assert_int_equal(proc_tdir_open(rootfd, "/tmpl", &fd), 0);
	close(fd);
	assert_int_equal(proc_tdir_open(rootfd, "/tmp/dirlink", &fd), -ENOENT);
	host_intact();
}

static void run_writes(void)
{
	struct stat st, st2;
	char p[512];
	int fd, fd2;

	/* Create never follows or replaces. */
	assert_int_equal(proc_tfile_create(rootfd, "/tmp/abs", 0600, &fd), -EEXIST);
	assert_int_equal(proc_tfile_create(rootfd, "/tmp/ok", 0600, &fd), -EEXIST);
	assert_int_equal(proc_tfile_create(rootfd, "/tmp/dirlink/new", 0600, &fd), -ENOENT);
	assert_int_equal(proc_tfile_create(rootfd, "/tmpl/new", 0600, &fd), 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	sub("root/tmp/new", p, sizeof(p));
	assert_int_equal(access(p, F_OK), 0);
	/* Rename only regular files, never over a link or a FIFO. */
	assert_int_equal(proc_tfile_rename(rootfd, "/tmp/new", "/tmp/fifo", NULL), -EINVAL);
	assert_int_equal(proc_tfile_rename(rootfd, "/tmp/new", "/tmp/abs", NULL), -EINVAL);
	assert_int_equal(proc_tfile_rename(rootfd, "/tmp/abs", "/tmp/x", NULL), -EINVAL);
	assert_int_equal(proc_tfile_rename(rootfd, "/tmp/new", "/tmp/new2", &st), 0);
	/* Unlink: only regular files, only the expected one. */
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/abs", NULL), -EINVAL);
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/fifo", NULL), -EINVAL);
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/dirlink/sentinel", NULL), -ENOENT);
	assert_int_equal(proc_tfile_open(rootfd, "/tmp/ok", 0, &fd2, &st2), 0);
	close(fd2);
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/new2", &st2), -ESTALE);
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/new2", &st), 0);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(proc_tfile_unlink(rootfd, "/tmp/..", NULL), -EINVAL);
	host_intact();
}

static void test_openat2(void **state)
{
	(void)state;
	proc_tfile_walk_only(false);
	run_reads();
	run_writes();
}

static void test_walk(void **state)
{
	(void)state;
	proc_tfile_walk_only(true);
	run_reads();
	run_writes();
	proc_tfile_walk_only(false);
}

/* The target's root of this very process is "/". */
static void test_root_of_self(void **state)
{
	int r, fd;

	(void)state;
	assert_int_equal(proc_root_open(getpid(), &r), 0);
	assert_int_equal(proc_tdir_open(r, "/proc", &fd), 0);
	close(fd);
	close(r);
	assert_int_equal(proc_root_open(0, &r), -EINVAL);
	/* A magic link on the way is refused (openat2) or read as text (walk). */
	assert_int_equal(proc_tpath_open(r = -1, "/x", 0, &fd), -EBADF);
	assert_int_equal(proc_target_file_open(getpid(), "/proc/self/root/etc/hostname", 0, &fd,
					       NULL),
			 -ELOOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openat2),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_root_of_self),
	};

	return cmocka_run_group_tests_name("tfile", tests, setup, teardown);
}
