/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "common/cursor.h"
#include "common/strparse.h"
#include "common/utf16.h"
#include "ipc/ipc.h"
#include "proc/proc.h"

static const uint8_t ipc_magic[14] = "DOTNET_IPC_V1";

#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_RUNDOWN_KEYWORD 0x80020139ull

/* ---------------------------------------------------------------- names */

static const struct {
	int32_t hr;
	const char *name;
	const char *text;
} hresults[] = {
	{ IPC_E_BAD_ENCODING, "DS_IPC_E_BAD_ENCODING", "the runtime could not parse the request" },
	{ IPC_E_UNKNOWN_COMMAND, "DS_IPC_E_UNKNOWN_COMMAND",
	  "the runtime does not know this command (too old?)" },
	{ IPC_E_UNKNOWN_MAGIC, "DS_IPC_E_UNKNOWN_MAGIC", "the runtime rejected the message header" },
	{ IPC_E_NOTSUPPORTED, "DS_IPC_E_NOTSUPPORTED", "not supported by this runtime" },
	{ IPC_E_FAIL, "DS_IPC_E_FAIL", "the runtime failed to carry out the command" },
	{ IPC_E_NOT_YET_AVAILABLE, "DS_IPC_E_NOT_YET_AVAILABLE",
	  "the runtime is not ready for this yet" },
	{ IPC_E_RUNTIME_UNINITIALIZED, "DS_IPC_E_RUNTIME_UNINITIALIZED",
	  "the runtime is not initialized" },
	{ IPC_E_INVALIDARG, "DS_IPC_E_INVALIDARG", "the runtime rejected an argument" },
	{ IPC_E_INSUFFICIENT_BUFFER, "DS_IPC_E_INSUFFICIENT_BUFFER", "a buffer was too small" },
	{ IPC_E_ENVVAR_NOT_FOUND, "DS_IPC_E_ENVVAR_NOT_FOUND", "environment variable not found" },
	{ IPC_E_PROFILER_ALREADY_ACTIVE, "CORPROF_E_PROFILER_ALREADY_ACTIVE",
	  "a profiler is already attached" },
};

const char *ipc_hresult_name(int32_t hr)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hresults); i++)
		if (hresults[i].hr == hr)
			return hresults[i].name;
	return NULL;
}

void ipc_strerror(int e, const struct ipc_error *rerr, char *buf, size_t len)
{
	size_t i;

	if (e == -EREMOTEIO && rerr) {
		const char *name = "unknown HRESULT", *text = "the runtime refused the command";

		for (i = 0; i < ARRAY_SIZE(hresults); i++) {
			if (hresults[i].hr == rerr->hresult) {
				name = hresults[i].name;
				text = hresults[i].text;
			}
		}
		snprintf(buf, len, "%s (%s, 0x%08" PRIx32 ")%s%s", text, name, (uint32_t)rerr->hresult,
			 rerr->message[0] ? ": " : "", rerr->message);
		return;
	}
	switch (e) {
	case -EPROTO:
		snprintf(buf, len, "malformed reply from the diagnostics server");
		break;
	case -ETIMEDOUT:
		snprintf(buf, len, "the diagnostics server did not answer in time");
		break;
	case -ECONNREFUSED:
		snprintf(buf, len, "nobody listens on the diagnostics socket (stale socket?)");
		break;
	case -ECONNRESET:
	case -EPIPE:
		snprintf(buf, len, "the diagnostics server closed the connection");
		break;
	case -EXDEV:
		snprintf(buf, len, "%s", rerr && rerr->message[0] ? rerr->message
				: "the diagnostics socket is not the target's");
		break;
	case -ENOTSOCK:
		snprintf(buf, len, "the diagnostics socket is not a socket inside the target "
				   "(replaced by another kind of file)");
		break;
	case -ELOOP:
		snprintf(buf, len, "the diagnostics socket is a symbolic link inside the target; "
				   "clrtap does not follow it");
		break;
	default:
		snprintf(buf, len, "%s", strerror(-e));
	}
}

/* ------------------------------------------------------------- encoding */

