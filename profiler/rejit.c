/* SPDX-License-Identifier: MIT */
/*
 * rejit.c - probes by ReJIT: the profiler finds the methods named in its
 * config, asks the runtime to re-JIT them (RequestReJITWithInliners with
 * BLOCK_INLINING, so callers that inlined them are re-JITted too), and in
 * GetReJITParameters hands back their IL with a call to a native stub put
 * in front:
 *
 *     ldc.i4  <probe id>
 *     ldc.i8  <address of probe_hit>
 *     conv.i
 *     calli   unmanaged cdecl void(int32)     (a StandAloneSig token)
 *
 * The stub adds one to the probe's counter (an atomic add). The IL is
 * what every later native version is compiled from - Tier0, OSR, Tier1 -
 * and ReadyToRun methods are re-JITted from their IL as well, so every
 * call is counted whichever code the runtime runs. RequestRevert puts the
 * original IL back. docs/internals/profiler.md.
 */
#define _GNU_SOURCE 1
#include <stdatomic.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_proto.h"
#include "agent/ilrw.h"
#include "internal.h"

static const struct guid IID_IMetaDataImport = {
	0x7DAC8207, 0xD3AE, 0x4C75, { 0x9B, 0x67, 0x92, 0x80, 0x1A, 0x49, 0x7D, 0x44 }
};
static const struct guid IID_IMetaDataEmit = {
	0xBA3FEE4C, 0xECB9, 0x4E41, { 0x83, 0xB7, 0x18, 0x3F, 0xA4, 0x1C, 0xD8, 0x59 }
};

#define MAX_OVERLOADS 128

struct spec {
	char type[PRF_SPEC_MAX];   /* "Ns.Type" or "Ns.Outer+Inner" */
	char method[PRF_SPEC_MAX];
	uint8_t sig[16];           /* element types wanted, if has_sig */
	int nsig;
	int has_sig;
	char text[PRF_SPEC_MAX];
};

/* What the rewritten IL records for one method (args mode). */
struct plan {
	int ok;                       /* the signature was understood */
	int hasthis;
	int nparams;                  /* recorded: the first PRF_MAX_ARGS */
	uint8_t kind[PRF_MAX_ARGS];   /* PRF_K_* per parameter (this not counted) */
	uint8_t ret;                  /* PRF_K_* of the return value */
};

enum { SIG_ENTER, SIG_ARG_I, SIG_ARG_F, SIG_ARG_S, SIG_RET_I, SIG_RET_F, SIG_RET_S, SIG_THIS,
       SIG_N };

struct probe {
	ID_T module;
	mdToken method;
	mdToken sigtok;
	mdToken sigs[SIG_N];
	struct plan plan;
	uint32_t spec;
	atomic_uint_fast64_t count;
	uint8_t *il;               /* the rewritten body handed to the runtime */
};

static struct spec g_specs[PRF_MAX_SPECS];
static int g_nspecs;
static struct probe g_probes[PRF_MAX_PROBES];
static atomic_int g_nprobes;
static atomic_uint_fast64_t g_rejit_errors;
static int g_args; /* record arguments, return values, latency */
static int g_stack; /* and the caller's stack (EventPipe walks it when writing the event) */

void rejit_set_stack(int on)
{
	g_stack = on;
}

void rejit_set_args(int on)
{
	g_args = on;
}

int rejit_args(void)
{
	return g_args;
}

/* The stub the rewritten IL calls. */
static void probe_hit(int32_t id)
{
	if ((uint32_t)id < PRF_MAX_PROBES)
		atomic_fetch_add_explicit(&g_probes[id].count, 1, memory_order_relaxed);
}

/* ---- args mode: a per-thread stack of calls in flight ---- */

struct frame {
	int32_t id;
	uint64_t t0;
	uint64_t a[PRF_MAX_ARGS];
	uint8_t k[PRF_MAX_ARGS];
	WCHAR s[512];
	uint32_t slen;
	uint64_t self; /* this: the object's address at entry (not dereferenced) */
};

#define FRAMES 16
static __thread struct frame t_frames[FRAMES];
static __thread int t_depth;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct frame *top(int32_t id)
{
	if (t_depth <= 0 || t_depth > FRAMES || t_frames[t_depth - 1].id != id)
		return NULL;
	return &t_frames[t_depth - 1];
}

#define SCAP (sizeof(((struct frame *)0)->s) / sizeof(WCHAR))

/* Appends one unit, keeping the last slot for the terminating NUL. */
static void put16(struct frame *f, WCHAR c)
{
	if (f->slen + 1 < SCAP)
		f->s[f->slen++] = c;
}

