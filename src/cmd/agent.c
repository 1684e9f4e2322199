/* SPDX-License-Identifier: MIT */
/*
 * clrtap agent - attach clrtap's in-process profiler (libclrtap-profiler)
 * to a running .NET process, stream what it reports over EventPipe, and
 * detach it; or ask whether one is attached. docs/cmd/agent.md.
 */
#include "common/compat.h"

#include <poll.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/agent.h"
#include "cli.h"
#include "agent/natmem_proto.h"
#include "common/json.h"
#include "flame/flame.h"
#include "natmem/natmem.h"
#include "perfmap/perfmap.h"
#include "sym/sym.h"

/* Agent exit codes (docs/cmd/exit-codes.md). */

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

static int exit_for_cause(enum agent_cause c)
{
	switch (c) {
	case AGENT_OK:
		return EXIT_OK;
	case AGENT_NO_LIBRARY:
	case AGENT_NOT_IN_TARGET:
	case AGENT_PLACE_FAILED:
		return EXIT_AGENT_LIBRARY;
	case AGENT_WRONG_LIBC:
		return EXIT_AGENT_LIBC;
	case AGENT_SLOT_TAKEN:
	case AGENT_ALREADY:
		return EXIT_AGENT_SLOT;
	case AGENT_NO_ANSWER:
		return EXIT_PROTOCOL;
	default:
		return EXIT_RUNTIME;
	}
}

static const char *mode_name(uint32_t m)
{
	return m == PRF_MODE_NOTIFICATION ? "notification" : "main";
}

static void features_text(uint32_t f, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", f & PRF_FEAT_MODULES ? "modules," : "",
		 f & PRF_FEAT_JIT ? "jit-count," : "", f & PRF_FEAT_EXCEPTIONS ? "exception-count," : "",
		 f & PRF_FEAT_THREADS ? "thread-count," : "", f & PRF_FEAT_REJIT ? "rejit-probes," : "");
	if (f & PRF_FEAT_NATMEM)
		snprintf(buf + strlen(buf), len - strlen(buf), "native-memory,");
	if (buf[0])
		buf[strlen(buf) - 1] = '\0';
	else
		snprintf(buf, len, "none");
}

/* What a notification-only profiler cannot do (docs/internals/profiler.md). */
#define NOTIFICATION_EXCLUDES "ReJIT probes, IL rewriting, GC heap walks (MONITOR_GC)"

/* ------------------------------------------------------- native-memory */

/* `agent native-memory`: lib/natmem read while the session runs, the perf
 * map on for the run (managed names), the report after the detach. */
struct nm_cmd {
	struct natmem m;
	bool open, final, json;
	int open_err;
	int top;
	uint64_t interval;
	struct perfmap_use pm;
	bool pm_on;
	const struct proc_target *t;
	uint32_t slots, modules;
	int32_t install_err;
	const char *flame_out; /* -o: the live view as a flame graph */
};

static int nm_cmd_begin(struct nm_cmd **out, const struct proc_target *t, uint64_t interval, int top,
		 bool json)
{
	struct nm_cmd *c = calloc(1, sizeof(*c));
	struct ipc_error rerr = { 0 };

	if (!c)
		return -ENOMEM;
	c->m.fd = -1;
	c->t = t;
	c->interval = interval;
	c->top = top;
	c->json = json;
	perfmap_use_init(&c->pm);
	/* managed frames are named from the perf map: on for the run */
	c->pm_on = perfmap_use_begin(&c->pm, t, 5000, &rerr) == 0;
	*out = c;
	return 0;
}

/* One event of the session; returns 1 once the final read is done. */
static int nm_cmd_event(struct nm_cmd *c, const struct agent_event *ev, bool stop_now)
{
	if (ev->id == PRF_EV_NATMEM && !c->open) {
		c->install_err = ev->hresult;
		c->slots = ev->methods;
		c->modules = ev->spec;
		c->open_err = ev->hresult ? ev->hresult : natmem_open(&c->m, c->t->pid, ev->module_id);
		c->open = true;
		if (!c->open_err) /* stderr, also with --json: a script waits for it */
			cli_info("hooks in place: %u GOT slots in %u modules; sampling every %" PRIu64
				 " bytes on average", ev->methods, ev->spec, ev->seq);
		fflush(stdout);
		return 0;
	}
	if (!c->open || c->open_err || c->final)
		return 0;
	if (ev->id == PRF_EV_STATUS) {
		if (natmem_poll(&c->m))
			c->open_err = -EIO;
		if (stop_now && !c->open_err) {
			if (natmem_read_live(&c->m))
				c->open_err = -EIO;
			c->final = true;
			return 1;
		}
	}
	return 0;
}

