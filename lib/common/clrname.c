/* SPDX-License-Identifier: MIT */
/* clrname.c - compiler-generated managed names back to the source's (see clrname.h). */
#include "common/compat.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "common/clrname.h"

struct span {
	const char *p;
	size_t n;
};

static bool span_is(struct span s, const char *lit)
{
	return s.n == strlen(lit) && !memcmp(s.p, lit, s.n);
}

static bool span_starts(struct span s, const char *lit)
{
	size_t l = strlen(lit);

	return s.n >= l && !memcmp(s.p, lit, l);
}

/* Index of the last "::" outside [...], or -1. */
static ptrdiff_t find_sep(const char *s, size_t n)
{
	ptrdiff_t at = -1;
	int depth = 0;
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']' && depth > 0)
			depth--;
		else if (!depth && s[i] == ':' && s[i + 1] == ':')
			at = (ptrdiff_t)i++;
	}
	return at;
}

/* s starts with '<': length of the "<...>" group (its matching '>'), 0 if none. */
static size_t angle_group(struct span s)
{
	int depth = 0;
	size_t i;

	for (i = 0; i < s.n; i++) {
		if (s.p[i] == '<')
			depth++;
		else if (s.p[i] == '>' && --depth == 0)
			return i + 1;
	}
	return 0;
}

static bool all_digits(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return n > 0;
}

/* A trailing "[...]" (balanced) of s: its length, 0 if s does not end in one. */
static size_t trailing_brackets(struct span s)
{
	int depth = 0;
	size_t i = s.n;

	if (!s.n || s.p[s.n - 1] != ']')
		return 0;
	while (i-- > 0) {
		if (s.p[i] == ']')
			depth++;
		else if (s.p[i] == '[' && --depth == 0)
			return s.n - i;
	}
	return 0;
}

/* Strips a generic arity "`N" at the end of s; true when there was one. */
static bool strip_arity(struct span *s)
{
	size_t i = s->n;

	while (i > 0 && s->p[i - 1] >= '0' && s->p[i - 1] <= '9')
		i--;
	if (i == s->n || i == 0 || s->p[i - 1] != '`')
		return false;
	s->n = i - 1;
	return true;
}

/* The last nested segment of a type (after the last '+'); rest gets what is before it. */
static struct span last_segment(struct span type, struct span *rest)
{
	size_t i = type.n;

	while (i > 0 && type.p[i - 1] != '+')
		i--;
	*rest = (struct span){ type.p, i ? i - 1 : 0 };
	return (struct span){ type.p + i, type.n - i };
}

/* "<X>d" or "<X>d__N" (an async method's or iterator's state machine): X. */
static bool state_machine(struct span seg, struct span *x)
{
	size_t g;

	(void)strip_arity(&seg);
	if (!seg.n || seg.p[0] != '<')
		return false;
	g = angle_group(seg);
	if (g < 3 || g >= seg.n || seg.p[g] != 'd')
		return false;
	if (g + 1 != seg.n && !(seg.n > g + 3 && seg.p[g + 1] == '_' && seg.p[g + 2] == '_' &&
				all_digits(seg.p + g + 3, seg.n - g - 3)))
		return false;
	*x = (struct span){ seg.p + 1, g - 2 };
	return true;
}

/* A closure class: "<>c", "<>c__DisplayClass..." or a generic method's "<>c__N`1". */
static bool closure_class(struct span seg)
{
	(void)strip_arity(&seg);
	return span_is(seg, "<>c") || span_starts(seg, "<>c__");
}

struct out {
	char *p;
	size_t cap, len;
	bool over;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->over || o->len + n + 1 > o->cap) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

/* A type argument naming a state machine ("A.B+<M>d__3", maybe instantiated): "A.B::M". */
static int pretty_depth(const char *raw, size_t len, char *out, size_t cap, int depth);

static bool arg_state_machine(struct span arg, struct out *o, int depth)
{
	char tmp[512], pretty[512];
	const char *mark;
	int rc;

	if (depth >= 4 || arg.n + 11 > sizeof(tmp) || !memmem(arg.p, arg.n, ">d", 2))
		return false;
	memcpy(tmp, arg.p, arg.n);
	memcpy(tmp + arg.n, "::MoveNext", 11);
	rc = pretty_depth(tmp, arg.n + 10, pretty, sizeof(pretty), depth + 1);
	mark = rc == 1 ? strstr(pretty, " [async") : NULL;
	if (!mark)
		return false;
	put(o, pretty, (size_t)(mark - pretty));
	return true;
}

/*
 * Copies s to o, with every type argument that is a state machine named as
 * its method: AsyncStateMachineBox`1[System.Int64,Shop+<Price>d__4] gives
 * AsyncStateMachineBox`1[System.Int64,Shop::Price]. True when one was.
 */