/* Appends UTF-8 s as UTF-16 to f->s (truncated at the buffer's end). */
static void put_utf8(struct frame *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p && f->slen + 3 < SCAP) {
		uint32_t c = *p++;
		int more = 0;

		if (c >= 0xF0) { c &= 0x07; more = 3; }
		else if (c >= 0xE0) { c &= 0x0F; more = 2; }
		else if (c >= 0xC0) { c &= 0x1F; more = 1; }
		while (more-- > 0 && (*p & 0xC0) == 0x80)
			c = c << 6 | (*p++ & 0x3F);
		if (c >= 0x10000) {
			c -= 0x10000;
			f->s[f->slen++] = (WCHAR)(0xD800 | (c >> 10));
			f->s[f->slen++] = (WCHAR)(0xDC00 | (c & 0x3FF));
		} else {
			f->s[f->slen++] = (WCHAR)c;
		}
	}
}

static void p_enter(int32_t id)
{
	if ((uint32_t)id >= PRF_MAX_PROBES)
		return;
	atomic_fetch_add_explicit(&g_probes[id].count, 1, memory_order_relaxed);
	if (t_depth < FRAMES) {
		struct frame *f = &t_frames[t_depth];

		f->id = id;
		f->slen = 0;
		f->self = 0;
		memset(f->k, 0, sizeof(f->k));
		f->t0 = mono_ns();
	}
	t_depth++;
}

static void p_arg_i(int32_t id, int32_t k, int64_t v)
{
	struct frame *f = top(id);

	if (f && (uint32_t)k < PRF_MAX_ARGS)
		f->a[k] = (uint64_t)v;
}

static void p_this(int32_t id, int64_t addr)
{
	struct frame *f = top(id);

	if (f)
		f->self = (uint64_t)addr;
}

static void p_arg_f(int32_t id, int32_t k, double v)
{
	struct frame *f = top(id);

	if (f && (uint32_t)k < PRF_MAX_ARGS)
		memcpy(&f->a[k], &v, 8);
}

static void p_arg_s(int32_t id, int32_t k, const char *s)
{
	struct frame *f = top(id);

	if (!f || (uint32_t)k >= PRF_MAX_ARGS)
		return;
	if (f->slen)
		put16(f, 0x1F);
	f->a[k] = s ? 1 : 0; /* 0: null */
	if (s)
		put_utf8(f, s);
}

static void finish(int32_t id, uint64_t ret, const char *rs, int is_s)
{
	struct frame *f;
	struct probe *p;
	uint32_t kinds = 0, retkind, probe = (uint32_t)id;
	uint64_t lat;

	if ((uint32_t)id >= PRF_MAX_PROBES || t_depth <= 0)
		return;
	/* An exception may have skipped the return of calls above this one. */
	while (t_depth > 1 && t_depth <= FRAMES && t_frames[t_depth - 1].id != id)
		t_depth--;
	t_depth--;
	if (t_depth >= FRAMES)
		return; /* too deep to have been recorded */
	f = &t_frames[t_depth];
	if (f->id != id)
		return;
	p = &g_probes[id];
	lat = mono_ns() - f->t0;
	for (int k = 0; k < p->plan.nparams; k++) {
		uint32_t kk = p->plan.kind[k];

		if (kk == PRF_K_STRING && !f->a[k])
			kk = PRF_K_NULL;
		kinds |= kk << (4 * k);
	}
	retkind = p->plan.ret;
	if (is_s) {
		if (!rs)
			retkind = PRF_K_NULL;
		put16(f, 0x1E);
		if (rs)
			put_utf8(f, rs);
	}
	retkind |= (uint32_t)p->plan.nparams << 8;
	if (p->plan.hasthis)
		retkind |= 1u << 16;
	f->s[f->slen < SCAP ? f->slen++ : SCAP - 1] = 0; /* put16 left room for it */
	{
		struct prf_event_data d[] = {
			{ (uint64_t)(uintptr_t)&probe, 4, 0 },   { (uint64_t)(uintptr_t)&kinds, 4, 0 },
			{ (uint64_t)(uintptr_t)&retkind, 4, 0 }, { (uint64_t)(uintptr_t)&lat, 8, 0 },
			{ (uint64_t)(uintptr_t)&f->a[0], 8, 0 }, { (uint64_t)(uintptr_t)&f->a[1], 8, 0 },
			{ (uint64_t)(uintptr_t)&f->a[2], 8, 0 }, { (uint64_t)(uintptr_t)&f->a[3], 8, 0 },
			{ (uint64_t)(uintptr_t)&f->a[4], 8, 0 }, { (uint64_t)(uintptr_t)&f->a[5], 8, 0 },
			{ (uint64_t)(uintptr_t)&f->a[6], 8, 0 }, { (uint64_t)(uintptr_t)&f->a[7], 8, 0 },
			{ (uint64_t)(uintptr_t)&ret, 8, 0 },
			{ (uint64_t)(uintptr_t)f->s, f->slen * 2, 0 },
			{ (uint64_t)(uintptr_t)&f->self, 8, 0 },
		};

		if (g_info && prf_active())
			prf_ev_write(g_stack ? PRF_EV_CALL_STACK : PRF_EV_CALL, d, 15);
	}
}

