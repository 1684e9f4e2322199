/* SPDX-License-Identifier: MIT */
/*
 * pe_r2r.c - ReadyToRun code tables: NativeFormat integers, NativeArray
 * (MethodDefEntryPoints), NativeHashtable (InstanceMethodEntryPoints),
 * RUNTIME_FUNCTIONS, HotColdMap; the method/range table and its lookups.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "pe/pe.h"
#include "pe/pe_internal.h"

/* R2R method signature flags (READYTORUN_METHOD_SIG_*). */
#define SIG_UNBOXING 0x01
#define SIG_INSTANTIATING 0x02
#define SIG_METHOD_INST 0x04
#define SIG_SLOT 0x08
#define SIG_MEMBERREF 0x10
#define SIG_CONSTRAINED 0x20
#define SIG_OWNER_TYPE 0x40
#define SIG_UPDATE_CONTEXT 0x80

/* ---- NativeFormat primitives, over the whole file; offsets are file offsets ---- */

static int nf_unsigned(const struct pe_file *pf, uint64_t *off, uint32_t *v)
{
	uint64_t o = *off;
	const uint8_t *p;
	uint32_t b;

	if (o >= pf->len)
		return -EBADMSG;
	p = pf->data + o;
	b = p[0];
	if (!(b & 1)) {
		*v = b >> 1;
		*off = o + 1;
		return 0;
	}
	if (!(b & 2)) {
		if (pf->len - o < 2)
			return -EBADMSG;
		*v = (b >> 2) | ((uint32_t)p[1] << 6);
		*off = o + 2;
		return 0;
	}
	if (!(b & 4)) {
		if (pf->len - o < 3)
			return -EBADMSG;
		*v = (b >> 3) | ((uint32_t)p[1] << 5) | ((uint32_t)p[2] << 13);
		*off = o + 3;
		return 0;
	}
	if (!(b & 8)) {
		if (pf->len - o < 4)
			return -EBADMSG;
		*v = (b >> 4) | ((uint32_t)p[1] << 4) | ((uint32_t)p[2] << 12) |
		     ((uint32_t)p[3] << 20);
		*off = o + 4;
		return 0;
	}
	if (!(b & 16)) {
		if (pf->len - o < 5)
			return -EBADMSG;
		*v = ct_le32(p + 1);
		*off = o + 5;
		return 0;
	}
	return -EBADMSG;
}

/*
 * Signed form. Like the runtime's reader, the 1-4 byte forms are not
 * sign-extended (writers only emit forward offsets there); the 5-byte form
 * is a full int32.
 */
static int nf_signed(const struct pe_file *pf, uint64_t *off, int32_t *v)
{
	uint32_t u;
	int err = nf_unsigned(pf, off, &u);

	*v = (int32_t)u;
	return err;
}

static int read_index(const struct pe_file *pf, uint64_t off, unsigned esz, uint32_t *v)
{
	unsigned n = 1u << esz;

	if (off >= pf->len || pf->len - off < n)
		return -EBADMSG;
	*v = esz == 0 ? pf->data[off] : esz == 1 ? ct_le16(pf->data + off)
					      : ct_le32(pf->data + off);
	return 0;
}

struct nf_array {
	uint64_t base;
	uint32_t count;
	unsigned esz;
};

static int nf_array_init(const struct pe_file *pf, uint64_t off, struct nf_array *a)
{
	uint32_t h;
	uint64_t nblocks;

	if (nf_unsigned(pf, &off, &h))
		return -EBADMSG;
	a->base = off;
	a->count = h >> 2;
	a->esz = h & 3;
	if (a->esz > 2)
		return -EBADMSG;
	nblocks = ((uint64_t)a->count + 15) / 16;
	if (nblocks > (pf->len - off) >> a->esz)
		return -EBADMSG;
	return 0;
}

/* Offset of element idx, or -ENOENT when absent. */
static int nf_array_get(const struct pe_file *pf, const struct nf_array *a, uint32_t idx,
			uint64_t *elem)
{
	uint64_t off;
	uint32_t blk;
	unsigned bit;

	if (idx >= a->count)
		return -ENOENT;
	if (read_index(pf, a->base + ((uint64_t)(idx / 16) << a->esz), a->esz, &blk))
		return -EBADMSG;
	off = a->base + blk;
	for (bit = 8; bit; bit >>= 1) {
		uint64_t next = off;
		uint32_t v;

		if (nf_unsigned(pf, &next, &v))
			return -EBADMSG;
		if (idx & bit) {
			if (v & 2) {
				off += v >> 2;
				continue;
			}
		} else if (v & 1) {
			off = next;
			continue;
		}
		/* A leaf that short-cuts the remaining levels? */
		if ((v & 3) == 0 && (v >> 2) == (idx & 15)) {
			off = next;
			break;
		}
		return -ENOENT;
	}
	*elem = off;
	return 0;
}

