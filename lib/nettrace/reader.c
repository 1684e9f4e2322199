/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the nettrace stream reader: input, the trace header, framing
 * (V5 FastSerialization objects and V6 blocks), the metadata table, event
 * headers and blobs, and delivery through the time-order window. The
 * region tables (stacks, labels, threads, sequence points, drops) are in
 * regions.c.
 */
#include "common/compat.h"

#include <time.h>

#include "common/log.h"
#include "common/strparse.h"
#include "nettrace/reader_int.h"

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
int nt_rd_fail(struct nt_reader *r, int err, uint64_t off, const char *fmt, ...)
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
		return nt_rd_fail(r, (int)k, start, "read error in %s", what);
	if ((size_t)k < n)
		return nt_rd_fail(r, -EBADMSG, start, "truncated %s: %zu of %zu bytes", what, (size_t)k,
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
				return nt_rd_fail(r, -ENOMEM, r->blk_hdr_off, "out of memory for block");
			r->blk = nb;
			r->blk_cap = want;
		}
		chunk = CT_MIN(r->blk_cap, size) - got;
		k = in_get(r, r->blk + got, chunk);
		if (k < 0)
			return nt_rd_fail(r, (int)k, r->off, "read error in block");
		got += (size_t)k;
		if ((size_t)k < chunk)
			break;
	}
	r->blk_len = got;
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
		return nt_rd_fail(r, -EBADMSG, off, "metadata record with id 0");
	}
	if (meta_find(r, m->id)) {
		uint32_t id = m->id;

		free(m);
		return nt_rd_fail(r, -EBADMSG, off, "metadata id %u defined twice", id);
	}
	if (r->mcount >= r->lim.max_metadata || bytes > r->lim.max_metadata_bytes - r->mbytes) {
		free(m);
		return nt_rd_fail(r, -EFBIG, off, "metadata table over its cap (%u records, %zu bytes)",
			    r->mcount, r->mbytes);
	}
	if (r->nall == r->allcap) {
		size_t ncap = r->allcap ? r->allcap * 2 : 64;
		struct nt_metadata **na = realloc(r->all, ncap * sizeof(*na));

		if (!na) {
			free(m);
			return nt_rd_fail(r, -ENOMEM, off, "out of memory");
		}
		r->all = na;
		r->allcap = ncap;
	}
	err = ct_itab_reserve(&r->mtab, meta_hash, r);
	if (err) {
		free(m);
		return nt_rd_fail(r, err, off, "out of memory");
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
void nt_rd_meta_flush(struct nt_reader *r)
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
		return nt_rd_fail(r, -EBADMSG, 12, "not a FastSerialization stream");
	obj = r->off;
	/* BeginPrivateObject, BeginPrivateObject, NullReference, version, minver, name length */
	if (in_exact(r, b, 15, "trace object"))
		return r->err;
	if (b[0] != 5 || b[1] != 5 || b[2] != 1)
		return nt_rd_fail(r, -EBADMSG, obj, "bad trace object tags %02x %02x %02x", b[0], b[1],
			    b[2]);
	ver = (int32_t)ct_le32(b + 3);
	minver = (int32_t)ct_le32(b + 7);
	nlen = ct_le32(b + 11);
	if (nlen != 5)
		return nt_rd_fail(r, -EBADMSG, obj, "bad trace object type name length %u", nlen);
	/* "Trace", EndObject, 48 bytes of fields, EndObject */
	if (in_exact(r, b, 5 + 1 + 48 + 1, "trace object"))
		return r->err;
	if (memcmp(b, "Trace", 5) || b[5] != 6 || b[54] != 6)
		return nt_rd_fail(r, -EBADMSG, obj, "bad trace object");
	if (ver < 4)
		return nt_rd_fail(r, -ENOTSUP, obj, "NetPerf (trace version %d) is not supported", ver);
	if (minver > 5)
		return nt_rd_fail(r, -ENOTSUP, obj, "trace needs a reader of version %d", minver);
	parse_systemtime(b + 6, r->info.sync_utc);
	r->info.sync_qpc = (int64_t)ct_le64(b + 22);
	r->info.qpc_freq = (int64_t)ct_le64(b + 30);
	r->info.pointer_size = ct_le32(b + 38);
	r->info.pid = ct_le32(b + 42);
	r->info.ncpu = ct_le32(b + 46);
	r->info.sampling_ns = ct_le32(b + 50);
	r->info.format = 5;
	if (!ptr_size_ok(r->info.pointer_size))
		return nt_rd_fail(r, -EBADMSG, obj, "bad pointer size %u", r->info.pointer_size);
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
		return nt_rd_fail(r, -EBADMSG, off, "short trace block");
	parse_systemtime(st, r->info.sync_utc);
	cur_u64(&c, &v);
	r->info.sync_qpc = (int64_t)v;
	cur_u64(&c, &v);
	r->info.qpc_freq = (int64_t)v;
	cur_u32(&c, &ps);
	cur_u32(&c, &kvs);
	if (c.err)
		return nt_rd_fail(r, -EBADMSG, off, "short trace block");
	if (!ptr_size_ok(ps))
		return nt_rd_fail(r, -EBADMSG, off, "bad pointer size %u", ps);
	r->info.pointer_size = ps;
	for (i = 0; i < kvs; i++) {
		uint32_t kl, vl;
		const uint8_t *k, *val;

		if (cur_varu32(&c, &kl) || !(k = cur_take(&c, kl)) || cur_varu32(&c, &vl) ||
		    !(val = cur_take(&c, vl)))
			return nt_rd_fail(r, -EBADMSG, off, "bad trace block key/value %u", i);
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
		return nt_rd_fail(r, -EBADMSG, 12, "bad NetTrace major version %u", major);
	if (major > 6)
		return nt_rd_fail(r, -ENOTSUP, 12, "NetTrace major version %u is not supported", major);
	r->v6 = true;
	hoff = r->off;
	if (in_exact(r, b, 4, "trace block header"))
		return r->err;
	hdr = ct_le32(b);
	size = hdr & 0xffffff;
	if (hdr >> 24 != 1)
		return nt_rd_fail(r, -EBADMSG, hoff, "first block is kind %u, not Trace", hdr >> 24);
	if (size > r->lim.max_block)
		return nt_rd_fail(r, -EFBIG, hoff, "trace block of %u bytes over the cap", size);
	r->blk_hdr_off = hoff;
	if (load_block(r, size))
		return r->err;
	if (r->blk_len < size)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "truncated trace block");
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
		return nt_rd_fail(r, -EBADMSG, 0, "no Nettrace magic");
	x = ct_le32(b + 8);
	if (x == 20)
		err = open_v5(r);
	else if (x == 0)
		err = open_v6(r);
	else
		err = nt_rd_fail(r, -EBADMSG, 8, "unknown stream header (%u)", x);
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
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "%s block header",
			    r->blk_len < r->blk_declared ? "truncated" : "short");
	if (hsize < 20 || hsize > r->blk_declared)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "bad block header size %u", hsize);
	if (hsize > r->blk_len)
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "truncated block header");
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
		return nt_rd_fail(r, -EBADMSG, r->blk_off, "bad metadata block header");
	return 0;
}

