/* SPDX-License-Identifier: MIT */
/*
 * main.c - the command table and what every command run goes through.
 */
#include "common/compat.h"

#include <signal.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/log.h"

#ifndef CLRTAP_VERSION
#define CLRTAP_VERSION "unknown"
#endif

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

/* Sorted by name (checked at startup in debug builds and by a test). */
static const struct cmd commands[] = {
	{ "agent", cmd_agent, "attach clrtap's in-process profiler, stream its events, detach; or show it" },
	{ "analyze", cmd_analyze, "one question, one report: exceptions, allocations, pauses, memory, ..." },
	{ "counters", cmd_counters, "live runtime counters (System.Runtime, any EventSource or Meter)" },
	{ "doctor", cmd_doctor, "a short battery over one session: findings ranked, with the next command" },
	{ "dump", cmd_dump, "write a core dump of a .NET process (mini, heap, triage, full)" },
	{ "fleet", cmd_fleet, "continuous CPU profiles of every .NET process, pushed to Pyroscope, OTLP or pprof files" },
	{ "gcdump", cmd_gcdump, "heap snapshots: retained sizes, retention paths, duplicated strings, leaks" },
	{ "help", cmd_help, "show help for clrtap or a command" },
	{ "info", cmd_info, "runtime version, command line, socket, environment of a process" },
	{ "perfmap", cmd_perfmap, "turn the runtime's perf map / jitdump on or off, no restart" },
	{ "probe", cmd_probe, "trace calls of a .NET method by name: args, return value, latency, stacks" },
	{ "profile", cmd_profile, "CPU profile (perf_event) with JIT, R2R, native and kernel frames named" },
	{ "ps", cmd_ps, "list .NET processes on this host, containers included" },
	{ "serve", cmd_serve, "REST API, Prometheus /metrics, live views and web UI (root-equivalent)" },
	{ "stacks", cmd_stacks, "the managed stack of every thread, merged" },
	{ "top", cmd_top, "live view of the hottest methods of a process" },
	{ "trace", cmd_trace, "collect an EventPipe trace (.nettrace) over the diagnostics socket" },
	{ "version", cmd_version, "print clrtap's version" },
	{ "watch", cmd_watch, "rules (cpu, rss, counters, exceptions, gc pauses, exit) that run profile, stacks, trace, dump... when they fire" },
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
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'clrtap <command> --help' shows a command's options.\n"
		   "Exit codes: docs/cmd/exit-codes.md.\n");
}

int cmd_help(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
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
	printf("clrtap %s\n", CLRTAP_VERSION);
	return EXIT_OK;
}

static void log_to_stderr(enum ct_log_level level, const char *msg)
{
	/* library messages quote what targets and files hold: escaped (cli_safe) */
	cli_print_line(stderr, level == CT_LOG_WARN ? "warning: " : "", msg);
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

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return check_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version"))
		return check_stdout(cmd_version(1, argv + 1));
	if (!strcmp(argv[1], "--list-cmds")) {
		for (i = 0; i < ARRAY_SIZE(commands); i++)
			printf("%s\n", commands[i].name);
		return check_stdout(EXIT_OK);
	}
	c = find_cmd(argv[1]);
	if (!c) {
		cli_error(0, "'%s' is not a clrtap command", argv[1]);
		for (i = 0; i < ARRAY_SIZE(commands); i++)
			if (levenshtein(argv[1], commands[i].name) <= 2)
				fprintf(stderr, "did you mean '%s'?\n", commands[i].name);
		return EXIT_USAGE;
	}
	cli_cmd_name = c->name;
	return check_stdout(c->fn(argc - 1, argv + 1));
}
