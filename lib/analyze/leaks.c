/* SPDX-License-Identifier: MIT */
/*
 * leaks.c - Dr-Dotnet's "memory leaks" analyzer over lib/heap: snapshots at
 * intervals (heap_collect), per-type totals with retained sizes
 * (heap_analyze, heap_typestats), and the types that only grow
 * (heap_growth_find). Only the per-type totals are kept between snapshots.
 */
#include "common/compat.h"

#include <time.h>

#include "analyze/analyze.h"
#include "heap/heap.h"

#define MAX_SNAPS 16

static void free_stats(struct heap_typestat **st, const size_t *n, unsigned k)
{
	unsigned i;
	size_t j;

	for (i = 0; i < k; i++) {
		for (j = 0; st[i] && j < n[i]; j++)
			free((char *)st[i][j].name);
		free(st[i]);
	}
}

/* One snapshot's totals, names copied so the graph can go. */
static int snapshot_stats(const struct heap_collect_opts *o, struct heap_typestat **st, size_t *n,
			  char *msg, size_t msglen)
{
	struct heap_collect_result res = { 0 };
	struct heap_graph *g = NULL;
	struct heap_analysis *a = NULL;
	size_t j;
	int err;

	*st = NULL;
	*n = 0;
	err = heap_collect(o, &g, &res);
	if (err) {
		snprintf(msg, msglen, "%s", res.msg[0] ? res.msg : strerror(-err));
		return err;
	}
	err = heap_analyze(g, &a);
	if (!err)
		err = heap_typestats(g, a, st, n);
	for (j = 0; !err && j < *n; j++) {
		(*st)[j].name = strdup((*st)[j].name);
		if (!(*st)[j].name)
			err = -ENOMEM;
	}
	if (err && *st) {
		while (j--)
			free((char *)(*st)[j].name);
		free(*st);
		*st = NULL;
		*n = 0;
	}
	heap_analysis_free(a);
	heap_graph_free(g);
	if (err)
		snprintf(msg, msglen, "cannot analyze the snapshot: %s", strerror(-err));
	return err;
}

int analyze_leaks_run(const struct heap_collect_opts *o, unsigned nsnap, int64_t interval_ms,
		      struct heap_growth **out, size_t *n, unsigned *taken, char *msg, size_t msglen)
{
	struct heap_typestat *st[MAX_SNAPS] = { 0 };
	size_t nst[MAX_SNAPS] = { 0 };
	unsigned k;
	int err = 0;

	*out = NULL;
	*n = 0;
	*taken = 0;
	msg[0] = 0;
	if (nsnap < 2 || nsnap > MAX_SNAPS)
		return -EINVAL;
	for (k = 0; k < nsnap; k++) {
		if (k) {
			int64_t waited = 0;

			while (waited < interval_ms && !(o->stop && *o->stop)) {
				int64_t step = interval_ms - waited < 100 ? interval_ms - waited : 100;
				struct timespec ts = { step / 1000, (step % 1000) * 1000000 };

				nanosleep(&ts, NULL);
				waited += step;
			}
			if (o->stop && *o->stop)
				break;
		}
		err = snapshot_stats(o, &st[k], &nst[k], msg, msglen);
		if (err)
			break;
	}
	*taken = k;
	if (!err && k >= 2)
		err = heap_growth_find(st, nst, k, out, n);
	free_stats(st, nst, k);
	return err;
}
