/* SPDX-License-Identifier: MIT */
/*
 * main.c - the command table and what every command run goes through.
 */
#include "common/compat.h"

#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/clrname.h"
#include "common/io.h"
#include "common/log.h"
#include "serve/serve.h"
#include "task/task.h"

#ifndef CLRTAP_VERSION
#define CLRTAP_VERSION "unknown"
#endif
#ifndef CLRTAP_SEMVER
#define CLRTAP_SEMVER "0.0.0"
#endif
/* The .NET major versions clrtap is tested against (README, clrtap(1)). */
#define CLRTAP_RUNTIMES "8, 9, 10, 11"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	/*
	 * For man pages and completions (scripts/gen-docs.sh, through
	 * --help-table): subcommands with an option table of their own, and
	 * the words the command takes as its first argument.
	 */
	const char *subs;
	const char *words;
};

/* "__NAME": clrtap's own (not in --help, --list-cmds, --help-table or suggestions). */
#define CMD_HIDDEN(c) ((c)->name[0] == '_')

static int cmd_task_child(int argc, char **argv);

/* Sorted by name (scripts/lint.sh checks the visible ones; "__task" sorts first;
 * lookups are linear). */
static const struct cmd commands[] = {
	{ "__task", cmd_task_child, "run one task for task_spawn (lib/task/spawn.c)", NULL, NULL },
	{ "agent", cmd_agent, "attach clrtap's in-process profiler: stream its events, ReJIT probes, native allocations by stack; or show it", NULL, "run status probe native-memory" },
	{ "analyze", cmd_analyze, "one question, one report: exceptions, allocations, pauses, memory, ...", NULL, NULL },
	{ "counters", cmd_counters, "live runtime counters (System.Runtime, any EventSource or Meter)", "monitor collect", NULL },
	{ "doctor", cmd_doctor, "a short battery over one session: findings ranked, with the next command", NULL, NULL },
	{ "dump", cmd_dump, "write a core dump of a .NET process (mini, heap, triage, full); dump analyze FILE reads one", NULL, NULL },
	{ "fleet", cmd_fleet, "continuous CPU profiles of every .NET process, pushed to Pyroscope, OTLP or pprof files", NULL, NULL },
	{ "gcdump", cmd_gcdump, "heap snapshots: retained sizes, retention paths, duplicated strings, leaks", "collect report diff watch", NULL },
	{ "help", cmd_help, "show help for clrtap or a command", NULL, NULL },
	{ "info", cmd_info, "runtime version, command line, socket, environment of a process", NULL, NULL },
	{ "perfmap", cmd_perfmap, "turn the runtime's perf map / jitdump on or off, no restart", NULL, "on off status" },
	{ "probe", cmd_probe, "trace calls of a .NET method by name: args, return value, latency, stacks", NULL, NULL },
	{ "profile", cmd_profile, "CPU profile (perf_event) with JIT, R2R, native and kernel frames named", NULL, NULL },
	{ "ps", cmd_ps, "list .NET processes on this host, containers included", NULL, NULL },
	{ "serve", cmd_serve, "REST API, Prometheus /metrics, live views and web UI (root-equivalent)", NULL, NULL },
	{ "stacks", cmd_stacks, "the managed stack of every thread, merged", NULL, NULL },
	{ "symbols", cmd_symbols, "how the native libraries of a process are named; fetch their debug files from symbol servers ahead of time", NULL, NULL },
	{ "top", cmd_top, "live view of the hottest methods of a process", NULL, NULL },
	{ "trace", cmd_trace, "collect an EventPipe trace (.nettrace) over the diagnostics socket", "collect report convert", NULL },
	{ "version", cmd_version, "print clrtap's version", NULL, NULL },
	{ "watch", cmd_watch, "rules (cpu, rss, counters, exceptions, gc pauses, exit) that run profile, stacks, trace, dump... when they fire", NULL, NULL },
};

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static size_t levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[64];

	if (lb >= ARRAY_SIZE(row) || la >= 64)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t prev = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t sub = prev + (a[i - 1] != b[j - 1]);

			row[j] = CT_MIN(CT_MIN(row[j] + 1, row[j - 1] + 1), sub);
			prev = cur;
		}
	}
	return row[lb];
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: clrtap <command> [options]\n\n"
		   "clrtap attaches to a running .NET process (host or container) with no restart.\n\n"
		   "commands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!CMD_HIDDEN(&commands[i]))
			fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'clrtap <command> --help' shows a command's options; 'man clrtap' and\n"
		   "'man clrtap-<command>' the manual (exit codes: EXIT STATUS in clrtap(1)).\n"
		   "--raw-names (any command): managed frames as the runtime names them\n"
		   "(Type+<M>d__2::MoveNext), not as the source wrote them (Type::M [async]).\n");
}

