/* SPDX-License-Identifier: MIT */
/*
 * ipc.h - client of the .NET diagnostics IPC protocol (docs/formats/ipc.md).
 *
 * Every call takes a struct ipc_endpoint (the socket path and a timeout) and
 * opens its own connection: the runtime serves one command per connection and
 * closes it after an error reply, so version fallbacks (ProcessInfo3 -> 2 -> 1,
 * GenerateCoreDump3 -> 2 -> 1, CollectTracing5 -> ... -> 2) reconnect.
 *
 * Every socket operation has a deadline (endpoint.timeout_ms); every read is
 * capped (a frame is at most 65535 bytes by the protocol; continuations have
 * their own caps below).
 *
 * Return values: 0 or a negative errno:
 *   -ECONNREFUSED / -ENOENT  nobody listens on the socket (stale socket)
 *   -EACCES                  not allowed to connect
 *   -ETIMEDOUT               the runtime did not answer in time
 *   -EPROTO                  the reply is not a valid frame (bad magic, bad
 *                            size, truncated, oversized, trailing garbage)
 *   -EREMOTEIO               the runtime answered with an error; the HRESULT
 *                            (and message, if any) is in struct ipc_error
 *   -EXDEV                   the socket is not the target's: its listener is
 *                            another process (SO_PEERCRED), or ProcessInfo
 *                            names another pid; ipc_error.message names both
 *   -ENOTSOCK / -ELOOP       the path under the target's root is not a socket,
 *                            or is a symbolic link
 */
#ifndef CLRTAP_IPC_IPC_H
#define CLRTAP_IPC_IPC_H

#include "common/compat.h"
#include "common/strbuf.h"

#include <signal.h>

#define IPC_HEADER_SIZE 20
#define IPC_MAX_FRAME 65535
#define IPC_ENV_MAX_BYTES (8u * 1024 * 1024)  /* cap on the environment block */
#define IPC_STRING_MAX_UNITS 32768             /* cap on one string (UTF-16 units) */

enum ipc_command_set {
	IPC_SET_DUMP = 0x01,
	IPC_SET_EVENTPIPE = 0x02,
	IPC_SET_PROFILER = 0x03,
	IPC_SET_PROCESS = 0x04,
	IPC_SET_SERVER = 0xff,
};

enum ipc_hresult {
	IPC_E_BAD_ENCODING = (int32_t)0x80131384,
	IPC_E_UNKNOWN_COMMAND = (int32_t)0x80131385,
	IPC_E_UNKNOWN_MAGIC = (int32_t)0x80131386,
	IPC_E_NOTSUPPORTED = (int32_t)0x80131515,
	IPC_E_FAIL = (int32_t)0x80004005,
	IPC_E_NOT_YET_AVAILABLE = (int32_t)0x8013135B,
	IPC_E_RUNTIME_UNINITIALIZED = (int32_t)0x80131371,
	IPC_E_INVALIDARG = (int32_t)0x80070057,
	IPC_E_INSUFFICIENT_BUFFER = (int32_t)0x8007007A,
	IPC_E_ENVVAR_NOT_FOUND = (int32_t)0x800000CB,
	IPC_E_PROFILER_ALREADY_ACTIVE = (int32_t)0x8013136A,
};

/*
 * Where to connect. With pid set (ipc_endpoint_init does it) path is the
 * socket as the target sees it: it is resolved under /proc/<pid>/root with
 * proc_tpath_open (no link leads out of the container), must be a socket,
 * and the connection is kept only if SO_PEERCRED names pid as the listener;
 * nothing is sent before that. With nspid set as well, ProcessInfo must
 * report nspid. A mismatch is -EXDEV with both pids in ipc_error.message.
 * pid 0: path is used as it is, unchecked (tests, a socket given by hand).
 */
struct ipc_endpoint {
	const char *path;  /* socket path (see above) */
	int timeout_ms;    /* per operation; 0 means the default (5000) */
	pid_t pid;         /* the target as clrtap sees it, or 0 */
	pid_t nspid;       /* the target's pid in its own namespace, or 0 */
};

struct proc_target;
/* An endpoint for a target found by proc_target_find (path points into t). */
void ipc_endpoint_init(struct ipc_endpoint *ep, const struct proc_target *t, int timeout_ms);
/* What the runtime said when it refused a command. */
struct ipc_error {
	int32_t hresult;
	char message[256];  /* GenerateCoreDump3 sends a text; -EXDEV: whose socket it was */
};

