/* SPDX-License-Identifier: MIT */
/*
 * methods.c - managed code address ranges from MethodLoadVerbose /
 * MethodDCStartVerbose / MethodDCEndVerbose events, resolved by binary search.
 */
#include "common/compat.h"

#include "common/clrname.h"
#include "common/hashtab.h"
#include "common/strbuf.h"
#include "nettrace/nettrace.h"

#define CHUNK_SIZE (64 * 1024)
#define MAX_NAME (16 * 1024)
#define DEFAULT_MAX_ENTRIES (4u << 20)
#define DEFAULT_MAX_NAME_BYTES ((size_t)256 << 20)

struct meth {
	uint64_t start, end;
	uint64_t seq; /* order of recording: later wins on overlap */
	const char *name; /* as shown: the source's form unless --raw-names (common/clrname.h) */
	const char *raw;  /* the runtime's */
};

struct chunk {
	struct chunk *next;
	size_t used, size;
	char data[];
};

struct nt_methods {
	struct meth *v;
	uint64_t *maxend; /* maxend[i] = max(v[0..i].end), valid when sorted */
	size_t n, cap, max;
	size_t name_bytes, max_name_bytes;
	size_t nsorted; /* v[0..nsorted) is sorted and maxend is valid for it */
	uint64_t seq;
	struct chunk *chunks;
	struct ct_strset names; /* interned names (in the chunks) */
	struct strbuf sb;
};

int nt_methods_new(struct nt_methods **out, size_t max_entries, size_t max_name_bytes)
{
	struct nt_methods *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->max = max_entries ? max_entries : DEFAULT_MAX_ENTRIES;
	m->max_name_bytes = max_name_bytes ? max_name_bytes : DEFAULT_MAX_NAME_BYTES;
	strbuf_init(&m->sb, MAX_NAME);
	*out = m;
	return 0;
}

