/* SPDX-License-Identifier: MIT */
/*
 * pe_md.c - ECMA-335 metadata: the root and stream headers, the table
 * stream (#~ or #-) with its row and column sizes, heaps, and type and
 * method names.
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "common/strbuf.h"
#include "pe/pe.h"
#include "pe/pe_internal.h"

enum pe_cidx {
	CI_TYPEDEFORREF,
	CI_HASCONSTANT,
	CI_HASCUSTOMATTRIBUTE,
	CI_HASFIELDMARSHAL,
	CI_HASDECLSECURITY,
	CI_MEMBERREFPARENT,
	CI_HASSEMANTICS,
	CI_METHODDEFORREF,
	CI_MEMBERFORWARDED,
	CI_IMPLEMENTATION,
	CI_CUSTOMATTRIBUTETYPE,
	CI_RESOLUTIONSCOPE,
	CI_TYPEORMETHODDEF,
	CI_COUNT,
};

#define NO_TAB 0xFF

struct cidx_def {
	uint8_t bits;
	uint8_t n;
	uint8_t tabs[22];
};

static const struct cidx_def cidx_defs[CI_COUNT] = {
	[CI_TYPEDEFORREF] = { 2, 3, { 0x02, 0x01, 0x1B } },
	[CI_HASCONSTANT] = { 2, 3, { 0x04, 0x08, 0x17 } },
	[CI_HASCUSTOMATTRIBUTE] = { 5, 22, { 0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x00, 0x0E,
					     0x17, 0x14, 0x11, 0x1A, 0x1B, 0x20, 0x23, 0x26, 0x27,
					     0x28, 0x2A, 0x2C, 0x2B } },
	[CI_HASFIELDMARSHAL] = { 1, 2, { 0x04, 0x08 } },
	[CI_HASDECLSECURITY] = { 2, 3, { 0x02, 0x06, 0x20 } },
	[CI_MEMBERREFPARENT] = { 3, 5, { 0x02, 0x01, 0x1A, 0x06, 0x1B } },
	[CI_HASSEMANTICS] = { 1, 2, { 0x14, 0x17 } },
	[CI_METHODDEFORREF] = { 1, 2, { 0x06, 0x0A } },
	[CI_MEMBERFORWARDED] = { 1, 2, { 0x04, 0x06 } },
	[CI_IMPLEMENTATION] = { 2, 3, { 0x26, 0x23, 0x27 } },
	[CI_CUSTOMATTRIBUTETYPE] = { 3, 5, { NO_TAB, NO_TAB, 0x06, 0x0A, NO_TAB } },
	[CI_RESOLUTIONSCOPE] = { 2, 4, { 0x00, 0x1A, 0x23, 0x01 } },
	[CI_TYPEORMETHODDEF] = { 1, 2, { 0x02, 0x06 } },
};

/* A column: kind in the high nibble, argument (table or coded kind) low. */
struct col_def {
	uint8_t kind;
	uint8_t arg;
};

#define U16 { PE_COL_U16, 0 }
#define U32 { PE_COL_U32, 0 }
#define STR { PE_COL_STR, 0 }
#define GUI { PE_COL_GUID, 0 }
#define BLB { PE_COL_BLOB, 0 }
#define U8P { PE_COL_U8PAD, 0 }
#define IDX(t) { PE_COL_IDX, (t) }
#define CIX(k) { PE_COL_CIDX, (k) }

struct tab_def {
	uint8_t ncols;
	struct col_def cols[PE_MD_MAX_COLS];
};