static void p_ret_i(int64_t v, int32_t id)
{
	finish(id, (uint64_t)v, NULL, 0);
}

static void p_ret_f(double v, int32_t id)
{
	uint64_t b;

	memcpy(&b, &v, 8);
	finish(id, b, NULL, 0);
}

static void p_ret_s(const char *s, int32_t id)
{
	finish(id, s ? 1 : 0, s, 1);
}

static void p_ret_v(int32_t id)
{
	finish(id, 0, NULL, 0);
}

/* Reads a compressed unsigned integer of a signature blob. */
static int sig_u(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	const uint8_t *q = *p;

	if (q >= end)
		return -1;
	if (!(q[0] & 0x80)) {
		*v = q[0];
		*p = q + 1;
	} else if ((q[0] & 0xC0) == 0x80 && q + 1 < end) {
		*v = (uint32_t)(q[0] & 0x3F) << 8 | q[1];
		*p = q + 2;
	} else if ((q[0] & 0xE0) == 0xC0 && q + 3 < end) {
		*v = (uint32_t)(q[0] & 0x1F) << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
		*p = q + 4;
	} else {
		return -1;
	}
	return 0;
}

/* Skips one type in a signature; *kind gets what a probe can record of it. */
static int sig_type(const uint8_t **p, const uint8_t *end, uint8_t *kind, int depth)
{
	uint32_t et, v;

	if (depth > 16 || sig_u(p, end, &et))
		return -1;
	*kind = PRF_K_NONE;
	switch (et) {
	case 0x01: *kind = PRF_K_VOID; return 0;
	case 0x02: *kind = PRF_K_BOOL; return 0;
	case 0x03: *kind = PRF_K_CHAR; return 0;
	case 0x04: case 0x06: case 0x08: case 0x0a: case 0x18: *kind = PRF_K_INT; return 0;
	case 0x05: case 0x07: case 0x09: case 0x0b: case 0x19: *kind = PRF_K_UINT; return 0;
	case 0x0c: case 0x0d: *kind = PRF_K_FLOAT; return 0;
	case 0x0e: *kind = PRF_K_STRING; return 0;
	case 0x1c: case 0x16: return 0; /* object, typedbyref */
	case 0x11: case 0x12: return sig_u(p, end, &v); /* valuetype, class + token */
	case 0x13: case 0x1e: return sig_u(p, end, &v); /* var, mvar */
	case 0x0f: case 0x10: case 0x1d: case 0x45: /* ptr, byref, szarray, pinned */
		return sig_type(p, end, kind, depth + 1) ? -1 : ((*kind = PRF_K_NONE), 0);
	case 0x1f: case 0x20: /* cmod + token, then the type */
		return sig_u(p, end, &v) ? -1 : sig_type(p, end, kind, depth + 1);
	case 0x15: { /* genericinst: type, count, args */
		uint8_t k;

		if (sig_type(p, end, &k, depth + 1) || sig_u(p, end, &v) || v > 64)
			return -1;
		for (uint32_t i = 0; i < v; i++)
			if (sig_type(p, end, &k, depth + 1))
				return -1;
		*kind = PRF_K_NONE;
		return 0;
	}
	default:
		return -1; /* arrays with shapes, function pointers: not handled */
	}
}

static void make_plan(struct plan *pl, const uint8_t *sig, ULONG cb)
{
	const uint8_t *p = sig, *end = sig + cb;
	uint32_t n, gen;

	memset(pl, 0, sizeof(*pl));
	if (cb < 3)
		return;
	pl->hasthis = (sig[0] & 0x20) != 0;
	p++;
	if ((sig[0] & 0x10) && sig_u(&p, end, &gen))
		return;
	if (sig_u(&p, end, &n) || sig_type(&p, end, &pl->ret, 0))
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t k;

		if (sig_type(&p, end, &k, 0))
			return;
		if (i < PRF_MAX_ARGS)
			pl->kind[i] = k;
	}
	pl->nparams = n < PRF_MAX_ARGS ? (int)n : PRF_MAX_ARGS;
	pl->ok = 1;
}

