/* SPDX-License-Identifier: MIT */
/*
 * inline.c - was a method inlined, and into what? The JIT says so in its
 * inlining events (Microsoft-Windows-DotNETRuntime, JitTracing keyword
 * 0x1000, level 5: 185 MethodJitInliningSucceeded, 186
 * MethodJitInliningFailed), sent as it compiles callers. A listener thread
 * reads a live EventPipe session (lib/live); the caller takes the events for
 * the methods it watches. Events come only for code compiled while clrtap
 * listens: inlining done before is not replayed by the runtime.
 */
#include "common/compat.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "common/io.h"
#include "common/log.h"
#include "common/strparse.h"
#include "live/live.h"
#include "nettrace/nettrace.h"
#include "probe/probe.h"

#define EV_SUCCEEDED 185
#define EV_FAILED 186
#define KW_JIT 0x10ull
#define KW_JITTRACING 0x1000ull
#define QUEUE_MAX 64
#define MAX_WATCH 16
#define OPEN_WAIT_MS 3000

struct probe_inl {
	struct ipc_endpoint ep;
	char sock[PATH_MAX];
	volatile sig_atomic_t stop;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool opened, ended;
	int err;
	char *watch[MAX_WATCH];
	size_t nwatch;
	struct probe_inline_ev q[QUEUE_MAX];
	size_t nq;
	uint64_t dropped;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A NUL-terminated UTF-16LE string at *off; advances past the terminator. */
static int take_str(const uint8_t *p, size_t len, size_t *off, struct nt_str16 *s)
{
	size_t i = *off;

	while (i + 1 < len && (p[i] || p[i + 1]))
		i += 2;
	if (i + 1 >= len)
		return -EBADMSG;
	s->p = p + *off;
	s->nunits = (uint32_t)((i - *off) / 2);
	*off = i + 2;
	return 0;
}

/* "Ns.Type" + "Method" -> "Ns.Type::Method" (a generic type's instantiation dropped). */
static int full_name(const struct nt_str16 *ns, const struct nt_str16 *name, char *out, size_t cap)
{
	struct strbuf a = STRBUF_INIT_MAX(PROBE_PM_NAME_MAX * 2), b = STRBUF_INIT_MAX(PROBE_PM_NAME_MAX * 2);
	int err = nt_str16_utf8(ns, &a);

	if (!err)
		err = strbuf_addstr(&a, "::");
	if (!err)
		err = nt_str16_utf8(name, &a);
	if (!err)
		err = probe_pm_name_base(a.buf, &b);
	if (!err)
		ct_strlcpy(out, b.buf, cap);
	strbuf_release(&a);
	strbuf_release(&b);
	return err;
}

int probe_inline_decode(const void *payload, size_t len, bool failed, struct probe_inline_ev *ev)
{
	const uint8_t *p = payload;
	struct nt_str16 s[9], reason = { 0 };
	size_t off = 0, i;
	int err = 0;

	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < 9 && !err; i++)
		err = take_str(p, len, &off, &s[i]);
	if (!err && failed) {
		if (off + 4 > len)
			return -EBADMSG;
		off += 4; /* FailAlways (BOOL) */
		err = take_str(p, len, &off, &reason);
	}
	if (err)
		return err;
	ev->inlined = !failed;
	if (full_name(&s[0], &s[1], ev->compiled, sizeof(ev->compiled)) ||
	    full_name(&s[3], &s[4], ev->inliner, sizeof(ev->inliner)) ||
	    full_name(&s[6], &s[7], ev->inlinee, sizeof(ev->inlinee)))
		return -EBADMSG;
	if (failed) {
		struct strbuf r = STRBUF_INIT_MAX(sizeof(ev->reason) - 1);

		(void)nt_str16_utf8(&reason, &r);
		ct_strlcpy(ev->reason, r.buf, sizeof(ev->reason));
		strbuf_release(&r);
	}
	/* the target wrote these: the CLI prints them through cli_safe() */
	return 0;
}

static bool watched(const struct probe_inl *li, const char *name)
{
	size_t i;

	for (i = 0; i < li->nwatch; i++)
		if (!strcmp(li->watch[i], name))
			return true;
	return false;
}

