/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - user stacks from registers and a stack copy, for off-CPU
 * samples: a thread blocks inside libc (futex, epoll_wait), which is built
 * without frame pointers, so the kernel's frame-pointer walk stops at the
 * first frame. Here native frames (libc, libcoreclr: ELF files with
 * .eh_frame) are unwound with their CFI through libdw, and frames without
 * CFI (JIT and ReadyToRun code, which keep RBP frames) with the frame
 * pointer, all reading only the stack copy taken with the sample. The walk
 * stops when it leaves the copy, finds no rule, or stops making progress.
 */
#include "common/compat.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include "profile/profile.h"

#define MAX_ELFS 256

struct uw_elf {
	struct uw_elf *next;
	char *path;
	int fd;
	Elf *elf;
	Dwarf_CFI *cfi;
	bool bad;
};

struct profile_unwinder {
	struct sym_proc *sp;
	struct uw_elf *elfs;
	size_t nelfs;
	uint64_t unwound, frames;
};

int profile_unwinder_new(struct profile_unwinder **out, struct sym_proc *sp)
{
	struct profile_unwinder *u = calloc(1, sizeof(*u));

	*out = NULL;
	if (!u)
		return -ENOMEM;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(u);
		return -ENOTSUP;
	}
	u->sp = sp;
	*out = u;
	return 0;
}

void profile_unwinder_free(struct profile_unwinder *u)
{
	struct uw_elf *e, *n;

	if (!u)
		return;
	for (e = u->elfs; e; e = n) {
		n = e->next;
		if (e->cfi)
			dwarf_cfi_end(e->cfi);
		if (e->elf)
			elf_end(e->elf);
		if (e->fd >= 0)
			close(e->fd);
		free(e->path);
		free(e);
	}
	free(u);
}

static struct uw_elf *elf_get(struct profile_unwinder *u, const char *path)
{
	struct uw_elf *e;

	for (e = u->elfs; e; e = e->next)
		if (!strcmp(e->path, path))
			return e->bad ? NULL : e;
	if (u->nelfs >= MAX_ELFS)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fd = -1;
	e->path = strdup(path);
	if (!e->path) {
		free(e);
		return NULL;
	}
	e->next = u->elfs;
	u->elfs = e;
	u->nelfs++;
	e->bad = true;
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return NULL;
	e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF)
		return NULL;
	e->cfi = dwarf_getcfi_elf(e->elf);
	if (!e->cfi)
		return NULL;
	e->bad = false;
	return e;
}

struct regs {
	uint64_t ip, sp, bp;
};

static bool stack_read(const struct perf_user_state *us, uint64_t addr, uint64_t *v)
{
	if (addr < us->sp || addr - us->sp > us->stack_size || us->stack_size - (addr - us->sp) < 8)
		return false;
	memcpy(v, us->stack + (addr - us->sp), 8);
	return true;
}

static bool reg_value(const struct regs *r, unsigned regno, uint64_t *v)
{
	switch (regno) {
	case 6: *v = r->bp; return true;
	case 7: *v = r->sp; return true;
	case 16: *v = r->ip; return true;
	default: return false;
	}
}

/*
 * Evaluates the small DWARF expressions CFI rules produce. *is_value is set
 * when the result is the value itself (DW_OP_stack_value), else it is the
 * address the value is saved at.
 */