/* Entry point record: RUNTIME_FUNCTIONS index, plus whether fixups exist. */
static int read_entry_id(const struct pe_file *pf, uint64_t off, uint32_t *rf, bool *fixups)
{
	uint32_t id, d;
	uint64_t after;

	if (nf_unsigned(pf, &off, &id))
		return -EBADMSG;
	if (id & 1) {
		if (id & 2) {
			/* the fixup blob sits before: validate the back offset */
			after = off;
			if (nf_unsigned(pf, &after, &d) || d > off)
				return -EBADMSG;
		}
		*rf = id >> 2;
		*fixups = true;
	} else {
		*rf = id >> 1;
		*fixups = false;
	}
	return 0;
}

/* ---- collection of entry points ---- */

struct entry {
	struct pe_file *mod;   /* metadata for token; NULL when unknown */
	uint32_t token;
	uint32_t component;
	uint32_t rf;
	uint64_t sig_off;      /* instance entries: file offset + 1 of the signature */
	unsigned flags;
};

struct entries {
	struct entry *v;
	size_t n, alloc;
	size_t max;
};

static int entries_add(struct entries *es, const struct entry *e)
{
	if (es->n == es->alloc) {
		size_t na = es->alloc ? es->alloc * 2 : 1024;
		struct entry *nv;

		if (es->n >= es->max)
			return -EMSGSIZE;
		nv = realloc(es->v, na * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		es->v = nv;
		es->alloc = na;
	}
	es->v[es->n++] = *e;
	return 0;
}

static int collect_methoddefs(struct pe_file *pf, uint32_t comp, uint32_t rva, uint32_t size,
			      struct pe_file *mod, uint32_t nrf, struct entries *es)
{
	struct nf_array a;
	uint64_t off;
	uint32_t i;
	int err;

	if (!size)
		return 0;
	if (pe_file_rva_to_offset(pf, rva, &off))
		return -EBADMSG;
	err = nf_array_init(pf, off, &a);
	if (err)
		return err;
	/* RIDs past the MethodDef table name no method */
	if (mod && a.count > mod->md.tab[PE_MD_METHODDEF].rows)
		a.count = mod->md.tab[PE_MD_METHODDEF].rows;
	for (i = 0; i < a.count; i++) {
		struct entry e = { .mod = mod, .component = comp };
		uint64_t elem;
		bool fix;

		err = nf_array_get(pf, &a, i, &elem);
		if (err == -ENOENT)
			continue;
		if (err)
			return err;
		err = read_entry_id(pf, elem, &e.rf, &fix);
		if (err)
			return err;
		if (e.rf >= nrf)
			return -EBADMSG;
		e.token = ((uint32_t)PE_MD_METHODDEF << 24) | (i + 1);
		e.flags = fix ? PE_METHOD_FIXUPS : 0;
		if (!mod)
			e.flags |= PE_METHOD_UNRESOLVED;
		err = entries_add(es, &e);
		if (err)
			return err;
	}
	return 0;
}

/* ---- R2R method signatures (instance entry points) ---- */

struct inst_info {
	struct pe_sigctx ctx;
	uint32_t flags;
	uint32_t token;
	uint32_t slot;
	struct pe_inst tinst, minst;
	struct strbuf owner; /* owner type name, "" if no OwnerType */
	uint64_t end;        /* file offset after the signature */
};

static void inst_info_release(struct inst_info *ii)
{
	pe_inst_release(&ii->tinst);
	pe_inst_release(&ii->minst);
	strbuf_release(&ii->owner);
}

static int read_owner(struct inst_info *ii, struct cursor *c, bool update_mod)
{
	struct pe_sigctx *ctx = &ii->ctx;
	uint32_t mi, token, v, n;
	uint8_t b;
	int err;

	if (cur_left(c) && c->p[c->off] == PE_ET_MODULE_ZAPSIG) {
		cur_u8(c, &b);
		if (pe_cur_comp(c, &mi))
			return -EBADMSG;
		if (update_mod || !ctx->mod)
			ctx->mod = pe_module_by_index(ctx->root, mi);
	}
	if (cur_left(c) && c->p[c->off] == PE_ET_GENERICINST) {
		cur_u8(c, &b);
		if (cur_u8(c, &b) || (b != PE_ET_CLASS && b != PE_ET_VALUETYPE))
			return -EBADMSG;
		if (pe_cur_comp(c, &v) || (v & 3) == 3 || (v >> 2) == 0)
			return -EBADMSG;
		token = ((uint32_t)((v & 3) == 0 ? PE_MD_TYPEDEF
				    : (v & 3) == 1 ? PE_MD_TYPEREF : PE_MD_TYPESPEC) << 24) |
			(v >> 2);
		if (pe_cur_comp(c, &n) || n == 0)
			return -EBADMSG;
		err = ctx->mod ? pe_md_type_name(ctx->mod, token, &ii->owner) : -EPROTO;
		if (err == -ENOMEM || err == -EMSGSIZE)
			return err;
		if (err) {
			strbuf_reset(&ii->owner);
			err = strbuf_addf(&ii->owner, "[?]0x%08" PRIx32, token);
			if (err)
				return err;
		}
		pe_inst_release(&ii->tinst);
		err = pe_inst_read(ctx, c, n, &ii->tinst);
		if (err)
			return err;
		err = strbuf_addch(&ii->owner, '[');
		for (v = 0; v < n && !err; v++) {
			if (v)
				err = strbuf_addch(&ii->owner, ',');
			if (!err)
				err = strbuf_addstr(&ii->owner, ii->tinst.types[v].name);
		}
		return err ? err : strbuf_addch(&ii->owner, ']');
	}
	return pe_sig_type(ctx, c, &ii->owner, NULL, 0);
}

static int parse_inst_sig(struct pe_file *pf, uint64_t off, struct inst_info *ii)
{
	struct strbuf scratch = STRBUF_INIT_MAX(1 << 16);
	struct cursor c;
	uint32_t v;
	bool updated = false;
	int err = 0;

	memset(ii, 0, sizeof(*ii));
	strbuf_init(&ii->owner, 1 << 16);
	strbuf_init(&ii->tinst.names, 1 << 16);
	strbuf_init(&ii->minst.names, 1 << 16);
	ii->ctx.root = pf;
	ii->ctx.mod = pf->info.composite ? NULL : (pf->md.present ? pf : NULL);
	ii->ctx.r2r = true;
	if (off >= pf->len)
		return -EBADMSG;
	cur_init(&c, pf->data + off, pf->len - off);
	if (pe_cur_comp(&c, &ii->flags))
		return -EBADMSG;
	if (ii->flags & SIG_UPDATE_CONTEXT) {
		if (pe_cur_comp(&c, &v))
			return -EBADMSG;
		ii->ctx.mod = pe_module_by_index(pf, v);
		updated = true;
	}
	if (ii->flags & SIG_OWNER_TYPE) {
		err = read_owner(ii, &c, !updated);
		if (err)
			return err;
	}
	if (ii->flags & SIG_SLOT) {
		if (pe_cur_comp(&c, &ii->slot))
			return -EBADMSG;
	} else {
		if (pe_cur_comp(&c, &v) || v == 0 || v > 0xffffff)
			return -EBADMSG;
		ii->token = ((uint32_t)((ii->flags & SIG_MEMBERREF) ? PE_MD_MEMBERREF
								     : PE_MD_METHODDEF) << 24) | v;
	}
	if (ii->flags & SIG_METHOD_INST) {
		if (pe_cur_comp(&c, &v) || v == 0)
			return -EBADMSG;
		pe_inst_release(&ii->minst);
		err = pe_inst_read(&ii->ctx, &c, v, &ii->minst);
		if (err)
			return err;
	}
	if (ii->flags & SIG_CONSTRAINED) {
		err = pe_sig_type(&ii->ctx, &c, &scratch, NULL, 0);
		strbuf_release(&scratch);
		if (err)
			return err;
	}
	ii->end = off + c.off;
	return 0;
}

static int collect_instances(struct pe_file *pf, uint32_t nrf, struct entries *es)
{
	uint32_t rva, size, hdr, start, end, b, nb;
	uint64_t off, base, p, e, budget;
	unsigned esz;
	int err;

	if (pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_INSTANCE_ENTRY_POINTS, &rva,
			    &size) || !size)
		return 0;
	if (pe_file_rva_to_offset(pf, rva, &off))
		return -EBADMSG;
	hdr = pf->data[off];
	base = off + 1;
	esz = hdr & 3;
	if ((hdr >> 2) > 31 || esz > 2)
		return -EBADMSG;
	nb = 1u << (hdr >> 2);
	if ((uint64_t)nb + 1 > (pf->len - base) >> esz)
		return -EBADMSG;
	/* payloads do not overlap in real images: bound the total parsing work */
	budget = 8 * (uint64_t)size + 65536;
	for (b = 0; b < nb; b++) {
		if (read_index(pf, base + ((uint64_t)b << esz), esz, &start) ||
		    read_index(pf, base + ((uint64_t)(b + 1) << esz), esz, &end))
			return -EBADMSG;
		p = base + start;
		e = base + end;
		if (e > pf->len)
			return -EBADMSG;
		while (p < e) {
			struct entry en = { 0 };
			struct inst_info ii;
			uint64_t at;
			int32_t delta;
			bool fix = false;

			p++; /* low 8 bits of the hash */
			at = p;
			if (nf_signed(pf, &p, &delta))
				return -EBADMSG;
			if ((int64_t)at + delta < 0 || (uint64_t)((int64_t)at + delta) >= pf->len)
				return -EBADMSG;
			at = (uint64_t)((int64_t)at + delta);
			err = parse_inst_sig(pf, at, &ii);
			if (!err && ii.end - at > budget)
				err = -E2BIG;
			if (!err) {
				budget -= ii.end - at;
				err = read_entry_id(pf, ii.end, &en.rf, &fix);
			}
			en.mod = ii.ctx.mod;
			en.token = ii.token;
			en.flags = PE_METHOD_INSTANCE | (fix ? PE_METHOD_FIXUPS : 0);
			if (!err && (ii.flags & SIG_UNBOXING))
				en.flags |= PE_METHOD_UNBOXING;
			if (!err && (ii.flags & SIG_MEMBERREF))
				en.flags |= PE_METHOD_MEMBERREF;
			if (!en.mod)
				en.flags |= PE_METHOD_UNRESOLVED;
			en.sig_off = at + 1;
			inst_info_release(&ii);
			if (err == -ENOMEM)
				return err;
			if (err == -E2BIG)
				return -EBADMSG;
			if (err || en.rf >= nrf) {
				/* skip one entry we cannot decode; keep the rest */
				ct_debug("pe: instance entry at 0x%" PRIx64 " skipped (%d)", at, err);
				continue;
			}
			err = entries_add(es, &en);
			if (err)
				return err;
		}
	}
	return 0;
}