int cmd_help(int argc, char **argv)
{
	const struct cli_option opts[] = { { 0 } };
	const struct cmd *c;
	int first, code;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argv[1][0] == '-' && cli_parse(argc, argv, "clrtap help [COMMAND]", opts, &first, &code))
		return code;
	c = find_cmd(argv[1]);
	if (!c)
		return cli_error(EXIT_USAGE, "no command '%s'", argv[1]);
	{
		char *hargv[] = { argv[1], (char *)"--help", NULL };

		return c->fn(2, hargv);
	}
}

int cmd_version(int argc, char **argv)
{
	bool json = false;
	const struct cli_option opts[] = {
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the version as JSON" },
		{ 0 },
	};
	int first, code;

	if (cli_parse(argc, argv, "clrtap version [--json]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (json) {
		printf("{\"version\":\"%s\",\"commit\":\"%s\",\"runtimes\":\"%s\"}\n",
		       CLRTAP_SEMVER, CLRTAP_VERSION, CLRTAP_RUNTIMES);
		return EXIT_OK;
	}
	printf("clrtap %s (commit %s)\n"
	       "supported runtimes: .NET %s (CoreCLR on Linux x64, glibc and musl)\n",
	       CLRTAP_SEMVER, CLRTAP_VERSION, CLRTAP_RUNTIMES);
	return EXIT_OK;
}

/* The command table for scripts/gen-docs.sh: "cmd\tNAME\tSUBS|-\tWORDS|-\tHELP". */
static void print_table(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!CMD_HIDDEN(&commands[i]))
			printf("cmd\t%s\t%s\t%s\t%s\n", commands[i].name,
		       commands[i].subs ? commands[i].subs : "-",
		       commands[i].words ? commands[i].words : "-", commands[i].help);
}

static void log_to_stderr(enum ct_log_level level, const char *msg)
{
	/* library messages quote what targets and files hold: escaped (cli_safe) */
	cli_print_line(stderr, level == CT_LOG_WARN ? "warning: " : "", msg);
}

/*
 * clrtap __task NAME: one task in a child of task_spawn (lib/task/spawn.c),
 * not for people: the request on fd 3 (read by serve's request reader), the
 * result frame on fd 4, the log on stderr; SIGTERM is the stop flag.
 */
