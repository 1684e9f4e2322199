/* SPDX-License-Identifier: MIT */
/*
 * tracestats_int.h - the state of one tracestats pass, shared by its files
 * only: tracestats.c (limits, life cycle, event kinds, the event entry
 * point), events.c (exception and allocation groups, GC and pauses,
 * contention, sampled stacks) and finish.c (naming and the finished
 * report).
 */
#ifndef CLRTAP_TRACESTATS_INT_H
#define CLRTAP_TRACESTATS_INT_H

#include "common/compat.h"
#include "common/hashtab.h"
#include "srcline/srcline.h"
#include "tracestats/tracestats.h"

#define RT_GC_START 1
#define RT_GC_END 2
#define RT_RESTART_EE_END 3
#define RT_SUSPEND_EE_BEGIN 9
#define RT_ALLOC_TICK 10
#define RT_EXCEPTION 80
#define RT_CONTENTION_START 81
#define RT_CONTENTION_STOP 91

#define SUSPEND_FOR_GC 1
#define SUSPEND_FOR_GC_PREP 6

#define META_CACHE_MAX (1u << 20)
#define PENDING_GCS 8

/* ----- entries ----- */

struct kind_ent {
	char *provider, *name;
	uint32_t id;
	uint64_t count, hash;
};

struct kind_key {
	const char *provider, *name;
	uint32_t id;
};

/*
 * First throw or rethrow: told apart by the throw's stack, named at the end
 * (the rundown names the framework's code). A rethrow is the same exception
 * passed on by ExceptionDispatchInfo.Throw, which every await of a faulted
 * task runs: one failure going up N async frames raises N+1 events, and the
 * runtime's flags do not say which (.NET 10 marks some of them "nested",
 * others not). Flag 0x4 (rethrown) counts too where a runtime sets it. A
 * throw site is the first EXC_SITE_FRAMES IPs of the stack (the runtime's
 * dispatch frames and the throwing method among them).
 */
#define EXC_SITE_FRAMES 4
#define MAX_EXC_SITES 4096
#define EXC_SITES_PER 16
#define EXC_FLAG_RETHROWN 0x4
enum { SITE_UNKNOWN, SITE_FIRST, SITE_RETHROW };

struct exc_site {
	uint64_t ips[EXC_SITE_FRAMES];
	uint32_t n;
	uint64_t hash, count;
	int kind;
};

/* How groups' and types' exceptions spread over throw sites: (entity, site) -> count. */
#define MAX_EXC_PAIRS (1u << 16)
struct exc_pair {
	uint64_t key; /* 1 + (type? 1 << 62) + entity << 32 + site */
	uint64_t n;
};

struct exc_ent {
	char *type, *msg;
	uint64_t count, hash, eip;
	uint64_t *ips;
	uint32_t nips;
	uint64_t flagged; /* rethrown by the event's flag */
};

/* Exceptions by type: counted for every exception, past the group cap too. */
struct exc_type_ent {
	char *type;
	uint64_t count, hash;
	uint32_t groups;     /* type+message groups of this type */
	bool groups_capped;  /* some of its exceptions fell past the group cap */
	uint64_t flagged;
};

#define MAX_EXC_TYPES 256
#define MAX_CONT_SITES 256

/* ContentionStart stacks: where threads waited for a lock. */
struct cont_site {
	uint64_t hash, count, timed, total_ns, max_ns;
	uint64_t *ips;
	uint32_t nips;
};

struct alloc_ent {
	char *type;     /* UTF-8 */
	uint8_t *raw;   /* the UTF-16LE name as in the payload (the key) */
	uint32_t rawlen;
	uint64_t bytes, samples, hash;
};

struct raw_key {
	const uint8_t *p;
	uint32_t len;
};

struct stack_ent {
	uint64_t hash, off, count;
	uint32_t n;
	bool truncated;
};

struct stack_key {
	const uint64_t *ips;
	uint32_t n;
};

struct str2_key {
	const char *a, *b;
};

struct meta_cache {
	const struct nt_metadata *meta;
	int32_t kind; /* index into kinds, -1: past the cap */
};