void rejit_reset(void)
{
	g_nspecs = 0;
	g_args = 0;
	g_stack = 0;
}

int rejit_nspecs(void)
{
	return g_nspecs;
}

static const struct {
	const char *name;
	uint8_t et;
} g_types[] = {
	{ "bool", 0x02 },   { "char", 0x03 },   { "int8", 0x04 },    { "uint8", 0x05 },
	{ "int16", 0x06 },  { "uint16", 0x07 }, { "int32", 0x08 },   { "uint32", 0x09 },
	{ "int64", 0x0a },  { "uint64", 0x0b }, { "float32", 0x0c }, { "float64", 0x0d },
	{ "string", 0x0e }, { "object", 0x1c },
};

int rejit_add_spec(const char *s, size_t n)
{
	struct spec *sp;
	const char *sep = NULL, *paren;
	size_t i;

	if (g_nspecs >= PRF_MAX_SPECS || n == 0 || n >= PRF_SPEC_MAX)
		return -1;
	sp = &g_specs[g_nspecs];
	memset(sp, 0, sizeof(*sp));
	memcpy(sp->text, s, n);
	for (i = 0; i + 1 < n; i++)
		if (s[i] == ':' && s[i + 1] == ':')
			sep = s + i;
	if (!sep || sep == s)
		return -1;
	memcpy(sp->type, s, (size_t)(sep - s));
	paren = memchr(sep, '(', n - (size_t)(sep - s));
	if (paren) {
		const char *p = paren + 1, *end = s + n;

		memcpy(sp->method, sep + 2, (size_t)(paren - sep - 2));
		sp->has_sig = 1;
		while (p < end && *p != ')') {
			const char *q = p;
			size_t k;
			int found = 0;

			while (q < end && *q != ',' && *q != ')')
				q++;
			for (k = 0; k < sizeof(g_types) / sizeof(g_types[0]); k++) {
				if (strlen(g_types[k].name) == (size_t)(q - p) &&
				    !memcmp(g_types[k].name, p, (size_t)(q - p))) {
					if (sp->nsig >= (int)sizeof(sp->sig))
						return -1;
					sp->sig[sp->nsig++] = g_types[k].et;
					found = 1;
				}
			}
			if (!found && q > p)
				return -1;
			p = q < end && *q == ',' ? q + 1 : q;
		}
	} else {
		memcpy(sp->method, sep + 2, n - (size_t)(sep + 2 - s));
	}
	if (!sp->method[0])
		return -1;
	g_nspecs++;
	return 0;
}

static void widen(const char *s, WCHAR *out, size_t cap)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < cap; i++)
		out[i] = (WCHAR)(unsigned char)s[i];
	out[i] = 0;
}

/* Does the method signature blob match the wanted parameter types? */
static int sig_matches(const struct spec *sp, const uint8_t *sig, ULONG cb)
{
	ULONG i;

	if (!sp->has_sig)
		return 1;
	if (cb < 3 || (sig[0] & 0x10) || sig[1] >= 0x80) /* generic, or long count */
		return 0;
	if (sig[1] != (uint8_t)sp->nsig)
		return 0;
	/* after the return type (skip it: one simple element type, or give up) */
	i = 3;
	if (sig[2] != 0x01 && (sig[2] < 0x02 || sig[2] > 0x0e) && sig[2] != 0x1c &&
	    sig[2] != 0x18 && sig[2] != 0x19)
		return 0;
	for (int k = 0; k < sp->nsig; k++, i++)
		if (i >= cb || sig[i] != sp->sig[k])
			return 0;
	return 1;
}

static void ev_installed(uint32_t spec, uint32_t methods, int32_t hr)
{
	WCHAR text[PRF_SPEC_MAX];
	struct prf_event_data d[4];

	widen(g_specs[spec].text, text, PRF_SPEC_MAX);
	d[0] = (struct prf_event_data){ (uint64_t)(uintptr_t)&spec, 4, 0 };
	d[1] = (struct prf_event_data){ (uint64_t)(uintptr_t)&methods, 4, 0 };
	d[2] = (struct prf_event_data){ (uint64_t)(uintptr_t)&hr, 4, 0 };
	d[3] = (struct prf_event_data){ (uint64_t)(uintptr_t)text,
					(uint32_t)((strlen(g_specs[spec].text) + 1) * 2), 0 };
	prf_ev_write(PRF_EV_PROBE_INSTALLED, d, 4);
}

