/* SPDX-License-Identifier: MIT */
/*
 * report.c - renders a finished tracestats result as text tables or JSON
 * into a strbuf (the caller prints it).
 */
#include "common/compat.h"

#include "common/json.h"
#include "common/strparse.h"
#include "common/term.h"
#include "tracestats/tracestats.h"

#define DEFAULT_TOP 10

/* ----- helpers ----- */

static void add_ms(struct strbuf *sb, uint64_t ns)
{
	(void)strbuf_addf(sb, "%.3f ms", (double)ns / 1e6);
}

static void add_dur(struct strbuf *sb, uint64_t ns)
{
	if (ns >= 10000000000ULL)
		(void)strbuf_addf(sb, "%.1f s", (double)ns / 1e9);
	else if (ns >= 1000000000ULL)
		(void)strbuf_addf(sb, "%.3f s", (double)ns / 1e9);
	else
		add_ms(sb, ns);
}

static void add_bytes(struct strbuf *sb, uint64_t b)
{
	if (b >= (1ULL << 30))
		(void)strbuf_addf(sb, "%.2f GiB", (double)b / (double)(1ULL << 30));
	else if (b >= (1ULL << 20))
		(void)strbuf_addf(sb, "%.2f MiB", (double)b / (double)(1ULL << 20));
	else if (b >= (1ULL << 10))
		(void)strbuf_addf(sb, "%.1f KiB", (double)b / 1024.0);
	else
		(void)strbuf_addf(sb, "%" PRIu64 " B", b);
}

/* Printable copy of an outside string: the terminal rule of common/term.h. */
static void add_clean(struct strbuf *sb, const char *s)
{
	(void)ct_term_escape_str(sb, s);
}

static double pct_of(uint64_t part, uint64_t whole)
{
	return whole ? (double)part * 100.0 / (double)whole : 0.0;
}

