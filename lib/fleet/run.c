/* SPDX-License-Identifier: MIT */
/*
 * run.c - the node loop of `clrtap fleet`: discovery (proc_scan and
 * proc_target_find every scan_ms), one profile session per .NET process
 * (lib/profile, engine chosen as `profile` does), a window per process cut
 * every window_ms into a struct flame (lib/flame), encoded as gzipped pprof
 * (flame_write) and OTLP (flame_otlp_request) and handed to the exporters;
 * and /metrics (libmicrohttpd through lib/serve's loader).
 */
#include "common/compat.h"

#include <malloc.h>
#include <microhttpd.h>
#include <sqlite3.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <zlib.h>

#include "common/log.h"
#include "fleet/internal.h"
#include "proc/proc.h"
#include "serve/dl.h"

#define FLEET_MAX_PROCS 512
#define FLEET_NOTNET_SLOTS 8192     /* remembered non-.NET processes (direct-mapped by pid) */
#define FLEET_NOTNET_RECHECK_NS (60ull * 1000000000ull)
#define FLEET_NOTNET_MIN_AGE_S 10   /* younger ones may not have made their socket yet */
#define FLEET_WINDOW_MAX_BYTES ((size_t)8 << 20) /* one encoded window */

struct fproc {
	pid_t pid;
	uint64_t starttime;
	bool active;
	struct proc_target t;
	struct profile_session *s;
	struct profile_engine_choice ch;
	struct profile_ep *ev;  /* allocation, exception, lock events (NULL: none) */
	/* the event session starts on its own thread (its priming rundown takes a
	 * while): the loop adopts it once ev_done */
	pthread_t ev_th;
	bool ev_starting;
	int ev_done;            /* __atomic */
	int ev_err;
	struct profile_ep *ev_new;
	struct profile_ep_opts ev_opts;
	struct ipc_error ev_rerr;
	uint64_t ev_seen[PROFILE_EP_EV_N], ev_dropped[PROFILE_EP_EV_N]; /* counted so far */
	struct fleet_labels l;
	char *pyro_name;        /* escaped, for the query */
	int64_t win_start_ms;   /* wall clock */
	uint64_t win_start_ns;  /* monotonic */
};

