/* SPDX-License-Identifier: MIT */
/*
 * perfmap.h - the target's perf map for the length of one clrtap command
 * (profile, top, probe): on through IPC if it was off, back off afterwards,
 * also when clrtap is killed (SIGKILL included), and never switched off
 * under another clrtap that still uses it.
 *
 * Every user holds a lease: a shared flock on /run/clrtap/perfmap-PID-STARTTIME
 * (host-side state, root-owned; $XDG_RUNTIME_DIR/clrtap for other users). The
 * file says whether a clrtap turned the map on, and whether the map file
 * existed then. The last holder to leave turns the map off and removes a map
 * file clrtap created. A watcher process (a fork holding the same lease)
 * does that if clrtap dies first.
 */
#ifndef CLRTAP_PERFMAP_PERFMAP_H
#define CLRTAP_PERFMAP_PERFMAP_H

#include "common/compat.h"
#include "ipc/ipc.h"
#include "proc/proc.h"

struct perfmap_use {
	bool was_on;           /* on before any clrtap: left alone */
	bool turned_on;        /* this command turned it on */
	bool shared;           /* another clrtap had turned it on: its lease is shared */
	bool file_existed;     /* the map file existed before clrtap turned it on */
	char map_path[PROC_PATH_MAX]; /* host view: for messages only */
	char map_tpath[PROC_PATH_MAX]; /* as the target sees it (removed through lib/proc) */
	char sock[PROC_PATH_MAX];      /* as the target sees it */
	pid_t pid, nspid;              /* the target: the socket's peer is checked */
	char lease_path[PROC_PATH_MAX];
	int timeout_ms;
	int lease_fd;          /* shared flock held for the command (-1: none) */
	pid_t guard;           /* watcher that restores the setting if clrtap dies */
	int guard_fd;
	/* the target's root directory, opened at begin: the map file a clrtap
	 * caused is removed through it even after the target is gone */
	int rootfd;
	int runtime_major;     /* the target's runtime when this command turned the map on (0: unknown) */
	/* jitdump is on too (a clrtap turned it on with the map: .NET 11+, which
	 * buffers its map but writes jitdump at once); read it at jitdump_tpath */
	bool jitdump;
	bool jitdump_made;     /* and the jitdump file is clrtap's: removed at the end */
	char jitdump_path[PROC_PATH_MAX];  /* host view: for messages only */
	char jitdump_tpath[PROC_PATH_MAX]; /* as the target sees it */
};

/*
 * Takes a lease on the target's perf map; turns the map on when no one had
 * (perf map only; with jitdump on .NET 11+, u->jitdump), and starts the
 * watcher. Call before opening perf
 * events. Returns 0, or the IPC error (*rerr filled); u->map_path is valid
 * either way. u must be passed to perfmap_use_end.
 */
int perfmap_use_begin(struct perfmap_use *u, const struct proc_target *t, int timeout_ms,
		      struct ipc_error *rerr);
/*
 * Gives the lease back; the last holder turns the map off and removes the
 * map file clrtap created. Stops the watcher.
 */
int perfmap_use_end(struct perfmap_use *u, struct ipc_error *rerr);
/*
 * The same, waiting at most wait_ms: the watcher process does the ending
 * (a busy target's diagnostics thread can take seconds to answer). Returns
 * 0 when it finished in time, 1 when it goes on after this process exits.
 */
int perfmap_use_end_within(struct perfmap_use *u, int wait_ms, struct ipc_error *rerr);
/*
 * Makes the map file whole for a last read. .NET 11 buffers its perf map and
 * writes it out only when the map is turned off (.NET 8 to 10 write each line
 * as code is published). When this command turned the map on, on a runtime
 * that buffers it, and no other clrtap shares it, the map is turned off now
 * (perfmap_use_end then only removes the file). Returns 1 when turned off, 0
 * when there is nothing to do or the map is not this command's alone to turn
 * off (on before clrtap, or shared: the runtime's buffered lines stay
 * unread), or the IPC error.
 */
int perfmap_use_flush(struct perfmap_use *u, struct ipc_error *rerr);
/*
 * The same for a command that goes on reading the map: when a clrtap turned
 * it on (this one or one sharing the lease), turns it off, calls
 * read(ctx) on the whole file, and turns it back on (the runtime then writes
 * the map anew, starting with the code that exists). Under the lease's mutex.
 * Returns 1 when done, 0 when the map was on before any clrtap (left alone),
 * or the IPC error.
 */
int perfmap_use_reread(struct perfmap_use *u, void (*read)(void *ctx), void *ctx,
		       struct ipc_error *rerr);
/*
 * The major version of the target's runtime: t->runtime_major when the
 * target's resolution asked it, else ProcessInfo2's ("11.0.0+..."); 0 when
 * it does not say. PERFMAP_BUFFERED_MAJOR is the first that buffers its
 * perf map.
 */
#define PERFMAP_BUFFERED_MAJOR 11
int perfmap_runtime_major(const struct proc_target *t, int timeout_ms);
/* Marks u unused (before a begin that may not run). */
void perfmap_use_init(struct perfmap_use *u);

#endif
