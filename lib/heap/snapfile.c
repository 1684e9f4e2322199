/* SPDX-License-Identifier: MIT */
/*
 * snapfile.c - clrtap's heap snapshot file (docs/formats/gcdump.md):
 * "CLRTAPHS", u32 version, u32 flags, then sections {u32 tag, u64 length,
 * bytes} in a fixed order (META TYPE NODE EDGE ROOT STRS) and an END section
 * holding the CRC-32 of every byte before it. Numbers are LEB128 varints;
 * node addresses are deltas (ascending), edges are zigzag deltas from their
 * source node. The reader checks every count against what the section can
 * hold before allocating, every index against its table, and the CRC.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include "common/cursor.h"
#include "common/io.h"
#include "common/strparse.h"
#include "heap/heap.h"

#define MAGIC "CLRTAPHS"
/* header flags: the session had the runtime's lossless Block buffering */
#define FLAG_LOSSLESS 0x1u
#define VERSION 1
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define T_META TAG('M', 'E', 'T', 'A')
#define T_TYPE TAG('T', 'Y', 'P', 'E')
#define T_NODE TAG('N', 'O', 'D', 'E')
#define T_EDGE TAG('E', 'D', 'G', 'E')
#define T_ROOT TAG('R', 'O', 'O', 'T')
#define T_STRS TAG('S', 'T', 'R', 'S')
#define T_END TAG('E', 'N', 'D', ' ')