struct pending_gc {
	bool used;
	uint32_t count, type;
	int64_t ts;
};

struct contend_thread {
	uint64_t tid;
	int64_t start; /* -1: no open start */
	int32_t site;  /* index of the open start's site, -1 none */
};

struct pausevec {
	uint64_t *v;
	size_t n, cap;
	uint64_t seen, total, max;
};

struct tracestats {
	struct ts_limits lim;
	struct nt_trace_info info;
	bool have_info, finished;
	uint64_t rng;

	struct nt_methods *methods;
	struct srcline *lines; /* ts_limits.lines: source lines of exception frames */

	struct kind_ent *kinds;
	uint32_t nkinds, kinds_cap;
	struct ct_itab kind_tab;
	struct meta_cache *mcache;
	uint32_t mcache_cap;
	uint64_t other_kinds_events;

	struct exc_ent *excs;
	uint32_t nexcs, excs_cap;
	struct ct_itab exc_tab;
	uint64_t exc_total, exc_other;
	struct exc_type_ent *etypes;
	uint32_t netypes, etypes_cap, last_etype;
	uint64_t etype_other;
	struct exc_site *esites;
	uint32_t nesites, esites_cap, last_esite;
	struct exc_pair *epairs; /* in first-seen order */
	uint32_t nepairs, epairs_cap;
	struct ct_itab epair_tab; /* epairs by key */
	uint64_t exc_flagged, exc_unsited; /* rethrown by flag; no site */

	struct alloc_ent *allocs;
	uint32_t nallocs, allocs_cap;
	uint32_t last_alloc; /* index + 1 of the last type seen, 0 none */
	struct ct_itab alloc_tab;
	uint64_t alloc_bytes, alloc_samples, alloc_other_bytes, alloc_other_samples;

	struct stack_ent *stacks;
	uint32_t nstacks, stacks_cap;
	struct ct_itab stack_tab;
	uint64_t *ips;
	size_t nips, ips_cap;

	struct ts_gc gc;
	bool suspended;
	uint32_t suspend_reason;
	int64_t suspend_ts;
	struct pending_gc pending[PENDING_GCS];
	struct pausevec ee_pauses, gc_pauses;

	struct contend_thread *cthreads;
	uint32_t ncthreads, cthreads_cap;
	struct ct_itab cthread_tab; /* cthreads by thread */
	struct ts_contention cont;
	struct cont_site *csites;
	uint32_t ncsites, csites_cap;
	uint64_t csite_other;

	struct ts_samples samples;
	uint64_t runtime_events; /* events of the runtime provider (not rundown) */

	uint64_t events;
	int64_t first_ts, last_ts;
	bool have_ts;

	struct strbuf sb, sb2;

	/* finished results */
	struct ts_result res;
	struct ts_event_kind *rkinds;
	struct ts_provider *rprovs;
	struct ts_exception *rexcs;
	struct ts_exc_type *retypes;
	struct ts_contention_site *rcsites;
	char **frame_strs; /* all exception frame strings, for freeing */
	size_t nframe_strs;
	struct ts_alloc *rallocs;
	struct flame *flame;
	char *errmsg;
};

/* tracestats.c */
/* Makes room for element n of *v (doubling *cap). Returns 0 or -ENOMEM. */
int ts_grow(void **v, uint32_t *cap, uint32_t n, size_t elem);
uint64_t ts_ticks_to_ns(const struct tracestats *ts, uint64_t ticks);
/* Adds one pause of ns to pv (bounded; the excess is counted). */
int ts_pause_add(struct tracestats *ts, struct pausevec *pv, uint64_t ns);

/* events.c: one event of each kind (0 or a negative errno) */
int ts_on_exception(struct tracestats *ts, const struct nt_event *ev);
int ts_on_alloc(struct tracestats *ts, const struct nt_event *ev);
int ts_on_gc(struct tracestats *ts, const struct nt_event *ev, uint32_t id);
void ts_on_contention(struct tracestats *ts, const struct nt_event *ev, bool start);
int ts_on_sample(struct tracestats *ts, const struct nt_event *ev);

#endif
