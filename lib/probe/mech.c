/* SPDX-License-Identifier: MIT */
/*
 * mech.c - proof that an attach mechanism fires on this machine.
 *
 * perf_event_open can accept a hardware execute breakpoint and never fire it
 * (VMs whose hypervisor does not pass the debug registers through): a probe
 * built on it would count 0 calls and look right. So before relying on a
 * mechanism, a child process arms it on one of its own functions, calls the
 * function PROBE_MECH_CALLS times and reads the count. The result is cached
 * per boot (keyed by /proc/sys/kernel/random/boot_id) in a directory only
 * clrtap's user writes: host-side state, nothing the target controls.
 *
 * CLRTAP_TEST_MECH_HWBP / CLRTAP_TEST_MECH_UPROBE = broken|works force a
 * result (tests of the "does not fire" path on machines where it fires);
 * forced results are not cached. CLRTAP_CACHE_DIR moves the cache.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <linux/hw_breakpoint.h>

#include "common/log.h"
#include "common/strparse.h"
#include "perf/perf.h"
#include "probe/probe.h"

#define CACHE_MAX 512
#define CHILD_TIMEOUT_MS 3000

static const char *const kind_names[] = { "hwbp", "uprobe" };

/* The probed function: not inlined, not folded, has a body of its own. */
__attribute__((noinline, used)) int probe_mech_target(int x);
__attribute__((noinline, used)) int probe_mech_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int boot_id(char *out, size_t cap)
{
	char buf[64];
	int err = read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));

	if (err)
		return err;
	buf[strcspn(buf, "\n")] = '\0';
	if (!buf[0])
		return -EBADMSG;
	ct_strlcpy(out, buf, cap);
	return 0;
}

/* Splits line into up to max space-separated fields; returns how many. */
static int split(char *line, char **f, int max)
{
	char *save = NULL, *t;
	int n = 0;

	while (n < max && (t = strtok_r(n ? NULL : line, " \t\n", &save)))
		f[n++] = t;
	return n;
}

int probe_mech_parse(const char *buf, size_t len, const char *boot, struct probe_mech *out)
{
	char line[CACHE_MAX], *f[7];
	uint32_t calls, hits, ns = 0;
	int err, nf;

	if (len >= sizeof(line))
		return -EBADMSG;
	memcpy(line, buf, len);
	line[len] = '\0';
	/* a 6th field: the measured cost of a hit in ns (older caches lack it) */
	nf = split(line, f, 7);
	if ((nf != 5 && nf != 6) || ct_parse_u32(f[2], 10, &calls) ||
	    ct_parse_u32(f[3], 10, &hits) || ct_parse_int(f[4], &err) ||
	    (nf == 6 && (ct_parse_u32(f[5], 10, &ns) || ns > 100000000)))
		return -EBADMSG;
	if (calls > 1000000 || hits > 4 * calls + 16 || err > 0 || err < -4095)
		return -EBADMSG;
	if (strcmp(f[1], "fires") && strcmp(f[1], "silent"))
		return -EBADMSG;
	if (strcmp(f[0], boot))
		return -ESTALE;
	memset(out, 0, sizeof(*out));
	out->tested = true;
	out->fires = !strcmp(f[1], "fires");
	out->calls = calls;
	out->hits = hits;
	out->err = err;
	out->hit_ns = ns;
	out->cached = true;
	return 0;
}

static int cache_dir(char *out, size_t cap)
{
	const char *d = getenv("CLRTAP_CACHE_DIR"), *x, *h;

	if (d && d[0] == '/')
		return snprintf(out, cap, "%s", d) < (int)cap ? 0 : -ENAMETOOLONG;
	if (geteuid() == 0)
		return snprintf(out, cap, "/var/cache/clrtap") < (int)cap ? 0 : -ENAMETOOLONG;
	x = getenv("XDG_CACHE_HOME");
	if (x && x[0] == '/')
		return snprintf(out, cap, "%s/clrtap", x) < (int)cap ? 0 : -ENAMETOOLONG;
	h = getenv("HOME");
	if (h && h[0] == '/')
		return snprintf(out, cap, "%s/.cache/clrtap", h) < (int)cap ? 0 : -ENAMETOOLONG;
	return -ENOENT;
}

