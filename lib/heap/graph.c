/* SPDX-License-Identifier: MIT */
/*
 * graph.c - the object graph built from the runtime's heap-walk events.
 *
 * The builder keeps only what the graph needs while the stream goes by:
 * per node {address, size, type id, edge count}, per edge the target
 * address, the roots, and the type table. Nodes and edges are two parallel
 * streams (a node owns the next edge_count edges); each stream's block
 * Index must grow by exactly one, else blocks were lost and the graph would
 * be wrong (docs/internals/heap.md).
 */
#include "common/compat.h"

#include "common/utf16.h"
#include "common/hashtab.h"
#include "common/strparse.h"
#include "heap/heap.h"

/* GC events of Microsoft-Windows-DotNETRuntime */
#define EV_GC_START 1
#define EV_GC_END 2
#define EV_RESTART_EE_END 3
#define EV_SUSPEND_EE_BEGIN 9

/* A growable array of fixed-size elements. */
struct vec {
	void *p;
	size_t n, cap, elem;
};

static void *vec_push(struct vec *v, size_t max)
{
	if (v->n >= max)
		return NULL;
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap + v->cap / 2 : 4096;
		void *np;

		if (ncap > max)
			ncap = max;
		np = realloc(v->p, ncap * v->elem);
		if (!np)
			return NULL;
		v->p = np;
		v->cap = ncap;
	}
	return (char *)v->p + v->n++ * v->elem;
}

static void vec_free(struct vec *v)
{
	free(v->p);
	v->p = NULL;
	v->n = v->cap = 0;
}


struct broot {
	uint64_t addr;
	uint8_t kind;
	uint32_t flags;
};

struct stream_idx {
	bool seen;
	uint32_t next;
	uint64_t gaps;
};

struct heap_builder {
	struct heap_limits lim;
	/* nodes as they arrive, one array per field (they become the graph's arrays) */
	struct vec naddr;  /* uint64_t */
	struct vec nsize;  /* uint64_t */
	struct vec ntype;  /* uint32_t index into types (a placeholder until its BulkType comes) */
	struct vec nedges; /* uint32_t */
	struct vec edges;  /* uint64_t target addresses */
	struct vec roots;  /* struct broot */
	struct ct_itab type_ix; /* types by id (not the placeholder for id 0) */
	struct vec types;       /* struct heap_type */
	size_t type_bytes;
	struct stream_idx sn, se, sr, sc;
	uint64_t edges_expected;
	uint64_t last_tid;
	uint32_t last_tix, zero_tix;
	bool in_gc, done, past;
	uint32_t gc_count;
	int64_t gc_start_ts, suspend_ts, pause_start;
	struct heap_meta meta;
};

static uint64_t type_hash(const void *ctx, uint32_t idx)
{
	const struct heap_builder *b = ctx;

	return ct_hash_u64(((const struct heap_type *)b->types.p)[idx].id);
}

static bool type_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct heap_builder *b = ctx;

	return ((const struct heap_type *)b->types.p)[idx].id == *(const uint64_t *)key;
}

/* The index in types of type id, or UINT32_MAX. */
static uint32_t type_find(const struct heap_builder *b, uint64_t id)
{
	return ct_itab_get(&b->type_ix, ct_hash_u64(id), type_eq, b, &id);
}

/* Indexes the last type pushed (its id not in the index yet). */
static int type_index_last(struct heap_builder *b)
{
	uint32_t idx = (uint32_t)(b->types.n - 1), *slot;
	uint64_t id = ((const struct heap_type *)b->types.p)[idx].id;
	int err = ct_itab_reserve(&b->type_ix, type_hash, b);

	if (err)
		return err;
	slot = ct_itab_slot(&b->type_ix, ct_hash_u64(id), type_eq, b, &id);
	*slot = ct_itab_add(&b->type_ix, idx);
	return 0;
}

int heap_builder_new(struct heap_builder **out, const struct heap_limits *lim)
{
	struct heap_builder *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->lim.max_nodes = lim && lim->max_nodes ? lim->max_nodes : HEAP_MAX_NODES;
	b->lim.max_edges = lim && lim->max_edges ? lim->max_edges : HEAP_MAX_EDGES;
	b->naddr.elem = sizeof(uint64_t);
	b->nsize.elem = sizeof(uint64_t);
	b->ntype.elem = sizeof(uint32_t);
	b->nedges.elem = sizeof(uint32_t);
	b->edges.elem = sizeof(uint64_t);
	b->roots.elem = sizeof(struct broot);
	b->types.elem = sizeof(struct heap_type);
	b->last_tix = HEAP_NONE;
	b->zero_tix = HEAP_NONE;
	*out = b;
	return 0;
}