int ipc_encode_header(struct strbuf *out, uint8_t set, uint8_t id, size_t payload_len)
{
	uint8_t h[IPC_HEADER_SIZE];

	if (payload_len > IPC_MAX_FRAME - IPC_HEADER_SIZE)
		return -EMSGSIZE;
	memcpy(h, ipc_magic, sizeof(ipc_magic));
	ct_put_le16(h + 14, (uint16_t)(IPC_HEADER_SIZE + payload_len));
	h[16] = set;
	h[17] = id;
	ct_put_le16(h + 18, 0);
	return strbuf_add(out, h, sizeof(h));
}

int ipc_encode_u32(struct strbuf *out, uint32_t v)
{
	uint8_t b[4];

	ct_put_le32(b, v);
	return strbuf_add(out, b, sizeof(b));
}

int ipc_encode_u64(struct strbuf *out, uint64_t v)
{
	uint8_t b[8];

	ct_put_le64(b, v);
	return strbuf_add(out, b, sizeof(b));
}

int ipc_encode_string(struct strbuf *out, const char *s)
{
	size_t at = out->len;
	uint32_t units;
	int err;

	if (!s)
		return ipc_encode_u32(out, 0);
	err = ipc_encode_u32(out, 0);
	if (!err)
		err = utf8_to_utf16le(out, s, &units);
	if (err)
		return err;
	ct_put_le32((uint8_t *)out->buf + at, units);
	return 0;
}

static int encode_u8(struct strbuf *out, uint8_t v)
{
	return strbuf_add(out, &v, 1);
}

int ipc_encode_collect_tracing(struct strbuf *out, unsigned version,
			       const struct ipc_trace_config *cfg)
{
	struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME - IPC_HEADER_SIZE);
	uint64_t rundown_kw = cfg->rundown ? (cfg->rundown_keyword ? cfg->rundown_keyword
								   : DEFAULT_RUNDOWN_KEYWORD)
					   : 0;
	size_t i;
	int err = 0;

	if (version < 2 || version > 6 || !cfg->nproviders || cfg->nproviders > 1000)
		return -EINVAL;
	if (version >= 5)
		err = err ?: ipc_encode_u32(&p, 0); /* session type 0: IPC stream */
	err = err ?: ipc_encode_u32(&p, cfg->buffer_mb ? cfg->buffer_mb : 256);
	err = err ?: ipc_encode_u32(&p, 1); /* format: NetTrace */
	if (version <= 3)
		err = err ?: encode_u8(&p, cfg->rundown ? 1 : 0);
	else
		err = err ?: ipc_encode_u64(&p, rundown_kw);
	if (version >= 3)
		err = err ?: encode_u8(&p, cfg->stackwalk ? 1 : 0);
	err = err ?: ipc_encode_u32(&p, (uint32_t)cfg->nproviders);
	for (i = 0; i < cfg->nproviders && !err; i++) {
		const struct ipc_provider *pr = &cfg->providers[i];

		if (!pr->name || !pr->name[0] || pr->level > 5) {
			err = -EINVAL;
			break;
		}
		err = ipc_encode_u64(&p, pr->keywords);
		err = err ?: ipc_encode_u32(&p, pr->level);
		err = err ?: ipc_encode_string(&p, pr->name);
		err = err ?: ipc_encode_string(&p, pr->arguments);
		if (version >= 5) {
			err = err ?: encode_u8(&p, 0);      /* filter: disable listed ids */
			err = err ?: ipc_encode_u32(&p, 0); /* none listed: no filtering */
		}
	}
	if (version == 6) /* session buffering mode: 1 Block (lossless), 0 Drop */
		err = err ?: ipc_encode_u32(&p, cfg->lossless ? 1 : 0);
	err = err ?: ipc_encode_header(out, IPC_SET_EVENTPIPE, (uint8_t)(version + 1), p.len);
	err = err ?: strbuf_add(out, p.buf, p.len);
	strbuf_release(&p);
	return err;
}

/* -------------------------------------------------------------- decoding */

int ipc_parse_header(const uint8_t *buf, size_t len, struct ipc_header *h)
{
	if (len < IPC_HEADER_SIZE)
		return -EPROTO;
	if (memcmp(buf, ipc_magic, sizeof(ipc_magic)))
		return -EPROTO;
	h->size = ct_le16(buf + 14);
	h->set = buf[16];
	h->id = buf[17];
	if (h->size < IPC_HEADER_SIZE)
		return -EPROTO;
	return 0;
}

