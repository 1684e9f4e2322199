/* SPDX-License-Identifier: MIT */
/*
 * tracestats.c - one streaming pass over nettrace events: counts, exception
 * groups, GC and pause figures, allocation ticks, contention, and sampled
 * stacks (kept as raw IPs until the end, when the rundown has named the code).
 * This file: limits, life cycle, event kinds and the event entry point; the
 * per-kind handlers are in events.c, the finished report in finish.c.
 */
#include "common/compat.h"

#include "common/log.h"
#include "tracestats/tracestats_int.h"

void ts_limits_default(struct ts_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->max_event_kinds = 4096;
	l->max_exc_groups = 1024;
	l->max_alloc_types = 8192;
	l->max_stacks = 262144;
	l->max_stack_bytes = (size_t)64 << 20;
	l->max_frames = 512;
	l->max_pauses = 1u << 20;
	l->max_threads = 65536;
	l->max_string = 1024;
}

void tracestats_set_lines(struct tracestats *ts, struct srcline *sl)
{
	srcline_free(ts->lines);
	ts->lines = sl;
	ts->lim.lines = sl != NULL;
}

int tracestats_new(struct tracestats **out, const struct ts_limits *limits)
{
	struct tracestats *ts = calloc(1, sizeof(*ts));
	int err;

	*out = NULL;
	if (!ts)
		return -ENOMEM;
	if (limits)
		ts->lim = *limits;
	else
		ts_limits_default(&ts->lim);
	if (!ts->lim.max_frames)
		ts->lim.max_frames = 1;
	if (ts->lim.max_string < 16)
		ts->lim.max_string = 16;
	ts->rng = 0x9E3779B97F4A7C15ULL;
	strbuf_init(&ts->sb, ts->lim.max_string);
	strbuf_init(&ts->sb2, ts->lim.max_string);
	err = nt_methods_new(&ts->methods, 0, 0);
	if (err) {
		free(ts);
		return err;
	}
	if (ts->lim.lines) {
		err = srcline_new(NULL, &ts->lines);
		if (err) {
			nt_methods_free(ts->methods);
	srcline_free(ts->lines);
			free(ts);
			return err;
		}
	}
	*out = ts;
	return 0;
}

void tracestats_free(struct tracestats *ts)
{
	uint32_t i;
	size_t j;

	if (!ts)
		return;
	nt_methods_free(ts->methods);
	free(ts->esites);
	free(ts->epairs);
	ct_itab_release(&ts->epair_tab);
	for (i = 0; i < ts->nkinds; i++) {
		free(ts->kinds[i].provider);
		free(ts->kinds[i].name);
	}
	free(ts->kinds);
	ct_itab_release(&ts->kind_tab);
	free(ts->mcache);
	for (i = 0; i < ts->nexcs; i++) {
		free(ts->excs[i].type);
		free(ts->excs[i].msg);
		free(ts->excs[i].ips);
	}
	free(ts->excs);
	ct_itab_release(&ts->exc_tab);
	for (i = 0; i < ts->netypes; i++)
		free(ts->etypes[i].type);
	free(ts->etypes);
	free(ts->retypes);
	for (i = 0; i < ts->ncsites; i++) {
		free(ts->csites[i].ips);
		if (ts->rcsites) {
			for (j = 0; j < ts->rcsites[i].nframes; j++)
				free((void *)ts->rcsites[i].frames[j]);
			free((void *)ts->rcsites[i].frames);
			free((void *)ts->rcsites[i].raw_frames);
		}
	}
	free(ts->csites);
	free(ts->rcsites);
	for (i = 0; i < ts->nallocs; i++) {
		free(ts->allocs[i].type);
		free(ts->allocs[i].raw);
	}
	free(ts->allocs);
	ct_itab_release(&ts->alloc_tab);
	free(ts->stacks);
	ct_itab_release(&ts->stack_tab);
	free(ts->ips);
	free(ts->ee_pauses.v);
	free(ts->gc_pauses.v);
	free(ts->cthreads);
	ct_itab_release(&ts->cthread_tab);
	strbuf_release(&ts->sb);
	strbuf_release(&ts->sb2);
	free(ts->rkinds);
	free(ts->rprovs);
	if (ts->rexcs)
		for (i = 0; i < ts->nexcs; i++) {
			free((void *)ts->rexcs[i].frames);
			free((void *)ts->rexcs[i].raw_frames);
		}
	free(ts->rexcs);
	for (j = 0; j < ts->nframe_strs; j++)
		free(ts->frame_strs[j]);
	free(ts->frame_strs);
	free(ts->rallocs);
	flame_free(ts->flame);
	free(ts->errmsg);
	free(ts);
}

