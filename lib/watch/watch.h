/* SPDX-License-Identifier: MIT */
/*
 * watch.h - rules for `clrtap watch`: parsing (rules are outside input: they
 * come from a command line or a script), when a rule fires (a condition held
 * for a time, a cooldown, a count) and the actions run when one does.
 *
 * Rule grammar (docs/cmd/watch.md):
 *   rule    := trigger [ "for" DUR ] { "cooldown" DUR | "count" N }
 *   trigger := "cpu" OP PERCENT | "rss" OP SIZE
 *            | SOURCE "/" COUNTER OP NUMBER [UNIT]
 *            | "meter" METER "/" INSTRUMENT OP NUMBER [UNIT]
 *            | "threadpool-queue" OP NUMBER | "exception-rate" OP NUMBER
 *            | "cgroup-memory" OP PERCENT
 *            | "exception" (TYPE | "*") [ "message" TEXT ] | "exit" | "crash"
 *            | "gc-pause" ">" DUR
 *            | "request" ">" DUR [ "path" PREFIX ] [ "times" N "in" DUR ]
 *            | "status" CLASS [ "path" PREFIX ] [ "times" N "in" DUR ]
 *            | "request-rate" OP NUMBER
 *            | "memory-growth" KIND OP SIZE "/s"
 *   OP      := ">" | "<"
 *   modifiers: "for" DUR, "cooldown" DUR, "count" N, "do" ACTION (repeatable)
 * Tokens are separated by blanks; an operator also ends a token; "..." is
 * one token with its blanks (no escapes).
 */
#ifndef CLRTAP_WATCH_WATCH_H
#define CLRTAP_WATCH_WATCH_H

#include "common/compat.h"

#define WATCH_MAX_TEXT 512  /* bytes of one rule or action */
#define WATCH_MAX_NAME 256  /* bytes of a counter source, counter or type name */
#define WATCH_MAX_MS (30LL * 86400 * 1000) /* longest duration: 30 days */
#define WATCH_DEFAULT_COOLDOWN_MS 60000 /* a rule without "cooldown": at most one firing a minute */
#define WATCH_RULE_ACTIONS 4 /* "do ACTION" per rule */
#define WATCH_WINDOW_MAX 10000 /* "times N": N at most */

enum watch_kind {
	WATCH_CPU,       /* percent of one core, from /proc/PID/stat */
	WATCH_RSS,       /* bytes, from /proc/PID/statm */
	WATCH_COUNTER,   /* an EventCounter of SOURCE */
	WATCH_EXCEPTION, /* a first-chance exception whose type is name */
	WATCH_EXIT,      /* the process is gone */
	WATCH_GC_PAUSE,  /* a GC suspension (SuspendEEBegin..RestartEEEnd), ms */
	WATCH_CGROUP_MEM, /* memory.current of the target's cgroup v2, % of its limit */
	WATCH_CRASH,     /* the process was killed by a signal other than SIGTERM, SIGINT, SIGHUP */
	WATCH_REQUEST,   /* an ASP.NET Core request slower than threshold ms */
	WATCH_STATUS,    /* an ASP.NET Core response whose status is in status_lo..status_hi */
	WATCH_MEM_GROWTH, /* growth of a kind of resident memory (name), bytes/s, from smaps */
};

enum watch_action_kind {
	WATCH_ACT_PROFILE,
	WATCH_ACT_STACKS,
	WATCH_ACT_TRACE,
	WATCH_ACT_DUMP,
	WATCH_ACT_GCDUMP,
	WATCH_ACT_EXEC,
	WATCH_ACT_ANALYZE,
};

struct watch_action {
	enum watch_action_kind kind;
	int64_t duration_ms; /* profile, trace: how long (":DUR"); 0: the default */
	char cmd[WATCH_MAX_TEXT]; /* exec: the shell command; analyze: the analyzer */
};

struct watch_rule {
	enum watch_kind kind;
	bool above;          /* ">" (else "<") */
	double threshold;    /* cpu: percent; rss: bytes; counter: see unit_bytes; gc-pause: ms */
	bool unit_bytes;     /* counter threshold had a size unit: compare in bytes */
	bool meter;          /* counter: a System.Diagnostics.Metrics instrument (source: the Meter) */
	int64_t for_ms;      /* how long the condition must hold (0: at once) */
	int64_t cooldown_ms; /* no second firing within this time of the last */
	bool cooldown_default; /* no "cooldown" given: WATCH_DEFAULT_COOLDOWN_MS */
	unsigned count;      /* firings at most (0: no limit) */
	/* request, status: */
	int status_lo, status_hi;     /* status: the class ("5xx": 500..599) or one code */
	unsigned win_n;               /* "times N in DUR": N matching requests ... */
	int64_t win_ms;               /* ... within this long (0: each one fires) */
	char path[WATCH_MAX_NAME];    /* "path PREFIX": only requests whose path starts so */
	/* "do ACTION": this rule's own actions (none: the command line's --action) */
	struct watch_action actions[WATCH_RULE_ACTIONS];
	size_t nactions;
	char source[WATCH_MAX_NAME]; /* counter: the EventSource */
	char name[WATCH_MAX_NAME];   /* counter: its name; exception: the type ("*": any); memory-growth: the kind */
	char message[WATCH_MAX_NAME]; /* exception: a substring of the message ("" : any) */
};

