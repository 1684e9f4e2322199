/* SPDX-License-Identifier: MIT */
/*
 * noperf - runs a command with perf_event_open denied by a seccomp filter,
 * the way Docker's default profile denies it to a container without
 * CAP_PERFMON: the system call fails with EPERM before the kernel looks at
 * capabilities or perf_event_paranoid. Everything else is allowed.
 *
 *   noperf [--enosys] CMD [ARG...]
 *
 * --enosys: the call fails with ENOSYS instead, as Podman's profile answered
 * it before containers/common#2534.
 * Exit: CMD's (execvp), 126 when the filter cannot be installed, 127 when
 * CMD cannot be run, 2 on usage.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "noperf: add this architecture's AUDIT_ARCH value"
#endif

int main(int argc, char **argv)
{
	int err = EPERM;
	struct sock_filter f[] = {
		/* another architecture's calls: kill (no way around the filter) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)), /* [5] */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (argc > 1 && !strcmp(argv[1], "--enosys")) {
		err = ENOSYS;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: noperf [--enosys] CMD [ARG...]\n");
		return 2;
	}
	f[5].k = SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)) {
		fprintf(stderr, "noperf: cannot install the seccomp filter: %s\n", strerror(errno));
		return 126;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "noperf: cannot run %s: %s\n", argv[1], strerror(errno));
	return 127;
}
