/* SPDX-License-Identifier: MIT */
/*
 * events.c - tracestats' handlers per kind of event: exceptions (groups,
 * first throws and rethrows, sites) and allocation ticks, GC and pauses,
 * lock contention, and sampled stacks.
 */
#include "common/compat.h"

#include "common/log.h"
#include "tracestats/tracestats_int.h"

/* ----- string-keyed groups (exceptions, allocations) ----- */

static bool exc_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct exc_ent *e = &((const struct tracestats *)ctx)->excs[idx];
	const struct str2_key *k = key;

	return !strcmp(e->type, k->a) && !strcmp(e->msg, k->b);
}

static uint64_t exc_hash_idx(const void *ctx, uint32_t idx)
{
	return ((const struct tracestats *)ctx)->excs[idx].hash;
}

static bool alloc_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct alloc_ent *e = &((const struct tracestats *)ctx)->allocs[idx];
	const struct raw_key *k = key;

	return e->rawlen == k->len && (!k->len || !memcmp(e->raw, k->p, k->len));
}

static uint64_t alloc_hash_idx(const void *ctx, uint32_t idx)
{
	return ((const struct tracestats *)ctx)->allocs[idx].hash;
}

/* UTF-8 of s into sb, cut at the cap (a cut string stays valid UTF-8 enough for output). */
static void str16_capped(const struct nt_str16 *s, struct strbuf *sb)
{
	struct nt_str16 c = *s;

	strbuf_reset(sb);
	/* at most 3 bytes per unit: keep the units that surely fit */
	if ((size_t)c.nunits * 3 + 1 > sb->max)
		c.nunits = (uint32_t)((sb->max - 1) / 3);
	if (nt_str16_utf8(&c, sb))
		strbuf_reset(sb);
}

/*
 * Counts one exception of type name (hash h) in the per-type table; *out
 * gets its entry, or NULL past MAX_EXC_TYPES (counted in etype_other).
 */
static int exc_type_count(struct tracestats *ts, const char *name, uint64_t h,
			  struct exc_type_ent **out)
{
	struct exc_type_ent *t;
	uint32_t i;

	*out = NULL;
	/* exceptions come in runs of one type: try the last one first */
	if (ts->last_etype && ts->etypes[ts->last_etype - 1].hash == h &&
	    !strcmp(ts->etypes[ts->last_etype - 1].type, name)) {
		t = &ts->etypes[ts->last_etype - 1];
		t->count++;
		*out = t;
		return 0;
	}
	for (i = 0; i < ts->netypes; i++) {
		t = &ts->etypes[i];
		if (t->hash == h && !strcmp(t->type, name)) {
			t->count++;
			ts->last_etype = i + 1;
			*out = t;
			return 0;
		}
	}
	if (ts->netypes >= MAX_EXC_TYPES) {
		ts->etype_other++;
		return 0;
	}
	if (ts_grow((void **)&ts->etypes, &ts->etypes_cap, ts->netypes, sizeof(*ts->etypes)))
		return -ENOMEM;
	t = &ts->etypes[ts->netypes];
	memset(t, 0, sizeof(*t));
	t->type = strdup(name);
	if (!t->type)
		return -ENOMEM;
	t->hash = h;
	t->count = 1;
	ts->last_etype = ++ts->netypes;
	*out = t;
	return 0;
}

/* SITE_NONE: no site (no stack, or the table is full); SITE_FLAGGED: rethrown by flag */
#define SITE_NONE UINT32_MAX
#define SITE_FLAGGED (UINT32_MAX - 1)

