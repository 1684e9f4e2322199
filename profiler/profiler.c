/* SPDX-License-Identifier: MIT */
/*
 * libclrtap-profiler - a CLR profiler in plain C11, attached at run time by
 * `clrtap agent`. It is a thin event source: it counts and forwards raw
 * facts through its own EventPipe provider and does no analysis in the
 * target. docs/internals/profiler.md describes the threading rules below;
 * docs/formats/profiler-events.md the provider and its events.
 *
 * Lifetime. The tool attaches with AttachProfiler and then keeps an
 * EventPipe session open that enables this provider with the CONTROL
 * keyword. The provider's enable callback (ICorProfilerInfo14) tells the
 * profiler when that session ends - stopped by the tool, or dropped by the
 * runtime because its reader went away (clrtap killed) - and the profiler's
 * own thread then turns its events off and calls RequestProfilerDetach. If
 * no CONTROL session shows up within the configured wait, it detaches too.
 *
 * Rules kept everywhere: every callback is bracketed by a shutdown guard;
 * no lock is ever taken (state is atomics); nothing allocates in a callback;
 * the runtime is called from callbacks only where the API allows it, and
 * detach/initialization of the worker happen on the profiler's own thread.
 * The image is linked -z nodelete: it stays mapped after detach, as the
 * runtime requires on Linux, and a later attach of the same file reuses it
 * (so all state is reset in InitializeForAttach).
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corprof_c.h"
#include "callbacks.h"
#include "agent/agent_proto.h"
#include "internal.h"
#include "agent/natmem_proto.h"

#ifndef CLRTAP_PROFILER_VERSION
#define CLRTAP_PROFILER_VERSION "unknown"
#endif

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- GUIDs */

static const struct guid IID_IUnknown = { 0x00000000, 0x0000, 0x0000,
				     { 0xC0, 0, 0, 0, 0, 0, 0, 0x46 } };
static const struct guid IID_IClassFactory = { 0x00000001, 0x0000, 0x0000,
					  { 0xC0, 0, 0, 0, 0, 0, 0, 0x46 } };
/* ICorProfilerCallback .. ICorProfilerCallback11: one vtable serves all. */
static const struct guid IID_Callbacks[] = {
	{ 0x176FBED1, 0xA55C, 0x4796, { 0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7 } },
	{ 0x8A8CC829, 0xCCF2, 0x49FE, { 0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A } },
	{ 0x4FD2ED52, 0x7731, 0x4B8D, { 0x94, 0x69, 0x03, 0xD2, 0xCC, 0x30, 0x86, 0xC5 } },
	{ 0x7B63B2E3, 0x107D, 0x4D48, { 0xB2, 0xF6, 0xF6, 0x1E, 0x22, 0x94, 0x70, 0xD2 } },
	{ 0x8DFBA405, 0x8C9F, 0x45F8, { 0xBF, 0xFA, 0x83, 0xB1, 0x4C, 0xEF, 0x78, 0xB5 } },
	{ 0xFC13DF4B, 0x4448, 0x4F4F, { 0x95, 0x0C, 0xBA, 0x8D, 0x19, 0xD0, 0x0C, 0x36 } },
	{ 0xF76A2DBA, 0x1D52, 0x4539, { 0x86, 0x6C, 0x2A, 0xA5, 0x18, 0xF9, 0xEF, 0xC3 } },
	{ 0x5BED9B15, 0xC079, 0x4D47, { 0xBF, 0xE2, 0x21, 0x5A, 0x14, 0x0C, 0x07, 0xE0 } },
	{ 0x27583EC3, 0xC8F5, 0x482F, { 0x80, 0x52, 0x19, 0x4B, 0x8C, 0xE4, 0x70, 0x5A } },
	{ 0xCEC5B60E, 0xC69C, 0x495F, { 0x87, 0xF6, 0x84, 0xD2, 0x8E, 0xE1, 0x6F, 0xFB } },
	{ 0x42350846, 0xAAED, 0x47F7, { 0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE } },
};
static const struct guid IID_ICorProfilerInfo14 = {
	0xF460E352, 0xD76D, 0x4FE9, { 0x83, 0x5F, 0xF6, 0xAF, 0x9D, 0x6E, 0x86, 0x2D }
};
/* Our class ids: main profiler and notification-only profiler. */
static const struct guid CLSID_Main = { PRF_CLSID_MAIN_D1, PRF_CLSID_D2, PRF_CLSID_D3,
				   PRF_CLSID_D4_MAIN };
static const struct guid CLSID_Notify = { PRF_CLSID_NOTIFY_D1, PRF_CLSID_D2, PRF_CLSID_D3,
				     PRF_CLSID_D4_NOTIFY };

static int guid_eq(const struct guid *a, const struct guid *b)
{
	return a && b && !memcmp(a, b, sizeof(*a));
}

/* ---------------------------------------------------------------- state */

enum {
	ST_IDLE = 0,
	ST_ACTIVE = PRF_STATE_ACTIVE,
	ST_DETACHING = PRF_STATE_DETACHING,
	ST_DETACHED = 3,
	ST_SHUTDOWN = 4,
	ST_DORMANT = PRF_STATE_DORMANT, /* ReJIT enabled: reverted, cannot detach */
};

