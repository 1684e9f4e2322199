/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/nettrace. The samples in tests/data/nettrace/ are real
 * runtime output (how each was made and what it contains is in
 * tests/data/nettrace/README.md); the synthetic streams below are built by a
 * small writer in this file to reach cases the runtime does not produce on
 * demand (drops, uncompressed headers, V2Params, V6 tables).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "common/cursor.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "nettrace/nettrace.h"
#include "nettrace/nt_internal.h"

#define DATA CT_SRCDIR "/tests/data/nettrace/"
#define OK(x) assert_int_equal(0, (x))

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void load(const char *name, struct strbuf *sb)
{
	strbuf_init(sb, 16u << 20);
	OK(strbuf_read_file(sb, name));
}

struct key_count {
	enum nt_provider prov;
	uint32_t id, version;
	uint64_t n;
};

struct collect {
	struct key_count k[256];
	int nk;
	uint64_t events, meta_cb, sp_cb;
	int64_t last_ts;
	int stop_after; /* >0: return 1 after that many events (then again each time) */
	int fail_after; /* >0: return -ECANCELED after that many events */
	uint64_t since_stop;
};

static uint64_t count_of(const struct collect *c, enum nt_provider p, uint32_t id, uint32_t ver)
{
	int i;

	for (i = 0; i < c->nk; i++)
		if (c->k[i].prov == p && c->k[i].id == id && c->k[i].version == ver)
			return c->k[i].n;
	return 0;
}

static int collect_event(void *ctx, const struct nt_event *ev)
{
	struct collect *c = ctx;
	int i;

	for (i = 0; i < c->nk; i++)
		if (c->k[i].prov == ev->meta->provider_kind && c->k[i].id == ev->meta->event_id &&
		    c->k[i].version == ev->meta->version)
			break;
	if (i == c->nk && c->nk < (int)ARRAY_SIZE(c->k)) {
		c->k[i].prov = ev->meta->provider_kind;
		c->k[i].id = ev->meta->event_id;
		c->k[i].version = ev->meta->version;
		c->k[i].n = 0;
		c->nk++;
	}
	if (i < (int)ARRAY_SIZE(c->k))
		c->k[i].n++;
	c->events++;
	c->last_ts = ev->timestamp;
	if (c->fail_after && c->events == (uint64_t)c->fail_after)
		return -ECANCELED;
	if (c->stop_after && ++c->since_stop == (uint64_t)c->stop_after) {
		c->since_stop = 0;
		return 1;
	}
	return 0;
}

static int collect_meta(void *ctx, const struct nt_metadata *m)
{
	struct collect *c = ctx;

	c->meta_cb++;
	return 0;
}

static int collect_sp(void *ctx, int64_t ts)
{
	struct collect *c = ctx;

	c->sp_cb++;
	return 0;
}

static const struct nt_handlers collect_handlers = { collect_event, collect_meta, collect_sp, NULL };

/* Runs a whole in-memory stream through a fresh reader. */
static int run_mem(const void *p, size_t len, const struct nt_limits *lim,
		   const struct nt_handlers *h, void *ctx, struct nt_reader **keep)
{
	struct nt_membuf mb = { p, len, 0 };
	struct nt_reader *r;
	int ret;

	OK(nt_reader_new(&r, nt_read_mem, &mb, lim));
	ret = nt_reader_run(r, h, ctx);
	if (keep)
		*keep = r;
	else
		nt_reader_free(r);
	return ret;
}

static const struct nt_thread_stats *find_thread(struct nt_reader *r, uint64_t tid,
						 struct nt_thread_stats *ts)
{
	size_t i;

	for (i = 0; i < nt_reader_nthreads(r); i++) {
		OK(nt_reader_thread(r, i, ts));
		if (ts->thread_id == tid)
			return ts;
	}
	return NULL;
}

static const char *u8(const struct nt_str16 *s, struct strbuf *sb)
{
	strbuf_reset(sb);
	OK(nt_str16_utf8(s, sb));
	return sb->buf;
}

/* ------------------------------------------------------------------------ */
/* runtime-jit-samples.nettrace                                              */

struct jit_ctx {
	struct nt_methods *methods;
	int pass;
	struct strbuf sb;
	int exceptions;
	char exc_type[2][64], exc_msg[2][64];
	uint32_t exc_hr[2], exc_frames[2];
	char exc_frame_name[2][3][96];
	uint64_t samples, samples_external, samples_managed, frames, resolved;
	uint64_t leaf_spinhot, main_on_stack;
	uint64_t per_thread[5];
	uint8_t exc_payload[512];
	uint32_t exc_len;
};

static const uint64_t jit_threads[5] = { 25875, 25885, 25886, 25887, 25888 };

static int jit_event(void *ctx, const struct nt_event *ev)
{
	struct jit_ctx *j = ctx;
	const struct nt_metadata *m = ev->meta;
	uint32_t i;

	if (j->pass == 0) {
		int r = nt_methods_add_event(j->methods, ev);

		assert_true(r >= 0);
		if (r)
			assert_true(m->event_id == 143 && m->provider_kind == NT_PROV_RUNTIME);
		return 0;
	}
	if (m->provider_kind == NT_PROV_RUNTIME && m->event_id == 80) {
		struct nt_exception e;
		int k = j->exceptions++;

		assert_true(k < 2);
		OK(nt_decode_exception(ev->payload, ev->payload_len, m->version, ev->pointer_size,
				       &e));
		ct_strlcpy(j->exc_type[k], u8(&e.type, &j->sb), sizeof(j->exc_type[k]));
		ct_strlcpy(j->exc_msg[k], u8(&e.message, &j->sb), sizeof(j->exc_msg[k]));
		j->exc_hr[k] = e.hresult;
		j->exc_frames[k] = ev->nframes;
		for (i = 0; i < ev->nframes && i < 3; i++) {
			const char *n = nt_methods_lookup(j->methods,
							  i ? ev->stack[i] - 1 : ev->stack[i]);

			ct_strlcpy(j->exc_frame_name[k][i], n ? n : "?",
				   sizeof(j->exc_frame_name[k][i]));
		}
		if (!k) {
			assert_true(ev->payload_len <= sizeof(j->exc_payload));
			memcpy(j->exc_payload, ev->payload, ev->payload_len);
			j->exc_len = ev->payload_len;
		}
	}
	if (m->provider_kind == NT_PROV_SAMPLEPROFILER) {
		uint32_t type;

		assert_int_equal(0, m->event_id);
		OK(nt_decode_thread_sample(ev->payload, ev->payload_len, m->version,
					   ev->pointer_size, &type));
		j->samples++;
		j->samples_external += type == NT_SAMPLE_EXTERNAL;
		j->samples_managed += type == NT_SAMPLE_MANAGED;
		for (i = 0; i < ARRAY_SIZE(jit_threads); i++)
			if (ev->thread_id == jit_threads[i])
				j->per_thread[i]++;
		for (i = 0; i < ev->nframes; i++) {
			const char *n = nt_methods_lookup(j->methods,
							  i ? ev->stack[i] - 1 : ev->stack[i]);

			j->frames++;
			if (!n)
				continue;
			j->resolved++;
			if (!i && !strcmp(n, "ClrtapSample.Burner::SpinHot"))
				j->leaf_spinhot++;
			if (!strcmp(n, "ClrtapSample.Program::Main"))
				j->main_on_stack++;
		}
	}
	return 0;
}

static void test_jit_samples(void **state)
{
	struct strbuf f;
	struct collect c = { 0 };
	struct jit_ctx j;
	struct nt_reader *r;
	const struct nt_trace_info *ti;
	struct nt_thread_stats ts;
	struct nt_stats st;
	struct nt_handlers jh = { jit_event, NULL, NULL, NULL };
	struct nt_exception e;
	uint32_t len;

	load(DATA "runtime-jit-samples.nettrace", &f);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &collect_handlers, &c, &r));

	ti = nt_reader_info(r);
	assert_int_equal(5, ti->format);
	assert_int_equal(25875, ti->pid);
	assert_int_equal(2, ti->ncpu);
	assert_int_equal(8, ti->pointer_size);
	assert_int_equal(1000000000, ti->qpc_freq);
	assert_int_equal(1000000, ti->sampling_ns);
	assert_int_equal(2026, ti->sync_utc[0]);
	assert_int_equal(11, ti->sync_utc[1]);
	assert_int_equal(22, ti->sync_utc[3]);
	assert_int_equal(7, ti->sync_utc[4]);
	assert_int_equal(35, ti->sync_utc[5]);
	assert_int_equal(55, ti->sync_utc[6]);

	assert_int_equal(662, c.events);
	assert_int_equal(11, c.meta_cb);
	assert_int_equal(1, c.sp_cb);
	assert_int_equal(514, count_of(&c, NT_PROV_SAMPLEPROFILER, 0, 0));
	assert_int_equal(45, count_of(&c, NT_PROV_RUNTIME, 143, 1));
	assert_int_equal(1, count_of(&c, NT_PROV_RUNTIME, 143, 2));
	assert_int_equal(46, count_of(&c, NT_PROV_RUNTIME, 145, 1));
	assert_int_equal(46, count_of(&c, NT_PROV_RUNTIME, 146, 0));
	assert_int_equal(2, count_of(&c, NT_PROV_RUNTIME, 80, 1));
	assert_int_equal(2, count_of(&c, NT_PROV_RUNTIME, 250, 0));
	assert_int_equal(2, count_of(&c, NT_PROV_RUNTIME, 251, 0));
	assert_int_equal(2, count_of(&c, NT_PROV_RUNTIME, 256, 0));
	assert_int_equal(1, count_of(&c, NT_PROV_RUNTIME, 187, 0));
	assert_int_equal(1, count_of(&c, NT_PROV_EVENTPIPE, 1, 1));

	nt_reader_stats(r, &st);
	assert_int_equal(662, st.events);
	assert_int_equal(11, st.blocks);
	assert_int_equal(11, st.metadata);
	assert_int_equal(80, st.stacks);
	assert_int_equal(1, st.seqpoints);
	assert_int_equal(0, st.dropped);
	assert_int_equal(4, nt_reader_nthreads(r));
	assert_non_null(find_thread(r, 25882, &ts)); /* the sampler thread */
	assert_int_equal(514, ts.events);
	assert_int_equal(514, ts.last_seq);
	assert_int_equal(0, ts.dropped);
	assert_non_null(find_thread(r, 25875, &ts));
	assert_int_equal(130, ts.events);
	assert_int_equal(-ENOENT, nt_reader_thread(r, 4, &ts));
	assert_int_equal(0, nt_reader_error(r, NULL, NULL));
	assert_int_equal(f.len, nt_reader_offset(r));
	/* metadata ids start at 1 and a lookup by id works */
	assert_non_null(nt_reader_metadata(r, 1));
	assert_null(nt_reader_metadata(r, 12));
	nt_reader_free(r);

	/* two passes: method ranges first, then exceptions and samples */
	memset(&j, 0, sizeof(j));
	strbuf_init(&j.sb, 4096);
	OK(nt_methods_new(&j.methods, 0, 0));
	for (j.pass = 0; j.pass < 2; j.pass++)
		assert_int_equal(0, run_mem(f.buf, f.len, NULL, &jh, &j, NULL));
	assert_int_equal(46, nt_methods_count(j.methods));

	assert_int_equal(2, j.exceptions);
	assert_string_equal("System.InvalidOperationException", j.exc_type[0]);
	assert_string_equal("clrtap sample failure 1", j.exc_msg[0]);
	assert_string_equal("System.InvalidOperationException", j.exc_type[1]);
	assert_string_equal("clrtap sample failure 2", j.exc_msg[1]);
	assert_int_equal(0x80131509, j.exc_hr[0]);
	assert_int_equal(3, j.exc_frames[0]);
	assert_string_equal("ClrtapSample.Burner::ThrowOne", j.exc_frame_name[0][1]);
	assert_string_equal("ClrtapSample.Program::Main", j.exc_frame_name[0][2]);

	assert_int_equal(514, j.samples);
	assert_int_equal(214, j.samples_external);
	assert_int_equal(300, j.samples_managed);
	assert_int_equal(144, j.per_thread[0]);
	assert_int_equal(68, j.per_thread[1]);
	assert_int_equal(103, j.per_thread[2]);
	assert_int_equal(100, j.per_thread[3]);
	assert_int_equal(99, j.per_thread[4]);
	assert_int_equal(2162, j.frames);
	assert_int_equal(444, j.resolved);
	assert_int_equal(30, j.leaf_spinhot);
	assert_true(j.main_on_stack > 0);

	/* the exception decoder is bounds-checked at every length */
	for (len = 0; len < j.exc_len; len++)
		assert_int_equal(-EBADMSG, nt_decode_exception(j.exc_payload, len, 1, 8, &e));
	OK(nt_decode_exception(j.exc_payload, j.exc_len, 1, 8, &e));
	assert_int_equal(-EINVAL, nt_decode_exception(j.exc_payload, j.exc_len, 1, 3, &e));

	nt_methods_free(j.methods);
	strbuf_release(&j.sb);
	strbuf_release(&f);
}

