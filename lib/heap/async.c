/* SPDX-License-Identifier: MIT */
/* async.c - pending async chains from a heap snapshot (see async.h). */
#include "common/compat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clrname.h"
#include "common/term.h"
#include "heap/async.h"

enum kind { K_OTHER, K_BOX, K_TASK, K_LIST, K_TCS };

struct ctx {
	const struct heap_graph *g;
	uint8_t *tkind;   /* [ntypes] */
	char **tframe;    /* [ntypes] for boxes: the method shown */
};

static enum kind type_kind(const char *n)
{
	if (strstr(n, "StateMachineBox<"))
		return K_BOX;
	if (!strncmp(n, "System.Threading.Tasks.TaskCompletionSource", 43))
		return K_TCS;
	/* what an await can wait on: tasks, promises (DelayPromise, WhenAllPromise),
	 * value-task sources and awaitable socket arguments */
	if (strstr(n, "Task") || strstr(n, "Promise") || strstr(n, "Awaitable"))
		return K_TASK;
	if (!strcmp(n, "System.Collections.Generic.List<System.Object>") || !strcmp(n, "System.Object[]"))
		return K_LIST;
	return K_OTHER;
}

/*
 * The heap snapshot's C#-like type name back to the runtime's form the
 * naming rules know: a closure class "[]c" is "<>c", and a generic state
 * machine's own arguments ("<M>d__3<T>") are dropped.
 */
static void normalize(char *s, size_t *len)
{
	char *p;

	for (p = s; (p = strstr(p, "+[]c")); p += 4)
		p[1] = '<', p[2] = '>';
	if (*len && s[*len - 1] == '>') {
		int depth = 0;
		size_t i = *len;

		while (i-- > 0) {
			if (s[i] == '>')
				depth++;
			else if (s[i] == '<' && --depth == 0)
				break;
		}
		/* only after a state machine's "d" or "d__N" */
		if (i < *len && i > 0 && (s[i - 1] == 'd' || (s[i - 1] >= '0' && s[i - 1] <= '9'))) {
			*len = i;
			s[i] = '\0';
		}
	}
}

/* A box type's state machine (its last type argument), as the method it runs. */
static char *box_frame(const char *n)
{
	const char *p = strstr(n, "StateMachineBox<"), *arg, *end;
	char raw[1024], shown[1024];
	int depth = 0;
	size_t len;

	if (!p)
		return strdup(n);
	arg = p += strlen("StateMachineBox<");
	for (end = p; *end; end++) {
		if (*end == '<')
			depth++;
		else if (*end == '>' && depth-- == 0)
			break;
		else if (*end == ',' && depth == 0)
			arg = end + 1;
	}
	len = (size_t)(end - arg);
	if (len + sizeof("::MoveNext") > sizeof(raw))
		return strdup(n);
	memcpy(raw, arg, len);
	raw[len] = '\0';
	normalize(raw, &len);
	memcpy(raw + len, "::MoveNext", sizeof("::MoveNext"));
	if (ct_clrname_raw() || ct_clrname_pretty(raw, len + 10, shown, sizeof(shown)) != 1)
		return strndup(arg, len);
	return strdup(shown);
}

static uint8_t kind_of(const struct ctx *c, uint32_t node)
{
	return c->tkind[c->g->type[node]];
}

static bool refers(const struct heap_graph *g, uint32_t from, uint32_t to)
{
	uint32_t e;

	for (e = g->edge_start[from]; e < g->edge_start[from + 1]; e++)
		if (g->edges[e] == to)
			return true;
	return false;
}

/* y holds x as its continuation: directly, or in a List<object> / object[] (two levels). */
static bool continues_to(const struct ctx *c, uint32_t y, uint32_t x)
{
	const struct heap_graph *g = c->g;
	uint32_t e, f;

	if (refers(g, y, x))
		return true;
	for (e = g->edge_start[y]; e < g->edge_start[y + 1]; e++) {
		uint32_t l = g->edges[e];

		if (kind_of(c, l) != K_LIST)
			continue;
		if (refers(g, l, x))
			return true;
		for (f = g->edge_start[l]; f < g->edge_start[l + 1]; f++)
			if (kind_of(c, g->edges[f]) == K_LIST && refers(g, g->edges[f], x))
				return true;
	}
	return false;
}

