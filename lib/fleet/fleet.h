/* SPDX-License-Identifier: MIT */
/*
 * fleet.h - `clrtap fleet`: continuous CPU profiling of every .NET process
 * on the node, one window (default 10 s) per process after another, pushed
 * to Grafana Pyroscope (/ingest, pprof), an OpenTelemetry Collector (OTLP
 * profiles over HTTP/protobuf, v1development as of opentelemetry-proto
 * v1.11.0) and/or gzipped pprof files in a directory (rotation, size cap).
 *
 * Sampling (lib/profile: perf_event, EventPipe where perf is denied) runs on
 * the calling thread and never waits on the network: each exporter has its
 * own bounded queue and thread; a full queue drops its oldest window and
 * counts it. HTTP goes through libcurl, loaded with dlopen when fleet starts.
 * Health is on a Prometheus /metrics endpoint (libmicrohttpd, as serve).
 */
#ifndef CLRTAP_FLEET_FLEET_H
#define CLRTAP_FLEET_FLEET_H

#include "common/compat.h"
#include "common/strbuf.h"

#include <signal.h>

#include "profile/profile.h"

/* ---- labels (labels.c): OpenTelemetry resource attributes of a target ---- */

#define FLEET_LABEL_MAX 128 /* bytes of one value, after cleaning */

struct fleet_labels {
	char service[FLEET_LABEL_MAX + 1];   /* service.name: OTEL_SERVICE_NAME, else the entry
					      * assembly, else the command name */
	char service_src[16];                /* "env", "assembly" or "comm" */
	pid_t pid;                           /* process.pid, as the host sees it */
	char host[FLEET_LABEL_MAX + 1];      /* host.name */
	char container[65];                  /* container.id ("" none) */
	char pod_uid[37];                    /* k8s.pod.uid ("" none) */
	char pod_name[FLEET_LABEL_MAX + 1];  /* k8s.pod.name from the target's env ("" none) */
	char namespace[FLEET_LABEL_MAX + 1]; /* k8s.namespace.name from its env ("" none) */
	char runtime[FLEET_LABEL_MAX + 1];   /* process.runtime.version ("" unknown) */
};

/*
 * Cleans an untrusted string into out (cap bytes with the NUL): bytes outside
 * [A-Za-z0-9._:/@+-] become '_', at most FLEET_LABEL_MAX bytes are kept. So a
 * value can end neither a Pyroscope label ("," "}" "=" "{" quotes) nor a line.
 */
void fleet_label_clean(const char *in, size_t len, char *out, size_t cap);

/*
 * The labels of pid: environment (/proc/PID/environ: OTEL_SERVICE_NAME,
 * K8S_POD_NAME or POD_NAME, K8S_NAMESPACE or POD_NAMESPACE), cgroup
 * (container id, pod uid), the runtime's ProcessInfo (entry assembly,
 * runtime version) when t is a .NET target. host may be NULL (uname).
 */
int fleet_labels_read(pid_t pid, const struct proc_target *t, const char *host, int timeout_ms,
		      struct fleet_labels *l);

/* Pyroscope's name query value: service{service_name=..,process_pid=..,...}. */
int fleet_pyroscope_name(const struct fleet_labels *l, struct strbuf *out);
/* URL query escaping (RFC 3986 unreserved kept). */
int fleet_url_escape(const char *s, struct strbuf *out);

/* ---- options and counters ---- */

#define FLEET_MAX_HEADERS 8

struct fleet_opts {
	int window_ms;             /* default 10000 */
	unsigned hz;               /* perf_event samples per second per thread (default 19) */
	enum profile_engine engine;
	unsigned types;            /* profile types besides CPU: PROFILE_EP_EV_* (an EventPipe
				    * session per process for them) */
	int timeout_ms;            /* IPC timeout */
	int scan_ms;               /* discovery period (default 2000) */
	const pid_t *only;         /* when set: only these pids (nonly of them) */
	size_t nonly;
	const char *host_name;     /* host.name (default: uname's nodename) */
	const char *env_name;      /* when set: only processes whose environment at start has
				    * this variable (equal to env_value when that is set) */
	const char *env_value;

