/* SPDX-License-Identifier: MIT */
/*
 * session.c - a probe session: perf events on the code of the chosen
 * methods, decoding of what they report, and tier following.
 *
 * - ReadyToRun code: a uprobe (uprobe PMU: config1 = path through
 *   /proc/PID/root, config2 = file offset) on the entry and on every `ret`.
 * - JIT'd code: hardware execute breakpoints (PERF_TYPE_BREAKPOINT,
 *   HW_BREAKPOINT_X); the CPU has 4 per thread, shared by all methods of the
 *   session, so entries of the newest code versions come first, then their
 *   `ret` sites, then older versions.
 * - Uprobes are per CPU (pid -1, cpu N: one event per CPU and site, however
 *   many threads the target has, threads born later included), redirected
 *   (PERF_EVENT_IOC_SET_OUTPUT) to one ring per CPU owned by a dummy event; a
 *   sample is kept only when its pid is the target's. Per-thread uprobe
 *   events made attach and detach grow with the threads: each is a uprobe
 *   consumer of its own, run on every hit, and closing one waits for an SRCU
 *   grace period (500 threads: 40 s to detach, 84 s to attach while starved;
 *   issue 16). The cost: a CPU-wide uprobe is in every process that maps
 *   the image, so another .NET process running the same CoreLib method takes
 *   the trap too (its hits are dropped, counted and said). Where the kernel
 *   refuses CPU-wide events (perf_event_paranoid > 0 without CAP_PERFMON),
 *   uprobes are one event per thread on every CPU (cpu -1), writing to a ring
 *   per thread; they cannot be inherited (see open_one): new threads get
 *   theirs when their PERF_RECORD_FORK is read.
 * - Breakpoints stay per (thread, CPU) with inherit=1 (threads created later
 *   get them; an inherited per-thread event cannot be mmap'd with cpu == -1),
 *   redirected to the per-CPU rings. They are cheap to open and close (509
 *   threads x 2 CPUs: 10 ms to attach, 22 ms to detach), and a CPU-wide
 *   breakpoint would take a debug register from every task on the machine:
 *   the kernel counts it against any task's 4, and refuses it (ENOSPC) when
 *   any task, a debugger's or another clrtap's, already uses 4.
 * - No uretprobes: they rewrite the return address, and the runtime's stack
 *   walker (GC, exceptions) would meet a trampoline. Returns are `ret`
 *   instructions found by disassembling the code (capstone), matched to
 *   entries per thread by rsp (both point at the same return address slot).
 *   A method that leaves by a tail call (`jmp` out) has no visible return.
 * - Floating-point registers are not in perf's user registers (only PEBS
 *   events sample XMM), so float/double arguments and returns print as "?".
 */
#include "common/compat.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <poll.h>
#include <time.h>

#include <capstone/capstone.h>
#include <linux/hw_breakpoint.h>
#include <asm/perf_regs.h>

#include "common/log.h"
#include "common/strparse.h"
#include "common/utf16.h"
#include "perf/perf.h"
#include "probe/probe.h"

#define HW_SLOTS 4
#define MAX_TIDS 4096
#define MAX_SITES 256
#define RING_PAGES_LOG2 7  /* 512 KiB per CPU */
#define TRING_PAGES_LOG2 4 /* 64 KiB per thread with uprobes */
#define STACK_DUMP 512     /* return address, stack arguments, a Tier0 frame */
#define MAX_STACK_FRAMES 16
#define HOLD_NS 2000000ull /* samples younger than this wait for the other rings */

/* register indexes in the sample (order of the bits of REG_MASK) */
enum { R_AX, R_CX, R_DX, R_SI, R_DI, R_BP, R_SP, R_IP, R_R8, R_R9, R_N };
#define REG_MASK                                                                         \
	((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_CX) | (1ull << PERF_REG_X86_DX) |  \
	 (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) | (1ull << PERF_REG_X86_BP) |  \
	 (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) | (1ull << PERF_REG_X86_R8) |  \
	 (1ull << PERF_REG_X86_R9))
static const int gpr_args[6] = { R_DI, R_SI, R_DX, R_CX, R_R8, R_R9 };

/*
 * SITE_RETADDR: the instruction after a call of the method, learned from the
 * return address at entry; used when the method can leave by a tail call.
 * There rsp is the entry rsp + 8 and rax holds the return value.
 */
/*
 * SITE_FLOATS: the instruction after the prolog stored the floating-point
 * argument registers to the frame (Tier0/MinOpts code homes them); the
 * values are read there from the sampled stack.
 */
enum site_kind { SITE_ENTRY, SITE_RET, SITE_RETADDR, SITE_FLOATS };
#define MAX_RETADDR 8

struct site {
	size_t mi, vi;
	enum site_kind kind;
	uint64_t addr;     /* live address */
	uint64_t file_off; /* uprobe: file offset */
	const char *path;  /* uprobe: file, as clrtap opens it */
	bool uprobe;
	bool want, armed;
	int *fds;
	size_t nfds;
};

struct ev {
	bool consumed;
	int nfloat;                    /* float arguments (entry: placeholders in text) */
	size_t fpos[PROBE_MAX_ARGS];   /* entry: offset of each float's "?" in text */
	double fval[PROBE_MAX_ARGS];   /* floats: values read at the FLOATS site */
	uint64_t mono;
	uint32_t tid;
	size_t site;
	uint64_t rsp;
	char *text; /* args (entry) or return value (ret) */
	char *stack;
	int64_t num[PROBE_MAX_ARGS];
	bool valid[PROBE_MAX_ARGS];
};

struct pending {
	uint32_t tid;
	uint64_t rsp;
	struct ev e;
};

struct fhome {
	int base;     /* R_BP or R_SP */
	int64_t disp;
	unsigned size; /* 4 or 8 */
	bool found;
};

struct vstate {
	struct probe_version_stats st;
	struct fhome fh[8]; /* xmm0..7 homes */
	int nfloat;         /* float arguments of the method (in xmm0..) */
	bool sites_made;
	bool ret_known; /* ret sites decoded */
};

struct probe_session {
	struct probe_proc *pp;
	struct probe_method **m;
	size_t n;
	struct probe_session_opts o;
	probe_call_fn on_call;
	probe_note_fn on_note;
	void *ctx;
	int ncpu;
	int *ring_owner;
	struct perf_ring *rings;
	struct tring {
		uint32_t tid;
		struct perf_ring ring;
	} *trings;               /* one ring per thread for uprobe events (cpu -1) */
	size_t ntrings;
	struct perf_event_attr tmpl;
	int uprobe_type;
	struct site sites[MAX_SITES];
	size_t nsites;
	struct vstate (*vs)[PROBE_MAX_VERSIONS];
	uint32_t tids[MAX_TIDS];
	size_t ntids;
	struct ev *q;
	size_t nq, qcap;
	struct pending *pend;
	size_t npend, pcap;
	int64_t real_off;
	uint64_t start_mono;
	csh cs;
	bool cs_ok;
	bool need_rearm;
	int *watch_fds;          /* dummy task events (inherit) reporting new threads */
	size_t nwatch;
	uint32_t watched[MAX_TIDS];
	size_t nwatched;
	uint32_t newtids[256];   /* threads born since the last poll (uprobes to open) */
	size_t nnew;
	uint64_t late_threads;   /* threads armed after they started (uprobes) */
	int ino_fd;              /* inotify on the perf map: wake when the runtime writes */
	bool ino_watching;       /* either of: */
	bool ino_map, ino_jd;    /* the perf map watched, the jitdump file watched */
	bool retaddr_unseen;     /* said once: a return site clrtap cannot watch */
	/* per-CPU events (pid -1) for uprobes / breakpoints, else per thread */
	bool cpuwide[2];
	bool scope_said;
	uint64_t foreign;        /* hits of per-CPU events in other processes (dropped) */
	/* probe_session_hand_over: 1 + the versions method mi had then (0: not handed) */
	size_t handed_from[64];
};

enum { SCOPE_HW = 0, SCOPE_UP = 1 };

static uint64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note(struct probe_session *s, enum probe_note_kind k, const char *fmt, ...) PRINTF(3, 4);
static void note(struct probe_session *s, enum probe_note_kind k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (s->on_note)
		s->on_note(s->ctx, k, buf);
}

/*
 * capstone, loaded when a session needs it: its 77,000 relocations were
 * most of clrtap's start-up time in the dynamic loader (about 25 ms of CPU of
 * 35), which a profile or top on a saturated machine paid at the starved
 * priority it starts with, before it can raise its own (issue 16). The
 * soname is the one the header describes (same ABI).
 */
#define CT_STR2(x) #x
#define CT_STR(x) CT_STR2(x)
static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
} capi;

static bool capi_load(void)
{
	static int state; /* 0: not tried, 1: loaded, -1: not available */
	void *h;

	if (state)
		return state > 0;
	state = -1;
	h = dlopen("libcapstone.so." CT_STR(CS_API_MAJOR), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		ct_debug("probe: %s", dlerror());
		return false;
	}
	*(void **)&capi.open = dlsym(h, "cs_open");
	*(void **)&capi.option = dlsym(h, "cs_option");
	*(void **)&capi.disasm = dlsym(h, "cs_disasm");
	*(void **)&capi.free = dlsym(h, "cs_free");
	*(void **)&capi.close = dlsym(h, "cs_close");
	if (!capi.open || !capi.option || !capi.disasm || !capi.free || !capi.close)
		return false; /* the handle stays: nothing to gain from closing it */
	state = 1;
	return true;
}

/* ---- threads ---- */