static int no_marshalling(void *imp)
{
	const void *data = NULL;
	ULONG cb = 0;

	/* the assembly row is token 0x20000001 */
	return INFO_FN(imp, MDI_GET_CUSTOM_ATTRIBUTE_BY_NAME, mdi_get_custom_attribute_by_name_fn)(
		       imp, 0x20000001,
		       u"System.Runtime.CompilerServices.DisableRuntimeMarshallingAttribute", &data,
		       &cb) == S_OK;
}

/* Finds the methods of spec in module mod; appends probes. */
static void find_in_module(ID_T mod, uint32_t si, int *found)
{
	const struct spec *sp = &g_specs[si];
	void *imp = NULL, *emit = NULL, *henum = NULL;
	WCHAR name[PRF_SPEC_MAX];
	mdToken td = 0, methods[MAX_OVERLOADS];
	ULONG n = 0, i;
	char outer[PRF_SPEC_MAX], *plus;

	if (INFO_FN(g_info, INFO_GET_MODULE_METADATA, info_get_module_metadata_fn)(
		    g_info, mod, 0x1 /* ofWrite: the emitter is needed too */, &IID_IMetaDataImport,
		    &imp) != S_OK || !imp)
		return;
	memcpy(outer, sp->type, sizeof(outer)); /* NUL-terminated: specs are shorter */
	plus = strchr(outer, '+');
	if (plus)
		*plus = 0;
	widen(outer, name, PRF_SPEC_MAX);
	if (INFO_FN(imp, MDI_FIND_TYPEDEF_BY_NAME, mdi_find_typedef_fn)(imp, name, 0, &td) != S_OK)
		goto out;

	while (plus) {
		char *next = strchr(plus + 1, '+');
		mdToken inner = 0;

		if (next)
			*next = 0;
		widen(plus + 1, name, PRF_SPEC_MAX);
		if (INFO_FN(imp, MDI_FIND_TYPEDEF_BY_NAME, mdi_find_typedef_fn)(imp, name, td,
										 &inner) != S_OK)
			goto out;
		td = inner;
		plus = next;
	}
	widen(sp->method, name, PRF_SPEC_MAX);
	/* All overloads, in batches (the enumerator continues where it stopped). */
	while (n < MAX_OVERLOADS) {
		ULONG got = 0;

		if (INFO_FN(imp, MDI_ENUM_METHODS_WITH_NAME, mdi_enum_methods_with_name_fn)(
			    imp, &henum, td, name, methods + n, MAX_OVERLOADS - n, &got) != S_OK ||
		    got == 0)
			break;
		n += got;
	}
	if (henum)
		INFO_FN(imp, MDI_CLOSE_ENUM, mdi_close_enum_fn)(imp, henum);
	if (n == 0)
		goto out;
	if (INFO_FN(imp, INFO_QI, info_qi_fn)(imp, &IID_IMetaDataEmit, &emit) != S_OK || !emit)
		goto out;
	for (i = 0; i < n; i++) {
		static const uint8_t callsig[] = { 0x01 /* unmanaged cdecl */, 0x01, 0x01 /* void */,
						   0x08 /* int32 */ };
		const uint8_t *sig = NULL;
		ULONG cbsig = 0;
		mdToken cls, sigtok = 0;
		DWORD attr = 0, impl = 0;
		ULONG rva = 0;
		int id;

		if (INFO_FN(imp, MDI_GET_METHOD_PROPS, mdi_get_method_props_fn)(
			    imp, methods[i], &cls, NULL, 0, NULL, &attr, &sig, &cbsig, &rva, &impl) !=
		    S_OK)
			continue;
		if (rva == 0 || !sig_matches(sp, sig, cbsig))
			continue; /* abstract, extern or runtime-implemented: no IL */
		/* S_OK, or META_S_DUPLICATE (0x00131197) when the module has it already. */
		if (INFO_FN(emit, MDE_GET_TOKEN_FROM_SIG, mde_get_token_from_sig_fn)(
			    emit, callsig, sizeof(callsig), &sigtok) < 0 || !sigtok)
			continue;
		if (g_args) {
			static const uint8_t sigs[SIG_N][6] = {
				[SIG_ENTER] = { 0x01, 0x01, 0x01, 0x08 },
				[SIG_ARG_I] = { 0x01, 0x03, 0x01, 0x08, 0x08, 0x0a },
				[SIG_ARG_F] = { 0x01, 0x03, 0x01, 0x08, 0x08, 0x0d },
				[SIG_ARG_S] = { 0x01, 0x03, 0x01, 0x08, 0x08, 0x0e },
				[SIG_RET_I] = { 0x01, 0x02, 0x01, 0x0a, 0x08 },
				[SIG_RET_F] = { 0x01, 0x02, 0x01, 0x0d, 0x08 },
				[SIG_RET_S] = { 0x01, 0x02, 0x01, 0x0e, 0x08 },
				[SIG_THIS] = { 0x01, 0x02, 0x01, 0x08, 0x0a },
			};
			static const uint8_t lens[SIG_N] = { 4, 6, 6, 6, 5, 5, 5, 5 };
			int bad = 0;

			id = atomic_load(&g_nprobes);
			if (id >= PRF_MAX_PROBES)
				break;
			for (int k = 0; k < SIG_N; k++)
				if (INFO_FN(emit, MDE_GET_TOKEN_FROM_SIG, mde_get_token_from_sig_fn)(
					    emit, sigs[k], lens[k], &g_probes[id].sigs[k]) < 0)
					bad = 1;
			make_plan(&g_probes[id].plan, sig, cbsig);
			if (bad)
				g_probes[id].plan.ok = 0;
			/* Strings reach the stub through the runtime's marshalling (as
			 * UTF-8), which an assembly can switch off; then they are not
			 * recorded (System.Private.CoreLib does this). */
			if (no_marshalling(imp)) {
				struct plan *pl = &g_probes[id].plan;

				for (int k = 0; k < PRF_MAX_ARGS; k++)
					if (pl->kind[k] == PRF_K_STRING)
						pl->kind[k] = PRF_K_NONE;
				if (pl->ret == PRF_K_STRING)
					pl->ret = PRF_K_NONE;
			}
		}
		id = atomic_load(&g_nprobes);
		if (id >= PRF_MAX_PROBES)
			break;
		g_probes[id].module = mod;
		g_probes[id].method = methods[i];
		g_probes[id].sigtok = sigtok;
		g_probes[id].spec = si;
		atomic_store(&g_probes[id].count, 0);
		atomic_store(&g_nprobes, id + 1);
		(*found)++;
	}
	INFO_FN(g_info, INFO_APPLY_METADATA, info_apply_metadata_fn)(g_info, mod);
out:
	if (emit)
		INFO_FN(emit, INFO_RELEASE, info_release_fn)(emit);
	INFO_FN(imp, INFO_RELEASE, info_release_fn)(imp);
}