/* ------------------------------------------------------------------------ */
/* runtime-gc-contention.nettrace                                            */

struct gc_ctx {
	int gc_start, gc_end, triggered, heap_stats, alloc, alloc_large, byte_arrays;
	int suspend, restart, cstart, cstop, tp_start, tp_wait, tp_sample, tp_adjust;
	uint32_t start_counts[4], end_counts[4], depth[4], reason[4], type[4];
	uint64_t gen1_first, poh_first, loh_alloc_size;
	double cstop_total_ns;
	uint64_t lock_id;
	uint32_t adj_new, adj_reason;
	struct strbuf sb;
};

static int gc_event(void *ctx, const struct nt_event *ev)
{
	struct gc_ctx *g = ctx;
	const struct nt_metadata *m = ev->meta;
	const void *p = ev->payload;
	uint32_t n = ev->payload_len, v = m->version, ps = ev->pointer_size;

	if (m->provider_kind != NT_PROV_RUNTIME)
		return 0;
	switch (m->event_id) {
	case 1: {
		struct nt_gc_start s;

		OK(nt_decode_gc_start(p, n, v, ps, &s));
		g->start_counts[g->gc_start] = s.count;
		g->depth[g->gc_start] = s.depth;
		g->reason[g->gc_start] = s.reason;
		g->type[g->gc_start] = s.type;
		g->gc_start++;
		break;
	}
	case 2: {
		struct nt_gc_end e;

		OK(nt_decode_gc_end(p, n, v, ps, &e));
		g->end_counts[g->gc_end++] = e.count;
		assert_int_equal(2, e.depth);
		break;
	}
	case 35: {
		struct nt_gc_triggered t;

		OK(nt_decode_gc_triggered(p, n, v, ps, &t));
		assert_int_equal(1, t.reason); /* Induced */
		g->triggered++;
		break;
	}
	case 4: {
		struct nt_gc_heap_stats h;

		OK(nt_decode_gc_heap_stats(p, n, v, ps, &h));
		assert_int_equal(2, v);
		if (!g->heap_stats) {
			g->gen1_first = h.gen_size[1];
			g->poh_first = h.gen_size[4];
		}
		g->heap_stats++;
		break;
	}
	case 10: {
		struct nt_gc_alloc_tick a;

		assert_int_equal(4, v);
		OK(nt_decode_gc_alloc_tick(p, n, v, ps, &a));
		g->alloc++;
		strbuf_reset(&g->sb);
		OK(nt_str16_utf8(&a.type_name, &g->sb));
		if (!strcmp(g->sb.buf, "System.Byte[]"))
			g->byte_arrays++;
		if (a.kind == 1) {
			g->alloc_large++;
			g->loh_alloc_size = a.object_size;
		}
		break;
	}
	case 9: {
		struct nt_suspend_ee s;

		OK(nt_decode_suspend_ee(p, n, v, ps, &s));
		assert_int_equal(1, s.reason); /* SuspendForGC */
		g->suspend++;
		break;
	}
	case 3: {
		struct nt_suspend_ee s;

		OK(nt_decode_restart_ee(p, n, v, ps, &s));
		g->restart++;
		break;
	}
	case 81: {
		struct nt_contention c;

		OK(nt_decode_contention_start(p, n, v, ps, &c));
		assert_int_equal(27, n);
		assert_int_equal(0, c.flags);
		if (!g->cstart)
			g->lock_id = c.lock_id;
		assert_int_equal(g->lock_id, c.lock_id); /* always the same Monitor */
		g->cstart++;
		break;
	}
	case 91: {
		struct nt_contention c;

		OK(nt_decode_contention_stop(p, n, v, ps, &c));
		g->cstop_total_ns += c.duration_ns;
		g->cstop++;
		break;
	}
	case 50:
	case 57: {
		struct nt_tp_worker w;

		OK(nt_decode_tp_worker(p, n, v, ps, &w));
		if (m->event_id == 50)
			g->tp_start++;
		else
			g->tp_wait++;
		break;
	}
	case 54: {
		struct nt_tp_adjust a;

		OK(nt_decode_tp_adjust_sample(p, n, v, ps, &a));
		g->tp_sample++;
		break;
	}
	case 55: {
		struct nt_tp_adjust a;

		OK(nt_decode_tp_adjust(p, n, v, ps, &a));
		g->adj_new = a.new_count;
		g->adj_reason = a.reason;
		g->tp_adjust++;
		break;
	}
	default:
		break;
	}
	return 0;
}

static void test_gc_contention(void **state)
{
	struct strbuf f;
	struct gc_ctx g;
	struct collect c = { 0 };
	struct nt_handlers h = { gc_event, NULL, NULL, NULL };
	int fd;
	struct nt_reader *r;

	load(DATA "runtime-gc-contention.nettrace", &f);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &collect_handlers, &c, NULL));
	assert_int_equal(179, c.events);
	assert_int_equal(34, c.meta_cb);

	memset(&g, 0, sizeof(g));
	strbuf_init(&g.sb, 4096);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &h, &g, NULL));
	assert_int_equal(2, g.gc_start);
	assert_int_equal(2, g.gc_end);
	assert_int_equal(2, g.triggered);
	assert_int_equal(2, g.heap_stats);
	assert_int_equal(1, g.start_counts[0]);
	assert_int_equal(2, g.start_counts[1]);
	assert_int_equal(1, g.end_counts[0]);
	assert_int_equal(2, g.end_counts[1]);
	assert_int_equal(2, g.depth[0]);
	assert_int_equal(1, g.reason[0]); /* Induced */
	assert_int_equal(0, g.type[0]);   /* blocking */
	assert_int_equal(295288, g.gen1_first);
	assert_int_equal(8184, g.poh_first);
	assert_int_equal(48, g.alloc);
	assert_int_equal(41, g.byte_arrays);
	assert_int_equal(1, g.alloc_large);
	assert_int_equal(100032, g.loh_alloc_size);
	assert_int_equal(2, g.suspend);
	assert_int_equal(2, g.restart);
	assert_int_equal(3, g.cstart);
	assert_int_equal(3, g.cstop);
	assert_true(g.cstop_total_ns > 1e6);
	assert_int_equal(2, g.tp_start);
	assert_int_equal(4, g.tp_wait);
	assert_int_equal(1, g.tp_sample);
	assert_int_equal(1, g.tp_adjust);
	assert_int_equal(2, g.adj_new);
	assert_int_equal(1, g.adj_reason);
	strbuf_release(&g.sb);

	/* the same file through a file descriptor */
	memset(&c, 0, sizeof(c));
	fd = open(DATA "runtime-gc-contention.nettrace", O_RDONLY);
	assert_true(fd >= 0);
	OK(nt_reader_new(&r, nt_read_fd, &fd, NULL));
	assert_int_equal(0, nt_reader_run(r, &collect_handlers, &c));
	assert_int_equal(179, c.events);
	assert_int_equal(0, nt_reader_run(r, &collect_handlers, &c)); /* done stays done */
	assert_int_equal(179, c.events);
	nt_reader_free(r);
	close(fd);
	strbuf_release(&f);
}

/* ------------------------------------------------------------------------ */
/* eventsource-counters.nettrace (and its V6 re-encoding)                    */

struct es_ctx {
	struct strbuf sb, csb, walk;
	int counters, mean, sum, work, shape, ds_event, process_info, labelled;
	int iter_sum;
	bool saw_exc_count, saw_jitted, saw_ws;
	double exc_count, jitted, ws;
	char ws_units[8];
	int shape_x_sum, shape_y_sum;
	int args_seen;
	char cmdline[160], os[16], arch[16];
};

struct walk_ctx {
	struct es_ctx *e;
	const char *event;
	char last_key[32];
	struct strbuf *sb;
};

static int es_walk(void *ctx, const struct nt_value *v)
{
	struct walk_ctx *w = ctx;
	struct es_ctx *e = w->e;
	const char *n = v->field->name;

	if (v->kind != NT_V_SCALAR)
		return 0;
	if (!strcmp(w->event, "WorkStart") && !strcmp(n, "iteration")) {
		assert_int_equal(NT_T_I32, v->field->type);
		e->iter_sum += (int)v->i;
	} else if (!strcmp(w->event, "Shape")) {
		assert_int_equal(v->field->type == NT_T_STRING ? 1 : 2, v->depth);
		if (!strcmp(n, "X"))
			e->shape_x_sum += (int)v->i;
		else if (!strcmp(n, "Y"))
			e->shape_y_sum += (int)v->i;
		else if (!strcmp(n, "Name"))
			assert_string_equal("clrtap", u8(&v->str, w->sb));
	} else if (!strcmp(w->event, "Event")) {
		if (!strcmp(n, "Key")) {
			ct_strlcpy(w->last_key, u8(&v->str, w->sb), sizeof(w->last_key));
			assert_int_equal(2, v->depth);
		} else if (!strcmp(n, "Value")) {
			u8(&v->str, w->sb);
			if (!strcmp(w->last_key, "Phase"))
				assert_string_equal("main", w->sb->buf);
			e->args_seen++;
		} else if (!strcmp(n, "SourceName")) {
			assert_string_equal("Clrtap.Listener", u8(&v->str, w->sb));
		} else if (!strcmp(n, "EventName")) {
			assert_string_equal("Tick", u8(&v->str, w->sb));
		}
	} else if (!strcmp(w->event, "ProcessInfo")) {
		strbuf_reset(w->sb);
		OK(nt_value_format(v, w->sb));
		if (!strcmp(n, "CommandLine"))
			ct_strlcpy(e->cmdline, w->sb->buf, sizeof(e->cmdline));
		else if (!strcmp(n, "OSInformation"))
			ct_strlcpy(e->os, w->sb->buf, sizeof(e->os));
		else if (!strcmp(n, "ArchInformation"))
			ct_strlcpy(e->arch, w->sb->buf, sizeof(e->arch));
	}
	return 0;
}