static atomic_int g_state;          /* ST_* */
static atomic_int g_inflight;       /* callbacks running now */
static atomic_int g_mode;           /* PRF_MODE_* chosen by the class id */
static atomic_uint g_generation;    /* attaches of this image */
void *g_info;                       /* ICorProfilerInfo14, AddRef'd */
static uint32_t g_features;         /* PRF_FEAT_* active */
static uint32_t g_heartbeat_ms = 250;
static uint32_t g_wait_ms = 10000;
static uint16_t g_rt_major, g_rt_minor, g_rt_build;

/* The provider and its events outlive a detach (there is no API to delete
 * a provider), so a later attach of this image reuses them. */
static ID_T g_provider;
static ID_T g_ev[PRF_EV_MAX + 1];

/* What the provider's enable callback last said (all sessions together). */
static atomic_uint_fast64_t g_kw;

static atomic_uint_fast64_t g_written, g_write_errors, g_modules, g_jit, g_exceptions,
	g_threads;

int prf_active(void)
{
	return atomic_load(&g_state) == ST_ACTIVE;
}

/* Shutdown guard: callbacks do nothing once the runtime shuts down or the
 * profiler detaches, and the worker can tell whether one is running. */
static int guard_enter(void)
{
	atomic_fetch_add(&g_inflight, 1);
	if (atomic_load(&g_state) != ST_ACTIVE) {
		atomic_fetch_sub(&g_inflight, 1);
		return 0;
	}
	return 1;
}

static void guard_leave(void)
{
	atomic_fetch_sub(&g_inflight, 1);
}

/* -------------------------------------------------------------- events */

void prf_ev_write(int id, struct prf_event_data *d, uint32_t n)
{
	HRESULT hr;

	if (!g_info || !g_ev[id])
		return;
	hr = INFO_FN(g_info, INFO_EVENTPIPE_WRITE_EVENT, info_ep_write_event_fn)(
		g_info, g_ev[id], n, d, NULL, NULL);
	if (hr == S_OK)
		atomic_fetch_add(&g_written, 1);
	else
		atomic_fetch_add(&g_write_errors, 1);
}

#define DATA(x) { (uint64_t)(uintptr_t)&(x), (uint32_t)sizeof(x), 0 }

static const WCHAR g_version16[] = u"" CLRTAP_PROFILER_VERSION;

static void ev_hello(void)
{
	uint32_t proto = PRF_PROTOCOL, mode = (uint32_t)atomic_load(&g_mode), feat = g_features;
	uint32_t gen = atomic_load(&g_generation), pid = (uint32_t)getpid();
	struct prf_event_data d[] = {
		DATA(proto), DATA(mode), DATA(feat), DATA(g_rt_major), DATA(g_rt_minor),
		DATA(g_rt_build), DATA(gen), DATA(pid),
		{ (uint64_t)(uintptr_t)g_version16, (uint32_t)sizeof(g_version16), 0 },
	};

	prf_ev_write(PRF_EV_HELLO, d, sizeof(d) / sizeof(d[0]));
}

static void ev_status(uint64_t seq)
{
	uint32_t state = (uint32_t)atomic_load(&g_state), mode = (uint32_t)atomic_load(&g_mode);
	uint32_t feat = g_features, gen = atomic_load(&g_generation);
	uint64_t written = atomic_load(&g_written), errs = atomic_load(&g_write_errors);
	uint64_t mods = atomic_load(&g_modules), jit = atomic_load(&g_jit);
	uint64_t exc = atomic_load(&g_exceptions), thr = atomic_load(&g_threads);
	uint64_t rje = rejit_errors();
	struct prf_event_data d[] = {
		DATA(state), DATA(mode), DATA(feat), DATA(gen), DATA(seq), DATA(written),
		DATA(errs), DATA(mods), DATA(jit), DATA(exc), DATA(thr),
		{ (uint64_t)(uintptr_t)g_version16, (uint32_t)sizeof(g_version16), 0 },
		DATA(rje),
	};

	prf_ev_write(PRF_EV_STATUS, d, sizeof(d) / sizeof(d[0]));
}

static void ev_flushed(uint64_t nonce)
{
	uint32_t gen = atomic_load(&g_generation);
	struct prf_event_data d[] = { DATA(nonce), DATA(gen) };

	prf_ev_write(PRF_EV_FLUSHED, d, 2);
}

static void ev_detaching(uint32_t reason)
{
	uint32_t gen = atomic_load(&g_generation);
	struct prf_event_data d[] = { DATA(reason), DATA(gen) };

	prf_ev_write(PRF_EV_DETACHING, d, 2);
}

static void ev_natmem(int32_t err)
{
	uint64_t table = natmem_table(), bytes = NM_MAP_BYTES, iv = 0;
	uint32_t slots = 0, mods = 0;
	struct prf_event_data d[6];

	if (table) {
		const struct nm_header *h = (const struct nm_header *)(uintptr_t)table;

		iv = h->interval;
		slots = h->got_used;
		mods = h->modules;
	}
	d[0] = (struct prf_event_data)DATA(table);
	d[1] = (struct prf_event_data)DATA(bytes);
	d[2] = (struct prf_event_data)DATA(iv);
	d[3] = (struct prf_event_data)DATA(slots);
	d[4] = (struct prf_event_data)DATA(mods);
	d[5] = (struct prf_event_data)DATA(err);
	prf_ev_write(PRF_EV_NATMEM, d, 6);
}

