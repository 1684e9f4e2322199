/* SPDX-License-Identifier: MIT */
/*
 * memchart.c - the memory series of analyze memory as an inline SVG chart
 * (one line per kind that holds anything, MiB over seconds) for the HTML
 * report and so for serve's report page: no script, no external resource;
 * the only text is ours (kind names, numbers).
 */
#include "common/compat.h"

#include "analyze/analyze.h"

#define W 760
#define H 260
#define L 60 /* left margin: the MiB axis */
#define B 30 /* bottom margin: the seconds axis */

static const char *const colors[AN_MEM_KINDS + 1] = {
	"#1f77b4", "#9467bd", "#d62728", "#8c564b", "#7f7f7f", "#ff7f0e", "#bcbd22", "#2ca02c",
};

static uint64_t kb_of(const struct an_mem_point *p, int k)
{
	return k == AN_MEM_GREW_NATIVE ? p->rss_kb[AN_MEM_NATIVE] + p->rss_kb[AN_MEM_OTHER_ANON] : p->rss_kb[k];
}

int analyze_mem_svg(const struct an_mem_series *s, struct strbuf *o)
{
	double tmax, vmax = 1;
	size_t i;
	int k, row = 0;

	if (s->n < 2)
		return 0;
	tmax = s->p[s->n - 1].t_s > 0 ? s->p[s->n - 1].t_s : 1;
	for (i = 0; i < s->n; i++)
		for (k = 0; k <= AN_MEM_GREW_NATIVE; k++)
			vmax = CT_MAX(vmax, (double)kb_of(&s->p[i], k) / 1024.0);
	strbuf_addf(o, "<h3>Resident memory by kind over time (MiB)</h3>\n"
		    "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		    "aria-label=\"resident memory by kind over time\">\n", W + 230, H, W + 230, H);
	strbuf_addf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>"
		    "<line x1=\"%d\" y1=\"10\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
		    L, H - B, W, H - B, L, L, H - B);
	strbuf_addf(o, "<text x=\"%d\" y=\"14\" font-size=\"11\" text-anchor=\"end\">%.0f</text>"
		    "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">0</text>"
		    "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.1f s</text>\n",
		    L - 4, vmax, L - 4, H - B, W, H - B + 16, tmax);
	for (k = 0; k <= AN_MEM_GREW_NATIVE; k++) {
		bool any = false;

		for (i = 0; i < s->n && !any; i++)
			any = kb_of(&s->p[i], k) >= 1024;
		if (!any)
			continue;
		strbuf_addf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", colors[k],
			    k == AN_MEM_GREW_NATIVE ? "2.5" : "1.5");
		for (i = 0; i < s->n; i++)
			strbuf_addf(o, "%s%.1f,%.1f", i ? " " : "", L + (W - L) * s->p[i].t_s / tmax,
				    (H - B) - (H - B - 10) * ((double)kb_of(&s->p[i], k) / 1024.0) / vmax);
		strbuf_addf(o, "\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"%s\">%s</text>\n", W + 10,
			    20 + 16 * row++, colors[k], k == AN_MEM_GREW_NATIVE ? "native (malloc heap + other anon)" :
			    analyze_mem_kind_name((enum an_mem_kind)k));
	}
	strbuf_addstr(o, "</svg>\n");
	return strbuf_error(o);
}
