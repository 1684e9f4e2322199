/* SPDX-License-Identifier: MIT */
/*
 * live.c - see live.h. The session thread blocks SIGINT and SIGTERM: signals
 * belong to the caller's thread, whose handlers set *stop.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>

#include "common/io.h"
#include "live/live.h"

struct writer {
	const struct live_session_opts *o;
	struct live_session_result *res;
	int wfd;
};

static int pipe_sink(void *ctx, const void *buf, size_t n)
{
	struct writer *w = ctx;
	int err;

	if (w->o->tee_fd > 0 && (err = ct_write_all(w->o->tee_fd, buf, n)))
		return err;
	return ct_write_all(w->wfd, buf, n);
}

static void *session_main(void *arg)
{
	struct writer *w = arg;
	struct ipc_session_opts so = { 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	so.sink = pipe_sink;
	so.ctx = w;
	so.stop = w->o->stop;
	so.duration_ms = w->o->duration_ms;
	w->res->session_err = ipc_session_run(w->o->ep, w->o->cfg, &so, &w->res->session,
					      &w->res->rerr);
	close(w->wfd);
	w->wfd = -1;
	return NULL;
}

struct reader {
	int fd;
	const struct live_session_opts *o;
	struct live_session_result *res;
	struct nt_reader *r;
	int hstop; /* what a handler returned to stop during a prompt release */
};

static ssize_t pipe_read(void *ctx, void *buf, size_t len)
{
	struct reader *rd = ctx;
	const struct live_session_opts *o = rd->o;
	ssize_t n;

	for (;;) {
		struct pollfd pfd = { .fd = rd->fd, .events = POLLIN };
		int pr = 1;

		if (o->idle || o->tick || o->prompt) {
			pr = poll(&pfd, 1, 0);
			if (pr == 0 && o->prompt) {
				int hs = nt_reader_release(rd->r, o->h, o->ctx);

				if (hs) {
					rd->hstop = hs;
					return -ECANCELED;
				}
			}
			if (pr == 0 && o->idle)
				o->idle(o->ctx);
			if (pr == 0 && o->tick && o->tick_ms > 0)
				pr = poll(&pfd, 1, o->tick_ms);
			if (o->tick && o->tick(o->ctx))
				*o->stop = 1;
			if (pr < 0 && errno != EINTR)
				return -errno;
			if (pr <= 0 && o->tick && o->tick_ms > 0)
				continue;
		}
		n = read(rd->fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			rd->res->bytes += (uint64_t)n;
		return n < 0 ? -errno : n;
	}
}

int live_session_run(const struct live_session_opts *o, struct live_session_result *res)
{
	struct writer w = { .o = o, .res = res, .wfd = -1 };
	struct reader rd = { .fd = -1, .o = o, .res = res };
	struct nt_reader *r = NULL;
	pthread_t th;
	int fds[2], err;

	memset(res, 0, sizeof(*res));
	if (!o->stop)
		return -EINVAL;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if (o->pipe_bytes)
		(void)fcntl(fds[1], F_SETPIPE_SZ, (int)CT_MIN(o->pipe_bytes, (size_t)1 << 24));
	rd.fd = fds[0];
	w.wfd = fds[1];
	err = nt_reader_new(&r, pipe_read, &rd, o->limits);
	rd.r = r;
	if (err) {
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	err = pthread_create(&th, NULL, session_main, &w);
	if (err) {
		nt_reader_free(r);
		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	res->reader_err = nt_reader_open(r);
	if (res->reader_err == 0) {
		if (o->opened)
			o->opened(o->ctx, nt_reader_info(r));
		res->reader_err = nt_reader_run(r, o->h, o->ctx);
	}
	if (rd.hstop) {
		/* a handler stopped the session during a prompt release */
		res->reader_err = rd.hstop > 0 ? NT_STOPPED : rd.hstop;
	}
	if (nt_reader_offset(r) > 0 && nt_reader_open(r) == 0) {
		res->info = *nt_reader_info(r);
		res->info_valid = true;
	}
	if (res->reader_err < 0 && !rd.hstop) {
		const char *msg = NULL;

		nt_reader_error(r, &res->reader_offset, &msg);
		snprintf(res->reader_msg, sizeof(res->reader_msg), "%s", msg ? msg : "");
	}
	/* Stopped early (handler, tick or damage): end the session. */
	if (res->reader_err != 0)
		*o->stop = 1;
	/* Whatever is left is drained and dropped, so the writer never blocks. */
	for (;;) {
		char buf[4096];
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		break;
	}
	pthread_join(th, NULL);
	close(fds[0]);
	nt_reader_stats(r, &res->stats);
	nt_reader_free(r);
	return 0;
}
