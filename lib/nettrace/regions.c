/* SPDX-License-Identifier: MIT */
/*
 * regions.c - what a nettrace region holds between two sequence points: the
 * stack and (V6) label tables, the threads and their sequence numbers (drop
 * detection), and the blocks that fill them (StackBlock, SPBlock, V6
 * ThreadBlock, RemoveThreadBlock, LabelListBlock). Part of the reader
 * (reader_int.h).
 */
#include "common/compat.h"

#include "common/log.h"
#include "common/strparse.h"
#include "nettrace/reader_int.h"

/* ------------------------------------------------------------------------ */
/* Threads (drop detection)                                                  */

static uint64_t thr_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct nt_reader *)ctx)->thr[idx].key);
}

static bool thr_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct nt_reader *)ctx)->thr[idx].key == *(const uint64_t *)key;
}

struct thr *nt_rd_thr_find(struct nt_reader *r, uint64_t key)
{
	uint32_t i = ct_itab_get(&r->tidx, ct_hash_u64(key), thr_eq, r, &key);

	return i == UINT32_MAX ? NULL : &r->thr[i];
}

/* Forgets threads that lost nothing and are gone (removed, or idle since the last SP). */
static int thr_evict(struct nt_reader *r)
{
	size_t i, j = 0;

	for (i = 0; i < r->nthr; i++) {
		struct thr *t = &r->thr[i];

		if (!t->dropped && (t->removed || t->gen < r->gen))
			continue;
		r->thr[j++] = *t;
	}
	if (j == r->nthr)
		return -EFBIG;
	r->nthr = j;
	return ct_itab_rebuild(&r->tidx, (uint32_t)j, thr_hash, r);
}

static int thr_get(struct nt_reader *r, uint64_t key, struct thr **out, bool *created)
{
	struct thr *t = nt_rd_thr_find(r, key);
	uint32_t *slot;
	int err;

	*created = false;
	if (t) {
		*out = t;
		return 0;
	}
	if (r->nthr >= r->lim.max_threads) {
		err = thr_evict(r);
		if (err)
			return err;
	}
	if (r->nthr == r->thrcap) {
		size_t ncap = r->thrcap ? r->thrcap * 2 : 16;
		struct thr *nt = realloc(r->thr, ncap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		r->thr = nt;
		r->thrcap = ncap;
	}
	err = ct_itab_reserve(&r->tidx, thr_hash, r);
	if (err)
		return err;
	slot = ct_itab_slot(&r->tidx, ct_hash_u64(key), thr_eq, r, &key);
	*slot = ct_itab_add(&r->tidx, (uint32_t)r->nthr);
	t = &r->thr[r->nthr++];
	memset(t, 0, sizeof(*t));
	t->key = key;
	t->gen = r->gen;
	*created = true;
	*out = t;
	return 0;
}

static void count_drops(struct nt_reader *r, struct thr *t, uint32_t n)
{
	t->dropped += n;
	r->st.dropped += n;
}

/* An event with sequence number seq from capture thread key. */
int nt_rd_seq_event(struct nt_reader *r, uint64_t key, uint32_t seq)
{
	struct thr *t;
	bool created;
	int32_t gap;
	int err = thr_get(r, key, &t, &created);

	if (err)
		return err;
	if (created)
		t->last = seq - 1;
	gap = (int32_t)(seq - t->last - 1);
	/* gap < 0: the id was reused by a new thread (V5) whose numbers restart */
	if (gap > 0)
		count_drops(r, t, (uint32_t)gap);
	t->last = seq;
	t->gen = r->gen;
	t->events++;
	return 0;
}

/* A sequence point / RemoveThread entry: seq is a lower bound of the last number used. */
static int seq_point(struct nt_reader *r, uint64_t key, uint32_t seq)
{
	struct thr *t;
	bool created;
	int32_t gap;
	int err = thr_get(r, key, &t, &created);

	if (err)
		return err;
	if (!created && t->last) {
		gap = (int32_t)(seq - t->last);
		if (gap > 0)
			count_drops(r, t, (uint32_t)gap);
	}
	if (created || (int32_t)(seq - t->last) > 0)
		t->last = seq;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Stack, label, sequence point and thread blocks                            */

static void region_reset(struct nt_reader *r)
{
	r->nstk = 0;
	r->nips = 0;
	r->stk_first = 0;
	r->nlab = 0;
	r->lab_first = 0;
	r->gen++;
}

/* Makes room for ids first..first+count-1 in a region table (stacks or labels). */
static int region_extend(struct nt_reader *r, uint32_t *nents, uint32_t *first_id, uint32_t first,
			 uint32_t count, uint32_t cap, uint32_t *pad)
{
	uint64_t expect, gap;

	*pad = 0;
	if (!first)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "table ids start at 0");
	if (!*nents)
		*first_id = first;
	expect = (uint64_t)*first_id + *nents;
	if (first < expect)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "table id %u defined twice", first);
	/* ids may skip ahead; the gap becomes empty entries */
	gap = first - expect;
	if ((uint64_t)*nents + gap + count > cap)
		return nt_rd_fail(r, -EFBIG, r->blk_off, "table over its cap of %u entries", cap);
	*pad = (uint32_t)gap;
	return 0;
}

