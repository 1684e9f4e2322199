/* SPDX-License-Identifier: MIT */
/*
 * natmem.c - reading and grouping the profiler's native-allocation samples
 * (natmem.h, docs/internals/natmem.md).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <math.h>

#include "natmem/natmem.h"
#include "sym/sym.h"

double natmem_weight(uint64_t size, uint64_t interval)
{
	double p;

	if (!interval)
		return (double)size;
	p = -expm1(-(double)size / (double)interval); /* P(sampled) */
	return p > 0 ? (double)size / p : (double)interval;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int natmem_header_take(struct natmem *m, const struct nm_header *h)
{
	m->h = *h;
	if (m->h.magic != NM_MAGIC || m->h.version != NM_VERSION || m->h.frames_max != NM_FRAMES ||
	    m->h.live_slots != NM_LIVE_SLOTS || m->h.ring_size != NM_RING ||
	    m->h.got_used > NM_MAX_GOT)
		return -EPROTO;
	m->have_header = true;
	return 0;
}

static int read_header(struct natmem *m)
{
	struct nm_header h;
	int err = pread_all(m->fd, &h, sizeof(h), m->table);

	return err ? err : natmem_header_take(m, &h);
}

int natmem_open(struct natmem *m, pid_t pid, uint64_t table)
{
	char path[64];

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->pid = pid;
	m->table = table;
	m->next_seq = 1;
	if (!table)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	return read_header(m);
}

void natmem_close(struct natmem *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	free(m->st);
	m->st = NULL;
	ct_itab_release(&m->idx);
}

static uint64_t stack_hash(const uint64_t *f, uint32_t n)
{
	return ct_hash_bytes(n, f, n * sizeof(f[0]));
}

static uint64_t ent_hash(const void *ctx, uint32_t i)
{
	return ((const struct natmem *)ctx)->st[i].hash;
}

struct skey {
	const uint64_t *f;
	uint32_t n;
};

static bool ent_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct natmem_stack *s = &((const struct natmem *)ctx)->st[i];
	const struct skey *k = key;

	return s->n == k->n && !memcmp(s->frames, k->f, k->n * sizeof(k->f[0]));
}