static int cmp_top_total(const void *a, const void *b)
{
	const struct flame_top *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void sync_time(const struct ts_result *r, char *buf, size_t n)
{
	const uint16_t *t = r->info.sync_utc;

	if (!r->have_info || !t[0]) {
		ct_strlcpy(buf, "unknown", n);
		return;
	}
	snprintf(buf, n, "%04u-%02u-%02u %02u:%02u:%02u UTC", t[0], t[1], t[3], t[4], t[5], t[6]);
}

/* How to collect what a section shows, for "not collected" lines. */
#define HOW_EXCEPTIONS "--profile exceptions, or Microsoft-Windows-DotNETRuntime keyword 0x8000"
#define HOW_CONTENTION "--profile contention, or Microsoft-Windows-DotNETRuntime keyword 0x4000"
#define HOW_GC "--profile gc-collect or gc-verbose, or Microsoft-Windows-DotNETRuntime keyword 0x1"
#define HOW_ALLOC "--profile gc-verbose (keyword 0x1 at level 5)"

/*
 * A section with nothing in it: "not collected" when the runtime provider
 * sent nothing at all (its events cannot be in the trace), otherwise "none
 * seen" with what would have collected them (a trace does not record which
 * keywords its session enabled, so clrtap cannot tell "none" from "off").
 */
static void add_absent(struct strbuf *sb, const struct ts_result *r, const char *how)
{
	if (!r->runtime_events)
		(void)strbuf_addf(sb, "not collected (enable with %s)\n", how);
	else
		(void)strbuf_addf(sb, "none seen (they are in the trace only with %s)\n", how);
}

/* Up to max frames of a stack, indented. */
static void add_frames(struct strbuf *sb, const char *const *frames, uint32_t n, uint32_t max,
		       const char *indent)
{
	uint32_t j;

	for (j = 0; j < n && j < max; j++) {
		(void)strbuf_addf(sb, "%sat ", indent);
		add_clean(sb, frames[j]);
		(void)strbuf_addch(sb, '\n');
	}
	if (n > max)
		(void)strbuf_addf(sb, "%s... %u more frames\n", indent, n - max);
}

#define EH_PREFIX "System.Runtime.EH::"

/*
 * Where a group's exceptions were thrown: the first frame that is not the
 * runtime's own exception dispatch (.NET 9+ dispatches in managed code, and
 * ExceptionEIP then points into System.Runtime.EH) nor an unnamed native
 * frame; *first gets its index.
 */
static const char *throw_site_at(const struct ts_exception *e, uint32_t *first)
{
	uint32_t j;

	*first = 0;
	if (e->thrown_at && strncmp(e->thrown_at, EH_PREFIX, strlen(EH_PREFIX)))
		return e->thrown_at;
	/* skip the dispatch and unnamed native frames (the runtime's throw helpers) */
	for (j = 0; j < e->nframes; j++) {
		if (strncmp(e->frames[j], EH_PREFIX, strlen(EH_PREFIX)) &&
		    strncmp(e->frames[j], "0x", 2)) {
			*first = j;
			return e->frames[j];
		}
	}
	if (e->thrown_at)
		return e->thrown_at;
	return e->nframes ? e->frames[0] : "(no stack)";
}

static const char *throw_site(const struct ts_exception *e)
{
	uint32_t first;

	return throw_site_at(e, &first);
}

/* "N first throws, M rethrown" (and what could not be told apart). */
static void add_split(struct strbuf *sb, const char *indent, uint64_t count, uint64_t first,
		      uint64_t rethrown)
{
	(void)strbuf_addf(sb, "%s%" PRIu64 " first throw%s, %" PRIu64 " rethrown", indent, first,
			  first == 1 ? "" : "s", rethrown);
	if (count > first + rethrown)
		(void)strbuf_addf(sb, ", %" PRIu64 " not told apart (no stack or names)",
				  count - first - rethrown);
	(void)strbuf_addch(sb, '\n');
}

#define EXC_MESSAGES_SHOWN 3
#define EXC_SITES_SHOWN 4
#define EXC_FRAMES_SHOWN 16

/* One exception type: its top messages, then one stack per distinct throw site. */
static void text_exc_type(const struct ts_result *r, const struct ts_exc_type *t, struct strbuf *sb)
{
	const struct ts_exception *sites[EXC_SITES_SHOWN];
	uint64_t site_count[EXC_SITES_SHOWN] = { 0 }, shown = 0;
	size_t i, k, nsites = 0, more_sites = 0, nmsg = 0;

	(void)strbuf_addf(sb, "  %7" PRIu64 "  %s%7u  ", t->count, t->messages_capped ? ">=" : "  ",
			  t->messages);
	add_clean(sb, t->type);
	(void)strbuf_addch(sb, '\n');
	add_split(sb, "           ", t->count, t->first, t->rethrown);
	for (i = 0; i < r->nexceptions; i++) {
		const struct ts_exception *e = &r->exceptions[i];

		if (strcmp(e->type, t->type))
			continue;
		if (nmsg < EXC_MESSAGES_SHOWN) {
			(void)strbuf_addf(sb, "           %7" PRIu64 "  ", e->count);
			add_clean(sb, e->message);
			(void)strbuf_addch(sb, '\n');
			shown += e->count;
		}
		nmsg++;
		for (k = 0; k < nsites && strcmp(throw_site(sites[k]), throw_site(e)); k++)
			;
		/* the stack kept is a throw's: its rethrows went on from other frames */
		if (k < nsites) {
			site_count[k] += e->count - e->rethrown;
		} else if (nsites < EXC_SITES_SHOWN) {
			sites[nsites] = e;
			site_count[nsites++] = e->count - e->rethrown;
		} else {
			more_sites++;
		}
	}
	if (nmsg > EXC_MESSAGES_SHOWN)
		(void)strbuf_addf(sb, "           %7" PRIu64 "  (%zu more messages)\n",
				  t->count - shown, nmsg - EXC_MESSAGES_SHOWN);
	for (k = 0; k < nsites; k++) {
		uint32_t first;

		(void)strbuf_addstr(sb, "           thrown in ");
		add_clean(sb, throw_site_at(sites[k], &first));
		(void)strbuf_addf(sb, " (%" PRIu64 " thrown here)\n", site_count[k]);
		if (sites[k]->nframes > first) /* frames is NULL for a stackless throw */
			add_frames(sb, sites[k]->frames + first, sites[k]->nframes - first,
				   EXC_FRAMES_SHOWN, "             ");
	}
	if (more_sites)
		(void)strbuf_addf(sb, "           (%zu more throw sites)\n", more_sites);
}

static void text_exceptions(const struct ts_result *r, unsigned top, struct strbuf *sb)
{
	size_t i;

	(void)strbuf_addstr(sb, "\nExceptions: ");
	if (!r->exceptions_total) {
		add_absent(sb, r, HOW_EXCEPTIONS);
		return;
	}
	(void)strbuf_addf(sb, "%" PRIu64 " thrown, %zu type%s, %zu distinct type+message%s\n",
			  r->exceptions_total, r->nexc_types, r->nexc_types == 1 ? "" : "s",
			  r->nexceptions, r->exceptions_other ? " (and more past the cap)" : "");
	add_split(sb, "  ", r->exceptions_total, r->exceptions_first, r->exceptions_rethrown);
	(void)strbuf_addstr(sb, "  (rethrown: passed on by ExceptionDispatchInfo.Throw, as every await of a faulted task does;\n"
			    "  one failure going up N async frames is thrown N+1 times)\n");
	(void)strbuf_addstr(sb, "    count  messages  type (top messages; one stack per throw site)\n");
	for (i = 0; i < r->nexc_types && i < top; i++)
		text_exc_type(r, &r->exc_types[i], sb);
	if (r->nexc_types > top)
		(void)strbuf_addf(sb, "  (%zu more types)\n", r->nexc_types - top);
	if (r->exc_types_other)
		(void)strbuf_addf(sb, "  %7" PRIu64 "  (types past the table cap)\n", r->exc_types_other);
	if (r->exceptions_other)
		(void)strbuf_addf(sb, "  %" PRIu64 " exceptions fell past the cap of distinct messages: "
				  "their messages and stacks are not shown\n", r->exceptions_other);
}

static void text_contention(const struct ts_result *r, unsigned top, struct strbuf *sb)
{
	size_t i;

	(void)strbuf_addstr(sb, "\nContention: ");
	if (!r->contention.starts && !r->contention.stops) {
		add_absent(sb, r, HOW_CONTENTION);
		return;
	}
	(void)strbuf_addf(sb, "%" PRIu64 " waits started, %" PRIu64 " ended", r->contention.starts,
			  r->contention.stops);
	if (r->contention.timed) {
		(void)strbuf_addstr(sb, "; wait total ");
		add_ms(sb, r->contention.total_ns);
		(void)strbuf_addstr(sb, ", max ");
		add_ms(sb, r->contention.max_ns);
		(void)strbuf_addstr(sb, ", mean ");
		add_ms(sb, r->contention.total_ns / r->contention.timed);
	}
	(void)strbuf_addch(sb, '\n');
	if (!r->ncontention_sites)
		return;
	(void)strbuf_addf(sb, "  where threads waited (top %u of %zu stacks, by wait time)\n", top,
			  r->ncontention_sites);
	for (i = 0; i < r->ncontention_sites && i < top; i++) {
		const struct ts_contention_site *c = &r->contention_sites[i];

		(void)strbuf_addf(sb, "  %7" PRIu64 " waits, ", c->count);
		add_ms(sb, c->total_ns);
		(void)strbuf_addf(sb, " in %" PRIu64 " timed, max ", c->timed);
		add_ms(sb, c->max_ns);
		(void)strbuf_addch(sb, '\n');
		if (!c->nframes)
			(void)strbuf_addstr(sb, "             (no stack: collect with stacks on)\n");
		add_frames(sb, c->frames, c->nframes, EXC_FRAMES_SHOWN, "             ");
	}
	if (r->contention_sites_other)
		(void)strbuf_addf(sb, "  %7" PRIu64 " waits at stacks past the table cap\n",
				  r->contention_sites_other);
}

/* ----- text ----- */

static void text_samples(const struct ts_result *r, unsigned top, struct strbuf *sb)
{
	const struct ts_samples *s = &r->samples;
	struct flame_top *ft = NULL;
	uint64_t total = r->flame ? flame_total(r->flame) : 0;
	size_t n = 0, i;

	(void)strbuf_addf(sb, "\nSampled stacks: %" PRIu64 " samples in managed code, %" PRIu64
			  " outside it, %u distinct stacks",
			  s->managed, s->external, s->stacks);
	if (s->dropped)
		(void)strbuf_addf(sb, ", %" PRIu64 " samples not kept (cap)", s->dropped);
	(void)strbuf_addch(sb, '\n');
	if (s->managed + s->external + s->other)
		(void)strbuf_addstr(sb, "  (thread samples, not CPU time: the runtime's sampler takes "
				    "every managed thread, running or blocked)\n");
	if (!s->managed && !s->external && !s->other) {
		(void)strbuf_addstr(sb, "  not collected (enable with --profile cpu-sampling)\n");
		return;
	}
	if (!total || flame_top(r->flame, &ft, &n)) {
		(void)strbuf_addstr(sb, "  no thread was in managed code at any sample: the app was idle "
				    "or in native code (--thread-time also keeps threads outside "
				    "managed code)\n");
		return;
	}
	/*
	 * An idle app: the few managed samples are not where its time went.
	 * The sampler visits every thread once a period, so managed samples x
	 * period / span is the mean number of threads in managed code.
	 */
	if (r->info.sampling_ns && r->duration_ns && !r->thread_time) {
		double busy = (double)s->managed * r->info.sampling_ns / (double)r->duration_ns;

		if (busy < 0.1) {
			(void)strbuf_addf(sb, "  mostly idle: only %" PRIu64 " of %" PRIu64
					  " thread samples (%.1f%%) were in managed code over ",
					  s->managed, s->managed + s->external + s->other,
					  pct_of(s->managed, s->managed + s->external + s->other));
			add_dur(sb, r->duration_ns);
			(void)strbuf_addstr(sb, "; --thread-time shows where threads waited\n");
		}
	}
	(void)strbuf_addf(sb, "  top %u by self (%" PRIu64 " samples in the flame graph)\n", top, total);
	(void)strbuf_addstr(sb, "    self%   self  total%  total  method\n");
	for (i = 0; i < n && i < top; i++) {
		if (!ft[i].self)
			break;
		(void)strbuf_addf(sb, "  %6.2f%% %6" PRIu64 " %6.2f%% %6" PRIu64 "  ",
				  pct_of(ft[i].self, total), ft[i].self, pct_of(ft[i].total, total),
				  ft[i].total);
		add_clean(sb, ft[i].name);
		(void)strbuf_addch(sb, '\n');
	}
	qsort(ft, n, sizeof(*ft), cmp_top_total);
	(void)strbuf_addf(sb, "  top %u by total\n", top);
	(void)strbuf_addstr(sb, "   total%  total   self%   self  method\n");
	for (i = 0; i < n && i < top; i++) {
		(void)strbuf_addf(sb, "  %6.2f%% %6" PRIu64 " %6.2f%% %6" PRIu64 "  ",
				  pct_of(ft[i].total, total), ft[i].total, pct_of(ft[i].self, total),
				  ft[i].self);
		add_clean(sb, ft[i].name);
		(void)strbuf_addch(sb, '\n');
	}
	free(ft);
}

static void text_gc(const struct ts_result *r, struct strbuf *sb)
{
	const struct ts_gc *g = &r->gc;
	bool any = false;
	unsigned i;

	if (!g->count && !g->pause_source && !g->other_suspensions) {
		(void)strbuf_addstr(sb, "\nGC: ");
		add_absent(sb, r, HOW_GC);
		return;
	}
	(void)strbuf_addf(sb, "\nGC: %" PRIu64 " collections (gen0 %" PRIu64 ", gen1 %" PRIu64
			  ", gen2 %" PRIu64 "; %" PRIu64 " background)\n",
			  g->count, g->by_gen[0], g->by_gen[1], g->by_gen[2], g->background);
	if (g->count) {
		(void)strbuf_addstr(sb, "  reasons:");
		for (i = 0; i < TS_GC_REASONS; i++) {
			const char *n = tracestats_gc_reason_name(i);

			if (!g->by_reason[i])
				continue;
			(void)strbuf_addf(sb, "%s %s %" PRIu64, any ? "," : "",
					  i == TS_GC_REASONS - 1 || !n ? "other" : n, g->by_reason[i]);
			any = true;
		}
		(void)strbuf_addf(sb, "\n  induced: gen0 %" PRIu64 ", gen1 %" PRIu64 ", gen2 %" PRIu64 "\n",
				  g->induced_by_gen[0], g->induced_by_gen[1], g->induced_by_gen[2]);
	}
	if (!g->pause_source) {
		(void)strbuf_addstr(sb, "  pauses: none measured (no SuspendEE/RestartEE or GCStart/GCEnd pairs)\n");
		return;
	}
	(void)strbuf_addf(sb, "  pauses (%s): %" PRIu64 "%s\n", g->pause_source, g->pauses,
			  g->pause_sampled ? " (percentiles from a sample)" : "");
	(void)strbuf_addstr(sb, "    p50 ");
	add_ms(sb, g->pause_p50_ns);
	(void)strbuf_addstr(sb, ", p95 ");
	add_ms(sb, g->pause_p95_ns);
	(void)strbuf_addstr(sb, ", p99 ");
	add_ms(sb, g->pause_p99_ns);
	(void)strbuf_addstr(sb, ", max ");
	add_ms(sb, g->pause_max_ns);
	(void)strbuf_addstr(sb, "\n    total ");
	add_ms(sb, g->pause_total_ns);
	(void)strbuf_addf(sb, " = %.3f%% of the trace\n", g->paused_pct);
	if (g->other_suspensions)
		(void)strbuf_addf(sb, "  other runtime suspensions (not GC): %" PRIu64 "\n",
				  g->other_suspensions);
}

int tracestats_format_text(const struct tracestats *ts, unsigned top, const char *source,
			   struct strbuf *sb)
{
	const struct ts_result *r = tracestats_result(ts);
	char when[48];
	size_t i;

	if (!top)
		top = DEFAULT_TOP;
	sync_time(r, when, sizeof(when));
	(void)strbuf_addstr(sb, "Trace: ");
	add_clean(sb, source ? source : "(stream)");
	if (r->have_info)
		(void)strbuf_addf(sb, " (nettrace v%u, pid %" PRIu32 ", %" PRIu32 " CPUs, started %s)",
				  r->info.format == 6 ? 6 : 5, r->info.pid, r->info.ncpu, when);
	(void)strbuf_addf(sb, "\n  %" PRIu64 " bytes read, %" PRIu64 " events; span ", r->bytes,
			  r->events);
	add_dur(sb, r->duration_ns);
	(void)strbuf_addf(sb, ", %" PRIu64 " lost by the runtime, %" PRIu64 " method ranges known\n",
			  r->dropped_events, r->methods);
	if (r->order_forced)
		(void)strbuf_addf(sb, "  TIME ORDER NOT GUARANTEED: the reader's window was full; %" PRIu64
				  " events went out before their order was known, %" PRIu64
				  " came out of order\n", r->order_forced, r->order_late);
	if (r->error.code)
		(void)strbuf_addf(sb, "  INCOMPLETE: damaged at byte offset %" PRIu64
				  "; figures cover the events before it\n", r->error.offset);

	(void)strbuf_addstr(sb, "\nEvents by provider\n      count  provider\n");
	for (i = 0; i < r->nproviders; i++) {
		(void)strbuf_addf(sb, "  %9" PRIu64 "  ", r->providers[i].count);
		add_clean(sb, r->providers[i].provider);
		(void)strbuf_addch(sb, '\n');
	}
	(void)strbuf_addf(sb, "\nEvents (top %u of %zu kinds)\n      count  provider/event\n", top,
			  r->nkinds);
	for (i = 0; i < r->nkinds && i < top; i++) {
		(void)strbuf_addf(sb, "  %9" PRIu64 "  ", r->kinds[i].count);
		add_clean(sb, r->kinds[i].provider);
		(void)strbuf_addch(sb, '/');
		add_clean(sb, r->kinds[i].name);
		(void)strbuf_addch(sb, '\n');
	}
	if (r->other_kinds_events)
		(void)strbuf_addf(sb, "  %9" PRIu64 "  (kinds past the table cap)\n",
				  r->other_kinds_events);

	text_exceptions(r, top, sb);

	text_gc(r, sb);

	(void)strbuf_addstr(sb, "\nAllocations (GCAllocationTick samples): ");
	if (!r->alloc_samples) {
		add_absent(sb, r, HOW_ALLOC);
		goto contention;
	}
	(void)strbuf_addf(sb, "%" PRIu64 " samples, ", r->alloc_samples);
	add_bytes(sb, r->alloc_bytes);
	(void)strbuf_addf(sb, " in %zu types\n", r->nallocs);
	if (r->nallocs)
		(void)strbuf_addstr(sb, "           bytes   share  samples  type\n");
	for (i = 0; i < r->nallocs && i < top; i++) {
		(void)strbuf_addf(sb, "  %14" PRIu64 " %6.2f%% %8" PRIu64 "  ", r->allocs[i].bytes,
				  pct_of(r->allocs[i].bytes, r->alloc_bytes), r->allocs[i].samples);
		add_clean(sb, r->allocs[i].type);
		(void)strbuf_addch(sb, '\n');
	}
	if (r->alloc_other_samples)
		(void)strbuf_addf(sb, "  %14" PRIu64 "         %8" PRIu64 "  (types past the table cap)\n",
				  r->alloc_other_bytes, r->alloc_other_samples);

contention:
	text_contention(r, top, sb);

	text_samples(r, top, sb);
	return strbuf_error(sb);
}

/* ----- JSON ----- */

static void json_top(struct ct_json *j, const char *key, const struct flame_top *ft, size_t n,
		     unsigned top)
{
	size_t i;

	ct_json_kv_arr_begin(j, key);
	for (i = 0; i < n && i < top; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "name", ft[i].name);
		ct_json_kv_u64(j, "self", ft[i].self);
		ct_json_kv_u64(j, "total", ft[i].total);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

/* "raw_stack": the runtime's names of a "stack" (null for an unnamed frame),
 * beside the names shown (the source's form unless --raw-names). */
static void json_raw_stack(struct ct_json *j, const char *const *raw, uint32_t n)
{
	uint32_t k;

	if (!raw)
		return;
	ct_json_kv_arr_begin(j, "raw_stack");
	for (k = 0; k < n; k++) {
		if (raw[k])
			ct_json_str(j, raw[k]);
		else
			ct_json_null(j);
	}
	ct_json_arr_end(j);
}

static void json_samples(const struct ts_result *r, unsigned top, struct ct_json *j)
{
	const struct ts_samples *s = &r->samples;
	struct flame_top *ft = NULL;
	size_t n = 0;

	ct_json_kv_obj_begin(j, "samples");
	ct_json_kv_u64(j, "managed", s->managed);
	ct_json_kv_u64(j, "external", s->external);
	ct_json_kv_u64(j, "other", s->other);
	ct_json_kv_u64(j, "in_flame", r->flame ? flame_total(r->flame) : 0);
	ct_json_kv_u64(j, "dropped", s->dropped);
	ct_json_kv_u64(j, "truncated", s->truncated);
	ct_json_kv_u64(j, "stacks", s->stacks);
	if (r->flame && !flame_top(r->flame, &ft, &n)) {
		size_t k = n;

		/* self ranking keeps only names that are some stack's leaf */
		while (k && !ft[k - 1].self)
			k--;
		json_top(j, "top_self", ft, k, top);
		qsort(ft, n, sizeof(*ft), cmp_top_total);
		json_top(j, "top_total", ft, n, top);
		free(ft);
	} else {
		json_top(j, "top_self", NULL, 0, top);
		json_top(j, "top_total", NULL, 0, top);
	}
	ct_json_obj_end(j);
}

static void json_u64_array(struct ct_json *j, const char *key, const uint64_t *v, size_t n)
{
	size_t i;

	ct_json_kv_arr_begin(j, key);
	for (i = 0; i < n; i++)
		ct_json_u64(j, v[i]);
	ct_json_arr_end(j);
}

static void json_gc(const struct ts_result *r, struct ct_json *j)
{
	const struct ts_gc *g = &r->gc;
	unsigned i;

	ct_json_kv_obj_begin(j, "gc");
	ct_json_kv_u64(j, "count", g->count);
	json_u64_array(j, "by_gen", g->by_gen, TS_GC_GENS);
	json_u64_array(j, "induced_by_gen", g->induced_by_gen, TS_GC_GENS);
	ct_json_kv_obj_begin(j, "by_reason");
	for (i = 0; i < TS_GC_REASONS; i++) {
		const char *n = tracestats_gc_reason_name(i);

		if (!g->by_reason[i])
			continue;
		ct_json_kv_u64(j, i == TS_GC_REASONS - 1 || !n ? "other" : n, g->by_reason[i]);
	}
	ct_json_obj_end(j);
	ct_json_kv_u64(j, "background", g->background);
	ct_json_kv_str(j, "pause_source", g->pause_source);
	ct_json_kv_u64(j, "pauses", g->pauses);
	ct_json_kv_u64(j, "pause_total_ns", g->pause_total_ns);
	ct_json_kv_u64(j, "pause_p50_ns", g->pause_p50_ns);
	ct_json_kv_u64(j, "pause_p95_ns", g->pause_p95_ns);
	ct_json_kv_u64(j, "pause_p99_ns", g->pause_p99_ns);
	ct_json_kv_u64(j, "pause_max_ns", g->pause_max_ns);
	ct_json_kv_bool(j, "pause_sampled", g->pause_sampled);
	ct_json_kv_double(j, "paused_pct", g->paused_pct);
	ct_json_kv_u64(j, "other_suspensions", g->other_suspensions);
	ct_json_obj_end(j);
}

int tracestats_format_json(const struct tracestats *ts, unsigned top, const char *source,
			   struct strbuf *sb)
{
	const struct ts_result *r = tracestats_result(ts);
	struct ct_json jw, *j = &jw;
	char when[48];
	size_t i, k;
	int err;

	if (!top)
		top = DEFAULT_TOP;
	sync_time(r, when, sizeof(when));
	ct_json_init(j, sb);
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "file", source);
	ct_json_kv_bool(j, "complete", !r->error.code);
	if (r->error.code) {
		ct_json_kv_obj_begin(j, "error");
		ct_json_kv_i64(j, "errno", -r->error.code);
		ct_json_kv_u64(j, "offset", r->error.offset);
		ct_json_kv_str(j, "message", r->error.msg);
		ct_json_obj_end(j);
	} else {
		ct_json_kv_null(j, "error");
	}
	ct_json_kv_obj_begin(j, "trace");
	ct_json_kv_u64(j, "format", r->have_info ? (r->info.format == 6 ? 6 : 5) : 0);
	ct_json_kv_u64(j, "pid", r->info.pid);
	ct_json_kv_u64(j, "cpus", r->info.ncpu);
	ct_json_kv_u64(j, "pointer_size", r->info.pointer_size);
	ct_json_kv_str(j, "start_utc", when);
	ct_json_kv_u64(j, "bytes", r->bytes);
	ct_json_kv_u64(j, "events", r->events);
	ct_json_kv_u64(j, "lost_events", r->dropped_events);
	/* events are read in time order; these say where the window's cap broke it */
	ct_json_kv_bool(j, "time_ordered", !r->order_forced);
	ct_json_kv_u64(j, "order_forced", r->order_forced);
	ct_json_kv_u64(j, "order_late", r->order_late);
	ct_json_kv_u64(j, "duration_ns", r->duration_ns);
	ct_json_kv_u64(j, "methods", r->methods);
	ct_json_kv_u64(j, "runtime_events", r->runtime_events);
	ct_json_obj_end(j);

	/* every kind: tests compare these with other readers */
	ct_json_kv_arr_begin(j, "providers");
	for (i = 0; i < r->nproviders; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "provider", r->providers[i].provider);
		ct_json_kv_u64(j, "count", r->providers[i].count);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "events");
	for (i = 0; i < r->nkinds; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "provider", r->kinds[i].provider);
		ct_json_kv_u64(j, "id", r->kinds[i].id);
		ct_json_kv_str(j, "name", r->kinds[i].name);
		ct_json_kv_u64(j, "count", r->kinds[i].count);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_u64(j, "other_kinds_events", r->other_kinds_events);

	ct_json_kv_obj_begin(j, "exceptions");
	ct_json_kv_u64(j, "total", r->exceptions_total);
	ct_json_kv_u64(j, "first", r->exceptions_first);
	ct_json_kv_u64(j, "rethrown", r->exceptions_rethrown);
	ct_json_kv_u64(j, "other", r->exceptions_other);
	ct_json_kv_bool(j, "collected", r->exceptions_total || r->runtime_events);
	ct_json_kv_arr_begin(j, "types");
	for (i = 0; i < r->nexc_types && i < top; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", r->exc_types[i].type);
		ct_json_kv_u64(j, "count", r->exc_types[i].count);
		ct_json_kv_u64(j, "first", r->exc_types[i].first);
		ct_json_kv_u64(j, "rethrown", r->exc_types[i].rethrown);
		ct_json_kv_u64(j, "messages", r->exc_types[i].messages);
		ct_json_kv_bool(j, "messages_capped", r->exc_types[i].messages_capped);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_u64(j, "types_other", r->exc_types_other);
	ct_json_kv_arr_begin(j, "groups");
	for (i = 0; i < r->nexceptions && i < top; i++) {
		const struct ts_exception *e = &r->exceptions[i];

		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", e->type);
		ct_json_kv_str(j, "message", e->message);
		ct_json_kv_u64(j, "count", e->count);
		ct_json_kv_u64(j, "first", e->first);
		ct_json_kv_u64(j, "rethrown", e->rethrown);
		ct_json_kv_str(j, "thrown_in", e->thrown_at);
		ct_json_kv_arr_begin(j, "stack");
		for (k = 0; k < e->nframes; k++)
			ct_json_str(j, e->frames[k]);
		ct_json_arr_end(j);
		json_raw_stack(j, e->raw_frames, e->nframes);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);

	json_gc(r, j);

	ct_json_kv_obj_begin(j, "allocations");
	ct_json_kv_u64(j, "bytes", r->alloc_bytes);
	ct_json_kv_u64(j, "samples", r->alloc_samples);
	ct_json_kv_u64(j, "other_bytes", r->alloc_other_bytes);
	ct_json_kv_u64(j, "other_samples", r->alloc_other_samples);
	ct_json_kv_u64(j, "distinct_types", r->nallocs);
	ct_json_kv_arr_begin(j, "types");
	for (i = 0; i < r->nallocs && i < top; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", r->allocs[i].type);
		ct_json_kv_u64(j, "bytes", r->allocs[i].bytes);
		ct_json_kv_u64(j, "samples", r->allocs[i].samples);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);

	ct_json_kv_obj_begin(j, "contention");
	ct_json_kv_u64(j, "starts", r->contention.starts);
	ct_json_kv_u64(j, "stops", r->contention.stops);
	ct_json_kv_u64(j, "timed", r->contention.timed);
	ct_json_kv_u64(j, "total_ns", r->contention.total_ns);
	ct_json_kv_u64(j, "max_ns", r->contention.max_ns);
	ct_json_kv_arr_begin(j, "sites");
	for (i = 0; i < r->ncontention_sites && i < top; i++) {
		const struct ts_contention_site *c = &r->contention_sites[i];

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "count", c->count);
		ct_json_kv_u64(j, "timed", c->timed);
		ct_json_kv_u64(j, "total_ns", c->total_ns);
		ct_json_kv_u64(j, "max_ns", c->max_ns);
		ct_json_kv_arr_begin(j, "stack");
		for (k = 0; k < c->nframes; k++)
			ct_json_str(j, c->frames[k]);
		ct_json_arr_end(j);
		json_raw_stack(j, c->raw_frames, c->nframes);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_u64(j, "sites_other", r->contention_sites_other);
	ct_json_obj_end(j);

	json_samples(r, top, j);
	ct_json_obj_end(j);
	err = ct_json_finish(j);
	return err ? err : strbuf_addch(sb, '\n');
}