/* ---- names ---- */

static int add_inst_list(struct strbuf *out, const struct pe_inst *in)
{
	uint32_t i;
	int err = strbuf_addch(out, '[');

	for (i = 0; i < in->n && !err; i++) {
		if (i)
			err = strbuf_addch(out, ',');
		if (!err)
			err = strbuf_addstr(out, in->types[i].name);
	}
	return err ? err : strbuf_addch(out, ']');
}

static int member_name(struct pe_file *mod, uint32_t token, struct strbuf *out)
{
	uint32_t nm = 0;
	unsigned t = token >> 24;

	if (pe_md_col(&mod->md, t, token & 0xffffff, t == PE_MD_METHODDEF ? 3 : 1, &nm))
		return -ENOENT;
	return strbuf_addstr(out, pe_md_str(&mod->md, nm));
}

static int method_blob(struct pe_file *mod, uint32_t token, const uint8_t **p, uint32_t *len)
{
	unsigned t = token >> 24;
	uint32_t bi;

	if (pe_md_col(&mod->md, t, token & 0xffffff, t == PE_MD_METHODDEF ? 4 : 2, &bi))
		return -ENOENT;
	return pe_md_blob_get(&mod->md, bi, p, len);
}

/* Appends "name\0sig\0" for one entry. */
static int format_entry(struct pe_file *pf, const struct entry *e, struct strbuf *out)
{
	struct pe_sig *sig = NULL;
	struct inst_info ii;
	bool have_ii = false;
	size_t start = out->len;
	int err;

	if (e->sig_off) {
		err = parse_inst_sig(pf, e->sig_off - 1, &ii);
		have_ii = true;
		if (err)
			goto fallback;
	}
	if (!e->mod || !e->mod->md.present) {
		err = -ENOENT;
		goto fallback;
	}
	if (have_ii && ii.owner.len && !(ii.flags & SIG_SLOT)) {
		err = strbuf_addstr(out, ii.owner.buf);
		if (!err)
			err = strbuf_addstr(out, "::");
		if (!err)
			err = member_name(e->mod, e->token, out);
	} else {
		err = pe_md_method_name(e->mod, e->token, out);
	}
	if (!err && have_ii && ii.minst.n)
		err = add_inst_list(out, &ii.minst);
	if (!err)
		err = strbuf_addch(out, '\0');
	if (err)
		goto fallback;
	{
		struct pe_sigctx ctx = { .root = pf, .mod = e->mod, .r2r = false };
		const uint8_t *bp;
		uint32_t bl;

		if (have_ii) {
			ctx.tinst = ii.tinst.n ? &ii.tinst : NULL;
			ctx.minst = ii.minst.n ? &ii.minst : NULL;
		}
		err = method_blob(e->mod, e->token, &bp, &bl);
		if (!err)
			err = pe_sig_decode(&ctx, bp, bl, NULL, 0, &sig);
		if (err == -ENOMEM || err == -EMSGSIZE)
			goto out;
		err = strbuf_addstr(out, err ? "(?)" : sig->text);
		if (!err)
			err = strbuf_addch(out, '\0');
	}
	goto out;
fallback:
	if (err == -ENOMEM || err == -EMSGSIZE)
		goto out;
	strbuf_setlen(out, start);
	err = strbuf_addf(out, "[%s]0x%08" PRIx32, e->mod && e->mod->info.assembly_name
			  ? e->mod->info.assembly_name : "?", e->token);
	if (!err)
		err = strbuf_add(out, "\0\0", 2);
out:
	if (have_ii)
		inst_info_release(&ii);
	pe_sig_free(sig);
	return err;
}

