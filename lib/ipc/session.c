/* SPDX-License-Identifier: MIT */
/*
 * EventPipe sessions: provider specs and profiles, and the loop that copies
 * a session's nettrace stream to a sink until it is stopped and the runtime
 * has sent the rundown and the end of the stream.
 */
#include "common/compat.h"

#include <poll.h>
#include <time.h>

#include "common/strparse.h"
#include "ipc/ipc.h"

#define RUNTIME "Microsoft-Windows-DotNETRuntime"
#define SAMPLER "Microsoft-DotNETCore-SampleProfiler"

/* Runtime keywords: Loader 0x8 and Jit 0x10 let stacks be symbolized. */
#define KW_SYMBOLS 0x18ull

static const struct {
	const char *name;
	const char *help;
	struct ipc_provider providers[2];
	size_t n;
	uint64_t rundown_keyword;
} profiles[] = {
	{ "cpu-sampling", "managed stacks sampled every ms, plus the runtime's default events",
	  { { SAMPLER, 0, 4, NULL }, { RUNTIME, 0x14C14FCCBDull, 4, NULL } }, 2, 0 },
	{ "gc-verbose", "GC events and allocation ticks (about every 100 KB) with stacks",
	  { { RUNTIME, 0x1ull | KW_SYMBOLS, 5, NULL } }, 1, 0 },
	{ "gc-collect", "GC start/end and heap stats only, at very low cost",
	  { { RUNTIME, 0x1ull, 4, NULL } }, 1, 0x1 },
	{ "exceptions", "exceptions thrown, with type, message and stack",
	  { { RUNTIME, 0x8000ull | KW_SYMBOLS, 4, NULL } }, 1, 0 },
	{ "contention", "lock contention start/stop with stacks",
	  { { RUNTIME, 0x4000ull | KW_SYMBOLS, 4, NULL } }, 1, 0 },
	{ "jit", "methods compiled and loaded, with JIT tracing",
	  { { RUNTIME, 0x1018ull, 5, NULL } }, 1, 0 },
};

int ipc_profile_lookup(const char *name, const struct ipc_provider **providers, size_t *n,
		       uint64_t *rundown_keyword)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(profiles); i++) {
		if (!strcmp(profiles[i].name, name)) {
			*providers = profiles[i].providers;
			*n = profiles[i].n;
			*rundown_keyword = profiles[i].rundown_keyword;
			return 0;
		}
	}
	return -ENOENT;
}

const char *ipc_profile_name(size_t i, const char **help)
{
	if (i >= ARRAY_SIZE(profiles))
		return NULL;
	if (help)
		*help = profiles[i].help;
	return profiles[i].name;
}

static const struct {
	const char *name;
	uint32_t level;
} level_names[] = {
	{ "logalways", 0 }, { "critical", 1 }, { "error", 2 },
	{ "warning", 3 },   { "informational", 4 }, { "verbose", 5 },
};

int ipc_provider_parse(char *spec, struct ipc_provider *p)
{
	char *name = spec, *kw, *level = NULL, *args = NULL;

	memset(p, 0, sizeof(*p));
	p->keywords = ~0ull;
	p->level = 5;
	kw = strchr(spec, ':');
	if (kw) {
		*kw++ = '\0';
		level = strchr(kw, ':');
		if (level) {
			*level++ = '\0';
			args = strchr(level, ':');
			if (args)
				*args++ = '\0';
		}
	}
	if (!name[0])
		return -EINVAL;
	p->name = name;
	if (kw && kw[0] && strcmp(kw, "*")) {
		const char *k = kw;

		if (!strncmp(k, "0x", 2) || !strncmp(k, "0X", 2))
			k += 2;
		if (ct_parse_u64(k, 16, &p->keywords))
			return -EINVAL;
	}
	if (level && level[0]) {
		size_t i;
		bool found = false;

		for (i = 0; i < ARRAY_SIZE(level_names); i++) {
			if (!strcasecmp(level, level_names[i].name)) {
				p->level = level_names[i].level;
				found = true;
			}
		}
		if (!found && (ct_parse_u32(level, 10, &p->level) || p->level > 5))
			return -EINVAL;
	}
	if (args && args[0])
		p->arguments = args;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ipc_session_run(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
		    const struct ipc_session_opts *o, struct ipc_session_result *res,
		    struct ipc_error *rerr)
{
	const size_t bufsize = 256 * 1024;
	uint8_t *buf;
	int64_t start, stop_at = 0, last_progress = 0;
	int fd = -1, err, wait_ms;
	uint64_t session;
	bool stop_sent = false;

	memset(res, 0, sizeof(*res));
	buf = malloc(bufsize);
	if (!buf)
		return -ENOMEM;
	err = ipc_collect_tracing(ep, cfg, &fd, &session, rerr);
	if (err) {
		free(buf);
		return err;
	}
	res->session = session;
	start = now_ms();
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t now = now_ms();
		ssize_t n;

		if (!stop_sent && ((o->stop && *o->stop) ||
				   (o->duration_ms > 0 && now - start >= o->duration_ms))) {
			struct ipc_error serr;
			int e = ipc_stop_tracing(ep, session, &serr);

			stop_sent = true;
			res->stopped = true;
			stop_at = now;
			/* The session may already be gone (target exiting): not an error here. */
			if (e)
				res->stop_error = e;
		}
		if (stop_sent && now - stop_at > (o->stop_grace_ms ? o->stop_grace_ms : 30000)) {
			err = -ETIMEDOUT;
			break;
		}
		wait_ms = 100;
		/* Wake exactly at the end of a short session instead of the next tick. */
		if (!stop_sent && o->duration_ms > 0)
			wait_ms = (int)CT_MAX(0, CT_MIN(100, (int64_t)o->duration_ms - (now - start)));
		if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (o->progress && now - last_progress >= 500) {
			o->progress(o->ctx, res->bytes);
			last_progress = now;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, buf, bufsize);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = errno == ECONNRESET ? 0 : -errno;
			break;
		}
		if (n == 0)
			break; /* the runtime closed the stream */
		res->last_byte = buf[n - 1];
		res->bytes += (uint64_t)n;
		err = o->sink(o->ctx, buf, (size_t)n);
		if (err)
			break;
	}
	/* The stream ends with a NullReference tag (1) after the last block. */
	res->complete = !err && res->bytes > 0 && res->last_byte == 1;
	res->target_ended = !err && !stop_sent;
	close(fd);
	free(buf);
	return err;
}