void tracestats_set_info(struct tracestats *ts, const struct nt_trace_info *info)
{
	ts->info = *info;
	ts->have_info = true;
}

/* Grows an array of n used elements to hold one more. */
int ts_grow(void **v, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = realloc(*v, (size_t)ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

uint64_t ts_ticks_to_ns(const struct tracestats *ts, uint64_t ticks)
{
	int64_t f = ts->info.qpc_freq > 0 ? ts->info.qpc_freq : 1000000000;
	unsigned __int128 v = (unsigned __int128)ticks * 1000000000u / (uint64_t)f;

	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static uint64_t next_rand(struct tracestats *ts)
{
	uint64_t x = ts->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	ts->rng = x;
	return x;
}

/* Exact up to the cap, then reservoir sampling (uniform sample of all). */
int ts_pause_add(struct tracestats *ts, struct pausevec *pv, uint64_t ns)
{
	pv->seen++;
	pv->total += ns;
	if (ns > pv->max)
		pv->max = ns;
	if (pv->n < ts->lim.max_pauses) {
		if (pv->n == pv->cap) {
			size_t ncap = pv->cap ? pv->cap * 2 : 64;
			uint64_t *nv = realloc(pv->v, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			pv->v = nv;
			pv->cap = ncap;
		}
		pv->v[pv->n++] = ns;
		return 0;
	}
	if (pv->n) {
		uint64_t r = next_rand(ts) % pv->seen;

		if (r < pv->n)
			pv->v[r] = ns;
	}
	return 0;
}

/* ----- event kinds ----- */

static bool kind_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct tracestats *ts = ctx;
	const struct kind_key *k = key;
	const struct kind_ent *e = &ts->kinds[idx];

	return e->id == k->id && !strcmp(e->provider, k->provider) && !strcmp(e->name, k->name);
}

static uint64_t kind_hash_idx(const void *ctx, uint32_t idx)
{
	return ((const struct tracestats *)ctx)->kinds[idx].hash;
}

static int32_t kind_lookup(struct tracestats *ts, const struct nt_metadata *m)
{
	struct kind_key k;
	char idname[24];
	uint32_t *slot;
	uint64_t h;
	int err;

	k.provider = m->provider ? m->provider : "";
	k.id = m->event_id;
	k.name = m->event_name && *m->event_name ? m->event_name :
		 tracestats_runtime_event_name(m->provider_kind, m->event_id);
	if (!k.name) {
		snprintf(idname, sizeof(idname), "Event%" PRIu32, m->event_id);
		k.name = idname;
	}
	h = ct_hash_bytes(ct_hash_bytes(CT_HASH_SEED, k.provider, strlen(k.provider)), k.name,
			  strlen(k.name)) ^
	    ct_hash_u64(k.id);
	if (ts->kind_tab.cap) {
		slot = ct_itab_slot(&ts->kind_tab, h, kind_eq, ts, &k);
		if (*slot)
			return (int32_t)(*slot - 1);
	}
	if (ts->nkinds >= ts->lim.max_event_kinds)
		return -1;
	err = ct_itab_reserve(&ts->kind_tab, kind_hash_idx, ts);
	if (!err)
		err = ts_grow((void **)&ts->kinds, &ts->kinds_cap, ts->nkinds, sizeof(*ts->kinds));
	if (err)
		return INT32_MIN;
	ts->kinds[ts->nkinds] = (struct kind_ent){
		.provider = strdup(k.provider), .name = strdup(k.name), .id = k.id, .hash = h
	};
	if (!ts->kinds[ts->nkinds].provider || !ts->kinds[ts->nkinds].name) {
		free(ts->kinds[ts->nkinds].provider);
		free(ts->kinds[ts->nkinds].name);
		return INT32_MIN;
	}
	slot = ct_itab_slot(&ts->kind_tab, h, kind_eq, ts, &k);
	*slot = ++ts->nkinds;
	ts->kind_tab.n++;
	return (int32_t)(ts->nkinds - 1);
}

static int count_kind(struct tracestats *ts, const struct nt_metadata *m)
{
	struct meta_cache *mc = NULL;
	int32_t k;

	if (m->id < META_CACHE_MAX) {
		if (m->id >= ts->mcache_cap) {
			uint32_t ncap = ts->mcache_cap ? ts->mcache_cap : 64;
			struct meta_cache *nc;

			while (ncap <= m->id)
				ncap *= 2;
			nc = realloc(ts->mcache, ncap * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			memset(nc + ts->mcache_cap, 0, (ncap - ts->mcache_cap) * sizeof(*nc));
			ts->mcache = nc;
			ts->mcache_cap = ncap;
		}
		mc = &ts->mcache[m->id];
		if (mc->meta == m) {
			if (mc->kind >= 0)
				ts->kinds[mc->kind].count++;
			else
				ts->other_kinds_events++;
			return 0;
		}
	}
	k = kind_lookup(ts, m);
	if (k == INT32_MIN)
		return -ENOMEM;
	if (mc) {
		mc->meta = m;
		mc->kind = k;
	}
	if (k >= 0)
		ts->kinds[k].count++;
	else
		ts->other_kinds_events++;
	return 0;
}

/* ----- the event entry point ----- */

static int add_method(struct tracestats *ts, const struct nt_event *ev)
{
	int err = nt_methods_add_event(ts->methods, ev);

	if (err == -EBADMSG || err == -EFBIG)
		return 0; /* a bad record or a full table: fewer names, not a failure */
	return err < 0 ? err : 0;
}

int tracestats_add_event(struct tracestats *ts, const struct nt_event *ev)
{
	const struct nt_metadata *m = ev->meta;
	int err;

	if (ts->finished)
		return -EINVAL;
	ts->events++;
	if (!ts->have_ts) {
		ts->first_ts = ts->last_ts = ev->timestamp;
		ts->have_ts = true;
	} else {
		if (ev->timestamp < ts->first_ts)
			ts->first_ts = ev->timestamp;
		if (ev->timestamp > ts->last_ts)
			ts->last_ts = ev->timestamp;
	}
	if (!m)
		return 0;
	if (ts->lines) {
		err = srcline_add_event(ts->lines, ev);
		if (err == -ENOMEM)
			return err; /* a damaged record or a full table: fewer lines */
	}
	err = count_kind(ts, m);
	if (err)
		return err;
	switch (m->provider_kind) {
	case NT_PROV_RUNTIME:
		ts->runtime_events++;
		switch (m->event_id) {
		case RT_GC_START:
		case RT_GC_END:
		case RT_SUSPEND_EE_BEGIN:
		case RT_RESTART_EE_END:
			return ts_on_gc(ts, ev, m->event_id);
		case RT_ALLOC_TICK:
			return ts_on_alloc(ts, ev);
		case RT_EXCEPTION:
			return ts_on_exception(ts, ev);
		case RT_CONTENTION_START:
		case RT_CONTENTION_STOP:
			ts_on_contention(ts, ev, m->event_id == RT_CONTENTION_START);
			return 0;
		case 143:
			return add_method(ts, ev);
		default:
			return 0;
		}
	case NT_PROV_RUNDOWN:
		return add_method(ts, ev);
	case NT_PROV_SAMPLEPROFILER:
		if (m->event_id == 0)
			return ts_on_sample(ts, ev);
		return 0;
	default:
		return 0;
	}
}

static int on_event_cb(void *ctx, const struct nt_event *ev)
{
	return tracestats_add_event(ctx, ev);
}

void tracestats_set_reader_stats(struct tracestats *ts, const struct nt_stats *st)
{
	ts->res.dropped_events = st->dropped;
	ts->res.order_forced = st->order_forced;
	ts->res.order_late = st->order_late;
}

int tracestats_run(struct tracestats *ts, struct nt_reader *r)
{
	const struct nt_handlers h = { .event = on_event_cb };
	struct nt_stats st;
	const char *msg = NULL;
	int err;

	err = nt_reader_open(r);
	if (!err) {
		tracestats_set_info(ts, nt_reader_info(r));
		do
			err = nt_reader_run(r, &h, ts);
		while (err == NT_STOPPED);
	}
	nt_reader_stats(r, &st);
	tracestats_set_reader_stats(ts, &st);
	ts->res.bytes = nt_reader_offset(r);
	if (err < 0) {
		ts->res.error.code = err;
		if (nt_reader_error(r, &ts->res.error.offset, &msg) == 0) {
			/* the failure came from before the reader had an error of its own */
			ts->res.error.offset = nt_reader_offset(r);
			msg = NULL;
		}
		free(ts->errmsg);
		ts->errmsg = strdup(msg ? msg : strerror(-err));
		ts->res.error.msg = ts->errmsg;
	}
	return err < 0 ? err : 0;
}

