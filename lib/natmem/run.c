/* SPDX-License-Identifier: MIT */
/* `agent native-memory`'s session glue (run.h). */
#include "common/compat.h"

#include "agent/natmem_proto.h"
#include "natmem/run.h"

int natmem_run_begin(struct natmem_run **out, const struct proc_target *t)
{
	struct natmem_run *c = calloc(1, sizeof(*c));
	struct ipc_error rerr = { 0 };

	if (!c)
		return -ENOMEM;
	c->m.fd = -1;
	c->t = t;
	perfmap_use_init(&c->pm);
	/* managed frames are named from the perf map: on for the run */
	c->pm_on = perfmap_use_begin(&c->pm, t, 5000, &rerr) == 0;
	*out = c;
	return 0;
}

int natmem_run_event(struct natmem_run *c, const struct agent_event *ev, bool stop_now)
{
	if (ev->id == PRF_EV_NATMEM && !c->open) {
		c->install_err = ev->hresult;
		c->slots = ev->methods;
		c->modules = ev->spec;
		c->open_err = ev->hresult ? ev->hresult : natmem_open(&c->m, c->t->pid, ev->module_id);
		c->open = true;
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

int natmem_run_finish(struct natmem_run *c, bool detached, const char **why)
{
	struct sym_opts so = { 0 };
	struct ipc_error rerr = { 0 };

	if (!c->open || c->open_err || !c->final) {
		*why = !c->open ? "the profiler never said its hooks were in place"
		       : c->install_err ? "the profiler could not install its hooks"
		       : c->open_err ? "cannot read the profiler's tables in the target"
				     : "the session ended before the final read of the live table";
		return -EPROTO;
	}
	c->detached = detached;
	if (detached)
		natmem_got_check(&c->m, &c->restored, &c->hooked, &c->unreadable);
	if (c->pm_on) {
		perfmap_use_flush(&c->pm, &rerr);
		so.perfmap_tpath = c->pm.map_tpath[0] ? c->pm.map_tpath : NULL;
		so.jitdump_tpath = c->pm.jitdump ? c->pm.jitdump_tpath : NULL;
	} else {
		so.no_perfmap = true;
	}
	if (sym_proc_open(&c->sp, c->t->pid, &so))
		c->sp = NULL;
	return 0;
}

void natmem_run_json(struct natmem_run *c, int top, struct ct_json *j)
{
	ct_json_obj_begin(j);
	ct_json_kv_u64(j, "pid", (uint64_t)c->t->pid);
	ct_json_kv_u64(j, "interval_bytes", c->m.h.interval);
	ct_json_kv_u64(j, "got_slots", c->m.h.got_used);
	ct_json_kv_u64(j, "modules", c->m.h.modules);
	ct_json_kv_u64(j, "modules_other_allocator", c->m.h.modules_other);
	ct_json_kv_u64(j, "samples", c->m.h.samples);
	ct_json_kv_u64(j, "samples_read", c->m.ring_taken);
	ct_json_kv_u64(j, "samples_lost", c->m.ring_lost);
	ct_json_kv_u64(j, "torn", c->m.torn);
	ct_json_kv_u64(j, "live_samples", c->m.live_taken);
	ct_json_kv_u64(j, "live_table_overflow", c->m.h.overflow);
	ct_json_kv_u64(j, "sampled_frees", c->m.h.frees);
	ct_json_kv_u64(j, "walk_refused", c->m.h.walk_refused);
	ct_json_kv_u64(j, "stacks_dropped", c->m.stacks_dropped);
	ct_json_kv_str(j, "stack_reads", c->m.h.read_method == 2 ? "pipe" : "process_vm_readv");
	ct_json_kv_bool(j, "perfmap", c->pm_on);
	ct_json_kv_obj_begin(j, "restore");
	ct_json_kv_bool(j, "checked", c->detached);
	ct_json_kv_u64(j, "original", c->restored);
	ct_json_kv_u64(j, "still_hooked", c->hooked);
	ct_json_kv_u64(j, "other", c->unreadable);
	ct_json_obj_end(j);
	natmem_report_json(&c->m, c->sp, top, j);
	ct_json_obj_end(j);
}

void natmem_run_text(struct natmem_run *c, int top, struct strbuf *sb)
{
	strbuf_addf(sb, "sampled %" PRIu64 " allocations (mean interval %" PRIu64 " bytes); %" PRIu64
		    " sampled pointers freed; %" PRIu64 " live at the end\n",
		    c->m.h.samples, c->m.h.interval, c->m.h.frees, c->m.live_taken);
	if (c->m.ring_lost || c->m.h.overflow || c->m.torn || c->m.stacks_dropped)
		strbuf_addf(sb, "not seen: %" PRIu64 " samples overwritten before clrtap read them, %" PRIu64
			    " live samples the table had no room for, %" PRIu64
			    " read while being written, %" PRIu64 " beyond the stack cap\n",
			    c->m.ring_lost, c->m.h.overflow, c->m.torn, c->m.stacks_dropped);
	if (!c->pm_on)
		strbuf_addstr(sb, "managed frames are not named: the perf map could not be turned on\n");
	natmem_report_text(&c->m, c->sp, top, sb);
	if (c->detached)
		strbuf_addf(sb, "\nrestored: %u of %u GOT slots hold their original value again (read back "
			    "after the detach)%s\n", c->restored, c->m.h.got_used,
			    c->hooked ? "; SOME STILL HOLD THE HOOK" : "");
}

void natmem_run_end(struct natmem_run *c)
{
	struct ipc_error rerr = { 0 };

	if (!c)
		return;
	if (c->sp)
		sym_proc_close(c->sp);
	if (c->pm_on)
		perfmap_use_end(&c->pm, &rerr);
	natmem_close(&c->m);
	free(c);
}
