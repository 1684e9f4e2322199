/* SPDX-License-Identifier: MIT */
/*
 * counters.h - live metrics from an EventPipe session: which providers to
 * enable for a list of EventSources (EventCounters) and Meters
 * (System.Diagnostics.Metrics), decoding their events into uniform values,
 * and a table of the latest value of each series.
 *
 * EventSources publish through their own provider with the argument
 * EventCounterIntervalSec=N: one self-describing "EventCounters" event per
 * counter and interval (Mean counters carry the interval's mean, Sum counters
 * the increment over the interval). Meters publish through the single
 * provider System.Diagnostics.Metrics (MetricsEventSource), filtered by the
 * arguments SessionId, Metrics (comma-separated meter names),
 * RefreshInterval, MaxTimeSeries and MaxHistograms; numbers come as strings.
 * Facts as observed on runtime 10.0: docs/cmd/counters.md.
 */
#ifndef CLRTAP_COUNTERS_COUNTERS_H
#define CLRTAP_COUNTERS_COUNTERS_H

#include "common/compat.h"

#include <signal.h>
#include "common/json.h"
#include "common/strbuf.h"
#include "ipc/ipc.h"
#include "nettrace/nettrace.h"
#include "task/task.h"

#define COUNTERS_MAX_SOURCES 64     /* sources in one spec */
#define COUNTERS_MAX_NAMES 256      /* names listed for one source */
#define COUNTERS_MAX_NAME_LEN 256   /* bytes of a source or counter name */
#define COUNTERS_MAX_SERIES 4096    /* series kept by a table */
#define COUNTERS_MAX_STRING 4096    /* bytes of one string read from an event */
#define COUNTERS_MAX_QUANTILES 32   /* quantiles in one histogram event */
#define COUNTERS_METRICS_PROVIDER "System.Diagnostics.Metrics"

/* ------------------------------------------------------------------------ */
/* What to listen to                                                         */

struct counters_source {
	char *name;    /* provider (EventSource) or meter name */
	bool meter;    /* a Meter, read through System.Diagnostics.Metrics */
	char **names;  /* counters/instruments to keep; none: all */
	size_t nnames;
};

struct counters_spec {
	struct counters_source *v;
	size_t n;
};

/*
 * Adds the sources of text to s: "Source[,Source2[name1,name2]]", i.e.
 * comma-separated source names, each optionally followed by a bracketed,
 * comma-separated list of counter names. meter says which kind they are.
 * A source given twice is merged (its name lists are joined; a source
 * given once without a list keeps all names). Returns 0, -EINVAL (syntax:
 * empty name, unbalanced bracket, a control character or one of ,[];="\ in
 * a name, leading or trailing blanks), -E2BIG (over the caps) or -ENOMEM.
 */
int counters_spec_add(struct counters_spec *s, const char *text, bool meter);
void counters_spec_release(struct counters_spec *s);
/* True when the spec keeps counter name of source (kind meter). */
bool counters_spec_wants(const struct counters_spec *s, bool meter, const char *source,
			 const char *name);

/* The providers of a session. */
struct counters_session {
	struct ipc_provider *providers;
	size_t nproviders;
	char session_id[40]; /* the Metrics SessionId (a random GUID), "" without meters */
	struct strbuf args;  /* owns the argument strings */
};

/*
 * Fills out with one provider per EventSource (keywords 0, level 4,
 * EventCounterIntervalSec=interval_sec) and, when the spec names Meters,
 * System.Diagnostics.Metrics (keywords 0x2 TimeSeriesValues, level 4,
 * SessionId, Metrics, RefreshInterval, MaxTimeSeries, MaxHistograms).
 * interval_sec must be 1..86400. Release with counters_session_release.
 */
int counters_session_init(struct counters_session *out, const struct counters_spec *s,
			  unsigned interval_sec, unsigned max_time_series, unsigned max_histograms);
void counters_session_release(struct counters_session *cs);

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

enum counters_kind {
	COUNTERS_MEAN,     /* EventCounter/PollingCounter: mean over the interval */
	COUNTERS_DELTA,    /* Sum counter / Meter Counter: increase over the interval */
	COUNTERS_GAUGE,    /* Meter UpDownCounter, Gauge: the current value */
	COUNTERS_QUANTILE, /* Meter Histogram: one quantile (tags end in Percentile=P) */
};

/* Short lowercase name: "mean", "delta", "gauge", "quantile". */
const char *counters_kind_name(enum counters_kind k);

struct counters_value {
	bool meter;
	const char *source;       /* provider or meter name */
	const char *name;         /* counter or instrument name */
	const char *display_name; /* EventCounters' DisplayName; "" for meters */
	const char *units;        /* DisplayUnits / the instrument's unit; may be "" */
	const char *tags;         /* meters: "k=v,k2=v2" (may be ""); "" for EventCounters */
	enum counters_kind kind;
	double value;
	double interval_sec; /* the interval the value covers; 0 when unknown */
	int64_t timestamp;   /* the event's (nettrace clock) */
};

struct counters_decoder;