static int begin_block(struct nt_reader *r)
{
	r->blk_done = false;
	r->st.blocks++;
	if (r->blk_len < r->blk_declared && r->blk_kind != BK_EVENT)
		return nt_rd_fail(r, -EBADMSG, r->blk_off + r->blk_len,
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
		return nt_rd_fail(r, (int)k, r->off, "read error");
	if (k == 0)
		return nt_rd_fail(r, -EBADMSG, r->off, "stream ends without the end-of-stream tag");
	if (b[0] == 1) {
		r->state = RS_DONE;
		return 0;
	}
	if (b[0] != 5)
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "bad object tag %#x", b[0]);
	if (in_exact(r, b + 1, 14, "block header"))
		return r->err;
	if (b[1] != 5 || b[2] != 1)
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "bad block type tags");
	minver = (int32_t)ct_le32(b + 7);
	nlen = ct_le32(b + 11);
	if (nlen == 0 || nlen > sizeof(name))
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "bad block type name length %u", nlen);
	if (in_exact(r, name, nlen, "block header") || in_exact(r, b, 5, "block header"))
		return r->err;
	if (b[0] != 6)
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "bad block type end tag");
	size = (int32_t)ct_le32(b + 1);
	r->blk_kind = v5_kind(name, nlen);
	if (r->blk_kind != BK_UNKNOWN && minver > 2)
		return nt_rd_fail(r, -ENOTSUP, r->blk_hdr_off, "block needs a reader of version %d",
			    minver);
	if (size < 0)
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "negative block size %d", size);
	if ((size_t)size > r->lim.max_block)
		return nt_rd_fail(r, -EFBIG, r->blk_hdr_off, "block of %d bytes over the cap of %zu",
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
		return nt_rd_fail(r, (int)k, r->off, "read error");
	if (k == 0)
		return nt_rd_fail(r, -EBADMSG, r->off, "stream ends without an EndOfStream block");
	if (k < 4)
		return nt_rd_fail(r, -EBADMSG, r->blk_hdr_off, "truncated block header");
	hdr = ct_le32(b);
	size = hdr & 0xffffff;
	kind = hdr >> 24;
	if (size > r->lim.max_block)
		return nt_rd_fail(r, -EFBIG, r->blk_hdr_off, "block of %u bytes over the cap of %zu",
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
			return nt_rd_fail(r, -EBADMSG, boff, "metadata row overruns its block");
		len = rsize;
		err = nt_meta_parse_v6(&r->mb, p, len, &m, &bytes);
	} else {
		if (read_header(r, c, &sorted, &blob_end))
			return nt_rd_fail(r, -EBADMSG, boff, "%s", cut_or_bad(r, c));
		len = r->h.payload;
		p = cur_take(c, len);
		if (!p)
			return nt_rd_fail(r, -EBADMSG, boff, "metadata payload overruns its block");
		end_uncompressed(r, c, blob_end);
		err = nt_meta_parse_v5(&r->mb, p, len, &m, &bytes);
	}
	if (err == -ENOMEM)
		return nt_rd_fail(r, err, boff, "out of memory");
	if (err == -EFBIG || err == -EMSGSIZE)
		return nt_rd_fail(r, -EFBIG, boff, "metadata record over the caps");
	if (err)
		return nt_rd_fail(r, -EBADMSG, boff, "corrupt metadata record");
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
		return nt_rd_fail(r, -EBADMSG, boff, "%s", cut_or_bad(r, c));
	p = cur_take(c, r->h.payload);
	if (!p)
		return nt_rd_fail(r, -EBADMSG, boff, "%s",
			    r->blk_len < r->blk_declared ? "stream cut inside event" :
							   "event payload overruns its block");
	end_uncompressed(r, c, blob_end);
	m = meta_find(r, r->h.meta);
	if (!m)
		return nt_rd_fail(r, -EBADMSG, boff, "event uses unknown metadata id %u", r->h.meta);

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
			return nt_rd_fail(r, -EBADMSG, boff, "event uses unknown stack id %u",
				    r->h.stack);
		ev.nframes = r->stk[i].n;
		ev.stack = ev.nframes ? r->ips + r->stk[i].off : NULL;
		hh.stk = i;
	}
	if (r->v6) {
		const struct thr *t;

		ev.thread_index = r->h.tid;
		t = nt_rd_thr_find(r, r->h.tid);
		ev.thread_id = t && t->has_os_tid ? t->os_tid : r->h.tid;
		t = nt_rd_thr_find(r, r->h.ctid);
		ev.capture_thread_id = t && t->has_os_tid ? t->os_tid : r->h.ctid;
		ev.label_list = r->h.label;
		ev.activity_id = NULL;
		ev.related_activity_id = NULL;
		if (r->h.label) {
			uint32_t i = r->h.label - r->lab_first;
			const struct label *l;

			if (r->h.label < r->lab_first || i >= r->nlab)
				return nt_rd_fail(r, -EBADMSG, boff, "event uses unknown label list %u",
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
	err = nt_rd_seq_event(r, r->h.ctid, r->h.seq);
	if (err)
		return nt_rd_fail(r, err, boff, "thread table over its cap of %u", r->lim.max_threads);

	/* into the window */
	hh.ev = ev;
	if (ev.activity_id)
		memcpy(hh.act, ev.activity_id, 16);
	if (ev.related_activity_id)
		memcpy(hh.rel, ev.related_activity_id, 16);
	if (!r->quiet) {
		err = nt_order_add(&r->ord, ev.timestamp, &hh, (uint32_t)sizeof(hh), p, ev.payload_len);
		if (err)
			return nt_rd_fail(r, err, boff, "out of memory for the time-order window");
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
		return nt_rd_stack_block(r);
	case BK_SP:
		/* every event before the sequence point goes out first */
		r->rel_all = true;
		ret = drain(r, hd, ctx);
		if (ret)
			return ret;
		r->blk_done = true;
		ret = nt_rd_sp_block(r, &ts);
		if (!ret && hd && hd->seqpoint)
			ret = hd->seqpoint(ctx, ts);
		return ret;
	case BK_THREAD:
		r->blk_done = true;
		return nt_rd_thread_block(r);
	case BK_RMTHREAD:
		r->blk_done = true;
		return nt_rd_rmthread_block(r);
	case BK_LABEL:
		r->blk_done = true;
		return nt_rd_label_block(r);
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
		return nt_rd_fail(r, ret, r->off, "callback aborted with %d", ret);
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
				return nt_rd_fail(r, ret, r->blk_off + r->bc.off,
					    "callback aborted with %d", ret);
			}
			if (ret > 0)
				return NT_STOPPED;
			if (!r->blk_done)
				break;
			if (r->blk_len < r->blk_declared)
				return nt_rd_fail(r, -EBADMSG, r->blk_off + r->blk_len,
					    "stream cut inside a block (%zu of %zu bytes)",
					    r->blk_len, r->blk_declared);
			r->state = r->v6 ? RS_BLOCKS : RS_BLOCK_TAIL;
			break;
		case RS_BLOCK_TAIL:
			k = in_get(r, &tag, 1);
			if (k < 0)
				return nt_rd_fail(r, (int)k, r->off, "read error");
			if (k == 0)
				return nt_rd_fail(r, -EBADMSG, r->off, "stream cut after a block");
			if (tag != 6)
				return nt_rd_fail(r, -EBADMSG, r->off - 1, "bad block end tag %#x", tag);
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
		return nt_rd_fail(r, ret, r->off, "callback aborted with %d", ret);
	}
	if (ret > 0)
		return NT_STOPPED;
	return r->state == RS_ERROR ? r->err : 0;
}

int64_t nt_sync_unix_ns(const struct nt_trace_info *ti)
{
	const uint16_t *u = ti->sync_utc;
	struct tm tm = { 0 };
	time_t t;

	if (!u[0])
		return 0;
	tm.tm_year = u[0] - 1900;
	tm.tm_mon = u[1] - 1;
	tm.tm_mday = u[3];
	tm.tm_hour = u[4];
	tm.tm_min = u[5];
	tm.tm_sec = u[6];
	t = timegm(&tm);
	if (t <= 0 || t > (time_t)1 << 33) /* a damaged header: no time rather than an overflow */
		return 0;
	return (int64_t)t * 1000000000 + (int64_t)u[7] * 1000000;
}
