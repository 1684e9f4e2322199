/* SPDX-License-Identifier: MIT */
/*
 * run.h - inside lib/probe only: the state of one probe run (the probe
 * task, task.c), shared by its reports (report.c: the summary, the
 * mechanisms, inlining) and its cost budget and ReJIT hand-over
 * (handover.c). Nothing here prints: every line goes to the task's log,
 * and what a person must know to read the counts to the result's
 * statements.
 */
#ifndef CLRTAP_PROBE_RUN_H
#define CLRTAP_PROBE_RUN_H

#include "common/log.h"
#include "perf/perf.h"
#include "probe/probe.h"

#define PROBE_RUN_MAX_METHODS 16
#define PROBE_RUN_MAX_INL 32

enum bstate { B_NATIVE = 0, B_HANDING, B_REJIT };

/* The cost budget and the ReJIT hand-over. */
struct budget {
	double pct;              /* share of one core the probe may take */
	bool rejit_ok;           /* the hand-over to ReJIT is allowed */
	bool args;               /* arguments asked (not --count) */
	unsigned hw_ns, up_ns;   /* cost of one hit here */
	bool hw_measured, up_measured;
	enum bstate state;
	uint64_t t0, last_ns, handed_ns, placed_ns;
	uint64_t prev[PROBE_RUN_MAX_METHODS][PROBE_MAX_VERSIONS];
	uint64_t rj_prev, rj_prev_ns;
	double native_cost_ns;   /* every hit so far x its mechanism's cost */
	double peak_share;       /* the highest share a window had */
	double win_cost[10];     /* the last ten windows: cost (ns), length (ns) */
	uint64_t win_dt[10];
	size_t win_i;
	bool rejit_args;         /* the ReJIT probes record arguments */
	bool over;               /* stopped: over the budget */
	struct probe_rejit *rj;
	char specs[PROBE_RUN_MAX_METHODS][PROBE_PM_NAME_MAX + 256];
	const char *names[PROBE_RUN_MAX_METHODS];
	const char *specp[PROBE_RUN_MAX_METHODS];
	uint64_t rj_count[PROBE_RUN_MAX_METHODS], rj_final[PROBE_RUN_MAX_METHODS];
	bool rj_final_seen[PROBE_RUN_MAX_METHODS], rj_placed;
	char action[512];        /* what the budget made clrtap do, for the summary and JSON */
	int rj_status;
	bool stack;              /* the ReJIT records carry the caller's stack */
	struct probe_proc *pp;   /* names the stacks' IPs (perf map) */
	const char *last_method; /* the method of the last call line (its own frame is dropped) */
	double cost_ns, share_pct; /* at the end: estimated cost and its share of a core */
	uint64_t wall_ns;
};

struct inl_seen {
	char inlinee[PROBE_PM_NAME_MAX], inliner[PROBE_PM_NAME_MAX];
	unsigned count;
	bool failed;
};

/* The self-tests a set of methods needs (uprobe only where one has ReadyToRun code). */
struct mech_tests {
	struct probe_mech hw, up;
	int hw_err, up_err;
	bool any_r2r;
};

struct probe_run {
	const struct probe_run_opts *o;
	const struct task_ctx *ctx;
	struct task_result *res;
	struct probe_result *r;
	pid_t pid;
	const char *where;       /* where code goes unwatched: "on this machine", or by --via */
	struct budget bg;
	struct inl_seen inl_seen[PROBE_RUN_MAX_INL];
	size_t n_inl_seen;
	struct probe_method *found[PROBE_RUN_MAX_METHODS];
	size_t n;
	struct probe_session *sess;
	struct probe_inl *inl;
	struct probe_proc *pp;
	uint64_t t0_mono;        /* the run's start (CLOCK_MONOTONIC ns) */
	bool armed;              /* the session was armed (its detach is said) */
	struct perf_prio prio;   /* clrtap's priority, raised for the run */
};

/* A line for the log; with stmt also one of the result's statements. */
void prun_say(struct probe_run *w, enum ct_log_level lvl, bool stmt, const char *fmt, ...) PRINTF(4, 5);
/* Fails the run: err, exit code and message; returns err. */
int prun_fail(struct probe_run *w, int err, int code, const char *fmt, ...) PRINTF(4, 5);
uint64_t prun_mono_ns(void);

/* report.c */
void prun_settle_perfmap(struct probe_proc *pp);
void prun_settle_perfmap_cb(void *pp);
void prun_report_inlining(struct probe_run *w);
void prun_summary(struct probe_run *w, bool listened);
bool prun_has_kind(const struct probe_method *m, enum probe_code_kind k);
void prun_say_unseen(struct probe_run *w, enum probe_mech_kind k, const struct probe_mech *m);
void prun_mech_tests(struct probe_method **ms, size_t n, struct mech_tests *mt);
/* "NAME SIG: mechanism: ..." (named) or "mechanism: ..." into buf. */
void prun_plan(const struct probe_method *m, const struct mech_tests *mt, bool named, char *buf,
	       size_t len);

/* handover.c */
void prun_fmt_ns(double ns, char *buf, size_t len);
double prun_rejit_ns(const struct budget *b, bool args);
void prun_rejit_line(void *vctx, const char *line);
/* Every 100 ms: true when the probe must stop (over the budget, nothing cheaper). */
bool prun_budget_check(struct probe_run *w);
void prun_budget_summary(struct probe_run *w);
int prun_rejit_direct(struct probe_run *w);

#endif