/* -o FILE: the live view as a flame graph, weights in bytes. */
static int nm_write_flame(struct nm_cmd *c, struct sym_proc *sp)
{
	struct flame_opts fo = { .title = "clrtap agent native-memory: live at the end",
				 .unit = "bytes",
				 .notes = "estimated from sampled allocations (docs/internals/natmem.md)" };
	struct cli_outfile of = { .fd = -1 };
	struct flame *f = NULL;
	int fmt = flame_format_from_path(c->flame_out), code, err;

	if (flame_new(&f))
		return cli_error(EXIT_ERROR, "out of memory");
	err = natmem_flame(&c->m, sp, true, f);
	code = cli_outfile_open(&of, c->flame_out);
	if (!code) {
		err = err ? err : flame_write(f, (enum flame_format)fmt, of.fd, &fo);
		err = err ? err : cli_outfile_keep(&of, c->flame_out);
		if (cli_outfile_close(&of) && !err)
			err = -EIO;
		cli_outfile_drop(&of);
		code = err ? cli_error(EXIT_ERROR, "cannot write %s: %s", c->flame_out, strerror(-err))
			   : EXIT_OK;
		if (!code)
			cli_info("wrote %s", c->flame_out);
	}
	flame_free(f);
	return code;
}

static int nm_cmd_end(struct nm_cmd *c, bool detached)
{
	struct sym_opts so = { 0 };
	struct sym_proc *sp = NULL;
	struct ipc_error rerr = { 0 };
	uint32_t restored = 0, hooked = 0, unreadable = 0;
	int code = EXIT_OK;

	if (!c->open || c->open_err || !c->final) {
		code = cli_error(EXIT_PARTIAL, "%s",
				 !c->open ? "the profiler never said its hooks were in place"
				 : c->install_err ? "the profiler could not install its hooks"
				 : c->open_err ? "cannot read the profiler's tables in the target"
					       : "the session ended before the final read of the live table");
		goto out;
	}
	if (detached)
		natmem_got_check(&c->m, &restored, &hooked, &unreadable);
	if (c->pm_on) {
		perfmap_use_flush(&c->pm, &rerr);
		so.perfmap_tpath = c->pm.map_tpath[0] ? c->pm.map_tpath : NULL;
		so.jitdump_tpath = c->pm.jitdump ? c->pm.jitdump_tpath : NULL;
	} else {
		so.no_perfmap = true;
	}
	if (sym_proc_open(&sp, c->t->pid, &so))
		sp = NULL;
	if (c->json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)c->t->pid);
		ct_json_kv_u64(&j, "interval_bytes", c->m.h.interval);
		ct_json_kv_u64(&j, "got_slots", c->m.h.got_used);
		ct_json_kv_u64(&j, "modules", c->m.h.modules);
		ct_json_kv_u64(&j, "modules_other_allocator", c->m.h.modules_other);
		ct_json_kv_u64(&j, "samples", c->m.h.samples);
		ct_json_kv_u64(&j, "samples_read", c->m.ring_taken);
		ct_json_kv_u64(&j, "samples_lost", c->m.ring_lost);
		ct_json_kv_u64(&j, "torn", c->m.torn);
		ct_json_kv_u64(&j, "live_samples", c->m.live_taken);
		ct_json_kv_u64(&j, "live_table_overflow", c->m.h.overflow);
		ct_json_kv_u64(&j, "sampled_frees", c->m.h.frees);
		ct_json_kv_u64(&j, "walk_refused", c->m.h.walk_refused);
		ct_json_kv_u64(&j, "stacks_dropped", c->m.stacks_dropped);
		ct_json_kv_str(&j, "stack_reads", c->m.h.read_method == 2 ? "pipe" : "process_vm_readv");
		ct_json_kv_bool(&j, "perfmap", c->pm_on);
		ct_json_kv_obj_begin(&j, "restore");
		ct_json_kv_bool(&j, "checked", detached);
		ct_json_kv_u64(&j, "original", restored);
		ct_json_kv_u64(&j, "still_hooked", hooked);
		ct_json_kv_u64(&j, "other", unreadable);
		ct_json_obj_end(&j);
		natmem_report_json(&c->m, sp, c->top, &j);
		ct_json_obj_end(&j);
		if (cli_json_out(&j, stdout))
			code = EXIT_ERROR;
		strbuf_release(&sb);
	} else {
		printf("sampled %" PRIu64 " allocations (mean interval %" PRIu64 " bytes); %" PRIu64
		       " sampled pointers freed; %" PRIu64 " live at the end\n",
		       c->m.h.samples, c->m.h.interval, c->m.h.frees, c->m.live_taken);
		if (c->m.ring_lost || c->m.h.overflow || c->m.torn || c->m.stacks_dropped)
			printf("not seen: %" PRIu64 " samples overwritten before clrtap read them, %" PRIu64
			       " live samples the table had no room for, %" PRIu64
			       " read while being written, %" PRIu64 " beyond the stack cap\n",
			       c->m.ring_lost, c->m.h.overflow, c->m.torn, c->m.stacks_dropped);
		if (!c->pm_on)
			printf("managed frames are not named: the perf map could not be turned on\n");
		{
			struct strbuf sb = STRBUF_INIT;

			natmem_report_text(&c->m, sp, c->top, &sb);
			/* names are the target's: each line through cli_safe */
			for (char *l = sb.buf, *e; l && *l; l = e + 1) {
				e = strchr(l, '\n');
				if (!e)
					break;
				*e = '\0';
				printf("%s\n", cli_safe(l));
			}
			strbuf_release(&sb);
		}
		if (detached)
			printf("\nrestored: %u of %u GOT slots hold their original value again (read back "
			       "after the detach)%s\n", restored, c->m.h.got_used,
			       hooked ? "; SOME STILL HOLD THE HOOK" : "");
	}
	if (c->flame_out && code == EXIT_OK)
		code = nm_write_flame(c, sp);
	if (detached && hooked)
		code = EXIT_ERROR;
