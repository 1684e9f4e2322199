/* SPDX-License-Identifier: MIT */
/*
 * profile.c - raw stacks from the sampler, deduplicated in a hash table,
 * named through lib/sym at the end and added to a flame (see profile.h).
 */
#include "common/compat.h"

#include "common/clrname.h"
#include "common/io.h"
#include "common/hashtab.h"
#include "common/strbuf.h"
#include "profile/internal.h"
#include "srcline/srcline.h"

#define NAME_MAX_LEN 1024

struct stack_ent {
	uint64_t hash;
	uint64_t weight;   /* flame weight: samples or ns */
	uint64_t count;    /* samples / intervals */
	uint32_t tid;      /* 0 unless thread roots are on */
	uint8_t kind;
	uint16_t nr, nkernel;
	uint64_t *ips;     /* leaf first */
};

struct raw_sample {
	uint64_t time, weight;
	uint32_t tid;
	uint32_t stack;    /* index into stacks */
};

struct profile {
	struct profile_opts o;
	struct stack_ent *stacks;  /* dense array */
	size_t nstacks, stacks_cap;
	struct ct_itab index;      /* stacks by content */
	struct raw_sample *raw;
	size_t nraw, raw_cap;
	uint64_t dropped;
	profile_namer_fn namer; /* names whole stacks (EventPipe), else lib/sym */
	void *namer_ctx;
	struct srcline *lines;  /* managed frames get their source line (not owned) */
};

int profile_new(struct profile **out, const struct profile_opts *o)
{
	struct profile *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (o)
		p->o = *o;
	if (!p->o.max_stacks)
		p->o.max_stacks = (size_t)1 << 20;
	*out = p;
	return 0;
}

void profile_set_namer(struct profile *p, profile_namer_fn fn, void *ctx)
{
	p->namer = fn;
	p->namer_ctx = ctx;
}

void profile_set_lines(struct profile *p, struct srcline *sl)
{
	p->lines = sl;
}

const char profile_engine_ep_rate[] =
	"the runtime samples every managed thread at its own interval (1 ms by default), "
	"which no EventPipe request can change";

int profile_engine_parse(const char *s, enum profile_engine *e)
{
	if (!strcmp(s, "auto"))
		*e = PROFILE_ENGINE_AUTO;
	else if (!strcmp(s, "perf"))
		*e = PROFILE_ENGINE_PERF;
	else if (!strcmp(s, "eventpipe"))
		*e = PROFILE_ENGINE_EVENTPIPE;
	else
		return -EINVAL;
	return 0;
}

const char *profile_engine_name(enum profile_engine e)
{
	switch (e) {
	case PROFILE_ENGINE_PERF:
		return "perf_event";
	case PROFILE_ENGINE_EVENTPIPE:
		return "EventPipe";
	default:
		return NULL;
	}
}

void profile_reset(struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nstacks; i++)
		free(p->stacks[i].ips);
	p->nstacks = 0;
	ct_itab_clear(&p->index);
	p->nraw = 0;
	p->dropped = 0;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	profile_reset(p);
	free(p->stacks);
	ct_itab_release(&p->index);
	free(p->raw);
	free(p);
}

struct stack_key {
	const uint64_t *ips;
	uint32_t tid;
	uint8_t kind;
	unsigned nr, nk;
	uint64_t hash;
};

static uint64_t stack_hash(const void *ctx, uint32_t idx)
{
	return ((const struct profile *)ctx)->stacks[idx].hash;
}

static bool stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct stack_ent *c = &((const struct profile *)ctx)->stacks[idx];
	const struct stack_key *k = key;

	return c->hash == k->hash && c->kind == k->kind && c->tid == k->tid && c->nr == k->nr &&
	       c->nkernel == k->nk && !memcmp(c->ips, k->ips, k->nr * sizeof(uint64_t));
}

