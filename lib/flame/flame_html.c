/* SPDX-License-Identifier: MIT */
/*
 * flame_html.c - one self-contained, offline HTML flame graph.
 *
 * The page carries the trie as compact JSON in a <script type=
 * "application/json"> block (names once, nodes as [name, total, children...])
 * and a small script that draws every frame as an absolutely positioned <div>
 * holding the frame's name, so the names are in the rendered DOM. It has a
 * hover tooltip (name, weight, % of all and of the zoomed frame, self), click
 * to zoom, Escape / a button to reset, and a regex search box that highlights
 * matches and shows the matched share. A static "top frames" table under the
 * graph keeps the page useful without JavaScript.
 *
 * Escaping: names and title go through flame_out_json_str, which writes
 * '<', '>' and '&' as \u escapes, so no name can close the <script> element;
 * HTML text goes through flame_out_xml_str.
 */
#include "common/compat.h"

#include "flame/flame_int.h"

#define TOP_ROWS 25
/* Frames under total / PRUNE_DIV are folded into their parent's self time. */
#define PRUNE_DIV 100000

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<meta name=\"generator\" content=\"clrtap\">\n<title>";

static const char html_style[] =
	"</title>\n<style>\n"
	"body{font:13px system-ui,sans-serif;margin:10px;color:#222;background:#fdfdf8}\n"
	"header{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin-bottom:8px}\n"
	"header h1{font-size:17px;margin:0 10px 0 0}\n#notes{margin:0 0 8px;font:12px monospace;color:#444;white-space:pre-wrap}\n"
	"#q{width:260px}\n#mt{color:#a020a0;font-weight:bold}\n"
	"#fg{position:relative;width:100%;overflow:hidden;font:11px monospace}\n"
	".fr{position:absolute;height:16px;line-height:16px;box-sizing:border-box;"
	"border-right:1px solid #fdfdf8;border-bottom:1px solid #fdfdf8;padding-left:2px;"
	"overflow:hidden;white-space:nowrap;text-overflow:clip;cursor:pointer;color:#000}\n"
	".fr:hover{outline:1px solid #000;z-index:1}\n.fr.anc{opacity:.5}\n"
	".fr.hit{background:#e040e0!important}\n"
	"#tip{position:fixed;display:none;background:#fffff0;border:1px solid #777;padding:4px 6px;"
	"pointer-events:none;max-width:640px;white-space:pre-line;word-break:break-all;z-index:9;"
	"box-shadow:2px 2px 4px rgba(0,0,0,.2)}\n"
	"table{border-collapse:collapse;margin-top:6px}td,th{padding:1px 8px;text-align:right}"
	"td.n{text-align:left;font-family:monospace;word-break:break-all}\n"
	"</style></head><body>\n<header><h1>";

