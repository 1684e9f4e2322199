/* SPDX-License-Identifier: MIT */
/*
 * locks.c - lock waits from the runtime's contention events: per waiting
 * thread its open ContentionStart (lock id, object, owner thread from
 * ContentionStart V2, .NET 8+, and the stack where it waits); per lock the
 * waits and wait time; and the cycles of the wait-for graph (thread waits
 * for a lock whose owner waits for ...) among the waits still open when the
 * session ended: deadlocks.
 */
#include "common/compat.h"

#include "analyze/analyze.h"

#define RT_CONTENTION_START 81
#define RT_CONTENTION_STOP 91

struct an_locks {
	struct an_lock_wait *w; /* one per thread, in order of first wait */
	size_t n, cap;
	struct an_lock_stat *locks;
	size_t nlocks, lcap;
	uint64_t starts, stops, dropped; /* dropped: threads or locks past the caps */
	uint64_t starts_v2;              /* starts that named lock and owner */
	unsigned max_frames;
};

int analyze_locks_new(struct an_locks **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->max_frames = 256;
	return 0;
}

void analyze_locks_free(struct an_locks *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		free(l->w[i].ips);
	free(l->w);
	free(l->locks);
	free(l);
}

static struct an_lock_wait *thread_wait(struct an_locks *l, uint64_t tid, bool create)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->w[i].tid == tid)
			return &l->w[i];
	if (!create || l->n >= AN_LOCKS_MAX_THREADS)
		return NULL;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		struct an_lock_wait *nw = realloc(l->w, ncap * sizeof(*nw));

		if (!nw)
			return NULL;
		l->w = nw;
		l->cap = ncap;
	}
	memset(&l->w[l->n], 0, sizeof(l->w[l->n]));
	l->w[l->n].tid = tid;
	return &l->w[l->n++];
}

static struct an_lock_stat *lock_stat(struct an_locks *l, uint64_t lock_id, uint64_t object_id)
{
	size_t i;

	for (i = 0; i < l->nlocks; i++)
		if (l->locks[i].lock_id == lock_id)
			return &l->locks[i];
	if (l->nlocks >= AN_LOCKS_MAX_LOCKS)
		return NULL;
	if (l->nlocks == l->lcap) {
		size_t ncap = l->lcap ? l->lcap * 2 : 16;
		struct an_lock_stat *nl = realloc(l->locks, ncap * sizeof(*nl));

		if (!nl)
			return NULL;
		l->locks = nl;
		l->lcap = ncap;
	}
	memset(&l->locks[l->nlocks], 0, sizeof(l->locks[0]));
	l->locks[l->nlocks].lock_id = lock_id;
	l->locks[l->nlocks].object_id = object_id;
	return &l->locks[l->nlocks++];
}

int analyze_locks_event(struct an_locks *l, const struct nt_event *ev)
{
	const struct nt_metadata *m = ev->meta;
	struct an_lock_wait *w;
	struct nt_contention c;

	if (!m || m->provider_kind != NT_PROV_RUNTIME ||
	    (m->event_id != RT_CONTENTION_START && m->event_id != RT_CONTENTION_STOP))
		return 0;
	if (m->event_id == RT_CONTENTION_START) {
		if (nt_decode_contention_start(ev->payload, ev->payload_len, m->version, ev->pointer_size, &c))
			return 0;
		l->starts++;
		w = thread_wait(l, ev->thread_id, true);
		if (!w) {
			l->dropped++;
			return 0;
		}
		w->open = true;
		w->owner_known = m->version >= 2;
		if (w->owner_known)
			l->starts_v2++;
		w->native = c.flags == 1;
		w->lock_id = c.lock_id;
		w->object_id = c.object_id;
		w->owner = c.owner_thread_id;
		w->start = ev->timestamp;
		w->waits++;
		w->nips = 0;
		if (ev->nframes) {
			uint32_t n = CT_MIN(ev->nframes, l->max_frames);
			uint64_t *ips = realloc(w->ips, n * sizeof(uint64_t));

			if (ips) {
				memcpy(ips, ev->stack, n * sizeof(uint64_t));
				w->ips = ips;
				w->nips = n;
			}
		}
		if (w->owner_known) {
			struct an_lock_stat *ls = lock_stat(l, c.lock_id, c.object_id);

			if (ls) {
				ls->waits++;
				if (ev->nframes && !ls->nips) {
					uint32_t n = CT_MIN(ev->nframes, AN_LOCK_SITE_FRAMES);

					memcpy(ls->ips, ev->stack, n * sizeof(uint64_t));
					ls->nips = n;
				}
			} else {
				l->dropped++;
			}
		}
		return 0;
	}
	if (nt_decode_contention_stop(ev->payload, ev->payload_len, m->version, ev->pointer_size, &c))
		return 0;
	l->stops++;
	/* a Stop without a Start: the wait began before the session; the thread
	 * is kept (not open) so it is not taken for one still blocked */
	w = thread_wait(l, ev->thread_id, true);
	if (w && w->open) {
		w->open = false;
		if (w->owner_known) {
			struct an_lock_stat *ls = lock_stat(l, w->lock_id, w->object_id);

			if (ls && m->version >= 1 && c.duration_ns >= 0 && c.duration_ns < 1.8e19) {
				uint64_t ns = (uint64_t)c.duration_ns;

				ls->timed++;
				ls->total_ns += ns;
				if (ns > ls->max_ns)
					ls->max_ns = ns;
			}
		}
	}
	return 0;
}