void nt_methods_free(struct nt_methods *m)
{
	struct chunk *c, *next;

	if (!m)
		return;
	for (c = m->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	ct_strset_release(&m->names);
	free(m->v);
	free(m->maxend);
	strbuf_release(&m->sb);
	free(m);
}

static int settle(struct nt_methods *m);

static const char *store(struct nt_methods *m, const char *s, size_t len)
{
	struct chunk *c = m->chunks;
	char *p;

	if (!c || c->size - c->used < len + 1) {
		size_t size = CT_MAX((size_t)CHUNK_SIZE, len + 1);

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = m->chunks;
		c->used = 0;
		c->size = size;
		m->chunks = c;
	}
	p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

/* The store of the names set: the arena, within the byte cap. */
static int store_name(void *ctx, const char *s, size_t len, const char **copy)
{
	struct nt_methods *m = ctx;

	if (len + 1 > m->max_name_bytes - m->name_bytes)
		return -EFBIG;
	*copy = store(m, s, len);
	if (!*copy)
		return -ENOMEM;
	m->name_bytes += len + 1;
	return 0;
}

/* Sets *out to the interned copy of name (one copy per distinct name). */
static int intern(struct nt_methods *m, const char *name, const char **out)
{
	return ct_strset_intern(&m->names, name, strlen(name), store_name, m, out);
}

int nt_methods_add(struct nt_methods *m, uint64_t start, uint32_t size, const char *name)
{
	const char *n;
	int err;

	if (!size || start > UINT64_MAX - size)
		return -EINVAL;
	if (m->n >= m->max && m->nsorted < m->n)
		settle(m); /* duplicates do not count against the cap */
	if (m->n >= m->max)
		return -EFBIG;
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 1024;
		struct meth *nv = realloc(m->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		m->v = nv;
		m->cap = ncap;
	}
	err = intern(m, name, &n);
	if (err)
		return err;
	m->v[m->n].raw = n;
	{
		char shown[1024];
		const char *d = ct_clrname_display(n, shown, sizeof(shown));

		if (d != n && (err = intern(m, d, &n)))
			return err;
	}
	m->v[m->n].start = start;
	m->v[m->n].end = start + size;
	m->v[m->n].seq = m->seq++;
	m->v[m->n].name = n;
	m->n++;
	return 0;
}

int nt_methods_add_event(struct nt_methods *m, const struct nt_event *ev)
{
	const struct nt_metadata *md = ev->meta;
	struct nt_method_load ml;
	int err;

	if (md->provider_kind == NT_PROV_RUNTIME) {
		if (md->event_id != 143)
			return 0;
	} else if (md->provider_kind == NT_PROV_RUNDOWN) {
		if (md->event_id != 143 && md->event_id != 144)
			return 0;
	} else {
		return 0;
	}
	err = nt_decode_method_load(ev->payload, ev->payload_len, md->version, ev->pointer_size,
				    &ml);
	if (err)
		return err;
	if (!ml.size)
		return 0;
	strbuf_reset(&m->sb);
	err = nt_str16_utf8(&ml.ns, &m->sb);
	if (!err && m->sb.len)
		err = strbuf_addstr(&m->sb, "::");
	if (!err)
		err = nt_str16_utf8(&ml.name, &m->sb);
	if (err == -EMSGSIZE) {
		/* absurdly long name: keep what fits */
		err = 0;
	}
	if (err)
		return err;
	err = nt_methods_add(m, ml.start, ml.size, m->sb.buf);
	return err ? err : 1;
}

static int cmp_meth(const void *a, const void *b)
{
	const struct meth *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

/*
 * Sorts the unsorted tail, merges it into the sorted part, folds exact
 * duplicates (the same range and name recorded twice keeps the later order)
 * and rebuilds the running maximum of range ends.
 */
static int settle(struct nt_methods *m)
{
	struct meth *tmp = NULL;
	size_t i = 0, j, k = 0, out = 0;
	uint64_t mx = 0, *me;

	if (m->nsorted < m->n) {
		qsort(m->v + m->nsorted, m->n - m->nsorted, sizeof(*m->v), cmp_meth);
		tmp = malloc(m->n * sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
		j = m->nsorted;
		while (i < m->nsorted || j < m->n) {
			if (j == m->n || (i < m->nsorted && cmp_meth(&m->v[i], &m->v[j]) <= 0))
				tmp[k++] = m->v[i++];
			else
				tmp[k++] = m->v[j++];
		}
		for (i = 0; i < k; i++) {
			struct meth *prev = out ? &m->v[out - 1] : NULL;

			if (prev && prev->start == tmp[i].start && prev->end == tmp[i].end &&
			    prev->name == tmp[i].name) {
				prev->seq = CT_MAX(prev->seq, tmp[i].seq);
				continue;
			}
			m->v[out++] = tmp[i];
		}
		free(tmp);
		m->n = out;
	}
	me = realloc(m->maxend, (m->n ? m->n : 1) * sizeof(*me));
	if (!me)
		return -ENOMEM;
	m->maxend = me;
	for (i = 0; i < m->n; i++) {
		mx = CT_MAX(mx, m->v[i].end);
		me[i] = mx;
	}
	m->nsorted = m->n;
	return 0;
}

static const struct meth *find(struct nt_methods *m, uint64_t ip);

const char *nt_methods_lookup(struct nt_methods *m, uint64_t ip)
{
	const struct meth *e = find(m, ip);

	return e ? e->name : NULL;
}

const char *nt_methods_lookup_raw(struct nt_methods *m, uint64_t ip)
{
	const struct meth *e = find(m, ip);

	return e ? e->raw : NULL;
}

const char *nt_methods_find_raw(struct nt_methods *m, bool (*match)(const char *raw, const void *ctx),
				const void *ctx)
{
	size_t i;

	for (i = m->n; i-- > 0;) /* the latest first */
		if (m->v[i].raw && match(m->v[i].raw, ctx))
			return m->v[i].raw;
	return NULL;
}

static const struct meth *find(struct nt_methods *m, uint64_t ip)
{
	size_t lo = 0, hi, i, tail = m->n - m->nsorted;
	const struct meth *best = NULL;

	/* a short tail is scanned; a long one is merged first (amortized n log n) */
	if (tail > CT_MAX((size_t)64, m->nsorted / 8) && settle(m))
		return NULL;
	hi = m->nsorted;
	/* first sorted entry with start > ip */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i-- > 0;) {
		const struct meth *e = &m->v[i];

		if (m->maxend[i] <= ip)
			break; /* nothing at or before i reaches ip */
		if (ip < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	for (i = m->nsorted; i < m->n; i++) {
		const struct meth *e = &m->v[i];

		if (e->start <= ip && ip < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best;
}

size_t nt_methods_count(struct nt_methods *m)
{
	/* exact duplicates are folded when the table is settled */
	if (m->nsorted < m->n)
		settle(m); /* on -ENOMEM the count includes duplicates */
	return m->n;
}

#define POLLGC_PREFIX "System.Threading.Thread::<PollGC>"

size_t nt_methods_name_stack(struct nt_methods *m, const uint64_t *ips, uint32_t n,
			     const char **names, size_t cap)
{
	return nt_methods_name_stack_idx(m, ips, n, names, NULL, cap);
}

size_t nt_methods_name_stack_idx(struct nt_methods *m, const uint64_t *ips, uint32_t n,
				 const char **names, uint32_t *idx, size_t cap)
{
	size_t k = 0;
	uint32_t j;

	/* root first: walk the leaf-first IPs backwards */
	for (j = n; j-- > 0 && k < cap;) {
		uint64_t ip = ips[j];
		const struct meth *e = find(m, j && ip ? ip - 1 : ip);
		const char *nm = e ? e->name : NULL;

		if (!nm)
			nm = "[unknown]";
		if (k && !strcmp(nm, "[unknown]") && !strcmp(names[k - 1], "[unknown]"))
			continue;
		/* a loop stopped at its GC poll for the sample: the time is the caller's */
		if (j == 0 && k && e && !strncmp(e->raw, POLLGC_PREFIX, strlen(POLLGC_PREFIX)))
			continue;
		if (idx)
			idx[k] = j;
		names[k++] = nm;
	}
	return k;
}