static int read_tids(struct probe_session *s)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)probe_proc_pid(s->pp));
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	s->ntids = 0;
	while ((de = readdir(d)) && s->ntids < MAX_TIDS) {
		uint32_t tid;

		if (de->d_name[0] == '.' || ct_parse_u32(de->d_name, 10, &tid))
			continue;
		s->tids[s->ntids++] = tid;
	}
	closedir(d);
	return s->ntids ? 0 : -ESRCH;
}

/* ---- code decoding ---- */

static int add_site_path(struct probe_session *s, size_t mi, size_t vi, enum site_kind k,
			 uint64_t addr, uint64_t file_off, const char *path)
{
	struct site *st;

	if (s->nsites >= MAX_SITES)
		return -E2BIG;
	st = &s->sites[s->nsites++];
	memset(st, 0, sizeof(*st));
	st->mi = mi;
	st->vi = vi;
	st->kind = k;
	st->addr = addr;
	st->file_off = file_off;
	st->path = path;
	st->uprobe = path != NULL;
	return 0;
}

static int add_site(struct probe_session *s, size_t mi, size_t vi, enum site_kind k,
		    uint64_t addr, uint64_t file_off, bool uprobe)
{
	return add_site_path(s, mi, vi, k, addr, file_off, uprobe ? s->m[mi]->host_image : NULL);
}

/* Finds `ret` and tail-call `jmp` sites of [addr, addr+size) from target memory. */
static int scan_code(struct probe_session *s, size_t mi, size_t vi, uint64_t addr, uint64_t size,
		     uint64_t file_off, bool uprobe)
{
	struct vstate *v = &s->vs[mi][vi];
	uint8_t *buf;
	cs_insn *insn = NULL;
	size_t n, i;
	int err = 0;

	if (!s->cs_ok || !addr || !size || size > (1u << 20))
		return 0;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	if (probe_proc_read(s->pp, addr, buf, size)) {
		free(buf);
		return 0;
	}
	n = capi.disasm(s->cs, buf, size, addr, 0, &insn);
	for (i = 0; i < n && !err; i++) {
		if (insn[i].id == X86_INS_RET) {
			v->st.ret_sites++;
			err = add_site(s, mi, vi, SITE_RET, insn[i].address,
				       file_off + (insn[i].address - addr), uprobe);
		} else if (insn[i].id == X86_INS_JMP) {
			cs_x86 *x = insn[i].detail ? &insn[i].detail->x86 : NULL;
			bool out = true;

			if (x && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
				uint64_t t = (uint64_t)x->operands[0].imm;

				out = t < addr || t >= addr + size;
			}
			if (out)
				v->st.tail_sites++;
		}
	}
	if (insn)
		capi.free(insn, n);
	free(buf);
	return err;
}

/* Float arguments in xmm order; -1 when an argument's class is unknown. */
static int count_floats(const struct pe_sig *sig)
{
	uint32_t i;
	int n = 0;

	for (i = 0; i < sig->nparams; i++) {
		const struct pe_type *t = &sig->params[i];

		if (t->byref)
			continue;
		if (t->et == PE_ET_R4 || t->et == PE_ET_R8)
			n++;
		else if ((t->valuetype && !t->enum_et) || t->et == PE_ET_VAR || t->et == PE_ET_MVAR ||
			 t->et == PE_ET_TYPEDBYREF)
			return -1;
	}
	return n > 8 ? 8 : n;
}

/*
 * Looks in the first instructions for stores of xmm0..xmmN-1 to the frame
 * ([rbp+d] or [rsp+d]) with nothing but stores between them; the site is
 * the instruction after the last one.
 */
static int scan_float_homes(struct probe_session *s, size_t mi, size_t vi, uint64_t addr,
			    uint64_t size, uint64_t file_off, bool uprobe)
{
	struct vstate *v = &s->vs[mi][vi];
	int nf = count_floats(s->m[mi]->psig), found = 0;
	uint8_t buf[256];
	cs_insn *insn = NULL;
	size_t n, i, len = size < sizeof(buf) ? size : sizeof(buf);
	uint64_t site = 0;
	bool started = false;

	v->nfloat = nf;
	if (nf <= 0 || !s->cs_ok || !addr || probe_proc_read(s->pp, addr, buf, len))
		return 0;
	n = capi.disasm(s->cs, buf, len, addr, 48, &insn);
	for (i = 0; i < n && found < nf; i++) {
		cs_x86 *x = insn[i].detail ? &insn[i].detail->x86 : NULL;
		unsigned id = insn[i].id;
		bool store = x && x->op_count == 2 && x->operands[0].type == X86_OP_MEM;

		if (!x)
			break;
		if ((id == X86_INS_VMOVSD || id == X86_INS_MOVSD || id == X86_INS_VMOVSS ||
		     id == X86_INS_MOVSS) && store && x->operands[1].type == X86_OP_REG &&
		    x->operands[1].reg >= X86_REG_XMM0 && x->operands[1].reg <= X86_REG_XMM7 &&
		    (x->operands[0].mem.base == X86_REG_RBP || x->operands[0].mem.base == X86_REG_RSP) &&
		    x->operands[0].mem.index == X86_REG_INVALID) {
			int k = x->operands[1].reg - X86_REG_XMM0;

			if (k < nf && !v->fh[k].found) {
				v->fh[k].found = true;
				v->fh[k].base = x->operands[0].mem.base == X86_REG_RBP ? R_BP : R_SP;
				v->fh[k].disp = x->operands[0].mem.disp;
				v->fh[k].size = (id == X86_INS_VMOVSS || id == X86_INS_MOVSS) ? 4 : 8;
				found++;
				started = true;
				site = insn[i].address + insn[i].size;
			}
			continue;
		}
		/* between the homes: only stores; before them: anything but control flow */
		if (started && !store)
			break;
		if (x->op_count && insn[i].detail->groups_count) {
			uint8_t g;

			for (g = 0; g < insn[i].detail->groups_count; g++)
				if (insn[i].detail->groups[g] == CS_GRP_JUMP ||
				    insn[i].detail->groups[g] == CS_GRP_CALL ||
				    insn[i].detail->groups[g] == CS_GRP_RET)
					break;
			if (g < insn[i].detail->groups_count)
				break;
		}
	}
	if (insn)
		capi.free(insn, n);
	if (found < nf) {
		memset(v->fh, 0, sizeof(v->fh));
		return 0;
	}
	return add_site_path(s, mi, vi, SITE_FLOATS, site, file_off + (site - addr),
			     uprobe ? s->m[mi]->host_image : NULL);
}

static int make_sites(struct probe_session *s, size_t mi, size_t vi)
{
	struct probe_method *m = s->m[mi];
	struct probe_code *c = &m->code[vi];
	struct vstate *v = &s->vs[mi][vi];
	bool up = c->kind == PROBE_CODE_R2R;
	int err;

	if (v->sites_made)
		return 0;
	v->sites_made = true;
	if (mi < 64 && s->handed_from[mi] && vi + 1 >= s->handed_from[mi]) {
		/* code that came after the hand-over: ReJIT'd code, counted there */
		v->st.handed = true;
		return 0;
	}
	if ((up && s->o.no_uprobe) || (!up && s->o.no_hwbp)) {
		/* proven not to fire here: arming it would only show a false 0 */
		v->st.unwatchable = true;
		return 0;
	}
	ct_strlcpy(v->st.how, up ? "uprobe" : "hw-breakpoint", sizeof(v->st.how));
	/*
	 * OSR code is entered by a jump from a Tier0 loop, mid-call: the call
	 * was counted at the Tier0 entry. Only its returns are probed.
	 */
	if (!strstr(c->tier, "OSR")) {
		err = add_site(s, mi, vi, SITE_ENTRY, c->addr, c->file_offset, up);
		if (err)
			return err;
	}
	if (s->o.args && !err)
		err = scan_float_homes(s, mi, vi, c->addr, c->size, c->file_offset, up);
	if (err)
		return err;
	if (s->o.ret || s->o.latency) {
		err = scan_code(s, mi, vi, c->addr, c->size, c->file_offset, up);
		if (!err && up && c->cold_size) {
			uint64_t cold_addr = c->addr ? c->addr + (c->cold_offset - c->file_offset) : 0;

			err = scan_code(s, mi, vi, cold_addr, c->cold_size, c->cold_offset, up);
		}
		v->ret_known = true;
	}
	return err;
}

/* ---- events ---- */

/*
 * The ring a thread's uprobe events write to: a dummy event of that thread on
 * every CPU (cpu -1) owns it. Made on first use.
 */
