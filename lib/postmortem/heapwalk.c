/* SPDX-License-Identifier: MIT */
/*
 * heapwalk.c - the GC heap of a dump, object by object: the regions (or
 * segments) the DAC lists, each walked from its start to its allocated end,
 * an object's size from its method table (base size + length x component
 * size, 8-byte aligned), the threads' and heaps' allocation contexts
 * stepped over (they hold no objects yet). Every object header is read from
 * the dump and checked: a walk that meets an unreadable or impossible object
 * stops in that region and says so (segments_cut).
 */
#include "common/compat.h"

#include "common/hashtab.h"
#include "common/strparse.h"
#include "core/core.h"
#include "dac/dac.h"
#include "postmortem/pm_internal.h"

#define MIN_OBJ 24u

/* The method-table index (lib/common's one hash table) over r->types, keyed by mt. */
static uint64_t mt_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct pm_report *)ctx)->types[idx].mt);
}

static bool mt_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct pm_report *)ctx)->types[idx].mt == *(const uint64_t *)key;
}

struct walk {
	struct pm_report *r;
	struct pm_priv *p;
	struct ct_itab mts;
	size_t cap_types, cap_objs;
	uint64_t *actx_ptr, *actx_lim;
	size_t nactx;
};

/* The type index of mt, added on first sight. -EPROTO: not a method table. */
static int type_of(struct walk *w, uint64_t mt, uint32_t *idx)
{
	struct pm_report *r = w->r;
	struct dac_mt mi;
	char name[4096];
	struct pm_type *t;
	uint32_t *slot;

	if (ct_itab_reserve(&w->mts, mt_hash, r))
		return -ENOMEM;
	slot = ct_itab_slot(&w->mts, ct_hash_u64(mt), mt_eq, r, &mt);
	if (*slot) {
		*idx = *slot - 1;
		return 0;
	}
	if (dac_mt_info(w->p->dac, mt, &mi) || dac_mt_name(w->p->dac, mt, name, sizeof(name)))
		return -EPROTO;
	if (mi.is_free)
		ct_strlcpy(name, "Free", sizeof(name));
	{
		/*
		 * The size the GC uses is the method table's own m_BaseSize (its
		 * second 32-bit word): the DAC reports System.String's without the
		 * terminating char.
		 */
		uint32_t words[2];

		if (dac_read(w->p->dac, mt, words, sizeof(words)) == sizeof(words) &&
		    words[1] >= mi.base_size && words[1] - mi.base_size <= 8)
			mi.base_size = words[1];
	}
	if (r->ntypes == w->cap_types) {
		size_t nc = w->cap_types ? w->cap_types * 2 : 256;
		struct pm_type *nt = realloc(r->types, nc * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		r->types = nt;
		w->cap_types = nc;
	}
	t = &r->types[r->ntypes];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	if (!t->name)
		return -ENOMEM;
	t->mt = mt;
	t->base_size = mi.base_size;
	t->component_size = mi.component_size;
	t->contains_pointers = mi.contains_pointers;
	*idx = (uint32_t)r->ntypes;
	*slot = ct_itab_add(&w->mts, *idx);
	r->ntypes++;
	return 0;
}

static int add_object(struct walk *w, uint64_t addr, uint64_t size, uint32_t type)
{
	struct pm_report *r = w->r;

	if (r->nobjects == w->cap_objs) {
		size_t nc = w->cap_objs ? w->cap_objs * 2 : 65536;
		struct pm_object *no;

		if (nc > PM_MAX_OBJECTS)
			return -EFBIG;
		no = realloc(r->objects, nc * sizeof(*no));
		if (!no)
			return -ENOMEM;
		r->objects = no;
		w->cap_objs = nc;
	}
	r->objects[r->nobjects].addr = addr;
	r->objects[r->nobjects].size = size;
	r->objects[r->nobjects].type = type;
	r->nobjects++;
	r->types[type].count++;
	r->types[type].bytes += size;
	r->heap_bytes += size;
	return 0;
}

/* The end of the allocation context that starts at addr, or 0. */
static uint64_t actx_skip(const struct walk *w, uint64_t addr)
{
	size_t i;

	for (i = 0; i < w->nactx; i++)
		if (w->actx_ptr[i] == addr && w->actx_lim[i] >= addr)
			return w->actx_lim[i] + MIN_OBJ;
	return 0;
}

/* Walks [mem, end): 0, or -EPROTO when it stopped at a bad object (counted). */
static int walk_segment(struct walk *w, uint64_t mem, uint64_t end)
{
	uint64_t a = mem;

	while (a < end) {
		uint64_t mt, size, step, skip = actx_skip(w, a);
		uint32_t idx, len = 0;
		const struct pm_type *t;
		int err;

		if (skip) {
			a = skip;
			continue;
		}
		mt = pm_obj_mt(w->p, a);
		if (!mt)
			return -EPROTO;
		err = type_of(w, mt, &idx);
		if (err)
			return err;
		t = &w->r->types[idx];
		size = t->base_size;
		if (t->component_size) {
			if (dac_read(w->p->dac, a + 8, &len, 4) != 4)
				return -EPROTO;
			size += (uint64_t)len * t->component_size;
		}
		/*
		 * objects lie 8-byte aligned; their size is counted as SOS and ClrMD
		 * count it: unaligned, but never below the smallest object
		 */
		if (size < MIN_OBJ)
			size = MIN_OBJ;
		step = (size + 7) & ~7ull;
		if (step < MIN_OBJ || step > end - a)
			return -EPROTO;
		err = add_object(w, a, size, idx);
		if (err)
			return err;
		a += step;
	}
	return 0;
}

static int cmp_obj(const void *x, const void *y)
{
	const struct pm_object *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static const struct pm_type *sort_types_base;

static int cmp_type_idx(const void *x, const void *y)
{
	const struct pm_type *a = &sort_types_base[*(const uint32_t *)x];
	const struct pm_type *b = &sort_types_base[*(const uint32_t *)y];

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Types by bytes, descending; objects' type indexes follow. */
static int sort_types(struct pm_report *r)
{
	uint32_t *order = malloc((r->ntypes ? r->ntypes : 1) * sizeof(*order));
	uint32_t *newidx = malloc((r->ntypes ? r->ntypes : 1) * sizeof(*newidx));
	struct pm_type *nt = malloc((r->ntypes ? r->ntypes : 1) * sizeof(*nt));
	size_t i;

	if (!order || !newidx || !nt) {
		free(order);
		free(newidx);
		free(nt);
		return -ENOMEM;
	}
	for (i = 0; i < r->ntypes; i++)
		order[i] = (uint32_t)i;
	sort_types_base = r->types;
	qsort(order, r->ntypes, sizeof(*order), cmp_type_idx);
	for (i = 0; i < r->ntypes; i++) {
		nt[i] = r->types[order[i]];
		newidx[order[i]] = (uint32_t)i;
	}
	for (i = 0; i < r->nobjects; i++)
		r->objects[i].type = newidx[r->objects[i].type];
	free(r->types);
	r->types = nt;
	free(order);
	free(newidx);
	return 0;
}

void pm_heap(struct pm_report *r)
{
	struct walk w = { .r = r, .p = r->priv };
	struct dac_segment *segs = NULL;
	size_t nsegs = 0, i, n0 = 0;
	bool server = false;
	int err;

	err = dac_segments(w.p->dac, &segs, &nsegs, PM_MAX_SEGMENTS, &server);
	if (err) {
		snprintf(r->heap_note, sizeof(r->heap_note),
			 err == -EAGAIN ? "the dump was taken during a garbage collection: the heap cannot be walked"
					: "the DAC could not list the GC heap's regions");
		return;
	}
	w.actx_ptr = calloc(w.p->nthreads + 64, sizeof(uint64_t));
	w.actx_lim = calloc(w.p->nthreads + 64, sizeof(uint64_t));
	if (!w.actx_ptr || !w.actx_lim) {
		snprintf(r->heap_note, sizeof(r->heap_note), "out of memory");
		goto out;
	}
	for (i = 0; i < w.p->nthreads; i++)
		if (w.p->threads[i].alloc_ptr) {
			w.actx_ptr[w.nactx] = w.p->threads[i].alloc_ptr;
			w.actx_lim[w.nactx++] = w.p->threads[i].alloc_limit;
		}
	if (!dac_gen0_alloc(w.p->dac, w.actx_ptr + w.nactx, w.actx_lim + w.nactx, &n0, 64))
		w.nactx += n0;
	for (i = 0; i < nsegs; i++) {
		if (segs[i].end <= segs[i].mem)
			continue;
		r->segments++;
		err = walk_segment(&w, segs[i].mem, segs[i].end);
		if (err == -EPROTO) {
			r->segments_cut++;
		} else if (err) {
			snprintf(r->heap_note, sizeof(r->heap_note), "heap walk stopped: %s",
				 strerror(-err));
			break;
		}
	}
	qsort(r->objects, r->nobjects, sizeof(*r->objects), cmp_obj);
	if (sort_types(r))
		snprintf(r->heap_note, sizeof(r->heap_note), "out of memory");
	r->heap_read = true;
	if (r->segments_cut && !r->heap_note[0])
		snprintf(r->heap_note, sizeof(r->heap_note),
			 "%" PRIu64 " of %" PRIu64 " heap regions held an unreadable object: the walk stopped there, counts are a lower bound",
			 r->segments_cut, r->segments);
out:
	ct_itab_release(&w.mts);
	free(w.actx_ptr);
	free(w.actx_lim);
	free(segs);
}
