/* SPDX-License-Identifier: MIT */
/*
 * session_decode.c - a probe hit's registers and stack as text: arguments by the
 * method's signature (SysV classification), return values, strings read from the
 * target, the caller stack named from the perf map.
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

char *ps_decode_args(struct probe_session *s, const struct probe_method *m,
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

char *ps_decode_ret(struct probe_session *s, const struct probe_method *m,
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

char *ps_decode_stack(struct probe_session *s, const struct perf_sample *ps)
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