static void cache_store(const char *dir, enum probe_mech_kind k, const char *boot,
			const struct probe_mech *m)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 48], line[CACHE_MAX];
	struct stat st;
	int fd, len;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return;
	/* only a directory of our own user, not writable by others */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022))
		return;
	snprintf(path, sizeof(path), "%s/mech-%s", dir, kind_names[k]);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	len = snprintf(line, sizeof(line), "%s %s %u %u %d %u\n", boot,
		       m->fires ? "fires" : "silent", m->calls, m->hits, m->err, m->hit_ns);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)len) != len || rename(tmp, path))
		(void)unlink(tmp);
	close(fd);
}

static int cache_load(const char *dir, enum probe_mech_kind k, const char *boot,
		      struct probe_mech *m)
{
	char path[PATH_MAX + 16], buf[CACHE_MAX];
	int err;

	snprintf(path, sizeof(path), "%s/mech-%s", dir, kind_names[k]);
	err = read_small(path, buf, sizeof(buf));
	if (err)
		return err;
	return probe_mech_parse(buf, strcspn(buf, "\n"), boot, m);
}

/* Child: file offset of the target function in the file mapped at it. */
static int self_file_offset(uint64_t addr, char *path, size_t cap, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *fl[6], *dash;
		uint64_t s, e, pg;

		if (split(line, fl, 6) < 6 || !(dash = strchr(fl[0], '-')))
			continue;
		*dash = '\0';
		if (ct_parse_u64(fl[0], 16, &s) || ct_parse_u64(dash + 1, 16, &e) ||
		    ct_parse_u64(fl[2], 16, &pg))
			continue;
		if (addr < s || addr >= e || fl[5][0] != '/')
			continue;
		/* the function is in clrtap's own binary (its path may hold spaces) */
		ct_strlcpy(path, "/proc/self/exe", cap);
		*off = addr - s + pg;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

struct child_result {
	int err;
	uint64_t hits;
	uint64_t cpu_ns;      /* the child's CPU time for the calls with the event armed */
	uint64_t base_cpu_ns; /* the same calls without it */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void child(enum probe_mech_kind k, int wfd)
{
	int (*volatile fn)(int) = probe_mech_target;
	struct child_result r = { 0, 0, 0, 0 };
	uint64_t t0;
	struct perf_event_attr a;
	char path[1024];
	uint64_t off = 0;
	int fd = -1, i, acc = 0;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	if (k == PROBE_MECH_HWBP) {
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = (uint64_t)(uintptr_t)probe_mech_target;
		a.bp_len = sizeof(long);
	} else {
		int t = perf_pmu_type("uprobe");

		r.err = t < 0 ? t : self_file_offset((uint64_t)(uintptr_t)probe_mech_target, path,
						       sizeof(path), &off);
		a.type = (uint32_t)(t < 0 ? 0 : t);
		a.config1 = (uint64_t)(uintptr_t)path;
		a.config2 = off;
	}
	if (!r.err) {
		fd = perf_open(&a, 0, -1, -1, 0);
		if (fd < 0)
			r.err = fd;
	}
	if (!r.err) {
		/* the calls' CPU time (kernel time of the traps included) with and without */
		t0 = thread_cpu_ns();
		for (i = 0; i < PROBE_MECH_CALLS; i++)
			acc += fn(i);
		r.cpu_ns = thread_cpu_ns() - t0;
		(void)ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		t0 = thread_cpu_ns();
		for (i = 0; i < PROBE_MECH_CALLS; i++)
			acc += fn(i);
		r.base_cpu_ns = thread_cpu_ns() - t0;
		if (read(fd, &r.hits, sizeof(r.hits)) != (ssize_t)sizeof(r.hits))
			r.err = -EIO;
	}
	(void)acc;
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	_exit(0);
}

static int run_child(enum probe_mech_kind k, struct probe_mech *m)
{
	struct child_result r;
	struct pollfd pfd;
	int p[2], st;
	pid_t pid;
	ssize_t n = -1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[0]);
		child(k, p[1]);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, CHILD_TIMEOUT_MS) == 1)
		n = read(p[0], &r, sizeof(r));
	close(p[0]);
	if (n != (ssize_t)sizeof(r))
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(r))
		return -ETIMEDOUT;
	memset(m, 0, sizeof(*m));
	m->tested = true;
	m->calls = PROBE_MECH_CALLS;
	m->hits = r.hits > UINT32_MAX ? UINT32_MAX : (unsigned)r.hits;
	m->err = r.err;
	if (!r.err && r.hits && r.cpu_ns > r.base_cpu_ns) {
		uint64_t ns = (r.cpu_ns - r.base_cpu_ns) / r.hits;

		m->hit_ns = ns ? (ns > 100000000 ? 100000000 : (unsigned)ns) : 1;
	}
	/* every call seen (a breakpoint that fires on some calls is not a count) */
	m->fires = !r.err && r.hits >= PROBE_MECH_CALLS;
	return 0;
}

