/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "common/strparse.h"
#include "proc/proc.h"

#define SOCK_PREFIX "dotnet-diagnostic-"
#define SOCK_SUFFIX "-socket"

/* /proc files we read are small; these caps bound a hostile or odd process. */
#define STATUS_MAX (64 * 1024)
#define ENVIRON_MAX (1024 * 1024)

static int map_open_errno(int e)
{
	switch (e) {
	case ENOENT:
	case ESRCH:
		return -ESRCH;
	case EACCES:
	case EPERM:
		return -EACCES;
	default:
		return -e;
	}
}

int proc_read(pid_t pid, const char *name, struct strbuf *sb)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	err = strbuf_read_file(sb, path);
	if (err == -ENOENT || err == -EACCES || err == -EPERM)
		return map_open_errno(-err);
	/* A process that exits while we read gives ESRCH or an empty read. */
	return err;
}

static int proc_exists(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0;
}

int proc_cmdline(pid_t pid, struct strbuf *out, size_t max)
{
	struct strbuf sb = STRBUF_INIT_MAX(max);
	size_t i;
	int err;

	err = proc_read(pid, "cmdline", &sb);
	if (err == -EFBIG)
		err = 0; /* keep the first max bytes; read_file stopped there */
	if (err)
		goto out;
	while (sb.len && sb.buf[sb.len - 1] == '\0')
		sb.len--;
	for (i = 0; i < sb.len; i++)
		if (sb.buf[i] == '\0')
			sb.buf[i] = ' ';
	err = strbuf_add(out, sb.buf, sb.len);
out:
	strbuf_release(&sb);
	return err;
}

int proc_comm(pid_t pid, char *name, size_t len)
{
	struct strbuf sb = STRBUF_INIT_MAX(256);
	int err;

	if (!len)
		return -EINVAL;
	name[0] = '\0';
	err = proc_read(pid, "comm", &sb);
	if (!err && sb.len && sb.buf[sb.len - 1] == '\n')
		sb.len--;
	if (!err)
		ct_strlcpy(name, sb.len ? sb.buf : "", CT_MIN(len, sb.len + 1));
	strbuf_release(&sb);
	return err;
}

int proc_environ_get(pid_t pid, const char *name, struct strbuf *out)
{
	struct strbuf sb = STRBUF_INIT_MAX(ENVIRON_MAX);
	size_t nlen = strlen(name), off = 0;
	int err;

	err = proc_read(pid, "environ", &sb);
	if (err)
		goto out;
	err = -ENOENT;
	while (off < sb.len) {
		const char *e = sb.buf + off;
		size_t elen = strnlen(e, sb.len - off);

		if (elen > nlen && !memcmp(e, name, nlen) && e[nlen] == '=') {
			err = strbuf_add(out, e + nlen + 1, elen - nlen - 1);
			break;
		}
		off += elen + 1;
	}
out:
	strbuf_release(&sb);
	return err;
}

