/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/heap: dominators and retained sizes on hand-made graphs
 * (answers computed by hand), per-type retained bytes, path grouping, the
 * builder fed with synthetic bulk events (ordering, lost blocks, type names),
 * string objects, the snapshot file (round trip, truncation, corruption) and
 * growth across snapshots.
 */
#include "common/compat.h"

#include <fcntl.h>

#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "common/cursor.h"
#include "common/json_check.h"
#include "common/exitcode.h"
#include "heap/heap.h"

/* A graph from an edge list; node i has address 0x1000 + 0x100*i and size sizes[i]. */
static struct heap_graph *mk(uint32_t n, const uint64_t *sizes, const uint32_t *types, uint32_t ntypes,
			     const uint32_t (*e)[2], uint32_t ne, const uint32_t *roots, uint32_t nr)
{
	struct heap_graph *g = calloc(1, sizeof(*g));
	uint32_t i, k = 0;

	g->nnodes = n;
	g->addr = calloc(n, 8);
	g->size = calloc(n, 8);
	g->type = calloc(n, 4);
	g->edge_start = calloc(n + 1, 4);
	g->edges = calloc(ne + 1, 4);
	g->types = calloc(ntypes, sizeof(*g->types));
	g->ntypes = ntypes;
	for (i = 0; i < ntypes; i++) {
		char name[16];

		snprintf(name, sizeof(name), "T%u", i);
		g->types[i].name = strdup(name);
		g->types[i].id = 0x100 + i;
	}
	for (i = 0; i < n; i++) {
		uint32_t j;

		g->addr[i] = 0x1000 + 0x100 * (uint64_t)i;
		g->size[i] = sizes[i];
		g->type[i] = types ? types[i] : 0;
		g->edge_start[i] = k;
		for (j = 0; j < ne; j++)
			if (e[j][0] == i)
				g->edges[k++] = e[j][1];
	}
	g->edge_start[n] = k;
	g->nedges = k;
	g->roots = calloc(nr + 1, sizeof(*g->roots));
	for (i = 0; i < nr; i++) {
		g->roots[i].node = roots[i];
		g->roots[i].kind = HEAP_ROOT_HANDLE;
	}
	g->nroots = nr;
	return g;
}

/*
 * The fixture's shape: H -> L, H -> R, L -> S, R -> S, S -> P.
 * H retains everything (152), L and R only themselves (a spanning tree would
 * give S and P to one of them), S retains S + P.
 */
static void test_dominator_diamond(void **state)
{
	enum { H, L, R, S, P, N };
	const uint64_t sizes[N] = { 32, 24, 24, 24, 48 };
	const uint32_t types[N] = { 0, 1, 2, 3, 4 };
	const uint32_t e[][2] = { { H, L }, { H, R }, { L, S }, { R, S }, { S, P } };
	const uint32_t roots[] = { H };
	struct heap_graph *g = mk(N, sizes, types, 5, e, 5, roots, 1);
	struct heap_analysis *a;

	(void)state;
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(a->retained[H], 152);
	assert_int_equal(a->retained[L], 24);
	assert_int_equal(a->retained[R], 24);
	assert_int_equal(a->retained[S], 72);
	assert_int_equal(a->retained[P], 48);
	assert_int_equal(a->idom[S], H);
	assert_int_equal(a->idom[P], S);
	assert_int_equal(a->idom[H], N); /* the virtual root */
	assert_int_equal(a->retained[N], 152);
	assert_int_equal(a->reachable, 5);
	assert_int_equal(a->type_retained[3], 72);
	heap_analysis_free(a);
	heap_graph_free(g);
}

/*
 * The example of Lengauer and Tarjan's paper (13 vertices R, A..L), with R
 * the only root; idoms from the paper.
 */
static void test_dominator_paper(void **state)
{
	enum { R, A, B, C, D, E, F, G, H, I, J, K, L, N };
	const uint32_t e[][2] = {
		{ R, A }, { R, B }, { R, C }, { A, D }, { B, A }, { B, D }, { B, E }, { C, F }, { C, G },
		{ D, L }, { E, H }, { F, I }, { G, I }, { G, J }, { H, E }, { H, K }, { I, K }, { J, I },
		{ K, I }, { K, R }, { L, H },
	};
	const uint32_t want[N] = { N, R, R, R, R, R, C, C, R, R, G, R, D };
	uint64_t sizes[N];
	const uint32_t roots[] = { R };
	struct heap_graph *g;
	struct heap_analysis *a;
	uint32_t i;

	(void)state;
	for (i = 0; i < N; i++)
		sizes[i] = 1;
	g = mk(N, sizes, NULL, 1, e, sizeof(e) / sizeof(e[0]), roots, 1);
	assert_int_equal(heap_analyze(g, &a), 0);
	for (i = 0; i < N; i++)
		assert_int_equal(a->idom[i], want[i]);
	assert_int_equal(a->retained[R], 13);
	assert_int_equal(a->retained[C], 4); /* C, F, G, J */
	assert_int_equal(a->retained[D], 2); /* D, L */
	heap_analysis_free(a);
	heap_graph_free(g);
}

