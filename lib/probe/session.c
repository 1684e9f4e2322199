/* SPDX-License-Identifier: MIT */
/*
 * session.c - a probe session: perf events on the code of the chosen
 * methods, decoding of what they report, and tier following. This file
 * holds its life (new, arm, poll, free); session_plan.c, session_threads.c,
 * session_decode.c and session_order.c the rest (session_int.h).
 *
 * - ReadyToRun code: a uprobe (uprobe PMU: config1 = path through
 *   /proc/PID/root, config2 = file offset) on the entry and on every `ret`.
 * - JIT'd code: hardware execute breakpoints (PERF_TYPE_BREAKPOINT,
 *   HW_BREAKPOINT_X); the CPU has 4 per thread, shared by all methods of the
 *   session, so entries of the newest code versions come first, then their
 *   `ret` sites, then older versions.
 * - Uprobes are per CPU (pid -1, cpu N: one event per CPU and site, however
 *   many threads the target has, threads born later included), redirected
 *   (PERF_EVENT_IOC_SET_OUTPUT) to one ring per CPU owned by a dummy event; a
 *   sample is kept only when its pid is the target's. Per-thread uprobe
 *   events made attach and detach grow with the threads: each is a uprobe
 *   consumer of its own, run on every hit, and closing one waits for an SRCU
 *   grace period (500 threads: 40 s to detach, 84 s to attach while starved;
 *   issue 16). The cost: a CPU-wide uprobe is in every process that maps
 *   the image, so another .NET process running the same CoreLib method takes
 *   the trap too (its hits are dropped, counted and said). Where the kernel
 *   refuses CPU-wide events (perf_event_paranoid > 0 without CAP_PERFMON),
 *   uprobes are one event per thread on every CPU (cpu -1), writing to a ring
 *   per thread; they cannot be inherited (see open_one): new threads get
 *   theirs when their PERF_RECORD_FORK is read.
 * - Breakpoints stay per (thread, CPU) with inherit=1 (threads created later
 *   get them; an inherited per-thread event cannot be mmap'd with cpu == -1),
 *   redirected to the per-CPU rings. They are cheap to open and close (509
 *   threads x 2 CPUs: 10 ms to attach, 22 ms to detach), and a CPU-wide
 *   breakpoint would take a debug register from every task on the machine:
 *   the kernel counts it against any task's 4, and refuses it (ENOSPC) when
 *   any task, a debugger's or another clrtap's, already uses 4.
 * - No uretprobes: they rewrite the return address, and the runtime's stack
 *   walker (GC, exceptions) would meet a trampoline. Returns are `ret`
 *   instructions found by disassembling the code (capstone), matched to
 *   entries per thread by rsp (both point at the same return address slot).
 *   A method that leaves by a tail call (`jmp` out) has no visible return.
 * - Floating-point registers are not in perf's user registers (only PEBS
 *   events sample XMM), so float/double arguments and returns print as "?".
 */
#include "common/compat.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <poll.h>
#include <time.h>

#include <capstone/capstone.h>
#include <linux/hw_breakpoint.h>
#include <asm/perf_regs.h>

#include "common/log.h"
#include "common/strparse.h"
#include "common/utf16.h"
#include "perf/perf.h"
#include "probe/probe.h"
#include "probe/session_int.h"

uint64_t ps_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ps_note(struct probe_session *s, enum probe_note_kind k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (s->on_note)
		s->on_note(s->ctx, k, buf);
}