static uint32_t exc_site_of(struct tracestats *ts, const struct nt_event *ev, uint16_t flags)
{
	struct exc_site *e;
	uint32_t n = CT_MIN(ev->nframes, (uint32_t)EXC_SITE_FRAMES), i;
	uint64_t h;

	if (flags & EXC_FLAG_RETHROWN) {
		ts->exc_flagged++;
		return SITE_FLAGGED;
	}
	if (!n) {
		ts->exc_unsited++;
		return SITE_NONE;
	}
	h = ct_hash_bytes(CT_HASH_SEED, ev->stack, n * sizeof(uint64_t));
	if (ts->last_esite && ts->esites[ts->last_esite - 1].hash == h &&
	    ts->esites[ts->last_esite - 1].n == n &&
	    !memcmp(ts->esites[ts->last_esite - 1].ips, ev->stack, n * sizeof(uint64_t))) {
		ts->esites[ts->last_esite - 1].count++;
		return ts->last_esite - 1;
	}
	for (i = 0; i < ts->nesites; i++) {
		e = &ts->esites[i];
		if (e->hash == h && e->n == n && !memcmp(e->ips, ev->stack, n * sizeof(uint64_t))) {
			e->count++;
			ts->last_esite = i + 1;
			return i;
		}
	}
	if (ts->nesites >= MAX_EXC_SITES ||
	    ts_grow((void **)&ts->esites, &ts->esites_cap, ts->nesites, sizeof(*ts->esites))) {
		ts->exc_unsited++;
		return SITE_NONE;
	}
	e = &ts->esites[ts->nesites];
	memset(e, 0, sizeof(*e));
	memcpy(e->ips, ev->stack, n * sizeof(uint64_t));
	e->n = n;
	e->hash = h;
	e->count = 1;
	ts->last_esite = ++ts->nesites;
	return ts->nesites - 1;
}

static uint64_t pair_key(bool type, uint32_t entity, uint32_t site)
{
	return 1 + ((uint64_t)type << 62) + ((uint64_t)entity << 32) + site;
}

static uint64_t pair_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct tracestats *)ctx)->epairs[idx].key);
}

static bool pair_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct tracestats *)ctx)->epairs[idx].key == *(const uint64_t *)key;
}

/* Counts one exception of a group (type false) or type (true) at a site. */
static void exc_pair_add(struct tracestats *ts, bool type, uint32_t entity, uint32_t site,
			 uint64_t *flagged)
{
	uint32_t idx, *slot;
	uint64_t key;

	if (site == SITE_FLAGGED) {
		(*flagged)++;
		return;
	}
	if (site == SITE_NONE)
		return; /* not told apart */
	key = pair_key(type, entity, site);
	idx = ct_itab_get(&ts->epair_tab, ct_hash_u64(key), pair_eq, ts, &key);
	if (idx == UINT32_MAX) {
		/* full: only pairs already there still count */
		if (ts->nepairs >= MAX_EXC_PAIRS || ct_itab_reserve(&ts->epair_tab, pair_hash, ts) ||
		    ts_grow((void **)&ts->epairs, &ts->epairs_cap, ts->nepairs, sizeof(*ts->epairs)))
			return;
		slot = ct_itab_slot(&ts->epair_tab, ct_hash_u64(key), pair_eq, ts, &key);
		*slot = ct_itab_add(&ts->epair_tab, ts->nepairs);
		idx = ts->nepairs++;
		ts->epairs[idx] = (struct exc_pair){ key, 0 };
	}
	ts->epairs[idx].n++;
}