static const struct tab_def tab_defs[PE_MD_NTABLES] = {
	[0x00] = { 5, { U16, STR, GUI, GUI, GUI } },
	[0x01] = { 3, { CIX(CI_RESOLUTIONSCOPE), STR, STR } },
	[0x02] = { 6, { U32, STR, STR, CIX(CI_TYPEDEFORREF), IDX(0x04), IDX(0x06) } },
	[0x03] = { 1, { IDX(0x04) } },
	[0x04] = { 3, { U16, STR, BLB } },
	[0x05] = { 1, { IDX(0x06) } },
	[0x06] = { 6, { U32, U16, U16, STR, BLB, IDX(0x08) } },
	[0x07] = { 1, { IDX(0x08) } },
	[0x08] = { 3, { U16, U16, STR } },
	[0x09] = { 2, { IDX(0x02), CIX(CI_TYPEDEFORREF) } },
	[0x0A] = { 3, { CIX(CI_MEMBERREFPARENT), STR, BLB } },
	[0x0B] = { 3, { U8P, CIX(CI_HASCONSTANT), BLB } },
	[0x0C] = { 3, { CIX(CI_HASCUSTOMATTRIBUTE), CIX(CI_CUSTOMATTRIBUTETYPE), BLB } },
	[0x0D] = { 2, { CIX(CI_HASFIELDMARSHAL), BLB } },
	[0x0E] = { 3, { U16, CIX(CI_HASDECLSECURITY), BLB } },
	[0x0F] = { 3, { U16, U32, IDX(0x02) } },
	[0x10] = { 2, { U32, IDX(0x04) } },
	[0x11] = { 1, { BLB } },
	[0x12] = { 2, { IDX(0x02), IDX(0x14) } },
	[0x13] = { 1, { IDX(0x14) } },
	[0x14] = { 3, { U16, STR, CIX(CI_TYPEDEFORREF) } },
	[0x15] = { 2, { IDX(0x02), IDX(0x17) } },
	[0x16] = { 1, { IDX(0x17) } },
	[0x17] = { 3, { U16, STR, BLB } },
	[0x18] = { 3, { U16, IDX(0x06), CIX(CI_HASSEMANTICS) } },
	[0x19] = { 3, { IDX(0x02), CIX(CI_METHODDEFORREF), CIX(CI_METHODDEFORREF) } },
	[0x1A] = { 1, { STR } },
	[0x1B] = { 1, { BLB } },
	[0x1C] = { 4, { U16, CIX(CI_MEMBERFORWARDED), STR, IDX(0x1A) } },
	[0x1D] = { 2, { U32, IDX(0x04) } },
	[0x1E] = { 2, { U32, U32 } },
	[0x1F] = { 1, { U32 } },
	[0x20] = { 9, { U32, U16, U16, U16, U16, U32, BLB, STR, STR } },
	[0x21] = { 1, { U32 } },
	[0x22] = { 3, { U32, U32, U32 } },
	[0x23] = { 9, { U16, U16, U16, U16, U32, BLB, STR, STR, BLB } },
	[0x24] = { 2, { U32, IDX(0x23) } },
	[0x25] = { 4, { U32, U32, U32, IDX(0x23) } },
	[0x26] = { 3, { U32, STR, BLB } },
	[0x27] = { 5, { U32, U32, STR, STR, CIX(CI_IMPLEMENTATION) } },
	[0x28] = { 4, { U32, U32, STR, CIX(CI_IMPLEMENTATION) } },
	[0x29] = { 2, { IDX(0x02), IDX(0x02) } },
	[0x2A] = { 4, { U16, U16, CIX(CI_TYPEORMETHODDEF), STR } },
	[0x2B] = { 2, { CIX(CI_METHODDEFORREF), BLB } },
	[0x2C] = { 2, { IDX(0x2A), CIX(CI_TYPEDEFORREF) } },
};

int pe_cur_comp(struct cursor *c, uint32_t *v)
{
	uint8_t b0, b;

	*v = 0;
	if (cur_u8(c, &b0))
		return c->err;
	if (!(b0 & 0x80)) {
		*v = b0;
	} else if ((b0 & 0xC0) == 0x80) {
		if (cur_u8(c, &b))
			return c->err;
		*v = ((uint32_t)(b0 & 0x3F) << 8) | b;
	} else if ((b0 & 0xE0) == 0xC0) {
		const uint8_t *p = cur_take(c, 3);

		if (!p)
			return c->err;
		*v = ((uint32_t)(b0 & 0x1F) << 24) | ((uint32_t)p[0] << 16) |
		     ((uint32_t)p[1] << 8) | p[2];
	} else {
		c->err = -EBADMSG;
		return c->err;
	}
	return 0;
}

static unsigned cidx_size(const struct pe_md *md, unsigned kind)
{
	const struct cidx_def *d = &cidx_defs[kind];
	uint32_t maxrows = 0;
	unsigned i;

	for (i = 0; i < d->n; i++)
		if (d->tabs[i] != NO_TAB && md->tab[d->tabs[i]].rows > maxrows)
			maxrows = md->tab[d->tabs[i]].rows;
	return maxrows < (1u << (16 - d->bits)) ? 2 : 4;
}

