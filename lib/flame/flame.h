/* SPDX-License-Identifier: MIT */
/*
 * flame.h - aggregated call stacks and the writers every profile output goes
 * through: folded stacks, an interactive self-contained HTML flame graph, SVG,
 * speedscope JSON and pprof (.pb.gz).
 *
 * One struct flame is filled by whoever has stacks (trace report from
 * EventPipe samples, profile from perf_event samples, probe --stack) and
 * written by one writer per format, so every command's outputs agree.
 *
 * Frames are given root first (outermost caller first, leaf last). Names are
 * copied and interned; the caller's strings may be freed after flame_add().
 */
#ifndef CLRTAP_FLAME_FLAME_H
#define CLRTAP_FLAME_FLAME_H

#include "common/compat.h"

struct flame;

enum flame_format {
	FLAME_FOLDED = 1, /* "a;b;c 12" lines (Brendan Gregg's folded format) */
	FLAME_HTML,       /* one self-contained HTML file: search, zoom, offline */
	FLAME_SVG,        /* static SVG with tooltips */
	FLAME_SPEEDSCOPE, /* speedscope's file format (JSON, "sampled" profile) */
	FLAME_PPROF,      /* gzip'd profile.proto */
};

struct flame_opts {
	const char *title;     /* shown in HTML/SVG, speedscope "name"; may be NULL */
	const char *unit;      /* what one weight unit is: "samples" (default) or "nanoseconds" */
	uint64_t period;       /* pprof: weight of one sample in ns (0: unknown) */
	uint64_t duration_ns;  /* pprof duration; 0 when unknown */
	int64_t time_unix_ns;  /* pprof time_nanos; 0 when unknown */
	/* pprof, OTLP: the sample types, when not CPU samples: {type, unit} of value 0
	 * and, when types[2] is set, of value 1. With two, value 0 of a stack is the
	 * number of flame_add calls (hits) and value 1 their weights (e.g.
	 * alloc_samples/count, alloc_size/bytes); with one, the weights. NULL:
	 * samples/count (and cpu/nanoseconds, see period). OTLP: one Profile per type. */
	const char *types[4];
	const char *notes;     /* lines ('\n'-separated) about how the profile was made (engine,
				* why, what it cannot see): under the HTML title, an SVG <desc>,
				* speedscope "clrtapNotes", pprof comments; not in folded output
				* (other tools read it); may be NULL */
};

/*
 * Caps: a stack deeper than FLAME_MAX_DEPTH keeps its leaf-most frames under a
 * synthetic "[truncated]" root frame; names longer than FLAME_MAX_NAME bytes
 * are cut; a flame holds at most FLAME_DEFAULT_MAX_NODES distinct stack
 * prefixes (see flame_set_max_nodes) and flame_add returns -E2BIG past that
 * without changing f. A NULL or empty frame name is recorded as "[unknown]".
 */
#define FLAME_MAX_DEPTH 1024
#define FLAME_MAX_NAME 4096
#define FLAME_DEFAULT_MAX_NODES ((size_t)4 << 20)

int flame_new(struct flame **out);
void flame_free(struct flame *f);

/* Changes the node cap (at least 16, at most 2^31). */
void flame_set_max_nodes(struct flame *f, size_t max_nodes);
/* Distinct stack prefixes (trie nodes) held, not counting the root. */
size_t flame_node_count(const struct flame *f);

/* Adds one stack (root first) with a weight (sample count or ns). */
int flame_add(struct flame *f, const char *const *frames, size_t nframes, uint64_t weight);

/* Sum of all weights added. flame_add returns -EOVERFLOW rather than wrap. */
uint64_t flame_total(const struct flame *f);

/*
 * Adds folded-stack text ("a;b;c 12" per line, '#' comment lines and blank
 * lines skipped, CRLF accepted) to f. Returns the number of stacks added or a
 * negative errno: -EBADMSG for a malformed line (nothing after it is added),
 * -E2BIG past a cap (lines over 1 MiB, over 65536 frames, node cap).
 */
int flame_read_folded(struct flame *f, const char *data, size_t len);

/*
 * Picks a format from a file name: .folded/.txt/.collapsed -> FOLDED,
 * .html/.htm -> HTML, .svg -> SVG, .speedscope.json/.json -> SPEEDSCOPE,
 * .pb.gz/.pprof -> PPROF. Returns the format or -EINVAL.
 */
int flame_format_from_path(const char *path);
/* The formats by name (speedscope, folded, html, svg, pprof) and their usual extension. */
struct flame_format_desc {
	const char *name;
	enum flame_format fmt;
	const char *ext;
};
/* NULL when no format has that name. */
const struct flame_format_desc *flame_format_by_name(const char *name);
/* fmt's entry; speedscope's when fmt is none of them. */
const struct flame_format_desc *flame_format_desc_of(int fmt);

/* Writes f in the given format to fd. Returns 0 or a negative errno. */
int flame_write(const struct flame *f, enum flame_format fmt, int fd, const struct flame_opts *o);

/* Per-frame-name totals: self = weight where the name is the leaf, total = weight of
 * stacks containing the name (counted once per stack). */
struct flame_top {
	const char *name; /* points into f; valid until flame_free */
	uint64_t self;
	uint64_t total;
};

/* Fills *out (malloc'd, caller frees) with every distinct frame name, sorted by self
 * then total, descending. */
int flame_top(const struct flame *f, struct flame_top **out, size_t *n);

/*
 * OTLP profiles (flame_otlp.c): f as one ExportProfilesServiceRequest of the
 * v1development signal (opentelemetry-proto v1.11.0), appended to out
 * (uncompressed protobuf): one resource with attrs (strings made valid UTF-8),
 * one scope, one profile (samples/count; period_type cpu/nanoseconds with
 * o->period), its dictionary. profile_id may be NULL.
 */
struct flame_otlp_attr {
	const char *key;
	const char *value; /* when !is_int */
	int64_t ivalue;
	bool is_int;
};
struct strbuf;
int flame_otlp_request(const struct flame *f, const struct flame_opts *o,
		       const struct flame_otlp_attr *attrs, size_t nattrs, const char *scope_name,
		       const char *scope_version, const uint8_t profile_id[16], struct strbuf *out);

/*
 * A name "NAME in FILE:line N" (a frame with its source line): true with the
 * parts (views into s), false for any other name.
 */
bool flame_name_line(const char *s, size_t len, size_t *name_len, const char **file,
		     size_t *file_len, uint32_t *line);

#endif
