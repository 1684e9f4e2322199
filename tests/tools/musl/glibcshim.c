/* SPDX-License-Identifier: MIT */
/*
 * glibcshim.c - for t-agent-musl.sh only: lets a musl build of the .NET
 * runtime (linux-musl-x64, as on Alpine) start on this Debian machine,
 * which has musl's loader and libc (musl-tools) but no musl build of
 * libstdc++ and libgcc_s, which libcoreclr.so needs. The test runs the
 * runtime under musl's loader with copies of Debian's libstdc++.so.6 and
 * libgcc_s.so.1 whose NEEDED ld-linux-x86-64.so.2 is renamed to this file
 * (ctshim-x86-64-0.so.2, a name of the same length). musl's loader does not
 * check symbol versions; these are the only glibc symbols the two libraries
 * need that musl lacks (found by running it: "Error relocating"). Built
 * with musl-gcc by the test itself. The runtime, the profiler under test,
 * libc and the loader are all musl's.
 */
#define _GNU_SOURCE 1
#include <link.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define API __attribute__((visibility("default")))

/* libgcc's CPU model (function multiversioning): nothing detected. */
struct cpu_model {
	unsigned int vendor, type, subtype;
	unsigned int features[1];
};
API struct cpu_model __cpu_model;
API int __cpu_indicator_init(void);
API int __cpu_indicator_init(void)
{
	return 0;
}

/* glibc 2.32: 0 = maybe several threads (always safe). */
API char __libc_single_threaded;

API size_t __strftime_l(char *s, size_t n, const char *f, const struct tm *tm, locale_t l);
API size_t __strftime_l(char *s, size_t n, const char *f, const struct tm *tm, locale_t l)
{
	return strftime_l(s, n, f, tm, l);
}

API uint32_t arc4random(void);
API uint32_t arc4random(void)
{
	uint32_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		;
	return v;
}

/* thread_local destructors: run at thread exit through a pthread key. */
struct dtor {
	void (*fn)(void *);
	void *obj;
	struct dtor *next;
};
static pthread_key_t dtor_key;
static pthread_once_t dtor_once = PTHREAD_ONCE_INIT;

static void run_dtors(void *p)
{
	struct dtor *d = p, *n;

	for (; d; d = n) {
		n = d->next;
		d->fn(d->obj);
		free(d);
	}
}

static void make_key(void)
{
	pthread_key_create(&dtor_key, run_dtors);
}

API int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
API int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso)
{
	struct dtor *d = malloc(sizeof(*d));

	(void)dso;
	if (!d)
		return -1;
	pthread_once(&dtor_once, make_key);
	d->fn = fn;
	d->obj = obj;
	d->next = pthread_getspecific(dtor_key);
	pthread_setspecific(dtor_key, d);
	return 0;
}

/* glibc 2.35's _dl_find_object (the unwinder's lookup), from dl_iterate_phdr. */
struct dl_find_object {
	unsigned long long dlfo_flags;
	void *dlfo_map_start, *dlfo_map_end;
	struct link_map *dlfo_link_map;
	void *dlfo_eh_frame;
	unsigned long long reserved[7];
};

struct find_q {
	uintptr_t pc;
	struct dl_find_object *r;
	int found;
};

static int find_cb(struct dl_phdr_info *i, size_t sz, void *data)
{
	struct find_q *q = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
	int in = 0;

	(void)sz;
	for (int k = 0; k < i->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &i->dlpi_phdr[k];
		uintptr_t a = i->dlpi_addr + p->p_vaddr;

		if (p->p_type == PT_LOAD) {
			if (a < lo)
				lo = a;
			if (a + p->p_memsz > hi)
				hi = a + p->p_memsz;
			if (q->pc >= a && q->pc < a + p->p_memsz)
				in = 1;
		} else if (p->p_type == PT_GNU_EH_FRAME) {
			eh = a;
		}
	}
	if (!in)
		return 0;
	memset(q->r, 0, sizeof(*q->r));
	q->r->dlfo_map_start = (void *)lo;
	q->r->dlfo_map_end = (void *)hi;
	q->r->dlfo_eh_frame = (void *)eh;
	q->found = 1;
	return 1;
}

API int _dl_find_object(void *pc, struct dl_find_object *r);
API int _dl_find_object(void *pc, struct dl_find_object *r)
{
	struct find_q q = { (uintptr_t)pc, r, 0 };

	dl_iterate_phdr(find_cb, &q);
	return q.found ? 0 : -1;
}