/* Two roots sharing an object: only the virtual root dominates it; unreachable nodes count apart. */
static void test_dominator_two_roots(void **state)
{
	const uint64_t sizes[] = { 10, 20, 30, 40 };
	const uint32_t types[] = { 0, 0, 1, 1 };
	const uint32_t e[][2] = { { 0, 2 }, { 1, 2 } };
	const uint32_t roots[] = { 0, 1 };
	struct heap_graph *g = mk(4, sizes, types, 2, e, 2, roots, 2);
	struct heap_analysis *a;

	(void)state;
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(a->retained[0], 10);
	assert_int_equal(a->retained[1], 20);
	assert_int_equal(a->retained[2], 30);
	assert_int_equal(a->idom[2], 4);
	assert_int_equal(a->idom[3], HEAP_NONE);
	assert_int_equal(a->reachable, 3);
	assert_int_equal(a->unreachable_bytes, 40);
	/* type 0 retains itself only; type 1's reachable object is retained by nobody of type 0 */
	assert_int_equal(a->type_retained[0], 30);
	assert_int_equal(a->type_retained[1], 30);
	assert_int_equal(a->type_count[1], 2);
	heap_analysis_free(a);
	heap_graph_free(g);
}

/* A chain a million long: no recursion anywhere. Nested objects of one type are counted once. */
static void test_dominator_long_chain(void **state)
{
	const uint32_t n = 1000000;
	uint64_t *sizes = malloc(n * 8);
	uint32_t (*e)[2] = malloc((n - 1) * sizeof(*e));
	const uint32_t roots[] = { 0 };
	struct heap_graph *g;
	struct heap_analysis *a;
	uint32_t i;

	(void)state;
	for (i = 0; i < n; i++)
		sizes[i] = 24;
	for (i = 0; i + 1 < n; i++) {
		e[i][0] = i;
		e[i][1] = i + 1;
	}
	/* mk is quadratic in edges: build directly */
	g = mk(1, sizes, NULL, 1, NULL, 0, roots, 1);
	free(g->addr);
	free(g->size);
	free(g->type);
	free(g->edge_start);
	free(g->edges);
	g->nnodes = n;
	g->addr = malloc(n * 8);
	g->size = sizes;
	g->type = calloc(n, 4);
	g->edge_start = malloc((n + 1) * 4);
	g->edges = malloc(n * 4);
	for (i = 0; i < n; i++) {
		g->addr[i] = 0x1000 + 8 * (uint64_t)i;
		g->edge_start[i] = i;
		if (i + 1 < n)
			g->edges[i] = i + 1;
	}
	g->edge_start[n] = n - 1;
	g->nedges = n - 1;
	free(e);
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(a->retained[0], 24ull * n);
	assert_int_equal(a->retained[n - 1], 24);
	assert_int_equal(a->type_retained[0], 24ull * n);
	{
		/* paths of a million objects on one chain: 32 short paths, one long shape, fast */
		struct heap_paths *p;
		struct heap_path_group *gr;
		size_t ng, k;
		uint64_t un;

		assert_int_equal(heap_paths_new(g, &p), 0);
		assert_int_equal(p->anchor[n - 1], 7);
		assert_int_equal(heap_paths_group(g, p, a, 0, 100, &gr, &ng, &un), 0);
		assert_int_equal(ng, 33);
		assert_int_equal(gr[0].count, n - 32);
		assert_int_equal(gr[0].ntypes, 32);
		assert_int_equal(gr[0].types[8], HEAP_NONE);
		for (k = 0; k < 8; k++)
			assert_int_equal(gr[0].types[k], 0);
		heap_path_groups_free(gr, ng);
		heap_paths_free(p);
	}
	heap_analysis_free(a);
	heap_graph_free(g);
}

