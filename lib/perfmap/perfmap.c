/* SPDX-License-Identifier: MIT */
/*
 * perfmap.c - the target's perf map for the length of a clrtap command: on
 * through IPC if it was off, back off afterwards, a lease so that two clrtap
 * processes on one target do not switch it off under each other, and a
 * watcher process that gives the lease back if clrtap dies first.
 *
 * Lease: /run/clrtap/perfmap-PID-STARTTIME, flock'ed shared by every user
 * for the whole command; its content says "clrtap-on existed=0|1" when a
 * clrtap turned the map on (and whether the map file existed before). It is
 * read and changed only under a mutex, an exclusive flock on the file
 * "<lease>.lock". Leaving: under the mutex, give the shared lock back, then
 * try the lease exclusively without waiting: success means no one else holds
 * it, and this last holder turns the map off, removes the map file if clrtap
 * created it, and removes both files. Openers of the mutex check that the
 * file they locked is still the one at the path.
 *
 * The watcher is a fork of clrtap made before any perf event is opened. It
 * holds the read end of a pipe whose only writer is clrtap, and the lease
 * (the same open file, so the shared lock lives while either holds it). When
 * clrtap ends normally it writes one byte and the watcher exits; when clrtap
 * dies, the pipe reads end-of-file and the watcher gives the lease back as
 * above. It ignores SIGINT/SIGTERM/SIGHUP (a Ctrl-C reaches the whole process
 * group; clrtap itself restores the setting then) and holds no other file
 * descriptor. It is the only code in the libraries that ends a process: its
 * own (_exit), never the caller's.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "common/log.h"
#include "common/strparse.h"
#include "perfmap/perfmap.h"

#define STATE_ON "clrtap-on existed="
#define STATE_JD " jitdump-made="

void perfmap_use_init(struct perfmap_use *u)
{
	memset(u, 0, sizeof(*u));
	u->guard_fd = -1;
	u->lease_fd = -1;
	u->rootfd = -1;
}

/* ---- lease ---- */

static int lease_dir(char *out, size_t cap)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (geteuid() == 0)
		n = snprintf(out, cap, "/run/clrtap");
	else if (x && x[0] == '/')
		n = snprintf(out, cap, "%s/clrtap", x);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) && errno != EEXIST)
		return -errno;
	/* ours alone: nothing a target or another user can plant */
	if (lstat(out, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/* Opens and locks a file; the locked file is the one at the path (not removed meanwhile). */
static int lease_lock(const char *path, int how, bool create)
{
	int tries;

	for (tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		struct stat a, b;

		if (fd < 0)
			return -errno;
		if (flock(fd, how) < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		if (!fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd); /* removed by its last holder meanwhile: open the new one */
	}
	return -EAGAIN;
}

/*
 * 1: a clrtap turned the map on (*existed: the map file was there before;
 * *jd: it turned jitdump on too, and made the jitdump file).
 */
static int lease_read(int fd, bool *existed, bool *jd)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, STATE_ON, strlen(STATE_ON)))
		return 0;
	*existed = buf[strlen(STATE_ON)] == '1';
	*jd = strstr(buf, STATE_JD "1") != NULL;
	return 1;
}

static void lease_write(int fd, bool existed, bool jd)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), STATE_ON "%d" STATE_JD "%d\n", existed ? 1 : 0,
			 jd ? 1 : 0);

	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n)
		ct_debug("perfmap: cannot write the lease: %s", strerror(errno));
}

/* The diagnostics endpoint of the target (kept in u: the watcher has no proc_target). */
static void endpoint(const struct perfmap_use *u, struct ipc_endpoint *ep)
{
	ep->path = u->sock;
	ep->timeout_ms = u->timeout_ms;
	ep->pid = u->pid;
	ep->nspid = u->nspid;
}

static void remove_tfile(const struct perfmap_use *u, const char *tpath)
{
	if (u->rootfd >= 0)
		(void)proc_tfile_unlink(u->rootfd, tpath, NULL);
	else
		(void)proc_target_file_unlink(u->pid, tpath, NULL);
}