int probe_session_new(struct probe_proc *pp, struct probe_method **methods, size_t n,
		      const struct probe_session_opts *o, probe_call_fn on_call,
		      probe_note_fn on_note, void *ctx, struct probe_session **out)
{
	struct probe_session *s = calloc(1, sizeof(*s));
	struct timespec rt;
	struct rlimit rl;
	int cpu;

	if (!s)
		return -ENOMEM;
	s->ino_fd = -1;
	s->pp = pp;
	s->o = *o;
	if (!s->o.strlen_max)
		s->o.strlen_max = 64;
	s->on_call = on_call;
	s->on_note = on_note;
	s->ctx = ctx;
	s->n = n;
	s->m = calloc(n ? n : 1, sizeof(*s->m));
	s->vs = calloc(n ? n : 1, sizeof(*s->vs));
	s->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (s->ncpu < 1)
		s->ncpu = 1;
	s->rings = calloc((size_t)s->ncpu, sizeof(*s->rings));
	s->ring_owner = calloc((size_t)s->ncpu, sizeof(int));
	if (!s->m || !s->vs || !s->rings || !s->ring_owner) {
		probe_session_free(s);
		return -ENOMEM;
	}
	memcpy(s->m, methods, n * sizeof(*s->m));
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	s->uprobe_type = perf_pmu_type("uprobe");
	{
		/* CLRTAP_TEST_PROBE_SCOPE=thread: the per-thread events (tests, bench) */
		const char *sc = getenv("CLRTAP_TEST_PROBE_SCOPE");
		bool cpus = !sc || strcmp(sc, "thread");

		/* breakpoints stay per thread: see the comment at the top */
		s->cpuwide[SCOPE_HW] = false;
		s->cpuwide[SCOPE_UP] = cpus;
	}
	s->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	s->cs_ok = ps_capi_load() && ps_capi.open(CS_ARCH_X86, CS_MODE_64, &s->cs) == CS_ERR_OK;
	if (s->cs_ok)
		ps_capi.option(s->cs, CS_OPT_DETAIL, CS_OPT_ON);
	else
		ps_note(s, PROBE_NOTE_WARN, "the disassembler (libcapstone.so.%d) is not available: "
		     "return sites cannot be found, so returns are not seen", CS_API_MAJOR);

	memset(&s->tmpl, 0, sizeof(s->tmpl));
	s->tmpl.sample_period = 1;
	s->tmpl.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (s->o.stack)
		s->tmpl.sample_type |= PERF_SAMPLE_CALLCHAIN;
	s->tmpl.sample_regs_user = REG_MASK;
	/* stack bytes: return address and stack arguments; a Tier0 frame for floats */
	s->tmpl.sample_stack_user = s->o.args ? STACK_DUMP : ((s->o.ret || s->o.latency) ? 64 : 0);
	if (!s->tmpl.sample_stack_user)
		s->tmpl.sample_type &= ~(uint64_t)PERF_SAMPLE_STACK_USER;
	if (s->o.count_only && !s->o.args && !s->o.ret && !s->o.latency && !s->o.stack) {
		s->tmpl.sample_type &= ~(uint64_t)PERF_SAMPLE_REGS_USER;
		s->tmpl.sample_regs_user = 0;
	}
	s->tmpl.sample_max_stack = 64;
	s->tmpl.exclude_kernel = 1;
	s->tmpl.exclude_hv = 1;
	s->tmpl.exclude_callchain_kernel = 1;
	s->tmpl.inherit = 1;
	s->tmpl.use_clockid = 1;
	s->tmpl.clockid = CLOCK_MONOTONIC;
	s->tmpl.watermark = 1; /* wake the poll only when a quarter of the ring is used */
	s->tmpl.wakeup_watermark = (4096u << RING_PAGES_LOG2) / 4;

	for (cpu = 0; cpu < s->ncpu; cpu++) {
		struct perf_event_attr d = s->tmpl;
		int fd, err;

		d.type = PERF_TYPE_SOFTWARE;
		d.config = PERF_COUNT_SW_DUMMY;
		d.inherit = 0;
		s->ring_owner[cpu] = -1;
		fd = perf_open(&d, probe_proc_pid(pp), cpu, -1, 0);
		if (fd < 0) {
			probe_session_free(s);
			return fd;
		}
		err = perf_ring_open(&s->rings[cpu], fd, RING_PAGES_LOG2);
		if (err) {
			close(fd);
			probe_session_free(s);
			return err;
		}
		s->ring_owner[cpu] = fd;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	s->start_mono = ps_now_mono();
	s->real_off = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
		      (int64_t)s->start_mono;
	*out = s;
	return 0;
}

/* Makes sites for versions without them, plans, arms. */
static int rearm(struct probe_session *s, bool describe_all)
{
	size_t mi, vi, before = s->nsites;
	bool made[PROBE_MAX_VERSIONS * 64] = { 0 };
	int err = 0, armed;

	for (mi = 0; mi < s->n; mi++)
		for (vi = 0; vi < s->m[mi]->ncode; vi++) {
			if (s->vs[mi][vi].sites_made)
				continue;
			if (mi < 64)
				made[mi * PROBE_MAX_VERSIONS + vi] = true;
			err = ps_make_sites(s, mi, vi);
			if (err)
				return err;
		}
	(void)before;
	ps_plan(s);
	armed = ps_apply(s);
	if (armed < 0)
		return armed;
	for (mi = 0; mi < s->n; mi++)
		for (vi = 0; vi < s->m[mi]->ncode; vi++)
			if (describe_all || (mi < 64 && made[mi * PROBE_MAX_VERSIONS + vi]))
				ps_describe_version(s, mi, vi);
	return 0;
}

int probe_session_arm(struct probe_session *s)
{
	size_t mi, any = 0;
	int err;

	for (mi = 0; mi < s->n; mi++)
		any += s->m[mi]->ncode;
	err = rearm(s, true);
	if (err)
		return err;
	return any ? 0 : -ENOENT;
}

int probe_session_poll(struct probe_session *s, int timeout_ms)
{
	struct pollfd pfd[256];
	size_t added = 0, mi, vi, before[64], i;
	int cpu, np = 0, err;

	for (cpu = 0; cpu < s->ncpu && np < 255; cpu++)
		if (s->ring_owner[cpu] >= 0) {
			pfd[np].fd = s->ring_owner[cpu];
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
			np++;
		}
	/* thread rings past the array are drained on the poll's timeout */
	for (i = 0; i < s->ntrings && np < 255; i++) {
		pfd[np].fd = s->trings[i].ring.fd;
		pfd[np].events = POLLIN;
		pfd[np].revents = 0;
		np++;
	}
	/* a new perf map line (new code) wakes us at once */
	if (s->ino_fd >= 0 && !s->ino_map && probe_proc_perfmap_path(s->pp))
		s->ino_map = inotify_add_watch(s->ino_fd, probe_proc_perfmap_path(s->pp),
					       IN_MODIFY) >= 0;
	/* and a new jitdump record (.NET 11: its map is buffered) */
	if (s->ino_fd >= 0 && !s->ino_jd && probe_proc_jitdump_path(s->pp))
		s->ino_jd = inotify_add_watch(s->ino_fd, probe_proc_jitdump_path(s->pp),
					      IN_MODIFY) >= 0;
	s->ino_watching = s->ino_map || s->ino_jd;
	if (s->ino_watching) {
		pfd[np].fd = s->ino_fd;
		pfd[np].events = POLLIN;
		pfd[np].revents = 0;
		np++;
	}
	if (timeout_ms > 0)
		(void)poll(pfd, (nfds_t)np, timeout_ms);
	if (s->ino_watching) {
		char ibuf[4096];

		while (read(s->ino_fd, ibuf, sizeof(ibuf)) > 0)
			;
	}
	for (mi = 0; mi < s->n && mi < 64; mi++)
		before[mi] = s->m[mi]->ncode;
	/* new perf map lines first: stacks decoded below may need them */
	err = probe_proc_refresh(s->pp, &added);
	ps_drain(s, false);
	if (s->need_rearm && !added) {
		s->need_rearm = false;
		ps_plan(s);
		err = ps_apply(s);
		if (err < 0)
			return err;
		err = 0;
	}
	if (err)
		ps_note(s, PROBE_NOTE_WARN, "perf map: %s", strerror(-err));
	if (added) {
		for (mi = 0; mi < s->n && mi < 64; mi++)
			for (vi = before[mi]; vi < s->m[mi]->ncode; vi++) {
				struct probe_code *c = &s->m[mi]->code[vi];

				bool lost = (c->kind == PROBE_CODE_JIT && s->o.no_hwbp) ||
					    (c->kind == PROBE_CODE_R2R && s->o.no_uprobe);
				char when[64] = "", lostmsg[160] = "";

				if (lost)
					snprintf(lostmsg, sizeof(lostmsg),
						 ": clrtap cannot watch it %s; calls that run it from "
						 "now on are NOT counted", s->o.unwatched_where ?
						 s->o.unwatched_where : "on this machine");
				if (lost) {
					/* the wall clock too: "from when" in the user's terms */
					uint64_t rt = (uint64_t)((int64_t)c->seen_ns + s->real_off);
					time_t sec = (time_t)(rt / 1000000000ull);
					struct tm tm;

					localtime_r(&sec, &tm);
					snprintf(when, sizeof(when), ", %02d:%02d:%02d.%03u", tm.tm_hour,
						 tm.tm_min, tm.tm_sec,
						 (unsigned)(rt % 1000000000ull / 1000000));
				}
				ps_note(s, lost ? PROBE_NOTE_WARN : PROBE_NOTE_TRANSITION,
				     "%s%s: new code %s at 0x%" PRIx64 " size %" PRIu64
				     " (+%.3fs%s)%s", s->m[mi]->name, s->m[mi]->sig, c->tier, c->addr,
				     c->size, (double)(c->seen_ns - s->start_mono) / 1e9, when,
				     lostmsg);
			}
		s->need_rearm = false;
		err = rearm(s, false);
		if (err)
			return err;
	}
	if (kill(probe_proc_pid(s->pp), 0) && errno == ESRCH) {
		ps_drain(s, true);
		return -ESRCH;
	}
	return 0;
}

void probe_session_flush(struct probe_session *s)
{
	size_t i;

	ps_drain(s, true);
	for (i = 0; i < s->npend; i++) {
		ps_emit(s, &s->pend[i].e, NULL);
		ps_ev_free(&s->pend[i].e);
	}
	s->npend = 0;
}

const struct probe_version_stats *probe_session_stats(const struct probe_session *s, size_t i,
						     size_t v)
{
	if (i >= s->n || v >= PROBE_MAX_VERSIONS)
		return NULL;
	return &s->vs[i][v].st;
}

void probe_session_hand_over(struct probe_session *s, size_t i)
{
	if (i < s->n && i < 64 && !s->handed_from[i])
		s->handed_from[i] = s->m[i]->ncode + 1;
}

uint64_t probe_session_lost(const struct probe_session *s)
{
	uint64_t n = 0;
	int cpu;

	size_t i;

	for (cpu = 0; cpu < s->ncpu; cpu++)
		n += s->rings[cpu].lost;
	for (i = 0; i < s->ntrings; i++)
		n += s->trings[i].ring.lost;
	return n;
}

bool probe_session_per_cpu(const struct probe_session *s, bool uprobe)
{
	return s->cpuwide[uprobe ? SCOPE_UP : SCOPE_HW];
}

uint64_t probe_session_foreign(const struct probe_session *s)
{
	return s->foreign;
}

uint64_t probe_session_start_ns(const struct probe_session *s)
{
	return s->start_mono;
}

unsigned probe_session_threads(const struct probe_session *s)
{
	return (unsigned)s->ntids;
}

void probe_session_free(struct probe_session *s)
{
	size_t i;
	int cpu;

	if (!s)
		return;
	for (i = 0; i < s->nsites; i++)
		ps_site_close(&s->sites[i]);
	for (i = 0; i < s->nwatch; i++)
		close(s->watch_fds[i]);
	free(s->watch_fds);
	if (s->rings)
		for (cpu = 0; cpu < s->ncpu; cpu++)
			perf_ring_close(&s->rings[cpu]);
	for (i = 0; i < s->ntrings; i++)
		perf_ring_close(&s->trings[i].ring);
	free(s->trings);
	for (i = 0; i < s->nq; i++)
		ps_ev_free(&s->q[i]);
	for (i = 0; i < s->npend; i++)
		ps_ev_free(&s->pend[i].e);
	if (s->cs_ok)
		ps_capi.close(&s->cs);
	if (s->ino_fd >= 0)
		close(s->ino_fd);
	free(s->q);
	free(s->pend);
	free(s->rings);
	free(s->ring_owner);
	free(s->m);
	free(s->vs);
	free(s);
}