/* Reads a protocol string; *s gets a malloc'd UTF-8 copy, or NULL for count 0. */
static int cur_ipc_string(struct cursor *c, char **s)
{
	struct strbuf sb = STRBUF_INIT_MAX(IPC_STRING_MAX_UNITS * 4);
	const uint8_t *p;
	uint32_t units;
	int err;

	*s = NULL;
	if (cur_u32(c, &units))
		return -EPROTO;
	if (units == 0)
		return 0;
	if (units > IPC_STRING_MAX_UNITS || units > cur_left(c) / 2)
		return -EPROTO;
	p = cur_take(c, (size_t)units * 2);
	if (!p)
		return -EPROTO;
	/* The last unit must be the terminating NUL. */
	if (ct_le16(p + 2 * (units - 1)) != 0)
		return -EPROTO;
	err = utf16le_to_utf8(&sb, p, units - 1, true);
	if (err) {
		strbuf_release(&sb);
		return err == -EMSGSIZE ? -EPROTO : err;
	}
	*s = strbuf_detach(&sb, NULL);
	return *s ? 0 : -ENOMEM;
}

void ipc_process_info_release(struct ipc_process_info *pi)
{
	FREE_AND_NULL(pi->cmdline);
	FREE_AND_NULL(pi->os);
	FREE_AND_NULL(pi->arch);
	FREE_AND_NULL(pi->assembly);
	FREE_AND_NULL(pi->clr_version);
	FREE_AND_NULL(pi->rid);
}

int ipc_parse_process_info(const uint8_t *p, size_t len, unsigned version,
			   struct ipc_process_info *pi)
{
	struct cursor c;
	const uint8_t *cookie;
	uint32_t v3ver = 0;
	int err;

	memset(pi, 0, sizeof(*pi));
	if (version < 1 || version > 3)
		return -EINVAL;
	pi->version = version;
	cur_init(&c, p, len);
	if (version == 3 && cur_u32(&c, &v3ver))
		return -EPROTO;
	if (cur_u64(&c, &pi->pid))
		return -EPROTO;
	cookie = cur_take(&c, 16);
	if (!cookie)
		return -EPROTO;
	memcpy(pi->cookie, cookie, 16);
	err = cur_ipc_string(&c, &pi->cmdline);
	err = err ?: cur_ipc_string(&c, &pi->os);
	err = err ?: cur_ipc_string(&c, &pi->arch);
	if (version >= 2) {
		err = err ?: cur_ipc_string(&c, &pi->assembly);
		err = err ?: cur_ipc_string(&c, &pi->clr_version);
	}
	if (version == 3 && v3ver >= 1)
		err = err ?: cur_ipc_string(&c, &pi->rid);
	/* Newer runtimes may append fields: ignore what follows. */
	if (err)
		ipc_process_info_release(pi);
	return err;
}

int ipc_parse_env_block(const uint8_t *p, size_t len, ipc_env_fn fn, void *ctx)
{
	struct cursor c;
	uint32_t count, i;
	int err = 0;

	cur_init(&c, p, len);
	if (cur_u32(&c, &count))
		return -EPROTO;
	/* Each entry is at least 4 bytes: a count larger than that is a lie. */
	if (count > cur_left(&c) / 4)
		return -EPROTO;
	for (i = 0; i < count && !err; i++) {
		char *s;

		err = cur_ipc_string(&c, &s);
		if (!err && s) {
			err = fn(s, ctx);
			free(s);
		}
	}
	return err;
}

int ipc_parse_error(const uint8_t *p, size_t len, struct ipc_error *rerr)
{
	struct cursor c;
	uint32_t hr;
	char *msg = NULL;

	memset(rerr, 0, sizeof(*rerr));
	cur_init(&c, p, len);
	if (cur_u32(&c, &hr))
		return -EPROTO;
	rerr->hresult = (int32_t)hr;
	/* GenerateCoreDump3 adds a message; anything unparseable is ignored. */
	if (cur_left(&c) >= 4 && !cur_ipc_string(&c, &msg) && msg) {
		/* printed through cli_safe() / ct_term_escape(): kept exact here */
		ct_strlcpy(rerr->message, msg, sizeof(rerr->message));
		free(msg);
	}
	return 0;
}

