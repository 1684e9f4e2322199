/* SPDX-License-Identifier: MIT */
/*
 * stacks.c - first sample of each thread from a sample-profiler session,
 * symbolized with the rundown, merged into a call tree.
 */
#include "common/compat.h"

#include <dirent.h>

#include "common/hashtab.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "proc/proc.h"
#include "srcline/srcline.h"
#include "stacks/stacks.h"

/* ------------------------------------------------------------------------ */
/* Tree                                                                      */

struct stacks_tree {
	struct stacks_node root;
	size_t nnodes;
	bool sorted;
	struct ct_strset names; /* interned names, strdup'ed */
};

int stacks_tree_new(struct stacks_tree **out)
{
	struct stacks_tree *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->root.name = "";
	t->sorted = true;
	*out = t;
	return 0;
}

static void node_free(struct stacks_node *n)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++) {
		node_free(n->children[i]);
		free(n->children[i]);
	}
	free(n->children);
	free(n->tids);
}

void stacks_tree_free(struct stacks_tree *t)
{
	size_t i;

	if (!t)
		return;
	node_free(&t->root);
	for (i = 0; i < t->names.n; i++)
		free((char *)t->names.v[i]);
	ct_strset_release(&t->names);
	free(t);
}

static int store_dup(void *ctx, const char *s, size_t len, const char **copy)
{
	(void)ctx;
	*copy = strndup(s, len);
	return *copy ? 0 : -ENOMEM;
}

static const char *intern(struct stacks_tree *t, const char *s)
{
	const char *out;

	return ct_strset_intern(&t->names, s, strlen(s), store_dup, NULL, &out) ? NULL : out;
}

static struct stacks_node *child_get(struct stacks_tree *t, struct stacks_node *n, const char *name)
{
	struct stacks_node *c, **nv;
	size_t i;

	/* names are interned: pointer comparison */
	for (i = 0; i < n->nchildren; i++)
		if (n->children[i]->name == name)
			return n->children[i];
	if (t->nnodes >= STACKS_MAX_NODES) {
		errno = E2BIG;
		return NULL;
	}
	nv = realloc(n->children, (n->nchildren + 1) * sizeof(*nv));
	if (!nv) {
		errno = ENOMEM;
		return NULL;
	}
	n->children = nv;
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->name = name;
	nv[n->nchildren++] = c;
	t->nnodes++;
	return c;
}

int stacks_tree_add(struct stacks_tree *t, uint64_t tid, const char *const *frames, size_t n)
{
	struct stacks_node *node = &t->root;
	uint64_t *nt;
	size_t i;

	if (n == 0)
		return -EINVAL;
	/* Check every name first so a failure leaves the counts as they were. */
	for (i = 0; i < n; i++)
		if (!intern(t, frames[i]))
			return -ENOMEM;
	for (i = 0; i < n; i++) {
		node = child_get(t, node, intern(t, frames[i]));
		if (!node)
			return -errno;
	}
	nt = realloc(node->tids, (node->ntids + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	node->tids = nt;
	nt[node->ntids++] = tid;
	/* counts only now that the path exists */
	node = &t->root;
	node->count++;
	for (i = 0; i < n; i++) {
		node = child_get(t, node, intern(t, frames[i]));
		node->count++;
	}
	t->sorted = false;
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	const struct stacks_node *x = *(const struct stacks_node *const *)a;
	const struct stacks_node *y = *(const struct stacks_node *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void node_sort(struct stacks_node *n)
{
	size_t i;

	if (n->nchildren > 1)
		qsort(n->children, n->nchildren, sizeof(*n->children), cmp_node);
	if (n->ntids > 1)
		qsort(n->tids, n->ntids, sizeof(*n->tids), cmp_u64);
	for (i = 0; i < n->nchildren; i++)
		node_sort(n->children[i]);
}

const struct stacks_node *stacks_tree_root(struct stacks_tree *t)
{
	if (!t->sorted) {
		node_sort(&t->root);
		t->sorted = true;
	}
	return &t->root;
}

/* ------------------------------------------------------------------------ */
/* Sampler                                                                   */

struct stacks_sampler {
	struct nt_methods *methods;
	struct srcline *lines;  /* stacks_sampler_set_lines (owned) */
	struct stacks_thread *v;
	size_t n, cap;
	struct ct_itab tids; /* v by thread */
};

int stacks_sampler_new(struct stacks_sampler **out)
{
	struct stacks_sampler *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	err = nt_methods_new(&s->methods, 0, 0);
	if (err) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

void stacks_sampler_free(struct stacks_sampler *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		uint32_t k;

		for (k = 0; s->v[i].lined && k < s->v[i].nframes; k++)
			free(s->v[i].lined[k]);
		free(s->v[i].lined);
		free(s->v[i].ips);
	}
	free(s->v);
	ct_itab_release(&s->tids);
	srcline_free(s->lines);
	nt_methods_free(s->methods);
	free(s);
}

static uint64_t tid_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct stacks_sampler *)ctx)->v[idx].tid);
}