static const char html_script[] =
	"<script>\n"
	"(function(){\"use strict\";\n"
	"var D=JSON.parse(document.getElementById(\"flamedata\").textContent),N=D.names,U=D.unit,H=16;\n"
	"function mk(a,p){var o={n:a[0]<0?\"all\":N[a[0]],v:a[1],s:a[1],p:p,c:[],h:0};"
	"for(var i=2;i<a.length;i++){var c=mk(a[i],o);o.c.push(c);o.s-=c.v;if(c.h+1>o.h)o.h=c.h+1;}"
	"return o;}\n"
	"var R=mk(D.tree,null),Z=R,RE=null;\n"
	"var fg=document.getElementById(\"fg\"),tip=document.getElementById(\"tip\"),"
	"q=document.getElementById(\"q\"),mt=document.getElementById(\"mt\");\n"
	"function num(v){return v.toLocaleString(\"en-US\")+\" \"+U;}\n"
	"function pc(v,t){return t?(100*v/t).toFixed(2)+\"%\":\"0%\";}\n"
	"function col(n){if(n.charAt(0)===\"[\")return \"hsl(0,0%,78%)\";"
	"var h=0;for(var i=0;i<n.length;i++)h=(h*33+n.charCodeAt(i))>>>0;"
	"return \"hsl(\"+(h%55)+\",\"+(60+(h>>>6)%30)+\"%,\"+(52+(h>>>12)%14)+\"%)\";}\n"
	"function draw(){var W=fg.clientWidth||1200,anc=[],a,it=[],rows=0,fr=document.createDocumentFragment();"
	"for(a=Z.p;a;a=a.p)anc.unshift(a);\n"
	" for(var i=0;i<anc.length;i++)it.push([anc[i],0,W,i,true]);\n"
	" (function rec(o,x,w,r){it.push([o,x,w,r,false]);var cx=x;for(var i=0;i<o.c.length;i++){"
	"var c=o.c[i],cw=w*c.v/o.v;if(cw>=0.5)rec(c,cx,cw,r+1);cx+=cw;}})(Z,0,W,anc.length);\n"
	" for(i=0;i<it.length;i++)if(it[i][3]+1>rows)rows=it[i][3]+1;\n"
	" for(i=0;i<it.length;i++){var t=it[i],o=t[0],e=document.createElement(\"div\");"
	"e.className=\"fr\"+(t[4]?\" anc\":\"\")+(RE&&RE.test(o.n)?\" hit\":\"\");"
	"e.style.left=t[1]+\"px\";e.style.width=t[2]+\"px\";e.style.top=(rows-1-t[3])*H+\"px\";"
	"e.style.background=col(o.n);e.textContent=o.n;e.fo=o;fr.appendChild(e);}\n"
	" fg.style.height=rows*H+\"px\";fg.textContent=\"\";fg.appendChild(fr);}\n"
	"function search(){var t=q.value;RE=null;mt.textContent=\"\";if(t){"
	"try{RE=new RegExp(t);}catch(e){RE=new RegExp(t.replace(/[.*+?^${}()|[\\]\\\\]/g,\"\\\\$&\"));}"
	"var m=0;(function w(o){if(o!==R&&RE.test(o.n)){m+=o.v;return;}o.c.forEach(w);})(R);"
	"mt.textContent=\"Matched: \"+pc(m,R.v)+\" (\"+num(m)+\")\";}draw();}\n"
	"fg.addEventListener(\"mousemove\",function(ev){var o=ev.target.fo;"
	"if(!o){tip.style.display=\"none\";return;}tip.textContent=\"\";"
	"var b=document.createElement(\"b\");b.textContent=o.n;tip.appendChild(b);"
	"tip.appendChild(document.createTextNode(\"\\n\"+num(o.v)+\", \"+pc(o.v,R.v)+\" of all\"+"
	"(Z!==R?\", \"+pc(o.v,Z.v)+\" of zoomed\":\"\")+\"\\nself: \"+num(o.s)+\", \"+pc(o.s,R.v)));"
	"tip.style.display=\"block\";var x=ev.clientX+12,y=ev.clientY+14;"
	"if(x+tip.offsetWidth>window.innerWidth)x=Math.max(0,ev.clientX-tip.offsetWidth-12);"
	"if(y+tip.offsetHeight>window.innerHeight)y=Math.max(0,ev.clientY-tip.offsetHeight-14);"
	"tip.style.left=x+\"px\";tip.style.top=y+\"px\";});\n"
	"fg.addEventListener(\"mouseleave\",function(){tip.style.display=\"none\";});\n"
	"fg.addEventListener(\"click\",function(ev){var o=ev.target.fo;if(o){Z=o;draw();}});\n"
	"document.getElementById(\"reset\").addEventListener(\"click\",function(){Z=R;draw();});\n"
	"q.addEventListener(\"input\",search);\n"
	"document.addEventListener(\"keydown\",function(e){if(e.key===\"Escape\"){Z=R;draw();}"
	"else if((e.ctrlKey||e.metaKey)&&e.key===\"f\"){e.preventDefault();q.focus();}});\n"
	"window.addEventListener(\"resize\",draw);\n"
	"if(location.hash.indexOf(\"#q=\")===0)q.value=decodeURIComponent(location.hash.slice(3));\n"
	"if(q.value)search();else draw();\n"
	"})();\n</script>\n</body></html>\n";

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
	flame_out_str(o, html_style);
	out_title(o, opts);
	flame_out_f(o, "</h1><span>Total: %" PRIu64 " %s</span>\n"
		    "<button id=\"reset\" type=\"button\">Reset zoom</button>\n"
		    "<input id=\"q\" type=\"search\" placeholder=\"Search (regex)\" aria-label=\"search\">\n"
		    "<span id=\"mt\"></span></header>\n",
		    f->total, unit);
	if (opts->notes && *opts->notes) {
		flame_out_str(o, "<pre id=\"notes\">");
		flame_out_xml_lines(o, opts->notes);
		flame_out_str(o, "</pre>\n");
	}
	flame_out_f(o, "<div id=\"fg\"></div><div id=\"tip\"></div>\n"
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
	flame_out_str(o, "}</script>\n");
	flame_out_str(o, html_script);
	return o->err;
}
