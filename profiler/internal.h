/* SPDX-License-Identifier: MIT */
/* internal.h - what profiler.c and rejit.c share inside the library. */
#ifndef CLRTAP_PROFILER_INTERNAL_H
#define CLRTAP_PROFILER_INTERNAL_H

#include "corprof_c.h"

#define HIDDEN __attribute__((visibility("hidden")))

/* ICorProfilerInfo14 of the current attach (NULL when detached). */
extern void *g_info HIDDEN;

/* The profiler is attached and working (not dormant, detaching or shut down). */
int prf_active(void) HIDDEN;

/* Writes event id with n data blobs; counts successes and failures. */
void prf_ev_write(int id, struct prf_event_data *d, uint32_t n) HIDDEN;

/* ReJIT probes (rejit.c). */
void rejit_reset(void) HIDDEN;
void rejit_set_stack(int on) HIDDEN;
/* Adds a probe spec from the config ("Ns.Type::Method" [ "(int32,string)" ]). */
int rejit_add_spec(const char *s, size_t n) HIDDEN;
int rejit_nspecs(void) HIDDEN;
void rejit_set_args(int on) HIDDEN;
int rejit_args(void) HIDDEN;
/* From the profiler's own thread: find the methods and RequestReJIT them;
 * writes one ProbeInstalled event per spec. Returns methods requested. */
int rejit_install(void) HIDDEN;
/* Writes one ProbeCount event per probed method. */
void rejit_report(void) HIDDEN;
/* RequestRevert of everything installed. */
void rejit_revert(void) HIDDEN;
HRESULT rejit_get_parameters(ID_T mod, mdToken method, void *fctl) HIDDEN;
void rejit_error(ID_T mod, mdToken method, HRESULT hr) HIDDEN;
/* ReJITError callbacks plus refused rewrites since the probes were installed. */
uint64_t rejit_errors(void) HIDDEN;

/* Sampled native allocations (natmem.c). */
void natmem_reset(void) HIDDEN;
void natmem_config(uint64_t interval) HIDDEN;
int natmem_wanted(void) HIDDEN;
uint64_t natmem_table(void) HIDDEN;
int natmem_install(void) HIDDEN;
void natmem_rescan(void) HIDDEN;
void natmem_uninstall(void) HIDDEN;

#endif
