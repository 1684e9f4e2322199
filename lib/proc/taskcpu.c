/* SPDX-License-Identifier: MIT */
/*
 * taskcpu.c - each thread's on-CPU time polled from /proc, to tell which
 * samples of an outside sampler found the thread running (see taskcpu.h).
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>

#include "common/log.h"
#include "common/strparse.h"
#include "common/clock.h"
#include "proc/proc.h"
#include "proc/taskcpu.h"

#define SCAN_NS 500000000ull      /* new threads looked for every 0.5 s */
#define MIN_INTERVAL_MS 10
#define MAX_INTERVAL_MS 100
#define READS_PER_S 10000u        /* the interval grows past this many reads a second */
#define POINTS_CAP (1u << 20)     /* per thread, whatever the horizon */

struct tpoint {
	uint64_t t, run;
};

struct tthread {
	uint32_t tid, nstid;
	int fd;
	double credit;
	uint64_t asked, kept; /* taskcpu_keep's samples of it */
	struct tpoint *pts;
	size_t n, cap;
};

struct taskcpu {
	pid_t pid;
	long hz;
	pthread_t th;
	bool th_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	struct tthread *ths; /* sorted by tid */
	size_t nth, capth;
	uint64_t last_scan_ns;
	bool rescan;         /* a sample of a thread younger than the last scan came */
	uint64_t boot_off_ns; /* CLOCK_BOOTTIME - CLOCK_MONOTONIC */
	struct taskcpu_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int taskcpu_parse_schedstat(const char *s, size_t len, uint64_t *run_ns)
{
	char buf[64];
	size_t i;

	for (i = 0; i < len && i + 1 < sizeof(buf) && s[i] >= '0' && s[i] <= '9'; i++)
		buf[i] = s[i];
	buf[i] = '\0';
	if (!i || (i < len && s[i] != ' '))
		return -EBADMSG;
	return ct_parse_u64(buf, 10, run_ns) ? -EBADMSG : 0;
}

int taskcpu_parse_stat(const char *s, size_t len, long hz, uint64_t *run_ns)
{
	uint64_t ut, st;

	if (hz <= 0 || proc_stat_field(s, len, 14, &ut) || proc_stat_field(s, len, 15, &st))
		return -EBADMSG;
	*run_ns = (ut + st) * (1000000000ull / (uint64_t)hz);
	return 0;
}

/* When a thread started, CLOCK_MONOTONIC ns (stat's starttime: clock ticks
 * since boot); 0: unknown. */
static uint64_t thread_start_ns(struct taskcpu *tc, uint32_t tid)
{
	char path[96], buf[1024];
	uint64_t ticks, ns;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)tc->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || tc->hz <= 0 || proc_stat_field(buf, (size_t)n, 22, &ticks))
		return 0;
	ns = ticks * (1000000000ull / (uint64_t)tc->hz);
	return ns > tc->boot_off_ns ? ns - tc->boot_off_ns : 0;
}

static int read_run(struct taskcpu *tc, int fd, uint64_t *run)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	if (tc->st.source == TASKCPU_SCHEDSTAT)
		return taskcpu_parse_schedstat(buf, (size_t)n, run);
	return taskcpu_parse_stat(buf, (size_t)n, tc->hz, run);
}

static int open_task(struct taskcpu *tc, uint32_t tid, enum taskcpu_source src)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%u/%s", (int)tc->pid, tid,
		 src == TASKCPU_SCHEDSTAT ? "schedstat" : "stat");
	return open(path, O_RDONLY | O_CLOEXEC);
}

static struct tthread *find_tid(struct taskcpu *tc, uint32_t tid, size_t *at)
{
	size_t lo = 0, hi = tc->nth;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tc->ths[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (at)
		*at = lo;
	return lo < tc->nth && tc->ths[lo].tid == tid ? &tc->ths[lo] : NULL;
}

static struct tthread *find_nstid(struct taskcpu *tc, uint32_t nstid)
{
	struct tthread *t = find_tid(tc, nstid, NULL);
	size_t i;

