/* SPDX-License-Identifier: MIT */
/*
 * fakeds - a misbehaving diagnostics server for tests. It listens where a
 * .NET process with its pid would (/tmp/dotnet-diagnostic-<pid>-<key>-socket)
 * and answers every request in the way named on the command line:
 *
 *   garbage    20 bytes that are not an IPC header
 *   truncated  half a header, then close
 *   oversize   a header announcing 65535 bytes, 40 of them, then silence
 *   hang       accept and never answer
 *   close      accept and close at once
 *   badstring  a valid OK header whose ProcessInfo string count overruns
 *   hugeenv    an OK reply to ProcessEnvironment announcing 4 GiB
 *   error      an error reply with an HRESULT nobody knows
 *   wrongset   a reply whose command set is not 0xFF
 *   wrongpid   a valid ProcessInfo that names pid 424242, not its own
 *   oldruntime a .NET 6 runtime: ProcessInfo2 says 6.0.36, everything else
 *              is an unknown command
 *
 * Stream modes (the EventPipe commands): ProcessInfo gets a valid answer
 * (this pid), StopTracing an OK, and CollectTracing "OK" + a session id, then:
 *   stream-random   endless random bytes
 *   stream-huge     "Nettrace", a header length of 0x7fffffff, then silence
 *   stream-silent   nothing more (the connection stays open)
 *   stream-half     half of the reply, then silence
 *   stream-close    nothing more: the stream is closed at once
 *   stream-flood    a valid nettrace prologue, then endless random bytes
 *   stream-stall    a valid nettrace prologue, then silence (also after the stop)
 *
 * Prints "READY pid=<pid>" when listening; removes the socket on SIGTERM.
 */
#include "common/compat.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/cursor.h"
#include "common/strparse.h"
#include "proc/proc.h"

static char sock_path[108];
static pid_t main_pid; /* the listener: what a real runtime reports */

static void on_term(int sig)
{
	unlink(sock_path);
	_exit(0);
}

static void header(uint8_t *h, uint16_t size, uint8_t set, uint8_t id)
{
	memcpy(h, "DOTNET_IPC_V1", 14);
	ct_put_le16(h + 14, size);
	h[16] = set;
	h[17] = id;
	h[18] = h[19] = 0;
}

/* Reads one whole request (header + payload); 0 or -1. */
static int read_request(int c, uint8_t *req)
{
	uint8_t skip[4096];
	size_t got = 0, size;

	while (got < 20) {
		ssize_t n = read(c, req + got, 20 - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	size = ct_le16(req + 14);
	while (got < size) {
		ssize_t n = read(c, skip, CT_MIN(sizeof(skip), size - got));

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* Writes protocol strings (u32 units incl. NUL, UTF-16LE) at off; returns the new offset. */
static size_t put_strings(uint8_t *buf, size_t off, const char *const *strs, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		size_t len = strlen(strs[i]);

		ct_put_le32(buf + off, (uint32_t)len + 1);
		off += 4;
		for (j = 0; j <= len; j++, off += 2)
			ct_put_le16(buf + off, (uint16_t)strs[i][j]);
	}
	return off;
}

/* A ProcessInfo (v1) payload after a 20-byte header in buf; returns the length. */
static size_t process_info_v1(uint8_t *buf, uint64_t pid)
{
	static const char *const strs[] = { "fake", "Linux", "x64" };
	size_t off;

	ct_put_le64(buf + 20, pid);
	off = put_strings(buf, 20 + 8 + 16, strs, ARRAY_SIZE(strs));
	header(buf, (uint16_t)off, 0xff, 0);
	return off;
}

static void write_all(int c, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(c, b, n);

		if (w <= 0)
			_exit(0);
		b += w;
		n -= (size_t)w;
	}
}

/*
 * Answers a ProcessInfo request: v1 with pid, "unknown command" to v3 and v2
 * (as an old runtime says).
 */
static void process_info(int c, const uint8_t *req, pid_t pid)
{
	uint8_t buf[256] = { 0 };

	if (req[17] != 0x00) {
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x80131385u);
		write_all(c, buf, 24);
		return;
	}
	write_all(c, buf, process_info_v1(buf, (uint64_t)pid));
}

static void endless_random(int c)
{
	uint8_t junk[65536];
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	size_t i;

	for (;;) {
		for (i = 0; i < sizeof(junk); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			junk[i] = (uint8_t)x;
		}
		write_all(c, junk, sizeof(junk));
	}
}

static void serve_stream(int c, const char *mode)
{
	uint8_t req[20], buf[256];

	if (read_request(c, req))
		return;
	memset(buf, 0, sizeof(buf));
	if (req[16] == 0x04 && req[17] == 0x00) {
		write_all(c, buf, process_info_v1(buf, (uint64_t)getppid()));
		return;
	}
	if (req[16] == 0x04) {
		/* ProcessInfo3 and 2: "unknown command", as an old runtime says. */
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x80131385u);
		write_all(c, buf, 24);
		return;
	}
	if (req[16] == 0x02 && req[17] == 0x01) { /* StopTracing: OK + the session id */
		header(buf, 28, 0xff, 0);
		ct_put_le64(buf + 20, 7);
		write_all(c, buf, 28);
		return;
	}
	if (req[16] != 0x02) { /* anything else: an error */
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x80131385u);
		write_all(c, buf, 24);
		return;
	}
	header(buf, 28, 0xff, 0);
	ct_put_le64(buf + 20, 7);
	if (!strcmp(mode, "stream-half")) {
		write_all(c, buf, 14);
		pause();
		return;
	}
	write_all(c, buf, 28);
	if (!strcmp(mode, "stream-random")) {
		endless_random(c);
	} else if (!strcmp(mode, "stream-huge")) {
		memcpy(buf, "Nettrace", 8);
		ct_put_le32(buf + 8, 0x7fffffffu);
		write_all(c, buf, 12);
		pause();
	} else if (!strcmp(mode, "stream-flood") || !strcmp(mode, "stream-stall")) {
		memcpy(buf, "Nettrace", 8);
		ct_put_le32(buf + 8, 20);
		memcpy(buf + 12, "!FastSerialization.1", 20);
		write_all(c, buf, 32);
		if (!strcmp(mode, "stream-flood"))
			endless_random(c);
		pause();
	} else if (!strcmp(mode, "stream-close")) {
		return;
	} else {
		pause(); /* stream-silent */
	}
}