/* Parameter lists of the events (docs/formats/profiler-events.md). */
static struct prf_param_desc p_hello[] = {
	{ EP_T_UINT32, 0, u"Protocol" },     { EP_T_UINT32, 0, u"Mode" },
	{ EP_T_UINT32, 0, u"Features" },     { EP_T_UINT16, 0, u"RuntimeMajor" },
	{ EP_T_UINT16, 0, u"RuntimeMinor" }, { EP_T_UINT16, 0, u"RuntimeBuild" },
	{ EP_T_UINT32, 0, u"Generation" },   { EP_T_UINT32, 0, u"Pid" },
	{ EP_T_STRING, 0, u"Version" },
};
static struct prf_param_desc p_status[] = {
	{ EP_T_UINT32, 0, u"State" },         { EP_T_UINT32, 0, u"Mode" },
	{ EP_T_UINT32, 0, u"Features" },      { EP_T_UINT32, 0, u"Generation" },
	{ EP_T_UINT64, 0, u"Seq" },           { EP_T_UINT64, 0, u"EventsWritten" },
	{ EP_T_UINT64, 0, u"WriteErrors" },   { EP_T_UINT64, 0, u"Modules" },
	{ EP_T_UINT64, 0, u"JitCompiled" },   { EP_T_UINT64, 0, u"Exceptions" },
	{ EP_T_UINT64, 0, u"ThreadsCreated" }, { EP_T_STRING, 0, u"Version" },
	{ EP_T_UINT64, 0, u"RejitErrors" },
};
static struct prf_param_desc p_module[] = {
	{ EP_T_UINT64, 0, u"ModuleId" },
	{ EP_T_INT32, 0, u"HResult" },
	{ EP_T_STRING, 0, u"Path" },
};
static struct prf_param_desc p_installed[] = {
	{ EP_T_UINT32, 0, u"Spec" },
	{ EP_T_UINT32, 0, u"Methods" },
	{ EP_T_INT32, 0, u"HResult" },
	{ EP_T_STRING, 0, u"Text" },
};
static struct prf_param_desc p_count[] = {
	{ EP_T_UINT32, 0, u"Probe" },      { EP_T_UINT32, 0, u"Spec" },
	{ EP_T_UINT32, 0, u"MethodToken" }, { EP_T_UINT64, 0, u"ModuleId" },
	{ EP_T_UINT64, 0, u"Count" },
};
static struct prf_param_desc p_call[] = {
	{ EP_T_UINT32, 0, u"Probe" },   { EP_T_UINT32, 0, u"Kinds" },
	{ EP_T_UINT32, 0, u"RetKind" }, { EP_T_UINT64, 0, u"LatencyNs" },
	{ EP_T_UINT64, 0, u"A0" },      { EP_T_UINT64, 0, u"A1" },
	{ EP_T_UINT64, 0, u"A2" },      { EP_T_UINT64, 0, u"A3" },
	{ EP_T_UINT64, 0, u"A4" },      { EP_T_UINT64, 0, u"A5" },
	{ EP_T_UINT64, 0, u"A6" },      { EP_T_UINT64, 0, u"A7" },
	{ EP_T_UINT64, 0, u"Ret" },     { EP_T_STRING, 0, u"Strings" },
	{ EP_T_UINT64, 0, u"This" },
};
static struct prf_param_desc p_flushed[] = {
	{ EP_T_UINT64, 0, u"Nonce" },
	{ EP_T_UINT32, 0, u"Generation" },
};
static struct prf_param_desc p_detaching[] = {
	{ EP_T_UINT32, 0, u"Reason" },
	{ EP_T_UINT32, 0, u"Generation" },
};

static struct prf_param_desc p_natmem[] = {
	{ EP_T_UINT64, 0, u"Table" },   { EP_T_UINT64, 0, u"Bytes" },
	{ EP_T_UINT64, 0, u"Interval" }, { EP_T_UINT32, 0, u"Slots" },
	{ EP_T_UINT32, 0, u"Modules" },  { EP_T_INT32, 0, u"Error" },
};

/* A new configuration for a dormant profiler, from a session's filter data. */
static char g_rearm[PRF_CONFIG_MAX];
static size_t g_rearm_len;
static atomic_int g_rearm_state; /* 0 empty, 1 being written, 2 ready */

/* Filter data is "key\0value\0key\0value\0": back to "key=value;...". Only a
 * session that says clrtap=rearm counts. */