static void test_paths(void **state)
{
	/* root 0 (list) -> 1 (array) -> 2,3,4 (items); item 4 also from root 5 directly */
	const uint64_t sizes[] = { 32, 48, 24, 24, 24, 24 };
	const uint32_t types[] = { 0, 1, 2, 2, 2, 3 };
	const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 }, { 5, 4 } };
	const uint32_t roots[] = { 0, 5 };
	struct heap_graph *g = mk(6, sizes, types, 4, e, 5, roots, 2);
	struct heap_analysis *a;
	struct heap_paths *p;
	struct heap_path_group *gr;
	struct strbuf sb = STRBUF_INIT;
	size_t n;
	uint64_t un;

	(void)state;
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(heap_paths_new(g, &p), 0);
	assert_int_equal(heap_paths_group(g, p, a, 2, 10, &gr, &n, &un), 0);
	assert_int_equal(n, 2);
	assert_int_equal(un, 0);
	assert_int_equal(gr[0].count, 2);
	assert_int_equal(gr[0].ntypes, 3);
	assert_int_equal(gr[1].count, 1);
	assert_int_equal(gr[1].ntypes, 2);
	assert_int_equal(heap_path_group_format(g, &gr[0], &sb), 0);
	assert_string_equal(sb.buf, "[strong handle] T0 -> T1 -> T2");
	heap_path_groups_free(gr, n);
	strbuf_release(&sb);
	heap_paths_free(p);
	heap_analysis_free(a);
	heap_graph_free(g);
}

/* A hostile type name cannot end the page's script element. */
static void test_html_escape(void **state)
{
	const uint64_t sizes[] = { 32, 24 };
	const uint32_t types[] = { 0, 1 };
	const uint32_t e[][2] = { { 0, 1 } };
	const uint32_t roots[] = { 0 };
	struct heap_graph *g = mk(2, sizes, types, 2, e, 1, roots, 1);
	struct heap_analysis *a;
	struct heap_paths *p;
	struct strbuf sb = STRBUF_INIT;
	const char *s;
	int scripts = 0;

	(void)state;
	free(g->types[1].name);
	g->types[1].name = strdup("</script><script>alert(1)</script>");
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(heap_paths_new(g, &p), 0);
	assert_int_equal(heap_html_write(g, a, p, &sb), 0);
	for (s = sb.buf; (s = strstr(s, "<script")); s++)
		scripts++;
	assert_int_equal(scripts, 1);
	assert_non_null(strstr(sb.buf, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));
	strbuf_release(&sb);
	heap_paths_free(p);
	heap_analysis_free(a);

	/* control bytes, invalid UTF-8, '&' and U+2028: the data block is strict JSON, no raw byte */
	free(g->types[0].name);
	g->types[0].name = strdup("A\x1b[2J\n\xff&\xe2\x80\xa8<!--");
	assert_int_equal(heap_analyze(g, &a), 0);
	assert_int_equal(heap_paths_new(g, &p), 0);
	assert_int_equal(heap_html_write(g, a, p, &sb), 0);
	{
		const char *d = strstr(sb.buf, "const D="), *end;
		size_t where = 0, i;

		assert_non_null(d);
		d += strlen("const D=");
		end = strstr(d, ";\nconst T=");
		assert_non_null(end);
		assert_int_equal(json_check(d, (size_t)(end - d), NULL, &where), 0);
		for (i = 0; d + i < end; i++)
			assert_true((unsigned char)d[i] >= 0x20 && d[i] != '<' && d[i] != '>' && d[i] != '&');
		assert_non_null(strstr(d, "\"A\\u001b[2J\\n\xef\xbf\xbd\\u0026\\u2028\\u003c!--\""));
	}
	strbuf_release(&sb);
	heap_paths_free(p);
	heap_analysis_free(a);
	heap_graph_free(g);
}

/* ----- builder ----- */

struct evb {
	struct nt_metadata m;
	struct nt_event ev;
	uint8_t buf[4096];
	size_t len;
};

static void ev_begin(struct evb *e, uint32_t id, uint32_t version)
{
	memset(e, 0, sizeof(*e));
	e->m.provider_kind = NT_PROV_RUNTIME;
	e->m.event_id = id;
	e->m.version = version;
	e->ev.meta = &e->m;
	e->ev.pointer_size = 8;
}

static void put32(struct evb *e, uint32_t v)
{
	ct_put_le32(e->buf + e->len, v);
	e->len += 4;
}

static void put64(struct evb *e, uint64_t v)
{
	ct_put_le64(e->buf + e->len, v);
	e->len += 8;
}

