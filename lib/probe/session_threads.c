/* SPDX-License-Identifier: MIT */
/*
 * session_threads.c - a probe session's perf events and the threads they cover: per-CPU
 * rings, per-thread rings for uprobes where CPU-wide events are refused, threads
 * born later (PERF_RECORD_FORK of inherited dummy events).
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

/* ---- threads ---- */

int ps_read_tids(struct probe_session *s)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)probe_proc_pid(s->pp));
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	s->ntids = 0;
	while ((de = readdir(d)) && s->ntids < MAX_TIDS) {
		uint32_t tid;

		if (de->d_name[0] == '.' || ct_parse_u32(de->d_name, 10, &tid))
			continue;
		s->tids[s->ntids++] = tid;
	}
	closedir(d);
	return s->ntids ? 0 : -ESRCH;
}

/* ---- events ---- */

/*
 * The ring a thread's uprobe events write to: a dummy event of that thread on
 * every CPU (cpu -1) owns it. Made on first use.
 */
static int thread_ring(struct probe_session *s, uint32_t tid)
{
	struct perf_event_attr d = s->tmpl;
	struct tring *nt;
	size_t i;
	int fd, err;

	for (i = 0; i < s->ntrings; i++)
		if (s->trings[i].tid == tid)
			return s->trings[i].ring.fd;
	if (s->ntrings >= MAX_TIDS)
		return -E2BIG;
	nt = realloc(s->trings, (s->ntrings + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	s->trings = nt;
	d.type = PERF_TYPE_SOFTWARE;
	d.config = PERF_COUNT_SW_DUMMY;
	d.inherit = 0;
	d.wakeup_watermark = (4096u << TRING_PAGES_LOG2) / 4;
	fd = perf_open(&d, (pid_t)tid, -1, -1, 0);
	if (fd < 0)
		return fd;
	err = perf_ring_open(&s->trings[s->ntrings].ring, fd, TRING_PAGES_LOG2);
	if (err) {
		close(fd);
		return err;
	}
	s->trings[s->ntrings++].tid = tid;
	return fd;
}

static int open_one(struct probe_session *s, struct site *st, uint32_t tid, int cpu)
{
	struct perf_event_attr a = s->tmpl;
	int fd, out = -1;

	if (s->cpuwide[st->uprobe ? SCOPE_UP : SCOPE_HW]) {
		/* one uprobe event per CPU for every ps_process: samples filtered by pid */
		a.inherit = 0;
		a.type = (uint32_t)s->uprobe_type;
		a.config = 0;
		a.config1 = (uint64_t)(uintptr_t)st->path;
		a.config2 = st->file_off;
		fd = perf_open(&a, -1, cpu, -1, 0);
		if (fd < 0)
			return fd;
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_owner[cpu]) < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		return fd;
	}
	if (st->uprobe) {
		/*
		 * No inherit for uprobe PMU events: the kernel would create the
		 * child's event from attr.config1, a pointer into clrtap's memory,
		 * read in the target while it clones a thread; clone then fails
		 * and the runtime aborts ("Out of memory."). New threads are
		 * found through PERF_RECORD_FORK from the watch events instead.
		 */
		a.inherit = 0;
		a.type = (uint32_t)s->uprobe_type;
		a.config = 0;
		a.config1 = (uint64_t)(uintptr_t)st->path;
		a.config2 = st->file_off;
		/*
		 * Each uprobe PMU event registers its own uprobe consumer, and the
		 * kernel runs every consumer of the probed instruction on each hit:
		 * one event per (thread, CPU) made a call cost grow with threads x
		 * CPUs. Without inherit one event per thread on every CPU (cpu -1)
		 * is allowed, writing into that thread's ring.
		 */
		if (cpu > 0)
			return -EEXIST;
		out = thread_ring(s, tid);
		if (out < 0)
			return out;
		cpu = -1;
	} else {
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = st->addr;
		a.bp_len = sizeof(long);
	}
	fd = perf_open(&a, (pid_t)tid, cpu, -1, 0);
	if (fd < 0)
		return fd;
	if (out < 0)
		out = s->ring_owner[cpu];
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, out) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

void ps_site_close(struct site *st)
{
	size_t i;

	for (i = 0; i < st->nfds; i++)
		close(st->fds[i]);
	free(st->fds);
	st->fds = NULL;
	st->nfds = 0;
	st->armed = false;
}

/*
 * Per-CPU events: one per CPU. When the first one is refused for a reason
 * that per-thread events do not have (CPU-wide events need CAP_PERFMON or
 * perf_event_paranoid <= 0), this kind falls back to per-thread events for
 * the session.
 */
static int site_open_cpus(struct probe_session *s, struct site *st)
{
	int cpu, k = st->uprobe ? SCOPE_UP : SCOPE_HW, err = 0;

	st->fds = calloc((size_t)s->ncpu, sizeof(int));
	if (!st->fds)
		return -ENOMEM;
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		int fd = open_one(s, st, 0, cpu);

		if (fd >= 0) {
			st->fds[st->nfds++] = fd;
			continue;
		}
		if (fd == -ENODEV) /* an offline CPU */
			continue;
		err = fd;
		break;
	}
	if (!err && st->nfds) {
		st->armed = true;
		return 0;
	}
	ps_site_close(st);
	if (err == -EACCES || err == -EPERM) {
		s->cpuwide[k] = false;
		ps_note(s, PROBE_NOTE_INFO, "%s: per-CPU events refused (%s): one per thread instead",
		     st->uprobe ? "uprobes" : "breakpoints", strerror(-err));
		return -EAGAIN;
	}
	return err ? err : -ENODEV;
}

