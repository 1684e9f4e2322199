/* SPDX-License-Identifier: MIT */
/*
 * flame_otlp.c - a flame as one OTLP profiles export request
 * (opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest,
 * opentelemetry-proto v1.11.0), protobuf written by hand like flame_pprof.c.
 *
 * Field numbers are the published ones (v1.11.0):
 *   ExportProfilesServiceRequest: resource_profiles 1, dictionary 2
 *   ProfilesDictionary: mapping_table 1, location_table 2, function_table 3,
 *     link_table 4, string_table 5, attribute_table 6, stack_table 7
 *   ResourceProfiles: resource 1, scope_profiles 2    ScopeProfiles: scope 1, profiles 2
 *   Resource: attributes 1 (KeyValue: key 1, value 2; AnyValue: string_value 1, int_value 3)
 *   InstrumentationScope: name 1, version 2
 *   Profile: sample_type 1, samples 2, time_unix_nano 3 (fixed64), duration_nano 4,
 *     period_type 5, period 6, profile_id 7
 *   ValueType: type_strindex 1, unit_strindex 2
 *   Sample: stack_index 1, values 4 (packed)     Stack: location_indices 1 (packed, leaf first)
 *   Location: lines 3    Line: function_index 1    Function: name_strindex 1, system_name_strindex 2
 *   Link: trace_id 1, span_id 2
 * Every dictionary table starts with its zero value, as the spec requires;
 * string 0 is "". Names are turned into valid UTF-8 (U+FFFD for bad bytes).
 */
#include "common/compat.h"

#include "flame/flame_int.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static void pw_varint(struct strbuf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	strbuf_add(b, t, n);
}

static void pw_key(struct strbuf *b, unsigned field, unsigned wt)
{
	pw_varint(b, (uint64_t)field << 3 | wt);
}

static void pw_uint(struct strbuf *b, unsigned field, uint64_t v)
{
	pw_key(b, field, WT_VARINT);
	pw_varint(b, v);
}

static void pw_bytes(struct strbuf *b, unsigned field, const void *p, size_t n)
{
	pw_key(b, field, WT_LEN);
	pw_varint(b, n);
	strbuf_add(b, p, n);
}

static void pw_msg(struct strbuf *b, unsigned field, const struct strbuf *m)
{
	pw_bytes(b, field, m->buf, m->len);
	if (m->err && !b->err)
		b->err = m->err;
}

/* A string field, as valid UTF-8. */
static void pw_str(struct strbuf *b, unsigned field, const char *s, size_t len)
{
	struct flame_out tmp;
	size_t i = 0;

	flame_out_init(&tmp, -1);
	while (i < len) {
		uint32_t cp;

		i += flame_utf8_next(s + i, len - i, &cp);
		flame_out_cp(&tmp, cp);
	}
	pw_bytes(b, field, tmp.sb.buf, tmp.sb.len);
	if (tmp.err && !b->err)
		b->err = tmp.err;
	strbuf_release(&tmp.sb);
}

/* Fixed strings after "" (index 0); names follow at S_NAMES. */
enum { S_SAMPLES = 1, S_COUNT, S_CPU, S_NANOSECONDS, S_NAMES };
static const char *const fixed[S_NAMES] = { "", "samples", "count", "cpu", "nanoseconds" };

static void value_type(struct strbuf *b, unsigned field, unsigned type, unsigned unit)
{
	struct strbuf m = STRBUF_INIT;

	pw_uint(&m, 1, type);
	pw_uint(&m, 2, unit);
	pw_msg(b, field, &m);
	strbuf_release(&m);
}

