/* SPDX-License-Identifier: MIT */
/*
 * waits.c - the runtime's own markers of a blocking wait in a sampled stack.
 *
 * The EventPipe sample profiler types a sample "managed" when its thread was
 * in cooperative mode at the suspension. A thread that enters or leaves a
 * blocking wait switches modes there, so the suspension catches it at that
 * point far more often than the CPU time it uses: under load these samples
 * outnumber the real work (issue 33: Monitor::Enter_Slowpath 21 %, the
 * socket thread's epoll 42 %, against 0.0 % in a perf_event profile). The
 * same holds for every switch out of managed code: a P/Invoke's stub (no
 * method event names it: "[unknown]") is where the thread was caught on its
 * way into a system call. A stack whose leaf is one of these is not managed
 * code running. Spinning (SpinWait, LowLevelSpinWaiter) is CPU and is not
 * listed.
 */
#include "common/compat.h"

#include "nettrace/nettrace.h"

/* Leaf frames (exact names, as the runtime's method events spell them). */
static const char *const wait_leaves[] = {
	"System.Threading.Monitor::Enter_Slowpath",
	"System.Threading.Monitor::ReliableEnter",
	"System.Threading.Monitor::Wait",
	"System.Threading.Monitor::ObjWait",
	"System.Threading.LowLevelLifoSemaphore::Wait",
	"System.Threading.LowLevelLifoSemaphore::WaitForSignal",
	"System.Threading.LowLevelLifoSemaphore::WaitCore",
	"System.Threading.LowLevelLifoSemaphore::WaitNative",
	"System.Threading.LowLevelMonitor::Wait",
	"System.Threading.LowLevelMonitor::WaitCore",
	"System.Threading.WaitHandle::WaitOneNoCheck",
	"System.Threading.WaitHandle::WaitOneCore",
	"System.Threading.WaitHandle::WaitMultipleIgnoringSyncContext",
	"System.Threading.WaitHandle::WaitAnyMultiple",
	"System.Threading.Thread::Sleep",
	"System.Threading.Thread::SleepInternal",
	"System.Threading.Thread::Join",
	"System.Threading.ManualResetEventSlim::Wait",
	"System.Threading.SemaphoreSlim::WaitUntilCountOrTimeout",
	/* the pool's worker loop with its semaphore wait inlined */
	"System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart",
	"Interop+Sys::WaitForSocketEvents",
	"Interop+Sys::Poll",
};

static bool in(const char *const *list, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

bool nt_stack_waits(const char *const *names, size_t n)
{
	if (!n || !names[n - 1])
		return false;
	/* an unnamed leaf in a "managed" sample: the stub of a P/Invoke or
	 * QCall, a transition out of managed code (a syscall, a wait in
	 * epoll_wait) where the suspension caught the thread */
	return !strcmp(names[n - 1], "[unknown]") ||
	       in(wait_leaves, ARRAY_SIZE(wait_leaves), names[n - 1]);
}
