/* SPDX-License-Identifier: MIT */
/*
 * proc.h - finding .NET processes through /proc, wherever they run.
 *
 * A .NET process listens on a Unix socket named
 *   <its TMPDIR>/dotnet-diagnostic-<its pid>-<starttime>-socket
 * where both the directory and the pid are as the process itself sees them.
 * From the host (or a sidecar that shares the PID namespace) the socket is
 * reached through /proc/<host pid>/root/<TMPDIR>, and the pid in the name is
 * the last field of the NSpid line in /proc/<host pid>/status. Nothing needs
 * to be shared: not /tmp, not the PID namespace of the target.
 *
 * All functions return 0 or a negative errno:
 *   -ESRCH   the process does not exist (or died while being read)
 *   -EACCES  not allowed to look inside it (other user, no CAP_SYS_PTRACE)
 *   -ENOENT  it has no diagnostics socket: not a .NET process, or one with
 *            diagnostics disabled
 *   -ECONNREFUSED  a socket file exists but nobody listens: stale
 *   -ELOOP / -ENOTSOCK  where the socket should be there is only a symbolic
 *            link / another kind of file (named in sock_tpath): not the
 *            target's socket, and never followed
 */
#ifndef CLRTAP_PROC_PROC_H
#define CLRTAP_PROC_PROC_H

#include "common/compat.h"
#include "common/strbuf.h"

#include <sys/stat.h>

#define PROC_PATH_MAX 512

struct proc_target {
	pid_t pid;                   /* pid as clrtap sees it */
	pid_t nspid;                 /* pid in the target's own PID namespace */
	uint64_t starttime;          /* field 22 of /proc/pid/stat (the socket's key) */
	uid_t uid;                   /* real uid of the target */
	bool other_pidns;            /* in a PID namespace other than clrtap's */
	bool other_mntns;            /* in a mount namespace other than clrtap's */
	bool key_match;              /* socket key == starttime (else: newest candidate) */
	char tmpdir[PROC_PATH_MAX];  /* the target's temp dir, as the target sees it */
	char root[64];               /* "/proc/<pid>/root": prefix for the target's paths */
	char socket[PROC_PATH_MAX];  /* the diagnostics socket, for messages: "/proc/<pid>/root"
				      * + sock_tpath when in another mount namespace; never
				      * opened as such (a container's links would lead out) */
	char sock_tpath[PROC_PATH_MAX]; /* the socket as the target sees it: connect through
					 * its root (struct ipc_endpoint with pid set) */
	int runtime_major;           /* the runtime's major version, once a caller asked the
				      * runtime (ProcessInfo): 0 unknown */
};

/*
 * Fills t for pid: identity, namespaces and the diagnostics socket. Returns 0,
 * -ESRCH, -EACCES or -ENOENT (see above). t is filled as far as was learned
 * even on failure (pid, nspid, uid when readable).
 */
int proc_target_find(pid_t pid, struct proc_target *t);

/*
 * The sentence clrtap says when proc_target_find(pid, t) returned err (t as
 * that call left it): "no process with pid 42", "pid 42 is not a .NET
 * process (...)", ... One wording for the CLI and for clrtap serve.
 */
void proc_target_strerror(pid_t pid, int err, const struct proc_target *t, char *buf, size_t len);

/*
 * Why a target owned by uid could not be inspected (proc_target_find gave
 * -EACCES), as a sentence in buf naming what this process really lacks:
 * CAP_SYS_PTRACE (the kernel's ptrace access check on /proc/PID/root, ns,
 * environ) and CAP_DAC_OVERRIDE (environ is mode 0400 of the target's uid,
 * the diagnostics socket 0600: connect needs write permission), from this
 * process's effective set; or, when it has both, a security module or a
 * user namespace. Returns 0 or negative errno.
 */
int proc_access_explain(uid_t uid, char *buf, size_t len);

/* Memory of a process's cgroup against the nearest limit above it. */
struct proc_cgmem {
	bool v2;                /* cgroup v2 (memory.current/max), else v1 (usage/limit_in_bytes) */
	uint64_t current;       /* bytes used by the cgroup that holds the limit (the leaf without one) */
	uint64_t limit;         /* the smallest limit on the way to the root; 0: none */
	char path[PROC_PATH_MAX]; /* that cgroup, as in /proc/PID/cgroup */
};
/*
 * Reads /proc/PID/cgroup (v1 "N:memory:/path" first, else v2 "0::/path"),
 * then usage and limit under /sys/fs/cgroup from the leaf up to the root,
 * keeping the smallest limit (v1's "no limit", 2^63 rounded to pages, counts
 * as none). Returns 0, -ENOENT (no memory cgroup here), -EINVAL (a path with
 * "..") or what reading gave.
 */
int proc_cgroup_memory(pid_t pid, struct proc_cgmem *m);

