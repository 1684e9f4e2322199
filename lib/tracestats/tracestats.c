/* SPDX-License-Identifier: MIT */
/*
 * tracestats.c - one streaming pass over nettrace events: counts, exception
 * groups, GC and pause figures, allocation ticks, contention, and sampled
 * stacks (kept as raw IPs until the end, when the rundown has named the code).
 */
#include "common/compat.h"

#include "common/hashtab.h"
#include "common/log.h"
#include "srcline/srcline.h"
#include "tracestats/tracestats.h"

#define RT_GC_START 1
#define RT_GC_END 2
#define RT_RESTART_EE_END 3
#define RT_SUSPEND_EE_BEGIN 9
#define RT_ALLOC_TICK 10
#define RT_EXCEPTION 80
#define RT_CONTENTION_START 81
#define RT_CONTENTION_STOP 91

#define SUSPEND_FOR_GC 1
#define SUSPEND_FOR_GC_PREP 6

#define META_CACHE_MAX (1u << 20)
#define PENDING_GCS 8

/* ----- entries ----- */

struct kind_ent {
	char *provider, *name;
	uint32_t id;
	uint64_t count, hash;
};

struct kind_key {
	const char *provider, *name;
	uint32_t id;
};

/*
 * First throw or rethrow: told apart by the throw's stack, named at the end
 * (the rundown names the framework's code). A rethrow is the same exception
 * passed on by ExceptionDispatchInfo.Throw, which every await of a faulted
 * task runs: one failure going up N async frames raises N+1 events, and the
 * runtime's flags do not say which (.NET 10 marks some of them "nested",
 * others not). Flag 0x4 (rethrown) counts too where a runtime sets it. A
 * throw site is the first EXC_SITE_FRAMES IPs of the stack (the runtime's
 * dispatch frames and the throwing method among them).
 */
#define EXC_SITE_FRAMES 4
#define MAX_EXC_SITES 4096
#define EXC_SITES_PER 16
#define EXC_FLAG_RETHROWN 0x4
enum { SITE_UNKNOWN, SITE_FIRST, SITE_RETHROW };

struct exc_site {
	uint64_t ips[EXC_SITE_FRAMES];
	uint32_t n;
	uint64_t hash, count;
	int kind;
};

/* How groups' and types' exceptions spread over throw sites: (entity, site) -> count. */
#define MAX_EXC_PAIRS (1u << 16)
struct exc_pair {
	uint64_t key; /* 1 + (type? 1 << 62) + entity << 32 + site */
	uint64_t n;
};

struct exc_ent {
	char *type, *msg;
	uint64_t count, hash, eip;
	uint64_t *ips;
	uint32_t nips;
	uint64_t flagged; /* rethrown by the event's flag */
};

/* Exceptions by type: counted for every exception, past the group cap too. */
struct exc_type_ent {
	char *type;
	uint64_t count, hash;
	uint32_t groups;     /* type+message groups of this type */
	bool groups_capped;  /* some of its exceptions fell past the group cap */
	uint64_t flagged;
};

#define MAX_EXC_TYPES 256
#define MAX_CONT_SITES 256

/* ContentionStart stacks: where threads waited for a lock. */
struct cont_site {
	uint64_t hash, count, timed, total_ns, max_ns;
	uint64_t *ips;
	uint32_t nips;
};

struct alloc_ent {
	char *type;     /* UTF-8 */
	uint8_t *raw;   /* the UTF-16LE name as in the payload (the key) */
	uint32_t rawlen;
	uint64_t bytes, samples, hash;
};

struct raw_key {
	const uint8_t *p;
	uint32_t len;
};

struct stack_ent {
	uint64_t hash, off, count;
	uint32_t n;
	bool truncated;
};

struct stack_key {
	const uint64_t *ips;
	uint32_t n;
};

struct str2_key {
	const char *a, *b;
};

struct meta_cache {
	const struct nt_metadata *meta;
	int32_t kind; /* index into kinds, -1: past the cap */
};

struct pending_gc {
	bool used;
	uint32_t count, type;
	int64_t ts;
};

struct contend_thread {
	uint64_t tid;
	int64_t start; /* -1: no open start */
	int32_t site;  /* index of the open start's site, -1 none */
};

struct pausevec {
	uint64_t *v;
	size_t n, cap;
	uint64_t seen, total, max;
};

struct tracestats {
	struct ts_limits lim;
	struct nt_trace_info info;
	bool have_info, finished;
	uint64_t rng;

	struct nt_methods *methods;
	struct srcline *lines; /* ts_limits.lines: source lines of exception frames */

	struct kind_ent *kinds;
	uint32_t nkinds, kinds_cap;
	struct ct_itab kind_tab;
	struct meta_cache *mcache;
	uint32_t mcache_cap;
	uint64_t other_kinds_events;

	struct exc_ent *excs;
	uint32_t nexcs, excs_cap;
	struct ct_itab exc_tab;
	uint64_t exc_total, exc_other;
	struct exc_type_ent *etypes;
	uint32_t netypes, etypes_cap, last_etype;
	uint64_t etype_other;
	struct exc_site *esites;
	uint32_t nesites, esites_cap, last_esite;
	struct exc_pair *epairs; /* in first-seen order */
	uint32_t nepairs, epairs_cap;
	struct ct_itab epair_tab; /* epairs by key */
	uint64_t exc_flagged, exc_unsited; /* rethrown by flag; no site */