static void types_free(struct heap_type *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

void heap_builder_free(struct heap_builder *b)
{
	if (!b)
		return;
	vec_free(&b->naddr);
	vec_free(&b->nsize);
	vec_free(&b->ntype);
	vec_free(&b->nedges);
	vec_free(&b->edges);
	vec_free(&b->roots);
	types_free(b->types.p, b->types.n);
	ct_itab_release(&b->type_ix);
	free(b);
}

bool heap_builder_done(const struct heap_builder *b)
{
	return b->done;
}

void heap_builder_counts(const struct heap_builder *b, uint64_t *nodes, uint64_t *edges)
{
	*nodes = b->naddr.n;
	*edges = b->edges.n;
}

uint64_t heap_builder_lost(const struct heap_builder *b)
{
	return b->sn.gaps + b->se.gaps + b->sr.gaps + b->sc.gaps;
}

struct heap_meta *heap_builder_meta(struct heap_builder *b)
{
	return &b->meta;
}

static void stream_step(struct stream_idx *s, uint32_t index)
{
	if (s->seen && index != s->next)
		s->gaps++;
	s->seen = true;
	s->next = index + 1;
}

/*
 * The runtime's type name made C#-like (dotnet-gcdump's rules): `N arity
 * suffixes removed, [ ] become < >, and <> (an array) becomes [].
 */
static int type_name_clean(const struct nt_str16 *s, char **out)
{
	struct strbuf raw = STRBUF_INIT_MAX(HEAP_TYPE_NAME_MAX * 4);
	struct strbuf sb = STRBUF_INIT_MAX(HEAP_TYPE_NAME_MAX + 1);
	size_t i;
	int err;

	*out = NULL;
	err = nt_str16_utf8(s, &raw);
	for (i = 0; !err && i < raw.len && sb.len < HEAP_TYPE_NAME_MAX; i++) {
		char c = raw.buf[i];

		if (c == '`' && i + 1 < raw.len && raw.buf[i + 1] >= '0' && raw.buf[i + 1] <= '9') {
			while (i + 1 < raw.len && raw.buf[i + 1] >= '0' && raw.buf[i + 1] <= '9')
				i++;
			continue;
		}
		if (c == '[') {
			/* an array rank ([] [,] [,,]) stays as it is; generic arguments get < > */
			size_t j = i + 1;

			while (j < raw.len && raw.buf[j] == ',')
				j++;
			if (j < raw.len && raw.buf[j] == ']') {
				err = strbuf_add(&sb, raw.buf + i, j - i + 1);
				i = j;
				continue;
			}
			c = '<';
		} else if (c == ']') {
			c = '>';
		}
		if (c == '>' && sb.len && sb.buf[sb.len - 1] == '<') {
			sb.buf[sb.len - 1] = '[';
			c = ']';
		}
		err = strbuf_addch(&sb, c);
	}
	if (!err && sb.len == 0)
		err = strbuf_addstr(&sb, "?");
	strbuf_release(&raw);
	if (err) {
		strbuf_release(&sb);
		return err;
	}
	*out = strbuf_detach(&sb, NULL);
	return 0;
}

static int add_type(struct heap_builder *b, uint64_t id, char *name)
{
	uint32_t ix = type_find(b, id);
	struct heap_type *t;
	int err;

	if (ix != UINT32_MAX) {
		t = (struct heap_type *)b->types.p + ix;
		free(t->name);
		t->name = name;
		return 0;
	}
	if (b->types.n >= HEAP_MAX_TYPES || b->type_bytes > (size_t)256 << 20) {
		free(name);
		return -EFBIG;
	}
	t = vec_push(&b->types, HEAP_MAX_TYPES);
	if (!t) {
		free(name);
		return -ENOMEM;
	}
	t->id = id;
	t->name = name;
	b->type_bytes += strlen(name) + 1;
	err = type_index_last(b);
	if (err) {
		b->types.n--;
		free(name);
	}
	return err;
}

/* The index of type id tid, a nameless placeholder when no BulkType named it yet. */
static int type_index(struct heap_builder *b, uint64_t tid, uint32_t *out)
{
	uint32_t ix;
	struct heap_type *t;
	int err;

	if (tid == b->last_tid && b->last_tix != HEAP_NONE) {
		*out = b->last_tix;
		return 0;
	}
	if (tid == 0 && b->zero_tix != HEAP_NONE) {
		*out = b->zero_tix;
		return 0;
	}
	ix = tid ? type_find(b, tid) : UINT32_MAX;
	if (ix == UINT32_MAX) {
		if (b->types.n >= HEAP_MAX_TYPES)
			return -EFBIG;
		t = vec_push(&b->types, HEAP_MAX_TYPES);
		if (!t)
			return -ENOMEM;
		t->id = tid;
		t->name = NULL;
		if (tid) {
			err = type_index_last(b);
			if (err) {
				b->types.n--;
				return err;
			}
			ix = (uint32_t)(b->types.n - 1);
		} else {
			b->zero_tix = (uint32_t)(b->types.n - 1);
			*out = b->zero_tix;
			return 0;
		}
	}
	b->last_tid = tid;
	b->last_tix = ix;
	*out = ix;
	return 0;
}

static int on_bulk_type(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	struct nt_bulk_type t;
	size_t off = 0;
	uint32_t i = 0;
	int err, r;

	err = nt_decode_bulk_type(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	while ((r = nt_bulk_type_next(&bulk, &off, &i, &t)) == 0) {
		char *name;

		if (!t.type_id)
			continue;
		err = type_name_clean(&t.name, &name);
		if (!err)
			err = add_type(b, t.type_id, name);
		if (err)
			return err;
	}
	return r < 0 ? r : 0;
}

static int on_nodes(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	uint32_t i;
	int err;

	err = nt_decode_gc_bulk_node(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	stream_step(&b->sn, bulk.index);
	for (i = 0; i < bulk.count; i++) {
		struct nt_gc_node n;
		uint64_t *pa, *ps;
		uint32_t *pt, *pe;

		nt_gc_bulk_node_get(&bulk, i, &n);
		if (n.edge_count > UINT32_MAX)
			return -EBADMSG;
		pa = vec_push(&b->naddr, b->lim.max_nodes);
		ps = pa ? vec_push(&b->nsize, b->lim.max_nodes) : NULL;
		pt = ps ? vec_push(&b->ntype, b->lim.max_nodes) : NULL;
		pe = pt ? vec_push(&b->nedges, b->lim.max_nodes) : NULL;
		if (!pe) {
			bool full = b->naddr.n >= b->lim.max_nodes;

			/* all four arrays keep the same length */
			b->naddr.n = b->nsize.n = b->ntype.n = b->nedges.n =
				CT_MIN(CT_MIN(b->naddr.n, b->nsize.n), CT_MIN(b->ntype.n, b->nedges.n));
			return full ? -EFBIG : -ENOMEM;
		}
		*pa = n.address;
		*ps = n.size;
		*pe = (uint32_t)n.edge_count;
		err = type_index(b, n.type_id, pt);
		if (err) {
			b->naddr.n--;
			b->nsize.n--;
			b->ntype.n--;
			b->nedges.n--;
			return err;
		}
		b->edges_expected += n.edge_count;
	}
	return 0;
}

static int on_edges(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	uint32_t i;
	int err;

	err = nt_decode_gc_bulk_edge(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	stream_step(&b->se, bulk.index);
	for (i = 0; i < bulk.count; i++) {
		uint64_t *e = vec_push(&b->edges, b->lim.max_edges);

		if (!e)
			return b->edges.n >= b->lim.max_edges ? -EFBIG : -ENOMEM;
		*e = nt_gc_bulk_edge_get(&bulk, i);
	}
	return 0;
}

static int push_root(struct heap_builder *b, uint64_t addr, uint8_t kind, uint32_t flags)
{
	struct broot *r;

	if (!addr)
		return 0;
	if (flags & NT_ROOT_FLAG_WEAKREF) {
		b->meta.weak_roots++;
		return 0;
	}
	r = vec_push(&b->roots, HEAP_MAX_ROOTS);
	if (!r)
		return b->roots.n >= HEAP_MAX_ROOTS ? -EFBIG : -ENOMEM;
	r->addr = addr;
	r->kind = kind;
	r->flags = flags;
	return 0;
}

static int on_roots(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	uint32_t i;
	int err;

	err = nt_decode_gc_bulk_root(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	stream_step(&b->sr, bulk.index);
	for (i = 0; i < bulk.count; i++) {
		struct nt_gc_root r;

		nt_gc_bulk_root_get(&bulk, i, &r);
		err = push_root(b, r.address, r.kind < HEAP_ROOT_DEPENDENT ? r.kind : HEAP_ROOT_OVERFLOW,
				r.flags);
		if (err)
			return err;
	}
	return 0;
}

static int on_cwt(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	uint32_t i;
	int err;

	err = nt_decode_gc_bulk_cwt(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	stream_step(&b->sc, bulk.index);
	for (i = 0; i < bulk.count; i++) {
		struct nt_gc_cwt c;

		nt_gc_bulk_cwt_get(&bulk, i, &c);
		/* the value lives while the key does: rooted when the key is a node (checked at finish) */
		err = push_root(b, c.value, HEAP_ROOT_DEPENDENT, 0);
		if (err)
			return err;
	}
	return 0;
}

static int on_statics(struct heap_builder *b, const struct nt_event *ev)
{
	struct nt_gc_bulk bulk;
	struct nt_gc_static_root s;
	size_t off = 0;
	uint32_t i = 0;
	int err, r;

	err = nt_decode_gc_bulk_static_root(ev->payload, ev->payload_len, ev->pointer_size, &bulk);
	if (err)
		return err;
	while ((r = nt_gc_bulk_static_root_next(&bulk, &off, &i, &s)) == 0) {
		err = push_root(b, s.object, HEAP_ROOT_STATIC, 0);
		if (err)
			return err;
	}
	return r < 0 ? r : 0;
}

int heap_builder_event(struct heap_builder *b, const struct nt_event *ev, int64_t qpc_freq)
{
	const struct nt_metadata *m = ev->meta;

	if (m->provider_kind != NT_PROV_RUNTIME)
		return 0;
	if (!b->meta.pointer_size)
		b->meta.pointer_size = ev->pointer_size;
	switch (m->event_id) {
	case NT_EV_BULK_TYPE:
		/* kept whenever they come: other events can trigger them */
		return on_bulk_type(b, ev);
	case EV_SUSPEND_EE_BEGIN:
		if (!b->done)
			b->suspend_ts = ev->timestamp;
		return 0;
	case EV_GC_START: {
		struct nt_gc_start gs;

		if (nt_decode_gc_start(ev->payload, ev->payload_len, m->version, ev->pointer_size, &gs))
			return -EBADMSG;
		if (b->in_gc || b->done) {
			/* a later GC: its events are not part of this snapshot */
			if (gs.count != b->gc_count)
				b->past = true;
			return 0;
		}
		/* the induced, blocking gen-2 GC (dotnet-gcdump's rule; type 1 is background) */
		if (gs.depth < 2 || gs.type == 1)
			return 0;
		b->in_gc = true;
		b->gc_count = gs.count;
		b->gc_start_ts = ev->timestamp;
		b->pause_start = b->suspend_ts;
		b->meta.gc_count = gs.count;
		b->meta.gc_depth = gs.depth;
		b->meta.gc_reason = gs.reason;
		b->meta.gc_type = gs.type;
		return 0;
	}
	case EV_GC_END: {
		struct nt_gc_end ge;

		if (nt_decode_gc_end(ev->payload, ev->payload_len, m->version, ev->pointer_size, &ge))
			return -EBADMSG;
		if (!b->in_gc || ge.count != b->gc_count)
			return 0;
		b->in_gc = false;
		b->done = true;
		if (qpc_freq > 0 && ev->timestamp > b->gc_start_ts)
			b->meta.gc_ns = (uint64_t)((double)(ev->timestamp - b->gc_start_ts) * 1e9 /
						   (double)qpc_freq);
		return 1;
	}
	case EV_RESTART_EE_END:
		if (b->done && b->pause_start && !b->meta.pause_ns && qpc_freq > 0 &&
		    ev->timestamp > b->pause_start)
			b->meta.pause_ns = (uint64_t)((double)(ev->timestamp - b->pause_start) * 1e9 /
						      (double)qpc_freq);
		return 0;
	default:
		break;
	}
	/* heap-walk events count only from the snapshot's GC until the next GC */
	if (!(b->in_gc || b->done) || b->past)
		return 0;
	switch (m->event_id) {
	case NT_EV_GC_BULK_NODE:
		return on_nodes(b, ev);
	case NT_EV_GC_BULK_EDGE:
		return on_edges(b, ev);
	case NT_EV_GC_BULK_ROOT_EDGE:
		return on_roots(b, ev);
	case NT_EV_GC_BULK_ROOT_CWT:
		return on_cwt(b, ev);
	case NT_EV_GC_BULK_ROOT_STATIC:
		return on_statics(b, ev);
	default:
		return 0;
	}
}

int heap_builder_nodes_of_type(const struct heap_builder *b, const char *type_name,
			       int (*fn)(void *ctx, uint64_t addr, uint64_t size, uint64_t type_id),
			       void *ctx)
{
	const struct heap_type *t = b->types.p;
	const uint64_t *na = b->naddr.p, *ns = b->nsize.p;
	const uint32_t *nt = b->ntype.p;
	size_t i, ix = b->types.n;
	int err;

	for (i = 0; i < b->types.n; i++)
		if (t[i].name && !strcmp(t[i].name, type_name) && t[i].id) {
			ix = i;
			break;
		}
	if (ix == b->types.n)
		return 0;
	for (i = 0; i < b->naddr.n; i++)
		if (nt[i] == ix && (err = fn(ctx, na[i], ns[i], t[ix].id)))
			return err;
	return 0;
}

/* ----- finishing ----- */

/*
 * Sorts perm by node address: a natural merge sort, since the walk gives a
 * few long ascending runs (one per heap region); stable, so a duplicate
 * report keeps its arrival order. O(n log runs); tmp has n entries.
 */
static void sort_by_addr(const uint64_t *addr, uint32_t *perm, uint32_t *tmp, uint32_t n)
{
	uint32_t *src = perm, *dst = tmp;
	bool sorted = false;

	while (!sorted) {
		uint32_t i = 0, runs = 0;

		while (i < n) {
			uint32_t a = i, am, b, bm, o = i;

			for (am = a + 1; am < n && addr[src[am - 1]] <= addr[src[am]]; am++)
				;
			b = am;
			for (bm = b + (b < n); bm < n && addr[src[bm - 1]] <= addr[src[bm]]; bm++)
				;
			if (b >= n)
				bm = n;
			while (a < am && b < bm)
				dst[o++] = addr[src[b]] < addr[src[a]] ? src[b++] : src[a++];
			while (a < am)
				dst[o++] = src[a++];
			while (b < bm)
				dst[o++] = src[b++];
			i = bm;
			runs++;
		}
		sorted = runs <= 1;
		{
			uint32_t *t = src;

			src = dst;
			dst = t;
		}
	}
	if (src != perm)
		memcpy(perm, src, (size_t)n * sizeof(*perm));
}

/*
 * Index of the node at address a, or HEAP_NONE: an exponential search from
 * *hint (references often point near the previous one: array elements,
 * objects allocated together), then binary search.
 */
static uint32_t find_node(const uint64_t *addr, uint32_t n, uint64_t a, uint32_t *hint)
{
	uint32_t lo = 0, hi = n, h = *hint < n ? *hint : 0, step = 1;

	if (addr[h] == a)
		return h;
	if (addr[h] < a) {
		lo = h + 1;
		while (lo < n && addr[lo] < a && step < n) {
			h = lo;
			lo += step;
			step *= 2;
		}
		if (lo < n && addr[lo] == a) {
			*hint = lo;
			return lo;
		}
		hi = lo < n ? lo : n;
		lo = h + 1;
	} else {
		hi = h;
		while (hi > step && addr[hi - step] > a) {
			hi -= step;
			step *= 2;
		}
		lo = hi > step ? hi - step : 0;
	}

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && addr[lo] == a) {
		*hint = lo;
		return lo;
	}
	return HEAP_NONE;
}

static int cmp_root(const void *a, const void *b)
{
	const struct heap_root *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->flags < y->flags ? -1 : x->flags > y->flags;
}

/* Shrinks a vec to its length (the growth slack goes back). */
static void vec_shrink(struct vec *v, size_t extra)
{
	void *np = realloc(v->p, (v->n + extra ? v->n + extra : 1) * v->elem);

	if (np) {
		v->p = np;
		v->cap = v->n + extra;
	}
}

/*
 * v's elements in perm's order (x[i] = x[perm[i]]), gathered into *spare
 * (room for n elements of 8 bytes), which takes the old array's place; *spare
 * gets the old array for the next gather. Writes are sequential and reads
 * come in runs (a walk arrives as a few ascending runs, one per heap region),
 * several times faster than following the permutation's cycles in place.
 */
static void gather(struct vec *v, void **spare, const uint32_t *perm, uint32_t n)
{
	void *old = v->p;
	uint32_t i;

	if (v->elem == sizeof(uint64_t)) {
		const uint64_t *src = old;
		uint64_t *dst = *spare;

		for (i = 0; i < n; i++)
			dst[i] = src[perm[i]];
	} else {
		const uint32_t *src = old;
		uint32_t *dst = *spare;

		for (i = 0; i < n; i++)
			dst[i] = src[perm[i]];
	}
	v->p = *spare;
	v->cap = n;
	*spare = old;
}

int heap_builder_finish(struct heap_builder *b, struct heap_graph **out)
{
	const uint64_t *be = b->edges.p;
	uint32_t n = (uint32_t)b->naddr.n, i, *perm = NULL, *off, hint = 0;
	void *spare = NULL;
	struct heap_graph *g;
	uint64_t e;
	int err = -ENOMEM;

	*out = NULL;
	if (n == 0)
		return -ENODATA;
	if (heap_builder_lost(b) || b->edges_expected != b->edges.n)
		return -EPROTO;
	vec_shrink(&b->naddr, 0);
	vec_shrink(&b->nsize, 0);
	vec_shrink(&b->ntype, 0);
	vec_shrink(&b->nedges, 1);
	vec_shrink(&b->edges, 0);
	be = b->edges.p;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->meta = b->meta;
	g->meta.lost_events = 0;
	g->nnodes = n;
	g->edge_start = malloc(((size_t)n + 1) * sizeof(*g->edge_start));
	perm = malloc((size_t)n * sizeof(*perm));
	if (!g->edge_start || !perm)
		goto fail;
	/* edge counts become offsets into the arrival-order edge stream */
	off = b->nedges.p;
	for (i = 0, e = 0; i <= n; i++) {
		uint32_t c = i < n ? off[i] : 0;

		off[i] = (uint32_t)e;
		e += c;
	}
	/* sorted by address (one heap's walk comes in order: then no sort) */
	for (i = 0; i < n; i++)
		perm[i] = i;
	{
		const uint64_t *a = b->naddr.p;

		for (i = 1; i < n && a[i - 1] <= a[i]; i++)
			;
		if (i < n) {
			uint32_t *tmp = malloc((size_t)n * sizeof(*tmp));

			if (!tmp)
				goto fail;
			sort_by_addr(a, perm, tmp, n);
			free(tmp);
			/* one spare array of n x 8 bytes at a time (the sort's is freed) */
			spare = malloc((size_t)n * sizeof(uint64_t));
			if (!spare)
				goto fail;
			gather(&b->naddr, &spare, perm, n);
			gather(&b->nsize, &spare, perm, n);
			gather(&b->ntype, &spare, perm, n);
			free(spare);
			spare = NULL;
			vec_shrink(&b->ntype, 0); /* it took an 8-byte array */
		}
	}
	/* the node arrays move to the graph */
	g->addr = b->naddr.p;
	g->size = b->nsize.p;
	g->type = b->ntype.p;
	b->naddr.p = b->nsize.p = b->ntype.p = NULL;
	b->naddr.n = b->nsize.n = b->ntype.n = 0;
	/* types never named by a BulkType get a placeholder name */
	{
		struct heap_type *t = b->types.p;
		size_t k;

		for (k = 0; k < b->types.n; k++)
			if (!t[k].name) {
				t[k].name = malloc(32);
				if (!t[k].name)
					goto fail;
				if (t[k].id)
					snprintf(t[k].name, 32, "UNKNOWN 0x%" PRIx64, t[k].id);
				else
					snprintf(t[k].name, 32, "UNKNOWN");
			}
	}
	/* edges: resolved to node indexes; unknown targets counted and dropped */
	g->edges = malloc((b->edges.n ? b->edges.n : 1) * sizeof(*g->edges));
	if (!g->edges)
		goto fail;
	for (i = 0, e = 0; i < n; i++) {
		uint32_t k, from = off[perm[i]], to = off[perm[i] + 1];

		g->edge_start[i] = (uint32_t)e;
		if (i && g->addr[i] == g->addr[i - 1])
			continue; /* a duplicate report: no edges of its own */
		for (k = from; k < to; k++) {
			uint32_t t = find_node(g->addr, n, be[k], &hint);

			if (t == HEAP_NONE) {
				g->meta.unresolved_edges++;
				continue;
			}
			g->edges[e++] = t;
		}
	}
	g->edge_start[n] = (uint32_t)e;
	g->nedges = (uint32_t)e;
	free(perm);
	perm = NULL;
	vec_free(&b->edges);
	vec_free(&b->nedges);
	/* roots */
	g->roots = malloc((b->roots.n ? b->roots.n : 1) * sizeof(*g->roots));
	if (!g->roots)
		goto fail;
	for (i = 0; i < b->roots.n; i++) {
		const struct broot *r = (const struct broot *)b->roots.p + i;
		uint32_t node = find_node(g->addr, n, r->addr, &hint);

		if (node == HEAP_NONE)
			continue;
		g->roots[g->nroots].node = node;
		g->roots[g->nroots].kind = r->kind;
		g->roots[g->nroots].flags = r->flags;
		g->nroots++;
	}
	if (g->nroots > 1) {
		uint32_t w = 1;

		qsort(g->roots, g->nroots, sizeof(*g->roots), cmp_root);
		for (i = 1; i < g->nroots; i++)
			if (cmp_root(&g->roots[i], &g->roots[w - 1]))
				g->roots[w++] = g->roots[i];
		g->nroots = w;
	}
	/* types move to the graph */
	g->types = b->types.p;
	g->ntypes = (uint32_t)b->types.n;
	b->types.p = NULL;
	b->types.n = b->types.cap = 0;
	ct_itab_release(&b->type_ix);
	vec_free(&b->roots);
	*out = g;
	return 0;
fail:
	free(perm);
	free(spare);
	heap_graph_free(g);
	return err ? err : -ENOMEM;
}

void heap_graph_free(struct heap_graph *g)
{
	uint32_t i;

	if (!g)
		return;
	free(g->addr);
	free(g->size);
	free(g->type);
	free(g->edge_start);
	free(g->edges);
	types_free(g->types, g->ntypes);
	free(g->roots);
	for (i = 0; i < g->ndups; i++)
		free(g->dups[i].value);
	free(g->dups);
	free(g);
}

uint64_t heap_graph_bytes(const struct heap_graph *g)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < g->nnodes; i++)
		s += g->size[i];
	return s;
}

uint32_t heap_graph_type_find(const struct heap_graph *g, const char *name)
{
	uint32_t i, first = HEAP_NONE, n = 0, best = HEAP_NONE;
	uint64_t best_count = 0;

	for (i = 0; i < g->ntypes; i++)
		if (!strcmp(g->types[i].name, name)) {
			if (first == HEAP_NONE)
				first = i;
			n++;
		}
	if (n <= 1)
		return first;
	/* several method tables with that name: the one with the most objects */
	for (i = first; i < g->ntypes; i++) {
		uint64_t c = 0;
		uint32_t v;

		if (strcmp(g->types[i].name, name))
			continue;
		for (v = 0; v < g->nnodes; v++)
			c += g->type[v] == i;
		if (best == HEAP_NONE || c > best_count) {
			best = i;
			best_count = c;
		}
	}
	return best;
}

const char *heap_root_kind_name(unsigned kind, uint32_t flags)
{
	switch (kind) {
	case HEAP_ROOT_STACK:
		return flags & NT_ROOT_FLAG_PINNING ? "pinned local" : "local variable";
	case HEAP_ROOT_FINALIZER:
		return "finalizer queue";
	case HEAP_ROOT_HANDLE:
		if (flags & NT_ROOT_FLAG_PINNING)
			return "pinning handle";
		if (flags & NT_ROOT_FLAG_REFCOUNTED)
			return "ref-counted handle";
		return "strong handle";
	case HEAP_ROOT_OLDER:
		return "older generation";
	case HEAP_ROOT_SIZEDREF:
		return "sized-ref handle";
	case HEAP_ROOT_OVERFLOW:
		return "other root";
	case HEAP_ROOT_DEPENDENT:
		return "dependent handle";
	case HEAP_ROOT_STATIC:
		return "static variable";
	default:
		return "root";
	}
}
