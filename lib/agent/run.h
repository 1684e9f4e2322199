/* SPDX-License-Identifier: MIT */
/*
 * `clrtap agent run|probe|native-memory|status`'s workflow: the checks
 * before an attach (runtime version, a profiler already there, the C
 * library, placing the library), the profiler's config, the attach inside
 * an EventPipe session, the events kept as a result, and the confirmation
 * of the detach (or of the revert for ReJIT probes). Never prints: the
 * caller renders each event as it comes (on_event) and the result after;
 * agent_run_json / agent_status_json give the JSON. docs/cmd/agent.md.
 */
#ifndef CLRTAP_AGENT_RUN_H
#define CLRTAP_AGENT_RUN_H

#include <time.h>

#include "agent/agent.h"
#include "common/json.h"
#include "natmem/run.h"

/* What a notification-only profiler cannot do (docs/internals/profiler.md). */
#define AGENT_NOTIFICATION_EXCLUDES "ReJIT probes, IL rewriting, GC heap walks (MONITOR_GC)"

/* Moments the caller may want to tell a person about (agent_run.note). */
enum agent_note {
	AGENT_NOTE_PLACED,       /* library chosen: rearm, reused, library, lib_libc set */
	AGENT_NOTE_OPENING,      /* the session opens next */
	AGENT_NOTE_NOTIFICATION, /* the main slot was taken: attaching as a notification profiler */
};

struct agent_run {
	/* in */
	const struct ipc_endpoint *ep;
	const char *mode_opt;       /* auto, main, notification */
	const char *library;        /* path as the target sees it (NULL: place ours) */
	const char *libc_opt;       /* NULL, glibc or musl */
	pid_t pid;
	bool show_modules, args, progress, stack;
	char *const *specs;         /* probe specs (agent probe) */
	int nspecs;
	int64_t duration_ms;
	volatile sig_atomic_t *stop;
	struct natmem_run *nm;      /* native-memory (natmem_run_begin), or NULL */
	uint64_t nm_interval;
	void (*note)(void *ctx, const struct agent_run *r, enum agent_note n);
	/* each event after the run took it in (not the one that ends a native-memory run) */
	void (*on_event)(void *ctx, const struct agent_run *r, const struct agent_event *ev);
	void *ctx;
	/* results */
	char config[PRF_CONFIG_MAX];
	size_t config_len;
	enum agent_libc lib_libc, target_libc;
	bool rearm, reused;
	uint32_t rearm_generation;
	struct {
		bool seen;
		uint32_t methods;
		int32_t hr;
	} installed[PRF_MAX_SPECS];
	struct {
		bool seen;
		uint32_t spec, token;
		uint64_t count;
	} probe[PRF_MAX_PROBES];
	struct timespec t_installed;
	bool any_installed;
	uint64_t calls_seen;
	int mode;
	int32_t hr;
	enum agent_cause cause;
	bool attached, hello;
	struct agent_event hello_ev, last_status;
	bool have_status;
	uint64_t modules;
	struct timespec t_attach, t_nm;
	bool nm_seen;
	struct agent_session_result res;
	bool detached, dormant;
	int64_t detach_ms;
	/* on failure */
	char msg[512];
	int ipc_err;                /* non-zero: the session did not open (rerr says why) */
	struct ipc_error rerr;
	char placed[PROC_PATH_MAX];
};

/* Runs it: EXIT_OK once the session ran and ended, else an exit code with r->msg (or r->ipc_err) set. */
int agent_run_go(struct agent_run *r, const struct proc_target *t);
/*
 * A call event as text: "call SPEC ARGS  N ns" (or probe's "SPEC(ARGS) = RET Nus [ReJIT]"
 * when probe_shape), then its "stack 0x..." line (target text: print through cli_safe).
 */
void agent_call_text(const struct agent_run *r, const struct agent_event *ev, bool probe_shape,
		     struct strbuf *sb);
/* The result of a run (not native-memory) as one JSON object. */
void agent_run_json(const struct agent_run *r, const struct proc_target *t, struct ct_json *j);

/* One Status event asked for (STATUS keyword only: the session's end detaches nothing). */
struct agent_status {
	bool got;
	struct agent_event st;
};
int agent_status_query(const struct ipc_endpoint *ep, int timeout_ms, struct agent_status *s,
		       struct agent_session_result *res, struct ipc_error *rerr, volatile sig_atomic_t *stop);
void agent_status_json(const struct agent_status *s, pid_t pid, bool mapped, const char *mapped_path,
		       uint64_t lost, struct ct_json *j);
/* The same as text (the version and the path are the target's: print through cli_safe). */
void agent_status_text(const struct agent_status *s, bool mapped, const char *mapped_path, struct strbuf *sb);

const char *agent_mode_name(uint32_t m);
void agent_features_text(uint32_t f, char *buf, size_t len);
/* The exit code for a cause (docs/cmd/exit-codes.md). */
int agent_cause_exit(enum agent_cause c);
#endif