out:
	if (sp)
		sym_proc_close(sp);
	if (c->pm_on)
		perfmap_use_end(&c->pm, &rerr);
	natmem_close(&c->m);
	free(c);
	return code;
}

/* ------------------------------------------------------------- status */

struct status_ctx {
	bool got;
	struct agent_event st;
};

static int status_event(void *ctx, const struct agent_event *ev)
{
	struct status_ctx *s = ctx;

	if (ev->id != PRF_EV_STATUS)
		return 0;
	s->got = true;
	s->st = *ev;
	return 1;
}

/* Asks the profiler for one Status event (STATUS keyword only: this
 * session's end does not detach anything). */
static int query_status(const struct ipc_endpoint *ep, int timeout_ms, struct status_ctx *s,
			struct agent_session_result *res, struct ipc_error *rerr,
			volatile sig_atomic_t *stop)
{
	struct agent_session_opts o = { 0 };

	memset(s, 0, sizeof(*s));
	o.ep = ep;
	o.keywords = PRF_KW_STATUS;
	o.first_event_timeout_ms = timeout_ms;
	o.duration_ms = timeout_ms + 1000;
	o.on_event = status_event;
	o.ctx = s;
	o.stop = stop; /* NULL after Ctrl-C already ended a run: still ask */
	return agent_session_run(&o, res, rerr);
}

static int do_status(const struct proc_target *t, const struct ipc_endpoint *ep, bool json)
{
	struct agent_session_result res;
	struct ipc_error rerr = { 0 };
	struct status_ctx s;
	char mapped_path[PROC_PATH_MAX] = "", feat[128];
	bool mapped = false;
	int err;

	agent_library_mapped(t->pid, &mapped, mapped_path, sizeof(mapped_path));
	cli_catch_stop_signals();
	err = query_status(ep, 1500, &s, &res, &rerr, &cli_stop_requested);
	if (err)
		return cli_ipc_error("cannot open an EventPipe session", err, &rerr);
	features_text(s.st.features, feat, sizeof(feat));
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;
		int code;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t->pid);
		ct_json_kv_bool(&j, "attached", s.got);
		ct_json_kv_bool(&j, "library_mapped", mapped);
		ct_json_kv_str(&j, "library", mapped_path);
		if (s.got) {
			ct_json_kv_str(&j, "version", s.st.text);
			ct_json_kv_str(&j, "mode", mode_name(s.st.mode));
			ct_json_kv_str(&j, "state", s.st.state == PRF_STATE_DORMANT ? "dormant" : "active");
			ct_json_kv_str(&j, "features", feat);
			ct_json_kv_u64(&j, "generation", s.st.generation);
			ct_json_kv_u64(&j, "events_written", s.st.written);
			ct_json_kv_u64(&j, "write_errors", s.st.write_errors);
			ct_json_kv_u64(&j, "modules_loaded", s.st.modules);
			ct_json_kv_u64(&j, "jit_compiled", s.st.jit);
			ct_json_kv_u64(&j, "exceptions", s.st.exceptions);
			ct_json_kv_u64(&j, "threads_created", s.st.threads);
		}
		ct_json_kv_u64(&j, "events_lost_in_this_query", res.dropped);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		return code;
	}
	if (!s.got) {
		printf("clrtap profiler: not attached (none answered within 1.5 s)\n");
		if (mapped)
			printf("library: %s stays mapped from an earlier attach (the runtime "
			       "never unmaps a detached profiler on Linux)\n", cli_safe(mapped_path));
		return EXIT_OK;
	}
	printf("clrtap profiler: attached, mode %s, version %s, attach #%u of this library%s\n",
	       mode_name(s.st.mode), cli_safe(s.st.text), s.st.generation,
	       s.st.state == PRF_STATE_DORMANT
		       ? "; dormant: ReJIT probes were reverted, and a profiler that enabled ReJIT can "
			 "never detach"
		       : "");
	printf("features: %s%s\n", feat,
	       s.st.mode == PRF_MODE_NOTIFICATION ? " (notification mode: no " NOTIFICATION_EXCLUDES ")"
						  : "");
	printf("library: %s\n", mapped ? cli_safe(mapped_path) : "(not seen in maps)");
	printf("events written: %" PRIu64 ", write errors (dropped in the target): %" PRIu64 "\n",
	       s.st.written, s.st.write_errors);
	printf("counted since attach: %" PRIu64 " modules loaded, %" PRIu64 " JIT compilations, %"
	       PRIu64 " exceptions, %" PRIu64 " threads created\n",
	       s.st.modules, s.st.jit, s.st.exceptions, s.st.threads);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- run */

