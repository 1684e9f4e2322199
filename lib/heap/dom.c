/* SPDX-License-Identifier: MIT */
/*
 * dom.c - the dominator tree of the heap graph (Lengauer-Tarjan, the simple
 * version with path compression: O(m log n)), retained sizes, and per-type
 * totals.
 *
 * A virtual root (vertex n) has an edge to every rooted object. Object x
 * dominates y when every path from the root to y passes x; y's retained size
 * is the bytes freed if the GC could drop x: the sum over x's dominator
 * subtree. Everything runs on DFS numbers (1 = the root; 0 = not reached),
 * iteratively: heaps have reference chains millions long, so no recursion.
 */
#include "common/compat.h"

#include "heap/heap.h"

struct lt {
	uint32_t n;  /* vertices: nodes + root */
	uint32_t N;  /* reached (DFS numbers 1..N) */
	uint32_t *dfn, *vertex, *parent, *semi, *ancestor, *label, *idom, *bhead, *bnext;
	uint32_t *pstart, *preds, *stack;
};

static void lt_free(struct lt *t)
{
	free(t->dfn);
	free(t->vertex);
	free(t->parent);
	free(t->semi);
	free(t->ancestor);
	free(t->label);
	free(t->idom);
	free(t->bhead);
	free(t->bnext);
	free(t->pstart);
	free(t->preds);
	free(t->stack);
}

/* Successors of vertex v: the roots for the virtual root, else the edges. */
static void succ(const struct heap_graph *g, uint32_t v, const uint32_t **s, uint32_t *ns,
		 const struct heap_root **r)
{
	if (v == g->nnodes) {
		*s = NULL;
		*ns = g->nroots;
		*r = g->roots;
	} else {
		*s = g->edges + g->edge_start[v];
		*ns = g->edge_start[v + 1] - g->edge_start[v];
		*r = NULL;
	}
}

static uint32_t succ_at(const uint32_t *s, const struct heap_root *r, uint32_t i)
{
	return s ? s[i] : r[i].node;
}

static int dfs(const struct heap_graph *g, struct lt *t)
{
	uint32_t *pos = malloc((size_t)t->n * sizeof(*pos));
	uint32_t sp = 0, num = 0;

	if (!pos)
		return -ENOMEM;
	t->stack[sp] = g->nnodes;
	pos[sp++] = 0;
	t->dfn[g->nnodes] = ++num;
	t->vertex[num] = g->nnodes;
	t->parent[num] = 0;
	while (sp) {
		uint32_t v = t->stack[sp - 1], ns;
		const uint32_t *s;
		const struct heap_root *r;

		succ(g, v, &s, &ns, &r);
		if (pos[sp - 1] < ns) {
			uint32_t w = succ_at(s, r, pos[sp - 1]++);

			if (!t->dfn[w]) {
				t->dfn[w] = ++num;
				t->vertex[num] = w;
				t->parent[num] = t->dfn[v];
				t->stack[sp] = w;
				pos[sp++] = 0;
			}
		} else {
			sp--;
		}
	}
	t->N = num;
	free(pos);
	return 0;
}

/* Predecessor lists in DFS-number space (only reached vertices). */
static int preds(const struct heap_graph *g, struct lt *t)
{
	uint32_t d, i;
	uint64_t total = 0;

	t->pstart = calloc((size_t)t->N + 2, sizeof(*t->pstart));
	if (!t->pstart)
		return -ENOMEM;
	for (d = 1; d <= t->N; d++) {
		uint32_t v = t->vertex[d], ns;
		const uint32_t *s;
		const struct heap_root *r;

		succ(g, v, &s, &ns, &r);
		for (i = 0; i < ns; i++) {
			uint32_t w = t->dfn[succ_at(s, r, i)];

			if (w) {
				t->pstart[w + 1]++;
				total++;
			}
		}
	}
	if (total > UINT32_MAX)
		return -EFBIG;
	for (d = 1; d <= t->N + 1; d++)
		t->pstart[d] += t->pstart[d - 1];
	t->preds = malloc((total ? total : 1) * sizeof(*t->preds));
	if (!t->preds)
		return -ENOMEM;
	/* fill using bnext as a cursor per vertex */
	for (d = 0; d <= t->N; d++)
		t->bnext[d] = t->pstart[d];
	for (d = 1; d <= t->N; d++) {
		uint32_t v = t->vertex[d], ns;
		const uint32_t *s;
		const struct heap_root *r;

		succ(g, v, &s, &ns, &r);
		for (i = 0; i < ns; i++) {
			uint32_t w = t->dfn[succ_at(s, r, i)];

			if (w)
				t->preds[t->bnext[w]++] = d;
		}
	}
	return 0;
}

