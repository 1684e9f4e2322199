/* SPDX-License-Identifier: MIT */
/*
 * html.c - a self-contained HTML view of a snapshot (no network: the data is
 * embedded as JSON, the script and style are inline): the types table
 * (sortable), the dominator tree (expandable; each level shows its 25
 * heaviest children, at most 20000 objects in all) and the shortest paths
 * of the 25 heaviest types.
 */
#include "common/compat.h"

#include "common/json.h"
#include "heap/heap.h"

#define KIDS 25
#define MAX_TREE 20000
#define PATH_TYPES 25

struct kids {
	uint32_t *start, *list;
};

static int cmp_ret(const void *x, const void *y, void *ctx)
{
	const uint64_t *r = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;

	return r[i] > r[j] ? -1 : r[i] < r[j];
}

static int build_kids(const struct heap_analysis *a, struct kids *k)
{
	uint32_t n = a->n, i;
	uint32_t *pos;

	k->start = calloc((size_t)n + 1, sizeof(uint32_t));
	k->list = malloc((size_t)n * sizeof(uint32_t));
	pos = malloc(((size_t)n + 1) * sizeof(uint32_t));
	if (!k->start || !k->list || !pos) {
		free(pos);
		return -ENOMEM;
	}
	for (i = 0; i + 1 < n; i++)
		if (a->idom[i] != HEAP_NONE)
			k->start[a->idom[i] + 1]++;
	for (i = 1; i <= n; i++)
		k->start[i] += k->start[i - 1];
	memcpy(pos, k->start, ((size_t)n + 1) * sizeof(uint32_t));
	for (i = 0; i + 1 < n; i++)
		if (a->idom[i] != HEAP_NONE)
			k->list[pos[a->idom[i]]++] = i;
	for (i = 0; i < n; i++)
		if (k->start[i + 1] - k->start[i] > 1)
			qsort_r(k->list + k->start[i], k->start[i + 1] - k->start[i], sizeof(uint32_t),
				cmp_ret, a->retained);
	free(pos);
	return 0;
}

/* A JSON string that a <script> element may hold (ct_json_escape_html). */
static void json_s(struct strbuf *sb, const char *s)
{
	(void)strbuf_addch(sb, '"');
	(void)ct_json_escape_html(sb, s, strlen(s));
	(void)strbuf_addch(sb, '"');
}

/* Tree as nested arrays: [typeIndex, size, retained, address, more, [children...]] */
static void tree(struct strbuf *sb, const struct heap_graph *g, const struct heap_analysis *a,
		 const struct kids *k, uint32_t v, uint32_t *budget, unsigned depth)
{
	uint32_t i, nk = k->start[v + 1] - k->start[v], shown;
	bool root = v == g->nnodes;

	if (root)
		(void)strbuf_addstr(sb, "[-1,0,");
	else
		(void)strbuf_addf(sb, "[%u,%" PRIu64 ",", g->type[v], g->size[v]);
	shown = nk < KIDS ? nk : KIDS;
	if (depth > 60 || *budget < shown)
		shown = 0;
	*budget -= shown;
	(void)strbuf_addf(sb, "%" PRIu64 ",\"%" PRIx64 "\",%u,[", a->retained[v],
			  root ? 0 : g->addr[v], nk - shown);
	for (i = 0; i < shown; i++) {
		if (i)
			(void)strbuf_addch(sb, ',');
		tree(sb, g, a, k, k->list[k->start[v] + i], budget, depth + 1);
	}
	(void)strbuf_addstr(sb, "]]");
}