int ts_on_exception(struct tracestats *ts, const struct nt_event *ev)
{
	struct nt_exception ex;
	struct str2_key k;
	struct exc_ent *e;
	uint32_t *slot, n;
	uint64_t h;
	int err;

	struct exc_type_ent *t;
	uint32_t site;

	if (nt_decode_exception(ev->payload, ev->payload_len, ev->meta->version, ev->pointer_size,
				&ex))
		return 0;
	ts->exc_total++;
	site = exc_site_of(ts, ev, ex.flags);
	str16_capped(&ex.type, &ts->sb);
	str16_capped(&ex.message, &ts->sb2);
	k.a = ts->sb.buf;
	k.b = ts->sb2.buf;
	err = exc_type_count(ts, k.a, ct_hash_bytes(CT_HASH_SEED, k.a, ts->sb.len + 1), &t);
	if (err)
		return err;
	if (t)
		exc_pair_add(ts, true, (uint32_t)(t - ts->etypes), site, &t->flagged);
	h = ct_hash_bytes(ct_hash_bytes(CT_HASH_SEED, k.a, ts->sb.len + 1), k.b, ts->sb2.len);
	if (ts->exc_tab.cap) {
		slot = ct_itab_slot(&ts->exc_tab, h, exc_eq, ts, &k);
		if (*slot) {
			ts->excs[*slot - 1].count++;
			exc_pair_add(ts, false, *slot - 1, site, &ts->excs[*slot - 1].flagged);
			return 0;
		}
	}
	if (ts->nexcs >= ts->lim.max_exc_groups) {
		ts->exc_other++;
		if (t)
			t->groups_capped = true;
		return 0;
	}
	if (t)
		t->groups++;
	err = ct_itab_reserve(&ts->exc_tab, exc_hash_idx, ts);
	if (!err)
		err = ts_grow((void **)&ts->excs, &ts->excs_cap, ts->nexcs, sizeof(*ts->excs));
	if (err)
		return err;
	e = &ts->excs[ts->nexcs];
	memset(e, 0, sizeof(*e));
	e->type = strdup(k.a);
	e->msg = strdup(k.b);
	n = CT_MIN(ev->nframes, ts->lim.max_frames);
	e->ips = n ? malloc(n * sizeof(uint64_t)) : NULL;
	if (!e->type || !e->msg || (n && !e->ips)) {
		free(e->type);
		free(e->msg);
		free(e->ips);
		return -ENOMEM;
	}
	if (n)
		memcpy(e->ips, ev->stack, n * sizeof(uint64_t));
	e->nips = n;
	e->count = 1;
	e->hash = h;
	e->eip = ex.eip;
	exc_pair_add(ts, false, ts->nexcs, site, &e->flagged);
	slot = ct_itab_slot(&ts->exc_tab, h, exc_eq, ts, &k);
	*slot = ++ts->nexcs;
	ts->exc_tab.n++;
	return 0;
}

/* Allocation ticks are the most frequent events: the key is the raw UTF-16
 * name, converted to UTF-8 once per type. */
int ts_on_alloc(struct tracestats *ts, const struct nt_event *ev)
{
	struct nt_gc_alloc_tick a;
	struct alloc_ent *e;
	struct raw_key k;
	uint64_t amount, h;
	uint32_t *slot;
	int err;

	if (nt_decode_gc_alloc_tick(ev->payload, ev->payload_len, ev->meta->version,
				    ev->pointer_size, &a))
		return 0;
	amount = ev->meta->version >= 2 ? a.amount64 : a.amount;
	ts->alloc_bytes += amount;
	ts->alloc_samples++;
	k.p = a.type_name.p;
	/* the same cut as str16_capped, so one key is one printed name */
	k.len = CT_MIN(a.type_name.nunits, (ts->lim.max_string - 1) / 3) * 2;
	if (ts->last_alloc && alloc_eq(ts, ts->last_alloc - 1, &k)) {
		ts->allocs[ts->last_alloc - 1].bytes += amount;
		ts->allocs[ts->last_alloc - 1].samples++;
		return 0;
	}
	h = ct_hash_bytes(CT_HASH_SEED, k.p, k.len);
	if (ts->alloc_tab.cap) {
		slot = ct_itab_slot(&ts->alloc_tab, h, alloc_eq, ts, &k);
		if (*slot) {
			ts->allocs[*slot - 1].bytes += amount;
			ts->allocs[*slot - 1].samples++;
			ts->last_alloc = *slot;
			return 0;
		}
	}
	if (ts->nallocs >= ts->lim.max_alloc_types) {
		ts->alloc_other_bytes += amount;
		ts->alloc_other_samples++;
		return 0;
	}
	err = ct_itab_reserve(&ts->alloc_tab, alloc_hash_idx, ts);
	if (!err)
		err = ts_grow((void **)&ts->allocs, &ts->allocs_cap, ts->nallocs, sizeof(*ts->allocs));
	if (err)
		return err;
	str16_capped(&a.type_name, &ts->sb);
	if (!ts->sb.len)
		(void)strbuf_addstr(&ts->sb, "[unknown type]");
	e = &ts->allocs[ts->nallocs];
	e->type = strdup(ts->sb.buf);
	e->raw = malloc(k.len ? k.len : 1);
	if (!e->type || !e->raw) {
		free(e->type);
		free(e->raw);
		return -ENOMEM;
	}
	if (k.len)
		memcpy(e->raw, k.p, k.len);
	e->rawlen = k.len;
	e->bytes = amount;
	e->samples = 1;
	e->hash = h;
	slot = ct_itab_slot(&ts->alloc_tab, h, alloc_eq, ts, &k);
	*slot = ++ts->nallocs;
	ts->last_alloc = ts->nallocs;
	ts->alloc_tab.n++;
	return 0;
}

