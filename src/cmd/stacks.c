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
#include "heap/async.h"
#include "heap/heap.h"
#include "stacks/stacks.h"

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

static void async_json(const struct heap_async *a, const struct heap_meta *m, pid_t pid,
		       struct ct_json *j)
{
	ct_json_obj_begin(j);
	ct_json_kv_i64(j, "pid", pid);
	ct_json_kv_str(j, "source", "heap snapshot (one full, blocking gen-2 GC)");
	if (m->pause_ns)
		ct_json_kv_double(j, "pause_ms", (double)m->pause_ns / 1e6);
	else
		ct_json_kv_null(j, "pause_ms");
	heap_async_json(a, j);
	ct_json_obj_end(j);
}

static void async_text(const struct heap_async *a, const struct heap_meta *m, pid_t pid)
{
	printf("pid %d: %" PRIu64 " async state machine%s on the heap, %" PRIu64
	       " on %u kind%s of pending chain (heap snapshot: one full, blocking gen-2 GC",
	       (int)pid, a->boxes, a->boxes == 1 ? "" : "s", a->chained, a->ngroups,
	       a->ngroups == 1 ? "" : "s");
	if (m->pause_ns)
		printf("; the target paused %.1f ms", (double)m->pause_ns / 1e6);
	else
		printf("; pause not measured");
	printf(")\n");
	{
		struct strbuf sb = STRBUF_INIT;

		if (!heap_async_text(a, &sb))
			fputs(sb.buf ? sb.buf : "", stdout);
		strbuf_release(&sb);
	}
	printf("\nhow long each has waited: not known (a heap snapshot does not say when a chain "
	       "was suspended)\n");
}

/* stacks --async: pending async chains from a heap snapshot (lib/heap/async.c). */
static int stacks_async(const struct ipc_endpoint *ep, pid_t pid, bool json)
{
	struct heap_collect_opts o = { 0 };
	struct heap_collect_result res;
	struct heap_graph *g = NULL;
	struct heap_async *a = NULL;
	int err, code;

	cli_info("forcing a full, blocking gen-2 GC in pid %d to walk its heap (the process pauses for it)",
		 (int)pid);
	o.ep = ep;
	o.stop = &cli_stop_requested;
	err = heap_collect(&o, &g, &res);
	if (err)
		return cli_error(ct_exit_for(err), "no heap snapshot: %s",
				 res.msg[0] ? res.msg : strerror(-err));
	err = heap_async_chains(g, &a);
	if (err) {
		heap_graph_free(g);
		return cli_error(EXIT_ERROR, "cannot follow the async chains: %s", strerror(-err));
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		async_json(a, &g->meta, pid, &j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
	} else {
		async_text(a, &g->meta, pid);
		code = EXIT_OK;
	}
	heap_async_free(a);
	heap_graph_free(g);
	return code;
}

int cmd_stacks(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool json = false, no_names = false, async = false, lines = false;
	int sample_ms = 0; /* --sample-ms, deprecated */
	int64_t sample = 10;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the tree and every thread's frames as JSON" },
		{ 0, "sample", CLI_OPT_DURATION, &sample, "DUR", "how long the sampler runs (default 10ms)" },
		{ 0, "sample-ms", CLI_OPT_INT | CLI_DEPRECATED, &sample_ms, "MS", "--sample" },
		{ 0, "no-names", CLI_OPT_BOOL, &no_names, NULL, "do not read thread names from /proc" },
		{ 0, "lines", CLI_OPT_BOOL, &lines, NULL,
		  "managed frames with their source file and line (portable PDBs)" },
		{ 0, "async", CLI_OPT_BOOL, &async, NULL,
		  "pending async chains (on no thread) from a heap snapshot: one full, blocking gen-2 GC" },
		{ 0 },
	};
	struct stacks_capture_opts co = { 0 };
	struct stacks_capture cap;
	const struct stacks_node *root;
	struct ipc_endpoint ep;
	struct proc_target t;
	struct names nm = { NULL };
	int first, code, err;
	size_t i, nomanaged = 0;

	if (cli_parse(argc, argv, "clrtap stacks (-p PID | -n NAME) [--json] [--async]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (sample_ms)
		sample = sample_ms;
	if (sample < 1 || sample > 60000)
		return cli_error(EXIT_USAGE, "--sample must be 1ms..60s");
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;

	cli_catch_stop_signals();
	if (async)
		return stacks_async(&ep, t.pid, json);
	co.sample_ms = (int)sample;
	co.no_names = no_names;
	co.lines = lines;
	co.stop = &cli_stop_requested;
	err = stacks_capture_run(&ep, t.pid, &co, &cap);
	nm.map = cap.names;
	if (err) {
		char why[512];

		switch (cap.stage) {
		case STACKS_STAGE_SESSION:
			ipc_session_strerror(err, &cap.res, &ep, &cap.rerr, why, sizeof(why));
			code = cli_error(cap.res.bad_prologue || err == -EFBIG ? EXIT_PROTOCOL
									       : ct_exit_for(err),
					 "%s: %s",
					 cap.res.bytes ? "the session broke off" : "cannot sample the stacks",
					 why);
			break;
		case STACKS_STAGE_READ:
			code = cli_error(err == -EBADMSG ? EXIT_PROTOCOL : ct_exit_for(err),
					 "cannot read the session stream (byte %" PRIu64 "): %s",
					 cap.bad_offset, cap.msg);
			break;
		default:
			code = err == -ENOMEM ? cli_error(EXIT_ERROR, "out of memory")
					      : cli_error(EXIT_ERROR, "cannot build the tree: %s",
							  strerror(-err));
			break;
		}
		goto out;
	}
	if (cap.incomplete)
		cli_warn("the stream ended without its end marker: stacks may be missing");
	root = stacks_tree_root(cap.tree);
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		stacks_capture_json(&cap, &j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
	} else {
		struct stacks_sampler *s = cap.sampler;
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
			if (!stacks_thread_has_managed(s, stacks_sampler_thread(s, i)))
				nomanaged++;
		if (nomanaged) {
			char label[128];
			bool firstl = true;

			printf("\n%zu thread%s without managed frames:", nomanaged, nomanaged == 1 ? "" : "s");
			for (i = 0; i < n; i++) {
				const struct stacks_thread *th = stacks_sampler_thread(s, i);

				if (stacks_thread_has_managed(s, th))
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
	stacks_capture_release(&cap);
	return code;
}