struct run_ctx {
	const struct ipc_endpoint *ep;
	const char *mode_opt;       /* auto, main, notification */
	const char *library;        /* path as the target sees it */
	char config[PRF_CONFIG_MAX];
	size_t config_len;
	enum agent_libc lib_libc, target_libc;
	pid_t pid;
	bool show_modules, json;
	char *const *specs;         /* probe specs (agent probe) */
	int nspecs;
	/* results */
	struct {
		bool seen;
		uint32_t methods;
		int32_t hr;
	} installed[PRF_MAX_SPECS];
	struct {
		bool seen;
		uint32_t spec, token;
		uint64_t count;
	} probe[PRF_MAX_PROBES];
	struct timespec t_installed;
	bool any_installed, args, progress, stack;
	uint64_t calls_seen;
	int mode;
	int32_t hr;
	enum agent_cause cause;
	bool attached, hello;
	struct agent_event hello_ev, last_status;
	bool have_status;
	uint64_t modules;
	struct timespec t_attach;
	/* native-memory */
	struct nm_cmd *nm;
	uint64_t nm_interval;
	int nm_top;
	int64_t nm_duration_ms;
	struct timespec t_nm;
	bool nm_seen;
};

/* Whether path, as the target sees it, is a regular file (looked up inside its root, not followed). */
static bool target_has_file(pid_t pid, const char *path)
{
	struct stat st;
	int rootfd, fd;
	bool reg;

	if (proc_root_open(pid, &rootfd))
		return false;
	if (proc_tpath_open(rootfd, path, 0, &fd)) {
		close(rootfd);
		return false;
	}
	reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	close(fd);
	close(rootfd);
	return reg;
}

static int try_attach(struct run_ctx *r, int mode)
{
	struct ipc_error rerr = { 0 };
	uint8_t clsid[16];
	int err;

	agent_clsid(mode, clsid);
	err = ipc_attach_profiler(r->ep, 10, clsid, r->library, r->config,
				  (uint32_t)r->config_len, &rerr);
	r->mode = mode;
	if (!err) {
		r->hr = 0;
		return 0;
	}
	if (err != -EREMOTEIO)
		return err;
	r->hr = rerr.hresult;
	return -EREMOTEIO;
}

static int run_on_open(void *ctx)
{
	struct run_ctx *r = ctx;
	bool auto_mode = !strcmp(r->mode_opt, "auto");
	int err;

	err = try_attach(r, !strcmp(r->mode_opt, "notification") ? PRF_MODE_NOTIFICATION
								  : PRF_MODE_MAIN);
	if (err == -EREMOTEIO && auto_mode && r->hr == IPC_E_PROFILER_ALREADY_ACTIVE) {
		if (!r->json)
			cli_info("the main profiler slot is taken; attaching as a notification "
				 "profiler (no " NOTIFICATION_EXCLUDES ")");
		err = try_attach(r, PRF_MODE_NOTIFICATION);
	}
	if (err == -EREMOTEIO) {
		r->cause = agent_cause_from_hresult(r->hr, r->lib_libc, r->target_libc,
						    target_has_file(r->pid, r->library));
		return 1;
	}
	if (err) {
		r->cause = AGENT_REFUSED;
		r->hr = 0;
		return err;
	}
	r->attached = true;
	clock_gettime(CLOCK_MONOTONIC, &r->t_attach);
	return 0;
}

static int rearm_on_open(void *ctx)
{
	struct run_ctx *r = ctx;

	r->attached = true;
	r->mode = PRF_MODE_MAIN;
	clock_gettime(CLOCK_MONOTONIC, &r->t_attach);
	return 0;
}