int nt_rd_stack_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;
	uint32_t first, count, pad, i, ps = r->info.pointer_size;
	int err;

	cur_u32(c, &first);
	cur_u32(c, &count);
	if (c->err)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "short stack block");
	if (count > cur_left(c) / 4)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "stack count %u larger than the block", count);
	err = region_extend(r, &r->nstk, &r->stk_first, first, count, r->lim.max_stacks, &pad);
	if (err)
		return err;
	if (r->nstk + pad + count > r->stkcap) {
		uint32_t ncap = r->stkcap ? r->stkcap : 256;
		struct stk *ns;

		while (ncap < r->nstk + pad + count)
			ncap = ncap > UINT32_MAX / 2 ? r->nstk + pad + count : ncap * 2;
		ns = realloc(r->stk, (size_t)ncap * sizeof(*ns));
		if (!ns)
			return nt_rd_fail(r, -ENOMEM, r->blk_off, "out of memory for stacks");
		r->stk = ns;
		r->stkcap = ncap;
	}
	for (i = 0; i < pad; i++) {
		r->stk[r->nstk].off = 0;
		r->stk[r->nstk++].n = 0;
	}
	for (i = 0; i < count; i++) {
		uint64_t soff = r->blk_off + c->off;
		uint32_t size, n, j;
		const uint8_t *p;

		if (cur_u32(c, &size) || !(p = cur_take(c, size)))
			return nt_rd_fail(r, -EBADMSG, soff, "stack %u overruns its block", first + i);
		if (size % ps)
			return nt_rd_fail(r, -EBADMSG, soff, "stack size %u not a multiple of %u", size,
				    ps);
		n = size / ps;
		if (n > r->lim.max_frames)
			return nt_rd_fail(r, -EFBIG, soff, "stack of %u frames over the cap", n);
		if (n > r->lim.max_stack_bytes / 8 - r->nips)
			return nt_rd_fail(r, -EFBIG, soff, "stack table over its cap of %zu bytes",
				    r->lim.max_stack_bytes);
		if (r->nips + n > r->ipscap) {
			size_t ncap = r->ipscap ? r->ipscap : 4096;
			uint64_t *ni;

			while (ncap < r->nips + n)
				ncap *= 2;
			ni = realloc(r->ips, ncap * sizeof(*ni));
			if (!ni)
				return nt_rd_fail(r, -ENOMEM, soff, "out of memory for stacks");
			r->ips = ni;
			r->ipscap = ncap;
		}
		for (j = 0; j < n; j++)
			r->ips[r->nips + j] = ps == 8 ? ct_le64(p + 8 * j) : ct_le32(p + 4 * j);
		r->stk[r->nstk].off = r->nips;
		r->stk[r->nstk++].n = n;
		r->nips += n;
		r->st.stacks++;
	}
	if (cur_left(c))
		ct_debug("nettrace: %zu trailing bytes in stack block", cur_left(c));
	return 0;
}

int nt_rd_sp_block(struct nt_reader *r, int64_t *ts)
{
	struct cursor *c = &r->bc;
	uint32_t count, flags = 0, i;
	uint64_t t;
	int err;

	cur_u64(c, &t);
	*ts = (int64_t)t;
	if (r->v6)
		cur_u32(c, &flags);
	cur_u32(c, &count);
	if (c->err)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "short sequence point block");
	if (count > cur_left(c) / (r->v6 ? 2 : 12))
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "sequence point thread count %u too large",
			    count);
	for (i = 0; i < count; i++) {
		uint64_t key;
		uint32_t seq;

		if (r->v6) {
			cur_varu64(c, &key, 10);
			cur_varu32(c, &seq);
		} else {
			cur_u64(c, &key);
			cur_u32(c, &seq);
		}
		if (c->err)
			return nt_rd_fail(r, -EBADMSG, r->blk_off, "sequence point entry %u overruns", i);
		err = seq_point(r, key, seq);
		if (err)
			return nt_rd_fail(r, err, r->blk_off, "thread table over its cap of %u",
				    r->lim.max_threads);
	}
	region_reset(r);
	if (flags & 1) {
		for (i = 0; i < r->nthr; i++)
			r->thr[i].removed = true;
	}
	if (flags & 2)
		nt_rd_meta_flush(r);
	r->st.seqpoints++;
	return 0;
}

