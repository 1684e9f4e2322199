/* SPDX-License-Identifier: MIT */
/*
 * finish.c - the end of a tracestats pass: names for what was kept as raw
 * addresses (the rundown has come), groups sorted and cut, the report.
 */
#include "common/compat.h"

#include "common/log.h"
#include "tracestats/tracestats_int.h"

/* ----- finishing ----- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_kind(const void *a, const void *b)
{
	const struct ts_event_kind *x = a, *y = b;
	int c;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	c = strcmp(x->provider, y->provider);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int cmp_prov(const void *a, const void *b)
{
	const struct ts_provider *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->provider, y->provider);
}

static int cmp_exc(const void *a, const void *b)
{
	const struct ts_exception *x = a, *y = b;
	int c;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	c = strcmp(x->type, y->type);
	return c ? c : strcmp(x->message, y->message);
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct ts_alloc *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->type, y->type);
}

/* Nearest-rank percentile of a sorted vector. */
static uint64_t pct(const uint64_t *v, size_t n, unsigned p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (n * p + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

static int finish_pauses(struct tracestats *ts)
{
	struct pausevec *pv = ts->ee_pauses.seen ? &ts->ee_pauses :
			      ts->gc_pauses.seen ? &ts->gc_pauses : NULL;
	struct ts_gc *g = &ts->gc;

	if (!pv)
		return 0;
	g->pause_source = pv == &ts->ee_pauses ? "SuspendEE/RestartEE" : "GCStart/GCEnd";
	g->pauses = pv->seen;
	g->pause_total_ns = pv->total;
	g->pause_max_ns = pv->max;
	g->pause_sampled = pv->seen > pv->n;
	qsort(pv->v, pv->n, sizeof(uint64_t), cmp_u64);
	g->pause_p50_ns = pct(pv->v, pv->n, 50);
	g->pause_p95_ns = pct(pv->v, pv->n, 95);
	g->pause_p99_ns = pct(pv->v, pv->n, 99);
	if (ts->res.duration_ns)
		g->paused_pct = (double)pv->total * 100.0 / (double)ts->res.duration_ns;
	return 0;
}

static const char *frame_name(struct tracestats *ts, const uint64_t *ips, uint32_t i)
{
	uint64_t ip = ips[i];

	return nt_methods_lookup(ts->methods, i && ip ? ip - 1 : ip);
}

/* The runtime's names of a stack's frames (for JSON beside the shown ones),
 * or NULL when out of memory (then JSON has none). */
static const char **raw_names(struct tracestats *ts, const uint64_t *ips, uint32_t n)
{
	const char **v = n ? calloc(n, sizeof(*v)) : NULL;
	uint32_t i;

	for (i = 0; v && i < n; i++)
		v[i] = nt_methods_lookup_raw(ts->methods, i && ips[i] ? ips[i] - 1 : ips[i]);
	return v;
}

/*
 * A malloc'd name for frame i: the method, or the address in hex. With
 * ts_limits.lines a managed frame gets " in FILE:line N", or says why not
 * " (no line: REASON)".
 */
static char *frame_dup(struct tracestats *ts, const uint64_t *ips, uint32_t i)
{
	const char *n = frame_name(ts, ips, i);
	struct pe_srcline l;
	enum srcline_why why;
	uint32_t il;
	char hex[24], *s = NULL;
	int r;

	if (!n) {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, ips[i]);
		return strdup(hex);
	}
	if (!ts->lines)
		return strdup(n);
	r = srcline_lookup(ts->lines, ips[i], i > 0, &l, &il, &why);
	if (r == -ENOMEM)
		return NULL;
	if (r == 0)
		r = asprintf(&s, "%s in %s:line %u", n, l.file, l.line);
	else
		r = asprintf(&s, "%s (no line: %s)", n, srcline_why_str(why));
	return r < 0 ? NULL : s;
}

#define EDI_THROW "System.Runtime.ExceptionServices.ExceptionDispatchInfo::Throw"
#define EH_DISPATCH "System.Runtime.EH::"

/* The first named frame past the runtime's dispatch says which it was. */
static void classify_sites(struct tracestats *ts)
{
	uint32_t i, j;

	for (i = 0; i < ts->nesites; i++) {
		struct exc_site *e = &ts->esites[i];

		e->kind = SITE_UNKNOWN;
		for (j = 0; j < e->n; j++) {
			const char *n = frame_name(ts, e->ips, j);

			if (!n || !strncmp(n, EH_DISPATCH, strlen(EH_DISPATCH)))
				continue;
			e->kind = !strncmp(n, EDI_THROW, strlen(EDI_THROW)) ? SITE_RETHROW : SITE_FIRST;
			break;
		}
		if (e->kind == SITE_FIRST)
			ts->res.exceptions_first += e->count;
		else if (e->kind == SITE_RETHROW)
			ts->res.exceptions_rethrown += e->count;
	}
	ts->res.exceptions_rethrown += ts->exc_flagged;
}

/*
 * Adds every (entity, site) count to the first or rethrown of the groups
 * (rexcs, types false) or types (retypes), before they are sorted.
 */
static void split_pairs(struct tracestats *ts, bool types)
{
	uint32_t i;

	if (types)
		for (i = 0; i < ts->netypes; i++)
			ts->retypes[i].rethrown = ts->etypes[i].flagged;
	else
		for (i = 0; i < ts->nexcs; i++)
			ts->rexcs[i].rethrown = ts->excs[i].flagged;
	for (i = 0; i < ts->nepairs; i++) {
		const struct exc_pair *p = &ts->epairs[i];
		uint64_t k = p->key - 1;
		uint32_t ent = (uint32_t)(k >> 32) & 0x3fffffffu, site = (uint32_t)k;
		bool type = k >> 62;
		int kind;
		uint64_t *first, *reth;

		if (!p->key || site >= ts->nesites || type != types)
			continue;
		kind = ts->esites[site].kind;
		if (type) {
			if (ent >= ts->netypes)
				continue;
			first = &ts->retypes[ent].first;
			reth = &ts->retypes[ent].rethrown;
		} else {
			if (ent >= ts->nexcs)
				continue;
			first = &ts->rexcs[ent].first;
			reth = &ts->rexcs[ent].rethrown;
		}
		if (kind == SITE_FIRST)
			*first += p->n;
		else if (kind == SITE_RETHROW)
			*reth += p->n;
	}
}

static int finish_exceptions(struct tracestats *ts)
{
	size_t total = 0, k = 0;
	uint32_t i, j;

	classify_sites(ts);
	if (!ts->nexcs)
		return 0;
	for (i = 0; i < ts->nexcs; i++)
		total += ts->excs[i].nips;
	ts->rexcs = calloc(ts->nexcs, sizeof(*ts->rexcs));
	ts->frame_strs = total ? calloc(total, sizeof(char *)) : NULL;
	if (!ts->rexcs || (total && !ts->frame_strs))
		return -ENOMEM;
	for (i = 0; i < ts->nexcs; i++) {
		struct exc_ent *e = &ts->excs[i];
		struct ts_exception *r = &ts->rexcs[i];
		const char **frames = e->nips ? calloc(e->nips, sizeof(char *)) : NULL;

		if (e->nips && !frames)
			return -ENOMEM;
		r->type = e->type;
		r->message = e->msg;
		r->count = e->count;
		r->thrown_at = e->eip ? nt_methods_lookup(ts->methods, e->eip) : NULL;
		for (j = 0; j < e->nips; j++) {
			ts->frame_strs[k] = frame_dup(ts, e->ips, j);
			if (!ts->frame_strs[k]) {
				free(frames);
				return -ENOMEM;
			}
			frames[j] = ts->frame_strs[k++];
			ts->nframe_strs = k;
		}
		r->frames = frames;
		r->raw_frames = raw_names(ts, e->ips, e->nips);
		r->nframes = e->nips;
	}
	split_pairs(ts, false);
	qsort(ts->rexcs, ts->nexcs, sizeof(*ts->rexcs), cmp_exc);
	return 0;
}

static int cmp_etype(const void *a, const void *b)
{
	const struct ts_exc_type *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->type, y->type);
}

