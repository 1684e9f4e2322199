/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the nettrace stream reader: framing (V5 FastSerialization
 * objects and V6 blocks), event headers, metadata/stack/label tables,
 * sequence points and drop detection.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/hashtab.h"
#include "common/log.h"
#include "common/strparse.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

#define IBUF_SIZE (64 * 1024)
#define BLOCK_CHUNK (1024 * 1024) /* block buffers grow by what actually arrives */
#define MAX_TYPE_NAME 64

enum rstate {
	RS_NEW,        /* nothing read */
	RS_BLOCKS,     /* before a block header */
	RS_INBLOCK,    /* a block is loaded and being processed */
	RS_BLOCK_TAIL, /* V5: the EndObject byte after the block content is due */
	RS_DONE,
	RS_ERROR,
};

enum bkind {
	BK_UNKNOWN,
	BK_EVENT,
	BK_META,
	BK_STACK,
	BK_SP,
	BK_THREAD,   /* V6 */
	BK_RMTHREAD, /* V6 */
	BK_LABEL,    /* V6 */
};

/* Event header state; compressed headers are deltas against the previous one. */
struct hdr {
	uint32_t meta, seq, proc, stack, label, payload;
	uint64_t tid, ctid;
	uint64_t ts;
	uint8_t act[16], rel[16];
};

struct thr {
	uint64_t key; /* V5: OS thread id; V6: thread index */
	uint64_t os_tid;
	uint64_t events, dropped;
	uint32_t last;
	uint32_t gen; /* sequence-point generation of the last activity */
	bool removed; /* V6 RemoveThread / flushed */
	bool has_os_tid;
};

struct stk {
	size_t off; /* into ips */
	uint32_t n;
};

struct label {
	uint8_t act[16], rel[16];
	uint8_t has; /* bit0 act, bit1 rel */
};

struct nt_reader {
	nt_read_fn read;
	void *rctx;
	struct nt_limits lim;

	/* input */
	uint8_t *ibuf;
	size_t ilen, ipos;
	uint64_t off;
	bool eof;

	enum rstate state;
	int err;
	uint64_t err_off;
	char errmsg[192];

	struct nt_trace_info info;
	bool v6;

	/* the current block */
	uint8_t *blk;
	size_t blk_cap;
	size_t blk_len;      /* bytes present */
	size_t blk_declared; /* bytes the header promised */
	uint64_t blk_off;    /* stream offset of the content */
	uint64_t blk_hdr_off;
	enum bkind blk_kind;
	bool blk_done;
	bool compressed;
	struct cursor bc;
	struct hdr h;

	/* metadata: open addressing id -> record; all[] owns every record */
	struct ct_itab mtab; /* live records by id: indices into all */
	uint32_t mcount;
	struct nt_metadata **all;
	size_t nall, allcap;
	size_t mbytes;
	struct nt_mbuild mb;

	/* stacks of the current sequence-point region */
	uint64_t *ips;
	size_t nips, ipscap;
	struct stk *stk;
	uint32_t nstk, stkcap, stk_first;

	/* V6 label lists of the current region */
	struct label *lab;
	uint32_t nlab, labcap, lab_first;

	/* threads: dense array + open addressing index (slot = index + 1) */
	struct thr *thr;
	size_t nthr, thrcap;
	struct ct_itab tidx; /* threads by key: indices into thr */
	uint32_t gen;

	/* the time-order window */
	struct nt_order ord;
	int64_t rel_upto;   /* every held event up to this timestamp may go out */
	bool rel_all;       /* every held event may go out (sequence point, end, damage) */
	bool quiet;         /* a callback aborted: nothing more is delivered */
	bool have_last;
	int64_t last_ts;    /* of the last event delivered */

	struct nt_stats st;
};

/* What an event keeps while it waits in the window (the payload follows it):
 * the event with its pointers resolved again when it goes out. */
struct held {
	struct nt_event ev;
	uint32_t stk;     /* index into stk[] of the region, UINT32_MAX for none */
	uint8_t act[16], rel[16];
};
void nt_limits_default(struct nt_limits *l)
{
	l->max_block = 64u << 20;
	l->max_metadata = 65536;
	l->max_metadata_bytes = 64u << 20;
	l->max_fields = 4096;
	l->max_stacks = 1u << 20;
	l->max_stack_bytes = 128u << 20;
	l->max_frames = 4096;
	l->max_threads = 65536;
	l->max_labels = 1u << 20;
	l->max_order_events = 1u << 20;
	l->max_order_bytes = (size_t)256 << 20;
}

