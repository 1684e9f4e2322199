/* SPDX-License-Identifier: MIT */
/*
 * clrtap watch - rules that fire actions at the moment a problem happens.
 * Parsing, the log file and sentences only: the engine (targets, sessions,
 * rules, actions as tasks of the task table) is lib/watch (engine.h).
 * docs/cmd/watch.md.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "watch/engine.h"

#define RULES_FILE_MAX (64 * 1024)

struct cli_watch {
	struct watch *w;
	FILE *log;
};

static void log_line(void *ctx, const char *json, size_t len)
{
	struct cli_watch *cw = ctx;

	fwrite(json, 1, len, cw->log);
	fputc('\n', cw->log);
	fflush(cw->log);
}

static void say(void *ctx, bool warn, const char *msg)
{
	(void)ctx;
	if (warn)
		cli_warn("%s", msg);
	else
		cli_info("%s", msg);
}

/* Adds one rule; on a bad one prints why (where names the file line). */
static int add_rule(struct watch *w, const char *text, const char *where)
{
	char err[256];
	int e = watch_engine_add_rule(w, text, err, sizeof(err));

	if (e == -E2BIG)
		return cli_error(EXIT_USAGE, "%s", err);
	if (e)
		return cli_error(EXIT_USAGE, "%srule '%s': %s", where, text, err);
	return 0;
}

/*
 * A rules file: one rule a line; blank lines and lines starting with '#'
 * (after blanks) are skipped; at most RULES_FILE_MAX bytes. The buffer is
 * kept for the rules' texts.
 */