/* Finds "key:\t..." in /proc/pid/status and returns a pointer to the value. */
static const char *status_field(const struct strbuf *sb, const char *key)
{
	size_t klen = strlen(key);
	const char *p = sb->buf;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return p + klen + 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/*
 * Copies the first (or last) blank-separated word of status field key into
 * buf. Returns 0, -ENOENT (no such field) or -EBADMSG.
 */
static int status_word(const struct strbuf *sb, const char *key, bool last, char *buf,
		       size_t size)
{
	const char *v = status_field(sb, key), *w = NULL;
	size_t n;

	if (!v)
		return -ENOENT;
	while (*v && *v != '\n') {
		v += strspn(v, " \t");
		if (*v && *v != '\n') {
			w = v;
			if (!last)
				break;
		}
		v += strcspn(v, " \t\n");
	}
	if (!w)
		return -EBADMSG;
	n = strcspn(w, " \t\n");
	if (n == 0 || n >= size)
		return -EBADMSG;
	memcpy(buf, w, n);
	buf[n] = '\0';
	return 0;
}

/* The pid in the innermost namespace (last NSpid word) and the real uid. */
static int parse_status(const struct strbuf *sb, pid_t pid, pid_t *nspid, uid_t *uid)
{
	char num[16];
	uint32_t u;
	int err;

	err = status_word(sb, "NSpid", true, num, sizeof(num));
	if (err == -ENOENT) {
		/* Kernels before 4.1 have no NSpid: the pid is the only one. */
		*nspid = pid;
	} else if (err || ct_parse_pid(num, nspid)) {
		return -EBADMSG;
	}
	if (status_word(sb, "Uid", false, num, sizeof(num)) || ct_parse_u32(num, 10, &u))
		return -EBADMSG;
	*uid = (uid_t)u;
	return 0;
}

static int read_status(pid_t pid, pid_t *nspid, uid_t *uid)
{
	struct strbuf sb = STRBUF_INIT_MAX(STATUS_MAX);
	int err = proc_read(pid, "status", &sb);

	if (!err)
		err = parse_status(&sb, pid, nspid, uid);
	strbuf_release(&sb);
	return err;
}

int proc_nspid(pid_t pid, pid_t *nspid)
{
	uid_t uid;

	return read_status(pid, nspid, &uid);
}

int proc_uid(pid_t pid, uid_t *uid)
{
	pid_t nspid;

	return read_status(pid, &nspid, uid);
}

int proc_stat_field(const char *s, size_t len, int want, uint64_t *v)
{
	const char *p = NULL, *end = s + len;
	size_t i;
	int field;

	for (i = 0; i < len; i++)
		if (s[i] == ')')
			p = s + i; /* comm may hold ')': the last one ends it */
	if (!p)
		return -EBADMSG;
	p++;
	for (field = 3; field <= want; field++) {
		char num[32];
		size_t k = 0;

		while (p < end && *p == ' ')
			p++;
		while (p < end && *p != ' ' && *p != '\n' && k + 1 < sizeof(num))
			num[k++] = *p++;
		num[k] = '\0';
		if (!k)
			return -EBADMSG;
		if (field == want)
			return ct_parse_u64(num, 10, v) ? -EBADMSG : 0;
	}
	return -EBADMSG;
}

/* Reads /proc/pid/stat and gives field want. */
static int stat_read_field(pid_t pid, int want, uint64_t *v)
{
	struct strbuf sb = STRBUF_INIT_MAX(STATUS_MAX);
	int err = proc_read(pid, "stat", &sb);

	if (!err)
		err = proc_stat_field(sb.buf, sb.len, want, v);
	strbuf_release(&sb);
	return err;
}

int proc_starttime(pid_t pid, uint64_t *starttime)
{
	return stat_read_field(pid, 22, starttime);
}

int proc_cpu_ticks(pid_t pid, uint64_t *ticks)
{
	struct strbuf sb = STRBUF_INIT_MAX(STATUS_MAX);
	uint64_t ut, st;
	int err = proc_read(pid, "stat", &sb);

	if (!err && !(err = proc_stat_field(sb.buf, sb.len, 14, &ut)) &&
	    !(err = proc_stat_field(sb.buf, sb.len, 15, &st)))
		*ticks = ut + st;
	strbuf_release(&sb);
	return err;
}

int proc_rss_bytes(pid_t pid, uint64_t *bytes)
{
	struct strbuf sb = STRBUF_INIT_MAX(256);
	const char *p;
	uint64_t pages;
	int err = proc_read(pid, "statm", &sb);
	long page = sysconf(_SC_PAGESIZE);

	if (!err) {
		/* "size resident shared ...", in pages */
		char num[32];
		size_t n;

		p = memchr(sb.buf, ' ', sb.len);
		err = -EBADMSG;
		n = p ? strcspn(p + 1, " \n") : 0;
		if (n && n < sizeof(num) && page > 0) {
			memcpy(num, p + 1, n);
			num[n] = '\0';
			if (!ct_parse_u64(num, 10, &pages)) {
				*bytes = pages * (uint64_t)page;
				err = 0;
			}
		}
	}
	strbuf_release(&sb);
	return err;
}

int proc_ns_differs(pid_t pid, const char *ns, bool *differs)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	if (stat(path, &a))
		return map_open_errno(errno);
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &b))
		return -errno;
	*differs = a.st_ino != b.st_ino || a.st_dev != b.st_dev;
	return 0;
}

