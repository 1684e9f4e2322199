/* SPDX-License-Identifier: MIT */
/*
 * collect.c - one heap snapshot of a live process over EventPipe.
 *
 * 1. A short session with only the sample profiler (dotnet-gcdump's "type
 *    table flush"): the runtime then logs every type again in the next one.
 * 2. The heap session: Microsoft-Windows-DotNETRuntime at level 5 with
 *    GC | Type | GCHeapDump | GCHeapCollect | GCHeapAndTypeNames
 *    (0x1980001). Enabling GCHeapCollect makes the runtime run an induced,
 *    blocking gen-2 GC that walks the heap and logs every object, reference
 *    and root. lib/live reads the stream as it comes into a heap_builder,
 *    so only the graph is held, never the stream.
 * 3. When the GC's GCEnd arrives the string objects are read from the target
 *    (strings.c) and the session is stopped.
 * A GC that came without any heap-walk event is retried once in a new
 * session (dotnet-gcdump's reader looks for another GC too; not seen on
 * .NET 10).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "common/io.h"
#include "common/log.h"
#include "heap/heap.h"
#include "live/live.h"
#include "proc/proc.h"

#define RUNTIME "Microsoft-Windows-DotNETRuntime"
#define SAMPLER "Microsoft-DotNETCore-SampleProfiler"
#define HEAP_KEYWORDS 0x1980001ull
#define ATTEMPTS 2

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int discard_sink(void *ctx, const void *buf, size_t n)
{
	return 0;
}

struct rctx {
	const struct heap_collect_opts *o;
	volatile sig_atomic_t stop; /* the heap session's own stop */
	const struct live_session_result *lres;
	struct heap_builder *b;
	struct heap_strings *strs;
	int64_t deadline, last_progress, qpc_freq;
	bool timed_out, user_stop, strings_done;
	int strings_err;
	unsigned attempt;
	/* the heap-walk GC's GCStart and the GCEnds as they arrive (stream order) */
	bool raw_started;
	uint32_t raw_count;
	uint32_t raw_ends[8];
	unsigned nraw_ends;
};

static void progress(struct rctx *c, bool force)
{
	struct heap_progress p = { 0 };
	int64_t t = now_ms();

	if (!c->o->progress || (!force && t - c->last_progress < 250))
		return;
	c->last_progress = t;
	p.bytes = c->lres->bytes;
	heap_builder_counts(c->b, &p.nodes, &p.edges);
	p.gc_ended = heap_builder_done(c->b);
	p.gc_started = p.nodes > 0 || p.gc_ended;
	p.attempt = c->attempt;
	c->o->progress(c->o->ctx, &p);
}

/* Between reads: the user's stop, the time limit, progress. */
static int tick(void *ctx)
{
	struct rctx *c = ctx;

	if (c->o->stop && *c->o->stop && !c->stop) {
		c->user_stop = true;
		c->stop = 1;
	}
	if (now_ms() > c->deadline && !c->stop) {
		c->timed_out = true;
		c->stop = 1;
	}
	progress(c, false);
	return 0;
}

static void opened(void *ctx, const struct nt_trace_info *ti)
{
	struct rctx *c = ctx;

	c->qpc_freq = ti->qpc_freq;
}

static int add_string(void *ctx, uint64_t addr, uint64_t size, uint64_t type_id)
{
	return heap_strings_add(ctx, addr, size, type_id);
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct rctx *c = ctx;
	int r;

	r = heap_builder_event(c->b, ev, c->qpc_freq);
	if (r < 0)
		return r;
	if (r == 1) {
		/* the heap walk is over: read the strings now, before objects move */
		uint64_t nodes, edges;

		heap_builder_counts(c->b, &nodes, &edges);
		if (nodes && c->o->pid > 0 && !c->strings_done) {
			c->strings_done = true;
			c->strings_err = heap_builder_nodes_of_type(c->b, "System.String", add_string,
								    c->strs);
			if (!c->strings_err)
				c->strings_err = heap_strings_read(c->strs, c->o->pid);
		}
		c->stop = 1;
		progress(c, true);
	}
	return 0;
}

/*
 * Events arrive out of time order across threads (GCStart from one GC
 * thread may come after the walk and GCEnd another wrote), and the reader
 * holds them until the stream says nothing older can come, which, once the
 * process is quiet, is the end of the session. So the session is stopped as
 * soon as both the walk GC's GCStart and its GCEnd have arrived, in
 * whichever order; the events then come out in time order to on_event.
 */
static int on_arrival(void *ctx, const struct nt_event *ev)
{
	struct rctx *c = ctx;
	const struct nt_metadata *m = ev->meta;
	unsigned i;

	if (m->provider_kind != NT_PROV_RUNTIME)
		return 0;
	if (m->event_id == 1 && !c->raw_started) {
		struct nt_gc_start gs;

		if (nt_decode_gc_start(ev->payload, ev->payload_len, m->version, ev->pointer_size, &gs) ||
		    gs.depth < 2 || gs.type == 1)
			return 0;
		c->raw_started = true;
		c->raw_count = gs.count;
	} else if (m->event_id == 2) {
		struct nt_gc_end ge;

		if (nt_decode_gc_end(ev->payload, ev->payload_len, m->version, ev->pointer_size, &ge))
			return 0;
		c->raw_ends[c->nraw_ends++ % 8] = ge.count;
	} else {
		return 0;
	}
	for (i = 0; c->raw_started && i < CT_MIN(c->nraw_ends, 8u); i++)
		if (c->raw_ends[i] == c->raw_count)
			c->stop = 1;
	return 0;
}

