/* SPDX-License-Identifier: MIT */
/*
 * leaks.c - Dr-Dotnet's "memory leaks" analyzer over lib/heap: snapshots at
 * intervals, compared with the one leak comparison gcdump watch uses
 * (heap_series_collect, heap_leaks_compare: the types that only grow and
 * the growing type that holds each one).
 */
#include "common/compat.h"

#include "analyze/analyze.h"
#include "heap/heap.h"

#define MAX_SNAPS 16

int analyze_leaks_run(const struct heap_collect_opts *o, unsigned nsnap, int64_t interval_ms,
		      struct heap_series *s, struct heap_leaks *l, char *msg, size_t msglen)
{
	struct heap_collect_result res = { 0 };
	int err;

	memset(l, 0, sizeof(*l));
	msg[0] = 0;
	if (nsnap < 2 || nsnap > MAX_SNAPS)
		return -EINVAL;
	err = heap_series_init(s, nsnap);
	if (err)
		return err;
	err = heap_series_collect(s, o, nsnap, interval_ms, NULL, NULL, &res);
	if (err == -EINTR && o->stop && *o->stop)
		err = 0; /* the caller says how many were taken */
	if (err)
		snprintf(msg, msglen, "%s", res.msg[0] ? res.msg : strerror(-err));
	if (!err && s->n >= 2)
		err = heap_leaks_compare(s, l);
	return err;
}
