/* SPDX-License-Identifier: MIT */
/*
 * hashtab.c - see hashtab.h.
 */
#include "common/compat.h"

#include "common/hashtab.h"

int ct_itab_reserve_n(struct ct_itab *t, uint32_t more, ct_itab_hash_fn hf, const void *ctx)
{
	uint64_t want = ((uint64_t)t->n + more) * 2;
	uint32_t ncap, i, *ns;

	if (t->cap && want <= t->cap)
		return 0;
	if (want > (1u << 31))
		return -E2BIG;
	for (ncap = t->cap ? t->cap * 2 : 64; ncap < want; ncap *= 2)
		;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		uint32_t idx = t->slot[i], j;

		if (!idx)
			continue;
		j = ct_itab_home(hf(ctx, idx - 1), ncap);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = idx;
	}
	free(t->slot);
	t->slot = ns;
	t->cap = ncap;
	return 0;
}

int ct_itab_rebuild(struct ct_itab *t, uint32_t n, ct_itab_hash_fn hf, const void *ctx)
{
	uint32_t i;

	ct_itab_clear(t);
	for (i = 0; i < n; i++) {
		uint32_t j;
		int err = ct_itab_reserve(t, hf, ctx);

		if (err)
			return err;
		j = ct_itab_home(hf(ctx, i), t->cap);
		while (t->slot[j])
			j = (j + 1) & (t->cap - 1);
		t->slot[j] = ct_itab_add(t, i);
	}
	return 0;
}

void ct_itab_clear(struct ct_itab *t)
{
	if (t->slot)
		memset(t->slot, 0, (size_t)t->cap * sizeof(*t->slot));
	t->n = 0;
}

void ct_itab_release(struct ct_itab *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

uint64_t ct_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t w;

	h ^= n;
	while (n >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	w = 0;
	if (n)
		memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	return h;
}

uint64_t ct_hash_str(const char *s)
{
	return ct_hash_bytes(CT_HASH_SEED, s, strlen(s));
}

struct strkey {
	const char *s;
	size_t len;
};

static uint64_t str_hash(const void *ctx, uint32_t idx)
{
	const char *s = ((const struct ct_strset *)ctx)->v[idx];

	return ct_hash_bytes(CT_HASH_SEED, s, strlen(s));
}

static bool str_eq(const void *ctx, uint32_t idx, const void *key)
{
	const char *s = ((const struct ct_strset *)ctx)->v[idx];
	const struct strkey *k = key;

	return !strncmp(s, k->s, k->len) && s[k->len] == '\0';
}

int ct_strset_intern(struct ct_strset *set, const char *s, size_t len, ct_strset_store_fn store,
		     void *ctx, const char **out)
{
	struct strkey k = { s, len };
	uint64_t h = ct_hash_bytes(CT_HASH_SEED, s, len);
	uint32_t *slot;
	int err;

	err = ct_itab_reserve(&set->t, str_hash, set);
	if (err)
		return err;
	slot = ct_itab_slot(&set->t, h, str_eq, set, &k);
	if (*slot) {
		*out = set->v[*slot - 1];
		return 0;
	}
	if (set->n == set->cap) {
		uint32_t ncap = set->cap ? set->cap * 2 : 64;
		const char **nv;

		if (ncap < set->cap)
			return -E2BIG;
		nv = realloc(set->v, (size_t)ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		set->v = nv;
		set->cap = ncap;
	}
	err = store(ctx, s, len, &set->v[set->n]);
	if (err)
		return err;
	*slot = ct_itab_add(&set->t, set->n);
	*out = set->v[set->n++];
	return 0;
}

void ct_strset_release(struct ct_strset *set)
{
	ct_itab_release(&set->t);
	free(set->v);
	memset(set, 0, sizeof(*set));
}
