/* SPDX-License-Identifier: MIT */
/*
 * profile_test.c - the stack table (deduplication, weights, kernel frames at
 * the leaf end, thread roots, summary counts) without a symbolizer, and the
 * tar.gz writer read back through zlib.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include "flame/flame.h"
#include "nettrace/nettrace.h"
#include "profile/bundle.h"
#include "profile/profile.h"

static const char *comm_fn(void *ctx, uint32_t tid)
{
	(void)ctx;
	return tid == 7 ? "workload" : NULL;
}

static int add(struct profile *p, enum perf_stack_kind kind, uint32_t tid, uint64_t weight,
	       const uint64_t *ips, unsigned nr, unsigned nk)
{
	struct perf_stack st = { kind, 1, tid, 100, weight, nr, nk, ips };

	return profile_add_stack(p, &st);
}

static int collect_folded(struct flame *f, char *buf, size_t cap)
{
	char path[] = "/tmp/clrtap-profile-test-XXXXXX";
	int fd = mkstemp(path);
	ssize_t n;

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(flame_write(f, FLAME_FOLDED, fd, NULL), 0);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, cap - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return (int)n;
}

static void test_stacks(void **state)
{
	/* leaf first: two kernel frames, then two user frames */
	const uint64_t a[] = { 0xffffffff81000010ull, 0xffffffff81000020ull, 0x1000, 0x2000 };
	const uint64_t b[] = { 0x3000, 0x2000 };
	struct profile_opts o = { .keep_samples = true };
	struct profile_summary sum;
	struct profile *p;
	struct flame *f;
	char buf[4096];

	(void)state;
	assert_int_equal(profile_new(&p, &o), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 5, 10101010, a, 4, 2), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 6, 10101010, a, 4, 2), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 5, 10101010, b, 2, 0), 0);
	assert_int_equal(add(p, PERF_STACK_OFFCPU, 5, 5000, b, 2, 0), 0);
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(profile_build(p, NULL, NULL, NULL, f, &sum), 0);
	/* one sample = weight 1 on-CPU; off-CPU weighs its ns */
	assert_int_equal(flame_total(f), 3 + 5000);
	assert_int_equal(sum.cpu_samples, 3);
	assert_int_equal(sum.offcpu_intervals, 1);
	assert_int_equal(sum.offcpu_ns, 5000);
	assert_int_equal(sum.stacks, 3); /* a (both threads), b cpu, b off-cpu */
	assert_int_equal(sum.frames, 2 * 4 + 2 + 2);
	assert_int_equal(sum.unnamed, sum.frames); /* no symbolizer */
	assert_int_equal(sum.kernel_frames, 4);
	assert_int_equal(sum.leaves, 4);
	collect_folded(f, buf, sizeof(buf));
	/* root first, kernel frames at the leaf end */
	assert_non_null(strstr(buf, "[unknown];[unknown];[k] [unknown];[k] [unknown] 2\n"));
	flame_free(f);

	/* without kernel frames */
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(profile_build_ex(p, NULL, NULL, NULL, f, NULL, PROFILE_BUILD_NO_KERNEL), 0);
	collect_folded(f, buf, sizeof(buf));
	assert_null(strstr(buf, "[k]"));
	flame_free(f);

	/* reset forgets everything */
	profile_reset(p);
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(profile_build(p, NULL, NULL, NULL, f, &sum), 0);
	assert_int_equal(flame_total(f), 0);
	assert_int_equal(sum.stacks, 0);
	flame_free(f);
	profile_free(p);
}

