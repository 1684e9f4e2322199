/* SPDX-License-Identifier: MIT */
/*
 * natmem.c - sampled native allocations by stack (docs/internals/natmem.md).
 *
 * The profiler thread rewrites the GOT slots of malloc, calloc, realloc,
 * free, posix_memalign, aligned_alloc and memalign in every loaded module
 * (not libc, not the loader, not this library; data pages only, no code is
 * patched) to point at the hooks below, and puts every slot back before it
 * detaches. The hooks call the real functions (this library's own imports),
 * count bytes against a Poisson countdown, and for a sampled allocation
 * walk the frame-pointer chain through the kernel (a refused read ends the
 * walk; nothing is dereferenced directly) into one fixed mapping: a live
 * table (forgotten on free) and a ring of every sample. clrtap reads both
 * through /proc/PID/mem. No malloc, no lock, no runtime call in a hook.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/natmem_proto.h"
#include "internal.h"

static struct nm_header *g_h;     /* the mapping (kept for the image's life) */
static atomic_int g_on;           /* hooks sample (0: straight to the real function) */
static uint64_t g_interval = NM_DEFAULT_INTERVAL;
/*
 * Byte countdowns, one per shard of threads (a hash of the stack address:
 * thread stacks lie far apart), each on its own cache line and updated
 * with a plain load and store: no locked instruction on the fast path (a
 * locked add cost ~30 ns a call here). Each shard is its own Poisson
 * process with the same mean, so together they sample every byte at the
 * same rate. Two threads of one shard racing can lose an update: counted
 * bytes then run slightly short (a small undercount under heavy
 * same-shard contention, stated in docs/internals/natmem.md).
 */
#define NM_SHARDS 64
static struct {
	_Atomic int64_t left;
	char pad[56];
} g_countdown[NM_SHARDS] __attribute__((aligned(64)));
static _Atomic uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static int g_pipe[2] = { -1, -1 };
static atomic_int g_pipe_busy;
static atomic_int g_use_pipe;
static uintptr_t g_modbase[NM_MAX_MODULES];
static int g_nmod;

#define A_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define A_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

static inline struct nm_live *live_tab(void)
{
	return (struct nm_live *)((char *)g_h + NM_OFF_LIVE);
}

static inline struct nm_sample *ring_tab(void)
{
	return (struct nm_sample *)((char *)g_h + NM_OFF_RING);
}

static inline uint8_t *filter_tab(void)
{
	return (uint8_t *)g_h + NM_OFF_FILTER;
}

static inline uint64_t ptr_hash(uint64_t p)
{
	return (p >> 4) * 0x9e3779b97f4a7c15ull;
}

/* ln(x) for x in (0, 1], without libm: exponent bits plus an atanh series
 * on the mantissa (error below 1e-6, plenty for drawing intervals). */
static double nm_ln(double x)
{
	union {
		double d;
		uint64_t u;
	} v = { x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double t, t2;

	v.u = (v.u & ((1ull << 52) - 1)) | (1023ull << 52);
	t = (v.d - 1) / (v.d + 1);
	t2 = t * t;
	return 2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 / 9)))) +
	       e * 0.6931471805599453;
}

/* An exponentially distributed interval with mean g_interval. */
static int64_t draw(void)
{
	uint64_t x = A_LOAD(&g_rng), d;
	double u, iv;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	__atomic_store_n(&g_rng, x, __ATOMIC_RELAXED); /* races only mix the stream */
	u = (double)((x >> 11) + 1) / 9007199254740992.0; /* (0, 1] */
	iv = -nm_ln(u) * (double)g_interval;
	d = iv < 1 ? 1 : iv > 64.0 * (double)g_interval ? 64 * g_interval : (uint64_t)iv;
	return (int64_t)d;
}

/* Reads 16 bytes at addr through the kernel: an unmapped or protected
 * address is refused, never faulted on. */
