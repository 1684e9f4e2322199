/* SPDX-License-Identifier: MIT */
/*
 * budget.c - what a probe costs the target, and the hand-over of a probe to
 * clrtap's in-process ReJIT profiler when the breakpoint or uprobe would
 * cost more than the budget.
 *
 * The budget is a share of one CPU core. A probe's cost is estimated from
 * its hits and the cost of one hit of its mechanism measured on this
 * machine (lib/probe/mech.c's self-test times its calls with and without
 * the event armed). The hand-over runs `clrtap agent probe --progress` as a
 * child (the profiler is attached through the diagnostics IPC like any
 * agent run) and reads its lines: when the ReJIT was requested, the counts
 * as they grow, the final counts. Nothing here prints.
 */
#include "common/compat.h"

#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "common/strparse.h"
#include "probe/probe.h"
#include "task/task.h"

int probe_budget_parse(const char *s, double *pct)
{
	char buf[32], *end = NULL;
	size_t len;
	double v;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len + 1);
	if (buf[len - 1] == '%')
		buf[--len] = '\0';
	if (!len || !(buf[0] >= '0' && buf[0] <= '9'))
		return -EINVAL;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || !end || *end || !(v > 0) || v > 1000)
		return -EINVAL;
	*pct = v;
	return 0;
}

double probe_budget_share(double cost_ns, uint64_t window_ns)
{
	return window_ns ? cost_ns * 100.0 / (double)window_ns : 0;
}

/* ---- the agent's lines ---- */

int probe_rejit_parse_line(const char *line, struct probe_rejit_line *out)
{
	const char *p, *br;
	uint64_t v;
	uint32_t tok;
	size_t nl;

	memset(out, 0, sizeof(*out));
	if (!strncmp(line, "count ", 6) || !strncmp(line, "calls ", 6)) {
		/* "count SPEC [0xTOKEN]: N" (as it grows), "calls SPEC [0xTOKEN]: N" (final) */
		out->kind = line[1] == 'o' ? PROBE_RJ_COUNT : PROBE_RJ_FINAL;
		p = line + 6;
		br = strstr(p, " [0x");
		if (!br || (size_t)(br - p) >= sizeof(out->spec))
			return -EBADMSG;
		memcpy(out->spec, p, (size_t)(br - p));
		out->spec[br - p] = '\0';
		p = strstr(br, "]: ");
		if (!p || p - (br + 4) < 1 || p - (br + 4) > 8)
			return -EBADMSG;
		{
			char hex[9];

			memcpy(hex, br + 4, (size_t)(p - (br + 4)));
			hex[p - (br + 4)] = '\0';
			if (ct_parse_u32(hex, 16, &tok))
				return -EBADMSG;
		}
		if (ct_parse_u64(p + 3, 10, &v))
			return -EBADMSG;
		out->token = tok;
		out->count = v;
		return 0;
	}
	if (!strncmp(line, "probe ", 6) && (nl = strlen(line)) > 17 &&
	    !strcmp(line + nl - 17, ", ReJIT requested")) {
		out->kind = PROBE_RJ_PLACED;
		return 0;
	}
	if (!strncmp(line, "stack ", 6)) {
		const char *q = line + 5;

		out->kind = PROBE_RJ_STACK;
		while (*q == ' ') {
			char hex[20];
			size_t k = 0;

			q++;
			if (q[0] != '0' || q[1] != 'x')
				return -EBADMSG;
			q += 2;
			while (k < 16 && isxdigit((unsigned char)q[k]))
				k++;
			if (!k || (q[k] && q[k] != ' ') || out->nips == PROBE_RJ_STACK_MAX)
				return -EBADMSG;
			memcpy(hex, q, k);
			hex[k] = '\0';
			if (ct_parse_u64(hex, 16, &out->ips[out->nips]))
				return -EBADMSG;
			out->nips++;
			q += k;
		}
		return *q ? -EBADMSG : 0;
	}
	if (!strncmp(line, "call ", 5)) {
		out->kind = PROBE_RJ_CALL;
		return 0;
	}
	out->kind = PROBE_RJ_OTHER;
	return 0;
}

/* ---- the child ---- */

struct probe_rejit {
	pid_t pid;
	int fd;
	char buf[8192];
	size_t len;
	bool eof;
	int status;
	bool exited;
};

int probe_rejit_start(pid_t target, const char *const *specs, size_t n, bool args, bool stack,
		      struct probe_rejit **out)
{
	struct probe_rejit *r;
	char pidbuf[16];
	const char *av[9 + 32];
	size_t ac = 0, i;

	if (!n || n > 32)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	av[ac++] = "clrtap";
	av[ac++] = "agent";
	av[ac++] = "probe";
	av[ac++] = "-p";
	av[ac++] = pidbuf;
	av[ac++] = "--progress";
	if (args)
		av[ac++] = "--args";
	if (stack)
		av[ac++] = "--stack";
	for (i = 0; i < n; i++)
		av[ac++] = specs[i];
	av[ac] = NULL;
	r->pid = task_spawn_stream("/proc/self/exe", av, SIGINT, &r->fd);
	if (r->pid < 0) {
		int e = (int)r->pid;

		free(r);
		return e;
	}
	*out = r;
	return 0;
}

static void reap(struct probe_rejit *r, bool block)
{
	int st;
	pid_t w;

	if (r->exited || r->pid <= 0)
		return;
	do
		w = waitpid(r->pid, &st, block ? 0 : WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w == r->pid) {
		r->exited = true;
		r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
}

int probe_rejit_poll(struct probe_rejit *r, probe_rejit_line_fn fn, void *ctx)
{
	ssize_t got;
	char *nl;

	if (!r)
		return 0;
	while (!r->eof) {
		got = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		if (got == 0) {
			r->eof = true;
			break;
		}
		r->len += (size_t)got;
		r->buf[r->len] = '\0';
		while ((nl = memchr(r->buf, '\n', r->len))) {
			*nl = '\0';
			fn(ctx, r->buf);
			r->len -= (size_t)(nl + 1 - r->buf);
			memmove(r->buf, nl + 1, r->len);
		}
		if (r->len == sizeof(r->buf) - 1) {
			/* a line longer than the buffer: handed on cut */
			r->buf[r->len] = '\0';
			fn(ctx, r->buf);
			r->len = 0;
		}
	}
	reap(r, false);
	return r->exited && r->eof ? 1 : 0;
}

int probe_rejit_stop(struct probe_rejit *r, int timeout_ms, probe_rejit_line_fn fn, void *ctx)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int waited = 0;

	if (!r)
		return 0;
	if (!r->exited)
		kill(r->pid, SIGINT);
	while (probe_rejit_poll(r, fn, ctx) == 0 && waited < timeout_ms) {
		nanosleep(&ts, NULL);
		waited += 20;
	}
	if (!r->exited) {
		kill(r->pid, SIGKILL);
		reap(r, true);
		(void)probe_rejit_poll(r, fn, ctx);
	}
	return r->status;
}

bool probe_rejit_exited(const struct probe_rejit *r, int *status)
{
	if (r && r->exited && status)
		*status = r->status;
	return r && r->exited;
}

void probe_rejit_free(struct probe_rejit *r)
{
	if (!r)
		return;
	if (!r->exited && r->pid > 0) {
		kill(r->pid, SIGKILL);
		reap(r, true);
	}
	close(r->fd);
	free(r);
}
