/* SPDX-License-Identifier: MIT */
/*
 * session.c - the EventPipe session that carries the profiler's events to
 * clrtap: an ordinary CollectTracing session enabling only the profiler's
 * provider, read with lib/nettrace as it arrives, on one thread. Stopping
 * it (StopTracing) is also how clrtap tells the profiler to detach when the
 * session holds the CONTROL keyword.
 */
#include "common/compat.h"

#include <poll.h>
#include <time.h>

#include "agent/agent.h"
#include "common/log.h"
#include "nettrace/nettrace.h"

#define STOP_GRACE_MS 10000

struct sess {
	const struct agent_session_opts *o;
	struct agent_session_result *res;
	int fd;
	uint64_t session;
	int64_t start, stop_at;
	bool stop_sent, want_stop, seen;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void maybe_stop(struct sess *s)
{
	const struct agent_session_opts *o = s->o;
	int64_t now = now_ms();
	struct ipc_error serr;

	if (s->stop_sent)
		return;
	if (o->first_event_timeout_ms > 0 && !s->seen &&
	    now - s->start >= o->first_event_timeout_ms) {
		s->res->timed_out = true;
		s->want_stop = true;
	}
	if ((o->stop && *o->stop) || s->want_stop ||
	    (o->duration_ms > 0 && now - s->start >= o->duration_ms)) {
		s->stop_sent = true;
		s->stop_at = now;
		if (ipc_stop_tracing(o->ep, s->session, &serr))
			ct_debug("agent: StopTracing failed (session may be gone)");
	}
}

static ssize_t sess_read(void *ctx, void *buf, size_t len)
{
	struct sess *s = ctx;

	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		ssize_t n;

		maybe_stop(s);
		if (s->stop_sent && now_ms() - s->stop_at > STOP_GRACE_MS)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
			return -errno;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(s->fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return errno == ECONNRESET ? 0 : -errno;
		if (n == 0 && !s->stop_sent)
			s->res->target_ended = true;
		return n;
	}
}

static int on_nt_event(void *ctx, const struct nt_event *ev)
{
	struct sess *s = ctx;
	struct agent_event ae;

	if (!ev->meta || !ev->meta->provider || strcmp(ev->meta->provider, PRF_PROVIDER_NAME))
		return 0;
	if (agent_event_decode((int)ev->meta->event_id, ev->payload, ev->payload_len, &ae)) {
		s->res->bad_events++;
		return 0;
	}
	s->seen = true;
	s->res->events++;
	if (s->o->on_event && !s->want_stop && s->o->on_event(s->o->ctx, &ae))
		s->want_stop = true;
	return 0;
}

int agent_session_run(const struct agent_session_opts *o, struct agent_session_result *res,
		      struct ipc_error *rerr)
{
	struct ipc_provider prov = { PRF_PROVIDER_NAME, o->keywords, 5, o->arguments };
	struct ipc_trace_config cfg = { 0 };
	struct nt_handlers h = { .event = on_nt_event };
	struct sess s = { .o = o, .res = res, .fd = -1 };
	struct nt_reader *r = NULL;
	struct nt_stats st;
	int err;

	memset(res, 0, sizeof(*res));
	cfg.buffer_mb = 16;
	cfg.providers = &prov;
	cfg.nproviders = 1;
	err = ipc_collect_tracing(o->ep, &cfg, &s.fd, &s.session, rerr);
	if (err)
		return err;
	s.start = now_ms();
	if (o->on_open) {
		res->open_error = o->on_open(o->ctx);
		if (res->open_error)
			s.want_stop = true;
		s.start = now_ms();
	}
	err = nt_reader_new(&r, sess_read, &s, NULL);
	if (!err)
		err = nt_reader_run(r, &h, &s);
	if (r) {
		nt_reader_stats(r, &st);
		res->dropped = st.dropped;
		nt_reader_free(r);
	}
	/* A session cut before its header came (stopped at once) is no error. */
	if (err == -EBADMSG && s.stop_sent && !res->events)
		err = 0;
	close(s.fd);
	return err;
}
