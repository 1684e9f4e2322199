/* SPDX-License-Identifier: MIT */
/*
 * session.c - the EventPipe session that carries the profiler's events to
 * clrtap: an ordinary CollectTracing session enabling only the profiler's
 * provider, read with lib/nettrace as it arrives, on one thread. Stopping
 * it (StopTracing) is also how clrtap tells the profiler to detach when the
 * session holds the CONTROL keyword.
 *
 * Events are handed on in time order (struct agent_order): EventPipe writes
 * the events of different threads out of order. Before a stop the profiler
 * can be asked to write what it counted (flush_before_stop): a second short
 * session carries "clrtap=flush;nonce=N" in its filter data, the profiler
 * answers on its own thread with ProbeCount, Status and Flushed(N), and the
 * real StopTracing follows once Flushed(N) came in.
 */
#include "common/compat.h"

#include <poll.h>
#include <time.h>

#include "agent/agent.h"
#include "common/log.h"
#include "nettrace/nettrace.h"

#define STOP_GRACE_MS 10000
#define FLUSH_WAIT_MS 3000

struct sess {
	const struct agent_session_opts *o;
	struct agent_session_result *res;
	int fd;
	uint64_t session;
	int64_t start, stop_at, flush_at;
	bool stop_sent, want_stop, seen;
	uint32_t peer_protocol;  /* from the Hello as it arrives */
	bool flush_sent, flushed;
	int flush_fd;
	uint64_t flush_session, nonce;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Opens the short session that asks the profiler to flush (see top). */
static void send_flush(struct sess *s)
{
	struct ipc_trace_config cfg = { 0 };
	struct ipc_provider prov = { PRF_PROVIDER_NAME, PRF_KW_STATUS, 5, NULL };
	struct ipc_error err = { 0 };
	struct timespec ts;
	char args[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->nonce = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) | 1u;
	snprintf(args, sizeof(args), "clrtap=flush;nonce=%" PRIu64, s->nonce);
	prov.arguments = args;
	cfg.buffer_mb = 1;
	cfg.providers = &prov;
	cfg.nproviders = 1;
	s->flush_sent = true;
	s->flush_at = now_ms();
	if (ipc_collect_tracing(s->o->ep, &cfg, &s->flush_fd, &s->flush_session, &err)) {
		ct_debug("agent: the flush session did not open; stopping without it");
		s->flush_fd = -1;
		s->flush_at -= FLUSH_WAIT_MS; /* do not wait for an answer */
	}
}

static void end_flush(struct sess *s)
{
	struct ipc_error err;

	if (s->flush_fd < 0)
		return;
	if (ipc_stop_tracing(s->o->ep, s->flush_session, &err))
		ct_debug("agent: StopTracing of the flush session failed");
	close(s->flush_fd);
	s->flush_fd = -1;
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
		if (o->flush_before_stop && !s->res->timed_out && !s->res->open_error &&
		    s->peer_protocol >= 2) {
			if (!s->flush_sent) {
				send_flush(s);
				return;
			}
			if (!s->flushed && now - s->flush_at < FLUSH_WAIT_MS)
				return;
		}
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

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static bool ours(const struct nt_event *ev)
{
	return ev->meta && ev->meta->provider && !strcmp(ev->meta->provider, PRF_PROVIDER_NAME);
}

/* As it arrives: what the stop handshake needs cannot wait for time order. */
static int on_arrival(void *ctx, const struct nt_event *ev)
{
	struct sess *s = ctx;
	int id;

	if (!ours(ev))
		return 0;
	id = (int)ev->meta->event_id;
	s->seen = true;
	if (id == PRF_EV_HELLO && ev->payload_len >= 4)
		s->peer_protocol = (uint32_t)ev->payload[0] | (uint32_t)ev->payload[1] << 8 |
				   (uint32_t)ev->payload[2] << 16 | (uint32_t)ev->payload[3] << 24;
	if (id == PRF_EV_FLUSHED && ev->payload_len >= 8 && s->flush_sent &&
	    le64(ev->payload) == s->nonce)
		s->flushed = s->res->flushed = true;
	return 0;
}

/* In time order (the reader's window puts the threads' events back in order). */
static int on_nt_event(void *ctx, const struct nt_event *ev)
{
	struct sess *s = ctx;
	struct agent_event ae;
	int id, err;

	if (!ours(ev))
		return 0;
	id = (int)ev->meta->event_id;
	if (id == PRF_EV_CALL_STACK) {
		/* the stack rides with the payload: u32 length, payload, IPs */
		uint32_t nf = ev->nframes < AGENT_STACK_MAX ? ev->nframes : AGENT_STACK_MAX;
		size_t blen = 4 + (size_t)ev->payload_len + 8 * (size_t)nf;
		uint8_t *b = ev->payload_len < (1u << 20) ? malloc(blen) : NULL;

		if (!b) {
			s->res->bad_events++;
			return 0;
		}
		for (int k = 0; k < 4; k++)
			b[k] = (uint8_t)(ev->payload_len >> (8 * k));
		memcpy(b + 4, ev->payload, ev->payload_len);
		for (uint32_t f = 0; f < nf; f++)
			for (int k = 0; k < 8; k++)
				b[4 + ev->payload_len + 8 * f + k] = (uint8_t)(ev->stack[f] >> (8 * k));
		err = agent_event_decode(id, b, blen, &ae);
		free(b);
	} else {
		err = agent_event_decode(id, ev->payload, ev->payload_len, &ae);
	}
	if (err) {
		s->res->bad_events++;
		return 0;
	}
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
	struct nt_handlers h = { .event = on_nt_event, .arrival = on_arrival };
	struct sess s = { .o = o, .res = res, .fd = -1, .flush_fd = -1 };
	struct nt_reader *r = NULL;
	struct nt_stats st;
	int err;

	memset(res, 0, sizeof(*res));
	cfg.buffer_mb = 16;
	cfg.stackwalk = o->stackwalk; /* CallStack events' stacks */
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
	end_flush(&s);
	if (r) {
		nt_reader_stats(r, &st);
		res->dropped = st.dropped;
		res->order_forced = st.order_forced;
		nt_reader_free(r);
	}
	/* A session cut before its header came (stopped at once) is no error. */
	if (err == -EBADMSG && s.stop_sent && !res->events)
		err = 0;
	close(s.fd);
	return err;
}
