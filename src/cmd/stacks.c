/* SPDX-License-Identifier: MIT */
/*
 * clrtap stacks - the managed stack of every thread now, merged into one
 * call tree: threads on the same call path are counted together. A short
 * EventPipe session with the sample profiler and a method rundown; the first
 * sample of each thread is its stack.
 */
#include "common/compat.h"

#include <signal.h>

#include "cli.h"
#include "stacks/stacks.h"

#define STREAM_MAX ((size_t)1 << 30)
#define SAMPLER "Microsoft-DotNETCore-SampleProfiler"
/* rundown: Loader 0x8, Jit 0x10, NGen 0x20 (precompiled code), end rundown 0x100 */
#define RUNDOWN_KEYWORDS 0x138ull

static int mem_sink(void *ctx, const void *buf, size_t n)
{
	return strbuf_add(ctx, buf, n);
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	return stacks_sampler_event(ctx, ev);
}

struct names {
	struct stacks_names *map; /* NULL: no names */
};

static void thread_label(const struct names *nm, uint64_t tid, char *buf, size_t len)
{
	const char *name = stacks_names_get(nm->map, tid);

	if (name) {
		snprintf(buf, len, "%" PRIu64 " (%s)", tid, cli_safe(name));
	} else {
		snprintf(buf, len, "%" PRIu64, tid);
	}
}

/* ----- text ----- */

static void print_tids(const struct names *nm, const struct stacks_node *n, const char *cont)
{
	char label[128];
	size_t i, col, indent;

	indent = (size_t)printf("%7s%s   ", "", cont);
	col = indent + (size_t)printf("%s", n->ntids == 1 ? "thread" : "threads");
	for (i = 0; i < n->ntids; i++) {
		thread_label(nm, n->tids[i], label, sizeof(label));
		if (i && col + strlen(label) + 1 > 110) {
			printf("\n%7s%s   %7s", "", cont, "");
			col = indent + 7;
		}
		col += (size_t)printf(" %s", label);
	}
	printf("\n");
}

/*
 * One node and what is under it. Lines are "COUNT  PREFIX NAME"; first is
 * the prefix of n's own line, cont the prefix of the lines under it.
 */
static void print_node(const struct names *nm, const struct stacks_node *n, const char *first,
		       const char *cont)
{
	struct strbuf p1 = STRBUF_INIT, p2 = STRBUF_INIT;
	size_t i, shown = 0;

	printf("%5u  %s%s\n", n->count, first, cli_safe(n->name));
	/* a chain without branches stays at one indentation */
	while (n->nchildren == 1 && n->ntids == 0) {
		n = n->children[0];
		printf("%5u  %s%s\n", n->count, cont, cli_safe(n->name));
	}
	if (n->ntids)
		print_tids(nm, n, cont);
	for (i = 0; i < n->nchildren; i++)
		if (n->children[i]->count)
			shown++;
	for (i = 0; i < n->nchildren; i++) {
		const struct stacks_node *c = n->children[i];
		bool last;

		if (!c->count)
			continue;
		last = --shown == 0;
		strbuf_reset(&p1);
		strbuf_reset(&p2);
		(void)strbuf_addf(&p1, "%s%s", cont, last ? "└─ " : "├─ ");
		(void)strbuf_addf(&p2, "%s%s", cont, last ? "   " : "│  ");
		print_node(nm, c, p1.buf, p2.buf);
	}
	strbuf_release(&p1);
	strbuf_release(&p2);
}

/* Whether any frame of the thread's sample is named managed code. */
static bool has_managed(struct stacks_sampler *s, const struct stacks_thread *th)
{
	uint32_t k;

	for (k = 0; k < th->nframes; k++)
		if (stacks_sampler_frame(s, th, k))
			return true;
	return false;
}

/* ----- JSON ----- */