/*
 * Exit statuses of any process (procev.c): the kernel's process-events
 * connector. proc_events_open needs the initial user and PID namespaces
 * (else -ETIMEDOUT: the kernel does not answer) and, on kernels before 6.6,
 * CAP_NET_ADMIN (else -EPERM, from the kernel's answer); the socket is
 * non-blocking. For every
 * thread that exits, fn gets its pid, its process's tgid and the wait
 * status (WIFSIGNALED/WEXITSTATUS apply). proc_events_read drains the
 * socket: the number of datagrams read, or -ENOBUFS when the kernel dropped
 * events (the socket's buffer was full). proc_events_parse reads one
 * datagram's bytes (every length checked).
 */
typedef void (*proc_exit_fn)(void *ctx, pid_t pid, pid_t tgid, int status);
int proc_events_open(int *fd);
int proc_events_read(int fd, proc_exit_fn fn, void *ctx);
void proc_events_parse(const void *buf, size_t len, proc_exit_fn fn, void *ctx);

/* Callback for proc_scan: return non-zero to stop the scan with that value. */
typedef int (*proc_scan_fn)(pid_t pid, void *ctx);
/* Calls fn for every numeric entry of /proc, in increasing pid order. */
int proc_scan(proc_scan_fn fn, void *ctx);

/* Reads /proc/pid/<name> into sb (with sb's cap). */
int proc_read(pid_t pid, const char *name, struct strbuf *sb);
/* The command line with NULs turned into spaces (capped at max bytes). */
int proc_cmdline(pid_t pid, struct strbuf *out, size_t max);
/* The value of one variable from /proc/pid/environ; -ENOENT if unset. */
int proc_environ_get(pid_t pid, const char *name, struct strbuf *out);
/*
 * The name a process or thread (pid may be a tid) set for itself, as its
 * bytes: /proc/pid/comm without the one '\n' the kernel adds (status' Name
 * shows it escaped: "\n", "\\"). Cut to len - 1 bytes.
 */
int proc_comm(pid_t pid, char *name, size_t len);
/* Last NSpid field (pid may be a tid), and the starttime key. */
int proc_nspid(pid_t pid, pid_t *nspid);
int proc_starttime(pid_t pid, uint64_t *starttime);
/*
 * The one reader of /proc/PID/stat and of resident memory: field want (3 or
 * later, as proc(5) numbers them) of a stat line (the comm in parentheses
 * may hold spaces and ')'); utime + stime in clock ticks; resident bytes
 * from statm. -EBADMSG for a malformed line.
 */
int proc_stat_field(const char *s, size_t len, int want, uint64_t *v);
int proc_cpu_ticks(pid_t pid, uint64_t *ticks);
int proc_rss_bytes(pid_t pid, uint64_t *bytes);
int proc_uid(pid_t pid, uid_t *uid);
/* Whether /proc/pid/ns/<ns> differs from clrtap's own. */
int proc_ns_differs(pid_t pid, const char *ns, bool *differs);

/*
 * Finds processes whose command name (comm) or entry assembly basename in the
 * command line equals name. Fills up to max pids; *n gets how many matched.
 */
int proc_find_by_name(const char *name, pid_t *pids, size_t max, size_t *n);

/*
 * Turns a path as the target sees it into one clrtap can open:
 * "<t->root><path>" when the target is in another mount namespace, else path.
 */
int proc_host_path(const struct proc_target *t, const char *path, char *out, size_t outlen);

/*
 * Container identity from a process's cgroup membership, as container
 * runtimes name their cgroups: a 64-hex-digit container id in a path
 * component ("docker-<id>.scope", "cri-containerd-<id>.scope",
 * "crio-<id>.scope", "libpod-<id>.scope", ".../docker/<id>", ".../<id>"), and
 * a Kubernetes pod uid ("pod<uid>" or "kubepods-...-pod<uid_with_underscores>.slice").
 * The deepest match wins; the unified (v2) line is preferred. Empty strings
 * when there is none.
 */
struct proc_container {
	char id[65];  /* 64 lowercase hex digits, or "" */
	char pod[37]; /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", or "" */
};
/* Parses /proc/PID/cgroup text (len bytes, need not be NUL-terminated). */
void proc_parse_cgroup(const char *text, size_t len, struct proc_container *c);
/* Reads and parses /proc/PID/cgroup. */
int proc_container(pid_t pid, struct proc_container *c);

/*
 * Looks for diagnostics sockets in dir (as clrtap sees it) whose pid has no
 * live process; calls fn with the socket's file name and pid for each.
 */
typedef void (*proc_stale_fn)(const char *path, pid_t pid, void *ctx);
int proc_scan_stale_sockets(const char *dir, proc_stale_fn fn, void *ctx);

/*
 * The runtime's perf map files for a target: where they are (as the target
 * sees them and as clrtap can open them) and whether the target holds them
 * open now, which is how an enabled perf map looks from outside. Whether the
 * files exist is looked up inside the target's root (never following a link).
 * Directory: $DOTNET_PerfMapJitDumpPath (or COMPlus_), else /tmp.
 */
