/* SPDX-License-Identifier: MIT */
/*
 * report.c - one snapshot's report as data: types by retained bytes, the
 * largest retainers, the retention paths of a type or one object, and its
 * JSON form (the gcdump.report task's result, docs/tasks/gcdump.md). The CLI
 * renders the same struct as text.
 */
#include "common/compat.h"

#include "common/json.h"
#include "common/strparse.h"
#include "heap/heap.h"

void heap_json_addr(struct ct_json *j, const char *key, uint64_t addr)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	ct_json_kv_str(j, key, buf);
}

void heap_path_groups_json(struct ct_json *j, const struct heap_graph *g, const struct heap_path_group *gr,
			   size_t n)
{
	size_t i;
	uint32_t k;

	for (i = 0; i < n; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "root", heap_root_kind_name(gr[i].rootkind, gr[i].rootflags));
		ct_json_kv_u64(j, "count", gr[i].count);
		ct_json_kv_u64(j, "retained", gr[i].retained);
		heap_json_addr(j, "example", g->addr[gr[i].example]);
		ct_json_kv_arr_begin(j, "path");
		for (k = 0; k < gr[i].ntypes; k++) {
			uint32_t t = gr[i].types[k];

			ct_json_str(j, t == HEAP_NONE ? "..." : g->types[t].name);
		}
		ct_json_arr_end(j);
		ct_json_obj_end(j);
	}
}

void heap_dupstr_json(struct ct_json *j, const struct heap_dupstr *d)
{
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "value", d->value);
	ct_json_kv_bool(j, "truncated", d->truncated);
	ct_json_kv_u64(j, "chars", d->chars);
	ct_json_kv_u64(j, "copies", d->count);
	ct_json_kv_u64(j, "bytes", d->bytes);
	ct_json_kv_u64(j, "wasted_bytes", d->wasted);
	ct_json_obj_end(j);
}

