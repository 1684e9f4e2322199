/* SPDX-License-Identifier: MIT */
/*
 * postmortem.h - what a core dump of a .NET process says: the faulting
 * thread and the managed exception on it, every managed thread's stack, the
 * GC heap by type and the retention path of an object or type to a root.
 * Read through the runtime's DAC (lib/dac) over the core file (lib/core);
 * docs/internals/postmortem.md.
 */
#ifndef CLRTAP_POSTMORTEM_POSTMORTEM_H
#define CLRTAP_POSTMORTEM_POSTMORTEM_H

#include "common/compat.h"

#include "common/strbuf.h"

#define PM_MAX_FRAMES 4096      /* managed frames kept a thread */
#define PM_MAX_THREADS 20000
#define PM_MAX_INNER 8          /* inner exceptions followed */
#define PM_MAX_OBJECTS (200u * 1000 * 1000)
#define PM_MAX_SEGMENTS 200000
#define PM_NAME_MAX 1024
#define PM_MAX_NATIVE 32        /* native frames followed by frame pointer a thread */

struct pm_priv;

struct pm_frame {
	uint64_t ip, sp;
	char *name;             /* "Ns.Type::Method" as the runtime names it; NULL: unknown method */
	bool runtime;           /* a runtime transition frame */
};

struct pm_exception {
	char *type, *message;   /* message NULL: none */
	uint64_t obj;
	int32_t hresult;
	char **frames;          /* where it was thrown, throwing method first */
	size_t nframes;
	bool frames_read;       /* its stack trace was found and parsed */
	bool never_thrown;      /* it has no stack trace at all (an inner exception made, not thrown) */
	struct pm_exception *inner;
};

struct pm_thread {
	uint32_t os_tid, managed_id;
	int signo;              /* from the dump: the signal this thread took (0 none) */
	bool in_dump;           /* the dump has its registers */
	uint64_t ip;            /* its native instruction pointer (0: not in the dump) */
	char native_at[PM_NAME_MAX]; /* "libc.so.6+0x9ee2" or "" */
	/*
	 * The native frames above the managed ones, leaf first (after the
	 * instruction pointer): return addresses found by following the frame
	 * pointer chain from rbp, each "file+0xoffset" (no symbol file is opened).
	 * A library built without frame pointers hides its caller: a partial list.
	 */
	char **native;
	size_t nnative;
	struct pm_frame *frames;
	size_t nframes;
	bool frames_cut;        /* more than PM_MAX_FRAMES */
	struct pm_exception *exc; /* the last exception thrown on it */
};

struct pm_type {
	char *name;
	uint64_t mt, count, bytes;
	uint32_t base_size, component_size;
	bool contains_pointers;
};

struct pm_object {
	uint64_t addr, size;
	uint32_t type;          /* index into types */
};

struct pm_report {
	int pid;
	char comm[17];
	int signo, si_code;
	uint64_t fault_addr;
	size_t faulting;        /* index into threads, SIZE_MAX: no managed thread took the signal */
	int fault_tid;          /* the thread that took the signal (0: none in the dump) */
	size_t native_threads;  /* threads in the dump */
	char runtime[64];
	char dac[PATH_MAX];
	const char *dac_how;
	char build_id[41];
	struct pm_thread *threads;
	size_t nthreads;
	/* heap (pm_heap) */
	bool heap_read;
	char heap_note[256];    /* why the heap is missing or partial */
	struct pm_type *types;  /* sorted by bytes, descending */
	size_t ntypes;
	struct pm_object *objects; /* by address */
	size_t nobjects;
	uint64_t heap_bytes;
	uint64_t segments, segments_cut; /* walked; stopped early at a bad object */
	uint64_t failed_reads;  /* reads the DAC asked for that the dump did not hold */
	struct pm_priv *priv;   /* the open dump and DAC */
};

struct pm_opts {
	const char *dac;        /* --dac */
	bool heap;              /* walk the GC heap */
};

/*
 * Opens the dump, finds and loads the DAC, reads threads, stacks,
 * exceptions (and the heap when asked). -EBADMSG/-EINVAL: the file is not a
 * usable core (bad input); -ENODATA: no .NET runtime in it; -ENOPKG: no
 * matching DAC; -EPROTO: the DAC could not read it. why: one line.
 */
int pm_open(const char *path, const struct pm_opts *o, struct pm_report **out, char *why,
	    size_t whylen);
void pm_free(struct pm_report *r);

/* Retention path of the instances of a type (by name) or of one object (by address). */
struct pm_path_result {
	char target[PM_NAME_MAX];
	uint64_t instances, reached;
	char **paths;           /* "[static variable Keep.Holder.Items] Keep.Item[] -> Keep.Item" ... */
	uint64_t *counts;
	size_t npaths;
	char note[256];         /* what could not be resolved (static names before .NET 9) */
};
int pm_root(struct pm_report *r, const char *what, struct pm_path_result *out, char *why,
	    size_t whylen);
void pm_path_result_free(struct pm_path_result *p);

/*
 * Pending async state machines and what they await (the dumpasync job):
 * lib/heap/async.c's chains over the dump's heap graph (kept by r: the
 * chains name frames with its type names). Free with heap_async_free()
 * before pm_free(r).
 */
struct heap_async;
int pm_async(struct pm_report *r, struct heap_async **out, char *why, size_t whylen);

/* The whole report (root and as may be NULL) as one JSON object (docs/cmd/dump.md; lib/postmortem/json.c). */
struct ct_json;
void pm_report_json(struct ct_json *j, const char *file, const struct pm_report *r,
		    const struct pm_path_result *root, const struct heap_async *as);
/* A signal's name ("SIGSEGV"), or "signal". */
const char *pm_signame(int s);
/* The largest n objects that are not Free (pointers into r->objects), biggest first. */
#define PM_TOP_LARGEST 10
size_t pm_largest(const struct pm_report *r, const struct pm_object **out, size_t n);

#endif
