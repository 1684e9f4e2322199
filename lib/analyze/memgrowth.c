/* SPDX-License-Identifier: MIT */
/*
 * memgrowth.c - resident memory over time: the kinds of memory.c, sampled
 * from smaps over a span, and how each moved (start, end, the least-squares
 * rate). The series is bounded: when it is full every other point is
 * dropped (the first stays), so a session of any length holds at most
 * AN_MEM_SERIES_MAX points, denser towards its end.
 */
#include "common/compat.h"

#include "analyze/analyze.h"

#define GREW_MIN_KB (8u << 10) /* 8 MiB */

int analyze_mem_series_add(struct an_mem_series *s, double now, const struct an_memory *m)
{
	struct an_mem_point *pt;
	size_t i;

	if (!s->n)
		s->t0 = now;
	if (s->n == AN_MEM_SERIES_MAX) {
		for (i = 0; i < s->n / 2; i++)
			s->p[i] = s->p[2 * i];
		s->n /= 2;
	}
	if (s->n == s->cap) {
		size_t nc = s->cap ? CT_MIN(s->cap * 2, (size_t)AN_MEM_SERIES_MAX) : 16;
		struct an_mem_point *np = realloc(s->p, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->p = np;
		s->cap = nc;
	}
	pt = &s->p[s->n++];
	pt->t_s = now - s->t0;
	memcpy(pt->rss_kb, m->rss_kb, sizeof(pt->rss_kb));
	pt->total_kb = m->total_kb;
	return 0;
}

void analyze_mem_series_release(struct an_mem_series *s)
{
	free(s->p);
	memset(s, 0, sizeof(*s));
}

static uint64_t value(const struct an_mem_point *p, int k)
{
	if (k == AN_MEM_GREW_NATIVE)
		return p->rss_kb[AN_MEM_NATIVE] + p->rss_kb[AN_MEM_OTHER_ANON];
	if (k == AN_MEM_GREW_TOTAL)
		return p->total_kb;
	return p->rss_kb[k];
}

/* least-squares slope of kind k over the points, KiB/s */
static double slope(const struct an_mem_point *p, size_t np, int k)
{
	double st = 0, sv = 0, stt = 0, stv = 0, n = (double)np, den;
	size_t i;

	for (i = 0; i < np; i++) {
		double t = p[i].t_s, v = (double)value(&p[i], k);

		st += t;
		sv += v;
		stt += t * t;
		stv += t * v;
	}
	den = n * stt - st * st;
	return den > 1e-9 ? (n * stv - st * sv) / den : 0;
}

void analyze_mem_growth(const struct an_mem_series *s, struct an_mem_growth *g)
{
	const struct an_mem_point *a, *b;
	int64_t best = 0, floor_kb;
	int k;

	memset(g, 0, sizeof(*g));
	g->grew = -1;
	g->points = s->n;
	if (s->n < 2)
		return;
	a = &s->p[0];
	b = &s->p[s->n - 1];
	g->span_s = b->t_s - a->t_s;
	for (k = 0; k <= AN_MEM_GREW_NATIVE; k++) {
		g->start_kb[k] = value(a, k);
		g->end_kb[k] = value(b, k);
		g->delta_kb[k] = (int64_t)g->end_kb[k] - (int64_t)g->start_kb[k];
		g->rate_kb_s[k] = slope(s->p, s->n, k);
	}
	g->total_delta_kb = (int64_t)b->total_kb - (int64_t)a->total_kb;
	g->total_rate_kb_s = slope(s->p, s->n, AN_MEM_GREW_TOTAL);
	floor_kb = CT_MAX((int64_t)GREW_MIN_KB, (int64_t)(a->total_kb / 50));
	for (k = 0; k <= AN_MEM_GREW_NATIVE; k++) {
		if (k == AN_MEM_NATIVE || k == AN_MEM_OTHER_ANON)
			continue; /* judged together as native */
		if (g->delta_kb[k] >= floor_kb && g->delta_kb[k] > best) {
			best = g->delta_kb[k];
			g->grew = k;
		}
	}
}

const char *analyze_mem_growth_name(int grew)
{
	if (grew == AN_MEM_GREW_NATIVE)
		return "native";
	return grew >= 0 && grew < AN_MEM_KINDS ? analyze_mem_kind_name((enum an_mem_kind)grew) : NULL;
}

const char *analyze_mem_growth_label(int grew)
{
	if (grew == AN_MEM_GREW_NATIVE)
		return "native memory outside the GC heap (malloc heap and other anonymous memory)";
	return grew >= 0 && grew < AN_MEM_KINDS ? analyze_mem_kind_label((enum an_mem_kind)grew) : NULL;
}

int analyze_mem_growth_kind(const char *name)
{
	int k;

	if (!strcmp(name, "native"))
		return AN_MEM_GREW_NATIVE;
	if (!strcmp(name, "total"))
		return AN_MEM_GREW_TOTAL;
	for (k = 0; k < AN_MEM_KINDS; k++)
		if (!strcmp(name, analyze_mem_kind_name((enum an_mem_kind)k)))
			return k;
	return -1;
}

void analyze_mem_window_add(struct an_mem_window *w, double now, const struct an_memory *m)
{
	struct an_mem_point *pt;

	if (w->n == AN_MEM_WINDOW) {
		memmove(&w->p[0], &w->p[1], (AN_MEM_WINDOW - 1) * sizeof(w->p[0]));
		w->n--;
	}
	pt = &w->p[w->n++];
	pt->t_s = now;
	memcpy(pt->rss_kb, m->rss_kb, sizeof(pt->rss_kb));
	pt->total_kb = m->total_kb;
}

int analyze_mem_window_rate(const struct an_mem_window *w, int k, double *kb_s)
{
	if (k < 0 || k > AN_MEM_GREW_TOTAL)
		return -EINVAL;
	if (w->n < 2 || w->p[w->n - 1].t_s - w->p[0].t_s < 1e-3)
		return -ENODATA;
	*kb_s = slope(w->p, w->n, k);
	return 0;
}

int analyze_mem_window_read(pid_t pid, struct an_mem_window *w, double now)
{
	struct an_memory *m = malloc(sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	err = analyze_memory_read(pid, m);
	if (!err)
		analyze_mem_window_add(w, now, m);
	free(m);
	return err;
}
