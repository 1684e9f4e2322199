/* SPDX-License-Identifier: MIT */
/*
 * engine_ep.c - the EventPipe engine of a profiling session: the runtime's
 * own sample profiler (Microsoft-DotNETCore-SampleProfiler) over the
 * diagnostics socket, for where perf_event_open is denied (seccomp, no
 * CAP_PERFMON, perf_event_paranoid). It needs only the socket.
 *
 * One EventPipe session streams ThreadSample events (managed stacks, one per
 * managed thread per interval) and the runtime's method load events; a
 * reader thread parses the stream as it comes (lib/nettrace) and adds each
 * kept sample to the session's struct profile, so `top` can show it live.
 * Frames are named from the trace's own MethodLoadVerbose and rundown events
 * through nt_methods_name_stack, the code `trace report/convert` use. For
 * `top` a short rundown-only session first names the code compiled before.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "common/log.h"
#include "common/strparse.h"
#include "common/clock.h"
#include "nettrace/nettrace.h"
#include "proc/proc.h"
#include "profile/profile.h"

#define RUNTIME_PROVIDER "Microsoft-Windows-DotNETRuntime"
#define SAMPLER_PROVIDER "Microsoft-DotNETCore-SampleProfiler"
#define KW_LOADER_JIT 0x18ull /* Loader 0x8, Jit 0x10: MethodLoadVerbose */
#define RT_METHOD_LOAD_VERBOSE 143
#define RT_ALLOC_TICK 10
#define RT_EXCEPTION 80
#define RT_CONTENTION_START 81
#define RT_CONTENTION_STOP 91
#define LOCK_SLOTS 64   /* threads waiting for a lock at once whose stacks are kept */
#define LOCK_FRAMES 48  /* leaf-most frames kept of a waiting thread's stack */
#define KW_GC 0x1ull
#define KW_CONTENTION 0x4000ull
#define KW_EXCEPTION 0x8000ull
#define COMM_MAX 65536        /* threads whose names are kept */
#define COMM_LEN 16
#define NAMES_CAP (PERF_SAMPLER_MAX_STACK * 2 + 2)
/* Logical callers are synthetic frames at addresses no code has (non-canonical
 * on x86_64 and aarch64), one 16-byte range per distinct state machine. */
#define AF_BASE 0x00c1a50000000000ull
#define AF_SLOTS 4096
#define AF_CHAIN 64 /* logical callers shown above a sample at most */

struct comm_ent {
	uint32_t tid;
	char name[COMM_LEN];
};

struct profile_ep {
	char sock[PROC_PATH_MAX];
	struct ipc_endpoint ep;
	pid_t pid;
	unsigned samples; /* PROFILE_EP_* */
	int fd;
	uint64_t session;
	struct profile *prof;
	struct nt_methods *methods;

	pthread_t th;
	bool th_started;
	pthread_mutex_t mu; /* prof, methods, counters */
	pthread_cond_t cv;
	bool done;           /* the reader thread has finished */
	int reader_rc;       /* its result: 0 (the stream's end), or a negative errno */
	volatile int abort;  /* tells the reader to give up */
	uint64_t read_deadline_ns; /* reads give up after it (0: never) */
	bool stop_sent;
	int stop_err;

	struct profile_ep_stats st;
	int64_t qpc_freq;

	struct comm_ent *comms;
	size_t ncomms;
	uint64_t comm_scan_ns;

	struct taskcpu *tc; /* the on-CPU filter; NULL: thread time */

	unsigned events;                       /* PROFILE_EP_EV_* */
	bool no_sampling;
	struct flame *evf[PROFILE_EP_EV_N];    /* one per kind asked (under mu) */
	/* ContentionStart carries the waiting stack, ContentionStop the wait time:
	 * the start's stack per thread until its stop (allocated on the first) */
	struct lock_wait {
		uint32_t tid, nframes; /* nframes 0: free */
		uint64_t ips[LOCK_FRAMES];
	} *lw;

	/* --async: logical callers from the TPL events (NULL: off) */
	unsigned async; /* PROFILE_EP_ASYNC_* */
	bool endpoints; /* --by-endpoint: a root frame per request path */
	struct profile_ep_endpoint ep_counts[PROFILE_EP_ENDPOINTS];
	uint32_t nep;
	struct nt_asyncflow *af;
	const char *af_names[AF_SLOTS]; /* synthetic frame k: the operation named (slot 0: [await]) */
	uint32_t af_nslots;
};