/* The name of a kind: "cpu", "rss", "counter", "exception", "exit", "gc-pause",
 * "cgroup-memory", "crash", "memory-growth". */
const char *watch_kind_name(enum watch_kind k);

/*
 * Parses text into r. Returns 0, or -EINVAL with a sentence in err (which
 * names the offending token) for anything else: unknown trigger, missing or
 * bad threshold, unit or duration, a word left over, "for" with a trigger
 * that is an instant (exception, exit), text over WATCH_MAX_TEXT bytes or a
 * name over WATCH_MAX_NAME, a control character.
 */
int watch_rule_parse(const char *text, struct watch_rule *r, char *err, size_t errlen);

/* Whether value v meets the rule's threshold (cpu, rss, counter). For a
 * counter, units is what the counter says its values are in ("MB", "B",
 * ...): with a threshold given as a size the value is turned into bytes
 * (the runtime's MB are 10^6 bytes); a counter in other units never meets a
 * size threshold. */
bool watch_rule_test(const struct watch_rule *r, double v, const char *units);

/*
 * Whether an exception rule matches the type a first-chance exception event
 * names: "*", the same name, or, for a rule naming a nested type
 * (Outer+Inner), the innermost name alone, which is all the runtime's
 * ExceptionThrown event carries for a nested type (measured on .NET 10).
 */
bool watch_exception_match(const struct watch_rule *r, const char *type);

/* Per rule and target: where its condition stands and how often it fired. */
struct watch_state {
	bool holding;       /* the condition is true since since_ms */
	int64_t since_ms;
	bool fired_ever;
	int64_t last_fire_ms;
	unsigned fired;
	unsigned suppressed; /* times it would have fired in a cooldown */
	unsigned busy;       /* times it would have fired while its last firing's actions ran */
	bool said;           /* a suppressed line was logged since the last firing */
	/* "times N in DUR": when the last matching requests came (a ring of win_n) */
	int64_t *win;
	unsigned win_len, win_head;
};

enum watch_verdict {
	WATCH_QUIET = 0,   /* nothing */
	WATCH_FIRE,        /* fire now */
	WATCH_COOLDOWN,    /* would fire, but within the cooldown */
	WATCH_EXHAUSTED,   /* would fire, but the count is used up */
	WATCH_BUSY,        /* would fire, but the actions of its last firing still run */
};

/*
 * Feeds one observation at now_ms (a monotonic clock): cond is whether the
 * condition holds (always true for an instant trigger). Fires when cond has
 * held for for_ms; after a firing the condition must hold for for_ms again
 * (measured from the firing) before the next one. busy: the actions of this
 * rule's last firing for this process still run (then it does not fire).
 */
enum watch_verdict watch_state_feed(const struct watch_rule *r, struct watch_state *s,
				    int64_t now_ms, bool cond, bool busy);

/*
 * A request or status rule with "times N in DUR": records one matching
 * request at at_ms and returns 1 when N of them came within DUR (the window
 * is then emptied: the next firing needs N new ones), 0 when not yet, 1 for
 * a rule without a window, -ENOMEM. Free the window with watch_state_release.
 */
int watch_window_add(const struct watch_rule *r, struct watch_state *s, int64_t at_ms);
void watch_state_release(struct watch_state *s);

/* "profile", "stacks", ... "exec", "analyze". */
const char *watch_action_name(enum watch_action_kind k);

/*
 * Parses "profile[:DUR]", "trace[:DUR]", "stacks", "dump", "gcdump",
 * "analyze:NAME[:DUR]" (NAME: lower-case letters, at most 31) or
 * "exec:COMMAND". Returns 0 or -EINVAL with a sentence in err.
 */
int watch_action_parse(const char *text, struct watch_action *a, char *err, size_t errlen);

/* Durations in rules: a number with a unit ms, s, m or h ("500ms", "1.5s",
 * "2m"); a bare number is seconds. 0..WATCH_MAX_MS. 0 or -EINVAL. */
int watch_parse_duration(const char *s, int64_t *ms);
/* Sizes: a number with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB
 * (powers of 1024). 0 or -EINVAL. */
int watch_parse_size(const char *s, double *bytes);

#endif