int rejit_install(void)
{
	void *en = NULL;
	ID_T mods[256];
	ULONG fetched = 0;
	int total = 0;
	HRESULT hr;

	/* A re-armed profiler starts a new table. The IL handed to the runtime
	 * for earlier probes is left allocated (the runtime may still refer to
	 * those versions). */
	for (int i = 0; i < PRF_MAX_PROBES; i++)
		g_probes[i].il = NULL;
	atomic_store(&g_nprobes, 0);
	atomic_store(&g_rejit_errors, 0);
	if (INFO_FN(g_info, INFO_ENUM_MODULES, info_enum_modules_fn)(g_info, &en) != S_OK || !en)
		return 0;
	/* Modules in batches; each spec is searched in every module. */
	for (;;) {
		fetched = 0;
		hr = INFO_FN(en, ENUM_NEXT, enum_next_fn)(en, 256, mods, &fetched);
		for (ULONG m = 0; m < fetched; m++)
			for (int si = 0; si < g_nspecs; si++) {
				int found = 0;

				find_in_module(mods[m], (uint32_t)si, &found);
			}
		if (hr != S_OK || fetched == 0)
			break;
	}
	INFO_FN(en, INFO_RELEASE, info_release_fn)(en);
	total = atomic_load(&g_nprobes);
	hr = S_OK;
	/* Which probe id is which method, before any call can be recorded:
	 * a reader then names every Call (all counts are 0 here). */
	rejit_report();
	if (total > 0) {
		ID_T ms[PRF_MAX_PROBES];
		mdToken toks[PRF_MAX_PROBES];

		for (int i = 0; i < total; i++) {
			ms[i] = g_probes[i].module;
			toks[i] = g_probes[i].method;
		}
		hr = INFO_FN(g_info, INFO_REQUEST_REJIT_WITH_INLINERS, info_request_rejit_inl_fn)(
			g_info, COR_PRF_REJIT_BLOCK_INLINING, (ULONG)total, ms, toks);
	}
	for (int si = 0; si < g_nspecs; si++) {
		uint32_t n = 0;

		for (int i = 0; i < total; i++)
			n += g_probes[i].spec == (uint32_t)si;
		ev_installed((uint32_t)si, n, n ? hr : (HRESULT)0x80131130 /* not found */);
	}
	return hr == S_OK ? total : 0;
}

