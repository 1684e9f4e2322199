/* SPDX-License-Identifier: MIT */
/* natmem_cmd.h - `clrtap agent native-memory`'s part of the agent command (natmem.c). */
#ifndef CLRTAP_CMD_NATMEM_CMD_H
#define CLRTAP_CMD_NATMEM_CMD_H

#include "agent/agent.h"

struct nm_cmd;
/* Turns the perf map on for the run (managed names). */
int nm_cmd_begin(struct nm_cmd **out, const struct proc_target *t, uint64_t interval, int top,
		 bool json);
/* Feeds one profiler event; with stop_now, the next Status reads the live table: returns 1 then. */
int nm_cmd_event(struct nm_cmd *c, const struct agent_event *ev, bool stop_now);
/* After the session (and the detach check): the report; frees c. Returns the exit code. */
int nm_cmd_end(struct nm_cmd *c, bool detached);

#endif
