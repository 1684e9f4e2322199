/* SPDX-License-Identifier: MIT */
/*
 * fakert_test.h - test-only (included by *_test.c, never by the libraries):
 * a fake runtime's diagnostics socket in a temporary directory, for unit
 * tests of lib/ipc's sessions and of lib/live without a .NET process.
 */
#ifndef CLRTAP_IPC_FAKERT_TEST_H
#define CLRTAP_IPC_FAKERT_TEST_H

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/cursor.h"
#include "common/strparse.h"
#include "ipc/ipc.h"

/*
 * A fake runtime for ipc_session_run, on a socket in a temporary directory:
 * CollectTracing gets "OK" + a session id and a nettrace prologue; on
 * StopTracing it writes a "rundown" much larger than a socket buffer to the
 * stream *before* it answers (as the runtime does), then the end tag, then
 * the answer. With stall set it sends nothing after the prologue, ever.
 */
struct fake_rt {
	char dir[64], path[108];
	int lfd;
	bool stall;
	bool old_runtime; /* answers CollectTracing6 "unknown command", as .NET 10 does */
	uint8_t ids[4];   /* the command ids of the session requests, in order */
	unsigned nids;
	uint8_t stop_id;  /* the command id of the request after the session's (StopTracing: 0x01) */
	size_t rundown;
	/* when set: the stream sent after the reply instead of a bare prologue
	 * (a whole recorded nettrace); StopTracing then just ends it */
	const void *stream;
	size_t stream_len;
	pthread_t th;
};

static __attribute__((unused)) void fake_header(uint8_t *h, uint16_t size)
{
	memcpy(h, "DOTNET_IPC_V1", 14);
	ct_put_le16(h + 14, size);
	h[16] = 0xff;
	h[17] = 0;
	h[18] = h[19] = 0;
}

static __attribute__((unused)) bool fake_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static __attribute__((unused)) int fake_request(int lfd, uint8_t *req)
{
	int c = accept(lfd, NULL, NULL);
	size_t got = 0, size;
	uint8_t skip[512];

	if (c < 0)
		return -1;
	while (got < 20) {
		ssize_t n = read(c, req + got, 20 - got);

		if (n <= 0)
			return close(c), -1;
		got += (size_t)n;
	}
	for (size = ct_le16(req + 14); got < size;) {
		ssize_t n = read(c, skip, CT_MIN(sizeof(skip), size - got));

		if (n <= 0)
			return close(c), -1;
		got += (size_t)n;
	}
	return c;
}

static __attribute__((unused)) void *fake_main(void *arg)
{
	struct fake_rt *f = arg;
	static const uint8_t pro[] = "Nettrace\x14\0\0\0!FastSerialization.1";
	uint8_t req[20], reply[28], *junk;
	int stream, stop;

	stream = fake_request(f->lfd, req);
	if (stream < 0)
		return NULL;
	f->ids[f->nids++] = req[17];
	if (f->old_runtime && req[17] == 0x07) {
		fake_header(reply, 24);
		reply[17] = 0xff; /* error: i32 HRESULT */
		ct_put_le32(reply + 20, (uint32_t)IPC_E_UNKNOWN_COMMAND);
		fake_write(stream, reply, 24);
		close(stream);
		stream = fake_request(f->lfd, req);
		if (stream < 0)
			return NULL;
		f->ids[f->nids++] = req[17];
	}
	fake_header(reply, 28);
	ct_put_le64(reply + 20, 42);
	fake_write(stream, reply, 28);
	if (f->stream)
		fake_write(stream, f->stream, f->stream_len);
	else
		fake_write(stream, pro, 32);
	stop = fake_request(f->lfd, req);
	if (stop >= 0)
		f->stop_id = req[17];
	if (stop < 0 || f->stall) {
		if (stop >= 0) {
			struct pollfd pfd = { .fd = stop, .events = POLLIN };

			poll(&pfd, 1, 10000); /* until the client hangs up */
			close(stop);
		}
		close(stream);
		return NULL;
	}
	junk = f->stream ? NULL : calloc(1, f->rundown);
	if (junk) {
		memset(junk, 2, f->rundown);
		fake_write(stream, junk, f->rundown); /* blocks until the client reads */
		free(junk);
	}
	if (!f->stream)
		fake_write(stream, "\x01", 1);
	close(stream);
	fake_write(stop, reply, 28);
	close(stop);
	return NULL;
}

static __attribute__((unused)) void fake_start_old(struct fake_rt *f, bool stall, bool old_runtime)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->stall = stall;
	f->old_runtime = old_runtime;
	f->rundown = 8u << 20;
	snprintf(f->dir, sizeof(f->dir), "/tmp/clrtap-ipc-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/s", f->dir);
	ct_strlcpy(sa.sun_path, f->path, sizeof(sa.sun_path));
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static __attribute__((unused)) void fake_start(struct fake_rt *f, bool stall)
{
	fake_start_old(f, stall, false);
}

static __attribute__((unused)) void fake_stop(struct fake_rt *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

#endif