struct ipc_header {
	uint16_t size;
	uint8_t set;
	uint8_t id;
};

struct ipc_process_info {
	unsigned version;   /* 1, 2 or 3: which ProcessInfo command answered */
	uint64_t pid;       /* pid in the target's own PID namespace */
	uint8_t cookie[16]; /* runtime instance cookie (GUID bytes) */
	char *cmdline;
	char *os;
	char *arch;
	char *assembly;     /* managed entry point assembly (v2+) */
	char *clr_version;  /* e.g. "10.0.12+<commit>" (v2+) */
	char *rid;          /* portable runtime identifier (v3, if sent) */
};
void ipc_process_info_release(struct ipc_process_info *pi);

/* One NAME=value entry of the environment. */
typedef int (*ipc_env_fn)(const char *entry, void *ctx);

/* Human-readable name of an HRESULT the diagnostics server sends. */
const char *ipc_hresult_name(int32_t hr);
/* A sentence explaining e (including the HRESULT when e == -EREMOTEIO). */
void ipc_strerror(int e, const struct ipc_error *rerr, char *buf, size_t len);

/* --- Process commands --- */
/*
 * Asks ProcessInfo and checks that the peer is the target (see struct
 * ipc_endpoint): 0, -EXDEV (not the target's socket, rerr says why) or the
 * errors of ipc_process_info.
 */
int ipc_peer_verify(const struct ipc_endpoint *ep, struct ipc_error *rerr);
/* The same, keeping the runtime's major version (0 when it does not say). */
int ipc_peer_verify_major(const struct ipc_endpoint *ep, int *major, struct ipc_error *rerr);
/* The major version of pi's runtime ("11.0.0+..." -> 11), or 0 (ProcessInfo v1, unparsable). */
int ipc_runtime_major(const struct ipc_process_info *pi);

int ipc_process_info(const struct ipc_endpoint *ep, struct ipc_process_info *pi,
		     struct ipc_error *rerr);
int ipc_process_env(const struct ipc_endpoint *ep, ipc_env_fn fn, void *ctx,
		    struct ipc_error *rerr);
int ipc_resume_runtime(const struct ipc_endpoint *ep, struct ipc_error *rerr);
int ipc_set_env(const struct ipc_endpoint *ep, const char *name, const char *value,
		struct ipc_error *rerr);

enum ipc_perfmap_type {
	IPC_PERFMAP_DISABLED = 0,
	IPC_PERFMAP_ALL = 1,     /* perf map + jitdump + perfinfo */
	IPC_PERFMAP_JITDUMP = 2,
	IPC_PERFMAP_PERFMAP = 3,
};
int ipc_perfmap_enable(const struct ipc_endpoint *ep, enum ipc_perfmap_type type,
		       struct ipc_error *rerr);
int ipc_perfmap_disable(const struct ipc_endpoint *ep, struct ipc_error *rerr);
int ipc_apply_startup_hook(const struct ipc_endpoint *ep, const char *path,
			   struct ipc_error *rerr);

/* --- Dump --- */
enum ipc_dump_type {
	IPC_DUMP_MINI = 1,
	IPC_DUMP_HEAP = 2,
	IPC_DUMP_TRIAGE = 3,
	IPC_DUMP_FULL = 4,
};
#define IPC_DUMP_LOGGING 0x1u
#define IPC_DUMP_VERBOSE 0x2u
#define IPC_DUMP_CRASHREPORT 0x4u
/* path is as the target sees it. Waits up to ep->timeout_ms for the dump. */
int ipc_dump(const struct ipc_endpoint *ep, const char *path, enum ipc_dump_type type,
	     uint32_t flags, struct ipc_error *rerr);

/* --- EventPipe --- */
struct ipc_provider {
	const char *name;
	uint64_t keywords;
	uint32_t level;        /* 0..5 */
	const char *arguments; /* "k=v;k2=v2" or NULL */
};