static void put16(struct evb *e, uint16_t v)
{
	ct_put_le16(e->buf + e->len, v);
	e->len += 2;
}

static int feed(struct heap_builder *b, struct evb *e)
{
	e->ev.payload = e->buf;
	e->ev.payload_len = (uint32_t)e->len;
	return heap_builder_event(b, &e->ev, 1000000000);
}

static void gc_start(struct heap_builder *b, uint32_t count, uint32_t depth, uint32_t type)
{
	struct evb e;

	ev_begin(&e, 1, 2);
	put32(&e, count);
	put32(&e, depth);
	put32(&e, 1);
	put32(&e, type);
	put16(&e, 0);
	put64(&e, 0);
	e.ev.timestamp = 1000;
	assert_int_equal(feed(b, &e), 0);
}

static int gc_end(struct heap_builder *b, uint32_t count)
{
	struct evb e;

	ev_begin(&e, 2, 1);
	put32(&e, count);
	put32(&e, 2);
	put16(&e, 0);
	e.ev.timestamp = 3000001000;
	return feed(b, &e);
}

static void bulk_type(struct heap_builder *b, uint64_t id, const char *name)
{
	struct evb e;
	size_t i;

	ev_begin(&e, NT_EV_BULK_TYPE, 0);
	put32(&e, 1);
	put16(&e, 0);
	put64(&e, id);
	put64(&e, 0x77);
	put32(&e, 0);
	put32(&e, 0);
	e.buf[e.len++] = 0x12;
	for (i = 0; name[i]; i++)
		put16(&e, (uint8_t)name[i]);
	put16(&e, 0);
	put32(&e, 0);
	assert_int_equal(feed(b, &e), 0);
}

struct tnode {
	uint64_t addr, size, type;
	uint32_t nedges;
};

static int nodes(struct heap_builder *b, uint32_t index, const struct tnode *n, uint32_t count)
{
	struct evb e;
	uint32_t i;

	ev_begin(&e, NT_EV_GC_BULK_NODE, 2);
	put32(&e, index);
	put32(&e, count);
	put16(&e, 0);
	for (i = 0; i < count; i++) {
		put64(&e, n[i].addr);
		put64(&e, n[i].size);
		put64(&e, n[i].type);
		put64(&e, n[i].nedges);
	}
	return feed(b, &e);
}

static int edges(struct heap_builder *b, uint32_t index, const uint64_t *t, uint32_t count)
{
	struct evb e;
	uint32_t i;

	ev_begin(&e, NT_EV_GC_BULK_EDGE, 2);
	put32(&e, index);
	put32(&e, count);
	put16(&e, 0);
	for (i = 0; i < count; i++) {
		put64(&e, t[i]);
		put32(&e, 0);
	}
	return feed(b, &e);
}

static int roots_ev(struct heap_builder *b, uint32_t index, uint64_t addr, uint8_t kind, uint32_t flags)
{
	struct evb e;

	ev_begin(&e, NT_EV_GC_BULK_ROOT_EDGE, 2);
	put32(&e, index);
	put32(&e, 1);
	put16(&e, 0);
	put64(&e, addr);
	e.buf[e.len++] = kind;
	put32(&e, flags);
	put64(&e, 0x5555);
	return feed(b, &e);
}