static int cmd_task_child(int argc, char **argv)
{
	struct strbuf in = STRBUF_INIT_MAX(1 << 20);
	struct serve_session_req req;
	struct task_ctx ctx = { .stop = &cli_stop_requested, .outdir_fd = -1 };
	struct task_args a;
	struct task_result r;
	const struct task *t = argc == 2 ? task_find(argv[1]) : NULL;
	const char *bad = NULL;
	char why[256] = "", buf[65536];
	ssize_t n;
	size_t i;

	if (!t || fcntl(TASK_CHILD_IN_FD, F_GETFD) < 0 || fcntl(TASK_CHILD_OUT_FD, F_GETFD) < 0)
		return cli_error(EXIT_USAGE, "__task is run by clrtap itself (lib/task/spawn.c)");
	if (fcntl(TASK_CHILD_DIR_FD, F_GETFD) >= 0)
		ctx.outdir_fd = TASK_CHILD_DIR_FD;
	ct_log_set(log_to_stderr, getenv("CLRTAP_DEBUG") ? CT_LOG_DEBUG : CT_LOG_INFO);
	cli_catch_stop_signals();
	while ((n = ct_read_full(TASK_CHILD_IN_FD, buf, sizeof(buf))) > 0)
		if (strbuf_add(&in, buf, (size_t)n))
			break;
	task_result_init(&r);
	task_args_init(&a, t, 0);
	if (n < 0 || strbuf_error(&in) || serve_session_req_parse(in.buf, in.len, &req, &bad))
		snprintf(why, sizeof(why), "bad task request: %s", bad ? bad : "unreadable");
	else if (strcmp(req.kind, t->name))
		snprintf(why, sizeof(why), "a request for %s, not %s", req.kind, t->name);
	for (i = 0, a.pid = why[0] ? 0 : req.pid; !why[0] && i < req.nparams; i++)
		task_args_set(&a, req.params[i].key, req.params[i].value, why, sizeof(why));
	if (why[0]) {
		task_fail(&r, -EINVAL, "%s", why);
		r.exit_code = EXIT_USAGE;
		task_error_json(&r.json, r.exit_code, r.message);
	} else {
		task_run(t, &a, &ctx, &r);
	}
	(void)task_result_write(TASK_CHILD_OUT_FD, &r);
	n = r.exit_code;
	task_result_release(&r);
	task_args_release(&a);
	strbuf_release(&in);
	return (int)n;
}

/* A write error on stdout (disk full, closed pipe) must not look like success. */
static int check_stdout(int code)
{
	struct stat st;

	if (fstat(fileno(stdout), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return code;
	if (fflush(stdout) || ferror(stdout) || fclose(stdout)) {
		if (code == EXIT_OK)
			return cli_error(EXIT_ERROR, "write failure on standard output: %s",
					 strerror(errno));
	}
	return code;
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	ct_log_set(log_to_stderr, getenv("CLRTAP_DEBUG") ? CT_LOG_DEBUG : CT_LOG_WARN);
	/* --raw-names: one display choice for every frame the process prints */
	for (i = 1; i < (size_t)argc && strcmp(argv[i], "--"); i++) {
		if (strcmp(argv[i], "--raw-names"))
			continue;
		ct_clrname_set_raw(true);
		memmove(argv + i, argv + i + 1, (size_t)(argc - (int)i) * sizeof(*argv));
		argc--;
		i--;
	}

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return check_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return check_stdout(cmd_version(argc - 1, argv + 1));
	if (!strcmp(argv[1], "--help-table")) {
		print_table();
		return check_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--list-cmds")) {
		for (i = 0; i < ARRAY_SIZE(commands); i++)
			if (!CMD_HIDDEN(&commands[i]))
				printf("%s\n", commands[i].name);
		return check_stdout(EXIT_OK);
	}
	c = find_cmd(argv[1]);
	if (!c) {
		const char *near = NULL;

		if (argv[1][0] == '-')
			return cli_error(EXIT_USAGE, "unknown option '%s' (see 'clrtap --help')",
					 argv[1]);
		for (i = 0; i < ARRAY_SIZE(commands) && !near; i++)
			if (!CMD_HIDDEN(&commands[i]) && levenshtein(argv[1], commands[i].name) <= 2)
				near = commands[i].name;
		/* one line: the suggestion goes with the error */
		if (near)
			return cli_error(EXIT_USAGE, "'%s' is not a clrtap command; did you mean '%s'?",
					 argv[1], near);
		return cli_error(EXIT_USAGE, "'%s' is not a clrtap command (see 'clrtap --help')",
				 argv[1]);
	}
	cli_cmd_name = c->name;
	return check_stdout(c->fn(argc - 1, argv + 1));
}
