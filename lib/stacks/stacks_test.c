/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/stacks: merging, ordering, the sampler on a real
 * session (tests/data/nettrace/ipc-rundown.nettrace.gz, see the README
 * there), thread names from /proc.
 */
#include "common/compat.h"

#include <setjmp.h>
#include <zlib.h>
#include <cmocka.h>

#include "stacks/stacks.h"

#define RUNDOWN CT_SRCDIR "/tests/data/nettrace/ipc-rundown.nettrace.gz"

static const struct stacks_node *child(const struct stacks_node *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++)
		if (!strcmp(n->children[i]->name, name))
			return n->children[i];
	return NULL;
}

static void test_merge(void **state)
{
	static const char *const a[] = { "Start", "Run", "Blocker::WaitHere", "Wait" };
	static const char *const b[] = { "Start", "Run", "Other::WaitElsewhere", "Wait" };
	static const char *const c[] = { "Main", "Wait" };
	static const char *const d[] = { "Start", "Run" };
	struct stacks_tree *t;
	const struct stacks_node *root, *run, *wh, *we;
	uint64_t tid;

	(void)state;
	assert_int_equal(stacks_tree_new(&t), 0);
	assert_int_equal(stacks_tree_add(t, 1, a, 0), -EINVAL);
	for (tid = 15; tid >= 11; tid--)
		assert_int_equal(stacks_tree_add(t, tid, a, 4), 0);
	assert_int_equal(stacks_tree_add(t, 16, b, 4), 0);
	assert_int_equal(stacks_tree_add(t, 1, c, 2), 0);
	assert_int_equal(stacks_tree_add(t, 20, d, 2), 0); /* ends inside another path */
	root = stacks_tree_root(t);
	assert_int_equal(root->count, 8);
	assert_int_equal(root->nchildren, 2);
	/* by count, highest first */
	assert_string_equal(root->children[0]->name, "Start");
	assert_int_equal(root->children[0]->count, 7);
	assert_string_equal(root->children[1]->name, "Main");
	assert_int_equal(root->children[1]->count, 1);
	run = child(root->children[0], "Run");
	assert_non_null(run);
	assert_int_equal(run->count, 7);
	assert_int_equal(run->ntids, 1);
	assert_int_equal(run->tids[0], 20);
	assert_string_equal(run->children[0]->name, "Blocker::WaitHere");
	wh = child(run, "Blocker::WaitHere");
	we = child(run, "Other::WaitElsewhere");
	assert_int_equal(wh->count, 5);
	assert_int_equal(we->count, 1);
	assert_int_equal(wh->nchildren, 1);
	assert_int_equal(wh->ntids, 0);
	assert_int_equal(wh->children[0]->ntids, 5);
	/* thread ids ascending */
	for (tid = 0; tid < 5; tid++)
		assert_int_equal(wh->children[0]->tids[tid], 11 + tid);
	assert_int_equal(we->children[0]->tids[0], 16);
	/* equal counts: by name */
	{
		static const char *const e[] = { "Alpha" };
		static const char *const f[] = { "Beta" };

		assert_int_equal(stacks_tree_add(t, 30, f, 1), 0);
		assert_int_equal(stacks_tree_add(t, 31, e, 1), 0);
		root = stacks_tree_root(t);
		assert_string_equal(root->children[1]->name, "Alpha");
		assert_string_equal(root->children[2]->name, "Beta");
		assert_string_equal(root->children[3]->name, "Main");
	}
	stacks_tree_free(t);
}

static ssize_t gz_read(void *ctx, void *buf, size_t len)
{
	int n = gzread((gzFile)ctx, buf, (unsigned)CT_MIN(len, (size_t)INT_MAX));

	return n < 0 ? -EIO : n;
}

static int on_event(void *ctx, const struct nt_event *ev)
{
	return stacks_sampler_event(ctx, ev);
}