static void test_builder(void **state)
{
	struct heap_builder *b;
	struct heap_graph *g;
	/* arrive out of address order; the list refers to two items and an unknown address */
	const struct tnode n1[] = { { 0x3000, 32, 0xA2, 0 }, { 0x1000, 32, 0xA1, 3 } };
	const struct tnode n2[] = { { 0x2000, 32, 0xA2, 1 } };
	const uint64_t e1[] = { 0x2000, 0x3000 }, e2[] = { 0x9999, 0x3000 };

	(void)state;
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	bulk_type(b, 0xA1, "System.Collections.Generic.List`1[Foo.Item]");
	/* events before the GC are ignored */
	assert_int_equal(nodes(b, 0, n1, 2), 0);
	gc_start(b, 7, 1, 0); /* gen 1: not ours */
	gc_start(b, 8, 2, 1); /* background: not ours */
	gc_start(b, 9, 2, 0);
	assert_int_equal(nodes(b, 5, n1, 2), 0);
	assert_int_equal(edges(b, 10, e1, 2), 0);
	assert_int_equal(nodes(b, 6, n2, 1), 0);
	assert_int_equal(edges(b, 11, e2, 2), 0);
	assert_int_equal(roots_ev(b, 0, 0x1000, 2, 0), 0);
	assert_int_equal(roots_ev(b, 1, 0x2000, 2, NT_ROOT_FLAG_WEAKREF), 0);
	bulk_type(b, 0xA2, "Foo.Item[]");
	bulk_type(b, 0xA3, "Foo.Map`2[System.Int32,System.String[,]]");
	assert_int_equal(gc_end(b, 8), 0);
	assert_int_equal(gc_end(b, 9), 1);
	assert_true(heap_builder_done(b));
	assert_int_equal(heap_builder_lost(b), 0);
	assert_int_equal(heap_builder_finish(b, &g), 0);
	heap_builder_free(b);
	assert_int_equal(g->nnodes, 3);
	assert_int_equal(g->addr[0], 0x1000);
	assert_int_equal(g->addr[2], 0x3000);
	assert_string_equal(g->types[g->type[0]].name, "System.Collections.Generic.List<Foo.Item>");
	assert_string_equal(g->types[g->type[1]].name, "Foo.Item[]");
	assert_int_not_equal(heap_graph_type_find(g, "Foo.Map<System.Int32,System.String[,]>"), HEAP_NONE);
	/* 0x1000 -> 0x2000, 0x3000 (its 3rd edge is 0x9999: unknown); 0x2000 -> 0x3000 */
	assert_int_equal(g->edge_start[1] - g->edge_start[0], 2);
	assert_int_equal(g->edges[0], 1);
	assert_int_equal(g->edges[1], 2);
	assert_int_equal(g->edges[g->edge_start[1]], 2);
	assert_int_equal(g->meta.unresolved_edges, 1);
	assert_int_equal(g->meta.weak_roots, 1);
	assert_int_equal(g->nroots, 1);
	assert_int_equal(g->meta.gc_count, 9);
	assert_int_equal(g->meta.gc_ns, 3000000000ull);
	heap_graph_free(g);
}

static void test_builder_lost(void **state)
{
	struct heap_builder *b;
	struct heap_graph *g;
	const struct tnode n1[] = { { 0x1000, 32, 0xA1, 1 } };
	const uint64_t e1[] = { 0x1000 };

	(void)state;
	/* a gap in the node blocks' index */
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	gc_start(b, 3, 2, 0);
	assert_int_equal(nodes(b, 0, n1, 1), 0);
	assert_int_equal(nodes(b, 2, n1, 0), 0);
	assert_int_equal(edges(b, 0, e1, 1), 0);
	assert_int_equal(gc_end(b, 3), 1);
	assert_int_equal(heap_builder_lost(b), 1);
	assert_int_equal(heap_builder_finish(b, &g), -EPROTO);
	heap_builder_free(b);
	/* edges missing at the end */
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	gc_start(b, 3, 2, 0);
	assert_int_equal(nodes(b, 0, n1, 1), 0);
	assert_int_equal(gc_end(b, 3), 1);
	assert_int_equal(heap_builder_finish(b, &g), -EPROTO);
	heap_builder_free(b);
	/* no nodes */
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	gc_start(b, 3, 2, 0);
	assert_int_equal(gc_end(b, 3), 1);
	assert_int_equal(heap_builder_finish(b, &g), -ENODATA);
	heap_builder_free(b);
	/* a payload shorter than its count */
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	gc_start(b, 3, 2, 0);
	{
		struct evb e;

		ev_begin(&e, NT_EV_GC_BULK_NODE, 2);
		put32(&e, 0);
		put32(&e, 1000);
		put16(&e, 0);
		assert_int_equal(feed(b, &e), -EBADMSG);
	}
	heap_builder_free(b);
}

/* Nodes in many runs and random order come out sorted, every edge resolved. */
static void test_builder_order(void **state)
{
	struct heap_builder *b;
	struct heap_graph *g;
	struct tnode n[64];
	uint64_t e[64];
	uint32_t i, blk, seed = 12345;

	(void)state;
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	gc_start(b, 3, 2, 0);
	for (blk = 0; blk < 50; blk++) {
		for (i = 0; i < 64; i++) {
			seed = seed * 1103515245 + 12345;
			/* unique addresses: block-major with a pseudo-random block order */
			n[i].addr = 0x100000 + ((uint64_t)((blk * 37) % 50) * 64 + ((i * 29) % 64)) * 32;
			n[i].size = 32;
			n[i].type = 0xA1;
			n[i].nedges = 1;
			e[i] = 0x100000 + (uint64_t)(seed % 3200) * 32;
		}
		assert_int_equal(nodes(b, blk, n, 64), 0);
		assert_int_equal(edges(b, blk, e, 64), 0);
	}
	assert_int_equal(gc_end(b, 3), 1);
	assert_int_equal(heap_builder_finish(b, &g), 0);
	heap_builder_free(b);
	assert_int_equal(g->nnodes, 3200);
	for (i = 1; i < g->nnodes; i++)
		assert_true(g->addr[i - 1] < g->addr[i]);
	assert_int_equal(g->nedges, 3200);
	assert_int_equal(g->meta.unresolved_edges, 0);
	for (i = 0; i < g->nedges; i++)
		assert_true(g->edges[i] < 3200);
	heap_graph_free(g);
}

