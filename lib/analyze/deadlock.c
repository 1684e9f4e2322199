/* SPDX-License-Identifier: MIT */
/*
 * deadlock.c - the deadlock analyzer's result: the cycles of the wait-for
 * graph of lib/analyze/locks.c (the lock-owner field of ContentionStart V2
 * links a waiting thread to the thread holding its lock), each thread with
 * the stack where it waits, symbolized with the sample profiler's method
 * table; the waits still open outside any cycle; and the threads the
 * sample profiler saw inside a Monitor enter without a ContentionStart in
 * the session (they began waiting before it: their owner is not told).
 */
#include "common/compat.h"

#include "analyze/analyze.h"

static bool framework(const char *f)
{
	return !strncmp(f, "System.", 7) || !strncmp(f, "Microsoft.", 10) || !strncmp(f, "Interop", 7);
}

uint32_t analyze_frames(struct an_session *s, const uint64_t *ips, uint32_t n, const char **frames,
			uint32_t max, const char **site, uint32_t *more)
{
	struct stacks_thread th = { .ips = (uint64_t *)ips, .nframes = n };
	uint32_t i, k = 0;

	*site = NULL;
	*more = 0;
	for (i = 0; s->ss && i < n; i++) {
		const char *f = stacks_sampler_frame(s->ss, &th, i);

		if (!f)
			continue;
		if (!*site && !framework(f))
			*site = f;
		if (k < max)
			frames[k++] = f;
		else
			(*more)++;
	}
	return k;
}

/* A lock wait, symbolized. */
static void fill_thread(struct an_session *s, const struct stacks_names *names,
			const struct an_lock_wait *w, struct an_dl_thread *t)
{
	const char *nm = names ? stacks_names_get(names, w->tid) : NULL;

	memset(t, 0, sizeof(*t));
	t->tid = w->tid;
	t->lock_id = w->lock_id;
	t->object_id = w->object_id;
	t->owner = w->owner;
	t->native = w->native;
	if (nm)
		snprintf(t->name, sizeof(t->name), "%s", nm);
	t->nframes = analyze_frames(s, w->ips, w->nips, t->frames, AN_DL_FRAMES, &t->site, &t->more);
}

static bool monitor_enter(const char *f)
{
	return !strncmp(f, "System.Threading.Monitor::Enter", 31) ||
	       !strncmp(f, "System.Threading.Monitor::ReliableEnter", 39) ||
	       !strncmp(f, "System.Threading.Monitor::TryEnter", 34) ||
	       !strncmp(f, "System.Threading.Lock::Enter", 28) ||
	       !strncmp(f, "System.Threading.Lock::TryEnter", 31);
}

/* Sampled threads inside a Monitor enter whose wait began before the session. */
static void blocked_before(struct an_session *s, struct an_deadlock *d)
{
	size_t i, k, nt;

	if (!s->ss)
		return;
	nt = stacks_sampler_nthreads(s->ss);
	for (i = 0; i < nt; i++) {
		const struct stacks_thread *th = stacks_sampler_thread(s->ss, i);
		const char *m = NULL, *enter = NULL;
		uint32_t f;

		for (f = 0; f < th->nframes; f++) {
			const char *name = stacks_sampler_frame(s->ss, th, f);

			if (!name)
				continue;
			if (!enter && monitor_enter(name))
				enter = name;
			if (enter && !framework(name)) {
				m = name;
				break;
			}
		}
		if (!enter)
			continue;
		/* a thread with a ContentionStart in the session is reported from it */
		for (k = 0; k < analyze_locks_nwaits(s->locks); k++)
			if (analyze_locks_wait(s->locks, k)->tid == th->tid)
				break;
		if (k < analyze_locks_nwaits(s->locks))
			continue;
		if (!m)
			m = enter;
		for (k = 0; k < d->nblocked; k++)
			if (!strcmp(d->blocked[k].method, m))
				break;
		if (k == d->nblocked) {
			if (k == ARRAY_SIZE(d->blocked))
				continue;
			memset(&d->blocked[k], 0, sizeof(d->blocked[k]));
			d->blocked[k].method = m;
			d->blocked[k].call = enter;
			d->nblocked++;
		}
		d->blocked_threads++;
		if (d->blocked[k].threads < ARRAY_SIZE(d->blocked[k].tids))
			d->blocked[k].tids[d->blocked[k].threads] = th->tid;
		d->blocked[k].threads++;
	}
}

int analyze_deadlock_find(struct an_session *s, pid_t pid, struct an_deadlock *d)
{
	struct an_lock_cycle cyc[AN_DL_CYCLES];
	struct stacks_names *names = NULL;
	bool in_cycle[AN_LOCKS_MAX_THREADS] = { false };
	size_t i, k, nw;

	memset(d, 0, sizeof(*d));
	if (!s->locks)
		return -EINVAL;
	analyze_locks_counts(s->locks, &d->starts, &d->stops, &d->starts_v2, &d->dropped);
	if (pid > 0 && stacks_names_load(&names, pid))
		names = NULL; /* names are a nicety: the target may be gone */
	d->ncycles = analyze_locks_cycles(s->locks, cyc, AN_DL_CYCLES);
	for (i = 0; i < d->ncycles; i++) {
		d->cycles[i].n = cyc[i].n;
		for (k = 0; k < cyc[i].n; k++) {
			in_cycle[cyc[i].wait[k]] = true;
			fill_thread(s, names, analyze_locks_wait(s->locks, cyc[i].wait[k]), &d->cycles[i].t[k]);
		}
	}
	nw = analyze_locks_nwaits(s->locks);
	for (i = 0; i < nw; i++) {
		const struct an_lock_wait *w = analyze_locks_wait(s->locks, i);

		if (!w->open || in_cycle[i])
			continue;
		if (d->nwaiting < ARRAY_SIZE(d->waiting))
			fill_thread(s, names, w, &d->waiting[d->nwaiting]);
		d->nwaiting++;
	}
	blocked_before(s, d);
	stacks_names_free(names);
	return 0;
}