static int safe_read16(uint64_t addr, uint64_t out[2])
{
	struct iovec l = { out, 16 }, r = { (void *)(uintptr_t)addr, 16 };

	if (!atomic_load_explicit(&g_use_pipe, memory_order_relaxed)) {
		long n = syscall(SYS_process_vm_readv, (long)getpid(), &l, 1L, &r, 1L, 0L);

		if (n == 16)
			return 0;
		if (n < 0 && (errno == EPERM || errno == ENOSYS) && g_pipe[0] >= 0)
			atomic_store(&g_use_pipe, 1); /* seccomp: the pipe from now on */
		else
			return -1;
	}
	/* write() copies from our memory in the kernel (EFAULT if unreadable);
	 * the caller holds g_pipe_busy, so the bytes read back are these. */
	if (write(g_pipe[1], (void *)(uintptr_t)addr, 16) != 16)
		return -1;
	return read(g_pipe[0], out, 16) == 16 ? 0 : -1;
}

/* Frame-pointer walk from the hook's own frame: fp[0] the caller's frame,
 * fp[1] the return address. Bounded: NM_FRAMES, frames growing upward by
 * less than 1 MiB each. */
static uint32_t walk(uint64_t fp, uint64_t *frames)
{
	uint32_t n = 0;
	int pipe_held = 0;

	if (atomic_load_explicit(&g_use_pipe, memory_order_relaxed)) {
		int z = 0;

		if (!atomic_compare_exchange_strong(&g_pipe_busy, &z, 1)) {
			A_ADD(&g_h->stackless, 1);
			return 0;
		}
		pipe_held = 1;
	}
	while (n < NM_FRAMES && fp && !(fp & 7)) {
		uint64_t w[2];

		if (safe_read16(fp, w)) {
			A_ADD(&g_h->walk_refused, 1);
			break;
		}
		if (w[1] < 4096)
			break;
		frames[n++] = w[1];
		if (w[0] <= fp || w[0] - fp > (1u << 20))
			break;
		fp = w[0];
	}
	if (pipe_held)
		atomic_store(&g_pipe_busy, 0);
	return n;
}

static void fill(struct nm_sample *s, uint64_t seq, uint64_t p, uint64_t size, int fn,
		 const uint64_t *frames, uint32_t n)
{
	__atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq2, 0, __ATOMIC_RELEASE);
	s->ptr = p;
	s->size = size;
	s->fn = (uint32_t)fn;
	s->nframes = n;
	memcpy(s->frames, frames, n * sizeof(frames[0]));
	__atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
	__atomic_store_n(&s->seq2, seq, __ATOMIC_RELEASE);
}