static int thread_ring(struct probe_session *s, uint32_t tid)
{
	struct perf_event_attr d = s->tmpl;
	struct tring *nt;
	size_t i;
	int fd, err;

	for (i = 0; i < s->ntrings; i++)
		if (s->trings[i].tid == tid)
			return s->trings[i].ring.fd;
	if (s->ntrings >= MAX_TIDS)
		return -E2BIG;
	nt = realloc(s->trings, (s->ntrings + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	s->trings = nt;
	d.type = PERF_TYPE_SOFTWARE;
	d.config = PERF_COUNT_SW_DUMMY;
	d.inherit = 0;
	d.wakeup_watermark = (4096u << TRING_PAGES_LOG2) / 4;
	fd = perf_open(&d, (pid_t)tid, -1, -1, 0);
	if (fd < 0)
		return fd;
	err = perf_ring_open(&s->trings[s->ntrings].ring, fd, TRING_PAGES_LOG2);
	if (err) {
		close(fd);
		return err;
	}
	s->trings[s->ntrings++].tid = tid;
	return fd;
}

static int open_one(struct probe_session *s, struct site *st, uint32_t tid, int cpu)
{
	struct perf_event_attr a = s->tmpl;
	int fd, out = -1;

	if (s->cpuwide[st->uprobe ? SCOPE_UP : SCOPE_HW]) {
		/* one uprobe event per CPU for every process: samples filtered by pid */
		a.inherit = 0;
		a.type = (uint32_t)s->uprobe_type;
		a.config = 0;
		a.config1 = (uint64_t)(uintptr_t)st->path;
		a.config2 = st->file_off;
		fd = perf_open(&a, -1, cpu, -1, 0);
		if (fd < 0)
			return fd;
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_owner[cpu]) < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		return fd;
	}
	if (st->uprobe) {
		/*
		 * No inherit for uprobe PMU events: the kernel would create the
		 * child's event from attr.config1, a pointer into clrtap's memory,
		 * read in the target while it clones a thread; clone then fails
		 * and the runtime aborts ("Out of memory."). New threads are
		 * found through PERF_RECORD_FORK from the watch events instead.
		 */
		a.inherit = 0;
		a.type = (uint32_t)s->uprobe_type;
		a.config = 0;
		a.config1 = (uint64_t)(uintptr_t)st->path;
		a.config2 = st->file_off;
		/*
		 * Each uprobe PMU event registers its own uprobe consumer, and the
		 * kernel runs every consumer of the probed instruction on each hit:
		 * one event per (thread, CPU) made a call cost grow with threads x
		 * CPUs. Without inherit one event per thread on every CPU (cpu -1)
		 * is allowed, writing into that thread's ring.
		 */
		if (cpu > 0)
			return -EEXIST;
		out = thread_ring(s, tid);
		if (out < 0)
			return out;
		cpu = -1;
	} else {
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = st->addr;
		a.bp_len = sizeof(long);
	}
	fd = perf_open(&a, (pid_t)tid, cpu, -1, 0);
	if (fd < 0)
		return fd;
	if (out < 0)
		out = s->ring_owner[cpu];
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, out) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void site_close(struct site *st)
{
	size_t i;

	for (i = 0; i < st->nfds; i++)
		close(st->fds[i]);
	free(st->fds);
	st->fds = NULL;
	st->nfds = 0;
	st->armed = false;
}

/*
 * Per-CPU events: one per CPU. When the first one is refused for a reason
 * that per-thread events do not have (CPU-wide events need CAP_PERFMON or
 * perf_event_paranoid <= 0), this kind falls back to per-thread events for
 * the session.
 */
static int site_open_cpus(struct probe_session *s, struct site *st)
{
	int cpu, k = st->uprobe ? SCOPE_UP : SCOPE_HW, err = 0;

	st->fds = calloc((size_t)s->ncpu, sizeof(int));
	if (!st->fds)
		return -ENOMEM;
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		int fd = open_one(s, st, 0, cpu);

		if (fd >= 0) {
			st->fds[st->nfds++] = fd;
			continue;
		}
		if (fd == -ENODEV) /* an offline CPU */
			continue;
		err = fd;
		break;
	}
	if (!err && st->nfds) {
		st->armed = true;
		return 0;
	}
	site_close(st);
	if (err == -EACCES || err == -EPERM) {
		s->cpuwide[k] = false;
		note(s, PROBE_NOTE_INFO, "%s: per-CPU events refused (%s): one per thread instead",
		     st->uprobe ? "uprobes" : "breakpoints", strerror(-err));
		return -EAGAIN;
	}
	return err ? err : -ENODEV;
}

static void watch_threads(struct probe_session *s);

static int site_open(struct probe_session *s, struct site *st)
{
	size_t i, ok = 0, gone = 0;
	int cpu, last = 0;

	if (s->cpuwide[st->uprobe ? SCOPE_UP : SCOPE_HW]) {
		int err = site_open_cpus(s, st);

		if (err != -EAGAIN)
			return err;
	}
	/* per-thread uprobes: threads born later are armed when their FORK is read */
	if (st->uprobe)
		watch_threads(s);
	st->fds = calloc(s->ntids * (size_t)s->ncpu, sizeof(int));
	if (!st->fds)
		return -ENOMEM;
	for (i = 0; i < s->ntids; i++)
		for (cpu = 0; cpu < s->ncpu; cpu++) {
			int fd = open_one(s, st, s->tids[i], cpu);

			if (fd >= 0) {
				st->fds[st->nfds++] = fd;
				ok++;
			} else if (fd == -EEXIST) {
				continue; /* uprobes: one event per thread, made for cpu 0 */
			} else if (fd == -ESRCH) {
				gone++;
			} else {
				last = fd;
			}
		}
	if (!ok) {
		site_close(st);
		return last ? last : -ESRCH;
	}
	if (last)
		note(s, PROBE_NOTE_WARN, "%s at 0x%" PRIx64 ": not armed on every thread (%s)",
		     s->m[st->mi]->name, st->addr, strerror(-last));
	st->armed = true;
	return 0;
}

static bool tid_in(const uint32_t *v, size_t n, uint32_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

/* Dummy events with task=1 and inherit on every thread: PERF_RECORD_FORK for new ones. */
static void watch_threads(struct probe_session *s)
{
	size_t i;
	int cpu;

	for (i = 0; i < s->ntids && s->nwatched < MAX_TIDS; i++) {
		if (tid_in(s->watched, s->nwatched, s->tids[i]))
			continue;
		s->watched[s->nwatched++] = s->tids[i];
		for (cpu = 0; cpu < s->ncpu; cpu++) {
			struct perf_event_attr a;
			int *nw, fd;

			memset(&a, 0, sizeof(a));
			a.type = PERF_TYPE_SOFTWARE;
			a.config = PERF_COUNT_SW_DUMMY;
			a.task = 1;
			a.inherit = 1;
			a.exclude_kernel = 1;
			a.use_clockid = 1;
			a.clockid = CLOCK_MONOTONIC;
			a.watermark = 1;
			a.wakeup_watermark = s->tmpl.wakeup_watermark;
			fd = perf_open(&a, (pid_t)s->tids[i], cpu, -1, 0);
			if (fd < 0)
				continue;
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_owner[cpu]) < 0) {
				close(fd);
				continue;
			}
			nw = realloc(s->watch_fds, (s->nwatch + 1) * sizeof(*nw));
			if (!nw) {
				close(fd);
				return;
			}
			s->watch_fds = nw;
			s->watch_fds[s->nwatch++] = fd;
		}
	}
}

/* Opens the armed uprobe sites on threads born since the last poll. */
static void arm_new_threads(struct probe_session *s)
{
	size_t t, i;
	int cpu;

	for (t = 0; t < s->nnew; t++) {
		uint32_t tid = s->newtids[t];

		if (tid_in(s->tids, s->ntids, tid) || s->ntids >= MAX_TIDS)
			continue;
		s->tids[s->ntids++] = tid;
		for (i = 0; i < s->nsites; i++) {
			struct site *st = &s->sites[i];
			int *nf;

			if (!st->armed || !st->uprobe)
				continue;
			nf = realloc(st->fds, (st->nfds + (size_t)s->ncpu) * sizeof(int));
			if (!nf)
				continue;
			st->fds = nf;
			for (cpu = 0; cpu < s->ncpu; cpu++) {
				int fd = open_one(s, st, tid, cpu);

				if (fd >= 0)
					st->fds[st->nfds++] = fd;
			}
		}
		s->late_threads++;
	}
	s->nnew = 0;
}

/* The k-th newest JIT version of method mi, or SIZE_MAX. */
static size_t jit_version(const struct probe_method *m, size_t k)
{
	size_t j, i, rank;

	for (j = 0; j < m->ncode; j++) {
		if (m->code[j].kind != PROBE_CODE_JIT)
			continue;
		for (rank = 0, i = 0; i < m->ncode; i++)
			if (i != j && m->code[i].kind == PROBE_CODE_JIT &&
			    probe_code_newer(m->code, i, j))
				rank++;
		if (rank == k)
			return j;
	}
	return SIZE_MAX;
}

/* Wants every hardware site of (mi, vi, kind) if they all fit; vi SIZE_MAX: any version. */
static void want_group(struct probe_session *s, size_t mi, size_t vi, enum site_kind k,
		       unsigned *used, bool one_by_one)
{
	unsigned need = 0;
	size_t q;

	for (q = 0; q < s->nsites; q++) {
		struct site *st = &s->sites[q];

		if (st->mi != mi || st->kind != k || st->uprobe || st->want || !st->addr)
			continue;
		if (vi != SIZE_MAX && st->vi != vi)
			continue;
		if (one_by_one) {
			if (*used < HW_SLOTS) {
				st->want = true;
				(*used)++;
			}
			continue;
		}
		need++;
	}
	if (one_by_one || !need || *used + need > HW_SLOTS)
		return;
	for (q = 0; q < s->nsites; q++) {
		struct site *st = &s->sites[q];

		if (st->mi == mi && st->kind == k && !st->uprobe && st->addr &&
		    (vi == SIZE_MAX || st->vi == vi))
			st->want = true;
	}
	*used += need;
}

/*
 * Decides which sites get events: every uprobe; the 4 hardware slots go to,
 * in order: the newest JIT version's entry of each method, its ret sites,
 * return-address sites, then older versions (entry, then rets).
 */
