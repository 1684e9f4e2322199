/* SPDX-License-Identifier: MIT */
/*
 * doc.c - the counters JSON document's pieces, shared by `clrtap counters
 * collect --format json` and clrtap serve's counters sessions: the trace
 * clock turned into wall-clock timestamps, and one value as JSON.
 */
#include "common/compat.h"

#include <time.h>

#include "counters/counters.h"

void counters_clock_set(struct counters_clock *c, const struct nt_trace_info *ti)
{
	struct tm tm = { 0 };

	if (c->have || ti->qpc_freq <= 0)
		return;
	tm.tm_year = ti->sync_utc[0] - 1900;
	tm.tm_mon = ti->sync_utc[1] - 1;
	tm.tm_mday = ti->sync_utc[3];
	tm.tm_hour = ti->sync_utc[4];
	tm.tm_min = ti->sync_utc[5];
	tm.tm_sec = ti->sync_utc[6];
	c->sync_epoch = (int64_t)timegm(&tm);
	c->sync_ms = ti->sync_utc[7];
	c->sync_qpc = ti->sync_qpc;
	c->qpc_freq = ti->qpc_freq;
	c->have = true;
}

void counters_clock_format(const struct counters_clock *c, int64_t ts, char *buf, size_t len)
{
	int64_t ms_total;
	time_t secs;
	struct tm tm;
	int ms;

	if (!c->have) {
		snprintf(buf, len, "?");
		return;
	}
	ms_total = c->sync_epoch * 1000 + c->sync_ms +
		   (int64_t)((double)(ts - c->sync_qpc) * 1000.0 / (double)c->qpc_freq);
	secs = (time_t)(ms_total / 1000);
	ms = (int)(ms_total % 1000);
	if (ms < 0) {
		ms += 1000;
		secs--;
	}
	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void counters_json_value(struct ct_json *j, const struct counters_value *v, const char *ts)
{
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "timestamp", ts);
	ct_json_kv_str(j, "source", v->source);
	ct_json_kv_str(j, "type", v->meter ? "meter" : "eventcounters");
	ct_json_kv_str(j, "name", v->name);
	ct_json_kv_str(j, "display_name", v->display_name);
	ct_json_kv_str(j, "tags", v->tags);
	ct_json_kv_str(j, "kind", counters_kind_name(v->kind));
	ct_json_kv_double(j, "value", v->value);
	ct_json_kv_str(j, "units", v->units);
	ct_json_kv_double(j, "interval_sec", v->interval_sec);
	ct_json_obj_end(j);
}
