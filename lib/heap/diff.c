/* SPDX-License-Identifier: MIT */
/*
 * diff.c - per-type totals of snapshots and the types that grow in every
 * step (the leak detector): count and retained bytes both strictly larger
 * in each snapshot than in the one before.
 */
#include "common/compat.h"

#include "heap/heap.h"

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct heap_typestat *)a)->name, ((const struct heap_typestat *)b)->name);
}

int heap_typestats(const struct heap_graph *g, const struct heap_analysis *a,
		   struct heap_typestat **out, size_t *n)
{
	struct heap_typestat *s;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	s = calloc(g->ntypes ? g->ntypes : 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < g->ntypes; i++) {
		if (!a->type_count[i])
			continue;
		s[k].name = g->types[i].name;
		s[k].count = a->type_count[i];
		s[k].shallow = a->type_shallow[i];
		s[k].retained = a->type_retained[i];
		k++;
	}
	qsort(s, k, sizeof(*s), cmp_name);
	/* the same name twice (two method tables, e.g. two load contexts): merged */
	if (k > 1) {
		size_t w = 1;

		for (i = 1; i < k; i++) {
			if (!strcmp(s[i].name, s[w - 1].name)) {
				s[w - 1].count += s[i].count;
				s[w - 1].shallow += s[i].shallow;
				s[w - 1].retained += s[i].retained;
			} else {
				s[w++] = s[i];
			}
		}
		k = w;
	}
	*out = s;
	*n = k;
	return 0;
}

static const struct heap_typestat *find(const struct heap_typestat *s, size_t n, const char *name)
{
	struct heap_typestat key = { .name = name };

	return bsearch(&key, s, n, sizeof(*s), cmp_name);
}

void heap_growth_free(struct heap_growth *gr, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(gr[i].name);
		free(gr[i].count);
		free(gr[i].retained);
	}
	free(gr);
}

static int cmp_growth(const void *a, const void *b, void *ctx)
{
	const struct heap_growth *x = a, *y = b;
	size_t last = *(const size_t *)ctx;
	uint64_t gx = x->retained[last] - x->retained[0], gy = y->retained[last] - y->retained[0];

	if (gx != gy)
		return gx > gy ? -1 : 1;
	return strcmp(x->name, y->name);
}

int heap_growth_find(struct heap_typestat *const *stats, const size_t *nstats, size_t nsnap,
		     struct heap_growth **out, size_t *n)
{
	struct heap_growth *gr = NULL;
	size_t i, k = 0, cap = 0, last = nsnap - 1;

	*out = NULL;
	*n = 0;
	if (nsnap < 2)
		return -EINVAL;
	/* a growing type is in the last snapshot */
	for (i = 0; i < nstats[last]; i++) {
		const struct heap_typestat *t = &stats[last][i];
		uint64_t pc = 0, pr = 0;
		bool grows = true;
		size_t s;

		for (s = 0; s < nsnap && grows; s++) {
			const struct heap_typestat *x = s == last ? t : find(stats[s], nstats[s], t->name);
			uint64_t c = x ? x->count : 0, r = x ? x->retained : 0;

			if (s && (c <= pc || r <= pr))
				grows = false;
			pc = c;
			pr = r;
		}
		if (!grows)
			continue;
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct heap_growth *ng = realloc(gr, nc * sizeof(*gr));

			if (!ng)
				goto nomem;
			gr = ng;
			cap = nc;
		}
		memset(&gr[k], 0, sizeof(gr[k]));
		gr[k].name = strdup(t->name);
		gr[k].count = calloc(nsnap, sizeof(uint64_t));
		gr[k].retained = calloc(nsnap, sizeof(uint64_t));
		k++;
		if (!gr[k - 1].name || !gr[k - 1].count || !gr[k - 1].retained)
			goto nomem;
		for (s = 0; s < nsnap; s++) {
			const struct heap_typestat *x = find(stats[s], nstats[s], t->name);

			gr[k - 1].count[s] = x ? x->count : 0;
			gr[k - 1].retained[s] = x ? x->retained : 0;
		}
	}
	if (k)
		qsort_r(gr, k, sizeof(*gr), cmp_growth, &last);
	*out = gr;
	*n = k;
	return 0;
nomem:
	heap_growth_free(gr, k);
	return -ENOMEM;
}