/* ------------------------------------------------------------ transport */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		return 0;
	}
}

static int timeout_of(const struct ipc_endpoint *ep)
{
	return ep->timeout_ms > 0 ? ep->timeout_ms : DEFAULT_TIMEOUT_MS;
}

/* The descriptor to connect through: the socket resolved inside the target's root. */
static int target_socket_fd(const struct ipc_endpoint *ep, int *pathfd)
{
	struct stat st;
	int rootfd, err;

	err = proc_root_open(ep->pid, &rootfd);
	if (err)
		return err;
	err = proc_tpath_open(rootfd, ep->path, 0, pathfd);
	close(rootfd);
	if (err)
		return err;
	if (fstat(*pathfd, &st) || !S_ISSOCK(st.st_mode)) {
		close(*pathfd);
		*pathfd = -1;
		return -ENOTSOCK;
	}
	return 0;
}

/* SO_PEERCRED: the process that listens must be the target itself. */
static int check_peer(int fd, const struct ipc_endpoint *ep, struct ipc_error *rerr)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	if (cred.pid == ep->pid)
		return 0;
	if (rerr)
		snprintf(rerr->message, sizeof(rerr->message),
			 "the diagnostics socket of pid %d is not the target's: it is served by "
			 "pid %d%s, not by pid %d",
			 (int)ep->pid, (int)cred.pid, cred.pid ? "" : " (a process not visible here)",
			 (int)ep->pid);
	return -EXDEV;
}

/*
 * Connects to the endpoint (see struct ipc_endpoint). A target's socket, or
 * a path longer than sun_path allows, is reached through an O_PATH
 * descriptor: connecting to /proc/self/fd/N reaches that very socket inode,
 * with no path lookup the target could redirect.
 */
static int ipc_connect(const struct ipc_endpoint *ep, int64_t deadline, int *out,
		       struct ipc_error *rerr)
{
	struct sockaddr_un sa;
	int fd, pathfd = -1, err = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (ep->pid > 0) {
		err = target_socket_fd(ep, &pathfd);
		if (err)
			return err;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pathfd);
	} else if (strlen(ep->path) < sizeof(sa.sun_path)) {
		ct_strlcpy(sa.sun_path, ep->path, sizeof(sa.sun_path));
	} else {
		pathfd = open(ep->path, O_PATH | O_CLOEXEC);
		if (pathfd < 0)
			return -errno;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pathfd);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EINPROGRESS || errno == EAGAIN) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			err = wait_fd(fd, POLLOUT, deadline);
			if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
				err = -errno;
			if (!err && soerr)
				err = -soerr;
		} else {
			err = -errno;
		}
	}
	if (!err && ep->pid > 0)
		err = check_peer(fd, ep, rerr);
	if (err) {
		close(fd);
		goto out;
	}
	*out = fd;
out:
	if (pathfd >= 0)
		close(pathfd);
	return err;
}