static void plan(struct probe_session *s)
{
	unsigned used = 0;
	size_t i, mi, k;

	for (i = 0; i < s->nsites; i++)
		s->sites[i].want = s->sites[i].uprobe && s->sites[i].addr;
	for (k = 0; k < PROBE_MAX_VERSIONS && used < HW_SLOTS; k++) {
		for (mi = 0; mi < s->n; mi++) {
			size_t vi = jit_version(s->m[mi], k);

			if (vi != SIZE_MAX)
				want_group(s, mi, vi, SITE_ENTRY, &used, false);
		}
		for (mi = 0; mi < s->n; mi++) {
			size_t vi = jit_version(s->m[mi], k);

			if (vi != SIZE_MAX)
				want_group(s, mi, vi, SITE_RET, &used, false);
		}
		for (mi = 0; mi < s->n; mi++) {
			size_t vi = jit_version(s->m[mi], k);

			if (vi != SIZE_MAX)
				want_group(s, mi, vi, SITE_FLOATS, &used, false);
		}
		if (k == 0)
			for (mi = 0; mi < s->n; mi++)
				want_group(s, mi, SIZE_MAX, SITE_RETADDR, &used, true);
	}
}

/*
 * No debug register left (another session, or the older code versions of
 * this one): give up the hardware sites of older versions of the same
 * method. Returns whether any was released.
 */
static bool release_older(struct probe_session *s, const struct site *nw)
{
	bool any = false;
	size_t i;

	for (i = 0; i < s->nsites; i++) {
		struct site *st = &s->sites[i];

		if (st->mi != nw->mi || st->vi == nw->vi ||
		    !probe_code_newer(s->m[nw->mi]->code, nw->vi, st->vi) || st->uprobe || !st->armed)
			continue;
		site_close(st);
		st->want = false;
		if (st->kind == SITE_ENTRY && s->vs[st->mi][st->vi].st.armed) {
			s->vs[st->mi][st->vi].st.armed = false;
			note(s, PROBE_NOTE_INFO, "%s [%s]: breakpoint given up for newer code "
			     "(no debug register left)", s->m[st->mi]->name,
			     s->m[st->mi]->code[st->vi].tier);
		}
		any = true;
	}
	return any;
}

static int apply(struct probe_session *s)
{
	size_t i;
	int err, armed = 0;

	err = read_tids(s);
	if (err)
		return err;
	/* free slots first, then take new ones */
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].armed && !s->sites[i].want)
			site_close(&s->sites[i]);
	for (i = 0; i < s->nsites; i++) {
		struct site *st = &s->sites[i];
		struct vstate *v = &s->vs[st->mi][st->vi];

		if (st->want && !st->armed) {
			err = site_open(s, st);
			if (err == -ENOSPC && !st->uprobe && release_older(s, st))
				err = site_open(s, st);
			if (err) {
				note(s, PROBE_NOTE_WARN, "cannot arm %s %s at 0x%" PRIx64 ": %s",
				     s->m[st->mi]->name, st->kind == SITE_ENTRY ? "entry" :
				     st->kind == SITE_RET ? "return" : "return address",
				     st->addr, strerror(-err));
				continue;
			}
			if (st->kind == SITE_ENTRY) {
				v->st.armed = true;
				v->st.armed_ns = now_mono();
			} else if (st->kind == SITE_RETADDR) {
				struct strbuf sb = STRBUF_INIT_MAX(1024);

				(void)probe_proc_symbolize(s->pp, st->addr, &sb);
				note(s, PROBE_NOTE_ATTACH, "%s: return site 0x%" PRIx64 " in %s: %s",
				     s->m[st->mi]->name, st->addr, sb.buf,
				     st->uprobe ? "uprobe" : "hw-breakpoint");
				strbuf_release(&sb);
			}
			armed++;
		}
		if (!st->want && st->armed)
			site_close(st);
		if (!st->want && st->kind == SITE_ENTRY && v->st.armed) {
			v->st.armed = false;
			note(s, PROBE_NOTE_INFO, "%s%s [%s]: breakpoint moved to newer code (4 per thread)",
			     s->m[st->mi]->name, s->m[st->mi]->sig, s->m[st->mi]->code[st->vi].tier);
		}
	}
	/* ret_armed: recount */
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].kind == SITE_RET)
			s->vs[s->sites[i].mi][s->sites[i].vi].st.ret_armed = 0;
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].kind == SITE_RET && s->sites[i].armed)
			s->vs[s->sites[i].mi][s->sites[i].vi].st.ret_armed++;
	return armed;
}

static void describe_version(struct probe_session *s, size_t mi, size_t vi)
{
	struct probe_method *m = s->m[mi];
	struct probe_code *c = &m->code[vi];
	struct vstate *v = &s->vs[mi][vi];
	char where[160];

	if (c->kind == PROBE_CODE_R2R)
		snprintf(where, sizeof(where), "%s+0x%" PRIx64, strrchr(m->image, '/') ?
			 strrchr(m->image, '/') + 1 : m->image, c->file_offset);
	else
		snprintf(where, sizeof(where), "0x%" PRIx64, c->addr);
	if (v->st.handed) {
		note(s, PROBE_NOTE_INFO, "%s%s [%s] at %s: new code after the hand-over, left to "
		     "the in-process profiler (the re-JIT'd code; were it a tier-up of the old code "
		     "just before ReJIT takes effect, its calls there would not be counted)",
		     m->name, m->sig, c->tier, where);
		return;
	}
	if (v->st.unwatchable && s->o.unwatched_where) {
		note(s, PROBE_NOTE_WARN, "%s%s [%s] at %s: NOT WATCHED %s, so calls to this code "
		     "are not counted", m->name, m->sig, c->tier, where, s->o.unwatched_where);
		return;
	}
	if (v->st.unwatchable) {
		note(s, PROBE_NOTE_WARN, "%s%s [%s] at %s: NOT WATCHED: %s do not fire on this "
		     "machine (self-test), so calls to this code are not counted", m->name, m->sig,
		     c->tier, where, c->kind == PROBE_CODE_JIT ? "hardware execute breakpoints" :
								 "uprobes");
		return;
	}
	if (strstr(c->tier, "OSR")) {
		note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s: on-stack replacement code, entered from "
		     "a Tier0 loop mid-call (counted there): %u of %u ret site(s) armed", m->name,
		     m->sig, c->tier, where, v->st.ret_armed, v->st.ret_sites);
		return;
	}
	if (!v->st.armed) {
		note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s: not armed (%s)", m->name, m->sig, c->tier,
		     where, c->kind == PROBE_CODE_JIT ? "no hardware breakpoint slot left" :
							 "image not mapped executable");
		return;
	}
	if (s->o.args && v->nfloat > 0) {
		size_t q;
		bool fs = false;

		for (q = 0; q < s->nsites; q++)
			if (s->sites[q].mi == mi && s->sites[q].vi == vi &&
			    s->sites[q].kind == SITE_FLOATS)
				fs = s->sites[q].armed;
		note(s, PROBE_NOTE_INFO, "%s [%s]: %s", m->name, c->tier,
		     fs ? "float arguments read where the prolog stores them (extra probe)" :
			  "float arguments show as ? (xmm registers are not in perf samples and this "
			  "code does not store them where they can be found)");
	}
	if (s->o.ret || s->o.latency)
		note(s, PROBE_NOTE_ATTACH,
		     "%s%s [%s] at %s size %" PRIu64 ": %s on entry, %u of %u ret site(s)%s", m->name,
		     m->sig, c->tier, where, c->size, v->st.how, v->st.ret_armed, v->st.ret_sites,
		     v->st.tail_sites ? ", leaves by tail call too (those returns are not seen)" : "");
	else
		note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s size %" PRIu64 ": %s on entry", m->name,
		     m->sig, c->tier, where, c->size, v->st.how);
}

