/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the watch engine (engine.h). The caller's thread samples /proc
 * (cpu, rss, exit) and the memory cgroup every 250 ms, reads exit statuses
 * from the kernel's process-events connector, finds new targets (all), runs
 * actions (actions.c) and writes the log through the log_line callback.
 * Each target with counter, meter, exception, request or gc-pause rules has
 * one EventPipe session (lib/counters' live reader) on a thread of its own,
 * which evaluates those rules and hands firings to the caller's thread.
 */
#include "common/compat.h"

#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "live/live.h"
#include "nettrace/nettrace.h"
#include "watch/engine_int.h"

void watch_say(struct watch *w, bool warn, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->cfg.say)
		w->cfg.say(w->cfg.ctx, warn, msg);
}

int64_t watch_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ----- the log: one JSON object a line ----- */

void watch_log_begin(struct ct_json *j, struct strbuf *sb, const char *event)
{
	struct timespec ts;
	struct tm tm;
	char buf[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(ts.tv_nsec / 1000000 % 1000));
	strbuf_init(sb, 1 << 20);
	ct_json_init(j, sb);
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "time", buf);
	ct_json_kv_str(j, "event", event);
}

void watch_log_end(struct watch *w, struct ct_json *j, struct strbuf *sb)
{
	ct_json_obj_end(j);
	if (!ct_json_finish(j) && w->cfg.log_line)
		w->cfg.log_line(w->cfg.ctx, sb->buf, sb->len);
	strbuf_release(sb);
}

void watch_log_target(struct ct_json *j, const struct target *tg)
{
	ct_json_kv_i64(j, "pid", tg->pid);
	ct_json_kv_i64(j, "nspid", tg->t.nspid);
	ct_json_kv_bool(j, "other_pidns", tg->t.other_pidns);
}

/* ----- targets ----- */

static int target_add(struct watch *w, pid_t pid);
static void *session_main(void *arg);

bool watch_target_alive(const struct target *tg)
{
	uint64_t st;

	return proc_starttime(tg->pid, &st) == 0 && st == tg->starttime;
}

static int target_add_found(struct watch *w, const struct proc_target *t, uint64_t starttime)
{
	struct ct_json j;
	struct strbuf sb, cmd;
	size_t i;
	int slot = -1;

	for (i = 0; i < MAX_TARGETS; i++)
		if (!w->targets[i].used) {
			slot = (int)i;
			break;
		}
	if (slot < 0) {
		watch_say(w, true, "watching %d processes already; pid %d left alone", MAX_TARGETS, (int)t->pid);
		return -E2BIG;
	}
	struct target *tg = &w->targets[slot];

	memset(tg, 0, sizeof(*tg));
	tg->used = true;
	tg->pid = t->pid;
	tg->starttime = starttime;
	tg->t = *t;
	tg->w = w;
	tg->idx = slot;
	ipc_endpoint_init(&tg->ep, &tg->t, w->timeout_ms);
	watch_log_begin(&j, &sb, "watching");
	watch_log_target(&j, tg);
	strbuf_init(&cmd, 4096);
	if (!proc_cmdline(t->pid, &cmd, 4096))
		ct_json_kv_str(&j, "cmdline", cmd.buf);
	strbuf_release(&cmd);
	watch_log_end(w, &j, &sb);
	if (w->need_session) {
		bool split = w->need_exc && !w->no_stacks &&
			     (w->need_counters || w->need_gc || w->need_req);
		int k;

		tg->sess[0].kind = split ? SESS_MAIN : SESS_ALL;
		tg->sess[1].kind = SESS_EXC;
		for (k = 0; k < (split ? 2 : 1); k++) {
			struct sess *ss = &tg->sess[k];

			ss->tg = tg;
			ss->on = !pthread_create(&ss->th, NULL, session_main, ss);
			if (!ss->on)
				watch_say(w, true, "pid %d: no thread for its EventPipe session", (int)t->pid);
		}
	}
	return 0;
}

static int target_add(struct watch *w, pid_t pid)
{
	struct proc_target t;
	uint64_t st;
	int err;

	err = proc_target_find(pid, &t);
	if (err)
		return err;
	err = proc_starttime(pid, &st);
	if (err)
		return err;
	return target_add_found(w, &t, st);
}

static bool target_known(const struct watch *w, pid_t pid, uint64_t st)
{
	size_t i;

	for (i = 0; i < MAX_TARGETS; i++)
		if (w->targets[i].used && w->targets[i].pid == pid && w->targets[i].starttime == st)
			return true;
	return false;
}

static int scan_one(pid_t pid, void *ctx)
{
	struct watch *w = ctx;
	struct strbuf cmd;
	uint64_t st;
	bool ok = true;

	if (pid == getpid() || proc_starttime(pid, &st) || target_known(w, pid, st))
		return 0;
	if (w->match) {
		strbuf_init(&cmd, 4096);
		ok = !proc_cmdline(pid, &cmd, 4096) && cmd.buf && strstr(cmd.buf, w->match);
		strbuf_release(&cmd);
	}
	if (ok)
		(void)target_add(w, pid);
	return 0;
}