int proc_host_path(const struct proc_target *t, const char *path, char *out, size_t outlen)
{
	int n;

	if (t->other_mntns)
		n = snprintf(out, outlen, "%s%s%s", t->root, path[0] == '/' ? "" : "/", path);
	else
		n = snprintf(out, outlen, "%s", path);
	return (n < 0 || (size_t)n >= outlen) ? -ENAMETOOLONG : 0;
}

/*
 * Parses "dotnet-diagnostic-<pid>-<key>-socket". Returns 0 and fills pid/key
 * when name has that shape.
 */
static int parse_socket_name(const char *name, pid_t *pid, uint64_t *key)
{
	const char *p = name + strlen(SOCK_PREFIX), *dash;
	size_t len = strlen(name);
	char num[32];
	size_t n;

	if (strncmp(name, SOCK_PREFIX, strlen(SOCK_PREFIX)) ||
	    len <= strlen(SOCK_PREFIX) + strlen(SOCK_SUFFIX) ||
	    strcmp(name + len - strlen(SOCK_SUFFIX), SOCK_SUFFIX))
		return -EINVAL;
	dash = strchr(p, '-');
	if (!dash)
		return -EINVAL;
	n = (size_t)(dash - p);
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, p, n);
	num[n] = '\0';
	if (ct_parse_pid(num, pid))
		return -EINVAL;
	p = dash + 1;
	n = (size_t)(name + len - strlen(SOCK_SUFFIX) - p);
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, p, n);
	num[n] = '\0';
	if (ct_parse_u64(num, 10, key))
		return -EINVAL;
	return 0;
}

/*
 * Finds the socket for nspid in the target's temp dir (as the target sees
 * it, resolved under its root: a TMPDIR that is a link stays inside the
 * container); prefers the key that matches. Only sockets count: a link with
 * a socket's name is not followed.
 */