	struct alloc_ent *allocs;
	uint32_t nallocs, allocs_cap;
	uint32_t last_alloc; /* index + 1 of the last type seen, 0 none */
	struct ct_itab alloc_tab;
	uint64_t alloc_bytes, alloc_samples, alloc_other_bytes, alloc_other_samples;

	struct stack_ent *stacks;
	uint32_t nstacks, stacks_cap;
	struct ct_itab stack_tab;
	uint64_t *ips;
	size_t nips, ips_cap;

	struct ts_gc gc;
	bool suspended;
	uint32_t suspend_reason;
	int64_t suspend_ts;
	struct pending_gc pending[PENDING_GCS];
	struct pausevec ee_pauses, gc_pauses;

	struct contend_thread *cthreads;
	uint32_t ncthreads, cthreads_cap;
	struct ct_itab cthread_tab; /* cthreads by thread */
	struct ts_contention cont;
	struct cont_site *csites;
	uint32_t ncsites, csites_cap;
	uint64_t csite_other;

	struct ts_samples samples;
	uint64_t runtime_events; /* events of the runtime provider (not rundown) */

	uint64_t events;
	int64_t first_ts, last_ts;
	bool have_ts;

	struct strbuf sb, sb2;

	/* finished results */
	struct ts_result res;
	struct ts_event_kind *rkinds;
	struct ts_provider *rprovs;
	struct ts_exception *rexcs;
	struct ts_exc_type *retypes;
	struct ts_contention_site *rcsites;
	char **frame_strs; /* all exception frame strings, for freeing */
	size_t nframe_strs;
	struct ts_alloc *rallocs;
	struct flame *flame;
	char *errmsg;
};

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
static int grow(void **v, uint32_t *cap, uint32_t n, size_t elem)
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

static uint64_t ticks_to_ns(const struct tracestats *ts, uint64_t ticks)
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
static int pause_add(struct tracestats *ts, struct pausevec *pv, uint64_t ns)
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
		err = grow((void **)&ts->kinds, &ts->kinds_cap, ts->nkinds, sizeof(*ts->kinds));
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
	if (grow((void **)&ts->etypes, &ts->etypes_cap, ts->netypes, sizeof(*ts->etypes)))
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
	    grow((void **)&ts->esites, &ts->esites_cap, ts->nesites, sizeof(*ts->esites))) {
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
		    grow((void **)&ts->epairs, &ts->epairs_cap, ts->nepairs, sizeof(*ts->epairs)))
			return;
		slot = ct_itab_slot(&ts->epair_tab, ct_hash_u64(key), pair_eq, ts, &key);
		*slot = ct_itab_add(&ts->epair_tab, ts->nepairs);
		idx = ts->nepairs++;
		ts->epairs[idx] = (struct exc_pair){ key, 0 };
	}
	ts->epairs[idx].n++;
}

static int on_exception(struct tracestats *ts, const struct nt_event *ev)
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
		err = grow((void **)&ts->excs, &ts->excs_cap, ts->nexcs, sizeof(*ts->excs));
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
static int on_alloc(struct tracestats *ts, const struct nt_event *ev)
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
		err = grow((void **)&ts->allocs, &ts->allocs_cap, ts->nallocs, sizeof(*ts->allocs));
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

static int on_gc(struct tracestats *ts, const struct nt_event *ev, uint32_t id)
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
					return pause_add(ts, &ts->gc_pauses,
							 ticks_to_ns(ts, (uint64_t)ev->timestamp -
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
		return pause_add(ts, &ts->ee_pauses,
				 ticks_to_ns(ts, (uint64_t)ev->timestamp - (uint64_t)ts->suspend_ts));
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
	    grow((void **)&ts->cthreads, &ts->cthreads_cap, ts->ncthreads, sizeof(*ts->cthreads)))
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
	    grow((void **)&ts->csites, &ts->csites_cap, ts->ncsites, sizeof(*ts->csites))) {
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

static void on_contention(struct tracestats *ts, const struct nt_event *ev, bool start)
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
		ns = ticks_to_ns(ts, (uint64_t)ev->timestamp - (uint64_t)t->start);
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

static int on_sample(struct tracestats *ts, const struct nt_event *ev)
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
		err = grow((void **)&ts->stacks, &ts->stacks_cap, ts->nstacks, sizeof(*ts->stacks));
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
			return on_gc(ts, ev, m->event_id);
		case RT_ALLOC_TICK:
			return on_alloc(ts, ev);
		case RT_EXCEPTION:
			return on_exception(ts, ev);
		case RT_CONTENTION_START:
		case RT_CONTENTION_STOP:
			on_contention(ts, ev, m->event_id == RT_CONTENTION_START);
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
			return on_sample(ts, ev);
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
	uint32_t k;

	for (k = first; k < n; k++) {
		struct pe_srcline l;
		enum srcline_why why;
		uint32_t il;
		int r;

		owned[k] = NULL;
		if (names[k][0] == '[')
			continue;
		r = srcline_lookup(ts->lines, ips[idx[k - first]], idx[k - first] > 0, &l, &il, &why);
		if (r == -ENOMEM)
			return r;
		if (r)
			continue; /* the name without a line: nothing guessed */
		if (asprintf(&owned[k], "%s in %s:line %u", names[k], l.file, l.line) < 0) {
			owned[k] = NULL;
			return -ENOMEM;
		}
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
	r->duration_ns = ts->have_ts ? ticks_to_ns(ts, (uint64_t)ts->last_ts - (uint64_t)r->start_ts) : 0;
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