static int es_event(void *ctx, const struct nt_event *ev)
{
	struct es_ctx *e = ctx;
	const struct nt_metadata *m = ev->meta;
	struct walk_ctx w = { e, m->event_name, "", &e->walk };

	if (!strcmp(m->event_name, "EventCounters")) {
		struct nt_counter c;

		assert_string_equal("System.Runtime", m->provider);
		OK(nt_counter_decode(m, ev->payload, ev->payload_len, ev->pointer_size, &c,
				     &e->csb));
		e->counters++;
		if (c.is_rate) {
			e->sum++;
			assert_string_equal("Sum", c.counter_type);
		} else {
			e->mean++;
			assert_string_equal("Mean", c.counter_type);
		}
		assert_true(c.interval_sec > 0.9 && c.interval_sec < 1.5);
		if (!strcmp(c.name, "exception-count")) {
			e->saw_exc_count = true;
			e->exc_count = c.value;
			assert_string_equal("Exception Count", c.display_name);
		} else if (!strcmp(c.name, "methods-jitted-count")) {
			e->saw_jitted = true;
			e->jitted = c.value;
		} else if (!strcmp(c.name, "working-set")) {
			e->saw_ws = true;
			e->ws = c.value;
			ct_strlcpy(e->ws_units, c.units, sizeof(e->ws_units));
			assert_string_equal("Working Set", c.display_name);
		}
		return 0;
	}
	{
		struct nt_counter c;

		assert_int_equal(-ENOENT, nt_counter_decode(m, ev->payload, ev->payload_len, 8, &c,
							    &e->csb));
	}
	if (!strcmp(m->event_name, "WorkStart")) {
		e->work++;
		assert_int_equal(1, m->event_id);
		assert_true(m->flags & NT_META_HAS_OPCODE);
		assert_int_equal(1, m->opcode); /* Start */
		assert_int_equal(4, m->level);
		assert_int_equal(0xf00000000000ULL, m->keywords);
		assert_int_equal(2, m->nfields);
		assert_string_equal("label", m->fields[1].name);
		assert_int_equal(NT_T_STRING, m->fields[1].type);
		if (ev->activity_id) {
			static const uint8_t zero[16];

			if (memcmp(ev->activity_id, zero, 16))
				e->labelled++;
		}
	} else if (!strcmp(m->event_name, "Shape")) {
		e->shape++;
		assert_int_equal(1, m->nfields);
		assert_string_equal("", m->fields[0].name);
		assert_int_equal(NT_T_OBJECT, m->fields[0].type);
		assert_int_equal(2, m->fields[0].nfields);
		assert_string_equal("Point", m->fields[0].fields[1].name);
		assert_int_equal(2, m->fields[0].fields[1].nfields);
	} else if (!strcmp(m->event_name, "Event")) {
		const struct nt_field *a;

		e->ds_event++;
		assert_string_equal("Microsoft-Diagnostics-DiagnosticSource", m->provider);
		assert_int_equal(3, m->nfields);
		a = &m->fields[2];
		assert_string_equal("Arguments", a->name);
		assert_int_equal(NT_T_ARRAY, a->type);
		assert_non_null(a->elem);
		assert_int_equal(NT_T_OBJECT, a->elem->type);
		assert_int_equal(2, a->elem->nfields);
		assert_string_equal("Key", a->elem->fields[0].name);
		assert_string_equal("Value", a->elem->fields[1].name);
	} else if (!strcmp(m->event_name, "ProcessInfo")) {
		e->process_info++;
		assert_int_equal(NT_PROV_EVENTPIPE, m->provider_kind);
		assert_int_equal(1, m->event_id);
	}
	OK(nt_payload_walk(m, ev->payload, ev->payload_len, ev->pointer_size, es_walk, &w));
	return 0;
}

static void check_eventsource(const char *file, unsigned format)
{
	struct strbuf f;
	struct es_ctx e;
	struct nt_handlers h = { es_event, NULL, NULL, NULL };
	struct nt_reader *r;

	load(file, &f);
	memset(&e, 0, sizeof(e));
	strbuf_init(&e.sb, 4096);
	strbuf_init(&e.csb, 4096);
	strbuf_init(&e.walk, 4096);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &h, &e, &r));
	assert_int_equal(format, nt_reader_info(r)->format);
	assert_int_equal(25982, nt_reader_info(r)->pid);
	nt_reader_free(r);

	assert_int_equal(27, e.counters);
	assert_int_equal(18, e.mean);
	assert_int_equal(9, e.sum);
	assert_true(e.saw_exc_count && e.saw_jitted && e.saw_ws);
	assert_true(e.exc_count == 3.0);
	assert_true(e.jitted == 133.0);
	assert_true(e.ws > 50.42 && e.ws < 50.43);
	assert_string_equal("MB", e.ws_units);
	assert_int_equal(12, e.work);
	assert_int_equal(78, e.iter_sum); /* iterations 1..12 */
	assert_int_equal(12, e.shape);
	assert_int_equal(78, e.shape_x_sum);
	assert_int_equal(-78, e.shape_y_sum);
	assert_int_equal(12, e.ds_event);
	assert_int_equal(24, e.args_seen); /* Iteration and Phase in each */
	assert_int_equal(1, e.process_info);
	assert_string_equal("/tmp/ntwork/app/bin/Release/net10.0/app "
			    "/tmp/ntwork/app/bin/Release/net10.0/app.dll 1.2",
			    e.cmdline);
	assert_string_equal("Linux", e.os);
	assert_string_equal("x64", e.arch);
	/* no activity ids: EventSource only sets them for Start events while the
	 * TPL provider (activity tracking) is enabled, and it was not */
	assert_int_equal(0, e.labelled);
	strbuf_release(&e.sb);
	strbuf_release(&e.csb);
	strbuf_release(&e.walk);
	strbuf_release(&f);
}

static void test_eventsource_counters(void **state)
{
	struct strbuf f;
	struct collect c = { 0 };
	struct nt_reader *r;
	const struct nt_metadata *m;

	check_eventsource(DATA "eventsource-counters.nettrace", 5);

	load(DATA "eventsource-counters.nettrace", &f);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &collect_handlers, &c, &r));
	assert_int_equal(69, c.events);
	/* metadata 6 is DiagnosticSource's Event, described by a V5 V2Params tag */
	m = nt_reader_metadata(r, 6);
	assert_non_null(m);
	assert_string_equal("Event", m->event_name);
	assert_true(m->flags & NT_META_FIELDS_V2);
	/* the two EventCounters records (Mean and Sum layouts) */
	m = nt_reader_metadata(r, 7);
	assert_non_null(m);
	assert_string_equal("EventCounters", m->event_name);
	assert_int_equal(18, m->event_id);
	assert_string_equal("Payload", m->fields[0].fields[0].name);
	assert_int_equal(12, m->fields[0].fields[0].nfields);
	assert_string_equal("Mean", m->fields[0].fields[0].fields[2].name);
	assert_int_equal(NT_T_F64, m->fields[0].fields[0].fields[2].type);
	assert_int_equal(NT_T_F32, m->fields[0].fields[0].fields[7].type);
	m = nt_reader_metadata(r, 8);
	assert_non_null(m);
	assert_string_equal("Increment", m->fields[0].fields[0].fields[3].name);
	nt_reader_free(r);
	strbuf_release(&f);
}

static void test_v6_eventsource_counters(void **state)
{
	check_eventsource(DATA "v6-eventsource-counters.nettrace", 6);
}

/* ------------------------------------------------------------------------ */
/* ipc-rundown.nettrace.gz: a stream read over IPC, with an end rundown      */

static ssize_t gz_read(void *ctx, void *buf, size_t len)
{
	int n = gzread((gzFile)ctx, buf, (unsigned)CT_MIN(len, (size_t)INT_MAX));

	return n < 0 ? -EIO : n;
}

struct rd_ctx {
	struct nt_methods *methods;
	int pass;
	uint64_t dcend_v1, dcend_v2, module_dcend, samples, frames, resolved, leaf_spinhot;
	bool saw_app_dll, saw_r2r_method;
	struct strbuf sb;
};

static int rd_event(void *ctx, const struct nt_event *ev)
{
	struct rd_ctx *d = ctx;
	const struct nt_metadata *m = ev->meta;
	uint32_t i;

	if (d->pass == 0) {
		int r = nt_methods_add_event(d->methods, ev);

		assert_true(r >= 0);
		if (m->provider_kind == NT_PROV_RUNDOWN && m->event_id == 144) {
			struct nt_method_load ml;

			assert_int_equal(1, r);
			OK(nt_decode_method_load(ev->payload, ev->payload_len, m->version, 8, &ml));
			if (m->version == 1)
				d->dcend_v1++;
			else
				d->dcend_v2++;
			if (!(ml.flags & 0x8))
				d->saw_r2r_method = true; /* not jitted: precompiled code */
		}
		if (m->provider_kind == NT_PROV_RUNDOWN && m->event_id == 154) {
			struct nt_module_load ml;

			OK(nt_decode_module_load(ev->payload, ev->payload_len, m->version, 8, &ml));
			assert_int_equal(2, m->version);
			d->module_dcend++;
			u8(&ml.il_path, &d->sb);
			if (!strcmp(d->sb.buf, "/tmp/ntwork/app/bin/Release/net10.0/app.dll"))
				d->saw_app_dll = true;
		}
		return 0;
	}
	if (m->provider_kind != NT_PROV_SAMPLEPROFILER)
		return 0;
	d->samples++;
	for (i = 0; i < ev->nframes; i++) {
		const char *n = nt_methods_lookup(d->methods, i ? ev->stack[i] - 1 : ev->stack[i]);

		d->frames++;
		if (n)
			d->resolved++;
		if (!i && n && !strcmp(n, "ClrtapSample.Burner::SpinHot"))
			d->leaf_spinhot++;
	}
	return 0;
}