int profile_add_stack(void *ctx, const struct perf_stack *st)
{
	struct profile *p = ctx;
	uint32_t tid = p->o.thread_roots ? st->tid : 0;
	unsigned nr = st->nr > PERF_SAMPLER_MAX_STACK * 2 ? PERF_SAMPLER_MAX_STACK * 2 : st->nr;
	unsigned nk = st->nkernel > nr ? nr : st->nkernel;
	struct stack_key key = { st->ips, tid, (uint8_t)st->kind, nr, nk, 0 };
	uint64_t w = st->kind == PERF_STACK_CPU && !p->o.cpu_in_ns ? 1 : st->weight;
	struct stack_ent *e = NULL;
	uint32_t *slot;
	int rc;

	key.hash = ct_hash_bytes(CT_HASH_SEED ^ key.kind ^ ((uint64_t)tid << 8) ^ ((uint64_t)nk << 40),
				 st->ips, nr * sizeof(uint64_t));
	rc = ct_itab_reserve(&p->index, stack_hash, p);
	if (rc)
		return rc;
	slot = ct_itab_slot(&p->index, key.hash, stack_eq, p, &key);
	if (*slot)
		e = &p->stacks[*slot - 1];
	if (!e) {
		if (p->nstacks >= p->o.max_stacks) {
			p->dropped++;
			return 0;
		}
		if (p->nstacks == p->stacks_cap) {
			size_t nc = p->stacks_cap ? p->stacks_cap * 2 : 1024;
			struct stack_ent *ns = reallocarray(p->stacks, nc, sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			p->stacks = ns;
			p->stacks_cap = nc;
		}
		e = &p->stacks[p->nstacks];
		memset(e, 0, sizeof(*e));
		e->ips = malloc((nr ? nr : 1) * sizeof(uint64_t));
		if (!e->ips)
			return -ENOMEM;
		memcpy(e->ips, st->ips, nr * sizeof(uint64_t));
		e->hash = key.hash;
		e->kind = (uint8_t)st->kind;
		e->tid = tid;
		e->nr = (uint16_t)nr;
		e->nkernel = (uint16_t)nk;
		*slot = ct_itab_add(&p->index, (uint32_t)p->nstacks++);
	}
	e->weight += w;
	e->count++;
	if (p->o.keep_samples) {
		if (p->nraw == p->raw_cap) {
			size_t nc = p->raw_cap ? p->raw_cap * 2 : 4096;
			struct raw_sample *nr2 = reallocarray(p->raw, nc, sizeof(*nr2));

			if (!nr2)
				return -ENOMEM;
			p->raw = nr2;
			p->raw_cap = nc;
		}
		p->raw[p->nraw++] = (struct raw_sample){ st->time, st->weight, st->tid,
							 (uint32_t)(e - p->stacks) };
	}
	return 0;
}

int profile_frame_name(struct sym_proc *sp, uint64_t addr, bool kernel, bool leaf, char *buf,
		       size_t len, enum sym_kind *kind)
{
	struct sym_frame f;
	uint64_t a = leaf || !addr ? addr : addr - 1;
	int rc;

	rc = sp ? sym_lookup(sp, a, &f) : -ENOENT;
	if (!sp)
		memset(&f, 0, sizeof(f));
	if (kernel && rc == 0 && f.name && f.kind != SYM_KERNEL)
		f.kind = SYM_KERNEL;
	if (kind)
		*kind = kernel ? SYM_KERNEL : f.kind;
	if (rc == 0 && f.name && f.name[0]) {
		switch (kernel ? SYM_KERNEL : f.kind) {
		case SYM_KERNEL:
			snprintf(buf, len, "[k] %s", f.name);
			break;
		case SYM_NATIVE:
			if (f.module)
				snprintf(buf, len, "%s!%s", f.module, f.name);
			else
				snprintf(buf, len, "%s", f.name);
			break;
		default: /* managed: as the source wrote it (common/clrname.h) */
			if (ct_clrname_raw() || ct_clrname_pretty(f.name, strlen(f.name), buf, len) != 1)
				snprintf(buf, len, "%s", f.name);
			break;
		}
		return 1;
	}
	if (kernel)
		snprintf(buf, len, "[k] [unknown]");
	else if (f.kind == SYM_JIT || f.kind == SYM_STUB)
		snprintf(buf, len, "[jit]");
	else if (f.module && f.module[0] == '[')
		snprintf(buf, len, "%s", f.module); /* [vdso], [vsyscall] ... */
	else if (f.module && f.module[0])
		snprintf(buf, len, "[%s]", f.module);
	else
		snprintf(buf, len, "[unknown]");
	return 0;
}

/* A stack named by the profile's namer: every named frame is managed code.
 * Returns false when the namer left it out. */
static bool name_stack_namer(const struct profile *p, const struct stack_ent *e,
			     char (*store)[NAME_MAX_LEN], const char **names, size_t *k,
			     struct profile_summary *sum)
{
	uint32_t idx[PERF_SAMPLER_MAX_STACK * 2 + 2];
	size_t n = p->namer(p->namer_ctx, e->ips, e->nr, names + *k, idx,
			    (size_t)PERF_SAMPLER_MAX_STACK * 2 + 2 - *k), i;

	if (n == PROFILE_NAMER_SKIP)
		return false;
	for (i = 0; i < n && p->lines; i++)
		if (strcmp(names[*k + i], "[unknown]") &&
		    srcline_name(p->lines, e->ips[idx[i]], idx[i] > 0, names[*k + i], store[*k + i],
				 NAME_MAX_LEN) == 1) {
			names[*k + i] = store[*k + i];
			if (sum)
				sum->line_frames += e->count;
		}
	for (i = 0; sum && i < n; i++) {
		bool named = strcmp(names[*k + i], "[unknown]") != 0;

		sum->frames += e->count;
		if (named)
			sum->managed_frames += e->count;
		else
			sum->unnamed += e->count;
		if (i + 1 == n) {
			sum->leaves += e->count;
			if (!named)
				sum->unnamed_leaves += e->count;
		}
	}
	*k += n;
	return true;
}

/* Frames of one stack, root first, into names (pointers into store);
 * 1: the namer left it out. */
static int name_stack(const struct profile *p, const struct stack_ent *e, struct sym_proc *sp,
		      profile_comm_fn comm, void *comm_ctx, char (*store)[NAME_MAX_LEN],
		      const char **names, size_t *n, struct profile_summary *sum, unsigned flags)
{
	size_t k = 0, last_managed = 0;
	int j;

	if (e->tid) {
		const char *c = comm ? comm(comm_ctx, e->tid) : NULL;

		if (c)
			snprintf(store[k], NAME_MAX_LEN, "[thread] %s", c);
		else
			snprintf(store[k], NAME_MAX_LEN, "[thread] %u", e->tid);
		names[k] = store[k];
		k++;
	}
	if (p->namer) {
		bool in = name_stack_namer(p, e, store, names, &k, sum);

		*n = k;
		return in ? 0 : 1;
	}
	for (j = (int)e->nr - 1; j >= 0; j--) {
		bool kernel = (unsigned)j < e->nkernel;
		bool leaf = j == 0;
		enum sym_kind kind;
		int named;

		if (kernel && (flags & PROFILE_BUILD_NO_KERNEL))
			continue;
		named = profile_frame_name(sp, e->ips[j], kernel, leaf, store[k], NAME_MAX_LEN, &kind);
		names[k] = store[k];
		if (named && p->lines && (kind == SYM_JIT || kind == SYM_R2R) &&
		    srcline_name(p->lines, e->ips[j], !leaf, store[k], store[k], NAME_MAX_LEN) == 1 &&
		    sum)
			sum->line_frames += e->count;
		if (named && (kind == SYM_JIT || kind == SYM_R2R))
			last_managed = k + 1;
		if (sum) {
			sum->frames += e->count;
			if (!named)
				sum->unnamed += e->count;
			if (leaf) {
				sum->leaves += e->count;
				if (!named)
					sum->unnamed_leaves += e->count;
			}
			if (kernel)
				sum->kernel_frames += e->count;
			else if (named && (kind == SYM_JIT || kind == SYM_R2R))
				sum->managed_frames += e->count;
			else if (named && kind == SYM_NATIVE)
				sum->native_frames += e->count;
			if (named && kind == SYM_NATIVE) {
				const char *bang = strchr(store[k], '!');

				if (!strncmp(bang ? bang + 1 : store[k], "sub_", 4)) {
					sum->addr_named += e->count;
					if (leaf)
						sum->addr_named_leaves += e->count;
				}
			}
		}
		k++;
	}
	if ((flags & PROFILE_BUILD_TO_MANAGED) && last_managed)
		k = last_managed;
	*n = k;
	return 0;
}

int profile_build(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		  struct flame *f, struct profile_summary *sum)
{
	return profile_build_ex(p, sp, comm, comm_ctx, f, sum, 0);
}

int profile_build_ex(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		     struct flame *f, struct profile_summary *sum, unsigned flags)
{
	char (*store)[NAME_MAX_LEN];
	const char **names;
	size_t i, n;
	int rc = 0;

	if (sum)
		memset(sum, 0, sizeof(*sum));
	store = malloc((size_t)(PERF_SAMPLER_MAX_STACK * 2 + 2) * NAME_MAX_LEN);
	names = calloc(PERF_SAMPLER_MAX_STACK * 2 + 2, sizeof(*names));
	if (!store || !names) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nstacks; i++) {
		const struct stack_ent *e = &p->stacks[i];

		if (p->o.stop && *p->o.stop > p->o.stop_above) {
			if (sum)
				sum->partial = true;
			break;
		}
		if (name_stack(p, e, sp, comm, comm_ctx, store, names, &n, sum, flags) == 1) {
			if (sum) {
				sum->stacks_named = i + 1;
				sum->left_out += e->count;
			}
			continue;
		}
		if (sum) {
			sum->stacks_named = i + 1;
			if (e->kind == PERF_STACK_CPU)
				sum->cpu_samples += e->count;
			else {
				sum->offcpu_intervals += e->count;
				sum->offcpu_ns += e->weight;
			}
		}
		if (!n) {
			names[0] = "[unknown]";
			n = 1;
		}
		rc = f ? flame_add(f, names, n, e->weight) : 0;
		if (rc == -E2BIG) {
			if (sum) {
				sum->dropped = true;
				sum->dropped_samples += e->count;
			}
			rc = 0;
		} else if (rc < 0) {
			goto out;
		}
	}
	if (sum) {
		sum->stacks = p->nstacks;
		if (p->dropped) {
			sum->dropped = true;
			sum->dropped_samples += p->dropped;
		}
	}
out:
	free(store);
	free(names);
	return rc;
}