static int cmp_csite(const void *a, const void *b)
{
	const struct ts_contention_site *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return 0;
}

static int finish_types_and_sites(struct tracestats *ts)
{
	uint32_t i, j;

	if (ts->netypes) {
		ts->retypes = calloc(ts->netypes, sizeof(*ts->retypes));
		if (!ts->retypes)
			return -ENOMEM;
		for (i = 0; i < ts->netypes; i++) {
			ts->retypes[i] = (struct ts_exc_type){ ts->etypes[i].type, ts->etypes[i].count,
							       ts->etypes[i].groups,
							       ts->etypes[i].groups_capped, 0, 0 };
		}
		split_pairs(ts, true);
		qsort(ts->retypes, ts->netypes, sizeof(*ts->retypes), cmp_etype);
	}
	if (!ts->ncsites)
		return 0;
	ts->rcsites = calloc(ts->ncsites, sizeof(*ts->rcsites));
	if (!ts->rcsites)
		return -ENOMEM;
	for (i = 0; i < ts->ncsites; i++) {
		const struct cont_site *c = &ts->csites[i];
		struct ts_contention_site *r = &ts->rcsites[i];
		const char **frames = c->nips ? calloc(c->nips, sizeof(char *)) : NULL;

		if (c->nips && !frames)
			return -ENOMEM;
		r->count = c->count;
		r->timed = c->timed;
		r->total_ns = c->total_ns;
		r->max_ns = c->max_ns;
		r->frames = frames;
		r->raw_frames = raw_names(ts, c->ips, c->nips);
		for (j = 0; j < c->nips; j++) {
			frames[j] = frame_dup(ts, c->ips, j);
			if (!frames[j])
				return -ENOMEM;
			r->nframes = j + 1;
		}
	}
	/* sorted in place: tracestats_free walks rcsites by index, whatever the order */
	qsort(ts->rcsites, ts->ncsites, sizeof(*ts->rcsites), cmp_csite);
	return 0;
}

