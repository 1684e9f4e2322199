/* SPDX-License-Identifier: MIT */
/* The agent's run workflow (run.h). */
#include "common/compat.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/run.h"
#include "common/exitcode.h"

int agent_cause_exit(enum agent_cause c)
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

const char *agent_mode_name(uint32_t m)
{
	return m == PRF_MODE_NOTIFICATION ? "notification" : "main";
}

void agent_features_text(uint32_t f, char *buf, size_t len)
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

/* ------------------------------------------------------------- status */

static int status_event(void *ctx, const struct agent_event *ev)
{
	struct agent_status *s = ctx;

	if (ev->id != PRF_EV_STATUS)
		return 0;
	s->got = true;
	s->st = *ev;
	return 1;
}

int agent_status_query(const struct ipc_endpoint *ep, int timeout_ms, struct agent_status *s,
		       struct agent_session_result *res, struct ipc_error *rerr, volatile sig_atomic_t *stop)
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

void agent_status_json(const struct agent_status *s, pid_t pid, bool mapped, const char *mapped_path,
		       uint64_t lost, struct ct_json *j)
{
	char feat[128];

	agent_features_text(s->st.features, feat, sizeof(feat));
	ct_json_obj_begin(j);
	ct_json_kv_u64(j, "pid", (uint64_t)pid);
	ct_json_kv_bool(j, "attached", s->got);
	ct_json_kv_bool(j, "library_mapped", mapped);
	ct_json_kv_str(j, "library", mapped_path);
	if (s->got) {
		ct_json_kv_str(j, "version", s->st.text);
		ct_json_kv_str(j, "mode", agent_mode_name(s->st.mode));
		ct_json_kv_str(j, "state", s->st.state == PRF_STATE_DORMANT ? "dormant" : "active");
		ct_json_kv_str(j, "features", feat);
		ct_json_kv_u64(j, "generation", s->st.generation);
		ct_json_kv_u64(j, "events_written", s->st.written);
		ct_json_kv_u64(j, "write_errors", s->st.write_errors);
		ct_json_kv_u64(j, "modules_loaded", s->st.modules);
		ct_json_kv_u64(j, "jit_compiled", s->st.jit);
		ct_json_kv_u64(j, "exceptions", s->st.exceptions);
		ct_json_kv_u64(j, "threads_created", s->st.threads);
	}
	ct_json_kv_u64(j, "events_lost_in_this_query", lost);
	ct_json_obj_end(j);
}

void agent_status_text(const struct agent_status *s, bool mapped, const char *mapped_path, struct strbuf *sb)
{
	char feat[128];

	if (!s->got) {
		strbuf_addstr(sb, "clrtap profiler: not attached (none answered within 1.5 s)\n");
		if (mapped)
			strbuf_addf(sb, "library: %s stays mapped from an earlier attach (the runtime "
				    "never unmaps a detached profiler on Linux)\n", mapped_path);
		return;
	}
	agent_features_text(s->st.features, feat, sizeof(feat));
	strbuf_addf(sb, "clrtap profiler: attached, mode %s, version %s, attach #%u of this library%s\n",
		    agent_mode_name(s->st.mode), s->st.text, s->st.generation,
		    s->st.state == PRF_STATE_DORMANT
			    ? "; dormant: ReJIT probes were reverted, and a profiler that enabled ReJIT can "
			      "never detach"
			    : "");
	strbuf_addf(sb, "features: %s%s\n", feat,
		    s->st.mode == PRF_MODE_NOTIFICATION
			    ? " (notification mode: no " AGENT_NOTIFICATION_EXCLUDES ")"
			    : "");
	strbuf_addf(sb, "library: %s\n", mapped ? mapped_path : "(not seen in maps)");
	strbuf_addf(sb, "events written: %" PRIu64 ", write errors (dropped in the target): %" PRIu64 "\n",
		    s->st.written, s->st.write_errors);
	strbuf_addf(sb, "counted since attach: %" PRIu64 " modules loaded, %" PRIu64 " JIT compilations, %"
		    PRIu64 " exceptions, %" PRIu64 " threads created\n",
		    s->st.modules, s->st.jit, s->st.exceptions, s->st.threads);
}

