/* SPDX-License-Identifier: MIT */
/*
 * leaks.c - the one leak comparison (gcdump diff, gcdump watch, analyze
 * leaks): snapshots are reduced to per-type totals as they come (only the
 * first and last graphs are kept), the types that grow in every one are
 * found (heap_growth_find), each growing type is folded into the growing
 * type that holds all of its objects in the last snapshot, and the heaviest
 * top-level ones get their retention paths with the count of each path in
 * the first snapshot and the last.
 */
#include "common/compat.h"

#include <time.h>

#include "common/json.h"
#include "heap/heap.h"

#define GROWTH_PATHS 10 /* growing types given their paths */

int heap_series_init(struct heap_series *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->stats = calloc(cap ? cap : 1, sizeof(*s->stats));
	s->nstats = calloc(cap ? cap : 1, sizeof(*s->nstats));
	s->cap = cap;
	if (!s->stats || !s->nstats) {
		heap_series_release(s);
		return -ENOMEM;
	}
	return 0;
}

void heap_series_release(struct heap_series *s)
{
	size_t i, j;

	for (i = 0; s->stats && i < s->n; i++) {
		for (j = 0; s->stats[i] && j < s->nstats[i]; j++)
			free((char *)s->stats[i][j].name);
		free(s->stats[i]);
	}
	free(s->stats);
	free(s->nstats);
	if (s->first != s->last)
		heap_graph_free(s->first);
	heap_graph_free(s->last);
	memset(s, 0, sizeof(*s));
}

int heap_series_add(struct heap_series *s, struct heap_graph *g)
{
	struct heap_analysis *a = NULL;
	struct heap_typestat *ts = NULL;
	size_t k = 0, j;
	int err;

	if (s->n >= s->cap) {
		heap_graph_free(g);
		return -E2BIG;
	}
	err = heap_analyze(g, &a);
	if (!err)
		err = heap_typestats(g, a, &ts, &k);
	heap_analysis_free(a);
	/* the names live in g: copy them so g can go */
	for (j = 0; !err && j < k; j++)
		if (!(ts[j].name = strdup(ts[j].name)))
			err = -ENOMEM;
	if (err) {
		while (ts && j--)
			free((char *)ts[j].name);
		free(ts);
		heap_graph_free(g);
		return err;
	}
	s->stats[s->n] = ts;
	s->nstats[s->n++] = k;
	if (s->last && s->last != s->first)
		heap_graph_free(s->last);
	if (!s->first)
		s->first = g;
	s->last = g;
	return 0;
}