static void take_rearm(const struct prf_filter_data *f)
{
	const char *p = (const char *)(uintptr_t)f->ptr;
	size_t n = f->size, i = 0, o = 0;
	int expected = 0, marked = 0, key = 1;

	if (!p || n == 0 || n > PRF_CONFIG_MAX)
		return;
	if (!atomic_compare_exchange_strong(&g_rearm_state, &expected, 1))
		return;
	for (i = 0; i < n && o + 1 < sizeof(g_rearm); i++) {
		char c = p[i];

		if (c == 0) {
			c = key ? '=' : ';';
			key = !key;
		}
		g_rearm[o++] = c;
	}
	g_rearm_len = o;
	marked = memmem(g_rearm, o, "clrtap=rearm;", 13) != NULL;
	atomic_store(&g_rearm_state, marked ? 2 : 0);
}

/* A flush request: the nonce of a session whose filter data says
 * clrtap=flush;nonce=N (0: none pending). */
static atomic_uint_fast64_t g_flush_nonce;

static void take_flush(const struct prf_filter_data *f)
{
	const char *p = (const char *)(uintptr_t)f->ptr, *end;
	const char *key = NULL;
	uint64_t nonce = 0;
	int flush = 0;

	if (!p || f->size == 0 || f->size > PRF_CONFIG_MAX)
		return;
	end = p + f->size;
	/* "key\0value\0key\0value\0" */
	while (p < end) {
		const char *z = memchr(p, 0, (size_t)(end - p));

		if (!z)
			break;
		if (!key) {
			key = p;
		} else {
			if (!strcmp(key, "clrtap") && !strcmp(p, "flush"))
				flush = 1;
			else if (!strcmp(key, "nonce"))
				for (const char *q = p; *q >= '0' && *q <= '9' && q - p < 20; q++)
					nonce = nonce * 10 + (uint64_t)(*q - '0');
			key = NULL;
		}
		p = z + 1;
	}
	if (flush && nonce)
		atomic_store(&g_flush_nonce, nonce);
}

static void provider_cb(const uint8_t *source_id, uint32_t is_enabled, uint8_t level,
			uint64_t any, uint64_t all, struct prf_filter_data *filter, void *data)
{
	/* Runs on a runtime thread while a session starts or ends: only record. */
	if (is_enabled && filter && atomic_load(&g_state) == ST_DORMANT)
		take_rearm(filter);
	if (is_enabled && filter)
		take_flush(filter);
	atomic_store(&g_kw, is_enabled ? any : 0);
}

static HRESULT provider_create(void)
{
	static const struct {
		int id;
		const WCHAR *name;
		uint64_t kw;
		struct prf_param_desc *p;
		uint32_t n;
		BOOL need_stack; /* EventPipe walks the writing thread's managed stack */
	} defs[] = {
		{ PRF_EV_HELLO, u"Hello", PRF_KW_CONTROL | PRF_KW_STATUS, p_hello, 9, 0 },
		{ PRF_EV_STATUS, u"Status", PRF_KW_CONTROL | PRF_KW_STATUS, p_status, 13, 0 },
		{ PRF_EV_MODULE, u"ModuleLoad", PRF_KW_MODULES, p_module, 3, 0 },
		{ PRF_EV_DETACHING, u"Detaching", PRF_KW_CONTROL | PRF_KW_STATUS, p_detaching, 2, 0 },
		{ PRF_EV_PROBE_INSTALLED, u"ProbeInstalled", PRF_KW_CONTROL | PRF_KW_PROBES,
		  p_installed, 4, 0 },
		{ PRF_EV_PROBE_COUNT, u"ProbeCount", PRF_KW_CONTROL | PRF_KW_PROBES, p_count, 5, 0 },
		{ PRF_EV_CALL, u"Call", PRF_KW_CALLS, p_call, 15, 0 },
		{ PRF_EV_CALL_STACK, u"CallStack", PRF_KW_CALLS, p_call, 15, 1 },
		{ PRF_EV_FLUSHED, u"Flushed", PRF_KW_CONTROL | PRF_KW_STATUS, p_flushed, 2, 0 },
		{ PRF_EV_NATMEM, u"NativeMemory", PRF_KW_CONTROL | PRF_KW_NATMEM, p_natmem, 6, 0 },
	};
	HRESULT hr;
	size_t i;

	if (!g_provider) {
		hr = INFO_FN(g_info, INFO_EVENTPIPE_CREATE_PROVIDER2, info_ep_create_provider2_fn)(
			g_info, PRF_PROVIDER_NAME16, provider_cb, &g_provider);
		if (hr != S_OK)
			return hr;
	}
	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		if (g_ev[defs[i].id])
			continue;
		hr = INFO_FN(g_info, INFO_EVENTPIPE_DEFINE_EVENT, info_ep_define_event_fn)(
			g_info, g_provider, defs[i].name, (uint32_t)defs[i].id, defs[i].kw, 1,
			4 /* informational */, 0, defs[i].need_stack, defs[i].n, defs[i].p,
			&g_ev[defs[i].id]);
		if (hr != S_OK)
			return hr;
	}
	return S_OK;
}

/* -------------------------------------------------------------- worker */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static void config_parse(const char *s, size_t n);
static void reset_counters(void);

/* A dormant profiler takes a new configuration (new probes) from a CONTROL
 * session that carries it in its filter data. ReJIT stays enabled. */