/* Receives each value (a histogram gives one per quantile) and messages the
 * publisher sends about the session (errors, limits reached). Return non-zero
 * to stop: counters_decode returns that value. */
struct counters_handlers {
	int (*value)(void *ctx, const struct counters_value *v);
	int (*notice)(void *ctx, const char *msg);
};

/*
 * A decoder for one session: session_id is the Metrics SessionId to accept
 * ("" or NULL: accept any). Free with counters_decoder_free.
 */
int counters_decoder_new(struct counters_decoder **out, const char *session_id);
void counters_decoder_free(struct counters_decoder *d);

/*
 * Decodes one event. Returns the number of values delivered (0 for an event
 * that carries none: another provider, a meter's bookkeeping event, another
 * session's event), a handler's non-zero return, or -EBADMSG (a counter
 * event whose payload does not match its fields or whose numbers do not
 * parse; the caller may skip it).
 */
int counters_decode(struct counters_decoder *d, const struct nt_event *ev,
		    const struct counters_handlers *h, void *ctx);

/* Parses a number as MetricsEventSource formats it (invariant culture:
 * "12", "-0.5", "1.5E-05", "NaN", "Infinity", "∞"). Returns 0 or -EINVAL. */
int counters_parse_double(const char *s, double *out);

/* ------------------------------------------------------------------------ */
/* Latest value per series                                                   */

struct counters_series {
	bool meter;
	char *source, *name, *display_name, *units, *tags;
	enum counters_kind kind;
	double value;
	double interval_sec;
	int64_t timestamp;
	uint64_t updates;
};

struct counters_table {
	struct counters_series *v; /* sorted: EventSources then meters, by source, name, tags */
	size_t n, cap;
};

/* Records v (a new series or a new value of a known one). -E2BIG past
 * COUNTERS_MAX_SERIES, -ENOMEM. */
int counters_table_update(struct counters_table *t, const struct counters_value *v);
void counters_table_release(struct counters_table *t);

/* ------------------------------------------------------------------------ */
/* The JSON document of `counters collect --format json` (and serve)          */

/* Wall-clock time of the trace's timestamps, from its header. */
struct counters_clock {
	bool have;
	int64_t sync_epoch; /* seconds */
	int sync_ms;
	int64_t sync_qpc, qpc_freq;
};
/* Takes the clock from the trace header (once; a header without a frequency is ignored). */
void counters_clock_set(struct counters_clock *c, const struct nt_trace_info *ti);
/* "2026-11-24T18:13:38.123Z", or "?" before the clock is known. */
void counters_clock_format(const struct counters_clock *c, int64_t ts, char *buf, size_t len);
/*
 * One element of the document's "values": timestamp, source, type, name,
 * display_name, tags, kind, value (null when not a number), units,
 * interval_sec. The document is {"pid":N,"interval_sec":N,"values":[...]}.
 */
void counters_json_value(struct ct_json *j, const struct counters_value *v, const char *ts);

/* ------------------------------------------------------------------------ */
/* THE counters session (run.c): CLI, serve (the counters task) and watch    */

struct counters_run_opts {
	const struct counters_spec *spec;
	unsigned interval;          /* seconds */
	unsigned max_ts, max_hist;  /* meters' limits (0: 1000 and 20) */
	int64_t duration_ms;        /* 0: until *stop */
	volatile sig_atomic_t *stop; /* may be NULL with a duration; the session sets it too */
	/* each wanted value (interval filled, ts the wall-clock time): < 0 ends the
	 * session with that error, > 0 leaves the value out (not counted) */
	int (*value)(void *ctx, const struct counters_value *v, const char *ts);
	void (*idle)(void *ctx);    /* nothing waiting in the stream (redraw a display) */
	void *ctx;
};

struct counters_run_result {
	int err;              /* 0 or the negative errno it ended with */
	int exit_code;        /* enum exit_code for err (EXIT_PARTIAL: the target went away) */
	char message[600];    /* one line when err != 0 */
	uint64_t nvalues;     /* values the sink took */
	bool nothing_read;    /* the session gave nothing at all */
	bool target_ended;    /* the target ended the session */
};

/* Runs one session on ep; a value callback's error ends it (res->err is then that error). */
int counters_run(const struct ipc_endpoint *ep, const struct counters_run_opts *o, struct counters_run_result *res);

/* The counters task (task.c; lib/task/table.c lists it). */
extern const struct task_param counters_task_params[];
extern const size_t counters_task_nparams;
int task_run_counters(const struct task_args *a, const struct task_ctx *ctx, struct task_result *r);

/* format.c: a value and its units as shown on screen (table: thousands separators; times rescaled below 1). */
void counters_fmt_display(double v, const char *units, enum counters_kind kind, double interval,
			  bool table, char *num, size_t nlen, char *ubuf, size_t ulen);
/* Exact text for files: enough digits to round-trip ("null" for NaN and infinities). */
void counters_fmt_exact(double v, char *buf, size_t len);
/* "name[tags]", or "name". */
void counters_series_label(const char *name, const char *tags, char *buf, size_t len);

#endif
