/* SPDX-License-Identifier: MIT */
/*
 * clrtap agent - attach clrtap's in-process profiler (libclrtap-profiler)
 * to a running .NET process, stream what it reports over EventPipe, and
 * detach it; or ask whether one is attached. docs/cmd/agent.md.
 */
#include "common/compat.h"

#include <stdarg.h>

#include "agent/run.h"
#include "cli.h"
#include "agent/natmem_proto.h"
#include "flame/flame.h"

/*
 * `clrtap probe --via rejit`: probe's shape. Calls on stdout as probe prints
 * them ("Ns.Type::Method(args) = ret LATENCY [ReJIT]"); everything else on
 * stderr after "clrtap: ", the counts as probe's summary.
 */
static bool g_probe_shape; /* set when cmd_probe calls cmd_agent with argv[0] "probe" */

/* A status line: stdout for `agent`, stderr for `probe --via rejit`. */
static void info(const char *fmt, ...) PRINTF(1, 2);
static void info(const char *fmt, ...)
{
	FILE *f = g_probe_shape ? stderr : stdout;
	va_list ap;

	if (g_probe_shape)
		fputs("clrtap: ", f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fflush(f);
}

/* ------------------------------------------------------- native-memory */

/* -o FILE: the live view as a flame graph, weights in bytes. */
static int nm_write_flame(struct natmem_run *c, const char *path)
{
	struct flame_opts fo = { .title = "clrtap agent native-memory: live at the end",
				 .unit = "bytes",
				 .notes = "estimated from sampled allocations (docs/internals/natmem.md)" };
	struct flame *f = NULL;
	int code, err;

	if (flame_new(&f))
		return cli_error(EXIT_ERROR, "out of memory");
	err = natmem_flame(&c->m, c->sp, true, f);
	code = err ? cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-err))
		   : cli_write_flame(path, f, flame_format_from_path(path), &fo);
	if (!code)
		cli_info("wrote %s", path);
	flame_free(f);
	return code;
}

/* The report once the session ended; frees c. */
static int nm_end(struct natmem_run *c, bool detached, int top, bool json, const char *flame_out)
{
	const char *why = NULL;
	int code = EXIT_OK;

	if (natmem_run_finish(c, detached, &why)) {
		code = cli_error(EXIT_PARTIAL, "%s", why);
	} else if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		natmem_run_json(c, top, &j);
		if (cli_json_out(&j, stdout))
			code = EXIT_ERROR;
		strbuf_release(&sb);
	} else {
		struct strbuf sb = STRBUF_INIT;

		natmem_run_text(c, top, &sb);
		cli_print_lines(stdout, &sb); /* names are the target's */
		strbuf_release(&sb);
	}
	if (!why && flame_out && code == EXIT_OK)
		code = nm_write_flame(c, flame_out);
	if (!why && detached && c->hooked)
		code = EXIT_ERROR;
	natmem_run_end(c);
	return code;
}

/* ------------------------------------------------------------- status */

static int do_status(const struct proc_target *t, const struct ipc_endpoint *ep, bool json)
{
	struct agent_session_result res;
	struct ipc_error rerr = { 0 };
	struct agent_status s;
	char mapped_path[PROC_PATH_MAX] = "";
	bool mapped = false;
	int err;

	agent_library_mapped(t->pid, &mapped, mapped_path, sizeof(mapped_path));
	cli_catch_stop_signals();
	err = agent_status_query(ep, 1500, &s, &res, &rerr, &cli_stop_requested);
	if (err)
		return cli_ipc_error("cannot open an EventPipe session", err, &rerr);
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;
		int code;

		ct_json_init(&j, &sb);
		agent_status_json(&s, t->pid, mapped, mapped_path, res.dropped, &j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		return code;
	}
	{
		struct strbuf sb = STRBUF_INIT;

		agent_status_text(&s, mapped, mapped_path, &sb);
		cli_print_lines(stdout, &sb); /* the version and the path are the target's */
		strbuf_release(&sb);
	}
	return EXIT_OK;
}

/* ---------------------------------------------------------------- run */

struct run_view {
	bool json, library_given, hooks_said;
};