void rejit_report(void)
{
	int n = atomic_load(&g_nprobes);

	for (int i = 0; i < n; i++) {
		uint32_t id = (uint32_t)i, spec = g_probes[i].spec, tok = g_probes[i].method;
		uint64_t mod = g_probes[i].module, count = atomic_load(&g_probes[i].count);
		struct prf_event_data d[] = {
			{ (uint64_t)(uintptr_t)&id, 4, 0 },   { (uint64_t)(uintptr_t)&spec, 4, 0 },
			{ (uint64_t)(uintptr_t)&tok, 4, 0 },  { (uint64_t)(uintptr_t)&mod, 8, 0 },
			{ (uint64_t)(uintptr_t)&count, 8, 0 },
		};

		prf_ev_write(PRF_EV_PROBE_COUNT, d, 5);
	}
}

void rejit_revert(void)
{
	int total = atomic_load(&g_nprobes);
	ID_T ms[PRF_MAX_PROBES];
	mdToken toks[PRF_MAX_PROBES];
	HRESULT st[PRF_MAX_PROBES];

	if (total <= 0)
		return;
	for (int i = 0; i < total; i++) {
		ms[i] = g_probes[i].module;
		toks[i] = g_probes[i].method;
	}
	INFO_FN(g_info, INFO_REQUEST_REVERT, info_request_revert_fn)(g_info, (ULONG)total, ms, toks,
								     st);
}

/* IL emitters for the args mode. */
struct ilbuf {
	uint8_t b[4096];
	size_t n;
	int bad;
};

