/* SPDX-License-Identifier: MIT */
/*
 * pattern.c - method patterns, signature normalization, near-name distance,
 * perf map line parsing and histograms: the pure parts of lib/probe.
 */
#include "common/compat.h"

#include <ctype.h>

#include "common/strparse.h"
#include "probe/probe.h"
#include "sym/sym.h"

static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "int", "int32" },     { "uint", "uint32" },   { "long", "int64" },
	{ "ulong", "uint64" },  { "short", "int16" },   { "ushort", "uint16" },
	{ "byte", "uint8" },    { "sbyte", "int8" },    { "double", "float64" },
	{ "float", "float32" }, { "boolean", "bool" },  { "nint", "nativeint" },
	{ "nuint", "nativeuint" }, { "System.Int32", "int32" }, { "System.Int64", "int64" },
	{ "System.String", "string" }, { "System.Boolean", "bool" },
	{ "System.Double", "float64" }, { "System.Single", "float32" },
	{ "System.Object", "object" }, { "System.Char", "char" },
	{ "decimal", "System.Decimal" }, { "System.Byte", "uint8" }, { "System.UInt32", "uint32" },
	{ "System.UInt64", "uint64" }, { "System.Int16", "int16" }, { "System.IntPtr", "nativeint" },
};

static int add_word(struct strbuf *out, const char *w, size_t n)
{
	size_t i;

	if ((n == 5 && !memcmp(w, "class", 5)) || (n == 9 && !memcmp(w, "valuetype", 9)))
		return 0;
	for (i = 0; i < ARRAY_SIZE(aliases); i++)
		if (strlen(aliases[i].alias) == n && !memcmp(aliases[i].alias, w, n))
			return strbuf_addstr(out, aliases[i].name);
	return strbuf_add(out, w, n);
}

static bool asm_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/*
 * The runtime's spelling of types (perf map, TypeString) -> the metadata one:
 * "MT: 0x..." comments dropped, "[Assembly]" prefixes dropped,
 * "Outer/Inner" -> "Outer+Inner", "[0...,0...]" -> "[,]", "[0...]" -> "[*]".
 */
static int sig_clean(const char *sig, struct strbuf *out)
{
	const char *p = sig;
	char prev = '\0';
	int err = 0;

	while (*p && !err) {
		if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");

			p = e ? e + 2 : p + strlen(p);
			while (out->len && out->buf[out->len - 1] == ' ')
				out->buf[--out->len] = '\0';
			continue;
		}
		if (*p == '[' && (!prev || prev == '(' || prev == ',' || prev == '<' || prev == ' ')) {
			const char *q = p + 1;

			while (asm_char(*q))
				q++;
			if (q > p + 1 && *q == ']' && (isalpha((unsigned char)q[1]) || q[1] == '_')) {
				p = q + 1; /* "[System.Runtime]System.Decimal" */
				continue;
			}
		}
		if (!strncmp(p, "method ", 7) &&
		    (!prev || prev == '(' || prev == ',' || prev == '<' || prev == ' ')) {
			/* a function pointer "method void *(int32)": metadata says "fnptr" */
			const char *q = strchr(p, '(');
			int depth = 0;

			for (; q && *q; q++) {
				depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
				if (!depth)
					break;
			}
			if (q && *q == ')') {
				err = strbuf_addstr(out, "fnptr");
				p = q + 1;
				prev = 'r';
				continue;
			}
		}
		if (*p == '[' && p[1] == '0' && p[2] == '.') {
			const char *q = p + 1;
			unsigned commas = 0;

			while (*q == '0' || *q == '.' || *q == ',' || isdigit((unsigned char)*q))
				commas += *q++ == ',';
			if (*q == ']') {
				err = strbuf_addch(out, '[');
				while (!err && commas--)
					err = strbuf_addch(out, ',');
				if (!err && !memchr(p, ',', (size_t)(q - p)))
					err = strbuf_addch(out, '*');
				if (!err)
					err = strbuf_addch(out, ']');
				p = q + 1;
				prev = ']';
				continue;
			}
		}
		prev = *p == '/' ? '+' : *p;
		err = strbuf_addch(out, prev);
		p++;
	}
	return err;
}