static void test_sampler_capture(void **state)
{
	const struct nt_handlers h = { .event = on_event };
	struct stacks_sampler *s;
	struct stacks_tree *t;
	struct nt_reader *r;
	const struct stacks_thread *th;
	const struct stacks_node *root, *sc, *wts, *n;
	gzFile gz = gzopen(RUNDOWN, "rb");

	(void)state;
	assert_non_null(gz);
	assert_int_equal(stacks_sampler_new(&s), 0);
	assert_int_equal(nt_reader_new(&r, gz_read, gz, NULL), 0);
	assert_int_equal(nt_reader_run(r, &h, s), 0);
	nt_reader_free(r);
	gzclose(gz);

	/* first sample of each of the 7 sampled threads, in order of appearance */
	assert_int_equal(stacks_sampler_nthreads(s), 7);
	th = stacks_sampler_thread(s, 0);
	assert_int_equal(th->tid, 26036);
	assert_int_equal(th->type, NT_SAMPLE_MANAGED);
	assert_int_equal(th->nframes, 3);
	assert_string_equal(stacks_sampler_frame(s, th, 0), "System.Threading.Thread::PollGC");
	assert_string_equal(stacks_sampler_frame(s, th, 1), "ClrtapSample.Burner::SpinHot");
	assert_string_equal(stacks_sampler_frame(s, th, 2), "ClrtapSample.Program::Main");
	assert_null(stacks_sampler_frame(s, th, 3));
	th = stacks_sampler_thread(s, 2);
	assert_int_equal(th->tid, 26046);
	assert_int_equal(th->type, NT_SAMPLE_EXTERNAL);
	assert_null(stacks_sampler_thread(s, 7));

	assert_int_equal(stacks_tree_new(&t), 0);
	assert_int_equal(stacks_sampler_build(s, t), 7);
	root = stacks_tree_root(t);
	assert_int_equal(root->count, 7);
	assert_int_equal(root->nchildren, 3);
	sc = root->children[0];
	assert_string_equal(sc->name, "System.Threading.Thread::StartCallback");
	assert_int_equal(sc->count, 5);
	/* three idle thread-pool workers share their whole path */
	wts = child(sc, "System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart");
	assert_non_null(wts);
	assert_int_equal(wts->count, 3);
	n = child(wts, "System.Threading.LowLevelLifoSemaphore::WaitForSignal");
	assert_non_null(n);
	n = child(n, "System.Threading.LowLevelLifoSemaphore::WaitNative");
	assert_non_null(n);
	assert_int_equal(n->count, 3);
	assert_int_equal(n->ntids, 3);
	assert_int_equal(n->tids[0], 26046);
	assert_int_equal(n->tids[1], 26047);
	assert_int_equal(n->tids[2], 26049);
	n = child(sc, "System.Threading.PortableThreadPool+GateThread::GateThreadStart");
	assert_non_null(n);
	assert_int_equal(n->count, 1);
	assert_int_equal(sc->children[0], wts);
	stacks_tree_free(t);
	stacks_sampler_free(s);
}

/* Frames no method covers: one [unresolved frames] entry per run. */
static void test_sampler_unresolved(void **state)
{
	static const char meta_prov[] = "Microsoft-DotNETCore-SampleProfiler";
	struct nt_metadata m = { 0 };
	struct nt_event ev = { 0 };
	uint64_t ips[4] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	uint8_t payload[4] = { 1, 0, 0, 0 };
	struct stacks_sampler *s;
	struct stacks_tree *t;
	const struct stacks_node *root;

	(void)state;
	m.provider_kind = NT_PROV_SAMPLEPROFILER;
	m.provider = meta_prov;
	m.event_name = "";
	ev.meta = &m;
	ev.thread_id = 42;
	ev.payload = payload;
	ev.payload_len = sizeof(payload);
	ev.stack = ips;
	ev.nframes = 4;
	ev.pointer_size = 8;
	assert_int_equal(stacks_sampler_new(&s), 0);
	assert_int_equal(stacks_sampler_event(s, &ev), 0);
	ev.nframes = 1; /* a later sample of the same thread is ignored */
	assert_int_equal(stacks_sampler_event(s, &ev), 0);
	ev.thread_id = 43;
	ev.nframes = 0; /* no managed frame at all */
	assert_int_equal(stacks_sampler_event(s, &ev), 0);
	assert_int_equal(stacks_sampler_nthreads(s), 2);
	assert_int_equal(stacks_sampler_thread(s, 0)->nframes, 4);
	assert_int_equal(stacks_tree_new(&t), 0);
	/* nothing resolves yet: no managed frame to show */
	assert_int_equal(stacks_sampler_build(s, t), 0);
	assert_int_equal(stacks_tree_root(t)->count, 0);
	stacks_tree_free(t);
	/* [0x2000, 0x3000) is a method. Leaf 0x1000 is looked up as is, the
	 * return addresses at ip - 1: 0x2000 -> 0x1fff (no), 0x3000 -> 0x2fff
	 * (M::A), 0x4000 -> 0x3fff (no). Root first: ?, M::A, ?, ? -> 3 frames. */
	assert_int_equal(stacks_sampler_add_method(s, 0x2000, 0x1000, "M::A"), 0);
	assert_int_equal(stacks_tree_new(&t), 0);
	assert_int_equal(stacks_sampler_build(s, t), 1);
	root = stacks_tree_root(t);
	assert_int_equal(root->count, 1);
	assert_string_equal(root->children[0]->name, STACKS_UNRESOLVED);
	assert_string_equal(root->children[0]->children[0]->name, "M::A");
	assert_string_equal(root->children[0]->children[0]->children[0]->name, STACKS_UNRESOLVED);
	assert_int_equal(root->children[0]->children[0]->children[0]->nchildren, 0);
	assert_int_equal(root->children[0]->children[0]->children[0]->tids[0], 42);
	stacks_tree_free(t);
	stacks_sampler_free(s);
}

static void test_thread_names(void **state)
{
	struct stacks_names *n;

	(void)state;
	assert_int_equal(stacks_names_load(&n, getpid()), 0);
	assert_non_null(stacks_names_get(n, (uint64_t)getpid()));
	assert_string_equal(stacks_names_get(n, (uint64_t)getpid()), "stacks_test");
	assert_null(stacks_names_get(n, 0));
	stacks_names_free(n);
	assert_int_equal(stacks_names_load(&n, 0x7ffffff0), -ESRCH);
	assert_null(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_sampler_capture),
		cmocka_unit_test(test_sampler_unresolved),
		cmocka_unit_test(test_thread_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