/*
 * With ts_limits.lines: names[first..n) that have a line become
 * "NAME in FILE:line N" (malloc'd into owned[], freed by the caller; the
 * flame copies names). Frames without a line keep their name.
 */
static int add_stack_lines(struct tracestats *ts, const uint64_t *ips, const uint32_t *idx,
			   const char **names, uint32_t first, uint32_t n, char **owned)
{
	char buf[PE_PDB_MAX_PATH + 1024];
	uint32_t k;

	for (k = first; k < n; k++) {
		int r;

		owned[k] = NULL;
		if (names[k][0] == '[')
			continue;
		r = srcline_name(ts->lines, ips[idx[k - first]], idx[k - first] > 0, names[k], buf,
				 sizeof(buf));
		if (r < 0)
			return r;
		if (!r)
			continue; /* the name without a line: nothing guessed */
		owned[k] = strdup(buf);
		if (!owned[k])
			return -ENOMEM;
		names[k] = owned[k];
	}
	return 0;
}

static int finish_flame(struct tracestats *ts)
{
	const char **names = NULL;
	uint32_t *idx = NULL;
	char **owned = NULL;
	uint32_t i, n, k, first;
	int err;

	err = flame_new(&ts->flame);
	if (err)
		return err;
	if (!ts->nstacks)
		return 0;
	names = malloc(((size_t)ts->lim.max_frames + 1) * sizeof(*names));
	idx = malloc(((size_t)ts->lim.max_frames + 1) * sizeof(*idx));
	owned = calloc((size_t)ts->lim.max_frames + 1, sizeof(*owned));
	if (!names || !idx || !owned) {
		free(names);
		free(idx);
		free(owned);
		return -ENOMEM;
	}
	for (i = 0; i < ts->nstacks; i++) {
		const struct stack_ent *e = &ts->stacks[i];
		const uint64_t *ips = e->n ? ts->ips + e->off : NULL;

		n = 0;
		if (e->truncated)
			names[n++] = "[truncated]";
		first = n;
		n += (uint32_t)nt_methods_name_stack_idx(ts->methods, ips, e->n, names + n, idx,
							 ts->lim.max_frames);
		if (ts->lines && n > first) {
			err = add_stack_lines(ts, ips, idx, names, first, n, owned);
			if (err) {
				for (k = first; k < n; k++)
					free(owned[k]);
				break;
			}
		}
		if (!n)
			names[n++] = "[no stack]";
		if (ts->lim.flame_skip && ts->lim.flame_skip(ts->lim.flame_skip_ctx, names, n)) {
			ts->samples.left_out += e->count;
			ts->samples.in_flame -= e->count;
			err = 0;
		} else {
			err = flame_add(ts->flame, names, n, e->count);
		}
		for (k = first; ts->lines && k < n; k++) {
			free(owned[k]);
			owned[k] = NULL;
		}
		if (err == -E2BIG) {
			/* the flame's node cap: these samples are counted as not kept */
			ts->samples.dropped += e->count;
			ts->samples.in_flame -= e->count;
			err = 0;
		}
		if (err)
			break;
	}
	free(names);
	free(idx);
	free(owned);
	return err;
}