/* ----- GC ----- */

static bool is_induced(uint32_t reason)
{
	return reason == 1 || reason == 7 || reason == 9 || reason == 10;
}

int ts_on_gc(struct tracestats *ts, const struct nt_event *ev, uint32_t id)
{
	unsigned v = ev->meta->version, ps = ev->pointer_size;
	const void *p = ev->payload;
	size_t len = ev->payload_len;
	size_t i;

	switch (id) {
	case RT_GC_START: {
		struct nt_gc_start s;

		if (nt_decode_gc_start(p, len, v, ps, &s))
			return 0;
		ts->gc.count++;
		if (s.depth < TS_GC_GENS)
			ts->gc.by_gen[s.depth]++;
		ts->gc.by_reason[CT_MIN(s.reason, TS_GC_REASONS - 1u)]++;
		if (is_induced(s.reason) && s.depth < TS_GC_GENS)
			ts->gc.induced_by_gen[s.depth]++;
		if (s.type == 1) {
			ts->gc.background++;
			return 0;
		}
		/* remember it for a GCStart/GCEnd pause; the oldest slot is reused */
		for (i = 0; i < PENDING_GCS && ts->pending[i].used; i++)
			;
		if (i == PENDING_GCS) {
			size_t old = 0;

			for (i = 1; i < PENDING_GCS; i++)
				if (ts->pending[i].ts < ts->pending[old].ts)
					old = i;
			i = old;
		}
		ts->pending[i] = (struct pending_gc){ true, s.count, s.type, ev->timestamp };
		return 0;
	}
	case RT_GC_END: {
		struct nt_gc_end e;

		if (nt_decode_gc_end(p, len, v, ps, &e))
			return 0;
		for (i = 0; i < PENDING_GCS; i++) {
			if (ts->pending[i].used && ts->pending[i].count == e.count) {
				ts->pending[i].used = false;
				if (ev->timestamp >= ts->pending[i].ts)
					return ts_pause_add(ts, &ts->gc_pauses,
							 ts_ticks_to_ns(ts, (uint64_t)ev->timestamp -
								    (uint64_t)ts->pending[i].ts));
			}
		}
		return 0;
	}
	case RT_SUSPEND_EE_BEGIN: {
		struct nt_suspend_ee s;

		if (nt_decode_suspend_ee(p, len, v, ps, &s))
			return 0;
		ts->suspended = true;
		ts->suspend_reason = v >= 1 ? s.reason : SUSPEND_FOR_GC;
		ts->suspend_ts = ev->timestamp;
		return 0;
	}
	case RT_RESTART_EE_END:
		if (!ts->suspended)
			return 0;
		ts->suspended = false;
		if (ts->suspend_reason != SUSPEND_FOR_GC && ts->suspend_reason != SUSPEND_FOR_GC_PREP) {
			ts->gc.other_suspensions++;
			return 0;
		}
		if (ev->timestamp < ts->suspend_ts)
			return 0;
		return ts_pause_add(ts, &ts->ee_pauses,
				 ts_ticks_to_ns(ts, (uint64_t)ev->timestamp - (uint64_t)ts->suspend_ts));
	}
	return 0;
}