/* ---- RUNTIME_FUNCTIONS ---- */

struct rf_table {
	const uint8_t *p;
	uint32_t n;
	unsigned esz;
};

static void rf_range(const struct pe_file *pf, const struct rf_table *t, uint32_t i,
		     uint32_t *begin, uint32_t *end)
{
	const uint8_t *e = t->p + (size_t)i * t->esz;
	uint32_t b = ct_le32(e), len = 0;

	if (pf->info.machine == PE_MACHINE_ARMNT)
		b &= ~1u; /* Thumb bit */
	if (t->esz == 12) {
		uint32_t en = ct_le32(e + 4);

		len = en > b ? en - b : 0;
	} else if (pf->info.machine == PE_MACHINE_ARM64) {
		uint32_t unw = ct_le32(e + 4);

		if (unw & 3) {
			len = ((unw >> 2) & 0x7ff) * 4; /* packed unwind data */
		} else {
			const uint8_t *x = pe_rva_ptr(pf, unw, 4);

			len = x ? (ct_le32(x) & 0x3ffff) * 4 : 0;
		}
	} else if (i + 1 < t->n) {
		uint32_t nb = ct_le32(e + t->esz);

		len = nb > b ? nb - b : 0;
	}
	*begin = b;
	*end = b + len < b ? b : b + len;
}