/* ----- firings ----- */

/* Queues p (its stack, if any, is the queue's then, or freed). */
static void pending_push(struct watch *w, struct pending *p)
{
	pthread_mutex_lock(&w->lock);
	if (w->npend < MAX_PENDING) {
		w->pend[w->npend++] = *p;
	} else {
		w->dropped++;
		free(p->stack);
	}
	pthread_mutex_unlock(&w->lock);
}

/* The names of the frames at the moment of the event (an exception's
 * throw), from a rundown of the target's methods taken now. */
static void name_stack(struct target *tg, const struct fire_extra *x, struct pending *p)
{
	struct strbuf sb = STRBUF_INIT_MAX(STACK_TEXT_MAX);

	p->have_stack = true;
	p->stack_frames = x->nips;
	if (!x->nips || !x->ips)
		return;
	p->stack_err = watch_stack_name(&tg->ep, x->ips, x->nips, tg->w->lines, &tg->stop, &sb,
					 &p->stack_named);
	if (!p->stack_err && sb.buf)
		p->stack = strdup(sb.buf);
	strbuf_release(&sb);
}

/*
 * Feeds rule ri of target tg; queues a firing, or one suppressed line per
 * firing period. Called from one thread per rule kind (main: cpu, rss,
 * exit, cgroup; the session thread: counter, exception, gc-pause, request).
 */
static void feed_x(struct watch *w, struct target *tg, int ri, bool cond, double v, bool have_v,
		   const char *detail, const struct fire_extra *x)
{
	struct watch_state *st = &tg->st[ri];
	bool busy = __atomic_load_n(&tg->busy[ri], __ATOMIC_ACQUIRE) > 0;
	enum watch_verdict vd = watch_state_feed(&w->rules[ri], st, watch_now_ms(), cond, busy);
	struct pending p;

	if (vd != WATCH_FIRE && ((vd != WATCH_COOLDOWN && vd != WATCH_BUSY) || st->said))
		return;
	memset(&p, 0, sizeof(p));
	p.target = tg->idx;
	p.rule = ri;
	p.value = v;
	p.have_value = have_v;
	p.fired = st->fired;
	snprintf(p.detail, sizeof(p.detail), "%s", detail ? detail : "");
	if (x && x->req) {
		p.have_req = true;
		p.req = *x->req;
	}
	if (vd != WATCH_FIRE) {
		st->said = true;
		p.rule = -1 - ri;
		p.why = vd == WATCH_BUSY ? SUP_BUSY : SUP_COOLDOWN;
	} else if (x && x->stack && w->no_stacks) {
		p.have_stack = p.stack_off = true;
	} else if (x && x->stack) {
		name_stack(tg, x, &p);
	}
	pending_push(w, &p);
}

static void feed(struct watch *w, struct target *tg, int ri, bool cond, double v, bool have_v,
		 const char *detail)
{
	feed_x(w, tg, ri, cond, v, have_v, detail, NULL);
}

/* ----- the EventPipe session of one target ----- */

static int on_counter(void *ctx, const struct counters_value *v)
{
	struct target *tg = ctx;
	struct watch *w = tg->w;
	size_t i;

	for (i = 0; i < w->nrules; i++) {
		const struct watch_rule *r = &w->rules[i];

		if (r->kind != WATCH_COUNTER || r->meter != v->meter || strcmp(r->source, v->source) ||
		    strcmp(r->name, v->name))
			continue;
		feed(w, tg, (int)i, watch_rule_test(r, v->value, v->units), v->value, true, v->units);
	}
	return 0;
}