static int layout_tables(struct pe_md *md)
{
	unsigned t, i;
	unsigned ssz = (md->heap_sizes & 0x01) ? 4 : 2;
	unsigned gsz = (md->heap_sizes & 0x02) ? 4 : 2;
	unsigned bsz = (md->heap_sizes & 0x04) ? 4 : 2;

	for (t = 0; t < PE_MD_NTABLES; t++) {
		const struct tab_def *d = &tab_defs[t];
		struct pe_md_tab *tab = &md->tab[t];
		unsigned off = 0;

		tab->ncols = d->ncols;
		for (i = 0; i < d->ncols; i++) {
			unsigned sz;

			switch (d->cols[i].kind) {
			case PE_COL_U16:
			case PE_COL_U8PAD:
				sz = 2;
				break;
			case PE_COL_U32:
				sz = 4;
				break;
			case PE_COL_STR:
				sz = ssz;
				break;
			case PE_COL_GUID:
				sz = gsz;
				break;
			case PE_COL_BLOB:
				sz = bsz;
				break;
			case PE_COL_IDX:
				sz = md->tab[d->cols[i].arg].rows < 0x10000 ? 2 : 4;
				break;
			default:
				sz = cidx_size(md, d->cols[i].arg);
				break;
			}
			tab->col_off[i] = (uint8_t)off;
			tab->col_size[i] = (uint8_t)sz;
			off += sz;
		}
		tab->row_size = off;
	}
	return 0;
}

static int parse_tables(struct pe_md *md, const uint8_t *p, uint32_t len)
{
	struct cursor c;
	uint64_t valid, sorted, total = 0;
	uint8_t major, minor, rsv;
	unsigned t;
	const uint8_t *rows_base;

	cur_init(&c, p, len);
	cur_skip(&c, 4);
	cur_u8(&c, &major);
	cur_u8(&c, &minor);
	cur_u8(&c, &md->heap_sizes);
	cur_u8(&c, &rsv);
	cur_u64(&c, &valid);
	cur_u64(&c, &sorted);
	if (c.err)
		return -EBADMSG;
	if (valid >> PE_MD_NTABLES)
		return -EPROTO; /* tables this reader cannot size */
	for (t = 0; t < PE_MD_NTABLES; t++) {
		if (valid & ((uint64_t)1 << t)) {
			cur_u32(&c, &md->tab[t].rows);
			/* A row is at least 2 bytes. */
			if (md->tab[t].rows > len / 2)
				return -EBADMSG;
		}
	}
	if (md->heap_sizes & 0x40)
		cur_skip(&c, 4);
	if (c.err)
		return -EBADMSG;
	layout_tables(md);
	rows_base = p + c.off;
	for (t = 0; t < PE_MD_NTABLES; t++) {
		struct pe_md_tab *tab = &md->tab[t];
		uint64_t sz = (uint64_t)tab->rows * tab->row_size;

		if (sz > c.len - c.off - total)
			return -EBADMSG;
		tab->base = rows_base + total;
		total += sz;
	}
	return 0;
}

int pe_md_streams(const uint8_t *p, uint32_t len, struct pe_md_stream *st, unsigned *nst,
		  char **version)
{
	struct cursor c;
	uint32_t sig, vlen, i;
	uint16_t flags, nstreams;
	const uint8_t *v;

	*nst = 0;
	cur_init(&c, p, len);
	cur_u32(&c, &sig);
	if (c.err || sig != 0x424A5342u)
		return -EBADMSG;
	cur_skip(&c, 8);
	cur_u32(&c, &vlen);
	if (c.err || vlen > 256)
		return -EBADMSG;
	v = cur_take(&c, vlen);
	if (!v)
		return -EBADMSG;
	if (version) {
		*version = pe_strndup_cap(v, vlen);
		if (!*version)
			return -ENOMEM;
	}
	cur_u16(&c, &flags);
	cur_u16(&c, &nstreams);
	if (c.err || nstreams > PE_MD_MAX_STREAMS)
		return -EBADMSG;
	for (i = 0; i < nstreams; i++) {
		uint32_t off, size;
		const uint8_t *name;
		size_t nl = 0, maxn;

		cur_u32(&c, &off);
		cur_u32(&c, &size);
		if (c.err)
			return -EBADMSG;
		name = c.p + c.off;
		maxn = CT_MIN(cur_left(&c), (size_t)32);
		while (nl < maxn && name[nl])
			nl++;
		if (nl == maxn)
			return -EBADMSG;
		/* name + NUL, padded to 4 */
		if (cur_skip(&c, (nl + 4) & ~(size_t)3))
			return -EBADMSG;
		if (off > len || size > len - off)
			return -EBADMSG;
		st[i].name = (const char *)name;
		st[i].p = p + off;
		st[i].len = size;
	}
	*nst = nstreams;
	return 0;
}

