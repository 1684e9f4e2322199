/* SPDX-License-Identifier: MIT */
/*
 * clrtap dump - a core dump through the runtime's own dump writer
 * (createdump), also for a target in another mount namespace: the runtime
 * writes inside its own filesystem view, clrtap copies the file out through
 * /proc/PID/root.
 */
#include "common/compat.h"

#include <fcntl.h>
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

/* Copies src to dst (created 0600, replaced if present). */
static int copy_file(const char *src, const char *dst)
{
	int in, out, err = 0;
	struct stat st;
	off_t off = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	if (fstat(in, &st)) {
		err = -errno;
		goto out;
	}
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
	}
out:
	if (close(out) && !err)
		err = -errno;
	close(in);
	return err;
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
		CLI_TARGET_OPTIONS(&to),
		{ 't', "type", CLI_OPT_STRING, &type_s, "TYPE", "mini, heap, triage or full (default)" },
		{ 'o', "output", CLI_OPT_STRING, &out, "PATH",
		  "where to write the dump, as seen from here (default core_<pid>_<time>)" },
		{ 0, "crash-report", CLI_OPT_BOOL, &crash_report, NULL,
		  "also ask for createdump's JSON crash report" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the result as JSON" },
		{ 0 },
	};
	char host_path[PROC_PATH_MAX], target_path[PROC_PATH_MAX + 64], via[PROC_PATH_MAX + 128];
	enum ipc_dump_type type;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	struct stat st;
	int first, code, err;
	bool copied = false;

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
	{
		char dir[PROC_PATH_MAX];
		char *slash;

		ct_strlcpy(dir, host_path, sizeof(dir));
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (access(dir, W_OK))
			return cli_error(errno == EACCES ? EXIT_PERMISSION : EXIT_ERROR,
					 "cannot write the dump to %s: %s", dir, strerror(errno));
	}
	if (t.other_mntns) {
		/* Write inside the target's own temp dir, then copy out. */
		snprintf(target_path, sizeof(target_path), "%s/clrtap-dump-%d-%ld.core", t.tmpdir,
			 (int)t.nspid, (long)time(NULL));
		if (proc_host_path(&t, target_path, via, sizeof(via)))
			return cli_error(EXIT_USAGE, "dump path too long");
	} else {
		ct_strlcpy(target_path, host_path, sizeof(target_path));
		ct_strlcpy(via, host_path, sizeof(via));
	}

	if (!json)
		cli_info("writing a %s dump of pid %d ...", type_s, (int)t.pid);
	err = ipc_dump(&ep, target_path, type, crash_report ? IPC_DUMP_CRASHREPORT : 0, &rerr);
	if (err)
		return cli_ipc_error("the runtime could not write the dump", err, &rerr);
	if (t.other_mntns) {
		err = copy_file(via, host_path);
		if (err)
			return cli_error(cli_exit_for(err),
					 "the dump is in the target at %s (%s from here) but could "
					 "not be copied to %s: %s",
					 target_path, via, host_path, strerror(-err));
		unlink(via);
		copied = true;
	}
	if (stat(host_path, &st))
		return cli_error(EXIT_ERROR, "the runtime said the dump was written, but %s is "
					     "missing: %s",
				 host_path, strerror(errno));
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;
		int rc;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t.pid);
		ct_json_kv_str(&j, "type", type_s);
		ct_json_kv_str(&j, "path", host_path);
		ct_json_kv_u64(&j, "bytes", (uint64_t)st.st_size);
		ct_json_kv_str(&j, "written_in_target_as", target_path);
		ct_json_kv_bool(&j, "copied_out_of_namespace", copied);
		ct_json_obj_end(&j);
		rc = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		return rc;
	}
	if (copied)
		printf("the target wrote %s inside its mount namespace; copied out through %s\n",
		       cli_safe(target_path), cli_safe(t.root));
	printf("dump written: %s (%lld bytes)\n", cli_safe(host_path), (long long)st.st_size);
	return EXIT_OK;
}