	if (t && t->nstid == nstid)
		return t; /* the same PID namespace: tid == nstid */
	for (i = 0; i < tc->nth; i++)
		if (tc->ths[i].nstid == nstid)
			return &tc->ths[i];
	return NULL;
}

static void add_point(struct tthread *t, uint64_t now, uint64_t run)
{
	if (t->n && t->pts[t->n - 1].run > run)
		run = t->pts[t->n - 1].run; /* never backwards */
	if (t->n == t->cap) {
		size_t drop = 0, ncap;
		struct tpoint *np;

		while (drop < t->n && t->pts[drop].t + TASKCPU_HORIZON_S * 1000000000ull < now)
			drop++;
		if (drop) {
			memmove(t->pts, t->pts + drop, (t->n - drop) * sizeof(*t->pts));
			t->n -= drop;
		}
		if (t->n == t->cap) {
			if (t->cap >= POINTS_CAP)
				return;
			ncap = t->cap ? t->cap * 2 : 256;
			np = realloc(t->pts, ncap * sizeof(*np));
			if (!np)
				return; /* fewer points: the samples after them are unknown */
			t->pts = np;
			t->cap = ncap;
		}
	}
	t->pts[t->n].t = now;
	t->pts[t->n++].run = run;
}

/* Drops threads that ended over the horizon ago (under mu): a long session
 * (`top`) sees the pool's threads come and go. */
static void prune(struct taskcpu *tc, uint64_t now)
{
	size_t i, k = 0;

	for (i = 0; i < tc->nth; i++) {
		struct tthread *t = &tc->ths[i];

		if (t->fd < 0 && (!t->n || t->pts[t->n - 1].t + TASKCPU_HORIZON_S * 1000000000ull < now)) {
			free(t->pts);
			continue;
		}
		tc->ths[k++] = *t;
	}
	tc->nth = k;
}

/* Looks for new threads (under mu). */
static void scan(struct taskcpu *tc)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	if (tc->nth >= TASKCPU_MAX_THREADS / 2)
		prune(tc, mono_ns());
	snprintf(path, sizeof(path), "/proc/%d/task", (int)tc->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		uint32_t tid;
		pid_t ns;
		size_t at;
		int fd;

		if (ct_parse_u32(d->d_name, 10, &tid) || find_tid(tc, tid, &at))
			continue;
		if (tc->nth >= TASKCPU_MAX_THREADS) {
			tc->st.threads_capped = true;
			break;
		}
		if (tc->nth == tc->capth) {
			size_t ncap = tc->capth ? tc->capth * 2 : 64;
			struct tthread *nt = realloc(tc->ths, ncap * sizeof(*nt));

			if (!nt)
				break;
			tc->ths = nt;
			tc->capth = ncap;
		}
		fd = open_task(tc, tid, tc->st.source);
		if (fd < 0)
			continue;
		memmove(&tc->ths[at + 1], &tc->ths[at], (tc->nth - at) * sizeof(*tc->ths));
		memset(&tc->ths[at], 0, sizeof(*tc->ths));
		tc->ths[at].tid = tid;
		tc->ths[at].nstid = proc_nspid((pid_t)tid, &ns) == 0 && ns > 0 ? (uint32_t)ns : tid;
		tc->ths[at].fd = fd;
		if (tc->last_scan_ns) {
			/* born since the last scan: it had run 0 ns at its start, so its
			 * samples before this first poll are covered too */
			uint64_t born = thread_start_ns(tc, tid);

			if (born && born > tc->last_scan_ns - SCAN_NS)
				add_point(&tc->ths[at], born, 0);
		}
		tc->nth++;
		tc->st.threads++;
	}
	closedir(dir);
}

/* One round (under mu). */
static void poll_round(struct taskcpu *tc)
{
	uint64_t now = mono_ns();
	size_t i;

	if (!tc->last_scan_ns || tc->rescan || now - tc->last_scan_ns >= SCAN_NS) {
		scan(tc);
		tc->last_scan_ns = now;
		tc->rescan = false;
	}
	for (i = 0; i < tc->nth; i++) {
		struct tthread *t = &tc->ths[i];
		uint64_t run;

		if (t->fd < 0)
			continue;
		now = mono_ns();
		if (read_run(tc, t->fd, &run)) {
			close(t->fd); /* the thread ended */
			t->fd = -1;
			continue;
		}
		tc->st.reads++;
		add_point(t, now, run);
	}
	tc->st.polls++;
}