static bool tid_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct stacks_sampler *)ctx)->v[idx].tid == *(const uint64_t *)key;
}

/* Indexes s->v[idx] by its thread. */
static int remember(struct stacks_sampler *s, size_t idx)
{
	uint32_t *slot;
	int err = ct_itab_reserve(&s->tids, tid_hash, s);

	if (err)
		return err;
	slot = ct_itab_slot(&s->tids, ct_hash_u64(s->v[idx].tid), tid_eq, s, &s->v[idx].tid);
	*slot = ct_itab_add(&s->tids, (uint32_t)idx);
	return 0;
}

static bool known(const struct stacks_sampler *s, uint64_t tid)
{
	return ct_itab_get(&s->tids, ct_hash_u64(tid), tid_eq, s, &tid) != UINT32_MAX;
}

int stacks_sampler_event(struct stacks_sampler *s, const struct nt_event *ev)
{
	struct stacks_thread *th;
	uint32_t type, n;
	int err;

	if (!ev->meta)
		return 0;
	if (ev->meta->provider_kind == NT_PROV_RUNTIME || ev->meta->provider_kind == NT_PROV_RUNDOWN) {
		err = nt_methods_add_event(s->methods, ev);
		if (err == -EBADMSG)
			err = 0;
		if (err >= 0 && s->lines) {
			err = srcline_add_event(s->lines, ev);
			/* a damaged record or a full line table: fewer lines, the stacks go on */
			if (err == -EBADMSG || err == -EFBIG)
				err = 0;
		}
		return err < 0 ? err : 0;
	}
	if (ev->meta->provider_kind != NT_PROV_SAMPLEPROFILER || ev->meta->event_id != 0)
		return 0;
	if (nt_decode_thread_sample(ev->payload, ev->payload_len, ev->meta->version, ev->pointer_size,
				    &type))
		return 0;
	if (known(s, ev->thread_id))
		return 0;
	if (s->n >= STACKS_MAX_THREADS)
		return -E2BIG;
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct stacks_thread *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	th = &s->v[s->n];
	memset(th, 0, sizeof(*th));
	th->tid = ev->thread_id;
	th->type = type;
	n = CT_MIN(ev->nframes, (uint32_t)STACKS_MAX_FRAMES);
	if (n) {
		th->ips = malloc(n * sizeof(*th->ips));
		if (!th->ips)
			return -ENOMEM;
		memcpy(th->ips, ev->stack, n * sizeof(*th->ips));
	}
	th->nframes = n;
	err = remember(s, s->n);
	if (err) {
		free(th->ips);
		return err;
	}
	s->n++;
	return 0;
}

int stacks_sampler_add_method(struct stacks_sampler *s, uint64_t start, uint32_t size,
			      const char *name)
{
	return nt_methods_add(s->methods, start, size, name);
}

size_t stacks_sampler_nthreads(const struct stacks_sampler *s)
{
	return s->n;
}

const struct stacks_thread *stacks_sampler_thread(const struct stacks_sampler *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}

/* The address to name frame i by (return addresses: ip - 1); false past the stack. */
static bool frame_ip(const struct stacks_thread *th, uint32_t i, uint64_t *ip)
{
	if (i >= th->nframes)
		return false;
	*ip = i == 0 || th->ips[i] == 0 ? th->ips[i] : th->ips[i] - 1;
	return true;
}

void stacks_sampler_set_lines(struct stacks_sampler *s, struct srcline *sl)
{
	srcline_free(s->lines);
	s->lines = sl;
}

struct srcline *stacks_sampler_lines(struct stacks_sampler *s)
{
	return s->lines;
}

/* The name with its line (lib/srcline), made once per frame; NULL: none. */
static const char *frame_lined(struct stacks_sampler *s, const struct stacks_thread *th,
			       uint32_t i, const char *name)
{
	struct stacks_thread *w = &s->v[th - s->v]; /* th is one of s->v */
	char buf[PE_PDB_MAX_PATH + 1024];

	if (!w->lined) {
		w->lined = calloc(w->nframes, sizeof(*w->lined));
		if (!w->lined)
			return NULL;
	}
	if (!w->lined[i] && srcline_name(s->lines, w->ips[i], i > 0, name, buf, sizeof(buf)) == 1)
		w->lined[i] = strdup(buf);
	return w->lined[i];
}

const char *stacks_sampler_frame(struct stacks_sampler *s, const struct stacks_thread *th,
				 uint32_t i)
{
	const char *name, *lined;
	uint64_t ip;

	name = frame_ip(th, i, &ip) ? nt_methods_lookup(s->methods, ip) : NULL;
	if (!name || !s->lines)
		return name;
	lined = frame_lined(s, th, i, name);
	return lined ? lined : name;
}