static int cmp_range_idx(const void *a, const void *b, void *arg)
{
	const struct pe_range *r = arg;
	const struct pe_range *x = &r[*(const uint32_t *)a], *y = &r[*(const uint32_t *)b];

	if (x->begin_rva != y->begin_rva)
		return x->begin_rva < y->begin_rva ? -1 : 1;
	return x->end_rva < y->end_rva ? -1 : x->end_rva > y->end_rva;
}

struct build {
	struct rf_table rft;
	uint8_t *is_entry;
	int32_t *rf_owner;
	uint32_t first_cold;
	uint32_t *cold_start; /* per hot rf: first cold rf + 1, or 0 */
	uint32_t *cold_count;
	struct entries es;
	struct strbuf names;
	size_t *name_off;
};

static void build_release(struct build *b)
{
	free(b->is_entry);
	free(b->rf_owner);
	free(b->cold_start);
	free(b->cold_count);
	free(b->es.v);
	free(b->name_off);
	strbuf_release(&b->names);
}

static int load_hot_cold(struct pe_file *pf, struct build *b)
{
	uint32_t rva, size, n, i;
	const uint8_t *p;

	b->first_cold = b->rft.n;
	if (pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_HOT_COLD_MAP, &rva, &size) ||
	    size < 8)
		return 0;
	n = size / 8;
	p = pe_rva_ptr(pf, rva, n * 8);
	if (!p)
		return -EBADMSG;
	b->cold_start = calloc(b->rft.n + 1, sizeof(uint32_t));
	b->cold_count = calloc(b->rft.n + 1, sizeof(uint32_t));
	if (!b->cold_start || !b->cold_count)
		return -ENOMEM;
	/* pairs {cold rf, hot rf}; a cold part runs to the next pair's cold rf */
	for (i = 0; i < n; i++) {
		uint32_t cold = ct_le32(p + 8 * i), hot = ct_le32(p + 8 * i + 4);
		uint32_t next = i + 1 < n ? ct_le32(p + 8 * (i + 1)) : b->rft.n;

		if (cold >= b->rft.n || hot >= b->rft.n || next > b->rft.n || next <= cold)
			return -EBADMSG;
		if (cold < b->first_cold)
			b->first_cold = cold;
		b->cold_start[hot] = cold + 1;
		b->cold_count[hot] = next - cold;
	}
	return 0;
}

static int collect_all(struct pe_file *pf, struct build *b)
{
	uint32_t rva, size, i;
	int err;

	if (!pf->info.composite) {
		if (pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_METHODDEF_ENTRY_POINTS, &rva,
				    &size))
			size = 0;
		err = collect_methoddefs(pf, 0, rva, size, pf->md.present ? pf : NULL, b->rft.n,
					 &b->es);
		if (err)
			return err;
	} else {
		for (i = 0; i < pf->ncomps; i++) {
			struct pe_comp *cp = &pf->comps[i];
			struct pe_file *m = pe_module_by_index(pf, i + 2);

			if (pe_find_r2r_sec(cp->secs, cp->nsecs, PE_R2R_METHODDEF_ENTRY_POINTS, &rva,
					    &size))
				continue;
			if (m && !m->md.present)
				m = NULL;
			err = collect_methoddefs(pf, i, rva, size, m, b->rft.n, &b->es);
			if (err)
				return err;
		}
	}
	return collect_instances(pf, b->rft.n, &b->es);
}