static const char PAGE_HEAD[] =
	"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>clrtap heap snapshot</title><style>"
	"body{font:13px system-ui,sans-serif;margin:1em}table{border-collapse:collapse}"
	"td,th{padding:2px 8px;border-bottom:1px solid #ddd}td.n{text-align:right;font-family:monospace}"
	"th{cursor:pointer;background:#eee;position:sticky;top:0}.t{margin-left:1.2em}"
	".row{cursor:pointer;white-space:nowrap;font-family:monospace}.row:hover{background:#eef}"
	"nav button{margin-right:.5em}section{display:none}section.on{display:block}"
	"</style></head><body><h2 id=title></h2><p id=sum></p><nav><button data-s=types>Types</button>"
	"<button data-s=dom>Dominator tree</button><button data-s=paths>Paths</button>"
	"<button data-s=strs>Strings</button></nav>"
	"<section id=types><input id=filter placeholder=\"filter types\"><table id=tt></table></section>"
	"<section id=dom><p>Each object retains what only it keeps alive. Click to expand.</p><div id=tree></div></section>"
	"<section id=paths><div id=pl></div></section><section id=strs><div id=sl></div></section>"
	"<script>const D=";

static const char PAGE_TAIL[] =
	";\nconst T=D.types,$=id=>document.getElementById(id);"
	"const fmt=n=>n.toLocaleString('en-US');"
	"const esc=s=>String(s).replace(/[&<>\"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','\"':'&quot;'}[c]));"
	"$('title').textContent='Heap of pid '+D.pid+' ('+D.process+')';"
	"$('sum').textContent=fmt(D.objects)+' objects, '+fmt(D.bytes)+' bytes, '+fmt(D.references)+' references; GC pause '+(D.pause_ns/1e6).toFixed(3)+' ms';"
	"let sortKey=2,rows=T.map((t,i)=>[t[0],t[1],t[2],t[3],i]).filter(r=>r[1]>0);"
	"function drawTypes(){const f=$('filter').value.toLowerCase();rows.sort((a,b)=>sortKey?b[sortKey]-a[sortKey]:a[0]<b[0]?-1:1);"
	"let h='<tr><th data-k=2>retained</th><th data-k=3>shallow</th><th data-k=1>count</th><th data-k=0>type</th></tr>';"
	"for(const r of rows){if(f&&!r[0].toLowerCase().includes(f))continue;h+='<tr><td class=n>'+fmt(r[2])+'</td><td class=n>'+fmt(r[3])+'</td><td class=n>'+fmt(r[1])+'</td><td>'+esc(r[0])+'</td></tr>';}"
	"$('tt').innerHTML=h;for(const th of $('tt').querySelectorAll('th'))th.onclick=()=>{sortKey=+th.dataset.k;drawTypes();};}"
	"$('filter').oninput=drawTypes;drawTypes();"
	"function node(n,el){const d=document.createElement('div');d.className='t';const r=document.createElement('div');r.className='row';"
	"const name=n[0]<0?'[roots]':T[n[0]][0];const kids=n[5];"
	"r.textContent=(kids.length?'+ ':'  ')+fmt(n[2])+' retained  '+(n[0]<0?'':fmt(n[1])+' B  0x'+n[3]+'  ')+name+(n[4]?'  (+'+n[4]+' smaller)':'');"
	"d.appendChild(r);el.appendChild(d);let open=false,box=null;r.onclick=()=>{if(!kids.length)return;open=!open;"
	"r.textContent=(open?'- ':'+ ')+r.textContent.slice(2);if(open){box=document.createElement('div');d.appendChild(box);for(const k of kids)node(k,box);}else{box.remove();}};return r;}"
	"node(D.tree,$('tree')).click();"
	"let ph='';for(const p of D.paths){ph+='<h4>'+esc(p.type)+'</h4><table>';for(const g of p.groups)ph+='<tr><td class=n>'+fmt(g.count)+'</td><td class=n>'+fmt(g.retained)+'</td><td>['+esc(g.root)+'] '+g.path.map(esc).join(' &rarr; ')+'</td></tr>';ph+='</table>';}"
	"$('pl').innerHTML=ph;let sh='<table><tr><th>wasted</th><th>copies</th><th>value</th></tr>';"
	"for(const s of D.strings)sh+='<tr><td class=n>'+fmt(s[2])+'</td><td class=n>'+fmt(s[1])+'</td><td>'+esc(s[0])+'</td></tr>';$('sl').innerHTML=sh+'</table>';"
	"function show(s){for(const x of document.querySelectorAll('section'))x.classList.toggle('on',x.id==s);}"
	"for(const b of document.querySelectorAll('nav button'))b.onclick=()=>show(b.dataset.s);show('types');"
	"</script></body></html>\n";