int probe_sig_normalize(const char *sig, struct strbuf *out)
{
	struct strbuf clean = STRBUF_INIT_MAX(out->max ? out->max : 65536);
	const char *p;
	int err = sig_clean(sig, &clean);

	if (err) {
		strbuf_release(&clean);
		return err;
	}
	p = clean.buf ? clean.buf : "";

	while (*p && !err) {
		if (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '`' || *p == '!') {
			const char *w = p;
			bool ws_after;

			while (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '`' ||
			       *p == '!')
				p++;
			/* "native int": keep the pair as one word */
			ws_after = *p == ' ';
			if ((size_t)(p - w) == 6 && !memcmp(w, "native", 6) && ws_after) {
				const char *w2;

				while (*p == ' ')
					p++;
				w2 = p;
				while (isalnum((unsigned char)*p))
					p++;
				err = strbuf_addstr(out, "native");
				if (!err)
					err = strbuf_add(out, w2, (size_t)(p - w2));
				continue;
			}
			err = add_word(out, w, (size_t)(p - w));
		} else if (*p == ' ' || *p == '\t') {
			p++;
		} else if (*p == '<') {
			err = strbuf_addch(out, '[');
			p++;
		} else if (*p == '>') {
			err = strbuf_addch(out, ']');
			p++;
		} else {
			err = strbuf_addch(out, *p);
			p++;
		}
	}
	strbuf_release(&clean);
	return err;
}

int probe_pm_name_base(const char *name, struct strbuf *out)
{
	const char *colons = NULL, *q;
	int depth = 0, err = 0;

	/* the last "::" outside brackets ends the type part */
	for (q = name; *q; q++) {
		if (*q == '[')
			depth++;
		else if (*q == ']' && depth)
			depth--;
		else if (!depth && q[0] == ':' && q[1] == ':')
			colons = q;
	}
	if (!colons)
		return strbuf_addstr(out, name);
	depth = 0;
	for (q = name; q < colons && !err; q++) {
		if (*q == '[')
			depth++;
		else if (*q == ']' && depth)
			depth--;
		else if (!depth)
			err = strbuf_addch(out, *q);
	}
	return err ? err : strbuf_addstr(out, colons);
}

/*
 * A type without its namespaces and generic arity, as a user writes it in C#:
 * "System.Span`1[uint8]" -> "Span[uint8]", "System.Threading.CancellationToken"
 * -> "CancellationToken". Nested "Outer+Inner" stays.
 */
static int short_types(const char *s, size_t n, struct strbuf *out)
{
	size_t i = 0;
	int err = 0;

	while (i < n && !err) {
		if (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '`' ||
		    s[i] == '!') {
			size_t w, last = i;

			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' ||
					 s[i] == '`' || s[i] == '!')) {
				if (s[i] == '.')
					last = i + 1;
				i++;
			}
			for (w = last; w < i && !err; w++) {
				if (s[w] == '`') {
					while (w + 1 < i && isdigit((unsigned char)s[w + 1]))
						w++;
					continue;
				}
				err = strbuf_addch(out, s[w]);
			}
			continue;
		}
		err = strbuf_addch(out, s[i++]);
	}
	return err;
}

/* Next top-level parameter of a normalized "(a,b[c,d],e)" list: [*pos, end). */
static bool next_param(const char *s, size_t *pos, size_t *start, size_t *end)
{
	size_t i = *pos;
	int depth = 0;

	if (s[i] == '(' || s[i] == ',')
		i++;
	if (!s[i] || s[i] == ')')
		return false;
	*start = i;
	for (; s[i]; i++) {
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']' && depth)
			depth--;
		else if (!depth && (s[i] == ',' || s[i] == ')'))
			break;
	}
	*end = i;
	*pos = i;
	return true;
}

/*
 * Parameter by parameter, where the user wrote a type without a namespace
 * ("(HttpContext)", "(Span<byte>)"), it matches the metadata type's short form.
 */
static bool params_match_short(const char *user, const char *md)
{
	size_t pu = 0, pm = 0, us, ue, ms, me;

	for (;;) {
		bool hu = next_param(user, &pu, &us, &ue), hm = next_param(md, &pm, &ms, &me);
		char up[1024];
		bool ok;

		if (!hu || !hm)
			return hu == hm;
		if (ue - us >= sizeof(up))
			return false;
		memcpy(up, user + us, ue - us);
		up[ue - us] = '\0';
		{
			char mp[4096];
			struct strbuf sh = STRBUF_INIT_MAX(4096);

			if (me - ms >= sizeof(mp))
				return false;
			memcpy(mp, md + ms, me - ms);
			mp[me - ms] = '\0';
			ok = pe_glob_match(up, mp) ||
			     (!strchr(up, '.') && !short_types(mp, strlen(mp), &sh) &&
			      pe_glob_match(up, sh.buf));
			strbuf_release(&sh);
		}
		if (!ok)
			return false;
	}
}