static void compress(struct lt *t, uint32_t v)
{
	uint32_t sp = 0, x = v;

	while (t->ancestor[t->ancestor[x]] != 0) {
		t->stack[sp++] = x;
		x = t->ancestor[x];
	}
	while (sp) {
		uint32_t a;

		x = t->stack[--sp];
		a = t->ancestor[x];
		if (t->semi[t->label[a]] < t->semi[t->label[x]])
			t->label[x] = t->label[a];
		t->ancestor[x] = t->ancestor[a];
	}
}

static uint32_t eval(struct lt *t, uint32_t v)
{
	if (t->ancestor[v] == 0)
		return v;
	compress(t, v);
	return t->label[v];
}

static void lengauer_tarjan(struct lt *t)
{
	uint32_t i, d;

	for (d = 1; d <= t->N; d++) {
		t->semi[d] = d;
		t->label[d] = d;
		t->ancestor[d] = 0;
		t->bhead[d] = 0;
		t->idom[d] = 0;
	}
	t->ancestor[0] = 0;
	for (i = t->N; i >= 2; i--) {
		uint32_t w = i, p = t->parent[w], k, v;

		for (k = t->pstart[w]; k < t->pstart[w + 1]; k++) {
			uint32_t u = eval(t, t->preds[k]);

			if (t->semi[u] < t->semi[w])
				t->semi[w] = t->semi[u];
		}
		/* bucket of semi[w] */
		t->bnext[w] = t->bhead[t->semi[w]];
		t->bhead[t->semi[w]] = w;
		t->ancestor[w] = p;
		for (v = t->bhead[p]; v; v = t->bnext[v]) {
			uint32_t u = eval(t, v);

			t->idom[v] = t->semi[u] < t->semi[v] ? u : p;
		}
		t->bhead[p] = 0;
	}
	for (i = 2; i <= t->N; i++)
		if (t->idom[i] != t->semi[i])
			t->idom[i] = t->idom[t->idom[i]];
	t->idom[1] = 0;
}

void heap_analysis_free(struct heap_analysis *a)
{
	if (!a)
		return;
	free(a->idom);
	free(a->retained);
	free(a->type_count);
	free(a->type_shallow);
	free(a->type_retained);
	free(a);
}

/*
 * Retained bytes of a type: objects of the type that no other object of the
 * type dominates, summed (so nested ones are not counted twice). One walk of
 * the dominator tree with a per-type "open on the current path" counter.
 */
static int type_retained(const struct heap_graph *g, struct lt *t, struct heap_analysis *a)
{
	uint32_t *cstart = calloc((size_t)t->N + 2, sizeof(*cstart));
	uint32_t *child = malloc(((size_t)t->N + 1) * sizeof(*child));
	uint32_t *open = calloc(g->ntypes ? g->ntypes : 1, sizeof(*open));
	uint32_t *pos = malloc(((size_t)t->N + 1) * sizeof(*pos));
	uint32_t d, sp = 0;
	int err = -ENOMEM;

	if (!cstart || !child || !open || !pos)
		goto out;
	for (d = 2; d <= t->N; d++)
		cstart[t->idom[d] + 1]++;
	for (d = 1; d <= t->N + 1; d++)
		cstart[d] += cstart[d - 1];
	for (d = 0; d <= t->N; d++)
		pos[d] = cstart[d];
	for (d = 2; d <= t->N; d++)
		child[pos[t->idom[d]]++] = d;
	/* iterative walk from the root; pos[] reused as the per-vertex child cursor */
	for (d = 0; d <= t->N; d++)
		pos[d] = cstart[d];
	t->stack[sp++] = 1;
	while (sp) {
		uint32_t v = t->stack[sp - 1];

		if (pos[v] == cstart[v]) {
			/* entering v (first visit; leaves enter and leave at once) */
			uint32_t node = t->vertex[v];

			if (v != 1) {
				uint32_t ty = g->type[node];

				if (!open[ty]++)
					a->type_retained[ty] += a->retained[node];
			}
		}
		if (pos[v] < cstart[v + 1]) {
			t->stack[sp++] = child[pos[v]++];
			/* mark v as entered even with children left */
			continue;
		}
		if (v != 1)
			open[g->type[t->vertex[v]]]--;
		sp--;
	}
	err = 0;
out:
	free(cstart);
	free(child);
	free(open);
	free(pos);
	return err;
}