int heap_series_collect(struct heap_series *s, const struct heap_collect_opts *o, unsigned nsnap,
			int64_t interval_ms, int (*each)(void *ctx, unsigned i, const struct heap_graph *g),
			void *ctx, struct heap_collect_result *res)
{
	unsigned k;
	int err = 0;

	for (k = 0; k < nsnap; k++) {
		struct heap_graph *g = NULL;

		if (k) {
			int64_t waited = 0;

			while (waited < interval_ms && !(o->stop && *o->stop)) {
				int64_t step = interval_ms - waited < 100 ? interval_ms - waited : 100;

				nanosleep(&(struct timespec){ step / 1000, (step % 1000) * 1000000 }, NULL);
				waited += step;
			}
			if (o->stop && *o->stop)
				return -EINTR;
		}
		memset(res, 0, sizeof(*res));
		err = heap_collect(o, &g, res);
		if (err)
			return err;
		if (each && (err = each(ctx, k, g))) {
			heap_graph_free(g);
			return err;
		}
		if ((err = heap_series_add(s, g))) {
			snprintf(res->msg, sizeof(res->msg), "cannot analyze the snapshot: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * For each growing type: the growing type (index into gr) whose objects
 * dominate all of its objects in the last snapshot, or -1. A leak of items
 * that each hold a payload then reads as one leak, the payload inside it.
 * Linear: near[v] (the nearest dominator of v with a growing type) and
 * skip[v] (the nearest one of another growing type than v's) are memoized
 * along the dominator chains, so a dominator chain a million long (a linked
 * list) costs no more than a short one.
 */
#define UNSET (HEAP_NONE - 1)

static void chase(uint32_t *memo, const uint32_t *next, uint32_t *stack, uint32_t v,
		  const long *of_type, const struct heap_graph *g, bool other_type)
{
	uint32_t x = v, sp = 0, n = g->nnodes;

	while (memo[x] == UNSET) {
		uint32_t d = next[x];

		if (d == HEAP_NONE || d >= n) {
			memo[x] = HEAP_NONE;
			break;
		}
		if (other_type ? of_type[g->type[d]] != of_type[g->type[x]] : of_type[g->type[d]] >= 0) {
			memo[x] = d;
			break;
		}
		stack[sp++] = x;
		x = d;
	}
	while (sp) {
		uint32_t y = stack[--sp];

		memo[y] = memo[next[y]];
	}
}

static int held_by(const struct heap_graph *g, const struct heap_analysis *a, const struct heap_growth *gr,
		   size_t ngr, long *out)
{
	uint32_t n = g->nnodes, v;
	long *of_type = malloc((g->ntypes ? g->ntypes : 1) * sizeof(*of_type));
	uint32_t *near = malloc((n ? n : 1) * sizeof(*near));
	uint32_t *skip = malloc((n ? n : 1) * sizeof(*skip));
	uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
	long *holder = malloc((ngr ? ngr : 1) * sizeof(*holder));
	size_t i;
	int err = -ENOMEM;

	for (i = 0; i < ngr; i++)
		out[i] = -1;
	if (!of_type || !near || !skip || !stack || !holder)
		goto out;
	for (i = 0; i < g->ntypes; i++) {
		of_type[i] = -1;
		for (size_t k = 0; k < ngr; k++)
			if (!strcmp(g->types[i].name, gr[k].name)) {
				of_type[i] = (long)k;
				break;
			}
	}
	for (v = 0; v < n; v++)
		near[v] = skip[v] = UNSET;
	for (v = 0; v < n; v++)
		chase(near, a->idom, stack, v, of_type, g, false);
	for (v = 0; v < n; v++)
		if (of_type[g->type[v]] >= 0)
			chase(skip, near, stack, v, of_type, g, true);
	for (i = 0; i < ngr; i++)
		holder[i] = -2; /* no object seen yet */
	for (v = 0; v < n; v++) {
		long k = of_type[g->type[v]], found;

		if (k < 0 || holder[k] == -1)
			continue;
		found = skip[v] == HEAP_NONE ? -1 : of_type[g->type[skip[v]]];
		if (found < 0 || (holder[k] >= 0 && holder[k] != found))
			holder[k] = -1;
		else
			holder[k] = found;
	}
	for (i = 0; i < ngr; i++)
		out[i] = holder[i] >= 0 ? holder[i] : -1;
	err = 0;
out:
	free(of_type);
	free(near);
	free(skip);
	free(stack);
	free(holder);
	return err;
}

int heap_leaks_compare(const struct heap_series *s, struct heap_leaks *l)
{
	size_t i;
	int err;

	memset(l, 0, sizeof(*l));
	l->nsnap = s->n;
	l->first = s->first;
	l->last = s->last;
	err = heap_growth_find(s->stats, s->nstats, s->n, &l->gr, &l->n);
	if (err)
		return err;
	l->holder = malloc((l->n ? l->n : 1) * sizeof(*l->holder));
	l->with_paths = calloc(l->n ? l->n : 1, sizeof(*l->with_paths));
	if (!l->holder || !l->with_paths)
		return -ENOMEM;
	for (i = 0; i < l->n; i++)
		l->holder[i] = -1;
	if (l->last && l->n) {
		if ((err = heap_analyze(l->last, &l->a)) || (err = heap_paths_new(l->last, &l->p)) ||
		    (err = held_by(l->last, l->a, l->gr, l->n, l->holder)))
			return err;
		if (l->first && l->first != l->last && heap_paths_new(l->first, &l->fp))
			l->fp = NULL;
	}
	/* paths (one pass over the graph per type) for the heaviest top-level growths */
	for (i = 0; i < l->n; i++) {
		l->with_paths[i] = l->p && l->holder[i] < 0 && l->ntop < GROWTH_PATHS;
		if (l->holder[i] < 0)
			l->ntop++;
	}
	return 0;
}

void heap_leaks_release(struct heap_leaks *l)
{
	free(l->holder);
	free(l->with_paths);
	heap_growth_free(l->gr, l->n);
	heap_paths_free(l->fp);
	heap_paths_free(l->p);
	heap_analysis_free(l->a);
	memset(l, 0, sizeof(*l));
}

int heap_leaks_paths(const struct heap_leaks *l, size_t i, struct heap_path_group **pg, size_t *n)
{
	uint64_t un;
	uint32_t t;

	*pg = NULL;
	*n = 0;
	if (!l->with_paths[i] || (t = heap_graph_type_find(l->last, l->gr[i].name)) == HEAP_NONE)
		return -ENOENT;
	return heap_paths_group(l->last, l->p, l->a, t, 3, pg, n, &un);
}

uint64_t heap_leaks_first_count(const struct heap_leaks *l, size_t i, const char *want)
{
	struct heap_path_group *pg = NULL;
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0, k;
	uint64_t un, c = 0;
	uint32_t t;

	if (!l->fp || (t = heap_graph_type_find(l->first, l->gr[i].name)) == HEAP_NONE)
		return 0;
	if (heap_paths_group(l->first, l->fp, NULL, t, 4096, &pg, &n, &un))
		return 0;
	for (k = 0; k < n; k++) {
		strbuf_reset(&sb);
		(void)heap_path_group_format(l->first, &pg[k], &sb);
		if (!strcmp(sb.buf, want)) {
			c = pg[k].count;
			break;
		}
	}
	heap_path_groups_free(pg, n);
	strbuf_release(&sb);
	return c;
}

static void json_u64s(struct ct_json *j, const char *key, const uint64_t *v, size_t n)
{
	ct_json_kv_arr_begin(j, key);
	for (size_t s = 0; s < n; s++)
		ct_json_u64(j, v[s]);
	ct_json_arr_end(j);
}

static void json_paths(struct ct_json *j, const struct heap_leaks *l, size_t i)
{
	struct heap_path_group *pg = NULL;
	struct strbuf ps = STRBUF_INIT;
	size_t npg = 0, k;
	bool grouped = !heap_leaks_paths(l, i, &pg, &npg);

	ct_json_kv_arr_begin(j, "paths");
	if (grouped)
		heap_path_groups_json(j, l->last, pg, npg);
	ct_json_arr_end(j);
	if (grouped) {
		/* each path's object count in the first snapshot and the last */
		ct_json_kv_arr_begin(j, "path_growth");
		for (k = 0; k < npg; k++) {
			strbuf_reset(&ps);
			(void)heap_path_group_format(l->last, &pg[k], &ps);
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "path", ps.buf);
			ct_json_kv_arr_begin(j, "count");
			ct_json_u64(j, heap_leaks_first_count(l, i, ps.buf));
			ct_json_u64(j, pg[k].count);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	}
	strbuf_release(&ps);
	heap_path_groups_free(pg, npg);
}

void heap_leaks_json(struct ct_json *j, const struct heap_leaks *l, const char *const *labels, size_t top)
{
	size_t i, s;

	if (labels) {
		ct_json_kv_arr_begin(j, "snapshots");
		for (s = 0; s < l->nsnap; s++)
			ct_json_str(j, labels[s]);
		ct_json_arr_end(j);
	}
	ct_json_kv_arr_begin(j, "growing");
	for (i = 0; i < l->n && (!top || i < top); i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", l->gr[i].name);
		ct_json_kv_str(j, "held_by", l->holder[i] >= 0 ? l->gr[l->holder[i]].name : NULL);
		json_u64s(j, "count", l->gr[i].count, l->nsnap);
		json_u64s(j, "retained", l->gr[i].retained, l->nsnap);
		json_paths(j, l, i);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}
