/* SPDX-License-Identifier: MIT */
/*
 * flame_pprof.c - gzip'd perftools.profiles.Profile (pprof's profile.proto).
 *
 * The protobuf encoding is written by hand: we emit only five message types
 * (Profile, ValueType, Sample, Location+Line, Function) and never read
 * protobuf, so a varint writer and a length-prefix writer are all it takes.
 * protobuf-c would need code generated from profile.proto by protoc-c at
 * build time plus a runtime library, for about a hundred lines of encoding.
 *
 * Layout: one Function and one Location per distinct frame name (ids are
 * rank + 1, so stable); one Sample per distinct stack, location_ids leaf
 * first as profile.proto requires. Values: "samples"/"count" always; with
 * weights in nanoseconds, or with opts->period for sample weights, a second
 * "cpu"/"nanoseconds" value and period_type cpu/nanoseconds.
 *
 * Field numbers are from profile.proto:
 *   Profile: sample_type 1, sample 2, location 4, function 5, string_table 6,
 *            time_nanos 9, duration_nanos 10, period_type 11, period 12, comment 13
 *   ValueType: type 1, unit 2          Sample: location_id 1, value 2 (packed)
 *   Location: id 1, line 4             Line: function_id 1, line 2
 *   Function: id 1, name 2, system_name 3, filename 4
 *
 * A frame named "NAME in FILE:line N" (trace report --lines) gets Function
 * name NAME, filename FILE and Line.line N (its own Function and Location per
 * line, so `go tool pprof -lines` lists the lines of a hot method).
 */
#include "common/compat.h"

#include "flame/flame_int.h"

enum { WT_VARINT = 0, WT_LEN = 2 };

/* String table indexes of the fixed strings; names follow at STR_NAMES. */
enum { STR_EMPTY, STR_SAMPLES, STR_COUNT, STR_CPU, STR_NANOSECONDS, STR_NAMES };
static const char *const fixed_strings[STR_NAMES] = { "", "samples", "count", "cpu", "nanoseconds" };

/*
 * Scratch space for one message, on the caller's stack. Messages here are
 * bounded: a Sample holds at most FLAME_MAX_DEPTH location ids of at most 5
 * bytes each plus two values; the others are a few varints.
 */
struct pb {
	uint8_t *buf;
	size_t len;
};

#define PB_BIG (FLAME_MAX_DEPTH * 5 + 64)
#define PB_SMALL 64
#define PB(storage) { (storage), 0 }