static int build_methods(struct pe_file *pf)
{
	struct build b = { 0 };
	struct pe_method *ms = NULL;
	struct pe_range *rs = NULL;
	size_t nr = 0, i;
	uint32_t rva, size;
	int err;

	strbuf_init(&b.names, pf->opts.max_names_bytes);
	/* crafted trees can share bytes between entries: cap them by memory too */
	b.es.max = CT_MIN(pf->len, pf->opts.max_names_bytes / sizeof(struct entry));
	if (!pf->info.is_r2r || pf->info.component) {
		err = -EPROTO;
		goto out;
	}
	if (pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_RUNTIME_FUNCTIONS, &rva, &size)) {
		err = -EPROTO;
		goto out;
	}
	b.rft.esz = pf->info.machine == PE_MACHINE_AMD64 ? 12 : 8;
	b.rft.n = size / b.rft.esz;
	b.rft.p = pe_rva_ptr(pf, rva, b.rft.n * b.rft.esz);
	if (!b.rft.p && b.rft.n) {
		err = -EBADMSG;
		goto out;
	}
	b.is_entry = calloc(b.rft.n + 1, 1);
	b.rf_owner = malloc((b.rft.n + 1) * sizeof(int32_t));
	if (!b.is_entry || !b.rf_owner) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b.rft.n; i++)
		b.rf_owner[i] = -1;
	err = load_hot_cold(pf, &b);
	if (!err)
		err = collect_all(pf, &b);
	if (err)
		goto out;
	for (i = 0; i < b.es.n; i++)
		b.is_entry[b.es.v[i].rf] = 1;

	ms = calloc(b.es.n ? b.es.n : 1, sizeof(*ms));
	pf->meth_mod = calloc(b.es.n ? b.es.n : 1, sizeof(*pf->meth_mod));
	pf->inst_sig = calloc(b.es.n ? b.es.n : 1, sizeof(*pf->inst_sig));
	/* each rf belongs to at most one range */
	rs = calloc(b.rft.n ? b.rft.n : 1, sizeof(*rs));
	b.name_off = calloc(b.es.n ? b.es.n : 1, sizeof(size_t));
	if (!ms || !rs || !pf->meth_mod || !pf->inst_sig || !b.name_off) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b.es.n; i++) {
		const struct entry *e = &b.es.v[i];
		struct pe_method *m = &ms[i];
		uint32_t rf = e->rf, j, k;

		m->token = e->token;
		m->component = e->component;
		m->rf_index = rf;
		m->flags = e->flags;
		pf->meth_mod[i] = e->mod;
		pf->inst_sig[i] = e->sig_off;
		if (b.rf_owner[rf] >= 0) {
			/* Same code as an earlier method: share its ranges. */
			const struct pe_method *o = &ms[b.rf_owner[rf]];

			m->flags |= PE_METHOD_SHARED;
			m->first_range = o->first_range;
			m->nranges = o->nranges;
			m->code_size = o->code_size;
			m->entry_rva = o->entry_rva;
			m->entry_offset = o->entry_offset;
			continue;
		}
		m->first_range = (uint32_t)nr;
		for (j = rf; j < b.rft.n; j++) {
			struct pe_range *r;

			if (j != rf && (b.is_entry[j] || j >= b.first_cold || b.rf_owner[j] >= 0))
				break;
			r = &rs[nr++];
			r->kind = j == rf ? PE_RANGE_MAIN : PE_RANGE_FUNCLET;
			r->rf_index = j;
			b.rf_owner[j] = (int32_t)i;
		}
		if (b.cold_start && b.cold_start[rf]) {
			uint32_t cs = b.cold_start[rf] - 1;

			for (k = 0; k < b.cold_count[rf]; k++) {
				if (b.rf_owner[cs + k] >= 0)
					continue;
				rs[nr].kind = PE_RANGE_COLD;
				rs[nr].rf_index = cs + k;
				b.rf_owner[cs + k] = (int32_t)i;
				nr++;
			}
		}
		m->nranges = (uint32_t)(nr - m->first_range);
		for (j = m->first_range; j < nr; j++) {
			struct pe_range *r = &rs[j];

			rf_range(pf, &b.rft, r->rf_index, &r->begin_rva, &r->end_rva);
			r->method = (uint32_t)i;
			if (pe_file_rva_to_offset(pf, r->begin_rva, &r->file_offset))
				r->file_offset = UINT64_MAX;
			m->code_size += r->end_rva - r->begin_rva;
		}
		m->entry_rva = rs[m->first_range].begin_rva;
		m->entry_offset = rs[m->first_range].file_offset;
	}
	/* names */
	for (i = 0; i < b.es.n; i++) {
		b.name_off[i] = b.names.len;
		err = format_entry(pf, &b.es.v[i], &b.names);
		if (err)
			goto out;
	}
	pf->arena = strbuf_detach(&b.names, NULL);
	if (!pf->arena) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b.es.n; i++) {
		ms[i].name = pf->arena + b.name_off[i];
		ms[i].sig = ms[i].name + strlen(ms[i].name) + 1;
		ms[i].module = b.es.v[i].mod && b.es.v[i].mod->info.assembly_name
				       ? b.es.v[i].mod->info.assembly_name : "";
	}
	pf->sorted = malloc((nr ? nr : 1) * sizeof(uint32_t));
	if (!pf->sorted) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++)
		pf->sorted[i] = (uint32_t)i;
	qsort_r(pf->sorted, nr, sizeof(uint32_t), cmp_range_idx, rs);
	pf->nsorted = nr;
	pf->methods = ms;
	pf->nmethods = b.es.n;
	pf->ranges = rs;
	pf->nranges = nr;
	ms = NULL;
	rs = NULL;
	ct_debug("pe: %zu methods, %zu code ranges of %u runtime functions", pf->nmethods, nr,
		 b.rft.n);
out:
	free(ms);
	free(rs);
	build_release(&b);
	return err;
}

static int ensure_built(struct pe_file *pf)
{
	if (!pf)
		return -EINVAL;
	if (!pf->built) {
		pf->build_err = build_methods(pf);
		pf->built = true;
	}
	return pf->build_err;
}