static void rearm(void)
{
	uint32_t low = COR_PRF_ENABLE_REJIT;

	rejit_reset();
	atomic_store(&g_flush_nonce, 0);
	g_features = PRF_FEAT_DEFAULT;
	config_parse(g_rearm, g_rearm_len);
	atomic_store(&g_rearm_state, 0);
	reset_counters();
	atomic_fetch_add(&g_generation, 1);
	if (g_features & PRF_FEAT_MODULES)
		low |= COR_PRF_MONITOR_MODULE_LOADS;
	if (g_features & PRF_FEAT_JIT)
		low |= COR_PRF_MONITOR_JIT_COMPILATION;
	if (g_features & PRF_FEAT_EXCEPTIONS)
		low |= COR_PRF_MONITOR_EXCEPTIONS;
	if (g_features & PRF_FEAT_THREADS)
		low |= COR_PRF_MONITOR_THREADS;
	g_features |= PRF_FEAT_REJIT;
	if (rejit_args())
		g_features |= PRF_FEAT_ARGS;
	INFO_FN(g_info, INFO_SET_EVENT_MASK2, info_set_event_mask2_fn)(g_info, low, 0);
}

static void *worker(void *arg)
{
	uint64_t start = now_ms(), last_status = 0, seq = 0;
	uint64_t last_scan = 0;
	int seen = 0, hello = 0, probes = 0;
	uint32_t reason = PRF_DETACH_NO_SESSION;
	HRESULT hr;

	INFO_FN(g_info, INFO_INITIALIZE_CURRENT_THREAD, info_initialize_current_thread_fn)(g_info);
	for (;;) {
		int st = atomic_load(&g_state);
		uint64_t kw = atomic_load(&g_kw), t = now_ms();

		if (st != ST_ACTIVE && st != ST_DORMANT)
			return NULL; /* shut down: the runtime is going away; touch nothing */
		if (st == ST_DORMANT && atomic_load(&g_rearm_state) == 2 && (kw & PRF_KW_CONTROL)) {
			rearm();
			seen = hello = probes = 0;
			start = t;
			atomic_store(&g_state, ST_ACTIVE);
			continue;
		}
		if (st == ST_ACTIVE) {
			if (kw & PRF_KW_CONTROL) {
				seen = 1;
				if (!hello) {
					ev_hello();
					hello = 1;
					if (g_features & PRF_FEAT_REJIT)
						probes = rejit_install();
					if (g_features & PRF_FEAT_NATMEM) {
						ev_natmem(natmem_install());
						last_scan = t;
					}
				}
				/* libraries loaded since: their slots too */
				if ((g_features & PRF_FEAT_NATMEM) && t - last_scan >= 500) {
					natmem_rescan();
					last_scan = t;
				}
			} else if (seen || t - start > g_wait_ms) {
				reason = seen ? PRF_DETACH_SESSION_ENDED : PRF_DETACH_NO_SESSION;
				natmem_uninstall(); /* every GOT slot back before anything else */
				if (!(g_features & PRF_FEAT_REJIT))
					break;
				/* ReJIT was enabled: the runtime will never let this
				 * profiler detach. Put the original IL back and go quiet. */
				rejit_revert();
				INFO_FN(g_info, INFO_SET_EVENT_MASK2, info_set_event_mask2_fn)(g_info, 0,
											       0);
				atomic_store(&g_state, ST_DORMANT);
				continue;
			}
			if (probes && (kw & PRF_KW_PROBES) && t - last_status >= g_heartbeat_ms)
				rejit_report();
			/* Asked before a stop: the counts now, then the answer. This
			 * thread writes both, so they reach the stream in this order. */
			if (hello) {
				uint64_t nonce = atomic_exchange(&g_flush_nonce, 0);

				if (nonce) {
					if (probes)
						rejit_report();
					ev_status(seq++);
					ev_flushed(nonce);
				}
			}
		}
		if ((kw & (PRF_KW_CONTROL | PRF_KW_STATUS)) && t - last_status >= g_heartbeat_ms) {
			ev_status(seq++);
			last_status = t;
		}
		sleep_ms(PRF_TICK_MS);
	}
	atomic_store(&g_state, ST_DETACHING);
	/* No callback can start work now; wait for running ones (bounded). */
	for (int i = 0; i < 200 && atomic_load(&g_inflight) > 0; i++)
		sleep_ms(5);
	INFO_FN(g_info, INFO_SET_EVENT_MASK2, info_set_event_mask2_fn)(g_info, 0, 0);
	ev_detaching(reason);
	hr = INFO_FN(g_info, INFO_REQUEST_PROFILER_DETACH, info_request_detach_fn)(g_info, 200);
	if (hr != S_OK)
		atomic_store(&g_state, ST_DORMANT); /* stays loaded; says so in Status */
	return NULL;
}

