/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/perfmap with no .NET process: this test process plays
 * the target. A fake runtime thread serves its diagnostics socket and does
 * what the runtime does with the perf map: EnablePerfMap opens
 * /tmp/perf-PID.map (held open: "on"), DisablePerfMap closes it. The lease,
 * the sharing between two clrtaps and the watcher that restores the map when
 * clrtap is killed are checked against what the fake saw.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "ipc/fakert_test.h"
#include "perfmap/perfmap.h"
#include "proc/proc.h"

struct fake_pm {
	char dir[64], path[108], map[64];
	int lfd;
	int mapfd;                /* the "runtime's" open map, -1 when off */
	_Atomic unsigned enables, disables;
	pthread_t th;
};

static void *pm_main(void *arg)
{
	struct fake_pm *f = arg;
	uint8_t req[20], reply[24];
	int c;

	while ((c = fake_request(f->lfd, req)) >= 0) {
		if (req[16] == 0x04 && req[17] == 0x05) {
			f->enables++;
			if (f->mapfd < 0)
				f->mapfd = open(f->map, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		} else if (req[16] == 0x04 && req[17] == 0x06) {
			f->disables++;
			if (f->mapfd >= 0)
				close(f->mapfd);
			f->mapfd = -1;
		}
		fake_header(reply, 24);
		ct_put_le32(reply + 20, 0); /* OK */
		fake_write(c, reply, 24);
		close(c);
	}
	return NULL;
}

static void pm_start(struct fake_pm *f, struct proc_target *t, bool map_on)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/clrtap-pm-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/s", f->dir);
	snprintf(f->map, sizeof(f->map), "/tmp/perf-%d.map", (int)getpid());
	unlink(f->map);
	f->mapfd = map_on ? open(f->map, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
	ct_strlcpy(sa.sun_path, f->path, sizeof(sa.sun_path));
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 8), 0);
	assert_int_equal(pthread_create(&f->th, NULL, pm_main, f), 0);

	memset(t, 0, sizeof(*t));
	t->pid = t->nspid = getpid();
	assert_int_equal(proc_starttime(getpid(), &t->starttime), 0);
	t->uid = getuid();
	t->key_match = true;
	ct_strlcpy(t->tmpdir, "/tmp", sizeof(t->tmpdir));
	snprintf(t->root, sizeof(t->root), "/proc/%d/root", (int)getpid());
	ct_strlcpy(t->socket, f->path, sizeof(t->socket));
	ct_strlcpy(t->sock_tpath, f->path, sizeof(t->sock_tpath));
	t->runtime_major = 10; /* writes its map as it goes: no jitdump */
}

static void pm_stop(struct fake_pm *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	if (f->mapfd >= 0)
		close(f->mapfd);
	unlink(f->path);
	rmdir(f->dir);
	unlink(f->map);
}

static bool exists(const char *p)
{
	return access(p, F_OK) == 0;
}

/* Waits up to ms for the fake to have seen n disables. */
static bool wait_disables(struct fake_pm *f, unsigned n, int ms)
{
	for (; ms > 0 && f->disables < n; ms -= 10)
		usleep(10000);
	return f->disables >= n;
}

/* Off before: turned on for the command, the lease says so; off again after, the file clrtap caused removed. */
static void test_turn_on_and_off(void **state)
{
	struct perfmap_use u;
	struct ipc_error rerr;
	struct proc_target t;
	struct fake_pm f;
	char buf[64] = "";
	int fd;

	(void)state;
	pm_start(&f, &t, false);
	assert_int_equal(perfmap_use_begin(&u, &t, 2000, &rerr), 0);
	assert_true(u.turned_on);
	assert_false(u.was_on);
	assert_false(u.shared);
	assert_false(u.file_existed);
	assert_int_equal(f.enables, 1);
	assert_true(f.mapfd >= 0);
	/* the lease records that a clrtap turned it on */
	fd = open(u.lease_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	assert_string_equal(buf, "clrtap-on existed=0 jitdump-made=0\n");
	assert_true(u.guard > 0); /* the watcher runs */
	assert_int_equal(perfmap_use_end(&u, &rerr), 0);
	assert_int_equal(f.disables, 1);
	assert_true(f.mapfd < 0);
	assert_false(exists(f.map)); /* clrtap caused it: removed */
	pm_stop(&f);
}

/* On before clrtap (the user's): left alone, not turned off, the file stays. */
static void test_on_before_left_alone(void **state)
{
	struct perfmap_use u;
	struct ipc_error rerr;
	struct proc_target t;
	struct fake_pm f;

	(void)state;
	pm_start(&f, &t, true);
	assert_int_equal(perfmap_use_begin(&u, &t, 2000, &rerr), 0);
	assert_true(u.was_on);
	assert_false(u.turned_on);
	assert_int_equal(f.enables, 0);
	assert_int_equal(perfmap_use_end(&u, &rerr), 0);
	assert_int_equal(f.disables, 0);
	assert_true(f.mapfd >= 0);
	assert_true(exists(f.map));
	pm_stop(&f);
}

/* Two clrtaps: the second shares the first's lease; only the last to leave turns it off. */
static void test_shared_last_turns_off(void **state)
{
	struct perfmap_use a, b;
	struct ipc_error rerr;
	struct proc_target t;
	struct fake_pm f;

	(void)state;
	pm_start(&f, &t, false);
	assert_int_equal(perfmap_use_begin(&a, &t, 2000, &rerr), 0);
	assert_int_equal(perfmap_use_begin(&b, &t, 2000, &rerr), 0);
	assert_true(a.turned_on);
	assert_true(b.shared);
	assert_false(b.turned_on);
	assert_int_equal(f.enables, 1);
	assert_int_equal(perfmap_use_end(&a, &rerr), 0);
	assert_int_equal(f.disables, 0); /* b still uses it */
	assert_true(f.mapfd >= 0);
	assert_int_equal(perfmap_use_end(&b, &rerr), 0);
	assert_int_equal(f.disables, 1);
	assert_false(exists(f.map));
	pm_stop(&f);
}

/* clrtap killed (SIGKILL) while it holds the map on: its watcher turns it off and removes the file. */
static void test_killed_clrtap_restored(void **state)
{
	struct proc_target t;
	struct fake_pm f;
	pid_t child;
	int st;

	(void)state;
	pm_start(&f, &t, false);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct perfmap_use u;
		struct ipc_error rerr;

		if (perfmap_use_begin(&u, &t, 2000, &rerr) || !u.turned_on)
			_exit(3);
		raise(SIGKILL);
		_exit(4);
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(f.enables, 1);
	assert_true(wait_disables(&f, 1, 10000));
	for (int i = 0; i < 200 && exists(f.map); i++)
		usleep(10000);
	assert_false(exists(f.map));
	pm_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turn_on_and_off),
		cmocka_unit_test(test_on_before_left_alone),
		cmocka_unit_test(test_shared_last_turns_off),
		cmocka_unit_test(test_killed_clrtap_restored),
	};

	if (geteuid() != 0) /* the lease lives in /run/clrtap (root) or $XDG_RUNTIME_DIR */
		setenv("XDG_RUNTIME_DIR", "/tmp", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
