/* SPDX-License-Identifier: MIT */
/*
 * result.c - the profile task's result as JSON (docs/tasks/profile.md): one
 * object, frames in the one frame shape {"name","module"}.
 */
#include "common/compat.h"

#include "common/json.h"
#include "profile/profile.h"

static void top(struct ct_json *j, const struct profile_result *r)
{
	size_t i;

	ct_json_kv_arr_begin(j, "top");
	for (i = 0; i < r->ntop; i++) {
		ct_json_obj_begin(j);
		ct_json_frame_members(j, r->top[i].name);
		ct_json_kv_u64(j, "self", r->top[i].self);
		ct_json_kv_u64(j, "total", r->top[i].total);
		ct_json_kv_double(j, "self_pct",
				  r->total ? 100.0 * (double)r->top[i].self / (double)r->total : 0.0);
		ct_json_kv_double(j, "total_pct",
				  r->total ? 100.0 * (double)r->top[i].total / (double)r->total : 0.0);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

int profile_result_json(const struct profile_result *r, const char *artifact, struct strbuf *sb)
{
	const struct profile_summary *s = &r->sum;
	struct ct_json j;
	size_t i;

	ct_json_init(&j, sb);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "task", "profile");
	ct_json_kv_i64(&j, "pid", r->pid);
	ct_json_kv_str(&j, "engine", r->engine == PROFILE_ENGINE_EVENTPIPE ? "eventpipe" : "perf");
	ct_json_kv_bool(&j, "fell_back", r->ch.fell_back);
	ct_json_kv_str(&j, "mode", r->off_cpu ? "off-cpu" : r->wall ? "wall" : "cpu");
	ct_json_kv_double(&j, "duration_s", r->secs);
	if (r->engine == PROFILE_ENGINE_EVENTPIPE) {
		ct_json_kv_null(&j, "frequency_hz"); /* the runtime's own interval */
		ct_json_kv_double(&j, "interval_ms", (double)r->es.sampling_ns / 1e6);
	} else {
		ct_json_kv_u64(&j, "frequency_hz", r->hz);
	}
	ct_json_kv_u64(&j, "samples", s->cpu_samples);
	if (r->off_cpu || r->wall) {
		ct_json_kv_u64(&j, "offcpu_intervals", s->offcpu_intervals);
		ct_json_kv_u64(&j, "offcpu_ns", s->offcpu_ns);
	}
	/* perf_event: records the kernel dropped; EventPipe: events lost in the runtime */
	ct_json_kv_u64(&j, "lost_samples", r->have_es ? r->es.dropped_events : r->st.lost);
	ct_json_kv_u64(&j, "unnamed_frames", s->unnamed);
	ct_json_kv_u64(&j, "frames", s->frames);
	ct_json_kv_u64(&j, "unnamed_leaves", s->unnamed_leaves);
	if (r->have_st)
		ct_json_kv_u64(&j, "threads", r->st.threads);
	else
		ct_json_kv_null(&j, "threads"); /* the EventPipe engine does not count them */
	ct_json_kv_bool(&j, "kernel_stacks", r->have_st && r->st.kernel);
	ct_json_kv_bool(&j, "target_exited", r->target_gone);
	ct_json_kv_bool(&j, "stopped_early", r->early);
	if (r->lines) {
		/* --lines: managed frames (JIT'd or ReadyToRun) and those that got a source line */
		ct_json_kv_obj_begin(&j, "lines");
		ct_json_kv_u64(&j, "managed_frames", s->managed_frames);
		ct_json_kv_u64(&j, "line_frames", s->line_frames);
		ct_json_obj_end(&j);
	} else {
		ct_json_kv_null(&j, "lines");
	}
	if (r->have_es && r->async) {
		/* --async: what the TPL timeline could tie each sample to */
		ct_json_kv_obj_begin(&j, "async");
		ct_json_kv_str(&j, "mode", r->async == PROFILE_EP_ASYNC_BOTH ? "both" : "logical");
		ct_json_kv_u64(&j, "tpl_events", r->es.async_events);
		ct_json_kv_u64(&j, "samples_with_callers", r->es.async_logical);
		ct_json_kv_u64(&j, "samples_nothing_awaited", r->es.async_alone);
		ct_json_kv_u64(&j, "samples_not_async", r->es.async_none);
		ct_json_kv_u64(&j, "samples_unattributed", r->es.async_unattributed);
		ct_json_obj_end(&j);
	}
	if (r->have_es && r->by_endpoint) {
		uint32_t k, n = r->es.nendpoints < PROFILE_EP_ENDPOINTS ? r->es.nendpoints :
			       PROFILE_EP_ENDPOINTS;

		ct_json_kv_obj_begin(&j, "endpoints");
		ct_json_kv_u64(&j, "requests", r->es.requests);
		ct_json_kv_u64(&j, "samples_no_request", r->es.endpoint_none);
		ct_json_kv_u64(&j, "samples_other_paths", r->es.endpoint_other);
		ct_json_kv_arr_begin(&j, "paths");
		for (k = 0; k < n; k++) {
			ct_json_obj_begin(&j);
			ct_json_kv_str(&j, "path", r->es.endpoints[k].name);
			ct_json_kv_u64(&j, "samples", r->es.endpoints[k].samples);
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		ct_json_obj_end(&j);
	}
	ct_json_kv_arr_begin(&j, "native_names"); /* which native libraries were named how */
	{
		const char *l = r->native_note, *e;

		for (; *l; l = *e ? e + 1 : e) {
			e = strchr(l, '\n');
			if (!e)
				e = l + strlen(l);
			if (e > l)
				ct_json_strn(&j, l, (size_t)(e - l));
		}
	}
	ct_json_arr_end(&j);
	ct_json_kv_arr_begin(&j, "statements");
	for (i = 0; i < r->nstatements; i++)
		ct_json_str(&j, r->statements[i]);
	ct_json_arr_end(&j);
	ct_json_kv_str(&j, "top_by", r->top_managed ? "innermost managed frame" : "leaf");
	top(&j, r);
	ct_json_kv_arr_begin(&j, "artifacts");
	if (artifact)
		ct_json_str(&j, artifact);
	ct_json_arr_end(&j);
	if (r->out_path[0] && !artifact)
		ct_json_kv_str(&j, "output", r->out_path);
	ct_json_kv_bool(&j, "partial", s->partial);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}