static unsigned interval_ms(const struct taskcpu *tc)
{
	unsigned ms = (unsigned)(tc->nth * 1000u / READS_PER_S);

	return ms < MIN_INTERVAL_MS ? MIN_INTERVAL_MS : ms > MAX_INTERVAL_MS ? MAX_INTERVAL_MS : ms;
}

static void *poller(void *arg)
{
	struct taskcpu *tc = arg;
	struct timespec ts;

	pthread_mutex_lock(&tc->mu);
	while (!tc->stop) {
		unsigned ms = interval_ms(tc);

		tc->st.interval_ms = ms;
		ct_deadline(CLOCK_REALTIME, ms, &ts);
		while (!tc->stop && pthread_cond_timedwait(&tc->cv, &tc->mu, &ts) != ETIMEDOUT)
			;
		if (tc->stop)
			break;
		poll_round(tc);
		pthread_cond_broadcast(&tc->cv);
	}
	pthread_mutex_unlock(&tc->mu);
	return NULL;
}

int taskcpu_start(struct taskcpu **out, pid_t pid)
{
	struct taskcpu *tc;
	uint64_t run = 0;
	int fd, rc;

	*out = NULL;
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	tc->pid = pid;
	tc->hz = sysconf(_SC_CLK_TCK);
	{
		struct timespec b, m;

		clock_gettime(CLOCK_BOOTTIME, &b);
		clock_gettime(CLOCK_MONOTONIC, &m);
		tc->boot_off_ns = ((uint64_t)b.tv_sec - (uint64_t)m.tv_sec) * 1000000000ull +
				  (uint64_t)b.tv_nsec - (uint64_t)m.tv_nsec;
	}
	pthread_mutex_init(&tc->mu, NULL);
	pthread_cond_init(&tc->cv, NULL);
	/* schedstat where the kernel fills it (its first field stays 0 without
	 * CONFIG_SCHED_INFO), else stat's clock ticks */
	tc->st.source = TASKCPU_SCHEDSTAT;
	fd = open_task(tc, (uint32_t)pid, TASKCPU_SCHEDSTAT);
	if (fd < 0 || read_run(tc, fd, &run) || !run) {
		if (fd >= 0)
			close(fd);
		tc->st.source = TASKCPU_STAT;
		fd = open_task(tc, (uint32_t)pid, TASKCPU_STAT);
		if (fd < 0 || read_run(tc, fd, &run)) {
			rc = fd < 0 ? -errno : -EIO;
			if (fd >= 0)
				close(fd);
			taskcpu_free(tc);
			return rc;
		}
	}
	close(fd);
	pthread_mutex_lock(&tc->mu);
	poll_round(tc);
	tc->st.interval_ms = interval_ms(tc);
	pthread_mutex_unlock(&tc->mu);
	rc = pthread_create(&tc->th, NULL, poller, tc);
	if (rc) {
		taskcpu_free(tc);
		return -rc;
	}
	tc->th_started = true;
	*out = tc;
	return 0;
}

/* under mu */
static int running_locked(struct taskcpu *tc, uint32_t nstid, uint64_t t_ns, double *frac,
			  struct tthread **tp)
{
	struct tthread *t = find_nstid(tc, nstid);
	size_t lo, hi;
	uint64_t dt, dr;

