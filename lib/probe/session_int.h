/* SPDX-License-Identifier: MIT */
/*
 * session_int.h - inside lib/probe's session files only: the session's state
 * and the functions its files share (session.c has the overview).
 */
#ifndef CLRTAP_PROBE_SESSION_INT_H
#define CLRTAP_PROBE_SESSION_INT_H

#include <capstone/capstone.h>
#include <linux/perf_event.h>

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

/* capstone, loaded when a session needs it (ps_capi_load) */
struct ps_capi {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
};
extern struct ps_capi ps_capi;

int ps_add_site_path(struct probe_session *s, size_t mi, size_t vi, enum site_kind k,
			 uint64_t addr, uint64_t file_off, const char *path);
int ps_apply(struct probe_session *s);
void ps_arm_new_threads(struct probe_session *s);
bool ps_capi_load(void);
char *ps_decode_args(struct probe_session *s, const struct probe_method *m,
			 const struct perf_sample *ps, struct ev *e);
char *ps_decode_ret(struct probe_session *s, const struct probe_method *m,
			const struct perf_sample *ps, struct ev *e);
char *ps_decode_stack(struct probe_session *s, const struct perf_sample *ps);
void ps_describe_version(struct probe_session *s, size_t mi, size_t vi);
void ps_drain(struct probe_session *s, bool all);
void ps_emit(struct probe_session *s, const struct ev *entry, const struct ev *ret);
void ps_ev_free(struct ev *e);
int ps_make_sites(struct probe_session *s, size_t mi, size_t vi);
uint64_t ps_now_mono(void);
void ps_plan(struct probe_session *s);
void ps_process(struct probe_session *s, struct ev *e);
int ps_read_tids(struct probe_session *s);
void ps_site_close(struct site *st);
int ps_site_open(struct probe_session *s, struct site *st);
bool ps_tid_in(const uint32_t *v, size_t n, uint32_t tid);
void ps_note(struct probe_session *s, enum probe_note_kind k, const char *fmt, ...) PRINTF(3, 4);

#endif