/* The task box x awaits that is no box, or HEAP_NONE. */
static uint32_t awaited_task(const struct ctx *c, uint32_t x)
{
	const struct heap_graph *g = c->g;
	uint32_t e;

	for (e = g->edge_start[x]; e < g->edge_start[x + 1]; e++) {
		uint32_t y = g->edges[e];

		if (kind_of(c, y) == K_TASK && continues_to(c, y, x))
			return y;
	}
	return HEAP_NONE;
}

struct chain {
	uint32_t awaited, source;
	uint32_t nodes[HEAP_ASYNC_MAX_DEPTH]; /* innermost first */
	uint32_t n;
	bool cut;
};

static int chain_cmp_key(const struct ctx *c, const struct chain *a, const struct chain *b)
{
	const struct heap_graph *g = c->g;
	uint32_t i;
	int r;

	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	if (a->cut != b->cut)
		return a->cut ? 1 : -1;
	r = strcmp(g->types[g->type[a->awaited]].name, g->types[g->type[b->awaited]].name);
	if (r)
		return r;
	if ((a->source == HEAP_NONE) != (b->source == HEAP_NONE))
		return a->source == HEAP_NONE ? -1 : 1;
	if (a->source != HEAP_NONE &&
	    (r = strcmp(g->types[g->type[a->source]].name, g->types[g->type[b->source]].name)))
		return r;
	for (i = 0; i < a->n; i++) {
		uint32_t ta = g->type[a->nodes[i]], tb = g->type[b->nodes[i]];

		if (ta != tb && (r = strcmp(c->tframe[ta], c->tframe[tb])))
			return r;
	}
	return 0;
}

static int chain_cmp(const void *x, const void *y, void *c)
{
	return chain_cmp_key(c, x, y);
}

static int group_cmp(const void *x, const void *y)
{
	const struct heap_async_group *a = x, *b = y;

	return a->count != b->count ? (a->count > b->count ? -1 : 1) : 0;
}

static int loose_cmp(const void *x, const void *y)
{
	const struct heap_async_loose *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->frame, b->frame);
}

void heap_async_free(struct heap_async *a)
{
	uint32_t i, j;

	if (!a)
		return;
	for (i = 0; i < a->ngroups; i++) {
		for (j = 0; j < a->groups[i].nframes; j++)
			free(a->groups[i].frames[j]);
		free(a->groups[i].frames);
		free(a->groups[i].raw_frames);
	}
	for (i = 0; i < a->nloose; i++)
		free(a->loose[i].frame);
	free(a->groups);
	free(a->loose);
	free(a);
}

static int make_groups(struct ctx *c, struct chain *ch, uint32_t nch, struct heap_async *a)
{
	const struct heap_graph *g = c->g;
	uint32_t i, j, k;

	qsort_r(ch, nch, sizeof(*ch), chain_cmp, c);
	a->groups = calloc(nch ? nch : 1, sizeof(*a->groups));
	if (!a->groups)
		return -ENOMEM;
	for (i = 0; i < nch; i = j) {
		struct heap_async_group *gr = &a->groups[a->ngroups++];

		for (j = i + 1; j < nch && !chain_cmp_key(c, &ch[i], &ch[j]); j++)
			;
		gr->count = j - i;
		gr->cut = ch[i].cut;
		gr->awaited = g->types[g->type[ch[i].awaited]].name;
		gr->source = ch[i].source == HEAP_NONE ? NULL : g->types[g->type[ch[i].source]].name;
		gr->frames = calloc(ch[i].n, sizeof(*gr->frames));
		gr->raw_frames = calloc(ch[i].n, sizeof(*gr->raw_frames));
		if (!gr->frames || !gr->raw_frames)
			return -ENOMEM;
		for (k = 0; k < ch[i].n; k++) {
			uint32_t ty = g->type[ch[i].nodes[ch[i].n - 1 - k]];

			gr->raw_frames[k] = g->types[ty].name;
			gr->frames[k] = strdup(c->tframe[ty]);
			if (!gr->frames[k])
				return -ENOMEM;
			gr->nframes++;
		}
	}
	qsort(a->groups, a->ngroups, sizeof(*a->groups), group_cmp);
	return 0;
}

