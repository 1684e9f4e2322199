/* SPDX-License-Identifier: MIT */
/*
 * order.c - puts the profiler's events back in time order.
 *
 * EventPipe does not write a stream in time order across threads: at each
 * flush it takes the thread with the oldest event and writes all of that
 * thread's events, then the next thread's. A Call written by a request
 * thread can so come after a later ProbeCount of the profiler's thread.
 * What it promises (nettrace format, mechanism #2 of the runtime's buffer
 * manager): an event marked sorted has no later event in the stream with
 * an older timestamp, and at a sequence point every older event is out.
 * Events wait here until one of those says nothing older can still come.
 */
#include "common/compat.h"

#include "agent/agent.h"

#define ORDER_MAX_EVENTS (1u << 18)
#define ORDER_MAX_BYTES (32u << 20)

struct agent_order_item {
	int64_t ts;
	uint64_t n; /* arrival: keeps one thread's events in their order */
	size_t off;
	uint32_t len;
	int id;
};

void agent_order_init(struct agent_order *o)
{
	memset(o, 0, sizeof(*o));
}

void agent_order_free(struct agent_order *o)
{
	free(o->items);
	free(o->arena);
	memset(o, 0, sizeof(*o));
}

static int cmp_item(const void *a, const void *b)
{
	const struct agent_order_item *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

int agent_order_release(struct agent_order *o, int64_t upto, agent_order_fn fn, void *ctx)
{
	size_t i, k, keep_bytes = 0;
	int ret = 0;

	if (!o->n)
		return 0;
	qsort(o->items, o->n, sizeof(*o->items), cmp_item);
	for (i = 0; i < o->n && o->items[i].ts <= upto; i++) {
		const struct agent_order_item *it = &o->items[i];

		if (!ret)
			ret = fn(ctx, it->id, o->arena + it->off, it->len);
	}
	if (i == o->n) {
		o->n = 0;
		o->alen = 0;
		return ret;
	}
	/* Keep the rest; pack their payloads at the front of the arena. */
	for (k = i; k < o->n; k++)
		keep_bytes += o->items[k].len;
	if (keep_bytes < o->alen) {
		uint8_t *packed = malloc(keep_bytes ? keep_bytes : 1);
		size_t off = 0;

		if (packed) {
			for (k = i; k < o->n; k++) {
				memcpy(packed + off, o->arena + o->items[k].off, o->items[k].len);
				o->items[k].off = off;
				off += o->items[k].len;
			}
			memcpy(o->arena, packed, keep_bytes);
			o->alen = keep_bytes;
			free(packed);
		}
	}
	memmove(o->items, o->items + i, (o->n - i) * sizeof(*o->items));
	o->n -= i;
	return ret;
}

int agent_order_add(struct agent_order *o, int64_t ts, int id, const uint8_t *p, uint32_t len,
		    agent_order_fn fn, void *ctx)
{
	struct agent_order_item *it;
	int ret = 0;

	if (len > ORDER_MAX_BYTES / 4)
		return -E2BIG;
	/* Past the caps nothing waits: all that is held goes out in order. */
	if (o->n >= ORDER_MAX_EVENTS || o->alen + len > ORDER_MAX_BYTES) {
		o->forced++;
		ret = agent_order_release(o, INT64_MAX, fn, ctx);
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		void *n = realloc(o->items, cap * sizeof(*o->items));

		if (!n)
			return -ENOMEM;
		o->items = n;
		o->cap = cap;
	}
	if (!o->arena || o->alen + len > o->acap) {
		size_t cap = o->acap ? o->acap : 16384;
		void *n;

		while (cap < o->alen + len)
			cap *= 2;
		n = realloc(o->arena, cap);
		if (!n)
			return -ENOMEM;
		o->arena = n;
		o->acap = cap;
	}
	it = &o->items[o->n++];
	it->ts = ts;
	it->n = o->seq++;
	it->off = o->alen;
	it->len = len;
	it->id = id;
	if (len)
		memcpy(o->arena + o->alen, p, len);
	o->alen += len;
	return ret;
}