static int load_rules(struct watch *w, const char *path, char **keep)
{
	char where[PATH_MAX + 64], *buf, *line, *next;
	ssize_t n;
	size_t len = 0;
	unsigned lineno = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return cli_error(EXIT_USAGE, "--rules %s: %s", path, strerror(errno));
	buf = malloc(RULES_FILE_MAX + 2);
	if (!buf) {
		close(fd);
		return cli_error(EXIT_ERROR, "out of memory");
	}
	while (len <= RULES_FILE_MAX && (n = read(fd, buf + len, RULES_FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len > RULES_FILE_MAX) {
		free(buf);
		return cli_error(EXIT_USAGE, "--rules %s: larger than %d bytes", path, RULES_FILE_MAX);
	}
	buf[len] = 0;
	if (memchr(buf, 0, len)) {
		free(buf);
		return cli_error(EXIT_USAGE, "--rules %s: a NUL byte (not a text file)", path);
	}
	*keep = buf;
	for (line = buf; line && *line; line = next) {
		char *p = line;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#' || !strcmp(p, "\r"))
			continue;
		if (p[strlen(p) - 1] == '\r')
			p[strlen(p) - 1] = 0;
		snprintf(where, sizeof(where), "%s:%u: ", path, lineno); /* escaped by cli_error */
		rc = add_rule(w, p, where);
		if (rc)
			return rc;
	}
	return 0;
}

/* --action may repeat: taken out of argv into the engine before cli_parse. */
static int take_actions(struct watch *w, int argc, char **argv, char **args, int *nargs)
{
	struct watch_action a;
	char err[256];
	int i, n = 0;

	for (i = 0; i < argc; i++) {
		const char *s = NULL;

		if ((!strcmp(argv[i], "--action") || !strcmp(argv[i], "-a")) && i + 1 < argc) {
			if (argv[i][1] == 'a')
				cli_warn("-a is deprecated here (it means --args in probe): use --action");
			s = argv[++i];
		} else if (!strncmp(argv[i], "--action=", 9)) {
			s = argv[i] + 9;
		}
		if (!s) {
			args[n++] = argv[i];
			continue;
		}
		if (watch_action_parse(s, &a, err, sizeof(err)))
			return cli_error(EXIT_USAGE, "action '%s': %s", s, err);
		if (watch_engine_add_action(w, &a))
			return cli_error(EXIT_USAGE, "at most %d actions", WATCH_MAX_ACTIONS);
	}
	*nargs = n;
	return 0;
}

/* The folder of the actions: a named one is checked now; the default one is made at the first action. */
static int pick_outdir(const char **outdir)
{
	static char def[64];
	time_t t = time(NULL);
	struct tm tm;

	if (*outdir)
		return mkdir(*outdir, 0755) && errno != EEXIST ? cli_error(EXIT_ERROR, "%s: %s", *outdir, strerror(errno)) : 0;
	gmtime_r(&t, &tm);
	snprintf(def, sizeof(def), "watch-%04d%02d%02d-%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	*outdir = def;
	return 0;
}

static int check_options(struct watch *w, const struct cli_target_opts *to, const struct watch_config *c)
{
	if (!watch_engine_nrules(w))
		return cli_error(EXIT_USAGE, "no rule given (e.g. 'cpu > 80%% for 2s'); see clrtap help watch");
	if (c->all == (to->pid || to->name))
		return cli_error(EXIT_USAGE, "give exactly one of -p PID, -n NAME or --all");
	if (c->match && !c->all)
		return cli_error(EXIT_USAGE, "--match goes with --all");
	if (c->action_limit_ms <= 0)
		return cli_error(EXIT_USAGE, "--action-timeout must be more than 0");
	if (c->max_actions < 1 || c->max_actions > WATCH_MAX_RUNNING)
		return cli_error(EXIT_USAGE, "--max-actions is 1..%d", WATCH_MAX_RUNNING);
	return 0;
}

static const char usage_line[] =
	"clrtap watch (-p PID | -n NAME | --all) RULE... [--action ACTION]... [-o DIR] [--max-actions N]";

/* The options, the rules and the target into the engine; then it runs. */
static int setup(struct cli_watch *cw, struct watch_config *c, int nargs, char **args, char **rules_buf)
{
	struct cli_target_opts to = { 0 };
	const char *logfile = NULL, *rules_file = NULL, *action_help = NULL;
	struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "all", CLI_OPT_BOOL, &c->all, NULL, "every .NET process, also those that start later (containers too)" },
		{ 0, "match", CLI_OPT_STRING, &c->match, "TEXT", "with --all: only processes whose command line contains TEXT" },
		{ 0, "action", CLI_OPT_STRING, &action_help, "ACTION", "profile[:DUR], stacks, trace[:DUR], dump, gcdump, analyze:NAME[:DUR], exec:COMMAND (repeatable; for rules without 'do')" },
		{ 'o', "output", CLI_OPT_STRING, &c->outdir, "DIR", "folder for the actions' folders (default watch-TIMESTAMP)" },
		{ 0, "rules", CLI_OPT_STRING, &rules_file, "FILE", "more rules, one a line ('#' comments)" },
		{ 0, "log", CLI_OPT_STRING, &logfile, "FILE", "JSON-lines log (default: stdout)" },
		{ 0, "action-timeout", CLI_OPT_DURATION, &c->action_limit_ms, "SEC", "time limit of one action (default 60)" },
		{ 0, "max-actions", CLI_OPT_INT, &c->max_actions, "N", "actions running at once, at most (default 4, 1..32)" },
		{ 0, "no-stacks", CLI_OPT_BOOL, &c->no_stacks, NULL, "exception firings without the stack of the throw (no stack walk per event in the target)" },
		{ 0, "lines", CLI_OPT_BOOL, &c->lines, NULL, "exception stacks with their source file and line (portable PDBs)" },
		{ 'd', "duration", CLI_OPT_DURATION, &c->duration_ms, "SEC", "stop watching after this long (default and 0: until Ctrl-C)" },
		{ 0 },
	};
	struct proc_target t;
	struct ipc_endpoint ep;
	int first, code, i;

	if (cli_parse(nargs, args, usage_line, opts, &first, &code))
		return code;
	for (i = first; i < nargs; i++)
		if ((code = add_rule(cw->w, args[i], "")))
			return code;
	if ((rules_file && (code = load_rules(cw->w, rules_file, rules_buf))) ||
	    (code = check_options(cw->w, &to, c)) || (code = pick_outdir(&c->outdir)))
		return code;
	c->timeout_ms = to.timeout_ms;
	if (logfile && !(cw->log = fopen(logfile, "ae")))
		return cli_error(EXIT_ERROR, "%s: %s", logfile, strerror(errno));
	watch_engine_configure(cw->w, c);
	if (c->all)
		return 0;
	if ((code = cli_resolve_target(&to, &t, &ep)))
		return code;
	return watch_engine_add_target(cw->w, &t) ? cli_error(EXIT_NO_PROCESS, "pid %d is gone", (int)t.pid) : 0;
}

int cmd_watch(int argc, char **argv)
{
	struct cli_watch cw = { NULL, stdout };
	struct watch_config c = { .action_limit_ms = 60000, .max_actions = 4, .stop = &cli_stop_requested,
				  .log_line = log_line, .say = say, .ctx = &cw };
	char **args = calloc((size_t)argc + 1, sizeof(*args)), *rules_buf = NULL;
	int nargs = 0, code;

	if (!args || watch_engine_new(&cw.w, &c)) {
		free(args);
		return cli_error(EXIT_ERROR, "out of memory");
	}
	code = take_actions(cw.w, argc, argv, args, &nargs);
	if (!code)
		code = setup(&cw, &c, nargs, args, &rules_buf);
	if (!code) {
		cli_catch_stop_signals();
		signal(SIGPIPE, SIG_IGN);
		(void)watch_engine_run(cw.w);
	}
	watch_engine_free(cw.w);
	free(rules_buf);
	free(args);
	if (cw.log != stdout)
		fclose(cw.log);
	return code;
}