static int make_loose(struct ctx *c, const uint8_t *on_chain, struct heap_async *a)
{
	const struct heap_graph *g = c->g;
	uint64_t *per = calloc(g->ntypes ? g->ntypes : 1, sizeof(*per));
	uint32_t i, t, n = 0;

	if (!per)
		return -ENOMEM;
	for (i = 0; i < g->nnodes; i++)
		if (kind_of(c, i) == K_BOX && !on_chain[i] && per[g->type[i]]++ == 0)
			n++;
	a->loose = calloc(n ? n : 1, sizeof(*a->loose));
	if (!a->loose) {
		free(per);
		return -ENOMEM;
	}
	for (t = 0; t < g->ntypes; t++) {
		if (!per[t])
			continue;
		a->loose[a->nloose].frame = strdup(c->tframe[t]);
		a->loose[a->nloose].count = per[t];
		if (!a->loose[a->nloose++].frame) {
			free(per);
			return -ENOMEM;
		}
	}
	free(per);
	qsort(a->loose, a->nloose, sizeof(*a->loose), loose_cmp);
	return 0;
}

/* The next box outward from cur (not prev): HEAP_NONE at the end; *cut when more than one. */
static uint32_t outward(const struct ctx *c, uint32_t cur, uint32_t prev, bool *cut)
{
	const struct heap_graph *g = c->g;
	uint32_t e, found = HEAP_NONE;

	for (e = g->edge_start[cur]; e < g->edge_start[cur + 1]; e++) {
		uint32_t z = g->edges[e];

		if (z == prev || z == cur || z == found || kind_of(c, z) != K_BOX || !refers(g, z, cur))
			continue;
		if (found != HEAP_NONE) {
			*cut = true;
			return HEAP_NONE;
		}
		found = z;
	}
	return found;
}

int heap_async_chains(const struct heap_graph *g, struct heap_async **out)
{
	struct ctx c = { g, NULL, NULL };
	struct heap_async *a = calloc(1, sizeof(*a));
	struct chain *ch = NULL;
	uint8_t *on_chain = calloc(g->nnodes ? g->nnodes : 1, 1);
	uint32_t i, t, nch = 0, ach = 0, *src = NULL;
	int err = -ENOMEM;

	c.tkind = calloc(g->ntypes ? g->ntypes : 1, 1);
	c.tframe = calloc(g->ntypes ? g->ntypes : 1, sizeof(*c.tframe));
	if (!a || !on_chain || !c.tkind || !c.tframe)
		goto out;
	for (t = 0; t < g->ntypes; t++) {
		c.tkind[t] = (uint8_t)type_kind(g->types[t].name ? g->types[t].name : "");
		if (c.tkind[t] == K_BOX && !(c.tframe[t] = box_frame(g->types[t].name)))
			goto out;
	}
	for (i = 0; i < g->nnodes; i++) {
		struct chain *k;
		uint32_t y, cur, prev;

		if (kind_of(&c, i) != K_BOX)
			continue;
		a->boxes++;
		y = awaited_task(&c, i);
		if (y == HEAP_NONE)
			continue;
		if (nch == ach) {
			uint32_t na = ach ? ach * 2 : 64;
			struct chain *nv = realloc(ch, na * sizeof(*nv));

			if (!nv)
				goto out;
			ch = nv;
			ach = na;
		}
		k = &ch[nch++];
		memset(k, 0, sizeof(*k));
		k->awaited = y;
		k->source = HEAP_NONE;
		for (cur = i, prev = y; cur != HEAP_NONE && !on_chain[cur];) {
			uint32_t next;

			if (k->n == HEAP_ASYNC_MAX_DEPTH) {
				k->cut = true;
				break;
			}
			k->nodes[k->n++] = cur;
			on_chain[cur] = 1;
			next = outward(&c, cur, prev, &k->cut);
			prev = cur;
			cur = next;
		}
	}
	/* who owns an awaited task: a TaskCompletionSource referring to it */
	src = malloc((g->nnodes ? g->nnodes : 1) * sizeof(*src));
	if (!src)
		goto out;
	for (i = 0; i < g->nnodes; i++)
		src[i] = HEAP_NONE;
	for (i = 0; i < g->nnodes; i++) {
		uint32_t e;

		if (kind_of(&c, i) == K_TCS)
			for (e = g->edge_start[i]; e < g->edge_start[i + 1]; e++)
				src[g->edges[e]] = i;
	}
	for (i = 0; i < nch; i++)
		ch[i].source = src[ch[i].awaited];
	for (i = 0; i < nch; i++)
		a->chained += ch[i].n;
	err = make_groups(&c, ch, nch, a);
	if (!err)
		err = make_loose(&c, on_chain, a);
out:
	if (c.tframe)
		for (t = 0; t < g->ntypes; t++)
			free(c.tframe[t]);
	free(c.tframe);
	free(c.tkind);
	free(ch);
	free(src);
	free(on_chain);
	if (err) {
		heap_async_free(a);
		return err;
	}
	*out = a;
	return 0;
}

