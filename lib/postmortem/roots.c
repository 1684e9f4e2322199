/* SPDX-License-Identifier: MIT */
/*
 * roots.c - the gcroot job on a dump: a heap graph (lib/heap) built from the
 * walked objects, each object's references read from the dump through its
 * method table's GCDesc (the runtime's own map of reference slots, kept just
 * before the method table), roots from the runtime's strong handles, the
 * threads' stack references and, on .NET 9 and later, the static fields of
 * every loaded type (named Type.Field from the module's metadata); then
 * lib/heap's breadth-first shortest paths and its grouping by path.
 */
#include "common/compat.h"

#include "common/strparse.h"
#include "dac/dac.h"
#include "heap/async.h"
#include "heap/heap.h"
#include "nettrace/nettrace.h"
#include "pe/pe.h"
#include "postmortem/pm_internal.h"

#define MAX_SERIES 4096          /* GCDesc series of one type */
#define MAX_EDGES_TOTAL HEAP_MAX_EDGES
#define MAX_MODULES 65536
#define MAX_FIELDS 4096
#define MAX_METADATA (256u << 20)
#define OBJ_BUF_MAX (16u << 20)  /* larger objects are read slot by slot */

struct static_root {
	uint32_t node;
	char *name;                  /* "Keep.Holder.Items" */
};

struct builder {
	struct pm_report *r;
	struct pm_priv *p;
	struct heap_graph *g;
	uint32_t cap_edges;
	uint8_t *buf;
	struct static_root *statics;
	size_t nstatics, cap_statics;
	size_t cap_roots;
	/* the type being scanned for statics */
	uint64_t module;
	struct pe_file *md;
};

