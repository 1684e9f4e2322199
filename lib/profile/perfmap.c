/* SPDX-License-Identifier: MIT */
/*
 * perfmap.c - the target's perf map for the length of a profiling session:
 * on through IPC if it was off, back off afterwards, and a watcher process
 * that restores it if clrtap dies first (SIGKILL included).
 *
 * The watcher is a fork of clrtap made before any perf event is opened. It
 * holds the read end of a pipe whose only writer is clrtap. When clrtap ends
 * the session normally it writes one byte and the watcher exits; when clrtap
 * dies, the pipe reads end-of-file and the watcher sends DisablePerfMap and
 * removes a map file that did not exist before. It ignores SIGINT/SIGTERM/
 * SIGHUP (a Ctrl-C reaches the whole process group; clrtap itself restores
 * the setting then) and holds no other file descriptor. It is the only code
 * in the libraries that ends a process: its own (_exit), never the caller's.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/log.h"
#include "common/strparse.h"
#include "profile/profile.h"

static void endpoint(const struct profile_perfmap *pm, struct ipc_endpoint *ep)
{
	ep->path = pm->sock;
	ep->timeout_ms = pm->timeout_ms;
	ep->pid = pm->pid;
	ep->nspid = pm->nspid;
}

/* Removes the map file this session made, inside the target's root only. */
static void remove_map(const struct profile_perfmap *pm)
{
	if (!pm->file_existed)
		(void)proc_target_file_unlink(pm->pid, pm->map_tpath, NULL);
}

static void restore(struct profile_perfmap *pm)
{
	struct ipc_endpoint ep;
	struct ipc_error rerr;

	endpoint(pm, &ep);
	(void)ipc_perfmap_disable(&ep, &rerr);
	remove_map(pm);
}

static void close_other_fds(int keep)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
	}
	if (keep > 3)
		(void)syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u);
	(void)syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u);
}

static void watcher(struct profile_perfmap *pm, int rfd)
{
	char c = 0;
	ssize_t n;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_NAME, "clrtap-perfmap", 0, 0, 0);
	close_other_fds(rfd);
	do
		n = read(rfd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == 'x')
		_exit(0);
	restore(pm);
	_exit(0);
}

static int start_watcher(struct profile_perfmap *pm)
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
		watcher(pm, p[0]);
	}
	close(p[0]);
	pm->guard = pid;
	pm->guard_fd = p[1];
	return 0;
}

int profile_perfmap_begin(struct profile_perfmap *pm, const struct proc_target *t, int timeout_ms,
			  struct ipc_error *rerr)
{
	struct proc_perfmap st;
	struct ipc_endpoint ep;
	int rc;

	memset(pm, 0, sizeof(*pm));
	pm->guard_fd = -1;
	pm->timeout_ms = timeout_ms;
	ct_strlcpy(pm->sock, t->sock_tpath, sizeof(pm->sock));
	pm->pid = t->pid;
	pm->nspid = t->nspid;
	rc = proc_perfmap_state(t, &st);
	if (rc < 0)
		return rc;
	ct_strlcpy(pm->map_tpath, st.map_tpath, sizeof(pm->map_tpath));
	if (st.on) {
		pm->was_on = true;
		return 0;
	}
	pm->file_existed = st.map_exists;
	endpoint(pm, &ep);
	rc = ipc_perfmap_enable(&ep, IPC_PERFMAP_PERFMAP, rerr);
	if (rc < 0)
		return rc;
	pm->turned_on = true;
	rc = start_watcher(pm);
	if (rc < 0)
		ct_warn("cannot start the perf map watcher (%s): if clrtap is killed, turn the "
			"perf map off with 'clrtap perfmap -p %d off'",
			strerror(-rc), (int)t->pid);
	return 0;
}

int profile_perfmap_end(struct profile_perfmap *pm, struct ipc_error *rerr)
{
	struct ipc_endpoint ep;
	int rc = 0;

	endpoint(pm, &ep);
	if (pm->turned_on) {
		rc = ipc_perfmap_disable(&ep, rerr);
		remove_map(pm);
		pm->turned_on = false;
	}
	if (pm->guard_fd >= 0) {
		/* The watcher's job is done either way: a failed disable is reported here. */
		ssize_t w;

		do
			w = write(pm->guard_fd, "x", 1);
		while (w < 0 && errno == EINTR);
		close(pm->guard_fd);
		pm->guard_fd = -1;
	}
	if (pm->guard > 0) {
		while (waitpid(pm->guard, NULL, 0) < 0 && errno == EINTR)
			;
		pm->guard = 0;
	}
	return rc;
}