struct ipc_trace_config {
	uint32_t buffer_mb;        /* circular buffer; 0 means 256 */
	bool rundown;              /* request rundown at the end */
	uint64_t rundown_keyword;  /* 0 means the default 0x80020139 when rundown */
	bool stackwalk;            /* collect stacks (default on: set true) */
	/*
	 * Ask for the runtime's lossless "Block" buffering (CollectTracing6,
	 * .NET 11+: a full buffer makes the writer wait instead of dropping).
	 * A runtime without it answers UNKNOWN_COMMAND and the session starts
	 * with the lossy circular buffer (ipc_collect_tracing_v says which).
	 */
	bool lossless;
	const struct ipc_provider *providers;
	size_t nproviders;
};

/*
 * Starts a session. On success *fd is the connection that now carries the
 * nettrace stream (the caller reads it, then closes it) and *session the id
 * to pass to ipc_stop_tracing. Tries CollectTracing4, then 3, then 2.
 */
int ipc_collect_tracing(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
			int *fd, uint64_t *session, struct ipc_error *rerr);
/*
 * The same; with cfg->lossless it tries CollectTracing6 (Block) first.
 * *version (may be NULL) is the CollectTracing version the runtime accepted:
 * 6 means the session is lossless.
 */
int ipc_collect_tracing_v(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
			  int *fd, uint64_t *session, unsigned *version, struct ipc_error *rerr);
int ipc_stop_tracing(const struct ipc_endpoint *ep, uint64_t session, struct ipc_error *rerr);
/*
 * StopTracing in two halves, so that the caller can keep draining the
 * session's stream meanwhile (the runtime sends its reply only after it has
 * written the rundown, and blocks while the stream's socket is full).
 * _send connects and sends the request (bounded by ep's timeout) and gives
 * the connection in *fd; _recv reads the reply from it once it is readable.
 */
int ipc_stop_tracing_send(const struct ipc_endpoint *ep, uint64_t session, int *fd);
int ipc_stop_tracing_recv(int fd, int timeout_ms, struct ipc_error *rerr);

/*
 * Parses a provider spec in dotnet-trace's syntax, in place:
 *   Name[:Keywords[:Level[:Arguments]]]
 * Keywords hex with or without 0x ("*" or empty: all), Level 0-5 or a name
 * (Verbose, Informational, ...; default 5), Arguments "k=v;k2=v2".
 * p's strings point into spec.
 */
int ipc_provider_parse(char *spec, struct ipc_provider *p);
/* Named sets of providers (cpu-sampling, gc-verbose, gc-collect, exceptions,
 * contention, jit). rundown_keyword 0 means the default. */
int ipc_profile_lookup(const char *name, const struct ipc_provider **providers, size_t *n,
		       uint64_t *rundown_keyword);
/*
 * A trace's config: the providers of a profile and of a list "SPEC,SPEC,..."
 * (neither: the cpu-sampling profile; at most max, into provs), the buffer,
 * rundown and stacks; checked to fit in one CollectTracing request. The
 * providers point into *specs, a copy of the list: free() it (also on
 * failure). Returns 0, or -ENOMEM, or another negative errno (a usage error)
 * with one line in why.
 */
int ipc_trace_config_build(const char *profile, const char *providers, int buffer_mb, bool rundown, bool stackwalk,
			   struct ipc_trace_config *cfg, struct ipc_provider *provs, size_t max, char **specs,
			   char *why, size_t whylen);
/* The i-th profile's name (NULL past the end) and one-line description. */
const char *ipc_profile_name(size_t i, const char **help);

struct ipc_session_opts {
	/*
	 * Receives the stream's bytes in order, starting with a prologue that
	 * ipc_stream_check_prologue accepted (nothing reaches the sink before);
	 * a non-zero return stops the run.
	 */
	int (*sink)(void *ctx, const void *buf, size_t n);
	void (*progress)(void *ctx, uint64_t bytes); /* about twice a second, or NULL */
	void *ctx;
	volatile sig_atomic_t *stop; /* set (from a signal handler) to stop */
	int64_t duration_ms;         /* stop after this long; 0: only on *stop */
	uint64_t max_bytes;          /* pass at most this much to the sink; 0: no cap */
};