static int run_event(void *ctx, const struct agent_event *ev)
{
	struct run_ctx *r = ctx;
	char feat[128];

	if (r->nm) {
		struct timespec now;
		bool stop;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ev->id == PRF_EV_NATMEM && !r->nm_seen) {
			r->nm_seen = true;
			r->t_nm = now;
		}
		stop = cli_stop_requested ||
		       (r->nm_seen && r->nm_duration_ms &&
			(now.tv_sec - r->t_nm.tv_sec) * 1000 + (now.tv_nsec - r->t_nm.tv_nsec) / 1000000 >=
				r->nm_duration_ms);
		if (nm_cmd_event(r->nm, ev, stop))
			return 1; /* the live table is read: stop, the profiler puts the slots back */
	}
	switch (ev->id) {
	case PRF_EV_HELLO:
		r->hello = true;
		r->hello_ev = *ev;
		features_text(ev->features, feat, sizeof(feat));
		if (!r->json) {
			info("attached: pid %d, mode %s, profiler %s, runtime %u.%u.%u, features %s\n",
			       (int)r->pid, mode_name(ev->mode), cli_safe(ev->text), ev->rt_major, ev->rt_minor,
			       ev->rt_build, feat);
			fflush(stdout);
		}
		break;
	case PRF_EV_STATUS:
		r->have_status = true;
		r->last_status = *ev;
		break;
	case PRF_EV_PROBE_INSTALLED:
		if (ev->spec < PRF_MAX_SPECS) {
			r->installed[ev->spec].seen = true;
			r->installed[ev->spec].methods = ev->methods;
			r->installed[ev->spec].hr = ev->hresult;
		}
		if (!r->any_installed)
			clock_gettime(CLOCK_MONOTONIC, &r->t_installed);
		r->any_installed = true;
		if (!r->json) {
			if (ev->methods && !ev->hresult)
				info("probe %s: %u method%s, ReJIT requested\n", cli_safe(ev->text), ev->methods,
				       ev->methods == 1 ? "" : "s");
			else
				info("probe %s: %s (HRESULT 0x%08x)\n", cli_safe(ev->text),
				       ev->methods ? "ReJIT refused" : "no such method loaded",
				       (unsigned)ev->hresult);
			fflush(stdout);
		}
		break;
	case PRF_EV_CALL: {
		char line[4096], type[PRF_SPEC_MAX];

		r->calls_seen++;
		if (!r->json && ev->probe < PRF_MAX_PROBES && r->probe[ev->probe].seen) {
			const char *spec = r->specs[r->probe[ev->probe].spec % r->nspecs];
			const char *sep = strstr(spec, "::");

			/* the declared type of this: the method's class, from the spec */
			snprintf(type, sizeof(type), "%.*s", sep ? (int)(sep - spec) : 0, spec);
			if (g_probe_shape) {
				char ret[2048];

				if (!agent_call_format_split(ev, type[0] ? type : NULL, line, sizeof(line),
							     ret, sizeof(ret)))
					printf("%s%s = %s %.1fus [ReJIT]\n", cli_safe(spec), cli_safe(line),
					       cli_safe(ret), (double)ev->latency_ns / 1e3);
			} else if (!agent_call_format(ev, type[0] ? type : NULL, line, sizeof(line)))
				printf("call %s %s  %" PRIu64 " ns\n", cli_safe(spec), cli_safe(line), ev->latency_ns);
		} else if (!r->json && !agent_call_format(ev, NULL, line, sizeof(line))) {
			printf("call #%u %s  %" PRIu64 " ns\n", ev->probe, cli_safe(line), ev->latency_ns);
		}
		/* the managed stack EventPipe took when the call returned: leaf first, as IPs
		 * (clrtap probe names them from the perf map) */
		if (!r->json && ev->nstack) {
			printf("stack");
			for (uint32_t k = 0; k < ev->nstack; k++)
				printf(" 0x%" PRIx64, ev->stack[k]);
			putchar('\n');
		}
		if (!r->json)
			fflush(stdout); /* live: each call as it is seen, as probe does */
		break;
	}
	case PRF_EV_PROBE_COUNT:
		if (ev->probe < PRF_MAX_PROBES) {
			r->probe[ev->probe].seen = true;
			r->probe[ev->probe].spec = ev->spec;
			r->probe[ev->probe].token = ev->token;
			r->probe[ev->probe].count = ev->count;
			/* the count as it grows (clrtap probe checks its budget with it) */
			if (r->progress && !r->json) {
				printf("count %s [0x%08x]: %" PRIu64 "\n",
				       cli_safe(r->specs[ev->spec % r->nspecs]), ev->token, ev->count);
				fflush(stdout);
			}
		}
		break;
	case PRF_EV_MODULE:
		r->modules++;
		if (r->show_modules && !r->json) {
			info("module 0x%" PRIx64 " %s\n", ev->module_id, cli_safe(ev->text));
			fflush(stdout);
		}
		break;
	default:
		break;
	}
	return 0;
}

/* After a probe session ended: wait until the profiler says it reverted. */
static bool confirm_dormant(const struct ipc_endpoint *ep, int64_t budget_ms)
{
	struct agent_session_result res;
	struct ipc_error rerr;
	struct status_ctx s;

	for (int64_t spent = 0; spent <= budget_ms; spent += 700) {
		if (query_status(ep, 700, &s, &res, &rerr, NULL))
			return false;
		if (s.got && s.st.state == PRF_STATE_DORMANT)
			return true;
	}
	return false;
}

