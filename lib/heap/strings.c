/* SPDX-License-Identifier: MIT */
/*
 * strings.c - duplicated strings. The heap-walk events carry no contents, so
 * the string objects are read from the target with process_vm_readv right
 * after the snapshot's GC ends (a System.String is {method table, i32 length,
 * UTF-16 chars, NUL} on 64-bit: length at +8, chars at +12). The process runs
 * on meanwhile: a later GC may have moved or freed an object, so each one is
 * checked (its first word is still the String method table, its length fits
 * the size the walk reported) and counted as "moved" otherwise.
 */
#include "common/compat.h"

#include <sys/uio.h>

#include "common/cursor.h"
#include "common/hashtab.h"
#include "common/utf16.h"
#include "heap/heap.h"

#define BATCH 512
#define MAX_STRINGS (64u * 1000 * 1000)

struct sobj {
	uint64_t addr, size, type_id;
};

struct sval {
	uint64_t hash;
	uint32_t nunits;
	uint32_t first; /* index of one object with this value */
	uint64_t count, bytes;
	char *value;
	bool truncated;
};

struct heap_strings {
	struct sobj *objs;
	size_t n, cap;
	struct sval *vals; /* distinct values, first seen first */
	size_t vcap, vn;
	struct ct_itab vtab; /* vals by hash and length */
	struct heap_string_stats st;
};

int heap_strings_new(struct heap_strings **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void heap_strings_free(struct heap_strings *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->vn; i++)
		free(s->vals[i].value);
	free(s->vals);
	ct_itab_release(&s->vtab);
	free(s->objs);
	free(s);
}

int heap_strings_add(struct heap_strings *s, uint64_t addr, uint64_t size, uint64_t type_id)
{
	s->st.strings++;
	if (size > 12 + 2 * (uint64_t)HEAP_STRING_MAX_CHARS + 8) {
		s->st.too_long++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 4096;
		void *np;

		if (nc > MAX_STRINGS)
			return -EFBIG;
		np = realloc(s->objs, nc * sizeof(*s->objs));
		if (!np)
			return -ENOMEM;
		s->objs = np;
		s->cap = nc;
	}
	s->objs[s->n].addr = addr;
	s->objs[s->n].size = size;
	s->objs[s->n].type_id = type_id;
	s->n++;
	return 0;
}

int heap_string_parse(const uint8_t *obj, size_t len, uint64_t size, uint64_t type_id,
		      const uint8_t **units, uint32_t *nunits)
{
	uint32_t n;
	uint64_t want;

	if (len < 12 || ct_le64(obj) != type_id)
		return -ESTALE;
	n = ct_le32(obj + 8);
	/*
	 * object size: 8 header (before the address) + 8 MT + 4 length + 2n + 2
	 * NUL; the runtime reports it unpadded (seen on .NET 10), padded to 8 is
	 * accepted too
	 */
	want = 22 + 2 * (uint64_t)n;
	if ((want != size && ((want + 7) & ~7ull) != size) || 12 + 2 * (uint64_t)n > len)
		return -ESTALE;
	*units = obj + 12;
	*nunits = n;
	return 0;
}

struct vkey {
	uint64_t hash;
	uint32_t nunits;
};

static uint64_t val_hash(const void *ctx, uint32_t idx)
{
	return ((const struct heap_strings *)ctx)->vals[idx].hash;
}

static bool val_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct sval *v = &((const struct heap_strings *)ctx)->vals[idx];
	const struct vkey *k = key;

	return v->hash == k->hash && v->nunits == k->nunits;
}