int heap_html_write(const struct heap_graph *g, const struct heap_analysis *a,
		    const struct heap_paths *p, struct strbuf *out)
{
	struct kids k = { 0 };
	uint32_t i, budget = MAX_TREE, *order = NULL;
	int err;

	err = build_kids(a, &k);
	if (err)
		goto out;
	(void)strbuf_addstr(out, PAGE_HEAD);
	(void)strbuf_addf(out, "{\"pid\":%u,\"process\":", g->meta.pid);
	json_s(out, g->meta.process);
	(void)strbuf_addf(out, ",\"objects\":%u,\"bytes\":%" PRIu64 ",\"references\":%u,\"pause_ns\":%" PRIu64
			  ",\"types\":[", g->nnodes, heap_graph_bytes(g), g->nedges, g->meta.pause_ns);
	for (i = 0; i < g->ntypes; i++) {
		(void)strbuf_addstr(out, i ? ",[" : "[");
		json_s(out, g->types[i].name);
		(void)strbuf_addf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", a->type_count[i],
				  a->type_retained[i], a->type_shallow[i]);
	}
	(void)strbuf_addstr(out, "],\"tree\":");
	tree(out, g, a, &k, g->nnodes, &budget, 0);
	(void)strbuf_addstr(out, ",\"paths\":[");
	order = malloc((g->ntypes ? g->ntypes : 1) * sizeof(*order));
	if (!order) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->ntypes; i++)
		order[i] = i;
	qsort_r(order, g->ntypes, sizeof(*order), cmp_ret, a->type_retained);
	for (i = 0; i < g->ntypes && i < PATH_TYPES && p; i++) {
		struct heap_path_group *gr = NULL;
		size_t n = 0, j;
		uint64_t un;
		uint32_t t;

		if (!a->type_count[order[i]])
			break;
		if ((err = heap_paths_group(g, p, a, order[i], 5, &gr, &n, &un)))
			goto out;
		(void)strbuf_addstr(out, i ? ",{\"type\":" : "{\"type\":");
		json_s(out, g->types[order[i]].name);
		(void)strbuf_addstr(out, ",\"groups\":[");
		for (j = 0; j < n; j++) {
			(void)strbuf_addf(out, "%s{\"count\":%" PRIu64 ",\"retained\":%" PRIu64 ",\"root\":",
					  j ? "," : "", gr[j].count, gr[j].retained);
			json_s(out, heap_root_kind_name(gr[j].rootkind, gr[j].rootflags));
			(void)strbuf_addstr(out, ",\"path\":[");
			for (t = 0; t < gr[j].ntypes; t++) {
				if (t)
					(void)strbuf_addch(out, ',');
				json_s(out, gr[j].types[t] == HEAP_NONE ? "..." : g->types[gr[j].types[t]].name);
			}
			(void)strbuf_addstr(out, "]}");
		}
		(void)strbuf_addstr(out, "]}");
		heap_path_groups_free(gr, n);
	}
	(void)strbuf_addstr(out, "],\"strings\":[");
	for (i = 0; i < g->ndups; i++) {
		(void)strbuf_addstr(out, i ? ",[" : "[");
		json_s(out, g->dups[i].value);
		(void)strbuf_addf(out, ",%" PRIu64 ",%" PRIu64 "]", g->dups[i].count, g->dups[i].wasted);
	}
	(void)strbuf_addstr(out, "]}");
	err = strbuf_addstr(out, PAGE_TAIL);
out:
	free(order);
	free(k.start);
	free(k.list);
	return err;
}