/* ----- contention ----- */

static uint64_t cthread_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct tracestats *)ctx)->cthreads[idx].tid);
}

static bool cthread_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct tracestats *)ctx)->cthreads[idx].tid == *(const uint64_t *)key;
}

static struct contend_thread *cthread(struct tracestats *ts, uint64_t tid, bool create)
{
	uint32_t i = ct_itab_get(&ts->cthread_tab, ct_hash_u64(tid), cthread_eq, ts, &tid), *slot;

	if (i != UINT32_MAX)
		return &ts->cthreads[i];
	if (!create || ts->ncthreads >= ts->lim.max_threads ||
	    ct_itab_reserve(&ts->cthread_tab, cthread_hash, ts) ||
	    ts_grow((void **)&ts->cthreads, &ts->cthreads_cap, ts->ncthreads, sizeof(*ts->cthreads)))
		return NULL;
	slot = ct_itab_slot(&ts->cthread_tab, ct_hash_u64(tid), cthread_eq, ts, &tid);
	*slot = ct_itab_add(&ts->cthread_tab, ts->ncthreads);
	ts->cthreads[ts->ncthreads] = (struct contend_thread){ tid, -1, -1 };
	return &ts->cthreads[ts->ncthreads++];
}

/* The site (stack) of a ContentionStart: its index, or -1 past the cap. */
static int32_t cont_site(struct tracestats *ts, const struct nt_event *ev)
{
	uint32_t n = CT_MIN(ev->nframes, ts->lim.max_frames), i;
	uint64_t h = ct_hash_bytes(CT_HASH_SEED, ev->stack, n * sizeof(uint64_t));
	struct cont_site *c;

	for (i = 0; i < ts->ncsites; i++) {
		c = &ts->csites[i];
		if (c->hash == h && c->nips == n &&
		    (!n || !memcmp(c->ips, ev->stack, n * sizeof(uint64_t)))) {
			c->count++;
			return (int32_t)i;
		}
	}
	if (ts->ncsites >= MAX_CONT_SITES ||
	    ts_grow((void **)&ts->csites, &ts->csites_cap, ts->ncsites, sizeof(*ts->csites))) {
		ts->csite_other++;
		return -1;
	}
	c = &ts->csites[ts->ncsites];
	memset(c, 0, sizeof(*c));
	c->ips = n ? malloc(n * sizeof(uint64_t)) : NULL;
	if (n && !c->ips) {
		ts->csite_other++;
		return -1;
	}
	if (n)
		memcpy(c->ips, ev->stack, n * sizeof(uint64_t));
	c->nips = n;
	c->hash = h;
	c->count = 1;
	return (int32_t)ts->ncsites++;
}

void ts_on_contention(struct tracestats *ts, const struct nt_event *ev, bool start)
{
	struct contend_thread *t;
	struct nt_contention c;
	uint64_t ns = 0;
	bool timed = false;
	int32_t site = -1;

	if (start) {
		if (nt_decode_contention_start(ev->payload, ev->payload_len, ev->meta->version,
					       ev->pointer_size, &c))
			return;
		ts->cont.starts++;
		site = cont_site(ts, ev);
		t = cthread(ts, ev->thread_id, true);
		if (t) {
			t->start = ev->timestamp;
			t->site = site;
		}
		return;
	}
	if (nt_decode_contention_stop(ev->payload, ev->payload_len, ev->meta->version,
				      ev->pointer_size, &c))
		return;
	ts->cont.stops++;
	t = cthread(ts, ev->thread_id, false);
	if (ev->meta->version >= 1 && c.duration_ns >= 0 && c.duration_ns < 1.8e19) {
		ns = (uint64_t)c.duration_ns;
		timed = true;
	} else if (t && t->start >= 0 && ev->timestamp >= t->start) {
		ns = ts_ticks_to_ns(ts, (uint64_t)ev->timestamp - (uint64_t)t->start);
		timed = true;
	}
	if (t) {
		t->start = -1;
		site = t->site;
		t->site = -1;
	}
	if (!timed) {
		ts->cont.unmatched++;
		return;
	}
	ts->cont.timed++;
	ts->cont.total_ns += ns;
	if (ns > ts->cont.max_ns)
		ts->cont.max_ns = ns;
	if (site >= 0 && (uint32_t)site < ts->ncsites) {
		struct cont_site *cs = &ts->csites[site];

		cs->timed++;
		cs->total_ns += ns;
		if (ns > cs->max_ns)
			cs->max_ns = ns;
	}
}

