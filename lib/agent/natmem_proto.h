/* SPDX-License-Identifier: MIT */
/*
 * natmem_proto.h - the memory layout of the profiler's native-allocation
 * tables, which clrtap reads from the target through /proc/PID/mem (the
 * NativeMemory event gives the address). Plain C types only: the profiler
 * (glibc and musl builds) and clrtap include it. docs/internals/natmem.md.
 *
 * One anonymous mapping: header, GOT slot list, the live table (sampled
 * allocations not freed yet), the ring (every sampled allocation, in
 * order), the counting filter (which pointers may be in the live table).
 */
#ifndef CLRTAP_AGENT_NATMEM_PROTO_H
#define CLRTAP_AGENT_NATMEM_PROTO_H

#include <stdint.h>

#define NM_MAGIC 0x31304d4e50415443ull /* "CTAPNM01" little-endian */
#define NM_VERSION 1
#define NM_FRAMES 24       /* return addresses kept per sample, leaf first */
#define NM_LIVE_SLOTS 8192 /* power of 2 */
#define NM_RING 4096       /* power of 2 */
#define NM_PROBES 16       /* live-table probe limit: past it, overflow */
#define NM_FILTER 65536    /* one byte counter per pointer-hash bucket */
#define NM_MAX_GOT 1024    /* GOT slots patched at once */
#define NM_MAX_MODULES 256
#define NM_DEFAULT_INTERVAL (512u * 1024u) /* mean bytes between samples */

/* Which function a slot or a sample went through. */
enum nm_fn { NM_MALLOC = 1, NM_CALLOC, NM_REALLOC, NM_FREE, NM_POSIX_MEMALIGN,
	     NM_ALIGNED_ALLOC, NM_MEMALIGN, NM_NFN };

/* States in nm_header.state. */
#define NM_ST_INSTALLED 1
#define NM_ST_RESTORED 2

/*
 * A sample. Written by the allocating thread: seq is set to 0 first, then
 * the fields, then seq and seq2 to the sample's number; a reader keeps an
 * entry only when both agree (a torn read is dropped, and counted).
 */
struct nm_sample {
	uint64_t seq;
	uint64_t ptr;
	uint64_t size;
	uint32_t nframes;
	uint32_t fn;
	uint64_t frames[NM_FRAMES];
	uint64_t seq2;
};

/* A live-table entry: key is the pointer (0 empty, 1 removed). */
struct nm_live {
	uint64_t key;
	struct nm_sample s;
};

struct nm_got {
	uint64_t addr;  /* the slot */
	uint64_t orig;  /* what it held before */
	uint64_t hook;  /* what clrtap's hook wrote */
	uint32_t fn;    /* enum nm_fn */
	uint32_t module;
};

struct nm_header {
	uint64_t magic;
	uint32_t version, frames_max;
	uint32_t live_slots, ring_size;
	uint64_t interval;      /* mean bytes between samples */
	uint64_t state;         /* NM_ST_* */
	uint64_t samples;       /* sampled allocations (the ring's head) */
	uint64_t sampled_bytes; /* their requested bytes */
	uint64_t live;          /* entries in the live table */
	uint64_t overflow;      /* sampled allocations the live table had no room for */
	uint64_t frees;         /* frees (and reallocs) of sampled pointers */
	uint64_t walk_refused;  /* stack reads the kernel refused (the walk stopped there) */
	uint64_t stackless;     /* samples taken while another thread held the walk (pipe fallback) */
	uint32_t got_used;      /* entries in got[] */
	uint32_t got_restored;  /* slots put back at the end */
	uint32_t got_gone;      /* slots not put back: their module was unloaded or rewrote them */
	uint32_t modules;       /* modules with at least one slot patched */
	uint32_t modules_other; /* modules whose malloc is not the process's (left alone) */
	uint32_t scans;         /* module scans (libraries loaded later are patched then) */
	uint32_t read_method;   /* 1 process_vm_readv, 2 pipe */
	uint32_t pad;
	struct nm_got got[NM_MAX_GOT];
};

/* Offsets inside the mapping. */
#define NM_OFF_LIVE (((sizeof(struct nm_header)) + 4095) & ~(uint64_t)4095)
#define NM_OFF_RING (NM_OFF_LIVE + (uint64_t)NM_LIVE_SLOTS * sizeof(struct nm_live))
#define NM_OFF_FILTER (NM_OFF_RING + (uint64_t)NM_RING * sizeof(struct nm_sample))
#define NM_MAP_BYTES ((NM_OFF_FILTER + NM_FILTER + 4095) & ~(uint64_t)4095)

#endif
