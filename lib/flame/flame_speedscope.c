/* SPDX-License-Identifier: MIT */
/*
 * flame_speedscope.c - speedscope's file format: one "sampled" profile whose
 * samples are the distinct stacks (frame indexes, root first) and whose
 * weights are the stacks' self weights. shared.frames lists every name once,
 * in byte order, so output is stable. Strings are JSON-escaped and always
 * valid UTF-8 (see flame_out_json_str).
 */
#include "common/compat.h"

#include "flame/flame_int.h"

/* Walks the distinct stacks (nodes with self weight) in order; writes either
 * each stack's frame list or its weight. */
static void out_samples(const struct flame_view *v, struct flame_out *o, bool weights)
{
	const struct flame *f = v->f;
	struct flame_walk w;
	bool first = true;
	uint32_t c;
	int ev, i;

	flame_walk_init(&w, v);
	while (!o->err && (ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		if (ev != FLAME_WALK_ENTER || !f->nodes[c].self)
			continue;
		if (!first)
			flame_out_add(o, ",", 1);
		first = false;
		if (weights) {
			flame_out_f(o, "%" PRIu64, f->nodes[c].self);
		} else {
			flame_out_add(o, "[", 1);
			for (i = 1; i <= w.sp; i++)
				flame_out_f(o, i > 1 ? ",%" PRIu32 : "%" PRIu32,
					    v->rank[f->nodes[w.stk[i]].name]);
			flame_out_add(o, "]", 1);
		}
		flame_out_maybe_flush(o);
	}
}

int flame_write_speedscope(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts)
{
	const struct flame *f = v->f;
	const char *name = opts->title && *opts->title ? opts->title : "clrtap";
	size_t i;

	flame_out_str(o, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
			 "\"shared\":{\"frames\":[");
	for (i = 0; i < v->nused && !o->err; i++) {
		const struct flame_name *nm = &f->names[v->byrank[i]];
		const char *file;
		size_t nlen, flen;
		uint32_t line;

		flame_out_str(o, i ? ",\n{\"name\":\"" : "\n{\"name\":\"");
		flame_out_json_str(o, nm->s, nm->len);
		if (flame_name_line(nm->s, nm->len, &nlen, &file, &flen, &line)) {
			flame_out_str(o, "\",\"file\":\"");
			flame_out_json_str(o, file, flen);
			flame_out_f(o, "\",\"line\":%" PRIu32 "}", line);
		} else {
			flame_out_str(o, "\"}");
		}
		flame_out_maybe_flush(o);
	}
	flame_out_str(o, "]},\n\"profiles\":[{\"type\":\"sampled\",\"name\":\"");
	flame_out_json_str(o, name, strlen(name));
	flame_out_f(o, "\",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
		    flame_opts_is_ns(opts) ? "nanoseconds" : "none", f->total);
	out_samples(v, o, false);
	flame_out_str(o, "],\n\"weights\":[");
	out_samples(v, o, true);
	flame_out_str(o, "]}],\n\"name\":\"");
	flame_out_json_str(o, name, strlen(name));
	flame_out_str(o, "\",\"activeProfileIndex\":0,\"exporter\":\"clrtap\"");
	if (opts->notes && *opts->notes) {
		const char *p = opts->notes;
		bool first = true;

		flame_out_str(o, ",\n\"clrtapNotes\":[");
		while (*p && !o->err) {
			const char *e = strchr(p, '\n');
			size_t l = e ? (size_t)(e - p) : strlen(p);

			flame_out_str(o, first ? "\"" : ",\"");
			flame_out_json_str(o, p, l);
			flame_out_str(o, "\"");
			first = false;
			p += l + (e ? 1 : 0);
		}
		flame_out_str(o, "]");
	}
	flame_out_str(o, "}\n");
	return o->err;
}
