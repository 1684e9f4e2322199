/* SPDX-License-Identifier: MIT */
/*
 * engine_int.h - the watch engine's own state, shared by engine.c (targets,
 * sessions, sampling, firings) and actions.c (running the actions). Not for
 * callers: they use engine.h.
 */
#ifndef CLRTAP_WATCH_ENGINE_INT_H
#define CLRTAP_WATCH_ENGINE_INT_H

#include "common/compat.h"

#include <pthread.h>

#include "analyze/analyze.h"
#include "common/json.h"
#include "counters/counters.h"
#include "task/task.h"
#include "watch/engine.h"
#include "watch/events.h"

#define MAX_RULES WATCH_MAX_RULES
#define MAX_ACTIONS WATCH_MAX_ACTIONS
#define MAX_TARGETS WATCH_MAX_TARGETS
#define MAX_RUNNING WATCH_MAX_RUNNING
#define DEFAULT_MAX_ACTIONS 4
#define STACK_TEXT_MAX (64 * 1024)
#define MAX_PENDING 256
#define TICK_MS 250
#define SCAN_MS 1000
#define KILL_GRACE_MS 5000
#define DETAIL_MAX 512

struct target;

/*
 * An EventPipe session of a target, on a thread of its own. With an
 * exception rule (and stacks) beside other session rules there are two:
 * the exceptions' own, which walks each event's stack, and one without
 * stacks for counters, GC and requests, so that those events cost the
 * target no stack walk.
 */
enum sess_kind { SESS_ALL, SESS_MAIN, SESS_EXC };

struct sess {
	struct target *tg;
	enum sess_kind kind;
	bool on;                /* its thread was started */
	pthread_t th;
	struct counters_decoder *dec;
	struct strbuf tmp, tmp2, tmp3;
	int err;
	char why[512];          /* "" when it ended normally */
	bool done, reported;
	int64_t qpc_freq;       /* from the trace header */
};

enum suppress_why { SUP_NONE, SUP_COOLDOWN, SUP_BUSY };

struct pending {
	int target, rule;
	enum suppress_why why; /* a suppressed line: why */
	double value;
	bool have_value;
	unsigned fired; /* the rule's firings for this target, this one included */
	char detail[DETAIL_MAX];
	/* exception firings: the names of the stack at the throw (malloc'd, leaf
	 * first, one a line), or why there are none */
	char *stack;
	uint32_t stack_frames, stack_named;
	int stack_err;
	bool have_stack;
	bool stack_off; /* --no-stacks */
	/* request and status firings */
	bool have_req;
	struct watch_request req;
};

/* What a firing carries beyond its value: an event's stack, a request. */
struct fire_extra {
	bool stack; /* the event's stack is wanted (an exception's throw) */
	const uint64_t *ips;
	uint32_t nips;
	const struct watch_request *req;
};

struct target {
	bool used, gone;
	pid_t pid;
	uint64_t starttime;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct watch_state st[MAX_RULES];
	uint64_t cpu_ticks;
	int64_t cpu_ms;
	bool have_cpu;
	/* EventPipe sessions */
	struct sess sess[2];
	volatile sig_atomic_t stop;
	struct watch *w;
	int idx;
	bool cg_said;           /* the cgroup-memory rules' "no limit" line was logged */
	bool have_status;       /* the wait status, from the process-events connector */
	int status;
	int64_t suspend_ts;     /* SuspendEEBegin for a GC, 0: none open */
	int busy[MAX_RULES];    /* actions running for a rule's firing (main thread writes, atomics) */
	struct an_mem_window memw; /* memory-growth: the last smaps readings */
	int64_t mem_ms;            /* when smaps may be read next */
};

struct running {
	bool used;
	pid_t child;            /* exec: the shell (and a task-less action: clrtap itself) */
	/* a task from the table, on a thread of its own (task_run or task_spawn) */
	const struct task *task;
	bool thread_on;
	pthread_t th;
	volatile sig_atomic_t stop; /* the time limit or the end of the watch */
	bool done;                  /* atomics: the thread ended */
	struct task_args args;
	struct task_result res;
	int dirfd, logfd;           /* the action's folder, its log.txt */
	int target, rule;
	unsigned fire;
	const struct watch_action *a;
	int64_t start_ms, deadline_ms, killed_ms;
	bool timed_out;
	char dir[PATH_MAX];
};

struct watch {
	struct watch_rule rules[MAX_RULES];
	const char *rule_text[MAX_RULES];
	size_t nrules;
	struct watch_action actions[MAX_ACTIONS];
	size_t nactions;
	bool need_session, need_exc, need_gc, need_cgroup, need_status, need_req, need_counters;
	int max_actions;        /* actions running at once, at most */
	bool no_stacks;         /* --no-stacks: the session walks no stacks */
	bool lines;             /* --lines: stack frames with their source line */
	int evfd;               /* the process-events connector, -1: none */
	bool ev_lost_said;
	struct target targets[MAX_TARGETS];
	struct running run[MAX_RUNNING];
	const char *outdir;
	const char *match;
	int64_t action_limit_ms;
	int timeout_ms;
	unsigned fires;
	struct watch_config cfg;
	pthread_mutex_t lock;
	struct pending pend[MAX_PENDING];
	size_t npend;
	unsigned dropped;
};

int64_t watch_now_ms(void);
void watch_say(struct watch *w, bool warn, const char *fmt, ...) PRINTF(3, 4);
void watch_log_begin(struct ct_json *j, struct strbuf *sb, const char *event);
void watch_log_end(struct watch *w, struct ct_json *j, struct strbuf *sb);
void watch_log_target(struct ct_json *j, const struct target *tg);
bool watch_target_alive(const struct target *tg);

/* actions.c */
void watch_action_start(struct watch *w, unsigned fire, int ti, int ri, const struct watch_action *a,
			const struct pending *pd);
void watch_actions_reap(struct watch *w);
size_t watch_actions_running(const struct watch *w);
/* stop: every running action is asked to stop; returns when all have ended */
void watch_actions_stop(struct watch *w);

#endif