static int put_var(struct strbuf *sb, uint64_t v)
{
	uint8_t *b;
	size_t n = 0;

	if (sb->alloc - sb->len < 11 && strbuf_grow(sb, 64))
		return -ENOMEM;
	b = (uint8_t *)sb->buf + sb->len;
	do {
		b[n] = v & 0x7f;
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	sb->len += n;
	sb->buf[sb->len] = 0;
	return 0;
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int put_str(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);

	return put_var(sb, n) ?: strbuf_add(sb, s, n);
}

struct writer {
	int fd;
	uLong crc;
};

static int emit(struct writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t off = 0;

	while (off < n) {
		uInt chunk = (uInt)(n - off > (1u << 30) ? 1u << 30 : n - off);

		w->crc = crc32(w->crc, b + off, chunk);
		off += chunk;
	}
	return ct_write_all(w->fd, p, n);
}

static int emit_section(struct writer *w, uint32_t tag, struct strbuf *sb)
{
	uint8_t h[12];
	int err;

	ct_put_le32(h, tag);
	ct_put_le64(h + 4, sb->len);
	err = emit(w, h, sizeof(h));
	if (!err)
		err = emit(w, sb->buf, sb->len);
	strbuf_reset(sb);
	return err;
}

int heap_file_write(const struct heap_graph *g, int fd)
{
	struct strbuf sb = STRBUF_INIT;
	struct writer w = { fd, crc32(0, NULL, 0) };
	const struct heap_meta *m = &g->meta;
	const struct heap_string_stats *st = &g->strings;
	uint8_t h[16];
	uint32_t i;
	int err = 0;

	memcpy(h, MAGIC, 8);
	ct_put_le32(h + 8, VERSION);
	ct_put_le32(h + 12, m->lossless ? FLAG_LOSSLESS : 0);
	err = emit(&w, h, 16);
	/* META */
	err = err ?: put_var(&sb, m->pid) ?: put_var(&sb, (uint64_t)m->time) ?:
		put_var(&sb, m->pointer_size) ?: put_var(&sb, m->gc_count) ?: put_var(&sb, m->gc_depth) ?:
		put_var(&sb, m->gc_reason) ?: put_var(&sb, m->gc_type) ?: put_var(&sb, m->pause_ns) ?:
		put_var(&sb, m->gc_ns) ?: put_var(&sb, m->unresolved_edges) ?:
		put_var(&sb, m->weak_roots) ?: put_var(&sb, m->attempts) ?: put_str(&sb, m->process);
	err = err ?: emit_section(&w, T_META, &sb);
	/* TYPE */
	err = err ?: put_var(&sb, g->ntypes);
	for (i = 0; !err && i < g->ntypes; i++)
		err = put_var(&sb, g->types[i].id) ?: put_str(&sb, g->types[i].name);
	err = err ?: emit_section(&w, T_TYPE, &sb);
	/* NODE */
	err = err ?: put_var(&sb, g->nnodes);
	for (i = 0; !err && i < g->nnodes; i++)
		err = put_var(&sb, g->addr[i] - (i ? g->addr[i - 1] : 0)) ?: put_var(&sb, g->size[i]) ?:
			put_var(&sb, g->type[i]) ?: put_var(&sb, g->edge_start[i + 1] - g->edge_start[i]);
	err = err ?: emit_section(&w, T_NODE, &sb);
	/* EDGE */
	err = err ?: put_var(&sb, g->nedges);
	for (i = 0; !err && i < g->nnodes; i++) {
		uint32_t k;

		for (k = g->edge_start[i]; !err && k < g->edge_start[i + 1]; k++)
			err = put_var(&sb, zigzag((int64_t)g->edges[k] - (int64_t)i));
	}
	err = err ?: emit_section(&w, T_EDGE, &sb);
	/* ROOT */
	err = err ?: put_var(&sb, g->nroots);
	for (i = 0; !err && i < g->nroots; i++)
		err = put_var(&sb, g->roots[i].node) ?: strbuf_addch(&sb, g->roots[i].kind) ?:
			put_var(&sb, g->roots[i].flags);
	err = err ?: emit_section(&w, T_ROOT, &sb);
	/* STRS */
	err = err ?: strbuf_addch(&sb, st->read) ?: put_var(&sb, st->strings) ?:
		put_var(&sb, st->compared) ?: put_var(&sb, st->moved) ?: put_var(&sb, st->unreadable) ?:
		put_var(&sb, st->too_long) ?: put_var(&sb, st->dup_values) ?:
		put_var(&sb, st->dup_copies) ?: put_var(&sb, st->wasted) ?: put_var(&sb, g->ndups);
	for (i = 0; !err && i < g->ndups; i++)
		err = put_var(&sb, g->dups[i].count) ?: put_var(&sb, g->dups[i].bytes) ?:
			put_var(&sb, g->dups[i].chars) ?: strbuf_addch(&sb, g->dups[i].truncated) ?:
			put_str(&sb, g->dups[i].value);
	err = err ?: emit_section(&w, T_STRS, &sb);
	if (!err) {
		uint8_t e[16];

		ct_put_le32(e, T_END);
		ct_put_le64(e + 4, 4);
		ct_put_le32(e + 12, 0);
		w.crc = crc32(w.crc, e, 12);
		ct_put_le32(e + 12, (uint32_t)w.crc);
		err = ct_write_all(fd, e, 16);
	}
	strbuf_release(&sb);
	return err;
}

/* ----- reading ----- */

struct rd {
	const uint8_t *p;
	size_t len, off;
	const char *why;
};

/* Opens the next section, which must be tag; c covers its bytes. */
static int section(struct rd *r, uint32_t tag, struct cursor *c, const char *name)
{
	uint64_t len;

	if (r->len - r->off < 12) {
		r->why = name;
		return -EBADMSG;
	}
	if (ct_le32(r->p + r->off) != tag) {
		r->why = name;
		return -EBADMSG;
	}
	len = ct_le64(r->p + r->off + 4);
	if (len > r->len - r->off - 12) {
		r->why = name;
		return -EBADMSG;
	}
	cur_init(c, r->p + r->off + 12, (size_t)len);
	r->off += 12 + (size_t)len;
	return 0;
}

static int get_var(struct cursor *c, uint64_t *v)
{
	return cur_varu64(c, v, 10);
}

static int get_u32v(struct cursor *c, uint32_t *v)
{
	return cur_varu32(c, v);
}

static int get_str(struct cursor *c, size_t max, char **out)
{
	uint64_t n;
	const uint8_t *p;
	char *s;

	*out = NULL;
	if (get_var(c, &n))
		return -EBADMSG;
	if (n > max || n > cur_left(c))
		return -EBADMSG;
	p = cur_take(c, (size_t)n);
	if (!p)
		return -EBADMSG;
	s = malloc((size_t)n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, p, (size_t)n);
	s[n] = 0;
	*out = s;
	return 0;
}

static int parse(struct rd *r, struct heap_graph *g)
{
	struct cursor c;
	uint64_t v, t64, a = 0;
	uint32_t i, n32;
	char *s;
	int err;

	/* META */
	if (section(r, T_META, &c, "the META section is missing or cut"))
		return -EBADMSG;
	r->why = "the META section is damaged";
	{
		struct heap_meta *m = &g->meta;
		uint64_t f[12];

		for (i = 0; i < 12; i++)
			if (get_var(&c, &f[i]))
				return -EBADMSG;
		m->pid = (uint32_t)f[0];
		m->time = (int64_t)f[1];
		m->pointer_size = (uint32_t)f[2];
		m->gc_count = (uint32_t)f[3];
		m->gc_depth = (uint32_t)f[4];
		m->gc_reason = (uint32_t)f[5];
		m->gc_type = (uint32_t)f[6];
		m->pause_ns = f[7];
		m->gc_ns = f[8];
		m->unresolved_edges = f[9];
		m->weak_roots = f[10];
		m->attempts = (uint32_t)f[11];
		if ((err = get_str(&c, sizeof(m->process) - 1, &s)))
			return err;
		memcpy(m->process, s, strlen(s) + 1);
		free(s);
	}
	/* TYPE */
	if (section(r, T_TYPE, &c, "the TYPE section is missing or cut"))
		return -EBADMSG;
	r->why = "the TYPE section is damaged";
	if (get_u32v(&c, &n32) || n32 > HEAP_MAX_TYPES + 1 || n32 > cur_left(&c) / 2)
		return -EBADMSG;
	g->types = calloc(n32 ? n32 : 1, sizeof(*g->types));
	if (!g->types)
		return -ENOMEM;
	for (i = 0; i < n32; i++) {
		if (get_var(&c, &g->types[i].id))
			return -EBADMSG;
		if ((err = get_str(&c, HEAP_TYPE_NAME_MAX, &g->types[i].name)))
			return err;
		g->ntypes = i + 1;
	}
	/* NODE */
	if (section(r, T_NODE, &c, "the NODE section is missing or cut"))
		return -EBADMSG;
	r->why = "the NODE section is damaged";
	if (get_u32v(&c, &n32) || n32 > HEAP_MAX_NODES || n32 > cur_left(&c) / 4)
		return -EBADMSG;
	g->nnodes = n32;
	g->addr = malloc(((size_t)n32 + 1) * sizeof(*g->addr));
	g->size = malloc(((size_t)n32 + 1) * sizeof(*g->size));
	g->type = malloc(((size_t)n32 + 1) * sizeof(*g->type));
	g->edge_start = malloc(((size_t)n32 + 1) * sizeof(*g->edge_start));
	if (!g->addr || !g->size || !g->type || !g->edge_start)
		return -ENOMEM;
	g->edge_start[0] = 0;
	for (i = 0; i < n32; i++) {
		uint32_t ty, ne;

		if (get_var(&c, &v) || get_var(&c, &g->size[i]) || get_u32v(&c, &ty) ||
		    get_u32v(&c, &ne))
			return -EBADMSG;
		if (v > UINT64_MAX - a || ty >= g->ntypes ||
		    (uint64_t)g->edge_start[i] + ne > HEAP_MAX_EDGES)
			return -EBADMSG;
		a += v;
		g->addr[i] = a;
		g->type[i] = ty;
		g->edge_start[i + 1] = g->edge_start[i] + ne;
	}
	if (cur_left(&c))
		return -EBADMSG;
	/* EDGE */
	if (section(r, T_EDGE, &c, "the EDGE section is missing or cut"))
		return -EBADMSG;
	r->why = "the EDGE section is damaged";
	if (get_u32v(&c, &n32) || n32 != g->edge_start[g->nnodes] || n32 > cur_left(&c))
		return -EBADMSG;
	g->nedges = n32;
	g->edges = malloc(((size_t)n32 + 1) * sizeof(*g->edges));
	if (!g->edges)
		return -ENOMEM;
	for (i = 0; i < g->nnodes; i++) {
		uint32_t k;

		for (k = g->edge_start[i]; k < g->edge_start[i + 1]; k++) {
			int64_t t;

			if (get_var(&c, &t64))
				return -EBADMSG;
			t = (int64_t)i + unzigzag(t64);
			if (t < 0 || t >= (int64_t)g->nnodes)
				return -EBADMSG;
			g->edges[k] = (uint32_t)t;
		}
	}
	if (cur_left(&c))
		return -EBADMSG;
	/* ROOT */
	if (section(r, T_ROOT, &c, "the ROOT section is missing or cut"))
		return -EBADMSG;
	r->why = "the ROOT section is damaged";
	if (get_u32v(&c, &n32) || n32 > HEAP_MAX_ROOTS || n32 > cur_left(&c) / 3)
		return -EBADMSG;
	g->roots = malloc(((size_t)n32 + 1) * sizeof(*g->roots));
	if (!g->roots)
		return -ENOMEM;
	for (i = 0; i < n32; i++) {
		struct heap_root *rt = &g->roots[i];

		if (get_u32v(&c, &rt->node) || cur_u8(&c, &rt->kind) || get_u32v(&c, &rt->flags) ||
		    rt->node >= g->nnodes || rt->kind >= HEAP_ROOT_KINDS)
			return -EBADMSG;
		g->nroots = i + 1;
	}
	/* STRS */
	if (section(r, T_STRS, &c, "the STRS section is missing or cut"))
		return -EBADMSG;
	r->why = "the STRS section is damaged";
	{
		struct heap_string_stats *st = &g->strings;
		uint8_t rd;

		if (cur_u8(&c, &rd) || get_var(&c, &st->strings) || get_var(&c, &st->compared) ||
		    get_var(&c, &st->moved) || get_var(&c, &st->unreadable) ||
		    get_var(&c, &st->too_long) || get_var(&c, &st->dup_values) ||
		    get_var(&c, &st->dup_copies) || get_var(&c, &st->wasted) || get_u32v(&c, &n32) ||
		    n32 > HEAP_DUP_KEEP)
			return -EBADMSG;
		st->read = rd != 0;
		st->how = st->read ? "process_vm_readv right after the snapshot GC" : NULL;
		g->dups = calloc(n32 ? n32 : 1, sizeof(*g->dups));
		if (!g->dups)
			return -ENOMEM;
		for (i = 0; i < n32; i++) {
			struct heap_dupstr *d = &g->dups[i];
			uint8_t tr;

			if (get_var(&c, &d->count) || get_var(&c, &d->bytes) || get_u32v(&c, &d->chars) ||
			    cur_u8(&c, &tr))
				return -EBADMSG;
			if ((err = get_str(&c, HEAP_STRING_VALUE_MAX, &d->value)))
				return err;
			d->truncated = tr != 0;
			d->wasted = d->count ? d->bytes - d->bytes / d->count : 0;
			g->ndups = i + 1;
		}
	}
	/* END */
	if (section(r, T_END, &c, "the END section is missing (the file is cut short)"))
		return -EBADMSG;
	r->why = "the END section is damaged";
	if (cur_left(&c) != 4)
		return -EBADMSG;
	{
		uLong crc = crc32(0, NULL, 0);
		size_t body = r->off - 4, off = 0;

		while (off < body) {
			uInt chunk = (uInt)(body - off > (1u << 30) ? 1u << 30 : body - off);

			crc = crc32(crc, r->p + off, chunk);
			off += chunk;
		}
		if ((uint32_t)crc != ct_le32(r->p + body)) {
			r->why = "the checksum does not match (the file was changed or damaged)";
			return -EBADMSG;
		}
	}
	if (r->off != r->len) {
		r->why = "bytes follow the END section";
		return -EBADMSG;
	}
	return 0;
}

int heap_file_parse(const uint8_t *p, size_t len, struct heap_graph **out, const char **why)
{
	struct rd r = { p, len, 16, NULL };
	struct heap_graph *g;
	int err;

	*out = NULL;
	*why = NULL;
	if (len < 16 || memcmp(p, MAGIC, 8)) {
		*why = "not a clrtap heap snapshot (bad magic)";
		return -EBADMSG;
	}
	if (ct_le32(p + 8) != VERSION) {
		*why = "a snapshot version this clrtap does not read";
		return -ENOTSUP;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	err = parse(&r, g);
	g->meta.lossless = (ct_le32(p + 12) & FLAG_LOSSLESS) != 0;
	if (err) {
		*why = r.why ? r.why : "damaged";
		heap_graph_free(g);
		return err;
	}
	*out = g;
	return 0;
}

int heap_file_read(const char *path, struct heap_graph **out, const char **why)
{
	struct strbuf sb = STRBUF_INIT_MAX(HEAP_FILE_MAX);
	int err;

	*out = NULL;
	*why = NULL;
	err = strbuf_read_file(&sb, path);
	if (err) {
		*why = err == -EFBIG ? "the file is larger than the cap" : NULL;
		strbuf_release(&sb);
		return err;
	}
	err = heap_file_parse((const uint8_t *)sb.buf, sb.len, out, why);
	strbuf_release(&sb);
	return err;
}