static struct lock_wait *lock_slot(struct profile_ep *e, uint32_t tid, bool take)
{
	size_t i, h = tid % LOCK_SLOTS;

	if (!e->lw && (!take || !(e->lw = calloc(LOCK_SLOTS, sizeof(*e->lw)))))
		return NULL;
	for (i = 0; i < LOCK_SLOTS; i++) {
		struct lock_wait *w = &e->lw[(h + i) % LOCK_SLOTS];

		if (w->nframes && w->tid == tid)
			return w;
		if (take && !w->nframes)
			return w;
	}
	return take ? &e->lw[h] : NULL; /* full: the oldest wait at that place is forgotten */
}

/* A managed lock wait begins: keep the thread's stack for its ContentionStop. */
static void lock_start(struct profile_ep *e, const struct nt_event *ev)
{
	struct nt_contention c;
	struct lock_wait *w;

	if (!(e->events & PROFILE_EP_EV_LOCK) || !ev->nframes ||
	    nt_decode_contention_start(ev->payload, ev->payload_len, ev->meta->version, ev->pointer_size, &c) ||
	    c.flags != 0 || !(w = lock_slot(e, (uint32_t)ev->thread_id, true)))
		return;
	w->tid = (uint32_t)ev->thread_id;
	w->nframes = CT_MIN(ev->nframes, (uint32_t)LOCK_FRAMES);
	memcpy(w->ips, ev->stack, w->nframes * sizeof(w->ips[0]));
}

static int ev_index(unsigned kind)
{
	return kind == PROFILE_EP_EV_ALLOC ? 0 : kind == PROFILE_EP_EV_EXC ? 1 : kind == PROFILE_EP_EV_LOCK ? 2 : -1;
}

/*
 * An allocation tick, an exception or a lock wait: its stack named now (the
 * methods it runs were loaded before it, or are in the priming rundown), a
 * leaf frame for the type when there is one, into the kind's flame.
 * Called under e->mu.
 */