int probe_session_new(struct probe_proc *pp, struct probe_method **methods, size_t n,
		      const struct probe_session_opts *o, probe_call_fn on_call,
		      probe_note_fn on_note, void *ctx, struct probe_session **out)
{
	struct probe_session *s = calloc(1, sizeof(*s));
	struct timespec rt;
	struct rlimit rl;
	int cpu;

	if (!s)
		return -ENOMEM;
	s->ino_fd = -1;
	s->pp = pp;
	s->o = *o;
	if (!s->o.strlen_max)
		s->o.strlen_max = 64;
	s->on_call = on_call;
	s->on_note = on_note;
	s->ctx = ctx;
	s->n = n;
	s->m = calloc(n ? n : 1, sizeof(*s->m));
	s->vs = calloc(n ? n : 1, sizeof(*s->vs));
	s->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (s->ncpu < 1)
		s->ncpu = 1;
	s->rings = calloc((size_t)s->ncpu, sizeof(*s->rings));
	s->ring_owner = calloc((size_t)s->ncpu, sizeof(int));
	if (!s->m || !s->vs || !s->rings || !s->ring_owner) {
		probe_session_free(s);
		return -ENOMEM;
	}
	memcpy(s->m, methods, n * sizeof(*s->m));
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	s->uprobe_type = perf_pmu_type("uprobe");
	{
		/* CLRTAP_TEST_PROBE_SCOPE=thread: the per-thread events (tests, bench) */
		const char *sc = getenv("CLRTAP_TEST_PROBE_SCOPE");
		bool cpus = !sc || strcmp(sc, "thread");

		/* breakpoints stay per thread: see the comment at the top */
		s->cpuwide[SCOPE_HW] = false;
		s->cpuwide[SCOPE_UP] = cpus;
	}
	s->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	s->cs_ok = capi_load() && capi.open(CS_ARCH_X86, CS_MODE_64, &s->cs) == CS_ERR_OK;
	if (s->cs_ok)
		capi.option(s->cs, CS_OPT_DETAIL, CS_OPT_ON);
	else
		note(s, PROBE_NOTE_WARN, "the disassembler (libcapstone.so.%d) is not available: "
		     "return sites cannot be found, so returns are not seen", CS_API_MAJOR);

	memset(&s->tmpl, 0, sizeof(s->tmpl));
	s->tmpl.sample_period = 1;
	s->tmpl.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (s->o.stack)
		s->tmpl.sample_type |= PERF_SAMPLE_CALLCHAIN;
	s->tmpl.sample_regs_user = REG_MASK;
	/* stack bytes: return address and stack arguments; a Tier0 frame for floats */
	s->tmpl.sample_stack_user = s->o.args ? STACK_DUMP : ((s->o.ret || s->o.latency) ? 64 : 0);
	if (!s->tmpl.sample_stack_user)
		s->tmpl.sample_type &= ~(uint64_t)PERF_SAMPLE_STACK_USER;
	if (s->o.count_only && !s->o.args && !s->o.ret && !s->o.latency && !s->o.stack) {
		s->tmpl.sample_type &= ~(uint64_t)PERF_SAMPLE_REGS_USER;
		s->tmpl.sample_regs_user = 0;
	}
	s->tmpl.sample_max_stack = 64;
	s->tmpl.exclude_kernel = 1;
	s->tmpl.exclude_hv = 1;
	s->tmpl.exclude_callchain_kernel = 1;
	s->tmpl.inherit = 1;
	s->tmpl.use_clockid = 1;
	s->tmpl.clockid = CLOCK_MONOTONIC;
	s->tmpl.watermark = 1; /* wake the poll only when a quarter of the ring is used */
	s->tmpl.wakeup_watermark = (4096u << RING_PAGES_LOG2) / 4;

	for (cpu = 0; cpu < s->ncpu; cpu++) {
		struct perf_event_attr d = s->tmpl;
		int fd, err;

		d.type = PERF_TYPE_SOFTWARE;
		d.config = PERF_COUNT_SW_DUMMY;
		d.inherit = 0;
		s->ring_owner[cpu] = -1;
		fd = perf_open(&d, probe_proc_pid(pp), cpu, -1, 0);
		if (fd < 0) {
			probe_session_free(s);
			return fd;
		}
		err = perf_ring_open(&s->rings[cpu], fd, RING_PAGES_LOG2);
		if (err) {
			close(fd);
			probe_session_free(s);
			return err;
		}
		s->ring_owner[cpu] = fd;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	s->start_mono = now_mono();
	s->real_off = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
		      (int64_t)s->start_mono;
	*out = s;
	return 0;
}

/* Makes sites for versions without them, plans, arms. */
static int rearm(struct probe_session *s, bool describe_all)
{
	size_t mi, vi, before = s->nsites;
	bool made[PROBE_MAX_VERSIONS * 64] = { 0 };
	int err = 0, armed;

	for (mi = 0; mi < s->n; mi++)
		for (vi = 0; vi < s->m[mi]->ncode; vi++) {
			if (s->vs[mi][vi].sites_made)
				continue;
			if (mi < 64)
				made[mi * PROBE_MAX_VERSIONS + vi] = true;
			err = make_sites(s, mi, vi);
			if (err)
				return err;
		}
	(void)before;
	plan(s);
	armed = apply(s);
	if (armed < 0)
		return armed;
	for (mi = 0; mi < s->n; mi++)
		for (vi = 0; vi < s->m[mi]->ncode; vi++)
			if (describe_all || (mi < 64 && made[mi * PROBE_MAX_VERSIONS + vi]))
				describe_version(s, mi, vi);
	return 0;
}

int probe_session_arm(struct probe_session *s)
{
	size_t mi, any = 0;
	int err;

	for (mi = 0; mi < s->n; mi++)
		any += s->m[mi]->ncode;
	err = rearm(s, true);
	if (err)
		return err;
	return any ? 0 : -ENOENT;
}

/* ---- decoding ---- */

static void add_string(struct probe_session *s, struct strbuf *sb, uint64_t ptr)
{
	uint8_t hdr[12];
	uint8_t *chars;
	int32_t len;
	uint32_t take;

	if (!ptr) {
		(void)strbuf_addstr(sb, "null");
		return;
	}
	if (probe_proc_read(s->pp, ptr, hdr, sizeof(hdr))) {
		(void)strbuf_addf(sb, "string@0x%" PRIx64 "(unreadable)", ptr);
		return;
	}
	memcpy(&len, hdr + 8, 4);
	if (len < 0 || len > (1 << 30)) {
		(void)strbuf_addf(sb, "string@0x%" PRIx64 "(bad length)", ptr);
		return;
	}
	take = (uint32_t)len < s->o.strlen_max ? (uint32_t)len : s->o.strlen_max;
	chars = malloc((size_t)take * 2 + 2);
	if (!chars || probe_proc_read(s->pp, ptr + 12, chars, (size_t)take * 2)) {
		free(chars);
		(void)strbuf_addf(sb, "string@0x%" PRIx64 "(unreadable)", ptr);
		return;
	}
	(void)strbuf_addch(sb, '"');
	{
		struct strbuf u = STRBUF_INIT_MAX(1 << 20);
		size_t i;

		if (!utf16le_to_utf8(&u, chars, take, false))
			for (i = 0; i < u.len; i++) {
				unsigned char ch = (unsigned char)u.buf[i];

				if (ch == '"' || ch == '\\')
					(void)strbuf_addf(sb, "\\%c", ch);
				else if (ch < 0x20)
					(void)strbuf_addf(sb, "\\x%02x", ch);
				else
					(void)strbuf_addch(sb, (char)ch);
			}
		strbuf_release(&u);
	}
	(void)strbuf_addch(sb, '"');
	if ((uint32_t)len > take)
		(void)strbuf_addf(sb, "...(%d chars)", len);
	free(chars);
}

/* Formats one integer-class value; returns false for types not in a GPR. */
static void fmt_value(struct probe_session *s, struct strbuf *sb, const struct pe_type *t,
		      uint64_t v, int64_t *num, bool *valid)
{
	uint8_t et = t->valuetype && t->enum_et ? t->enum_et : t->et;

	*valid = false;
	if (t->byref) {
		(void)strbuf_addf(sb, "&0x%" PRIx64, v);
		return;
	}
	switch (et) {
	case PE_ET_BOOLEAN:
		(void)strbuf_addstr(sb, (v & 0xff) ? "true" : "false");
		*num = (v & 0xff) != 0;
		*valid = true;
		return;
	case PE_ET_CHAR: {
		uint16_t c = (uint16_t)v;
		struct strbuf u = STRBUF_INIT_MAX(16);

		if (!utf16le_to_utf8(&u, (const uint8_t *)&c, 1, false))
			(void)strbuf_addf(sb, "'%s'", u.buf);
		strbuf_release(&u);
		*num = c;
		*valid = true;
		return;
	}
	case PE_ET_I1: *num = (int8_t)v; break;
	case PE_ET_U1: *num = (uint8_t)v; break;
	case PE_ET_I2: *num = (int16_t)v; break;
	case PE_ET_U2: *num = (uint16_t)v; break;
	case PE_ET_I4: *num = (int32_t)v; break;
	case PE_ET_U4: *num = (uint32_t)v; break;
	case PE_ET_I8:
	case PE_ET_I: *num = (int64_t)v; break;
	case PE_ET_U8:
	case PE_ET_U:
		*num = (int64_t)v;
		*valid = true;
		(void)strbuf_addf(sb, "%" PRIu64, v);
		return;
	case PE_ET_STRING:
		add_string(s, sb, v);
		return;
	case PE_ET_PTR:
	case PE_ET_FNPTR:
		(void)strbuf_addf(sb, "0x%" PRIx64, v);
		return;
	default:
		if (!v)
			(void)strbuf_addstr(sb, "null");
		else
			(void)strbuf_addf(sb, "%s@0x%" PRIx64, t->name ? t->name : "object", v);
		return;
	}
	*valid = true;
	(void)strbuf_addf(sb, "%" PRId64, *num);
}

/*
 * Value types whose layout clrtap knows (the metadata of another assembly is
 * not read for a layout): size and that every 8-byte part is integer class,
 * so the SysV ABI passes each part in a general register (a struct of at
 * most 16 bytes) and returns it in rax (and rdx), with no return buffer.
 */
struct known_vt {
	const char *name;
	unsigned size;
};
static const struct known_vt known_vts[] = {
	{ "System.Decimal", 16 },          /* int flags, uint hi32, ulong lo64 */
	{ "System.Guid", 16 },
	{ "System.DateTime", 8 },          /* ulong ticks | kind << 62 */
	{ "System.TimeSpan", 8 },          /* long ticks */
	{ "System.DateTimeOffset", 16 },   /* DateTime, short offset minutes */
	{ "System.Threading.CancellationToken", 8 }, /* source reference */
	{ "System.Threading.Tasks.ValueTask", 16 },  /* object, short token, bool */
};

static const struct known_vt *known_vt(const struct pe_type *t)
{
	size_t i;

	if (!t->name || t->byref)
		return NULL;
	for (i = 0; i < sizeof(known_vts) / sizeof(known_vts[0]); i++)
		if (!strcmp(t->name, known_vts[i].name))
			return &known_vts[i];
	return NULL;
}

/* Formats a known value type from its 8-byte parts (in the ABI's order). */
static void fmt_known_vt(struct strbuf *sb, const struct known_vt *k, const uint64_t *p)
{
	if (!strcmp(k->name, "System.Decimal")) {
		uint32_t flags = (uint32_t)p[0], scale = (flags >> 16) & 0xff;
		unsigned __int128 mag = ((unsigned __int128)(p[0] >> 32) << 64) | p[1];
		char dig[64];
		int n = 0, i;

		if (scale > 28) {
			(void)strbuf_addf(sb, "?(not a valid decimal: scale %u)", scale);
			return;
		}
		do {
			dig[n++] = (char)('0' + (int)(mag % 10));
			mag /= 10;
		} while (mag && n < 40);
		while (n <= (int)scale)
			dig[n++] = '0';
		if (flags & 0x80000000u)
			(void)strbuf_addch(sb, '-');
		for (i = n - 1; i >= 0; i--) {
			(void)strbuf_addch(sb, dig[i]);
			if (i == (int)scale && scale)
				(void)strbuf_addch(sb, '.');
		}
		return;
	}
	if (!strcmp(k->name, "System.Guid")) {
		const uint8_t *b = (const uint8_t *)p;

		(void)strbuf_addf(sb, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
				  (uint32_t)p[0], (unsigned)(uint16_t)(p[0] >> 32),
				  (unsigned)(uint16_t)(p[0] >> 48), b[8], b[9], b[10], b[11], b[12], b[13],
				  b[14], b[15]);
		return;
	}
	if (!strcmp(k->name, "System.TimeSpan")) {
		int64_t t = (int64_t)p[0];

		(void)strbuf_addf(sb, "%s%" PRIu64 ".%07" PRIu64 "s", t < 0 ? "-" : "",
				  (t < 0 ? -(uint64_t)t : (uint64_t)t) / 10000000,
				  (t < 0 ? -(uint64_t)t : (uint64_t)t) % 10000000);
		return;
	}
	if (!strcmp(k->name, "System.DateTime")) {
		uint64_t ticks = p[0] & 0x3fffffffffffffffull;
		/* 0001-01-01 to 1970-01-01 in 100 ns ticks */
		int64_t secs = (int64_t)(ticks / 10000000) - 62135596800ll;
		time_t tt = (time_t)secs;
		struct tm tm;

		if (gmtime_r(&tt, &tm))
			(void)strbuf_addf(sb, "%04d-%02d-%02dT%02d:%02d:%02d.%07" PRIu64 "%s",
					  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
					  tm.tm_min, tm.tm_sec, ticks % 10000000,
					  (p[0] >> 62) == 1 ? "Z" : "");
		else
			(void)strbuf_addf(sb, "DateTime(ticks=%" PRIu64 ")", ticks);
		return;
	}
	if (!strcmp(k->name, "System.Threading.CancellationToken")) {
		if (!p[0])
			(void)strbuf_addstr(sb, "CancellationToken.None");
		else
			(void)strbuf_addf(sb, "CancellationToken(source=0x%" PRIx64 ")", p[0]);
		return;
	}
	if (k->size > 8)
		(void)strbuf_addf(sb, "%s{0x%" PRIx64 ", 0x%" PRIx64 "}", k->name, p[0], p[1]);
	else
		(void)strbuf_addf(sb, "%s{0x%" PRIx64 "}", k->name, p[0]);
}

enum aclass { A_GPR, A_FLOAT, A_KNOWN_VT, A_UNKNOWN };

static enum aclass classify(const struct pe_type *t)
{
	if (t->byref)
		return A_GPR;
	if (t->et == PE_ET_R4 || t->et == PE_ET_R8)
		return A_FLOAT;
	if (((t->valuetype && !t->enum_et) || (t->et == PE_ET_VALUETYPE && !t->enum_et)) &&
	    known_vt(t))
		return A_KNOWN_VT;
	if (t->valuetype && !t->enum_et)
		return A_UNKNOWN;
	if (t->et == PE_ET_VALUETYPE && !t->enum_et)
		return A_UNKNOWN;
	if (t->et == PE_ET_TYPEDBYREF || t->et == PE_ET_VAR || t->et == PE_ET_MVAR)
		return A_UNKNOWN;
	return A_GPR;
}

static char *decode_args(struct probe_session *s, const struct probe_method *m,
			 const struct perf_sample *ps, struct ev *e)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 16);
	const struct pe_sig *sig = m->psig;
	unsigned g = 0, stack_slot = 0, i;
	const char *lost_why = NULL;

	if (sig->has_this && !sig->explicit_this) {
		uint64_t v = ps->regs[gpr_args[g++]];

		(void)strbuf_addf(&sb, "this=0x%" PRIx64, v);
	}
	if (sig->ret.valuetype && !sig->ret.enum_et && !sig->ret.byref) {
		const struct known_vt *k = known_vt(&sig->ret);

		if (!k)
			lost_why = "the return type's layout is not known to clrtap: a return buffer "
				   "may take an argument register";
		else if (k->size > 16)
			g++; /* the return buffer, right after `this` */
	}
	for (i = 0; i < sig->nparams; i++) {
		const struct pe_type *t = &sig->params[i];
		const char *pn = sig->param_names && sig->param_names[i] && sig->param_names[i][0] ?
					 sig->param_names[i] : NULL;
		enum aclass c = classify(t);
		uint64_t v = 0;
		bool have = false;

		if (sb.len)
			(void)strbuf_addstr(&sb, ", ");
		if (pn)
			(void)strbuf_addf(&sb, "%s=", pn);
		else
			(void)strbuf_addf(&sb, "arg%u=", i);
		if (lost_why) {
			(void)strbuf_addf(&sb, "?(%s)", lost_why);
			continue;
		}
		if (c == A_UNKNOWN) {
			/* this one and every later one: its register use depends on its layout */
			(void)strbuf_addf(&sb, "?(%s: layout not known to clrtap)",
					  t->name ? t->name : "value type");
			lost_why = "after an argument whose registers clrtap cannot place";
			continue;
		}
		if (c == A_KNOWN_VT) {
			const struct known_vt *k = known_vt(t);
			unsigned parts = k->size > 8 ? 2 : 1, j;
			uint64_t pv[2] = { 0, 0 };
			bool ok = true;

			if (k->size > 16) {
				(void)strbuf_addf(&sb, "?(%s: passed in memory)", k->name);
				lost_why = "after an argument whose registers clrtap cannot place";
				continue;
			}
			if (g + parts <= 6) {
				for (j = 0; j < parts; j++)
					pv[j] = ps->regs[gpr_args[g++]];
			} else {
				/* all of it on the stack (SysV: never split) */
				for (j = 0; j < parts && ok; j++) {
					uint64_t off = 8 + 8ull * stack_slot++;

					ok = ps->stack && off + 8 <= ps->stack_dyn_size &&
					     off + 8 <= ps->stack_size;
					if (ok)
						memcpy(&pv[j], ps->stack + off, 8);
				}
			}
			if (ok)
				fmt_known_vt(&sb, k, pv);
			else
				(void)strbuf_addstr(&sb, "?(stack argument beyond the sampled stack)");
			continue;
		}
		if (c == A_FLOAT) {
			if (e->nfloat < PROBE_MAX_ARGS)
				e->fpos[e->nfloat++] = sb.len;
			(void)strbuf_addstr(&sb, "?");
			continue;
		}
		if (g < 6) {
			v = ps->regs[gpr_args[g++]];
			have = true;
		} else {
			/* [rsp] is the return address; stack arguments follow */
			uint64_t off = 8 + 8ull * stack_slot++;

			if (ps->stack && off + 8 <= ps->stack_dyn_size && off + 8 <= ps->stack_size) {
				memcpy(&v, ps->stack + off, 8);
				have = true;
			}
		}
		if (!have) {
			(void)strbuf_addstr(&sb, "?(stack argument beyond the sampled stack)");
			continue;
		}
		if (i < PROBE_MAX_ARGS)
			fmt_value(s, &sb, t, v, &e->num[i], &e->valid[i]);
		else {
			int64_t dn;
			bool dv;

			fmt_value(s, &sb, t, v, &dn, &dv);
		}
	}
	return strbuf_detach(&sb, NULL);
}