static void test_ipc_rundown(void **state)
{
	struct rd_ctx d;
	struct nt_handlers h = { rd_event, NULL, NULL, NULL };

	memset(&d, 0, sizeof(d));
	strbuf_init(&d.sb, 4096);
	OK(nt_methods_new(&d.methods, 0, 0));
	for (d.pass = 0; d.pass < 2; d.pass++) {
		gzFile gz = gzopen(DATA "ipc-rundown.nettrace.gz", "rb");
		struct nt_reader *r;

		assert_non_null(gz);
		OK(nt_reader_new(&r, gz_read, gz, NULL));
		assert_int_equal(0, nt_reader_run(r, &h, &d));
		assert_int_equal(26036, nt_reader_info(r)->pid);
		assert_int_equal(303070, nt_reader_offset(r));
		nt_reader_free(r);
		gzclose(gz);
	}
	assert_int_equal(1040, d.dcend_v1);
	assert_int_equal(57, d.dcend_v2);
	assert_int_equal(12, d.module_dcend);
	assert_true(d.saw_app_dll);
	assert_true(d.saw_r2r_method);
	assert_int_equal(1097, nt_methods_count(d.methods));
	assert_int_equal(1259, d.samples);
	assert_int_equal(4861, d.frames);
	assert_int_equal(4861, d.resolved);
	assert_int_equal(47, d.leaf_spinhot);
	nt_methods_free(d.methods);
	strbuf_release(&d.sb);
}

/* ------------------------------------------------------------------------ */
/* Damaged input                                                             */

static void expect_damage(const char *file, int err, uint64_t events, uint64_t offset)
{
	struct strbuf f;
	struct collect c = { 0 };
	struct nt_reader *r;
	uint64_t off = 0;
	const char *msg = NULL;

	load(file, &f);
	assert_int_equal(err, run_mem(f.buf, f.len, NULL, &collect_handlers, &c, &r));
	assert_int_equal(events, c.events);
	assert_int_equal(err, nt_reader_error(r, &off, &msg));
	assert_int_equal(offset, off);
	assert_true(msg && *msg);
	/* the error is sticky */
	assert_int_equal(err, nt_reader_run(r, &collect_handlers, &c));
	assert_int_equal(events, c.events);
	nt_reader_free(r);
	strbuf_release(&f);
}

static void test_truncated(void **state)
{
	/* cut where the 4th EventBlock's header starts: every earlier event arrives */
	expect_damage(DATA "trunc-at-block.nettrace", -EBADMSG, 113, 10597);
	/* cut inside the 4th EventBlock: its complete events arrive too; the
	 * offset is the first event that is incomplete */
	expect_damage(DATA "trunc-in-block.nettrace", -EBADMSG, 137, 12323);
}

static void test_oversized(void **state)
{
	struct strbuf f;
	struct nt_limits lim;
	struct collect c = { 0 };
	struct nt_reader *r;
	uint64_t off;

	/* block size 0x7ffffff0 against the default 64 MiB cap */
	expect_damage(DATA "oversized-block.nettrace", -EFBIG, 9, 4185);
	/* a varuint32 of 6 bytes in the first header of the 2nd EventBlock */
	expect_damage(DATA "oversized-varint.nettrace", -EBADMSG, 9, 4236);

	/* caps on a valid file */
	load(DATA "runtime-jit-samples.nettrace", &f);
	nt_limits_default(&lim);
	lim.max_block = 4096;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, &collect_handlers, &c, &r));
	nt_reader_error(r, &off, NULL);
	assert_int_equal(1545, off); /* the first block over 4 KiB: a StackBlock */
	nt_reader_free(r);

	nt_limits_default(&lim);
	lim.max_metadata = 5;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_metadata_bytes = 1000;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_stacks = 10;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_frames = 4;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_stack_bytes = 256;
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_threads = 2; /* only idle threads may be evicted; these are not */
	assert_int_equal(-EFBIG, run_mem(f.buf, f.len, &lim, NULL, NULL, NULL));
	nt_limits_default(&lim);
	lim.max_fields = 2; /* too few for one record: its fields are dropped, not fatal */
	memset(&c, 0, sizeof(c));
	assert_int_equal(0, run_mem(f.buf, f.len, &lim, &collect_handlers, &c, NULL));
	assert_int_equal(662, c.events);
	strbuf_release(&f);
}

static void test_flipped(void **state)
{
	struct strbuf f;
	uint8_t *copy;
	uint32_t seed = 12345;
	int i, j;

	/* the committed variant: 64 bytes flipped at fixed positions */
	expect_damage(DATA "flipped-bytes.nettrace", -EBADMSG, 45, 6804);

	/* random flips over the three raw samples: never a crash, only clean errors */
	load(DATA "runtime-gc-contention.nettrace", &f);
	copy = malloc(f.len);
	assert_non_null(copy);
	for (i = 0; i < 3000; i++) {
		struct collect c = { 0 };
		int ret;

		memcpy(copy, f.buf, f.len);
		for (j = 0; j < 1 + i % 8; j++) {
			seed = seed * 1103515245 + 12345;
			copy[(seed >> 8) % f.len] ^= (uint8_t)(1u << ((seed >> 4) & 7));
		}
		ret = run_mem(copy, f.len, NULL, &collect_handlers, &c, NULL);
		assert_true(ret == 0 || ret == -EBADMSG || ret == -EFBIG || ret == -ENOTSUP);
		assert_true(c.events <= f.len / 2);
	}
	free(copy);
	strbuf_release(&f);
}

static void test_truncate_every_byte(void **state)
{
	struct strbuf f;
	size_t len;
	uint64_t prev = 0;

	load(DATA "eventsource-counters.nettrace", &f);
	for (len = 0; len < f.len; len++) {
		struct collect c = { 0 };
		struct nt_reader *r;
		uint64_t off;
		int ret = run_mem(f.buf, len, NULL, &collect_handlers, &c, &r);

		assert_int_equal(-EBADMSG, ret);
		nt_reader_error(r, &off, NULL);
		assert_true(off <= len);
		assert_true(c.events >= prev); /* more bytes never deliver fewer events */
		assert_true(c.events <= 69);
		prev = c.events;
		nt_reader_free(r);
	}
	assert_int_equal(69, prev); /* everything but the end tag: all events */
	strbuf_release(&f);
}

static void test_not_nettrace(void **state)
{
	static const char junk[] = "Nettrace\x15\0\0\0 not a stream at all...";
	static const uint8_t v7[] = { 'N', 'e', 't', 't', 'r', 'a', 'c', 'e', 0, 0, 0, 0,
				      7, 0, 0, 0, 0, 0, 0, 0 };
	struct nt_reader *r;
	uint64_t off = 99;

	assert_int_equal(-EBADMSG, run_mem("", 0, NULL, NULL, NULL, NULL));
	assert_int_equal(-EBADMSG, run_mem("NETTRACE........", 16, NULL, NULL, NULL, &r));
	nt_reader_error(r, &off, NULL);
	assert_int_equal(0, off);
	nt_reader_free(r);
	assert_int_equal(-EBADMSG, run_mem(junk, sizeof(junk), NULL, NULL, NULL, NULL));
	assert_int_equal(-ENOTSUP, run_mem(v7, sizeof(v7), NULL, NULL, NULL, NULL));
	assert_int_equal(-EINVAL, nt_reader_new(&r, NULL, NULL, NULL));
}

/* ------------------------------------------------------------------------ */
/* Stop / resume / abort                                                     */

static void test_stop_resume(void **state)
{
	struct strbuf f;
	struct collect c = { 0 };
	struct nt_membuf mb;
	struct nt_reader *r;
	int ret, stops = 0;

	load(DATA "runtime-jit-samples.nettrace", &f);
	mb = (struct nt_membuf){ (const uint8_t *)f.buf, f.len, 0 };
	c.stop_after = 7;
	OK(nt_reader_new(&r, nt_read_mem, &mb, NULL));
	while ((ret = nt_reader_run(r, &collect_handlers, &c)) == NT_STOPPED)
		stops++;
	assert_int_equal(0, ret);
	assert_int_equal(662, c.events);
	assert_int_equal(662 / 7, stops);
	nt_reader_free(r);

	memset(&c, 0, sizeof(c));
	c.fail_after = 100;
	mb.off = 0;
	OK(nt_reader_new(&r, nt_read_mem, &mb, NULL));
	assert_int_equal(-ECANCELED, nt_reader_run(r, &collect_handlers, &c));
	assert_int_equal(-ECANCELED, nt_reader_run(r, &collect_handlers, &c));
	assert_int_equal(100, c.events);
	nt_reader_free(r);
	strbuf_release(&f);
}

/* ------------------------------------------------------------------------ */
/* A small writer for synthetic streams                                      */

static void w_u8(struct strbuf *s, uint8_t v)
{
	OK(strbuf_add(s, &v, 1));
}

static void w_u16(struct strbuf *s, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	OK(strbuf_add(s, b, 2));
}

static void w_u32(struct strbuf *s, uint32_t v)
{
	w_u16(s, (uint16_t)v);
	w_u16(s, (uint16_t)(v >> 16));
}

static void w_u64(struct strbuf *s, uint64_t v)
{
	w_u32(s, (uint32_t)v);
	w_u32(s, (uint32_t)(v >> 32));
}

static void w_var(struct strbuf *s, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		w_u8(s, (uint8_t)(b | (v ? 0x80 : 0)));
	} while (v);
}

static void w_str16(struct strbuf *s, const char *a)
{
	while (*a)
		w_u16(s, (uint8_t)*a++);
	w_u16(s, 0);
}

static void w_str8(struct strbuf *s, const char *a)
{
	w_var(s, strlen(a));
	OK(strbuf_add(s, a, strlen(a)));
}

static void w_prologue_v5(struct strbuf *s)
{
	int i;

	OK(strbuf_add(s, "Nettrace", 8));
	w_u32(s, 20);
	OK(strbuf_add(s, "!FastSerialization.1", 20));
	w_u8(s, 5);
	w_u8(s, 5);
	w_u8(s, 1);
	w_u32(s, 4);
	w_u32(s, 4);
	w_u32(s, 5);
	OK(strbuf_add(s, "Trace", 5));
	w_u8(s, 6);
	for (i = 0; i < 8; i++)
		w_u16(s, (uint16_t)(i + 1));
	w_u64(s, 1000);    /* sync QPC */
	w_u64(s, 1000000); /* frequency */
	w_u32(s, 8);
	w_u32(s, 4242);
	w_u32(s, 3);
	w_u32(s, 1000000);
	w_u8(s, 6);
}

static void w_block_v5(struct strbuf *s, const char *name, const struct strbuf *content)
{
	w_u8(s, 5);
	w_u8(s, 5);
	w_u8(s, 1);
	w_u32(s, 2);
	w_u32(s, 2);
	w_u32(s, (uint32_t)strlen(name));
	OK(strbuf_add(s, name, strlen(name)));
	w_u8(s, 6);
	w_u32(s, (uint32_t)content->len);
	while (s->len % 4)
		w_u8(s, 0);
	OK(strbuf_add(s, content->buf, content->len));
	w_u8(s, 6);
}

static void w_blockhdr(struct strbuf *b, uint16_t flags)
{
	w_u16(b, 20);
	w_u16(b, flags);
	w_u64(b, 0);
	w_u64(b, 0);
}

