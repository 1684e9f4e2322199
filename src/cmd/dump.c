/* SPDX-License-Identifier: MIT */
/*
 * clrtap dump - a core dump through the runtime's own dump writer
 * (createdump), also for a target in another mount namespace: the runtime
 * writes inside its own filesystem view, clrtap copies the file out through
 * /proc/PID/root.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

static int parse_type(const char *s, enum ipc_dump_type *t)
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
		cli_warn("cannot hand the dump file to uid %u: %s", (unsigned)uid, strerror(errno));
}

#define CRASH_REPORT_MAX ((uint64_t)64 << 20)

/*
 * createdump's crash report is "<dump path>.crashreport.json": give it the
 * name that goes with PATH (same directory), or copy it out of the target.
 */
static void keep_crash_report(int rootfd, int dirfd, const char *tmpname, const char *target_path,
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
			return;
		if ((!fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode)) ||
		    renameat(dirfd, from, dirfd, base))
			cli_warn("the crash report stays at %s", from);
		return;
	}
	snprintf(from, sizeof(from), "%s.crashreport.json", target_path);
	err = proc_tfile_open(rootfd, from, CRASH_REPORT_MAX, &in, &st);
	if (err)
		return;
	err = out_open(&o, to);
	if (!err)
		err = copy_fd(in, o.fd, st.st_size);
	if (!err)
		err = out_commit(&o);
	if (err)
		cli_warn("cannot copy the crash report out to %s: %s", to, strerror(-err));
	out_close(&o);
	close(in);
	(void)proc_tfile_unlink(rootfd, from, &st);
}

/*
 * Ctrl-C (or SIGTERM) while the runtime writes: the runtime goes on writing
 * (and would make the file again if it were removed now), so the first one
 * only asks clrtap to wait for it, remove both files it made and exit 130. A
 * second one removes them by name at once (relative to directories opened
 * before; async-signal-safe calls only) and exits 130. SIGKILL leaves them: a
 * dot-file next to PATH and clrtap-dump-*.core in the target's temp dir.
 */
static struct {
	volatile sig_atomic_t armed, stop;
	int host_dirfd, target_dirfd;
	char host_name[300], target_name[256];
} cleanup = { .host_dirfd = -1, .target_dirfd = -1 };

static void on_stop(int sig)
{
	static const char msg[] = "clrtap: interrupted: waiting for the runtime to finish the "
				  "dump so that its files can be removed (again to leave them)\n";
	ssize_t n;

	(void)sig;
	if (cleanup.armed && !cleanup.stop) {
		cleanup.stop = 1;
		n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)n;
		return;
	}
	if (cleanup.armed) {
		if (cleanup.host_dirfd >= 0 && cleanup.host_name[0])
			(void)unlinkat(cleanup.host_dirfd, cleanup.host_name, 0);
		if (cleanup.target_dirfd >= 0 && cleanup.target_name[0])
			(void)unlinkat(cleanup.target_dirfd, cleanup.target_name, 0);
	}
	_exit(130);
}

static void arm_cleanup(const struct out_file *of, int rootfd, const char *tmpdir,
			const char *target_path)
{
	struct sigaction sa;
	const char *slash = strrchr(target_path, '/');

	cleanup.host_dirfd = of->dirfd;
	ct_strlcpy(cleanup.host_name, of->tmp, sizeof(cleanup.host_name));
	cleanup.target_dirfd = -1;
	if (rootfd >= 0 && slash && !proc_tpath_open(rootfd, tmpdir, O_DIRECTORY, &cleanup.target_dirfd))
		ct_strlcpy(cleanup.target_name, slash + 1, sizeof(cleanup.target_name));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cleanup.armed = 1;
}

static void disarm_cleanup(void)
{
	cleanup.armed = 0;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (cleanup.target_dirfd >= 0)
		close(cleanup.target_dirfd);
	cleanup.target_dirfd = -1;
}