void heap_strings_json(struct ct_json *j, const struct heap_graph *g, size_t top)
{
	const struct heap_string_stats *s = &g->strings;
	uint32_t i;

	ct_json_kv_obj_begin(j, "strings");
	ct_json_kv_bool(j, "read", s->read);
	if (s->read)
		ct_json_kv_str(j, "how", s->how ? s->how : "process_vm_readv");
	ct_json_kv_u64(j, "strings", s->strings);
	ct_json_kv_u64(j, "compared", s->compared);
	ct_json_kv_u64(j, "moved", s->moved);
	ct_json_kv_u64(j, "unreadable", s->unreadable);
	ct_json_kv_u64(j, "too_long", s->too_long);
	ct_json_kv_u64(j, "duplicated_values", s->dup_values);
	ct_json_kv_u64(j, "duplicated_copies", s->dup_copies);
	ct_json_kv_u64(j, "wasted_bytes", s->wasted);
	ct_json_kv_arr_begin(j, "top");
	for (i = 0; i < g->ndups && i < top; i++)
		heap_dupstr_json(j, &g->dups[i]);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

static int cmp_type_ret(const void *x, const void *y, void *ctx)
{
	const struct heap_analysis *a = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;

	if (a->type_retained[i] != a->type_retained[j])
		return a->type_retained[i] > a->type_retained[j] ? -1 : 1;
	if (a->type_shallow[i] != a->type_shallow[j])
		return a->type_shallow[i] > a->type_shallow[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* The nodes with the largest retained sizes (top n), heaviest first. */
static size_t top_retainers(const struct heap_graph *g, const struct heap_analysis *a, uint32_t *out,
			    size_t n)
{
	size_t k = 0, i;

	/* keep a small sorted array (n is small) */
	for (i = 0; i < g->nnodes; i++) {
		size_t j;

		if (!a->retained[i])
			continue;
		if (k == n && a->retained[i] <= a->retained[out[k - 1]])
			continue;
		if (k < n)
			k++;
		for (j = k - 1; j > 0 && a->retained[out[j - 1]] < a->retained[i]; j--)
			out[j] = out[j - 1];
		out[j] = (uint32_t)i;
	}
	return k;
}

/* The object at "0x..." or the type of that name with the most objects. */
static int find_path_target(struct heap_report *r, char *why, size_t whylen)
{
	const struct heap_graph *g = r->g;
	const char *path = r->path;

	if (!strncmp(path, "0x", 2)) {
		uint64_t addr;
		uint32_t lo = 0, hi = g->nnodes;

		if (ct_parse_u64(path + 2, 16, &addr)) {
			snprintf(why, whylen, "--path: '%s' is not an address", path);
			return -EINVAL;
		}
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (g->addr[mid] < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo >= g->nnodes || g->addr[lo] != addr) {
			snprintf(why, whylen, "no object at %s in the snapshot", path);
			return -EINVAL;
		}
		r->pobj = lo;
		return 0;
	}
	/* a name can have several method tables */
	for (uint32_t k = 0; k < g->ntypes; k++)
		if (!strcmp(g->types[k].name, path) && r->a->type_count[k] &&
		    (r->ptype == HEAP_NONE || r->a->type_count[k] > r->a->type_count[r->ptype]))
			r->ptype = k;
	if (r->ptype == HEAP_NONE) {
		snprintf(why, whylen, "no object of type '%s' in the snapshot", path);
		return -EINVAL;
	}
	return heap_paths_group(g, r->p, r->a, r->ptype, 20, &r->gr, &r->ngr, &r->unreached);
}

int heap_report_build(const struct heap_graph *g, int top, const char *path, bool want_paths,
		      struct heap_report *r, char *why, size_t whylen)
{
	size_t i;
	int err;

	memset(r, 0, sizeof(*r));
	r->g = g;
	r->path = path;
	r->pobj = r->ptype = HEAP_NONE;
	why[0] = 0;
	err = heap_analyze(g, &r->a);
	if (err) {
		snprintf(why, whylen, "cannot compute the dominator tree: %s", strerror(-err));
		return err;
	}
	if ((path || want_paths) && (err = heap_paths_new(g, &r->p))) {
		snprintf(why, whylen, "cannot compute the paths: %s", strerror(-err));
		return err;
	}
	if (path && (err = find_path_target(r, why, whylen))) {
		if (!why[0])
			snprintf(why, whylen, "cannot group the paths: %s", strerror(-err));
		return err;
	}
	r->order = malloc((g->ntypes ? g->ntypes : 1) * sizeof(*r->order));
	if (!r->order) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < g->ntypes; i++)
		r->order[i] = (uint32_t)i;
	qsort_r(r->order, g->ntypes, sizeof(*r->order), cmp_type_ret, r->a);
	for (i = 0; i < g->ntypes; i++)
		if (r->a->type_count[r->order[i]])
			r->ntop++;
	if (top > 0 && (size_t)top < r->ntop)
		r->ntop = (size_t)top;
	r->nret = top_retainers(g, r->a, r->ret, HEAP_REPORT_RETAINERS);
	return 0;
}

void heap_report_release(struct heap_report *r)
{
	free(r->order);
	heap_path_groups_free(r->gr, r->ngr);
	heap_paths_free(r->p);
	heap_analysis_free(r->a);
	memset(r, 0, sizeof(*r));
}

static void json_node(struct ct_json *j, const struct heap_report *r, uint32_t v)
{
	const struct heap_graph *g = r->g;

	heap_json_addr(j, "address", g->addr[v]);
	ct_json_kv_str(j, "type", g->types[g->type[v]].name);
	ct_json_kv_u64(j, "size", g->size[v]);
	ct_json_kv_u64(j, "retained", r->a->retained[v]);
}

static void json_summary(struct ct_json *j, const struct heap_graph *g, const struct heap_analysis *a)
{
	ct_json_kv_u64(j, "pid", g->meta.pid);
	ct_json_kv_str(j, "process", g->meta.process);
	ct_json_kv_u64(j, "time", (uint64_t)g->meta.time);
	ct_json_kv_obj_begin(j, "gc");
	ct_json_kv_u64(j, "number", g->meta.gc_count);
	ct_json_kv_u64(j, "generation", g->meta.gc_depth);
	ct_json_kv_bool(j, "induced", g->meta.gc_reason == 1);
	ct_json_kv_bool(j, "blocking", g->meta.gc_type == 0);
	ct_json_kv_u64(j, "pause_ns", g->meta.pause_ns);
	ct_json_kv_u64(j, "gc_ns", g->meta.gc_ns);
	ct_json_kv_u64(j, "sessions", g->meta.attempts);
	ct_json_obj_end(j);
	ct_json_kv_u64(j, "objects", g->nnodes);
	ct_json_kv_u64(j, "bytes", heap_graph_bytes(g));
	ct_json_kv_u64(j, "references", g->nedges);
	ct_json_kv_u64(j, "roots", g->nroots);
	if (a) {
		ct_json_kv_u64(j, "reachable", a->reachable);
		ct_json_kv_u64(j, "unreachable_bytes", a->unreachable_bytes);
	}
	ct_json_kv_u64(j, "unresolved_references", g->meta.unresolved_edges);
	ct_json_kv_u64(j, "lost_events", g->meta.lost_events);
	ct_json_kv_bool(j, "lossless", g->meta.lossless);
}

void heap_snapshot_json(struct ct_json *j, const struct heap_graph *g)
{
	json_summary(j, g, NULL);
}

void heap_report_json(const struct heap_report *r, struct ct_json *j)
{
	const struct heap_graph *g = r->g;
	const struct heap_analysis *a = r->a;
	size_t i;

	json_summary(j, g, a);
	ct_json_kv_arr_begin(j, "types");
	for (i = 0; i < r->ntop; i++) {
		uint32_t t = r->order[i];

		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", g->types[t].name);
		heap_json_addr(j, "id", g->types[t].id);
		ct_json_kv_u64(j, "count", a->type_count[t]);
		ct_json_kv_u64(j, "shallow", a->type_shallow[t]);
		ct_json_kv_u64(j, "retained", a->type_retained[t]);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "retainers");
	for (i = 0; i < r->nret; i++) {
		ct_json_obj_begin(j);
		json_node(j, r, r->ret[i]);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	if (r->pobj != HEAP_NONE) {
		const struct heap_paths *p = r->p;
		uint32_t x;

		ct_json_kv_obj_begin(j, "object_path");
		heap_json_addr(j, "address", g->addr[r->pobj]);
		ct_json_kv_bool(j, "reachable", p->depth[r->pobj] != HEAP_NONE);
		ct_json_kv_arr_begin(j, "path");
		for (x = r->pobj; p->depth[r->pobj] != HEAP_NONE && x != HEAP_NONE; x = p->parent[x]) {
			ct_json_obj_begin(j);
			json_node(j, r, x);
			if (p->parent[x] == HEAP_NONE)
				ct_json_kv_str(j, "root", heap_root_kind_name(p->rootkind[x], p->rootflags[x]));
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		ct_json_obj_end(j);
	} else if (r->ptype != HEAP_NONE) {
		ct_json_kv_obj_begin(j, "paths");
		ct_json_kv_str(j, "type", r->path);
		ct_json_kv_u64(j, "count", a->type_count[r->ptype]);
		ct_json_kv_u64(j, "retained", a->type_retained[r->ptype]);
		ct_json_kv_u64(j, "unreached", r->unreached);
		ct_json_kv_arr_begin(j, "groups");
		heap_path_groups_json(j, g, r->gr, r->ngr);
		ct_json_arr_end(j);
		ct_json_obj_end(j);
	}
	heap_strings_json(j, g, HEAP_REPORT_STRINGS);
}