static char *decode_ret(struct probe_session *s, const struct probe_method *m,
			const struct perf_sample *ps, struct ev *e)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 16);
	const struct pe_type *t = &m->psig->ret;

	enum aclass c = classify(t);

	if (t->et == PE_ET_VOID && !t->byref)
		(void)strbuf_addstr(&sb, "void");
	else if (c == A_KNOWN_VT && known_vt(t)->size <= 16) {
		uint64_t pv[2] = { ps->regs[R_AX], ps->regs[R_DX] };

		fmt_known_vt(&sb, known_vt(t), pv);
	} else if (c == A_FLOAT)
		(void)strbuf_addstr(&sb, "?(floating-point return: xmm0 is not sampled)");
	else if (c != A_GPR)
		(void)strbuf_addf(&sb, "?(%s returned by value: layout not known to clrtap)",
				  t->name ? t->name : "value type");
	else
		fmt_value(s, &sb, t, ps->regs[R_AX], &e->num[0], &e->valid[0]);
	return strbuf_detach(&sb, NULL);
}

static char *decode_stack(struct probe_session *s, const struct perf_sample *ps)
{
	struct strbuf sb = STRBUF_INIT_MAX(1 << 16);
	uint64_t frames[MAX_STACK_FRAMES];
	size_t nf = 0, i;
	uint64_t ret = 0;

	frames[nf++] = ps->ip;
	if (ps->stack && ps->stack_dyn_size >= 8 && ps->stack_size >= 8)
		memcpy(&ret, ps->stack, 8);
	if (ret)
		frames[nf++] = ret;
	for (i = 0; i < ps->nr && nf < MAX_STACK_FRAMES; i++) {
		uint64_t a = ps->callchain[i];

		if (a >= (uint64_t)-4095 || a == ps->ip || a == ret || !a)
			continue;
		frames[nf++] = a;
	}
	for (i = 1; i < nf; i++) {
		if (i > 1)
			(void)strbuf_addstr(&sb, " <- ");
		(void)probe_proc_symbolize(s->pp, frames[i] - 1, &sb);
	}
	return strbuf_detach(&sb, NULL);
}