int pe_file_methods(struct pe_file *pf, const struct pe_method **methods, size_t *n)
{
	int err = ensure_built(pf);

	if (err)
		return err;
	*methods = pf->methods;
	*n = pf->nmethods;
	return 0;
}

int pe_file_ranges(struct pe_file *pf, const struct pe_range **ranges, size_t *n)
{
	int err = ensure_built(pf);

	if (err)
		return err;
	*ranges = pf->ranges;
	*n = pf->nranges;
	return 0;
}

int pe_file_lookup_rva(struct pe_file *pf, uint32_t rva, const struct pe_method **m,
		       const struct pe_range **r)
{
	size_t lo = 0, hi;
	const struct pe_range *best = NULL;
	int err = ensure_built(pf);

	if (err)
		return err;
	hi = pf->nsorted;
	/* last range with begin <= rva */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pf->ranges[pf->sorted[mid]].begin_rva <= rva)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0)
		best = &pf->ranges[pf->sorted[lo - 1]];
	if (!best || rva >= best->end_rva)
		return -ENOENT;
	if (m)
		*m = &pf->methods[best->method];
	if (r)
		*r = best;
	return 0;
}

int pe_file_lookup_offset(struct pe_file *pf, uint64_t off, const struct pe_method **m,
			  const struct pe_range **r)
{
	uint32_t rva;
	int err;

	if (!pf)
		return -EINVAL;
	err = pe_file_offset_to_rva(pf, off, &rva);
	if (err)
		return err;
	return pe_file_lookup_rva(pf, rva, m, r);
}