/*
 * Removes the map file a clrtap made, and the jitdump file (jd), inside the
 * target's root only.
 */
static void remove_map(const struct perfmap_use *u, bool existed, bool jd)
{
	if (!existed)
		remove_tfile(u, u->map_tpath);
	if (jd && u->jitdump_tpath[0])
		remove_tfile(u, u->jitdump_tpath);
}

static void disable(const struct perfmap_use *u, bool existed, bool jd, struct ipc_error *rerr,
		    int *rc)
{
	struct ipc_endpoint ep;
	struct ipc_error local;
	int err;

	endpoint(u, &ep);
	err = ipc_perfmap_disable(&ep, rerr ? rerr : &local);
	if (rc)
		*rc = err;
	remove_map(u, existed, jd);
}

/* What turning the map on asks for: jitdump too on a runtime that buffers the map. */
static enum ipc_perfmap_type enable_type(const struct perfmap_use *u)
{
	return u->jitdump ? IPC_PERFMAP_ALL : IPC_PERFMAP_PERFMAP;
}

static int mutex_lock(const struct perfmap_use *u)
{
	char path[PROC_PATH_MAX + 8];

	snprintf(path, sizeof(path), "%s.lock", u->lease_path);
	return lease_lock(path, LOCK_EX, true);
}

/*
 * Gives the lease back (closing u->lease_fd); under the mutex, the last
 * holder turns the map off when a clrtap turned it on, and removes the lease.
 */
static int lease_leave(struct perfmap_use *u, struct ipc_error *rerr)
{
	char path[PROC_PATH_MAX + 8];
	bool existed = true, jd = false;
	int m = mutex_lock(u), fd, rc = 0;

	close(u->lease_fd);
	u->lease_fd = -1;
	fd = open(u->lease_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
		/* no other holder: the last one out */
		if (lease_read(fd, &existed, &jd) == 1)
			disable(u, existed, jd, rerr, &rc);
		(void)unlink(u->lease_path);
		if (m >= 0) {
			snprintf(path, sizeof(path), "%s.lock", u->lease_path);
			(void)unlink(path);
		}
	}
	if (fd >= 0)
		close(fd);
	if (m >= 0)
		close(m);
	return rc;
}

/* ---- watcher ---- */

/* Closes every fd from 3 up but the n in keep (-1 entries ignored). */
static void close_other_fds(int *keep, int n)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int i, j, next = 3;

	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
	}
	for (i = 1; i < n; i++) /* sort: n is tiny */
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < next)
			continue;
		if (keep[i] > next)
			(void)syscall(SYS_close_range, (unsigned)next, (unsigned)keep[i] - 1, 0u);
		next = keep[i] + 1;
	}
	(void)syscall(SYS_close_range, (unsigned)next, ~0u, 0u);
}

static void watcher(struct perfmap_use *u, int rfd)
{
	int keep[3] = { rfd, u->lease_fd, u->rootfd };
	char c = 0;
	ssize_t n;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_NAME, "clrtap-perfmap", 0, 0, 0);
	close_other_fds(keep, 3);
	do
		n = read(rfd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == 'x')
		_exit(0);
	/* clrtap died: give its lease back */
	if (u->lease_fd >= 0)
		(void)lease_leave(u, NULL);
	else if (u->turned_on)
		disable(u, u->file_existed, u->jitdump_made, NULL, NULL);
	_exit(0);
}

static int start_watcher(struct perfmap_use *u)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[1]);
		watcher(u, p[0]);
	}
	close(p[0]);
	u->guard = pid;
	u->guard_fd = p[1];
	return 0;
}