struct proc_perfmap {
	char dir[PROC_PATH_MAX];          /* as the target sees it */
	char map_path[PROC_PATH_MAX];     /* perf-<nspid>.map, host view: for messages only */
	char jitdump_path[PROC_PATH_MAX]; /* jit-<nspid>.dump, host view: for messages only */
	char map_tpath[PROC_PATH_MAX];    /* perf-<nspid>.map as the target sees it: open it
					   * with proc_tfile_open and friends */
	char jitdump_tpath[PROC_PATH_MAX];
	bool map_exists, jitdump_exists;
	bool map_open, jitdump_open;      /* held open by the target */
	bool on;                          /* either is held open: the perf map is on */
	char env_setting[32];             /* DOTNET_PerfMapEnabled at start, or "" */
};
int proc_perfmap_state(const struct proc_target *t, struct proc_perfmap *pm);

/*
 * Files of a target. clrtap runs as root and the target (a container) owns
 * every directory and name on the way to its files: a planted symlink must not
 * lead clrtap to a host file, and a FIFO must not hang it. So every access to a
 * path that came from a target goes through these functions (never open() on
 * a "/proc/PID/root/..." string; scripts/lint.sh checks):
 *
 *  - paths are as the target sees them, resolved under rootfd (from
 *    proc_root_open): symlinks resolve as inside the container (an absolute
 *    one starts at the target's root), ".." stops at that root, magic links
 *    (/proc/self/fd/N and friends) are refused. openat2(RESOLVE_IN_ROOT |
 *    RESOLVE_NO_MAGICLINKS) does it; kernels without openat2 get the same from
 *    a walk, one O_PATH | O_NOFOLLOW component at a time;
 *  - the last component is never followed (a symlink there is -ELOOP),
 *    except where a directory is asked for (proc_tdir_open, O_DIRECTORY):
 *    then a link resolves like any other on the way, inside the root;
 *  - files are opened O_NONBLOCK and must be regular (-EINVAL otherwise,
 *    -EISDIR for a directory), of at most max_size bytes (-EFBIG; 0: no cap);
 *  - create is O_CREAT | O_EXCL, and create, unlink and rename work relative
 *    to a directory fd that was resolved the same way.
 *
 * Errors: -ESRCH/-EACCES (from proc_root_open), -ENOENT, -ELOOP, -EINVAL,
 * -EISDIR, -EFBIG, -ESTALE (unlink/rename: the name is no longer the file
 * given in expect), -ENOTDIR, -EEXIST, other errnos from the kernel.
 */
/* O_PATH descriptor of /proc/pid/root: the target's root directory. */
int proc_root_open(pid_t pid, int *rootfd);
/* A regular file, read-only. st (may be NULL) gets its fstat. */
int proc_tfile_open(int rootfd, const char *path, uint64_t max_size, int *fd, struct stat *st);
/* A new file (O_RDWR | O_CREAT | O_EXCL, mode). */
int proc_tfile_create(int rootfd, const char *path, mode_t mode, int *fd);
/* Removes a regular file; with expect, only if it is still that inode. */
int proc_tfile_unlink(int rootfd, const char *path, const struct stat *expect);
/*
 * Renames a regular file (with expect: only that inode) to to, which must be
 * absent or a regular file (then it is replaced).
 */
int proc_tfile_rename(int rootfd, const char *from, const char *to, const struct stat *expect);
/*
 * An O_PATH descriptor of whatever path names (not followed), e.g. a socket to
 * connect through /proc/self/fd/N. flags may hold O_DIRECTORY.
 */
int proc_tpath_open(int rootfd, const char *path, int flags, int *fd);
/* A directory, opened for reading (fdopendir). */
int proc_tdir_open(int rootfd, const char *path, int *fd);
/* proc_root_open + proc_tfile_open in one call. */
int proc_target_file_open(pid_t pid, const char *path, uint64_t max_size, int *fd,
			  struct stat *st);
/* proc_root_open + proc_tfile_unlink in one call. */
int proc_target_file_unlink(pid_t pid, const char *path, const struct stat *expect);
/*
 * A mapped file of a target by its mapping: "/proc/PID/map_files/START-END"
 * names the very inode the target mapped, whatever the container did to its
 * names since, and can be opened like a plain path. 0 when clrtap may open
 * it (root: CAP_SYS_ADMIN), -EACCES when not (then open the target's path
 * with proc_tfile_open; without root clrtap has no more rights than the
 * target's user anyway).
 */
int proc_map_file_path(pid_t pid, uint64_t start, uint64_t end, char *out, size_t outlen);
/* Words for the errors above ("is a symbolic link", ...), else strerror. */
const char *proc_tfile_strerror(int err);
/*
 * Tests only: use the component walk even where openat2 exists (also with
 * CLRTAP_NO_OPENAT2=1 in clrtap's environment).
 */
void proc_tfile_walk_only(bool on);

#endif