int heap_analyze(const struct heap_graph *g, struct heap_analysis **out)
{
	struct lt t = { 0 };
	struct heap_analysis *a;
	uint32_t i, d;
	int err = -ENOMEM;

	*out = NULL;
	if ((uint64_t)g->nnodes + 2 > UINT32_MAX)
		return -EFBIG;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	t.n = g->nnodes + 1;
	a->n = t.n;
	t.dfn = calloc(t.n, sizeof(*t.dfn));
	t.vertex = malloc(((size_t)t.n + 1) * sizeof(uint32_t));
	t.parent = malloc(((size_t)t.n + 1) * sizeof(uint32_t));
	t.stack = malloc(((size_t)t.n + 1) * sizeof(uint32_t));
	if (!t.dfn || !t.vertex || !t.parent || !t.stack)
		goto fail;
	err = dfs(g, &t);
	if (err)
		goto fail;
	err = -ENOMEM;
	t.semi = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	t.ancestor = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	t.label = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	t.idom = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	t.bhead = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	t.bnext = malloc(((size_t)t.N + 1) * sizeof(uint32_t));
	if (!t.semi || !t.ancestor || !t.label || !t.idom || !t.bhead || !t.bnext)
		goto fail;
	err = preds(g, &t);
	if (err)
		goto fail;
	lengauer_tarjan(&t);
	/* what the rest needs: dfn, vertex, idom (DFS space), stack */
	free(t.preds);
	t.preds = NULL;
	free(t.pstart);
	t.pstart = NULL;
	free(t.ancestor);
	t.ancestor = NULL;
	free(t.label);
	t.label = NULL;
	free(t.semi);
	t.semi = NULL;
	free(t.bhead);
	t.bhead = NULL;
	free(t.bnext);
	t.bnext = NULL;
	free(t.parent);
	t.parent = NULL;
	err = -ENOMEM;
	a->idom = malloc((size_t)t.n * sizeof(*a->idom));
	a->retained = calloc(t.n, sizeof(*a->retained));
	a->type_count = calloc(g->ntypes ? g->ntypes : 1, sizeof(uint64_t));
	a->type_shallow = calloc(g->ntypes ? g->ntypes : 1, sizeof(uint64_t));
	a->type_retained = calloc(g->ntypes ? g->ntypes : 1, sizeof(uint64_t));
	if (!a->idom || !a->retained || !a->type_count || !a->type_shallow || !a->type_retained)
		goto fail;
	/* retained sizes in node space: children (higher DFS numbers) first */
	for (d = 2; d <= t.N; d++)
		a->retained[t.vertex[d]] = g->size[t.vertex[d]];
	for (d = t.N; d >= 2; d--)
		a->retained[t.vertex[t.idom[d]]] += a->retained[t.vertex[d]];
	for (i = 0; i < t.n; i++) {
		d = t.dfn[i];
		a->idom[i] = d >= 2 ? t.vertex[t.idom[d]] : HEAP_NONE;
	}
	a->reachable = t.N - 1;
	for (i = 0; i < g->nnodes; i++) {
		a->type_count[g->type[i]]++;
		a->type_shallow[g->type[i]] += g->size[i];
		if (!t.dfn[i])
			a->unreachable_bytes += g->size[i];
	}
	free(t.dfn);
	t.dfn = NULL;
	err = type_retained(g, &t, a);
	if (err)
		goto fail;
	lt_free(&t);
	*out = a;
	return 0;
fail:
	lt_free(&t);
	heap_analysis_free(a);
	return err;
}