static void op(struct ilbuf *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->b)) {
		o->bad = 1;
		return;
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void op1(struct ilbuf *o, uint8_t c)
{
	op(o, &c, 1);
}

static void ldc_i4(struct ilbuf *o, int32_t v)
{
	op1(o, 0x20);
	op(o, &v, 4);
}

static void calli_native(struct ilbuf *o, void *fn, mdToken sig)
{
	uint64_t a = (uint64_t)(uintptr_t)fn;

	op1(o, 0x21); /* ldc.i8 */
	op(o, &a, 8);
	op1(o, 0xD3); /* conv.i */
	op1(o, 0x29); /* calli */
	op(o, &sig, 4);
}

static void ldarg(struct ilbuf *o, unsigned n)
{
	if (n < 256) {
		op1(o, 0x0E); /* ldarg.s */
		op1(o, (uint8_t)n);
	} else {
		uint16_t v = (uint16_t)n;

		op1(o, 0xFE);
		op1(o, 0x09);
		op(o, &v, 2);
	}
}

static HRESULT rewrite_args(int id, struct probe *p, const uint8_t *body, ULONG size, void *fctl)
{
	static struct ilbuf pre, ret; /* GetReJITParameters calls are serialized below */
	static atomic_flag busy = ATOMIC_FLAG_INIT;
	const struct plan *pl = &p->plan;
	size_t cap, outlen = 0;
	uint8_t *out;
	struct ilrw_edit e;
	HRESULT hr;

	while (atomic_flag_test_and_set(&busy))
		;
	pre.n = ret.n = 0;
	pre.bad = ret.bad = 0;
	ldc_i4(&pre, id);
	calli_native(&pre, (void *)p_enter, p->sigs[SIG_ENTER]);
	if (pl->hasthis) {
		/* the address only: an object reference (or, for a struct, a
		 * managed pointer) turned into a number, never dereferenced */
		ldc_i4(&pre, id);
		ldarg(&pre, 0);
		op1(&pre, 0xE0); /* conv.u */
		op1(&pre, 0x6E); /* conv.u8 */
		calli_native(&pre, (void *)p_this, p->sigs[SIG_THIS]);
	}
	for (int k = 0; k < pl->nparams; k++) {
		unsigned argno = (unsigned)k + (pl->hasthis ? 1u : 0u);
		int kind = pl->kind[k];

		if (kind == PRF_K_NONE)
			continue;
		ldc_i4(&pre, id);
		ldc_i4(&pre, k);
		ldarg(&pre, argno);
		if (kind == PRF_K_FLOAT) {
			op1(&pre, 0x6C); /* conv.r8 */
			calli_native(&pre, (void *)p_arg_f, p->sigs[SIG_ARG_F]);
		} else if (kind == PRF_K_STRING) {
			calli_native(&pre, (void *)p_arg_s, p->sigs[SIG_ARG_S]);
		} else {
			op1(&pre, kind == PRF_K_INT ? 0x6A : 0x6E); /* conv.i8 / conv.u8 */
			calli_native(&pre, (void *)p_arg_i, p->sigs[SIG_ARG_I]);
		}
	}
	switch (pl->ret) {
	case PRF_K_VOID:
	case PRF_K_NONE: /* nothing to copy: the stub only closes the call */
		ldc_i4(&ret, id);
		calli_native(&ret, (void *)p_ret_v, p->sigs[SIG_ENTER]);
		break;
	case PRF_K_FLOAT:
		op1(&ret, 0x25); /* dup */
		op1(&ret, 0x6C);
		ldc_i4(&ret, id);
		calli_native(&ret, (void *)p_ret_f, p->sigs[SIG_RET_F]);
		break;
	case PRF_K_STRING:
		op1(&ret, 0x25);
		ldc_i4(&ret, id);
		calli_native(&ret, (void *)p_ret_s, p->sigs[SIG_RET_S]);
		break;
	default:
		op1(&ret, 0x25);
		op1(&ret, pl->ret == PRF_K_INT ? 0x6A : 0x6E);
		ldc_i4(&ret, id);
		calli_native(&ret, (void *)p_ret_i, p->sigs[SIG_RET_I]);
		break;
	}
	if (pre.bad || ret.bad) {
		atomic_flag_clear(&busy);
		return E_FAIL;
	}
	e = (struct ilrw_edit){ pre.b, pre.n, ret.b, ret.n, 5 };
	cap = (size_t)size * 4 + pre.n + 64 + 24 * ILRW_MAX_CLAUSES + 4096;
	out = malloc(cap);
	if (!out) {
		atomic_flag_clear(&busy);
		return E_OUTOFMEMORY;
	}
	if (ilrw_rewrite(body, size, &e, out, cap, &outlen)) {
		atomic_flag_clear(&busy);
		free(out);
		atomic_fetch_add(&g_rejit_errors, 1);
		return E_FAIL;
	}
	atomic_flag_clear(&busy);
	p->il = out; /* an earlier buffer stays allocated: see rejit_install */
	hr = INFO_FN(fctl, FCTL_SET_IL_FUNCTION_BODY, fctl_set_il_fn)(fctl, (ULONG)outlen, out);
	return hr;
}

HRESULT rejit_get_parameters(ID_T mod, mdToken method, void *fctl)
{
	int n = atomic_load(&g_nprobes);

	for (int i = 0; i < n; i++) {
		struct probe *p = &g_probes[i];
		const uint8_t *body = NULL;
		ULONG size = 0;
		uint8_t prefix[20];
		uint64_t fn = (uint64_t)(uintptr_t)probe_hit;
		size_t outlen = 0, cap;
		uint8_t *out;

		if (p->module != mod || p->method != method)
			continue;
		if (INFO_FN(g_info, INFO_GET_IL_FUNCTION_BODY, info_get_il_function_body_fn)(
			    g_info, mod, method, &body, &size) != S_OK || !body)
			return E_FAIL;
		if (g_args && p->plan.ok)
			return rewrite_args(i, p, body, size, fctl);
		prefix[0] = 0x20; /* ldc.i4 */
		memcpy(prefix + 1, &(int32_t){ i }, 4);
		prefix[5] = 0x21; /* ldc.i8 */
		memcpy(prefix + 6, &fn, 8);
		prefix[14] = 0xD3; /* conv.i */
		prefix[15] = 0x29; /* calli */
		memcpy(prefix + 16, &p->sigtok, 4);
		cap = (size_t)size + sizeof(prefix) + 64 + 24 * ILRW_MAX_CLAUSES;
		if (!p->il) {
			out = malloc(cap);
			if (!out)
				return E_OUTOFMEMORY;
		} else {
			out = p->il; /* a later ReJIT of the same method: same size */
		}
		if (ilrw_prepend(body, size, prefix, sizeof(prefix), 2, out, cap, &outlen)) {
			if (!p->il)
				free(out);
			atomic_fetch_add(&g_rejit_errors, 1);
			return E_FAIL;
		}
		p->il = out; /* kept: bounded by PRF_MAX_PROBES */
		return INFO_FN(fctl, FCTL_SET_IL_FUNCTION_BODY, fctl_set_il_fn)(fctl, (ULONG)outlen,
										out);
	}
	return S_OK;
}

void rejit_error(ID_T mod, mdToken method, HRESULT hr)
{
	atomic_fetch_add(&g_rejit_errors, 1);
}

uint64_t rejit_errors(void)
{
	return atomic_load(&g_rejit_errors);
}