bool probe_pattern_type_match(const char *namepat, const char *name)
{
	const char *colons = strstr(name, "::");
	const char *dot = strchr(namepat, '.');
	char type[1024];
	size_t tl;

	/* "MyApp.*", "Ns.Type": a dot after the first byte (".ctor" is a method name) */
	if (strstr(namepat, "::") || !dot || dot == namepat || !colons)
		return false;
	tl = (size_t)(colons - name);
	if (tl >= sizeof(type))
		return false;
	memcpy(type, name, tl);
	type[tl] = '\0';
	return pe_glob_match(namepat, type);
}

bool probe_pattern_match(const char *pattern, const char *name, const char *sig)
{
	const char *paren = strchr(pattern, '(');
	const char *target = name;
	char namepat[1024];
	size_t nlen = paren ? (size_t)(paren - pattern) : strlen(pattern);
	const char *colons;
	bool ok;

	if (nlen >= sizeof(namepat))
		return false;
	memcpy(namepat, pattern, nlen);
	namepat[nlen] = '\0';
	/* no "::": match the method name alone */
	if (!strstr(namepat, "::")) {
		colons = strstr(name, "::");
		target = colons ? colons + 2 : name;
	}
	if (!pe_glob_match(namepat, target) && !probe_pattern_type_match(namepat, name))
		return false;
	if (!paren)
		return true;
	{
		struct strbuf a = STRBUF_INIT_MAX(4096), b = STRBUF_INIT_MAX(4096);

		ok = !probe_sig_normalize(paren, &a) && !probe_sig_normalize(sig ? sig : "()", &b) &&
		     (pe_glob_match(a.buf, b.buf) || params_match_short(a.buf, b.buf));
		strbuf_release(&a);
		strbuf_release(&b);
	}
	return ok;
}

unsigned probe_edit_distance(const char *a, const char *b, unsigned cap)
{
	unsigned row[257], i, j, la = (unsigned)strlen(a), lb = (unsigned)strlen(b);

	if (la > 256 || lb > 256)
		return cap;
	if (la > lb + cap || lb > la + cap)
		return cap;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		unsigned prev = row[0], best;

		row[0] = i;
		best = row[0];
		for (j = 1; j <= lb; j++) {
			unsigned cur = row[j];
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned v = prev + cost;

			if (row[j] + 1 < v)
				v = row[j] + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			prev = cur;
			if (v < best)
				best = v;
		}
		if (best >= cap)
			return cap;
	}
	return row[lb] < cap ? row[lb] : cap;
}

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		return -EBADMSG;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int probe_pm_parse(const char *line, size_t len, struct probe_pm_entry *e)
{
	struct sym_pm_line l;
	int err;

	memset(e, 0, sizeof(*e));
	err = sym_parse_perfmap_line(line, len, &l);
	if (err)
		return err;
	if (l.stub)
		return -ENOENT; /* stubs and helpers are not methods */
	/* A managed method has all of "[Module] Ns.Type::Method(args)". */
	if (!l.module || !l.sig || !memmem(l.name, l.name_len, "::", 2))
		return -EBADMSG;
	e->start = l.start;
	e->size = l.size;
	e->instance = l.instance;
	if (copy_field(e->module, sizeof(e->module), l.module, l.module_len) ||
	    copy_field(e->name, sizeof(e->name), l.name, l.name_len) ||
	    copy_field(e->args, sizeof(e->args), l.sig, l.sig_len) ||
	    (l.tier && copy_field(e->tier, sizeof(e->tier), l.tier, l.tier_len)))
		return -EBADMSG;
	return 0;
}

/* ---- code versions ---- */

/*
 * How likely a JIT version is the one that runs now: the runtime moves a
 * method up the tiers and never back, so the highest tier is the current
 * one; the perf map's order is not (on enabling, it lists existing code in
 * its own order). OSR code is entered mid-call from Tier0: last.
 */
static int tier_rank(const char *tier)
{
	if (strstr(tier, "OSR"))
		return 0;
	if (!strcmp(tier, "OptimizedTier1") || !strcmp(tier, "Optimized"))
		return 5;
	if (!strcmp(tier, "InstrumentedTierOptimized"))
		return 4;
	if (!strcmp(tier, "InstrumentedTier"))
		return 3;
	if (!strcmp(tier, "QuickJitted") || !strcmp(tier, "MinOptJitted"))
		return 2;
	return 1;
}