static int on_event(void *ctx, const struct nt_event *e)
{
	struct probe_inl *li = ctx;
	struct probe_inline_ev ev;

	if (!e->meta || e->meta->provider_kind != NT_PROV_RUNTIME ||
	    (e->meta->event_id != EV_SUCCEEDED && e->meta->event_id != EV_FAILED))
		return 0;
	if (probe_inline_decode(e->payload, e->payload_len, e->meta->event_id == EV_FAILED, &ev))
		return 0;
	if (!watched(li, ev.inlinee))
		return 0;
	ev.mono_ns = mono_ns();
	pthread_mutex_lock(&li->mu);
	if (li->nq < QUEUE_MAX)
		li->q[li->nq++] = ev;
	else
		li->dropped++;
	pthread_mutex_unlock(&li->mu);
	return 0;
}

static void on_opened(void *ctx, const struct nt_trace_info *ti)
{
	struct probe_inl *li = ctx;

	pthread_mutex_lock(&li->mu);
	li->opened = true;
	pthread_cond_broadcast(&li->cv);
	pthread_mutex_unlock(&li->mu);
}

/* The listener's thread: one live session until li->stop. */
static void *listen_main(void *arg)
{
	struct probe_inl *li = arg;
	struct ipc_provider prov = { "Microsoft-Windows-DotNETRuntime", KW_JIT | KW_JITTRACING, 5,
				     NULL };
	struct nt_handlers h = { .event = on_event };
	struct ipc_trace_config cfg = { 0 };
	struct live_session_opts lo = { 0 };
	struct live_session_result res;
	sigset_t set;
	int err;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	cfg.buffer_mb = 16;
	cfg.providers = &prov;
	cfg.nproviders = 1;
	cfg.rundown = false;
	lo.ep = &li->ep;
	lo.cfg = &cfg;
	lo.stop = &li->stop;
	lo.h = &h;
	lo.ctx = li;
	lo.opened = on_opened;
	lo.prompt = true; /* the caller reports inlining as the JIT does it */
	err = live_session_run(&lo, &res);
	if (!err)
		err = res.session_err;
	pthread_mutex_lock(&li->mu);
	li->ended = true;
	if (err && !li->err)
		li->err = err;
	pthread_cond_broadcast(&li->cv);
	pthread_mutex_unlock(&li->mu);
	return NULL;
}

void probe_inl_stop(struct probe_inl *li)
{
	size_t i;

	if (!li)
		return;
	li->stop = 1;
	if (li->started)
		pthread_join(li->th, NULL);
	for (i = 0; i < li->nwatch; i++)
		free(li->watch[i]);
	pthread_mutex_destroy(&li->mu);
	pthread_cond_destroy(&li->cv);
	free(li);
}

int probe_inl_start(const struct ipc_endpoint *ep, const char *const *names, size_t n,
		    struct probe_inl **out)
{
	struct probe_inl *li = calloc(1, sizeof(*li));
	struct timespec until;
	int err = 0;
	size_t i;

	if (!li)
		return -ENOMEM;
	pthread_mutex_init(&li->mu, NULL);
	pthread_cond_init(&li->cv, NULL);
	ct_strlcpy(li->sock, ep->path, sizeof(li->sock));
	li->ep.path = li->sock;
	li->ep.timeout_ms = ep->timeout_ms;
	li->ep.pid = ep->pid;
	li->ep.nspid = ep->nspid;
	for (i = 0; i < n && i < MAX_WATCH; i++)
		if (!(li->watch[li->nwatch++] = strdup(names[i])))
			err = -ENOMEM;
	if (err) {
		probe_inl_stop(li);
		return err;
	}
	if (pthread_create(&li->th, NULL, listen_main, li)) {
		probe_inl_stop(li);
		return -EAGAIN;
	}
	li->started = true;
	/* bounded wait: the session is on once its stream starts */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OPEN_WAIT_MS / 1000;
	pthread_mutex_lock(&li->mu);
	while (!li->opened && !li->ended)
		if (pthread_cond_timedwait(&li->cv, &li->mu, &until))
			break;
	err = li->opened ? 0 : li->err ? li->err : -ETIMEDOUT;
	pthread_mutex_unlock(&li->mu);
	if (err) {
		probe_inl_stop(li);
		return err;
	}
	*out = li;
	return 0;
}

size_t probe_inl_take(struct probe_inl *li, struct probe_inline_ev *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&li->mu);
	n = CT_MIN(max, li->nq);
	memcpy(out, li->q, n * sizeof(*out));
	memmove(li->q, li->q + n, (li->nq - n) * sizeof(*out));
	li->nq -= n;
	pthread_mutex_unlock(&li->mu);
	return n;
}
