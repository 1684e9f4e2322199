/* SPDX-License-Identifier: MIT */
/*
 * report.c - the native-memory report (natmem.h): live bytes by stack
 * (leak candidates) and churn by stack, as text or JSON, frames named
 * through lib/sym. Names are the target's: the text is made safe for a
 * terminal by the caller (cli_safe), JSON escapes its strings.
 */
#include "common/compat.h"

#include <math.h>

#include "common/json.h"
#include "common/strbuf.h"
#include "flame/flame.h"
#include "natmem/natmem.h"
#include "sym/sym.h"

static double err95(double var)
{
	return 1.96 * sqrt(var);
}

static void render_stack(struct strbuf *out, struct sym_proc *sp, const struct natmem_stack *s,
			 struct ct_json *j)
{
	char name[512];
	bool managed;

	for (uint32_t k = 0; k < s->n; k++) {
		natmem_frame_name(sp, s->frames[k], name, sizeof(name), &managed);
		if (j) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "name", name);
			ct_json_kv_bool(j, "managed", managed);
			ct_json_kv_u64(j, "addr", s->frames[k]);
			ct_json_obj_end(j);
		} else {
			strbuf_addf(out, "      %s%s\n", name, managed ? " [managed]" : "");
		}
	}
	if (!s->n && !j)
		strbuf_addf(out, "      (no stack: the walk was refused at its first frame)\n");
}

/* Stacks that read the same once named (one method's code versions: Tier0,
 * OSR, Tier1) are one row. At most 4096 stacks are named and merged. */
struct row {
	char *names; /* frame names, '\n' between */
	double bytes, var;
	uint64_t n;
	uint32_t first; /* the stack shown */
};

static char *stack_names(struct sym_proc *sp, const struct natmem_stack *s)
{
	struct strbuf sb = STRBUF_INIT;
	char name[512];
	bool managed;

	for (uint32_t k = 0; k < s->n; k++) {
		natmem_frame_name(sp, s->frames[k], name, sizeof(name), &managed);
		strbuf_addf(&sb, "%s\n", name);
	}
	return strbuf_detach(&sb, NULL);
}

static void render_view(struct natmem *m, struct sym_proc *sp, int top, bool live, struct strbuf *out,
			struct ct_json *j)
{
	uint32_t lim = m->nst < 4096 ? m->nst : 4096, nrow = 0;
	struct row *rows = calloc(lim ? lim : 1, sizeof(*rows));
	int shown = 0;

	natmem_sort(m, live);
	for (uint32_t i = 0; rows && i < lim; i++) {
		const struct natmem_stack *s = &m->st[i];
		double bytes = live ? s->live_bytes : s->alloc_bytes - s->live_bytes;
		double var = live ? s->live_var : s->alloc_var;
		uint64_t n = live ? s->live_samples
				  : (s->alloc_samples > s->live_samples ? s->alloc_samples - s->live_samples : 0);
		char *names;
		uint32_t r;

		if (n == 0 || bytes <= 0)
			continue;
		names = stack_names(sp, s);
		for (r = 0; r < nrow && strcmp(rows[r].names, names); r++)
			;
		if (r == nrow)
			rows[nrow++] = (struct row){ names, 0, 0, 0, i };
		else
			free(names);
		rows[r].bytes += bytes;
		rows[r].var += var;
		rows[r].n += n;
	}
	/* merged rows: largest first (insertion sort, rows are few) */
	for (uint32_t a = 1; a < nrow; a++)
		for (uint32_t b = a; b > 0 && rows[b].bytes > rows[b - 1].bytes; b--) {
			struct row t = rows[b];

			rows[b] = rows[b - 1];
			rows[b - 1] = t;
		}
	if (j)
		ct_json_kv_arr_begin(j, live ? "live" : "churn");
	for (uint32_t r = 0; r < nrow && shown < top; r++, shown++) {
		const struct natmem_stack *s = &m->st[rows[r].first];

		if (j) {
			ct_json_obj_begin(j);
			ct_json_kv_double(j, "bytes", rows[r].bytes);
			ct_json_kv_double(j, "bytes_err95", err95(rows[r].var));
			ct_json_kv_u64(j, "samples", rows[r].n);
			ct_json_kv_arr_begin(j, "frames");
			render_stack(out, sp, s, j);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		} else {
			strbuf_addf(out, "  %.1f MiB (+-%.1f MiB at 95%%, %" PRIu64 " samples)\n",
			       rows[r].bytes / 1048576.0, err95(rows[r].var) / 1048576.0, rows[r].n);
			render_stack(out, sp, s, NULL);
		}
	}
	if (j)
		ct_json_arr_end(j);
	else if (!shown)
		strbuf_addf(out, "  (no sampled allocation)\n");
	for (uint32_t r = 0; r < nrow; r++)
		free(rows[r].names);
	free(rows);
}

void natmem_report_json(struct natmem *m, struct sym_proc *sp, int top, struct ct_json *j)
{
	render_view(m, sp, top, true, NULL, j);
	render_view(m, sp, top, false, NULL, j);
}

void natmem_report_text(struct natmem *m, struct sym_proc *sp, int top, struct strbuf *out)
{
	strbuf_addf(out, "\nlive at the end (allocated during the session, not freed: leak candidates):\n");
	render_view(m, sp, top, true, out, NULL);
	strbuf_addf(out, "\nallocated and freed during the session (churn):\n");
	render_view(m, sp, top, false, out, NULL);
}

int natmem_flame(struct natmem *m, struct sym_proc *sp, bool live, struct flame *f)
{
	const char *names[NM_FRAMES];
	char buf[NM_FRAMES][256];
	bool managed;
	int err = 0;

	for (uint32_t i = 0; !err && i < m->nst; i++) {
		const struct natmem_stack *s = &m->st[i];
		double bytes = live ? s->live_bytes : s->alloc_bytes - s->live_bytes;

		if (bytes < 1 || !s->n)
			continue;
		/* the flame wants the root first: the stack is leaf first */
		for (uint32_t k = 0; k < s->n; k++) {
			natmem_frame_name(sp, s->frames[k], buf[k], sizeof(buf[k]), &managed);
			names[s->n - 1 - k] = buf[k];
		}
		err = flame_add(f, names, s->n, (uint64_t)bytes);
	}
	return err;
}