struct ctx {
	const struct fleet_opts *o;
	struct fleet_exporters *ex;
	struct fproc *procs;
	size_t nprocs;
	/* pids tried and refused (not ours, failed to start), with their start time */
	struct {
		pid_t pid;
		uint64_t starttime;
	} skip[FLEET_MAX_PROCS];
	size_t nskip;
	pthread_mutex_t mu; /* st, read by /metrics */
	struct fleet_stats st;
	struct MHD_Daemon *d;
	uint64_t denied_scan;   /* -EACCES during this scan */
	uint64_t denied_warned; /* the count last warned about */
	uid_t denied_uid;
	/* processes found not to be .NET (no diagnostics socket) at least
	 * FLEET_NOTNET_MIN_AGE_S after they started: not looked at again for a minute */
	struct {
		pid_t pid;
		uint64_t starttime, until_ns;
	} notnet[FLEET_NOTNET_SLOTS];
	uint64_t boot_ticks; /* now, in clock ticks since boot (for process ages) */
	long tick_hz;
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- encoding a window ---- */

static int pprof_bytes(const struct flame *f, const struct flame_opts *fo, char **out, size_t *len)
{
	int fd = memfd_create("clrtap-fleet-pprof", MFD_CLOEXEC);
	off_t end;
	int err;

	if (fd < 0)
		return -errno;
	err = flame_write(f, FLAME_PPROF, fd, fo);
	if (!err) {
		end = lseek(fd, 0, SEEK_END);
		if (end < 0 || (size_t)end > FLEET_WINDOW_MAX_BYTES)
			err = end < 0 ? -errno : -E2BIG;
	}
	if (!err) {
		*out = malloc((size_t)end ? (size_t)end : 1);
		*len = (size_t)end;
		if (!*out)
			err = -ENOMEM;
		else if (pread(fd, *out, (size_t)end, 0) != end) {
			err = -EIO;
			free(*out);
			*out = NULL;
		}
	}
	close(fd);
	return err;
}

static int otlp_bytes(const struct fproc *p, const char *version, const struct flame *f, const struct flame_opts *fo,
		      char **out, size_t *len)
{
	struct flame_otlp_attr a[10];
	struct strbuf sb = STRBUF_INIT_MAX(FLEET_WINDOW_MAX_BYTES);
	uint8_t id[16];
	size_t n = 0, i;
	int err;

#define ATTR(k, v)                                                                           \
	do {                                                                                 \
		if ((v)[0]) {                                                                \
			a[n].key = (k);                                                      \
			a[n].value = (v);                                                    \
			a[n].is_int = false;                                                 \
			n++;                                                                 \
		}                                                                            \
	} while (0)
	ATTR("service.name", p->l.service);
	a[n].key = "process.pid";
	a[n].ivalue = p->l.pid;
	a[n].is_int = true;
	n++;
	ATTR("host.name", p->l.host);
	ATTR("container.id", p->l.container);
	ATTR("k8s.pod.uid", p->l.pod_uid);
	ATTR("k8s.pod.name", p->l.pod_name);
	ATTR("k8s.namespace.name", p->l.namespace);
	ATTR("process.runtime.name", p->l.runtime[0] ? ".NET" : "");
	ATTR("process.runtime.version", p->l.runtime);
#undef ATTR
	if (getrandom(id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
		for (i = 0; i < sizeof(id); i++)
			id[i] = (uint8_t)((uint64_t)fo->time_unix_ns >> (i % 8 * 8) ^ (uint64_t)p->pid ^ i);
	err = flame_otlp_request(f, fo, a, n, "clrtap", version, id, &sb);
	if (err) {
		strbuf_release(&sb);
		return err;
	}
	*out = strbuf_detach(&sb, len);
	return 0;
}

/* in as one gzip member (OTLP/HTTP's Content-Encoding: gzip), in place of *buf. */
static int gzip_in_place(char **buf, size_t *len)
{
	z_stream z = { 0 };
	uLong cap;
	char *out;
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)*len) + 32;
	out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)*buf;
	z.avail_in = (uInt)*len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	free(*buf);
	*buf = out;
	*len = cap - z.avail_out;
	return 0;
}

static struct fleet_item *item_new(const struct fproc *p, char *body, size_t len, int64_t until_ms)
{
	struct fleet_item *it = calloc(1, sizeof(*it));

	if (!it) {
		free(body);
		return NULL;
	}
	it->body = body;
	it->len = len;
	it->pid = p->pid;
	it->from_ms = p->win_start_ms;
	it->from_s = p->win_start_ms / 1000;
	it->until_s = (until_ms + 999) / 1000;
	return it;
}

/*
 * The profile types besides CPU, by PROFILE_EP_EV_* bit number: the pprof
 * sample types are the names Grafana Pyroscope's .NET profiler (a fork of
 * Datadog's) sends, so a backend shows them as it shows that agent's.
 */
static const struct ptype {
	const char *name;    /* --types word, dir file suffix, "type" of the item */
	const char *types[4]; /* flame_opts.types */
	const char *note;
} ptypes[PROFILE_EP_EV_N] = {
	{ "alloc", { "alloc_samples", "count", "alloc_size", "bytes" },
	  "GCAllocationTick events (one per ~100 KB allocated; bytes since the last one), leaf frame the type" },
	{ "exceptions", { "exception", "count", NULL, NULL },
	  "ExceptionThrown events (first chance, every one), leaf frame the exception type" },
	{ "lock", { "lock_count", "count", "lock_time", "nanoseconds" },
	  "ContentionStop events of managed locks (every wait after spinning), wait time from .NET 8 on" },
};

const char *fleet_type_name(int i)
{
	return i >= 0 && i < PROFILE_EP_EV_N ? ptypes[i].name : NULL;
}