int pe_md_parse(struct pe_md *md, const uint8_t *p, uint32_t len)
{
	struct pe_md_stream st[PE_MD_MAX_STREAMS];
	const uint8_t *tables = NULL;
	uint32_t tables_len = 0;
	unsigned i, n;
	int err;

	memset(md, 0, sizeof(*md));
	err = pe_md_streams(p, len, st, &n, &md->version);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		struct pe_heap h = { st[i].p, st[i].len };
		const char *name = st[i].name;

		if (!strcmp(name, "#~")) {
			tables = h.p;
			tables_len = h.len;
		} else if (!strcmp(name, "#-")) {
			tables = h.p;
			tables_len = h.len;
			md->uncompressed = true;
		} else if (!strcmp(name, "#Strings")) {
			md->strings = h;
		} else if (!strcmp(name, "#US")) {
			md->us = h;
		} else if (!strcmp(name, "#Blob")) {
			md->blob = h;
		} else if (!strcmp(name, "#GUID")) {
			md->guid = h;
		}
	}
	if (!tables)
		return -EBADMSG;
	err = parse_tables(md, tables, tables_len);
	if (err)
		return err;
	md->present = true;
	return 0;
}

void pe_md_release(struct pe_md *md)
{
	free(md->version);
	md->version = NULL;
	md->present = false;
}

int pe_md_col(const struct pe_md *md, unsigned table, uint32_t rid, unsigned col, uint32_t *val)
{
	const struct pe_md_tab *tab;
	const uint8_t *p;
	uint32_t v;

	*val = 0;
	if (!md->present || table >= PE_MD_NTABLES)
		return -EINVAL;
	tab = &md->tab[table];
	if (rid == 0 || rid > tab->rows)
		return -ENOENT;
	if (col >= tab->ncols)
		return -EINVAL;
	p = tab->base + (size_t)(rid - 1) * tab->row_size + tab->col_off[col];
	v = tab->col_size[col] == 2 ? ct_le16(p) : ct_le32(p);
	if (tab_defs[table].cols[col].kind == PE_COL_U8PAD)
		v &= 0xff;
	if (tab_defs[table].cols[col].kind == PE_COL_CIDX) {
		const struct cidx_def *d = &cidx_defs[tab_defs[table].cols[col].arg];
		uint32_t tag = v & ((1u << d->bits) - 1), r = v >> d->bits;

		if (r == 0 || tag >= d->n || d->tabs[tag] == NO_TAB)
			v = 0;
		else
			v = ((uint32_t)d->tabs[tag] << 24) | r;
	}
	*val = v;
	return 0;
}

const char *pe_md_str(const struct pe_md *md, uint32_t idx)
{
	const uint8_t *s;

	if (!md->present || idx >= md->strings.len)
		return "";
	s = md->strings.p + idx;
	if (!memchr(s, 0, md->strings.len - idx))
		return "";
	return (const char *)s;
}

int pe_md_blob_get(const struct pe_md *md, uint32_t idx, const uint8_t **p, uint32_t *len)
{
	struct cursor c;
	uint32_t n;

	if (!md->present || idx >= md->blob.len)
		return -EBADMSG;
	cur_init(&c, md->blob.p + idx, md->blob.len - idx);
	if (pe_cur_comp(&c, &n) || n > cur_left(&c))
		return -EBADMSG;
	*p = c.p + c.off;
	*len = n;
	return 0;
}