static void stop_watcher(struct perfmap_use *u)
{
	if (u->guard_fd >= 0) {
		ssize_t w;

		do
			w = write(u->guard_fd, "x", 1);
		while (w < 0 && errno == EINTR);
		close(u->guard_fd);
		u->guard_fd = -1;
	}
	if (u->guard > 0) {
		/* its copy of the lease must be closed before the last-holder test */
		while (waitpid(u->guard, NULL, 0) < 0 && errno == EINTR)
			;
		u->guard = 0;
	}
}

/* ---- begin / end ---- */

int perfmap_use_begin(struct perfmap_use *u, const struct proc_target *t, int timeout_ms,
		      struct ipc_error *rerr)
{
	struct proc_perfmap st;
	struct ipc_endpoint ep;
	char dir[PROC_PATH_MAX - 64];
	bool existed = false, jd = false;
	int rc, fd = -1, m = -1, prior;

	perfmap_use_init(u);
	/* best effort: without it the file is removed through /proc/PID/root */
	if (proc_root_open(t->pid, &u->rootfd))
		u->rootfd = -1;
	u->timeout_ms = timeout_ms;
	ct_strlcpy(u->sock, t->sock_tpath, sizeof(u->sock));
	u->pid = t->pid;
	u->nspid = t->nspid;
	endpoint(u, &ep);
	if (!lease_dir(dir, sizeof(dir))) {
		snprintf(u->lease_path, sizeof(u->lease_path), "%s/perfmap-%d-%" PRIu64, dir,
			 (int)t->pid, t->starttime);
		/* the mutex for reading and changing the lease; the lease itself held shared */
		m = mutex_lock(u);
		if (m >= 0) {
			fd = open(u->lease_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0 && flock(fd, LOCK_SH) < 0) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			ct_debug("perfmap: no lease (%s): another clrtap may switch the map off",
				 strerror(errno));
	}
	rc = proc_perfmap_state(t, &st);
	if (rc < 0)
		goto fail;
	ct_strlcpy(u->map_path, st.map_path, sizeof(u->map_path));
	ct_strlcpy(u->map_tpath, st.map_tpath, sizeof(u->map_tpath));
	ct_strlcpy(u->jitdump_path, st.jitdump_path, sizeof(u->jitdump_path));
	ct_strlcpy(u->jitdump_tpath, st.jitdump_tpath, sizeof(u->jitdump_tpath));
	prior = fd >= 0 ? lease_read(fd, &existed, &jd) : 0;
	if (prior == 1 && st.on) {
		/* another clrtap turned it on and holds the lease: share it */
		u->shared = true;
		u->file_existed = existed;
		u->jitdump_made = jd;
		u->jitdump = jd || st.jitdump_open;
	} else if (st.on) {
		u->was_on = true; /* on by the user: left alone */
		u->jitdump = st.jitdump_open; /* read when there */
		if (fd >= 0 && ftruncate(fd, 0))
			ct_debug("perfmap: cannot clear the lease: %s", strerror(errno));
	} else {
		/* a lease left by a clrtap whose watcher died too knows the file's origin */
		u->file_existed = prior == 1 ? existed : st.map_exists;
		/*
		 * A runtime that buffers its perf map writes jitdump as code is
		 * published: turned on too (PerfMapType ALL), read by the commands
		 * that follow code live, and removed at the end when clrtap made it.
		 */
		u->runtime_major = perfmap_runtime_major(t, timeout_ms);
		u->jitdump = u->runtime_major >= PERFMAP_BUFFERED_MAJOR;
		u->jitdump_made = u->jitdump && !st.jitdump_exists;
		rc = ipc_perfmap_enable(&ep, enable_type(u), rerr);
		if (rc < 0)
			goto fail;
		u->turned_on = true;
		if (fd >= 0)
			lease_write(fd, u->file_existed, u->jitdump_made);
	}
	u->lease_fd = fd; /* held shared for the command */
	if (m >= 0)
		close(m);
	if (u->lease_fd < 0 && !u->turned_on)
		return 0;
	rc = start_watcher(u);
	if (rc < 0)
		ct_warn("cannot start the perf map watcher (%s): if clrtap is killed, turn the "
			"perf map off with 'clrtap perfmap -p %d off'",
			strerror(-rc), (int)t->pid);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (m >= 0)
		close(m);
	return rc;
}

static void close_root(struct perfmap_use *u)
{
	if (u->rootfd >= 0)
		close(u->rootfd);
	u->rootfd = -1;
}

int perfmap_use_flush(struct perfmap_use *u, struct ipc_error *rerr)
{
	struct ipc_endpoint ep;
	bool alone = true;
	int m = -1, rc;

	if (!u->turned_on || u->shared || u->runtime_major < PERFMAP_BUFFERED_MAJOR)
		return 0;
	if (u->lease_fd >= 0) {
		/*
		 * Under the mutex (no one joins or leaves meanwhile): the lease
		 * taken exclusively means no other clrtap holds it (the watcher
		 * shares this open file, not a lock of its own). Back to shared.
		 */
		m = mutex_lock(u);
		alone = flock(u->lease_fd, LOCK_EX | LOCK_NB) == 0;
		(void)flock(u->lease_fd, LOCK_SH);
	}
	rc = 0;
	if (alone) {
		endpoint(u, &ep);
		rc = ipc_perfmap_disable(&ep, rerr);
	}
	if (m >= 0)
		close(m);
	if (rc < 0)
		return rc;
	return alone ? 1 : 0;
}

int perfmap_use_reread(struct perfmap_use *u, void (*read)(void *ctx), void *ctx,
		       struct ipc_error *rerr)
{
	struct ipc_endpoint ep;
	int m = -1, rc;

