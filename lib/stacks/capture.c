/* SPDX-License-Identifier: MIT */
/*
 * capture.c - the stacks workflow, once, for every caller: the EventPipe
 * session (sample profiler + rundown) into memory, the stream read into the
 * sampler, the tree built, thread names read; and its JSON document.
 * Moved here from src/cmd/stacks.c so that clrtap serve runs the same code
 * in a session's worker thread with the session's own stop flag.
 */
#include "common/compat.h"

#include "common/log.h"
#include "flame/flame.h"
#include "srcline/srcline.h"
#include "stacks/stacks.h"

#define STREAM_MAX ((size_t)256 << 20)
#define SAMPLER "Microsoft-DotNETCore-SampleProfiler"
/* rundown: Loader 0x8, Jit 0x10, NGen 0x20 (precompiled code), end rundown 0x100 */
#define RUNDOWN_KEYWORDS 0x138ull
#define RUNDOWN_ILMAP 0x20000ull /* JittedMethodILToNativeMap: for --lines */

static int mem_sink(void *ctx, const void *buf, size_t n)
{
	return strbuf_add(ctx, buf, n);
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	return stacks_sampler_event(ctx, ev);
}

int stacks_capture_run(const struct ipc_endpoint *ep, pid_t pid,
		       const struct stacks_capture_opts *o, struct stacks_capture *c)
{
	const struct ipc_provider prov = { SAMPLER, 0, 4, NULL };
	const struct nt_handlers h = { .event = on_event };
	struct strbuf stream = STRBUF_INIT_MAX(STREAM_MAX);
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct nt_reader *r = NULL;
	struct nt_membuf mb;
	int err;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	cfg.providers = &prov;
	cfg.nproviders = 1;
	cfg.buffer_mb = 64;
	cfg.rundown = true;
	cfg.rundown_keyword = RUNDOWN_KEYWORDS | (o->lines ? RUNDOWN_ILMAP : 0);
	cfg.stackwalk = true;
	so.sink = mem_sink;
	so.ctx = &stream;
	so.stop = o->stop;
	so.duration_ms = o->sample_ms;
	so.max_bytes = STREAM_MAX;
	err = ipc_session_run(ep, &cfg, &so, &c->res, &c->rerr);
	/* names right after the session: threads come and go */
	if (!o->no_names && stacks_names_load(&c->names, pid))
		c->names = NULL;
	if (err) {
		c->stage = STACKS_STAGE_SESSION;
		goto out;
	}
	err = stacks_sampler_new(&c->sampler);
	if (!err)
		err = stacks_tree_new(&c->tree);
	if (!err && o->lines) {
		struct srcline *sl;

		err = srcline_new_proc(pid, &sl);
		if (!err)
			stacks_sampler_set_lines(c->sampler, sl);
	}
	if (err) {
		c->stage = STACKS_STAGE_BUILD;
		goto out;
	}
	mb.p = (const uint8_t *)stream.buf;
	mb.len = stream.len;
	mb.off = 0;
	err = nt_reader_new(&r, nt_read_mem, &mb, NULL);
	if (!err)
		err = nt_reader_run(r, &h, c->sampler);
	if (err < 0) {
		const char *msg = "";

		if (r)
			nt_reader_error(r, &c->bad_offset, &msg);
		snprintf(c->msg, sizeof(c->msg), "%s", msg && *msg ? msg : strerror(-err));
		c->stage = STACKS_STAGE_READ;
		goto out;
	}
	err = 0;
	c->incomplete = !c->res.complete;
	if (o->lines) {
		size_t nb, nmap;

		srcline_counts(stacks_sampler_lines(c->sampler), &nb, &nmap);
		ct_debug("stacks: %zu code bodies, %zu IL maps for source lines", nb, nmap);
	}
	err = stacks_sampler_build(c->sampler, c->tree);
	if (err < 0) {
		c->stage = STACKS_STAGE_BUILD;
		snprintf(c->msg, sizeof(c->msg), "%s", strerror(-err));
		goto out;
	}
	err = 0;
out:
	nt_reader_free(r);
	strbuf_release(&stream);
	return err;
}

