/* SPDX-License-Identifier: MIT */
/*
 * clrtap gcdump - heap snapshots: collect one (a forced, blocking gen-2 GC
 * that walks the heap), report types with true retained sizes (dominator
 * tree), the largest retainers, shortest retention paths and duplicated
 * strings; compare snapshots (diff) and take them in a row (watch) to find
 * what only grows. docs/cmd/gcdump.md.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "common/io.h"
#include "heap/heap.h"

#define USAGE "clrtap gcdump collect|report|diff|watch ..."

/* ----- shared ----- */

static const char *thousands(uint64_t v, char *buf, size_t len)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v), i, o = 0;

	for (i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

static bool is_tty;

static void on_progress(void *ctx, const struct heap_progress *p)
{
	char a[32], b[32];

	if (!is_tty)
		return;
	fprintf(stderr, "\r\033[Kclrtap: %s %s objects, %s references (%" PRIu64 " KiB of events)%s",
		p->gc_ended ? "heap walk done:" : p->gc_started ? "walking the heap:" : "waiting for the GC:",
		thousands(p->nodes, a, sizeof(a)), thousands(p->edges, b, sizeof(b)), p->bytes >> 10,
		p->attempt > 1 ? " (second session)" : "");
	fflush(stderr);
}

static int collect_error(const struct heap_collect_result *res, int err)
{
	if (is_tty)
		fprintf(stderr, "\r\033[K");
	if (res->msg[0]) {
		int code = ct_exit_for(err);

		if (err == -EINTR)
			code = EXIT_INTERRUPTED; /* nothing written */
		else if (err == -EPROTO && !strcmp(res->stage ? res->stage : "", "stream"))
			code = EXIT_PROTOCOL;
		return cli_error(code, "no snapshot: %s", res->msg);
	}
	if (!strcmp(res->stage ? res->stage : "", "session"))
		return cli_ipc_error("cannot start the heap session", err, &res->rerr);
	return cli_error(ct_exit_for(err), "no snapshot (%s): %s", res->stage ? res->stage : "?",
			 strerror(-err));
}

struct target_args {
	struct cli_target_opts to;
	const char *nettrace;
	int64_t gc_timeout_ms;
	int timeout_s; /* --timeout-s, deprecated */
	int buffer_mb;
	int max_objects;
	bool no_strings;
};

static int take_snapshot(const struct target_args *ta, struct heap_graph **g)
{
	struct heap_collect_opts o = { 0 };
	struct heap_collect_result res;
	struct ipc_endpoint ep;
	struct proc_target t;
	int code, err;

	code = cli_resolve_target(&ta->to, &t, &ep);
	if (code)
		return code;
	is_tty = isatty(2);
	/* before the sentence: a Ctrl-C right after it is seen, never the default action */
	cli_catch_stop_signals();
	cli_info("forcing a full, blocking gen-2 GC in pid %d to walk its heap (the process pauses for it)",
		 (int)t.pid);
	o.ep = &ep;
	o.pid = ta->no_strings ? 0 : t.pid;
	o.buffer_mb = (uint32_t)ta->buffer_mb;
	o.timeout_ms = (int)ta->gc_timeout_ms;
	o.limits.max_nodes = (uint32_t)ta->max_objects;
	o.limits.max_edges = (uint64_t)ta->max_objects * 5 > HEAP_MAX_EDGES ? HEAP_MAX_EDGES :
			     (uint32_t)ta->max_objects * 5;
	o.stop = &cli_stop_requested;
	o.progress = on_progress;
	if (ta->nettrace) {
		o.tee_fd = open(ta->nettrace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o.tee_fd < 0)
			return cli_error(EXIT_ERROR, "cannot write %s: %s", ta->nettrace, strerror(errno));
	}
	err = heap_collect(&o, g, &res);
	if (o.tee_fd > 0)
		close(o.tee_fd);
	if (err)
		return collect_error(&res, err);
	if (is_tty)
		fprintf(stderr, "\r\033[K");
	(*g)->meta.pid = (uint32_t)t.pid;
	{
		char path[64], comm[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)t.pid);
		if ((f = fopen(path, "r"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		ct_strlcpy((*g)->meta.process, comm, sizeof((*g)->meta.process));
	}
	return EXIT_OK;
}

static int load(const char *path, struct heap_graph **g)
{
	const char *why = NULL;
	char magic[8] = { 0 }, msg[256];
	FILE *f = fopen(path, "rb");
	int err;

	if (f) {
		size_t n = fread(magic, 1, sizeof(magic), f);

		fclose(f);
		if (n == sizeof(magic) && !memcmp(magic, "Nettrace", 8)) {
			/* a saved heap session */
			err = heap_nettrace_read(path, NULL, g, msg, sizeof(msg));
			if (err == -ENOENT || err == -EACCES)
				return cli_error(err == -EACCES ? EXIT_PERMISSION : EXIT_ERROR,
						 "cannot read %s: %s", path, strerror(-err));
			if (err)
				return cli_error(err == -ENOMEM ? EXIT_ERROR : EXIT_BAD_INPUT, "%s: %s", path,
						 msg[0] ? msg : strerror(-err));
			return EXIT_OK;
		}
	}
	err = heap_file_read(path, g, &why);

	if (err == -ENOENT || err == -EACCES || err == -EISDIR)
		return cli_error(err == -EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot read %s: %s", path,
				 strerror(-err));
	if (err)
		return cli_error(err == -ENOMEM ? EXIT_ERROR : EXIT_BAD_INPUT, "%s: %s", path,
				 why ? why : strerror(-err));
	return EXIT_OK;
}

/* How the events came: lossless, or lossy with every loss check passed. */
static const char *events_line(const struct heap_meta *m)
{
	return m->lossless ? "events: lossless (the runtime's Block buffering: it waits rather than drop)"
			   : "events: the runtime's lossy buffer (Block buffering needs .NET 11); none was lost"
			     " (block indexes, edge totals and sequence numbers checked)";
}

static void snapshot_summary(const struct heap_graph *g, const struct heap_analysis *a)
{
	char t1[32], t2[32], t3[32], when[64] = "?";
	time_t tt = (time_t)g->meta.time;
	struct tm tm;

	if (gmtime_r(&tt, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("Heap snapshot of pid %u (%s), taken %s\n", g->meta.pid,
	       g->meta.process[0] ? cli_safe(g->meta.process) : "?", when);
	printf("  GC #%u: gen %u, %s, %s, forced by clrtap", g->meta.gc_count, g->meta.gc_depth,
	       g->meta.gc_reason == 1 ? "induced" : "reason other than induced",
	       g->meta.gc_type == 0 ? "blocking" : "not blocking");
	if (g->meta.pause_ns)
		printf("; it paused the process %.3f ms", g->meta.pause_ns / 1e6);
	if (g->meta.gc_ns)
		printf(" (GCStart..GCEnd %.3f ms, heap walk included)", g->meta.gc_ns / 1e6);
	printf("\n");
	if (g->meta.attempts > 1)
		printf("  the first heap session's GC came without heap-walk events: this is the GC of session %u"
		       " (the process paused for both)\n", g->meta.attempts);
	printf("  %s objects, %s bytes, %s references, %u roots\n", thousands(g->nnodes, t1, sizeof(t1)),
	       thousands(heap_graph_bytes(g), t2, sizeof(t2)), thousands(g->nedges, t3, sizeof(t3)),
	       g->nroots);
	printf("  reachable from the roots: %s objects; not reachable: %s objects, %s bytes\n",
	       thousands(a->reachable, t1, sizeof(t1)),
	       thousands(g->nnodes - a->reachable, t2, sizeof(t2)),
	       thousands(a->unreachable_bytes, t3, sizeof(t3)));
	if (g->meta.unresolved_edges)
		printf("  %" PRIu64 " references to addresses the walk did not report were dropped\n",
		       g->meta.unresolved_edges);
	printf("  %s\n", events_line(&g->meta));
}

/* ----- report ----- */

struct order {
	const struct heap_analysis *a;
};

static int cmp_type_ret(const void *x, const void *y, void *ctx)
{
	const struct heap_analysis *a = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;

	if (a->type_retained[i] != a->type_retained[j])
		return a->type_retained[i] > a->type_retained[j] ? -1 : 1;
	if (a->type_shallow[i] != a->type_shallow[j])
		return a->type_shallow[i] > a->type_shallow[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int cmp_node_ret(const void *x, const void *y, void *ctx)
{
	const struct heap_analysis *a = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;

	if (a->retained[i] != a->retained[j])
		return a->retained[i] > a->retained[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* The nodes with the largest retained sizes (top n), heaviest first. */
static size_t top_retainers(const struct heap_graph *g, const struct heap_analysis *a, uint32_t *out,
			    size_t n)
{
	size_t k = 0, i;

	/* keep a small sorted array (n is small) */
	for (i = 0; i < g->nnodes; i++) {
		size_t j;

		if (!a->retained[i])
			continue;
		if (k == n && a->retained[i] <= a->retained[out[k - 1]])
			continue;
		if (k < n)
			k++;
		for (j = k - 1; j > 0 && a->retained[out[j - 1]] < a->retained[i]; j--)
			out[j] = out[j - 1];
		out[j] = (uint32_t)i;
	}
	(void)cmp_node_ret;
	return k;
}

/* A member whose value is an address, "0x..." (a string: JSON numbers lose 64-bit precision). */
static void json_kv_addr(struct ct_json *j, const char *key, uint64_t addr)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	ct_json_kv_str(j, key, buf);
}

/* The elements of a "groups" array: one object a path group. */
static void json_path_groups(struct ct_json *j, const struct heap_graph *g,
			     const struct heap_path_group *gr, size_t n)
{
	size_t i;
	uint32_t k;

	for (i = 0; i < n; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "root", heap_root_kind_name(gr[i].rootkind, gr[i].rootflags));
		ct_json_kv_u64(j, "count", gr[i].count);
		ct_json_kv_u64(j, "retained", gr[i].retained);
		json_kv_addr(j, "example", g->addr[gr[i].example]);
		ct_json_kv_arr_begin(j, "path");
		for (k = 0; k < gr[i].ntypes; k++) {
			uint32_t t = gr[i].types[k];

			ct_json_str(j, t == HEAP_NONE ? "..." : g->types[t].name);
		}
		ct_json_arr_end(j);
		ct_json_obj_end(j);
	}
}

static void print_strings_text(const struct heap_graph *g, size_t top)
{
	const struct heap_string_stats *s = &g->strings;
	char t1[32], t2[32];
	uint32_t i;

	printf("\nDuplicated strings");
	if (!s->read) {
		printf(": not read (the snapshot was taken without reading the target's memory)\n");
		return;
	}
	printf(" (contents read with %s)\n", s->how ? s->how : "process_vm_readv");
	printf("  %s strings: %s compared, %" PRIu64 " moved or freed by a later GC before they were read,"
	       " %" PRIu64 " unreadable, %" PRIu64 " longer than %u chars not compared\n",
	       thousands(s->strings, t1, sizeof(t1)), thousands(s->compared, t2, sizeof(t2)), s->moved,
	       s->unreadable, s->too_long, HEAP_STRING_MAX_CHARS);
	printf("  %" PRIu64 " values have copies: %" PRIu64 " strings, %s bytes wasted\n", s->dup_values,
	       s->dup_copies, thousands(s->wasted, t1, sizeof(t1)));
	if (!g->ndups)
		return;
	printf("  %12s %9s  %s\n", "wasted", "copies", "value");
	for (i = 0; i < g->ndups && i < top; i++)
		printf("  %12s %9" PRIu64 "  \"%s\"%s\n", thousands(g->dups[i].wasted, t1, sizeof(t1)),
		       g->dups[i].count, cli_safe(g->dups[i].value), g->dups[i].truncated ? "..." : "");
}

/* The "strings" member of the report. */
static void json_strings(struct ct_json *j, const struct heap_graph *g, size_t top)
{
	const struct heap_string_stats *s = &g->strings;
	uint32_t i;

	ct_json_kv_obj_begin(j, "strings");
	ct_json_kv_bool(j, "read", s->read);
	if (s->read)
		ct_json_kv_str(j, "how", s->how ? s->how : "process_vm_readv");
	ct_json_kv_u64(j, "strings", s->strings);
	ct_json_kv_u64(j, "compared", s->compared);
	ct_json_kv_u64(j, "moved", s->moved);
	ct_json_kv_u64(j, "unreadable", s->unreadable);
	ct_json_kv_u64(j, "too_long", s->too_long);
	ct_json_kv_u64(j, "duplicated_values", s->dup_values);
	ct_json_kv_u64(j, "duplicated_copies", s->dup_copies);
	ct_json_kv_u64(j, "wasted", s->wasted);
	ct_json_kv_arr_begin(j, "top");
	for (i = 0; i < g->ndups && i < top; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "value", g->dups[i].value);
		ct_json_kv_bool(j, "truncated", g->dups[i].truncated);
		ct_json_kv_u64(j, "chars", g->dups[i].chars);
		ct_json_kv_u64(j, "count", g->dups[i].count);
		ct_json_kv_u64(j, "bytes", g->dups[i].bytes);
		ct_json_kv_u64(j, "wasted", g->dups[i].wasted);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

static int report(const struct heap_graph *g, bool json, int top, const char *path_type,
		  const char *html)
{
	struct heap_analysis *a = NULL;
	struct heap_paths *p = NULL;
	struct heap_path_group *gr = NULL;
	size_t ngr = 0, i, ntop;
	uint64_t unreached = 0;
	uint32_t *order = NULL, ptype = HEAP_NONE, pobj = HEAP_NONE, ret[20];
	size_t nret;
	char t1[32], t2[32], t3[32];
	int err, code = EXIT_OK;

	err = heap_analyze(g, &a);
	if (err)
		return cli_error(EXIT_ERROR, "cannot compute the dominator tree: %s", strerror(-err));
	if (path_type || html) {
		err = heap_paths_new(g, &p);
		if (err) {
			code = cli_error(EXIT_ERROR, "cannot compute the paths: %s", strerror(-err));
			goto out;
		}
	}
	if (path_type && !strncmp(path_type, "0x", 2)) {
		uint64_t addr;
		uint32_t lo = 0, hi = g->nnodes;

		if (ct_parse_u64(path_type + 2, 16, &addr)) {
			code = cli_error(EXIT_USAGE, "--path: '%s' is not an address", path_type);
			goto out;
		}
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (g->addr[mid] < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo >= g->nnodes || g->addr[lo] != addr) {
			code = cli_error(EXIT_USAGE, "no object at %s in the snapshot", path_type);
			goto out;
		}
		pobj = lo;
	} else if (path_type) {
		uint32_t k;

		/* the type of that name with the most objects (a name can have several method tables) */
		for (k = 0; k < g->ntypes; k++)
			if (!strcmp(g->types[k].name, path_type) && a->type_count[k] &&
			    (ptype == HEAP_NONE || a->type_count[k] > a->type_count[ptype]))
				ptype = k;
		if (ptype == HEAP_NONE) {
			code = cli_error(EXIT_USAGE, "no object of type '%s' in the snapshot", path_type);
			goto out;
		}
		err = heap_paths_group(g, p, a, ptype, 20, &gr, &ngr, &unreached);
		if (err) {
			code = cli_error(EXIT_ERROR, "cannot group the paths: %s", strerror(-err));
			goto out;
		}
	}
	if (html) {
		struct strbuf sb = STRBUF_INIT;
		int fd;

		err = heap_html_write(g, a, p, &sb);
		if (!err) {
			fd = open(html, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			err = fd < 0 ? -errno : ct_write_all(fd, sb.buf, sb.len);
			if (fd >= 0 && close(fd) && !err)
				err = -errno;
		}
		strbuf_release(&sb);
		if (err) {
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", html, strerror(-err));
			goto out;
		}
		cli_info("wrote %s", html);
	}
	order = malloc((g->ntypes ? g->ntypes : 1) * sizeof(*order));
	if (!order) {
		code = cli_error(EXIT_ERROR, "out of memory");
		goto out;
	}
	for (i = 0; i < g->ntypes; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, g->ntypes, sizeof(*order), cmp_type_ret, a);
	ntop = 0;
	for (i = 0; i < g->ntypes; i++)
		if (a->type_count[order[i]])
			ntop++;
	if (top > 0 && (size_t)top < ntop)
		ntop = (size_t)top;
	nret = top_retainers(g, a, ret, 20);
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", g->meta.pid);
		ct_json_kv_str(&j, "process", g->meta.process);
		ct_json_kv_u64(&j, "time", (uint64_t)g->meta.time);
		ct_json_kv_obj_begin(&j, "gc");
		ct_json_kv_u64(&j, "number", g->meta.gc_count);
		ct_json_kv_u64(&j, "generation", g->meta.gc_depth);
		ct_json_kv_bool(&j, "induced", g->meta.gc_reason == 1);
		ct_json_kv_bool(&j, "blocking", g->meta.gc_type == 0);
		ct_json_kv_u64(&j, "pause_ns", g->meta.pause_ns);
		ct_json_kv_u64(&j, "gc_ns", g->meta.gc_ns);
		ct_json_kv_u64(&j, "sessions", g->meta.attempts);
		ct_json_obj_end(&j);
		ct_json_kv_u64(&j, "objects", g->nnodes);
		ct_json_kv_u64(&j, "bytes", heap_graph_bytes(g));
		ct_json_kv_u64(&j, "references", g->nedges);
		ct_json_kv_u64(&j, "roots", g->nroots);
		ct_json_kv_u64(&j, "reachable", a->reachable);
		ct_json_kv_u64(&j, "unreachable_bytes", a->unreachable_bytes);
		ct_json_kv_u64(&j, "unresolved_references", g->meta.unresolved_edges);
		ct_json_kv_u64(&j, "lost_events", g->meta.lost_events);
		ct_json_kv_bool(&j, "lossless", g->meta.lossless);
		ct_json_kv_arr_begin(&j, "types");
		for (i = 0; i < ntop; i++) {
			uint32_t t = order[i];

			ct_json_obj_begin(&j);
			ct_json_kv_str(&j, "type", g->types[t].name);
			json_kv_addr(&j, "id", g->types[t].id);
			ct_json_kv_u64(&j, "count", a->type_count[t]);
			ct_json_kv_u64(&j, "shallow", a->type_shallow[t]);
			ct_json_kv_u64(&j, "retained", a->type_retained[t]);
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		ct_json_kv_arr_begin(&j, "retainers");
		for (i = 0; i < nret; i++) {
			uint32_t v = ret[i];

			ct_json_obj_begin(&j);
			json_kv_addr(&j, "address", g->addr[v]);
			ct_json_kv_str(&j, "type", g->types[g->type[v]].name);
			ct_json_kv_u64(&j, "size", g->size[v]);
			ct_json_kv_u64(&j, "retained", a->retained[v]);
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		if (pobj != HEAP_NONE) {
			uint32_t x;

			ct_json_kv_obj_begin(&j, "object_path");
			json_kv_addr(&j, "address", g->addr[pobj]);
			ct_json_kv_bool(&j, "reachable", p->depth[pobj] != HEAP_NONE);
			ct_json_kv_arr_begin(&j, "path");
			for (x = pobj; p->depth[pobj] != HEAP_NONE && x != HEAP_NONE; x = p->parent[x]) {
				ct_json_obj_begin(&j);
				json_kv_addr(&j, "address", g->addr[x]);
				ct_json_kv_str(&j, "type", g->types[g->type[x]].name);
				ct_json_kv_u64(&j, "size", g->size[x]);
				ct_json_kv_u64(&j, "retained", a->retained[x]);
				if (p->parent[x] == HEAP_NONE)
					ct_json_kv_str(&j, "root", heap_root_kind_name(p->rootkind[x], p->rootflags[x]));
				ct_json_obj_end(&j);
			}
			ct_json_arr_end(&j);
			ct_json_obj_end(&j);
		} else if (path_type) {
			ct_json_kv_obj_begin(&j, "paths");
			ct_json_kv_str(&j, "type", path_type);
			ct_json_kv_u64(&j, "count", a->type_count[ptype]);
			ct_json_kv_u64(&j, "retained", a->type_retained[ptype]);
			ct_json_kv_u64(&j, "unreached", unreached);
			ct_json_kv_arr_begin(&j, "groups");
			json_path_groups(&j, g, gr, ngr);
			ct_json_arr_end(&j);
			ct_json_obj_end(&j);
		}
		json_strings(&j, g, 20);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		goto out;
	}
	snapshot_summary(g, a);
	printf("\nTypes by retained bytes (top %zu; retained = what the GC would free without them,"
	       " from the dominator tree)\n", ntop);
	printf("  %14s %14s %11s  %s\n", "retained", "shallow", "count", "type");
	for (i = 0; i < ntop; i++) {
		uint32_t t = order[i];

		printf("  %14s %14s %11s  %s\n", thousands(a->type_retained[t], t1, sizeof(t1)),
		       thousands(a->type_shallow[t], t2, sizeof(t2)),
		       thousands(a->type_count[t], t3, sizeof(t3)), cli_safe(g->types[t].name));
	}
	printf("\nLargest retainers (objects)\n");
	printf("  %14s %10s  %-18s  %s\n", "retained", "size", "address", "type");
	for (i = 0; i < nret; i++) {
		uint32_t v = ret[i];

		printf("  %14s %10s  0x%016" PRIx64 "  %s\n", thousands(a->retained[v], t1, sizeof(t1)),
		       thousands(g->size[v], t2, sizeof(t2)), g->addr[v], cli_safe(g->types[g->type[v]].name));
	}
	if (pobj != HEAP_NONE) {
		uint32_t x, depth = p->depth[pobj];

		printf("\nShortest retention path to the %s at 0x%" PRIx64 " (object first, root last)\n",
		       cli_safe(g->types[g->type[pobj]].name), g->addr[pobj]);
		if (depth == HEAP_NONE)
			printf("  not reachable from any root clrtap saw\n");
		for (x = pobj; depth != HEAP_NONE && x != HEAP_NONE; x = p->parent[x])
			printf("  %14s  0x%016" PRIx64 "  %s%s%s%s\n", thousands(a->retained[x], t1, sizeof(t1)),
			       g->addr[x], cli_safe(g->types[g->type[x]].name), p->parent[x] == HEAP_NONE ? "  [" : "",
			       p->parent[x] == HEAP_NONE ? heap_root_kind_name(p->rootkind[x], p->rootflags[x]) : "",
			       p->parent[x] == HEAP_NONE ? "]" : "");
	} else if (path_type) {
		struct strbuf sb = STRBUF_INIT;

		printf("\nShortest retention paths to %s (%s objects, %s bytes retained)\n", cli_safe(path_type),
		       thousands(a->type_count[ptype], t1, sizeof(t1)),
		       thousands(a->type_retained[ptype], t2, sizeof(t2)));
		printf("  %11s %14s  %s\n", "objects", "retained", "path (root kind first)");
		for (i = 0; i < ngr; i++) {
			strbuf_reset(&sb);
			(void)heap_path_group_format(g, &gr[i], &sb);
			printf("  %11s %14s  %s\n", thousands(gr[i].count, t1, sizeof(t1)),
			       thousands(gr[i].retained, t2, sizeof(t2)), cli_safe(sb.buf));
		}
		if (unreached)
			printf("  %11" PRIu64 " %14s  (not reachable from any root clrtap saw)\n", unreached, "");
		strbuf_release(&sb);
	}
	print_strings_text(g, 20);
out:
	free(order);
	heap_path_groups_free(gr, ngr);
	heap_paths_free(p);
	heap_analysis_free(a);
	return code;
}

/* ----- subcommands ----- */

#define TARGET_EXTRA(ta) \
	{ 0, "gc-timeout", CLI_OPT_DURATION, &(ta)->gc_timeout_ms, "DUR", "give up on the snapshot after DUR (default 30s)" }, \
	{ 0, "timeout-s", CLI_OPT_INT | CLI_DEPRECATED, &(ta)->timeout_s, "S", "--gc-timeout" }, \
	{ 0, "buffer", CLI_OPT_INT, &(ta)->buffer_mb, "MB", "the runtime's session buffer (default 256)" }, \
	{ 0, "no-strings", CLI_OPT_BOOL, &(ta)->no_strings, NULL, "do not read string contents from the target" }, \
	{ 0, "max-objects", CLI_OPT_INT, &(ta)->max_objects, "N", "refuse heaps with more objects (default 200000000; 5N references)" }

static int check_target_args(struct target_args *ta)
{
	if (ta->timeout_s) {
		if (ta->timeout_s < 1 || ta->timeout_s > 86400)
			return cli_error(EXIT_USAGE, "--timeout-s must be 1..86400");
		ta->gc_timeout_ms = (int64_t)ta->timeout_s * 1000;
	}
	if (ta->gc_timeout_ms < 1 || ta->gc_timeout_ms > (int64_t)86400 * 1000)
		return cli_error(EXIT_USAGE, "--gc-timeout must be more than 0 and at most 24h");
	if (ta->buffer_mb < 1 || ta->buffer_mb > 4096)
		return cli_error(EXIT_USAGE, "--buffer must be 1..4096");
	if (ta->max_objects < 1 || (uint64_t)ta->max_objects > HEAP_MAX_NODES)
		return cli_error(EXIT_USAGE, "--max-objects must be 1..%u", HEAP_MAX_NODES);
	return 0;
}

static int write_snapshot(const struct heap_graph *g, const char *path)
{
	char tmp[4096];
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return cli_error(EXIT_USAGE, "output path too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", tmp, strerror(errno));
	err = heap_file_write(g, fd);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-err));
	}
	return EXIT_OK;
}

static int cmd_collect(int argc, char **argv)
{
	struct target_args ta = { .gc_timeout_ms = 30000, .buffer_mb = 256, .max_objects = HEAP_MAX_NODES };
	const char *out = NULL;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 'o', "output", CLI_OPT_OUTPUT, &out, "FILE", "the snapshot file (default PID.heap)" },
		{ 0, "nettrace", CLI_OPT_STRING, &ta.nettrace, "FILE", "also keep the heap session's events as a .nettrace" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_graph *g = NULL;
	char defpath[64], t1[32], t2[32], t3[32];
	int first, code;

	if (cli_parse(argc, argv, "clrtap gcdump collect (-p PID | -n NAME) [-o FILE]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if ((code = check_target_args(&ta)))
		return code;
	if (out) {
		/* no forced GC when the result could not be written anyway */
		char tmp[4096];
		int fd;

		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= sizeof(tmp))
			return cli_error(EXIT_USAGE, "output path too long");
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return cli_error(EXIT_ERROR, "cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
	}
	code = take_snapshot(&ta, &g);
	if (code)
		return code;
	if (!out) {
		snprintf(defpath, sizeof(defpath), "%u.heap", g->meta.pid);
		out = defpath;
	}
	code = write_snapshot(g, out);
	if (!code) {
		printf("wrote %s: %s objects, %s bytes, %s references, %u roots\n", cli_safe(out),
		       thousands(g->nnodes, t1, sizeof(t1)), thousands(heap_graph_bytes(g), t2, sizeof(t2)),
		       thousands(g->nedges, t3, sizeof(t3)), g->nroots);
		if (g->meta.attempts > 1)
			printf("the first heap session's GC came without heap-walk events; a second session's GC"
			       " gave it (the process paused for both)\n");
		printf("%s\n", events_line(&g->meta));
		if (g->meta.pause_ns)
			printf("the forced gen-2 GC #%u paused the process for %.3f ms (heap walk included)\n",
			       g->meta.gc_count, g->meta.pause_ns / 1e6);
		else
			printf("the forced gen-2 GC #%u took %.3f ms from GCStart to GCEnd (pause not seen)\n",
			       g->meta.gc_count, g->meta.gc_ns / 1e6);
	}
	heap_graph_free(g);
	return code;
}

static int cmd_report(int argc, char **argv)
{
	struct target_args ta = { .gc_timeout_ms = 30000, .buffer_mb = 256, .max_objects = HEAP_MAX_NODES };
	const char *path_type = NULL, *html = NULL;
	bool json = false;
	int top = 30;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the report as JSON" },
		{ 0, "top", CLI_OPT_INT, &top, "N", "types shown (default 30; 0: all)" },
		{ 0, "path", CLI_OPT_STRING, &path_type, "TYPE|0xADDR", "shortest retention paths of TYPE's objects, or of one object" },
		{ 0, "html", CLI_OPT_OUTPUT, &html, "FILE", "also write a self-contained HTML view" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_graph *g = NULL;
	int first, code;

	if (cli_parse(argc, argv, "clrtap gcdump report (FILE | -p PID | -n NAME) [--json] [--path TYPE]",
		      opts, &first, &code))
		return code;
	if (top < 0)
		return cli_error(EXIT_USAGE, "--top must be >= 0");
	if ((code = check_target_args(&ta)))
		return code;
	if (first < argc) {
		if (first + 1 < argc)
			return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
		if (ta.to.pid || ta.to.name)
			return cli_error(EXIT_USAGE, "give a FILE or a process, not both");
		code = load(argv[first], &g);
	} else {
		if (!ta.to.pid && !ta.to.name)
			return cli_error(EXIT_USAGE, "give a snapshot FILE or -p PID / -n NAME");
		code = take_snapshot(&ta, &g);
	}
	if (code)
		return code;
	code = report(g, json, top, path_type, html);
	heap_graph_free(g);
	return code;
}

/*
 * For each growing type: the growing type (index into gr) whose objects
 * dominate all of its objects in the last snapshot, or -1. A leak of items
 * that each hold a payload then reads as one leak, the payload inside it.
 * Linear: near[v] (the nearest dominator of v with a growing type) and
 * skip[v] (the nearest one of another growing type than v's) are memoized
 * along the dominator chains, so a dominator chain a million long (a linked
 * list) costs no more than a short one.
 */
#define UNSET (HEAP_NONE - 1)
#define GROWTH_PATHS 10 /* growing types shown with their paths */

static void held_by(const struct heap_graph *g, const struct heap_analysis *a,
		    const struct heap_growth *gr, size_t ngr, long *out)
{
	uint32_t n = g->nnodes, v, sp;
	long *of_type = malloc((g->ntypes ? g->ntypes : 1) * sizeof(*of_type));
	uint32_t *near = malloc((n ? n : 1) * sizeof(*near));
	uint32_t *skip = malloc((n ? n : 1) * sizeof(*skip));
	uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
	long *holder = malloc((ngr ? ngr : 1) * sizeof(*holder));
	size_t i;

	for (i = 0; i < ngr; i++)
		out[i] = -1;
	if (!of_type || !near || !skip || !stack || !holder)
		goto out;
	for (i = 0; i < g->ntypes; i++) {
		size_t k;

		of_type[i] = -1;
		for (k = 0; k < ngr; k++)
			if (!strcmp(g->types[i].name, gr[k].name)) {
				of_type[i] = (long)k;
				break;
			}
	}
	for (v = 0; v < n; v++)
		near[v] = skip[v] = UNSET;
	for (v = 0; v < n; v++) {
		uint32_t x = v;

		sp = 0;
		while (near[x] == UNSET) {
			uint32_t d = a->idom[x];

			if (d == HEAP_NONE || d >= n) {
				near[x] = HEAP_NONE;
				break;
			}
			if (of_type[g->type[d]] >= 0) {
				near[x] = d;
				break;
			}
			stack[sp++] = x;
			x = d;
		}
		while (sp) {
			uint32_t y = stack[--sp];

			near[y] = near[a->idom[y]];
		}
	}
	for (v = 0; v < n; v++) {
		uint32_t x = v;

		if (of_type[g->type[v]] < 0)
			continue;
		sp = 0;
		while (skip[x] == UNSET) {
			uint32_t y = near[x];

			if (y == HEAP_NONE) {
				skip[x] = HEAP_NONE;
				break;
			}
			if (of_type[g->type[y]] != of_type[g->type[x]]) {
				skip[x] = y;
				break;
			}
			stack[sp++] = x;
			x = y;
		}
		while (sp) {
			uint32_t y = stack[--sp];

			skip[y] = skip[near[y]];
		}
	}
	for (i = 0; i < ngr; i++)
		holder[i] = -2; /* no object seen yet */
	for (v = 0; v < n; v++) {
		long k = of_type[g->type[v]], found;

		if (k < 0 || holder[k] == -1)
			continue;
		found = skip[v] == HEAP_NONE ? -1 : of_type[g->type[skip[v]]];
		if (found < 0 || (holder[k] >= 0 && holder[k] != found))
			holder[k] = -1;
		else
			holder[k] = found;
	}
	for (i = 0; i < ngr; i++)
		out[i] = holder[i] >= 0 ? holder[i] : -1;
out:
	free(of_type);
	free(near);
	free(skip);
	free(stack);
	free(holder);
}

/*
 * Objects of type name with the path formatted as want in snapshot f (0 when
 * f is NULL or has no such path).
 */
static uint64_t path_count_in(const struct heap_graph *f, const struct heap_paths *fp, const char *name,
			      const char *want)
{
	struct heap_path_group *pg = NULL;
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0, k;
	uint64_t un, c = 0;
	uint32_t t;

	if (!f || !fp || (t = heap_graph_type_find(f, name)) == HEAP_NONE)
		return 0;
	if (heap_paths_group(f, fp, NULL, t, 4096, &pg, &n, &un))
		return 0;
	for (k = 0; k < n; k++) {
		strbuf_reset(&sb);
		(void)heap_path_group_format(f, &pg[k], &sb);
		if (!strcmp(sb.buf, want)) {
			c = pg[k].count;
			break;
		}
	}
	heap_path_groups_free(pg, n);
	strbuf_release(&sb);
	return c;
}

/* Growth across snapshots: stats[i] belongs to snapshot i. */
static int print_growth(struct heap_typestat **stats, size_t *nstats, size_t nsnap,
			const struct heap_graph *first, const struct heap_graph *last, bool json,
			const char *const *labels)
{
	struct heap_growth *gr = NULL;
	struct heap_analysis *a = NULL;
	struct heap_paths *p = NULL, *fp = NULL;
	size_t ngr = 0, i, s, ntop = 0;
	long *holder = NULL;
	bool *with_paths = NULL;
	char t1[32];
	int err, code = EXIT_OK;

	err = heap_growth_find(stats, nstats, nsnap, &gr, &ngr);
	if (err)
		return cli_error(EXIT_ERROR, "cannot compare: %s", strerror(-err));
	holder = malloc((ngr ? ngr : 1) * sizeof(*holder));
	with_paths = calloc(ngr ? ngr : 1, sizeof(*with_paths));
	if (!holder || !with_paths || (last && ngr && (heap_analyze(last, &a) || heap_paths_new(last, &p)))) {
		heap_growth_free(gr, ngr);
		heap_analysis_free(a);
		free(holder);
		free(with_paths);
		return cli_error(EXIT_ERROR, "out of memory");
	}
	for (i = 0; i < ngr; i++)
		holder[i] = -1;
	if (a)
		held_by(last, a, gr, ngr, holder);
	if (first && first != last && ngr && heap_paths_new(first, &fp))
		fp = NULL;
	/* paths (one pass over the graph per type) for the 10 heaviest top-level growths */
	for (i = 0; i < ngr; i++) {
		with_paths[i] = holder[i] < 0 && ntop < GROWTH_PATHS;
		if (holder[i] < 0)
			ntop++;
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_arr_begin(&j, "snapshots");
		for (s = 0; s < nsnap; s++)
			ct_json_str(&j, labels[s]);
		ct_json_arr_end(&j);
		ct_json_kv_arr_begin(&j, "growing");
		for (i = 0; i < ngr; i++) {
			struct heap_path_group *pg = NULL;
			size_t npg = 0, k;
			bool grouped = false;

			ct_json_obj_begin(&j);
			ct_json_kv_str(&j, "type", gr[i].name);
			ct_json_kv_str(&j, "held_by", holder[i] >= 0 ? gr[holder[i]].name : NULL);
			ct_json_kv_arr_begin(&j, "count");
			for (s = 0; s < nsnap; s++)
				ct_json_u64(&j, gr[i].count[s]);
			ct_json_arr_end(&j);
			ct_json_kv_arr_begin(&j, "retained");
			for (s = 0; s < nsnap; s++)
				ct_json_u64(&j, gr[i].retained[s]);
			ct_json_arr_end(&j);
			ct_json_kv_arr_begin(&j, "paths");
			if (p && with_paths[i]) {
				uint64_t un;
				uint32_t t = heap_graph_type_find(last, gr[i].name);

				grouped = t != HEAP_NONE && !heap_paths_group(last, p, a, t, 3, &pg, &npg, &un);
				if (grouped)
					json_path_groups(&j, last, pg, npg);
			}
			ct_json_arr_end(&j);
			if (grouped) {
				struct strbuf ps = STRBUF_INIT;

				/* each path's object count in the first snapshot and the last */
				ct_json_kv_arr_begin(&j, "path_growth");
				for (k = 0; k < npg; k++) {
					strbuf_reset(&ps);
					(void)heap_path_group_format(last, &pg[k], &ps);
					ct_json_obj_begin(&j);
					ct_json_kv_str(&j, "path", ps.buf);
					ct_json_kv_arr_begin(&j, "count");
					ct_json_u64(&j, path_count_in(first, fp, gr[i].name, ps.buf));
					ct_json_u64(&j, pg[k].count);
					ct_json_arr_end(&j);
					ct_json_obj_end(&j);
				}
				ct_json_arr_end(&j);
				strbuf_release(&ps);
			}
			heap_path_groups_free(pg, npg);
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
	} else {
		printf("Types whose count and retained bytes grow in every one of %zu snapshots: %zu",
		       nsnap, ntop);
		if (ngr > ntop)
			printf(" (and %zu more growing types held by them)", ngr - ntop);
		printf("\n");
		for (i = 0; i < ngr; i++) {
			size_t j;

			if (holder[i] >= 0)
				continue;
			printf("\n  %s\n    count   ", cli_safe(gr[i].name));
			for (s = 0; s < nsnap; s++)
				printf("%s%s", s ? " -> " : "", thousands(gr[i].count[s], t1, sizeof(t1)));
			printf("\n    retained");
			for (s = 0; s < nsnap; s++)
				printf("%s%s", s ? " -> " : " ", thousands(gr[i].retained[s], t1, sizeof(t1)));
			printf(" bytes\n");
			if (p && with_paths[i]) {
				struct heap_path_group *pg = NULL;
				size_t npg = 0, k;
				uint64_t un;
				uint32_t t = heap_graph_type_find(last, gr[i].name);
				struct strbuf sb = STRBUF_INIT;

				if (t != HEAP_NONE && !heap_paths_group(last, p, a, t, 3, &pg, &npg, &un))
					for (k = 0; k < npg; k++) {
						strbuf_reset(&sb);
						(void)heap_path_group_format(last, &pg[k], &sb);
						if (fp)
							printf("    path (%" PRIu64 " -> %" PRIu64 " objects): %s\n",
							       path_count_in(first, fp, gr[i].name, sb.buf),
							       pg[k].count, cli_safe(sb.buf));
						else
							printf("    path (%" PRIu64 " objects in the last snapshot): %s\n",
							       pg[k].count, cli_safe(sb.buf));
					}
				heap_path_groups_free(pg, npg);
				strbuf_release(&sb);
			}
			for (j = 0; j < ngr; j++)
				if (holder[j] == (long)i)
					printf("    held by it, growing too: %s (count %" PRIu64 " -> %" PRIu64 ")\n",
					       cli_safe(gr[j].name), gr[j].count[0], gr[j].count[nsnap - 1]);
		}
	}
	free(holder);
	free(with_paths);
	heap_growth_free(gr, ngr);
	heap_paths_free(fp);
	heap_paths_free(p);
	heap_analysis_free(a);
	return code;
}

static int cmd_diff(int argc, char **argv)
{
	bool json = false;
	const struct cli_option opts[] = {
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the result as JSON" },
		{ 0 },
	};
	struct heap_typestat **stats = NULL;
	struct heap_graph **gs = NULL;
	size_t *nstats = NULL, n, i;
	int first, code;

	if (cli_parse(argc, argv, "clrtap gcdump diff A B [C ...] [--json]", opts, &first, &code))
		return code;
	n = (size_t)(argc - first);
	if (n < 2)
		return cli_error(EXIT_USAGE, "diff needs at least two snapshot files");
	if (n > 1000)
		return cli_error(EXIT_USAGE, "at most 1000 snapshots");
	stats = calloc(n, sizeof(*stats));
	nstats = calloc(n, sizeof(*nstats));
	gs = calloc(n, sizeof(*gs));
	if (!stats || !nstats || !gs) {
		code = cli_error(EXIT_ERROR, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct heap_analysis *a = NULL;

		code = load(argv[first + (int)i], &gs[i]);
		if (code)
			goto out;
		if (heap_analyze(gs[i], &a) || heap_typestats(gs[i], a, &stats[i], &nstats[i])) {
			heap_analysis_free(a);
			code = cli_error(EXIT_ERROR, "out of memory");
			goto out;
		}
		heap_analysis_free(a);
		/* only the last graph is kept (its paths are shown); the names of the others are needed */
	}
	code = print_growth(stats, nstats, n, gs[0], gs[n - 1], json, (const char *const *)(argv + first));
out:
	for (i = 0; stats && i < n; i++) {
		free(stats[i]);
		heap_graph_free(gs[i]);
	}
	free(stats);
	free(nstats);
	free(gs);
	return code;
}

static int gcdump_sub_watch(int argc, char **argv)
{
	struct target_args ta = { .gc_timeout_ms = 30000, .buffer_mb = 256, .max_objects = HEAP_MAX_NODES };
	const char *prefix = NULL;
	bool json = false;
	int count = 3;
	int64_t interval = 30000;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&ta.to),
		{ 0, "every", CLI_OPT_DURATION, &interval, "DUR", "time between snapshots (default 30s)" },
		{ 0, "snapshots", CLI_OPT_INT, &count, "N", "snapshots to take (default 3, at least 2)" },
		{ 0, "count", CLI_OPT_INT | CLI_DEPRECATED, &count, "N", "--snapshots" },
		{ 'o', "output", CLI_OPT_OUTPUT, &prefix, "PREFIX", "also write PREFIX-1.heap, PREFIX-2.heap, ..." },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the result as JSON" },
		TARGET_EXTRA(&ta),
		{ 0 },
	};
	struct heap_typestat **stats = NULL;
	size_t *nstats = NULL;
	char **labels = NULL;
	struct heap_graph *last = NULL, *firstg = NULL;
	int first, code, i, taken = 0;

	if (cli_parse(argc, argv, "clrtap gcdump watch (-p PID | -n NAME) [--every DUR] [--snapshots N]", opts,
		      &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (interval < 1 || interval > (int64_t)86400 * 1000)
		return cli_error(EXIT_USAGE, "--every must be more than 0 and at most 24h");
	if (count < 2 || count > 1000)
		return cli_error(EXIT_USAGE, "--snapshots must be 2..1000");
	if ((code = check_target_args(&ta)))
		return code;
	stats = calloc((size_t)count, sizeof(*stats));
	nstats = calloc((size_t)count, sizeof(*nstats));
	labels = calloc((size_t)count, sizeof(*labels));
	if (!stats || !nstats || !labels) {
		code = cli_error(EXIT_ERROR, "out of memory");
		goto out;
	}
	for (i = 0; i < count; i++) {
		struct heap_graph *g = NULL;
		struct heap_analysis *a = NULL;
		struct heap_typestat *ts = NULL;
		size_t k;
		char lbl[64];

		if (i) {
			int64_t waited = 0;

			while (waited < interval && !cli_stop_requested) {
				int64_t step = interval - waited < 100 ? interval - waited : 100;
				struct timespec ts2 = { step / 1000, (step % 1000) * 1000000 };

				nanosleep(&ts2, NULL);
				waited += step;
			}
			if (cli_stop_requested)
				break;
		}
		code = take_snapshot(&ta, &g);
		if (code && cli_stop_requested)
			break; /* Ctrl-C during a snapshot: compare those taken */
		if (code)
			goto out;
		if (prefix) {
			char path[4096];

			snprintf(path, sizeof(path), "%s-%d.heap", prefix, i + 1);
			if ((code = write_snapshot(g, path))) {
				heap_graph_free(g);
				goto out;
			}
		}
		if (heap_analyze(g, &a) || heap_typestats(g, a, &ts, &k)) {
			heap_analysis_free(a);
			heap_graph_free(g);
			code = cli_error(EXIT_ERROR, "out of memory");
			goto out;
		}
		heap_analysis_free(a);
		/* the names live in g: copy them so g can go */
		stats[i] = ts;
		nstats[i] = k;
		{
			size_t j;

			for (j = 0; j < k; j++)
				ts[j].name = strdup(ts[j].name);
			for (j = 0; j < k; j++)
				if (!ts[j].name) {
					heap_graph_free(g);
					code = cli_error(EXIT_ERROR, "out of memory");
					goto out;
				}
		}
		snprintf(lbl, sizeof(lbl), "snapshot %d", i + 1);
		labels[i] = strdup(lbl);
		cli_info("snapshot %d of %d: %u objects, %" PRIu64 " bytes", i + 1, count, g->nnodes,
			 heap_graph_bytes(g));
		if (last && last != firstg)
			heap_graph_free(last);
		if (!firstg)
			firstg = g;
		last = g;
		taken++;
	}
	if (taken < 2) {
		code = cli_error(taken ? EXIT_PARTIAL : EXIT_INTERRUPTED,
				 "interrupted after %d snapshot%s: nothing to compare", taken,
				 taken == 1 ? "" : "s");
		goto out;
	}
	code = print_growth(stats, nstats, (size_t)taken, firstg, last, json, (const char *const *)labels);
	if (!code && taken < count)
		code = cli_error(EXIT_PARTIAL, "interrupted: compared the %d snapshots taken", taken);
out:
	for (i = 0; stats && i < count; i++) {
		size_t j;

		for (j = 0; stats[i] && j < nstats[i]; j++)
			free((char *)stats[i][j].name);
		free(stats[i]);
		if (labels)
			free(labels[i]);
	}
	free(stats);
	free(nstats);
	free(labels);
	if (firstg != last)
		heap_graph_free(firstg);
	heap_graph_free(last);
	return code;
}

int cmd_gcdump(int argc, char **argv)
{
	if (argc < 2)
		return cli_error(EXIT_USAGE,
				 "say collect, report, diff or watch (see 'clrtap gcdump --help')");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		FILE *f = stdout;

		fprintf(f, "usage: " USAGE "\n\n"
			   "  collect (-p PID | -n NAME) [-o FILE]    take a heap snapshot into FILE\n"
			   "  report (FILE | -p PID) [--json] [--path TYPE] [--html FILE]\n"
			   "                                          types, retained sizes, paths, duplicated strings\n"
			   "  diff A B [C ...] [--json]               types that grow in every snapshot\n"
			   "  watch (-p PID) [--every 30s] [--count N] snapshots in a row; what only grows\n\n"
			   "Each snapshot forces a full, blocking gen-2 GC in the target.\n"
			   "'clrtap gcdump SUBCOMMAND --help' lists the options.\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "collect"))
		return cmd_collect(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "watch"))
		return gcdump_sub_watch(argc - 1, argv + 1);
	return cli_error(EXIT_USAGE, "unknown gcdump subcommand '%s' (collect, report, diff, watch)",
			 argv[1]);
}