const char *stacks_sampler_frame_raw(struct stacks_sampler *s, const struct stacks_thread *th,
				     uint32_t i)
{
	uint64_t ip;

	return frame_ip(th, i, &ip) ? nt_methods_lookup_raw(s->methods, ip) : NULL;
}

static const char unresolved[] = STACKS_UNRESOLVED;

int stacks_sampler_build(struct stacks_sampler *s, struct stacks_tree *t)
{
	const char **frames = NULL;
	size_t i, cap = 0;
	int added = 0, err = 0;

	for (i = 0; i < s->n && !err; i++) {
		const struct stacks_thread *th = &s->v[i];
		size_t n = 0, resolved = 0;
		uint32_t k;

		if (!th->nframes)
			continue;
		if (th->nframes > cap) {
			const char **nf = realloc(frames, th->nframes * sizeof(*nf));

			if (!nf) {
				err = -ENOMEM;
				break;
			}
			frames = nf;
			cap = th->nframes;
		}
		/* root first: walk the leaf-first IPs backwards */
		for (k = th->nframes; k-- > 0;) {
			const char *name = stacks_sampler_frame(s, th, k);

			if (name)
				resolved++;
			else
				name = unresolved;
			if (n && name == unresolved && frames[n - 1] == unresolved)
				continue;
			frames[n++] = name;
		}
		if (!resolved)
			continue; /* nothing managed to show */
		err = stacks_tree_add(t, th->tid, frames, n);
		if (!err)
			added++;
	}
	free(frames);
	return err ? err : added;
}

/* ------------------------------------------------------------------------ */
/* Thread names                                                              */

struct name_entry {
	uint64_t tid;
	char name[32]; /* comm is at most 15 bytes */
};

struct stacks_names {
	struct name_entry *v;
	size_t n, cap;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct name_entry *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* "Name:\tfoo\n...NSpid:\t123\t7\n" -> foo (as the kernel escaped it) and 7 */
static bool parse_status(const char *buf, uint64_t *nstid, char *name, size_t len)
{
	const char *nsline = strstr(buf, "\nNSpid:");
	const char *nl = !strncmp(buf, "Name:", 5) ? buf : strstr(buf, "\nName:");
	const char *p, *last = NULL;
	char num[24];
	size_t k = 0;

	if (!nsline || !nl)
		return false;
	for (p = nsline + 7; *p && *p != '\n'; p++)
		if (*p >= '0' && *p <= '9' && (p[-1] == ' ' || p[-1] == '\t'))
			last = p;
	if (!last)
		return false;
	while (last[k] >= '0' && last[k] <= '9' && k < sizeof(num) - 1) {
		num[k] = last[k];
		k++;
	}
	num[k] = 0;
	if (ct_parse_u64(num, 10, nstid))
		return false;
	p = nl + (nl == buf ? 5 : 6);
	while (*p == ' ' || *p == '\t')
		p++;
	for (k = 0; p[k] && p[k] != '\n' && k + 1 < len; k++)
		name[k] = p[k];
	name[k] = 0;
	return true;
}

int stacks_names_load(struct stacks_names **out, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT_MAX(64 * 1024);
	struct stacks_names *n;
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	n = calloc(1, sizeof(*n));
	if (!n) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		struct name_entry e;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		strbuf_reset(&sb);
		if (strbuf_read_file(&sb, path) < 0)
			continue; /* the thread has exited */
		if (!parse_status(sb.buf, &e.tid, e.name, sizeof(e.name)))
			continue;
		/* the name's bytes (status shows them escaped by the kernel) */
		{
			char comm[sizeof(e.name)];
			pid_t tid;

			if (!ct_parse_pid(de->d_name, &tid) && !proc_comm(tid, comm, sizeof(comm)))
				memcpy(e.name, comm, sizeof(comm));
		}
		if (n->n >= STACKS_MAX_THREADS) {
			err = -E2BIG;
			break;
		}
		if (n->n == n->cap) {
			size_t ncap = n->cap ? n->cap * 2 : 64;
			struct name_entry *nv = realloc(n->v, ncap * sizeof(*nv));

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			n->v = nv;
			n->cap = ncap;
		}
		n->v[n->n++] = e;
	}
	closedir(d);
	strbuf_release(&sb);
	if (err) {
		stacks_names_free(n);
		return err;
	}
	if (n->n > 1)
		qsort(n->v, n->n, sizeof(*n->v), cmp_entry);
	*out = n;
	return 0;
}

void stacks_names_free(struct stacks_names *n)
{
	if (!n)
		return;
	free(n->v);
	free(n);
}

const char *stacks_names_get(const struct stacks_names *n, uint64_t nstid)
{
	size_t lo = 0, hi;

	if (!n)
		return NULL;
	hi = n->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (n->v[mid].tid == nstid)
			return n->v[mid].name;
		if (n->v[mid].tid < nstid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
