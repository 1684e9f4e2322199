/* SPDX-License-Identifier: MIT */
/*
 * EventPipe sessions: provider specs and profiles, and the loop that copies
 * a session's nettrace stream to a sink until it is stopped and the runtime
 * has sent the rundown and the end of the stream.
 */
#include "common/compat.h"

#include <poll.h>
#include <time.h>

#include "common/cursor.h"
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

static int ipc_providers_build(const char *profile, const char *providers, struct ipc_provider *provs, size_t max,
			size_t *np, uint64_t *rundown_keyword, char **specs, char *why, size_t whylen)
{
	const struct ipc_provider *pp;
	char *save = NULL, *tok;
	size_t n, from_profile;

	*np = 0;
	*specs = NULL;
	if (!profile && !providers)
		profile = "cpu-sampling";
	if (profile && ipc_profile_lookup(profile, &pp, &n, rundown_keyword)) {
		snprintf(why, whylen, "unknown profile '%s' (see --list-profiles)", profile);
		return -ENOENT;
	}
	for (size_t i = 0; profile && i < n && *np < max; i++)
		provs[(*np)++] = pp[i];
	if (providers && !(*specs = strdup(providers))) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	from_profile = *np;
	for (tok = providers ? strtok_r(*specs, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		if (*np == max) {
			snprintf(why, whylen, "more than %zu providers", max);
			return -E2BIG;
		}
		if (ipc_provider_parse(tok, &provs[*np])) {
			snprintf(why, whylen, "bad provider spec '%s'", tok);
			return -EINVAL;
		}
		(*np)++;
	}
	if (providers && *np == from_profile) {
		snprintf(why, whylen, "--providers '%s' names no provider", providers);
		return -ENODATA;
	}
	if (!*np) {
		snprintf(why, whylen, "no provider to trace");
		return -ENODATA;
	}
	return 0;
}

int ipc_trace_config_build(const char *profile, const char *providers, int buffer_mb, bool rundown, bool stackwalk,
			   struct ipc_trace_config *cfg, struct ipc_provider *provs, size_t max, char **specs,
			   char *why, size_t whylen)
{
	struct strbuf msg = STRBUF_INIT_MAX(IPC_MAX_FRAME);
	size_t np;
	int err;

	memset(cfg, 0, sizeof(*cfg));
	err = ipc_providers_build(profile, providers, provs, max, &np, &cfg->rundown_keyword, specs, why, whylen);
	if (err)
		return err;
	if (buffer_mb <= 0) {
		snprintf(why, whylen, "--buffer must be positive");
		return -EINVAL;
	}
	cfg->providers = provs;
	cfg->nproviders = np;
	cfg->buffer_mb = (uint32_t)buffer_mb;
	cfg->rundown = rundown;
	cfg->stackwalk = stackwalk;
	/* what the runtime cannot be sent is found before anything starts */
	err = ipc_encode_collect_tracing(&msg, 4, cfg);
	strbuf_release(&msg);
	if (err)
		snprintf(why, whylen, "%s", err == -EMSGSIZE ? "the provider list does not fit in one request (64 KiB)"
							     : "a provider spec cannot be sent");
	return err ? -EINVAL : 0;
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

int ipc_stream_check_prologue(const uint8_t *p, size_t len, size_t *need)
{
	uint32_t x;

	*need = 12;
	if (len < 8) {
		/* Refuse early what already differs from the magic. */
		return memcmp(p, "Nettrace", len) ? -EBADMSG : -EAGAIN;
	}
	if (memcmp(p, "Nettrace", 8))
		return -EBADMSG;
	if (len < 12)
		return -EAGAIN;
	x = ct_le32(p + 8);
	if (x == 20) {
		*need = 32;
		if (len < 32)
			return -EAGAIN;
		return memcmp(p + 12, "!FastSerialization.1", 20) ? -EBADMSG : 0;
	}
	if (x == 0) {
		*need = 20;
		if (len < 20)
			return -EAGAIN;
		return ct_le32(p + 12) == 6 ? 0 : -EBADMSG;
	}
	return -EBADMSG;
}

/* The state of one run: the stream, the stop connection, the clocks. */
struct run {
	const struct ipc_endpoint *ep;
	const struct ipc_session_opts *o;
	struct ipc_session_result *res;
	int timeout;
	int fd, stop_fd;
	int64_t start, stop_at, last_data;
	bool stop_sent;
	uint8_t pro[IPC_PROLOGUE_MAX];
	size_t pro_len;
	bool checked;
};

static void send_stop(struct run *r, int64_t now)
{
	int e;

	r->stop_sent = true;
	r->res->stopped = true;
	r->stop_at = now;
	e = ipc_stop_tracing_send(r->ep, r->res->session, &r->stop_fd);
	/* The session may already be gone (target exiting): not an error here. */
	if (e)
		r->res->stop_error = e;
}

static void read_stop_reply(struct run *r)
{
	struct ipc_error serr;
	int e = ipc_stop_tracing_recv(r->stop_fd, r->timeout, &serr);

	if (e)
		r->res->stop_error = e;
	close(r->stop_fd);
	r->stop_fd = -1;
}

/* Passes n received bytes on: the prologue is held back until checked. */
static int take(struct run *r, const uint8_t *p, size_t n)
{
	struct ipc_session_result *res = r->res;
	size_t need, room;
	int err;

	if (!r->checked) {
		size_t k = CT_MIN(n, sizeof(r->pro) - r->pro_len);

		memcpy(r->pro + r->pro_len, p, k);
		r->pro_len += k;
		p += k;
		n -= k;
		err = ipc_stream_check_prologue(r->pro, r->pro_len, &need);
		if (err == -EAGAIN && r->pro_len < sizeof(r->pro))
			return 0;
		if (err) {
			res->bad_prologue = true;
			return -EBADMSG;
		}
		r->checked = true;
		err = take(r, r->pro, r->pro_len);
		if (err || !n)
			return err;
	}
	if (res->capped) {
		res->dropped += n;
		return 0;
	}
	room = r->o->max_bytes ? (size_t)CT_MIN((uint64_t)n, r->o->max_bytes - res->bytes) : n;
	if (room) {
		res->last_byte = p[room - 1];
		res->bytes += room;
		err = r->o->sink(r->o->ctx, p, room);
		if (err)
			return err;
	}
	if (room < n) {
		res->capped = true;
		res->dropped += n - room;
	}
	return 0;
}

int ipc_session_run(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
		    const struct ipc_session_opts *o, struct ipc_session_result *res,
		    struct ipc_error *rerr)
{
	const size_t bufsize = 256 * 1024;
	struct run r = { .ep = ep, .o = o, .res = res, .fd = -1, .stop_fd = -1 };
	uint8_t *buf;
	int64_t last_progress = 0;
	int err = 0;
	uint64_t session;

	memset(res, 0, sizeof(*res));
	r.timeout = ep->timeout_ms > 0 ? ep->timeout_ms : 5000;
	buf = malloc(bufsize);
	if (!buf)
		return -ENOMEM;
	err = ipc_collect_tracing_v(ep, cfg, &r.fd, &session, &res->version, rerr);
	if (err) {
		free(buf);
		return err;
	}
	res->session = session;
	r.start = r.last_data = now_ms();
	for (;;) {
		struct pollfd pfd[2] = { { .fd = r.fd, .events = POLLIN },
					 { .fd = r.stop_fd, .events = POLLIN } };
		int64_t now = now_ms(), wait_ms = 100;
		ssize_t n;

		if (!r.stop_sent && ((o->stop && *o->stop) || res->capped ||
				     (o->duration_ms > 0 && now - r.start >= o->duration_ms)))
			send_stop(&r, now);
		/* The stream starts with its prologue at once; a target that sends nothing stalls. */
		if (!r.checked && now - r.start >= r.timeout) {
			err = -ETIMEDOUT;
			break;
		}
		/*
		 * After the stop the end (rundown included) is due within the
		 * timeout, however fast bytes still come: a flooding target is as
		 * bounded as a silent one.
		 */
		if (r.stop_sent && now - r.stop_at >= r.timeout) {
			err = -ETIMEDOUT;
			break;
		}
		/* Wake exactly at the end of a short session instead of the next tick. */
		if (!r.stop_sent && o->duration_ms > 0)
			wait_ms = CT_MAX(0, CT_MIN(100, o->duration_ms - (now - r.start)));
		if (poll(pfd, r.stop_fd >= 0 ? 2 : 1, (int)wait_ms) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (o->progress && now - last_progress >= 500) {
			o->progress(o->ctx, res->bytes);
			last_progress = now;
		}
		if (r.stop_fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			read_stop_reply(&r);
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(r.fd, buf, bufsize);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			/* A reset is a broken stream, not an end: the end has its own tag. */
			err = -errno;
			break;
		}
		if (n == 0)
			break; /* the runtime closed the stream */
		r.last_data = now_ms();
		err = take(&r, buf, (size_t)n);
		if (err)
			break;
	}
	if (!err && !r.checked) {
		/* closed before a whole prologue */
		res->bad_prologue = r.pro_len > 0;
		err = r.pro_len ? -EBADMSG : -EPROTO;
	}
	if (res->capped && (!err || err == -ETIMEDOUT))
		err = -EFBIG;
	/* The stream ends with a NullReference tag (1) after the last block. */
	res->complete = !err && res->bytes > 0 && res->last_byte == 1;
	res->target_ended = !err && !r.stop_sent;
	if (r.stop_sent)
		res->stop_ms = now_ms() - r.stop_at;
	/* Leave the target as found: a session that clrtap gives up on is stopped too. */
	if (err && !r.stop_sent && err != -ECONNRESET && err != -EPIPE)
		send_stop(&r, now_ms());
	if (r.stop_fd >= 0)
		close(r.stop_fd);
	close(r.fd);
	free(buf);
	return err;
}

void ipc_session_strerror(int err, const struct ipc_session_result *res,
			  const struct ipc_endpoint *ep, const struct ipc_error *rerr, char *buf,
			  size_t len)
{
	int timeout = ep->timeout_ms > 0 ? ep->timeout_ms : 5000;

	if (res->bad_prologue)
		snprintf(buf, len, "the session's stream is not a nettrace stream (no valid "
			 "Nettrace header)");
	else if (err == -EFBIG)
		snprintf(buf, len, "the stream passed the size cap (%" PRIu64 " bytes)", res->bytes);
	else if (err == -EPROTO && res->session && !res->bytes)
		snprintf(buf, len, "the target closed the session's stream before sending a trace");
	else if (err == -ETIMEDOUT && res->session && !res->bytes)
		snprintf(buf, len, "the session started but the target sent no trace within "
			 "the timeout (%d ms)", timeout);
	else if (err == -ETIMEDOUT && res->stopped)
		snprintf(buf, len, "the target did not end the stream within the timeout (%d ms) "
			 "after StopTracing", timeout);
	else
		ipc_strerror(err, rerr, buf, len);
}