	const char *pyroscope_url; /* base URL: POST <url>/ingest */
	const char *otlp_url;      /* base URL: POST <url>/v1development/profiles */
	const char *dir;           /* gzipped pprof files */
	uint64_t dir_max_bytes;    /* cap of the directory's clrtap-*.pb.gz (default 256 MiB) */
	const char *tenant;        /* X-Scope-OrgID */
	const char *bearer;        /* Authorization: Bearer */
	const char *basic;         /* user:password */
	const char *headers[FLEET_MAX_HEADERS]; /* "Name: value" */
	size_t nheaders;
	const char *cacert;        /* a CA bundle instead of the system's */
	int http_timeout_ms;       /* per push (default 10000) */
	int retry_max_ms;          /* cap of the backoff (default 30000) */
	size_t queue_max;          /* windows held per exporter (default 256) */
	size_t queue_max_bytes;    /* bytes held per exporter (default 16 MiB) */
	int flush_ms;              /* at stop: time left to push what is queued (default 3000) */
	const char *spool_dir;     /* windows the memory queue cannot hold go to DIR/<exporter> */
	uint64_t spool_max_bytes;  /* cap of the spool (default 64 MiB), shared by the exporters */
	bool otlp_gzip;            /* Content-Encoding: gzip on OTLP pushes */

	const char *metrics_addr;  /* IP address for /metrics (NULL: none) */
	unsigned metrics_port;

	int64_t duration_ms;       /* stop after (0: at *stop only) */
	const char *version;       /* clrtap's, for the OTLP scope */
	const volatile sig_atomic_t *stop;
};

enum fleet_exp_kind { FLEET_EXP_PYROSCOPE = 0, FLEET_EXP_OTLP, FLEET_EXP_DIR, FLEET_EXP_N };
const char *fleet_exp_name(enum fleet_exp_kind k);
/* "alloc", "exceptions", "lock" for PROFILE_EP_EV_* bit i (NULL past them) */
const char *fleet_type_name(int i);
/* Parses "cpu,alloc,exceptions,lock" (cpu always on) into PROFILE_EP_EV_* bits. */
int fleet_types_parse(const char *s, unsigned *types);

/* ---- exporters (export.c) ---- */

struct fleet_item {
	struct fleet_item *next;
	char *body;        /* the bytes to send / write */
	size_t len;
	char *name;        /* Pyroscope: the escaped name query value */
	const char *type;  /* the profile type: "cpu", "alloc", "exceptions", "lock" (static) */
	int64_t from_s, until_s;
	int64_t from_ms;
	pid_t pid;
	unsigned hz;
	bool gzip;         /* OTLP: body is gzipped */
	char *spool_name;  /* taken from the spool: its file (removed once pushed) */
};

struct fleet_exp_stats {
	uint64_t sent, failed, dropped, bytes, retries;
	size_t depth, depth_bytes;
	uint64_t spooled;        /* windows written to the spool */
	size_t spool_depth;      /* spool files waiting */
	uint64_t spool_bytes;
	bool spool_on;
	bool configured;
};

struct fleet_exporters;
int fleet_exporters_start(struct fleet_exporters **out, const struct fleet_opts *o, char *why,
			  size_t wlen);
bool fleet_exporter_on(const struct fleet_exporters *e, enum fleet_exp_kind k);
/* Takes it (never blocks on the network; a full queue drops its oldest). */
void fleet_exporter_put(struct fleet_exporters *e, enum fleet_exp_kind k, struct fleet_item *it);
void fleet_exporter_stats(struct fleet_exporters *e, enum fleet_exp_kind k,
			  struct fleet_exp_stats *st);
/* Pushes what is queued for at most flush_ms, drops the rest (counted), joins. */
void fleet_exporters_stop(struct fleet_exporters *e, int flush_ms);
void fleet_exporters_free(struct fleet_exporters *e);
void fleet_item_free(struct fleet_item *it);

/* libcurl, loaded on demand (curl.c) */
int fleet_curl_load(char *why, size_t len);

/* ---- the run (run.c) ---- */

struct fleet_stats {
	uint64_t procs_seen, procs_active, procs_failed, windows, samples, empty_windows;
	uint64_t encode_errors;
	uint64_t events[PROFILE_EP_EV_N];         /* allocation ticks, exceptions, lock waits seen */
	uint64_t events_dropped[PROFILE_EP_EV_N]; /* of which not in a profile (caps, no stack) */
	uint64_t types_failed;                    /* processes whose event session did not start */
	uint64_t event_sessions;                  /* processes whose event session runs */
	uint64_t inaccessible; /* processes the last scan could not inspect (-EACCES: not
				* ours; whether they are .NET is unknown) */
};

/*
 * Runs until *o->stop: finds .NET processes, profiles each window by window,
 * hands windows to the exporters; at stop the last (partial) windows go out
 * within flush_ms; sum (may be NULL) then says what was sent and dropped. Returns 0 or a negative errno (why says what) for a
 * start-up failure (no exporter could start, /metrics could not listen).
 */
struct fleet_summary {
	struct fleet_stats st;
	struct fleet_exp_stats ex[FLEET_EXP_N]; /* after the stop: nothing queued */
};
int fleet_run(const struct fleet_opts *o, struct fleet_summary *sum, char *why, size_t wlen);

#endif
