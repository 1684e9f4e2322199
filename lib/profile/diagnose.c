/* SPDX-License-Identifier: MIT */
/*
 * diagnose.c - why perf_event_open refused to sample a process. The same
 * EPERM/EACCES comes from a seccomp filter (Docker's default profile, a
 * pod's RuntimeDefault), from kernel.perf_event_paranoid without
 * CAP_PERFMON, from missing ptrace access to the target, or from a security
 * module; each has its own fix. Two probes tell them apart:
 *   - the bare syscall with a NULL attr: the kernel answers EFAULT (it tried
 *     to read the attr); anything else means something answered before the
 *     kernel looked: a seccomp filter (Seccomp: 2 in /proc/self/status);
 *   - a user-only software event on clrtap itself: allowed at paranoid <= 2
 *     to anyone, so a refusal with the syscall reachable is paranoid >= 3
 *     (distributions' patch) or a security module.
 * Then capabilities (CapEff), the sysctl and ptrace access to the target
 * (opening /proc/PID/environ needs the same access as perf_event_open).
 */
#include "common/compat.h"

#include <ctype.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "common/strparse.h"
#include "profile/profile.h"

#define CAP_SYS_PTRACE_BIT 19
#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38

static int read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

/* The value after "key" in a status text, or NULL. */
/* A decimal int at p (sign allowed), or def. */
static int int_at(const char *p, int def)
{
	bool neg = *p == '-';
	uint32_t v;
	char num[16];
	size_t i;

	if (neg)
		p++;
	for (i = 0; i + 1 < sizeof(num) && isdigit((unsigned char)p[i]); i++)
		num[i] = p[i];
	num[i] = '\0';
	if (!i || ct_parse_u32(num, 10, &v) || v > INT32_MAX)
		return def;
	return neg ? -(int)v : (int)v;
}