/* ----- sampled stacks ----- */

static bool stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct tracestats *ts = ctx;
	const struct stack_ent *e = &ts->stacks[idx];
	const struct stack_key *k = key;

	return e->n == k->n && (!k->n || !memcmp(ts->ips + e->off, k->ips, k->n * sizeof(uint64_t)));
}

static uint64_t stack_hash_idx(const void *ctx, uint32_t idx)
{
	return ((const struct tracestats *)ctx)->stacks[idx].hash;
}

int ts_on_sample(struct tracestats *ts, const struct nt_event *ev)
{
	struct stack_key k;
	struct stack_ent *e;
	uint32_t type, *slot;
	bool truncated = false;
	uint64_t h;
	int err;

	if (nt_decode_thread_sample(ev->payload, ev->payload_len, ev->meta->version,
				    ev->pointer_size, &type))
		type = NT_SAMPLE_ERROR;
	if (type == NT_SAMPLE_MANAGED)
		ts->samples.managed++;
	else if (type == NT_SAMPLE_EXTERNAL)
		ts->samples.external++;
	else
		ts->samples.other++;
	if (type != NT_SAMPLE_MANAGED && !(ts->lim.thread_time && type == NT_SAMPLE_EXTERNAL))
		return 0;
	k.ips = ev->stack;
	k.n = ev->nframes;
	if (k.n > ts->lim.max_frames) {
		k.n = ts->lim.max_frames; /* keep the leaf side */
		ts->samples.truncated++;
		truncated = true;
	}
	h = ct_hash_bytes(CT_HASH_SEED, k.ips, k.n * sizeof(uint64_t)) ^ k.n;
	if (ts->stack_tab.cap) {
		slot = ct_itab_slot(&ts->stack_tab, h, stack_eq, ts, &k);
		if (*slot) {
			ts->stacks[*slot - 1].count++;
			ts->samples.in_flame++;
			return 0;
		}
	}
	if (ts->nstacks >= ts->lim.max_stacks ||
	    (ts->nips + k.n) * sizeof(uint64_t) > ts->lim.max_stack_bytes) {
		ts->samples.dropped++;
		return 0;
	}
	if (ts->nips + k.n > ts->ips_cap) {
		size_t ncap = ts->ips_cap ? ts->ips_cap : 4096;
		uint64_t *nv;

		while (ncap < ts->nips + k.n)
			ncap *= 2;
		nv = realloc(ts->ips, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ts->ips = nv;
		ts->ips_cap = ncap;
	}
	err = ct_itab_reserve(&ts->stack_tab, stack_hash_idx, ts);
	if (!err)
		err = ts_grow((void **)&ts->stacks, &ts->stacks_cap, ts->nstacks, sizeof(*ts->stacks));
	if (err)
		return err;
	if (k.n)
		memcpy(ts->ips + ts->nips, k.ips, k.n * sizeof(uint64_t));
	e = &ts->stacks[ts->nstacks];
	e->hash = h;
	e->off = ts->nips;
	e->n = k.n;
	e->count = 1;
	e->truncated = truncated;
	ts->nips += k.n;
	slot = ct_itab_slot(&ts->stack_tab, h, stack_eq, ts, &k);
	*slot = ++ts->nstacks;
	ts->stack_tab.n++;
	ts->samples.in_flame++;
	return 0;
}

