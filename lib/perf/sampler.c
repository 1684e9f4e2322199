/* SPDX-License-Identifier: MIT */
/*
 * sampler.c - a sampling session on every thread of one process: cpu-clock
 * samples with callchains (on-CPU) and context-switch samples paired with
 * switch-in records (off-CPU), one ring per CPU and kind. See perf.h.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <time.h>
#include <linux/magic.h>
#include <asm/perf_regs.h>

#include "common/hashtab.h"
#include "common/log.h"
#include "common/strparse.h"
#include "perf/perf.h"

#define MAX_CPUS 1024
#define MAX_EVENTS 65536
#define CHAIN_CAP 512

/* Per-thread state: coverage, name, and the pending off-CPU interval. */
struct tid_ent {
	uint32_t tid;      /* never 0 */
	bool covered;      /* has an event (opened by us or inherited) */
	bool has_out, has_in;
	char comm[16];
	uint64_t out_time, in_time;
	unsigned nr, nkernel;
	uint64_t *stack;   /* PERF_SAMPLER_MAX_STACK entries once needed */
};

enum ring_kind { RK_CPU = 0, RK_CS = 1, RK_N = 2 };

struct perf_sampler {
	pid_t pid;
	struct perf_sampler_opts o;
	perf_stack_fn fn;
	void *ctx;
	perf_unwind_fn unwind;
	void *unwind_ctx;
	uint64_t uchain[CHAIN_CAP];
	int ncpu;
	int *cpus;                       /* cpu numbers in use */
	struct perf_ring *rings[RK_N];   /* [ncpu] each, NULL when the kind is off */
	struct perf_event_attr attr[RK_N];
	int *fds;                        /* events redirected into a ring (not ring owners) */
	size_t nfds, fds_cap;
	struct tid_ent *tids;
	size_t tids_cap, tids_used;
	struct ct_itab tid_tab; /* tids by thread */
	uint64_t chain[CHAIN_CAP];
	struct perf_sampler_stats st;
	enum perf_sampler_mode kmode[RK_N]; /* per kind: on-CPU may be per CPU, off-CPU per thread */
	int cgfd;                        /* cgroup mode: the target's cgroup directory */
	bool finished;
};

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- thread table: tids[] in first-seen order, indexed by thread ---- */

#define MAX_TIDS (1u << 21)

static uint64_t tid_hash(const void *ctx, uint32_t idx)
{
	return ct_hash_u64(((const struct perf_sampler *)ctx)->tids[idx].tid);
}

static bool tid_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct perf_sampler *)ctx)->tids[idx].tid == *(const uint32_t *)key;
}

/* The thread's entry (added when add); valid until the next add. */
static struct tid_ent *tid_find(struct perf_sampler *s, uint32_t tid, bool add)
{
	uint32_t i, *slot;

	if (!tid)
		return NULL;
	i = ct_itab_get(&s->tid_tab, ct_hash_u64(tid), tid_eq, s, &tid);
	if (i != UINT32_MAX)
		return &s->tids[i];
	if (!add || s->tids_used >= MAX_TIDS || ct_itab_reserve(&s->tid_tab, tid_hash, s))
		return NULL;
	if (s->tids_used == s->tids_cap) {
		size_t ncap = s->tids_cap ? s->tids_cap * 2 : 64;
		struct tid_ent *nt = realloc(s->tids, ncap * sizeof(*nt));

		if (!nt)
			return NULL;
		s->tids = nt;
		s->tids_cap = ncap;
	}
	slot = ct_itab_slot(&s->tid_tab, ct_hash_u64(tid), tid_eq, s, &tid);
	*slot = ct_itab_add(&s->tid_tab, (uint32_t)s->tids_used);
	memset(&s->tids[s->tids_used], 0, sizeof(*s->tids));
	s->tids[s->tids_used].tid = tid;
	return &s->tids[s->tids_used++];
}

static void mark_covered(struct perf_sampler *s, uint32_t tid)
{
	struct tid_ent *e = tid_find(s, tid, true);

	if (e && !e->covered) {
		e->covered = true;
		s->st.threads++;
	}
}

/* ---- opening events ---- */