struct ehdr {
	uint32_t meta, seq, proc, stack, size;
	uint64_t tid, ctid, ts;
	bool sorted;
};

/* Compressed header, V5 writer rules. */
static void w_blob(struct strbuf *b, struct ehdr *prev, const struct ehdr *h, const void *payload,
		   bool v6)
{
	struct strbuf hb = STRBUF_INIT;
	uint8_t f = 0;

	if (h->meta != prev->meta) {
		f |= 1;
		w_var(&hb, h->meta);
	}
	if (h->seq != prev->seq + (v6 || h->meta ? 1 : 0) || h->ctid != prev->ctid ||
	    h->proc != prev->proc) {
		f |= 2;
		w_var(&hb, (uint32_t)(h->seq - prev->seq - 1));
		w_var(&hb, h->ctid);
		w_var(&hb, h->proc);
	}
	if (h->tid != prev->tid) {
		f |= 4;
		w_var(&hb, h->tid);
	}
	if (h->stack != prev->stack) {
		f |= 8;
		w_var(&hb, h->stack);
	}
	w_var(&hb, h->ts - prev->ts);
	if (h->sorted)
		f |= 0x40;
	if (h->size != prev->size) {
		f |= 0x80;
		w_var(&hb, h->size);
	}
	w_u8(b, f);
	OK(strbuf_add(b, hb.buf, hb.len));
	OK(strbuf_add(b, payload, h->size));
	*prev = *h;
	strbuf_release(&hb);
}

/* V5 metadata record: one U32 field "x" (or a bad type when bad). */
static void w_meta_rec(struct strbuf *p, uint32_t id, uint32_t event_id, bool bad)
{
	w_u32(p, id);
	w_str16(p, "Synthetic-Provider");
	w_u32(p, event_id);
	w_str16(p, "Ev");
	w_u64(p, 0x10);
	w_u32(p, 1);
	w_u32(p, 4);
	w_u32(p, 1);
	w_u32(p, bad ? 99 : NT_T_U32);
	w_str16(p, "x");
}

static void w_meta_block(struct strbuf *s, const struct strbuf *rec)
{
	struct strbuf b = STRBUF_INIT;
	struct ehdr prev = { 0 }, h = { 0 };

	w_blockhdr(&b, 1);
	h.size = (uint32_t)rec->len;
	w_blob(&b, &prev, &h, rec->buf, false);
	w_block_v5(s, "MetadataBlock", &b);
	strbuf_release(&b);
}

struct frames_ctx {
	uint64_t n;
	uint32_t nframes[16];
	uint64_t leaf[16];
	uint32_t x[16];
	uint64_t tid[16];
	uint32_t seq[16];
	bool sorted[16];
	uint8_t act0[16];
};

static int frames_event(void *ctx, const struct nt_event *ev)
{
	struct frames_ctx *fc = ctx;

	if (fc->n < 16) {
		fc->nframes[fc->n] = ev->nframes;
		fc->leaf[fc->n] = ev->nframes ? ev->stack[0] : 0;
		fc->x[fc->n] = ev->payload_len >= 4 ? ct_le32(ev->payload) : 0;
		fc->tid[fc->n] = ev->thread_id;
		fc->seq[fc->n] = ev->seq;
		fc->sorted[fc->n] = ev->sorted;
		if (!fc->n && ev->activity_id)
			memcpy(fc->act0, ev->activity_id, 16);
	}
	fc->n++;
	return 0;
}

/* Builds the drops/stacks stream; the last event uses stack last_stack. */
static void build_drops(struct strbuf *s, uint32_t last_stack)
{
	struct strbuf b = STRBUF_INIT, rec = STRBUF_INIT;
	struct ehdr prev = { 0 }, h = { 0 };
	uint32_t x;

	w_prologue_v5(s);
	w_meta_rec(&rec, 1, 5, false);
	w_meta_block(s, &rec);

	/* stacks 1 (empty) and 2 (two frames) */
	w_u32(&b, 1);
	w_u32(&b, 2);
	w_u32(&b, 0);
	w_u32(&b, 16);
	w_u64(&b, 0x1111);
	w_u64(&b, 0x2222);
	w_block_v5(s, "StackBlock", &b);

	strbuf_reset(&b);
	w_blockhdr(&b, 1);
	h = (struct ehdr){ .meta = 1, .seq = 1, .tid = 7, .ctid = 7, .stack = 2, .ts = 10,
			   .size = 4 };
	x = 100;
	w_blob(&b, &prev, &h, &x, false);
	h.seq = 2, h.stack = 1, h.ts = 20, x = 101;
	w_blob(&b, &prev, &h, &x, false);
	h.seq = 5, h.ts = 30, x = 102; /* 3 and 4 lost */
	w_blob(&b, &prev, &h, &x, false);
	h.seq = 1, h.tid = 9, h.ctid = 9, h.ts = 40, x = 103;
	w_blob(&b, &prev, &h, &x, false);
	w_block_v5(s, "EventBlock", &b);

	/* a block type from the future is skipped */
	strbuf_reset(&b);
	OK(strbuf_add(&b, "whatever is in here", 19));
	w_block_v5(s, "FutureBlock", &b);

	/* sequence point: thread 7 reached 10 (5 more lost), thread 9 still at 1 */
	strbuf_reset(&b);
	w_u64(&b, 50);
	w_u32(&b, 2);
	w_u64(&b, 7);
	w_u32(&b, 10);
	w_u64(&b, 9);
	w_u32(&b, 1);
	w_block_v5(s, "SPBlock", &b);

	/* after it stack ids start again at 1 */
	strbuf_reset(&b);
	w_u32(&b, 1);
	w_u32(&b, 1);
	w_u32(&b, 8);
	w_u64(&b, 0x3333);
	w_block_v5(s, "StackBlock", &b);
	strbuf_reset(&b);
	prev = (struct ehdr){ 0 };
	w_blockhdr(&b, 1);
	h = (struct ehdr){ .meta = 1, .seq = 11, .tid = 7, .ctid = 7, .stack = last_stack,
			   .ts = 60, .size = 4 };
	x = 104;
	w_blob(&b, &prev, &h, &x, false);
	w_block_v5(s, "EventBlock", &b);
	w_u8(s, 1);
	strbuf_release(&b);
	strbuf_release(&rec);
}

static void test_synthetic_drops_and_stacks(void **state)
{
	struct strbuf s = STRBUF_INIT;
	struct frames_ctx fc = { 0 };
	struct nt_handlers fh = { frames_event, NULL, NULL, NULL };
	struct nt_reader *r;
	struct nt_thread_stats ts;
	struct nt_stats st;

	build_drops(&s, 1);
	assert_int_equal(0, run_mem(s.buf, s.len, NULL, &fh, &fc, &r));
	assert_int_equal(5, fc.n);
	assert_int_equal(2, fc.nframes[0]);
	assert_int_equal(0x1111, fc.leaf[0]);
	assert_int_equal(0, fc.nframes[1]);
	assert_int_equal(102, fc.x[2]);
	assert_int_equal(5, fc.seq[2]);
	assert_int_equal(9, fc.tid[3]);
	assert_int_equal(1, fc.nframes[4]);
	assert_int_equal(0x3333, fc.leaf[4]);
	nt_reader_stats(r, &st);
	assert_int_equal(7, st.dropped);
	assert_int_equal(1, st.seqpoints);
	assert_int_equal(7, st.blocks);
	assert_non_null(find_thread(r, 7, &ts));
	assert_int_equal(7, ts.dropped);
	assert_int_equal(11, ts.last_seq);
	assert_int_equal(4, ts.events);
	assert_non_null(find_thread(r, 9, &ts));
	assert_int_equal(0, ts.dropped);
	assert_int_equal(4242, nt_reader_info(r)->pid);
	assert_int_equal(3, nt_reader_info(r)->ncpu);
	assert_int_equal(1, nt_reader_info(r)->sync_utc[0]);
	nt_reader_free(r);

	/* the same stream but the last event uses stack 2, gone with the sequence point */
	strbuf_reset(&s);
	build_drops(&s, 2);
	memset(&fc, 0, sizeof(fc));
	assert_int_equal(-EBADMSG, run_mem(s.buf, s.len, NULL, &fh, &fc, NULL));
	assert_int_equal(4, fc.n);
	strbuf_release(&s);
}

static void test_synthetic_uncompressed(void **state)
{
	struct strbuf s = STRBUF_INIT, b = STRBUF_INIT, rec = STRBUF_INIT;
	struct frames_ctx fc = { 0 };
	struct nt_handlers fh = { frames_event, NULL, NULL, NULL };
	int i;

	w_prologue_v5(&s);
	/* metadata block with an uncompressed blob */
	w_meta_rec(&rec, 3, 9, false);
	w_blockhdr(&b, 0);
	w_u32(&b, 76 + (uint32_t)rec.len);
	w_u32(&b, 0);
	for (i = 0; i < 5; i++)
		w_u64(&b, 0);
	w_u64(&b, 0);
	w_u64(&b, 0);
	w_u64(&b, 0);
	w_u32(&b, 0);
	w_u32(&b, (uint32_t)rec.len);
	OK(strbuf_add(&b, rec.buf, rec.len));
	while (b.len % 4)
		w_u8(&b, 0);
	w_block_v5(&s, "MetadataBlock", &b);

	/* two uncompressed events; the first is not sorted (bit 31 set) */
	strbuf_reset(&b);
	w_blockhdr(&b, 0);
	for (i = 0; i < 2; i++) {
		w_u32(&b, 76 + 5);
		w_u32(&b, 3 | (i ? 0 : 0x80000000u));
		w_u32(&b, 40 + (uint32_t)i);
		w_u64(&b, 77);
		w_u64(&b, 78);
		w_u32(&b, 1);
		w_u32(&b, 0);
		w_u64(&b, 5000 + (uint64_t)i);
		w_u64(&b, 0x0807060504030201ULL);
		w_u64(&b, 0x100f0e0d0c0b0a09ULL);
		w_u64(&b, 0);
		w_u64(&b, 0);
		w_u32(&b, 5);
		w_u32(&b, 500 + (uint32_t)i);
		w_u8(&b, 0xee);
		while (b.len % 4)
			w_u8(&b, 0);
	}
	w_block_v5(&s, "EventBlock", &b);
	w_u8(&s, 1);

	assert_int_equal(0, run_mem(s.buf, s.len, NULL, &fh, &fc, NULL));
	assert_int_equal(2, fc.n);
	assert_int_equal(500, fc.x[0]);
	assert_int_equal(501, fc.x[1]);
	assert_int_equal(77, fc.tid[0]);
	assert_int_equal(41, fc.seq[1]);
	assert_false(fc.sorted[0]);
	assert_true(fc.sorted[1]);
	assert_int_equal(1, fc.act0[0]);
	assert_int_equal(16, fc.act0[15]);
	strbuf_release(&s);
	strbuf_release(&b);
	strbuf_release(&rec);
}

struct v2_ctx {
	int n;
	int64_t arr_sum;
	uint32_t arr_count;
	uint8_t a;
	char s[16];
	struct strbuf sb;
};

