/* SPDX-License-Identifier: MIT */
/*
 * order.c - a bounded window that gives events back in time order.
 *
 * EventPipe does not write a stream in time order across threads: at each
 * flush it writes one thread's events, then the next thread's, so a GCStart
 * of one GC thread can come after the heap walk another GC thread wrote
 * later. What the format promises: an event marked sorted has no later event
 * in the stream with an older timestamp, and at a sequence point (and at the
 * end) every older event is out. The reader (reader.c) holds events here
 * and takes them out, oldest first, as far as those promises allow.
 *
 * A binary min-heap on (timestamp, arrival number): O(log n) per event, and
 * ties keep arrival order (one thread's events stay in their order). Each
 * item's bytes (a caller-defined header plus the payload) live in one arena;
 * the bytes of items taken out are reclaimed when they are over half of it.
 */
#include "common/compat.h"

#include "nettrace/nt_internal.h"

struct nt_order_item {
	int64_t ts;
	uint64_t n;
	size_t off;
	uint32_t len;
};

void nt_order_init(struct nt_order *o, size_t max_events, size_t max_bytes)
{
	memset(o, 0, sizeof(*o));
	o->max_events = max_events ? max_events : 1;
	o->max_bytes = max_bytes ? max_bytes : 1;
}

void nt_order_free(struct nt_order *o)
{
	free(o->items);
	free(o->arena);
	memset(o, 0, sizeof(*o));
}

static bool before(const struct nt_order_item *a, const struct nt_order_item *b)
{
	return a->ts != b->ts ? a->ts < b->ts : a->n < b->n;
}

static void swap(struct nt_order_item *a, struct nt_order_item *b)
{
	struct nt_order_item t = *a;

	*a = *b;
	*b = t;
}

/* Copies the live items' bytes to the front of a fresh arena. */
static int compact(struct nt_order *o)
{
	size_t i, off = 0, need = o->alen - o->dead;
	uint8_t *na = malloc(need ? need : 1);

	if (!na)
		return -ENOMEM;
	for (i = 0; i < o->n; i++) {
		memcpy(na + off, o->arena + o->items[i].off, o->items[i].len);
		o->items[i].off = off;
		off += o->items[i].len;
	}
	free(o->arena);
	o->arena = na;
	o->alen = off;
	o->acap = need ? need : 1;
	o->dead = 0;
	return 0;
}

int nt_order_add(struct nt_order *o, int64_t ts, const void *hdr, uint32_t hlen, const void *p,
		 uint32_t plen)
{
	struct nt_order_item *it;
	size_t len = (size_t)hlen + plen, i;
	int err;

	if (o->dead > o->alen / 2 && o->dead) {
		err = compact(o);
		if (err)
			return err;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		void *ni = realloc(o->items, cap * sizeof(*o->items));

		if (!ni)
			return -ENOMEM;
		o->items = ni;
		o->cap = cap;
	}
	if (o->alen + len > o->acap) {
		size_t cap = o->acap ? o->acap : 16384;
		void *na;

		while (cap < o->alen + len)
			cap *= 2;
		na = realloc(o->arena, cap);
		if (!na)
			return -ENOMEM;
		o->arena = na;
		o->acap = cap;
	}
	if (hlen)
		memcpy(o->arena + o->alen, hdr, hlen);
	if (plen)
		memcpy(o->arena + o->alen + hlen, p, plen);
	i = o->n++;
	it = &o->items[i];
	it->ts = ts;
	it->n = o->seq++;
	it->off = o->alen;
	it->len = (uint32_t)len;
	o->alen += len;
	o->bytes += len;
	/* sift up */
	while (i > 0 && before(&o->items[i], &o->items[(i - 1) / 2])) {
		swap(&o->items[i], &o->items[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	if (o->bytes > o->bytes_max)
		o->bytes_max = o->bytes;
	if (o->n > o->events_max)
		o->events_max = o->n;
	return 0;
}

bool nt_order_over(const struct nt_order *o)
{
	return o->n > o->max_events || o->bytes > o->max_bytes;
}

bool nt_order_peek(const struct nt_order *o, int64_t *ts)
{
	if (!o->n)
		return false;
	*ts = o->items[0].ts;
	return true;
}

const uint8_t *nt_order_pop(struct nt_order *o, int64_t *ts, uint32_t *len)
{
	struct nt_order_item top;
	size_t i = 0;

	if (!o->n)
		return NULL;
	top = o->items[0];
	o->items[0] = o->items[--o->n];
	/* sift down */
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < o->n && before(&o->items[l], &o->items[m]))
			m = l;
		if (r < o->n && before(&o->items[r], &o->items[m]))
			m = r;
		if (m == i)
			break;
		swap(&o->items[i], &o->items[m]);
		i = m;
	}
	o->bytes -= top.len;
	o->dead += top.len;
	if (!o->n) {
		/* nothing held: the whole arena is free again */
		o->alen = 0;
		o->dead = 0;
	}
	*ts = top.ts;
	*len = top.len;
	/* still valid: the arena moves only in nt_order_add */
	return o->arena + top.off;
}
