/* SPDX-License-Identifier: MIT */
/*
 * `clrtap agent native-memory`'s session glue: the natmem tables read while
 * the agent session runs (lib/agent/run.c feeds its events), the perf map on
 * for the run (managed names), and what the report needs after the detach.
 * Never prints: src/cmd/agent.c renders the text, natmem_run_json the JSON.
 */
#ifndef CLRTAP_NATMEM_RUN_H
#define CLRTAP_NATMEM_RUN_H

#include "agent/agent.h"
#include "common/json.h"
#include "natmem/natmem.h"
#include "perfmap/perfmap.h"
#include "proc/proc.h"
#include "sym/sym.h"

struct natmem_run {
	struct natmem m;
	bool open, final;
	int open_err;
	struct perfmap_use pm;
	bool pm_on;
	const struct proc_target *t;
	uint32_t slots, modules;
	int32_t install_err;
	/* natmem_run_finish */
	bool detached;
	uint32_t restored, hooked, unreadable;
	struct sym_proc *sp;
};

/* Allocates the run and turns the perf map on (for the run). */
int natmem_run_begin(struct natmem_run **out, const struct proc_target *t);
/* One event of the session; returns 1 once the final read is done (stop_now: read it now). */
int natmem_run_event(struct natmem_run *c, const struct agent_event *ev, bool stop_now);
/* True once the hooks said they are in place and their tables opened. */
static inline bool natmem_run_hooked(const struct natmem_run *c) { return c->open && !c->open_err; }
/*
 * After the session: 0 and the symbols opened (GOT slots read back when
 * detached), or -EPROTO with *why set when the live table was never read.
 */
int natmem_run_finish(struct natmem_run *c, bool detached, const char **why);
/* The report as JSON (one object; docs/cmd/agent.md). */
void natmem_run_json(struct natmem_run *c, int top, struct ct_json *j);
/* The report as text (target-controlled names: print through cli_safe). */
void natmem_run_text(struct natmem_run *c, int top, struct strbuf *sb);
/* Closes everything (perf map back off) and frees c; NULL is fine. */
void natmem_run_end(struct natmem_run *c);
#endif