ssize_t nt_read_fd(void *ctx, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	ssize_t n;

	do {
		n = read(fd, buf, len);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

ssize_t nt_read_mem(void *ctx, void *buf, size_t len)
{
	struct nt_membuf *m = ctx;
	size_t n = CT_MIN(len, m->len - m->off);

	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (ssize_t)n;
}

PRINTF(4, 5)
static int fail(struct nt_reader *r, int err, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	r->state = RS_ERROR;
	r->err = err;
	r->err_off = off;
	ct_debug("nettrace: %s (offset %" PRIu64 ")", r->errmsg, off);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Input                                                                     */

static ssize_t do_read(struct nt_reader *r, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = r->read(r->rctx, buf, len);
	} while (n == -EINTR);
	if (n > (ssize_t)len)
		return -EINVAL;
	if (n == 0)
		r->eof = true;
	return n;
}

/* Copies up to n bytes; returns the count (< n only at end of stream) or -errno. */
static ssize_t in_get(struct nt_reader *r, uint8_t *dst, size_t n)
{
	size_t got = 0;
	ssize_t k;

	while (got < n) {
		size_t avail = r->ilen - r->ipos;

		if (avail) {
			size_t c = CT_MIN(avail, n - got);

			memcpy(dst + got, r->ibuf + r->ipos, c);
			r->ipos += c;
			got += c;
			continue;
		}
		if (r->eof)
			break;
		if (n - got >= IBUF_SIZE) {
			k = do_read(r, dst + got, n - got);
			if (k < 0)
				return k;
			got += (size_t)k;
			continue;
		}
		k = do_read(r, r->ibuf, IBUF_SIZE);
		if (k < 0)
			return k;
		r->ilen = (size_t)k;
		r->ipos = 0;
	}
	r->off += got;
	return (ssize_t)got;
}

/* Reads exactly n bytes or fails (-EBADMSG at end of stream, with a message). */
static int in_exact(struct nt_reader *r, void *dst, size_t n, const char *what)
{
	uint64_t start = r->off;
	ssize_t k = in_get(r, dst, n);

	if (k < 0)
		return fail(r, (int)k, start, "read error in %s", what);
	if ((size_t)k < n)
		return fail(r, -EBADMSG, start, "truncated %s: %zu of %zu bytes", what, (size_t)k,
			    n);
	return 0;
}

/* Reads a block's content (size bytes) into r->blk; a short read marks it truncated. */
static int load_block(struct nt_reader *r, size_t size)
{
	size_t got = 0;

	r->blk_off = r->off;
	r->blk_declared = size;
	while (got < size) {
		size_t want = size, chunk;
		ssize_t k;

		/* grow with the data actually received, so a lying size costs nothing */
		if (r->blk_cap < size) {
			want = CT_MAX(r->blk_cap * 2, (size_t)BLOCK_CHUNK);
			want = CT_MIN(want, size);
			if (want < got + 1)
				want = got + 1;
		}
		if (r->blk_cap < want) {
			uint8_t *nb = realloc(r->blk, want);

			if (!nb)
				return fail(r, -ENOMEM, r->blk_hdr_off, "out of memory for block");
			r->blk = nb;
			r->blk_cap = want;
		}
		chunk = CT_MIN(r->blk_cap, size) - got;
		k = in_get(r, r->blk + got, chunk);
		if (k < 0)
			return fail(r, (int)k, r->off, "read error in block");
		got += (size_t)k;
		if ((size_t)k < chunk)
			break;
	}
	r->blk_len = got;
	return 0;
}

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

static struct thr *thr_find(struct nt_reader *r, uint64_t key)
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
	struct thr *t = thr_find(r, key);
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
static int seq_event(struct nt_reader *r, uint64_t key, uint32_t seq)
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
/* Metadata table                                                            */

static uint64_t meta_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct nt_reader *)ctx)->all[idx]->id);
}

static bool meta_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct nt_reader *)ctx)->all[idx]->id == *(const uint32_t *)key;
}

/* The live record of an id (the table indexes r->all; a flush empties it). */
static struct nt_metadata *meta_find(const struct nt_reader *r, uint32_t id)
{
	uint32_t i = ct_itab_get(&r->mtab, ct_hash_u64(id), meta_eq, r, &id);

	return i == UINT32_MAX ? NULL : r->all[i];
}

/* Takes ownership of m (freed on failure). */
static int meta_insert(struct nt_reader *r, struct nt_metadata *m, size_t bytes, uint64_t off)
{
	uint32_t *slot;
	int err;

	if (!m->id) {
		free(m);
		return fail(r, -EBADMSG, off, "metadata record with id 0");
	}
	if (meta_find(r, m->id)) {
		uint32_t id = m->id;

		free(m);
		return fail(r, -EBADMSG, off, "metadata id %u defined twice", id);
	}
	if (r->mcount >= r->lim.max_metadata || bytes > r->lim.max_metadata_bytes - r->mbytes) {
		free(m);
		return fail(r, -EFBIG, off, "metadata table over its cap (%u records, %zu bytes)",
			    r->mcount, r->mbytes);
	}
	if (r->nall == r->allcap) {
		size_t ncap = r->allcap ? r->allcap * 2 : 64;
		struct nt_metadata **na = realloc(r->all, ncap * sizeof(*na));

		if (!na) {
			free(m);
			return fail(r, -ENOMEM, off, "out of memory");
		}
		r->all = na;
		r->allcap = ncap;
	}
	err = ct_itab_reserve(&r->mtab, meta_hash, r);
	if (err) {
		free(m);
		return fail(r, err, off, "out of memory");
	}
	slot = ct_itab_slot(&r->mtab, ct_hash_u64(m->id), meta_eq, r, &m->id);
	*slot = ct_itab_add(&r->mtab, (uint32_t)r->nall);
	r->all[r->nall++] = m;
	r->mcount++;
	r->mbytes += bytes;
	r->st.metadata++;
	return 0;
}

/* V6 sequence point flag 2: ids may be reused; old records stay alive (and counted). */
static void meta_flush(struct nt_reader *r)
{
	ct_itab_clear(&r->mtab);
	r->mcount = 0;
}

const struct nt_metadata *nt_reader_metadata(const struct nt_reader *r, uint32_t id)
{
	return meta_find(r, id);
}

/* ------------------------------------------------------------------------ */
/* Reader lifecycle and header                                               */

int nt_reader_new(struct nt_reader **out, nt_read_fn read, void *ctx,
		  const struct nt_limits *limits)
{
	struct nt_reader *r = NULL;
	int err = -ENOMEM;

	*out = NULL;
	if (!read)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out;
	r->ibuf = malloc(IBUF_SIZE);
	if (!r->ibuf)
		goto out;
	r->read = read;
	r->rctx = ctx;
	if (limits)
		r->lim = *limits;
	else
		nt_limits_default(&r->lim);
	if (!r->lim.max_threads)
		r->lim.max_threads = 1;
	nt_mbuild_init(&r->mb, r->lim.max_fields, r->lim.max_block + 1);
	nt_order_init(&r->ord, r->lim.max_order_events, r->lim.max_order_bytes);
	r->rel_upto = INT64_MIN;
	r->state = RS_NEW;
	*out = r;
	r = NULL;
	err = 0;
out:
	if (r)
		free(r->ibuf);
	free(r);
	return err;
}

