/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the watch engine (engine.c, actions.c): rules evaluated against
 * targets (their /proc readings, one or two EventPipe sessions each, the
 * kernel's process events), firings turned into actions, and one JSON object
 * a line for each thing that happens (docs/cmd/watch.md, "The log"). Actions
 * run tasks from the task table (lib/task): in this process, or through
 * task_spawn for TASK_F_ISOLATE ones; `exec:` runs `sh -c`.
 *
 * The engine never prints and never exits: log lines and sentences for a
 * person go to the callbacks of struct watch_config; functions return 0 or
 * a negative errno.
 */
#ifndef CLRTAP_WATCH_ENGINE_H
#define CLRTAP_WATCH_ENGINE_H

#include "common/compat.h"

#include <signal.h>

#include "proc/proc.h"
#include "watch/watch.h"

#define WATCH_MAX_RULES 32
#define WATCH_MAX_ACTIONS 16
#define WATCH_MAX_TARGETS 64
#define WATCH_MAX_RUNNING 32

struct watch_config {
	bool all;                   /* every .NET process, also later ones (else the targets added) */
	const char *match;          /* with all: only command lines holding this */
	const char *outdir;         /* the actions' folders go here (made at the first action) */
	int64_t action_limit_ms;    /* time limit of one action */
	int max_actions;            /* actions running at once, at most (1..WATCH_MAX_RUNNING) */
	bool no_stacks;             /* exception firings without the throw's stack */
	bool lines;                 /* the throw's stack with source file and line */
	int timeout_ms;             /* diagnostics IPC timeout */
	int64_t duration_ms;        /* stop after this long (0: until stop) */
	const volatile sig_atomic_t *stop;
	/* one JSON object (no newline) for the log */
	void (*log_line)(void *ctx, const char *json, size_t len);
	/* one sentence for a person: warn (else information) */
	void (*say)(void *ctx, bool warn, const char *msg);
	void *ctx;
};

struct watch;

int watch_engine_new(struct watch **out, const struct watch_config *c);
/* The options again (they may come after the rules); before the first target. */
void watch_engine_configure(struct watch *w, const struct watch_config *c);
void watch_engine_free(struct watch *w);
/*
 * A rule (text is kept: it must outlive the engine). -EINVAL with why for a
 * bad rule or a memory-growth kind that is none; -E2BIG past WATCH_MAX_RULES.
 */
int watch_engine_add_rule(struct watch *w, const char *text, char *why, size_t whylen);
size_t watch_engine_nrules(const struct watch *w);
/* An action for the rules without "do". -E2BIG past WATCH_MAX_ACTIONS. */
int watch_engine_add_action(struct watch *w, const struct watch_action *a);
/* A target found by proc_target_find. -ESRCH: it is gone. */
int watch_engine_add_target(struct watch *w, const struct proc_target *t);
/* Watches until stop, the duration, or (without all) the target is gone with its actions done. */
int watch_engine_run(struct watch *w);

#endif