static int find_socket(pid_t pid, const char *dir, pid_t nspid, uint64_t starttime, char *out,
		       size_t outlen, bool *key_match)
{
	DIR *d;
	struct dirent *de;
	char best[256] = "";
	struct timespec best_mtime = { 0, 0 };
	char odd[256] = "";
	bool matched = false, odd_link = false;
	int err, rootfd, dfd;

	err = proc_root_open(pid, &rootfd);
	if (err)
		return err;
	err = proc_tdir_open(rootfd, dir, &dfd);
	close(rootfd);
	if (err)
		return err == -EACCES || err == -EPERM ? -EACCES : -ENOENT;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	err = -ENOENT;
	while ((de = readdir(d))) {
		struct stat st;
		pid_t p;
		uint64_t key;

		if (parse_socket_name(de->d_name, &p, &key) || p != nspid)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (!S_ISSOCK(st.st_mode)) {
			/* A link or other file under the socket's name: remember, never follow. */
			ct_strlcpy(odd, de->d_name, sizeof(odd));
			odd_link = S_ISLNK(st.st_mode);
			continue;
		}
		if (key == starttime) {
			ct_strlcpy(best, de->d_name, sizeof(best));
			matched = true;
			break;
		}
		if (!best[0] || st.st_mtim.tv_sec > best_mtime.tv_sec ||
		    (st.st_mtim.tv_sec == best_mtime.tv_sec &&
		     st.st_mtim.tv_nsec > best_mtime.tv_nsec)) {
			ct_strlcpy(best, de->d_name, sizeof(best));
			best_mtime = st.st_mtim;
		}
	}
	closedir(d);
	if (best[0]) {
		int n = snprintf(out, outlen, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", best);

		err = (n < 0 || (size_t)n >= outlen) ? -ENAMETOOLONG : 0;
		*key_match = matched;
	} else if (odd[0]) {
		int n = snprintf(out, outlen, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", odd);

		err = (n < 0 || (size_t)n >= outlen) ? -ENAMETOOLONG : odd_link ? -ELOOP : -ENOTSOCK;
	}
	return err;
}

int proc_target_find(pid_t pid, struct proc_target *t)
{
	struct strbuf tmp = STRBUF_INIT_MAX(PROC_PATH_MAX - 1);
	size_t tl;
	int err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->nspid = pid;
	snprintf(t->root, sizeof(t->root), "/proc/%d/root", (int)pid);

	err = read_status(pid, &t->nspid, &t->uid);
	if (err)
		goto out;
	err = proc_starttime(pid, &t->starttime);
	if (err)
		goto out;
	err = proc_ns_differs(pid, "pid", &t->other_pidns);
	if (err)
		goto out;
	err = proc_ns_differs(pid, "mnt", &t->other_mntns);
	if (err)
		goto out;

	/* The runtime uses $TMPDIR (a trailing '/' is added) or /tmp. */
	err = proc_environ_get(pid, "TMPDIR", &tmp);
	if (err == -ENOENT || (!err && tmp.len == 0)) {
		strbuf_reset(&tmp);
		err = strbuf_addstr(&tmp, "/tmp");
	}
	if (err == -EMSGSIZE)
		err = -ENAMETOOLONG;
	if (err)
		goto out;
	tl = tmp.len;
	while (tl > 1 && tmp.buf[tl - 1] == '/')
		tl--;
	strbuf_setlen(&tmp, tl);
	ct_strlcpy(t->tmpdir, tmp.buf, sizeof(t->tmpdir));

	err = find_socket(pid, t->tmpdir, t->nspid, t->starttime, t->sock_tpath,
			  sizeof(t->sock_tpath), &t->key_match);
	if (!err || err == -ELOOP || err == -ENOTSOCK) {
		int e2 = proc_host_path(t, t->sock_tpath, t->socket, sizeof(t->socket));

		err = err ? err : e2;
	}
	if (err == -ENOENT && !proc_exists(pid))
		err = -ESRCH;
out:
	strbuf_release(&tmp);
	return err;
}

int proc_scan(proc_scan_fn fn, void *ctx)
{
	struct dirent **list = NULL;
	int n, i, ret = 0;

	n = scandir("/proc", &list, NULL, NULL);
	if (n < 0)
		return -errno;
	/* scandir has no numeric sort: collect pids and sort them. */
	{
		pid_t *pids = calloc((size_t)n, sizeof(*pids));
		int np = 0;

		if (!pids) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < n; i++) {
			pid_t p;

			if (!ct_parse_pid(list[i]->d_name, &p))
				pids[np++] = p;
		}
		for (i = 1; i < np; i++) {
			pid_t v = pids[i];
			int j = i - 1;

			while (j >= 0 && pids[j] > v) {
				pids[j + 1] = pids[j];
				j--;
			}
			pids[j + 1] = v;
		}
		for (i = 0; i < np && !ret; i++)
			ret = fn(pids[i], ctx);
		free(pids);
	}
out:
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return ret;
}

struct by_name {
	const char *name;
	pid_t *pids;
	size_t max, n;
};

/* Basename of the entry assembly: argv[1] of "dotnet x.dll", without ".dll". */
static bool cmdline_matches(pid_t pid, const char *name)
{
	struct strbuf sb = STRBUF_INIT_MAX(64 * 1024);
	const char *a0, *a1 = NULL, *base;
	size_t len, nlen = strlen(name);
	bool match = false;

	if (proc_read(pid, "cmdline", &sb) && sb.len == 0)
		goto out;
	a0 = sb.buf;
	len = strnlen(a0, sb.len);
	if (len + 1 < sb.len)
		a1 = a0 + len + 1;
	base = strrchr(a0, '/');
	base = base ? base + 1 : a0;
	if (!strcmp(base, name)) {
		match = true;
		goto out;
	}
	if (a1 && !strcmp(base, "dotnet")) {
		base = strrchr(a1, '/');
		base = base ? base + 1 : a1;
		len = strlen(base);
		if (len == nlen + 4 && !strncmp(base, name, nlen) && !strcmp(base + nlen, ".dll"))
			match = true;
		if (!strcmp(base, name))
			match = true;
	}
out:
	strbuf_release(&sb);
	return match;
}

static int by_name_cb(pid_t pid, void *ctx)
{
	struct by_name *b = ctx;
	char comm[64];
	bool match = false;

	if (pid == getpid())
		return 0;
	if (!proc_comm(pid, comm, sizeof(comm)))
		match = !strcmp(comm, b->name);
	if (!match)
		match = cmdline_matches(pid, b->name);
	if (match) {
		if (b->n < b->max)
			b->pids[b->n] = pid;
		b->n++;
	}
	return 0;
}

int proc_find_by_name(const char *name, pid_t *pids, size_t max, size_t *n)
{
	struct by_name b = { name, pids, max, 0 };
	int err = proc_scan(by_name_cb, &b);

	*n = b.n;
	return err;
}

static bool socket_alive(const char *path)
{
	struct sockaddr_un sa;
	int fd, ok;

	if (strlen(path) >= sizeof(sa.sun_path))
		return true; /* cannot tell: do not call it stale */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return true;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	ct_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN ||
	     errno == EINPROGRESS;
	close(fd);
	return ok;
}

int proc_scan_stale_sockets(const char *dir, proc_stale_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[PROC_PATH_MAX + 256];
		pid_t pid;
		uint64_t key, st;

		if (parse_socket_name(de->d_name, &pid, &key))
			continue;
		if (proc_exists(pid) && !proc_starttime(pid, &st) && st == key)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (socket_alive(path))
			continue;
		fn(path, pid, ctx);
	}
	closedir(d);
	return 0;
}