static void run_note(void *ctx, const struct agent_run *r, enum agent_note n)
{
	struct run_view *v = ctx;

	if (n == AGENT_NOTE_OPENING)
		cli_catch_stop_signals();
	else if (v->json)
		return;
	else if (n == AGENT_NOTE_NOTIFICATION)
		cli_info("the main profiler slot is taken; attaching as a notification "
			 "profiler (no " AGENT_NOTIFICATION_EXCLUDES ")");
	else if (n == AGENT_NOTE_PLACED && r->rearm)
		info("reusing the dormant clrtap profiler (generation %u) for new probes\n",
		     r->rearm_generation);
	else if (n == AGENT_NOTE_PLACED && !v->library_given) /* a given library is the user's own words */
		info("library: %s (%s build%s)\n", cli_safe(r->library), agent_libc_name(r->lib_libc),
		     r->reused ? ", already there" : "");
}

/* Each event as it comes (the run took it in already). */
static void run_show(void *ctx, const struct agent_run *r, const struct agent_event *ev)
{
	struct run_view *v = ctx;
	char feat[128];

	if (r->nm && ev->id == PRF_EV_NATMEM && !v->hooks_said && natmem_run_hooked(r->nm)) {
		v->hooks_said = true; /* stderr, also with --json: a script waits for it */
		cli_info("hooks in place: %u GOT slots in %u modules; sampling every %" PRIu64
			 " bytes on average", ev->methods, ev->spec, ev->seq);
	}
	if (v->json)
		return;
	if (ev->id == PRF_EV_HELLO) {
		agent_features_text(ev->features, feat, sizeof(feat));
		info("attached: pid %d, mode %s, profiler %s, runtime %u.%u.%u, features %s\n",
		     (int)r->pid, agent_mode_name(ev->mode), cli_safe(ev->text), ev->rt_major, ev->rt_minor,
		     ev->rt_build, feat);
	} else if (ev->id == PRF_EV_PROBE_INSTALLED) {
		if (ev->methods && !ev->hresult)
			info("probe %s: %u method%s, ReJIT requested\n", cli_safe(ev->text), ev->methods,
			     ev->methods == 1 ? "" : "s");
		else
			info("probe %s: %s (HRESULT 0x%08x)\n", cli_safe(ev->text),
			     ev->methods ? "ReJIT refused" : "no such method loaded", (unsigned)ev->hresult);
	} else if (ev->id == PRF_EV_CALL) {
		struct strbuf sb = STRBUF_INIT;

		agent_call_text(r, ev, g_probe_shape, &sb);
		cli_print_lines(stdout, &sb); /* live: each call as it is seen, as probe does */
		strbuf_release(&sb);
	} else if (ev->id == PRF_EV_PROBE_COUNT && ev->probe < PRF_MAX_PROBES && r->progress) {
		/* the count as it grows (clrtap probe checks its budget with it) */
		printf("count %s [0x%08x]: %" PRIu64 "\n", cli_safe(r->specs[ev->spec % r->nspecs]),
		       ev->token, ev->count);
	} else if (ev->id == PRF_EV_MODULE && r->show_modules) {
		info("module 0x%" PRIx64 " %s\n", ev->module_id, cli_safe(ev->text));
	}
	fflush(stdout);
}

