/* SPDX-License-Identifier: MIT */
/*
 * agent.h - clrtap's side of libclrtap-profiler: choosing the build for the
 * target's libc, placing it inside the target's mount namespace, attaching
 * it (diagnostics IPC AttachProfiler), and reading what it sends over an
 * ordinary EventPipe session. docs/internals/profiler.md.
 *
 * Functions return 0 or a negative errno; causes a user can act on are
 * given as enum agent_cause with agent_cause_text().
 */
#ifndef CLRTAP_AGENT_AGENT_H
#define CLRTAP_AGENT_AGENT_H

#include "common/compat.h"

#include <signal.h>

#include "agent/agent_proto.h"
#include "ipc/ipc.h"
#include "proc/proc.h"

enum agent_libc {
	AGENT_LIBC_UNKNOWN = 0,
	AGENT_LIBC_GLIBC,
	AGENT_LIBC_MUSL,
};
const char *agent_libc_name(enum agent_libc l);
/* "glibc" / "musl" -> value; -EINVAL otherwise. */
int agent_libc_parse(const char *s, enum agent_libc *out);

/*
 * Which C library a process maps, from the text of /proc/PID/maps (len
 * bytes, need not be NUL-terminated): a mapping named ld-musl-* or
 * libc.musl-* (Alpine), or libc.so in a directory ending in -musl (Debian's
 * musl, whose loader links to x86_64-linux-musl/libc.so) means musl;
 * libc.so.6 or ld-linux-* means glibc. Both or neither: AGENT_LIBC_UNKNOWN.
 */
enum agent_libc agent_libc_from_maps(const char *maps, size_t len);
/* Reads /proc/pid/maps (capped at 16 MiB) and applies the above. */
int agent_libc_detect(pid_t pid, enum agent_libc *out);
/* Whether pid maps a file whose name starts with "clrtap-profiler-". */
int agent_library_mapped(pid_t pid, bool *mapped, char *path, size_t pathlen);

/* --- Causes ------------------------------------------------------------ */
enum agent_cause {
	AGENT_OK = 0,
	AGENT_NO_LIBRARY,       /* clrtap's own copy of the library is missing */
	AGENT_NOT_IN_TARGET,    /* the runtime could not find the file in its filesystem */
	AGENT_WRONG_LIBC,       /* the runtime could not load it: wrong C library */
	AGENT_SLOT_TAKEN,       /* another main profiler is loaded */
	AGENT_TOO_OLD,          /* the runtime lacks what the profiler needs */
	AGENT_ALREADY,          /* a clrtap profiler is already active in the process */
	AGENT_PLACE_FAILED,     /* could not write the library into the target's filesystem */
	AGENT_NOT_SUPPORTED,    /* the runtime does not support attach */
	AGENT_REFUSED,          /* another HRESULT */
	AGENT_NO_ANSWER,        /* attached, but no Hello came over EventPipe */
};
const char *agent_cause_name(enum agent_cause c);
/*
 * The cause of a failed AttachProfiler from its HRESULT, given the libc
 * the library was built for, the libc the target maps, and whether the
 * file exists in the target's filesystem.
 */
enum agent_cause agent_cause_from_hresult(int32_t hr, enum agent_libc lib,
					  enum agent_libc target, bool file_exists);
/* One sentence for the user: what happened and what to do. */
void agent_cause_text(enum agent_cause c, int32_t hr, char *buf, size_t len);

/* --- Config (attach client data) --------------------------------------- */
struct agent_config {
	uint32_t heartbeat_ms; /* Status interval */
	uint32_t wait_ms;      /* detach if no CONTROL session within this */
	uint32_t features;     /* PRF_FEAT_* */
};
/* "hb=250;wait=10000;feat=15" into buf; -ENOSPC if it does not fit. */
int agent_config_encode(const struct agent_config *c, char *buf, size_t len, size_t *outlen);
/*
 * Appends ";probe=<spec>" to a config. A spec is Ns.Type::Method or
 * Ns.Type::Method(t1,t2,...) with t from bool char int8 uint8 int16 uint16
 * int32 uint32 int64 uint64 float32 float64 string object; nested types as
 * Outer+Inner. -EINVAL for a malformed spec (or one with ';' or '='),
 * -ENOSPC when the config is full.
 */
int agent_config_add_probe(char *buf, size_t len, size_t *outlen, const char *spec);

/* --- The library ------------------------------------------------------- */
/*
 * clrtap's copy of the library for a libc: $CLRTAP_PROFILER_DIR/<libc>/,
 * else <directory of clrtap>/profiler/<libc>/libclrtap-profiler.so.
 */
int agent_library_host_path(enum agent_libc l, char *out, size_t len);

