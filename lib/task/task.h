/* SPDX-License-Identifier: MIT */
/*
 * task.h - the task table: every capability of clrtap as one record (its
 * name, its parameters as data, how to run it, the shape of its result).
 * The CLI, serve, watch and fleet run capabilities only through here.
 */
#ifndef CLRTAP_TASK_TASK_H
#define CLRTAP_TASK_TASK_H

#include <signal.h>
#include "common/compat.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"

#define TASK_MAX_PARAMS 24
#define TASK_MAX_ARTIFACTS 8

enum task_ptype {
	TASK_P_BOOL,      /* "true"/"false" */
	TASK_P_INT,       /* integer within [min,max] */
	TASK_P_NUM,       /* number within [min,max] */
	TASK_P_DURATION,  /* the one duration syntax (cli_parse_duration's), seconds within [min,max] */
	TASK_P_STRING,    /* free text up to max bytes (max 0 = 512) */
	TASK_P_ENUM,      /* one word of choices */
};

#define TASK_PF_REQUIRED 0x1u  /* no default: must be given */
#define TASK_PF_CLI_ONLY 0x2u  /* not offered by serve (e.g. an output path) */

struct task_param {
	const char *name;     /* key: REST/JSON name; the CLI option is --name with '_' -> '-' */
	enum task_ptype type;
	const char *def;      /* default, as text; NULL = none */
	double min, max;      /* bounds (INT, NUM, DURATION; STRING: max bytes) */
	const char *choices;  /* ENUM: space-separated words */
	const char *help;     /* one line; the source of --help, openapi.json and the UI */
	unsigned flags;       /* TASK_PF_* */
};

struct task_value {
	bool set;             /* given by the caller (else the default, if any, is in it) */
	bool b;
	long long i;
	double d;             /* NUM; DURATION in seconds */
	const char *s;        /* STRING/ENUM (points into task_args storage) */
};

struct task;

struct task_args {
	const struct task *task;
	int pid;                                  /* the target (0 when the task needs none) */
	struct task_value v[TASK_MAX_PARAMS];     /* in the order of task->params */
	struct strbuf store;                      /* owns the strings */
};

struct task_ctx {
	const volatile sig_atomic_t *stop;  /* becomes nonzero: stop soon and still return what you have */
	ct_log_ctx_fn log;                  /* progress / warnings for a person (may be NULL) */
	void *log_ctx;
	int outdir_fd;                      /* directory for artifacts (fixed names only), -1 = none */
};

struct task_artifact { char name[64]; char mime[48]; };

struct task_result {
	int err;               /* 0, or the negative errno the task failed with */
	int exit_code;         /* enum exit_code (lib/common/exitcode.h): ct_exit_for(err), or EXIT_PARTIAL etc. */
	char message[256];     /* one line for a person when err != 0 (no control characters) */
	struct strbuf json;    /* the result: ONE JSON object, schema in docs/tasks/<name>.md */
	void *data;            /* the same result as a C struct for in-process callers (CLI text rendering), or NULL */
	void (*free_data)(void *);
	struct task_artifact artifacts[TASK_MAX_ARTIFACTS];
	size_t nartifacts;
};

#define TASK_F_TARGET   0x1u   /* needs args->pid */
#define TASK_F_ISOLATE  0x2u   /* serve/watch run it in a child process (task_spawn), never in-process */

struct task {
	const char *name;      /* "profile", "probe", "gcdump.collect", "analyze.leaks", "watch.action.dump", ... */
	const char *summary;   /* one line */
	const struct task_param *params;
	size_t nparams;
	unsigned flags;        /* TASK_F_* */
	int (*run)(const struct task_args *args, const struct task_ctx *ctx, struct task_result *res);
};

/* The table (lib/task/table.c), sorted by name. */
const struct task *task_find(const char *name);
const struct task *const *task_all(size_t *n);

/* Arguments: defaults first, then set by name from text; bad values give -EINVAL and a one-line why. */
int task_args_init(struct task_args *a, const struct task *t, int pid);
int task_args_set(struct task_args *a, const char *name, const char *text, char *why, size_t whylen);
int task_args_check(const struct task_args *a, char *why, size_t whylen); /* required ones given */
void task_args_release(struct task_args *a);
const struct task_value *task_arg(const struct task_args *a, const char *name); /* NULL if no such param */

void task_result_init(struct task_result *r);
void task_result_release(struct task_result *r);
/* Sets err, exit_code (ct_exit_for) and message; returns err. */
int task_fail(struct task_result *r, int err, const char *fmt, ...) PRINTF(3, 4);