void stacks_capture_release(struct stacks_capture *c)
{
	stacks_names_free(c->names);
	stacks_tree_free(c->tree);
	stacks_sampler_free(c->sampler);
	c->names = NULL;
	c->tree = NULL;
	c->sampler = NULL;
}

bool stacks_thread_has_managed(struct stacks_sampler *s, const struct stacks_thread *th)
{
	uint32_t k;

	for (k = 0; k < th->nframes; k++)
		if (stacks_sampler_frame(s, th, k))
			return true;
	return false;
}

/* "file" and "line" of a frame named with its line (stacks_sampler_set_lines) */
static void json_line(struct ct_json *j, const char *name)
{
	const char *file;
	size_t nlen, flen;
	uint32_t line;
	char *f;

	if (!flame_name_line(name, strlen(name), &nlen, &file, &flen, &line))
		return;
	f = strndup(file, flen);
	if (f)
		ct_json_kv_str(j, "file", f);
	free(f);
	ct_json_kv_u64(j, "line", line);
}

static void json_node(struct ct_json *j, const struct stacks_names *nm, const struct stacks_node *n)
{
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_str(j, "frame", n->name);
	json_line(j, n->name);
	ct_json_kv_u64(j, "count", n->count);
	ct_json_kv_arr_begin(j, "threads");
	for (i = 0; i < n->ntids; i++) {
		const char *name = stacks_names_get(nm, n->tids[i]);

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "tid", n->tids[i]);
		if (name)
			ct_json_kv_str(j, "name", name);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "children");
	for (i = 0; i < n->nchildren; i++)
		if (n->children[i]->count)
			json_node(j, nm, n->children[i]);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

void stacks_capture_json(const struct stacks_capture *c, struct ct_json *j)
{
	const struct stacks_node *root = stacks_tree_root(c->tree);
	size_t i, n = stacks_sampler_nthreads(c->sampler);

	ct_json_obj_begin(j);
	ct_json_kv_i64(j, "pid", c->pid);
	ct_json_kv_u64(j, "threads_sampled", n);
	ct_json_kv_u64(j, "threads_with_managed_frames", root->count);
	ct_json_kv_arr_begin(j, "threads");
	for (i = 0; i < n; i++) {
		const struct stacks_thread *th = stacks_sampler_thread(c->sampler, i);
		const char *name = stacks_names_get(c->names, th->tid);
		uint32_t k;

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "tid", th->tid);
		if (name)
			ct_json_kv_str(j, "name", name);
		ct_json_kv_arr_begin(j, "frames");
		for (k = 0; k < th->nframes; k++) {
			const char *f = stacks_sampler_frame(c->sampler, th, k);
			char addr[24];

			if (!f) {
				snprintf(addr, sizeof(addr), "0x%" PRIx64, th->ips[k]);
				f = addr;
			}
			ct_json_str(j, f);
		}
		ct_json_arr_end(j);
		/* the runtime's names, when the source form of any differs (common/clrname.h) */
		for (k = 0; k < th->nframes; k++) {
			const char *f = stacks_sampler_frame(c->sampler, th, k);

			if (f && f != stacks_sampler_frame_raw(c->sampler, th, k))
				break;
		}
		if (k < th->nframes) {
			ct_json_kv_arr_begin(j, "raw_frames");
			for (k = 0; k < th->nframes; k++)
				ct_json_str(j, stacks_sampler_frame_raw(c->sampler, th, k));
			ct_json_arr_end(j);
		}
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "tree");
	for (i = 0; i < root->nchildren; i++)
		if (root->children[i]->count)
			json_node(j, c->names, root->children[i]);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}