static int read_cpus(struct perf_sampler *s)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int i;

	if (n <= 0)
		n = 1;
	if (n > MAX_CPUS)
		n = MAX_CPUS;
	s->cpus = calloc((size_t)n, sizeof(int));
	if (!s->cpus)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->cpus[i] = i;
	s->ncpu = (int)n;
	return 0;
}

static void fill_attrs(struct perf_sampler *s, bool kernel)
{
	struct perf_event_attr *a;
	uint64_t st = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	/* Wake the poll only when a ring is half full: polls sleep their timeout. */
	uint32_t wm = (uint32_t)(((size_t)sysconf(_SC_PAGESIZE) << s->o.ring_pages_log2) / 2);

	a = &s->attr[RK_CPU];
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = 1000000000ull / s->o.hz;
	a->sample_type = st;
	a->inherit = 1;
	a->task = 1;
	a->comm = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_hv = 1;
	a->exclude_kernel = !kernel;
	a->exclude_idle = 1;
	a->sample_max_stack = PERF_SAMPLER_MAX_STACK;
	a->wakeup_watermark = wm;
	a->watermark = 1;
	if (s->kmode[RK_CPU] != PERF_SAMPLER_THREAD) {
		a->inherit = 0; /* per-CPU events: every task on the CPU, nothing to inherit */
		a->task = 0;
	}

	a = &s->attr[RK_CS];
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->sample_type = st | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |
			      (1ull << PERF_REG_X86_IP);
	a->sample_stack_user = PERF_SAMPLER_STACK_COPY;
	a->inherit = 1;
	a->context_switch = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_hv = 1;
	a->exclude_kernel = !kernel;
	a->sample_max_stack = PERF_SAMPLER_MAX_STACK;
	a->wakeup_watermark = wm;
	a->watermark = 1;
	if (s->kmode[RK_CS] != PERF_SAMPLER_THREAD)
		a->inherit = 0;
}