static int v2_walk(void *ctx, const struct nt_value *v)
{
	struct v2_ctx *c = ctx;

	c->n++;
	if (v->kind == NT_V_ARRAY_BEGIN)
		c->arr_count = v->count;
	if (v->kind != NT_V_SCALAR)
		return 0;
	if (!strcmp(v->field->name, "arr")) {
		assert_true(v->index >= 0);
		c->arr_sum += v->i;
	} else if (!strcmp(v->field->name, "a")) {
		c->a = (uint8_t)v->i;
	} else if (!strcmp(v->field->name, "s")) {
		ct_strlcpy(c->s, u8(&v->str, &c->sb), sizeof(c->s));
	}
	return 0;
}

static int v2_meta(void *ctx, const struct nt_metadata *m)
{
	const struct nt_metadata **out = ctx;

	out[m->id - 1] = m;
	return 0;
}

static void test_synthetic_v2params(void **state)
{
	struct strbuf s = STRBUF_INIT, b = STRBUF_INIT, rec = STRBUF_INIT, fld = STRBUF_INIT;
	struct strbuf pl = STRBUF_INIT;
	const struct nt_metadata *metas[4] = { 0 };
	struct nt_handlers mh = { NULL, v2_meta, NULL, NULL };
	struct nt_reader *r;
	struct ehdr prev = { 0 }, h = { 0 };
	struct v2_ctx vc;
	const struct nt_metadata *m;

	w_prologue_v5(&s);
	/* record 1: V1 count 0, opcode tag 2, an unknown tag 9, V2Params:
	 *   arr: Array of I32;  obj: Object { a: U8, s: String } */
	w_u32(&rec, 1);
	w_str16(&rec, "Synthetic-Provider");
	w_u32(&rec, 7);
	w_str16(&rec, "WithArrays");
	w_u64(&rec, 1);
	w_u32(&rec, 2);
	w_u32(&rec, 5);
	w_u32(&rec, 0);
	w_u32(&rec, 1);
	w_u8(&rec, 1);
	w_u8(&rec, 2);
	w_u32(&rec, 3);
	w_u8(&rec, 9);
	w_u8(&rec, 0xaa);
	w_u8(&rec, 0xbb);
	w_u8(&rec, 0xcc);
	/* V2 params payload */
	w_u32(&fld, 2);
	{
		struct strbuf f1 = STRBUF_INIT, f2 = STRBUF_INIT, a = STRBUF_INIT, sf = STRBUF_INIT;

		w_str16(&f1, "arr");
		w_u32(&f1, NT_T_ARRAY);
		w_u32(&f1, NT_T_I32);
		w_u32(&fld, 4 + (uint32_t)f1.len);
		OK(strbuf_add(&fld, f1.buf, f1.len));

		w_str16(&a, "a");
		w_u32(&a, NT_T_U8);
		w_str16(&sf, "s");
		w_u32(&sf, NT_T_STRING);
		w_str16(&f2, "obj");
		w_u32(&f2, NT_T_OBJECT);
		w_u32(&f2, 2);
		w_u32(&f2, 4 + (uint32_t)a.len);
		OK(strbuf_add(&f2, a.buf, a.len));
		w_u32(&f2, 4 + (uint32_t)sf.len);
		OK(strbuf_add(&f2, sf.buf, sf.len));
		w_u32(&fld, 4 + (uint32_t)f2.len);
		OK(strbuf_add(&fld, f2.buf, f2.len));
		strbuf_release(&f1);
		strbuf_release(&f2);
		strbuf_release(&a);
		strbuf_release(&sf);
	}
	w_u32(&rec, (uint32_t)fld.len);
	w_u8(&rec, 2);
	OK(strbuf_add(&rec, fld.buf, fld.len));
	w_meta_block(&s, &rec);
	/* record 2: an unknown type code in the V1 list */
	strbuf_reset(&rec);
	w_meta_rec(&rec, 2, 8, true);
	w_meta_block(&s, &rec);

	/* one event of record 1 */
	w_u16(&pl, 3);
	w_u32(&pl, 10);
	w_u32(&pl, 20);
	w_u32(&pl, (uint32_t)-5);
	w_u8(&pl, 42);
	w_str16(&pl, "hey");
	w_blockhdr(&b, 1);
	h = (struct ehdr){ .meta = 1, .seq = 1, .tid = 1, .ctid = 1, .ts = 1,
			   .size = (uint32_t)pl.len };
	w_blob(&b, &prev, &h, pl.buf, false);
	w_block_v5(&s, "EventBlock", &b);
	w_u8(&s, 1);

	assert_int_equal(0, run_mem(s.buf, s.len, NULL, &mh, metas, &r));
	m = nt_reader_metadata(r, 1);
	assert_ptr_equal(m, metas[0]);
	assert_true(m->flags & NT_META_FIELDS_V2);
	assert_true(m->flags & NT_META_HAS_OPCODE);
	assert_int_equal(2, m->opcode);
	assert_int_equal(2, m->nfields);
	assert_int_equal(NT_T_ARRAY, m->fields[0].type);
	assert_int_equal(NT_T_I32, m->fields[0].elem->type);
	assert_int_equal(NT_T_OBJECT, m->fields[1].type);
	assert_string_equal("s", m->fields[1].fields[1].name);
	memset(&vc, 0, sizeof(vc));
	strbuf_init(&vc.sb, 256);
	OK(nt_payload_walk(m, pl.buf, pl.len, 8, v2_walk, &vc));
	assert_int_equal(3, vc.arr_count);
	assert_int_equal(25, vc.arr_sum);
	assert_int_equal(42, vc.a);
	assert_string_equal("hey", vc.s);
	assert_int_equal(2 + 3 + 2 + 2, vc.n);
	/* the walk is bounds-checked: every shorter payload fails cleanly */
	{
		size_t len;

		for (len = 0; len < pl.len; len++)
			assert_int_equal(-EBADMSG,
					 nt_payload_walk(m, pl.buf, len, 8, v2_walk, &vc));
	}
	m = nt_reader_metadata(r, 2);
	assert_non_null(m);
	assert_true(m->flags & NT_META_BAD_FIELDS);
	assert_int_equal(0, m->nfields);
	assert_string_equal("Ev", m->event_name);
	nt_reader_free(r);
	strbuf_release(&vc.sb);
	strbuf_release(&s);
	strbuf_release(&b);
	strbuf_release(&rec);
	strbuf_release(&fld);
	strbuf_release(&pl);
}

/* ------------------------------------------------------------------------ */
/* V6 synthetic                                                              */

static void w_block_v6(struct strbuf *s, uint8_t kind, const struct strbuf *c)
{
	w_u32(s, (uint32_t)c->len | ((uint32_t)kind << 24));
	OK(strbuf_add(s, c->buf, c->len));
}

struct v6_ctx {
	int n;
	uint64_t tid[4], ctid[4];
	uint32_t label[4];
	bool has_act[4];
	uint8_t act1;
	int64_t vi;
	uint32_t fa_sum;
	char s[8];
	struct strbuf sb;
};

static int v6_walk(void *ctx, const struct nt_value *v)
{
	struct v6_ctx *c = ctx;

	if (v->kind != NT_V_SCALAR)
		return 0;
	if (!strcmp(v->field->name, "v"))
		c->vi = v->i;
	else if (!strcmp(v->field->name, "fa"))
		c->fa_sum += (uint32_t)v->i;
	else if (!strcmp(v->field->name, "s"))
		ct_strlcpy(c->s, u8(&v->str, &c->sb), sizeof(c->s));
	return 0;
}

static int v6_event(void *ctx, const struct nt_event *ev)
{
	struct v6_ctx *c = ctx;

	if (c->n < 4) {
		c->tid[c->n] = ev->thread_id;
		c->ctid[c->n] = ev->capture_thread_id;
		c->label[c->n] = ev->label_list;
		c->has_act[c->n] = ev->activity_id != NULL;
		if (ev->activity_id)
			c->act1 = ev->activity_id[0];
		if (!c->n)
			OK(nt_payload_walk(ev->meta, ev->payload, ev->payload_len, 8, v6_walk, c));
	}
	c->n++;
	return 0;
}