static void serve(int c, const char *mode)
{
	uint8_t req[20], buf[256];
	ssize_t n;

	if (!strncmp(mode, "stream-", 7)) {
		serve_stream(c, mode);
		return;
	}

	n = read(c, req, sizeof(req));
	if (n <= 0)
		return;
	memset(buf, 0, sizeof(buf));
	if (!strcmp(mode, "oldruntime") && req[16] == 0x04 && req[17] == 0x04) {
		static const char *const strs[] = { "dotnet old.dll", "Linux", "x64", "old",
						    "6.0.36" };
		size_t off;

		ct_put_le64(buf + 20, (uint64_t)main_pid);
		off = put_strings(buf, 20 + 8 + 16, strs, ARRAY_SIZE(strs));
		header(buf, (uint16_t)off, 0xff, 0);
		write_all(c, buf, off);
	} else if (!strcmp(mode, "oldruntime")) {
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x80131385u);
		write_all(c, buf, 24);
	} else if (!strcmp(mode, "garbage")) {
		memset(buf, 'x', 20);
		n = write(c, buf, 20);
	} else if (!strcmp(mode, "truncated")) {
		header(buf, 24, 0xff, 0);
		n = write(c, buf, 10);
	} else if (!strcmp(mode, "oversize")) {
		header(buf, 65535, 0xff, 0);
		n = write(c, buf, 40);
		pause();
	} else if (!strcmp(mode, "hang")) {
		pause();
	} else if (!strcmp(mode, "badstring")) {
		/* ProcessInfo3: version, pid, cookie, then a string of 1e9 units. */
		header(buf, 20 + 4 + 8 + 16 + 4, 0xff, 0);
		ct_put_le32(buf + 20, 1);
		ct_put_le64(buf + 24, 42);
		ct_put_le32(buf + 48, 1000000000u);
		n = write(c, buf, 52);
	} else if (!strcmp(mode, "hugeenv")) {
		if (req[17] == 0x02) {
			header(buf, 26, 0xff, 0);
			ct_put_le32(buf + 20, 0xffffffffu);
			n = write(c, buf, 26);
		} else {
			/* A valid ProcessInfo, so that info goes on to --env. */
			process_info(c, req, main_pid);
		}
	} else if (!strcmp(mode, "wrongpid")) {
		/* A runtime that says it is some other process. */
		process_info(c, req, 424242);
	} else if (!strcmp(mode, "error")) {
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x8badf00du);
		n = write(c, buf, 24);
	} else if (!strcmp(mode, "wrongset")) {
		header(buf, 24, 0x04, 0);
		n = write(c, buf, 24);
	}
	(void)n;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	uint64_t key = 0;
	int s;

	if (argc != 2) {
		fprintf(stderr, "usage: fakeds MODE\n");
		return 2;
	}
	main_pid = getpid();
	if (proc_starttime(getpid(), &key))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "/tmp/dotnet-diagnostic-%d-%" PRIu64 "-socket",
		 (int)getpid(), key);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	ct_strlcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	unlink(sock_path);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16)) {
		perror("fakeds");
		return 1;
	}
	printf("READY pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(s);
			serve(c, argv[1]);
			close(c);
			_exit(0);
		}
		close(c);
	}
}