static int fds_push(struct perf_sampler *s, int fd)
{
	if (s->nfds == s->fds_cap) {
		size_t nc = s->fds_cap ? s->fds_cap * 2 : 64;
		int *nf;

		if (nc > MAX_EVENTS)
			return -EMFILE;
		nf = reallocarray(s->fds, nc, sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		s->fds = nf;
		s->fds_cap = nc;
	}
	s->fds[s->nfds++] = fd;
	return 0;
}

/* Opens one event of kind k for tid on cpu index ci (a ring on first use). */
static int open_one(struct perf_sampler *s, int k, uint32_t tid, int ci)
{
	struct perf_ring *r = &s->rings[k][ci];
	int fd, rc;

	fd = perf_open(&s->attr[k], (pid_t)tid, s->cpus[ci], -1, 0);
	if (fd < 0)
		return fd;
	if (!r->base) {
		/* off-CPU samples carry a stack copy: a 16x larger ring */
		rc = perf_ring_open(r, fd, s->o.ring_pages_log2 + (k == RK_CS ? 4 : 0));
		if (rc < 0) {
			close(fd);
			return rc;
		}
	} else {
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		rc = fds_push(s, fd);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	s->st.events++;
	return 0;
}

/* The thread's current name, for threads that were named before we came. */
static void read_comm(struct perf_sampler *s, uint32_t tid)
{
	struct tid_ent *e = tid_find(s, tid, true);
	char path[64];
	ssize_t n;
	int fd;

	if (!e || e->comm[0])
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)s->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, e->comm, sizeof(e->comm) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	e->comm[n] = '\0';
	e->comm[strcspn(e->comm, "\n")] = '\0';
}

/* Opens every wanted event for one thread. -ESRCH when it is gone. */
static int open_thread(struct perf_sampler *s, uint32_t tid)
{
	int k, ci, rc, opened = 0;

	for (k = 0; k < RK_N; k++) {
		if (!s->rings[k] || s->kmode[k] != PERF_SAMPLER_THREAD)
			continue;
		for (ci = 0; ci < s->ncpu; ci++) {
			rc = open_one(s, k, tid, ci);
			if (rc == -ENODEV || (rc == -EINVAL && s->cpus[ci] > 0))
				continue; /* offline CPU */
			if (rc < 0)
				return rc;
			opened++;
		}
	}
	if (!opened)
		return -ENODEV;
	mark_covered(s, tid);
	read_comm(s, tid);
	return 0;
}

/* Opens events on every thread of the process not covered yet. */
static int scan_threads(struct perf_sampler *s, unsigned *newly)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*newly = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		uint32_t tid;
		struct tid_ent *e;
		int orc;

		if (de->d_name[0] == '.' || ct_parse_u32(de->d_name, 10, &tid) < 0 || !tid)
			continue;
		e = tid_find(s, tid, false);
		if (e && e->covered)
			continue;
		orc = open_thread(s, tid);
		if (orc == -ESRCH)
			continue; /* exited meanwhile */
		if (orc < 0) {
			rc = orc;
			break;
		}
		(*newly)++;
	}
	closedir(d);
	return rc;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void close_all(struct perf_sampler *s)
{
	size_t i;
	int k, ci;

	for (i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	s->nfds = 0;
	for (k = 0; k < RK_N; k++) {
		if (!s->rings[k])
			continue;
		for (ci = 0; ci < s->ncpu; ci++)
			perf_ring_close(&s->rings[k][ci]);
	}
}

/*
 * The target's cgroup v2 directory, for PERF_FLAG_PID_CGROUP: the "0::PATH"
 * line of /proc/PID/cgroup (PATH as seen from clrtap's cgroup namespace)
 * under the cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a
 * hybrid system). The root cgroup is every process: -ENOENT (the cpu mode
 * does the same with less work). The path comes from the kernel but its
 * names from whoever created the cgroup (a container may): "." and ".."
 * components are refused and the directory must be on cgroup2.
 */
static int open_target_cgroup(pid_t pid, char *path, size_t len)
{
	static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char file[64], buf[4096], full[4096 + 64];
	const char *line, *c;
	struct statfs sf;
	ssize_t n;
	size_t i, pl;
	int fd;

	path[0] = '\0';
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	buf[n] = '\0';
	for (line = buf; line && *line; line = (c = strchr(line, '\n')) ? c + 1 : NULL)
		if (!strncmp(line, "0::/", 4))
			break;
	if (!line || !*line)
		return -ENOENT;
	line += 3;
	pl = strcspn(line, "\n");
	if (pl <= 1 || pl >= len || (size_t)(line + pl - buf) >= (size_t)n)
		return -ENOENT; /* root cgroup, too long, or cut off */
	memcpy(path, line, pl);
	path[pl] = '\0';
	if (strstr(path, "/../") || strstr(path, "/./") || !strcmp(path + pl - 3, "/..") ||
	    !strcmp(path + pl - 2, "/.")) {
		path[0] = '\0';
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(mounts); i++) {
		if (statfs(mounts[i], &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		snprintf(full, sizeof(full), "%s%s", mounts[i], path);
		fd = open(full, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			break;
		if (fstatfs(fd, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
			close(fd);
			break;
		}
		return fd;
	}
	path[0] = '\0';
	return -ENOENT;
}

/* Per-CPU modes: one event per CPU and kind, each owning its ring. */
static int open_cpuwide(struct perf_sampler *s)
{
	int k, ci, fd, rc, opened = 0;

	for (k = 0; k < RK_N; k++) {
		pid_t who = s->kmode[k] == PERF_SAMPLER_CGROUP ? s->cgfd : -1;
		unsigned long fl = s->kmode[k] == PERF_SAMPLER_CGROUP ? PERF_FLAG_PID_CGROUP : 0;

		if (!s->rings[k] || s->kmode[k] == PERF_SAMPLER_THREAD)
			continue;
		for (ci = 0; ci < s->ncpu; ci++) {
			fd = perf_open(&s->attr[k], who, s->cpus[ci], -1, fl);
			if (fd == -ENODEV || (fd == -EINVAL && s->cpus[ci] > 0))
				continue; /* offline CPU */
			if (fd < 0)
				return fd;
			rc = perf_ring_open(&s->rings[k][ci], fd,
					    s->o.ring_pages_log2 + (k == RK_CS ? 4 : 0));
			if (rc < 0) {
				close(fd);
				return rc;
			}
			s->st.events++;
			opened++;
		}
	}
	return opened ? 0 : -ENODEV;
}

/* Whether a kind in use is opened per thread (per_thread) or per CPU (!per_thread). */
static bool any_kind(const struct perf_sampler *s, bool per_thread)
{
	int k;

	for (k = 0; k < RK_N; k++)
		if (s->rings[k] && (s->kmode[k] == PERF_SAMPLER_THREAD) == per_thread)
			return true;
	return false;
}

static int try_open(struct perf_sampler *s, bool kernel)
{
	unsigned n = 0;
	int k, ci, rc;

	fill_attrs(s, kernel);
	rc = 0;
	if (any_kind(s, false)) {
		rc = open_cpuwide(s);
		if (rc == 0 && kill(s->pid, 0) < 0 && errno == ESRCH)
			rc = -ESRCH;
	}
	if (rc == 0 && any_kind(s, true)) {
		rc = scan_threads(s, &n);
		if (rc == 0 && n == 0 && s->st.threads == 0)
			rc = -ESRCH;
	}
	if (rc < 0) {
		/* Undo: close everything, forget coverage. */
		close_all(s);
		for (k = 0; k < RK_N; k++)
			if (s->rings[k])
				for (ci = 0; ci < s->ncpu; ci++)
					s->rings[k][ci].fd = -1;
		for (size_t t = 0; t < s->tids_used; t++)
			free(s->tids[t].stack);
		ct_itab_clear(&s->tid_tab);
		s->tids_used = 0;
		s->st.threads = 0;
		s->st.events = 0;
	}
	return rc;
}

int perf_sampler_open(struct perf_sampler **out, pid_t pid, const struct perf_sampler_opts *o,
		      perf_stack_fn fn, void *ctx)
{
	struct perf_sampler *s;
	int rc, k, ci;

	*out = NULL;
	if (pid <= 0 || !o || (!o->cpu && !o->off_cpu) || o->hz > 10000 || o->ring_pages_log2 > 12)
		return -EINVAL;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return -ESRCH;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cgfd = -1;
	s->pid = pid;
	s->o = *o;
	if (!s->o.hz)
		s->o.hz = 99;
	if (!s->o.ring_pages_log2)
		s->o.ring_pages_log2 = 7;
	s->fn = fn;
	s->ctx = ctx;
	rc = read_cpus(s);
	if (rc < 0)
		goto fail;
	for (k = 0; k < RK_N; k++) {
		if ((k == RK_CPU && !o->cpu) || (k == RK_CS && !o->off_cpu))
			continue;
		s->rings[k] = calloc((size_t)s->ncpu, sizeof(struct perf_ring));
		if (!s->rings[k]) {
			rc = -ENOMEM;
			goto fail;
		}
		for (ci = 0; ci < s->ncpu; ci++)
			s->rings[k][ci].fd = -1;
	}
	s->cgfd = -1;
	rc = -EACCES;
	/* Per-CPU events first (see perf.h); they need CAP_PERFMON or paranoid <= 0. */
	if (!o->per_thread && !o->no_kernel) {
		s->cgfd = open_target_cgroup(s->pid, s->st.cgroup, sizeof(s->st.cgroup));
		/*
		 * In the target's cgroup both kinds are per CPU. Without one, on-CPU
		 * samples are taken system-wide and filtered; off-CPU stays per
		 * thread (a stack copy at every switch of every process is too much).
		 */
		s->kmode[RK_CPU] = s->cgfd >= 0 ? PERF_SAMPLER_CGROUP : PERF_SAMPLER_CPU;
		s->kmode[RK_CS] = s->cgfd >= 0 ? PERF_SAMPLER_CGROUP : PERF_SAMPLER_THREAD;
		if (any_kind(s, false)) {
			if (any_kind(s, true))
				raise_nofile();
			rc = try_open(s, true);
			s->st.kernel = rc == 0;
			if (rc < 0 && rc != -ESRCH)
				ct_debug("perf sampler: per-CPU events: %s", strerror(-rc));
		}
	}
	if (rc < 0 && rc != -ESRCH) {
		s->kmode[RK_CPU] = s->kmode[RK_CS] = PERF_SAMPLER_THREAD;
		s->st.cgroup[0] = '\0';
		raise_nofile();
		rc = -EACCES;
		if (!o->no_kernel) {
			rc = try_open(s, true);
			s->st.kernel = rc == 0;
		}
		if ((rc == -EACCES || rc == -EPERM) && !o->off_cpu) {
			if (!o->no_kernel)
				ct_info("kernel stacks not permitted (kernel.perf_event_paranoid=2 "
					"and no CAP_PERFMON): sampling user stacks only");
			rc = try_open(s, false);
		}
	}
	if (s->kmode[RK_CPU] != PERF_SAMPLER_CGROUP && s->kmode[RK_CS] != PERF_SAMPLER_CGROUP &&
	    s->cgfd >= 0) {
		close(s->cgfd);
		s->cgfd = -1;
		s->st.cgroup[0] = '\0';
	}
	s->st.mode = s->kmode[RK_CPU];
	s->st.offcpu_mode = s->kmode[RK_CS];
	if (rc < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	perf_sampler_close(s);
	return rc;
}

/* ---- records ---- */

/* Strips PERF_CONTEXT_* markers; counts kernel frames at the leaf end. */
static unsigned strip_chain(struct perf_sampler *s, const struct perf_sample *ps, unsigned *nkernel)
{
	uint64_t ctxm = 0, i;
	unsigned n = 0;

	*nkernel = 0;
	for (i = 0; i < ps->nr && n < CHAIN_CAP; i++) {
		uint64_t ip = ps->callchain[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctxm = ip;
			continue;
		}
		if (!ip)
			continue;
		/* Kernel frames repeat the user leaf? No: they stop at the entry. */
		if (ctxm == (uint64_t)PERF_CONTEXT_KERNEL)
			(*nkernel)++;
		else if (ctxm != (uint64_t)PERF_CONTEXT_USER)
			continue; /* hypervisor/guest: not ours */
		s->chain[n++] = ip;
	}
	return n;
}

static int deliver(struct perf_sampler *s, enum perf_stack_kind kind, uint32_t pid, uint32_t tid,
		   uint64_t time, uint64_t weight, const uint64_t *ips, unsigned nr, unsigned nkernel)
{
	struct perf_stack st = { kind, pid, tid, time, weight, nr, nkernel, ips };

	if (kind == PERF_STACK_CPU)
		s->st.samples++;
	else
		s->st.switches++;
	return s->fn ? s->fn(s->ctx, &st) : 0;
}

/* The sample_id trailer of a non-sample record: pid, tid, time (our sample_type). */
static bool trailer(const struct perf_event_header *h, uint32_t *pid, uint32_t *tid,
		    uint64_t *time)
{
	const uint8_t *end = (const uint8_t *)h + h->size;
	uint32_t pt[2];

	if (h->size < sizeof(*h) + 16)
		return false;
	memcpy(pt, end - 16, 8);
	memcpy(time, end - 8, 8);
	*pid = pt[0];
	*tid = pt[1];
	return true;
}

static int on_cpu_record(struct perf_sampler *s, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)(h + 1);
	size_t len = h->size - sizeof(*h);

	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample ps;
		unsigned nr, nk;

		if (perf_sample_parse(&s->attr[RK_CPU], h, &ps) < 0) {
			s->st.bad++;
			return 0;
		}
		if (s->kmode[RK_CPU] != PERF_SAMPLER_THREAD) {
			if (ps.pid != (uint32_t)s->pid) {
				s->st.other++;
				return 0;
			}
			mark_covered(s, ps.tid);
		}
		nr = strip_chain(s, &ps, &nk);
		return deliver(s, PERF_STACK_CPU, ps.pid, ps.tid, ps.time, s->attr[RK_CPU].sample_period,
			       s->chain, nr, nk);
	}
	case PERF_RECORD_FORK: {
		uint32_t v[4];

		if (len >= 16) {
			memcpy(v, p, 16); /* pid, ppid, tid, ptid */
			if (v[0] == (uint32_t)s->pid || v[1] == (uint32_t)s->pid)
				mark_covered(s, v[2]);
		}
		return 0;
	}
	case PERF_RECORD_COMM: {
		uint32_t v[2];
		struct tid_ent *e;

		if (len >= 9) {
			memcpy(v, p, 8);
			if (v[0] != (uint32_t)s->pid)
				return 0; /* per-CPU modes see every process's */
			e = tid_find(s, v[1], true);
			if (e) {
				size_t n = strnlen((const char *)p + 8, len - 8);

				if (n >= sizeof(e->comm))
					n = sizeof(e->comm) - 1;
				memcpy(e->comm, p + 8, n);
				e->comm[n] = '\0';
			}
		}
		return 0;
	}
	case PERF_RECORD_THROTTLE:
		s->st.throttled++;
		return 0;
	default:
		return 0;
	}
}

static int emit_offcpu(struct perf_sampler *s, struct tid_ent *e, uint64_t in_time)
{
	uint64_t w = in_time - e->out_time;

	e->has_out = false;
	e->has_in = false;
	if (!w)
		return 0;
	return deliver(s, PERF_STACK_OFFCPU, (uint32_t)s->pid, e->tid, e->out_time, w, e->stack, e->nr,
		       e->nkernel);
}

static int on_cs_record(struct perf_sampler *s, const struct perf_event_header *h)
{
	struct tid_ent *e;
	uint32_t pid, tid;
	uint64_t time;

	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample ps;
		unsigned nr, nk;

		if (perf_sample_parse(&s->attr[RK_CS], h, &ps) < 0) {
			s->st.bad++;
			return 0;
		}
		if (s->kmode[RK_CS] != PERF_SAMPLER_THREAD) {
			if (ps.pid != (uint32_t)s->pid) {
				s->st.other++;
				return 0;
			}
			mark_covered(s, ps.tid);
		}
		e = tid_find(s, ps.tid, true);
		if (!e)
			return 0;
		if (!e->stack) {
			e->stack = calloc(PERF_SAMPLER_MAX_STACK, sizeof(uint64_t));
			if (!e->stack)
				return -ENOMEM;
		}
		nr = strip_chain(s, &ps, &nk);
		if (s->unwind && ps.regs_abi && ps.nregs == 3 && ps.stack_dyn_size >= 16) {
			/* regs come in bit order: BP (6), SP (7), IP (8) */
			struct perf_user_state u = { ps.regs[2], ps.regs[1], ps.regs[0], ps.stack,
						     ps.stack_dyn_size };
			unsigned un = s->unwind(s->unwind_ctx, &u, s->uchain,
						CHAIN_CAP - nk < PERF_SAMPLER_MAX_STACK
							? CHAIN_CAP - nk : PERF_SAMPLER_MAX_STACK);

			if (un > nr - nk) {
				memcpy(s->chain + nk, s->uchain, un * sizeof(uint64_t));
				nr = nk + un;
			}
		}
		if (nr > PERF_SAMPLER_MAX_STACK)
			nr = PERF_SAMPLER_MAX_STACK;
		if (nk > nr)
			nk = nr;
		memcpy(e->stack, s->chain, nr * sizeof(uint64_t));
		e->nr = nr;
		e->nkernel = nk;
		e->out_time = ps.time;
		e->has_out = true;
		/* Its switch-in was already read from another CPU's ring. */
		if (e->has_in && e->in_time >= ps.time)
			return emit_offcpu(s, e, e->in_time);
		e->has_in = false;
		return 0;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: /* per-CPU events: same, plus next/prev pid, tid */
		if (!trailer(h, &pid, &tid, &time))
			return 0;
		if (s->kmode[RK_CS] != PERF_SAMPLER_THREAD && pid != (uint32_t)s->pid)
			return 0;
		e = tid_find(s, tid, false);
		if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
			/* Preempted while runnable: waiting for a CPU, not blocked. */
			/* The switch-out sample just before this record (same ring) is its own. */
			if (e && (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) && e->has_out &&
			    e->out_time <= time)
				e->has_out = false;
			return 0;
		}
		if (!e)
			e = tid_find(s, tid, true);
		if (!e)
			return 0;
		if (e->has_out && e->out_time <= time)
			return emit_offcpu(s, e, time);
		e->has_in = true;
		e->in_time = time;
		return 0;
	case PERF_RECORD_THROTTLE:
		s->st.throttled++;
		return 0;
	default:
		return 0;
	}
}

struct drain_ctx {
	struct perf_sampler *s;
	int kind;
};

static int drain_fn(void *ctx, const struct perf_event_header *h)
{
	struct drain_ctx *d = ctx;

	return d->kind == RK_CPU ? on_cpu_record(d->s, h) : on_cs_record(d->s, h);
}

static int drain_all(struct perf_sampler *s)
{
	int k, ci, rc;

	for (k = 0; k < RK_N; k++) {
		if (!s->rings[k])
			continue;
		for (ci = 0; ci < s->ncpu; ci++) {
			struct drain_ctx d = { s, k };

			if (!s->rings[k][ci].base)
				continue;
			rc = perf_ring_drain(&s->rings[k][ci], drain_fn, &d);
			if (rc == -EBADMSG)
				s->st.bad++;
			else if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int perf_sampler_poll(struct perf_sampler *s, int timeout_ms)
{
	struct pollfd pfd[2 * MAX_CPUS];
	nfds_t n = 0;
	unsigned newly;
	int k, ci, rc;

	if (s->finished)
		return -EINVAL;
	for (k = 0; k < RK_N; k++)
		if (s->rings[k])
			for (ci = 0; ci < s->ncpu && n < ARRAY_SIZE(pfd); ci++)
				if (s->rings[k][ci].base)
					pfd[n++] = (struct pollfd){ .fd = s->rings[k][ci].fd, .events = POLLIN };
	if (timeout_ms > 0)
		(void)poll(pfd, n, timeout_ms);
	rc = drain_all(s);
	if (rc)
		return rc;
	if (!any_kind(s, true)) {
		/* the kernel covers new threads: only see whether the target is still there */
		if (kill(s->pid, 0) < 0 && errno == ESRCH) {
			rc = drain_all(s);
			return rc ? rc : -ESRCH;
		}
		return 0;
	}
	rc = scan_threads(s, &newly);
	if (rc == -ESRCH || (kill(s->pid, 0) < 0 && errno == ESRCH)) {
		rc = drain_all(s);
		return rc ? rc : -ESRCH;
	}
	if (rc < 0 && rc != -EMFILE)
		ct_debug("perf sampler: cannot open events on new threads: %s", strerror(-rc));
	return 0;
}

int perf_sampler_finish(struct perf_sampler *s, uint64_t end_ns)
{
	size_t i;
	int k, ci, rc;

	if (s->finished)
		return 0;
	for (k = 0; k < RK_N; k++)
		if (s->rings[k])
			for (ci = 0; ci < s->ncpu; ci++)
				if (s->rings[k][ci].base)
					ioctl(s->rings[k][ci].fd, PERF_EVENT_IOC_DISABLE, 0);
	for (i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	rc = drain_all(s);
	s->finished = true;
	if (rc)
		return rc;
	/* Per-CPU modes opened nothing per thread: name the threads seen, now the target runs on. */
	if (any_kind(s, false))
		for (i = 0; i < s->tids_used; i++)
			if (s->tids[i].covered && !s->tids[i].comm[0])
				read_comm(s, s->tids[i].tid);
	for (i = 0; i < s->tids_used; i++) {
		struct tid_ent *e = &s->tids[i];

		if (e->tid && e->has_out && e->out_time < end_ns) {
			rc = emit_offcpu(s, e, end_ns);
			if (rc)
				return rc;
		}
	}
	return 0;
}

void perf_sampler_close(struct perf_sampler *s)
{
	size_t i;
	int k;

	if (!s)
		return;
	close_all(s);
	if (s->cgfd >= 0)
		close(s->cgfd);
	for (k = 0; k < RK_N; k++)
		free(s->rings[k]);
	for (i = 0; i < s->tids_used; i++)
		free(s->tids[i].stack);
	free(s->tids);
	ct_itab_release(&s->tid_tab);
	free(s->fds);
	free(s->cpus);
	free(s);
}

void perf_sampler_set_unwind(struct perf_sampler *s, perf_unwind_fn fn, void *ctx)
{
	s->unwind = fn;
	s->unwind_ctx = ctx;
}

void perf_sampler_stats(const struct perf_sampler *s, struct perf_sampler_stats *st)
{
	int k, ci;

	*st = s->st;
	st->lost = 0;
	for (k = 0; k < RK_N; k++)
		if (s->rings[k])
			for (ci = 0; ci < s->ncpu; ci++)
				st->lost += s->rings[k][ci].lost;
}

const char *perf_sampler_comm(const struct perf_sampler *s, uint32_t tid)
{
	struct tid_ent *e = tid_find((struct perf_sampler *)s, tid, false);

	return e && e->comm[0] ? e->comm : NULL;
}

const char *perf_sampler_mode_name(enum perf_sampler_mode m)
{
	switch (m) {
	case PERF_SAMPLER_CGROUP: return "cgroup";
	case PERF_SAMPLER_CPU: return "cpu";
	default: return "thread";
	}
}