/* After a probe session ended: wait until the profiler says it reverted. */
static bool confirm_dormant(const struct ipc_endpoint *ep, int64_t budget_ms)
{
	struct agent_session_result res;
	struct ipc_error rerr;
	struct agent_status s;

	for (int64_t spent = 0; spent <= budget_ms; spent += 700) {
		if (agent_status_query(ep, 700, &s, &res, &rerr, NULL))
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
	struct agent_status s;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		int64_t el;

		if (agent_status_query(ep, 700, &s, &res, &rerr, NULL))
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

/* ---------------------------------------------------------------- run */

void agent_call_text(const struct agent_run *r, const struct agent_event *ev, bool probe_shape,
		     struct strbuf *sb)
{
	char line[4096], type[PRF_SPEC_MAX];

	if (ev->probe < PRF_MAX_PROBES && r->probe[ev->probe].seen) {
		const char *spec = r->specs[r->probe[ev->probe].spec % r->nspecs];
		const char *sep = strstr(spec, "::");

		/* the declared type of this: the method's class, from the spec */
		snprintf(type, sizeof(type), "%.*s", sep ? (int)(sep - spec) : 0, spec);
		if (probe_shape) {
			char ret[2048];

			if (!agent_call_format_split(ev, type[0] ? type : NULL, line, sizeof(line), ret,
						     sizeof(ret)))
				strbuf_addf(sb, "%s%s = %s %.1fus [ReJIT]\n", spec, line, ret,
					    (double)ev->latency_ns / 1e3);
		} else if (!agent_call_format(ev, type[0] ? type : NULL, line, sizeof(line)))
			strbuf_addf(sb, "call %s %s  %" PRIu64 " ns\n", spec, line, ev->latency_ns);
	} else if (!agent_call_format(ev, NULL, line, sizeof(line))) {
		strbuf_addf(sb, "call #%u %s  %" PRIu64 " ns\n", ev->probe, line, ev->latency_ns);
	}
	/* the managed stack EventPipe took when the call returned: leaf first, as IPs
	 * (clrtap probe names them from the perf map) */
	if (ev->nstack) {
		strbuf_addstr(sb, "stack");
		for (uint32_t k = 0; k < ev->nstack; k++)
			strbuf_addf(sb, " 0x%" PRIx64, ev->stack[k]);
		strbuf_addch(sb, '\n');
	}
}

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

static int try_attach(struct agent_run *r, int mode)
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
	struct agent_run *r = ctx;
	bool auto_mode = !strcmp(r->mode_opt, "auto");
	int err;

	err = try_attach(r, !strcmp(r->mode_opt, "notification") ? PRF_MODE_NOTIFICATION
								  : PRF_MODE_MAIN);
	if (err == -EREMOTEIO && auto_mode && r->hr == IPC_E_PROFILER_ALREADY_ACTIVE) {
		r->note(r->ctx, r, AGENT_NOTE_NOTIFICATION);
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
	struct agent_run *r = ctx;

	r->attached = true;
	r->mode = PRF_MODE_MAIN;
	clock_gettime(CLOCK_MONOTONIC, &r->t_attach);
	return 0;
}

static int run_event(void *ctx, const struct agent_event *ev)
{
	struct agent_run *r = ctx;

	if (r->nm) {
		struct timespec now;
		bool stop;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ev->id == PRF_EV_NATMEM && !r->nm_seen) {
			r->nm_seen = true;
			r->t_nm = now;
		}
		stop = *r->stop ||
		       (r->nm_seen && r->duration_ms &&
			(now.tv_sec - r->t_nm.tv_sec) * 1000 + (now.tv_nsec - r->t_nm.tv_nsec) / 1000000 >=
				r->duration_ms);
		if (natmem_run_event(r->nm, ev, stop))
			return 1; /* the live table is read: stop, the profiler puts the slots back */
	}
	switch (ev->id) {
	case PRF_EV_HELLO:
		r->hello = true;
		r->hello_ev = *ev;
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
		break;
	case PRF_EV_CALL:
		r->calls_seen++;
		break;
	case PRF_EV_PROBE_COUNT:
		if (ev->probe < PRF_MAX_PROBES) {
			r->probe[ev->probe].seen = true;
			r->probe[ev->probe].spec = ev->spec;
			r->probe[ev->probe].token = ev->token;
			r->probe[ev->probe].count = ev->count;
		}
		break;
	case PRF_EV_MODULE:
		r->modules++;
		break;
	default:
		break;
	}
	r->on_event(r->ctx, r, ev);
	return 0;
}

static int fail(struct agent_run *r, int code, const char *fmt, ...) PRINTF(3, 4);
static int fail(struct agent_run *r, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Refuses a runtime without ICorProfilerInfo14 and a second clrtap profiler (a dormant one takes probes). */
static int check_target(struct agent_run *r, const struct proc_target *t)
{
	struct agent_session_result res;
	struct ipc_error rerr = { 0 };
	struct ipc_process_info pi;
	struct agent_status sc;
	char msg[400];
	bool mapped = false;

	if (!ipc_process_info(r->ep, &pi, &rerr)) {
		unsigned long major = pi.clr_version ? strtoul(pi.clr_version, NULL, 10) : 0;

		ipc_process_info_release(&pi);
		if (major && major < 8) {
			agent_cause_text(AGENT_TOO_OLD, 0, msg, sizeof(msg));
			return fail(r, EXIT_RUNTIME, "%s; this one is %lu", msg, major);
		}
	}
	memset(&sc, 0, sizeof(sc));
	if (agent_library_mapped(t->pid, &mapped, NULL, 0) || mapped)
		(void)agent_status_query(r->ep, 600, &sc, &res, &rerr, NULL); /* only if one may be there */
	if (!sc.got)
		return EXIT_OK;
	if (sc.st.state == PRF_STATE_DORMANT && r->nspecs) {
		r->rearm = true;
		r->rearm_generation = sc.st.generation;
		return EXIT_OK;
	}
	if (sc.st.state == PRF_STATE_DORMANT)
		return fail(r, EXIT_AGENT_SLOT, "a clrtap profiler left dormant by earlier ReJIT probes holds "
			    "the main profiler slot: the runtime never lets a profiler "
			    "that enabled ReJIT detach; 'clrtap agent probe' reuses it, "
			    "but only a restart of the process frees the slot");
	agent_cause_text(AGENT_ALREADY, 0, msg, sizeof(msg));
	return fail(r, EXIT_AGENT_SLOT, "%s", msg);
}

/* The C library of the target and of the build to load, and the library placed in the target. */
static int choose_library(struct agent_run *r, const struct proc_target *t)
{
	char host_lib[PATH_MAX], msg[400];
	int err;

	err = agent_libc_detect(t->pid, &r->target_libc);
	if (err)
		return fail(r, ct_exit_for(err), "cannot read the target's maps: %s", strerror(-err));
	r->lib_libc = r->target_libc;
	if (r->libc_opt && agent_libc_parse(r->libc_opt, &r->lib_libc))
		return fail(r, EXIT_USAGE, "--libc takes glibc or musl");
	if (r->lib_libc == AGENT_LIBC_UNKNOWN)
		return fail(r, EXIT_ERROR, "cannot tell which C library the target uses; "
					   "say --libc glibc|musl");
	if (r->rearm)
		r->library = "(already loaded)";
	if (r->library)
		return EXIT_OK;
	err = agent_library_host_path(r->lib_libc, host_lib, sizeof(host_lib));
	if (err) {
		agent_cause_text(AGENT_NO_LIBRARY, 0, msg, sizeof(msg));
		return fail(r, EXIT_AGENT_LIBRARY, "%s (looked for %s)", msg, host_lib);
	}
	err = agent_place(t, host_lib, r->lib_libc, r->placed, sizeof(r->placed), &r->reused);
	if (err) {
		agent_cause_text(AGENT_PLACE_FAILED, 0, msg, sizeof(msg));
		return fail(r, EXIT_AGENT_LIBRARY, "%s %s: %s", msg, t->tmpdir,
			    err == -EEXIST || err == -ELOOP
				    ? "a different file (or a symlink) holds the name; "
				      "clrtap neither follows nor replaces it"
				    : strerror(-err));
	}
	r->library = r->placed;
	return EXIT_OK;
}

/* The profiler's config (client data): features, probes, args, natmem, stack. */
static int build_config(struct agent_run *r)
{
	struct agent_config cfg = { 250, 10000, PRF_FEAT_DEFAULT };
	int err;

	if (!r->show_modules)
		cfg.features &= ~PRF_FEAT_MODULES;
	err = agent_config_encode(&cfg, r->config, sizeof(r->config), &r->config_len);
	for (int i = 0; !err && i < r->nspecs; i++) {
		err = agent_config_add_probe(r->config, sizeof(r->config), &r->config_len, r->specs[i]);
		if (err == -EINVAL)
			return fail(r, EXIT_USAGE, "bad method '%s': say Namespace.Type::Method "
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
		return fail(r, EXIT_USAGE, "too many or too long methods");
	return EXIT_OK;
}

int agent_run_go(struct agent_run *r, const struct proc_target *t)
{
	static volatile sig_atomic_t never;
	struct agent_session_opts o = { 0 };
	char filter[PRF_CONFIG_MAX + 32], msg[400];
	int code, err;

	code = check_target(r, t);
	code = code ? code : choose_library(r, t);
	if (code)
		return code;
	r->note(r->ctx, r, AGENT_NOTE_PLACED);
	code = build_config(r);
	if (code)
		return code;
	o.ep = r->ep;
	o.keywords = PRF_KW_CONTROL | PRF_KW_STATUS | (r->show_modules ? PRF_KW_MODULES : 0) |
		     (r->nspecs ? PRF_KW_PROBES : 0) | (r->args ? PRF_KW_CALLS : 0) |
		     (r->nm ? PRF_KW_NATMEM : 0);
	o.stackwalk = r->stack;
	o.stop = r->stop;
	o.duration_ms = r->duration_ms;
	o.first_event_timeout_ms = 15000;
	o.on_event = run_event;
	o.on_open = run_on_open;
	o.ctx = r;
	o.flush_before_stop = true; /* final counts hold every call before the stop */
	if (r->nm) {
		/* run_event stops the session once it has read the live table
		 * (at -d, or on Ctrl-C); the session's own limit is a backstop */
		o.stop = &never;
		o.duration_ms = r->duration_ms ? r->duration_ms + 15000 : 0;
	}
	if (r->rearm) {
		/* the new config rides in the session's filter data */
		snprintf(filter, sizeof(filter), "clrtap=rearm;%.*s", (int)r->config_len, r->config);
		o.arguments = filter;
		o.on_open = rearm_on_open;
	}
	r->note(r->ctx, r, AGENT_NOTE_OPENING);
	err = agent_session_run(&o, &r->res, &r->rerr);
	if (err && !r->attached) {
		r->ipc_err = err;
		return fail(r, ct_exit_for(err), "cannot open the EventPipe session");
	}
	if (!r->attached) {
		agent_cause_text(r->cause, r->hr, msg, sizeof(msg));
		return fail(r, agent_cause_exit(r->cause), "%s", msg);
	}
	if (!r->hello) {
		agent_cause_text(AGENT_NO_ANSWER, 0, msg, sizeof(msg));
		return fail(r, EXIT_PROTOCOL, "%s", msg);
	}
	if (!r->res.target_ended && !r->nspecs)
		r->detached = confirm_detached(r->ep, 5000, &r->detach_ms);
	if (!r->res.target_ended && r->nspecs)
		r->dormant = confirm_dormant(r->ep, 5000);
	return EXIT_OK;
}

void agent_run_json(const struct agent_run *r, const struct proc_target *t, struct ct_json *j)
{
	char feat[128];

	agent_features_text(r->hello_ev.features, feat, sizeof(feat));
	ct_json_obj_begin(j);
	ct_json_kv_u64(j, "pid", (uint64_t)t->pid);
	ct_json_kv_bool(j, "attached", true);
	ct_json_kv_str(j, "mode", agent_mode_name(r->hello_ev.mode));
	ct_json_kv_str(j, "version", r->hello_ev.text);
	ct_json_kv_str(j, "libc", agent_libc_name(r->lib_libc));
	ct_json_kv_str(j, "library", r->library);
	ct_json_kv_str(j, "features", feat);
	ct_json_kv_u64(j, "modules_reported", r->modules);
	ct_json_kv_u64(j, "events", r->res.events);
	ct_json_kv_u64(j, "events_lost", r->res.dropped);
	if (r->args)
		ct_json_kv_u64(j, "calls_recorded", r->calls_seen);
	ct_json_kv_u64(j, "write_errors", r->have_status ? r->last_status.write_errors : 0);
	ct_json_kv_u64(j, "rejit_errors", r->have_status ? r->last_status.rejit_errors : 0);
	ct_json_kv_bool(j, "target_ended", r->res.target_ended);
	ct_json_kv_bool(j, "counts_final", r->res.flushed);
	ct_json_kv_bool(j, "detach_confirmed", r->detached);
	ct_json_kv_u64(j, "detach_ms", (uint64_t)r->detach_ms);
	if (r->nspecs) {
		ct_json_kv_bool(j, "reverted_dormant", r->dormant);
		ct_json_kv_arr_begin(j, "probes");
		for (int i = 0; i < PRF_MAX_PROBES; i++) {
			if (!r->probe[i].seen)
				continue;
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "method", r->specs[r->probe[i].spec % r->nspecs]);
			ct_json_kv_u64(j, "token", r->probe[i].token);
			ct_json_kv_u64(j, "calls", r->probe[i].count);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		ct_json_kv_arr_begin(j, "installed");
		for (int i = 0; i < r->nspecs; i++) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "method", r->specs[i]);
			ct_json_kv_u64(j, "methods", r->installed[i].methods);
			ct_json_kv_u64(j, "hresult", (uint32_t)r->installed[i].hr);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
	}
	ct_json_obj_end(j);
}
