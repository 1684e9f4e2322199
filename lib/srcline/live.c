/* SPDX-License-Identifier: MIT */
/*
 * live.c - source lines for a live process: its rundown read into a srcline,
 * its assemblies read inside its root. See srcline.h.
 */
#include "common/compat.h"

#include <pthread.h>

#include "common/log.h"
#include "live/live.h"
#include "proc/proc.h"
#include "srcline/srcline.h"

/* runtime: JIT 0x10 + JittedMethodILToNativeMap 0x20000 (code compiled while
 * the session starts); rundown: Loader 0x8, Jit 0x10, NGen 0x20, end
 * enumeration 0x100, JittedMethodILToNativeMap 0x20000. */
#define RUNTIME_KEYWORDS 0x20010ull
#define RUNDOWN_KEYWORDS 0x20138ull

static int target_open(void *ctx, const char *path, int *fd)
{
	return proc_target_file_open((pid_t)(intptr_t)ctx, path, 0, fd, NULL);
}

int srcline_new_proc(pid_t pid, struct srcline **out)
{
	struct pe_open_opts po = { .open_fn = target_open, .open_ctx = (void *)(intptr_t)pid };

	return srcline_new(&po, out);
}

struct feed {
	struct srcline *sl;
	int err;
};

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct feed *f = ctx;
	int rc = srcline_add_event(f->sl, ev);

	if (rc == -EBADMSG || rc == 0)
		return 0;
	f->err = rc; /* a cap (-EFBIG) or memory: stop reading */
	return 1;
}

int srcline_collect(const struct ipc_endpoint *ep, volatile sig_atomic_t *stop, struct srcline *sl,
		    struct ipc_error *rerr)
{
	const struct ipc_provider prov = { "Microsoft-Windows-DotNETRuntime", RUNTIME_KEYWORDS, 5,
					   NULL };
	const struct ipc_trace_config cfg = {
		.providers = &prov, .nproviders = 1, .buffer_mb = 32,
		.rundown = true, .rundown_keyword = RUNDOWN_KEYWORDS, .stackwalk = false,
	};
	const struct nt_handlers h = { .event = on_event };
	volatile sig_atomic_t own_stop = 0;
	struct feed f = { sl, 0 };
	struct live_session_opts o = {
		.ep = ep, .cfg = &cfg, .stop = stop ? stop : &own_stop, .duration_ms = 1,
		.h = &h, .ctx = &f,
	};
	struct live_session_result res;
	int err = live_session_run(&o, &res);

	if (err)
		return err;
	if (res.session_err == -EREMOTEIO && rerr)
		*rerr = res.rerr;
	if (f.err == -EFBIG)
		ct_warn("source lines: the rundown passed a cap (%u methods, %u map entries): "
			"later methods have no line", SRCLINE_MAX_BODIES, SRCLINE_MAX_MAP_ENTRIES);
	else if (f.err)
		return f.err;
	if (res.reader_err < 0)
		return res.reader_err;
	if (res.session_err && res.session_err != -EFBIG)
		return res.session_err;
	return 0;
}

/* ---- following the JIT ---- */

struct srcline_follow {
	struct ipc_endpoint ep;
	struct srcline *sl;
	volatile sig_atomic_t stop;
	pthread_t th;
	int err;
};

static void *follow_main(void *arg)
{
	struct srcline_follow *f = arg;
	const struct ipc_provider prov = { "Microsoft-Windows-DotNETRuntime", RUNTIME_KEYWORDS, 5,
					   NULL };
	const struct ipc_trace_config cfg = {
		.providers = &prov, .nproviders = 1, .buffer_mb = 8, .stackwalk = false,
	};
	const struct nt_handlers h = { .event = on_event };
	struct feed fd = { f->sl, 0 };
	struct live_session_opts o = {
		.ep = &f->ep, .cfg = &cfg, .stop = &f->stop, .h = &h, .ctx = &fd, .prompt = true,
	};
	struct live_session_result res;

	f->err = live_session_run(&o, &res);
	if (!f->err && fd.err)
		f->err = fd.err;
	return NULL;
}

int srcline_follow_start(const struct ipc_endpoint *ep, struct srcline *sl,
			 struct srcline_follow **out)
{
	struct srcline_follow *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->ep = *ep;
	f->sl = sl;
	rc = pthread_create(&f->th, NULL, follow_main, f);
	if (rc) {
		free(f);
		return -rc;
	}
	*out = f;
	return 0;
}

void srcline_follow_stop(struct srcline_follow *f)
{
	if (!f)
		return;
	f->stop = 1;
	pthread_join(f->th, NULL);
	free(f);
}