/*
 * Places the library (host file src) inside the target's filesystem:
 * <t->tmpdir>/clrtap-profiler-<content hash>-<libc>.so, opened through
 * /proc/PID/root without following any symlink the target controls
 * (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS, or an O_NOFOLLOW walk where
 * openat2 is missing), created O_EXCL under a temporary name and renamed
 * into place without replacing. An existing file of that name is reused
 * only if it is a regular file owned by clrtap's user, not writable by
 * others, with the same bytes; it is never overwritten (the runtime may
 * have it mapped). target_path gets the path as the target sees it.
 * -EEXIST: a different file holds the name; -ENOENT: no such directory.
 */
int agent_place(const struct proc_target *t, const char *src, enum agent_libc l,
		char *target_path, size_t len, bool *reused);

/* --- Events ------------------------------------------------------------ */
struct agent_event {
	int id; /* PRF_EV_* */
	uint32_t protocol, mode, features, generation, pid, state, reason;
	uint16_t rt_major, rt_minor, rt_build;
	int32_t hresult;
	uint64_t seq; /* Status: its sequence number; Flushed: the nonce echoed */
	uint64_t written, write_errors, modules, jit, exceptions, threads, module_id;
	uint32_t probe, spec, methods, token; /* ProbeInstalled, ProbeCount */
	uint64_t count;
	uint64_t rejit_errors;                  /* Status (0 from older builds) */
	uint32_t kinds, retkind;                /* Call */
	uint64_t latency_ns, a[PRF_MAX_ARGS], ret, self;
	/* CallStack (decoded as a Call): the managed stack EventPipe took, leaf first */
#define AGENT_STACK_MAX 32
	uint64_t stack[AGENT_STACK_MAX];
	uint32_t nstack;
	char text[1024]; /* Version (Hello, Status), Path (ModuleLoad), spec (ProbeInstalled) */
};
/*
 * Formats a Call event as "(a1, a2, ...) -> ret": integers in decimal,
 * floats in the shortest form that reads back the same, bool true/false,
 * char as 'c', strings double-quoted (from ev->text), null, "?(not
 * recorded: ...)" for values not recorded (structs, classes other than
 * string); for an instance method
 * "this=<this_type>@0x<address>" first (the declared type: the method's
 * class; this_type may be NULL). -ENOSPC if len is short.
 */
int agent_call_format(const struct agent_event *ev, const char *this_type, char *buf,
		      size_t len);
/* The same in two parts: "(a1, a2, ...)" into args, the return value into ret. */
int agent_call_format_split(const struct agent_event *ev, const char *this_type, char *args,
			    size_t alen, char *ret, size_t rlen);

/*
 * Decodes the payload of event id; -EBADMSG when too short or malformed.
 * PRF_EV_CALL_STACK's payload is as the session hands it on:
 * u32 length of the Call payload, the Call payload, then u64 IPs (leaf
 * first, at most AGENT_STACK_MAX); it decodes as a PRF_EV_CALL with stack.
 */
int agent_event_decode(int id, const uint8_t *p, size_t len, struct agent_event *ev);

/* --- Attach and session ----------------------------------------------- */
struct agent_session_opts {
	const struct ipc_endpoint *ep;
	uint64_t keywords;                /* PRF_KW_* */
	const char *arguments;            /* the provider's filter data "k=v;...", or NULL */
	volatile sig_atomic_t *stop;      /* set from a signal handler */
	int64_t duration_ms;              /* stop after this long (0: only on *stop) */
	int64_t first_event_timeout_ms;   /* stop if no event of ours within this (0: never) */
	/* Called for each decoded event; non-zero return stops the session. */
	int (*on_event)(void *ctx, const struct agent_event *ev);
	void *ctx;
	/* Called once the session is open (e.g. to attach now). Non-zero stops. */
	int (*on_open)(void *ctx);
	/*
	 * Before stopping, ask the profiler (protocol >= 2) to write its counts
	 * and a Flushed event (a second, short session whose filter data says
	 * clrtap=flush), and stop only once that Flushed arrived (at most
	 * 3 s): the counts then hold every call made before the stop request.
	 */
	bool flush_before_stop;
	/* the session walks the stack of events that ask for it (CallStack) */
	bool stackwalk;
};
struct agent_session_result {
	uint64_t events;       /* events of ours decoded */
	uint64_t bad_events;   /* events of ours that did not decode */
	uint64_t dropped;      /* events the reader saw lost (sequence gaps) */
	bool target_ended;     /* the stream ended before clrtap stopped it */
	bool timed_out;        /* first_event_timeout_ms passed with nothing */
	int open_error;        /* on_open's return, if non-zero */
	bool flushed;          /* flush_before_stop: the profiler confirmed it */
	uint64_t order_forced; /* events released before their order was known */
};
/*
 * Opens an EventPipe session enabling only the profiler's provider with
 * o->keywords, decodes its events, and stops it (StopTracing) when *stop is
 * set, the duration passes, on_event asks, or the first event is late.
 */
int agent_session_run(const struct agent_session_opts *o, struct agent_session_result *res,
		      struct ipc_error *rerr);

/* The 16 bytes of the class id for a mode (GUID memory layout). */
void agent_clsid(int mode, uint8_t out[16]);

#endif