uint32_t pe_md_rows(const struct pe_file *pf, unsigned table)
{
	if (!pf || !pf->md.present || table >= PE_MD_NTABLES)
		return 0;
	return pf->md.tab[table].rows;
}

int pe_md_get(const struct pe_file *pf, unsigned table, uint32_t rid, unsigned col, uint32_t *val)
{
	if (!pf || !val)
		return -EINVAL;
	return pe_md_col(&pf->md, table, rid, col, val);
}

const char *pe_md_string(const struct pe_file *pf, uint32_t idx)
{
	return pe_md_str(&pf->md, idx);
}

int pe_md_blob(const struct pe_file *pf, uint32_t idx, const uint8_t **p, uint32_t *len)
{
	return pe_md_blob_get(&pf->md, idx, p, len);
}

int pe_md_guid(const struct pe_file *pf, uint32_t idx, uint8_t out[16])
{
	if (!pf->md.present || idx == 0 || idx > pf->md.guid.len / 16)
		return -ENOENT;
	memcpy(out, pf->md.guid.p + 16 * (size_t)(idx - 1), 16);
	return 0;
}

/* ---- names ---- */

/* Follows a *Ptr table when the #- stream has one. */
static uint32_t deref_ptr(const struct pe_md *md, unsigned ptr_table, uint32_t i)
{
	uint32_t v;

	if (md->tab[ptr_table].rows == 0)
		return i;
	if (pe_md_col(md, ptr_table, i, 0, &v))
		return 0;
	return v;
}

int pe_md_build_caches(struct pe_file *pf)
{
	const struct pe_md *md = &pf->md;
	uint32_t ntd, nmd, i, j;

	if (pf->caches_built)
		return 0;
	if (!md->present)
		return -EPROTO;
	ntd = md->tab[PE_MD_TYPEDEF].rows;
	nmd = md->tab[PE_MD_METHODDEF].rows;
	pf->enclosing = calloc((size_t)ntd + 1, sizeof(uint32_t));
	pf->tn_off = calloc((size_t)ntd + 1, sizeof(uint32_t));
	pf->method_owner = calloc((size_t)nmd + 1, sizeof(uint32_t));
	if (!pf->enclosing || !pf->tn_off || !pf->method_owner)
		return -ENOMEM;
	for (i = 1; i <= md->tab[PE_MD_NESTEDCLASS].rows; i++) {
		uint32_t nested, encl;

		pe_md_col(md, PE_MD_NESTEDCLASS, i, 0, &nested);
		pe_md_col(md, PE_MD_NESTEDCLASS, i, 1, &encl);
		if (nested >= 1 && nested <= ntd && encl <= ntd && encl != nested)
			pf->enclosing[nested] = encl;
	}
	/* TypeDef i owns methods [MethodList(i), MethodList(i+1)). */
	for (i = 1; i <= ntd; i++) {
		uint32_t first, last;
		uint32_t nlist = md->tab[0x05].rows ? md->tab[0x05].rows : nmd;

		pe_md_col(md, PE_MD_TYPEDEF, i, 5, &first);
		if (i < ntd)
			pe_md_col(md, PE_MD_TYPEDEF, i + 1, 5, &last);
		else
			last = nlist + 1;
		if (first == 0)
			continue;
		if (last > nlist + 1)
			last = nlist + 1;
		for (j = first; j < last; j++) {
			uint32_t m = deref_ptr(md, 0x05, j);

			if (m >= 1 && m <= nmd && !pf->method_owner[m])
				pf->method_owner[m] = i;
		}
	}
	pf->caches_built = true;
	return 0;
}

uint32_t pe_md_method_owner(struct pe_file *pf, uint32_t method_rid)
{
	if (pe_md_build_caches(pf) || method_rid == 0 ||
	    method_rid > pf->md.tab[PE_MD_METHODDEF].rows)
		return 0;
	return pf->method_owner[method_rid];
}

static int add_ns_name(struct strbuf *out, const char *ns, const char *name)
{
	int err = 0;

	if (ns[0]) {
		err = strbuf_addstr(out, ns);
		if (!err)
			err = strbuf_addch(out, '.');
	}
	if (!err)
		err = strbuf_addstr(out, name);
	return err;
}