/*
 * A version that can leave by a tail call: the instruction after the call
 * (the return address at entry) sees the return instead.
 */
static void learn_retaddr(struct probe_session *s, const struct site *entry,
			  const struct perf_sample *ps)
{
	const struct vstate *v = &s->vs[entry->mi][entry->vi];
	uint64_t ra = 0, off = 0;
	const char *path = NULL;
	unsigned n = 0;
	size_t i;

	if (!(s->o.ret || s->o.latency) || !v->st.tail_sites || !ps->stack ||
	    ps->stack_dyn_size < 8 || ps->stack_size < 8)
		return;
	memcpy(&ra, ps->stack, 8);
	if (!ra)
		return;
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].kind == SITE_RETADDR && s->sites[i].mi == entry->mi) {
			if (s->sites[i].addr == ra)
				return;
			n++;
		}
	if (n >= MAX_RETADDR)
		return;
	(void)probe_proc_addr_file(s->pp, ra, &path, &off);
	if ((path && s->o.no_uprobe) || (!path && s->o.no_hwbp)) {
		if (!s->retaddr_unseen) {
			s->retaddr_unseen = true;
			note(s, PROBE_NOTE_WARN, "%s: returns by tail call land in JIT'd code at 0x%"
			     PRIx64 ", which clrtap cannot watch %s: those returns are not seen",
			     s->m[entry->mi]->name, ra,
			     s->o.unwatched_where ? s->o.unwatched_where : "on this machine");
		}
		return;
	}
	if (!add_site_path(s, entry->mi, entry->vi, SITE_RETADDR, ra, off, path))
		s->need_rearm = true;
}

static int q_push(struct probe_session *s, const struct ev *e)
{
	if (s->nq == s->qcap) {
		size_t nc = s->qcap ? s->qcap * 2 : 1024;
		struct ev *n = realloc(s->q, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->q = n;
		s->qcap = nc;
	}
	s->q[s->nq++] = *e;
	return 0;
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct probe_session *s = ctx;
	struct perf_sample ps;
	struct ev e;
	size_t i;

	if (h->type == PERF_RECORD_FORK && h->size >= sizeof(*h) + 16) {
		uint32_t f[4];

		memcpy(f, h + 1, sizeof(f)); /* pid, ppid, tid, ptid */
		if (f[0] == (uint32_t)probe_proc_pid(s->pp) && s->nnew < ARRAY_SIZE(s->newtids) &&
		    !tid_in(s->newtids, s->nnew, f[2]))
			s->newtids[s->nnew++] = f[2];
		return 0;
	}
	if (h->type != PERF_RECORD_SAMPLE)
		return 0;
	if (perf_sample_parse(&s->tmpl, h, &ps))
		return 0;
	if (ps.pid != (uint32_t)probe_proc_pid(s->pp)) {
		/* a per-CPU event hit in another process: not the target's call */
		s->foreign++;
		return 0;
	}
	if (s->tmpl.sample_regs_user && ps.nregs < R_N)
		return 0;
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].addr == ps.ip && s->sites[i].armed)
			break;
	if (i == s->nsites)
		for (i = 0; i < s->nsites; i++)
			if (s->sites[i].addr == ps.ip)
				break;
	if (i == s->nsites)
		return 0;
	memset(&e, 0, sizeof(e));
	e.mono = ps.time;
	e.tid = ps.tid;
	e.site = i;
	if (!s->tmpl.sample_regs_user) {
		/* counting only */
		if (s->sites[i].kind == SITE_ENTRY && !q_push(s, &e))
			return 0;
		return 0;
	}
	e.rsp = ps.regs[R_SP];
	if (s->sites[i].kind == SITE_ENTRY) {
		learn_retaddr(s, &s->sites[i], &ps);
		if (s->o.args)
			e.text = decode_args(s, s->m[s->sites[i].mi], &ps, &e);
		else {
			/* numbers are still wanted for --hist */
			free(decode_args(s, s->m[s->sites[i].mi], &ps, &e));
		}
		if (s->o.stack)
			e.stack = decode_stack(s, &ps);
	} else if (s->sites[i].kind == SITE_FLOATS) {
		const struct vstate *v = &s->vs[s->sites[i].mi][s->sites[i].vi];
		int k;

		e.nfloat = 0;
		for (k = 0; k < v->nfloat && k < 8; k++) {
			uint64_t a = ps.regs[v->fh[k].base] + (uint64_t)v->fh[k].disp;
			uint64_t off = a - ps.regs[R_SP];

			if (!ps.stack || a < ps.regs[R_SP] || off + v->fh[k].size > ps.stack_dyn_size ||
			    off + v->fh[k].size > ps.stack_size)
				break;
			if (v->fh[k].size == 4) {
				float f;

				memcpy(&f, ps.stack + off, 4);
				e.fval[k] = f;
			} else {
				memcpy(&e.fval[k], ps.stack + off, 8);
			}
			e.nfloat++;
		}
	} else {
		e.text = decode_ret(s, s->m[s->sites[i].mi], &ps, &e);
	}
	if (q_push(s, &e)) {
		free(e.text);
		free(e.stack);
	}
	return 0;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->mono < y->mono ? -1 : x->mono > y->mono;
}

static void emit(struct probe_session *s, const struct ev *entry, const struct ev *ret)
{
	const struct ev *first = entry ? entry : ret;
	const struct site *st = &s->sites[first->site];
	struct strbuf fl = STRBUF_INIT_MAX(1 << 17);
	struct probe_call c;

	memset(&c, 0, sizeof(c));
	c.mono_ns = first->mono;
	c.time_ns = (uint64_t)((int64_t)first->mono + s->real_off);
	c.tid = first->tid;
	c.method = s->m[st->mi];
	c.version = (int)st->vi;
	c.has_entry = entry != NULL;
	c.has_ret = ret != NULL;
	if (entry && entry->nfloat > 0 && entry->text) {
		/* float placeholders no stored copy filled: say why they are unknown */
		size_t from = 0;
		int k;

		for (k = 0; k < entry->nfloat; k++) {
			(void)strbuf_add(&fl, entry->text + from, entry->fpos[k] - from);
			(void)strbuf_addstr(&fl, "?(floating-point argument: xmm registers are not "
						 "sampled and no stored copy was read)");
			from = entry->fpos[k] + 1;
		}
		(void)strbuf_addstr(&fl, entry->text + from);
	}
	if (entry) {
		c.args = fl.len ? fl.buf : entry->text;
		c.stack = entry->stack;
		memcpy(c.arg_num, entry->num, sizeof(c.arg_num));
		memcpy(c.arg_valid, entry->valid, sizeof(c.arg_valid));
	}
	if (ret) {
		c.ret = ret->text;
		if (entry)
			c.latency_ns = ret->mono - entry->mono;
	}
	if (s->on_call)
		s->on_call(s->ctx, &c);
	strbuf_release(&fl);
}

static void ev_free(struct ev *e)
{
	free(e->text);
	free(e->stack);
	e->text = e->stack = NULL;
}

static bool version_has_rets(struct probe_session *s, size_t site)
{
	const struct site *st = &s->sites[site];

	size_t i;

	if (s->vs[st->mi][st->vi].st.ret_armed > 0)
		return true;
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].kind == SITE_RETADDR && s->sites[i].mi == st->mi)
			return true;
	return s->vs[st->mi][st->vi].st.tail_sites > 0;
}

static void process(struct probe_session *s, struct ev *e)
{
	const struct site *st = &s->sites[e->site];
	struct probe_version_stats *vs = &s->vs[st->mi][st->vi].st;
	size_t i;

	if (st->kind == SITE_FLOATS) {
		ev_free(e);
		return;
	}
	if (st->kind == SITE_ENTRY) {
		vs->entries++;
		if (!vs->first_ns)
			vs->first_ns = e->mono;
		vs->last_ns = e->mono;
		/* frames at or above this rsp on this thread have ended unseen */
		for (i = s->npend; i-- > 0;) {
			struct pending *p = &s->pend[i];

			if (p->tid == e->tid && p->rsp <= e->rsp) {
				emit(s, &p->e, NULL);
				ev_free(&p->e);
				s->pend[i] = s->pend[--s->npend];
			}
		}
		if (!(s->o.ret || s->o.latency) || !version_has_rets(s, e->site)) {
			emit(s, e, NULL);
			ev_free(e);
			return;
		}
		if (s->npend == s->pcap) {
			size_t nc = s->pcap ? s->pcap * 2 : 64;
			struct pending *n = realloc(s->pend, nc * sizeof(*n));

			if (!n) {
				emit(s, e, NULL);
				ev_free(e);
				return;
			}
			s->pend = n;
			s->pcap = nc;
		}
		s->pend[s->npend].tid = e->tid;
		s->pend[s->npend].rsp = e->rsp;
		s->pend[s->npend].e = *e;
		s->npend++;
		e->text = e->stack = NULL;
		return;
	}
	/* the matching entry: same thread, same return-address slot */
	for (i = s->npend; i-- > 0;) {
		struct pending *p = &s->pend[i];
		uint64_t want = st->kind == SITE_RETADDR ? e->rsp - 8 : e->rsp;

		if (p->tid == e->tid && p->rsp == want && s->sites[p->e.site].mi == st->mi) {
			s->vs[st->mi][s->sites[p->e.site].vi].st.returns++;
			emit(s, &p->e, e);
			ev_free(&p->e);
			s->pend[i] = s->pend[--s->npend];
			ev_free(e);
			return;
		}
	}
	/* a return-address site also sees returns already matched at a ret */
	if (st->kind != SITE_RETADDR) {
		vs->returns++;
		emit(s, NULL, e);
	}
	ev_free(e);
}