static bool rewrite_args(struct span s, struct out *o, int level, int depth)
{
	size_t i = 0;
	bool any = false;

	while (i < s.n) {
		if (s.p[i] != '[' || level > 8) {
			put(o, s.p + i, 1);
			i++;
			continue;
		}
		put(o, "[", 1);
		i++;
		while (i < s.n) {
			size_t end = i;
			int nest = 0;
			struct span arg;

			for (; end < s.n; end++) {
				if (s.p[end] == '[')
					nest++;
				else if (s.p[end] == ']' && nest > 0)
					nest--;
				else if (!nest && (s.p[end] == ',' || s.p[end] == ']'))
					break;
			}
			arg = (struct span){ s.p + i, end - i };
			if (arg_state_machine(arg, o, depth))
				any = true;
			else if (rewrite_args(arg, o, level + 1, depth))
				any = true;
			if (end == s.n)
				return any;
			put(o, s.p + end, 1);
			i = end + 1;
			if (s.p[end] == ']')
				break;
		}
	}
	return any;
}

static int pretty_frame(const char *raw, size_t len, char *out, size_t cap);

int ct_clrname_pretty(const char *raw, size_t len, char *out, size_t cap)
{
	return pretty_depth(raw, len, out, cap, 0);
}

/* depth: how many type arguments deep (each level costs about 2 KiB of stack) */
static int pretty_depth(const char *raw, size_t len, char *out, size_t cap, int depth)
{
	char tmp[1024];
	struct out o = { out, cap, 0, false };
	struct span s;
	int rc;

	/* every compiler-generated name has a '<': most names end here */
	if (!memchr(raw, '<', len))
		return 0;
	rc = pretty_frame(raw, len, tmp, sizeof(tmp));
	s = rc == 1 ? (struct span){ tmp, strlen(tmp) } : (struct span){ raw, len };
	if (rc < 0)
		return rc;
	if (!cap)
		return 0;
	if (!memchr(s.p, '[', s.n) || !memmem(s.p, s.n, ">d", 2)) {
		if (rc != 1)
			return 0;
		put(&o, s.p, s.n);
		return o.over ? -EMSGSIZE : 1;
	}
	if (!rewrite_args(s, &o, 0, depth) && rc != 1)
		return 0;
	return o.over ? -EMSGSIZE : 1;
}

static int pretty_frame(const char *raw, size_t len, char *out, size_t cap)
{
	ptrdiff_t sep = find_sep(raw, len);
	struct span type, meth, inst = { NULL, 0 }, rest, seg, local = { NULL, 0 };
	bool async = false, lambda = false, changed = false, generic = false;
	struct out o = { out, cap, 0, false };
	size_t b, g;

	if (sep <= 0 || !cap)
		return 0;
	type = (struct span){ raw, (size_t)sep };
	meth = (struct span){ raw + sep + 2, len - (size_t)sep - 2 };
	/* instantiation of the whole nested chain: "Outer`1+<M>d__3[System.__Canon]" */
	b = trailing_brackets(type);
	if (b) {
		inst = (struct span){ type.p + type.n - b, b };
		type.n -= b;
	}
	seg = last_segment(type, &rest);
	if (span_is(meth, "MoveNext") && rest.n && state_machine(seg, &meth)) {
		async = true;
		changed = true;
		type = rest;
	}
	if (meth.n > 2 && meth.p[0] == '<' && (g = angle_group(meth)) > 2 && g + 3 <= meth.n &&
	    meth.p[g + 1] == '_' && meth.p[g + 2] == '_') {
		struct span x = { meth.p + 1, g - 2 };

		if (meth.p[g] == 'b') {
			lambda = true;
			meth = x;
			changed = true;
		} else if (meth.p[g] == 'g') {
			const char *bar = memchr(meth.p + g + 3, '|', meth.n - g - 3);

			local = (struct span){ meth.p + g + 3,
					       bar ? (size_t)(bar - meth.p - g - 3) : meth.n - g - 3 };
			meth = x;
			changed = true;
		}
	}
	for (;;) {
		seg = last_segment(type, &rest);
		if (!rest.n || !closure_class(seg))
			break;
		type = rest;
		changed = true;
	}
	if (!changed)
		return 0;
	/* keep the instantiation only when a type left in the chain is generic */
	generic = type.n && memchr(type.p, '`', type.n) != NULL;
	put(&o, type.p, type.n);
	if (generic && inst.n)
		put(&o, inst.p, inst.n);
	put(&o, "::", 2);
	put(&o, meth.p, meth.n);
	if (async || lambda || local.n) {
		put(&o, " [", 2);
		if (async)
			put(&o, "async", 5);
		if (lambda)
			put(&o, async ? " lambda" : "lambda", async ? 7 : 6);
		if (local.n) {
			put(&o, async ? " local " : "local ", async ? 7 : 6);
			put(&o, local.p, local.n);
		}
		put(&o, "]", 1);
	}
	return o.over ? -EMSGSIZE : 1;
}

static atomic_bool raw_names;

void ct_clrname_set_raw(bool raw)
{
	atomic_store(&raw_names, raw);
}

bool ct_clrname_raw(void)
{
	return atomic_load(&raw_names);
}

const char *ct_clrname_display(const char *raw, char *out, size_t cap)
{
	if (!raw || ct_clrname_raw())
		return raw;
	return ct_clrname_pretty(raw, strlen(raw), out, cap) == 1 ? out : raw;
}