static int typedef_name_uncached(struct pe_file *pf, uint32_t rid, struct strbuf *out)
{
	uint32_t chain[PE_MAX_NAME_DEPTH];
	unsigned n = 0, k;
	int err = 0;

	/* Innermost first; stop on loops and on too deep nesting. */
	while (rid && n < PE_MAX_NAME_DEPTH) {
		for (k = 0; k < n; k++)
			if (chain[k] == rid)
				break;
		if (k < n)
			break;
		chain[n++] = rid;
		rid = pf->enclosing[rid];
	}
	for (k = n; k-- > 0 && !err;) {
		uint32_t nm = 0, ns = 0;

		pe_md_col(&pf->md, PE_MD_TYPEDEF, chain[k], 1, &nm);
		pe_md_col(&pf->md, PE_MD_TYPEDEF, chain[k], 2, &ns);
		if (k == n - 1) {
			err = add_ns_name(out, pe_md_str(&pf->md, ns), pe_md_str(&pf->md, nm));
		} else {
			err = strbuf_addch(out, '+');
			if (!err)
				err = strbuf_addstr(out, pe_md_str(&pf->md, nm));
		}
	}
	return err;
}

int pe_md_typedef_name(struct pe_file *pf, uint32_t rid, struct strbuf *out)
{
	int err = pe_md_build_caches(pf);
	size_t start;

	if (err)
		return err;
	if (rid == 0 || rid > pf->md.tab[PE_MD_TYPEDEF].rows)
		return -ENOENT;
	if (pf->tn_off[rid])
		return strbuf_addstr(out, pf->tn_cache.buf + pf->tn_off[rid] - 1);
	start = pf->tn_cache.len;
	err = typedef_name_uncached(pf, rid, &pf->tn_cache);
	if (!err)
		err = strbuf_addch(&pf->tn_cache, '\0');
	if (err || start + 1 > UINT32_MAX) {
		strbuf_rollback(&pf->tn_cache, start);
		return err ? err : -EMSGSIZE;
	}
	pf->tn_off[rid] = (uint32_t)start + 1;
	return strbuf_addstr(out, pf->tn_cache.buf + start);
}

static int typeref_name(struct pe_file *pf, uint32_t rid, struct strbuf *out, int depth)
{
	uint32_t scope = 0, nm = 0, ns = 0;
	int err;

	if (depth > PE_MAX_NAME_DEPTH)
		return -EBADMSG;
	if (pe_md_col(&pf->md, PE_MD_TYPEREF, rid, 0, &scope))
		return -ENOENT;
	pe_md_col(&pf->md, PE_MD_TYPEREF, rid, 1, &nm);
	pe_md_col(&pf->md, PE_MD_TYPEREF, rid, 2, &ns);
	if ((scope >> 24) == PE_MD_TYPEREF && (scope & 0xffffff) != rid) {
		err = typeref_name(pf, scope & 0xffffff, out, depth + 1);
		if (!err)
			err = strbuf_addch(out, '+');
		if (!err)
			err = strbuf_addstr(out, pe_md_str(&pf->md, nm));
		return err;
	}
	return add_ns_name(out, pe_md_str(&pf->md, ns), pe_md_str(&pf->md, nm));
}

int pe_md_type_name_depth(struct pe_file *pf, uint32_t token, struct strbuf *out, int depth)
{
	uint32_t rid = token & 0xffffff;

	if (!pf || !out)
		return -EINVAL;
	if (!pf->md.present)
		return -EPROTO;
	switch (token >> 24) {
	case PE_MD_TYPEDEF:
		return pe_md_typedef_name(pf, rid, out);
	case PE_MD_TYPEREF:
		return typeref_name(pf, rid, out, depth);
	case PE_MD_TYPESPEC: {
		struct pe_sigctx ctx = { .mod = pf };
		const uint8_t *p;
		uint32_t len, bi;
		struct cursor c;

		if (depth > PE_MAX_NAME_DEPTH)
			return -EBADMSG;
		if (pe_md_col(&pf->md, PE_MD_TYPESPEC, rid, 0, &bi))
			return -ENOENT;
		if (pe_md_blob_get(&pf->md, bi, &p, &len))
			return -EBADMSG;
		cur_init(&c, p, len);
		return pe_sig_type(&ctx, &c, out, NULL, depth + 1);
	}
	default:
		return -EINVAL;
	}
}

