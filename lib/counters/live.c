/* SPDX-License-Identifier: MIT */
/*
 * live.c - an EventPipe session read as it arrives: ipc_session_run on a
 * second thread writes the stream into a pipe, lib/nettrace reads the pipe
 * on the calling thread.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include "common/io.h"
#include "counters/counters.h"

struct live_thread {
	const struct counters_live *o;
	struct counters_live_result *res;
	int wfd;
};

static int pipe_sink(void *ctx, const void *buf, size_t n)
{
	struct live_thread *lt = ctx;

	return ct_write_all(lt->wfd, buf, n);
}

static void *session_main(void *arg)
{
	struct live_thread *lt = arg;
	struct ipc_session_opts so = { 0 };
	sigset_t set;

	/* Signals are for the reading thread (its handler sets *stop). */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	so.sink = pipe_sink;
	so.ctx = lt;
	so.stop = lt->o->stop;
	so.duration_ms = lt->o->duration_ms;
	lt->res->session_err = ipc_session_run(lt->o->ep, lt->o->cfg, &so, &lt->res->session,
					       &lt->res->rerr);
	close(lt->wfd);
	lt->wfd = -1;
	return NULL;
}

struct live_read {
	int fd;
	const struct counters_live *o;
};

static ssize_t live_read(void *ctx, void *buf, size_t len)
{
	struct live_read *lr = ctx;
	struct pollfd pfd = { .fd = lr->fd, .events = POLLIN };
	ssize_t n;

	if (lr->o->idle && poll(&pfd, 1, 0) == 0)
		lr->o->idle(lr->o->ctx);
	n = read(lr->fd, buf, len);
	return n < 0 ? -errno : n;
}

int counters_live_run(const struct counters_live *o, struct counters_live_result *res)
{
	struct live_thread lt = { .o = o, .res = res, .wfd = -1 };
	struct live_read lr = { .fd = -1, .o = o };
	struct nt_reader *r = NULL;
	pthread_t th;
	int fds[2], err;

	memset(res, 0, sizeof(*res));
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	lr.fd = fds[0];
	lt.wfd = fds[1];
	err = nt_reader_new(&r, live_read, &lr, o->limits);
	if (err) {
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	err = pthread_create(&th, NULL, session_main, &lt);
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
	if (nt_reader_offset(r) > 0 && nt_reader_open(r) == 0) {
		res->info = *nt_reader_info(r);
		res->info_valid = true;
	}
	if (res->reader_err < 0) {
		const char *msg = NULL;

		nt_reader_error(r, &res->reader_offset, &msg);
		snprintf(res->reader_msg, sizeof(res->reader_msg), "%s", msg ? msg : "");
	}
	if (res->reader_err != 0) {
		/* Stopped early (handler or damage): end the session and unblock the writer. */
		*o->stop = 1;
	}
	/* Whatever is left (a stream that ended with an error) is drained and dropped. */
	for (;;) {
		char buf[4096];
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		break;
	}
	pthread_join(th, NULL);
	close(fds[0]);
	nt_reader_free(r);
	return 0;
}
