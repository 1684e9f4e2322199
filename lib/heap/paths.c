/* SPDX-License-Identifier: MIT */
/*
 * paths.c - shortest retention paths: one breadth-first walk from all roots
 * at once gives every object a parent on a shortest path to some root. The
 * objects of a type are then grouped by the type sequence of that path
 * (root kind first), so a leak through one list shows as one line with a
 * count instead of N copies of the same path.
 */
#include "common/compat.h"

#include "common/hashtab.h"
#include "heap/heap.h"

#define PATH_MAX_TYPES 32 /* longer paths keep their first 8 and last 23 types */
#define PATH_HEAD 8

void heap_paths_free(struct heap_paths *p)
{
	if (!p)
		return;
	free(p->parent);
	free(p->rootkind);
	free(p->rootflags);
	free(p->depth);
	free(p->anchor);
	free(p);
}

int heap_paths_new(const struct heap_graph *g, struct heap_paths **out)
{
	struct heap_paths *p = calloc(1, sizeof(*p));
	uint32_t *queue = NULL, head = 0, tail = 0, i;
	size_t n = g->nnodes ? g->nnodes : 1;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->parent = malloc(n * sizeof(*p->parent));
	p->rootkind = malloc(n);
	p->rootflags = calloc(n, sizeof(*p->rootflags));
	p->depth = malloc(n * sizeof(*p->depth));
	p->anchor = malloc(n * sizeof(*p->anchor));
	queue = malloc(n * sizeof(*queue));
	if (!p->parent || !p->rootkind || !p->rootflags || !p->depth || !p->anchor || !queue) {
		free(queue);
		heap_paths_free(p);
		return -ENOMEM;
	}
	memset(p->parent, 0xff, n * sizeof(*p->parent));
	memset(p->rootkind, 0xff, n);
	memset(p->depth, 0xff, n * sizeof(*p->depth));
	/* roots, strongest kinds first (the list is sorted by node, then kind) */
	for (i = 0; i < g->nroots; i++) {
		uint32_t v = g->roots[i].node;

		if (p->depth[v] != HEAP_NONE)
			continue;
		p->depth[v] = 0;
		p->anchor[v] = v;
		p->rootkind[v] = g->roots[i].kind;
		p->rootflags[v] = g->roots[i].flags;
		queue[tail++] = v;
	}
	while (head < tail) {
		uint32_t v = queue[head++], k;

		for (k = g->edge_start[v]; k < g->edge_start[v + 1]; k++) {
			uint32_t w = g->edges[k];

			if (p->depth[w] != HEAP_NONE)
				continue;
			p->depth[w] = p->depth[v] + 1;
			p->parent[w] = v;
			/* the path's node at depth PATH_HEAD - 1 (itself when shallower) */
			p->anchor[w] = p->depth[w] < PATH_HEAD ? w : p->anchor[v];
			queue[tail++] = w;
		}
	}
	free(queue);
	*out = p;
	return 0;
}

void heap_path_groups_free(struct heap_path_group *gr, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(gr[i].types);
	free(gr);
}

#define GTAB_MAX 4096 /* distinct paths grouped; the rest are not */

struct gtab {
	struct heap_path_group *g;
	size_t n, cap;
	uint64_t *hash;
	struct ct_itab ix; /* g by path */
};

struct gkey {
	const uint32_t *types;
	uint32_t n;
	uint8_t kind;
	uint32_t flags;
	uint64_t hash;
};

static uint64_t group_hash(const void *ctx, uint32_t idx)
{
	return ((const struct gtab *)ctx)->hash[idx];
}

static bool group_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct gtab *t = ctx;
	const struct heap_path_group *g = &t->g[idx];
	const struct gkey *k = key;

	return t->hash[idx] == k->hash && g->ntypes == k->n && g->rootkind == k->kind &&
	       g->rootflags == k->flags && !memcmp(g->types, k->types, k->n * sizeof(*k->types));
}

static int cmp_group(const void *a, const void *b)
{
	const struct heap_path_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->retained > y->retained ? -1 : x->retained < y->retained;
}

int heap_paths_group(const struct heap_graph *g, const struct heap_paths *p,
		     const struct heap_analysis *a, uint32_t type, size_t max,
		     struct heap_path_group **out, size_t *nout, uint64_t *unreached)
{
	uint32_t chain[PATH_MAX_TYPES], rev[PATH_MAX_TYPES], full_len, v, i;
	struct gtab *tp = calloc(1, sizeof(*tp));
	int err = 0;