static void add_event(struct profile_ep *e, const struct nt_event *ev, unsigned kind)
{
	const char *names[NAMES_CAP + 1];
	struct strbuf type = STRBUF_INIT_MAX(512);
	const uint64_t *ips = ev->stack;
	uint32_t nips = ev->nframes;
	struct lock_wait *w = NULL;
	uint64_t weight = 1;
	int k = ev_index(kind);
	size_t n = 0;
	bool ok = true;

	if (!(e->events & kind) || k < 0 || !e->evf[k])
		return;
	if (kind == PROFILE_EP_EV_ALLOC) {
		struct nt_gc_alloc_tick a;

		ok = !nt_decode_gc_alloc_tick(ev->payload, ev->payload_len, ev->meta->version,
					      ev->pointer_size, &a);
		if (ok) {
			weight = a.amount64 ? a.amount64 : a.amount;
			ok = !nt_str16_utf8(&a.type_name, &type);
		}
	} else if (kind == PROFILE_EP_EV_EXC) {
		struct nt_exception x;

		ok = !nt_decode_exception(ev->payload, ev->payload_len, ev->meta->version,
					  ev->pointer_size, &x) &&
		     !nt_str16_utf8(&x.type, &type);
	} else {
		struct nt_contention c;

		if (nt_decode_contention_stop(ev->payload, ev->payload_len, ev->meta->version,
					      ev->pointer_size, &c))
			ok = false;
		else if (c.flags != 0)
			return; /* a runtime-internal (native) lock: not the program's */
		else if (c.duration_ns > 0)
			weight = (uint64_t)c.duration_ns;
		w = lock_slot(e, (uint32_t)ev->thread_id, false);
		if (w) { /* where it waited: its ContentionStart's stack */
			ips = w->ips;
			nips = w->nframes;
		}
	}
	e->st.ev_seen[k]++;
	if (ok && nips)
		n = nt_methods_name_stack(e->methods, ips, nips, names, NAMES_CAP);
	if (w)
		w->nframes = 0;
	if (ok && n && type.len)
		names[n++] = type.buf;
	if (!ok || !n || !weight || flame_add(e->evf[k], names, n, weight))
		e->st.ev_dropped[k]++;
	strbuf_release(&type);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A read function over the session socket (non-blocking): waits in short
 * polls so that an abort request is seen. */
static ssize_t read_sock(void *ctx, void *buf, size_t len)
{
	struct profile_ep *e = ctx;

	for (;;) {
		struct pollfd p = { e->fd, POLLIN, 0 };
		ssize_t n;
		int r;

		if (e->abort)
			return -ECANCELED;
		if (e->read_deadline_ns && mono_ns() > e->read_deadline_ns)
			return -ETIMEDOUT;
		n = read(e->fd, buf, len);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = poll(&p, 1, 100);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static uint64_t sample_ns(const struct profile_ep *e, const struct nt_event *ev)
{
	int64_t f = e->qpc_freq > 0 ? e->qpc_freq : 1000000000;

	return (uint64_t)((unsigned __int128)(uint64_t)ev->timestamp * 1000000000u / (uint64_t)f);
}

/* The synthetic frame (a return address inside its range) of an async
 * operation name (NULL: one begun before the session), named like the code:
 * from the raw name of its MoveNext when the trace has it; MARKER for
 * [await]. 0 when the table is full. Under e->mu. */
#define MARKER ((const char *)1)
static uint64_t af_frame_named(struct profile_ep *e, const char *op, const char *shown)
{
	const char *raw = shown;
	char buf[600];
	uint32_t k;

	/* keys are the flow's interned names (stable, one pointer per string) */
	for (k = 0; k < e->af_nslots; k++)
		if (e->af_names[k] == op)
			return AF_BASE + k * 16 + 8;
	if (e->af_nslots >= AF_SLOTS)
		return 0;
	if (raw)
		;
	else if (op == MARKER)
		raw = "[await]";
	else if (!op)
		raw = "[async caller begun before the session]";
	else if (!(raw = nt_methods_find_raw(e->methods, nt_asyncflow_is_movenext, op))) {
		snprintf(buf, sizeof(buf), "%s::MoveNext", op);
		raw = buf;
	}
	if (nt_methods_add(e->methods, AF_BASE + e->af_nslots * 16, 16, raw))
		return 0;
	e->af_names[e->af_nslots] = op;
	return AF_BASE + e->af_nslots++ * 16 + 8;
}

static uint64_t af_frame(struct profile_ep *e, const char *op)
{
	return af_frame_named(e, op, NULL);
}

/* nt_asyncflow's namer: the box whose MoveNext wrote the event, i.e. the
 * first frame past the event source's own. Any other frame there (the box's
 * MoveNext inlined into its caller, which may be another task's box): no name,
 * never a neighbour's. Under e->mu (called from nt_asyncflow_event). */
static bool af_namer(void *ctx, const struct nt_event *ev, char *out, size_t len)
{
	struct profile_ep *e = ctx;
	uint32_t j;

	for (j = 0; j < ev->nframes; j++) {
		const char *raw = nt_methods_lookup_raw(e->methods, j ? ev->stack[j] - 1 : ev->stack[j]);

		if (raw && (!strncmp(raw, "System.Threading.Tasks.TplEventSource::", 39) ||
			    !strncmp(raw, "System.Diagnostics.Tracing.", 27)))
			continue;
		return raw && strstr(raw, "]::MoveNext") && nt_asyncflow_box_machine(raw, out, len);
	}
	return false;
}

/* --by-endpoint: the request the sample's thread serves as its root frame
 * (out holds n frames, or 0: the sample's own), counted per path. Returns the
 * frame count (0: the sample as it is). Under e->mu. */
static unsigned af_endpoint(struct profile_ep *e, const struct nt_event *ev, uint64_t *out, unsigned n)
{
	const char *req = nt_asyncflow_request(e->af, (uint32_t)ev->thread_id);
	char buf[600];
	uint64_t f;
	uint32_t i;

	if (!req) {
		e->st.endpoint_none++;
		return n;
	}
	for (i = 0; i < e->nep && strcmp(e->ep_counts[i].name, req); i++)
		;
	if (i == e->nep && e->nep < PROFILE_EP_ENDPOINTS)
		e->ep_counts[e->nep++].name = req;
	if (i < e->nep)
		e->ep_counts[i].samples++;
	else
		e->st.endpoint_other++;
	snprintf(buf, sizeof(buf), "[endpoint] %s", req);
	if (!(f = af_frame_named(e, req, buf)))
		return n;
	if (!n) {
		n = CT_MIN(ev->nframes, (uint32_t)PERF_SAMPLER_MAX_STACK);
		memcpy(out, ev->stack, n * sizeof(*out));
	}
	out[n++] = f;
	return n;
}

/*
 * A sample of a thread running a resumed async method: its frames up to that
 * method's MoveNext (the outermost one), then [await] and the methods awaiting
 * it, innermost first (leaf-first order); with PROFILE_EP_ASYNC_BOTH the
 * thread's own frames above. Returns the frames in out, or 0 to keep the
 * sample as it is (counted). Under e->mu.
 */
static unsigned af_splice(struct profile_ep *e, const struct nt_event *ev, uint64_t *out, unsigned cap)
{
	const char *chain[AF_CHAIN];
	size_t n = nt_asyncflow_chain(e->af, (uint32_t)ev->thread_id, chain, AF_CHAIN), i;
	unsigned j, k = 0;
	int at = -1;

	if (!n) {
		e->st.async_none++;
		return 0;
	}
	for (j = ev->nframes; j-- > 0 && at < 0 && chain[0];) {
		const char *raw = nt_methods_lookup_raw(e->methods, j ? ev->stack[j] - 1 : ev->stack[j]);

		if (raw && nt_asyncflow_is_movenext(raw, chain[0]))
			at = (int)j;
	}
	if (at < 0 || (unsigned)at + 1 + n + (e->async == PROFILE_EP_ASYNC_BOTH ? ev->nframes : 0) > cap) {
		e->st.async_unattributed++;
		return 0;
	}
	for (j = 0; j <= (unsigned)at; j++)
		out[k++] = ev->stack[j];
	if (n > 1 && !(out[k++] = af_frame(e, MARKER)))
		goto fail;
	for (i = 1; i < n; i++)
		if (!(out[k++] = af_frame(e, chain[i])))
			goto fail;
	if (e->async == PROFILE_EP_ASYNC_BOTH)
		for (j = (unsigned)at + 1; j < ev->nframes; j++)
			out[k++] = ev->stack[j];
	e->st.async_logical += n > 1;
	e->st.async_alone += n == 1;
	return k;
fail:
	e->st.async_unattributed++;
	return 0;
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct profile_ep *e = ctx;
	const struct nt_metadata *m = ev->meta;
	bool sample, keep = true, known = true;
	uint32_t type = NT_SAMPLE_ERROR;
	unsigned want = 0;
	int rc = 0;

	if (!m)
		return 0;
	sample = m->provider_kind == NT_PROV_SAMPLEPROFILER && m->event_id == 0;
	if (sample) {
		if (nt_decode_thread_sample(ev->payload, ev->payload_len, m->version,
					    ev->pointer_size, &type))
			type = NT_SAMPLE_ERROR;
		want = type == NT_SAMPLE_MANAGED ? PROFILE_EP_MANAGED :
		       type == NT_SAMPLE_EXTERNAL ? PROFILE_EP_EXTERNAL : 0;
		/* outside e->mu: it may wait (at most one polling interval) for the
		 * poller to pass the sample's time */
		if ((want & e->samples) && e->tc && e->prof)
			keep = taskcpu_keep(e->tc, (uint32_t)ev->thread_id, sample_ns(e, ev), 150,
					    &known);
	}
	pthread_mutex_lock(&e->mu);
	if (e->af && !sample && nt_asyncflow_event(e->af, ev)) {
		; /* a TPL event: the async flow only */
	} else if ((m->provider_kind == NT_PROV_RUNTIME && m->event_id == RT_METHOD_LOAD_VERBOSE) ||
	    m->provider_kind == NT_PROV_RUNDOWN) {
		rc = nt_methods_add_event(e->methods, ev);
		if (rc == -EBADMSG || rc == -EFBIG || rc > 0)
			rc = 0; /* a bad record or a full table: fewer names, not a failure */
	} else if (m->provider_kind == NT_PROV_RUNTIME && m->event_id == RT_CONTENTION_START) {
		lock_start(e, ev);
	} else if (m->provider_kind == NT_PROV_RUNTIME && e->events &&
		   (m->event_id == RT_ALLOC_TICK || m->event_id == RT_EXCEPTION ||
		    m->event_id == RT_CONTENTION_STOP)) {
		add_event(e, ev, m->event_id == RT_ALLOC_TICK ? PROFILE_EP_EV_ALLOC :
				 m->event_id == RT_EXCEPTION ? PROFILE_EP_EV_EXC : PROFILE_EP_EV_LOCK);
	} else if (sample && e->prof) {
		if (type == NT_SAMPLE_MANAGED)
			e->st.managed++;
		else if (type == NT_SAMPLE_EXTERNAL)
			e->st.external++;
		else
			e->st.other++;
		if ((want & e->samples) && !keep)
			e->st.waiting++;
		else if (want & e->samples) {
			struct perf_stack s = { 0 };
			uint64_t spliced[PERF_SAMPLER_MAX_STACK + AF_CHAIN + 2];
			unsigned ns = e->async ? af_splice(e, ev, spliced, ARRAY_SIZE(spliced) - 1) : 0;

			if (e->endpoints)
				ns = af_endpoint(e, ev, spliced, ns);

			if (!known)
				e->st.unknown++;
			s.kind = PERF_STACK_CPU;
			s.pid = (uint32_t)e->pid;
			s.tid = (uint32_t)ev->thread_id;
			s.time = sample_ns(e, ev);
			s.weight = 1; /* one sample, whatever the mode: blocked time is not measured */
			s.nr = ns ? ns : ev->nframes;
			s.ips = ns ? spliced : ev->stack;
			rc = profile_add_stack(e->prof, &s);
			if (!rc)
				e->st.kept++;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc < 0 ? rc : 0;
}

/* Reads a session's stream to its end (or an abort, or an error). */
static int read_stream(struct profile_ep *e)
{
	const struct nt_handlers h = { .event = on_event };
	struct nt_reader *r = NULL;
	struct nt_stats ns;
	int rc;

	rc = nt_reader_new(&r, read_sock, e, NULL);
	if (rc)
		return rc;
	rc = nt_reader_open(r);
	if (!rc) {
		const struct nt_trace_info *info = nt_reader_info(r);

		pthread_mutex_lock(&e->mu);
		e->qpc_freq = info->qpc_freq;
		if (info->sampling_ns)
			e->st.sampling_ns = info->sampling_ns;
		pthread_mutex_unlock(&e->mu);
		do
			rc = nt_reader_run(r, &h, e);
		while (rc == NT_STOPPED);
	}
	nt_reader_stats(r, &ns);
	pthread_mutex_lock(&e->mu);
	e->st.dropped_events += ns.dropped;
	e->st.bytes += nt_reader_offset(r);
	if (!rc)
		e->st.complete = true;
	pthread_mutex_unlock(&e->mu);
	nt_reader_free(r);
	return rc;
}

static void *reader_main(void *arg)
{
	struct profile_ep *e = arg;
	int rc = read_stream(e);

	pthread_mutex_lock(&e->mu);
	e->reader_rc = rc;
	e->done = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static int start_session(struct profile_ep *e, bool sampling, struct ipc_error *rerr)
{
	struct ipc_provider prov[4];
	struct ipc_trace_config cfg = { 0 };
	size_t n = 0;

	if (sampling && e->events) {
		uint64_t kw = KW_LOADER_JIT;

		kw |= e->events & PROFILE_EP_EV_ALLOC ? KW_GC : 0;
		kw |= e->events & PROFILE_EP_EV_EXC ? KW_EXCEPTION : 0;
		kw |= e->events & PROFILE_EP_EV_LOCK ? KW_CONTENTION : 0;
		/* AllocationTick is a verbose event of the GC keyword */
		prov[n++] = (struct ipc_provider){ RUNTIME_PROVIDER, kw,
						   e->events & PROFILE_EP_EV_ALLOC ? 5u : 4u, NULL };
	} else {
		/* --async names a resumed method's frame as its sample comes: the code
		 * compiled during the session too (MethodLoadVerbose is verbose) */
		prov[n++] = (struct ipc_provider){ RUNTIME_PROVIDER, KW_LOADER_JIT, e->af && sampling ? 5u : 4u, NULL };
	}
	if (sampling && !e->no_sampling)
		prov[n++] = (struct ipc_provider){ SAMPLER_PROVIDER, 0, 4, NULL };
	if (sampling && e->af)
		prov[n++] = (struct ipc_provider){ NT_AF_PROVIDER, NT_AF_KEYWORDS, 4, NULL };
	if (sampling && e->endpoints)
		prov[n++] = (struct ipc_provider){ NT_AF_HOSTING_PROVIDER, 0, 4, NULL };
	cfg.providers = prov;
	cfg.nproviders = n;
	cfg.buffer_mb = 64;
	cfg.stackwalk = true;
	/* the rundown at the end names the code compiled before the session (an
	 * events-only session is primed instead: its events are named as they come) */
	cfg.rundown = !(sampling && e->no_sampling);
	e->fd = -1;
	return ipc_collect_tracing(&e->ep, &cfg, &e->fd, &e->session, rerr);
}

/*
 * A rundown-only session: started and stopped at once, read to its end in
 * this thread (grace_ms at most), so the names of the code compiled before
 * the sampling session are known while it runs (for `top`).
 */
static int prime(struct profile_ep *e, int grace_ms, struct ipc_error *rerr)
{
	struct profile *keep = e->prof;
	int rc, stop_rc;

	rc = start_session(e, false, rerr);
	if (rc)
		return rc;
	e->prof = NULL; /* no samples in this one */
	e->read_deadline_ns = mono_ns() + (uint64_t)grace_ms * 1000000ull;
	rc = pthread_create(&e->th, NULL, reader_main, e);
	if (rc) {
		close(e->fd);
		e->fd = -1;
		e->prof = keep;
		return -rc;
	}
	/* the runtime answers StopTracing once the rundown is written: read meanwhile */
	stop_rc = ipc_stop_tracing(&e->ep, e->session, rerr);
	pthread_join(e->th, NULL);
	rc = e->reader_rc;
	if (!rc && !e->st.complete)
		rc = stop_rc ? stop_rc : -EPROTO;
	e->read_deadline_ns = 0;
	e->prof = keep;
	close(e->fd);
	e->fd = -1;
	e->done = false;
	e->reader_rc = 0;
	e->st.bytes = 0;
	e->st.complete = false;
	e->st.dropped_events = 0;
	return rc;
}

int profile_ep_start(struct profile_ep **out, const struct profile_ep_opts *o,
		     struct profile *prof, struct ipc_error *rerr)
{
	struct profile_ep *e;
	int rc, i;

	*out = NULL;
	memset(rerr, 0, sizeof(*rerr));
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ct_strlcpy(e->sock, o->socket, sizeof(e->sock));
	e->ep.path = e->sock;
	e->ep.timeout_ms = o->timeout_ms;
	e->pid = o->pid;
	e->samples = o->samples ? o->samples : PROFILE_EP_MANAGED;
	e->prof = prof;
	e->fd = -1;
	e->st.sampling_ns = 1000000; /* the runtime's default until the trace header says */
	e->events = o->events & (PROFILE_EP_EV_ALLOC | PROFILE_EP_EV_EXC | PROFILE_EP_EV_LOCK);
	e->no_sampling = o->no_sampling && e->events;
	e->async = o->async;
	e->endpoints = o->endpoints;
	if (!prof && !e->no_sampling) {
		free(e);
		return -EINVAL;
	}
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	rc = nt_methods_new(&e->methods, 0, 0);
	if (!rc && (e->async || e->endpoints) && !(rc = nt_asyncflow_new(&e->af)))
		nt_asyncflow_set_namer(e->af, af_namer, e);
	if (rc)
		goto fail;
	for (i = 0; i < PROFILE_EP_EV_N; i++) {
		if (!(e->events & (1u << i)))
			continue;
		rc = flame_new(&e->evf[i]);
		if (rc)
			goto fail;
		flame_set_max_nodes(e->evf[i], PROFILE_EP_EV_MAX_NODES);
	}
	if (prof)
		profile_set_namer(prof, profile_ep_name_stack, e);
	/* --async finds a resumed method's frame by name as each sample comes:
	 * the code compiled before the session must be named first */
	if (o->prime || e->async) {
		rc = prime(e, 10000, rerr);
		if (rc)
			ct_debug("profile: the priming rundown failed: %s", strerror(-rc));
		if (rc == -ECONNREFUSED || rc == -ENOENT || rc == -EACCES || rc == -EPERM ||
		    rc == -EREMOTEIO)
			goto fail;
		e->st.primed = rc == 0;
	}
	if (e->samples == PROFILE_EP_MANAGED && !o->thread_time && !e->no_sampling) {
		/* on-CPU: every sample of a thread that was not running is left out */
		e->st.oncpu_err = taskcpu_start(&e->tc, e->pid);
		if (e->st.oncpu_err)
			ct_debug("profile: no thread CPU times: %s", strerror(-e->st.oncpu_err));
	}
	rc = start_session(e, true, rerr);
	if (rc)
		goto fail;
	rc = pthread_create(&e->th, NULL, reader_main, e);
	if (rc) {
		rc = -rc;
		(void)ipc_stop_tracing(&e->ep, e->session, rerr);
		goto fail;
	}
	e->th_started = true;
	*out = e;
	return 0;
fail:
	if (prof)
		profile_set_namer(prof, NULL, NULL);
	profile_ep_free(e);
	return rc;
}

int profile_ep_wait(struct profile_ep *e, int timeout_ms)
{
	struct timespec ts;
	int rc = 0;

	ct_deadline(CLOCK_REALTIME, timeout_ms, &ts);
	pthread_mutex_lock(&e->mu);
	while (!e->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	rc = 0;
	if (e->done && !e->stop_sent) {
		/* the runtime ended the stream by itself: the process is gone (or the
		 * stream broke: say so) */
		e->st.stream_ended = true;
		rc = e->reader_rc && e->reader_rc != -ECANCELED && kill(e->pid, 0) == 0
			     ? e->reader_rc : -ESRCH;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int profile_ep_stop(struct profile_ep *e, int grace_ms)
{
	struct ipc_error rerr;
	int rc;

	if (!e->th_started)
		return 0;
	pthread_mutex_lock(&e->mu);
	if (!e->done && !e->stop_sent) {
		pthread_mutex_unlock(&e->mu);
		e->stop_err = ipc_stop_tracing(&e->ep, e->session, &rerr);
		pthread_mutex_lock(&e->mu);
		e->stop_sent = true;
	}
	pthread_mutex_unlock(&e->mu);
	/* the rundown comes now; wait for the end of the stream (also when the reply to
	 * StopTracing was an error: the session may have been stopped anyway) */
	(void)profile_ep_wait(e, e->stop_err ? CT_MIN(grace_ms, 2000) : grace_ms);
	e->abort = 1;
	pthread_join(e->th, NULL);
	e->th_started = false;
	taskcpu_stop(e->tc);
	rc = e->reader_rc;
	if (e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
	if (rc == -ECANCELED)
		return -ETIMEDOUT;
	if (rc && e->st.stream_ended)
		return 0; /* the target went away: what came is kept */
	if (rc)
		return rc;
	return e->st.complete ? 0 : e->stop_err;
}

void profile_ep_lock(struct profile_ep *e)
{
	pthread_mutex_lock(&e->mu);
}

void profile_ep_unlock(struct profile_ep *e)
{
	pthread_mutex_unlock(&e->mu);
}

void profile_ep_stats(struct profile_ep *e, struct profile_ep_stats *st)
{
	pthread_mutex_lock(&e->mu);
	*st = e->st;
	st->methods = nt_methods_count(e->methods);
	if (e->af) {
		struct nt_asyncflow_stats as;

		nt_asyncflow_stats(e->af, &as);
		st->async_events = as.events;
		st->requests = as.requests;
		st->requests_other = as.requests_other;
		memcpy(st->endpoints, e->ep_counts, sizeof(st->endpoints));
		st->nendpoints = e->nep;
	}
	pthread_mutex_unlock(&e->mu);
	if (e->tc) {
		struct taskcpu_stats ts;

		taskcpu_stats(e->tc, &ts);
		st->oncpu = ts.source;
		st->oncpu_interval_ms = ts.interval_ms;
		st->running_share = ts.kept + ts.waiting ?
			ts.running_sum / (double)(ts.kept + ts.waiting) : 0;
	}
}

size_t profile_ep_name_stack(void *ctx, const uint64_t *ips, unsigned nr, const char **names,
			     uint32_t *idx, size_t cap)
{
	struct profile_ep *e = ctx;
	size_t n = nt_methods_name_stack_idx(e->methods, ips, nr, names, idx, cap);

	/* on-CPU: a thread caught entering or leaving a blocking wait was not
	 * running there (lib/nettrace/waits.c) */
	if (e->tc && nt_stack_waits(names, n))
		return PROFILE_NAMER_SKIP;
	return n;
}

int profile_ep_take(struct profile_ep *e, unsigned kind, struct flame **out)
{
	int k = ev_index(kind), rc;
	struct flame *fresh = NULL;

	*out = NULL;
	if (k < 0 || !(e->events & kind))
		return -EINVAL;
	rc = flame_new(&fresh);
	if (rc)
		return rc;
	flame_set_max_nodes(fresh, PROFILE_EP_EV_MAX_NODES);
	pthread_mutex_lock(&e->mu);
	*out = e->evf[k];
	e->evf[k] = fresh;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* ---- thread names: the runtime reports the tid as the target sees it ---- */

/* The last field of "NSpid:" in a task's status (its tid in the innermost namespace). */
static int task_nstid(pid_t pid, const char *task, uint32_t *nstid, char *name, size_t len)
{
	char path[96], buf[4096], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, task);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	name[0] = '\0';
	p = strstr(buf, "Name:\t");
	if (p) {
		size_t i;

		p += 6;
		for (i = 0; p[i] && p[i] != '\n' && i + 1 < len; i++)
			name[i] = p[i];
		name[i] = '\0';
	}
	{
		/* the name's bytes (Name: above is escaped by the kernel) */
		char comm[64];
		pid_t tid;

		if (!ct_parse_pid(task, &tid) && !proc_comm(tid, comm, sizeof(comm)))
			ct_strlcpy(name, comm, len);
	}
	p = strstr(buf, "NSpid:");
	if (p) {
		char *end = strchr(p, '\n'), *last = NULL, *q;

		if (end)
			*end = '\0';
		for (q = p + 6; *q; q++)
			if ((*q == '\t' || *q == ' ') && q[1] && q[1] != '\t' && q[1] != ' ')
				last = q + 1;
		if (last && ct_parse_u32(last, 10, nstid) == 0)
			return 0;
	}
	return ct_parse_u32(task, 10, nstid);
}

static void scan_comms(struct profile_ep *e)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)e->pid);
	dir = opendir(path);
	if (!dir)
		return;
	if (!e->comms)
		e->comms = calloc(COMM_MAX, sizeof(*e->comms));
	if (!e->comms) {
		closedir(dir);
		return;
	}
	e->ncomms = 0;
	while ((d = readdir(dir)) && e->ncomms < COMM_MAX) {
		struct comm_ent *c = &e->comms[e->ncomms];

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		if (task_nstid(e->pid, d->d_name, &c->tid, c->name, sizeof(c->name)) == 0 &&
		    c->name[0])
			e->ncomms++;
	}
	closedir(dir);
}

const char *profile_ep_comm(struct profile_ep *e, uint32_t tid)
{
	uint64_t now;
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < e->ncomms; i++)
			if (e->comms[i].tid == tid)
				return e->comms[i].name;
		now = mono_ns();
		if (pass || (e->comm_scan_ns && now - e->comm_scan_ns < 1000000000ull))
			break;
		e->comm_scan_ns = now;
		scan_comms(e);
	}
	return NULL;
}

void profile_ep_free(struct profile_ep *e)
{
	if (!e)
		return;
	if (e->th_started) {
		if (!e->stop_sent && !e->done) {
			struct ipc_error rerr;

			(void)ipc_stop_tracing(&e->ep, e->session, &rerr);
		}
		e->abort = 1;
		pthread_join(e->th, NULL);
	}
	if (e->fd >= 0)
		close(e->fd);
	taskcpu_free(e->tc);
	for (int i = 0; i < PROFILE_EP_EV_N; i++)
		flame_free(e->evf[i]);
	free(e->lw);
	nt_methods_free(e->methods);
	nt_asyncflow_free(e->af);
	free(e->comms);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
}