/* The summary of a run or probe session as text. */
static void run_text(const struct agent_run *r)
{
	const struct agent_event *st = &r->last_status;

	if (r->have_status)
		info("counted: %" PRIu64 " JIT compilations, %" PRIu64 " exceptions, %" PRIu64
		     " threads created, %" PRIu64 " modules; %" PRIu64 " events written, %" PRIu64
		     " write errors\n", st->jit, st->exceptions, st->threads, st->modules, st->written,
		     st->write_errors);
	if (r->res.dropped)
		info("events lost on the way: %" PRIu64 "\n", r->res.dropped);
	if (r->have_status && st->rejit_errors)
		info("ReJIT failed for %" PRIu64 " method version(s): they run their "
		     "original code, uncounted\n", st->rejit_errors);
	if (r->nspecs && !r->res.flushed)
		info("the counts below are from the profiler's last report before the "
		     "stop (it did not confirm a final flush): calls after it are missing\n");
	for (int i = 0; i < PRF_MAX_PROBES; i++) {
		const char *spec = r->specs ? r->specs[r->probe[i].spec % r->nspecs] : "";

		if (!r->probe[i].seen)
			continue;
		if (g_probe_shape) {
			/* probe's summary: the method, then the count per code kind */
			info("%s [0x%08x]: %" PRIu64 " calls\n", cli_safe(spec), r->probe[i].token,
			     r->probe[i].count);
			info("  [every tier] %" PRIu64 " calls (rejit)\n", r->probe[i].count);
		} else
			printf("calls %s [0x%08x]: %" PRIu64 "\n", cli_safe(spec), r->probe[i].token,
			       r->probe[i].count);
	}
	if (r->res.target_ended)
		info("the target ended the session (process exited?)\n");
	else if (r->nspecs)
		info("%s\n", r->dormant ? "probes reverted (original IL back); the profiler "
					  "stays loaded but dormant: the runtime never lets a "
					  "profiler that enabled ReJIT detach"
					: "revert not confirmed");
	else if (r->detached)
		info("detached: the profiler left within %" PRId64 " ms (its library stays "
		     "mapped)\n", r->detach_ms);
	else
		info("detach not confirmed: a clrtap profiler still answers\n");
}

static int do_run(const struct proc_target *t, struct agent_run *r, bool json, int top,
		  const char *flame_out)
{
	struct run_view v = { .json = json, .library_given = r->library != NULL };
	int code;

	r->note = run_note;
	r->on_event = run_show;
	r->ctx = &v;
	r->stop = &cli_stop_requested;
	code = agent_run_go(r, t);
	if (code && r->ipc_err)
		code = cli_ipc_error("cannot open the EventPipe session", r->ipc_err, &r->rerr);
	else if (code)
		code = cli_error(code, "%s", r->msg);
	if (code) {
		natmem_run_end(r->nm);
		return code;
	}
	if (r->nm) {
		code = nm_end(r->nm, r->detached, top, json, flame_out);
		r->nm = NULL;
		if (!r->res.target_ended && !r->detached)
			return cli_error(EXIT_ERROR, "detach not confirmed: a clrtap profiler still answers");
		if (!json && r->detached)
			info("detached: the profiler left within %" PRId64 " ms\n", r->detach_ms);
		return code;
	}
	code = EXIT_OK;
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		agent_run_json(r, t, &j);
		if (cli_json_out(&j, stdout))
			code = EXIT_ERROR;
		strbuf_release(&sb);
	} else {
		run_text(r);
	}
	if (!r->res.target_ended && !r->detached && !r->dormant)
		return EXIT_ERROR;
	return code;
}