int pe_md_type_name(struct pe_file *pf, uint32_t token, struct strbuf *out)
{
	return pe_md_type_name_depth(pf, token, out, 0);
}

int pe_md_method_name(struct pe_file *pf, uint32_t token, struct strbuf *out)
{
	uint32_t rid = token & 0xffffff, nm = 0, parent = 0;
	int err;

	if (!pf || !out)
		return -EINVAL;
	if (!pf->md.present)
		return -EPROTO;
	if ((token >> 24) == PE_MD_METHODDEF) {
		uint32_t owner;

		if (pe_md_col(&pf->md, PE_MD_METHODDEF, rid, 3, &nm))
			return -ENOENT;
		owner = pe_md_method_owner(pf, rid);
		err = owner ? pe_md_typedef_name(pf, owner, out) : strbuf_addstr(out, "<unknown>");
	} else if ((token >> 24) == PE_MD_MEMBERREF) {
		if (pe_md_col(&pf->md, PE_MD_MEMBERREF, rid, 0, &parent))
			return -ENOENT;
		pe_md_col(&pf->md, PE_MD_MEMBERREF, rid, 1, &nm);
		switch (parent >> 24) {
		case PE_MD_TYPEDEF:
		case PE_MD_TYPEREF:
		case PE_MD_TYPESPEC:
			err = pe_md_type_name(pf, parent, out);
			break;
		case PE_MD_METHODDEF: {
			uint32_t owner = pe_md_method_owner(pf, parent & 0xffffff);

			err = owner ? pe_md_typedef_name(pf, owner, out)
				    : strbuf_addstr(out, "<unknown>");
			break;
		}
		default:
			err = strbuf_addstr(out, "<module>");
			break;
		}
	} else {
		return -EINVAL;
	}
	if (!err)
		err = strbuf_addstr(out, "::");
	if (!err)
		err = strbuf_addstr(out, pe_md_str(&pf->md, nm));
	return err;
}

static bool is_system_enum(struct pe_file *pf, uint32_t token)
{
	uint32_t rid = token & 0xffffff, nm = 0, ns = 0;
	unsigned t = token >> 24;

	if (t != PE_MD_TYPEREF && t != PE_MD_TYPEDEF)
		return false;
	if (pe_md_col(&pf->md, t, rid, 1, &nm))
		return false;
	pe_md_col(&pf->md, t, rid, 2, &ns);
	return !strcmp(pe_md_str(&pf->md, nm), "Enum") && !strcmp(pe_md_str(&pf->md, ns), "System");
}

uint8_t pe_md_enum_type(struct pe_file *pf, uint32_t typedef_rid)
{
	const struct pe_md *md = &pf->md;
	uint32_t extends = 0, first = 0, last, nfields = md->tab[PE_MD_FIELD].rows, i;

	if (pe_md_col(md, PE_MD_TYPEDEF, typedef_rid, 3, &extends) || !is_system_enum(pf, extends))
		return 0;
	pe_md_col(md, PE_MD_TYPEDEF, typedef_rid, 4, &first);
	if (typedef_rid < md->tab[PE_MD_TYPEDEF].rows)
		pe_md_col(md, PE_MD_TYPEDEF, typedef_rid + 1, 4, &last);
	else
		last = nfields + 1;
	if (last > nfields + 1)
		last = nfields + 1;
	/* The one instance field (value__) has the underlying type. */
	for (i = first; i && i < last; i++) {
		uint32_t f = deref_ptr(md, 0x03, i), flags = 0, sig = 0, len;
		const uint8_t *p;

		if (pe_md_col(md, PE_MD_FIELD, f, 0, &flags) || (flags & 0x10))
			continue;
		pe_md_col(md, PE_MD_FIELD, f, 2, &sig);
		if (pe_md_blob_get(md, sig, &p, &len) || len < 2 || p[0] != 0x06)
			return 0;
		if (p[1] >= PE_ET_BOOLEAN && p[1] <= PE_ET_U8)
			return p[1];
		if (p[1] == PE_ET_I || p[1] == PE_ET_U)
			return p[1];
		return 0;
	}
	return 0;
}
