/* SPDX-License-Identifier: MIT */
/*
 * sym_parse.c - parsers for the text lib/sym reads from outside
 * (/proc/PID/maps, the runtime's perf map, /proc/kallsyms), the string
 * arena and the sorted symbol tables. Pure functions over (pointer, length):
 * no allocation in the parsers, no NUL needed.
 */
#include "common/compat.h"

#include "sym/sym_internal.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sym_parse_hex(const char *p, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (len >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		i = 2;
	if (i == len)
		return -EINVAL;
	for (; i < len; i++) {
		int d = hexval(p[i]);

		if (d < 0)
			return -EINVAL;
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* Next field: skips leading blanks, returns its start and length. */
static bool next_field(const char *p, size_t len, size_t *pos, const char **f, size_t *flen)
{
	size_t i = *pos, s;

	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	s = i;
	while (i < len && p[i] != ' ' && p[i] != '\t')
		i++;
	*pos = i;
	*f = p + s;
	*flen = i - s;
	return i > s;
}

static size_t trim_eol(const char *p, size_t len)
{
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	return len;
}

int sym_parse_maps_line(const char *p, size_t len, struct sym_maps_line *out)
{
	static const char deleted[] = " (deleted)";
	const size_t dl = sizeof(deleted) - 1;
	const char *f, *dash, *colon;
	size_t pos = 0, flen;
	uint64_t v;

	memset(out, 0, sizeof(*out));
	len = trim_eol(p, len);
	/* start-end */
	if (!next_field(p, len, &pos, &f, &flen))
		return -EBADMSG;
	dash = memchr(f, '-', flen);
	if (!dash || sym_parse_hex(f, (size_t)(dash - f), &out->start) ||
	    sym_parse_hex(dash + 1, flen - (size_t)(dash - f) - 1, &out->end) ||
	    out->end < out->start)
		return -EBADMSG;
	/* perms */
	if (!next_field(p, len, &pos, &f, &flen) || flen != 4)
		return -EBADMSG;
	memcpy(out->perms, f, 4);
	out->perms[4] = '\0';
	/* offset */
	if (!next_field(p, len, &pos, &f, &flen) || sym_parse_hex(f, flen, &out->pgoff))
		return -EBADMSG;
	/* dev */
	if (!next_field(p, len, &pos, &f, &flen))
		return -EBADMSG;
	colon = memchr(f, ':', flen);
	if (!colon || sym_parse_hex(f, (size_t)(colon - f), &v) || v > UINT32_MAX)
		return -EBADMSG;
	out->dev_major = (uint32_t)v;
	if (sym_parse_hex(colon + 1, flen - (size_t)(colon - f) - 1, &v) || v > UINT32_MAX)
		return -EBADMSG;
	out->dev_minor = (uint32_t)v;
	/* inode (decimal) */
	if (!next_field(p, len, &pos, &f, &flen))
		return -EBADMSG;
	for (size_t i = 0; i < flen; i++) {
		if (f[i] < '0' || f[i] > '9' || out->inode > UINT64_MAX / 10 - 1)
			return -EBADMSG;
		out->inode = out->inode * 10 + (uint64_t)(f[i] - '0');
	}
	/* path: the rest after the blanks (may hold spaces) */
	while (pos < len && (p[pos] == ' ' || p[pos] == '\t'))
		pos++;
	if (pos < len) {
		out->path = p + pos;
		out->path_len = len - pos;
		if (out->path_len > dl && !memcmp(out->path + out->path_len - dl, deleted, dl)) {
			out->path_len -= dl;
			out->deleted = true;
		}
	}
	return 0;
}

/* The '(' or '[' matching the closer at p[end-1], scanning back; -1 if none. */
static ptrdiff_t match_back(const char *p, size_t end, char open, char close)
{
	int depth = 0;
	size_t i = end;

	while (i > 0) {
		char c = p[--i];

		if (c == close) {
			depth++;
		} else if (c == open) {
			if (--depth == 0)
				return (ptrdiff_t)i;
		}
	}
	return -1;
}

int sym_parse_perfmap_line(const char *p, size_t len, struct sym_pm_line *out)
{
	const char *f, *t;
	size_t pos = 0, flen, tlen, end;
	ptrdiff_t b;

	memset(out, 0, sizeof(*out));
	len = trim_eol(p, len);
	if (!next_field(p, len, &pos, &f, &flen) || sym_parse_hex(f, flen, &out->start))
		return -EBADMSG;
	if (!next_field(p, len, &pos, &f, &flen) || sym_parse_hex(f, flen, &out->size))
		return -EBADMSG;
	if (out->start + out->size < out->start)
		return -EBADMSG;
	while (pos < len && (p[pos] == ' ' || p[pos] == '\t'))
		pos++;
	while (len > pos && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (pos == len)
		return -EBADMSG;
	t = p + pos;
	tlen = len - pos;
	out->instance = tlen > 9 && !memcmp(t, "instance ", 9);

	/* Stubs: "stub Name<Kind>" (older runtimes: "stub<N> Name"). */
	if (tlen > 5 && !memcmp(t, "stub", 4) && (t[4] == ' ' || t[4] == '<')) {
		const char *sp = memchr(t, ' ', tlen);

		out->stub = true;
		if (sp && (size_t)(sp - t) + 1 < tlen) {
			out->name = sp + 1;
			out->name_len = tlen - (size_t)(sp - t) - 1;
		} else {
			out->name = t;
			out->name_len = tlen;
		}
		return 0;
	}

	end = tlen;
	/* Trailing "[Tier]" */
	if (t[end - 1] == ']') {
		b = match_back(t, end, '[', ']');
		if (b > 0 && t[b - 1] == ')') {
			out->tier = t + b + 1;
			out->tier_len = end - (size_t)b - 2;
			end = (size_t)b;
		}
	}
	/* Trailing "(params)" */
	if (end && t[end - 1] == ')') {
		b = match_back(t, end, '(', ')');
		if (b > 0) {
			out->sig = t + b;
			out->sig_len = end - (size_t)b;
			end = (size_t)b;
		}
	}
	/* The name: the last blank-separated word outside brackets. */
	{
		int depth = 0;
		size_t i = end, ns;

		while (i > 0) {
			char c = t[i - 1];

			if (c == ']' || c == '>')
				depth++;
			else if ((c == '[' || c == '<') && depth > 0)
				depth--;
			else if (c == ' ' && depth == 0)
				break;
			i--;
		}
		ns = i;
		if (ns == end) {
			/* nothing before the '(' */
			out->name = t;
			out->name_len = tlen;
			out->sig = out->tier = NULL;
			out->sig_len = out->tier_len = 0;
			return 0;
		}
		out->name = t + ns;
		out->name_len = end - ns;
		/* "[Module] " right before it */
		if (ns >= 3 && t[ns - 1] == ' ' && t[ns - 2] == ']') {
			b = match_back(t, ns - 1, '[', ']');
			if (b >= 0 && (b == 0 || t[b - 1] == ' ')) {
				out->module = t + b + 1;
				out->module_len = ns - 2 - (size_t)b - 1;
			}
		}
	}
	return 0;
}

int sym_parse_kallsyms_line(const char *p, size_t len, struct sym_ks_line *out)
{
	const char *f;
	size_t pos = 0, flen;

	memset(out, 0, sizeof(*out));
	len = trim_eol(p, len);
	if (!next_field(p, len, &pos, &f, &flen) || sym_parse_hex(f, flen, &out->addr))
		return -EBADMSG;
	if (!next_field(p, len, &pos, &f, &flen) || flen != 1)
		return -EBADMSG;
	out->type = f[0];
	if (!next_field(p, len, &pos, &f, &flen))
		return -EBADMSG;
	out->name = f;
	out->name_len = flen;
	if (next_field(p, len, &pos, &f, &flen)) {
		if (flen < 3 || f[0] != '[' || f[flen - 1] != ']')
			return -EBADMSG;
		out->module = f + 1;
		out->module_len = flen - 2;
	}
	return 0;
}

/* ---- arena ---- */

struct sym_arena_chunk {
	struct sym_arena_chunk *next;
	size_t used, size;
	char data[];
};

#define SYM_ARENA_CHUNK ((size_t)256 << 10)

const char *sym_arena_strndup(struct sym_arena *a, const char *s, size_t len)
{
	struct sym_arena_chunk *c = a->head;
	char *r;

	if (len >= SYM_ARENA_CHUNK / 4 || !c || c->size - c->used < len + 1) {
		size_t sz = len + 1 > SYM_ARENA_CHUNK / 4 ? len + 1 : SYM_ARENA_CHUNK;
		size_t max = a->max ? a->max : SYM_ARENA_MAX_BYTES;

		if (a->total + sz > max)
			return NULL;
		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = sz;
		a->total += sz;
		if (sz == SYM_ARENA_CHUNK || !a->head) {
			c->next = a->head;
			a->head = c;
		} else {
			/* a big string: keep the current chunk at the head */
			c->next = a->head->next;
			a->head->next = c;
		}
	}
	r = c->data + c->used;
	memcpy(r, s, len);
	r[len] = '\0';
	c->used += len + 1;
	return r;
}

void sym_arena_free(struct sym_arena *a)
{
	struct sym_arena_chunk *c = a->head, *n;

	while (c) {
		n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
	a->total = 0;
}

/* ---- symbol tables ---- */

int sym_table_add(struct sym_table *t, const struct sym_entry *e, size_t max)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		struct sym_entry *v;

		if (t->n >= max)
			return -E2BIG;
		if (nc > max)
			nc = max;
		v = realloc(t->v, nc * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = nc;
	}
	t->v[t->n++] = *e;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* real symbols before unwind-table starts, sized first, then by name */
	if (x->synthetic != y->synthetic)
		return x->synthetic ? 1 : -1;
	if ((x->size == 0) != (y->size == 0))
		return x->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

void sym_table_sort(struct sym_table *t)
{
	size_t i, o = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), entry_cmp);
	for (i = 0; i < t->n; i++) {
		if (o && t->v[o - 1].addr == t->v[i].addr)
			continue;
		t->v[o++] = t->v[i];
	}
	t->n = o;
}

const struct sym_entry *sym_table_find(const struct sym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	const struct sym_entry *e;

	/* last entry with addr <= target */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &t->v[lo - 1];
	if (e->size && addr - e->addr >= e->size)
		return NULL;
	return e;
}

void sym_table_free(struct sym_table *t)
{
	FREE_AND_NULL(t->v);
	t->n = t->cap = 0;
}

int sym_kallsyms_load(struct sym_table *t, const char *text, size_t len, struct sym_arena *arena)
{
	/* module names repeat: keep one copy each of the recent ones */
	const char *mods[64] = { 0 };
	size_t nmods = 0, pos = 0;
	bool nonzero = false;
	int err;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
		struct sym_ks_line kl;
		struct sym_entry e = { 0 };

		if (ll <= SYM_LINE_MAX && !sym_parse_kallsyms_line(text + pos, ll, &kl)) {
			char ty = kl.type;

			if (kl.addr)
				nonzero = true;
			if (ty == 't' || ty == 'T' || ty == 'w' || ty == 'W') {
				e.addr = kl.addr;
				e.name = sym_arena_strndup(arena, kl.name, kl.name_len);
				if (!e.name)
					return -ENOMEM;
				if (kl.module) {
					size_t k;

					for (k = 0; k < nmods; k++)
						if (strlen(mods[k]) == kl.module_len &&
						    !memcmp(mods[k], kl.module, kl.module_len))
							break;
					if (k == nmods) {
						const char *m = sym_arena_strndup(arena, kl.module,
										  kl.module_len);
						if (!m)
							return -ENOMEM;
						if (nmods < ARRAY_SIZE(mods))
							mods[nmods++] = m;
						e.module = m;
					} else {
						e.module = mods[k];
					}
				}
				err = sym_table_add(t, &e, SYM_KALLSYMS_MAX_SYMS);
				if (err)
					return err;
			}
		}
		pos += ll + 1;
	}
	if (!nonzero)
		return -EACCES;
	sym_table_sort(t);
	return 0;
}