size_t analyze_locks_nwaits(const struct an_locks *l)
{
	return l ? l->n : 0;
}

const struct an_lock_wait *analyze_locks_wait(const struct an_locks *l, size_t i)
{
	return l && i < l->n ? &l->w[i] : NULL;
}

void analyze_locks_counts(const struct an_locks *l, uint64_t *starts, uint64_t *stops,
			  uint64_t *starts_v2, uint64_t *dropped)
{
	*starts = l ? l->starts : 0;
	*stops = l ? l->stops : 0;
	*starts_v2 = l ? l->starts_v2 : 0;
	*dropped = l ? l->dropped : 0;
}

static int by_wait(const void *a, const void *b)
{
	const struct an_lock_stat *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->waits != y->waits)
		return x->waits > y->waits ? -1 : 1;
	return x->lock_id < y->lock_id ? -1 : x->lock_id > y->lock_id;
}

size_t analyze_locks_by_wait(struct an_locks *l, const struct an_lock_stat **out)
{
	if (!l) {
		*out = NULL;
		return 0;
	}
	if (l->nlocks)
		qsort(l->locks, l->nlocks, sizeof(*l->locks), by_wait);
	*out = l->locks;
	return l->nlocks;
}

/* The open wait of thread tid, or -1. */
static ssize_t open_wait_of(const struct an_locks *l, uint64_t tid)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->w[i].tid == tid && l->w[i].open)
			return (ssize_t)i;
	return -1;
}

size_t analyze_locks_cycles(const struct an_locks *l, struct an_lock_cycle *c, size_t max)
{
	size_t i, nc = 0;
	uint8_t *state;

	if (!l || !l->n)
		return 0;
	state = calloc(l->n, 1); /* 0 unseen, 1 on the current path, 2 done */
	if (!state)
		return 0;
	for (i = 0; i < l->n && nc < max; i++) {
		size_t path[AN_CYCLE_MAX * 4], np = 0, k;
		ssize_t cur = (ssize_t)i;

		if (state[i] || !l->w[i].open || !l->w[i].owner_known)
			continue;
		/* follow waiter -> owner while the owner waits too */
		while (cur >= 0 && !state[cur] && np < ARRAY_SIZE(path)) {
			const struct an_lock_wait *w = &l->w[cur];

			state[cur] = 1;
			path[np++] = (size_t)cur;
			if (!w->open || !w->owner_known || !w->owner || w->owner == w->tid) {
				cur = -1; /* the chain ends here */
				break;
			}
			cur = open_wait_of(l, w->owner);
		}
		if (cur >= 0 && state[cur] == 1) {
			/* cur is on this path: the cycle is path from cur on */
			size_t from = 0;

			while (path[from] != (size_t)cur)
				from++;
			if (np - from <= AN_CYCLE_MAX) {
				size_t len = np - from, low = 0;

				/* start at the lowest thread id: the same cycle reads the same */
				for (k = 1; k < len; k++)
					if (l->w[path[from + k]].tid < l->w[path[from + low]].tid)
						low = k;
				c[nc].n = len;
				for (k = 0; k < len; k++)
					c[nc].wait[k] = path[from + (low + k) % len];
				nc++;
			}
		}
		for (k = 0; k < np; k++)
			state[path[k]] = 2;
	}
	free(state);
	return nc;
}
