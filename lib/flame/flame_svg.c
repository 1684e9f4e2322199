/* SPDX-License-Identifier: MIT */
/*
 * flame_svg.c - a static SVG flame graph: root at the bottom, children in
 * name order left to right, width proportional to weight. Each frame is a
 * <g> with a <title> (full name, weight, percentage: the viewer's tooltip),
 * a <rect> and a <text> label cut to fit. Frames narrower than MIN_WIDTH
 * pixels are left out (their weight stays in the parent's width). Every
 * string goes through flame_out_xml_str, so the file is well-formed XML and
 * valid UTF-8 whatever the names hold.
 */
#include "common/compat.h"

#include "flame/flame_int.h"

#define IMG_WIDTH 1200
#define PAD_X 10
#define PAD_TOP 36
#define PAD_BOTTOM 8
#define FRAME_H 16
#define MIN_WIDTH 0.1
#define CHAR_W 7.0 /* average glyph width at 12px */

static void out_color(struct flame_out *o, const struct flame_name *nm)
{
	uint32_t h = 0;
	size_t i;

	if (nm->len && nm->s[0] == '[') {
		flame_out_str(o, "rgb(200,200,200)");
		return;
	}
	for (i = 0; i < nm->len; i++)
		h = h * 33 + (unsigned char)nm->s[i];
	/* warm colors: red high, green in the middle, blue low */
	flame_out_f(o, "rgb(%u,%u,%u)", 205 + h % 50, 60 + (h >> 8) % 150, 40 + (h >> 16) % 50);
}

/* The label: as many code points as fit, ".." when cut, none when under 3 fit. */
static void out_label(struct flame_out *o, const struct flame_name *nm, double width)
{
	size_t fit = width > 6 ? (size_t)((width - 6) / CHAR_W) : 0, cps = 0, i = 0, cut = 0;

	if (fit < 3)
		return;
	while (i < nm->len) {
		uint32_t cp;
		size_t n = flame_utf8_next(nm->s + i, nm->len - i, &cp);

		if (cps == fit - 2)
			cut = i;
		cps++;
		i += n;
		if (cps > fit)
			break;
	}
	if (cps <= fit) {
		flame_out_xml_str(o, nm->s, nm->len);
	} else {
		flame_out_xml_str(o, nm->s, cut);
		flame_out_str(o, "..");
	}
}

static void out_frame(const struct flame_view *v, struct flame_out *o, uint32_t node, uint64_t off,
		      uint32_t depth, double scale, const char *unit)
{
	const struct flame *f = v->f;
	static const struct flame_name all = { "all", 3, 0 };
	const struct flame_name *nm = node ? &f->names[f->nodes[node].name] : &all;
	double x = PAD_X + (double)off * scale, w = (double)v->total[node] * scale;
	unsigned y = PAD_TOP + (v->maxdepth - depth) * FRAME_H;

	flame_out_str(o, "<g><title>");
	flame_out_xml_str(o, nm->s, nm->len);
	flame_out_f(o, " (%" PRIu64 " %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%d\" fill=\"",
		    v->total[node], unit, f->total ? 100.0 * (double)v->total[node] / (double)f->total : 0.0,
		    x, y, w, FRAME_H - 1);
	out_color(o, nm);
	flame_out_f(o, "\" rx=\"2\"/><text x=\"%.1f\" y=\"%u\">", x + 3, y + FRAME_H - 4);
	out_label(o, nm, w);
	flame_out_str(o, "</text></g>\n");
	flame_out_maybe_flush(o);
}

int flame_write_svg(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts)
{
	const struct flame *f = v->f;
	const char *unit = flame_opts_is_ns(opts) ? "ns" : "samples";
	const char *title = opts->title && *opts->title ? opts->title : "Flame graph";
	unsigned height = PAD_TOP + (v->maxdepth + 1) * FRAME_H + PAD_BOTTOM;
	double scale = f->total ? (double)(IMG_WIDTH - 2 * PAD_X) / (double)f->total : 0;
	uint64_t cursor[FLAME_MAX_DEPTH + 2];
	struct flame_walk w;
	uint32_t c;
	int ev;

	flame_out_f(o, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		    "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
		    "viewBox=\"0 0 %d %u\" font-family=\"Verdana,sans-serif\" font-size=\"12\">\n"
		    "<style>text{pointer-events:none;fill:#000}g:hover rect{stroke:#000;stroke-width:.7}</style>\n"
		    "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n"
		    "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">",
		    IMG_WIDTH, height, IMG_WIDTH, height, IMG_WIDTH / 2);
	flame_out_xml_str(o, title, strlen(title));
	flame_out_str(o, "</text>\n");
	if (opts->notes && *opts->notes) {
		flame_out_str(o, "<desc>");
		flame_out_xml_lines(o, opts->notes);
		flame_out_str(o, "</desc>\n");
	}
	flame_out_f(o, "<text x=\"%d\" y=\"22\" text-anchor=\"end\" font-size=\"11\">total %" PRIu64
		    " %s</text>\n",
		    IMG_WIDTH - PAD_X, f->total, unit);
	if (f->total)
		out_frame(v, o, 0, 0, 0, scale, unit);
	cursor[0] = 0;
	flame_walk_init(&w, v);
	while (f->total && !o->err && (ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		uint64_t off;

		if (ev != FLAME_WALK_ENTER)
			continue;
		/* w.sp is c's depth; cursor[depth - 1] is where its parent's next child starts */
		off = cursor[w.sp - 1];
		cursor[w.sp - 1] += v->total[c];
		if ((double)v->total[c] * scale < MIN_WIDTH) {
			flame_walk_skip(&w);
			continue;
		}
		out_frame(v, o, c, off, (uint32_t)w.sp, scale, unit);
		cursor[w.sp] = off;
	}
	flame_out_str(o, "</svg>\n");
	return o->err;
}