static void record(void *p, size_t size, int fn, uint64_t fp)
{
	uint64_t frames[NM_FRAMES], seq, h, mask = NM_LIVE_SLOTS - 1;
	struct nm_live *lt = live_tab();
	uint32_t n;
	int saved = errno;

	n = walk(fp, frames);
	seq = A_ADD(&g_h->samples, 1) + 1;
	A_ADD(&g_h->sampled_bytes, size);
	fill(&ring_tab()[(seq - 1) & (NM_RING - 1)], seq, (uint64_t)(uintptr_t)p, size, fn,
	     frames, n);
	h = ptr_hash((uint64_t)(uintptr_t)p);
	for (int i = 0; i < NM_PROBES; i++) {
		struct nm_live *e = &lt[(h + (uint64_t)i) & mask];
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

		if ((k == 0 || k == 1) &&
		    __atomic_compare_exchange_n(&e->key, &k, (uint64_t)(uintptr_t)p, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			fill(&e->s, seq, (uint64_t)(uintptr_t)p, size, fn, frames, n);
			A_ADD(&filter_tab()[h >> 48], 1);
			A_ADD(&g_h->live, 1);
			errno = saved;
			return;
		}
	}
	A_ADD(&g_h->overflow, 1);
	errno = saved;
}

/* Counts size bytes; the allocation that crosses its shard's countdown is sampled. */
static inline void account(void *p, size_t size, int fn, uint64_t fp)
{
	_Atomic int64_t *c;
	int64_t left;

	if (!p || !atomic_load_explicit(&g_on, memory_order_relaxed))
		return;
	c = &g_countdown[((fp >> 16) * 0x9e3779b97f4a7c15ull) >> 58].left;
	left = atomic_load_explicit(c, memory_order_relaxed) - (int64_t)size;
	if (left > 0) {
		atomic_store_explicit(c, left, memory_order_relaxed);
		return;
	}
	/* crossed: this allocation is sampled; the next point is drawn (as many
	 * intervals as it takes to get past this allocation's bytes) */
	for (int k = 0; k < 256 && left <= 0; k++)
		left += draw();
	atomic_store_explicit(c, left, memory_order_relaxed);
	record(p, size, fn, fp);
}

/* Forgets a sampled pointer. Cheap for the others: one filter byte. */
static inline void forget(void *p)
{
	uint64_t h, mask = NM_LIVE_SLOTS - 1, key = (uint64_t)(uintptr_t)p;
	struct nm_live *lt;

	if (!p || !g_h || !A_LOAD(&g_h->live))
		return;
	h = ptr_hash(key);
	if (!A_LOAD(&filter_tab()[h >> 48]))
		return;
	lt = live_tab();
	for (int i = 0; i < NM_PROBES; i++) {
		struct nm_live *e = &lt[(h + (uint64_t)i) & mask];
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

		if (k == 0)
			return;
		if (k == key && __atomic_compare_exchange_n(&e->key, &k, 1, 0, __ATOMIC_ACQ_REL,
							     __ATOMIC_RELAXED)) {
			__atomic_store_n(&e->s.seq2, 0, __ATOMIC_RELEASE);
			__atomic_fetch_sub(&filter_tab()[h >> 48], 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&g_h->live, 1, __ATOMIC_RELAXED);
			A_ADD(&g_h->frees, 1);
			return;
		}
	}
}

#define FP() ((uint64_t)(uintptr_t)__builtin_frame_address(0))

static void *h_malloc(size_t n)
{
	void *p = malloc(n);

	account(p, n, NM_MALLOC, FP());
	return p;
}

static void *h_calloc(size_t a, size_t b)
{
	void *p = calloc(a, b);

	account(p, a * b, NM_CALLOC, FP());
	return p;
}

static void *h_realloc(void *old, size_t n)
{
	void *p;

	if (old && atomic_load_explicit(&g_on, memory_order_relaxed))
		forget(old);
	p = realloc(old, n);
	account(p, n, NM_REALLOC, FP());
	return p;
}

static void h_free(void *p)
{
	if (p && atomic_load_explicit(&g_on, memory_order_relaxed))
		forget(p);
	free(p);
}

static int h_posix_memalign(void **out, size_t al, size_t n)
{
	int r = posix_memalign(out, al, n);

	if (r == 0)
		account(*out, n, NM_POSIX_MEMALIGN, FP());
	return r;
}

static void *h_aligned_alloc(size_t al, size_t n)
{
	void *p = aligned_alloc(al, n);

	account(p, n, NM_ALIGNED_ALLOC, FP());
	return p;
}

void *memalign(size_t al, size_t n); /* glibc and musl both have it */

static void *h_memalign(size_t al, size_t n)
{
	void *p = memalign(al, n);

	account(p, n, NM_MEMALIGN, FP());
	return p;
}

static const struct {
	const char *name;
	int fn;
	void *hook, *real;
} g_fns[] = {
	{ "malloc", NM_MALLOC, (void *)h_malloc, (void *)malloc },
	{ "calloc", NM_CALLOC, (void *)h_calloc, (void *)calloc },
	{ "realloc", NM_REALLOC, (void *)h_realloc, (void *)realloc },
	{ "free", NM_FREE, (void *)h_free, (void *)free },
	{ "posix_memalign", NM_POSIX_MEMALIGN, (void *)h_posix_memalign, (void *)posix_memalign },
	{ "aligned_alloc", NM_ALIGNED_ALLOC, (void *)h_aligned_alloc, (void *)aligned_alloc },
	{ "memalign", NM_MEMALIGN, (void *)h_memalign, (void *)memalign },
};
#define NFNS (sizeof(g_fns) / sizeof(g_fns[0]))

/* ------------------------------------------------------- GOT patching */

/* Dynamic-section pointers: glibc relocates them in memory, musl does not. */
static uintptr_t dptr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

static int skip_name(const char *name)
{
	const char *b = strrchr(name, '/');

	b = b ? b + 1 : name;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc.musl", 9) ||
	       !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7) ||
	       !strncmp(b, "linux-vdso", 10) || !strncmp(b, "clrtap-profiler-", 16) ||
	       !strncmp(b, "libclrtap-profiler", 18);
}

