/* SPDX-License-Identifier: MIT */
/*
 * session_order.c - the records of every ring in time order (held HOLD_NS for the
 * other rings), entries matched to their returns per thread by rsp, and each call
 * handed to the session's callback.
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
#include "probe/session_int.h"

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
			ps_note(s, PROBE_NOTE_WARN, "%s: returns by tail call land in JIT'd code at 0x%"
			     PRIx64 ", which clrtap cannot watch %s: those returns are not seen",
			     s->m[entry->mi]->name, ra,
			     s->o.unwatched_where ? s->o.unwatched_where : "on this machine");
		}
		return;
	}
	if (!ps_add_site_path(s, entry->mi, entry->vi, SITE_RETADDR, ra, off, path))
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
		    !ps_tid_in(s->newtids, s->nnew, f[2]))
			s->newtids[s->nnew++] = f[2];
		return 0;
	}
	if (h->type != PERF_RECORD_SAMPLE)
		return 0;
	if (perf_sample_parse(&s->tmpl, h, &ps))
		return 0;
	if (ps.pid != (uint32_t)probe_proc_pid(s->pp)) {
		/* a per-CPU event hit in another ps_process: not the target's call */
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
			e.text = ps_decode_args(s, s->m[s->sites[i].mi], &ps, &e);
		else {
			/* numbers are still wanted for --hist */
			free(ps_decode_args(s, s->m[s->sites[i].mi], &ps, &e));
		}
		if (s->o.stack)
			e.stack = ps_decode_stack(s, &ps);
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
		e.text = ps_decode_ret(s, s->m[s->sites[i].mi], &ps, &e);
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

void ps_emit(struct probe_session *s, const struct ev *entry, const struct ev *ret)
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

void ps_ev_free(struct ev *e)
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

void ps_process(struct probe_session *s, struct ev *e)
{
	const struct site *st = &s->sites[e->site];
	struct probe_version_stats *vs = &s->vs[st->mi][st->vi].st;
	size_t i;

	if (st->kind == SITE_FLOATS) {
		ps_ev_free(e);
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
				ps_emit(s, &p->e, NULL);
				ps_ev_free(&p->e);
				s->pend[i] = s->pend[--s->npend];
			}
		}
		if (!(s->o.ret || s->o.latency) || !version_has_rets(s, e->site)) {
			ps_emit(s, e, NULL);
			ps_ev_free(e);
			return;
		}
		if (s->npend == s->pcap) {
			size_t nc = s->pcap ? s->pcap * 2 : 64;
			struct pending *n = realloc(s->pend, nc * sizeof(*n));

			if (!n) {
				ps_emit(s, e, NULL);
				ps_ev_free(e);
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
			ps_emit(s, &p->e, e);
			ps_ev_free(&p->e);
			s->pend[i] = s->pend[--s->npend];
			ps_ev_free(e);
			return;
		}
	}
	/* a return-address site also sees returns already matched at a ret */
	if (st->kind != SITE_RETADDR) {
		vs->returns++;
		ps_emit(s, NULL, e);
	}
	ps_ev_free(e);
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

void ps_drain(struct probe_session *s, bool all)
{
	uint64_t cut = ps_now_mono() - HOLD_NS;
	size_t i, k;
	int cpu;

	for (cpu = 0; cpu < s->ncpu; cpu++)
		if (s->rings[cpu].base)
			(void)perf_ring_drain(&s->rings[cpu], on_record, s);
	for (i = 0; i < s->ntrings; i++)
		(void)perf_ring_drain(&s->trings[i].ring, on_record, s);
	if (s->nnew)
		ps_arm_new_threads(s);
	if (!s->nq)
		return;
	qsort(s->q, s->nq, sizeof(*s->q), ev_cmp);
	patch_floats(s);
	for (i = 0; i < s->nq; i++) {
		if (!all && s->q[i].mono > cut)
			break;
		ps_process(s, &s->q[i]);
	}
	for (k = 0; i < s->nq; i++, k++)
		s->q[k] = s->q[i];
	s->nq = k;
}