int tracestats_finish(struct tracestats *ts)
{
	struct ts_result *r = &ts->res;
	uint32_t i;
	size_t np = 0;
	int err;

	if (ts->finished)
		return -EINVAL;
	ts->finished = true;
	r->info = ts->info;
	r->have_info = ts->have_info;
	r->events = ts->events;
	r->first_ts = ts->first_ts;
	r->last_ts = ts->last_ts;
	/*
	 * The span runs from the session's start (the header's sync timestamp)
	 * to the last event: an idle trace whose only events are the rundown
	 * still spans the whole session.
	 */
	if (ts->have_ts && ts->have_info && ts->info.sync_qpc > 0 && ts->info.sync_qpc < r->first_ts)
		r->start_ts = ts->info.sync_qpc;
	else
		r->start_ts = r->first_ts;
	r->duration_ns = ts->have_ts ? ts_ticks_to_ns(ts, (uint64_t)ts->last_ts - (uint64_t)r->start_ts) : 0;
	r->methods = nt_methods_count(ts->methods);

	/* event kinds and providers */
	if (ts->nkinds) {
		ts->rkinds = calloc(ts->nkinds, sizeof(*ts->rkinds));
		ts->rprovs = calloc(ts->nkinds, sizeof(*ts->rprovs));
		if (!ts->rkinds || !ts->rprovs)
			return -ENOMEM;
	}
	for (i = 0; i < ts->nkinds; i++) {
		size_t j;

		ts->rkinds[i] = (struct ts_event_kind){ ts->kinds[i].provider, ts->kinds[i].id,
							ts->kinds[i].name, ts->kinds[i].count };
		for (j = 0; j < np && strcmp(ts->rprovs[j].provider, ts->kinds[i].provider); j++)
			;
		if (j == np)
			ts->rprovs[np++] = (struct ts_provider){ ts->kinds[i].provider, 0 };
		ts->rprovs[j].count += ts->kinds[i].count;
	}
	if (ts->nkinds) {
		qsort(ts->rkinds, ts->nkinds, sizeof(*ts->rkinds), cmp_kind);
		qsort(ts->rprovs, np, sizeof(*ts->rprovs), cmp_prov);
	}
	r->kinds = ts->rkinds;
	r->nkinds = ts->nkinds;
	r->providers = ts->rprovs;
	r->nproviders = np;
	r->other_kinds_events = ts->other_kinds_events;

	err = finish_exceptions(ts);
	if (err)
		return err;
	r->exceptions = ts->rexcs;
	r->nexceptions = ts->rexcs ? ts->nexcs : 0;
	r->exceptions_total = ts->exc_total;
	r->exceptions_other = ts->exc_other;
	err = finish_types_and_sites(ts);
	if (err)
		return err;
	r->exc_types = ts->retypes;
	r->nexc_types = ts->retypes ? ts->netypes : 0;
	r->exc_types_other = ts->etype_other;
	r->contention_sites = ts->rcsites;
	r->ncontention_sites = ts->rcsites ? ts->ncsites : 0;
	r->contention_sites_other = ts->csite_other;
	r->runtime_events = ts->runtime_events;

	err = finish_pauses(ts);
	if (err)
		return err;
	r->gc = ts->gc;

	if (ts->nallocs) {
		ts->rallocs = calloc(ts->nallocs, sizeof(*ts->rallocs));
		if (!ts->rallocs)
			return -ENOMEM;
		for (i = 0; i < ts->nallocs; i++)
			ts->rallocs[i] = (struct ts_alloc){ ts->allocs[i].type, ts->allocs[i].bytes,
							    ts->allocs[i].samples };
		qsort(ts->rallocs, ts->nallocs, sizeof(*ts->rallocs), cmp_alloc);
	}
	r->allocs = ts->rallocs;
	r->nallocs = ts->nallocs;
	r->alloc_bytes = ts->alloc_bytes;
	r->alloc_samples = ts->alloc_samples;
	r->alloc_other_bytes = ts->alloc_other_bytes;
	r->alloc_other_samples = ts->alloc_other_samples;

	r->contention = ts->cont;

	err = finish_flame(ts);
	if (err)
		return err;
	r->flame = ts->flame;
	r->thread_time = ts->lim.thread_time;
	ts->samples.stacks = ts->nstacks;
	r->samples = ts->samples;
	return 0;
}

const struct ts_result *tracestats_result(const struct tracestats *ts)
{
	return &ts->res;
}