static int send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			int err;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			err = wait_fd(fd, POLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes; an early EOF is a protocol error. */
static int recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;
		int err = wait_fd(fd, POLLIN, deadline);

		if (err)
			return err;
		n = recv(fd, p, len, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? -EPROTO : -errno;
		}
		if (n == 0)
			return -EPROTO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

struct ipc_reply {
	struct ipc_header h;
	uint8_t payload[IPC_MAX_FRAME];
	size_t len;
};

/* Reads one reply frame; returns -EREMOTEIO for error replies. */
static int recv_reply(int fd, struct ipc_reply *r, int64_t deadline, struct ipc_error *rerr)
{
	uint8_t hb[IPC_HEADER_SIZE];
	int err;

	err = recv_all(fd, hb, sizeof(hb), deadline);
	if (err)
		return err;
	err = ipc_parse_header(hb, sizeof(hb), &r->h);
	if (err)
		return err;
	r->len = r->h.size - IPC_HEADER_SIZE;
	err = recv_all(fd, r->payload, r->len, deadline);
	if (err)
		return err;
	if (r->h.set != IPC_SET_SERVER)
		return -EPROTO;
	if (r->h.id == 0xff) {
		struct ipc_error tmp;

		err = ipc_parse_error(r->payload, r->len, rerr ? rerr : &tmp);
		return err ? err : -EREMOTEIO;
	}
	if (r->h.id != 0x00)
		return -EPROTO;
	return 0;
}

/*
 * Sends msg and reads the reply into r. On success with keep != NULL the
 * connection stays open and is returned in *keep; otherwise it is closed.
 */
static int transact(const struct ipc_endpoint *ep, const struct strbuf *msg, struct ipc_reply *r,
		    int *keep, struct ipc_error *rerr)
{
	int64_t deadline = now_ms() + timeout_of(ep);
	int fd = -1, err;

	if (rerr)
		memset(rerr, 0, sizeof(*rerr));
	err = ipc_connect(ep, deadline, &fd, rerr);
	if (err)
		return err;
	err = send_all(fd, msg->buf, msg->len, deadline);
	if (!err)
		err = recv_reply(fd, r, deadline, rerr);
	if (!err && keep) {
		*keep = fd;
		return 0;
	}
	close(fd);
	return err;
}

/* A command whose reply is OK + optional i32 status. */
static int simple_command(const struct ipc_endpoint *ep, uint8_t set, uint8_t id,
			  const struct strbuf *payload, struct ipc_error *rerr)
{
	struct strbuf msg = STRBUF_INIT_MAX(IPC_MAX_FRAME);
	struct ipc_reply *r;
	int err;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = ipc_encode_header(&msg, set, id, payload ? payload->len : 0);
	if (!err && payload)
		err = strbuf_add(&msg, payload->buf, payload->len);
	if (!err)
		err = transact(ep, &msg, r, NULL, rerr);
	if (!err && r->len >= 4 && (int32_t)ct_le32(r->payload) < 0) {
		/* An OK frame carrying a failure code: treat it as an error. */
		if (rerr)
			rerr->hresult = (int32_t)ct_le32(r->payload);
		err = -EREMOTEIO;
	}
	free(r);
	strbuf_release(&msg);
	return err;
}

/* ------------------------------------------------------------- commands */

int ipc_process_info(const struct ipc_endpoint *ep, struct ipc_process_info *pi,
		     struct ipc_error *rerr)
{
	static const struct {
		uint8_t id;
		unsigned version;
	} tries[] = { { 0x08, 3 }, { 0x04, 2 }, { 0x00, 1 } };
	struct ipc_reply *r;
	size_t i;
	int err = -EPROTO;

	memset(pi, 0, sizeof(*pi));
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(tries); i++) {
		struct strbuf msg = STRBUF_INIT_MAX(IPC_HEADER_SIZE);

		err = ipc_encode_header(&msg, IPC_SET_PROCESS, tries[i].id, 0);
		if (!err)
			err = transact(ep, &msg, r, NULL, rerr);
		strbuf_release(&msg);
		if (err == -EREMOTEIO && rerr && rerr->hresult == IPC_E_UNKNOWN_COMMAND)
			continue;
		if (!err)
			err = ipc_parse_process_info(r->payload, r->len, tries[i].version, pi);
		break;
	}
	free(r);
	if (!err && ep->nspid > 0 && pi->pid != (uint64_t)ep->nspid) {
		if (rerr)
			snprintf(rerr->message, sizeof(rerr->message),
				 "the diagnostics socket of pid %d is not the target's: the runtime "
				 "answering says it is pid %" PRIu64 ", the target is pid %d in its "
				 "namespace",
				 (int)ep->pid, pi->pid, (int)ep->nspid);
		ipc_process_info_release(pi);
		err = -EXDEV;
	}
	return err;
}

int ipc_runtime_major(const struct ipc_process_info *pi)
{
	long v;
	char *end;

	if (!pi->clr_version)
		return 0;
	errno = 0;
	v = strtol(pi->clr_version, &end, 10);
	if (errno || end == pi->clr_version || *end != '.' || v <= 0 || v >= 1000)
		return 0;
	return (int)v;
}

int ipc_peer_verify_major(const struct ipc_endpoint *ep, int *major, struct ipc_error *rerr)
{
	struct ipc_process_info pi;
	int err = ipc_process_info(ep, &pi, rerr);

	if (!err) {
		if (major)
			*major = ipc_runtime_major(&pi);
		ipc_process_info_release(&pi);
	}
	return err;
}