static void test_thread_roots_and_cap(void **state)
{
	const uint64_t a[] = { 0x1000 };
	struct profile_opts o = { .thread_roots = true, .max_stacks = 2 };
	struct profile_summary sum;
	struct profile *p;
	struct flame *f;
	char buf[4096];

	(void)state;
	assert_int_equal(profile_new(&p, &o), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 7, 1, a, 1, 0), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 8, 1, a, 1, 0), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 9, 1, a, 1, 0), 0); /* past the cap */
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(profile_build(p, NULL, comm_fn, NULL, f, &sum), 0);
	assert_true(sum.dropped);
	assert_int_equal(sum.dropped_samples, 1);
	collect_folded(f, buf, sizeof(buf));
	assert_non_null(strstr(buf, "[thread] workload;[unknown] 1\n"));
	assert_non_null(strstr(buf, "[thread] 8;[unknown] 1\n"));
	flame_free(f);
	profile_free(p);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_tar_gz(void **state)
{
	char dir[] = "/tmp/clrtap-bundle-test-XXXXXX", path[600], blk[512];
	const char *names[] = { "a.txt", "b.txt" };
	unsigned sum = 0, want = 0;
	gzFile gz;
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file(dir, "a.txt", "hello\n");
	write_file(dir, "b.txt", "");
	snprintf(path, sizeof(path), "%s/x.tar.gz", dir);
	assert_int_equal(profile_tar_gz(path, dir, "pre", names, 2), 0);
	gz = gzopen(path, "rb");
	assert_non_null(gz);
	assert_int_equal(gzread(gz, blk, 512), 512);
	assert_string_equal(blk, "pre/a.txt");
	assert_memory_equal(blk + 257, "ustar\0" "00", 8);
	assert_memory_equal(blk + 124, "00000000006", 11); /* size, octal */
	for (i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : (uint8_t)blk[i];
	for (i = 148; i < 154; i++)
		want = want * 8 + (unsigned)(blk[i] - '0');
	assert_int_equal(sum, want);
	assert_int_equal(gzread(gz, blk, 512), 512);
	assert_memory_equal(blk, "hello\n", 6);
	assert_int_equal(gzread(gz, blk, 512), 512);
	assert_string_equal(blk, "pre/b.txt");
	assert_int_equal(gzread(gz, blk, 512), 512); /* end: two zero blocks */
	for (i = 0; i < 512; i++)
		assert_int_equal(blk[i], 0);
	assert_int_equal(gzread(gz, blk, 512), 512);
	assert_int_equal(gzread(gz, blk, 512), 0);
	gzclose(gz);
	/* a missing file fails and leaves no archive */
	names[1] = "missing";
	assert_int_equal(profile_tar_gz(path, dir, "pre", names, 2), -ENOENT);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_unwind_frame_pointers(void **state)
{
	/* A stack copy at sp = 0x1000 with an RBP chain: frame 0 at 0x1010 -> ra 0xa1,
	 * frame 1 at 0x1040 -> ra 0xa2, frame 2 at 0x1080 -> ra 0xa3, then a null bp. */
	uint64_t stack[32] = { 0 };
	struct perf_user_state us = { 0xa0, 0x1000, 0x1010, (const uint8_t *)stack, sizeof(stack) };
	struct profile_unwinder *u;
	uint64_t out[16];
	unsigned n;

	(void)state;
	stack[(0x1010 - 0x1000) / 8] = 0x1040;
	stack[(0x1018 - 0x1000) / 8] = 0xa1;
	stack[(0x1040 - 0x1000) / 8] = 0x1080;
	stack[(0x1048 - 0x1000) / 8] = 0xa2;
	stack[(0x1080 - 0x1000) / 8] = 0;
	stack[(0x1088 - 0x1000) / 8] = 0xa3;
	assert_int_equal(profile_unwinder_new(&u, NULL), 0);
	n = profile_unwind_user(u, &us, out, 16);
	assert_int_equal(n, 4);
	assert_int_equal(out[0], 0xa0);
	assert_int_equal(out[1], 0xa1);
	assert_int_equal(out[2], 0xa2);
	assert_int_equal(out[3], 0xa3);
	/* a chain that points backwards stops; one leaving the copy stops */
	stack[(0x1040 - 0x1000) / 8] = 0x1008;
	n = profile_unwind_user(u, &us, out, 16);
	assert_int_equal(n, 3);
	us.bp = 0x9000;
	assert_int_equal(profile_unwind_user(u, &us, out, 16), 1);
	/* cap respected */
	us.bp = 0x1010;
	stack[(0x1040 - 0x1000) / 8] = 0x1080;
	assert_int_equal(profile_unwind_user(u, &us, out, 2), 2);
	profile_unwinder_free(u);
}

/* The EventPipe engine's path: stacks named whole by nt_methods_name_stack
 * through a namer, thread roots on top, summary counting managed frames. */
static size_t namer(void *ctx, const uint64_t *ips, unsigned nr, const char **names,
		    uint32_t *idx, size_t cap)
{
	return nt_methods_name_stack_idx(ctx, ips, nr, names, idx, cap);
}

static void test_namer(void **state)
{
	struct profile_opts o = { .thread_roots = true };
	struct profile_summary sum;
	struct nt_methods *m;
	struct profile *p;
	struct flame *f;
	/* leaf first: HotA (sampled IP), Run (return address), then an unknown frame */
	const uint64_t a[] = { 0x1010, 0x2021, 0x9999 };
	const uint64_t b[] = { 0x3001, 0x2021 }; /* a leaf in PollGC: the time is Run's */
	char buf[4096];

	(void)state;
	assert_int_equal(nt_methods_new(&m, 0, 0), 0);
	assert_int_equal(nt_methods_add(m, 0x1000, 0x100, "N.C::HotA"), 0);
	assert_int_equal(nt_methods_add(m, 0x2000, 0x21, "N.C::Run"), 0);
	assert_int_equal(nt_methods_add(m, 0x3000, 0x10, "System.Threading.Thread::<PollGC>g__X|0"), 0);
	assert_int_equal(profile_new(&p, &o), 0);
	profile_set_namer(p, namer, m);
	assert_int_equal(add(p, PERF_STACK_CPU, 7, 1000000, a, 3, 0), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 7, 1000000, a, 3, 0), 0);
	assert_int_equal(add(p, PERF_STACK_CPU, 8, 1000000, b, 2, 0), 0);
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(profile_build(p, NULL, comm_fn, NULL, f, &sum), 0);
	collect_folded(f, buf, sizeof(buf));
	/* 0x2021 is a return address: looked up at 0x2020, inside Run [0x2000, 0x2021) */
	assert_non_null(strstr(buf, "[thread] workload;[unknown];N.C::Run;N.C::HotA 2\n"));
	assert_non_null(strstr(buf, "[thread] 8;N.C::Run 1\n"));
	assert_int_equal(sum.cpu_samples, 3);
	assert_int_equal(sum.leaves, 3);
	assert_int_equal(sum.unnamed, 2);          /* the unknown frame, twice */
	assert_int_equal(sum.managed_frames, 5);   /* Run, HotA twice; Run once */
	assert_int_equal(sum.kernel_frames, 0);
	flame_free(f);
	profile_free(p);
	nt_methods_free(m);
}

/* Every cause has a fix in its text; the notes name the engine and what it cannot see. */
static void test_engine_texts(void **state)
{
	struct profile_engine_choice c;
	struct profile_ep_stats es;
	char buf[2048];
	int i;

	(void)state;
	for (i = PROFILE_PERF_CAUSE_UNKNOWN; i <= PROFILE_PERF_CAUSE_LSM; i++)
		assert_non_null(strstr(profile_perf_cause_text((enum profile_perf_cause)i), "Fix: "));
	assert_non_null(strstr(profile_perf_cause_text(PROFILE_PERF_CAUSE_SECCOMP), "seccomp"));
	assert_non_null(strstr(profile_perf_cause_text(PROFILE_PERF_CAUSE_PARANOID),
			       "perf_event_paranoid"));
	memset(&c, 0, sizeof(c));
	c.asked = PROFILE_ENGINE_AUTO;
	c.used = PROFILE_ENGINE_EVENTPIPE;
	c.fell_back = true;
	c.perf_err = -EPERM;
	c.diag.cause = PROFILE_PERF_CAUSE_SECCOMP;
	memset(&es, 0, sizeof(es));
	es.sampling_ns = 1000000;
	es.oncpu_err = -EACCES;
	assert_int_equal(profile_engine_notes(&c, 99, PROFILE_EP_MANAGED, &es, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "samples: thread time, waiting included: "));
	assert_non_null(strstr(buf, "/proc: Permission denied)"));
	es.oncpu = TASKCPU_SCHEDSTAT;
	es.oncpu_interval_ms = 10;
	es.waiting = 812;
	es.left_out = 40;
	es.unknown = 3;
	assert_int_equal(profile_engine_notes(&c, 99, PROFILE_EP_MANAGED, &es, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "samples: on-CPU: "));
	assert_non_null(strstr(buf, "(/proc/PID/task/TID/schedstat, read every 10 ms)"));
	assert_non_null(strstr(buf, "812 samples of threads that were not running left out, 40 that caught"));
	assert_non_null(strstr(buf, "engine: EventPipe"));
	assert_non_null(strstr(buf, "why: --engine auto, and perf_event_open was denied (a seccomp"));
	assert_non_null(strstr(buf, "no native, runtime or kernel frames"));
	assert_non_null(strstr(buf, "(1 ms per thread), not -F"));
	c.used = PROFILE_ENGINE_PERF;
	c.fell_back = false;
	assert_int_equal(profile_engine_notes(&c, 99, 0, NULL, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "engine: perf_event (the kernel samples each thread at 99 Hz)"));
	/* both engines unavailable: one message with both causes */
	c.ep_err = -ENOENT;
	assert_int_equal(profile_engine_explain(&c, 42, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "with either engine"));
	assert_non_null(strstr(buf, "a seccomp filter"));
	assert_non_null(strstr(buf, "no diagnostics socket"));
	/* perf_event_open passed, the mappings did not: said as such, with the ptrace fix */
	c.maps_denied = true;
	c.diag.cause = PROFILE_PERF_CAUSE_PTRACE;
	c.ep_err = 0;
	assert_int_equal(profile_engine_explain(&c, 42, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "not allowed to profile pid 42 with perf_event: reading the "
				    "target's memory mappings was refused: "));
	assert_non_null(strstr(buf, "CAP_SYS_PTRACE"));
	assert_null(strstr(buf, "perf_event_open was denied"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacks),
		cmocka_unit_test(test_thread_roots_and_cap),
		cmocka_unit_test(test_tar_gz),
		cmocka_unit_test(test_unwind_frame_pointers),
		cmocka_unit_test(test_namer),
		cmocka_unit_test(test_engine_texts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