	if (!u->turned_on && !u->shared)
		return 0;
	if (u->lease_fd >= 0)
		m = mutex_lock(u); /* no clrtap joins or leaves meanwhile */
	endpoint(u, &ep);
	rc = ipc_perfmap_disable(&ep, rerr);
	if (rc == 0) {
		read(ctx);
		rc = ipc_perfmap_enable(&ep, enable_type(u), rerr);
	}
	if (m >= 0)
		close(m);
	return rc < 0 ? rc : 1;
}

int perfmap_runtime_major(const struct proc_target *t, int timeout_ms)
{
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	int major = 0;

	if (t->runtime_major)
		return t->runtime_major; /* asked when the target was resolved */
	ipc_endpoint_init(&ep, t, timeout_ms);
	(void)ipc_peer_verify_major(&ep, &major, &rerr);
	return major;
}

int perfmap_use_end(struct perfmap_use *u, struct ipc_error *rerr)
{
	int rc = 0;

	stop_watcher(u);
	if (u->lease_fd >= 0)
		rc = lease_leave(u, rerr);
	else if (u->turned_on)
		disable(u, u->file_existed, u->jitdump_made, rerr, &rc);
	u->turned_on = false;
	close_root(u);
	return rc;
}

int perfmap_use_end_within(struct perfmap_use *u, int wait_ms, struct ipc_error *rerr)
{
	const struct timespec tick = { 0, 10 * 1000000L };
	int waited, st;

	if (u->guard_fd < 0 || u->guard <= 0 || wait_ms <= 0)
		return perfmap_use_end(u, rerr);
	/*
	 * The watcher does what perfmap_use_end does when its pipe closes
	 * without "x". This process's copy of the lease goes first, so that the
	 * watcher's last-holder test sees only other clrtaps.
	 */
	if (u->lease_fd >= 0) {
		close(u->lease_fd);
		u->lease_fd = -1;
	}
	close(u->guard_fd);
	u->guard_fd = -1;
	u->turned_on = false;
	close_root(u); /* the watcher has its own copy */
	for (waited = 0;; waited += 10) {
		pid_t r = waitpid(u->guard, &st, WNOHANG);

		if (r == u->guard || (r < 0 && errno != EINTR)) {
			u->guard = 0;
			return 0;
		}
		if (waited >= wait_ms)
			return 1; /* it finishes after this process has gone */
		nanosleep(&tick, NULL);
	}
}