static bool eval(const Dwarf_Op *ops, size_t nops, const struct regs *r, uint64_t cfa, bool have_cfa,
		 uint64_t *out, bool *is_value)
{
	uint64_t st[8];
	size_t sp = 0, i;

	*is_value = false;
	for (i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];

		if (sp >= ARRAY_SIZE(st) - 1)
			return false;
		if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
			uint64_t v;

			if (!reg_value(r, op->atom - DW_OP_breg0, &v))
				return false;
			st[sp++] = v + (uint64_t)(int64_t)op->number;
			continue;
		}
		if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) {
			st[sp++] = op->atom - DW_OP_lit0;
			continue;
		}
		switch (op->atom) {
		case DW_OP_bregx: {
			uint64_t v;

			if (!reg_value(r, (unsigned)op->number, &v))
				return false;
			st[sp++] = v + (uint64_t)(int64_t)op->number2;
			break;
		}
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return false;
			st[sp++] = cfa;
			break;
		case DW_OP_plus_uconst:
			if (!sp)
				return false;
			st[sp - 1] += op->number;
			break;
		case DW_OP_consts:
		case DW_OP_constu:
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
			st[sp++] = op->number;
			break;
		case DW_OP_plus:
			if (sp < 2)
				return false;
			st[sp - 2] += st[sp - 1];
			sp--;
			break;
		case DW_OP_minus:
			if (sp < 2)
				return false;
			st[sp - 2] -= st[sp - 1];
			sp--;
			break;
		case DW_OP_stack_value:
			*is_value = true;
			break;
		default:
			return false;
		}
	}
	if (sp != 1)
		return false;
	*out = st[0];
	return true;
}

/* One CFI step. Returns 1 done, 0 no CFI here (caller tries frame pointers), -1 stop. */
static int cfi_step(struct profile_unwinder *u, const struct perf_user_state *us, struct regs *r,
		    bool leaf)
{
	struct sym_frame f;
	uint64_t cfa, v;
	Dwarf_Frame *frame = NULL;
	Dwarf_Op mem[3], *ops;
	struct uw_elf *e;
	struct regs nr;
	size_t nops;
	bool is_value;
	int rc = -1;

	if (!u->sp)
		return 0;
	/*
	 * A return address points after the call: look up ip - 1 so the call
	 * itself is found. lib/sym gives the mapping's file and the link-time
	 * address already (no second search of the maps).
	 */
	(void)sym_lookup(u->sp, leaf ? r->ip : r->ip - 1, &f);
	if (f.kind != SYM_NATIVE || !f.elf_path)
		return 0;
	e = elf_get(u, f.elf_path);
	if (!e)
		return 0;
	if (dwarf_cfi_addrframe(e->cfi, f.elf_vaddr, &frame) != 0 || !frame)
		return 0;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || !nops ||
	    !eval(ops, nops, r, 0, false, &cfa, &is_value))
		goto out;
	nr = *r;
	nr.sp = cfa;
	/* return address (DWARF register 16 on x86-64) */
	if (dwarf_frame_register(frame, 16, mem, &ops, &nops) != 0 || !nops ||
	    !eval(ops, nops, r, cfa, true, &v, &is_value))
		goto out;
	if (!is_value && !stack_read(us, v, &v))
		goto out;
	nr.ip = v;
	/* rbp (6): saved, same value, or undefined */
	if (dwarf_frame_register(frame, 6, mem, &ops, &nops) == 0 && nops) {
		if (!eval(ops, nops, r, cfa, true, &v, &is_value))
			goto out;
		if (!is_value && !stack_read(us, v, &v))
			goto out;
		nr.bp = v;
	}
	if (nr.sp <= r->sp || !nr.ip)
		goto out;
	*r = nr;
	rc = 1;
out:
	free(frame);
	return rc;
}

unsigned profile_unwind_user(void *ctx, const struct perf_user_state *us, uint64_t *out, unsigned cap)
{
	struct profile_unwinder *u = ctx;
	struct regs r = { us->ip, us->sp, us->bp };
	unsigned n = 0;

	while (n < cap) {
		int c;

		out[n++] = r.ip;
		c = cfi_step(u, us, &r, n == 1);
		if (c < 0)
			break;
		if (c == 0) {
			/* frame pointer: [bp] = caller's bp, [bp+8] = return address */
			uint64_t nbp, ra;

			if (!stack_read(us, r.bp, &nbp) || !stack_read(us, r.bp + 8, &ra) || !ra)
				break;
			if (nbp && nbp <= r.bp)
				nbp = 0; /* not a chain: stop after this frame */
			r.sp = r.bp + 16;
			r.ip = ra;
			r.bp = nbp;
			if (!nbp) {
				if (n < cap)
					out[n++] = r.ip;
				break;
			}
		}
	}
	u->unwound++;
	u->frames += n;
	return n;
}