int profile_write_raw(struct profile *p, struct sym_proc *sp, profile_comm_fn comm, void *comm_ctx,
		      int fd)
{
	struct strbuf sb;
	char name[NAME_MAX_LEN];
	size_t i;
	int rc = 0;

	if (!p->o.keep_samples)
		return -EINVAL;
	strbuf_init(&sb, (size_t)64 << 20);
	for (i = 0; i < p->nraw && !rc; i++) {
		const struct raw_sample *r = &p->raw[i];
		const struct stack_ent *e = &p->stacks[r->stack];
		const char *c = comm ? comm(comm_ctx, r->tid) : NULL;
		unsigned j;

		rc = strbuf_addf(&sb, "%s %u %llu.%09llu: %llu %s\n", c ? c : "?", r->tid,
				 (unsigned long long)(r->time / 1000000000ull),
				 (unsigned long long)(r->time % 1000000000ull),
				 (unsigned long long)r->weight,
				 p->namer ? "thread-sample" : e->kind == PERF_STACK_CPU ? "cpu-clock" : "off-cpu");
		if (p->namer) {
			const char *nm[PERF_SAMPLER_MAX_STACK * 2];
			size_t k = p->namer(p->namer_ctx, e->ips, e->nr, nm, NULL, ARRAY_SIZE(nm));

			if (k == PROFILE_NAMER_SKIP) { /* left out of the profile: said so */
				k = 0;
				rc = strbuf_addstr(&sb, "\t(left out: a blocking wait)\n");
			}

			/* leaf first, like the rest; addresses are the trace's, names its events' */
			while (k-- > 0 && !rc)
				rc = strbuf_addf(&sb, "\t%16s %s (managed)\n", "-", nm[k]);
		}
		for (j = 0; j < e->nr && !rc && !p->namer; j++) {
			static const char *const kinds[] = { "?", "jit", "r2r", "native", "kernel", "stub" };
			enum sym_kind kind = SYM_UNKNOWN;

			profile_frame_name(sp, e->ips[j], j < e->nkernel, j == 0, name, sizeof(name), &kind);
			rc = strbuf_addf(&sb, "\t%16llx %s (%s)\n", (unsigned long long)e->ips[j], name,
					 (unsigned)kind < ARRAY_SIZE(kinds) ? kinds[kind] : "?");
		}
		if (!rc)
			rc = strbuf_addch(&sb, '\n');
		if (!rc && sb.len > ((size_t)32 << 20)) {
			rc = ct_write_all(fd, sb.buf, sb.len);
			strbuf_reset(&sb);
		}
	}
	if (!rc)
		rc = ct_write_all(fd, sb.buf, sb.len);
	strbuf_release(&sb);
	return rc;
}

void profile_set_stop_above(struct profile *p, sig_atomic_t v)
{
	p->o.stop_above = v;
}