static void pb_varint(struct pb *b, uint64_t v)
{
	while (v >= 0x80) {
		b->buf[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->buf[b->len++] = (uint8_t)v;
}

static void pb_key(struct pb *b, unsigned field, unsigned wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	pb_key(b, field, WT_VARINT);
	pb_varint(b, v);
}

/* Field `field` holding the bytes of `inner` (a nested message or packed list). */
static void pb_sub(struct pb *b, unsigned field, const struct pb *inner)
{
	pb_key(b, field, WT_LEN);
	pb_varint(b, inner->len);
	memcpy(b->buf + b->len, inner->buf, inner->len);
	b->len += inner->len;
}

static void out_pb(struct flame_out *o, const struct pb *b)
{
	flame_out_add(o, b->buf, b->len);
	flame_out_maybe_flush(o);
}

/* A top-level length-delimited field written straight to the output. */
static void out_field_msg(struct flame_out *o, unsigned field, const struct pb *inner)
{
	uint8_t st[PB_SMALL];
	struct pb hdr = PB(st);

	pb_key(&hdr, field, WT_LEN);
	pb_varint(&hdr, inner->len);
	flame_out_add(o, hdr.buf, hdr.len);
	out_pb(o, inner);
}

/* A string: escaped to valid UTF-8 first (proto3 strings must be UTF-8). */
static void out_string(struct flame_out *o, const char *s, size_t len)
{
	struct flame_out tmp;
	uint8_t st[PB_SMALL];
	struct pb hdr = PB(st);
	size_t i;
	bool ascii = true;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			ascii = false;
	if (ascii) {
		pb_key(&hdr, 6, WT_LEN);
		pb_varint(&hdr, len);
		flame_out_add(o, hdr.buf, hdr.len);
		flame_out_add(o, s, len);
		flame_out_maybe_flush(o);
		return;
	}
	flame_out_init(&tmp, -1);
	i = 0;
	while (i < len) {
		uint32_t cp;

		i += flame_utf8_next(s + i, len - i, &cp);
		flame_out_cp(&tmp, cp);
	}
	pb_key(&hdr, 6, WT_LEN);
	pb_varint(&hdr, tmp.sb.len);
	flame_out_add(o, hdr.buf, hdr.len);
	flame_out_add(o, tmp.sb.buf, tmp.sb.len);
	if (tmp.err && !o->err)
		o->err = tmp.err;
	strbuf_release(&tmp.sb);
	flame_out_maybe_flush(o);
}

static void out_value_type(struct flame_out *o, unsigned field, uint64_t type, uint64_t unit)
{
	uint8_t st[PB_SMALL];
	struct pb vt = PB(st);

	pb_uint(&vt, 1, type);
	pb_uint(&vt, 2, unit);
	out_field_msg(o, field, &vt);
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static void out_samples(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts,
			bool two)
{
	const struct flame *f = v->f;
	bool ns = flame_opts_is_ns(opts) || opts->types[2];
	uint8_t ids_st[PB_BIG], vals_st[PB_SMALL], s_st[PB_BIG + PB_SMALL];
	struct flame_walk w;
	uint32_t c;
	int ev, i;

	flame_walk_init(&w, v);
	while (!o->err && (ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		const struct flame_node *n = &f->nodes[c];
		struct pb ids = PB(ids_st), vals = PB(vals_st), s = PB(s_st);

		if (ev != FLAME_WALK_ENTER || !n->self)
			continue;
		for (i = w.sp; i >= 1; i--)
			pb_varint(&ids, (uint64_t)v->rank[f->nodes[w.stk[i]].name] + 1);
		if (ns) {
			pb_varint(&vals, n->hits);
			pb_varint(&vals, n->self);
		} else {
			pb_varint(&vals, n->self);
			if (two)
				pb_varint(&vals, sat_mul(n->self, opts->period));
		}
		pb_sub(&s, 1, &ids);
		pb_sub(&s, 2, &vals);
		out_field_msg(o, 2, &s);
	}
}

/* A frame name with its source line: its function name and file strings. */
struct pp_line {
	uint32_t name_len, file_off, file_len, line;
	uint64_t name_str, file_str; /* string table indexes, 0: none */
};

int flame_write_pprof(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts)
{
	const struct flame *f = v->f;
	bool custom = opts->types[0] && opts->types[1];
	bool two = custom ? opts->types[2] && opts->types[3] : flame_opts_is_ns(opts) || opts->period;
	const char *fixed[STR_NAMES];
	uint8_t st[PB_SMALL], st2[PB_SMALL], hst[PB_SMALL];
	struct pb hdr = PB(hst);
	struct pp_line *pl;
	const char *p;
	size_t i, nnotes = 0;
	uint64_t next_str = STR_NAMES + v->nused;
	int err;

	for (i = 0; i < STR_NAMES; i++)
		fixed[i] = custom && i && opts->types[i - 1] ? opts->types[i - 1] : fixed_strings[i];
	pl = calloc(v->nused ? v->nused : 1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	for (i = 0; i < v->nused; i++) {
		const struct flame_name *nm = &f->names[v->byrank[i]];
		const char *file;
		size_t nlen, flen;

		if (!flame_name_line(nm->s, nm->len, &nlen, &file, &flen, &pl[i].line))
			continue;
		pl[i].name_len = (uint32_t)nlen;
		pl[i].file_off = (uint32_t)(file - nm->s);
		pl[i].file_len = (uint32_t)flen;
		pl[i].name_str = next_str++;
		pl[i].file_str = next_str++;
	}
	err = flame_out_gzip(o);
	if (err) {
		free(pl);
		return err;
	}
	out_value_type(o, 1, STR_SAMPLES, STR_COUNT);
	if (two)
		out_value_type(o, 1, STR_CPU, STR_NANOSECONDS);
	out_samples(v, o, opts, two);
	for (i = 0; i < v->nused && !o->err; i++) {
		struct pb loc = PB(st), line = PB(st2);

		pb_uint(&line, 1, i + 1);
		if (pl[i].line)
			pb_uint(&line, 2, pl[i].line);
		pb_uint(&loc, 1, i + 1);
		pb_sub(&loc, 4, &line);
		out_field_msg(o, 4, &loc);
	}
	for (i = 0; i < v->nused && !o->err; i++) {
		struct pb fn = PB(st);
		uint64_t nm = pl[i].line ? pl[i].name_str : STR_NAMES + i;

		pb_uint(&fn, 1, i + 1);
		pb_uint(&fn, 2, nm);
		pb_uint(&fn, 3, nm);
		if (pl[i].line)
			pb_uint(&fn, 4, pl[i].file_str);
		out_field_msg(o, 5, &fn);
	}
	for (i = 0; i < STR_NAMES; i++)
		out_string(o, fixed[i], strlen(fixed[i]));
	for (i = 0; i < v->nused && !o->err; i++) {
		const struct flame_name *nm = &f->names[v->byrank[i]];

		out_string(o, nm->s, nm->len);
	}
	for (i = 0; i < v->nused && !o->err; i++) {
		const struct flame_name *nm = &f->names[v->byrank[i]];

		if (!pl[i].line)
			continue;
		out_string(o, nm->s, pl[i].name_len);
		out_string(o, nm->s + pl[i].file_off, pl[i].file_len);
	}
	free(pl);
	for (p = opts->notes; p && *p && !o->err;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		out_string(o, p, l);
		nnotes++;
		p += l + (e ? 1 : 0);
	}
	for (i = 0; i < nnotes && !o->err; i++) {
		struct pb c = PB(st);

		pb_uint(&c, 13, next_str + i);
		out_pb(o, &c);
	}
	if (opts->time_unix_ns)
		pb_uint(&hdr, 9, (uint64_t)opts->time_unix_ns);
	if (opts->duration_ns)
		pb_uint(&hdr, 10, opts->duration_ns);
	if (two && !custom) {
		struct pb vt = PB(st2);

		pb_uint(&vt, 1, STR_CPU);
		pb_uint(&vt, 2, STR_NANOSECONDS);
		pb_sub(&hdr, 11, &vt);
		if (opts->period)
			pb_uint(&hdr, 12, opts->period);
	}
	out_pb(o, &hdr);
	return o->err;
}
