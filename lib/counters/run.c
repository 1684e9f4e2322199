/* SPDX-License-Identifier: MIT */
/*
 * run.c - THE counters session (counters_run): `counters monitor|collect`,
 * serve's counters sessions (the counters task) and watch's counters rules
 * read counters through this one workflow. See counters.h.
 */
#include "common/compat.h"

#include "common/exitcode.h"
#include "common/log.h"
#include "counters/counters.h"
#include "live/live.h"

struct crun {
	const struct counters_run_opts *o;
	struct counters_decoder *dec;
	struct counters_clock clock;
	struct counters_run_result *res;
	char last_notice[256];
};

static int on_value(void *ctx, const struct counters_value *cv)
{
	struct crun *c = ctx;
	struct counters_value v = *cv;
	char ts[80];
	int err;

	if (!counters_spec_wants(c->o->spec, v.meter, v.source, v.name))
		return 0;
	if (v.interval_sec <= 0)
		v.interval_sec = c->o->interval;
	counters_clock_format(&c->clock, v.timestamp, ts, sizeof(ts));
	err = c->o->value ? c->o->value(c->o->ctx, &v, ts) : 0;
	if (err > 0)
		return 0; /* the sink left this one out */
	if (!err)
		c->res->nvalues++;
	return err;
}

static int on_notice(void *ctx, const char *msg)
{
	struct crun *c = ctx;

	/* the same message comes every interval: say it once */
	if (strcmp(c->last_notice, msg)) {
		ct_warn("%s", msg);
		snprintf(c->last_notice, sizeof(c->last_notice), "%s", msg);
	}
	return 0;
}

static const struct counters_handlers handlers = { .value = on_value, .notice = on_notice };

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct crun *c = ctx;
	int err = counters_decode(c->dec, ev, &handlers, c);

	if (err == -EBADMSG) {
		ct_warn("a counter event could not be decoded (skipped)");
		return 0;
	}
	return err < 0 ? err : 0;
}

static void on_opened(void *ctx, const struct nt_trace_info *ti)
{
	struct crun *c = ctx;

	counters_clock_set(&c->clock, ti);
}

static void on_idle(void *ctx)
{
	struct crun *c = ctx;

	if (c->o->idle)
		c->o->idle(c->o->ctx);
}

static int fail(struct counters_run_result *res, int err, int code, const char *fmt, ...) PRINTF(4, 5);
static int fail(struct counters_run_result *res, int err, int code, const char *fmt, ...)
{
	va_list ap;

	res->err = err;
	res->exit_code = code;
	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	return err;
}

int counters_run(const struct ipc_endpoint *ep, const struct counters_run_opts *o, struct counters_run_result *res)
{
	struct counters_session cs = { 0 };
	struct ipc_trace_config cfg = { 0 };
	struct live_session_opts live = { 0 };
	struct live_session_result lr;
	struct nt_handlers h = { .event = on_event };
	struct crun c = { .o = o, .res = res };
	volatile sig_atomic_t local_stop = 0;
	char why[512];
	int err;

	memset(res, 0, sizeof(*res));
	err = counters_session_init(&cs, o->spec, o->interval, o->max_ts ? o->max_ts : 1000,
				    o->max_hist ? o->max_hist : 20);
	if (!err)
		err = counters_decoder_new(&c.dec, cs.session_id);
	if (err) {
		fail(res, err, EXIT_ERROR, "cannot set up the session: %s", strerror(-err));
		goto out;
	}
	cfg.providers = cs.providers;
	cfg.nproviders = cs.nproviders;
	cfg.buffer_mb = 16;
	live.ep = ep;
	live.cfg = &cfg;
	/* the stop flag: the library sets it too when the session must end */
	live.stop = o->stop ? o->stop : &local_stop;
	live.duration_ms = o->duration_ms;
	live.h = &h;
	live.prompt = true; /* the latest values, not one flush late */
	live.idle = on_idle;
	live.opened = on_opened;
	live.ctx = &c;
	err = live_session_run(&live, &lr);
	if (err) {
		fail(res, err, EXIT_ERROR, "cannot run the session: %s", strerror(-err));
		goto out;
	}
	res->target_ended = lr.session.target_ended;
	if (o->idle)
		o->idle(o->ctx);
	if (lr.session_err && (lr.session.bytes == 0 || lr.session.bad_prologue)) {
		ipc_session_strerror(lr.session_err, &lr.session, ep, &lr.rerr, why, sizeof(why));
		res->nothing_read = true;
		fail(res, lr.session_err, lr.session.bad_prologue ? EXIT_PROTOCOL : ct_exit_for(lr.session_err),
		     "cannot read counters: %s", why);
	} else if (lr.reader_err < 0 && lr.session.target_ended && !lr.session.complete) {
		/* the connection closed mid-stream: the target died */
		fail(res, -ECONNRESET, EXIT_PARTIAL, "the target went away during the session (%" PRIu64
		     " values read)", res->nvalues);
	} else if (lr.reader_err < 0) {
		fail(res, lr.reader_err, EXIT_PROTOCOL, "the session stream broke at byte %" PRIu64 ": %s (%s)",
		     lr.reader_offset, lr.reader_msg, strerror(-lr.reader_err));
	} else if (lr.session_err) {
		ipc_session_strerror(lr.session_err, &lr.session, ep, &lr.rerr, why, sizeof(why));
		fail(res, lr.session_err, ct_exit_for(lr.session_err), "the session ended badly: %s", why);
	} else if (lr.session.target_ended) {
		ct_warn("the target ended the session (did it exit?)");
	}
out:
	counters_decoder_free(c.dec);
	counters_session_release(&cs);
	return res->err;
}
