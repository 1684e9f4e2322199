/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the pieces of lib/serve share (not for other libraries).
 */
#ifndef CLRTAP_SERVE_INTERNAL_H
#define CLRTAP_SERVE_INTERNAL_H

#include "common/compat.h"

#include <pthread.h>
#include <sqlite3.h>

#include "common/exitcode.h"
#include "serve/dl.h"
#include "serve/serve.h"

int64_t srv_now_ms(void);
/* RFC 3339 UTC with milliseconds. */
void srv_time_str(int64_t ms, char *buf, size_t len);

/* ----- history (db.c) ----- */
struct srv_db_end {
	const char *status;     /* done, failed, cancelled */
	int exit_code;
	int err_code;           /* -1: no error object */
	const char *err_message;
};

int srv_db_open(const char *path, sqlite3 **db);
void srv_db_close(sqlite3 *db);
int srv_db_insert(sqlite3 *db, const char *id, const struct serve_session_req *req,
		  const char *process_name, const char *dir, double duration_s, int64_t created_ms);
int srv_db_set_running(sqlite3 *db, const char *id, int64_t started_ms);
int srv_db_set_end(sqlite3 *db, const char *id, const struct srv_db_end *e, int64_t ended_ms);
int srv_db_add_artifact(sqlite3 *db, const char *id, const char *name, uint64_t size,
			bool is_report);
/* Writes the session object; -ENOENT when there is none. */
int srv_db_session_json(sqlite3 *db, const char *id, struct ct_json *j);
int srv_db_list_json(sqlite3 *db, struct ct_json *j);
/* The session's directory if name is one of its artifacts (-ENOENT otherwise). */
int srv_db_artifact_dir(sqlite3 *db, const char *id, const char *name, char *dir, size_t dirlen);
/* The session's report artifact name (-ENOENT: none yet). */
int srv_db_report(sqlite3 *db, const char *id, char *name, size_t namelen, char *dir,
		  size_t dirlen, char *status, size_t statuslen);
/* Sessions a previous server left running: marked failed. */
int srv_db_recover(sqlite3 *db);
/* Keeps at most max sessions younger than max_age_days; fn gets each dropped dir. */
int srv_db_prune(sqlite3 *db, unsigned max, unsigned max_age_days,
		 void (*fn)(const char *dir, void *ctx), void *ctx);
/* Status of a session ("" when unknown). */
int srv_db_status(sqlite3 *db, const char *id, char *status, size_t len);

/* ----- processes (procs.c) ----- */
struct srv_procs;
int srv_procs_new(struct srv_procs **out);
void srv_procs_free(struct srv_procs *pc);
/* {"processes":[...]} of every .NET process. */
int srv_procs_list_json(struct srv_procs *pc, struct ct_json *j);
/* One process object; -ESRCH, -ENOENT (not .NET), -EACCES (t says more: proc_target_strerror). */
struct proc_target;
int srv_procs_info_json(struct srv_procs *pc, pid_t pid, struct ct_json *j, struct proc_target *t);
/* The .NET pids (at most max). */
int srv_procs_pids(pid_t *pids, size_t max, size_t *n);
/* The process's short name (comm), for labels. */
void srv_proc_name(pid_t pid, char *buf, size_t len);
/* {"rows":[...]} : CPU % since the previous call on the same state (the first
 * call: since srv_top_new, which takes a first sample; null only for a process
 * that was not there at the previous sample). */
struct srv_top;
int srv_top_new(struct srv_top **out);
void srv_top_free(struct srv_top *t);
int srv_top_json(struct srv_top *t, struct ct_json *j);

/* ----- counters cache (metrics.c) ----- */
struct srv_metrics;
int srv_metrics_new(struct srv_metrics **out);
void srv_metrics_free(struct srv_metrics *m);
/* Prometheus text for pids (all .NET processes when n_only == 0). */
int srv_metrics_prometheus(struct srv_metrics *m, const pid_t *only, size_t n_only,
			   struct strbuf *out);
/*
 * Counter values of pid updated after *seq (a cursor the caller keeps; start
 * with 0), each as one JSON object line appended to out. -ESRCH when the
 * process is gone, -ENOENT when it is not .NET.
 */
int srv_metrics_updates(struct srv_metrics *m, pid_t pid, uint64_t *seq, double t0,
			struct strbuf *out);

/* ----- sessions (run.c) ----- */
struct srv_runner;
int srv_runner_new(sqlite3 *db, const char *exe, const char *root, unsigned max_running,
		   struct srv_runner **out);
/* Cancels and waits for every running session. */
void srv_runner_free(struct srv_runner *r);
/*
 * Starts a session; id gets its id. On failure *code is the CLI exit code
 * (docs/cmd/exit-codes.md) and why the CLI's message; returns -EINVAL (bad
 * params), -ESRCH, -ENOENT (not .NET), -EACCES, -EBUSY (too many running).
 */
int srv_runner_start(struct srv_runner *r, const struct serve_session_req *req, char *id,
		     int *code, char *why, size_t why_len);
/* Asks a running session to stop and waits (up to ~8 s) for it. -ENOENT: not running. */
int srv_runner_cancel(struct srv_runner *r, const char *id);
/* Whether a session is still running in this server. */
bool srv_runner_active(struct srv_runner *r, const char *id);
/* The directory of a session (root/id). */
void srv_runner_dir(const struct srv_runner *r, const char *id, char *dir, size_t len);
int srv_runner_dirfd(const struct srv_runner *r);

#endif