int fleet_types_parse(const char *s, unsigned *types)
{
	*types = 0;
	while (*s) {
		size_t l = strcspn(s, ","), i;
		bool known = l == 3 && !strncmp(s, "cpu", 3);

		for (i = 0; i < PROFILE_EP_EV_N && !known; i++)
			if (strlen(ptypes[i].name) == l && !strncmp(s, ptypes[i].name, l)) {
				*types |= 1u << i;
				known = true;
			}
		if (!known)
			return -EINVAL;
		s += l;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* Encodes one window's flame f of p and queues it to every exporter. */
static int encode_queue(struct ctx *c, const struct fproc *p, const struct flame *f,
			const struct flame_opts *fo, const char *type, unsigned hz, int64_t now_ms)
{
	char *body = NULL;
	size_t len = 0;
	struct fleet_item *it;
	bool pp = fleet_exporter_on(c->ex, FLEET_EXP_PYROSCOPE), pd = fleet_exporter_on(c->ex, FLEET_EXP_DIR);
	int err = 0;

	if ((pp || pd) && !(err = pprof_bytes(f, fo, &body, &len))) {
		if (pp && (it = item_new(p, pd ? malloc(len ? len : 1) : body, len, now_ms))) {
			if (pd && it->body)
				memcpy(it->body, body, len);
			it->name = strdup(p->pyro_name);
			it->hz = hz;
			it->type = type;
			if (it->body && it->name)
				fleet_exporter_put(c->ex, FLEET_EXP_PYROSCOPE, it);
			else
				fleet_item_free(it);
		}
		if (pd && (it = item_new(p, body, len, now_ms))) {
			it->type = type;
			fleet_exporter_put(c->ex, FLEET_EXP_DIR, it);
		}
	}
	if (!err && fleet_exporter_on(c->ex, FLEET_EXP_OTLP) &&
	    !(err = otlp_bytes(p, c->o->version, f, fo, &body, &len))) {
		if (c->o->otlp_gzip && (err = gzip_in_place(&body, &len)))
			free(body);
		else if ((it = item_new(p, body, len, now_ms))) {
			it->type = type;
			it->gzip = c->o->otlp_gzip;
			fleet_exporter_put(c->ex, FLEET_EXP_OTLP, it);
		}
	}
	if (err) {
		ct_debug("fleet: pid %d: %s window not encoded: %s", (int)p->pid, type, strerror(-err));
		pthread_mutex_lock(&c->mu);
		c->st.encode_errors++;
		pthread_mutex_unlock(&c->mu);
	}
	return err;
}

/* The event profiles of p's window (allocations, exceptions, lock waits). */
static void cut_events(struct ctx *c, struct fproc *p, const struct flame_opts *cpu_fo, int64_t now_ms)
{
	struct profile_ep_stats es;
	int k;

	for (k = 0; k < PROFILE_EP_EV_N; k++) {
		struct flame_opts fo = *cpu_fo;
		struct flame *f = NULL;
		char notes[256];

		if (!(c->o->types & (1u << k)) || profile_ep_take(p->ev, 1u << k, &f))
			continue;
		memcpy(fo.types, ptypes[k].types, sizeof(fo.types));
		fo.period = 0;
		fo.unit = NULL;
		snprintf(notes, sizeof(notes), "clrtap fleet: %s: %s, window %d ms", ptypes[k].name,
			 ptypes[k].note, c->o->window_ms);
		fo.notes = notes;
		encode_queue(c, p, f, &fo, ptypes[k].name, 0, now_ms);
		flame_free(f);
	}
	profile_ep_stats(p->ev, &es);
	pthread_mutex_lock(&c->mu);
	for (k = 0; k < PROFILE_EP_EV_N; k++) {
		c->st.events[k] += es.ev_seen[k] - p->ev_seen[k];
		c->st.events_dropped[k] += es.ev_dropped[k] - p->ev_dropped[k];
		p->ev_seen[k] = es.ev_seen[k];
		p->ev_dropped[k] = es.ev_dropped[k];
	}
	pthread_mutex_unlock(&c->mu);
}

/* Cuts p's window: builds, resets, encodes, queues. */
static void cut_window(struct ctx *c, struct fproc *p)
{
	const struct fleet_opts *o = c->o;
	struct profile_summary sum;
	struct flame_opts fo = { 0 };
	struct flame *f = NULL;
	int64_t now_ms = wall_ms();
	uint64_t now_ns = perf_now_ns();
	char notes[256];
	unsigned hz = o->hz;
	int err;

	if (flame_new(&f))
		return;
	err = profile_session_build_ex(p->s, f, &sum, 0);
	profile_session_reset(p->s);
	if (profile_session_ep(p->s)) {
		struct profile_ep_stats es;

		profile_ep_stats(profile_session_ep(p->s), &es);
		fo.period = es.sampling_ns;
		hz = es.sampling_ns ? (unsigned)(1000000000u / es.sampling_ns) : 0;
	} else {
		fo.period = 1000000000ull / (hz ? hz : 1);
	}
	snprintf(notes, sizeof(notes), "clrtap fleet: %s engine, %s, window %d ms",
		 profile_session_ep(p->s) ? "EventPipe" : "perf_event", profile_session_ep(p->s) ? "runtime's sampling interval" : "cpu-clock",
		 o->window_ms);
	fo.notes = notes;
	fo.unit = "samples";
	fo.time_unix_ns = p->win_start_ms * 1000000ll;
	fo.duration_ns = now_ns - p->win_start_ns;
	pthread_mutex_lock(&c->mu);
	c->st.windows++;
	c->st.samples += flame_total(f);
	if (!flame_total(f))
		c->st.empty_windows++;
	pthread_mutex_unlock(&c->mu);
	if (!err)
		encode_queue(c, p, f, &fo, "cpu", hz, now_ms);
	else {
		ct_debug("fleet: pid %d: window not built: %s", (int)p->pid, strerror(-err));
		pthread_mutex_lock(&c->mu);
		c->st.encode_errors++;
		pthread_mutex_unlock(&c->mu);
	}
	flame_free(f);
	if (p->ev)
		cut_events(c, p, &fo, now_ms);
	p->win_start_ms = now_ms;
	p->win_start_ns = now_ns;
}

/* ---- processes ---- */

static bool wanted(const struct fleet_opts *o, pid_t pid)
{
	size_t i;

	if (!o->only)
		return pid != getpid();
	for (i = 0; i < o->nonly; i++)
		if (o->only[i] == pid)
			return true;
	return false;
}

/* One event session starts at a time: each reads a priming rundown (every method
 * of its target) and its memory peaks meanwhile; 20 at once on one node held
 * 111 MiB (bench/bench-fleet.sh), one at a time and trimmed after, under 64. */
static pthread_mutex_t ev_start_mu = PTHREAD_MUTEX_INITIALIZER;

static void *ev_starter(void *arg)
{
	struct fproc *p = arg;

	pthread_mutex_lock(&ev_start_mu);
	p->ev_err = profile_ep_start(&p->ev_new, &p->ev_opts, NULL, &p->ev_rerr);
	malloc_trim(0); /* the rundown's transient memory back to the system */
	pthread_mutex_unlock(&ev_start_mu);
	__atomic_store_n(&p->ev_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Takes the event session over once its thread is done (wait: join it anyway). */
static void ev_adopt(struct ctx *c, struct fproc *p, bool wait)
{
	if (!p->ev_starting || (!wait && !__atomic_load_n(&p->ev_done, __ATOMIC_ACQUIRE)))
		return;
	pthread_join(p->ev_th, NULL);
	p->ev_starting = false;
	if (p->ev_err) {
		ct_warn("fleet: pid %d (%s): no allocation/exception/lock profiles: the EventPipe "
			"session did not start: %s", (int)p->pid, p->l.service,
			p->ev_rerr.message[0] ? p->ev_rerr.message : strerror(-p->ev_err));
		pthread_mutex_lock(&c->mu);
		c->st.types_failed++;
		pthread_mutex_unlock(&c->mu);
		return;
	}
	p->ev = p->ev_new;
	p->ev_new = NULL;
	pthread_mutex_lock(&c->mu);
	c->st.event_sessions++;
	pthread_mutex_unlock(&c->mu);
}

static void proc_end(struct ctx *c, struct fproc *p, bool flush)
{
	if (!p->active)
		return;
	ev_adopt(c, p, true);
	if (flush) {
		if (!profile_session_ep(p->s))
			profile_session_stop(p->s);
		if (p->ev)
			(void)profile_ep_stop(p->ev, 1000); /* its last events are in the window */
		cut_window(c, p);
	}
	if (!profile_session_ep(p->s)) {
		struct ipc_error rerr;

		/* a busy target that does not answer in time: the perf map watcher restores it */
		(void)profile_session_restore_within(p->s, 1000, &rerr);
	}
	profile_session_close(p->s);
	if (p->ev) {
		profile_ep_free(p->ev);
		p->ev = NULL;
		pthread_mutex_lock(&c->mu);
		c->st.event_sessions--;
		pthread_mutex_unlock(&c->mu);
	}
	free(p->pyro_name);
	p->pyro_name = NULL;
	p->active = false;
	pthread_mutex_lock(&c->mu);
	c->st.procs_active--;
	pthread_mutex_unlock(&c->mu);
	ct_info("fleet: pid %d: stopped profiling", (int)p->pid);
}

static bool skipped(struct ctx *c, pid_t pid, uint64_t st)
{
	size_t i;

	for (i = 0; i < c->nskip; i++)
		if (c->skip[i].pid == pid && c->skip[i].starttime == st)
			return true;
	return false;
}

static void skip_add(struct ctx *c, pid_t pid, uint64_t st)
{
	if (c->nskip == FLEET_MAX_PROCS)
		c->nskip = 0; /* forget the oldest refusals: they are retried once */
	c->skip[c->nskip].pid = pid;
	c->skip[c->nskip].starttime = st;
	c->nskip++;
}

/* --env-match: whether pid's environment at start has the variable (and value). */
static bool env_matches(const struct fleet_opts *o, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT_MAX(65536);
	bool ok;

	if (!o->env_name)
		return true;
	ok = proc_environ_get(pid, o->env_name, &sb) == 0 &&
	     (!o->env_value || (sb.len == strlen(o->env_value) && !memcmp(sb.buf, o->env_value, sb.len)));
	strbuf_release(&sb);
	return ok;
}

static int scan_one(pid_t pid, void *arg)
{
	struct ctx *c = arg;
	const struct fleet_opts *o = c->o;
	struct profile_session_opts so = { 0 };
	struct strbuf nm = STRBUF_INIT_MAX(4096), esc = STRBUF_INIT_MAX(16384);
	struct fproc *p = NULL;
	uint64_t st;
	size_t i;
	int err;

	if (!wanted(o, pid) || proc_starttime(pid, &st))
		return 0;
	for (i = 0; i < c->nprocs; i++) {
		if (c->procs[i].active && c->procs[i].pid == pid && c->procs[i].starttime == st)
			return 0;
		if (!p && !c->procs[i].active)
			p = &c->procs[i];
	}
	if (skipped(c, pid, st))
		return 0;
	{
		size_t slot = (size_t)pid % FLEET_NOTNET_SLOTS;

		if (c->notnet[slot].pid == pid && c->notnet[slot].starttime == st &&
		    perf_now_ns() < c->notnet[slot].until_ns)
			return 0;
	}
	if (!p) {
		if (c->nprocs == FLEET_MAX_PROCS)
			return 0;
		p = &c->procs[c->nprocs++];
	}
	memset(p, 0, sizeof(*p));
	err = env_matches(o, pid) ? proc_target_find(pid, &p->t) : -ENOENT;
	if (err == -EACCES) {
		c->denied_scan++;
		c->denied_uid = p->t.uid;
	}
	if (err == -ENOENT && c->boot_ticks > st &&
	    c->boot_ticks - st >= (uint64_t)FLEET_NOTNET_MIN_AGE_S * (uint64_t)c->tick_hz) {
		size_t slot = (size_t)pid % FLEET_NOTNET_SLOTS;

		c->notnet[slot].pid = pid;
		c->notnet[slot].starttime = st;
		c->notnet[slot].until_ns = perf_now_ns() + FLEET_NOTNET_RECHECK_NS;
	}
	if (err)
		return 0; /* not .NET (no socket), gone, or not ours: looked at again later */
	p->pid = pid;
	p->starttime = st;
	so.pid = pid;
	so.target = &p->t;
	so.engine = o->engine;
	so.ep_samples = PROFILE_EP_MANAGED;
	so.ep_prime = true; /* names from the first window (code compiled before attaching) */
	so.timeout_ms = o->timeout_ms;
	so.sampler.hz = o->hz;
	so.sampler.cpu = true;
	so.sampler.ring_pages_log2 = 4;
	so.no_boost = true;
	err = profile_session_start_engine(&p->s, &so, &p->ch);
	if (err) {
		ct_warn("fleet: pid %d: cannot profile: %s", (int)pid, strerror(-err));
		skip_add(c, pid, st);
		pthread_mutex_lock(&c->mu);
		c->st.procs_failed++;
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	fleet_labels_read(pid, &p->t, o->host_name, o->timeout_ms, &p->l);
	if (fleet_pyroscope_name(&p->l, &nm) || fleet_url_escape(nm.buf, &esc) ||
	    !(p->pyro_name = strdup(esc.buf))) {
		profile_session_close(p->s);
		strbuf_release(&nm);
		strbuf_release(&esc);
		return 0;
	}
	strbuf_release(&nm);
	strbuf_release(&esc);
	if (o->types) {
		p->ev_opts.socket = p->t.socket;
		p->ev_opts.timeout_ms = o->timeout_ms;
		p->ev_opts.pid = pid;
		p->ev_opts.events = o->types;
		p->ev_opts.no_sampling = true;
		p->ev_opts.prime = true; /* names of the code compiled before */
		p->ev_starting = !pthread_create(&p->ev_th, NULL, ev_starter, p);
		if (!p->ev_starting) {
			pthread_mutex_lock(&c->mu);
			c->st.types_failed++;
			pthread_mutex_unlock(&c->mu);
		}
	}
	p->active = true;
	p->win_start_ms = wall_ms();
	p->win_start_ns = perf_now_ns();
	pthread_mutex_lock(&c->mu);
	c->st.procs_seen++;
	c->st.procs_active++;
	pthread_mutex_unlock(&c->mu);
	if (p->ch.fell_back)
		ct_warn("fleet: pid %d (%s): profiling with the EventPipe engine (perf_event denied: "
			"%s): managed frames only, at the runtime's sampling interval",
			(int)pid, p->l.service, profile_perf_cause_short(p->ch.diag.cause));
	else
		ct_info("fleet: pid %d (%s): profiling with the %s engine", (int)pid, p->l.service,
			profile_session_ep(p->s) ? "EventPipe" : "perf_event");
	return 0;
}

/* ---- /metrics ---- */

static void metric(struct strbuf *b, const char *name, const char *type, const char *help)
{
	strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(struct strbuf *b, const char *name, const char *type, const char *help,
		   uint64_t v)
{
	metric(b, name, type, help);
	strbuf_addf(b, "%s %" PRIu64 "\n", name, v);
}

/* A counter with one line per profile type asked (type="alloc", ...). */
static void per_type(struct strbuf *b, unsigned types, const char *name, const char *help,
		     const uint64_t *v)
{
	int k;

	metric(b, name, "counter", help);
	for (k = 0; k < PROFILE_EP_EV_N; k++)
		if (types & (1u << k))
			strbuf_addf(b, "%s{type=\"%s\"} %" PRIu64 "\n", name, fleet_type_name(k), v[k]);
}

static void metrics_text(struct ctx *c, struct strbuf *b)
{
	struct fleet_stats st;
	struct fleet_exp_stats es[FLEET_EXP_N];
	struct rusage ru;
	uint64_t rss;
	int k;

	pthread_mutex_lock(&c->mu);
	st = c->st;
	pthread_mutex_unlock(&c->mu);
	for (k = 0; k < FLEET_EXP_N; k++)
		fleet_exporter_stats(c->ex, (enum fleet_exp_kind)k, &es[k]);
	scalar(b, "clrtap_fleet_processes", "gauge",
	       ".NET processes being profiled now.", st.procs_active);
	scalar(b, "clrtap_fleet_processes_started_total", "counter",
	       "Processes profiling started for.", st.procs_seen);
	scalar(b, "clrtap_fleet_processes_failed_total", "counter",
	       "Processes that could not be profiled.", st.procs_failed);
	scalar(b, "clrtap_fleet_processes_inaccessible", "gauge",
	       "Processes the last scan could not inspect (not ours: .NET or not is unknown).", st.inaccessible);
	scalar(b, "clrtap_fleet_windows_total", "counter",
	       "Profile windows cut (all processes).", st.windows);
	scalar(b, "clrtap_fleet_samples_total", "counter",
	       "CPU samples in those windows.", st.samples);
	scalar(b, "clrtap_fleet_encode_errors_total", "counter",
	       "Windows that could not be encoded.", st.encode_errors);
	if (c->o->types) {
		per_type(b, c->o->types, "clrtap_fleet_events_total",
			 "Runtime events of the profile types besides CPU (allocation ticks, exceptions, lock waits).",
			 st.events);
		per_type(b, c->o->types, "clrtap_fleet_events_dropped_total",
			 "Of those, events left out of the profiles (no stack, a profile's cap).", st.events_dropped);
		scalar(b, "clrtap_fleet_event_sessions", "gauge",
		       "Processes whose event session (allocations, exceptions, locks) runs.", st.event_sessions);
		scalar(b, "clrtap_fleet_types_failed_total", "counter",
		       "Processes whose event session (allocations, exceptions, locks) did not start.",
		       st.types_failed);
	}
	metric(b, "clrtap_fleet_pushes_total", "counter", "Windows pushed or written, by exporter and result.");
	for (k = 0; k < FLEET_EXP_N; k++)
		if (es[k].configured)
			strbuf_addf(b,
				    "clrtap_fleet_pushes_total{exporter=\"%s\",result=\"sent\"} %" PRIu64 "\n"
				    "clrtap_fleet_pushes_total{exporter=\"%s\",result=\"failed\"} %" PRIu64 "\n",
				    fleet_exp_name((enum fleet_exp_kind)k), es[k].sent,
				    fleet_exp_name((enum fleet_exp_kind)k), es[k].failed);
#define PER_EXP(name, type, help, field, on)                                                 \
	metric(b, name, type, help);                                                         \
	for (k = 0; k < FLEET_EXP_N; k++)                                                    \
		if (es[k].on)                                                                \
			strbuf_addf(b, name "{exporter=\"%s\"} %" PRIu64 "\n",                \
				    fleet_exp_name((enum fleet_exp_kind)k), (uint64_t)es[k].field);
	PER_EXP("clrtap_fleet_pushed_bytes_total", "counter", "Bytes pushed or written.", bytes, configured)
	PER_EXP("clrtap_fleet_dropped_windows_total", "counter",
		"Windows dropped: queue full, refused by the receiver, or left at stop.", dropped, configured)
	PER_EXP("clrtap_fleet_queue_windows", "gauge", "Windows waiting to be pushed.", depth, configured)
	PER_EXP("clrtap_fleet_queue_bytes", "gauge", "Bytes waiting to be pushed.", depth_bytes, configured)
	if (c->o->spool_dir) {
		PER_EXP("clrtap_fleet_spooled_windows_total", "counter",
			"Windows written to the on-disk spool (the memory queue was full, or at stop).", spooled,
			spool_on)
		PER_EXP("clrtap_fleet_spool_windows", "gauge", "Windows waiting in the spool.", spool_depth, spool_on)
		PER_EXP("clrtap_fleet_spool_bytes", "gauge", "Bytes in the spool.", spool_bytes, spool_on)
	}
#undef PER_EXP
	getrusage(RUSAGE_SELF, &ru);
	metric(b, "clrtap_fleet_cpu_seconds_total", "counter", "clrtap's own CPU time (user + system).");
	strbuf_addf(b, "clrtap_fleet_cpu_seconds_total %.3f\n",
		    (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	if (proc_rss_bytes(getpid(), &rss))
		rss = 0;
	metric(b, "clrtap_fleet_resident_memory_bytes", "gauge", "clrtap's own resident memory.");
	strbuf_addf(b, "clrtap_fleet_resident_memory_bytes %" PRIu64 "\n", rss);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct ctx *c = cls;
	struct strbuf b = STRBUF_INIT_MAX(1 << 20);
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned code = 200;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size)
		return MHD_NO;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		code = 405;
		strbuf_addstr(&b, "only GET\n");
	} else if (strcmp(url, "/metrics")) {
		code = 404;
		strbuf_addstr(&b, "clrtap fleet serves /metrics only\n");
	} else {
		metrics_text(c, &b);
	}
	r = MHD_create_response_from_buffer(b.len, b.buf, MHD_RESPMEM_MUST_COPY);
	strbuf_release(&b);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type",
				code == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static int metrics_start(struct ctx *c, char *why, size_t wlen)
{
	const struct fleet_opts *o = c->o;
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int err = srv_dl_load(why, wlen);

	if (err)
		return err;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, o->metrics_addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)o->metrics_port);
	} else if (inet_pton(AF_INET6, o->metrics_addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)o->metrics_port);
		flags |= MHD_USE_IPv6;
	} else {
		snprintf(why, wlen, "'%s' is not an IP address", o->metrics_addr);
		return -EINVAL;
	}
	c->d = MHD_start_daemon(flags, (uint16_t)o->metrics_port, NULL, NULL, handle, c,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (!c->d) {
		snprintf(why, wlen, "cannot listen on %s port %u (in use or not available)",
			 o->metrics_addr, o->metrics_port);
		return -EADDRINUSE;
	}
	return 0;
}

/* ---- the loop ---- */

int fleet_run(const struct fleet_opts *o, struct fleet_summary *sum, char *why, size_t wlen)
{
	static struct ctx c; /* ~220 KiB: not on the stack; fleet_run runs once per process */
	uint64_t next_scan = 0, t0 = perf_now_ns();
	size_t i;
	int err;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.tick_hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	pthread_mutex_init(&c.mu, NULL);
	c.procs = calloc(FLEET_MAX_PROCS, sizeof(*c.procs));
	if (!c.procs)
		return -ENOMEM;
	err = fleet_exporters_start(&c.ex, o, why, wlen);
	if (err) {
		free(c.procs);
		return err;
	}
	if (o->metrics_addr && (err = metrics_start(&c, why, wlen))) {
		fleet_exporters_stop(c.ex, 0);
		fleet_exporters_free(c.ex);
		free(c.procs);
		return err;
	}
	while (!*o->stop) {
		uint64_t now = perf_now_ns();
		size_t active = 0;

		if (o->duration_ms && now - t0 >= (uint64_t)o->duration_ms * 1000000ull)
			break;
		if (now >= next_scan) {
			struct timespec bt;

			c.denied_scan = 0;
			clock_gettime(CLOCK_BOOTTIME, &bt);
			c.boot_ticks = (uint64_t)bt.tv_sec * (uint64_t)c.tick_hz +
				       (uint64_t)bt.tv_nsec * (uint64_t)c.tick_hz / 1000000000ull;
			proc_scan(scan_one, &c);
			pthread_mutex_lock(&c.mu);
			c.st.inaccessible = c.denied_scan;
			pthread_mutex_unlock(&c.mu);
			if (c.denied_scan > c.denied_warned) {
				char why2[256] = "";

				proc_access_explain(c.denied_uid, why2, sizeof(why2));
				ct_warn("fleet: %" PRIu64 " processes could not be inspected, so whether "
					"they run .NET is unknown: %s", c.denied_scan, why2);
			}
			c.denied_warned = c.denied_scan;
			next_scan = perf_now_ns() + (uint64_t)(o->scan_ms > 0 ? o->scan_ms : 2000) * 1000000ull;
		}
		for (i = 0; i < c.nprocs && !*o->stop; i++) {
			struct fproc *p = &c.procs[i];
			int rc;

			if (!p->active)
				continue;
			active++;
			ev_adopt(&c, p, false);
			rc = profile_session_tick(p->s, 0);
			if (rc == -ESRCH) {
				proc_end(&c, p, true);
				continue;
			}
			if (perf_now_ns() - p->win_start_ns >= (uint64_t)o->window_ms * 1000000ull)
				cut_window(&c, p);
		}
		if (!*o->stop) {
			struct timespec ts = { 0, 100 * 1000000L };

			(void)active;
			nanosleep(&ts, NULL);
		}
	}
	/* stop: the last windows, then what is queued, within flush_ms */
	for (i = 0; i < c.nprocs; i++)
		proc_end(&c, &c.procs[i], true);
	fleet_exporters_stop(c.ex, o->flush_ms > 0 ? o->flush_ms : 3000);
	if (c.d)
		MHD_stop_daemon(c.d);
	if (sum) {
		int k;

		sum->st = c.st;
		for (k = 0; k < FLEET_EXP_N; k++)
			fleet_exporter_stats(c.ex, (enum fleet_exp_kind)k, &sum->ex[k]);
	}
	fleet_exporters_free(c.ex);
	free(c.procs);
	pthread_mutex_destroy(&c.mu);
	return 0;
}