/* Run in this process. */
int task_run(const struct task *t, const struct task_args *a, const struct task_ctx *c, struct task_result *r);
/*
 * THE one child runner: run the task in a child clrtap process (PR_SET_PDEATHSIG,
 * own process group, stop -> SIGTERM then SIGKILL after a grace), arguments and
 * the result cross a pipe as JSON (never parsed from stderr); fills r->json,
 * r->err/exit_code/message, r->artifacts. data stays NULL.
 */
int task_spawn(const char *exe, const struct task *t, const struct task_args *a, const struct task_ctx *c,
	       struct task_result *r);
/*
 * The same runner for a clrtap command whose standard output is a stream of
 * records read as they come (probe's ReJIT hand-over reads `clrtap agent
 * probe --progress`, docs/cmd/agent.md): argv[0] is ignored (exe runs),
 * standard output goes to *out_fd (non-blocking, close-on-exec), standard
 * error stays the caller's (the child's messages are for a person), and the
 * child gets PR_SET_PDEATHSIG deathsig and default SIGINT/SIGTERM handlers.
 * Returns the child's pid, or a negative errno; the caller reaps it.
 */
pid_t task_spawn_stream(const char *exe, const char *const *argv, int deathsig, int *out_fd);

/* The table as JSON (names, summaries, params with type/default/bounds/help), for openapi.json and the UI. */
int task_table_json(struct ct_json *j);
/* ----- added by w-task (issue 25) beyond the agreed contract ----- */

/*
 * choices of a TASK_P_STRING param (NULL in the contract's examples): when
 * set, the characters a value may hold besides letters and digits, and the
 * value may not start with '-' (a method pattern, a provider list: nothing
 * that could read as an option or a path).
 */

#define TASK_RESULT_MAX ((size_t)64 << 20) /* bytes of one result JSON (task_spawn's cap too) */

/* "bool", "int", "number", "duration", "string", "enum". */
const char *task_ptype_name(enum task_ptype t);
/* One param as a JSON object (name, type, default, bounds, choices, help, required). */
void task_param_json(struct ct_json *j, const struct task_param *p);
/* Replaces control characters in a message by blanks. */
void task_message_clean(char *s);
/* Resets sb to the one error shape: {"error":code-name,"exit_code":N,"message":...}. */
int task_error_json(struct strbuf *sb, int exit_code, const char *message);
/*
 * The options block of a command's --help from the task's params (one line
 * each: --name VALUE, the help text, the default and bounds), so --help
 * shows the table's defaults. Skips the names in skip (space-separated).
 */
int task_help_text(const struct task *t, const char *skip, struct strbuf *out);

/*
 * task_spawn's two halves of the pipe protocol (spawn.c): the request a
 * child reads, {"kind":NAME,"pid":N,"params":{NAME:TEXT,...}} (the shape of a
 * POST /api/v1/sessions body, so one reader parses both), and the child's
 * result frame, written by "clrtap __task NAME" to fd TASK_CHILD_OUT_FD.
 */
/*
 * The target of a TASK_F_TARGET task, found and checked as the CLI does
 * (proc_target_find), with an endpoint of timeout_ms: 0, or task_fail's
 * error with the CLI's sentence.
 */
struct proc_target;
struct ipc_endpoint;
int task_target(const struct task_args *a, struct task_result *r, struct proc_target *t, struct ipc_endpoint *ep,
		int timeout_ms);
/* The stop flag for a library that takes a writable one (they set it too). */
volatile sig_atomic_t *task_stop_flag(const struct task_ctx *c, volatile sig_atomic_t *fallback);
/*
 * Writes an artifact under a fixed name into c->outdir_fd (0600, replacing
 * one of that name, never following a link) and lists it in r->artifacts.
 */
int task_artifact_write(const struct task_ctx *c, struct task_result *r, const char *name, const char *mime,
			const void *buf, size_t len);
/* Opens name in c->outdir_fd to write (0600, O_NOFOLLOW, truncated), lists it; -1 and errno. */
int task_artifact_open(const struct task_ctx *c, struct task_result *r, const char *name, const char *mime);

#define TASK_CHILD_IN_FD 3
#define TASK_CHILD_OUT_FD 4
#define TASK_CHILD_DIR_FD 5 /* the output directory, when there is one */
int task_request_json(const struct task_args *a, struct strbuf *out);
int task_result_write(int fd, const struct task_result *r);
#endif
