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

struct probe {
	ID_T module;
	mdToken method;
	mdToken sigtok;
	uint32_t spec;
	atomic_uint_fast64_t count;
	uint8_t *il;               /* the rewritten body handed to the runtime */
};

static struct spec g_specs[PRF_MAX_SPECS];
static int g_nspecs;
static struct probe g_probes[PRF_MAX_PROBES];
static atomic_int g_nprobes;
static atomic_uint_fast64_t g_rejit_errors;

/* The stub the rewritten IL calls. */
static void probe_hit(int32_t id)
{
	if ((uint32_t)id < PRF_MAX_PROBES)
		atomic_fetch_add_explicit(&g_probes[id].count, 1, memory_order_relaxed);
}

void rejit_reset(void)
{
	g_nspecs = 0;
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

	atomic_store(&g_nprobes, 0);
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