/* Counts one verified string; equal content = equal hash + length + bytes of the first copy. */
static int add_value(struct heap_strings *s, const uint8_t *units, uint32_t n, uint64_t size,
		     const uint8_t *objbuf)
{
	struct vkey k = { ct_hash_bytes(CT_HASH_SEED, units, 2 * (size_t)n), n };
	uint32_t *slot;
	int err;

	(void)objbuf;
	if ((err = ct_itab_reserve(&s->vtab, val_hash, s)))
		return err;
	slot = ct_itab_slot(&s->vtab, k.hash, val_eq, s, &k);
	if (*slot) {
		struct sval *v = &s->vals[*slot - 1];

		v->count++;
		v->bytes += size;
		return 0;
	}
	if (s->vn == s->vcap) {
		size_t nc = s->vcap ? s->vcap * 2 : 4096;
		struct sval *nv = realloc(s->vals, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->vals = nv;
		s->vcap = nc;
	}
	{
		struct sval *v = &s->vals[s->vn];
		struct strbuf sb = STRBUF_INIT_MAX(HEAP_STRING_VALUE_MAX * 4 + 8);
		uint32_t take = n < HEAP_STRING_VALUE_MAX ? n : HEAP_STRING_VALUE_MAX;

		v->hash = k.hash;
		v->nunits = n;
		v->count = 1;
		v->bytes = size;
		err = utf16le_to_utf8(&sb, units, take, false);
		if (err) {
			strbuf_release(&sb);
			return err;
		}
		if (sb.len > HEAP_STRING_VALUE_MAX)
			strbuf_setlen(&sb, HEAP_STRING_VALUE_MAX);
		v->truncated = take < n || sb.len >= HEAP_STRING_VALUE_MAX;
		v->value = strbuf_detach(&sb, NULL);
		*slot = ct_itab_add(&s->vtab, (uint32_t)s->vn);
		s->vn++;
	}
	return 0;
}

int heap_strings_read(struct heap_strings *s, pid_t pid)
{
	uint8_t *buf = NULL;
	size_t i, bufcap = 0;
	int err = 0;

	s->st.read = true;
	s->st.how = "process_vm_readv right after the snapshot GC";
	for (i = 0; i < s->n && !err; i += BATCH) {
		struct iovec local[BATCH], remote[BATCH];
		size_t k, m = s->n - i < BATCH ? s->n - i : BATCH, need = 0, off = 0;
		ssize_t got;

		for (k = 0; k < m; k++)
			need += s->objs[i + k].size;
		if (need > bufcap) {
			uint8_t *nb = realloc(buf, need);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			bufcap = need;
		}
		for (k = 0; k < m; k++) {
			local[k].iov_base = buf + off;
			local[k].iov_len = s->objs[i + k].size;
			remote[k].iov_base = (void *)(uintptr_t)s->objs[i + k].addr;
			remote[k].iov_len = s->objs[i + k].size;
			off += s->objs[i + k].size;
		}
		got = process_vm_readv(pid, local, m, remote, m, 0);
		if (got < 0) {
			if (errno == ESRCH)
				return -ESRCH;
			if (errno == EPERM)
				return -EPERM;
			got = 0;
		}
		/* partial reads stop at the first failing remote range: read the rest one by one */
		off = 0;
		for (k = 0; k < m; k++) {
			const struct sobj *o = &s->objs[i + k];
			const uint8_t *units;
			uint32_t n;

			if (off + o->size > (size_t)got) {
				ssize_t one = process_vm_readv(pid, &local[k], 1, &remote[k], 1, 0);

				if (one != (ssize_t)o->size) {
					s->st.unreadable++;
					off += o->size;
					continue;
				}
			}
			if (heap_string_parse(buf + off, o->size, o->size, o->type_id, &units, &n)) {
				s->st.moved++;
			} else {
				s->st.compared++;
				err = add_value(s, units, n, o->size, buf + off);
			}
			off += o->size;
		}
	}
	free(buf);
	return err;
}

static int cmp_dup(const void *a, const void *b)
{
	const struct heap_dupstr *x = a, *y = b;

	if (x->wasted != y->wasted)
		return x->wasted > y->wasted ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->value, y->value);
}

int heap_strings_store(struct heap_strings *s, struct heap_graph *g)
{
	size_t i, n = 0;
	struct heap_dupstr *d;

	g->strings = s->st;
	for (i = 0; i < s->vn; i++)
		if (s->vals[i].count >= 2) {
			const struct sval *v = &s->vals[i];
			uint64_t one = v->bytes / v->count;

			n++;
			g->strings.dup_values++;
			g->strings.dup_copies += v->count;
			g->strings.wasted += v->bytes - one;
		}
	d = calloc(n ? n : 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < s->vn; i++) {
		struct sval *v = &s->vals[i];

		if (v->count < 2)
			continue;
		d[n].value = v->value;
		v->value = NULL;
		d[n].chars = v->nunits;
		d[n].truncated = v->truncated;
		d[n].count = v->count;
		d[n].bytes = v->bytes;
		d[n].wasted = v->bytes - v->bytes / v->count;
		n++;
	}
	qsort(d, n, sizeof(*d), cmp_dup);
	while (n > HEAP_DUP_KEEP) {
		n--;
		free(d[n].value);
	}
	g->dups = d;
	g->ndups = (uint32_t)n;
	return 0;
}