static void dictionary(const struct flame_view *v, struct strbuf *b, struct strbuf *stacks,
		       const char *const *fx)
{
	struct strbuf m = STRBUF_INIT, l = STRBUF_INIT;
	size_t i;

	pw_bytes(b, 1, "", 0);       /* mapping_table[0] */
	pw_bytes(b, 2, "", 0);       /* location_table[0] */
	for (i = 0; i < v->nused; i++) { /* location i+1 -> function i+1 */
		strbuf_reset(&m);
		strbuf_reset(&l);
		pw_uint(&l, 1, i + 1);
		pw_msg(&m, 3, &l);
		pw_msg(b, 2, &m);
	}
	pw_bytes(b, 3, "", 0); /* function_table[0] */
	for (i = 0; i < v->nused; i++) {
		strbuf_reset(&m);
		pw_uint(&m, 1, S_NAMES + i);
		pw_uint(&m, 2, S_NAMES + i);
		pw_msg(b, 3, &m);
	}
	/* link_table[0]: 16 and 8 zero bytes, as the spec recommends */
	strbuf_reset(&m);
	pw_bytes(&m, 1, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	pw_bytes(&m, 2, "\0\0\0\0\0\0\0\0", 8);
	pw_msg(b, 4, &m);
	for (i = 0; i < S_NAMES; i++)
		pw_bytes(b, 5, fx[i], strlen(fx[i]));
	for (i = 0; i < v->nused; i++) {
		const struct flame_name *nm = &v->f->names[v->byrank[i]];

		pw_str(b, 5, nm->s, nm->len);
	}
	pw_bytes(b, 6, "", 0); /* attribute_table[0] */
	pw_bytes(b, 7, "", 0); /* stack_table[0] */
	strbuf_add(b, stacks->buf, stacks->len);
	strbuf_release(&m);
	strbuf_release(&l);
}

static void resource(struct strbuf *b, const struct flame_otlp_attr *a, size_t n)
{
	struct strbuf kv = STRBUF_INIT, av = STRBUF_INIT;
	size_t i;

	for (i = 0; i < n; i++) {
		strbuf_reset(&kv);
		strbuf_reset(&av);
		if (a[i].is_int)
			pw_uint(&av, 3, (uint64_t)a[i].ivalue);
		else
			pw_str(&av, 1, a[i].value, strlen(a[i].value));
		pw_str(&kv, 1, a[i].key, strlen(a[i].key));
		pw_msg(&kv, 2, &av);
		pw_msg(b, 1, &kv);
	}
	strbuf_release(&kv);
	strbuf_release(&av);
}

int flame_otlp_request(const struct flame *f, const struct flame_opts *o,
		       const struct flame_otlp_attr *attrs, size_t nattrs, const char *scope_name,
		       const char *scope_version, const uint8_t profile_id[16], struct strbuf *out)
{
	struct flame_opts dflt = { 0 };
	struct strbuf samples = STRBUF_INIT, samples2 = STRBUF_INIT, stacks = STRBUF_INIT, m = STRBUF_INIT,
		      ids = STRBUF_INIT, prof = STRBUF_INIT, sp = STRBUF_INIT, rp = STRBUF_INIT,
		      dict = STRBUF_INIT;
	struct flame_view v;
	struct flame_walk *w;
	uint32_t c;
	uint64_t nstack = 0;
	const char *fx[S_NAMES];
	bool custom, two;
	int ev, i, np, err;

	if (!f || !out)
		return -EINVAL;
	if (!o)
		o = &dflt;
	/* custom sample types (flame_opts.types): one Profile per type, sharing the dictionary */
	custom = o->types[0] && o->types[1];
	two = custom && o->types[2] && o->types[3];
	for (i = 0; i < S_NAMES; i++)
		fx[i] = custom && i && o->types[i - 1] ? o->types[i - 1] : fixed[i];
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	err = flame_view_build(f, &v);
	if (err) {
		free(w);
		return err;
	}
	/* one Stack and one Sample per distinct stack with weight */
	flame_walk_init(w, &v);
	while ((ev = flame_walk_next(w, &c)) != FLAME_WALK_END) {
		const struct flame_node *n = &f->nodes[c];

		if (ev != FLAME_WALK_ENTER || !n->self)
			continue;
		strbuf_reset(&ids);
		for (i = w->sp; i >= 1; i--)
			pw_varint(&ids, (uint64_t)v.rank[f->nodes[w->stk[i]].name] + 1);
		strbuf_reset(&m);
		pw_msg(&m, 1, &ids);
		pw_msg(&stacks, 7, &m);
		nstack++;
		strbuf_reset(&ids);
		pw_varint(&ids, two ? n->hits : n->self);
		strbuf_reset(&m);
		pw_uint(&m, 1, nstack);
		pw_msg(&m, 4, &ids);
		pw_msg(&samples, 2, &m);
		if (two) {
			strbuf_reset(&ids);
			pw_varint(&ids, n->self);
			strbuf_reset(&m);
			pw_uint(&m, 1, nstack);
			pw_msg(&m, 4, &ids);
			pw_msg(&samples2, 2, &m);
		}
	}
	free(w);
	dictionary(&v, &dict, &stacks, fx);
	flame_view_free(&v);

	for (np = 0; np < (two ? 2 : 1); np++) {
		strbuf_reset(&prof);
		if (np == 0)
			value_type(&prof, 1, S_SAMPLES, S_COUNT);
		else
			value_type(&prof, 1, S_CPU, S_NANOSECONDS); /* the second type's strings */
		if (np == 0)
			strbuf_add(&prof, samples.buf, samples.len);
		else
			strbuf_add(&prof, samples2.buf, samples2.len);
		if (o->time_unix_ns) {
			uint64_t t = (uint64_t)o->time_unix_ns;
			uint8_t le[8];

			for (i = 0; i < 8; i++)
				le[i] = (uint8_t)(t >> (8 * i));
			pw_key(&prof, 3, WT_I64);
			strbuf_add(&prof, le, 8);
		}
		if (o->duration_ns)
			pw_uint(&prof, 4, o->duration_ns);
		if (o->period && !custom) {
			value_type(&prof, 5, S_CPU, S_NANOSECONDS);
			pw_uint(&prof, 6, o->period);
		}
		if (profile_id) {
			uint8_t id[16];

			memcpy(id, profile_id, 16);
			id[15] ^= (uint8_t)np; /* each profile its own id */
			pw_bytes(&prof, 7, id, 16);
		}
		if (np == 0) {
			/* ScopeProfiles { scope { name, version }, profiles } */
			strbuf_reset(&m);
			if (scope_name)
				pw_str(&m, 1, scope_name, strlen(scope_name));
			if (scope_version)
				pw_str(&m, 2, scope_version, strlen(scope_version));
			pw_msg(&sp, 1, &m);
		}
		pw_msg(&sp, 2, &prof);
	}
	/* ResourceProfiles { resource, scope_profiles } */
	strbuf_reset(&m);
	resource(&m, attrs, nattrs);
	pw_msg(&rp, 1, &m);
	pw_msg(&rp, 2, &sp);
	pw_msg(out, 1, &rp);
	pw_msg(out, 2, &dict);
	err = samples.err ? samples.err : samples2.err ? samples2.err : stacks.err ? stacks.err : ids.err ? ids.err : out->err;
	strbuf_release(&samples);
	strbuf_release(&samples2);
	strbuf_release(&stacks);
	strbuf_release(&m);
	strbuf_release(&ids);
	strbuf_release(&prof);
	strbuf_release(&sp);
	strbuf_release(&rp);
	strbuf_release(&dict);
	return err;
}