static void test_string_parse(void **state)
{
	uint8_t obj[64] = { 0 };
	const uint8_t *u;
	uint32_t n;

	(void)state;
	ct_put_le64(obj, 0xABCD);
	ct_put_le32(obj + 8, 3);
	memcpy(obj + 12, "a\0b\0c\0", 6);
	assert_int_equal(heap_string_parse(obj, 28, 28, 0xABCD, &u, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(u[2], 'b');
	assert_int_equal(heap_string_parse(obj, 32, 32, 0xABCD, &u, &n), 0); /* padded */
	assert_int_equal(heap_string_parse(obj, 28, 28, 0xABCE, &u, &n), -ESTALE);
	ct_put_le32(obj + 8, 30);
	assert_int_equal(heap_string_parse(obj, 28, 28, 0xABCD, &u, &n), -ESTALE);
	assert_int_equal(heap_string_parse(obj, 8, 28, 0xABCD, &u, &n), -ESTALE);
}

/* ----- snapshot file ----- */

static int write_mem(const struct heap_graph *g, struct strbuf *out)
{
	char path[] = "/tmp/clrtap-heap-test-XXXXXX";
	int fd = mkstemp(path), err;

	assert_true(fd >= 0);
	err = heap_file_write(g, fd);
	close(fd);
	if (!err)
		err = strbuf_read_file(out, path);
	unlink(path);
	return err;
}

static void test_file(void **state)
{
	const uint64_t sizes[] = { 32, 48, 24, 24, 24, 24 };
	const uint32_t types[] = { 0, 1, 2, 2, 2, 3 };
	const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 }, { 5, 4 }, { 4, 0 } };
	const uint32_t roots[] = { 0, 5 };
	struct heap_graph *g = mk(6, sizes, types, 4, e, 6, roots, 2), *h;
	struct strbuf sb = STRBUF_INIT;
	const char *why;
	size_t cut;
	uint32_t i;

	(void)state;
	g->meta.pid = 4242;
	g->meta.pause_ns = 1234567;
	snprintf(g->meta.process, sizeof(g->meta.process), "dotnet");
	g->dups = calloc(1, sizeof(*g->dups));
	g->dups[0].value = strdup("hello");
	g->dups[0].count = 3;
	g->dups[0].bytes = 96;
	g->ndups = 1;
	g->strings.read = true;
	assert_int_equal(write_mem(g, &sb), 0);
	assert_int_equal(heap_file_parse((const uint8_t *)sb.buf, sb.len, &h, &why), 0);
	assert_int_equal(h->nnodes, 6);
	assert_int_equal(h->nedges, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(h->addr[i], g->addr[i]);
		assert_int_equal(h->size[i], g->size[i]);
		assert_int_equal(h->type[i], g->type[i]);
	}
	for (i = 0; i < 6; i++)
		assert_int_equal(h->edges[i], g->edges[i]);
	assert_int_equal(h->nroots, 2);
	assert_int_equal(h->meta.pid, 4242);
	assert_int_equal(h->meta.pause_ns, 1234567);
	assert_string_equal(h->meta.process, "dotnet");
	assert_string_equal(h->dups[0].value, "hello");
	assert_int_equal(h->dups[0].wasted, 64);
	assert_string_equal(h->types[3].name, "T3");
	assert_false(h->meta.lossless);
	heap_graph_free(h);
	/* the lossless flag (header flags bit 0) round-trips */
	{
		struct strbuf lb = STRBUF_INIT;

		g->meta.lossless = true;
		assert_int_equal(write_mem(g, &lb), 0);
		assert_int_equal(ct_le32((const uint8_t *)lb.buf + 12), 1);
		assert_int_equal(heap_file_parse((const uint8_t *)lb.buf, lb.len, &h, &why), 0);
		assert_true(h->meta.lossless);
		heap_graph_free(h);
		strbuf_release(&lb);
		g->meta.lossless = false;
	}
	/* every truncation fails cleanly */
	for (cut = 0; cut < sb.len; cut++) {
		assert_int_not_equal(heap_file_parse((const uint8_t *)sb.buf, cut, &h, &why), 0);
		assert_non_null(why);
	}
	/* every single-byte change fails (the CRC catches what the structure does not) */
	for (cut = 0; cut < sb.len; cut++) {
		sb.buf[cut] ^= 0x20;
		assert_int_not_equal(heap_file_parse((const uint8_t *)sb.buf, sb.len, &h, &why), 0);
		sb.buf[cut] ^= 0x20;
	}
	strbuf_release(&sb);
	heap_graph_free(g);
}