int natmem_add_sample(struct natmem *m, const struct nm_sample *s, bool live)
{
	struct skey k = { s->frames, s->nframes };
	struct natmem_stack *e;
	uint64_t h;
	uint32_t *slot;
	double w;

	if (s->nframes > NM_FRAMES)
		return -EBADMSG;
	h = stack_hash(s->frames, s->nframes);
	if (ct_itab_reserve(&m->idx, ent_hash, m))
		return -ENOMEM;
	slot = ct_itab_slot(&m->idx, h, ent_eq, m, &k);
	if (*slot) {
		e = &m->st[*slot - 1];
	} else {
		if (m->nst >= NATMEM_MAX_STACKS) {
			m->stacks_dropped++;
			return 0;
		}
		if (m->nst == m->cap) {
			uint32_t nc = m->cap ? m->cap * 2 : 256;
			struct natmem_stack *ns = realloc(m->st, nc * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			m->st = ns;
			m->cap = nc;
		}
		e = &m->st[m->nst];
		memset(e, 0, sizeof(*e));
		memcpy(e->frames, s->frames, s->nframes * sizeof(s->frames[0]));
		e->n = s->nframes;
		e->hash = h;
		*slot = ct_itab_add(&m->idx, m->nst++);
	}
	w = natmem_weight(s->size, m->h.interval);
	if (live) {
		e->live_samples++;
		e->live_bytes += w;
		e->live_var += w * w * exp(-(double)s->size / (double)(m->h.interval ? m->h.interval : 1));
	} else {
		e->alloc_samples++;
		e->alloc_bytes += w;
		e->alloc_var += w * w * exp(-(double)s->size / (double)(m->h.interval ? m->h.interval : 1));
	}
	return 0;
}

/* A sample is whole when both sequence numbers agree (not being written). */
static bool whole(const struct nm_sample *s, uint64_t want)
{
	return s->seq && s->seq == s->seq2 && (!want || s->seq == want) && s->nframes <= NM_FRAMES;
}

int natmem_take_ring(struct natmem *m, const struct nm_sample *ring)
{
	uint64_t head = m->h.samples, seq; /* samples 1..head were started */
	int err;

	if (head < m->next_seq)
		return 0;
	if (head - m->next_seq + 1 > NM_RING) {
		m->ring_lost += head - NM_RING + 1 - m->next_seq;
		m->next_seq = head - NM_RING + 1;
	}
	for (seq = m->next_seq; seq <= head; seq++) {
		const struct nm_sample *s = &ring[(seq - 1) & (NM_RING - 1)];

		if (!whole(s, seq)) {
			if (s->seq == 0 && seq == head)
				break; /* the newest, still being written: next time */
			m->torn++;
			continue;
		}
		err = natmem_add_sample(m, s, false);
		if (err)
			return err;
		m->ring_taken++;
	}
	m->next_seq = seq;
	return 0;
}

int natmem_poll(struct natmem *m)
{
	static struct nm_sample ring[NM_RING];
	int err;

	err = read_header(m);
	if (err || m->h.samples < m->next_seq)
		return err;
	err = pread_all(m->fd, ring, sizeof(ring), m->table + NM_OFF_RING);
	return err ? err : natmem_take_ring(m, ring);
}

int natmem_take_live(struct natmem *m, const struct nm_live *lt)
{
	int err = 0;

	for (uint32_t i = 0; !err && i < NM_LIVE_SLOTS; i++) {
		if (lt[i].key <= 1)
			continue;
		if (!whole(&lt[i].s, 0) || lt[i].s.ptr != lt[i].key) {
			m->torn++;
			continue;
		}
		err = natmem_add_sample(m, &lt[i].s, true);
		m->live_taken++;
	}
	return err;
}

int natmem_read_live(struct natmem *m)
{
	struct nm_live *lt = malloc((size_t)NM_LIVE_SLOTS * sizeof(*lt));
	int err;

	if (!lt)
		return -ENOMEM;
	err = pread_all(m->fd, lt, (size_t)NM_LIVE_SLOTS * sizeof(*lt), m->table + NM_OFF_LIVE);
	if (!err)
		err = natmem_take_live(m, lt);
	free(lt);
	return err;
}

int natmem_got_check(struct natmem *m, uint32_t *restored, uint32_t *hooked, uint32_t *unreadable)
{
	*restored = *hooked = *unreadable = 0;
	for (uint32_t i = 0; i < m->h.got_used && i < NM_MAX_GOT; i++) {
		const struct nm_got *g = &m->h.got[i];
		uint64_t v;

		if (pread_all(m->fd, &v, sizeof(v), g->addr)) {
			(*unreadable)++;
			continue;
		}
		if (v == g->orig)
			(*restored)++;
		else if (v == g->hook)
			(*hooked)++;
		else
			(*unreadable)++; /* rewritten by the module itself (lazy binding) */
	}
	return 0;
}

static bool g_sort_live;

static int cmp_stack(const void *a, const void *b)
{
	const struct natmem_stack *x = a, *y = b;
	double vx = g_sort_live ? x->live_bytes : x->alloc_bytes - x->live_bytes;
	double vy = g_sort_live ? y->live_bytes : y->alloc_bytes - y->live_bytes;

	return vx < vy ? 1 : vx > vy ? -1 : 0;
}

void natmem_sort(struct natmem *m, bool live)
{
	g_sort_live = live;
	if (m->nst)
		qsort(m->st, m->nst, sizeof(m->st[0]), cmp_stack);
	ct_itab_release(&m->idx); /* indices changed: no more adds */
}

void natmem_frame_name(struct sym_proc *sp, uint64_t ret_addr, char *buf, size_t len, bool *managed)
{
	struct sym_frame f;
	int err;

	memset(&f, 0, sizeof(f));
	err = sp ? sym_lookup(sp, ret_addr - 1, &f) : -ENOENT;
	*managed = f.kind == SYM_JIT || f.kind == SYM_R2R;
	if (!err && f.name && *managed)
		snprintf(buf, len, "%s", f.name);
	else if (!err && f.name)
		snprintf(buf, len, "%s (%s)", f.name, f.module ? f.module : "?");
	else
		snprintf(buf, len, "0x%" PRIx64 " (%s)", ret_addr, f.module ? f.module : "?");
}