	*tp = t;
	if (!t) {
		if (tc->stop || t_ns < tc->last_scan_ns)
			return -ENOENT;
		tc->rescan = true; /* a thread born since the last scan: the next round looks */
		return -EAGAIN;
	}
	if (!t->n || t_ns < t->pts[0].t)
		return -ENOENT;
	if (t_ns >= t->pts[t->n - 1].t)
		return tc->stop || t->fd < 0 ? -ENOENT : -EAGAIN;
	lo = 0;
	hi = t->n - 1; /* pts[lo].t <= t_ns < pts[hi].t */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (t->pts[mid].t <= t_ns)
			lo = mid;
		else
			hi = mid;
	}
	dt = t->pts[hi].t - t->pts[lo].t;
	dr = t->pts[hi].run - t->pts[lo].run;
	/* Not clipped at 1: a running thread's schedstat lags by up to a
	 * scheduler tick, so an interval may show more than its length and the
	 * next one less; the excess is carried (taskcpu_keep's credit), the
	 * thread's total stays right. Clipped at 2, beyond a tick's lag. */
	*frac = dt ? (double)dr / (double)dt : 0;
	if (*frac > 2)
		*frac = 2;
	return 0;
}

int taskcpu_running(struct taskcpu *tc, uint32_t nstid, uint64_t t_ns, double *frac)
{
	struct tthread *t;
	int rc;

	pthread_mutex_lock(&tc->mu);
	rc = running_locked(tc, nstid, t_ns, frac, &t);
	pthread_mutex_unlock(&tc->mu);
	return rc;
}

bool taskcpu_keep(struct taskcpu *tc, uint32_t nstid, uint64_t t_ns, int wait_ms, bool *known)
{
	uint64_t until = mono_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000ull;
	struct tthread *t;
	double f = 0;
	bool keep;
	int rc;

	pthread_mutex_lock(&tc->mu);
	for (;;) {
		struct timespec ts;

		rc = running_locked(tc, nstid, t_ns, &f, &t);
		if (rc != -EAGAIN || mono_ns() >= until)
			break;
		ct_deadline(CLOCK_REALTIME, 20, &ts);
		pthread_cond_timedwait(&tc->cv, &tc->mu, &ts);
	}
	if (rc) {
		tc->st.unknown++;
		*known = false;
		pthread_mutex_unlock(&tc->mu);
		return true;
	}
	*known = true;
	t->asked++;
	tc->st.running_sum += f;
	t->credit += f;
	keep = t->credit >= 0.5;
	if (keep) {
		t->credit -= 1;
		t->kept++;
		tc->st.kept++;
	} else {
		tc->st.waiting++;
	}
	pthread_mutex_unlock(&tc->mu);
	return keep;
}

void taskcpu_stop(struct taskcpu *tc)
{
	if (!tc)
		return;
	pthread_mutex_lock(&tc->mu);
	if (tc->th_started && !tc->stop)
		poll_round(tc); /* the last interval closed */
	tc->stop = true;
	pthread_cond_broadcast(&tc->cv);
	pthread_mutex_unlock(&tc->mu);
	if (tc->th_started) {
		size_t i;

		pthread_join(tc->th, NULL);
		tc->th_started = false;
		for (i = 0; i < tc->nth; i++) {
			const struct tthread *t = &tc->ths[i];

			if (t->asked && t->n)
				ct_debug("taskcpu: tid %u: %" PRIu64 " samples, %" PRIu64
					 " kept; ran %.1f ms of %.1f ms polled", t->nstid, t->asked,
					 t->kept, (double)(t->pts[t->n - 1].run - t->pts[0].run) / 1e6,
					 (double)(t->pts[t->n - 1].t - t->pts[0].t) / 1e6);
		}
	}
}

void taskcpu_stats(struct taskcpu *tc, struct taskcpu_stats *st)
{
	pthread_mutex_lock(&tc->mu);
	*st = tc->st;
	pthread_mutex_unlock(&tc->mu);
}

const char *taskcpu_source_name(enum taskcpu_source s)
{
	return s == TASKCPU_SCHEDSTAT ? "schedstat" : s == TASKCPU_STAT ? "stat" : "none";
}

void taskcpu_free(struct taskcpu *tc)
{
	size_t i;

	if (!tc)
		return;
	taskcpu_stop(tc);
	for (i = 0; i < tc->nth; i++) {
		if (tc->ths[i].fd >= 0)
			close(tc->ths[i].fd);
		free(tc->ths[i].pts);
	}
	free(tc->ths);
	pthread_mutex_destroy(&tc->mu);
	pthread_cond_destroy(&tc->cv);
	free(tc);
}