static void flush_types(const struct heap_collect_opts *o)
{
	const struct ipc_provider prov = { SAMPLER, 0, 4, NULL };
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct ipc_session_result res;
	struct ipc_error rerr;
	volatile sig_atomic_t stop = 0;

	cfg.providers = &prov;
	cfg.nproviders = 1;
	cfg.buffer_mb = 16;
	cfg.rundown = false;
	cfg.stackwalk = false;
	so.sink = discard_sink;
	so.stop = o->stop ? o->stop : &stop;
	so.duration_ms = 50;
	/* best effort: the heap session reports what matters */
	(void)ipc_session_run(o->ep, &cfg, &so, &res, &rerr);
}

/* Gone, or a zombie (dead but not yet reaped by its parent). */
static bool target_gone(pid_t pid)
{
	char path[64], buf[512];
	const char *rp;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/*
 * After a failure: whether the target went away. A killed process with a big
 * heap takes a while to exit (its memory is torn down), so wait up to 2 s.
 */
static bool target_gone_wait(pid_t pid)
{
	int i;

	for (i = 0; i < 40; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		if (target_gone(pid))
			return true;
		if (kill(pid, 0) != 0)
			return false;
		nanosleep(&ts, NULL);
	}
	return false;
}

static int one_session(const struct heap_collect_opts *o, unsigned attempt,
		       struct heap_builder *b, struct heap_strings *strs,
		       struct heap_collect_result *res, bool *retry)
{
	const struct ipc_provider prov = { RUNTIME, HEAP_KEYWORDS, 5, NULL };
	struct ipc_trace_config cfg = { 0 };
	const struct nt_handlers h = { .event = on_event, .arrival = on_arrival };
	struct live_session_opts lo = { 0 };
	struct live_session_result lr;
	struct rctx c = { 0 };
	int err, rerr;
	uint64_t nodes, edges;

	*retry = false;
	if (o->tee_fd > 0 && (ftruncate(o->tee_fd, 0) || lseek(o->tee_fd, 0, SEEK_SET) < 0))
		return -errno;
	cfg.providers = &prov;
	cfg.nproviders = 1;
	cfg.buffer_mb = o->buffer_mb ? o->buffer_mb : 256;
	cfg.rundown = false;
	cfg.stackwalk = false;
	/* lossless where the runtime has it (.NET 11+); elsewhere gaps are detected below */
	cfg.lossless = true;
	c.o = o;
	c.lres = &lr;
	c.b = b;
	c.strs = strs;
	c.attempt = attempt;
	c.deadline = now_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 30000);
	lo.ep = o->ep;
	lo.cfg = &cfg;
	lo.stop = &c.stop;
	lo.h = &h;
	lo.ctx = &c;
	lo.tick = tick;
	lo.tick_ms = 200;
	lo.opened = opened;
	lo.tee_fd = o->tee_fd;
	/* a bigger pipe: fewer wake-ups for hundreds of MB of events (best effort) */
	lo.pipe_bytes = 1 << 20;
	err = live_session_run(&lo, &lr);
	if (err)
		return err;
	rerr = lr.reader_err;
	if (rerr < 0) {
		uint64_t bn, be;

		heap_builder_counts(b, &bn, &be);
		if (rerr == -EFBIG &&
		    (bn >= (o->limits.max_nodes ? o->limits.max_nodes : HEAP_MAX_NODES) ||
		     be >= (o->limits.max_edges ? o->limits.max_edges : HEAP_MAX_EDGES)))
			snprintf(res->msg, sizeof(res->msg),
				 "the heap has more than the cap of %u objects or %u references (--max-objects)",
				 o->limits.max_nodes ? o->limits.max_nodes : HEAP_MAX_NODES,
				 o->limits.max_edges ? o->limits.max_edges : HEAP_MAX_EDGES);
		else if (lr.bytes)
			snprintf(res->msg, sizeof(res->msg), "the event stream broke off at byte %" PRIu64 ": %s",
				 lr.reader_offset, lr.reader_msg[0] ? lr.reader_msg : strerror(-rerr));
	}
	res->bytes += lr.bytes;
	heap_builder_counts(b, &nodes, &edges);
	heap_builder_meta(b)->lost_events += lr.stats.dropped;
	heap_builder_meta(b)->lossless = lr.session.version == 6;

	if (lr.session_err && lr.bytes == 0) {
		res->rerr = lr.rerr;
		res->stage = "session";
		if (target_gone_wait(o->pid)) {
			res->target_ended = true;
			return -ESRCH;
		}
		return lr.session_err;
	}
	if (c.strings_err) {
		snprintf(res->msg, sizeof(res->msg), "cannot read the strings of the target: %s",
			 strerror(-c.strings_err));
		res->stage = "strings";
		return c.strings_err;
	}
	if (heap_builder_done(b) && nodes == 0 && attempt < ATTEMPTS && !c.user_stop) {
		*retry = true;
		return 0;
	}
	if (!heap_builder_done(b)) {
		res->stage = "stream";
		if (c.user_stop) {
			snprintf(res->msg, sizeof(res->msg), "interrupted before the snapshot was complete");
			return -EINTR;
		}
		if (rerr == -EFBIG)
			return -EFBIG;
		if (c.timed_out && !target_gone(o->pid)) {
			snprintf(res->msg, sizeof(res->msg),
				 "no complete heap walk within %d ms (%" PRIu64 " objects seen; --timeout-s)",
				 o->timeout_ms > 0 ? o->timeout_ms : 30000, nodes);
			return -ETIMEDOUT;
		}
		if (target_gone_wait(o->pid)) {
			res->target_ended = true;
			snprintf(res->msg, sizeof(res->msg),
				 "the process ended before the snapshot was complete (%" PRIu64
				 " objects seen)", nodes);
			return -ESRCH;
		}
		if (lr.session.target_ended && !res->msg[0])
			snprintf(res->msg, sizeof(res->msg),
				 "the runtime ended the session before the snapshot was complete (%" PRIu64
				 " objects seen)", nodes);
		if (!res->msg[0] && lr.stats.order_forced)
			snprintf(res->msg, sizeof(res->msg),
				 "the session ended without the snapshot's GC in time order (the reader's window was full: %" PRIu64
				 " events went out before their order was known)", lr.stats.order_forced);
		if (!res->msg[0])
			snprintf(res->msg, sizeof(res->msg), "the session ended without the snapshot's GC");
		return rerr < 0 ? rerr : -EPROTO;
	}
	if (lr.stats.dropped || heap_builder_lost(b)) {
		res->stage = "stream";
		snprintf(res->msg, sizeof(res->msg),
			 "the runtime dropped events during the heap walk (%" PRIu64
			 " events by sequence numbers, %" PRIu64
			 " bulk blocks by index): the graph would be wrong, so none is written; try again or a bigger --buffer",
			 lr.stats.dropped, heap_builder_lost(b));
		return -EPROTO;
	}
	return 0;
}

