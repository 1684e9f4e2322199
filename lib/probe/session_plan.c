/* SPDX-License-Identifier: MIT */
/*
 * session_plan.c - which code of each method gets which site (entry, ret, the
 * return address, the float homes: capstone), which sites the 4 debug
 * registers go to, and arming them.
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
 * capstone, loaded when a session needs it: its 77,000 relocations were
 * most of clrtap's start-up time in the dynamic loader (about 25 ms of CPU of
 * 35), which a profile or top on a saturated machine paid at the starved
 * priority it starts with, before it can raise its own (issue 16). The
 * soname is the one the header describes (same ABI).
 */
#define CT_STR2(x) #x
#define CT_STR(x) CT_STR2(x)
struct ps_capi ps_capi;

bool ps_capi_load(void)
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
	*(void **)&ps_capi.open = dlsym(h, "cs_open");
	*(void **)&ps_capi.option = dlsym(h, "cs_option");
	*(void **)&ps_capi.disasm = dlsym(h, "cs_disasm");
	*(void **)&ps_capi.free = dlsym(h, "cs_free");
	*(void **)&ps_capi.close = dlsym(h, "cs_close");
	if (!ps_capi.open || !ps_capi.option || !ps_capi.disasm || !ps_capi.free || !ps_capi.close)
		return false; /* the handle stays: nothing to gain from closing it */
	state = 1;
	return true;
}

/* ---- code decoding ---- */

int ps_add_site_path(struct probe_session *s, size_t mi, size_t vi, enum site_kind k,
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
	return ps_add_site_path(s, mi, vi, k, addr, file_off, uprobe ? s->m[mi]->host_image : NULL);
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
	n = ps_capi.disasm(s->cs, buf, size, addr, 0, &insn);
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
		ps_capi.free(insn, n);
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
	n = ps_capi.disasm(s->cs, buf, len, addr, 48, &insn);
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
		ps_capi.free(insn, n);
	if (found < nf) {
		memset(v->fh, 0, sizeof(v->fh));
		return 0;
	}
	return ps_add_site_path(s, mi, vi, SITE_FLOATS, site, file_off + (site - addr),
			     uprobe ? s->m[mi]->host_image : NULL);
}

int ps_make_sites(struct probe_session *s, size_t mi, size_t vi)
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
void ps_plan(struct probe_session *s)
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
		ps_site_close(st);
		st->want = false;
		if (st->kind == SITE_ENTRY && s->vs[st->mi][st->vi].st.armed) {
			s->vs[st->mi][st->vi].st.armed = false;
			ps_note(s, PROBE_NOTE_INFO, "%s [%s]: breakpoint given up for newer code "
			     "(no debug register left)", s->m[st->mi]->name,
			     s->m[st->mi]->code[st->vi].tier);
		}
		any = true;
	}
	return any;
}

int ps_apply(struct probe_session *s)
{
	size_t i;
	int err, armed = 0;

	err = ps_read_tids(s);
	if (err)
		return err;
	/* free slots first, then take new ones */
	for (i = 0; i < s->nsites; i++)
		if (s->sites[i].armed && !s->sites[i].want)
			ps_site_close(&s->sites[i]);
	for (i = 0; i < s->nsites; i++) {
		struct site *st = &s->sites[i];
		struct vstate *v = &s->vs[st->mi][st->vi];

		if (st->want && !st->armed) {
			err = ps_site_open(s, st);
			if (err == -ENOSPC && !st->uprobe && release_older(s, st))
				err = ps_site_open(s, st);
			if (err) {
				ps_note(s, PROBE_NOTE_WARN, "cannot arm %s %s at 0x%" PRIx64 ": %s",
				     s->m[st->mi]->name, st->kind == SITE_ENTRY ? "entry" :
				     st->kind == SITE_RET ? "return" : "return address",
				     st->addr, strerror(-err));
				continue;
			}
			if (st->kind == SITE_ENTRY) {
				v->st.armed = true;
				v->st.armed_ns = ps_now_mono();
			} else if (st->kind == SITE_RETADDR) {
				struct strbuf sb = STRBUF_INIT_MAX(1024);

				(void)probe_proc_symbolize(s->pp, st->addr, &sb);
				ps_note(s, PROBE_NOTE_ATTACH, "%s: return site 0x%" PRIx64 " in %s: %s",
				     s->m[st->mi]->name, st->addr, sb.buf,
				     st->uprobe ? "uprobe" : "hw-breakpoint");
				strbuf_release(&sb);
			}
			armed++;
		}
		if (!st->want && st->armed)
			ps_site_close(st);
		if (!st->want && st->kind == SITE_ENTRY && v->st.armed) {
			v->st.armed = false;
			ps_note(s, PROBE_NOTE_INFO, "%s%s [%s]: breakpoint moved to newer code (4 per thread)",
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

void ps_describe_version(struct probe_session *s, size_t mi, size_t vi)
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
		ps_note(s, PROBE_NOTE_INFO, "%s%s [%s] at %s: new code after the hand-over, left to "
		     "the in-ps_process profiler (the re-JIT'd code; were it a tier-up of the old code "
		     "just before ReJIT takes effect, its calls there would not be counted)",
		     m->name, m->sig, c->tier, where);
		return;
	}
	if (v->st.unwatchable && s->o.unwatched_where) {
		ps_note(s, PROBE_NOTE_WARN, "%s%s [%s] at %s: NOT WATCHED %s, so calls to this code "
		     "are not counted", m->name, m->sig, c->tier, where, s->o.unwatched_where);
		return;
	}
	if (v->st.unwatchable) {
		ps_note(s, PROBE_NOTE_WARN, "%s%s [%s] at %s: NOT WATCHED: %s do not fire on this "
		     "machine (self-test), so calls to this code are not counted", m->name, m->sig,
		     c->tier, where, c->kind == PROBE_CODE_JIT ? "hardware execute breakpoints" :
								 "uprobes");
		return;
	}
	if (strstr(c->tier, "OSR")) {
		ps_note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s: on-stack replacement code, entered from "
		     "a Tier0 loop mid-call (counted there): %u of %u ret site(s) armed", m->name,
		     m->sig, c->tier, where, v->st.ret_armed, v->st.ret_sites);
		return;
	}
	if (!v->st.armed) {
		ps_note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s: not armed (%s)", m->name, m->sig, c->tier,
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
		ps_note(s, PROBE_NOTE_INFO, "%s [%s]: %s", m->name, c->tier,
		     fs ? "float arguments read where the prolog stores them (extra probe)" :
			  "float arguments show as ? (xmm registers are not in perf samples and this "
			  "code does not store them where they can be found)");
	}
	if (s->o.ret || s->o.latency)
		ps_note(s, PROBE_NOTE_ATTACH,
		     "%s%s [%s] at %s size %" PRIu64 ": %s on entry, %u of %u ret site(s)%s", m->name,
		     m->sig, c->tier, where, c->size, v->st.how, v->st.ret_armed, v->st.ret_sites,
		     v->st.tail_sites ? ", leaves by tail call too (those returns are not seen)" : "");
	else
		ps_note(s, PROBE_NOTE_ATTACH, "%s%s [%s] at %s size %" PRIu64 ": %s on entry", m->name,
		     m->sig, c->tier, where, c->size, v->st.how);
}