static void test_growth(void **state)
{
	struct heap_typestat s1[] = { { "A", 1, 10, 10 }, { "B", 5, 50, 50 }, { "C", 1, 1, 1 } };
	struct heap_typestat s2[] = { { "A", 2, 20, 20 }, { "B", 5, 50, 60 }, { "C", 2, 2, 2 } };
	struct heap_typestat s3[] = { { "A", 3, 30, 30 }, { "B", 6, 60, 70 }, { "D", 1, 1, 1 } };
	struct heap_typestat *st[] = { s1, s2, s3 };
	size_t ns[] = { 3, 3, 3 }, n;
	struct heap_growth *gr;

	(void)state;
	assert_int_equal(heap_growth_find(st, ns, 3, &gr, &n), 0);
	/* A grows in count and bytes each time; B's count stalls; C disappears; D is new only once */
	assert_int_equal(n, 1);
	assert_string_equal(gr[0].name, "A");
	assert_int_equal(gr[0].count[2], 3);
	heap_growth_free(gr, n);
	assert_int_equal(heap_growth_find(st, ns, 1, &gr, &n), -EINVAL);
}


/* A list (T0, a root) of k items (T1), each holding a payload (T2). */
static struct heap_graph *mk_list(uint32_t k)
{
	uint64_t sizes[32];
	uint32_t types[32], e[32][2], root = 0, i, ne = 0;

	sizes[0] = 64;
	types[0] = 0;
	for (i = 1; i <= k; i++) {
		sizes[i] = 32;
		types[i] = 1;
		sizes[k + i] = 24;
		types[k + i] = 2;
		e[ne][0] = 0;
		e[ne++][1] = i;
		e[ne][0] = i;
		e[ne++][1] = k + i;
	}
	return mk(2 * k + 1, sizes, types, 3, (const uint32_t(*)[2])e, ne, &root, 1);
}

/* The gcdump tasks from the table over snapshot files: their result JSON. */
static void test_tasks(void **state)
{
	char dir[] = "/tmp/clrtap-heap-task-XXXXXX", files[512] = "", why[256];
	const struct task *t;
	struct task_args a;
	struct task_result r;
	struct heap_graph *g;
	int dfd;
	uint32_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (i = 1; i <= 3; i++) {
		char name[16];

		g = mk_list(2 * i);
		if (i == 3) {
			g->dups = calloc(1, sizeof(*g->dups));
			g->dups[0].value = strdup("hello");
			g->dups[0].count = 3;
			g->dups[0].bytes = 96;
			g->dups[0].wasted = 64;
			g->ndups = 1;
			g->strings.read = true;
		}
		snprintf(name, sizeof(name), "s%u.heap", i);
		assert_int_equal(heap_file_save(g, dfd, name), 0);
		heap_graph_free(g);
		snprintf(files + strlen(files), sizeof(files) - strlen(files), "%s%s/%s", i > 1 ? ":" : "", dir, name);
	}
	/* diff: the items grow and hold the payloads, which grow too */
	assert_non_null(t = task_find("gcdump.diff"));
	assert_int_equal(task_args_init(&a, t, 0), 0);
	assert_int_equal(task_args_set(&a, "files", files, why, sizeof(why)), 0);
	task_result_init(&r);
	assert_int_equal(task_run(t, &a, NULL, &r), 0);
	assert_int_equal(json_check(r.json.buf, r.json.len, NULL, NULL), 0);
	assert_non_null(strstr(r.json.buf, "\"task\":\"gcdump.diff\""));
	assert_non_null(strstr(r.json.buf, "\"type\":\"T1\",\"held_by\":null,\"count\":[2,4,6]"));
	assert_non_null(strstr(r.json.buf, "\"type\":\"T2\",\"held_by\":\"T1\",\"count\":[2,4,6]"));
	assert_null(strstr(r.json.buf, "\"type\":\"T0\""));
	task_result_release(&r);
	task_args_release(&a);
	/* the report (as gcdump.report gives it) of the last file: the one duplicated-string shape */
	{
		struct heap_report rep;
		struct strbuf sb = STRBUF_INIT;
		int code;

		snprintf(files, sizeof(files), "%s/s3.heap", dir);
		assert_int_equal(heap_load(files, &g, why, sizeof(why), &code), 0);
		assert_int_equal(heap_report_build(g, 0, "T2", false, &rep, why, sizeof(why)), 0);
		assert_int_equal(heap_gcdump_report_json(&rep, &sb), 0);
		assert_int_equal(json_check(sb.buf, sb.len, NULL, NULL), 0);
		assert_non_null(strstr(sb.buf, "\"task\":\"gcdump.report\""));
		assert_non_null(strstr(sb.buf, "{\"value\":\"hello\",\"truncated\":false,\"chars\":0,\"copies\":3,"
					       "\"bytes\":96,\"wasted_bytes\":64}"));
		assert_non_null(strstr(sb.buf, "\"paths\":{\"type\":\"T2\",\"count\":6,\"retained\":144"));
		heap_report_release(&rep);
		/* a type the snapshot lacks: -EINVAL and the sentence */
		assert_int_equal(heap_report_build(g, 0, "No.Such", false, &rep, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "no object of type 'No.Such' in the snapshot");
		heap_report_release(&rep);
		heap_graph_free(g);
		strbuf_release(&sb);
	}
	for (i = 1; i <= 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "s%u.heap", i);
		unlinkat(dfd, name, 0);
	}
	close(dfd);
	rmdir(dir);
}