static void build_v6(struct strbuf *s, unsigned major)
{
	struct strbuf b = STRBUF_INIT, row = STRBUF_INIT, pl = STRBUF_INIT, fd = STRBUF_INIT;
	struct ehdr prev = { 0 }, h = { 0 };
	int i;

	OK(strbuf_add(s, "Nettrace", 8));
	w_u32(s, 0);
	w_u32(s, major);
	w_u32(s, 0);
	/* trace block */
	for (i = 0; i < 8; i++)
		w_u16(&b, (uint16_t)(2020 + i));
	w_u64(&b, 5);
	w_u64(&b, 1000000000);
	w_u32(&b, 8);
	w_u32(&b, 3);
	w_str8(&b, "ProcessId");
	w_str8(&b, "777");
	w_str8(&b, "HardwareThreadCount");
	w_str8(&b, "16");
	w_str8(&b, "SomethingElse");
	w_str8(&b, "x");
	w_block_v6(s, 1, &b);
	/* threads 1 -> OS tid 100, 2 -> OS tid 200 */
	strbuf_reset(&b);
	for (i = 1; i <= 2; i++) {
		strbuf_reset(&row);
		w_var(&row, (uint64_t)i);
		w_u8(&row, 1);
		w_str8(&row, "name");
		w_u8(&row, 3);
		w_var(&row, (uint64_t)i * 100);
		w_u8(&row, 2);
		w_var(&row, 777);
		w_u16(&b, (uint16_t)row.len);
		OK(strbuf_add(&b, row.buf, row.len));
	}
	w_block_v6(s, 6, &b);
	/* metadata: id 1, fields v: VarInt, fa: FixedLengthArray(U16, 2), s: String */
	strbuf_reset(&b);
	w_u16(&b, 2); /* header size (excluding itself) */
	w_u16(&b, 0xabcd);
	strbuf_reset(&row);
	w_var(&row, 1);
	w_str8(&row, "Prov6");
	w_var(&row, 12);
	w_str8(&row, "Ev6");
	w_u16(&fd, 3);
	{
		struct strbuf f = STRBUF_INIT;

		w_str8(&f, "v");
		w_u8(&f, NT_T_VARINT);
		w_u16(&fd, (uint16_t)f.len);
		OK(strbuf_add(&fd, f.buf, f.len));
		strbuf_reset(&f);
		w_str8(&f, "fa");
		w_u8(&f, NT_T_FIXEDARRAY);
		w_u8(&f, NT_T_U16);
		w_u16(&f, 2);
		w_u8(&f, 0x55); /* ignored trailing byte */
		w_u16(&fd, (uint16_t)f.len);
		OK(strbuf_add(&fd, f.buf, f.len));
		strbuf_reset(&f);
		w_str8(&f, "s");
		w_u8(&f, NT_T_STRING);
		w_u16(&fd, (uint16_t)f.len);
		OK(strbuf_add(&fd, f.buf, f.len));
		strbuf_release(&f);
	}
	OK(strbuf_add(&row, fd.buf, fd.len));
	w_u16(&row, 1 + 1 + 1 + 8 + 1 + 1 + 1 + 1);
	w_u8(&row, 1); /* opcode */
	w_u8(&row, 2);
	w_u8(&row, 3); /* keywords */
	w_u64(&row, 0x8000);
	w_u8(&row, 8); /* level */
	w_u8(&row, 4);
	w_u8(&row, 9); /* version */
	w_u8(&row, 3);
	w_u16(&b, (uint16_t)row.len);
	OK(strbuf_add(&b, row.buf, row.len));
	w_block_v6(s, 3, &b);
	/* label list 1: activity id 0x11.., list 2: a key/value only */
	strbuf_reset(&b);
	w_u32(&b, 1);
	w_u32(&b, 2);
	w_u8(&b, 0x80 | 1);
	for (i = 0; i < 16; i++)
		w_u8(&b, 0x11);
	w_u8(&b, 0x80 | 5);
	w_str8(&b, "k");
	w_str8(&b, "v");
	w_block_v6(s, 8, &b);
	/* events: on thread index 1, captured by index 2, labels 1 then 2 then 0 */
	strbuf_reset(&b);
	w_blockhdr(&b, 1);
	w_var(&pl, 5); /* zig-zag -3 */
	w_u16(&pl, 7);
	w_u16(&pl, 8);
	w_str16(&pl, "hi");
	for (i = 0; i < 3; i++) {
		struct strbuf hb = STRBUF_INIT;

		h = (struct ehdr){ .meta = 1, .seq = (uint32_t)i + 1 + (i == 2 ? 2 : 0), .tid = 1,
				   .ctid = 2, .ts = 100 + (uint64_t)i, .size = (uint32_t)pl.len };
		/* V6 header: label list id in the 0x10 slot */
		{
			uint8_t f = 0;

			if (h.meta != prev.meta) {
				f |= 1;
				w_var(&hb, h.meta);
			}
			if (h.seq != prev.seq + 1 || h.ctid != prev.ctid || h.proc != prev.proc) {
				f |= 2;
				w_var(&hb, h.seq - prev.seq - 1);
				w_var(&hb, h.ctid);
				w_var(&hb, h.proc);
			}
			if (h.tid != prev.tid) {
				f |= 4;
				w_var(&hb, h.tid);
			}
			w_var(&hb, h.ts - prev.ts);
			f |= 0x10;
			w_var(&hb, i == 0 ? 1 : i == 1 ? 2 : 0);
			if (h.size != prev.size) {
				f |= 0x80;
				w_var(&hb, h.size);
			}
			w_u8(&b, f);
			OK(strbuf_add(&b, hb.buf, hb.len));
			OK(strbuf_add(&b, pl.buf, pl.len));
			prev = h;
		}
		strbuf_release(&hb);
	}
	w_block_v6(s, 2, &b);
	/* an unknown block kind */
	strbuf_reset(&b);
	OK(strbuf_add(&b, "zz", 2));
	w_block_v6(s, 42, &b);
	/* RemoveThread: index 2 ended at sequence number 9 (4 more lost) */
	strbuf_reset(&b);
	w_var(&b, 2);
	w_var(&b, 9);
	w_block_v6(s, 7, &b);
	/* sequence point flushing threads and metadata */
	strbuf_reset(&b);
	w_u64(&b, 1000);
	w_u32(&b, 3);
	w_u32(&b, 0);
	w_block_v6(s, 4, &b);
	strbuf_reset(&b);
	w_block_v6(s, 0, &b);
	strbuf_release(&b);
	strbuf_release(&row);
	strbuf_release(&pl);
	strbuf_release(&fd);
}

static void test_synthetic_v6(void **state)
{
	struct strbuf s = STRBUF_INIT;
	struct v6_ctx c;
	struct nt_handlers h = { v6_event, NULL, NULL, NULL };
	struct nt_reader *r;
	struct nt_thread_stats ts;
	struct nt_stats st;
	const struct nt_trace_info *ti;
	size_t i;

	build_v6(&s, 6);
	memset(&c, 0, sizeof(c));
	strbuf_init(&c.sb, 64);
	assert_int_equal(0, run_mem(s.buf, s.len, NULL, &h, &c, &r));
	ti = nt_reader_info(r);
	assert_int_equal(6, ti->format);
	assert_int_equal(777, ti->pid);
	assert_int_equal(16, ti->ncpu);
	assert_int_equal(2020, ti->sync_utc[0]);
	assert_int_equal(3, c.n);
	assert_int_equal(100, c.tid[0]);
	assert_int_equal(200, c.ctid[0]);
	assert_int_equal(1, c.label[0]);
	assert_true(c.has_act[0]);
	assert_int_equal(0x11, c.act1);
	assert_false(c.has_act[1]); /* list 2 has only a key/value label */
	assert_false(c.has_act[2]);
	assert_int_equal(-3, c.vi);
	assert_int_equal(15, c.fa_sum);
	assert_string_equal("hi", c.s);
	nt_reader_stats(r, &st);
	/* seq 1, 2, then 5 (3 and 4 lost), then RemoveThread says 9 (6..9 lost) */
	assert_int_equal(6, st.dropped);
	assert_non_null(find_thread(r, 200, &ts));
	assert_int_equal(6, ts.dropped);
	assert_int_equal(3, ts.events);
	/* the sequence point flushed metadata */
	assert_null(nt_reader_metadata(r, 1));
	for (i = 0; i < nt_reader_nthreads(r); i++)
		OK(nt_reader_thread(r, i, &ts));
	nt_reader_free(r);
	strbuf_release(&c.sb);

	strbuf_reset(&s);
	build_v6(&s, 7);
	assert_int_equal(-ENOTSUP, run_mem(s.buf, s.len, NULL, NULL, NULL, NULL));
	strbuf_release(&s);
}

/* v6-synthetic.nettrace: the V6-only field types, label lists, RemoveThread */
struct seed_ctx {
	int events;
	struct strbuf vals;
	uint64_t frames;
	uint8_t act;
	const struct nt_metadata *meta;
};

static int seed_meta(void *ctx, const struct nt_metadata *m)
{
	struct seed_ctx *c = ctx;

	c->meta = m;
	return 0;
}

static int seed_walk(void *ctx, const struct nt_value *v)
{
	struct seed_ctx *c = ctx;

	if (v->kind != NT_V_SCALAR)
		return 0;
	OK(strbuf_addf(&c->vals, "%s=", v->field->name));
	OK(nt_value_format(v, &c->vals));
	OK(strbuf_addch(&c->vals, ' '));
	return 0;
}

static int seed_event(void *ctx, const struct nt_event *ev)
{
	struct seed_ctx *c = ctx;

	if (!c->events++) {
		OK(nt_payload_walk(ev->meta, ev->payload, ev->payload_len, 8, seed_walk, c));
		assert_non_null(ev->activity_id);
		c->act = ev->activity_id[0];
		assert_non_null(ev->related_activity_id);
		assert_int_equal(0xbb, ev->related_activity_id[0]);
	}
	c->frames += ev->nframes;
	return 0;
}

static void test_v6_synthetic_seed(void **state)
{
	struct strbuf f;
	struct seed_ctx c;
	struct nt_handlers h = { seed_event, seed_meta, NULL, NULL };
	struct nt_reader *r;
	struct nt_stats st;
	const struct nt_metadata *m;

	load(DATA "v6-synthetic.nettrace", &f);
	memset(&c, 0, sizeof(c));
	strbuf_init(&c.vals, 4096);
	assert_int_equal(0, run_mem(f.buf, f.len, NULL, &h, &c, &r));
	assert_int_equal(3, c.events);
	assert_string_equal("v=-3 u=300 c=Z b=true s=hi fa=1 fa=2 rl=11 rl=12 x=-1 ", c.vals.buf);
	assert_int_equal(0xaa, c.act);
	assert_int_equal(1, c.frames);
	nt_reader_stats(r, &st);
	assert_int_equal(4, st.dropped); /* RemoveThread: index 2 ended at 7, last seen 3 */
	assert_int_equal(8, st.blocks);
	/* the final sequence point (flags 3) flushed the metadata table; the
	 * record itself lives until nt_reader_free */
	assert_null(nt_reader_metadata(r, 1));
	m = c.meta;
	assert_non_null(m);
	assert_int_equal(0x10, m->keywords);
	assert_int_equal(4, m->level);
	assert_int_equal(1, m->version);
	assert_int_equal(1, m->opcode);
	assert_int_equal(4242, nt_reader_info(r)->pid);
	nt_reader_free(r);
	strbuf_release(&c.vals);
	strbuf_release(&f);
}

/* ------------------------------------------------------------------------ */
/* Symbolizer and decoders                                                   */

static void test_methods(void **state)
{
	struct nt_methods *m;

	OK(nt_methods_new(&m, 5, 0));
	OK(nt_methods_add(m, 0x1000, 0x100, "A::x"));
	OK(nt_methods_add(m, 0x2000, 0x10, "B::y"));
	assert_string_equal("A::x", nt_methods_lookup(m, 0x1000));
	assert_string_equal("A::x", nt_methods_lookup(m, 0x10ff));
	assert_null(nt_methods_lookup(m, 0x1100));
	assert_null(nt_methods_lookup(m, 0xfff));
	assert_string_equal("B::y", nt_methods_lookup(m, 0x200f));
	/* a newer version of code at an overlapping address wins */
	OK(nt_methods_add(m, 0x1080, 0x20, "C::tier1"));
	assert_string_equal("C::tier1", nt_methods_lookup(m, 0x1090));
	assert_string_equal("A::x", nt_methods_lookup(m, 0x10a0));
	assert_string_equal("A::x", nt_methods_lookup(m, 0x1010));
	/* the same range recorded twice counts once */
	OK(nt_methods_add(m, 0x2000, 0x10, "B::y"));
	assert_string_equal("B::y", nt_methods_lookup(m, 0x2000));
	assert_int_equal(3, nt_methods_count(m));
	/* re-adding the first range makes it the newest */
	OK(nt_methods_add(m, 0x1000, 0x100, "A::x"));
	assert_string_equal("A::x", nt_methods_lookup(m, 0x1090));
	OK(nt_methods_add(m, 0x3000, 0x10, "D"));
	OK(nt_methods_add(m, 0x4000, 0x10, "E"));
	assert_int_equal(-EFBIG, nt_methods_add(m, 0x5000, 0x10, "F"));
	assert_int_equal(-EINVAL, nt_methods_add(m, 0x5000, 0, "F"));
	nt_methods_free(m);
	/* the cap on name memory */
	OK(nt_methods_new(&m, 0, 12));
	OK(nt_methods_add(m, 0x1000, 0x10, "abcde"));
	OK(nt_methods_add(m, 0x2000, 0x10, "abcde")); /* interned: no new bytes */
	OK(nt_methods_add(m, 0x3000, 0x10, "fghij"));
	assert_int_equal(-EFBIG, nt_methods_add(m, 0x4000, 0x10, "k"));
	nt_methods_free(m);
}