int nt_rd_thread_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;

	while (cur_left(c)) {
		uint64_t roff = r->blk_off + c->off, idx, v;
		uint16_t rsize;
		const uint8_t *p;
		struct cursor row;
		struct thr *t;
		bool created;
		int err;

		if (cur_u16(c, &rsize) || !(p = cur_take(c, rsize)))
			return nt_rd_fail(r, -EBADMSG, roff, "thread row overruns its block");
		cur_init(&row, p, rsize);
		if (cur_varu64(&row, &idx, 10))
			return nt_rd_fail(r, -EBADMSG, roff, "bad thread row");
		err = thr_get(r, idx, &t, &created);
		if (err)
			return nt_rd_fail(r, err, roff, "thread table over its cap of %u",
				    r->lim.max_threads);
		t->removed = false;
		t->gen = r->gen;
		while (cur_left(&row)) {
			uint8_t kind;
			uint32_t n;

			cur_u8(&row, &kind);
			switch (kind) {
			case 1: /* name */
				if (!cur_varu32(&row, &n))
					cur_skip(&row, n);
				break;
			case 2: /* OS process id */
				cur_varu64(&row, &v, 10);
				break;
			case 3: /* OS thread id */
				if (!cur_varu64(&row, &v, 10)) {
					t->os_tid = v;
					t->has_os_tid = true;
				}
				break;
			case 4: /* key/value */
				if (!cur_varu32(&row, &n))
					cur_skip(&row, n);
				if (!cur_varu32(&row, &n))
					cur_skip(&row, n);
				break;
			default:
				/* unknown option: the rest of the row is opaque */
				row.err = -EBADMSG;
				break;
			}
			if (row.err)
				break;
		}
	}
	return 0;
}

int nt_rd_rmthread_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;

	while (cur_left(c)) {
		uint64_t idx;
		uint32_t seq;
		struct thr *t;
		int err;

		cur_varu64(c, &idx, 10);
		cur_varu32(c, &seq);
		if (c->err)
			return nt_rd_fail(r, -EBADMSG, r->blk_off, "bad RemoveThread entry");
		err = seq_point(r, idx, seq);
		if (err)
			return nt_rd_fail(r, err, r->blk_off, "thread table over its cap of %u",
				    r->lim.max_threads);
		t = nt_rd_thr_find(r, idx);
		if (t)
			t->removed = true;
	}
	return 0;
}

static int skip_v6_string(struct cursor *c)
{
	uint32_t n;

	if (cur_varu32(c, &n))
		return c->err;
	return cur_skip(c, n);
}

int nt_rd_label_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;
	uint32_t first, count, pad, i;
	int err;

	cur_u32(c, &first);
	cur_u32(c, &count);
	if (c->err)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "short label list block");
	if (count > cur_left(c))
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "label list count %u too large", count);
	err = region_extend(r, &r->nlab, &r->lab_first, first, count, r->lim.max_labels, &pad);
	if (err)
		return err;
	if (r->nlab + pad + count > r->labcap) {
		uint32_t ncap = r->labcap ? r->labcap : 64;
		struct label *nl;

		while (ncap < r->nlab + pad + count)
			ncap = ncap > UINT32_MAX / 2 ? r->nlab + pad + count : ncap * 2;
		nl = realloc(r->lab, (size_t)ncap * sizeof(*nl));
		if (!nl)
			return nt_rd_fail(r, -ENOMEM, r->blk_off, "out of memory for labels");
		r->lab = nl;
		r->labcap = ncap;
	}
	for (i = 0; i < pad; i++)
		memset(&r->lab[r->nlab++], 0, sizeof(struct label));
	for (i = 0; i < count; i++) {
		struct label *l = &r->lab[r->nlab];
		uint64_t loff = r->blk_off + c->off, v;
		uint8_t kind;
		const uint8_t *g;

		memset(l, 0, sizeof(*l));
		do {
			if (cur_u8(c, &kind))
				break;
			switch (kind & 0x7f) {
			case 1:
			case 2:
				g = cur_take(c, 16);
				if (g) {
					memcpy((kind & 0x7f) == 1 ? l->act : l->rel, g, 16);
					l->has |= (kind & 0x7f) == 1 ? 1 : 2;
				}
				break;
			case 3: /* TraceId */
				cur_skip(c, 16);
				break;
			case 4: /* SpanId */
			case 8: /* Keywords */
				cur_skip(c, 8);
				break;
			case 5:
				skip_v6_string(c);
				skip_v6_string(c);
				break;
			case 6:
				skip_v6_string(c);
				cur_varu64(c, &v, 10);
				break;
			case 7: /* OpCode */
			case 9: /* Level */
			case 10: /* Version */
				cur_skip(c, 1);
				break;
			default:
				c->err = -EBADMSG;
				break;
			}
		} while (!c->err && !(kind & 0x80));
		if (c->err)
			return nt_rd_fail(r, -EBADMSG, loff, "bad label list %u", first + i);
		r->nlab++;
	}
	return 0;
}