static int own_module(const struct dl_phdr_info *info)
{
	uintptr_t me = (uintptr_t)&h_malloc;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* Writes v into slot, through mprotect when the slot lies in RELRO. */
static int slot_write(uintptr_t slot, uint64_t v, uintptr_t ro_lo, uintptr_t ro_hi)
{
	uintptr_t pg = slot & ~(uintptr_t)4095;
	int ro = slot >= ro_lo && slot < ro_hi;

	if (ro && mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE))
		return -1;
	__atomic_store_n((uint64_t *)slot, v, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)pg, 4096, PROT_READ);
	return 0;
}

struct scan_ctx {
	int restore;
};

static int scan_one(struct dl_phdr_info *info, size_t sz, void *arg)
{
	const struct scan_ctx *c = arg;
	uintptr_t base = info->dlpi_addr, ro_lo = 0, ro_hi = 0, lo = UINTPTR_MAX, hi = 0;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Rela) *rel[2] = { 0 };
	size_t relsz[2] = { 0 };
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	int m, patched = 0, other = 0;

	(void)sz;
	if (skip_name(info->dlpi_name ? info->dlpi_name : "") || own_module(info))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			ro_lo = base + ph->p_vaddr;
			ro_hi = ro_lo + ph->p_memsz;
		} else if (ph->p_type == PT_LOAD) {
			if (base + ph->p_vaddr < lo)
				lo = base + ph->p_vaddr;
			if (base + ph->p_vaddr + ph->p_memsz > hi)
				hi = base + ph->p_vaddr + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	for (m = 0; m < g_nmod; m++)
		if (g_modbase[m] == base)
			break;
	if (!c->restore && m < g_nmod)
		return 0; /* patched at an earlier scan */
	if (c->restore) {
		/* Only slots of modules still loaded, and only where our hook
		 * still is: an unloaded module's memory is never written. */
		for (uint32_t i = 0; i < g_h->got_used; i++) {
			struct nm_got *g = &g_h->got[i];

			if (g->addr < lo || g->addr >= hi || g->addr + 8 > hi)
				continue;
			if (__atomic_load_n((uint64_t *)(uintptr_t)g->addr, __ATOMIC_ACQUIRE) != g->hook)
				continue;
			if (!slot_write((uintptr_t)g->addr, g->orig, ro_lo, ro_hi)) {
				g->hook = 0; /* done */
				g_h->got_restored++;
			}
		}
		return 0;
	}
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_JMPREL: rel[0] = (const ElfW(Rela) *)dptr(base, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: relsz[0] = d->d_un.d_val; break;
		case DT_RELA: rel[1] = (const ElfW(Rela) *)dptr(base, d->d_un.d_ptr); break;
		case DT_RELASZ: relsz[1] = d->d_un.d_val; break;
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dptr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dptr(base, d->d_un.d_ptr); break;
		default: break;
		}
	}
	if (!symtab || !strtab || g_nmod >= NM_MAX_MODULES)
		return 0;
	for (int t = 0; t < 2; t++) {
		for (size_t k = 0; rel[t] && k < relsz[t] / sizeof(ElfW(Rela)); k++) {
			const ElfW(Rela) *r = &rel[t][k];
			uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
			const ElfW(Sym) *s;
			uintptr_t slot;
			uint64_t cur;

			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			s = &symtab[ELF64_R_SYM(r->r_info)];
			if (s->st_shndx != SHN_UNDEF || !s->st_name)
				continue;
			for (size_t f = 0; f < NFNS; f++) {
				if (strcmp(strtab + s->st_name, g_fns[f].name))
					continue;
				slot = base + r->r_offset;
				cur = __atomic_load_n((uint64_t *)slot, __ATOMIC_ACQUIRE);
				/* the process's function, or a lazy-binding stub of this
				 * module; anything else is another allocator: left alone */
				if (cur != (uint64_t)(uintptr_t)g_fns[f].real && !(cur >= lo && cur < hi)) {
					other = 1;
					break;
				}
				if (g_h->got_used >= NM_MAX_GOT)
					break;
				g_h->got[g_h->got_used] = (struct nm_got){
					slot, cur, (uint64_t)(uintptr_t)g_fns[f].hook, (uint32_t)g_fns[f].fn,
					(uint32_t)g_nmod
				};
				if (!slot_write(slot, (uint64_t)(uintptr_t)g_fns[f].hook, ro_lo, ro_hi)) {
					g_h->got_used++;
					patched = 1;
				}
				break;
			}
		}
	}
	g_modbase[g_nmod++] = base;
	g_h->modules += (uint32_t)patched;
	g_h->modules_other += (uint32_t)other;
	return 0;
}

