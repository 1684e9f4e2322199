/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/proc on this process and on processes it starts. */
#include "common/compat.h"

#include <pthread.h>
#include <setjmp.h>
#include <math.h>
#include <time.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/strparse.h"
#include "proc/proc.h"
#include "proc/taskcpu.h"

static void test_self_identity(void **state)
{
	pid_t ns;
	uint64_t st;
	uid_t uid;
	bool differs = true;

	assert_int_equal(proc_nspid(getpid(), &ns), 0);
	assert_int_equal(ns, getpid());
	assert_int_equal(proc_starttime(getpid(), &st), 0);
	assert_true(st > 0);
	assert_int_equal(proc_uid(getpid(), &uid), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(proc_ns_differs(getpid(), "pid", &differs), 0);
	assert_false(differs);
}

static void test_environ(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(proc_environ_get(getpid(), "CLRTAP_PROC_TEST", &sb), 0);
	assert_string_equal(sb.buf, "v=1 2");
	strbuf_reset(&sb);
	assert_int_equal(proc_environ_get(getpid(), "CLRTAP_NOT_SET_ANYWHERE", &sb), -ENOENT);
	strbuf_release(&sb);
}

static void test_not_dotnet_and_dead(void **state)
{
	struct proc_target t;
	pid_t child;
	int status;

	/* This test binary has no diagnostics socket. */
	assert_int_equal(proc_target_find(getpid(), &t), -ENOENT);
	assert_int_equal(t.nspid, getpid());
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	assert_int_equal(proc_target_find(child, &t), -ESRCH);
}

/* A socket named like a runtime's makes this process look like .NET. */
static void test_socket_found(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct proc_target t;
	uint64_t key;
	int s;

	assert_int_equal(proc_starttime(getpid(), &key), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/dotnet-diagnostic-%d-%" PRIu64 "-socket",
		 (int)getpid(), key);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	unlink(sa.sun_path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_int_equal(proc_target_find(getpid(), &t), 0);
	assert_string_equal(t.socket, sa.sun_path);
	assert_true(t.key_match);
	assert_string_equal(t.tmpdir, getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	close(s);
	unlink(sa.sun_path);
}

static int count_cb(pid_t pid, void *ctx)
{
	if (pid == getpid())
		(*(int *)ctx)++;
	return 0;
}

/* A thread's name as its bytes (a newline, a backslash, ESC), not status' escaped Name. */
static void test_comm_exact(void **state)
{
	const char evil[] = "a\nb\\c\x1b[1m\xffz";
	char old[32], name[32], small[4];

	(void)state;
	assert_int_equal(prctl(PR_GET_NAME, old), 0);
	assert_int_equal(prctl(PR_SET_NAME, evil), 0);
	assert_int_equal(proc_comm(gettid(), name, sizeof(name)), 0);
	assert_int_equal(proc_comm(gettid(), small, sizeof(small)), 0);
	assert_int_equal(prctl(PR_SET_NAME, old), 0);
	assert_string_equal(name, evil);
	assert_string_equal(small, "a\nb");
	assert_int_equal(proc_comm(gettid(), name, sizeof(name)), 0);
	assert_string_equal(name, old);
}

static void test_scan(void **state)
{
	int seen = 0;
	pid_t pids[4];
	size_t n;

	assert_int_equal(proc_scan(count_cb, &seen), 0);
	assert_int_equal(seen, 1);
	assert_int_equal(proc_find_by_name("no-such-process-xyz", pids, 4, &n), 0);
	assert_int_equal(n, 0);
}

/* Cgroup names as container runtimes write them (v1 and v2 lines). */
static void test_cgroup_container(void **state)
{
	static const char id[] = "3f4c1a2b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b";
	struct proc_container c;
	char text[1024];

	(void)state;
	/* Docker, cgroup v1 */
	snprintf(text, sizeof(text), "12:memory:/docker/%s\n1:name=systemd:/docker/%s\n", id, id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, id);
	assert_string_equal(c.pod, "");
	/* Kubernetes with containerd and systemd cgroups, v2 */
	snprintf(text, sizeof(text),
		 "0::/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
		 "cri-containerd-%s.scope\n", id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, id);
	assert_string_equal(c.pod, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
	/* Kubernetes with cgroupfs paths, v1 */
	snprintf(text, sizeof(text),
		 "4:cpu:/kubepods/besteffort/pod0f0e0d0c-0b0a-0908-0706-050403020100/%s", id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, id);
	assert_string_equal(c.pod, "0f0e0d0c-0b0a-0908-0706-050403020100");
	/* CRI-O and podman scopes */
	snprintf(text, sizeof(text), "0::/system.slice/crio-%s.scope\n", id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, id);
	snprintf(text, sizeof(text), "0::/user.slice/libpod-%s.scope/container\n", id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, id);
	/* Not containers: the host, a 32-digit id (this machine's), near misses */
	proc_parse_cgroup("0::/\n", 5, &c);
	assert_string_equal(c.id, "");
	assert_string_equal(c.pod, "");
	snprintf(text, sizeof(text), "4:memory:/process_api/2880263d96763286d989e543eda06456\n0::/\n");
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, "");
	snprintf(text, sizeof(text), "0::/docker-%.63s.scope\n0::/docker-%sX.scope\n", id, id);
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.id, "");
	snprintf(text, sizeof(text), "0::/kubepods-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6.slice\n");
	proc_parse_cgroup(text, strlen(text), &c);
	assert_string_equal(c.pod, "");
	/* Damage: no colons, no newline at the end, a NUL inside */
	proc_parse_cgroup("garbage", 7, &c);
	assert_string_equal(c.id, "");
	memcpy(text, "0::/a\0b", 7);
	proc_parse_cgroup(text, 7, &c);
	assert_string_equal(c.id, "");
	/* The real file of this test process parses without a container */
	assert_int_equal(proc_container(getpid(), &c), 0);
}

/* schedstat's first field; stat's utime+stime after the last ')' of the name */
static void test_taskcpu_parse(void **state)
{
	static const char st[] = "123 (a) b) c) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 99\n";
	uint64_t run = 0;

	(void)state;
	assert_int_equal(taskcpu_parse_schedstat("193651243 36079270 428\n", 23, &run), 0);
	assert_int_equal(run, 193651243ull);
	assert_int_equal(taskcpu_parse_schedstat("x 1 2", 5, &run), -EBADMSG);
	assert_int_equal(taskcpu_parse_schedstat("", 0, &run), -EBADMSG);
	assert_int_equal(taskcpu_parse_stat(st, sizeof(st) - 1, 100, &run), 0);
	assert_int_equal(run, 3000000000ull); /* (250 + 50) ticks at 100 Hz */
	assert_int_equal(taskcpu_parse_stat("1 (a) R 1 2", 11, 100, &run), -EBADMSG);
	assert_int_equal(taskcpu_parse_stat("no paren", 8, 100, &run), -EBADMSG);
}

/* The one stat and resident-memory reader, on this process. */
static void test_stat_fields(void **state)
{
	static const char st[] = "123 (a) b) c) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 99\n";
	uint64_t v = 0, ticks = 0, rss = 0, start = 0;
	volatile uint64_t spin = 0;
	uint64_t i;

	(void)state;
	assert_int_equal(proc_stat_field(st, sizeof(st) - 1, 3, &v), -EBADMSG); /* "R" */
	assert_int_equal(proc_stat_field(st, sizeof(st) - 1, 14, &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(proc_stat_field(st, sizeof(st) - 1, 22, &v), 0);
	assert_int_equal(v, 99);
	assert_int_equal(proc_stat_field(st, sizeof(st) - 1, 23, &v), -EBADMSG); /* past the end */
	for (i = 0; i < 200000000ull; i++) /* some CPU time: ~0.1 s */
		spin += i;
	assert_true(spin > 0);
	assert_int_equal(proc_cpu_ticks(getpid(), &ticks), 0);
	assert_true(ticks >= 1);
	assert_int_equal(proc_rss_bytes(getpid(), &rss), 0);
	assert_true(rss >= 1u << 20 && rss < (uint64_t)1 << 40);
	assert_int_equal(proc_starttime(getpid(), &start), 0);
	assert_true(start > 0);
	assert_int_not_equal(proc_cpu_ticks(0x7ffffff0, &ticks), 0);
}

static volatile int spin_stop;
static volatile pid_t spin_tid, sleep_tid;

static void *spinner(void *arg)
{
	(void)arg;
	spin_tid = gettid();
	while (!spin_stop)
		;
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	sleep_tid = gettid();
	while (!spin_stop)
		nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A spinning thread's samples are kept, a sleeping thread's are not. */
static void test_taskcpu_live(void **state)
{
	struct taskcpu *tc = NULL;
	struct taskcpu_stats st;
	pthread_t a, b;
	uint64_t t0, t;
	unsigned kept_spin = 0, kept_sleep = 0, i;
	bool known = false;
	double f = -1, share;
	struct timespec c0, c1;
	clockid_t cid;

	(void)state;
	spin_stop = 0;
	assert_int_equal(pthread_create(&a, NULL, spinner, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, sleeper, NULL), 0);
	while (!spin_tid || !sleep_tid)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	assert_int_equal(taskcpu_start(&tc, getpid()), 0);
	assert_int_equal(pthread_getcpuclockid(a, &cid), 0);
	clock_gettime(cid, &c0);
	t0 = now_ns();
	nanosleep(&(struct timespec){ 0, 400 * 1000 * 1000 }, NULL);
	clock_gettime(cid, &c1);
	share = ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) /
		(double)(now_ns() - t0);
	/* 100 samples of each over the 400 ms */
	for (i = 0; i < 100; i++) {
		t = t0 + 20000000ull + i * 3000000ull;
		kept_spin += taskcpu_keep(tc, (uint32_t)spin_tid, t, 100, &known);
		assert_true(known);
		kept_sleep += taskcpu_keep(tc, (uint32_t)sleep_tid, t, 100, &known);
		assert_true(known);
	}
	assert_int_equal(taskcpu_running(tc, (uint32_t)sleep_tid, t0 + 50000000ull, &f), 0);
	assert_true(f < 0.05);
	/* a moment not polled yet, a thread that does not exist */
	assert_int_equal(taskcpu_running(tc, (uint32_t)spin_tid, now_ns() + 5000000000ull, &f), -EAGAIN);
	assert_int_equal(taskcpu_running(tc, 0x7ffffff0u, t0 - 1000000000ull, &f), -ENOENT);
	spin_stop = 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	taskcpu_stop(tc);
	taskcpu_stats(tc, &st);
	assert_true(st.source != TASKCPU_NONE);
	assert_true(st.threads >= 3);
	assert_true(st.polls >= 10);
	assert_int_equal(kept_sleep, 0);
	/* the spinner's samples kept about as the share of the time it ran (on
	 * a loaded machine, not all of it): within 25 of 100 */
	assert_true(fabs((double)kept_spin - 100.0 * share) <= 25.0);
	assert_int_equal(st.kept + st.waiting, 200);
	taskcpu_free(tc);
}

int main(void)
{
	/* /proc/self/environ holds the environment at exec: re-exec with one set. */
	if (!getenv("CLRTAP_PROC_TEST")) {
		setenv("CLRTAP_PROC_TEST", "v=1 2", 1);
		execl("/proc/self/exe", "proc_test", (char *)NULL);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_identity),
		cmocka_unit_test(test_environ),
		cmocka_unit_test(test_not_dotnet_and_dead),
		cmocka_unit_test(test_socket_found),
		cmocka_unit_test(test_comm_exact),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_cgroup_container),
		cmocka_unit_test(test_taskcpu_parse),
		cmocka_unit_test(test_stat_fields),
		cmocka_unit_test(test_taskcpu_live),
	};

	return cmocka_run_group_tests_name("proc", tests, NULL, NULL);
}