/* Puts the values of FLOATS samples into the text of their entries. */
static void patch_floats(struct probe_session *s)
{
	size_t i, j;

	for (i = 0; i < s->nq; i++) {
		struct ev *f = &s->q[i];
		struct ev *e = NULL;
		struct strbuf sb;
		size_t from = 0;
		int k;

		if (s->sites[f->site].kind != SITE_FLOATS || f->consumed)
			continue;
		f->consumed = true;
		for (j = i; j-- > 0;)
			if (s->q[j].tid == f->tid && s->sites[s->q[j].site].kind == SITE_ENTRY) {
				e = &s->q[j];
				break;
			}
		if (!e || !e->text || s->sites[e->site].mi != s->sites[f->site].mi ||
		    e->nfloat != f->nfloat)
			continue;
		strbuf_init(&sb, 1 << 16);
		for (k = 0; k < e->nfloat; k++) {
			(void)strbuf_add(&sb, e->text + from, e->fpos[k] - from);
			char num[40];

			snprintf(num, sizeof(num), "%.15g", f->fval[k]);
			if (strtod(num, NULL) != f->fval[k])
				snprintf(num, sizeof(num), "%.17g", f->fval[k]);
			(void)strbuf_addstr(&sb, num);
			from = e->fpos[k] + 1; /* the "?" */
		}
		(void)strbuf_addstr(&sb, e->text + from);
		free(e->text);
		e->text = strbuf_detach(&sb, NULL);
		e->nfloat = 0;
	}
}

static void drain(struct probe_session *s, bool all)
{
	uint64_t cut = now_mono() - HOLD_NS;
	size_t i, k;
	int cpu;

	for (cpu = 0; cpu < s->ncpu; cpu++)
		if (s->rings[cpu].base)
			(void)perf_ring_drain(&s->rings[cpu], on_record, s);
	for (i = 0; i < s->ntrings; i++)
		(void)perf_ring_drain(&s->trings[i].ring, on_record, s);
	if (s->nnew)
		arm_new_threads(s);
	if (!s->nq)
		return;
	qsort(s->q, s->nq, sizeof(*s->q), ev_cmp);
	patch_floats(s);
	for (i = 0; i < s->nq; i++) {
		if (!all && s->q[i].mono > cut)
			break;
		process(s, &s->q[i]);
	}
	for (k = 0; i < s->nq; i++, k++)
		s->q[k] = s->q[i];
	s->nq = k;
}

int probe_session_poll(struct probe_session *s, int timeout_ms)
{
	struct pollfd pfd[256];
	size_t added = 0, mi, vi, before[64], i;
	int cpu, np = 0, err;

	for (cpu = 0; cpu < s->ncpu && np < 255; cpu++)
		if (s->ring_owner[cpu] >= 0) {
			pfd[np].fd = s->ring_owner[cpu];
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
			np++;
		}
	/* thread rings past the array are drained on the poll's timeout */
	for (i = 0; i < s->ntrings && np < 255; i++) {
		pfd[np].fd = s->trings[i].ring.fd;
		pfd[np].events = POLLIN;
		pfd[np].revents = 0;
		np++;
	}
	/* a new perf map line (new code) wakes us at once */
	if (s->ino_fd >= 0 && !s->ino_map && probe_proc_perfmap_path(s->pp))
		s->ino_map = inotify_add_watch(s->ino_fd, probe_proc_perfmap_path(s->pp),
					       IN_MODIFY) >= 0;
	/* and a new jitdump record (.NET 11: its map is buffered) */
	if (s->ino_fd >= 0 && !s->ino_jd && probe_proc_jitdump_path(s->pp))
		s->ino_jd = inotify_add_watch(s->ino_fd, probe_proc_jitdump_path(s->pp),
					      IN_MODIFY) >= 0;
	s->ino_watching = s->ino_map || s->ino_jd;
	if (s->ino_watching) {
		pfd[np].fd = s->ino_fd;
		pfd[np].events = POLLIN;
		pfd[np].revents = 0;
		np++;
	}
	if (timeout_ms > 0)
		(void)poll(pfd, (nfds_t)np, timeout_ms);
	if (s->ino_watching) {
		char ibuf[4096];

		while (read(s->ino_fd, ibuf, sizeof(ibuf)) > 0)
			;
	}
	for (mi = 0; mi < s->n && mi < 64; mi++)
		before[mi] = s->m[mi]->ncode;
	/* new perf map lines first: stacks decoded below may need them */
	err = probe_proc_refresh(s->pp, &added);
	drain(s, false);
	if (s->need_rearm && !added) {
		s->need_rearm = false;
		plan(s);
		err = apply(s);
		if (err < 0)
			return err;
		err = 0;
	}
	if (err)
		note(s, PROBE_NOTE_WARN, "perf map: %s", strerror(-err));
	if (added) {
		for (mi = 0; mi < s->n && mi < 64; mi++)
			for (vi = before[mi]; vi < s->m[mi]->ncode; vi++) {
				struct probe_code *c = &s->m[mi]->code[vi];

				bool lost = (c->kind == PROBE_CODE_JIT && s->o.no_hwbp) ||
					    (c->kind == PROBE_CODE_R2R && s->o.no_uprobe);
				char when[64] = "", lostmsg[160] = "";

				if (lost)
					snprintf(lostmsg, sizeof(lostmsg),
						 ": clrtap cannot watch it %s; calls that run it from "
						 "now on are NOT counted", s->o.unwatched_where ?
						 s->o.unwatched_where : "on this machine");
				if (lost) {
					/* the wall clock too: "from when" in the user's terms */
					uint64_t rt = (uint64_t)((int64_t)c->seen_ns + s->real_off);
					time_t sec = (time_t)(rt / 1000000000ull);
					struct tm tm;

					localtime_r(&sec, &tm);
					snprintf(when, sizeof(when), ", %02d:%02d:%02d.%03u", tm.tm_hour,
						 tm.tm_min, tm.tm_sec,
						 (unsigned)(rt % 1000000000ull / 1000000));
				}
				note(s, lost ? PROBE_NOTE_WARN : PROBE_NOTE_TRANSITION,
				     "%s%s: new code %s at 0x%" PRIx64 " size %" PRIu64
				     " (+%.3fs%s)%s", s->m[mi]->name, s->m[mi]->sig, c->tier, c->addr,
				     c->size, (double)(c->seen_ns - s->start_mono) / 1e9, when,
				     lostmsg);
			}
		s->need_rearm = false;
		err = rearm(s, false);
		if (err)
			return err;
	}
	if (kill(probe_proc_pid(s->pp), 0) && errno == ESRCH) {
		drain(s, true);
		return -ESRCH;
	}
	return 0;
}

void probe_session_flush(struct probe_session *s)
{
	size_t i;

	drain(s, true);
	for (i = 0; i < s->npend; i++) {
		emit(s, &s->pend[i].e, NULL);
		ev_free(&s->pend[i].e);
	}
	s->npend = 0;
}

const struct probe_version_stats *probe_session_stats(const struct probe_session *s, size_t i,
						     size_t v)
{
	if (i >= s->n || v >= PROBE_MAX_VERSIONS)
		return NULL;
	return &s->vs[i][v].st;
}

void probe_session_hand_over(struct probe_session *s, size_t i)
{
	if (i < s->n && i < 64 && !s->handed_from[i])
		s->handed_from[i] = s->m[i]->ncode + 1;
}

uint64_t probe_session_lost(const struct probe_session *s)
{
	uint64_t n = 0;
	int cpu;

	size_t i;

	for (cpu = 0; cpu < s->ncpu; cpu++)
		n += s->rings[cpu].lost;
	for (i = 0; i < s->ntrings; i++)
		n += s->trings[i].ring.lost;
	return n;
}

bool probe_session_per_cpu(const struct probe_session *s, bool uprobe)
{
	return s->cpuwide[uprobe ? SCOPE_UP : SCOPE_HW];
}

uint64_t probe_session_foreign(const struct probe_session *s)
{
	return s->foreign;
}

uint64_t probe_session_start_ns(const struct probe_session *s)
{
	return s->start_mono;
}

unsigned probe_session_threads(const struct probe_session *s)
{
	return (unsigned)s->ntids;
}

void probe_session_free(struct probe_session *s)
{
	size_t i;
	int cpu;

	if (!s)
		return;
	for (i = 0; i < s->nsites; i++)
		site_close(&s->sites[i]);
	for (i = 0; i < s->nwatch; i++)
		close(s->watch_fds[i]);
	free(s->watch_fds);
	if (s->rings)
		for (cpu = 0; cpu < s->ncpu; cpu++)
			perf_ring_close(&s->rings[cpu]);
	for (i = 0; i < s->ntrings; i++)
		perf_ring_close(&s->trings[i].ring);
	free(s->trings);
	for (i = 0; i < s->nq; i++)
		ev_free(&s->q[i]);
	for (i = 0; i < s->npend; i++)
		ev_free(&s->pend[i].e);
	if (s->cs_ok)
		capi.close(&s->cs);
	if (s->ino_fd >= 0)
		close(s->ino_fd);
	free(s->q);
	free(s->pend);
	free(s->rings);
	free(s->ring_owner);
	free(s->m);
	free(s->vs);
	free(s);
}
