/* SPDX-License-Identifier: MIT */
/*
 * natmem.c - rendering of `clrtap agent native-memory` (docs/cmd/agent.md):
 * the profiler's sampled native allocations (lib/natmem), read while the
 * session runs, named through lib/sym with the perf map on for the run,
 * reported as live bytes by stack (leak candidates) and churn by stack.
 */
#include "common/compat.h"

#include <math.h>

#include "agent/agent.h"
#include "cli.h"
#include "cmd/natmem_cmd.h"
#include "common/json.h"
#include "natmem/natmem.h"
#include "perfmap/perfmap.h"
#include "sym/sym.h"

struct nm_cmd {
	struct natmem m;
	bool open, final, json;
	int open_err;
	int top;
	uint64_t interval;
	struct perfmap_use pm;
	bool pm_on;
	const struct proc_target *t;
	uint32_t slots, modules;
	int32_t install_err;
};

int nm_cmd_begin(struct nm_cmd **out, const struct proc_target *t, uint64_t interval, int top,
		 bool json)
{
	struct nm_cmd *c = calloc(1, sizeof(*c));
	struct ipc_error rerr = { 0 };

	if (!c)
		return -ENOMEM;
	c->m.fd = -1;
	c->t = t;
	c->interval = interval;
	c->top = top;
	c->json = json;
	perfmap_use_init(&c->pm);
	/* managed frames are named from the perf map: on for the run */
	c->pm_on = perfmap_use_begin(&c->pm, t, 5000, &rerr) == 0;
	*out = c;
	return 0;
}

/* One event of the session; returns 1 once the final read is done. */
int nm_cmd_event(struct nm_cmd *c, const struct agent_event *ev, bool stop_now)
{
	if (ev->id == PRF_EV_NATMEM && !c->open) {
		c->install_err = ev->hresult;
		c->slots = ev->methods;
		c->modules = ev->spec;
		c->open_err = ev->hresult ? ev->hresult : natmem_open(&c->m, c->t->pid, ev->module_id);
		c->open = true;
		if (!c->open_err) /* stderr, also with --json: a script waits for it */
			cli_info("hooks in place: %u GOT slots in %u modules; sampling every %" PRIu64
				 " bytes on average", ev->methods, ev->spec, ev->seq);
		fflush(stdout);
		return 0;
	}
	if (!c->open || c->open_err || c->final)
		return 0;
	if (ev->id == PRF_EV_STATUS) {
		if (natmem_poll(&c->m))
			c->open_err = -EIO;
		if (stop_now && !c->open_err) {
			if (natmem_read_live(&c->m))
				c->open_err = -EIO;
			c->final = true;
			return 1;
		}
	}
	return 0;
}

static double err95(double var)
{
	return 1.96 * sqrt(var);
}

static void render_stack(struct nm_cmd *c, struct sym_proc *sp, const struct natmem_stack *s,
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
			printf("      %s%s\n", cli_safe(name), managed ? " [managed]" : "");
		}
	}
	if (!s->n && !j)
		printf("      (no stack: the walk was refused at its first frame)\n");
	(void)c;
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