int ipc_peer_verify(const struct ipc_endpoint *ep, struct ipc_error *rerr)
{
	return ipc_peer_verify_major(ep, NULL, rerr);
}

void ipc_endpoint_init(struct ipc_endpoint *ep, const struct proc_target *t, int timeout_ms)
{
	ep->path = t->sock_tpath;
	ep->timeout_ms = timeout_ms;
	ep->pid = t->pid;
	ep->nspid = t->nspid;
}

int ipc_process_env(const struct ipc_endpoint *ep, ipc_env_fn fn, void *ctx,
		    struct ipc_error *rerr)
{
	struct strbuf msg = STRBUF_INIT_MAX(IPC_HEADER_SIZE);
	struct ipc_reply *r;
	uint8_t *block = NULL;
	uint32_t nbytes;
	int fd = -1, err;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = ipc_encode_header(&msg, IPC_SET_PROCESS, 0x02, 0);
	if (!err)
		err = transact(ep, &msg, r, &fd, rerr);
	if (err)
		goto out;
	err = -EPROTO;
	if (r->len < 4)
		goto out;
	nbytes = ct_le32(r->payload);
	if (nbytes > IPC_ENV_MAX_BYTES)
		goto out;
	block = malloc(nbytes ? nbytes : 1);
	if (!block) {
		err = -ENOMEM;
		goto out;
	}
	err = recv_all(fd, block, nbytes, now_ms() + timeout_of(ep));
	if (!err)
		err = ipc_parse_env_block(block, nbytes, fn, ctx);
out:
	if (fd >= 0)
		close(fd);
	free(block);
	free(r);
	strbuf_release(&msg);
	return err;
}

int ipc_resume_runtime(const struct ipc_endpoint *ep, struct ipc_error *rerr)
{
	return simple_command(ep, IPC_SET_PROCESS, 0x01, NULL, rerr);
}

int ipc_set_env(const struct ipc_endpoint *ep, const char *name, const char *value,
		struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME);
	int err = ipc_encode_string(&p, name);

	err = err ?: ipc_encode_string(&p, value);
	err = err ?: simple_command(ep, IPC_SET_PROCESS, 0x03, &p, rerr);
	strbuf_release(&p);
	return err;
}

int ipc_perfmap_enable(const struct ipc_endpoint *ep, enum ipc_perfmap_type type,
		       struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(8);
	int err = ipc_encode_u32(&p, (uint32_t)type);

	err = err ?: simple_command(ep, IPC_SET_PROCESS, 0x05, &p, rerr);
	strbuf_release(&p);
	return err;
}

int ipc_perfmap_disable(const struct ipc_endpoint *ep, struct ipc_error *rerr)
{
	return simple_command(ep, IPC_SET_PROCESS, 0x06, NULL, rerr);
}

int ipc_apply_startup_hook(const struct ipc_endpoint *ep, const char *path,
			   struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME);
	int err = ipc_encode_string(&p, path);

	err = err ?: simple_command(ep, IPC_SET_PROCESS, 0x07, &p, rerr);
	strbuf_release(&p);
	return err;
}

int ipc_dump(const struct ipc_endpoint *ep, const char *path, enum ipc_dump_type type,
	     uint32_t flags, struct ipc_error *rerr)
{
	uint8_t id;
	int err = -EINVAL;

	for (id = 0x03; id >= 0x01; id--) {
		struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME);

		err = ipc_encode_string(&p, path);
		err = err ?: ipc_encode_u32(&p, (uint32_t)type);
		/* Version 1 takes a "diagnostics" bool (u32) in place of flags. */
		err = err ?: ipc_encode_u32(&p, id == 0x01 ? (flags & IPC_DUMP_LOGGING ? 1 : 0)
							   : flags);
		err = err ?: simple_command(ep, IPC_SET_DUMP, id, &p, rerr);
		strbuf_release(&p);
		if (err == -EREMOTEIO && rerr && rerr->hresult == IPC_E_UNKNOWN_COMMAND)
			continue;
		break;
	}
	return err;
}

int ipc_collect_tracing(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
			int *fd, uint64_t *session, struct ipc_error *rerr)
{
	return ipc_collect_tracing_v(ep, cfg, fd, session, NULL, rerr);
}