static void test_decoder_bounds(void **state)
{
	uint8_t buf[256];
	struct nt_gc_start gs;
	struct nt_gc_end ge;
	struct nt_gc_heap_stats hs;
	struct nt_gc_alloc_tick at;
	struct nt_method_load ml;
	struct nt_module_load mo;
	struct nt_contention ct;
	struct nt_tp_worker tw;
	struct nt_tp_adjust ta;
	struct nt_suspend_ee se;
	struct nt_gc_triggered gt;
	uint32_t t;
	size_t n;

	memset(buf, 0x41, sizeof(buf)); /* no NUL units: every string is unterminated */
	for (n = 0; n < sizeof(buf); n++) {
		assert_int_equal(n >= 26 ? 0 : -EBADMSG, nt_decode_gc_start(buf, n, 2, 8, &gs));
		assert_int_equal(n >= 10 ? 0 : -EBADMSG, nt_decode_gc_end(buf, n, 1, 8, &ge));
		assert_int_equal(n >= 110 ? 0 : -EBADMSG,
				 nt_decode_gc_heap_stats(buf, n, 2, 8, &hs));
		assert_int_equal(-EBADMSG, nt_decode_gc_alloc_tick(buf, n, 4, 8, &at));
		assert_int_equal(-EBADMSG, nt_decode_method_load(buf, n, 2, 8, &ml));
		assert_int_equal(-EBADMSG, nt_decode_module_load(buf, n, 2, 8, &mo));
		assert_int_equal(n >= 27 ? 0 : -EBADMSG,
				 nt_decode_contention_start(buf, n, 2, 8, &ct));
		assert_int_equal(n >= 11 ? 0 : -EBADMSG,
				 nt_decode_contention_stop(buf, n, 1, 8, &ct));
		assert_int_equal(n >= 10 ? 0 : -EBADMSG, nt_decode_tp_worker(buf, n, 0, 8, &tw));
		assert_int_equal(n >= 10 ? 0 : -EBADMSG,
				 nt_decode_tp_adjust_sample(buf, n, 0, 8, &ta));
		assert_int_equal(n >= 18 ? 0 : -EBADMSG, nt_decode_tp_adjust(buf, n, 0, 8, &ta));
		assert_int_equal(n >= 10 ? 0 : -EBADMSG, nt_decode_suspend_ee(buf, n, 1, 8, &se));
		assert_int_equal(n >= 2 ? 0 : -EBADMSG, nt_decode_restart_ee(buf, n, 1, 8, &se));
		assert_int_equal(n >= 6 ? 0 : -EBADMSG, nt_decode_gc_triggered(buf, n, 0, 8, &gt));
		assert_int_equal(n >= 4 ? 0 : -EBADMSG,
				 nt_decode_thread_sample(buf, n, 0, 8, &t));
	}
	/* older versions are shorter */
	OK(nt_decode_gc_start(buf, 8, 0, 8, &gs));
	assert_int_equal(0x41414141, gs.reason);
	assert_int_equal(0, gs.depth);
	OK(nt_decode_gc_end(buf, 6, 0, 8, &ge));
	assert_int_equal(0x4141, ge.depth);
	OK(nt_decode_restart_ee(buf, 0, 0, 8, &se));
	OK(nt_decode_contention_start(buf, 0, 0, 8, &ct));
}

/* ----- time order ----- */

struct order_ctx {
	uint32_t x[32], ax[32];
	int64_t ts[32];
	unsigned n, na;
	unsigned stop_every;
};

static int order_event(void *ctx, const struct nt_event *ev)
{
	struct order_ctx *o = ctx;

	if (o->n < 32) {
		o->x[o->n] = ct_le32(ev->payload);
		o->ts[o->n] = ev->timestamp;
	}
	o->n++;
	return o->stop_every && o->n % o->stop_every == 0 ? NT_STOPPED : 0;
}

static int order_arrival(void *ctx, const struct nt_event *ev)
{
	struct order_ctx *o = ctx;

	if (o->na < 32)
		o->ax[o->na] = ct_le32(ev->payload);
	o->na++;
	return 0;
}

/*
 * What EventPipe writes at a flush: each thread's events in one run, the
 * first of each run marked sorted (nothing later is older). Thread A's run
 * holds events later than thread B's whole run (a GC thread writing GCStart
 * after another wrote the walk).
 */
static void build_order(struct strbuf *s)
{
	static const struct { uint64_t ctid, ts; bool sorted; uint32_t x; } ev[] = {
		{ 1, 10, true, 1 }, { 1, 40, false, 2 }, { 1, 60, false, 3 },
		{ 2, 20, true, 4 }, { 2, 30, false, 5 }, { 2, 60, false, 6 },
		{ 3, 70, true, 7 }, { 3, 80, false, 8 },
	};
	struct strbuf b = STRBUF_INIT, rec = STRBUF_INIT;
	struct ehdr prev = { 0 }, h = { 0 };
	uint32_t seq[4] = { 0 };
	size_t i;

	w_prologue_v5(s);
	w_meta_rec(&rec, 1, 5, false);
	w_meta_block(s, &rec);
	w_blockhdr(&b, 1);
	for (i = 0; i < ARRAY_SIZE(ev); i++) {
		h = (struct ehdr){ .meta = 1, .seq = ++seq[ev[i].ctid], .tid = ev[i].ctid,
				   .ctid = ev[i].ctid, .ts = ev[i].ts, .size = 4,
				   .sorted = ev[i].sorted };
		w_blob(&b, &prev, &h, &ev[i].x, false);
	}
	w_block_v5(s, "EventBlock", &b);
	/* a sequence point: everything before it goes out */
	strbuf_reset(&b);
	w_u64(&b, 100);
	w_u32(&b, 0);
	w_block_v5(s, "SPBlock", &b);
	/* the next region: one late-looking event, alone */
	strbuf_reset(&b);
	prev = (struct ehdr){ 0 };
	w_blockhdr(&b, 1);
	h = (struct ehdr){ .meta = 1, .seq = 3, .tid = 3, .ctid = 3, .ts = 90, .size = 4 };
	w_blob(&b, &prev, &h, &(uint32_t){ 9 }, false);
	w_block_v5(s, "EventBlock", &b);
	w_u8(s, 1);
	strbuf_release(&b);
	strbuf_release(&rec);
}

static void test_time_order(void **state)
{
	static const uint32_t want[] = { 1, 4, 5, 2, 3, 6, 7, 8, 9 };
	static const uint32_t arrival[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct nt_handlers h = { order_event, NULL, NULL, order_arrival };
	struct strbuf s = STRBUF_INIT;
	struct order_ctx oc;
	struct nt_limits lim;
	struct nt_reader *r;
	struct nt_stats st;
	unsigned stop, i;
	int ret;

	build_order(&s);
	/* straight through, and stopped after every 1, 2, 3 events and resumed */
	for (stop = 0; stop <= 3; stop++) {
		memset(&oc, 0, sizeof(oc));
		oc.stop_every = stop;
		assert_int_equal(0, nt_reader_new(&r, nt_read_mem,
						  &(struct nt_membuf){ (const uint8_t *)s.buf, s.len, 0 },
						  NULL));
		do {
			ret = nt_reader_run(r, &h, &oc);
		} while (ret == NT_STOPPED);
		assert_int_equal(0, ret);
		assert_int_equal(ARRAY_SIZE(want), oc.n);
		assert_memory_equal(want, oc.x, sizeof(want));
		assert_int_equal(ARRAY_SIZE(arrival), oc.na);
		assert_memory_equal(arrival, oc.ax, sizeof(arrival));
		for (i = 1; i < oc.n; i++)
			assert_true(oc.ts[i - 1] <= oc.ts[i]);
		nt_reader_stats(r, &st);
		assert_int_equal(9, st.events);
		assert_int_equal(0, st.order_forced);
		assert_int_equal(0, st.order_late);
		assert_true(st.order_held_max > 0);
		nt_reader_free(r);
	}

	/* a window of one event: the oldest go out early, B's come late, and it says so */
	nt_limits_default(&lim);
	lim.max_order_events = 1;
	memset(&oc, 0, sizeof(oc));
	assert_int_equal(0, run_mem(s.buf, s.len, &lim, &h, &oc, &r));
	assert_int_equal(9, oc.n);
	nt_reader_stats(r, &st);
	assert_true(st.order_forced > 0);
	assert_true(st.order_late > 0);
	nt_reader_free(r);

	/* cut inside the last block: the events before the damage still all come out */
	memset(&oc, 0, sizeof(oc));
	assert_int_equal(-EBADMSG, run_mem(s.buf, s.len - 6, NULL, &h, &oc, NULL));
	assert_int_equal(8, oc.n);
	assert_memory_equal(want, oc.x, 8 * sizeof(uint32_t));
	strbuf_release(&s);
}

/* The window itself: ties keep arrival order, bytes come back intact. */
static void test_order_window(void **state)
{
	static const int64_t ts[] = { 50, 10, 50, 30, 10, 70, 20 };
	static const char *const want[] = { "b", "e", "g", "d", "a", "c", "f" };
	struct nt_order o;
	const uint8_t *p;
	int64_t t, last = INT64_MIN;
	uint32_t len;
	size_t i;
	char tag[2] = { 0 };

	nt_order_init(&o, 4, 1 << 20);
	for (i = 0; i < ARRAY_SIZE(ts); i++) {
		tag[0] = (char)('a' + i);
		assert_int_equal(0, nt_order_add(&o, ts[i], tag, 1, "xyz", 3));
	}
	assert_true(nt_order_over(&o));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		p = nt_order_pop(&o, &t, &len);
		assert_non_null(p);
		assert_int_equal(4, len);
		assert_int_equal(want[i][0], p[0]);
		assert_memory_equal("xyz", p + 1, 3);
		assert_true(t >= last);
		last = t;
		/* interleaved adds reuse the arena */
		if (i == 2)
			assert_int_equal(0, nt_order_add(&o, 1000, "h", 1, NULL, 0));
	}
	p = nt_order_pop(&o, &t, &len);
	assert_non_null(p);
	assert_int_equal('h', p[0]);
	assert_null(nt_order_pop(&o, &t, &len));
	assert_false(nt_order_peek(&o, &t));
	nt_order_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_order),
		cmocka_unit_test(test_order_window),
		cmocka_unit_test(test_jit_samples),
		cmocka_unit_test(test_gc_contention),
		cmocka_unit_test(test_eventsource_counters),
		cmocka_unit_test(test_v6_eventsource_counters),
		cmocka_unit_test(test_ipc_rundown),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_flipped),
		cmocka_unit_test(test_truncate_every_byte),
		cmocka_unit_test(test_not_nettrace),
		cmocka_unit_test(test_stop_resume),
		cmocka_unit_test(test_synthetic_drops_and_stacks),
		cmocka_unit_test(test_synthetic_uncompressed),
		cmocka_unit_test(test_synthetic_v2params),
		cmocka_unit_test(test_synthetic_v6),
		cmocka_unit_test(test_v6_synthetic_seed),
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_decoder_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