bool pe_glob_match(const char *p, const char *s)
{
	const char *star = NULL, *mark = NULL;

	while (*s) {
		if (*p == '*') {
			star = p++;
			mark = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++mark;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

int pe_file_find(struct pe_file *pf, const char *pattern, uint32_t *idx, size_t max, size_t *n)
{
	struct strbuf full = STRBUF_INIT_MAX(PE_DEFAULT_MAX_NAMES_BYTES);
	bool with_sig;
	size_t i, cnt = 0;
	int err;

	if (!pattern || !n || (max && !idx))
		return -EINVAL;
	err = ensure_built(pf);
	if (err)
		return err;
	with_sig = strchr(pattern, '(') != NULL;
	for (i = 0; i < pf->nmethods; i++) {
		const struct pe_method *m = &pf->methods[i];
		const char *s = m->name;

		if (with_sig) {
			strbuf_reset(&full);
			err = strbuf_addstr(&full, m->name);
			if (!err)
				err = strbuf_addstr(&full, m->sig);
			if (err)
				break;
			s = full.buf;
		}
		if (!pe_glob_match(pattern, s))
			continue;
		if (cnt < max)
			idx[cnt] = (uint32_t)i;
		cnt++;
	}
	strbuf_release(&full);
	*n = cnt;
	return err;
}

int pe_file_method_sig(struct pe_file *pf, const struct pe_method *m, struct pe_sig **out)
{
	struct pe_sigctx ctx = { .root = pf };
	struct pe_file *mod;
	struct inst_info ii;
	const uint8_t *bp;
	uint32_t bl;
	size_t i;
	int err = ensure_built(pf);

	if (err)
		return err;
	if (!m || !out || m < pf->methods || m >= pf->methods + pf->nmethods)
		return -EINVAL;
	i = (size_t)(m - pf->methods);
	mod = pf->meth_mod[i];
	if (!mod || !mod->md.present)
		return -ENOENT;
	if (!pf->inst_sig[i])
		return pe_md_method_sig(mod, m->token, out);
	err = parse_inst_sig(pf, pf->inst_sig[i] - 1, &ii);
	if (!err) {
		ctx.mod = mod;
		ctx.tinst = ii.tinst.n ? &ii.tinst : NULL;
		ctx.minst = ii.minst.n ? &ii.minst : NULL;
		err = method_blob(mod, m->token, &bp, &bl);
	}
	if (!err)
		err = pe_sig_decode(&ctx, bp, bl, (m->token >> 24) == PE_MD_METHODDEF ? mod : NULL,
				    m->token & 0xffffff, out);
	inst_info_release(&ii);
	return err;
}

/* ---- debug info: native offset -> IL offset (the DebugInfo section) ---- */

/*
 * The debug info's own variable-length numbers: 4-bit nibbles, the low one
 * of a byte first; 3 bits of value each, high bits first, bit 3 set while
 * more follow. pos counts nibbles from the file's start.
 */
static int nib_u32(const struct pe_file *pf, uint64_t *pos, uint32_t *v)
{
	uint64_t x = 0;
	unsigned k;

	for (k = 0; k < 11; k++) {
		uint64_t byte = *pos / 2;
		unsigned nib;

		if (byte >= pf->len)
			return -EBADMSG;
		nib = (*pos & 1) ? pf->data[byte] >> 4 : pf->data[byte] & 15;
		(*pos)++;
		x = (x << 3) | (nib & 7);
		if (x > UINT32_MAX)
			return -EBADMSG;
		if (!(nib & 8)) {
			*v = (uint32_t)x;
			return 0;
		}
	}
	return -EBADMSG;
}

/* The next whole byte after the nibbles read (a started byte is skipped). */
static uint64_t nib_next_byte(uint64_t pos)
{
	return (pos + 1) / 2;
}

#define IL_BIAS 3u /* stored IL offset = il + 3 (so the -1/-2/-3 markers are 2/1/0) */

static int bounds_nibbles(const struct pe_file *pf, uint64_t pos, uint32_t count,
			  struct pe_bound *out)
{
	uint32_t i, native = 0;

	for (i = 0; i < count; i++) {
		uint32_t d, il, st;

		if (nib_u32(pf, &pos, &d) || nib_u32(pf, &pos, &il) || nib_u32(pf, &pos, &st))
			return -EBADMSG;
		if (d > UINT32_MAX - native)
			return -EBADMSG;
		native += d;
		out[i].native = native;
		out[i].il = il - IL_BIAS;
	}
	return 0;
}

static int bounds_packed(const struct pe_file *pf, uint64_t pos, uint32_t count,
			 unsigned src_bits, uint64_t end, struct pe_bound *out)
{
	uint32_t bn, bi, i = 0, native = 0;
	uint64_t off, acc = 0;
	unsigned per, have = 0;

	if (nib_u32(pf, &pos, &bn) || nib_u32(pf, &pos, &bi) || bn > 31 || bi > 31)
		return -EBADMSG;
	bn++;
	bi++;
	per = bn + bi + src_bits;
	if (per > 56) /* whole entries must fit the 64-bit window with a byte more */
		return -EBADMSG;
	off = nib_next_byte(pos);
	if (off > end || ((uint64_t)count * per + 7) / 8 > end - off)
		return -EBADMSG;
	while (i < count) {
		acc |= (uint64_t)pf->data[off++] << have;
		have += 8;
		while (have >= per && i < count) {
			uint64_t e = acc & ((1ull << per) - 1);
			uint32_t d;

			acc >>= per;
			have -= per;
			e >>= src_bits;
			d = (uint32_t)(e & ((1ull << bn) - 1));
			if (d > UINT32_MAX - native)
				return -EBADMSG;
			native += d;
			out[i].native = native;
			out[i].il = (uint32_t)(e >> bn) - IL_BIAS;
			i++;
		}
	}
	return 0;
}

int pe_file_r2r_bounds(struct pe_file *pf, uint32_t rf_index, struct pe_bound *out, size_t cap,
		       size_t *n)
{
	uint32_t rva, size, lookback, first, nbounds, nvars, count;
	uint64_t off, elem, pos, at, bstart, end;
	struct nf_array a;
	int err;

	*n = 0;
	if (!pf->info.is_r2r ||
	    pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_DEBUG_INFO, &rva, &size) || !size)
		return -ENOENT;
	if (pe_file_rva_to_offset(pf, rva, &off) || off > pf->len || size > pf->len - off)
		return -EBADMSG;
	end = off + size; /* every blob lies inside the section */
	err = nf_array_init(pf, off, &a);
	if (!err)
		err = nf_array_get(pf, &a, rf_index, &elem);
	if (err)
		return err;
	/* a blob shared with an earlier method: a lookback to it */
	at = elem;
	if (nf_unsigned(pf, &at, &lookback))
		return -EBADMSG;
	if (lookback) {
		if (lookback > elem - off)
			return -EBADMSG;
		at = elem - lookback;
	}
	pos = at * 2;
	if (nib_u32(pf, &pos, &first))
		return -EBADMSG;
	if (pf->info.r2r_major >= 17 && first == 0) { /* fat header: six sizes */
		uint32_t skip;
		int k;

		if (nib_u32(pf, &pos, &nbounds) || nib_u32(pf, &pos, &nvars))
			return -EBADMSG;
		for (k = 0; k < 4; k++)
			if (nib_u32(pf, &pos, &skip))
				return -EBADMSG;
	} else {
		nbounds = first;
		if (nib_u32(pf, &pos, &nvars))
			return -EBADMSG;
	}
	bstart = nib_next_byte(pos);
	if (!nbounds)
		return -ENOENT;
	if (bstart > end || nbounds > end - bstart)
		return -EBADMSG;
	end = bstart + nbounds; /* the bounds bytes */
	pos = bstart * 2;
	if (nib_u32(pf, &pos, &count))
		return -EBADMSG;
	if (!count)
		return -ENOENT;
	if (count > PE_R2R_MAX_BOUNDS || count > cap)
		return -EFBIG;
	if (pf->info.r2r_major >= 16)
		err = bounds_packed(pf, pos, count, pf->info.r2r_major >= 17 ? 3 : 2, end, out);
	else
		err = bounds_nibbles(pf, pos, count, out);
	if (err)
		return err;
	/* nibble triples are read past end only as far as the file: check the order instead */
	*n = count;
	return 0;
}