static int on_notice(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	return 0;
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	static const struct counters_handlers ch = { on_counter, on_notice };
	struct sess *ss = ctx;
	struct target *tg = ss->tg;
	struct watch *w = tg->w;
	struct fire_extra x = { 0 };
	struct watch_request q;

	if (ev->meta->provider_kind == NT_PROV_RUNTIME && ev->meta->event_id == 80) {
		struct nt_exception ex;
		size_t i;

		if (nt_decode_exception(ev->payload, ev->payload_len, ev->meta->version,
					ev->pointer_size, &ex))
			return 0;
		strbuf_reset(&ss->tmp3);
		(void)nt_str16_utf8(&ex.type, &ss->tmp3);
		for (i = 0; i < w->nrules; i++) {
			const struct watch_rule *r = &w->rules[i];

			if (r->kind != WATCH_EXCEPTION ||
			    !watch_exception_match(r, ss->tmp3.buf ? ss->tmp3.buf : ""))
				continue;
			strbuf_reset(&ss->tmp);
			(void)nt_str16_utf8(&ex.message, &ss->tmp);
			if (r->message[0] && !strstr(ss->tmp.buf ? ss->tmp.buf : "", r->message))
				continue;
			/* the detail: "TYPE\nMESSAGE" (the type matters for "*") */
			strbuf_reset(&ss->tmp2);
			(void)nt_str16_utf8(&ex.type, &ss->tmp2);
			(void)strbuf_addstr(&ss->tmp2, "\n");
			(void)strbuf_addstr(&ss->tmp2, ss->tmp.buf ? ss->tmp.buf : "");
			x.stack = true;
			x.ips = ev->stack;
			x.nips = ev->nframes;
			feed_x(w, tg, (int)i, true, 0, false, ss->tmp2.buf ? ss->tmp2.buf : "", &x);
		}
		return 0;
	}
	if (w->need_req && !watch_request_decode(ev, &q)) {
		int64_t at = ss->qpc_freq > 0 ? (int64_t)((double)ev->timestamp * 1000.0 / (double)ss->qpc_freq)
					      : watch_now_ms();
		size_t i;

		x.req = &q;
		for (i = 0; i < w->nrules; i++) {
			const struct watch_rule *r = &w->rules[i];
			int hit;

			if ((r->kind != WATCH_REQUEST && r->kind != WATCH_STATUS) || !watch_request_match(r, &q))
				continue;
			hit = watch_window_add(r, &tg->st[i], at);
			if (hit > 0)
				feed_x(w, tg, (int)i, true, r->kind == WATCH_REQUEST ? q.ms : q.status, true, "",
				       &x);
		}
		return 0;
	}
	if (ev->meta->provider_kind == NT_PROV_RUNTIME && w->need_gc) {
		struct nt_suspend_ee se;

		/* SuspendEEBegin for a GC (reason 1 SUSPEND_FOR_GC, 6 GC_PREP) */
		if (ev->meta->event_id == 9 &&
		    !nt_decode_suspend_ee(ev->payload, ev->payload_len, ev->meta->version,
					  ev->pointer_size, &se) &&
		    (se.reason == 1 || se.reason == 6))
			tg->suspend_ts = ev->timestamp;
		if (ev->meta->event_id == 3 && tg->suspend_ts && ss->qpc_freq > 0 &&
		    ev->timestamp >= tg->suspend_ts) {
			double ms = (double)(ev->timestamp - tg->suspend_ts) * 1000.0 / (double)ss->qpc_freq;
			char detail[64];
			size_t i;

			tg->suspend_ts = 0;
			snprintf(detail, sizeof(detail), "SuspendEEBegin..RestartEEEnd %.3f ms", ms);
			for (i = 0; i < w->nrules; i++)
				if (w->rules[i].kind == WATCH_GC_PAUSE)
					feed(w, tg, (int)i, watch_rule_test(&w->rules[i], ms, NULL), ms, true,
					     detail);
		}
		return 0;
	}
	if (ss->dec)
		(void)counters_decode(ss->dec, ev, &ch, tg);
	return 0;
}

static void on_opened(void *ctx, const struct nt_trace_info *ti)
{
	struct sess *ss = ctx;

	ss->qpc_freq = ti->qpc_freq;
}