/* After the CONTROL session ended: wait until no profiler answers. */
static bool confirm_detached(const struct ipc_endpoint *ep, int64_t budget_ms, int64_t *took_ms)
{
	struct timespec a, b;
	struct agent_session_result res;
	struct ipc_error rerr;
	struct status_ctx s;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		int64_t el;

		if (query_status(ep, 700, &s, &res, &rerr, NULL))
			return false;
		clock_gettime(CLOCK_MONOTONIC, &b);
		el = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
		*took_ms = el;
		if (!s.got)
			return true;
		if (el > budget_ms)
			return false;
	}
}

static int do_run(const struct proc_target *t, const struct ipc_endpoint *ep, struct run_ctx *r,
		  const char *libc_opt, int64_t duration_ms)
{
	struct agent_session_opts o = { 0 };
	struct agent_session_result res;
	struct ipc_error rerr = { 0 };
	struct ipc_process_info pi;
	struct status_ctx sc;
	struct agent_config cfg = { 250, 10000, PRF_FEAT_DEFAULT };
	int code = EXIT_OK;
	char host_lib[PATH_MAX], placed[PROC_PATH_MAX], msg[512];
	bool reused = false, detached = false, dormant = false, library_given = r->library != NULL;
	bool rearm = false, mapped = false;
	char filter[PRF_CONFIG_MAX + 32];
	int64_t detach_ms = 0;
	int err;

	/* A runtime without ICorProfilerInfo14 cannot run the profiler. */
	if (!ipc_process_info(ep, &pi, &rerr)) {
		unsigned long major = pi.clr_version ? strtoul(pi.clr_version, NULL, 10) : 0;

		ipc_process_info_release(&pi);
		if (major && major < 8) {
			agent_cause_text(AGENT_TOO_OLD, 0, msg, sizeof(msg));
			return cli_error(EXIT_RUNTIME, "%s; this one is %lu", msg, major);
		}
	}
	/* One clrtap profiler at a time. A dormant one (left by earlier ReJIT
	 * probes, unable to detach) takes new probes through the session. */
	memset(&sc, 0, sizeof(sc));
	if (agent_library_mapped(t->pid, &mapped, NULL, 0) || mapped)
		(void)query_status(ep, 600, &sc, &res, &rerr, NULL); /* only if one may be there */
	if (sc.got) {
		if (sc.st.state == PRF_STATE_DORMANT && r->nspecs)
			rearm = true;
		else if (sc.st.state == PRF_STATE_DORMANT)
			return cli_error(EXIT_AGENT_SLOT,
					 "a clrtap profiler left dormant by earlier ReJIT probes holds "
					 "the main profiler slot: the runtime never lets a profiler "
					 "that enabled ReJIT detach; 'clrtap agent probe' reuses it, "
					 "but only a restart of the process frees the slot");
		else {
			agent_cause_text(AGENT_ALREADY, 0, msg, sizeof(msg));
			return cli_error(EXIT_AGENT_SLOT, "%s", msg);
		}
	}
	err = agent_libc_detect(t->pid, &r->target_libc);
	if (err)
		return cli_error(ct_exit_for(err), "cannot read the target's maps: %s",
				 strerror(-err));
	r->lib_libc = r->target_libc;
	if (libc_opt && agent_libc_parse(libc_opt, &r->lib_libc))
		return cli_error(EXIT_USAGE, "--libc takes glibc or musl");
	if (r->lib_libc == AGENT_LIBC_UNKNOWN)
		return cli_error(EXIT_ERROR, "cannot tell which C library the target uses; "
					     "say --libc glibc|musl");
	if (rearm) {
		r->library = "(already loaded)";
		library_given = true;
	}
	if (!r->library) {
		err = agent_library_host_path(r->lib_libc, host_lib, sizeof(host_lib));
		if (err) {
			agent_cause_text(AGENT_NO_LIBRARY, 0, msg, sizeof(msg));
			return cli_error(EXIT_AGENT_LIBRARY, "%s (looked for %s)", msg, host_lib);
		}
		err = agent_place(t, host_lib, r->lib_libc, placed, sizeof(placed), &reused);
		if (err) {
			agent_cause_text(AGENT_PLACE_FAILED, 0, msg, sizeof(msg));
			return cli_error(EXIT_AGENT_LIBRARY, "%s %s: %s", msg, t->tmpdir,
					 err == -EEXIST || err == -ELOOP
						 ? "a different file (or a symlink) holds the name; "
						   "clrtap neither follows nor replaces it"
						 : strerror(-err));
		}
		r->library = placed;
	}
	if (!r->json && rearm)
		info("reusing the dormant clrtap profiler (generation %u) for new probes\n",
		       sc.st.generation);
	else if (!r->json && !library_given) /* a given library is the user's own words */
		info("library: %s (%s build%s)\n", cli_safe(r->library), agent_libc_name(r->lib_libc),
		       reused ? ", already there" : "");
	if (!r->show_modules)
		cfg.features &= ~PRF_FEAT_MODULES;
	err = agent_config_encode(&cfg, r->config, sizeof(r->config), &r->config_len);
	for (int i = 0; !err && i < r->nspecs; i++) {
		err = agent_config_add_probe(r->config, sizeof(r->config), &r->config_len,
					     r->specs[i]);
		if (err == -EINVAL)
			return cli_error(EXIT_USAGE, "bad method '%s': say Namespace.Type::Method "
					 "or Namespace.Type::Method(int32,string,...)", r->specs[i]);
	}
	if (!err && r->args && r->config_len + 7 < sizeof(r->config)) {
		memcpy(r->config + r->config_len, ";args=1", 8);
		r->config_len += 7;
	}
	if (!err && r->nm) {
		int w = snprintf(r->config + r->config_len, sizeof(r->config) - r->config_len,
				 ";natmem=%" PRIu64, r->nm_interval);

		if (w < 0 || (size_t)w >= sizeof(r->config) - r->config_len)
			err = -ENOSPC;
		else
			r->config_len += (size_t)w;
	}
	if (!err && r->stack && r->config_len + 8 < sizeof(r->config)) {
		memcpy(r->config + r->config_len, ";stack=1", 9);
		r->config_len += 8;
	}
	if (err)
		return cli_error(EXIT_USAGE, "too many or too long methods");

	o.ep = ep;
	o.keywords = PRF_KW_CONTROL | PRF_KW_STATUS | (r->show_modules ? PRF_KW_MODULES : 0) |
		     (r->nspecs ? PRF_KW_PROBES : 0) | (r->args ? PRF_KW_CALLS : 0) |
		     (r->nm ? PRF_KW_NATMEM : 0);
	o.stackwalk = r->stack;
	o.stop = &cli_stop_requested;
	o.duration_ms = duration_ms;
	o.first_event_timeout_ms = 15000;
	o.on_event = run_event;
	o.on_open = run_on_open;
	o.ctx = r;
	o.flush_before_stop = true; /* final counts hold every call before the stop */
	if (r->nm) {
		/* run_event stops the session once it has read the live table
		 * (at -d, or on Ctrl-C); the session's own limit is a backstop */
		static volatile sig_atomic_t never;

		r->nm_duration_ms = duration_ms;
		o.stop = &never;
		o.duration_ms = duration_ms ? duration_ms + 15000 : 0;
	}
	if (rearm) {
		/* the new config rides in the session's filter data */
		snprintf(filter, sizeof(filter), "clrtap=rearm;%.*s", (int)r->config_len, r->config);
		o.arguments = filter;
		o.on_open = rearm_on_open;
	}
	cli_catch_stop_signals();
	err = agent_session_run(&o, &res, &rerr);
	if (err && !r->attached)
		return cli_ipc_error("cannot open the EventPipe session", err, &rerr);
	if (!r->attached) {
		agent_cause_text(r->cause, r->hr, msg, sizeof(msg));
		return cli_error(exit_for_cause(r->cause), "%s", msg);
	}
	if (!r->hello) {
		agent_cause_text(AGENT_NO_ANSWER, 0, msg, sizeof(msg));
		return cli_error(EXIT_PROTOCOL, "%s", msg);
	}
	if (!res.target_ended && !r->nspecs)
		detached = confirm_detached(ep, 5000, &detach_ms);
	if (!res.target_ended && r->nspecs)
		dormant = confirm_dormant(ep, 5000);
	if (r->nm) {
		code = nm_cmd_end(r->nm, detached);
		r->nm = NULL;
		if (!res.target_ended && !detached)
			return cli_error(EXIT_ERROR, "detach not confirmed: a clrtap profiler still answers");
		if (!r->json && detached)
			info("detached: the profiler left within %" PRId64 " ms\n", detach_ms);
		return code;
	}
	if (r->json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;
		char feat[128];

		features_text(r->hello_ev.features, feat, sizeof(feat));
		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t->pid);
		ct_json_kv_bool(&j, "attached", true);
		ct_json_kv_str(&j, "mode", mode_name(r->hello_ev.mode));
		ct_json_kv_str(&j, "version", r->hello_ev.text);
		ct_json_kv_str(&j, "libc", agent_libc_name(r->lib_libc));
		ct_json_kv_str(&j, "library", r->library);
		ct_json_kv_str(&j, "features", feat);
		ct_json_kv_u64(&j, "modules_reported", r->modules);
		ct_json_kv_u64(&j, "events", res.events);
		ct_json_kv_u64(&j, "events_lost", res.dropped);
		if (r->args)
			ct_json_kv_u64(&j, "calls_recorded", r->calls_seen);
		ct_json_kv_u64(&j, "write_errors", r->have_status ? r->last_status.write_errors : 0);
		ct_json_kv_u64(&j, "rejit_errors", r->have_status ? r->last_status.rejit_errors : 0);
		ct_json_kv_bool(&j, "target_ended", res.target_ended);
		ct_json_kv_bool(&j, "counts_final", res.flushed);
		ct_json_kv_bool(&j, "detach_confirmed", detached);
		ct_json_kv_u64(&j, "detach_ms", (uint64_t)detach_ms);
		if (r->nspecs) {
			ct_json_kv_bool(&j, "reverted_dormant", dormant);
			ct_json_kv_arr_begin(&j, "probes");
			for (int i = 0; i < PRF_MAX_PROBES; i++) {
				if (!r->probe[i].seen)
					continue;
				ct_json_obj_begin(&j);
				ct_json_kv_str(&j, "method", r->specs[r->probe[i].spec % r->nspecs]);
				ct_json_kv_u64(&j, "token", r->probe[i].token);
				ct_json_kv_u64(&j, "calls", r->probe[i].count);
				ct_json_obj_end(&j);
			}
			ct_json_arr_end(&j);
			ct_json_kv_arr_begin(&j, "installed");
			for (int i = 0; i < r->nspecs; i++) {
				ct_json_obj_begin(&j);
				ct_json_kv_str(&j, "method", r->specs[i]);
				ct_json_kv_u64(&j, "methods", r->installed[i].methods);
				ct_json_kv_u64(&j, "hresult", (uint32_t)r->installed[i].hr);
				ct_json_obj_end(&j);
			}
			ct_json_arr_end(&j);
		}
		ct_json_obj_end(&j);
		if (cli_json_out(&j, stdout))
			code = EXIT_ERROR;
		strbuf_release(&sb);
	} else {
		if (r->have_status)
			info("counted: %" PRIu64 " JIT compilations, %" PRIu64 " exceptions, %" PRIu64
			       " threads created, %" PRIu64 " modules; %" PRIu64
			       " events written, %" PRIu64 " write errors\n",
			       r->last_status.jit, r->last_status.exceptions,
			       r->last_status.threads, r->last_status.modules,
			       r->last_status.written, r->last_status.write_errors);
		if (res.dropped)
			info("events lost on the way: %" PRIu64 "\n", res.dropped);
		if (r->have_status && r->last_status.rejit_errors)
			info("ReJIT failed for %" PRIu64 " method version(s): they run their "
			       "original code, uncounted\n", r->last_status.rejit_errors);
		if (r->nspecs && !res.flushed)
			info("the counts below are from the profiler's last report before the "
			       "stop (it did not confirm a final flush): calls after it are missing\n");
		for (int i = 0; i < PRF_MAX_PROBES; i++) {
			if (!r->probe[i].seen)
				continue;
			if (g_probe_shape) {
				/* probe's summary: the method, then the count per code kind */
				info("%s [0x%08x]: %" PRIu64 " calls\n",
				     cli_safe(r->specs[r->probe[i].spec % r->nspecs]), r->probe[i].token,
				     r->probe[i].count);
				info("  [every tier] %" PRIu64 " calls (rejit)\n", r->probe[i].count);
			} else
				printf("calls %s [0x%08x]: %" PRIu64 "\n",
				       cli_safe(r->specs[r->probe[i].spec % r->nspecs]), r->probe[i].token,
				       r->probe[i].count);
		}
		if (res.target_ended)
			info("the target ended the session (process exited?)\n");
		else if (r->nspecs)
			info("%s\n", dormant ? "probes reverted (original IL back); the profiler "
						  "stays loaded but dormant: the runtime never lets a "
						  "profiler that enabled ReJIT detach"
						: "revert not confirmed");
		else if (detached)
			info("detached: the profiler left within %" PRId64 " ms (its library stays "
			       "mapped)\n", detach_ms);
		else
			info("detach not confirmed: a clrtap profiler still answers\n");
	}
	if (!res.target_ended && !detached && !dormant)
		return EXIT_ERROR;
	return code;
}

int cmd_agent(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	struct run_ctx r = { 0 };
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
	r.pid = t.pid;
	r.json = json;
	r.show_modules = modules;
	r.args = args;
	r.progress = progress;
	r.stack = stack;
	if (stack)
		r.args = args = true; /* a stack goes with a call's record */
	if ((args || progress) && !r.nspecs)
		return cli_error(EXIT_USAGE, "--args and --progress go with 'probe'");
	if (!strcmp(action, "native-memory")) {
		if (nm_cmd_begin(&r.nm, &t, interval, top, json))
			return cli_error(EXIT_ERROR, "out of memory");
		r.nm->flame_out = flame_out;
		r.nm_interval = interval;
		r.mode_opt = "main";
	}
	return do_run(&t, &ep, &r, libc_opt, duration_ms);
}