static int worker_start(void)
{
	pthread_t th;
	pthread_attr_t attr;
	sigset_t all, old;
	int e;

	/* The worker never takes the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	e = pthread_create(&th, &attr, worker, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

/* ------------------------------------------------------------- config */

static void reset_counters(void)
{
	atomic_store(&g_written, 0);
	atomic_store(&g_write_errors, 0);
	atomic_store(&g_modules, 0);
	atomic_store(&g_jit, 0);
	atomic_store(&g_exceptions, 0);
	atomic_store(&g_threads, 0);
}

/* Client data: "key=value;key=value" ASCII, at most PRF_CONFIG_MAX bytes. */
static void config_parse(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t k0 = i, kn, v0, vn;
		unsigned long x = 0;

		while (i < n && s[i] != '=' && s[i] != ';')
			i++;
		kn = i - k0;
		if (i < n && s[i] == '=')
			i++;
		v0 = i;
		while (i < n && s[i] != ';')
			i++;
		vn = i - v0;
		i++;
		for (size_t j = 0; j < vn && j < 10; j++) {
			if (s[v0 + j] < '0' || s[v0 + j] > '9')
				break;
			x = x * 10 + (unsigned long)(s[v0 + j] - '0');
		}
#define KEY(z) (kn == sizeof(z) - 1 && !memcmp(s + k0, z, kn))
		if (KEY("hb") && x >= 10 && x <= 60000)
			g_heartbeat_ms = (uint32_t)x;
		else if (KEY("wait") && x >= 100 && x <= 600000)
			g_wait_ms = (uint32_t)x;
		else if (KEY("feat"))
			g_features = (uint32_t)x & PRF_FEAT_ALL & ~(PRF_FEAT_REJIT | PRF_FEAT_NATMEM);
		else if (KEY("probe"))
			rejit_add_spec(s + v0, vn);
		else if (KEY("args") && x == 1)
			rejit_set_args(1);
		else if (KEY("stack") && x == 1)
			rejit_set_stack(1);
		else if (KEY("natmem"))
			natmem_config(x);
#undef KEY
	}
}

/* ---------------------------------------------------------- callbacks */

struct profiler {
	const struct callback_vtbl *vtbl;
	atomic_int refs;
};

#define PARAMS(...) __VA_ARGS__
#define FIELD(slot, name, ...) HRESULT (*name)(void *self, __VA_ARGS__);
#define FIELD0(slot, name) HRESULT (*name)(void *self);
struct callback_vtbl {
	HRESULT (*QueryInterface)(void *self, const struct guid *riid, void **ppv);
	ULONG (*AddRef)(void *self);
	ULONG (*Release)(void *self);
	CALLBACK_SLOTS(FIELD, FIELD0, FIELD, FIELD0)
};
_Static_assert(offsetof(struct callback_vtbl, Initialize) == 3 * sizeof(void *), "slot 3");
_Static_assert(offsetof(struct callback_vtbl, InitializeForAttach) == 80 * sizeof(void *),
	       "slot 80");
_Static_assert(offsetof(struct callback_vtbl, GetReJITParameters) == 84 * sizeof(void *),
	       "slot 84");
_Static_assert(offsetof(struct callback_vtbl, LoadAsNotificationOnly) == 97 * sizeof(void *),
	       "slot 97");
_Static_assert(sizeof(struct callback_vtbl) == CALLBACK_NSLOTS * sizeof(void *), "98 slots");

/* Every slot not written by hand: the exact parameters, S_OK. */
#define STUB(slot, name, ...) \
	static HRESULT cb_##name(void *self, __VA_ARGS__) { return S_OK; }
#define STUB0(slot, name) \
	static HRESULT cb_##name(void *self) { return S_OK; }
#define NOSTUB(slot, name, ...)
#define NOSTUB0(slot, name)
CALLBACK_SLOTS(STUB, STUB0, NOSTUB, NOSTUB0)

static ULONG cb_AddRef(void *self)
{
	struct profiler *p = self;

	return (ULONG)atomic_fetch_add(&p->refs, 1) + 1;
}

static ULONG cb_Release(void *self)
{
	struct profiler *p = self;
	int n = atomic_fetch_sub(&p->refs, 1) - 1;

	/* The object is static: nothing to free. */
	return n < 0 ? 0 : (ULONG)n;
}

static HRESULT cb_QueryInterface(void *self, const struct guid *riid, void **ppv)
{
	size_t i;

	if (!ppv)
		return E_POINTER;
	*ppv = NULL;
	if (guid_eq(riid, &IID_IUnknown))
		goto ok;
	for (i = 0; i < sizeof(IID_Callbacks) / sizeof(IID_Callbacks[0]); i++)
		if (guid_eq(riid, &IID_Callbacks[i]))
			goto ok;
	return E_NOINTERFACE;
ok:
	*ppv = self;
	cb_AddRef(self);
	return S_OK;
}

static HRESULT cb_Shutdown(void *self)
{
	atomic_store(&g_state, ST_SHUTDOWN);
	return S_OK;
}

