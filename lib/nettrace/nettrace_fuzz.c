/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/nettrace: the whole input is a stream, read in
 * short pieces of a size derived from the input length (to exercise partial
 * reads). Every event goes through every decoder, the payload walker, the
 * counter helper and the symbolizer; the run is stopped and resumed
 * periodically. Seed corpus: tests/data/nettrace/.
 */
#include "common/compat.h"

#include "common/strbuf.h"
#include "nettrace/nettrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_in {
	const uint8_t *p;
	size_t len, off, chunk;
};

struct fuzz_ctx {
	struct nt_methods *methods;
	struct nt_asyncflow *af;
	struct strbuf sb;
	uint64_t n;
	uint64_t sink;
	uint64_t arrived;
};

static ssize_t fuzz_read(void *ctx, void *buf, size_t len)
{
	struct fuzz_in *in = ctx;
	size_t n = CT_MIN(CT_MIN(len, in->chunk), in->len - in->off);

	memcpy(buf, in->p + in->off, n);
	in->off += n;
	return (ssize_t)n;
}

static int walk_cb(void *ctx, const struct nt_value *v)
{
	struct fuzz_ctx *f = ctx;

	if (v->kind == NT_V_SCALAR) {
		strbuf_reset(&f->sb);
		nt_value_format(v, &f->sb);
		f->sink += f->sb.len;
	}
	return 0;
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct fuzz_ctx *f = ctx;
	const void *p = ev->payload;
	size_t n = ev->payload_len;
	unsigned v = ev->meta->version, ps = ev->pointer_size;
	union {
		struct nt_method_load ml;
		struct nt_module_load mo;
		struct nt_gc_start gs;
		struct nt_gc_end ge;
		struct nt_gc_heap_stats hs;
		struct nt_gc_alloc_tick at;
		struct nt_gc_triggered gt;
		struct nt_suspend_ee se;
		struct nt_exception ex;
		struct nt_contention ct;
		struct nt_tp_worker tw;
		struct nt_tp_adjust ta;
		struct nt_counter cn;
	} u;
	uint32_t t, i;

	if (!nt_decode_method_load(p, n, v, ps, &u.ml)) {
		nt_str16_utf8(&u.ml.ns, &f->sb);
		nt_str16_utf8(&u.ml.name, &f->sb);
	}
	nt_decode_module_load(p, n, v, ps, &u.mo);
	nt_decode_gc_start(p, n, v, ps, &u.gs);
	nt_decode_gc_end(p, n, v, ps, &u.ge);
	nt_decode_gc_heap_stats(p, n, v, ps, &u.hs);
	if (!nt_decode_gc_alloc_tick(p, n, v, ps, &u.at))
		f->sink += nt_str16_eq(&u.at.type_name, "System.Byte[]");
	nt_decode_gc_triggered(p, n, v, ps, &u.gt);
	nt_decode_suspend_ee(p, n, v, ps, &u.se);
	nt_decode_restart_ee(p, n, v, ps, &u.se);
	nt_decode_exception(p, n, v, ps, &u.ex);
	nt_decode_contention_start(p, n, v, ps, &u.ct);
	nt_decode_contention_stop(p, n, v, ps, &u.ct);
	nt_decode_tp_worker(p, n, v, ps, &u.tw);
	nt_decode_tp_adjust_sample(p, n, v, ps, &u.ta);
	nt_decode_tp_adjust(p, n, v, ps, &u.ta);
	nt_decode_thread_sample(p, n, v, ps, &t);
	nt_payload_walk(ev->meta, p, n, ps, walk_cb, f);
	nt_counter_decode(ev->meta, p, n, ps, &u.cn, &f->sb);
	nt_methods_add_event(f->methods, ev);
	if (nt_asyncflow_event(f->af, ev)) { /* the TPL async flow (asyncflow.c) */
		const char *chain[8];

		const char *req = nt_asyncflow_request(f->af, (uint32_t)ev->thread_id);

		f->sink += nt_asyncflow_chain(f->af, (uint32_t)ev->thread_id, chain, 8);
		f->sink += req ? strlen(req) : 0;
	}
	for (i = 0; i < ev->nframes && i < 8; i++) {
		const char *name = nt_methods_lookup(f->methods, ev->stack[i]);

		f->sink += name ? strlen(name) : 0;
	}
	strbuf_reset(&f->sb);
	return ++f->n % 97 == 0 ? 1 : 0;
}

/* Every event arrives once here and, in time order, once in on_event. */
static int on_arrival(void *ctx, const struct nt_event *ev)
{
	struct fuzz_ctx *f = ctx;

	f->sink += ev->payload_len + ev->nframes;
	return ++f->arrived % 89 == 0 ? 1 : 0;
}

static int on_meta(void *ctx, const struct nt_metadata *m)
{
	struct fuzz_ctx *f = ctx;

	f->sink += strlen(m->provider) + strlen(m->event_name) + m->nfields;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size, 0, 0 };
	struct fuzz_ctx f;
	struct nt_handlers h = { on_event, on_meta, NULL, on_arrival };
	struct nt_limits lim;
	struct nt_reader *r = NULL;
	struct nt_thread_stats ts;
	struct nt_stats st;
	uint64_t off;
	const char *msg;
	size_t i;
	int ret;

	in.chunk = 1 + ((size * 2654435761u) >> 7) % 8192;
	nt_limits_default(&lim);
	if (size & 1) {
		/* small caps half of the time, to reach the cap paths */
		lim.max_block = 8192;
		lim.max_metadata = 16;
		lim.max_stacks = 64;
		lim.max_frames = 32;
		lim.max_threads = 4;
		lim.max_labels = 8;
		lim.max_fields = 16;
		lim.max_order_events = 8;
		lim.max_order_bytes = 2048;
	}
	memset(&f, 0, sizeof(f));
	strbuf_init(&f.sb, 1 << 16);
	if (nt_methods_new(&f.methods, 4096, 1 << 20) || nt_asyncflow_new(&f.af) ||
	    nt_reader_new(&r, fuzz_read, &in, &lim))
		goto out;
	do {
		ret = nt_reader_run(r, &h, &f);
	} while (ret == NT_STOPPED);
	nt_reader_error(r, &off, &msg);
	nt_reader_stats(r, &st);
	/* the time-order window lets every arrived event out, at the end or at damage */
	if (st.events != f.arrived)
		__builtin_trap();
	for (i = 0; i < nt_reader_nthreads(r); i++)
		nt_reader_thread(r, i, &ts);
	nt_reader_metadata(r, 1);
	nt_methods_lookup(f.methods, 0x1000);
out:
	nt_reader_free(r);
	nt_methods_free(f.methods);
	nt_asyncflow_free(f.af);
	strbuf_release(&f.sb);
	return 0;
}