/* The real capture: the builder and the analysis give the hand-computed answer. */
static int cap_event(void *ctx, const struct nt_event *ev)
{
	int r = heap_builder_event(ctx, ev, 1000000000);

	return r < 0 ? r : 0;
}

static void test_real_capture(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	gzFile z = gzopen(CT_SRCDIR "/tests/data/gcheap/dominator.nettrace.gz", "rb");
	char buf[65536];
	int n;
	struct nt_membuf mb;
	struct nt_reader *r;
	const struct nt_handlers h = { .event = cap_event };
	struct heap_builder *b;
	struct heap_graph *g;
	struct heap_analysis *a;
	const char *names[] = { "Clrtap.Fixtures.DomHolder", "Clrtap.Fixtures.DomLeft",
				"Clrtap.Fixtures.DomRight", "Clrtap.Fixtures.DomShared",
				"Clrtap.Fixtures.DomPayload" };
	const uint64_t want[] = { 152, 24, 24, 72, 48 };
	size_t i;

	(void)state;
	assert_non_null(z);
	while ((n = gzread(z, buf, sizeof(buf))) > 0)
		assert_int_equal(strbuf_add(&sb, buf, (size_t)n), 0);
	gzclose(z);
	mb.p = (const uint8_t *)sb.buf;
	mb.len = sb.len;
	mb.off = 0;
	assert_int_equal(heap_builder_new(&b, NULL), 0);
	assert_int_equal(nt_reader_new(&r, nt_read_mem, &mb, NULL), 0);
	assert_int_equal(nt_reader_run(r, &h, b), 0);
	nt_reader_free(r);
	assert_true(heap_builder_done(b));
	assert_int_equal(heap_builder_finish(b, &g), 0);
	heap_builder_free(b);
	assert_int_equal(g->meta.gc_depth, 2);
	assert_int_equal(g->meta.gc_reason, 1);
	assert_true(g->meta.pause_ns > 0);
	assert_int_equal(heap_analyze(g, &a), 0);
	for (i = 0; i < 5; i++) {
		uint32_t t = heap_graph_type_find(g, names[i]);

		assert_int_not_equal(t, HEAP_NONE);
		assert_int_equal(a->type_count[t], 1);
		assert_int_equal(a->type_retained[t], want[i]);
	}
	heap_analysis_free(a);
	heap_graph_free(g);
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dominator_diamond),
		cmocka_unit_test(test_dominator_paper),
		cmocka_unit_test(test_dominator_two_roots),
		cmocka_unit_test(test_dominator_long_chain),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_html_escape),
		cmocka_unit_test(test_builder),
		cmocka_unit_test(test_builder_lost),
		cmocka_unit_test(test_builder_order),
		cmocka_unit_test(test_string_parse),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_tasks),
		cmocka_unit_test(test_real_capture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