static void default_name(char *buf, size_t len, pid_t pid)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	snprintf(buf, len, "core_%d_%04d%02d%02d_%02d%02d%02d", (int)pid, tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int cmd_dump(int argc, char **argv)
{
	struct cli_target_opts to = { .timeout_ms = 300000 };
	const char *type_s = "full", *out = NULL;
	bool json = false, crash_report = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS_T(&to, "how long to wait for the runtime to write the dump (default 300s)"),
		{ 't', "type", CLI_OPT_STRING, &type_s, "TYPE", "mini, heap, triage or full (default)" },
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "PATH",
		  "where to write the dump, as seen from here (default core_<pid>_<time>)" },
		{ 0, "crash-report", CLI_OPT_BOOL, &crash_report, NULL,
		  "also ask for createdump's JSON crash report" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the result as JSON" },
		{ 0 },
	};
	char host_path[PROC_PATH_MAX], target_path[PROC_PATH_MAX + 300], tmpname[300];
	enum ipc_dump_type type;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	struct stat st, tst;
	struct out_file of = { .dirfd = -1, .fd = -1 };
	int first, code, err, rootfd = -1, tfd = -1;
	bool copied = false;

	if (argc > 1 && !strcmp(argv[1], "analyze"))
		return cmd_dump_analyze(argc - 1, argv + 1);
	if (cli_parse(argc, argv,
		      "clrtap dump (-p PID | -n NAME) [--type mini|heap|triage|full] [-o PATH]", opts,
		      &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (parse_type(type_s, &type))
		return cli_error(EXIT_USAGE, "unknown dump type '%s' (mini, heap, triage, full)",
				 type_s);
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;

	/* The runtime resolves the path in its own cwd: always pass it absolute. */
	if (out && out[0] == '/') {
		ct_strlcpy(host_path, out, sizeof(host_path));
	} else {
		char cwd[PROC_PATH_MAX / 2], name[96];

		if (!getcwd(cwd, sizeof(cwd)))
			return cli_error(EXIT_ERROR, "cannot get the current directory: %s",
					 strerror(errno));
		if (!out) {
			default_name(name, sizeof(name), t.pid);
			out = name;
		}
		if ((size_t)snprintf(host_path, sizeof(host_path), "%s/%s", cwd, out) >=
		    sizeof(host_path))
			return cli_error(EXIT_USAGE, "output path too long");
	}
	err = out_open(&of, host_path);
	if (err == -EINVAL) {
		out_close(&of);
		return cli_error(EXIT_USAGE, "%s exists and is not a regular file: clrtap does not "
					     "replace it",
				 host_path);
	}
	if (err) {
		out_close(&of);
		return cli_error(err == -EACCES ? EXIT_PERMISSION : EXIT_ERROR,
				 "cannot write the dump to %s: %s", host_path, strerror(-err));
	}
	if (t.other_mntns) {
		/* A fresh file inside the target's own temp dir, made and read by clrtap. */
		unsigned r = 0;

		err = proc_root_open(t.pid, &rootfd);
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned)time(NULL);
		snprintf(target_path, sizeof(target_path), "%s%sclrtap-dump-%d-%ld-%08x.core",
			 t.tmpdir, strcmp(t.tmpdir, "/") ? "/" : "", (int)t.nspid, (long)time(NULL), r);
		if (!err)
			err = proc_tfile_create(rootfd, target_path, 0600, &tfd);
		if (!err && fstat(tfd, &tst))
			err = -errno;
		if (err) {
			code = cli_error(ct_exit_for(err),
					 "cannot make the dump file %s inside pid %d's root: %s",
					 target_path, (int)t.pid, proc_tfile_strerror(err));
			goto out;
		}
		give_to(tfd, t.uid);
	} else {
		ct_strlcpy(target_path, of.tmp_path, sizeof(target_path));
		give_to(of.fd, t.uid);
	}

	if (!json)
		cli_info("writing a %s dump of pid %d ...", type_s, (int)t.pid);
	arm_cleanup(&of, rootfd, t.tmpdir, target_path);
	cli_countdown_start("the runtime writes the dump", 0);
	err = ipc_dump(&ep, target_path, type, crash_report ? IPC_DUMP_CRASHREPORT : 0, &rerr);
	cli_countdown_stop();
	if (cleanup.stop) {
		code = cli_error(130, "interrupted: no dump written, %s left as it was", host_path);
		goto out;
	}
	if (err) {
		code = cli_ipc_error("the runtime could not write the dump", err, &rerr);
		goto out;
	}
	if (t.other_mntns) {
		/* Copy what the runtime wrote into the file clrtap made, as long as it was then. */
		if (fstat(tfd, &st))
			err = -errno;
		if (!err)
			err = copy_fd(tfd, of.fd, st.st_size);
		if (err) {
			code = cli_error(ct_exit_for(err),
					 "the target wrote its dump, but it could not be copied to %s "
					 "(%s): %s left as it was, the target's copy removed",
					 host_path, strerror(-err), host_path);
			goto out;
		}
		copied = true;
	}
	if (fstat(of.fd, &st) || st.st_size == 0) {
		code = cli_error(EXIT_RUNTIME, "the runtime said the dump was written, but it is "
					       "empty: %s left as it was",
				 host_path);
		goto out;
	}
	if (geteuid() == 0 && fchown(of.fd, geteuid(), getegid()))
		cli_warn("cannot take the dump file back from the target's user: %s",
			 strerror(errno));
	ct_strlcpy(tmpname, of.tmp, sizeof(tmpname));
	err = out_commit(&of);
	if (err) {
		code = cli_error(EXIT_ERROR, "cannot put the dump at %s: %s", host_path,
				 err == -EINVAL ? "it is no longer a regular file" : strerror(-err));
		goto out;
	}
	if (crash_report)
		keep_crash_report(rootfd, of.dirfd, tmpname, target_path, host_path);
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t.pid);
		ct_json_kv_str(&j, "type", type_s);
		ct_json_kv_str(&j, "path", host_path);
		ct_json_kv_u64(&j, "bytes", (uint64_t)st.st_size);
		ct_json_kv_str(&j, "written_in_target_as", target_path);
		ct_json_kv_bool(&j, "copied_out_of_namespace", copied);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		goto out;
	}
	if (copied)
		printf("the target wrote %s inside its mount namespace; copied out through %s\n",
		       cli_safe(target_path), cli_safe(t.root));
	printf("dump written: %s (%lld bytes)\n", cli_safe(host_path), (long long)st.st_size);
	code = EXIT_OK;
out:
	disarm_cleanup();
	if (tfd >= 0) {
		/* Only the file clrtap made, only inside the target's root. */
		(void)proc_tfile_unlink(rootfd, target_path, &tst);
		close(tfd);
	}
	if (rootfd >= 0)
		close(rootfd);
	out_close(&of);
	return code;
}
