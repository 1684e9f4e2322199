/* SPDX-License-Identifier: MIT */
/*
 * fakeoldrt - a diagnostics server that answers like a .NET 6 runtime:
 * ProcessInfo2 with runtime version 6.0.36, "unknown command" for
 * ProcessInfo3 and everything else. For `clrtap agent run` on a runtime too
 * old for the profiler (it needs ICorProfilerInfo14, .NET 8+): only .NET 10
 * is installed on the test machine.
 *
 * Listens where a .NET process with its pid would; prints "READY pid=<pid>";
 * removes the socket on SIGTERM.
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

static void on_term(int sig)
{
	unlink(sock_path);
	_exit(0);
}

static size_t put_string(uint8_t *p, const char *s)
{
	size_t len = strlen(s), j;

	ct_put_le32(p, (uint32_t)len + 1);
	for (j = 0; j <= len; j++)
		ct_put_le16(p + 4 + 2 * j, (uint16_t)s[j]);
	return 4 + 2 * (len + 1);
}

static void header(uint8_t *h, uint16_t size, uint8_t set, uint8_t id)
{
	memcpy(h, "DOTNET_IPC_V1", 14);
	ct_put_le16(h + 14, size);
	h[16] = set;
	h[17] = id;
	h[18] = h[19] = 0;
}

static void serve(int c)
{
	static const char *const strs[] = { "dotnet old.dll", "Linux", "x64", "old", "6.0.36" };
	uint8_t req[20], buf[512];
	size_t off, i;
	ssize_t n;

	n = read(c, req, sizeof(req));
	if (n < 20)
		return;
	memset(buf, 0, sizeof(buf));
	if (req[16] == 0x04 && req[17] == 0x04) {
		off = 20;
		ct_put_le64(buf + off, (uint64_t)getpid());
		off += 8 + 16;
		for (i = 0; i < ARRAY_SIZE(strs); i++)
			off += put_string(buf + off, strs[i]);
		header(buf, (uint16_t)off, 0xff, 0);
		n = write(c, buf, off);
	} else {
		header(buf, 24, 0xff, 0xff);
		ct_put_le32(buf + 20, 0x80131385u);
		n = write(c, buf, 24);
	}
	(void)n;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	uint64_t key = 0;
	int s;

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
		perror("fakeoldrt");
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
			serve(c);
			close(c);
			_exit(0);
		}
		close(c);
	}
}