void proc_target_strerror(pid_t pid, int err, const struct proc_target *t, char *buf, size_t len)
{
	switch (err) {
	case -ESRCH:
		snprintf(buf, len, "no process with pid %d", (int)pid);
		break;
	case -EACCES: {
		char why[400];

		if (proc_access_explain(t->uid, why, sizeof(why)))
			snprintf(why, sizeof(why), "run as its user, or as root with "
				 "CAP_SYS_PTRACE and CAP_DAC_OVERRIDE");
		snprintf(buf, len, "not allowed to inspect pid %d (owned by uid %u): %s", (int)pid,
			 (unsigned)t->uid, why);
		break;
	}
	case -ENOENT:
		snprintf(buf, len, "pid %d is not a .NET process (no diagnostics socket in %s%s%s)",
			 (int)pid, t->other_mntns ? t->root : "", t->tmpdir,
			 t->other_mntns ? ", its /tmp" : "");
		break;
	case -ELOOP:
	case -ENOTSOCK:
		snprintf(buf, len,
			 "pid %d's diagnostics socket %s is %s inside the target: it is not "
			 "the target's socket, and clrtap does not follow it",
			 (int)pid, t->sock_tpath, err == -ELOOP ? "a symbolic link" : "not a socket");
		break;
	default:
		snprintf(buf, len, "cannot inspect pid %d: %s", (int)pid, strerror(-err));
		break;
	}
}

int proc_access_explain(uid_t uid, char *buf, size_t len)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	bool ptrace, dac;

	if (!buf || !len)
		return -EINVAL;
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	ptrace = data[CAP_SYS_PTRACE / 32].effective & (1u << (CAP_SYS_PTRACE % 32));
	dac = data[CAP_DAC_OVERRIDE / 32].effective & (1u << (CAP_DAC_OVERRIDE % 32));
	if (geteuid() == uid && !ptrace)
		snprintf(buf, len, "clrtap runs as the target's uid %u, yet was refused: the "
			 "target is not dumpable (its /proc files belong to root; CAP_SYS_PTRACE "
			 "needed), or a security module refuses", (unsigned)uid);
	else if (!ptrace && !dac)
		snprintf(buf, len, "clrtap lacks CAP_SYS_PTRACE and CAP_DAC_OVERRIDE: run it as "
			 "uid %u, or as root with both", (unsigned)uid);
	else if (!ptrace)
		snprintf(buf, len, "clrtap lacks CAP_SYS_PTRACE (it has CAP_DAC_OVERRIDE): run it "
			 "as uid %u, or add CAP_SYS_PTRACE", (unsigned)uid);
	else if (!dac && geteuid() != uid)
		snprintf(buf, len, "clrtap lacks CAP_DAC_OVERRIDE (it has CAP_SYS_PTRACE): the "
			 "target's environ and diagnostics socket belong to uid %u; run it as that "
			 "uid, or add CAP_DAC_OVERRIDE", (unsigned)uid);
	else
		snprintf(buf, len, "clrtap has CAP_SYS_PTRACE and CAP_DAC_OVERRIDE, so something "
			 "else refuses: a security module (AppArmor, SELinux) or a user namespace "
			 "that clrtap's capabilities do not cover");
	return 0;
}
