/* SPDX-License-Identifier: MIT */
/*
 * flame_html.c - one self-contained, offline HTML flame graph, drawn by the
 * same widget as clrtap serve's UI: web/util.js, flame.js and flame.css are
 * embedded at build time (scripts/embed-web.sh --strings: ct_util_js,
 * ct_flame_js, ct_flame_css), so the page and the UI look and behave alike (search,
 * zoom, tooltips, colours by kind of code, ".NET frames only").
 *
 * The page carries the trie as compact JSON in a <script type=
 * "application/json"> block (names once, nodes as [name, total,
 * children...]); a few lines of script turn it into the widget's stacks. A
 * static "top frames" table keeps the page useful without JavaScript.
 *
 * Escaping: names and title go through flame_out_json_str, which writes
 * '<', '>' and '&' as \u escapes, so no name can close the <script> element;
 * HTML text goes through flame_out_xml_str. The widget puts names into the
 * page as text nodes only.
 */
#include "common/compat.h"

#include "flame/flame_int.h"

#define TOP_ROWS 25
/* Frames under total / PRUNE_DIV are folded into their parent's self time. */
#define PRUNE_DIV 100000

/* web/util.js, flame.js and flame.css (build/gen/flamepage.c) */
extern const char ct_util_js[], ct_flame_js[], ct_flame_css[];
extern const size_t ct_util_js_len, ct_flame_js_len, ct_flame_css_len;

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<meta name=\"generator\" content=\"clrtap\">\n<title>";

static const char html_style[] =
	"body{font:13px system-ui,sans-serif;margin:10px;color:#222;background:#fff}\n"
	"header{display:flex;flex-wrap:wrap;gap:10px;align-items:baseline;margin-bottom:8px}\n"
	"header h1{font-size:17px;margin:0 10px 0 0}\n"
	"#notes{margin:0 0 8px;font:12px monospace;color:#444;white-space:pre-wrap}\n"
	"table{border-collapse:collapse;margin-top:6px}td,th{padding:1px 8px;text-align:right}"
	"td.n{text-align:left;font-family:monospace;word-break:break-all}\n";

/* The trie -> the widget's stacks ({frames: root..leaf, count: self}). */
static const char html_boot[] =
	"\n(function(){\"use strict\";\n"
	"var D=JSON.parse(document.getElementById(\"flamedata\").textContent),N=D.names,S=[];\n"
	"function walk(a,path){var self=a[1],p=a[0]<0?path:path.concat([N[a[0]]]);\n"
	"for(var i=2;i<a.length;i++){self-=a[i][1];walk(a[i],p);}\n"
	"if(self>0&&p.length)S.push({frames:p,count:self});}\n"
	"walk(D.tree,[]);\n"
	"new CT.FlameGraph(document.getElementById(\"fg\"),{unit:D.unit}).setStacks(S);\n"
	"})();\n";

static void out_title(struct flame_out *o, const struct flame_opts *opts)
{
	const char *t = opts->title && *opts->title ? opts->title : "Flame graph";

	flame_out_xml_str(o, t, strlen(t));
}

static void out_top_table(const struct flame_view *v, struct flame_out *o, const char *unit)
{
	struct flame_top *top;
	uint64_t total = v->f->total;
	size_t n, i;

	if (flame_top(v->f, &top, &n)) {
		o->err = o->err ? o->err : -ENOMEM;
		return;
	}
	flame_out_f(o, "<details><summary>Top frames by self %s</summary>\n<table>"
		    "<tr><th>self</th><th>self %%</th><th>total</th><th>total %%</th><th>frame</th></tr>\n",
		    unit);
	for (i = 0; i < n && i < TOP_ROWS; i++) {
		flame_out_f(o, "<tr><td>%" PRIu64 "</td><td>%.2f</td><td>%" PRIu64 "</td><td>%.2f</td><td class=\"n\">",
			    top[i].self, total ? 100.0 * (double)top[i].self / (double)total : 0.0,
			    top[i].total, total ? 100.0 * (double)top[i].total / (double)total : 0.0);
		flame_out_xml_str(o, top[i].name, strlen(top[i].name));
		flame_out_str(o, "</td></tr>\n");
	}
	flame_out_str(o, "</table></details>\n");
	free(top);
}

/* [name rank, total, child, child, ...], children in name order, the root's name -1. */
static void out_tree(const struct flame_view *v, struct flame_out *o)
{
	const struct flame *f = v->f;
	uint64_t min = v->total[0] / PRUNE_DIV;
	struct flame_walk w;
	uint32_t c;
	int ev;

	flame_out_f(o, "[-1,%" PRIu64, v->total[0]);
	flame_walk_init(&w, v);
	while (!o->err && (ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		if (ev == FLAME_WALK_LEAVE) {
			flame_out_add(o, "]", 1);
			flame_out_maybe_flush(o);
		} else if (v->total[c] < min) {
			flame_walk_skip(&w);
		} else {
			flame_out_f(o, ",[%" PRIu32 ",%" PRIu64, v->rank[f->nodes[c].name], v->total[c]);
		}
	}
}

int flame_write_html(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts)
{
	const char *unit = flame_opts_is_ns(opts) ? "ns" : "samples";
	const struct flame *f = v->f;
	size_t i;

	flame_out_str(o, html_head);
	out_title(o, opts);
	flame_out_str(o, "</title>\n<style>\n");
	flame_out_str(o, html_style);
	flame_out_add(o, ct_flame_css, ct_flame_css_len);
	flame_out_str(o, "</style></head><body>\n<header><h1>");
	out_title(o, opts);
	flame_out_f(o, "</h1><span>Total: %" PRIu64 " %s</span></header>\n", f->total, unit);
	if (opts->notes && *opts->notes) {
		flame_out_str(o, "<pre id=\"notes\">");
		flame_out_xml_lines(o, opts->notes);
		flame_out_str(o, "</pre>\n");
	}
	flame_out_str(o, "<div id=\"fg\"></div>\n"
			 "<noscript><p>JavaScript is off: only the table below is shown.</p></noscript>\n");
	out_top_table(v, o, unit);
	flame_out_f(o, "<script type=\"application/json\" id=\"flamedata\">{\"unit\":\"%s\",\"names\":[", unit);
	for (i = 0; i < v->nused && !o->err; i++) {
		const struct flame_name *nm = &f->names[v->byrank[i]];

		flame_out_str(o, i ? ",\"" : "\"");
		flame_out_json_str(o, nm->s, nm->len);
		flame_out_add(o, "\"", 1);
		flame_out_maybe_flush(o);
	}
	flame_out_str(o, "],\"tree\":");
	out_tree(v, o);
	flame_out_str(o, "}</script>\n<script>\n");
	flame_out_add(o, ct_util_js, ct_util_js_len);
	flame_out_add(o, ct_flame_js, ct_flame_js_len);
	flame_out_str(o, html_boot);
	flame_out_str(o, "</script>\n</body></html>\n");
	return o->err;
}