/* ------------------------------------------------------------- control */

static int g_want;

void natmem_reset(void)
{
	g_want = 0;
	g_interval = NM_DEFAULT_INTERVAL;
}

void natmem_config(uint64_t interval)
{
	g_want = 1;
	if (interval >= 1024 && interval <= (1ull << 34))
		g_interval = interval;
}

int natmem_wanted(void)
{
	return g_want;
}

uint64_t natmem_table(void)
{
	return (uint64_t)(uintptr_t)g_h;
}

/* From the profiler thread: map (or reuse) the tables, patch every module. */
int natmem_install(void)
{
	struct scan_ctx c = { 0 };
	uint64_t probe[2], here[2] = { 1, 2 };

	if (!g_h) {
		void *m = mmap(NULL, NM_MAP_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return -errno;
		g_h = m;
	}
	memset(g_h, 0, sizeof(*g_h)); /* the tables are zero: fresh, or dropped at the end */
	g_h->magic = NM_MAGIC;
	g_h->version = NM_VERSION;
	g_h->frames_max = NM_FRAMES;
	g_h->live_slots = NM_LIVE_SLOTS;
	g_h->ring_size = NM_RING;
	g_h->interval = g_interval;
	g_h->read_method = 1;
	/* Can the kernel read our own stack for us? If not (seccomp), a pipe. */
	if (safe_read16((uint64_t)(uintptr_t)here, probe) || probe[0] != 1) {
		if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK))
			g_pipe[0] = g_pipe[1] = -1;
		atomic_store(&g_use_pipe, 1);
		g_h->read_method = 2;
	}
	g_nmod = 0;
	for (int i = 0; i < NM_SHARDS; i++)
		atomic_store(&g_countdown[i].left, draw());
	atomic_store(&g_on, 1);
	dl_iterate_phdr(scan_one, &c);
	g_h->scans = 1;
	__atomic_store_n(&g_h->state, NM_ST_INSTALLED, __ATOMIC_RELEASE);
	return 0;
}

/* Libraries loaded since: patched at the next scan. */
void natmem_rescan(void)
{
	struct scan_ctx c = { 0 };

	if (!g_h || g_h->state != NM_ST_INSTALLED)
		return;
	dl_iterate_phdr(scan_one, &c);
	g_h->scans++;
}

/* Every slot back (under the loader's lock, so no module goes away
 * meanwhile), sampling off, the tables' memory given back. */
void natmem_uninstall(void)
{
	struct scan_ctx c = { 1 };

	if (!g_h || g_h->state != NM_ST_INSTALLED)
		return;
	atomic_store(&g_on, 0);
	dl_iterate_phdr(scan_one, &c);
	g_h->got_gone = g_h->got_used - g_h->got_restored;
	__atomic_store_n(&g_h->state, NM_ST_RESTORED, __ATOMIC_RELEASE);
	/* a hook still running reads zeros (an empty table) from here on */
	madvise((char *)g_h + NM_OFF_LIVE, NM_MAP_BYTES - NM_OFF_LIVE, MADV_DONTNEED);
}