int ipc_collect_tracing_v(const struct ipc_endpoint *ep, const struct ipc_trace_config *cfg,
			  int *fd, uint64_t *session, unsigned *accepted, struct ipc_error *rerr)
{
	struct ipc_reply *r;
	struct ipc_error ignored;
	unsigned version;
	int err = -EINVAL;

	*fd = -1;
	if (accepted)
		*accepted = 0;
	if (!rerr)
		rerr = &ignored; /* the fallback needs the runtime's answer */
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* Block buffering exists only in CollectTracing6; without it, 4 -> 3 -> 2 */
	for (version = cfg->lossless ? 6 : 4; version >= 2; version = version == 6 ? 4 : version - 1) {
		struct strbuf msg = STRBUF_INIT_MAX(IPC_MAX_FRAME);

		err = ipc_encode_collect_tracing(&msg, version, cfg);
		if (!err)
			err = transact(ep, &msg, r, fd, rerr);
		strbuf_release(&msg);
		if (err == -EREMOTEIO && rerr->hresult == IPC_E_UNKNOWN_COMMAND)
			continue;
		break;
	}
	if (!err && accepted)
		*accepted = version;
	if (!err) {
		if (r->len < 8) {
			close(*fd);
			*fd = -1;
			err = -EPROTO;
		} else {
			*session = ct_le64(r->payload);
		}
	}
	free(r);
	return err;
}

int ipc_stop_tracing(const struct ipc_endpoint *ep, uint64_t session, struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(8);
	int err = ipc_encode_u64(&p, session);

	err = err ?: simple_command(ep, IPC_SET_EVENTPIPE, 0x01, &p, rerr);
	strbuf_release(&p);
	return err;
}

int ipc_stop_tracing_send(const struct ipc_endpoint *ep, uint64_t session, int *fd)
{
	struct strbuf msg = STRBUF_INIT_MAX(IPC_HEADER_SIZE + 8);
	int64_t deadline = now_ms() + timeout_of(ep);
	int err;

	*fd = -1;
	err = ipc_encode_header(&msg, IPC_SET_EVENTPIPE, 0x01, 8);
	err = err ?: ipc_encode_u64(&msg, session);
	err = err ?: ipc_connect(ep, deadline, fd, NULL);
	if (!err) {
		err = send_all(*fd, msg.buf, msg.len, deadline);
		if (err) {
			close(*fd);
			*fd = -1;
		}
	}
	strbuf_release(&msg);
	return err;
}

int ipc_stop_tracing_recv(int fd, int timeout_ms, struct ipc_error *rerr)
{
	struct ipc_reply *r;
	int err;

	if (rerr)
		memset(rerr, 0, sizeof(*rerr));
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = recv_reply(fd, r, now_ms() + (timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS), rerr);
	if (!err && r->len >= 4 && (int32_t)ct_le32(r->payload) < 0) {
		if (rerr)
			rerr->hresult = (int32_t)ct_le32(r->payload);
		err = -EREMOTEIO;
	}
	free(r);
	return err;
}

int ipc_attach_profiler(const struct ipc_endpoint *ep, uint32_t timeout_s,
			const uint8_t clsid[16], const char *path, const void *data,
			uint32_t datalen, struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME - IPC_HEADER_SIZE);
	int err = ipc_encode_u32(&p, timeout_s);

	err = err ?: strbuf_add(&p, clsid, 16);
	err = err ?: ipc_encode_string(&p, path);
	err = err ?: ipc_encode_u32(&p, datalen);
	if (datalen)
		err = err ?: strbuf_add(&p, data, datalen);
	err = err ?: simple_command(ep, IPC_SET_PROFILER, 0x01, &p, rerr);
	strbuf_release(&p);
	return err;
}

int ipc_startup_profiler(const struct ipc_endpoint *ep, const uint8_t clsid[16],
			 const char *path, struct ipc_error *rerr)
{
	struct strbuf p = STRBUF_INIT_MAX(IPC_MAX_FRAME - IPC_HEADER_SIZE);
	int err = strbuf_add(&p, clsid, 16);

	err = err ?: ipc_encode_string(&p, path);
	err = err ?: simple_command(ep, IPC_SET_PROFILER, 0x02, &p, rerr);
	strbuf_release(&p);
	return err;
}