static void watch_threads(struct probe_session *s);

int ps_site_open(struct probe_session *s, struct site *st)
{
	size_t i, ok = 0, gone = 0;
	int cpu, last = 0;

	if (s->cpuwide[st->uprobe ? SCOPE_UP : SCOPE_HW]) {
		int err = site_open_cpus(s, st);

		if (err != -EAGAIN)
			return err;
	}
	/* per-thread uprobes: threads born later are armed when their FORK is read */
	if (st->uprobe)
		watch_threads(s);
	st->fds = calloc(s->ntids * (size_t)s->ncpu, sizeof(int));
	if (!st->fds)
		return -ENOMEM;
	for (i = 0; i < s->ntids; i++)
		for (cpu = 0; cpu < s->ncpu; cpu++) {
			int fd = open_one(s, st, s->tids[i], cpu);

			if (fd >= 0) {
				st->fds[st->nfds++] = fd;
				ok++;
			} else if (fd == -EEXIST) {
				continue; /* uprobes: one event per thread, made for cpu 0 */
			} else if (fd == -ESRCH) {
				gone++;
			} else {
				last = fd;
			}
		}
	if (!ok) {
		ps_site_close(st);
		return last ? last : -ESRCH;
	}
	if (last)
		ps_note(s, PROBE_NOTE_WARN, "%s at 0x%" PRIx64 ": not armed on every thread (%s)",
		     s->m[st->mi]->name, st->addr, strerror(-last));
	st->armed = true;
	return 0;
}

bool ps_tid_in(const uint32_t *v, size_t n, uint32_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

/* Dummy events with task=1 and inherit on every thread: PERF_RECORD_FORK for new ones. */
static void watch_threads(struct probe_session *s)
{
	size_t i;
	int cpu;

	for (i = 0; i < s->ntids && s->nwatched < MAX_TIDS; i++) {
		if (ps_tid_in(s->watched, s->nwatched, s->tids[i]))
			continue;
		s->watched[s->nwatched++] = s->tids[i];
		for (cpu = 0; cpu < s->ncpu; cpu++) {
			struct perf_event_attr a;
			int *nw, fd;

			memset(&a, 0, sizeof(a));
			a.type = PERF_TYPE_SOFTWARE;
			a.config = PERF_COUNT_SW_DUMMY;
			a.task = 1;
			a.inherit = 1;
			a.exclude_kernel = 1;
			a.use_clockid = 1;
			a.clockid = CLOCK_MONOTONIC;
			a.watermark = 1;
			a.wakeup_watermark = s->tmpl.wakeup_watermark;
			fd = perf_open(&a, (pid_t)s->tids[i], cpu, -1, 0);
			if (fd < 0)
				continue;
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_owner[cpu]) < 0) {
				close(fd);
				continue;
			}
			nw = realloc(s->watch_fds, (s->nwatch + 1) * sizeof(*nw));
			if (!nw) {
				close(fd);
				return;
			}
			s->watch_fds = nw;
			s->watch_fds[s->nwatch++] = fd;
		}
	}
}

/* Opens the armed uprobe sites on threads born since the last poll. */
void ps_arm_new_threads(struct probe_session *s)
{
	size_t t, i;
	int cpu;

	for (t = 0; t < s->nnew; t++) {
		uint32_t tid = s->newtids[t];

		if (ps_tid_in(s->tids, s->ntids, tid) || s->ntids >= MAX_TIDS)
			continue;
		s->tids[s->ntids++] = tid;
		for (i = 0; i < s->nsites; i++) {
			struct site *st = &s->sites[i];
			int *nf;

			if (!st->armed || !st->uprobe)
				continue;
			nf = realloc(st->fds, (st->nfds + (size_t)s->ncpu) * sizeof(int));
			if (!nf)
				continue;
			st->fds = nf;
			for (cpu = 0; cpu < s->ncpu; cpu++) {
				int fd = open_one(s, st, tid, cpu);

				if (fd >= 0)
					st->fds[st->nfds++] = fd;
			}
		}
		s->late_threads++;
	}
	s->nnew = 0;
}
