/* SPDX-License-Identifier: MIT */
/*
 * hashtab.h - clrtap's one hash table and its hash functions.
 *
 * struct ct_itab is an index: open addressing (linear probing, load at most
 * one half) over uint32 indices into an array the caller owns. The caller
 * keeps its entries where it likes (a growing array, usually) and tells the
 * table how to hash an entry by index and how to compare one with a key, so
 * one table type serves every key shape (ids, strings, stacks of IPs, UTF-16
 * names) with no per-entry allocation and no void * keys.
 *
 *	uint32_t *slot;
 *	if (ct_itab_reserve(&t, ent_hash, ents))       // room for one more
 *		return -ENOMEM;
 *	slot = ct_itab_slot(&t, h, ent_eq, ents, &key);
 *	if (*slot)                                      // found: ents[*slot - 1]
 *		...
 *	else                                            // add: append, then
 *		*slot = ct_itab_add(&t, n_ents++);
 *
 * Counts and caps are the caller's (a table of hostile input is bounded by
 * the array it indexes). Entries are never removed one by one; clear or
 * release the whole table.
 */
#ifndef CLRTAP_COMMON_HASHTAB_H
#define CLRTAP_COMMON_HASHTAB_H

#include "common/compat.h"

struct ct_itab {
	uint32_t *slot; /* entry index + 1; 0 = empty */
	uint32_t cap;   /* a power of two, or 0 */
	uint32_t n;     /* entries in the table */
};

#define CT_ITAB_INIT { NULL, 0, 0 }

/* The hash of entry idx (the same value the key hashed to). */
typedef uint64_t (*ct_itab_hash_fn)(const void *ctx, uint32_t idx);
/* Whether entry idx has the key. */
typedef bool (*ct_itab_eq_fn)(const void *ctx, uint32_t idx, const void *key);

/* Room for `more` entries: grows (and rehashes through hf) to stay at most
 * half full. Returns 0, -ENOMEM or -E2BIG. */
int ct_itab_reserve_n(struct ct_itab *t, uint32_t more, ct_itab_hash_fn hf, const void *ctx);
/* Room for one more entry. */
static inline int ct_itab_reserve(struct ct_itab *t, ct_itab_hash_fn hf, const void *ctx)
{
	return ct_itab_reserve_n(t, 1, hf, ctx);
}
/* Where hash h starts probing in a table of cap slots. */
static inline uint32_t ct_itab_home(uint64_t h, uint32_t cap)
{
	return (uint32_t)(h ^ (h >> 32)) & (cap - 1);
}

/* The slot of the key with hash h: holding its index + 1 when found, else
 * the empty slot where it goes. The table must have a free slot
 * (ct_itab_reserve). Inline, so that a constant eq is inlined too (hot
 * loops: samples, heap objects). */
static inline uint32_t *ct_itab_slot(const struct ct_itab *t, uint64_t h, ct_itab_eq_fn eq,
				     const void *ctx, const void *key)
{
	uint32_t mask = t->cap - 1, i = ct_itab_home(h, t->cap);

	while (t->slot[i]) {
		if (eq(ctx, t->slot[i] - 1, key))
			return &t->slot[i];
		i = (i + 1) & mask;
	}
	return &t->slot[i];
}

/* The entry's index for a key, or UINT32_MAX (also on an empty table). */
static inline uint32_t ct_itab_get(const struct ct_itab *t, uint64_t h, ct_itab_eq_fn eq,
				   const void *ctx, const void *key)
{
	uint32_t *s;

	if (!t->cap)
		return UINT32_MAX;
	s = ct_itab_slot(t, h, eq, ctx, key);
	return *s ? *s - 1 : UINT32_MAX;
}
/* Marks an empty slot from ct_itab_slot used by entry idx; returns what to store. */
static inline uint32_t ct_itab_add(struct ct_itab *t, uint32_t idx)
{
	t->n++;
	return idx + 1;
}
/* Empties the table and indexes entries 0..n-1 anew (their keys distinct),
 * after the caller compacted its array. Returns 0, -ENOMEM or -E2BIG. */
int ct_itab_rebuild(struct ct_itab *t, uint32_t n, ct_itab_hash_fn hf, const void *ctx);
/* Empties the table (keeps its memory). */
void ct_itab_clear(struct ct_itab *t);
void ct_itab_release(struct ct_itab *t);

/*
 * A set of interned strings over ct_itab: one copy per distinct string,
 * made by the caller's store (strdup, an arena, with the caller's byte cap).
 * v holds the copies in insertion order.
 */
struct ct_strset {
	const char **v;
	uint32_t n, cap;
	struct ct_itab t;
};

typedef int (*ct_strset_store_fn)(void *ctx, const char *s, size_t len, const char **copy);
/* *out = the interned copy of s[0..len) (s has no NUL inside): found, or
 * stored and added. Returns 0, or what store returned, or -ENOMEM. */
int ct_strset_intern(struct ct_strset *set, const char *s, size_t len, ct_strset_store_fn store,
		     void *ctx, const char **out);
/* Frees the set's arrays; the copies are the store's to free (set->v). */
void ct_strset_release(struct ct_strset *set);

/* ----- the hash functions (not for security: keys from targets are capped
 * by count, and probing is linear) ----- */

/* A 64-bit mix of one integer (an id, a thread, an address). */
static inline uint64_t ct_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#define CT_HASH_SEED 1469598103934665603ULL

/* n bytes, 8 at a time, continuing from h (CT_HASH_SEED to start). */
uint64_t ct_hash_bytes(uint64_t h, const void *p, size_t n);
/* A NUL-terminated string. */
uint64_t ct_hash_str(const char *s);

#endif