/* Is version a newer than b? Higher tier, then learned later, then later in the map. */
bool probe_code_newer(const struct probe_code *c, size_t a, size_t b)
{
	int ra = tier_rank(c[a].tier), rb = tier_rank(c[b].tier);

	if (ra != rb)
		return ra > rb;
	if (c[a].seen_ns != c[b].seen_ns)
		return c[a].seen_ns > c[b].seen_ns;
	return a > b;
}

/* ---- histograms ---- */

#define HIST_MAX_VALS (1u << 20)

void probe_hist_add(struct probe_hist *h, int64_t v)
{
	unsigned k = 0;

	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count++;
	if (v > 0)
		k = 64 - (unsigned)__builtin_clzll((uint64_t)v);
	h->log2[k]++;
	if (h->nvals == h->cap && h->cap < HIST_MAX_VALS) {
		size_t nc = h->cap ? h->cap * 2 : 256;
		int64_t *nv = realloc(h->vals, nc * sizeof(*nv));

		if (nv) {
			h->vals = nv;
			h->cap = nc;
		}
	}
	if (h->nvals < h->cap)
		h->vals[h->nvals++] = v;
}

static int bar(struct strbuf *out, uint64_t n, uint64_t maxn)
{
	unsigned w = maxn ? (unsigned)((n * 40 + maxn - 1) / maxn) : 0, i;
	int err = strbuf_addch(out, '|');

	for (i = 0; i < 40 && !err; i++)
		err = strbuf_addch(out, i < w ? '@' : ' ');
	return err ? err : strbuf_addch(out, '|');
}

int probe_hist_format(const struct probe_hist *h, const char *unit, struct strbuf *out)
{
	uint64_t maxn = 0, lin[10] = { 0 };
	int64_t width;
	unsigned k, lo = 65, hi = 0;
	size_t i;
	int err = 0;

	if (!h->count)
		return strbuf_addstr(out, "  (no values)\n");
	for (k = 0; k < 65; k++)
		if (h->log2[k]) {
			if (k < lo)
				lo = k;
			hi = k;
			if (h->log2[k] > maxn)
				maxn = h->log2[k];
		}
	err = strbuf_addf(out, "  log2 (%s): count %" PRIu64 ", min %" PRId64 ", max %" PRId64 "\n",
			  unit && *unit ? unit : "value", h->count, h->min, h->max);
	for (k = lo; k <= hi && !err; k++) {
		if (k == 0)
			err = strbuf_addf(out, "  %20s ", "<= 0");
		else {
			char r[48];

			snprintf(r, sizeof(r), "[%" PRIu64 ", %" PRIu64 ")", (uint64_t)1 << (k - 1),
				 k == 64 ? UINT64_MAX : (uint64_t)1 << k);
			err = strbuf_addf(out, "  %20s ", r);
		}
		if (!err)
			err = strbuf_addf(out, "%10" PRIu64 " ", h->log2[k]);
		if (!err)
			err = bar(out, h->log2[k], maxn);
		if (!err)
			err = strbuf_addch(out, '\n');
	}
	if (err || !h->nvals)
		return err;
	width = (h->max - h->min) / 10 + 1;
	for (i = 0; i < h->nvals; i++) {
		int64_t b = (h->vals[i] - h->min) / width;

		lin[b > 9 ? 9 : (b < 0 ? 0 : b)]++;
	}
	maxn = 0;
	for (k = 0; k < 10; k++)
		if (lin[k] > maxn)
			maxn = lin[k];
	err = strbuf_addf(out, "  linear (%s, width %" PRId64 "%s):\n", unit && *unit ? unit : "value",
			  width, h->nvals < h->count ? ", first values only" : "");
	for (k = 0; k < 10 && !err; k++) {
		char r[64];

		if (h->min + (int64_t)k * width > h->max)
			break;
		snprintf(r, sizeof(r), "[%" PRId64 ", %" PRId64 ")", h->min + (int64_t)k * width,
			 h->min + (int64_t)(k + 1) * width);
		err = strbuf_addf(out, "  %20s %10" PRIu64 " ", r, lin[k]);
		if (!err)
			err = bar(out, lin[k], maxn);
		if (!err)
			err = strbuf_addch(out, '\n');
	}
	return err;
}

void probe_hist_free(struct probe_hist *h)
{
	free(h->vals);
	memset(h, 0, sizeof(*h));
}