void nt_reader_free(struct nt_reader *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nall; i++)
		free(r->all[i]);
	free(r->all);
	ct_itab_release(&r->mtab);
	nt_mbuild_release(&r->mb);
	free(r->ips);
	free(r->stk);
	free(r->lab);
	free(r->thr);
	ct_itab_release(&r->tidx);
	free(r->blk);
	free(r->ibuf);
	nt_order_free(&r->ord);
	free(r);
}

static void parse_systemtime(const uint8_t *p, uint16_t st[8])
{
	int i;

	for (i = 0; i < 8; i++)
		st[i] = ct_le16(p + 2 * i);
}

static bool ptr_size_ok(uint32_t ps)
{
	return ps == 4 || ps == 8;
}

/* V5: the rest of the prologue after "Nettrace" and the u32 20. */
static int open_v5(struct nt_reader *r)
{
	uint8_t b[64];
	uint32_t nlen;
	int32_t ver, minver;
	uint64_t obj = 12;

	if (in_exact(r, b, 20, "prologue"))
		return r->err;
	if (memcmp(b, "!FastSerialization.1", 20))
		return fail(r, -EBADMSG, 12, "not a FastSerialization stream");
	obj = r->off;
	/* BeginPrivateObject, BeginPrivateObject, NullReference, version, minver, name length */
	if (in_exact(r, b, 15, "trace object"))
		return r->err;
	if (b[0] != 5 || b[1] != 5 || b[2] != 1)
		return fail(r, -EBADMSG, obj, "bad trace object tags %02x %02x %02x", b[0], b[1],
			    b[2]);
	ver = (int32_t)ct_le32(b + 3);
	minver = (int32_t)ct_le32(b + 7);
	nlen = ct_le32(b + 11);
	if (nlen != 5)
		return fail(r, -EBADMSG, obj, "bad trace object type name length %u", nlen);
	/* "Trace", EndObject, 48 bytes of fields, EndObject */
	if (in_exact(r, b, 5 + 1 + 48 + 1, "trace object"))
		return r->err;
	if (memcmp(b, "Trace", 5) || b[5] != 6 || b[54] != 6)
		return fail(r, -EBADMSG, obj, "bad trace object");
	if (ver < 4)
		return fail(r, -ENOTSUP, obj, "NetPerf (trace version %d) is not supported", ver);
	if (minver > 5)
		return fail(r, -ENOTSUP, obj, "trace needs a reader of version %d", minver);
	parse_systemtime(b + 6, r->info.sync_utc);
	r->info.sync_qpc = (int64_t)ct_le64(b + 22);
	r->info.qpc_freq = (int64_t)ct_le64(b + 30);
	r->info.pointer_size = ct_le32(b + 38);
	r->info.pid = ct_le32(b + 42);
	r->info.ncpu = ct_le32(b + 46);
	r->info.sampling_ns = ct_le32(b + 50);
	r->info.format = 5;
	if (!ptr_size_ok(r->info.pointer_size))
		return fail(r, -EBADMSG, obj, "bad pointer size %u", r->info.pointer_size);
	return 0;
}

static bool str_is(const uint8_t *p, uint32_t n, const char *z)
{
	return strlen(z) == n && !memcmp(p, z, n);
}

static void kv_u32(const uint8_t *v, uint32_t n, uint32_t *out)
{
	char buf[24];
	uint32_t x;

	if (n >= sizeof(buf))
		return;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (!ct_parse_u32(buf, 10, &x))
		*out = x;
}

static int parse_trace_v6(struct nt_reader *r, const uint8_t *p, size_t len, uint64_t off)
{
	struct cursor c;
	const uint8_t *st;
	uint64_t v;
	uint32_t ps, kvs, i;

	cur_init(&c, p, len);
	st = cur_take(&c, 16);
	if (!st)
		return fail(r, -EBADMSG, off, "short trace block");
	parse_systemtime(st, r->info.sync_utc);
	cur_u64(&c, &v);
	r->info.sync_qpc = (int64_t)v;
	cur_u64(&c, &v);
	r->info.qpc_freq = (int64_t)v;
	cur_u32(&c, &ps);
	cur_u32(&c, &kvs);
	if (c.err)
		return fail(r, -EBADMSG, off, "short trace block");
	if (!ptr_size_ok(ps))
		return fail(r, -EBADMSG, off, "bad pointer size %u", ps);
	r->info.pointer_size = ps;
	for (i = 0; i < kvs; i++) {
		uint32_t kl, vl;
		const uint8_t *k, *val;

		if (cur_varu32(&c, &kl) || !(k = cur_take(&c, kl)) || cur_varu32(&c, &vl) ||
		    !(val = cur_take(&c, vl)))
			return fail(r, -EBADMSG, off, "bad trace block key/value %u", i);
		if (str_is(k, kl, "HardwareThreadCount"))
			kv_u32(val, vl, &r->info.ncpu);
		else if (str_is(k, kl, "ProcessId"))
			kv_u32(val, vl, &r->info.pid);
		else if (str_is(k, kl, "ExpectedCPUSamplingRate"))
			kv_u32(val, vl, &r->info.sampling_ns);
	}
	r->info.format = 6;
	return 0;
}