	*out = NULL;
	*nout = 0;
	*unreached = 0;
	if (!tp)
		return -ENOMEM;
#define t (*tp)
	for (v = 0; v < g->nnodes && !err; v++) {
		uint32_t x, n, depth, root, *slot;
		struct gkey key;
		size_t k;

		if (g->type[v] != type)
			continue;
		if (p->depth[v] == HEAP_NONE) {
			(*unreached)++;
			continue;
		}
		depth = p->depth[v];
		if (depth < PATH_MAX_TYPES) {
			/* short: the whole path */
			for (x = v, n = 0; x != HEAP_NONE && n <= depth; x = p->parent[x])
				rev[n++] = x;
			root = rev[n - 1];
			full_len = n;
			for (i = 0; i < full_len; i++)
				chain[i] = g->type[rev[full_len - 1 - i]];
		} else {
			/*
			 * long: the PATH_HEAD types at the root end (from the anchor,
			 * at most PATH_HEAD steps) and the last ones (at most
			 * PATH_MAX_TYPES - PATH_HEAD - 1 steps up from the object), so
			 * a list a million long costs 31 steps per object, not a million
			 */
			for (x = p->anchor[v], n = 0; x != HEAP_NONE && n < PATH_HEAD; x = p->parent[x])
				rev[n++] = x;
			root = rev[n - 1];
			for (i = 0; i < n; i++)
				chain[i] = g->type[rev[n - 1 - i]];
			for (; i < PATH_HEAD; i++)
				chain[i] = HEAP_NONE;
			chain[PATH_HEAD] = HEAP_NONE; /* "..." */
			for (x = v, i = PATH_MAX_TYPES - 1; i > PATH_HEAD; i--, x = p->parent[x])
				chain[i] = g->type[x];
			n = PATH_MAX_TYPES;
		}
		key = (struct gkey){ chain, n, p->rootkind[root], p->rootflags[root], 0 };
		key.hash = ct_hash_bytes(CT_HASH_SEED ^ key.kind ^ ((uint64_t)key.flags << 8), chain,
					 n * sizeof(*chain));
		k = t.n;
		if (t.n < GTAB_MAX) {
			err = ct_itab_reserve(&t.ix, group_hash, tp);
			if (err)
				break;
		}
		slot = ct_itab_slot(&t.ix, key.hash, group_eq, tp, &key);
		if (*slot)
			k = *slot - 1;
		if (k == t.n) {
			if (t.n == t.cap) {
				size_t nc = t.cap ? t.cap * 2 : 16;
				void *ng = realloc(t.g, nc * sizeof(*t.g));
				void *nh = ng ? realloc(t.hash, nc * sizeof(*t.hash)) : NULL;

				if (ng)
					t.g = ng;
				if (!ng || !nh) {
					err = -ENOMEM;
					break;
				}
				t.hash = nh;
				t.cap = nc;
			}
			if (t.n >= GTAB_MAX) {
				/* too many distinct paths: the rest are not grouped */
				continue;
			}
			memset(&t.g[k], 0, sizeof(t.g[k]));
			t.g[k].types = malloc(n * sizeof(*chain));
			if (!t.g[k].types) {
				err = -ENOMEM;
				break;
			}
			memcpy(t.g[k].types, chain, n * sizeof(*chain));
			t.g[k].ntypes = n;
			t.g[k].rootkind = p->rootkind[root];
			t.g[k].rootflags = p->rootflags[root];
			t.g[k].example = v;
			t.hash[k] = key.hash;
			*slot = ct_itab_add(&t.ix, (uint32_t)k);
			t.n++;
		}
		t.g[k].count++;
		if (a)
			t.g[k].retained += a->retained[v];
	}
	free(t.hash);
	ct_itab_release(&t.ix);
	if (err) {
		heap_path_groups_free(t.g, t.n);
		free(tp);
		return err;
	}
	if (t.n)
		qsort(t.g, t.n, sizeof(*t.g), cmp_group);
	while (t.n > max) {
		t.n--;
		free(t.g[t.n].types);
	}
	*out = t.g;
	*nout = t.n;
	free(tp);
	return 0;
#undef t
}

int heap_path_group_format(const struct heap_graph *g, const struct heap_path_group *gr,
			   struct strbuf *out)
{
	uint32_t i;
	int err;

	err = strbuf_addf(out, "[%s]", heap_root_kind_name(gr->rootkind, gr->rootflags));
	for (i = 0; !err && i < gr->ntypes; i++) {
		uint32_t t = gr->types[i];

		err = strbuf_addf(out, "%s%s", i ? " -> " : " ",
				  t == HEAP_NONE ? "..." : t < g->ntypes ? g->types[t].name : "?");
	}
	return err;
}