static const char *field(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static long sys_perf_open(struct perf_event_attr *attr, pid_t pid)
{
	return syscall(__NR_perf_event_open, attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

void profile_perf_diagnose(pid_t pid, int err, bool need_kernel, struct profile_perf_diag *d)
{
	struct perf_event_attr attr;
	char buf[4096], path[64];
	const char *v;
	uint64_t cap = 0;
	long fd;
	int e;

	memset(d, 0, sizeof(*d));
	d->err = err;
	d->seccomp = -1;
	d->paranoid = -100;
	if (read_small("/proc/self/status", buf, sizeof(buf)) == 0) {
		v = field(buf, "\nSeccomp:");
		if (v)
			d->seccomp = int_at(v, -1);
		v = field(buf, "\nCapEff:");
		if (v) {
			char hex[17];
			size_t i;

			for (i = 0; i < 16 && isxdigit((unsigned char)v[i]); i++)
				hex[i] = v[i];
			hex[i] = '\0';
			(void)ct_parse_u64(hex, 16, &cap);
		}
	}
	d->cap_perfmon = cap & (1ull << CAP_PERFMON_BIT);
	d->cap_sys_admin = cap & (1ull << CAP_SYS_ADMIN_BIT);
	d->cap_sys_ptrace = cap & (1ull << CAP_SYS_PTRACE_BIT);
	if (read_small("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) == 0)
		d->paranoid = int_at(buf, -100);

	fd = sys_perf_open(NULL, 0);
	d->probe_err = fd >= 0 ? 0 : -errno;
	if (fd >= 0)
		close((int)fd);

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
	fd = sys_perf_open(&attr, 0);
	d->self_err = fd >= 0 ? 0 : -errno;
	if (fd >= 0)
		close((int)fd);

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	e = open(path, O_RDONLY | O_CLOEXEC);
	d->ptrace_ok = e >= 0 || (errno != EACCES && errno != EPERM);
	if (e >= 0)
		close(e);

	if (d->probe_err != -EFAULT && d->probe_err != 0) {
		d->cause = d->seccomp == 2 ? PROFILE_PERF_CAUSE_SECCOMP : PROFILE_PERF_CAUSE_BLOCKED;
		return;
	}
	if (!d->cap_perfmon && !d->cap_sys_admin) {
		if (d->paranoid >= 3 || (d->self_err == -EACCES || d->self_err == -EPERM)) {
			d->cause = PROFILE_PERF_CAUSE_PARANOID;
			return;
		}
		if (!d->ptrace_ok) {
			d->cause = PROFILE_PERF_CAUSE_PTRACE;
			return;
		}
		if (need_kernel && d->paranoid >= 2) {
			d->cause = PROFILE_PERF_CAUSE_KERNEL;
			return;
		}
	} else if (!d->ptrace_ok && !d->cap_sys_ptrace) {
		d->cause = PROFILE_PERF_CAUSE_PTRACE;
		return;
	}
	d->cause = PROFILE_PERF_CAUSE_LSM;
}

const char *profile_perf_cause_text(enum profile_perf_cause c)
{
	switch (c) {
	case PROFILE_PERF_CAUSE_SECCOMP:
		return "a seccomp filter denies the perf_event_open system call to clrtap "
		       "(Seccomp: 2 in /proc/self/status; the call fails before the kernel checks "
		       "capabilities or perf_event_paranoid, so CAP_PERFMON or root would not help "
		       "by themselves). Fix: --engine eventpipe, or run clrtap where the seccomp "
		       "profile allows perf_event_open: docker run --cap-add PERFMON (Docker 23 and "
		       "later let the call through the default profile with CAP_PERFMON) or "
		       "--security-opt seccomp=<profile>; in Kubernetes a securityContext with "
		       "capabilities.add [PERFMON] or seccompProfile Unconfined/Localhost";
	case PROFILE_PERF_CAUSE_BLOCKED:
		return "the perf_event_open system call is blocked before the kernel checks "
		       "anything (it fails with an error the kernel would not give, such as ENOSYS "
		       "from a container profile, or the kernel has no perf events). Fix: --engine "
		       "eventpipe, or a seccomp profile that allows perf_event_open";
	case PROFILE_PERF_CAUSE_PARANOID:
		return "kernel.perf_event_paranoid is 3 or higher here, so only CAP_PERFMON or "
		       "CAP_SYS_ADMIN may use perf_event_open, and clrtap has neither. Fix: "
		       "--engine eventpipe; or give clrtap CAP_PERFMON (docker run --cap-add "
		       "PERFMON; Kubernetes capabilities.add [PERFMON]); or on the host sysctl -w "
		       "kernel.perf_event_paranoid=2";
	case PROFILE_PERF_CAUSE_KERNEL:
		return "off-CPU sampling needs kernel stacks: kernel.perf_event_paranoid must be 1 "
		       "or lower, or clrtap needs CAP_PERFMON. Fix: give clrtap CAP_PERFMON "
		       "(docker run --cap-add PERFMON), or on the host sysctl -w "
		       "kernel.perf_event_paranoid=1; or --engine eventpipe (blocked managed threads "
		       "only)";
	case PROFILE_PERF_CAUSE_PTRACE:
		return "clrtap has no ptrace access to the target (another user's process and no "
		       "CAP_SYS_PTRACE, or a Yama/LSM rule). Fix: run clrtap as the target's user or "
		       "root, or add CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE; kubectl debug "
		       "--profile=general); --engine eventpipe needs only the diagnostics socket";
	case PROFILE_PERF_CAUSE_LSM:
		return "the system call works, clrtap has the capability or the sysctl allows it, "
		       "and it may trace the target: a security module (AppArmor, SELinux) or a "
		       "limit (perf_event_mlock_kb, RLIMIT_MEMLOCK) refuses it. Fix: --engine "
		       "eventpipe, or check the security module's log (dmesg, audit.log)";
	default:
		return "the cause could not be found. Fix: --engine eventpipe";
	}
}
