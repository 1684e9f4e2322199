/* SPDX-License-Identifier: MIT */
/*
 * clrtap dump - a core dump through the runtime's own dump writer
 * (createdump), also for a target in another mount namespace. Parsing,
 * the Ctrl-C rule and text only: the workflow is lib/dump (dump_run).
 */
#include "common/compat.h"

#include <signal.h>
#include <time.h>

#include "cli.h"
#include "dump/dump.h"

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

/* dump_run's files are known: a second signal removes them; the wait is shown. */
static void arm_cleanup(void *ctx, int host_dirfd, const char *host_tmp, int target_dirfd, const char *target_name)
{
	struct sigaction sa;

	(void)ctx;
	cleanup.host_dirfd = host_dirfd;
	ct_strlcpy(cleanup.host_name, host_tmp, sizeof(cleanup.host_name));
	cleanup.target_dirfd = target_dirfd;
	ct_strlcpy(cleanup.target_name, target_name, sizeof(cleanup.target_name));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cleanup.armed = 1;
	cli_countdown_start("the runtime writes the dump", 0);
}

static void disarm_cleanup(void)
{
	cleanup.armed = 0;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	cleanup.target_dirfd = cleanup.host_dirfd = -1; /* dump_run closes them */
}

static void default_name(char *buf, size_t len, pid_t pid)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	snprintf(buf, len, "core_%d_%04d%02d%02d_%02d%02d%02d", (int)pid, tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* The runtime resolves the path in its own cwd: always pass it absolute. */
static int absolute_path(const char *out, pid_t pid, char *host_path, size_t len)
{
	char cwd[PROC_PATH_MAX / 2], name[96];

	if (out && out[0] == '/') {
		ct_strlcpy(host_path, out, len);
		return EXIT_OK;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return cli_error(EXIT_ERROR, "cannot get the current directory: %s", strerror(errno));
	if (!out) {
		default_name(name, sizeof(name), pid);
		out = name;
	}
	if ((size_t)snprintf(host_path, len, "%s/%s", cwd, out) >= len)
		return cli_error(EXIT_USAGE, "output path too long");
	return EXIT_OK;
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
	char host_path[PROC_PATH_MAX];
	struct dump_opts o = { .type_name = type_s, .host_path = host_path, .stop = &cleanup.stop,
			       .armed = arm_cleanup };
	struct dump_result r;
	struct ipc_endpoint ep;
	struct proc_target t;
	int first, code, err;

	if (argc > 1 && !strcmp(argv[1], "analyze"))
		return cmd_dump_analyze(argc - 1, argv + 1);
	if (cli_parse(argc, argv, "clrtap dump (-p PID | -n NAME) [--type mini|heap|triage|full] [-o PATH]", opts,
		      &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (dump_type_parse(type_s, &o.type))
		return cli_error(EXIT_USAGE, "unknown dump type '%s' (mini, heap, triage, full)", type_s);
	if ((code = cli_resolve_target(&to, &t, &ep)) || (code = absolute_path(out, t.pid, host_path, sizeof(host_path))))
		return code;
	o.t = &t;
	o.ep = &ep;
	o.type_name = type_s;
	o.crash_report = crash_report;
	if (!json)
		cli_info("writing a %s dump of pid %d ...", type_s, (int)t.pid);
	err = dump_run(&o, &r);
	cli_countdown_stop();
	disarm_cleanup();
	if (err)
		return cli_error(r.exit_code, "%s", r.message);
	if (json) {
		struct strbuf sb = STRBUF_INIT;

		err = dump_result_json(&o, &r, &sb);
		if (!err && !(err = strbuf_addch(&sb, '\n')))
			err = strbuf_fwrite(&sb, stdout);
		strbuf_release(&sb);
		return err ? cli_error(EXIT_ERROR, "cannot write the JSON output: %s", strerror(-err)) : EXIT_OK;
	}
	if (r.copied)
		printf("the target wrote %s inside its mount namespace; copied out through %s\n",
		       cli_safe(r.target_path), cli_safe(t.root));
	printf("dump written: %s (%" PRIu64 " bytes)\n", cli_safe(host_path), r.bytes);
	return EXIT_OK;
}