struct ipc_session_result {
	uint64_t session;
	uint64_t bytes;      /* bytes passed to the sink */
	uint64_t dropped;    /* bytes received past max_bytes (not passed on) */
	uint8_t last_byte;
	bool stopped;       /* clrtap sent StopTracing */
	int stop_error;     /* what StopTracing returned, if it failed */
	bool target_ended;  /* the stream ended before clrtap stopped it */
	bool complete;      /* the stream ended with its end-of-stream tag */
	bool capped;        /* max_bytes was reached (the run returns -EFBIG) */
	bool bad_prologue;  /* the stream did not start as a nettrace stream (-EBADMSG) */
	int64_t stop_ms;    /* from StopTracing to the end of the stream */
	unsigned version;   /* the CollectTracing version accepted (6: lossless Block buffering) */
};

/*
 * Runs one EventPipe session: starts it, feeds the nettrace stream to
 * o->sink, sends StopTracing on a second connection when *o->stop is set or
 * the duration is over, and returns after the runtime closes the stream
 * (rundown included). The stream is drained all along, the stop included.
 *
 * Time budget (ep->timeout_ms, default 5000): starting the session, the
 * stream's prologue (it must arrive within the timeout), and the stop: the
 * stream must end (rundown included) within timeout_ms of StopTracing.
 * Otherwise -ETIMEDOUT. A target that stalls or floods thus costs at most the
 * duration plus two timeouts (starting the session, and the stop).
 * -EBADMSG: the stream is not a nettrace stream (nothing reached the sink).
 * -EFBIG: max_bytes was reached; the session was stopped.
 */
int ipc_session_run(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
		    const struct ipc_session_opts *o, struct ipc_session_result *res,
		    struct ipc_error *rerr);

/* A sentence for a session that failed with err (ipc_session_run's return). */
void ipc_session_strerror(int err, const struct ipc_session_result *res,
			  const struct ipc_endpoint *ep, const struct ipc_error *rerr, char *buf,
			  size_t len);

/*
 * Checks the start of a nettrace stream: "Nettrace", then either the V5
 * serialization header (u32 20, "!FastSerialization.1") or the V6 one (u32 0,
 * u32 major 6, u32 minor). Returns 0 when the first *need bytes are a valid
 * prologue, -EAGAIN when more bytes are needed (*need says how many in all),
 * -EBADMSG when they cannot be the start of a nettrace stream.
 */
int ipc_stream_check_prologue(const uint8_t *p, size_t len, size_t *need);
#define IPC_PROLOGUE_MAX 32

/* --- Profiler --- */
int ipc_attach_profiler(const struct ipc_endpoint *ep, uint32_t timeout_s,
			const uint8_t clsid[16], const char *path, const void *data,
			uint32_t datalen, struct ipc_error *rerr);
int ipc_startup_profiler(const struct ipc_endpoint *ep, const uint8_t clsid[16],
			 const char *path, struct ipc_error *rerr);

/* --- Encoding and decoding (pure functions: unit-tested and fuzzed) --- */
/* Appends a header for set/id with payload_len bytes to follow. */
int ipc_encode_header(struct strbuf *out, uint8_t set, uint8_t id, size_t payload_len);
/* Appends a protocol string (u32 unit count incl. NUL, UTF-16LE); NULL -> count 0. */
int ipc_encode_string(struct strbuf *out, const char *s);
int ipc_encode_u32(struct strbuf *out, uint32_t v);
int ipc_encode_u64(struct strbuf *out, uint64_t v);
/* Builds the whole CollectTracing<version> message (version 2..6; 6 carries cfg->lossless). */
int ipc_encode_collect_tracing(struct strbuf *out, unsigned version,
			       const struct ipc_trace_config *cfg);
/* Parses a 20-byte header: checks magic and size >= 20. */
int ipc_parse_header(const uint8_t *buf, size_t len, struct ipc_header *h);
/*
 * Decodes a ProcessInfo (version 1), ProcessInfo2 (2) or ProcessInfo3 (3)
 * payload. On success the strings in pi are owned by pi
 * (ipc_process_info_release).
 */
int ipc_parse_process_info(const uint8_t *p, size_t len, unsigned version,
			   struct ipc_process_info *pi);
/* Decodes the environment continuation block: u32 count, then strings. */
int ipc_parse_env_block(const uint8_t *p, size_t len, ipc_env_fn fn, void *ctx);
/* Decodes an error payload: i32 HRESULT, optional string. */
int ipc_parse_error(const uint8_t *p, size_t len, struct ipc_error *rerr);

#endif