int heap_collect(const struct heap_collect_opts *o, struct heap_graph **out,
		 struct heap_collect_result *res)
{
	struct heap_builder *b = NULL;
	struct heap_strings *strs = NULL;
	struct heap_meta meta;
	unsigned attempt;
	int err;

	*out = NULL;
	memset(res, 0, sizeof(*res));
	res->stage = "flush";
	flush_types(o);
	for (attempt = 1; attempt <= ATTEMPTS; attempt++) {
		bool retry;

		if (o->stop && *o->stop) {
			/* not one more forced GC after the user asked to stop */
			res->stage = "session";
			snprintf(res->msg, sizeof(res->msg),
				 "interrupted before the snapshot was complete (no heap session started)");
			err = -EINTR;
			break;
		}
		heap_builder_free(b);
		heap_strings_free(strs);
		b = NULL;
		strs = NULL;
		err = heap_builder_new(&b, &o->limits);
		if (!err)
			err = heap_strings_new(&strs);
		if (err)
			goto out;
		err = one_session(o, attempt, b, strs, res, &retry);
		if (err || !retry)
			break;
		ct_log(CT_LOG_INFO, "the GC came without a heap walk; trying a new session");
	}
	if (err)
		goto out;
	meta = *heap_builder_meta(b);
	res->stage = "graph";
	err = heap_builder_finish(b, out);
	if (err == -ENODATA) {
		snprintf(res->msg, sizeof(res->msg),
			 "the runtime ran the GC but reported no objects (%u sessions)", attempt);
		goto out;
	}
	if (err == -EPROTO) {
		snprintf(res->msg, sizeof(res->msg),
			 "the node and reference streams do not match (events were lost): no graph");
		goto out;
	}
	if (err)
		goto out;
	(*out)->meta.attempts = attempt > ATTEMPTS ? ATTEMPTS : attempt;
	(*out)->meta.pid = o->pid > 0 ? (uint32_t)o->pid : o->ep && o->ep->pid > 0 ? (uint32_t)o->ep->pid : meta.pid;
	if (o->ep && o->ep->pid > 0 && proc_comm(o->ep->pid, (*out)->meta.process, sizeof((*out)->meta.process)))
		(*out)->meta.process[0] = 0;
	(*out)->meta.time = (int64_t)time(NULL);
	if (o->pid > 0)
		err = heap_strings_store(strs, *out);
	if (err) {
		heap_graph_free(*out);
		*out = NULL;
	}
out:
	if (err)
		res->stage_err = err;
	heap_builder_free(b);
	heap_strings_free(strs);
	return err;
}
