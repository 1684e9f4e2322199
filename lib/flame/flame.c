/* SPDX-License-Identifier: MIT */
/*
 * flame.c - stack aggregation: a trie of call-path prefixes with interned
 * frame names, the sorted view the writers walk, per-name totals
 * (flame_top) and the format dispatch.
 *
 * Cost per frame of a known stack: a name lookup (usually a pointer-keyed
 * cache hit checked with strcmp) and one probe of the (parent, name) -> child
 * index (common/hashtab.h), or none when the previous stack had the same node
 * at that depth; only the leaf node is written. Memory is proportional to
 * the distinct stack prefixes.
 */
#include "common/compat.h"

#include "common/log.h"
#include "flame/flame_int.h"

#define ARENA_BLOCK ((size_t)64 << 10)
#define MAX_NAME_BYTES ((size_t)256 << 20)

static const char unknown_name[] = "[unknown]";
static const char truncated_name[] = "[truncated]";

static uint32_t name_hash(const char *s, size_t len)
{
	uint64_t h = ct_hash_bytes(CT_HASH_SEED, s, len);

	return (uint32_t)(h ^ (h >> 32));
}

static uint64_t name_hash_idx(const void *ctx, uint32_t idx)
{
	return ((const struct flame *)ctx)->names[idx].hash;
}

struct name_key {
	const char *s;
	size_t len;
};

static bool name_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct flame_name *nm = &((const struct flame *)ctx)->names[idx];
	const struct name_key *k = key;

	return nm->len == k->len && memcmp(nm->s, k->s, k->len) == 0;
}

/* The child table: nodes by (parent, name). */
static uint64_t kid_hash(uint32_t parent, uint32_t name)
{
	return ct_hash_u64((uint64_t)parent << 32 | name);
}

static uint64_t kid_hash_idx(const void *ctx, uint32_t idx)
{
	const struct flame_node *n = &((const struct flame *)ctx)->nodes[idx];

	return kid_hash(n->parent, n->name);
}

static bool kid_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct flame_node *n = &((const struct flame *)ctx)->nodes[idx];
	const uint32_t *k = key; /* parent, name */

	return n->parent == k[0] && n->name == k[1];
}

int flame_new(struct flame **out)
{
	struct flame *f;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->max_nodes = FLAME_DEFAULT_MAX_NODES;
	f->anodes = 1024;
	f->nodes = calloc(f->anodes, sizeof(*f->nodes));
	if (!f->nodes) {
		flame_free(f);
		return -ENOMEM;
	}
	f->nnodes = 1; /* the root */
	*out = f;
	return 0;
}

void flame_free(struct flame *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nblocks; i++)
		free(f->blocks[i]);
	free(f->blocks);
	free(f->nodes);
	ct_itab_release(&f->kids);
	free(f->names);
	ct_itab_release(&f->ntab);
	free(f);
}

void flame_set_max_nodes(struct flame *f, size_t max_nodes)
{
	f->max_nodes = CT_MIN(CT_MAX(max_nodes, (size_t)16), (size_t)1 << 31);
}

size_t flame_node_count(const struct flame *f)
{
	return f->nnodes - 1;
}

uint64_t flame_total(const struct flame *f)
{
	return f ? f->total : 0;
}

static uint32_t kid_find(const struct flame *f, uint32_t parent, uint32_t name)
{
	const uint32_t key[2] = { parent, name };
	uint32_t id = ct_itab_get(&f->kids, kid_hash(parent, name), kid_eq, f, key);

	return id == UINT32_MAX ? 0 : id;
}

