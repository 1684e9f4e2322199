/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the GC heap bulk-event decoders (gcheap.c) and the
 * heap graph builder (lib/heap) behind them. An input whose first byte is
 * below 6 is one event payload for decoder number data[0] (pointer size from
 * data[1]); any other input is a nettrace stream whose events all go through
 * heap_builder_event, and the graph is built and analyzed when the GC ended.
 * Seeds: tests/data/gcheap/.
 */
#include "common/compat.h"

#include "heap/heap.h"
#include "nettrace/nettrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t sink;

static void decode_one(unsigned which, unsigned ps, const uint8_t *p, size_t n)
{
	struct nt_gc_bulk b;
	uint32_t i = 0;
	size_t off = 0;

	switch (which) {
	case 0:
		if (!nt_decode_gc_bulk_node(p, n, ps, &b))
			for (i = 0; i < b.count; i++) {
				struct nt_gc_node v;

				nt_gc_bulk_node_get(&b, i, &v);
				sink += v.address + v.size;
			}
		break;
	case 1:
		if (!nt_decode_gc_bulk_edge(p, n, ps, &b))
			for (i = 0; i < b.count; i++)
				sink += nt_gc_bulk_edge_get(&b, i);
		break;
	case 2:
		if (!nt_decode_gc_bulk_root(p, n, ps, &b))
			for (i = 0; i < b.count; i++) {
				struct nt_gc_root r;

				nt_gc_bulk_root_get(&b, i, &r);
				sink += r.address + r.kind;
			}
		break;
	case 3:
		if (!nt_decode_gc_bulk_cwt(p, n, ps, &b))
			for (i = 0; i < b.count; i++) {
				struct nt_gc_cwt c;

				nt_gc_bulk_cwt_get(&b, i, &c);
				sink += c.key;
			}
		break;
	case 4:
		if (!nt_decode_bulk_type(p, n, ps, &b)) {
			struct nt_bulk_type t;

			while (nt_bulk_type_next(&b, &off, &i, &t) == 0)
				sink += t.name.nunits;
		}
		break;
	default:
		if (!nt_decode_gc_bulk_static_root(p, n, ps, &b)) {
			struct nt_gc_static_root s;

			while (nt_gc_bulk_static_root_next(&b, &off, &i, &s) == 0)
				sink += s.field.nunits;
		}
		break;
	}
}

struct fctx {
	struct heap_builder *b;
};

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct fctx *f = ctx;
	int r = heap_builder_event(f->b, ev, 1000000);

	return r < 0 ? r : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_membuf mb = { data, size, 0 };
	const struct nt_handlers h = { .event = on_event };
	const struct heap_limits lim = { 100000, 400000 };
	struct nt_reader *r = NULL;
	struct fctx f = { NULL };
	struct heap_graph *g = NULL;

	if (size >= 2 && data[0] < 6) {
		decode_one(data[0], data[1] & 1 ? 4 : 8, data + 2, size - 2);
		return 0;
	}
	if (heap_builder_new(&f.b, &lim))
		return 0;
	if (!nt_reader_new(&r, nt_read_mem, &mb, NULL)) {
		(void)nt_reader_run(r, &h, &f);
		nt_reader_free(r);
	}
	if (!heap_builder_finish(f.b, &g)) {
		struct heap_analysis *a = NULL;

		if (!heap_analyze(g, &a))
			sink += a->reachable;
		heap_analysis_free(a);
		heap_graph_free(g);
	}
	heap_builder_free(f.b);
	return 0;
}