static void json_node(struct ct_json *j, const struct names *nm, const struct stacks_node *n)
{
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_str(j, "frame", n->name);
	ct_json_kv_u64(j, "count", n->count);
	ct_json_kv_arr_begin(j, "threads");
	for (i = 0; i < n->ntids; i++) {
		const char *name = stacks_names_get(nm->map, n->tids[i]);

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

static int print_json(const struct names *nm, struct stacks_sampler *s,
		      const struct stacks_node *root, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, n = stacks_sampler_nthreads(s);
	struct ct_json j;
	int code;

	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_i64(&j, "pid", pid);
	ct_json_kv_u64(&j, "threads_sampled", n);
	ct_json_kv_u64(&j, "threads_with_managed_frames", root->count);
	ct_json_kv_arr_begin(&j, "threads");
	for (i = 0; i < n; i++) {
		const struct stacks_thread *th = stacks_sampler_thread(s, i);
		const char *name = stacks_names_get(nm->map, th->tid);
		uint32_t k;

		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "tid", th->tid);
		if (name)
			ct_json_kv_str(&j, "name", name);
		ct_json_kv_arr_begin(&j, "frames");
		for (k = 0; k < th->nframes; k++) {
			const char *f = stacks_sampler_frame(s, th, k);
			char addr[24];

			if (!f) {
				snprintf(addr, sizeof(addr), "0x%" PRIx64, th->ips[k]);
				f = addr;
			}
			ct_json_str(&j, f);
		}
		ct_json_arr_end(&j);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);
	ct_json_kv_arr_begin(&j, "tree");
	for (i = 0; i < root->nchildren; i++)
		if (root->children[i]->count)
			json_node(&j, nm, root->children[i]);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	code = cli_json_out(&j, stdout);
	strbuf_release(&sb);
	return code;
}

int cmd_stacks(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool json = false, no_names = false;
	int sample_ms = 10;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the tree and every thread's frames as JSON" },
		{ 0, "sample-ms", CLI_OPT_INT, &sample_ms, "MS", "how long the sampler runs (default 10)" },
		{ 0, "no-names", CLI_OPT_BOOL, &no_names, NULL, "do not read thread names from /proc" },
		{ 0 },
	};
	const struct ipc_provider prov = { SAMPLER, 0, 4, NULL };
	const struct nt_handlers h = { .event = on_event };
	struct strbuf stream = STRBUF_INIT_MAX(STREAM_MAX);
	struct ipc_trace_config cfg = { 0 };
	struct ipc_session_opts so = { 0 };
	struct ipc_session_result res;
	struct stacks_sampler *s = NULL;
	struct stacks_tree *tree = NULL;
	const struct stacks_node *root;
	struct nt_reader *r = NULL;
	struct nt_membuf mb;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	struct names nm = { NULL };
	int first, code, err;
	size_t i, nomanaged = 0;

	if (cli_parse(argc, argv, "clrtap stacks (-p PID | -n NAME) [--json]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (sample_ms < 1 || sample_ms > 60000)
		return cli_error(EXIT_USAGE, "--sample-ms must be 1..60000");
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;

	cfg.providers = &prov;
	cfg.nproviders = 1;
	cfg.buffer_mb = 64;
	cfg.rundown = true;
	cfg.rundown_keyword = RUNDOWN_KEYWORDS;
	cfg.stackwalk = true;
	cli_catch_stop_signals();
	so.sink = mem_sink;
	so.ctx = &stream;
	so.stop = &cli_stop_requested;
	so.duration_ms = sample_ms;
	err = ipc_session_run(&ep, &cfg, &so, &res, &rerr);
	/* names right after the session: threads come and go */
	if (!no_names && stacks_names_load(&nm.map, t.pid))
		nm.map = NULL;
	if (err && res.bytes == 0) {
		code = cli_ipc_error("cannot sample the stacks", err, &rerr);
		goto out;
	}
	if (err == -EMSGSIZE) {
		code = cli_error(EXIT_ERROR, "the session sent more than %zu MiB", STREAM_MAX >> 20);
		goto out;
	}
	if (err) {
		code = cli_ipc_error("the session broke off", err, &rerr);
		goto out;
	}
	err = stacks_sampler_new(&s);
	if (!err)
		err = stacks_tree_new(&tree);
	if (err) {
		code = cli_error(EXIT_ERROR, "out of memory");
		goto out;
	}
	mb.p = (const uint8_t *)stream.buf;
	mb.len = stream.len;
	mb.off = 0;
	err = nt_reader_new(&r, nt_read_mem, &mb, NULL);
	if (!err)
		err = nt_reader_run(r, &h, s);
	if (err < 0) {
		uint64_t off = 0;
		const char *msg = "";

		if (r)
			nt_reader_error(r, &off, &msg);
		code = cli_error(err == -EBADMSG ? EXIT_PROTOCOL : cli_exit_for(err),
				 "cannot read the session stream (byte %" PRIu64 "): %s", off,
				 msg && *msg ? msg : strerror(-err));
		goto out;
	}
	if (!res.complete)
		cli_warn("the stream ended without its end marker: stacks may be missing");
	err = stacks_sampler_build(s, tree);
	if (err < 0) {
		code = cli_error(EXIT_ERROR, "cannot build the tree: %s", strerror(-err));
		goto out;
	}
	root = stacks_tree_root(tree);
	if (json) {
		code = print_json(&nm, s, root, t.pid);
	} else {
		size_t n = stacks_sampler_nthreads(s);

		printf("pid %d: %zu thread%s sampled, %u with managed frames\n\n", (int)t.pid, n,
		       n == 1 ? "" : "s", root->count);
		for (i = 0; i < root->nchildren; i++) {
			if (!root->children[i]->count)
				continue;
			if (i)
				printf("\n");
			print_node(&nm, root->children[i], "", "");
		}
		for (i = 0; i < n; i++)
			if (!has_managed(s, stacks_sampler_thread(s, i)))
				nomanaged++;
		if (nomanaged) {
			char label[128];
			bool firstl = true;

			printf("\n%zu thread%s without managed frames:", nomanaged, nomanaged == 1 ? "" : "s");
			for (i = 0; i < n; i++) {
				const struct stacks_thread *th = stacks_sampler_thread(s, i);

				if (has_managed(s, th))
					continue;
				thread_label(&nm, th->tid, label, sizeof(label));
				printf("%s %s", firstl ? "" : ",", label);
				firstl = false;
			}
			printf("\n");
		}
		code = EXIT_OK;
	}
out:
	stacks_names_free(nm.map);
	nt_reader_free(r);
	stacks_tree_free(tree);
	stacks_sampler_free(s);
	strbuf_release(&stream);
	return code;
}