void heap_async_json(const struct heap_async *a, struct ct_json *j)
{
	uint32_t i, k;

	ct_json_kv_u64(j, "state_machines", a->boxes);
	ct_json_kv_u64(j, "on_chains", a->chained);
	ct_json_key(j, "chains");
	ct_json_arr_begin(j);
	for (i = 0; i < a->ngroups; i++) {
		const struct heap_async_group *g = &a->groups[i];

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "count", g->count);
		ct_json_kv_str(j, "awaits", g->awaited);
		if (g->source)
			ct_json_kv_str(j, "awaits_owner", g->source);
		else
			ct_json_kv_null(j, "awaits_owner");
		ct_json_kv_bool(j, "cut", g->cut);
		ct_json_key(j, "frames");
		ct_json_arr_begin(j);
		for (k = 0; k < g->nframes; k++)
			ct_json_str(j, g->frames[k]);
		ct_json_arr_end(j);
		ct_json_key(j, "raw_frames");
		ct_json_arr_begin(j);
		for (k = 0; k < g->nframes; k++)
			ct_json_str(j, g->raw_frames[k]);
		ct_json_arr_end(j);
		ct_json_kv_null(j, "waited_ms");
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_key(j, "not_followed");
	ct_json_arr_begin(j);
	for (i = 0; i < a->nloose; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "frame", a->loose[i].frame);
		ct_json_kv_u64(j, "count", a->loose[i].count);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

int heap_async_text(const struct heap_async *a, struct strbuf *out)
{
	uint32_t i, k;

	for (i = 0; i < a->ngroups; i++) {
		const struct heap_async_group *g = &a->groups[i];

		strbuf_addf(out, "\n%" PRIu64 " chain%s awaiting ", g->count, g->count == 1 ? "" : "s");
		ct_term_escape_str(out, g->awaited);
		if (g->source) {
			strbuf_addstr(out, " (the task of a ");
			ct_term_escape_str(out, g->source);
			strbuf_addch(out, ')');
		}
		strbuf_addch(out, '\n');
		if (g->cut)
			strbuf_addstr(out, "  ... (the chain goes on: a state machine tied to more than one caller)\n");
		for (k = 0; k < g->nframes; k++) {
			strbuf_addstr(out, "  ");
			ct_term_escape_str(out, g->frames[k]);
			strbuf_addch(out, '\n');
		}
		strbuf_addstr(out, "  └─ awaits ");
		ct_term_escape_str(out, g->awaited);
		strbuf_addch(out, '\n');
	}
	if (a->nloose) {
		strbuf_addstr(out, "\nstate machines on no followed chain (what they await was not identified; or "
				   "finished and still referenced):\n");
		for (i = 0; i < a->nloose; i++) {
			strbuf_addf(out, "  %6" PRIu64 "  ", a->loose[i].count);
			ct_term_escape_str(out, a->loose[i].frame);
			strbuf_addch(out, '\n');
		}
	}
	return strbuf_error(out);
}