int cmd_agent(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	struct agent_run r = { 0 };
	const char *libc_opt = NULL, *mode = "auto", *library = NULL, *action;
	bool json = false, modules = false, args = false, progress = false, stack = false;
	int64_t duration_ms = 0;
	uint64_t interval = NM_DEFAULT_INTERVAL;
	const char *flame_out = NULL;
	int top = 10;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 'd', "duration", CLI_OPT_DURATION, &duration_ms, "DUR", "run, probe: detach after DUR (default, or 0: Ctrl-C)" },
		{ 0, "seconds", CLI_OPT_DURATION | CLI_DEPRECATED, &duration_ms, "S", "-d/--duration" },
		{ 0, "mode", CLI_OPT_STRING, &mode, "MODE",
		  "run: auto (default: main, or notification if the slot is taken), main, notification" },
		{ 0, "libc", CLI_OPT_STRING, &libc_opt, "LIBC",
		  "run: glibc or musl build (default: what the target maps)" },
		{ 0, "library", CLI_OPT_STRING, &library, "PATH",
		  "run: use this library path as the target sees it (no copy)" },
		{ 0, "modules", CLI_OPT_BOOL, &modules, NULL, "run: print each module loaded" },
		{ 'a', "args", CLI_OPT_BOOL, &args, NULL,
		  "probe: record each call's arguments, return value and latency" },
		{ 's', "stack", CLI_OPT_BOOL, &stack, NULL,
		  "probe: with --args, each call's managed stack (IPs, leaf first) on a 'stack' line" },
		{ 0, "progress", CLI_OPT_BOOL, &progress, NULL,
		  "probe: print each method's count as the profiler reports it (every 250 ms)" },
		{ 0, "sample-bytes", CLI_OPT_SIZE, &interval, "BYTES",
		  "native-memory: mean bytes between sampled allocations (default 512KiB; 1KiB..16GiB)" },
		{ 0, "top", CLI_OPT_INT, &top, "N", "native-memory: stacks per view (default 10)" },
		{ 'o', "output", CLI_OPT_OUTPUT, &flame_out, "FILE",
		  "native-memory: the live view as a flame graph (.html .svg .folded .speedscope.json .pb.gz)" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the result as JSON" },
		{ 0 },
	};
	struct ipc_endpoint ep;
	struct proc_target t;
	int first, code;

	g_probe_shape = argc > 0 && !strcmp(argv[0], "probe");
	if (cli_parse(argc, argv,
		      "clrtap agent run|status|probe|native-memory (-p PID | -n NAME) [METHOD...] [options]", opts,
		      &first, &code))
		return code;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "say 'run', 'status', 'probe' or 'native-memory'");
	action = argv[first];
	if (strcmp(action, "run") && strcmp(action, "status") && strcmp(action, "probe") &&
	    strcmp(action, "native-memory"))
		return cli_error(EXIT_USAGE,
				 "unknown action '%s': say 'run', 'status', 'probe' or 'native-memory'",
				 action);
	if (interval < 1024 || interval > (16ull << 30))
		return cli_error(EXIT_USAGE, "--sample-bytes must be 1KiB..16GiB");
	if (top < 1 || top > 1000)
		return cli_error(EXIT_USAGE, "--top must be 1..1000");
	if (flame_out && strcmp(action, "native-memory"))
		return cli_error(EXIT_USAGE, "-o goes with 'native-memory'");
	if (flame_out && flame_format_from_path(flame_out) < 0)
		return cli_error(EXIT_USAGE, "-o: say .html, .svg, .folded, .speedscope.json or .pb.gz");
	if (!strcmp(action, "native-memory") && !strcmp(mode, "notification"))
		return cli_error(EXIT_USAGE, "native-memory needs the main profiler slot");
	if (!strcmp(action, "probe")) {
		if (first + 1 >= argc)
			return cli_error(EXIT_USAGE, "name at least one method: Namespace.Type::Method");
		if (argc - first - 1 > PRF_MAX_SPECS)
			return cli_error(EXIT_USAGE, "at most %d methods", PRF_MAX_SPECS);
		if (!strcmp(mode, "notification"))
			return cli_error(EXIT_USAGE, "ReJIT probes need the main profiler slot");
		mode = "main";
		r.specs = argv + first + 1;
		r.nspecs = argc - first - 1;
	} else if (first + 1 < argc) {
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	}
	if (strcmp(mode, "auto") && strcmp(mode, "main") && strcmp(mode, "notification"))
		return cli_error(EXIT_USAGE, "--mode takes auto, main or notification");
	if (library && library[0] != '/')
		return cli_error(EXIT_USAGE, "--library needs an absolute path (as the target sees it)");
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	if (!strcmp(action, "status"))
		return do_status(&t, &ep, json);
	r.ep = &ep;
	r.mode_opt = mode;
	r.library = library;
	r.libc_opt = libc_opt;
	r.pid = t.pid;
	r.duration_ms = duration_ms;
	r.show_modules = modules;
	r.args = args || stack; /* a stack goes with a call's record */
	r.progress = progress;
	r.stack = stack;
	if ((r.args || progress) && !r.nspecs)
		return cli_error(EXIT_USAGE, "--args and --progress go with 'probe'");
	if (!strcmp(action, "native-memory")) {
		if (natmem_run_begin(&r.nm, &t))
			return cli_error(EXIT_ERROR, "out of memory");
		r.nm_interval = interval;
		r.mode_opt = "main";
	}
	return do_run(&t, &r, json, top, flame_out);
}