static void *session_main(void *arg)
{
	struct sess *ss = arg;
	struct target *tg = ss->tg;
	struct watch *w = tg->w;
	bool exc = ss->kind != SESS_MAIN && w->need_exc, rest = ss->kind != SESS_EXC;
	struct counters_spec spec = { 0 };
	struct counters_session cs = { 0 };
	struct ipc_provider prov[COUNTERS_MAX_SOURCES + 2];
	struct ipc_trace_config cfg = { 0 };
	struct live_session_opts live = { 0 };
	struct live_session_result res = { 0 };
	struct nt_handlers h = { 0 };
	size_t i, n = 0;
	int err = 0;

	strbuf_init(&ss->tmp, 4096);
	strbuf_init(&ss->tmp2, 4096 + 2 * WATCH_MAX_NAME);
	strbuf_init(&ss->tmp3, 4096);
	for (i = 0; i < w->nrules && !err && rest; i++)
		if (w->rules[i].kind == WATCH_COUNTER)
			err = counters_spec_add(&spec, w->rules[i].source, w->rules[i].meter);
	if (!err && spec.n)
		err = counters_session_init(&cs, &spec, 1, 1000, 10);
	if (!err && spec.n)
		err = counters_decoder_new(&ss->dec, "");
	if (err)
		goto out;
	for (i = 0; i < cs.nproviders && n < COUNTERS_MAX_SOURCES; i++)
		prov[n++] = cs.providers[i];
	if (exc || (rest && w->need_gc)) /* Exception 0x8000, GC 0x1 */
		prov[n++] = (struct ipc_provider){ "Microsoft-Windows-DotNETRuntime",
						   (exc ? 0x8000u : 0) | (rest && w->need_gc ? 0x1u : 0),
						   4, NULL };
	if (rest && w->need_req)
		prov[n++] = *watch_request_provider();
	cfg.providers = prov;
	cfg.nproviders = n;
	cfg.buffer_mb = 16;
	/* the stack of each event is the session's: on only for the throws */
	cfg.stackwalk = exc && !w->no_stacks;
	h.event = on_event;
	live.ep = &tg->ep;
	live.cfg = &cfg;
	live.stop = &tg->stop;
	live.h = &h;
	live.prompt = true; /* the latest values, not one flush late */
	live.opened = on_opened;
	live.ctx = ss;
	err = live_session_run(&live, &res);
	if (err) {
		snprintf(ss->why, sizeof(ss->why), "cannot run the session: %s",
			 strerror(-err));
	} else if (res.session_err && (res.session.bytes == 0 || res.session.bad_prologue)) {
		char why[400];

		ipc_session_strerror(res.session_err, &res.session, &tg->ep, &res.rerr, why, sizeof(why));
		snprintf(ss->why, sizeof(ss->why), "the session did not start: %s", why);
		err = res.session_err;
	} else if (res.reader_err < 0 && !(res.session.target_ended && !res.session.complete)) {
		snprintf(ss->why, sizeof(ss->why),
			 "the session stream broke at byte %" PRIu64 ": %s (%s)", res.reader_offset,
			 res.reader_msg, strerror(-res.reader_err));
		err = res.reader_err;
	}
out:
	if (err && !ss->why[0])
		snprintf(ss->why, sizeof(ss->why), "cannot set up the session: %s",
			 strerror(-err));
	ss->err = err;
	counters_decoder_free(ss->dec);
	ss->dec = NULL;
	counters_session_release(&cs);
	counters_spec_release(&spec);
	strbuf_release(&ss->tmp);
	strbuf_release(&ss->tmp2);
	strbuf_release(&ss->tmp3);
	__atomic_store_n(&ss->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* ----- /proc sampling ----- */

/* cgroup-memory rules: usage against the nearest limit of the target's
 * memory cgroup; without a limit (or no memory cgroup) one line says so and
 * the rules never fire for this target. */
static void sample_cgroup(struct watch *w, struct target *tg)
{
	struct proc_cgmem m;
	char detail[DETAIL_MAX];
	double share;
	size_t i;
	int err = proc_cgroup_memory(tg->pid, &m);

	if (err || !m.limit) {
		struct ct_json j;
		struct strbuf sb;

		if (tg->cg_said)
			return;
		tg->cg_said = true;
		watch_log_begin(&j, &sb, "cgroup-memory");
		ct_json_kv_i64(&j, "pid", tg->pid);
		if (err) {
			ct_json_kv_str(&j, "error", strerror(-err));
			ct_json_kv_str(&j, "note", "no memory cgroup could be read for this process: its cgroup-memory rules never fire");
		} else {
			ct_json_kv_str(&j, "cgroup", m.path);
			ct_json_kv_u64(&j, "current", m.current);
			ct_json_kv_str(&j, "note", "no memory limit on this cgroup or any above it: its cgroup-memory rules never fire");
		}
		watch_log_end(w, &j, &sb);
		watch_say(w, true, "pid %d: %s: cgroup-memory rules never fire for it", (int)tg->pid,
			 err ? "no memory cgroup readable" : "its cgroup has no memory limit");
		return;
	}
	share = (double)m.current * 100.0 / (double)m.limit;
	snprintf(detail, sizeof(detail), "%" PRIu64 " of %" PRIu64 " bytes (cgroup %.300s, %s)", m.current,
		 m.limit, m.path, m.v2 ? "v2 memory.current/memory.max" : "v1 memory.usage_in_bytes/limit_in_bytes");
	for (i = 0; i < w->nrules; i++)
		if (w->rules[i].kind == WATCH_CGROUP_MEM)
			feed(w, tg, (int)i, watch_rule_test(&w->rules[i], share, NULL), share, true, detail);
}

/* memory-growth rules: smaps at most once a second (and at most 5 % of the
 * time), the rate over the last AN_MEM_WINDOW readings (lib/analyze
 * memgrowth.c) */
static void sample_memgrowth(struct watch *w, struct target *tg, int64_t t)
{
	char detail[160];
	double kb_s;
	size_t i;

	if (t < tg->mem_ms)
		return;
	if (analyze_mem_window_read(tg->pid, &tg->memw, (double)t / 1000))
		return;
	/* once a second, or less often: reading smaps at most 5 % of the time */
	tg->mem_ms = t + CT_MAX((int64_t)1000, 20 * (watch_now_ms() - t));
	for (i = 0; i < w->nrules; i++) {
		const struct watch_rule *r = &w->rules[i];

		if (r->kind != WATCH_MEM_GROWTH ||
		    analyze_mem_window_rate(&tg->memw, analyze_mem_growth_kind(r->name), &kb_s))
			continue;
		snprintf(detail, sizeof(detail), "%s %+.2f MiB/s (smaps, the last %.0f s)", r->name, kb_s / 1024,
			 tg->memw.p[tg->memw.n - 1].t_s - tg->memw.p[0].t_s);
		feed(w, tg, (int)i, watch_rule_test(r, kb_s * 1024, NULL), kb_s * 1024, true, detail);
	}
}

static void sample(struct watch *w, struct target *tg)
{
	uint64_t ticks, rss_bytes = 0;
	int64_t t = watch_now_ms();
	double rss = 0, cpu = 0;
	bool have_cpu = false, have_rss;
	size_t i;
	char detail[64];

	if (!proc_cpu_ticks(tg->pid, &ticks)) {
		if (tg->have_cpu && t > tg->cpu_ms) {
			cpu = (double)(ticks - tg->cpu_ticks) * 1000.0 / (double)sysconf(_SC_CLK_TCK) /
			      (double)(t - tg->cpu_ms) * 100.0;
			have_cpu = true;
		}
		tg->cpu_ticks = ticks;
		tg->cpu_ms = t;
		tg->have_cpu = true;
	}
	have_rss = !proc_rss_bytes(tg->pid, &rss_bytes);
	rss = (double)rss_bytes;
	if (w->need_cgroup)
		sample_cgroup(w, tg);
	for (i = 0; i < w->nrules; i++)
		if (w->rules[i].kind == WATCH_MEM_GROWTH) {
			sample_memgrowth(w, tg, t);
			break;
		}
	for (i = 0; i < w->nrules; i++) {
		const struct watch_rule *r = &w->rules[i];

		if (r->kind == WATCH_CPU && have_cpu) {
			snprintf(detail, sizeof(detail), "%.0f%% of one core", cpu);
			feed(w, tg, (int)i, watch_rule_test(r, cpu, NULL), cpu, true, detail);
		} else if (r->kind == WATCH_RSS && have_rss) {
			feed(w, tg, (int)i, watch_rule_test(r, rss, NULL), rss, true, "bytes");
		}
	}
}

/* ----- actions ----- */

/* The request of a request or status firing, and its window. */
static void log_request(struct ct_json *j, const struct watch_rule *r, const struct pending *p)
{
	const struct watch_request *q = &p->req;

	ct_json_kv_obj_begin(j, "request");
	ct_json_kv_str(j, "method", q->method);
	ct_json_kv_str(j, "path", q->path);
	ct_json_kv_str(j, "query", q->query);
	if (q->status >= 0)
		ct_json_kv_i64(j, "status", q->status);
	if (!isnan(q->ms))
		ct_json_kv_double(j, "ms", q->ms);
	if (q->trace_id[0])
		ct_json_kv_str(j, "trace_id", q->trace_id);
	if (q->truncated)
		ct_json_kv_bool(j, "truncated", true);
	ct_json_obj_end(j);
	if (r->win_n > 1) {
		ct_json_kv_u64(j, "window_count", r->win_n);
		ct_json_kv_u64(j, "window_ms", (uint64_t)r->win_ms);
	}
}

/* The stderr line of a firing; the first of a rule and process says the
 * cooldown in force. */
static void fire_info(struct watch *w, const struct target *tg, int ri, const struct pending *p)
{
	const struct watch_rule *r = &w->rules[ri];
	char what[DETAIL_MAX + 64] = "", cool[96] = "";

	if (r->kind == WATCH_EXCEPTION) {
		const char *nl = strchr(p->detail, '\n');

		snprintf(what, sizeof(what), " (%.*s%s%s)", nl ? (int)(nl - p->detail) : (int)strlen(p->detail),
			 p->detail, nl ? ": " : "", nl ? nl + 1 : "");
	} else if (p->have_req) {
		snprintf(what, sizeof(what), " (%s %.200s -> %d in %.1f ms)", p->req.method, p->req.path,
			 p->req.status, p->req.ms);
	}
	if (p->fired == 1)
		snprintf(cool, sizeof(cool), "; cooldown %g s%s", (double)r->cooldown_ms / 1000.0,
			 r->cooldown_default ? " (the default)" : "");
	watch_say(w, false, "pid %d: %s%s%s", (int)tg->pid, w->rule_text[ri], what, cool);
}

static void log_stack(struct ct_json *j, const struct pending *p)
{
	const char *l, *e;

	if (p->stack) {
		ct_json_kv_arr_begin(j, "stack");
		for (l = p->stack; *l && (e = strchr(l, '\n')); l = e + 1) {
			char frame[1024];

			snprintf(frame, sizeof(frame), "%.*s", (int)(e - l), l);
			ct_json_str(j, frame);
		}
		ct_json_arr_end(j);
	} else {
		ct_json_kv_str(j, "stack_note", p->stack_off ? "not collected (--no-stacks)" :
				p->stack_err ? strerror(-p->stack_err) : "the event carried no stack");
	}
}

static void handle_pending(struct watch *w)
{
	static struct pending p[MAX_PENDING];
	size_t n, i, k;
	unsigned dropped;

	pthread_mutex_lock(&w->lock);
	n = w->npend;
	memcpy(p, w->pend, n * sizeof(p[0]));
	w->npend = 0;
	dropped = w->dropped;
	w->dropped = 0;
	pthread_mutex_unlock(&w->lock);
	if (dropped)
		watch_say(w, true, "%u firings lost: the queue was full", dropped);
	for (i = 0; i < n; i++) {
		struct target *tg = &w->targets[p[i].target];
		int ri = p[i].rule < 0 ? -1 - p[i].rule : p[i].rule;
		const struct watch_rule *r = &w->rules[ri];
		struct ct_json j;
		struct strbuf sb;
		unsigned fire = 0;
		const struct watch_action *acts;
		size_t nacts;

		if (p[i].rule >= 0)
			fire = ++w->fires;
		watch_log_begin(&j, &sb, p[i].rule >= 0 ? "fired" : "suppressed");
		if (fire)
			ct_json_kv_u64(&j, "fire", fire);
		ct_json_kv_u64(&j, "rule", (uint64_t)ri);
		ct_json_kv_str(&j, "rule_text", w->rule_text[ri]);
		ct_json_kv_str(&j, "trigger", watch_kind_name(r->kind));
		watch_log_target(&j, tg);
		if (p[i].have_value)
			ct_json_kv_double(&j, "value", p[i].value);
		if (r->kind == WATCH_EXCEPTION) {
			char *nl = strchr(p[i].detail, '\n');

			if (nl)
				*nl = 0;
			ct_json_kv_str(&j, "type", nl ? p[i].detail : r->name);
			ct_json_kv_str(&j, "message", nl ? nl + 1 : p[i].detail);
			if (nl)
				*nl = '\n';
			if (p[i].have_stack)
				log_stack(&j, &p[i]);
		} else if (p[i].have_req) {
			log_request(&j, r, &p[i]);
		} else if (r->kind == WATCH_COUNTER) {
			ct_json_kv_str(&j, "units", p[i].detail);
		} else if (p[i].detail[0]) {
			ct_json_kv_str(&j, "detail", p[i].detail);
		}
		if (p[i].why == SUP_COOLDOWN)
			ct_json_kv_str(&j, "why", "within the rule's cooldown (logged once per firing)");
		else if (p[i].why == SUP_BUSY)
			ct_json_kv_str(&j, "why", "the actions of the rule's last firing for this process still run "
				       "(logged once per firing)");
		ct_json_kv_u64(&j, "fired", p[i].fired);
		ct_json_kv_double(&j, "cooldown_s", (double)r->cooldown_ms / 1000.0);
		ct_json_kv_bool(&j, "cooldown_default", r->cooldown_default);
		if (fire && p[i].fired == 1) {
			char note[200];

			snprintf(note, sizeof(note), "the next firing of this rule for this process comes %g s "
				 "after this one at the soonest (%s)", (double)r->cooldown_ms / 1000.0,
				 r->cooldown_default ? "the default cooldown; 'cooldown DUR' in the rule changes it"
						     : "the rule's cooldown");
			ct_json_kv_str(&j, "note", note);
		}
		watch_log_end(w, &j, &sb);
		if (!fire) {
			free(p[i].stack);
			continue;
		}
		fire_info(w, tg, ri, &p[i]);
		acts = r->nactions ? r->actions : w->actions;
		nacts = r->nactions ? r->nactions : w->nactions;
		for (k = 0; k < nacts; k++)
			watch_action_start(w, fire, p[i].target, ri, &acts[k], &p[i]);
		free(p[i].stack);
	}
}

/* ----- how a process ended (the process-events connector) ----- */

static void on_exit_status(void *ctx, pid_t pid, pid_t tgid, int status)
{
	struct watch *w = ctx;
	size_t i;

	if (pid != tgid) /* a thread; the process's own status comes with its main thread */
		return;
	for (i = 0; i < MAX_TARGETS; i++) {
		struct target *tg = &w->targets[i];

		if (tg->used && !tg->gone && tg->pid == pid) {
			tg->have_status = true;
			tg->status = status;
		}
	}
}

static void read_statuses(struct watch *w)
{
	int err;

	if (w->evfd < 0)
		return;
	err = proc_events_read(w->evfd, on_exit_status, w);
	if (err < 0 && !w->ev_lost_said) {
		w->ev_lost_said = true;
		watch_say(w, true, "the kernel dropped process events (%s): an exit status may be unknown",
			 strerror(-err));
	}
}

/* A killing signal that is not a polite request to end. */
static bool status_is_crash(int status)
{
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	return sig && sig != SIGTERM && sig != SIGINT && sig != SIGHUP;
}

static void target_gone(struct watch *w, struct target *tg)
{
	struct ct_json j;
	struct strbuf sb;
	char detail[200];
	double v = 0;
	size_t i;

	read_statuses(w);
	tg->gone = true;
	tg->stop = 1;
	watch_log_begin(&j, &sb, "gone");
	watch_log_target(&j, tg);
	ct_json_kv_bool(&j, "status_known", tg->have_status);
	if (tg->have_status && WIFSIGNALED(tg->status)) {
		v = WTERMSIG(tg->status);
		ct_json_kv_i64(&j, "signal", WTERMSIG(tg->status));
		ct_json_kv_str(&j, "signal_name", sigabbrev_np(WTERMSIG(tg->status)) ?
			       sigabbrev_np(WTERMSIG(tg->status)) : "?");
		ct_json_kv_bool(&j, "core_dumped", WCOREDUMP(tg->status));
		ct_json_kv_bool(&j, "crash", status_is_crash(tg->status));
		snprintf(detail, sizeof(detail), "killed by signal %d (SIG%s)%s", WTERMSIG(tg->status),
			 sigabbrev_np(WTERMSIG(tg->status)) ? sigabbrev_np(WTERMSIG(tg->status)) : "?",
			 WCOREDUMP(tg->status) ? ", core dumped" : "");
	} else if (tg->have_status) {
		v = WEXITSTATUS(tg->status);
		ct_json_kv_i64(&j, "exit_code", WEXITSTATUS(tg->status));
		ct_json_kv_bool(&j, "crash", false);
		snprintf(detail, sizeof(detail), "exited with code %d", WEXITSTATUS(tg->status));
	} else {
		snprintf(detail, sizeof(detail), "the process exited; how is not known (%s)",
			 w->evfd < 0 ? "the process-events connector could not be used"
				     : "no exit event seen for it");
	}
	if (!tg->have_status)
		ct_json_kv_str(&j, "note", detail);
	watch_log_end(w, &j, &sb);
	for (i = 0; i < w->nrules; i++) {
		if (w->rules[i].kind == WATCH_EXIT)
			feed(w, tg, (int)i, true, v, tg->have_status, detail);
		else if (w->rules[i].kind == WATCH_CRASH && tg->have_status && status_is_crash(tg->status))
			feed(w, tg, (int)i, true, v, true, detail);
	}
}

/* Says once when one of a target's EventPipe sessions ended while it still
 * runs, or failed: the rules it served are no longer evaluated. */
static void session_report(struct watch *w, struct target *tg)
{
	static const char *const served[] = {
		[SESS_ALL] = "its counter and exception rules",
		[SESS_MAIN] = "its counter, gc-pause and request rules",
		[SESS_EXC] = "its exception rules",
	};
	struct ct_json j;
	struct strbuf sb;
	char note[128];
	int k;

	for (k = 0; k < 2; k++) {
		struct sess *ss = &tg->sess[k];

		if (!ss->on || ss->reported || !__atomic_load_n(&ss->done, __ATOMIC_ACQUIRE))
			continue;
		if (tg->gone || !watch_target_alive(tg))
			return; /* ended with its target (the "gone" line says so), or by watch */
		ss->reported = true;
		watch_log_begin(&j, &sb, "session-end");
		watch_log_target(&j, tg);
		ct_json_kv_str(&j, "error", ss->why[0] ? ss->why : "the target ended the session");
		snprintf(note, sizeof(note), "%s are no longer evaluated for this process", served[ss->kind]);
		ct_json_kv_str(&j, "note", note + 4); /* without "its " */
		watch_log_end(w, &j, &sb);
		watch_say(w, true, "pid %d: EventPipe session ended: %s; %s are off", (int)tg->pid,
			 ss->why[0] ? ss->why : "the target ended it", served[ss->kind]);
	}
}

static void target_release(struct watch *w, struct target *tg)
{
	size_t i;

	for (i = 0; i < MAX_RUNNING; i++)
		if (w->run[i].used && w->run[i].target == tg->idx)
			return; /* still in use by an action */
	for (i = 0; i < 2; i++)
		if (tg->sess[i].on && !__atomic_load_n(&tg->sess[i].done, __ATOMIC_ACQUIRE))
			return;
	for (i = 0; i < 2; i++)
		if (tg->sess[i].on) {
			pthread_join(tg->sess[i].th, NULL);
			tg->sess[i].on = false;
		}
	for (i = 0; i < MAX_RULES; i++)
		watch_state_release(&tg->st[i]);
	tg->used = false;
}

/* ----- the engine's interface (engine.h) ----- */

int watch_engine_new(struct watch **out, const struct watch_config *c)
{
	struct watch *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	watch_engine_configure(w, c);
	w->evfd = -1;
	pthread_mutex_init(&w->lock, NULL);
	*out = w;
	return 0;
}

void watch_engine_configure(struct watch *w, const struct watch_config *c)
{
	w->cfg = *c;
	w->outdir = c->outdir;
	w->match = c->match;
	w->action_limit_ms = c->action_limit_ms;
	w->max_actions = c->max_actions;
	w->no_stacks = c->no_stacks;
	w->lines = c->lines;
	w->timeout_ms = c->timeout_ms;
}

int watch_engine_add_rule(struct watch *w, const char *text, char *why, size_t whylen)
{
	struct watch_rule *r;

	if (w->nrules == MAX_RULES) {
		snprintf(why, whylen, "at most %d rules", MAX_RULES);
		return -E2BIG;
	}
	r = &w->rules[w->nrules];
	if (watch_rule_parse(text, r, why, whylen))
		return -EINVAL;
	if (r->kind == WATCH_MEM_GROWTH && analyze_mem_growth_kind(r->name) < 0) {
		snprintf(why, whylen, "'%s': not a kind of memory (native, total, gc_heap, code_heaps, native_heap, "
			 "stacks, images, other_anon, other)", r->name);
		return -EINVAL;
	}
	w->rule_text[w->nrules++] = text;
	if (r->kind == WATCH_COUNTER || r->kind == WATCH_EXCEPTION)
		w->need_session = true;
	if (r->kind == WATCH_COUNTER)
		w->need_counters = true;
	if (r->kind == WATCH_REQUEST || r->kind == WATCH_STATUS)
		w->need_req = w->need_session = true;
	if (r->kind == WATCH_EXCEPTION)
		w->need_exc = true;
	if (r->kind == WATCH_GC_PAUSE)
		w->need_gc = w->need_session = true;
	if (r->kind == WATCH_CGROUP_MEM)
		w->need_cgroup = true;
	if (r->kind == WATCH_EXIT || r->kind == WATCH_CRASH)
		w->need_status = true;
	return 0;
}

size_t watch_engine_nrules(const struct watch *w)
{
	return w->nrules;
}

int watch_engine_add_action(struct watch *w, const struct watch_action *a)
{
	if (w->nactions == MAX_ACTIONS)
		return -E2BIG;
	w->actions[w->nactions++] = *a;
	return 0;
}

int watch_engine_add_target(struct watch *w, const struct proc_target *t)
{
	uint64_t st;

	if (proc_starttime(t->pid, &st))
		return -ESRCH;
	return target_add_found(w, t, st);
}

/* How exit statuses are known: the kernel's process-events connector, or why not. */
static void open_events(struct watch *w)
{
	int e = proc_events_open(&w->evfd);
	struct ct_json j;
	struct strbuf sb;

	watch_log_begin(&j, &sb, "exit-status");
	ct_json_kv_bool(&j, "known", e == 0);
	if (e) {
		w->evfd = -1;
		ct_json_kv_str(&j, "error", e == -ETIMEDOUT ? "no answer from the kernel" : strerror(-e));
		ct_json_kv_str(&j, "note", e == -ETIMEDOUT ?
			       "the kernel's process-events connector answers only in the initial user "
			       "and PID namespaces, and clrtap runs in another: 'exit' rules fire without "
			       "the exit status and 'crash' rules never fire" :
			       "the kernel's process-events connector (netlink) refused: it needs "
			       "CAP_NET_ADMIN on this kernel; 'exit' rules fire without the exit status "
			       "and 'crash' rules never fire");
		watch_say(w, true, "how a process ends is not known (process-events connector: %s): crash rules "
			  "never fire", e == -ETIMEDOUT ? "clrtap is not in the initial PID/user namespace"
							: "needs CAP_NET_ADMIN here");
	} else {
		ct_json_kv_str(&j, "source", "the kernel's process-events connector (netlink)");
	}
	watch_log_end(w, &j, &sb);
}

/* One round: statuses, new targets, samples, firings, actions, sessions. false: the one target is done. */
static bool round_once(struct watch *w, int64_t t, int64_t *last_scan)
{
	bool any = false;
	size_t k;

	read_statuses(w);
	if (w->cfg.all && t - *last_scan >= SCAN_MS) {
		*last_scan = t;
		(void)proc_scan(scan_one, w);
	}
	for (k = 0; k < MAX_TARGETS; k++) {
		struct target *tg = &w->targets[k];

		if (!tg->used)
			continue;
		if (!tg->gone) {
			if (watch_target_alive(tg))
				sample(w, tg);
			else
				target_gone(w, tg);
		}
		any |= !tg->gone;
	}
	handle_pending(w);
	watch_actions_reap(w);
	for (k = 0; k < MAX_TARGETS; k++)
		if (w->targets[k].used)
			session_report(w, &w->targets[k]);
	for (k = 0; k < MAX_TARGETS; k++)
		if (w->targets[k].used && w->targets[k].gone)
			target_release(w, &w->targets[k]);
	/* the one target is gone and its actions are done */
	return w->cfg.all || any || watch_actions_running(w);
}

int watch_engine_run(struct watch *w)
{
	int64_t start = watch_now_ms(), last_scan = 0, stop_at;
	struct ct_json j;
	struct strbuf sb;
	size_t k;
	int i;

	if (w->need_status)
		open_events(w);
	stop_at = w->cfg.duration_ms ? start + w->cfg.duration_ms : INT64_MAX;
	for (;;) {
		int64_t t = watch_now_ms();

		if ((w->cfg.stop && *w->cfg.stop) || t >= stop_at || !round_once(w, t, &last_scan))
			break;
		usleep(TICK_MS * 1000);
	}
	/* stop: sessions end, running actions are stopped with their grace */
	for (k = 0; k < MAX_TARGETS; k++)
		w->targets[k].stop = 1;
	watch_actions_stop(w);
	for (k = 0; k < MAX_TARGETS; k++)
		for (i = 0; i < 2; i++)
			if (w->targets[k].used && w->targets[k].sess[i].on) {
				pthread_join(w->targets[k].sess[i].th, NULL);
				w->targets[k].sess[i].on = false;
			}
	/* firings queued after the last round are not acted on */
	for (k = 0; k < w->npend; k++)
		free(w->pend[k].stack);
	w->npend = 0;
	watch_log_begin(&j, &sb, "end");
	ct_json_kv_u64(&j, "fired", w->fires);
	watch_log_end(w, &j, &sb);
	return 0;
}

void watch_engine_free(struct watch *w)
{
	size_t k;
	int i;

	if (!w)
		return;
	for (k = 0; k < MAX_TARGETS; k++)
		for (i = 0; i < MAX_RULES; i++)
			watch_state_release(&w->targets[k].st[i]);
	if (w->evfd >= 0)
		close(w->evfd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