static HRESULT cb_InitializeForAttach(void *self, void *info_unk, void *client_data,
				      UINT cb_client_data)
{
	char cfg[PRF_CONFIG_MAX];
	size_t n = cb_client_data;
	uint32_t low, allowed;
	HRESULT hr;
	void *info = NULL;

	/* A fresh attach of an image that may have been attached before. */
	g_heartbeat_ms = 250;
	g_wait_ms = 10000;
	g_features = PRF_FEAT_DEFAULT;
	/* g_kw is not reset: the provider (and its sessions) outlive a detach,
	 * and a CONTROL session may have been opened before this attach. */
	reset_counters();
	atomic_fetch_add(&g_generation, 1);
	atomic_store(&g_flush_nonce, 0);

	rejit_reset();
	natmem_reset();
	/* The buffer is the runtime's IPC buffer, freed after we return: copy. */
	if (client_data && n) {
		if (n > sizeof(cfg))
			return E_INVALIDARG;
		memcpy(cfg, client_data, n);
		config_parse(cfg, n);
	}
	if (!info_unk)
		return E_INVALIDARG;
	hr = INFO_FN(info_unk, INFO_QI, info_qi_fn)(info_unk, &IID_ICorProfilerInfo14, &info);
	if (hr != S_OK || !info)
		return CORPROF_E_PROFILER_CANCEL_ACTIVATION; /* runtime older than .NET 8 */
	g_info = info;
	INFO_FN(info, INFO_GET_RUNTIME_INFORMATION, info_get_runtime_information_fn)(
		info, NULL, NULL, &g_rt_major, &g_rt_minor, &g_rt_build, NULL, 0, NULL, NULL);
	hr = provider_create();
	if (hr != S_OK)
		goto fail;
	low = 0;
	if (g_features & PRF_FEAT_MODULES)
		low |= COR_PRF_MONITOR_MODULE_LOADS;
	if (g_features & PRF_FEAT_JIT)
		low |= COR_PRF_MONITOR_JIT_COMPILATION;
	if (g_features & PRF_FEAT_EXCEPTIONS)
		low |= COR_PRF_MONITOR_EXCEPTIONS;
	if (g_features & PRF_FEAT_THREADS)
		low |= COR_PRF_MONITOR_THREADS;
	allowed = COR_PRF_ALLOWABLE_AFTER_ATTACH;
	if (atomic_load(&g_mode) == PRF_MODE_NOTIFICATION)
		allowed &= COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER;
	if (natmem_wanted())
		g_features |= PRF_FEAT_NATMEM;
	if (rejit_nspecs() > 0) {
		/* ReJIT needs the main slot, and makes the profiler non-detachable. */
		if (atomic_load(&g_mode) == PRF_MODE_NOTIFICATION) {
			hr = E_INVALIDARG;
			goto fail;
		}
		low |= COR_PRF_ENABLE_REJIT;
		g_features |= PRF_FEAT_REJIT;
		if (rejit_args())
			g_features |= PRF_FEAT_ARGS;
	}
	hr = INFO_FN(info, INFO_SET_EVENT_MASK2, info_set_event_mask2_fn)(info, low & allowed, 0);
	if (hr != S_OK)
		goto fail;
	atomic_store(&g_state, ST_ACTIVE);
	return S_OK;
fail:
	INFO_FN(info, INFO_RELEASE, info_release_fn)(info);
	g_info = NULL;
	return hr;
}

static HRESULT cb_ProfilerAttachComplete(void *self)
{
	if (!guard_enter())
		return S_OK;
	if (worker_start() != 0) {
		/* Without its thread the profiler cannot end itself: go quiet. */
		INFO_FN(g_info, INFO_SET_EVENT_MASK2, info_set_event_mask2_fn)(g_info, 0, 0);
		atomic_fetch_add(&g_write_errors, 1);
	}
	guard_leave();
	return S_OK;
}

static HRESULT cb_ProfilerDetachSucceeded(void *self)
{
	void *info = g_info;

	atomic_store(&g_state, ST_DETACHED);
	g_info = NULL;
	if (info)
		INFO_FN(info, INFO_RELEASE, info_release_fn)(info);
	return S_OK;
}

static HRESULT cb_LoadAsNotificationOnly(void *self, BOOL *notification_only)
{
	if (notification_only)
		*notification_only = atomic_load(&g_mode) == PRF_MODE_NOTIFICATION;
	return S_OK;
}

static HRESULT cb_JITCachedFunctionSearchStarted(void *self, ID_T fn, BOOL *use_cached)
{
	if (use_cached)
		*use_cached = 1;
	return S_OK;
}

static HRESULT cb_JITInlining(void *self, ID_T caller, ID_T callee, BOOL *should_inline)
{
	if (should_inline)
		*should_inline = 1;
	return S_OK;
}

static HRESULT cb_ModuleLoadFinished(void *self, ID_T mod, HRESULT status)
{
	WCHAR path[PRF_PATH_MAX];
	ULONG cch = 0;
	const uint8_t *base = NULL;
	ID_T as = 0;
	uint64_t id = mod;
	int32_t hr = status;

	if (!guard_enter())
		return S_OK;
	atomic_fetch_add(&g_modules, 1);
	if (atomic_load(&g_kw) & PRF_KW_MODULES) {
		path[0] = 0;
		if (INFO_FN(g_info, INFO_GET_MODULE_INFO, info_get_module_info_fn)(
			    g_info, mod, &base, PRF_PATH_MAX, &cch, path, &as) != S_OK)
			cch = 0;
		if (cch == 0 || cch > PRF_PATH_MAX)
			cch = 1;
		path[cch - 1] = 0;
		struct prf_event_data d[] = { DATA(id), DATA(hr),
					      { (uint64_t)(uintptr_t)path,
						(uint32_t)(cch * sizeof(WCHAR)), 0 } };
		prf_ev_write(PRF_EV_MODULE, d, 3);
	}
	guard_leave();
	return S_OK;
}