static void render_view(struct nm_cmd *c, struct sym_proc *sp, bool live, struct ct_json *j)
{
	uint32_t lim = c->m.nst < 4096 ? c->m.nst : 4096, nrow = 0;
	struct row *rows = calloc(lim ? lim : 1, sizeof(*rows));
	int shown = 0;

	natmem_sort(&c->m, live);
	for (uint32_t i = 0; rows && i < lim; i++) {
		const struct natmem_stack *s = &c->m.st[i];
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
	for (uint32_t r = 0; r < nrow && shown < c->top; r++, shown++) {
		const struct natmem_stack *s = &c->m.st[rows[r].first];

		if (j) {
			ct_json_obj_begin(j);
			ct_json_kv_double(j, "bytes", rows[r].bytes);
			ct_json_kv_double(j, "bytes_err95", err95(rows[r].var));
			ct_json_kv_u64(j, "samples", rows[r].n);
			ct_json_kv_arr_begin(j, "frames");
			render_stack(c, sp, s, j);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		} else {
			printf("  %.1f MiB (+-%.1f MiB at 95%%, %" PRIu64 " samples)\n",
			       rows[r].bytes / 1048576.0, err95(rows[r].var) / 1048576.0, rows[r].n);
			render_stack(c, sp, s, NULL);
		}
	}
	if (j)
		ct_json_arr_end(j);
	else if (!shown)
		printf("  (no sampled allocation)\n");
	for (uint32_t r = 0; r < nrow; r++)
		free(rows[r].names);
	free(rows);
}

int nm_cmd_end(struct nm_cmd *c, bool detached)
{
	struct sym_opts so = { 0 };
	struct sym_proc *sp = NULL;
	struct ipc_error rerr = { 0 };
	uint32_t restored = 0, hooked = 0, unreadable = 0;
	int code = EXIT_OK;

	if (!c->open || c->open_err || !c->final) {
		code = cli_error(EXIT_PARTIAL, "%s",
				 !c->open ? "the profiler never said its hooks were in place"
				 : c->install_err ? "the profiler could not install its hooks"
				 : c->open_err ? "cannot read the profiler's tables in the target"
					       : "the session ended before the final read of the live table");
		goto out;
	}
	if (detached)
		natmem_got_check(&c->m, &restored, &hooked, &unreadable);
	if (c->pm_on) {
		perfmap_use_flush(&c->pm, &rerr);
		so.perfmap_tpath = c->pm.map_tpath[0] ? c->pm.map_tpath : NULL;
		so.jitdump_tpath = c->pm.jitdump ? c->pm.jitdump_tpath : NULL;
	} else {
		so.no_perfmap = true;
	}
	if (sym_proc_open(&sp, c->t->pid, &so))
		sp = NULL;
	if (c->json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)c->t->pid);
		ct_json_kv_u64(&j, "interval_bytes", c->m.h.interval);
		ct_json_kv_u64(&j, "got_slots", c->m.h.got_used);
		ct_json_kv_u64(&j, "modules", c->m.h.modules);
		ct_json_kv_u64(&j, "modules_other_allocator", c->m.h.modules_other);
		ct_json_kv_u64(&j, "samples", c->m.h.samples);
		ct_json_kv_u64(&j, "samples_read", c->m.ring_taken);
		ct_json_kv_u64(&j, "samples_lost", c->m.ring_lost);
		ct_json_kv_u64(&j, "torn", c->m.torn);
		ct_json_kv_u64(&j, "live_samples", c->m.live_taken);
		ct_json_kv_u64(&j, "live_table_overflow", c->m.h.overflow);
		ct_json_kv_u64(&j, "sampled_frees", c->m.h.frees);
		ct_json_kv_u64(&j, "walk_refused", c->m.h.walk_refused);
		ct_json_kv_u64(&j, "stacks_dropped", c->m.stacks_dropped);
		ct_json_kv_str(&j, "stack_reads", c->m.h.read_method == 2 ? "pipe" : "process_vm_readv");
		ct_json_kv_bool(&j, "perfmap", c->pm_on);
		ct_json_kv_obj_begin(&j, "restore");
		ct_json_kv_bool(&j, "checked", detached);
		ct_json_kv_u64(&j, "original", restored);
		ct_json_kv_u64(&j, "still_hooked", hooked);
		ct_json_kv_u64(&j, "other", unreadable);
		ct_json_obj_end(&j);
		render_view(c, sp, true, &j);
		render_view(c, sp, false, &j);
		ct_json_obj_end(&j);
		if (cli_json_out(&j, stdout))
			code = EXIT_ERROR;
		strbuf_release(&sb);
	} else {
		printf("sampled %" PRIu64 " allocations (mean interval %" PRIu64 " bytes); %" PRIu64
		       " sampled pointers freed; %" PRIu64 " live at the end\n",
		       c->m.h.samples, c->m.h.interval, c->m.h.frees, c->m.live_taken);
		if (c->m.ring_lost || c->m.h.overflow || c->m.torn || c->m.stacks_dropped)
			printf("not seen: %" PRIu64 " samples overwritten before clrtap read them, %" PRIu64
			       " live samples the table had no room for, %" PRIu64
			       " read while being written, %" PRIu64 " beyond the stack cap\n",
			       c->m.ring_lost, c->m.h.overflow, c->m.torn, c->m.stacks_dropped);
		if (!c->pm_on)
			printf("managed frames are not named: the perf map could not be turned on\n");
		printf("\nlive at the end (allocated during the session, not freed: leak candidates):\n");
		render_view(c, sp, true, NULL);
		printf("\nallocated and freed during the session (churn):\n");
		render_view(c, sp, false, NULL);
		if (detached)
			printf("\nrestored: %u of %u GOT slots hold their original value again (read back "
			       "after the detach)%s\n", restored, c->m.h.got_used,
			       hooked ? "; SOME STILL HOLD THE HOOK" : "");
	}
	if (detached && hooked)
		code = EXIT_ERROR;
out:
	if (sp)
		sym_proc_close(sp);
	if (c->pm_on)
		perfmap_use_end(&c->pm, &rerr);
	natmem_close(&c->m);
	free(c);
	return code;
}