static uint32_t node_at(const struct pm_report *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nobjects;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->objects[mid].addr == addr)
			return (uint32_t)mid;
		if (r->objects[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return HEAP_NONE;
}

static int add_edge(struct builder *b, uint64_t ref)
{
	struct heap_graph *g = b->g;
	uint32_t v;

	if (!ref)
		return 0;
	v = node_at(b->r, ref);
	if (v == HEAP_NONE) {
		g->meta.unresolved_edges++;
		return 0;
	}
	if (g->nedges == b->cap_edges) {
		uint32_t nc = b->cap_edges ? b->cap_edges * 2 : 1u << 16;
		uint32_t *ne;

		if (b->cap_edges >= MAX_EDGES_TOTAL / 2)
			return -EFBIG;
		ne = realloc(g->edges, (size_t)nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		g->edges = ne;
		b->cap_edges = nc;
	}
	g->edges[g->nedges++] = v;
	return 0;
}

/* The 8-byte slot at offset off of the object (read from buf when it holds the object). */
static uint64_t slot(struct builder *b, const struct pm_object *o, bool inbuf, uint64_t off)
{
	uint64_t v = 0;

	if (off + 8 > o->size)
		return 0;
	if (inbuf)
		memcpy(&v, b->buf + off, 8);
	else if (dac_read(b->p->dac, o->addr + off, &v, 8) != 8)
		return 0;
	return v;
}

/*
 * The references of one object, from its type's GCDesc: a count of series
 * at mt - 8; a positive count n: n (size, offset) pairs below it, each a run
 * of reference slots from offset for size + object size bytes; a negative
 * count -n (arrays of structs): n (pointers, skip) pairs repeated over the
 * elements from the first series' offset.
 */
static int scan_object(struct builder *b, const struct pm_object *o)
{
	const struct pm_type *t = &b->r->types[o->type];
	int64_t nser = 0;
	bool inbuf = false;
	int err = 0;

	if (!t->contains_pointers)
		return 0;
	if (dac_read(b->p->dac, t->mt - 8, &nser, 8) != 8 || !nser || nser > MAX_SERIES ||
	    nser < -MAX_SERIES)
		return 0;
	if (o->size <= OBJ_BUF_MAX && dac_read(b->p->dac, o->addr, b->buf, o->size) == (ssize_t)o->size)
		inbuf = true;
	if (nser > 0) {
		int64_t i;

		for (i = 1; i <= nser && !err; i++) {
			uint64_t ser[2], off, end;

			if (dac_read(b->p->dac, t->mt - 8 - 16 * (uint64_t)i, ser, 16) != 16)
				break;
			off = ser[1];
			end = off + ser[0] + o->size; /* size is stored less the object's base size */
			if (off > o->size || end > o->size || end < off)
				continue;
			for (; off + 8 <= end && !err; off += 8)
				err = add_edge(b, slot(b, o, inbuf, off));
		}
	} else {
		uint64_t hi[2], off, stop = o->size - 8;
		uint32_t items[MAX_SERIES][2];
		int64_t n = -nser, i;
		size_t guard = 0;

		if (dac_read(b->p->dac, t->mt - 8 - 16, hi, 16) != 16)
			return 0;
		/* item 0 lies in the highest series' size slot, item -i 8 bytes lower each */
		for (i = 0; i < n; i++)
			if (dac_read(b->p->dac, t->mt - 8 - 16 - 8 * (uint64_t)i, items[i], 8) != 8)
				return 0;
		for (off = hi[1]; off < stop && !err && guard++ < o->size;) {
			for (i = 0; i < n && off < stop && !err; i++) {
				uint64_t k;

				for (k = 0; k < items[i][0] && off + 8 <= o->size && !err; k++, off += 8)
					err = add_edge(b, slot(b, o, inbuf, off));
				off += items[i][1];
			}
		}
	}
	return err;
}

static int add_root(struct builder *b, uint32_t node, uint8_t kind, uint32_t flags)
{
	struct heap_graph *g = b->g;

	if (g->nroots == b->cap_roots) {
		size_t nc = b->cap_roots ? b->cap_roots * 2 : 1024;
		struct heap_root *nr;

		if (nc > HEAP_MAX_ROOTS)
			return -EFBIG;
		nr = realloc(g->roots, nc * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		g->roots = nr;
		b->cap_roots = nc;
	}
	g->roots[g->nroots].node = node;
	g->roots[g->nroots].kind = kind;
	g->roots[g->nroots].flags = flags;
	g->nroots++;
	return 0;
}

static bool is_ref_type(uint32_t et)
{
	switch (et) {
	case 0x0e: /* STRING */
	case 0x11: /* VALUETYPE (boxed in the GC statics) */
	case 0x12: /* CLASS */
	case 0x14: /* ARRAY */
	case 0x15: /* GENERICINST */
	case 0x1c: /* OBJECT */
	case 0x1d: /* SZARRAY */
		return true;
	default:
		return false;
	}
}

/* One loaded type: its static reference fields that hold a heap object become static roots. */
static void static_type(void *ctx, uint64_t mt)
{
	struct builder *b = ctx;
	struct dac_field *f;
	uint64_t base;
	size_t n = 0, i;
	char tname[PM_NAME_MAX];

	if (b->nstatics >= HEAP_MAX_ROOTS / 2)
		return;
	f = malloc(MAX_FIELDS * sizeof(*f));
	if (!f)
		return;
	if (dac_mt_fields(b->p->dac, mt, f, &n, MAX_FIELDS) || !n)
		goto out;
	for (i = 0; i < n; i++)
		if (f[i].is_static && !f[i].thread_local && is_ref_type(f[i].elem_type))
			break;
	if (i == n || dac_static_base(b->p->dac, mt, &base) || dac_mt_name(b->p->dac, mt, tname, sizeof(tname)))
		goto out;
	for (i = 0; i < n; i++) {
		uint64_t v = 0;
		uint32_t node, nameidx = 0;
		const char *fname = NULL;
		char full[PM_NAME_MAX * 2];

		if (!f[i].is_static || f[i].thread_local || !is_ref_type(f[i].elem_type))
			continue;
		if (dac_read(b->p->dac, base + f[i].offset, &v, 8) != 8 || !v)
			continue;
		node = node_at(b->r, v);
		if (node == HEAP_NONE)
			continue;
		if (b->md && (f[i].token >> 24) == 0x04 &&
		    !pe_md_get(b->md, PE_MD_FIELD, f[i].token & 0xffffff, 1, &nameidx))
			fname = pe_md_string(b->md, nameidx);
		snprintf(full, sizeof(full), "%s.%s", tname, fname && fname[0] ? fname : "?");
		if (b->nstatics == b->cap_statics) {
			size_t nc = b->cap_statics ? b->cap_statics * 2 : 256;
			struct static_root *ns = realloc(b->statics, nc * sizeof(*ns));

			if (!ns)
				break;
			b->statics = ns;
			b->cap_statics = nc;
		}
		b->statics[b->nstatics].node = node;
		b->statics[b->nstatics].name = strdup(full);
		if (!b->statics[b->nstatics].name)
			break;
		b->nstatics++;
	}
out:
	free(f);
}

/* Static roots of every loaded type (.NET 9+); a note says when they cannot be read. */
static void read_statics(struct builder *b, char *note, size_t notelen)
{
	uint64_t *mods = NULL, probe = 0;
	size_t n = 0, i;

	if (dac_static_base(b->p->dac, 0, &probe) == -EOPNOTSUPP) {
		snprintf(note, notelen,
			 "static fields are not named on this runtime (before .NET 9): a static's path ends at the handle that holds its storage");
		return;
	}
	if (dac_modules(b->p->dac, &mods, &n, MAX_MODULES))
		return;
	for (i = 0; i < n; i++) {
		uint64_t mda = 0, mdsz = 0;
		uint8_t *mdbuf = NULL;

		b->md = NULL;
		if (!dac_module_metadata(b->p->dac, mods[i], &mda, &mdsz) && mdsz && mdsz <= MAX_METADATA &&
		    (mdbuf = malloc(mdsz)) && dac_read(b->p->dac, mda, mdbuf, mdsz) == (ssize_t)mdsz &&
		    pe_md_open_mem(mdbuf, mdsz, &b->md))
			b->md = NULL;
		dac_module_types(b->p->dac, mods[i], static_type, b);
		pe_file_close(b->md);
		b->md = NULL;
		free(mdbuf);
	}
	free(mods);
}

static int cmp_root(const void *x, const void *y)
{
	const struct heap_root *a = x, *b = y;

	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return (a->kind == HEAP_ROOT_STATIC ? -1 : a->kind) - (b->kind == HEAP_ROOT_STATIC ? -1 : b->kind);
}

static int build_graph(struct builder *b, bool with_roots, char *note, size_t notelen)
{
	struct pm_report *r = b->r;
	struct heap_graph *g;
	struct dac_handle *h = NULL;
	size_t nh = 0, i;
	int err = 0;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	b->g = g;
	if (r->nobjects > HEAP_MAX_NODES)
		return -EFBIG;
	g->nnodes = (uint32_t)r->nobjects;
	g->addr = malloc((r->nobjects + 1) * sizeof(*g->addr));
	g->size = malloc((r->nobjects + 1) * sizeof(*g->size));
	g->type = malloc((r->nobjects + 1) * sizeof(*g->type));
	g->edge_start = malloc((r->nobjects + 1) * sizeof(*g->edge_start));
	g->types = calloc(r->ntypes + 1, sizeof(*g->types));
	b->buf = malloc(OBJ_BUF_MAX);
	if (!g->addr || !g->size || !g->type || !g->edge_start || !g->types || !b->buf)
		return -ENOMEM;
	g->meta.pid = (uint32_t)r->pid;
	g->meta.pointer_size = 8;
	ct_strlcpy(g->meta.process, r->comm, sizeof(g->meta.process));
	for (i = 0; i < r->ntypes; i++) {
		g->types[i].id = r->types[i].mt;
		g->types[i].name = strdup(r->types[i].name);
		if (!g->types[i].name)
			return -ENOMEM;
		g->ntypes++;
	}
	for (i = 0; i < r->nobjects && !err; i++) {
		g->addr[i] = r->objects[i].addr;
		g->size[i] = r->objects[i].size;
		g->type[i] = r->objects[i].type;
		g->edge_start[i] = g->nedges;
		err = scan_object(b, &r->objects[i]);
	}
	g->edge_start[r->nobjects] = g->nedges;
	if (err || !with_roots)
		return err;

	read_statics(b, note, notelen);
	for (i = 0; i < b->nstatics && !err; i++)
		err = add_root(b, b->statics[i].node, HEAP_ROOT_STATIC, 0);
	if (!dac_handles(b->p->dac, &h, &nh, HEAP_MAX_ROOTS)) {
		for (i = 0; i < nh && !err; i++) {
			uint32_t node = node_at(r, h[i].object), flags = 0;

			/* strong kinds: 2 strong, 3 pinned, 5 ref-counted, 7 async pinned, 8 sized ref */
			if (node == HEAP_NONE)
				continue;
			switch (h[i].type) {
			case 2:
				break;
			case 3:
			case 7:
				flags = NT_ROOT_FLAG_PINNING;
				break;
			case 5:
				flags = NT_ROOT_FLAG_REFCOUNTED;
				break;
			case 8:
				break;
			default:
				g->meta.weak_roots++;
				continue;
			}
			err = add_root(b, node, h[i].type == 8 ? HEAP_ROOT_SIZEDREF : HEAP_ROOT_HANDLE, flags);
		}
		free(h);
	}
	for (i = 0; i < b->p->nthreads && !err; i++) {
		uint64_t *refs = NULL;
		size_t nr = 0, k;

		if (!b->p->threads[i].os_tid ||
		    dac_stack_refs(b->p->dac, b->p->threads[i].os_tid, &refs, &nr, HEAP_MAX_ROOTS))
			continue;
		for (k = 0; k < nr && !err; k++) {
			uint32_t node = node_at(r, refs[k]);

			if (node != HEAP_NONE)
				err = add_root(b, node, HEAP_ROOT_STACK, 0);
		}
		free(refs);
	}
	if (!err && g->nroots)
		qsort(g->roots, g->nroots, sizeof(*g->roots), cmp_root);
	return err;
}

static const char *static_name(const struct builder *b, uint32_t node)
{
	size_t i;

	for (i = 0; i < b->nstatics; i++)
		if (b->statics[i].node == node)
			return b->statics[i].name;
	return NULL;
}

/* "[static variable Keep.Holder.Items] Keep.Item[] -> Keep.Item" for the path of node v. */
static char *format_path(const struct builder *b, const struct heap_paths *hp, uint32_t v)
{
	const struct heap_graph *g = b->g;
	uint32_t chain[64], n = 0, root, i;
	struct strbuf sb;
	const char *sname;

	for (root = v; n < ARRAY_SIZE(chain); root = hp->parent[root]) {
		chain[n++] = root;
		if (hp->parent[root] == HEAP_NONE)
			break;
	}
	strbuf_init(&sb, 1 << 16);
	sname = hp->rootkind[root] == HEAP_ROOT_STATIC ? static_name(b, root) : NULL;
	if (sname)
		strbuf_addf(&sb, "[static variable %s]", sname);
	else
		strbuf_addf(&sb, "[%s]", heap_root_kind_name(hp->rootkind[root], hp->rootflags[root]));
	if (n == ARRAY_SIZE(chain) && hp->parent[root] != HEAP_NONE)
		strbuf_addstr(&sb, " ...");
	for (i = n; i-- > 0;)
		strbuf_addf(&sb, "%s%s", i + 1 == n ? " " : " -> ", g->types[g->type[chain[i]]].name);
	if (strbuf_error(&sb)) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

#define MAX_GROUPS 10

int pm_root(struct pm_report *r, const char *what, struct pm_path_result *out, char *why,
	    size_t whylen)
{
	struct builder b = { .r = r, .p = r->priv };
	struct heap_paths *hp = NULL;
	struct heap_analysis *an = NULL;
	struct heap_path_group *gr = NULL;
	size_t ngr = 0, i;
	uint64_t unreached = 0;
	char note[256] = "";
	int err;

	memset(out, 0, sizeof(*out));
	ct_strlcpy(out->target, what, sizeof(out->target));
	if (!r->heap_read) {
		snprintf(why, whylen, "the heap was not read: %s", r->heap_note);
		return -ENODATA;
	}
	err = build_graph(&b, true, note, sizeof(note));
	if (!err)
		err = heap_paths_new(b.g, &hp);
	if (err) {
		snprintf(why, whylen, "building the heap graph: %s", strerror(-err));
		goto out;
	}
	out->paths = calloc(MAX_GROUPS + 1, sizeof(*out->paths));
	out->counts = calloc(MAX_GROUPS + 1, sizeof(*out->counts));
	if (!out->paths || !out->counts) {
		err = -ENOMEM;
		goto out;
	}
	if (!strncmp(what, "0x", 2)) {
		uint64_t addr;
		uint32_t v;

		if (ct_parse_u64(what + 2, 16, &addr) || (v = node_at(r, addr)) == HEAP_NONE) {
			snprintf(why, whylen, "no object starts at %s in the heap walk", what);
			err = -ENOENT;
			goto out;
		}
		snprintf(out->target, sizeof(out->target), "%s (%s)", what, b.g->types[b.g->type[v]].name);
		out->instances = 1;
		if (hp->depth[v] != HEAP_NONE) {
			out->reached = 1;
			out->paths[0] = format_path(&b, hp, v);
			out->counts[0] = 1;
			out->npaths = out->paths[0] ? 1 : 0;
		}
	} else {
		uint32_t t = heap_graph_type_find(b.g, what);

		if (t == HEAP_NONE) {
			snprintf(why, whylen, "no object of type '%s' in the heap (names as the heap table writes them)",
				 what);
			err = -ENOENT;
			goto out;
		}
		err = heap_analyze(b.g, &an);
		if (!err)
			err = heap_paths_group(b.g, hp, an, t, MAX_GROUPS, &gr, &ngr, &unreached);
		if (err) {
			snprintf(why, whylen, "grouping the paths: %s", strerror(-err));
			goto out;
		}
		out->instances = r->types[t].count;
		for (i = 0; i < ngr; i++) {
			out->reached += gr[i].count;
			out->paths[out->npaths] = format_path(&b, hp, gr[i].example);
			if (out->paths[out->npaths])
				out->counts[out->npaths++] = gr[i].count;
		}
	}
	ct_strlcpy(out->note, note, sizeof(out->note));
out:
	heap_path_groups_free(gr, ngr);
	heap_analysis_free(an);
	heap_paths_free(hp);
	heap_graph_free(b.g);
	for (i = 0; i < b.nstatics; i++)
		free(b.statics[i].name);
	free(b.statics);
	free(b.buf);
	if (err)
		pm_path_result_free(out);
	return err;
}

int pm_async(struct pm_report *r, struct heap_async **out, char *why, size_t whylen)
{
	struct builder b = { .r = r, .p = r->priv };
	int err;

	*out = NULL;
	if (!r->heap_read) {
		snprintf(why, whylen, "the heap was not read: %s", r->heap_note);
		return -ENODATA;
	}
	err = build_graph(&b, false, NULL, 0);
	if (!err)
		err = heap_async_chains(b.g, out);
	if (err)
		snprintf(why, whylen, "following the async chains: %s", strerror(-err));
	/* the chains name their frames with the graph's type names: it lives as long as r */
	heap_graph_free(r->priv->graph);
	r->priv->graph = b.g;
	free(b.buf);
	return err;
}

void pm_path_result_free(struct pm_path_result *p)
{
	size_t i;

	for (i = 0; i < p->npaths; i++)
		free(p->paths[i]);
	free(p->paths);
	free(p->counts);
	memset(p, 0, sizeof(*p));
}
