/* SPDX-License-Identifier: MIT */
/*
 * text.c - the gcdump workflows' results as text for a person (the CLI
 * prints these; names from the target go through ct_term_safe).
 */
#include "common/compat.h"

#include <time.h>

#include "common/term.h"
#include "heap/heap.h"

const char *heap_thousands(uint64_t v, char *buf, size_t len)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v), i, o = 0;

	for (i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

/* How the events came: lossless, or lossy with every loss check passed. */
static const char *events_line(const struct heap_meta *m)
{
	return m->lossless ? "events: lossless (the runtime's Block buffering: it waits rather than drop)"
			   : "events: the runtime's lossy buffer (Block buffering needs .NET 11); none was lost"
			     " (block indexes, edge totals and sequence numbers checked)";
}

static void heap_text_snapshot_summary(struct strbuf *sb, const struct heap_graph *g, const struct heap_analysis *a)
{
	char t1[32], t2[32], t3[32], when[64] = "?";
	time_t tt = (time_t)g->meta.time;
	struct tm tm;

	if (gmtime_r(&tt, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	strbuf_addf(sb, "Heap snapshot of pid %u (%s), taken %s\n", g->meta.pid,
	       g->meta.process[0] ? ct_term_safe(g->meta.process) : "?", when);
	strbuf_addf(sb, "  GC #%u: gen %u, %s, %s, forced by clrtap", g->meta.gc_count, g->meta.gc_depth,
	       g->meta.gc_reason == 1 ? "induced" : "reason other than induced",
	       g->meta.gc_type == 0 ? "blocking" : "not blocking");
	if (g->meta.pause_ns)
		strbuf_addf(sb, "; it paused the process %.3f ms", g->meta.pause_ns / 1e6);
	if (g->meta.gc_ns)
		strbuf_addf(sb, " (GCStart..GCEnd %.3f ms, heap walk included)", g->meta.gc_ns / 1e6);
	strbuf_addf(sb, "\n");
	if (g->meta.attempts > 1)
		strbuf_addf(sb, "  the first heap session's GC came without heap-walk events: this is the GC of session %u"
		       " (the process paused for both)\n", g->meta.attempts);
	strbuf_addf(sb, "  %s objects, %s bytes, %s references, %u roots\n", heap_thousands(g->nnodes, t1, sizeof(t1)),
	       heap_thousands(heap_graph_bytes(g), t2, sizeof(t2)), heap_thousands(g->nedges, t3, sizeof(t3)),
	       g->nroots);
	strbuf_addf(sb, "  reachable from the roots: %s objects; not reachable: %s objects, %s bytes\n",
	       heap_thousands(a->reachable, t1, sizeof(t1)), heap_thousands(g->nnodes - a->reachable, t2, sizeof(t2)),
	       heap_thousands(a->unreachable_bytes, t3, sizeof(t3)));
	if (g->meta.unresolved_edges)
		strbuf_addf(sb, "  %" PRIu64 " references to addresses the walk did not report were dropped\n",
		       g->meta.unresolved_edges);
	strbuf_addf(sb, "  %s\n", events_line(&g->meta));
}

static void heap_text_strings_text(struct strbuf *sb, const struct heap_graph *g, size_t top)
{
	const struct heap_string_stats *s = &g->strings;
	char t1[32], t2[32];
	uint32_t i;

	strbuf_addf(sb, "\nDuplicated strings");
	if (!s->read) {
		strbuf_addf(sb, ": not read (the snapshot was taken without reading the target's memory)\n");
		return;
	}
	strbuf_addf(sb, " (contents read with %s)\n", s->how ? s->how : "process_vm_readv");
	strbuf_addf(sb, "  %s strings: %s compared, %" PRIu64 " moved or freed by a later GC before they were read,"
	       " %" PRIu64 " unreadable, %" PRIu64 " longer than %u chars not compared\n",
	       heap_thousands(s->strings, t1, sizeof(t1)), heap_thousands(s->compared, t2, sizeof(t2)), s->moved,
	       s->unreadable, s->too_long, HEAP_STRING_MAX_CHARS);
	strbuf_addf(sb, "  %" PRIu64 " values have copies: %" PRIu64 " strings, %s bytes wasted\n", s->dup_values,
	       s->dup_copies, heap_thousands(s->wasted, t1, sizeof(t1)));
	if (!g->ndups)
		return;
	strbuf_addf(sb, "  %12s %9s  %s\n", "wasted", "copies", "value");
	for (i = 0; i < g->ndups && i < top; i++)
		strbuf_addf(sb, "  %12s %9" PRIu64 "  \"%s\"%s\n", heap_thousands(g->dups[i].wasted, t1, sizeof(t1)),
		       g->dups[i].count, ct_term_safe(g->dups[i].value), g->dups[i].truncated ? "..." : "");
}

static void heap_text_paths(struct strbuf *sb, const struct heap_report *r)
{
	const struct heap_graph *g = r->g;
	const struct heap_paths *p = r->p;
	char t1[32], t2[32];
	size_t i;

	if (r->pobj != HEAP_NONE) {
		uint32_t x, depth = p->depth[r->pobj];

		strbuf_addf(sb, "\nShortest retention path to the %s at 0x%" PRIx64 " (object first, root last)\n",
		       ct_term_safe(g->types[g->type[r->pobj]].name), g->addr[r->pobj]);
		if (depth == HEAP_NONE)
			strbuf_addf(sb, "  not reachable from any root clrtap saw\n");
		for (x = r->pobj; depth != HEAP_NONE && x != HEAP_NONE; x = p->parent[x]) {
			bool root = p->parent[x] == HEAP_NONE;

			strbuf_addf(sb, "  %14s  0x%016" PRIx64 "  %s%s%s%s\n", heap_thousands(r->a->retained[x], t1, sizeof(t1)),
			       g->addr[x], ct_term_safe(g->types[g->type[x]].name), root ? "  [" : "",
			       root ? heap_root_kind_name(p->rootkind[x], p->rootflags[x]) : "", root ? "]" : "");
		}
	} else if (r->ptype != HEAP_NONE) {
		struct strbuf ps = STRBUF_INIT;

		strbuf_addf(sb, "\nShortest retention paths to %s (%s objects, %s bytes retained)\n", ct_term_safe(r->path),
		       heap_thousands(r->a->type_count[r->ptype], t1, sizeof(t1)),
		       heap_thousands(r->a->type_retained[r->ptype], t2, sizeof(t2)));
		strbuf_addf(sb, "  %11s %14s  %s\n", "objects", "retained", "path (root kind first)");
		for (i = 0; i < r->ngr; i++) {
			strbuf_reset(&ps);
			(void)heap_path_group_format(g, &r->gr[i], &ps);
			strbuf_addf(sb, "  %11s %14s  %s\n", heap_thousands(r->gr[i].count, t1, sizeof(t1)),
			       heap_thousands(r->gr[i].retained, t2, sizeof(t2)), ct_term_safe(ps.buf));
		}
		if (r->unreached)
			strbuf_addf(sb, "  %11" PRIu64 " %14s  (not reachable from any root clrtap saw)\n", r->unreached, "");
		strbuf_release(&ps);
	}
}

void heap_text_report(struct strbuf *sb, const struct heap_report *r)
{
	const struct heap_graph *g = r->g;
	const struct heap_analysis *a = r->a;
	char t1[32], t2[32], t3[32];
	size_t i;

	heap_text_snapshot_summary(sb, g, a);
	strbuf_addf(sb, "\nTypes by retained bytes (top %zu; retained = what the GC would free without them,"
	       " from the dominator tree)\n", r->ntop);
	strbuf_addf(sb, "  %14s %14s %11s  %s\n", "retained", "shallow", "count", "type");
	for (i = 0; i < r->ntop; i++) {
		uint32_t t = r->order[i];

		strbuf_addf(sb, "  %14s %14s %11s  %s\n", heap_thousands(a->type_retained[t], t1, sizeof(t1)),
		       heap_thousands(a->type_shallow[t], t2, sizeof(t2)), heap_thousands(a->type_count[t], t3, sizeof(t3)),
		       ct_term_safe(g->types[t].name));
	}
	strbuf_addf(sb, "\nLargest retainers (objects)\n");
	strbuf_addf(sb, "  %14s %10s  %-18s  %s\n", "retained", "size", "address", "type");
	for (i = 0; i < r->nret; i++) {
		uint32_t v = r->ret[i];

		strbuf_addf(sb, "  %14s %10s  0x%016" PRIx64 "  %s\n", heap_thousands(a->retained[v], t1, sizeof(t1)),
		       heap_thousands(g->size[v], t2, sizeof(t2)), g->addr[v], ct_term_safe(g->types[g->type[v]].name));
	}
	heap_text_paths(sb, r);
	heap_text_strings_text(sb, g, HEAP_REPORT_STRINGS);
}

void heap_text_growth(struct strbuf *sb, const struct heap_leaks *l)
{
	char t1[32];
	size_t i, s, j, k;

	strbuf_addf(sb, "Types whose count and retained bytes grow in every one of %zu snapshots: %zu", l->nsnap, l->ntop);
	if (l->n > l->ntop)
		strbuf_addf(sb, " (and %zu more growing types held by them)", l->n - l->ntop);
	strbuf_addf(sb, "\n");
	for (i = 0; i < l->n; i++) {
		struct heap_path_group *pg = NULL;
		struct strbuf ps = STRBUF_INIT;
		size_t npg = 0;

		if (l->holder[i] >= 0)
			continue;
		strbuf_addf(sb, "\n  %s\n    count   ", ct_term_safe(l->gr[i].name));
		for (s = 0; s < l->nsnap; s++)
			strbuf_addf(sb, "%s%s", s ? " -> " : "", heap_thousands(l->gr[i].count[s], t1, sizeof(t1)));
		strbuf_addf(sb, "\n    retained");
		for (s = 0; s < l->nsnap; s++)
			strbuf_addf(sb, "%s%s", s ? " -> " : " ", heap_thousands(l->gr[i].retained[s], t1, sizeof(t1)));
		strbuf_addf(sb, " bytes\n");
		if (!heap_leaks_paths(l, i, &pg, &npg))
			for (k = 0; k < npg; k++) {
				strbuf_reset(&ps);
				(void)heap_path_group_format(l->last, &pg[k], &ps);
				if (l->fp)
					strbuf_addf(sb, "    path (%" PRIu64 " -> %" PRIu64 " objects): %s\n",
					       heap_leaks_first_count(l, i, ps.buf), pg[k].count, ct_term_safe(ps.buf));
				else
					strbuf_addf(sb, "    path (%" PRIu64 " objects in the last snapshot): %s\n", pg[k].count,
					       ct_term_safe(ps.buf));
			}
		heap_path_groups_free(pg, npg);
		strbuf_release(&ps);
		for (j = 0; j < l->n; j++)
			if (l->holder[j] == (long)i)
				strbuf_addf(sb, "    held by it, growing too: %s (count %" PRIu64 " -> %" PRIu64 ")\n",
				       ct_term_safe(l->gr[j].name), l->gr[j].count[0], l->gr[j].count[l->nsnap - 1]);
	}
}

void heap_text_collected(struct strbuf *sb, const struct heap_graph *g, const char *out)
{
	char t1[32], t2[32], t3[32];

	strbuf_addf(sb, "wrote %s: %s objects, %s bytes, %s references, %u roots\n", ct_term_safe(out),
	       heap_thousands(g->nnodes, t1, sizeof(t1)), heap_thousands(heap_graph_bytes(g), t2, sizeof(t2)),
	       heap_thousands(g->nedges, t3, sizeof(t3)), g->nroots);
	if (g->meta.attempts > 1)
		strbuf_addf(sb, "the first heap session's GC came without heap-walk events; a second session's GC"
		       " gave it (the process paused for both)\n");
	strbuf_addf(sb, "%s\n", events_line(&g->meta));
	if (g->meta.pause_ns)
		strbuf_addf(sb, "the forced gen-2 GC #%u paused the process for %.3f ms (heap walk included)\n",
		       g->meta.gc_count, g->meta.pause_ns / 1e6);
	else
		strbuf_addf(sb, "the forced gen-2 GC #%u took %.3f ms from GCStart to GCEnd (pause not seen)\n",
		       g->meta.gc_count, g->meta.gc_ns / 1e6);
}