static int open_v6(struct nt_reader *r)
{
	uint8_t b[8];
	uint32_t major, hdr, size;
	uint64_t hoff;

	if (in_exact(r, b, 8, "version header"))
		return r->err;
	major = ct_le32(b);
	if (major < 6)
		return fail(r, -EBADMSG, 12, "bad NetTrace major version %u", major);
	if (major > 6)
		return fail(r, -ENOTSUP, 12, "NetTrace major version %u is not supported", major);
	r->v6 = true;
	hoff = r->off;
	if (in_exact(r, b, 4, "trace block header"))
		return r->err;
	hdr = ct_le32(b);
	size = hdr & 0xffffff;
	if (hdr >> 24 != 1)
		return fail(r, -EBADMSG, hoff, "first block is kind %u, not Trace", hdr >> 24);
	if (size > r->lim.max_block)
		return fail(r, -EFBIG, hoff, "trace block of %u bytes over the cap", size);
	r->blk_hdr_off = hoff;
	if (load_block(r, size))
		return r->err;
	if (r->blk_len < size)
		return fail(r, -EBADMSG, r->blk_off, "truncated trace block");
	return parse_trace_v6(r, r->blk, size, r->blk_off);
}

int nt_reader_open(struct nt_reader *r)
{
	uint8_t b[12];
	uint32_t x;
	int err;

	if (r->state == RS_ERROR)
		return r->err;
	if (r->state != RS_NEW)
		return 0;
	if (in_exact(r, b, 12, "prologue"))
		return r->err;
	if (memcmp(b, "Nettrace", 8))
		return fail(r, -EBADMSG, 0, "no Nettrace magic");
	x = ct_le32(b + 8);
	if (x == 20)
		err = open_v5(r);
	else if (x == 0)
		err = open_v6(r);
	else
		err = fail(r, -EBADMSG, 8, "unknown stream header (%u)", x);
	if (err)
		return err;
	r->state = RS_BLOCKS;
	return 0;
}

const struct nt_trace_info *nt_reader_info(const struct nt_reader *r)
{
	return &r->info;
}

int nt_reader_error(const struct nt_reader *r, uint64_t *offset, const char **msg)
{
	if (offset)
		*offset = r->err ? r->err_off : 0;
	if (msg)
		*msg = r->err ? r->errmsg : "";
	return r->err;
}

uint64_t nt_reader_offset(const struct nt_reader *r)
{
	return r->off;
}

void nt_reader_stats(const struct nt_reader *r, struct nt_stats *st)
{
	*st = r->st;
	st->order_held_max = r->ord.bytes_max;
}

size_t nt_reader_nthreads(const struct nt_reader *r)
{
	return r->nthr;
}

