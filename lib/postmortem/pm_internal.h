/* SPDX-License-Identifier: MIT */
/* pm_internal.h - what postmortem.c, heapwalk.c and roots.c share. */
#ifndef CLRTAP_POSTMORTEM_PM_INTERNAL_H
#define CLRTAP_POSTMORTEM_PM_INTERNAL_H

#include "postmortem/postmortem.h"

struct core_file;
struct dac;
struct dac_thread;
struct heap_graph;

struct pm_priv {
	struct core_file *core;
	struct dac *dac;
	struct dac_thread *threads;
	size_t nthreads;
	struct heap_graph *graph; /* kept for pm_async's result */
};

/* An object's method table (mark bits cleared), 0 when unreadable. */
uint64_t pm_obj_mt(struct pm_priv *p, uint64_t obj);
struct pm_exception *pm_exception_read(struct pm_priv *p, uint64_t obj, unsigned depth);
/* Walks the GC heap into r->types / r->objects; what failed goes to r->heap_note. */
void pm_heap(struct pm_report *r);
char *pm_strdup(const char *s);

#endif
