/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what every command shares: exit codes, messages, option parsing,
 * target selection. Only src/ includes this.
 *
 * Adding a command:
 *   1. write src/cmd/<name>.c with one global function cmd_<name>(argc, argv)
 *      (everything else in it static); parse options with cli_parse();
 *   2. declare it below and add its row to the table in src/main.c (sorted);
 *   3. write docs/cmd/<name>.md;
 *   4. add tests/integration/t-<name>*.sh against a real fixture, asserting
 *      output facts and exit codes.
 */
#ifndef CLRTAP_CLI_H
#define CLRTAP_CLI_H

#include "common/compat.h"

#include <signal.h>
#include "common/exitcode.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "ipc/ipc.h"
#include "proc/proc.h"


/* Commands. */
int cmd_agent(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_counters(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_dump_analyze(int argc, char **argv); /* clrtap dump analyze (src/cmd/dump_analyze.c) */
int cmd_fleet(int argc, char **argv);
int cmd_gcdump(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_perfmap(int argc, char **argv);
int cmd_symbols(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_watch(int argc, char **argv);

/* Messages go to stderr as "clrtap: <msg>". Each returns the exit code given. */
int cli_error(int code, const char *fmt, ...) PRINTF(2, 3);
struct task_args;
struct task_ctx;
struct task_result;
/*
 * A command's default from the task table (lib/task), so its --help, serve
 * and the UI say the same: the param's default in milliseconds (DURATION)
 * or as a number (INT, NUM); and its help line, "HELP (default D; EXTRA)".
 * A missing task or param is a programming error: fallback is returned.
 */
int64_t cli_task_default_ms(const char *task, const char *param, int64_t fallback);
long long cli_task_default_int(const char *task, const char *param, long long fallback);
const char *cli_task_help(const char *task, const char *param, const char *extra, char *buf, size_t len);
void cli_warn(const char *fmt, ...) PRINTF(1, 2);
void cli_info(const char *fmt, ...) PRINTF(1, 2);
/* A task's log sink (task_ctx.log): warnings as cli_warn, information as cli_info. */
void cli_log_sink(void *ctx, enum ct_log_level level, const char *msg);
/*
 * Text that a target chose (names, command lines, messages, paths in its
 * namespace) goes to the terminal only through cli_safe(): the escaping rule
 * of common/term.h, so no control byte reaches the terminal. The result is s
 * itself when nothing needs escaping, else one of CLI_SAFE_SLOTS rotating
 * per-thread buffers (valid until the CLI_SAFE_SLOTS-th next call). Input
 * past CLI_SAFE_INPUT bytes is cut and marked "...". NULL gives "(null)".
 */
#define CLI_SAFE_SLOTS 8
#define CLI_SAFE_INPUT 65536
const char *cli_safe(const char *s);
/* Prints each complete line of text to f through cli_safe() (text is cut up in place). */
void cli_print_lines(FILE *f, struct strbuf *text);
/* Writes "clrtap: <prefix><msg>\n" to f with msg through cli_safe(). */
void cli_print_line(FILE *f, const char *prefix, const char *msg);
extern int cli_verbose;
extern const char *cli_cmd_name;

/*
 * Ctrl-C and SIGTERM: after cli_catch_stop_signals(), either sets
 * cli_stop_requested (and interrupts blocking calls with EINTR) so a
 * long-running command can stop cleanly and still write its result.
 */
extern volatile sig_atomic_t cli_stop_requested;
void cli_catch_stop_signals(void);

/*
 * Progress on a terminal for work that takes longer than a second: while
 * it runs, a thread redraws one line on stderr every 250 ms, "clrtap: WHAT:
 * 3 s of 10 s (Ctrl-C stops)" (of 0: the time so far); messages printed
 * meanwhile clear it first. Nothing when stderr is not a terminal. One at a
 * time; stop clears the line.
 */
void cli_countdown_start(const char *what, int64_t total_ms);
void cli_countdown_stop(void);

/* ----- option parsing (one parser for every command) ----- */
enum cli_opt_type {
	CLI_OPT_END = 0,
	CLI_OPT_BOOL,    /* bool *; set to true */
	CLI_OPT_STRING,  /* const char **, the argument */
	CLI_OPT_INT,     /* int *, decimal */
	CLI_OPT_PID,     /* pid_t *, decimal > 0 */
	CLI_OPT_DURATION, /* int64_t * milliseconds; cli_parse_duration */
	CLI_OPT_SIZE,    /* uint64_t * bytes; cli_parse_size */
	CLI_OPT_TIMEOUT, /* int * milliseconds > 0; cli_parse_timeout */
	CLI_OPT_OUTPUT,  /* const char **, an output file: cli_check_output() while parsing */
	CLI_OPT_TYPE_MASK = 0xff,
	/*
	 * Or'ed into a type: an old spelling, hidden from --help, warns when
	 * used; its help names the new spelling.
	 */
	CLI_DEPRECATED = 0x100,
};

/*
 * Durations, the one syntax of every option that takes one (-d/--duration,
 * --timeout, --every, ...): a number with an optional unit, s (the default),
 * ms, m or h; a fraction is fine down to a millisecond ("5", "5s", "1.5",
 * "500ms", "2m"); no sign; at most 30 days. For -d/--duration of every
 * command 0 means "until Ctrl-C". Returns 0 or -EINVAL.
 */
int cli_parse_duration(const char *s, int64_t *ms);
/*
 * --timeout: a duration above 0 and at most an hour, in int milliseconds. A
 * bare number of 1000 or more is read as milliseconds, as before 0.1 (sets
 * *legacy_ms). Returns 0, -EINVAL or -ERANGE.
 */
int cli_parse_timeout(const char *s, int *ms, bool *legacy_ms);
/* Byte sizes: a number with an optional unit K, M, G (also KiB, MiB, GiB;
 * powers of 1024). Returns 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *bytes);

/*
 * An output file named on the command line, checked before any work (so
 * before attaching, sampling or forcing a GC): its folder exists and clrtap
 * may write there, and it is not a directory nor an existing non-regular file
 * (a device, a FIFO). An existing regular file is announced on stderr: it is
 * replaced once the new one is complete. Prints the error and returns
 * EXIT_ERROR (docs/cmd/exit-codes.md), else 0.
 */
int cli_check_output(const char *opt, const char *path);

/*
 * Options that exclude each other: when both a and b are given, prints
 * "A and B do not go together" (why, if given) and returns EXIT_USAGE; else 0.
 */
int cli_conflict(bool a, const char *aname, bool b, const char *bname, const char *why);

struct cli_option {
	int short_name; /* 0 for none */
	const char *long_name;
	enum cli_opt_type type;
	void *value;
	const char *argh; /* argument placeholder in help, e.g. "PID" */
	const char *help;
};

/*
 * Parses argv (argv[0] is the command name). usage is one line, e.g.
 * "clrtap info (-p PID | -n NAME) [options]". Handles -h/--help (prints help,
 * returns 1 with *code = EXIT_OK). On a bad option prints the error and the
 * help and returns 1 with *code = EXIT_USAGE. Otherwise returns 0 and sets
 * *first to the index of the first positional argument.
 */
int cli_parse(int argc, char **argv, const char *usage, const struct cli_option *opts,
	      int *first, int *code);

/* ----- targets ----- */
struct cli_target_opts {
	pid_t pid;
	const char *name;
	int timeout_ms;
};

/* -p, -n and --timeout; timeout_help says what --timeout bounds and its default */
#define CLI_TARGET_OPTIONS_T(t, timeout_help) \
	{ 'p', "pid", CLI_OPT_PID, &(t)->pid, "PID", "target process id (as seen from here)" }, \
	{ 'n', "name", CLI_OPT_STRING, &(t)->name, "NAME", "target process name or entry assembly" }, \
	{ 0, "timeout", CLI_OPT_TIMEOUT, &(t)->timeout_ms, "DUR", timeout_help }
#define CLI_TARGET_OPTIONS(t) CLI_TARGET_OPTIONS_T(t, "per-request IPC timeout (default 5s)")

/* ----- native symbol sources (lib/sym/sym_srv.h, docs/internals/symsrv.md) ----- */
struct cli_symbol_opts {
	const char *server;     /* --symbol-server URL[,URL...] */
	const char *debuginfod; /* --debuginfod URL[ URL...] */
	const char *cache;      /* --symbol-cache DIR */
};
#define CLI_SYMBOL_OPTIONS(o) \
	{ 0, "symbol-server", CLI_OPT_STRING, &(o)->server, "URL", \
	  "Microsoft-style symbol server(s) for stripped native code, by build-id " \
	  "(e.g. https://msdl.microsoft.com/download/symbols; default $CLRTAP_SYMBOL_SERVER, none)" }, \
	{ 0, "debuginfod", CLI_OPT_STRING, &(o)->debuginfod, "URLS", \
	  "debuginfod server(s) for stripped native code (default $DEBUGINFOD_URLS; '' none)" }, \
	{ 0, "symbol-cache", CLI_OPT_STRING, &(o)->cache, "DIR", \
	  "where served debug files are kept: DIR/debug (default $CLRTAP_CACHE_DIR, else /var/cache/clrtap)" }

/* Configures the process's symbol sources; an exit code (0 or EXIT_USAGE, the error printed). */
int cli_symbols_configure(const struct cli_symbol_opts *o);
/* Prints sym_proc_native_note's lines (which native libraries were named how) to stdout. */
struct sym_proc;
void cli_print_native_note(struct sym_proc *sp);

/*
 * Resolves -p/-n to a .NET process with a diagnostics socket and fills t and
 * ep (ep->path points into t). On failure prints why and returns the exit
 * code (never 0).
 */
int cli_resolve_target(const struct cli_target_opts *o, struct proc_target *t,
		       struct ipc_endpoint *ep);

/*
 * Output files appear only when complete. cli_outfile_open makes an unnamed
 * file in out's directory (O_TMPFILE: if clrtap is killed nothing is left),
 * or where the file system cannot, a named "OUT.tmp-XXXXXX" beside it, with
 * the permissions a plain create would give (returns an exit code, the error
 * printed). cli_outfile_keep gives it a name, atomically replacing what was
 * there (0 or -errno; call it before closing). cli_outfile_close closes the
 * descriptor; cli_outfile_drop closes it and removes whatever was not kept.
 */
struct cli_outfile {
	int fd;
	bool anon;          /* unnamed (O_TMPFILE) */
	struct strbuf tmp;  /* the temporary name, while there is one */
};
int cli_outfile_open(struct cli_outfile *f, const char *out);
int cli_outfile_keep(struct cli_outfile *f, const char *name);
int cli_outfile_close(struct cli_outfile *f);
void cli_outfile_drop(struct cli_outfile *f);

/*
 * Writes len bytes of buf to path through cli_outfile (it appears only when
 * complete). Returns EXIT_OK or EXIT_ERROR, the error printed.
 */
int cli_write_file(const char *path, const char *buf, size_t len);
/* The same for a flame graph in format fmt (enum flame_format, flame/flame.h). */
struct flame;
struct flame_opts;
int cli_write_flame(const char *path, const struct flame *f, int fmt, const struct flame_opts *fo);

/* Prints an IPC failure as one line and returns its exit code. */
int cli_ipc_error(const char *what, int err, const struct ipc_error *rerr);

/*
 * The one exit of every --json document (common/json.h): finishes j, adds a
 * newline and writes j's buffer to f. A writer error (misuse, a cap, no
 * memory) writes nothing: it prints why and returns EXIT_ERROR; else EXIT_OK.
 */
int cli_json_out(struct ct_json *j, FILE *f);
/*
 * For a document written as it goes (counters collect): writes what j's
 * buffer holds so far to f and empties the buffer; j keeps its nesting, so
 * cli_json_out() ends the same document. 0, j's error, or -EIO.
 */
int cli_json_flush(struct ct_json *j, FILE *f);

#endif