int nt_reader_thread(const struct nt_reader *r, size_t i, struct nt_thread_stats *out)
{
	const struct thr *t;

	if (i >= r->nthr)
		return -ENOENT;
	t = &r->thr[i];
	out->thread_id = t->has_os_tid ? t->os_tid : t->key;
	out->last_seq = t->last;
	out->events = t->events;
	out->dropped = t->dropped;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Block headers                                                             */

static enum bkind v5_kind(const uint8_t *name, uint32_t n)
{
	if (str_is(name, n, "EventBlock"))
		return BK_EVENT;
	if (str_is(name, n, "MetadataBlock"))
		return BK_META;
	if (str_is(name, n, "StackBlock"))
		return BK_STACK;
	if (str_is(name, n, "SPBlock"))
		return BK_SP;
	return BK_UNKNOWN;
}

/* Sets up iteration over an EventBlock / MetadataBlock content. */
static int begin_blobs(struct nt_reader *r)
{
	uint16_t hsize, flags;
	struct cursor c;

	cur_init(&c, r->blk, r->blk_len);
	cur_u16(&c, &hsize);
	cur_u16(&c, &flags);
	if (c.err)
		return fail(r, -EBADMSG, r->blk_off, "%s block header",
			    r->blk_len < r->blk_declared ? "truncated" : "short");
	if (hsize < 20 || hsize > r->blk_declared)
		return fail(r, -EBADMSG, r->blk_off, "bad block header size %u", hsize);
	if (hsize > r->blk_len)
		return fail(r, -EBADMSG, r->blk_off, "truncated block header");
	r->compressed = flags & 1;
	memset(&r->h, 0, sizeof(r->h));
	cur_init(&r->bc, r->blk, r->blk_len);
	r->bc.off = hsize;
	return 0;
}

/* V6 metadata block: u16 header size excluding itself, then rows. */
static int begin_rows_v6(struct nt_reader *r)
{
	uint16_t hsize;

	cur_init(&r->bc, r->blk, r->blk_len);
	if (cur_u16(&r->bc, &hsize) || cur_skip(&r->bc, hsize))
		return fail(r, -EBADMSG, r->blk_off, "bad metadata block header");
	return 0;
}

static int begin_block(struct nt_reader *r)
{
	r->blk_done = false;
	r->st.blocks++;
	if (r->blk_len < r->blk_declared && r->blk_kind != BK_EVENT)
		return fail(r, -EBADMSG, r->blk_off + r->blk_len,
			    "stream cut inside a block (%zu of %zu bytes)", r->blk_len,
			    r->blk_declared);
	switch (r->blk_kind) {
	case BK_EVENT:
		return begin_blobs(r);
	case BK_META:
		return r->v6 ? begin_rows_v6(r) : begin_blobs(r);
	default:
		cur_init(&r->bc, r->blk, r->blk_len);
		return 0;
	}
}

/* Reads the next block header and content. Sets RS_INBLOCK or RS_DONE. */
static int next_block_v5(struct nt_reader *r)
{
	uint8_t b[16], name[MAX_TYPE_NAME];
	uint32_t nlen;
	int32_t size, minver;
	size_t pad;
	ssize_t k;

	r->blk_hdr_off = r->off;
	k = in_get(r, b, 1);
	if (k < 0)
		return fail(r, (int)k, r->off, "read error");
	if (k == 0)
		return fail(r, -EBADMSG, r->off, "stream ends without the end-of-stream tag");
	if (b[0] == 1) {
		r->state = RS_DONE;
		return 0;
	}
	if (b[0] != 5)
		return fail(r, -EBADMSG, r->blk_hdr_off, "bad object tag %#x", b[0]);
	if (in_exact(r, b + 1, 14, "block header"))
		return r->err;
	if (b[1] != 5 || b[2] != 1)
		return fail(r, -EBADMSG, r->blk_hdr_off, "bad block type tags");
	minver = (int32_t)ct_le32(b + 7);
	nlen = ct_le32(b + 11);
	if (nlen == 0 || nlen > sizeof(name))
		return fail(r, -EBADMSG, r->blk_hdr_off, "bad block type name length %u", nlen);
	if (in_exact(r, name, nlen, "block header") || in_exact(r, b, 5, "block header"))
		return r->err;
	if (b[0] != 6)
		return fail(r, -EBADMSG, r->blk_hdr_off, "bad block type end tag");
	size = (int32_t)ct_le32(b + 1);
	r->blk_kind = v5_kind(name, nlen);
	if (r->blk_kind != BK_UNKNOWN && minver > 2)
		return fail(r, -ENOTSUP, r->blk_hdr_off, "block needs a reader of version %d",
			    minver);
	if (size < 0)
		return fail(r, -EBADMSG, r->blk_hdr_off, "negative block size %d", size);
	if ((size_t)size > r->lim.max_block)
		return fail(r, -EFBIG, r->blk_hdr_off, "block of %d bytes over the cap of %zu",
			    size, r->lim.max_block);
	pad = (4 - (r->off & 3)) & 3;
	if (pad && in_exact(r, b, pad, "block padding"))
		return r->err;
	if (load_block(r, (size_t)size))
		return r->err;
	r->state = RS_INBLOCK;
	return begin_block(r);
}

static int next_block_v6(struct nt_reader *r)
{
	uint8_t b[4];
	uint32_t hdr, size, kind;
	ssize_t k;

	r->blk_hdr_off = r->off;
	k = in_get(r, b, 4);
	if (k < 0)
		return fail(r, (int)k, r->off, "read error");
	if (k == 0)
		return fail(r, -EBADMSG, r->off, "stream ends without an EndOfStream block");
	if (k < 4)
		return fail(r, -EBADMSG, r->blk_hdr_off, "truncated block header");
	hdr = ct_le32(b);
	size = hdr & 0xffffff;
	kind = hdr >> 24;
	if (size > r->lim.max_block)
		return fail(r, -EFBIG, r->blk_hdr_off, "block of %u bytes over the cap of %zu",
			    size, r->lim.max_block);
	if (kind == 0) {
		r->state = RS_DONE;
		return 0;
	}
	switch (kind) {
	case 2:
		r->blk_kind = BK_EVENT;
		break;
	case 3:
		r->blk_kind = BK_META;
		break;
	case 4:
		r->blk_kind = BK_SP;
		break;
	case 5:
		r->blk_kind = BK_STACK;
		break;
	case 6:
		r->blk_kind = BK_THREAD;
		break;
	case 7:
		r->blk_kind = BK_RMTHREAD;
		break;
	case 8:
		r->blk_kind = BK_LABEL;
		break;
	default: /* 1 (a second Trace block) and unknown kinds are skipped */
		r->blk_kind = BK_UNKNOWN;
		break;
	}
	if (load_block(r, size))
		return r->err;
	r->state = RS_INBLOCK;
	return begin_block(r);
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
		return fail(r, -EBADMSG, r->blk_off, "table ids start at 0");
	if (!*nents)
		*first_id = first;
	expect = (uint64_t)*first_id + *nents;
	if (first < expect)
		return fail(r, -EBADMSG, r->blk_off, "table id %u defined twice", first);
	/* ids may skip ahead; the gap becomes empty entries */
	gap = first - expect;
	if ((uint64_t)*nents + gap + count > cap)
		return fail(r, -EFBIG, r->blk_off, "table over its cap of %u entries", cap);
	*pad = (uint32_t)gap;
	return 0;
}

static int do_stack_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;
	uint32_t first, count, pad, i, ps = r->info.pointer_size;
	int err;

	cur_u32(c, &first);
	cur_u32(c, &count);
	if (c->err)
		return fail(r, -EBADMSG, r->blk_off, "short stack block");
	if (count > cur_left(c) / 4)
		return fail(r, -EBADMSG, r->blk_off, "stack count %u larger than the block", count);
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
			return fail(r, -ENOMEM, r->blk_off, "out of memory for stacks");
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
			return fail(r, -EBADMSG, soff, "stack %u overruns its block", first + i);
		if (size % ps)
			return fail(r, -EBADMSG, soff, "stack size %u not a multiple of %u", size,
				    ps);
		n = size / ps;
		if (n > r->lim.max_frames)
			return fail(r, -EFBIG, soff, "stack of %u frames over the cap", n);
		if (n > r->lim.max_stack_bytes / 8 - r->nips)
			return fail(r, -EFBIG, soff, "stack table over its cap of %zu bytes",
				    r->lim.max_stack_bytes);
		if (r->nips + n > r->ipscap) {
			size_t ncap = r->ipscap ? r->ipscap : 4096;
			uint64_t *ni;

			while (ncap < r->nips + n)
				ncap *= 2;
			ni = realloc(r->ips, ncap * sizeof(*ni));
			if (!ni)
				return fail(r, -ENOMEM, soff, "out of memory for stacks");
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

static int do_sp_block(struct nt_reader *r, int64_t *ts)
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
		return fail(r, -EBADMSG, r->blk_off, "short sequence point block");
	if (count > cur_left(c) / (r->v6 ? 2 : 12))
		return fail(r, -EBADMSG, r->blk_off, "sequence point thread count %u too large",
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
			return fail(r, -EBADMSG, r->blk_off, "sequence point entry %u overruns", i);
		err = seq_point(r, key, seq);
		if (err)
			return fail(r, err, r->blk_off, "thread table over its cap of %u",
				    r->lim.max_threads);
	}
	region_reset(r);
	if (flags & 1) {
		for (i = 0; i < r->nthr; i++)
			r->thr[i].removed = true;
	}
	if (flags & 2)
		meta_flush(r);
	r->st.seqpoints++;
	return 0;
}

static int do_thread_block(struct nt_reader *r)
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
			return fail(r, -EBADMSG, roff, "thread row overruns its block");
		cur_init(&row, p, rsize);
		if (cur_varu64(&row, &idx, 10))
			return fail(r, -EBADMSG, roff, "bad thread row");
		err = thr_get(r, idx, &t, &created);
		if (err)
			return fail(r, err, roff, "thread table over its cap of %u",
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

static int do_rmthread_block(struct nt_reader *r)
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
			return fail(r, -EBADMSG, r->blk_off, "bad RemoveThread entry");
		err = seq_point(r, idx, seq);
		if (err)
			return fail(r, err, r->blk_off, "thread table over its cap of %u",
				    r->lim.max_threads);
		t = thr_find(r, idx);
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

static int do_label_block(struct nt_reader *r)
{
	struct cursor *c = &r->bc;
	uint32_t first, count, pad, i;
	int err;

	cur_u32(c, &first);
	cur_u32(c, &count);
	if (c->err)
		return fail(r, -EBADMSG, r->blk_off, "short label list block");
	if (count > cur_left(c))
		return fail(r, -EBADMSG, r->blk_off, "label list count %u too large", count);
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
			return fail(r, -ENOMEM, r->blk_off, "out of memory for labels");
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
			return fail(r, -EBADMSG, loff, "bad label list %u", first + i);
		r->nlab++;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Event and metadata blobs                                                  */

/* Decodes one blob header at the cursor into r->h. */
static int read_header(struct nt_reader *r, struct cursor *c, bool *sorted, size_t *blob_end)
{
	struct hdr *h = &r->h;
	uint32_t v32;
	uint64_t v64;
	uint8_t f;

	*blob_end = 0;
	if (r->compressed) {
		cur_u8(c, &f);
		if (f & 0x01)
			cur_varu32(c, &h->meta);
		if (f & 0x02) {
			cur_varu32(c, &v32);
			h->seq += v32 + 1;
			cur_varu64(c, &h->ctid, 10);
			cur_varu32(c, &h->proc);
		} else if (r->v6 || h->meta) {
			h->seq++;
		}
		if (f & 0x04)
			cur_varu64(c, &h->tid, 10);
		if (f & 0x08)
			cur_varu32(c, &h->stack);
		cur_varu64(c, &v64, 10);
		h->ts += v64;
		if (r->v6) {
			if (f & 0x10)
				cur_varu32(c, &h->label);
		} else {
			const uint8_t *g;

			if ((f & 0x10) && (g = cur_take(c, 16)))
				memcpy(h->act, g, 16);
			if ((f & 0x20) && (g = cur_take(c, 16)))
				memcpy(h->rel, g, 16);
		}
		*sorted = f & 0x40;
		if (f & 0x80)
			cur_varu32(c, &h->payload);
		return c->err;
	}

	/* uncompressed */
	{
		uint32_t size, fixed = r->v6 ? 48 : 76;
		size_t start = c->off;
		const uint8_t *p;

		if (cur_u32(c, &size))
			return c->err;
		if (size < fixed || size > cur_left(c)) {
			c->err = -EBADMSG;
			return c->err;
		}
		p = cur_take(c, fixed);
		h->meta = ct_le32(p);
		*sorted = !(h->meta & 0x80000000u);
		h->meta &= 0x7fffffffu;
		h->seq = ct_le32(p + 4);
		h->tid = ct_le64(p + 8);
		h->ctid = ct_le64(p + 16);
		h->proc = ct_le32(p + 24);
		h->stack = ct_le32(p + 28);
		h->ts = ct_le64(p + 32);
		if (r->v6) {
			h->label = ct_le32(p + 40);
			h->payload = ct_le32(p + 44);
		} else {
			memcpy(h->act, p + 40, 16);
			memcpy(h->rel, p + 56, 16);
			h->payload = ct_le32(p + 72);
		}
		if (h->payload > size - fixed) {
			c->err = -EBADMSG;
			return c->err;
		}
		*blob_end = start + 4 + size;
		return 0;
	}
}

/* After an uncompressed blob: move to its end (+ V5 alignment padding). */
static void end_uncompressed(struct nt_reader *r, struct cursor *c, size_t blob_end)
{
	if (!blob_end)
		return;
	c->off = blob_end;
	if (!r->v6) {
		size_t pad = (4 - (blob_end & 3)) & 3;

		if (pad <= c->len - c->off)
			c->off += pad;
	}
}

static const char *cut_or_bad(const struct nt_reader *r, const struct cursor *c)
{
	/* an overrun of a truncated block is a cut stream, otherwise damage */
	return r->blk_len < r->blk_declared && c->err ? "stream cut inside event" :
							 "corrupt event header";
}

static int do_meta_blob(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	struct cursor *c = &r->bc;
	uint64_t boff = r->blk_off + c->off;
	struct nt_metadata *m;
	const uint8_t *p;
	size_t bytes, blob_end;
	uint32_t len;
	bool sorted;
	int err;

	if (r->v6) {
		uint16_t rsize;

		if (cur_u16(c, &rsize) || !(p = cur_take(c, rsize)))
			return fail(r, -EBADMSG, boff, "metadata row overruns its block");
		len = rsize;
		err = nt_meta_parse_v6(&r->mb, p, len, &m, &bytes);
	} else {
		if (read_header(r, c, &sorted, &blob_end))
			return fail(r, -EBADMSG, boff, "%s", cut_or_bad(r, c));
		len = r->h.payload;
		p = cur_take(c, len);
		if (!p)
			return fail(r, -EBADMSG, boff, "metadata payload overruns its block");
		end_uncompressed(r, c, blob_end);
		err = nt_meta_parse_v5(&r->mb, p, len, &m, &bytes);
	}
	if (err == -ENOMEM)
		return fail(r, err, boff, "out of memory");
	if (err == -EFBIG || err == -EMSGSIZE)
		return fail(r, -EFBIG, boff, "metadata record over the caps");
	if (err)
		return fail(r, -EBADMSG, boff, "corrupt metadata record");
	err = meta_insert(r, m, bytes, boff);
	if (err)
		return err;
	if (hd && hd->metadata)
		return hd->metadata(ctx, m);
	return 0;
}

/* Delivers the oldest held event. */
static int deliver_one(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	struct nt_event ev;
	struct held hh;
	const uint8_t *p;
	int64_t ts;
	uint32_t len;

	p = nt_order_pop(&r->ord, &ts, &len);
	if (!p || len < sizeof(hh))
		return 0;
	memcpy(&hh, p, sizeof(hh));
	ev = hh.ev;
	ev.activity_id = ev.activity_id ? p + offsetof(struct held, act) : NULL;
	ev.related_activity_id = ev.related_activity_id ? p + offsetof(struct held, rel) : NULL;
	ev.payload = p + sizeof(hh);
	ev.payload_len = len - (uint32_t)sizeof(hh);
	ev.stack = NULL;
	ev.nframes = 0;
	ev.pointer_size = r->info.pointer_size;
	/* the region's stacks are kept until a sequence point, which empties the window first */
	if (hh.stk != UINT32_MAX && hh.stk < r->nstk) {
		ev.nframes = r->stk[hh.stk].n;
		ev.stack = ev.nframes ? r->ips + r->stk[hh.stk].off : NULL;
	}
	if (r->have_last && ts < r->last_ts)
		r->st.order_late++;
	else
		r->last_ts = ts;
	r->have_last = true;
	r->st.events++;
	if (hd && hd->event)
		return hd->event(ctx, &ev);
	return 0;
}

/* Lets out every held event the stream's promises (or the caps) allow. */
static int drain(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	int64_t ts;
	int ret;

	if (r->quiet)
		return 0;
	while (nt_order_peek(&r->ord, &ts)) {
		if (!r->rel_all && ts > r->rel_upto) {
			if (!nt_order_over(&r->ord))
				return 0;
			r->st.order_forced++;
		}
		ret = deliver_one(r, hd, ctx);
		if (ret)
			return ret;
	}
	r->rel_all = false;
	return 0;
}

int nt_reader_release(struct nt_reader *r, const struct nt_handlers *h, void *ctx)
{
	int ret;

	if (r->quiet)
		return 0;
	r->rel_all = true;
	ret = drain(r, h, ctx);
	if (ret)
		r->quiet = true;
	return ret;
}

static int do_event_blob(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	struct cursor *c = &r->bc;
	uint64_t boff = r->blk_off + c->off;
	struct nt_event ev;
	struct held hh;
	const struct nt_metadata *m;
	const uint8_t *p;
	size_t blob_end;
	bool sorted;
	int err;

	if (read_header(r, c, &sorted, &blob_end))
		return fail(r, -EBADMSG, boff, "%s", cut_or_bad(r, c));
	p = cur_take(c, r->h.payload);
	if (!p)
		return fail(r, -EBADMSG, boff, "%s",
			    r->blk_len < r->blk_declared ? "stream cut inside event" :
							   "event payload overruns its block");
	end_uncompressed(r, c, blob_end);
	m = meta_find(r, r->h.meta);
	if (!m)
		return fail(r, -EBADMSG, boff, "event uses unknown metadata id %u", r->h.meta);

	memset(&ev, 0, sizeof(ev));
	memset(&hh, 0, sizeof(hh));
	hh.stk = UINT32_MAX;
	ev.meta = m;
	ev.offset = boff;
	ev.timestamp = (int64_t)r->h.ts;
	ev.seq = r->h.seq;
	ev.proc = r->h.proc;
	ev.stack_id = r->h.stack;
	ev.sorted = sorted;
	ev.payload = p;
	ev.payload_len = r->h.payload;
	ev.pointer_size = r->info.pointer_size;
	ev.activity_id = r->h.act;
	ev.related_activity_id = r->h.rel;
	if (r->h.stack) {
		uint32_t i = r->h.stack - r->stk_first;

		if (r->h.stack < r->stk_first || i >= r->nstk)
			return fail(r, -EBADMSG, boff, "event uses unknown stack id %u",
				    r->h.stack);
		ev.nframes = r->stk[i].n;
		ev.stack = ev.nframes ? r->ips + r->stk[i].off : NULL;
		hh.stk = i;
	}
	if (r->v6) {
		const struct thr *t;

		ev.thread_index = r->h.tid;
		t = thr_find(r, r->h.tid);
		ev.thread_id = t && t->has_os_tid ? t->os_tid : r->h.tid;
		t = thr_find(r, r->h.ctid);
		ev.capture_thread_id = t && t->has_os_tid ? t->os_tid : r->h.ctid;
		ev.label_list = r->h.label;
		ev.activity_id = NULL;
		ev.related_activity_id = NULL;
		if (r->h.label) {
			uint32_t i = r->h.label - r->lab_first;
			const struct label *l;

			if (r->h.label < r->lab_first || i >= r->nlab)
				return fail(r, -EBADMSG, boff, "event uses unknown label list %u",
					    r->h.label);
			l = &r->lab[i];
			if (l->has & 1)
				ev.activity_id = l->act;
			if (l->has & 2)
				ev.related_activity_id = l->rel;
		}
	} else {
		ev.thread_id = r->h.tid;
		ev.capture_thread_id = r->h.ctid;
	}
	err = seq_event(r, r->h.ctid, r->h.seq);
	if (err)
		return fail(r, err, boff, "thread table over its cap of %u", r->lim.max_threads);

	/* into the window */
	hh.ev = ev;
	if (ev.activity_id)
		memcpy(hh.act, ev.activity_id, 16);
	if (ev.related_activity_id)
		memcpy(hh.rel, ev.related_activity_id, 16);
	if (!r->quiet) {
		err = nt_order_add(&r->ord, ev.timestamp, &hh, (uint32_t)sizeof(hh), p, ev.payload_len);
		if (err)
			return fail(r, err, boff, "out of memory for the time-order window");
	}
	/* every later event has a timestamp >= this one: all up to it may go out */
	if (sorted && ev.timestamp > r->rel_upto)
		r->rel_upto = ev.timestamp;
	if (hd && hd->arrival) {
		err = hd->arrival(ctx, &ev);
		if (err)
			return err;
	}
	return drain(r, hd, ctx);
}

/*
 * Processes (the rest of) the current block. Returns 0 when the block is
 * finished, NT_STOPPED / a callback's negative value, or the sticky error.
 */
static int process_block(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	int64_t ts;
	int ret;

	if (r->blk_done)
		return 0;
	switch (r->blk_kind) {
	case BK_EVENT:
	case BK_META:
		while (cur_left(&r->bc)) {
			ret = r->blk_kind == BK_EVENT ? do_event_blob(r, hd, ctx) :
							do_meta_blob(r, hd, ctx);
			if (r->state == RS_ERROR)
				return r->err;
			if (ret)
				return ret;
		}
		r->blk_done = true;
		return 0;
	case BK_STACK:
		r->blk_done = true;
		return do_stack_block(r);
	case BK_SP:
		/* every event before the sequence point goes out first */
		r->rel_all = true;
		ret = drain(r, hd, ctx);
		if (ret)
			return ret;
		r->blk_done = true;
		ret = do_sp_block(r, &ts);
		if (!ret && hd && hd->seqpoint)
			ret = hd->seqpoint(ctx, ts);
		return ret;
	case BK_THREAD:
		r->blk_done = true;
		return do_thread_block(r);
	case BK_RMTHREAD:
		r->blk_done = true;
		return do_rmthread_block(r);
	case BK_LABEL:
		r->blk_done = true;
		return do_label_block(r);
	default:
		r->blk_done = true;
		return 0;
	}
}

static int run_blocks(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	uint8_t tag;
	ssize_t k;
	int ret;

	if (r->state == RS_NEW) {
		ret = nt_reader_open(r);
		if (ret)
			return ret;
	}
	/* what an earlier stop left in the window */
	ret = drain(r, hd, ctx);
	if (ret < 0) {
		r->quiet = true;
		return fail(r, ret, r->off, "callback aborted with %d", ret);
	}
	if (ret > 0)
		return NT_STOPPED;
	for (;;) {
		switch (r->state) {
		case RS_ERROR:
			return r->err;
		case RS_DONE:
			return 0;
		case RS_NEW:
			return -EINVAL;
		case RS_BLOCKS:
			ret = r->v6 ? next_block_v6(r) : next_block_v5(r);
			if (ret)
				return ret;
			break;
		case RS_INBLOCK:
			ret = process_block(r, hd, ctx);
			if (r->state == RS_ERROR)
				return r->err;
			if (ret < 0) {
				r->quiet = true;
				return fail(r, ret, r->blk_off + r->bc.off,
					    "callback aborted with %d", ret);
			}
			if (ret > 0)
				return NT_STOPPED;
			if (!r->blk_done)
				break;
			if (r->blk_len < r->blk_declared)
				return fail(r, -EBADMSG, r->blk_off + r->blk_len,
					    "stream cut inside a block (%zu of %zu bytes)",
					    r->blk_len, r->blk_declared);
			r->state = r->v6 ? RS_BLOCKS : RS_BLOCK_TAIL;
			break;
		case RS_BLOCK_TAIL:
			k = in_get(r, &tag, 1);
			if (k < 0)
				return fail(r, (int)k, r->off, "read error");
			if (k == 0)
				return fail(r, -EBADMSG, r->off, "stream cut after a block");
			if (tag != 6)
				return fail(r, -EBADMSG, r->off - 1, "bad block end tag %#x", tag);
			r->state = RS_BLOCKS;
			break;
		}
	}
}

int nt_reader_run(struct nt_reader *r, const struct nt_handlers *hd, void *ctx)
{
	int ret = run_blocks(r, hd, ctx);

	if (ret == NT_STOPPED || r->quiet || (r->state != RS_DONE && r->state != RS_ERROR))
		return ret;
	/* The end, or damage: nothing more can come; all that is held goes out. */
	r->rel_all = true;
	ret = drain(r, hd, ctx);
	if (ret < 0) {
		r->quiet = true;
		if (r->state == RS_ERROR)
			return r->err;
		return fail(r, ret, r->off, "callback aborted with %d", ret);
	}
	if (ret > 0)
		return NT_STOPPED;
	return r->state == RS_ERROR ? r->err : 0;
}