int probe_mech_check(enum probe_mech_kind k, struct probe_mech *m)
{
	static const char *const env[] = { "CLRTAP_TEST_MECH_HWBP", "CLRTAP_TEST_MECH_UPROBE" };
	char boot[64] = "", dir[PATH_MAX];
	const char *force;
	int err;

	memset(m, 0, sizeof(*m));
	if ((unsigned)k > PROBE_MECH_UPROBE)
		return -EINVAL;
	force = getenv(env[k]);
	if (force && (!strcmp(force, "broken") || !strcmp(force, "works"))) {
		m->tested = true;
		m->forced = true;
		m->fires = !strcmp(force, "works");
		m->calls = PROBE_MECH_CALLS;
		m->hits = m->fires ? PROBE_MECH_CALLS : 0;
		return 0;
	}
	(void)boot_id(boot, sizeof(boot));
	err = cache_dir(dir, sizeof(dir));
	/* a cache line of an older clrtap has no measured cost: test again */
	if (!err && boot[0] && !cache_load(dir, k, boot, m) && (m->hit_ns || !m->fires))
		return 0;
	err = run_child(k, m);
	if (err)
		return err;
	ct_debug("probe: %s self-test: %u of %u calls seen (%s)", kind_names[k], m->hits, m->calls,
		 m->err ? strerror(-m->err) : "opened");
	if (boot[0] && !cache_dir(dir, sizeof(dir)))
		cache_store(dir, k, boot, m);
	return 0;
}

/* What one mechanism's self-test allows: "fires", "does NOT fire", "unproven". */
static const char *mech_word(const struct probe_mech *m, int err)
{
	if (!m || err || !m->tested)
		return "unproven: its self-test could not run";
	if (m->forced)
		return m->fires ? "forced to fire" : "forced not to fire";
	return m->fires ? "fires here" : "does NOT fire here";
}

static bool mech_ok(const struct probe_mech *m, int err)
{
	return m && !err && m->tested && m->fires;
}

int probe_mech_plan(const struct probe_method *m, const struct probe_mech *hw, int hw_err,
		    const struct probe_mech *up, int up_err, char *buf, size_t len)
{
	bool r2r = false, jit = false, up_ok, hw_ok;
	const char *jit_tier = NULL;
	size_t i, n, newest = 0;
	int w;

	for (i = 0; i < m->ncode; i++) {
		if (m->code[i].kind == PROBE_CODE_R2R) {
			r2r = true;
		} else {
			/* the code that runs now: the newest version, not the last listed */
			if (!jit || probe_code_newer(m->code, i, newest))
				newest = i;
			jit = true;
			jit_tier = m->code[newest].tier;
		}
	}
	up_ok = mech_ok(up, up_err);
	hw_ok = mech_ok(hw, hw_err);
	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	n = 0;
#define ADD(...)                                                                  \
	do {                                                                      \
		w = snprintf(buf + n, len - n, __VA_ARGS__);                        \
		if (w < 0 || (size_t)w >= len - n)                                  \
			return -ENOSPC;                                             \
		n += (size_t)w;                                                     \
	} while (0)
	if (r2r)
		ADD("ReadyToRun code: uprobe (%s%s); ", mech_word(up, up_err),
		    up_ok ? "" : ": its calls there are NOT seen");
	if (jit)
		ADD("JIT code (%s): hardware breakpoint (%s%s); ", jit_tier ? jit_tier : "?",
		    mech_word(hw, hw_err), hw_ok ? "" : ": its calls there are NOT seen");
	else
		ADD("%s: hardware breakpoint (%s%s); ",
		    r2r ? "JIT code after tier-up" : "JIT code once compiled (not yet; "
						     "or inlined into callers)",
		    mech_word(hw, hw_err), hw_ok ? "" : ": those calls are NOT seen");
	ADD("--via rejit: every call on every tier (in-process profiler)");
#undef ADD
	return 0;
}