static HRESULT cb_GetReJITParameters(void *self, ID_T mod, mdToken method, void *fctl)
{
	HRESULT hr;

	if (!guard_enter())
		return S_OK;
	hr = rejit_get_parameters(mod, method, fctl);
	guard_leave();
	return hr;
}

static HRESULT cb_ReJITError(void *self, ID_T mod, mdToken method, ID_T fn, HRESULT hr)
{
	if (!guard_enter())
		return S_OK;
	rejit_error(mod, method, hr);
	guard_leave();
	return S_OK;
}

static HRESULT cb_JITCompilationFinished(void *self, ID_T fn, HRESULT hr, BOOL safe)
{
	if (!guard_enter())
		return S_OK;
	atomic_fetch_add(&g_jit, 1);
	guard_leave();
	return S_OK;
}

static HRESULT cb_ExceptionThrown(void *self, ID_T obj)
{
	/* Cooperative mode, GC blocked: count only. */
	if (!guard_enter())
		return S_OK;
	atomic_fetch_add(&g_exceptions, 1);
	guard_leave();
	return S_OK;
}

static HRESULT cb_ThreadCreated(void *self, ID_T th)
{
	if (!guard_enter())
		return S_OK;
	atomic_fetch_add(&g_threads, 1);
	guard_leave();
	return S_OK;
}

#define SLOT(slot, name, ...) .name = cb_##name,
#define SLOT0(slot, name) .name = cb_##name,
static const struct callback_vtbl g_callback_vtbl = {
	.QueryInterface = cb_QueryInterface,
	.AddRef = cb_AddRef,
	.Release = cb_Release,
	CALLBACK_SLOTS(SLOT, SLOT0, SLOT, SLOT0)
};

static struct profiler g_profiler = { &g_callback_vtbl, 1 };

/* -------------------------------------------------------- class factory */

struct factory {
	const struct factory_vtbl *vtbl;
};

struct factory_vtbl {
	HRESULT (*QueryInterface)(void *self, const struct guid *riid, void **ppv);
	ULONG (*AddRef)(void *self);
	ULONG (*Release)(void *self);
	HRESULT (*CreateInstance)(void *self, void *outer, const struct guid *riid, void **ppv);
	HRESULT (*LockServer)(void *self, BOOL lock);
};

static HRESULT cf_QueryInterface(void *self, const struct guid *riid, void **ppv)
{
	if (!ppv)
		return E_POINTER;
	if (guid_eq(riid, &IID_IUnknown) || guid_eq(riid, &IID_IClassFactory)) {
		*ppv = self;
		return S_OK;
	}
	*ppv = NULL;
	return E_NOINTERFACE;
}

static ULONG cf_AddRef(void *self)
{
	return 2;
}

static ULONG cf_Release(void *self)
{
	return 1;
}

static HRESULT cf_CreateInstance(void *self, void *outer, const struct guid *riid, void **ppv)
{
	int st;

	if (!ppv)
		return E_POINTER;
	*ppv = NULL;
	if (outer)
		return CLASS_E_NOAGGREGATION;
	/* One profiler per loaded image: refuse while it is alive. */
	st = atomic_load(&g_state);
	if (st == ST_ACTIVE || st == ST_DETACHING || st == ST_SHUTDOWN || st == ST_DORMANT)
		return E_FAIL;
	atomic_store(&g_state, ST_IDLE);
	return cb_QueryInterface(&g_profiler, riid, ppv);
}

static HRESULT cf_LockServer(void *self, BOOL lock)
{
	return S_OK;
}

static const struct factory_vtbl g_factory_vtbl = {
	cf_QueryInterface, cf_AddRef, cf_Release, cf_CreateInstance, cf_LockServer,
};
static struct factory g_factory = { &g_factory_vtbl };

EXPORT HRESULT DllGetClassObject(const struct guid *clsid, const struct guid *riid, void **ppv);

EXPORT HRESULT DllGetClassObject(const struct guid *clsid, const struct guid *riid, void **ppv)
{
	int st = atomic_load(&g_state);

	if (!ppv)
		return E_POINTER;
	*ppv = NULL;
	/* While this image's profiler is alive it serves no second one. */
	if (st == ST_ACTIVE || st == ST_DETACHING || st == ST_SHUTDOWN || st == ST_DORMANT)
		return CLASS_E_CLASSNOTAVAILABLE;
	if (guid_eq(clsid, &CLSID_Main))
		atomic_store(&g_mode, PRF_MODE_MAIN);
	else if (guid_eq(clsid, &CLSID_Notify))
		atomic_store(&g_mode, PRF_MODE_NOTIFICATION);
	else
		return CLASS_E_CLASSNOTAVAILABLE;
	return cf_QueryInterface(&g_factory, riid, ppv);
}