/* Makes room for `need` more nodes: node array and a child table kept at most half full. */
static int reserve_nodes(struct flame *f, size_t need)
{
	size_t want = f->nnodes + need;

	if (want > f->anodes) {
		size_t na = f->anodes;
		struct flame_node *nn;

		while (na < want)
			na *= 2;
		nn = realloc(f->nodes, na * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		f->nodes = nn;
		f->anodes = na;
	}
	return ct_itab_reserve_n(&f->kids, (uint32_t)need, kid_hash_idx, f);
}

static int intern(struct flame *f, const char *s, size_t len, uint32_t h, uint32_t *out)
{
	struct name_key key = { s, len };
	uint32_t *slot;
	char *p;
	int err;

	err = ct_itab_reserve(&f->ntab, name_hash_idx, f);
	if (err)
		return err;
	slot = ct_itab_slot(&f->ntab, h, name_eq, f, &key);
	if (*slot) {
		*out = *slot - 1;
		return 0;
	}
	if (f->name_bytes + len + 1 > MAX_NAME_BYTES)
		return -E2BIG;
	if (f->nnames == f->anames) {
		size_t na = f->anames ? f->anames * 2 : 256;
		struct flame_name *nn = realloc(f->names, na * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		f->names = nn;
		f->anames = na;
	}
	if (f->arena_left < len + 1) {
		if (f->nblocks == f->ablocks) {
			size_t na = f->ablocks ? f->ablocks * 2 : 16;
			char **nb = realloc(f->blocks, na * sizeof(*nb));

			if (!nb)
				return -ENOMEM;
			f->blocks = nb;
			f->ablocks = na;
		}
		p = malloc(ARENA_BLOCK);
		if (!p)
			return -ENOMEM;
		f->blocks[f->nblocks++] = p;
		f->arena = p;
		f->arena_left = ARENA_BLOCK;
	}
	p = f->arena;
	memcpy(p, s, len);
	p[len] = '\0';
	f->arena += len + 1;
	f->arena_left -= len + 1;
	f->name_bytes += len + 1;
	f->names[f->nnames].s = p;
	f->names[f->nnames].len = (uint32_t)len;
	f->names[f->nnames].hash = h;
	*slot = ct_itab_add(&f->ntab, (uint32_t)f->nnames);
	*out = (uint32_t)f->nnames++;
	return 0;
}

/*
 * Finds an interned name without adding it. Callers usually pass the same
 * pointers (their own symbol strings) again and again, so a small cache keyed
 * by the pointer, verified with strcmp (the pointer may have been freed and
 * reused for another string), skips measuring and hashing the name.
 */
static bool name_lookup(struct flame *f, const char *s, uint32_t *out)
{
	uintptr_t p = (uintptr_t)s;
	struct flame_pcache *pc = &f->pcache[(p ^ p >> 12 ^ p >> 24) & (FLAME_PCACHE - 1)];
	size_t len;
	uint32_t id;

	if (pc->p == s && strcmp(pc->s, s) == 0) {
		*out = pc->name;
		return true;
	}
	len = strnlen(s, FLAME_MAX_NAME);
	id = ct_itab_get(&f->ntab, name_hash(s, len), name_eq, f, &(struct name_key){ s, len });
	if (id == UINT32_MAX)
		return false;
	if (len < FLAME_MAX_NAME) {
		pc->p = s;
		pc->s = f->names[id].s;
		pc->name = id;
	}
	*out = id;
	return true;
}

/* The i-th frame actually stored for a stack (after truncation). */
static const char *frame_at(const char *const *frames, size_t skip, bool trunc, size_t i)
{
	const char *s;

	if (trunc) {
		if (i == 0)
			return truncated_name;
		i--;
	}
	s = frames[skip + i];
	return s && *s ? s : unknown_name;
}

int flame_add(struct flame *f, const char *const *frames, size_t nframes, uint64_t weight)
{
	uint32_t path[FLAME_MAX_DEPTH];
	size_t depth = 0, n = nframes, skip = 0;
	bool trunc = false;
	uint32_t cur = 0;
	int err;

	if (!f || (nframes && !frames))
		return -EINVAL;
	if (weight == 0)
		return 0;
	if (f->total + weight < f->total)
		return -EOVERFLOW;
	if (nframes == 0) {
		/* recorded as one "[unknown]" frame: frame_at maps NULL to it */
		static const char *const none[1] = { NULL };

		frames = none;
		n = 1;
	}
	if (nframes > FLAME_MAX_DEPTH) {
		trunc = true;
		skip = nframes - (FLAME_MAX_DEPTH - 1);
		n = FLAME_MAX_DEPTH;
	}
	/*
	 * Walk the known prefix. Consecutive samples usually share most of
	 * their frames, so the previous stack's node at the same depth is
	 * tried before the child table.
	 */
	for (; depth < n; depth++) {
		const char *s = frame_at(frames, skip, trunc, depth);
		uint32_t id = depth < f->nhint ? f->hint[depth] : 0, nm;

		if (!name_lookup(f, s, &nm))
			break;
		if (!id || f->nodes[id].parent != cur || f->nodes[id].name != nm)
			id = kid_find(f, cur, nm);
		if (!id)
			break;
		path[depth] = id;
		cur = id;
	}
	if (depth < n) {
		size_t need = n - depth;

		if (f->nnodes - 1 + need > f->max_nodes)
			return -E2BIG;
		err = reserve_nodes(f, need);
		if (err)
			return err;
		for (; depth < n; depth++) {
			const char *s = frame_at(frames, skip, trunc, depth);
			size_t len = strnlen(s, FLAME_MAX_NAME);
			uint32_t nm, id;
			struct flame_node *node;

			/* A failure here leaves zero-weight nodes, which the writers skip. */
			err = intern(f, s, len, name_hash(s, len), &nm);
			if (err)
				return err;
			id = (uint32_t)f->nnodes++;
			node = &f->nodes[id];
			memset(node, 0, sizeof(*node));
			node->name = nm;
			node->parent = cur;
			*ct_itab_slot(&f->kids, kid_hash(cur, nm), kid_eq, f,
				      (const uint32_t[2]){ cur, nm }) = ct_itab_add(&f->kids, id);
			path[depth] = id;
			cur = id;
		}
	}
	memcpy(f->hint, path, n * sizeof(*path));
	f->nhint = n;
	f->nodes[cur].self += weight;
	f->nodes[cur].hits++;
	f->total += weight;
	f->adds++;
	if (trunc)
		f->truncated++;
	return 0;
}

/* ---- the sorted view ---- */

static int cmp_name_idx(const void *a, const void *b, void *arg)
{
	const struct flame *f = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return strcmp(f->names[x].s, f->names[y].s);
}

struct kid_sort_ctx {
	const struct flame *f;
	const uint32_t *rank;
};

static int cmp_kid(const void *a, const void *b, void *arg)
{
	const struct kid_sort_ctx *c = arg;
	uint32_t x = c->rank[c->f->nodes[*(const uint32_t *)a].name];
	uint32_t y = c->rank[c->f->nodes[*(const uint32_t *)b].name];

	return x < y ? -1 : x > y;
}

void flame_view_free(struct flame_view *v)
{
	free(v->kid);
	free(v->kstart);
	free(v->total);
	free(v->rank);
	free(v->byrank);
	free(v->nself);
	free(v->ntotal);
	memset(v, 0, sizeof(*v));
}

/* Per-name totals (outermost occurrence on a path only) and max depth. */
static void view_totals(struct flame_view *v, uint32_t *onpath)
{
	const struct flame *f = v->f;
	struct flame_walk w;
	uint32_t c;
	int ev;

	flame_walk_init(&w, v);
	while ((ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		const struct flame_node *cn = &f->nodes[c];

		if (ev == FLAME_WALK_LEAVE) {
			if (c != 0)
				onpath[cn->name]--;
			continue;
		}
		if (onpath[cn->name]++ == 0)
			v->ntotal[cn->name] += v->total[c];
		v->nself[cn->name] += cn->self;
		if ((uint32_t)w.sp > v->maxdepth)
			v->maxdepth = (uint32_t)w.sp;
	}
}

int flame_view_build(const struct flame *f, struct flame_view *v)
{
	struct kid_sort_ctx ctx;
	uint32_t *onpath = NULL, *fill = NULL;
	bool *used = NULL;
	size_t i, nn = f->nnodes;
	int err = -ENOMEM;

	memset(v, 0, sizeof(*v));
	v->f = f;
	v->kid = malloc((nn + 1) * sizeof(*v->kid));
	v->kstart = calloc(nn + 1, sizeof(*v->kstart));
	v->total = calloc(nn + 1, sizeof(*v->total));
	v->rank = calloc(f->nnames + 1, sizeof(*v->rank));
	v->byrank = calloc(f->nnames + 1, sizeof(*v->byrank));
	v->nself = calloc(f->nnames + 1, sizeof(*v->nself));
	v->ntotal = calloc(f->nnames + 1, sizeof(*v->ntotal));
	onpath = calloc(f->nnames + 1, sizeof(*onpath));
	fill = calloc(nn + 1, sizeof(*fill));
	used = calloc(f->nnames + 1, sizeof(*used));
	if (!v->kid || !v->kstart || !v->total || !v->rank || !v->byrank || !v->nself || !v->ntotal || !onpath ||
	    !fill || !used)
		goto out;

	/* Node totals: children come after their parent, so sum backwards. */
	for (i = nn; i-- > 0;) {
		v->total[i] += f->nodes[i].self;
		if (i)
			v->total[f->nodes[i].parent] += v->total[i];
	}
	/* Names that carry weight, ranked in byte order. */
	for (i = 1; i < nn; i++)
		if (v->total[i])
			used[f->nodes[i].name] = true;
	for (i = 0; i < f->nnames; i++)
		if (used[i])
			v->byrank[v->nused++] = (uint32_t)i;
	qsort_r(v->byrank, v->nused, sizeof(*v->byrank), cmp_name_idx, (void *)f);
	for (i = 0; i < v->nused; i++)
		v->rank[v->byrank[i]] = (uint32_t)i;

	/* Children grouped by parent (counting sort), then sorted by name rank. */
	for (i = 1; i < nn; i++)
		if (v->total[i])
			v->kstart[f->nodes[i].parent + 1]++;
	for (i = 1; i <= nn; i++)
		v->kstart[i] += v->kstart[i - 1];
	for (i = 1; i < nn; i++) {
		uint32_t p = f->nodes[i].parent;

		if (v->total[i])
			v->kid[v->kstart[p] + fill[p]++] = (uint32_t)i;
	}
	ctx.f = f;
	ctx.rank = v->rank;
	for (i = 0; i < nn; i++)
		if (v->kstart[i + 1] - v->kstart[i] > 1)
			qsort_r(v->kid + v->kstart[i], v->kstart[i + 1] - v->kstart[i], sizeof(*v->kid),
				cmp_kid, &ctx);
	view_totals(v, onpath);
	err = 0;
out:
	free(onpath);
	free(fill);
	free(used);
	if (err)
		flame_view_free(v);
	return err;
}

/* ---- top ---- */

static int cmp_top(const void *a, const void *b)
{
	const struct flame_top *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

int flame_top(const struct flame *f, struct flame_top **out, size_t *n)
{
	struct flame_view v;
	struct flame_top *t;
	size_t i;
	int err;

	*out = NULL;
	*n = 0;
	err = flame_view_build(f, &v);
	if (err)
		return err;
	t = calloc(v.nused + 1, sizeof(*t));
	if (!t) {
		flame_view_free(&v);
		return -ENOMEM;
	}
	for (i = 0; i < v.nused; i++) {
		uint32_t nm = v.byrank[i];

		t[i].name = f->names[nm].s;
		t[i].self = v.nself[nm];
		t[i].total = v.ntotal[nm];
	}
	qsort(t, v.nused, sizeof(*t), cmp_top);
	*out = t;
	*n = v.nused;
	flame_view_free(&v);
	return 0;
}

/* ---- formats ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

int flame_format_from_path(const char *path)
{
	static const struct {
		const char *suffix;
		enum flame_format fmt;
	} map[] = {
		{ ".folded", FLAME_FOLDED },		{ ".collapsed", FLAME_FOLDED },
		{ ".txt", FLAME_FOLDED },		{ ".html", FLAME_HTML },
		{ ".htm", FLAME_HTML },			{ ".svg", FLAME_SVG },
		{ ".speedscope.json", FLAME_SPEEDSCOPE }, { ".json", FLAME_SPEEDSCOPE },
		{ ".pb.gz", FLAME_PPROF },		{ ".pprof", FLAME_PPROF },
	};
	size_t i;

	if (!path)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (ends_with(path, map[i].suffix))
			return map[i].fmt;
	return -EINVAL;
}

static const struct flame_format_desc formats[] = {
	{ "speedscope", FLAME_SPEEDSCOPE, ".speedscope.json" },
	{ "folded", FLAME_FOLDED, ".folded" },
	{ "html", FLAME_HTML, ".html" },
	{ "svg", FLAME_SVG, ".svg" },
	{ "pprof", FLAME_PPROF, ".pb.gz" },
};

const struct flame_format_desc *flame_format_by_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

const struct flame_format_desc *flame_format_desc_of(int fmt)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if ((int)formats[i].fmt == fmt)
			return &formats[i];
	return &formats[0];
}

bool flame_opts_is_ns(const struct flame_opts *opts)
{
	return opts && opts->unit && strcmp(opts->unit, "nanoseconds") == 0;
}

int flame_write(const struct flame *f, enum flame_format fmt, int fd, const struct flame_opts *o)
{
	struct flame_opts dflt = { 0 };
	struct flame_view v;
	struct flame_out out;
	int err, err2;

	if (!f || fd < 0)
		return -EINVAL;
	if (fmt < FLAME_FOLDED || fmt > FLAME_PPROF)
		return -EINVAL;
	if (!o)
		o = &dflt;
	err = flame_view_build(f, &v);
	if (err)
		return err;
	flame_out_init(&out, fd);
	switch (fmt) {
	case FLAME_FOLDED:
		err = flame_write_folded(&v, &out, o);
		break;
	case FLAME_HTML:
		err = flame_write_html(&v, &out, o);
		break;
	case FLAME_SVG:
		err = flame_write_svg(&v, &out, o);
		break;
	case FLAME_SPEEDSCOPE:
		err = flame_write_speedscope(&v, &out, o);
		break;
	case FLAME_PPROF:
		err = flame_write_pprof(&v, &out, o);
		break;
	}
	err2 = flame_out_finish(&out);
	flame_view_free(&v);
	if (f->truncated)
		ct_debug("flame: %" PRIu64 " stacks were deeper than %d frames and were cut",
			 f->truncated, FLAME_MAX_DEPTH);
	return err ? err : err2;
}

void flame_walk_init(struct flame_walk *w, const struct flame_view *v)
{
	w->v = v;
	w->sp = 0;
	w->stk[0] = 0;
	w->pos[0] = v->kstart[0];
}

int flame_walk_next(struct flame_walk *w, uint32_t *node)
{
	const struct flame_view *v = w->v;
	uint32_t n;

	if (w->sp < 0)
		return FLAME_WALK_END;
	n = w->stk[w->sp];
	if (w->pos[w->sp] < v->kstart[n + 1]) {
		uint32_t c = v->kid[w->pos[w->sp]++];

		w->sp++;
		w->stk[w->sp] = c;
		w->pos[w->sp] = v->kstart[c];
		*node = c;
		return FLAME_WALK_ENTER;
	}
	*node = n;
	w->sp--;
	return FLAME_WALK_LEAVE;
}

void flame_walk_skip(struct flame_walk *w)
{
	w->sp--;
}
