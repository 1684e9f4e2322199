/* SPDX-License-Identifier: MIT */
/*
 * pe_pdb.c - portable PDB: the "#Pdb" stream (id), the Document and
 * MethodDebugInformation tables, sequence-point blobs, and finding an
 * assembly's PDB (embedded or beside it) with its id checked. See pdb.h.
 */
#include "common/compat.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cursor.h"
#include "common/io.h"
#include "pe/pdb.h"
#include "pe/pe_internal.h"

#define T_DOCUMENT 0x30
#define T_METHODDEBUG 0x31

#define DEBUG_TYPE_CODEVIEW 2
#define DEBUG_TYPE_EMBEDDED_PDB 17
#define PORTABLE_MINOR 0x504D /* CodeView/embedded entry minor version "PM" */

struct pe_pdb {
	uint8_t *data; /* owned copy */
	size_t len;
	enum pe_pdb_src src;
	uint8_t id[20];
	struct pe_heap blob, guid;
	uint8_t heap_sizes;
	uint32_t ndocs, nmeth;
	const uint8_t *docs, *meths;
	uint32_t doc_row, meth_row;
	uint8_t bsz, gsz, docidx_sz;
	char **docname; /* per Document rid, decoded lazily */
};

const uint8_t *pe_pdb_id(const struct pe_pdb *pdb)
{
	return pdb->id;
}

enum pe_pdb_src pe_pdb_source(const struct pe_pdb *pdb)
{
	return pdb->src;
}

void pe_pdb_close(struct pe_pdb *pdb)
{
	uint32_t i;

	if (!pdb)
		return;
	if (pdb->docname)
		for (i = 0; i <= pdb->ndocs; i++)
			free(pdb->docname[i]);
	free(pdb->docname);
	free(pdb->data);
	free(pdb);
}

static uint32_t rd(const uint8_t *p, unsigned sz)
{
	return sz == 2 ? ct_le16(p) : ct_le32(p);
}

/* Tables stream of a standalone portable PDB: only tables 0x30..0x37. */
static int parse_pdb_tables(struct pe_pdb *pdb, const uint8_t *p, uint32_t len)
{
	struct cursor c;
	uint64_t valid, sorted, total = 0;
	uint32_t rows[64] = { 0 };
	uint8_t b;
	unsigned t;

	cur_init(&c, p, len);
	cur_skip(&c, 6);
	cur_u8(&c, &pdb->heap_sizes);
	cur_u8(&c, &b);
	cur_u64(&c, &valid);
	cur_u64(&c, &sorted);
	if (c.err)
		return -EBADMSG;
	/* Type-system tables belong in the assembly; anything past 0x37 is unknown. */
	if ((valid & (((uint64_t)1 << T_DOCUMENT) - 1)) || (valid >> 0x38))
		return -EPROTO;
	for (t = 0; t < 64; t++) {
		if (!(valid & ((uint64_t)1 << t)))
			continue;
		cur_u32(&c, &rows[t]);
		if (c.err || rows[t] > len / 2)
			return -EBADMSG;
	}
	if (pdb->heap_sizes & 0x40)
		cur_skip(&c, 4);
	if (c.err)
		return -EBADMSG;
	pdb->bsz = (pdb->heap_sizes & 0x04) ? 4 : 2;
	pdb->gsz = (pdb->heap_sizes & 0x02) ? 4 : 2;
	pdb->ndocs = rows[T_DOCUMENT];
	pdb->nmeth = rows[T_METHODDEBUG];
	if (pdb->ndocs > PE_PDB_MAX_DOCUMENTS)
		return -EFBIG;
	pdb->docidx_sz = pdb->ndocs < 0x10000 ? 2 : 4;
	pdb->doc_row = 2u * pdb->bsz + 2u * pdb->gsz;
	pdb->meth_row = pdb->docidx_sz + pdb->bsz;
	/* Document and MethodDebugInformation are the first two tables. */
	total = (uint64_t)pdb->ndocs * pdb->doc_row;
	if (total > cur_left(&c))
		return -EBADMSG;
	pdb->docs = c.p + c.off;
	pdb->meths = pdb->docs + total;
	if ((uint64_t)pdb->nmeth * pdb->meth_row > cur_left(&c) - total)
		return -EBADMSG;
	return 0;
}

static int pdb_parse(struct pe_pdb *pdb)
{
	struct pe_md_stream st[PE_MD_MAX_STREAMS];
	const uint8_t *tables = NULL, *pdbs = NULL;
	uint32_t tables_len = 0, pdbs_len = 0;
	unsigned i, n;
	int err;

	if (pdb->len > UINT32_MAX)
		return -EFBIG;
	err = pe_md_streams(pdb->data, (uint32_t)pdb->len, st, &n, NULL);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (!strcmp(st[i].name, "#~")) {
			tables = st[i].p;
			tables_len = st[i].len;
		} else if (!strcmp(st[i].name, "#Pdb")) {
			pdbs = st[i].p;
			pdbs_len = st[i].len;
		} else if (!strcmp(st[i].name, "#Blob")) {
			pdb->blob.p = st[i].p;
			pdb->blob.len = st[i].len;
		} else if (!strcmp(st[i].name, "#GUID")) {
			pdb->guid.p = st[i].p;
			pdb->guid.len = st[i].len;
		}
	}
	if (!pdbs)
		return -EPROTO; /* ECMA-335 metadata, but not a PDB */
	if (!tables || pdbs_len < 20)
		return -EBADMSG;
	memcpy(pdb->id, pdbs, 20);
	err = parse_pdb_tables(pdb, tables, tables_len);
	if (err)
		return err;
	pdb->docname = calloc((size_t)pdb->ndocs + 1, sizeof(char *));
	return pdb->docname ? 0 : -ENOMEM;
}

/* Takes ownership of data (malloc'd). */
static int pdb_from(uint8_t *data, size_t len, enum pe_pdb_src src, struct pe_pdb **out)
{
	struct pe_pdb *pdb;
	int err;

	*out = NULL;
	if (data[0] != 'B' && len >= 4 && !memcmp(data, "Micr", 4)) {
		free(data);
		return -EPROTO; /* a Windows (MSF) PDB */
	}
	pdb = calloc(1, sizeof(*pdb));
	if (!pdb) {
		free(data);
		return -ENOMEM;
	}
	pdb->data = data;
	pdb->len = len;
	pdb->src = src;
	err = pdb_parse(pdb);
	if (err) {
		pe_pdb_close(pdb);
		return err;
	}
	*out = pdb;
	return 0;
}

int pe_pdb_open_mem(const void *data, size_t len, struct pe_pdb **out)
{
	uint8_t *copy;

	if (!data || !out)
		return -EINVAL;
	*out = NULL;
	if (len == 0)
		return -EBADMSG;
	if (len > PE_PDB_MAX_SIZE)
		return -EFBIG;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	return pdb_from(copy, len, PE_PDB_SRC_MEMORY, out);
}

/* ---- lookups ---- */

/* ECMA-335 II.23.2 signed compressed integer. */
static int cur_scomp(struct cursor *c, int32_t *v)
{
	size_t start = c->off;
	uint32_t u, n;

	if (pe_cur_comp(c, &u))
		return c->err;
	n = (uint32_t)(c->off - start);
	if (n == 1)
		*v = (int32_t)((u >> 1) | ((u & 1) ? 0xFFFFFFC0u : 0));
	else if (n == 2)
		*v = (int32_t)((u >> 1) | ((u & 1) ? 0xFFFFE000u : 0));
	else
		*v = (int32_t)((u >> 1) | ((u & 1) ? 0xF0000000u : 0));
	return 0;
}

static int blob_at(const struct pe_pdb *pdb, uint32_t idx, const uint8_t **p, uint32_t *len)
{
	struct pe_md md = { .present = true, .blob = pdb->blob };

	if (idx == 0) {
		*p = NULL;
		*len = 0;
		return 0;
	}
	return pe_md_blob_get(&md, idx, p, len);
}

static const char *doc_name(struct pe_pdb *pdb, uint32_t doc)
{
	struct strbuf sb = STRBUF_INIT_MAX(PE_PDB_MAX_PATH);
	const uint8_t *p, *part;
	uint32_t len, plen, idx, i;
	struct cursor c;
	uint8_t sep;
	bool first = true;

	if (doc == 0 || doc > pdb->ndocs)
		return NULL;
	if (pdb->docname[doc])
		return pdb->docname[doc];
	if (blob_at(pdb, rd(pdb->docs + (size_t)(doc - 1) * pdb->doc_row, pdb->bsz), &p, &len) ||
	    len == 0)
		return NULL;
	/* separator byte, then blob indexes of UTF-8 parts */
	cur_init(&c, p, len);
	cur_u8(&c, &sep);
	while (!c.err && cur_left(&c)) {
		if (pe_cur_comp(&c, &idx) || blob_at(pdb, idx, &part, &plen))
			break;
		if (!first && sep)
			strbuf_addch(&sb, (char)sep);
		first = false;
		for (i = 0; i < plen; i++)
			/* a target's bytes: no control characters reach a terminal */
			strbuf_addch(&sb, part[i] < 0x20 || part[i] == 0x7f ? '?' : (char)part[i]);
	}
	if (c.err || strbuf_error(&sb)) {
		strbuf_release(&sb);
		return NULL;
	}
	pdb->docname[doc] = strbuf_detach(&sb, NULL);
	return pdb->docname[doc];
}

int pe_pdb_line(struct pe_pdb *pdb, uint32_t method_token, uint32_t il_offset,
		struct pe_srcline *out)
{
	uint32_t rid = method_token & 0xffffff, doc, sp_idx, len, cur_doc, best_doc = 0;
	uint32_t il = 0, line = 0, col = 0, v, dlines = 0;
	int32_t dcols = 0;
	const uint8_t *row, *p;
	struct cursor c;
	bool first = true, have_line = false, found = false;

	if (!pdb || !out || (method_token >> 24) != PE_MD_METHODDEF)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (rid == 0 || rid > pdb->nmeth)
		return -ENOENT;
	row = pdb->meths + (size_t)(rid - 1) * pdb->meth_row;
	doc = rd(row, pdb->docidx_sz);
	sp_idx = rd(row + pdb->docidx_sz, pdb->bsz);
	if (sp_idx == 0)
		return -ENOENT; /* no sequence points: compiler-generated or abstract */
	if (blob_at(pdb, sp_idx, &p, &len))
		return -EBADMSG;
	cur_init(&c, p, len);
	pe_cur_comp(&c, &v); /* LocalSignature */
	if (doc == 0)
		pe_cur_comp(&c, &doc); /* InitialDocument */
	cur_doc = doc;
	while (!c.err && cur_left(&c)) {
		uint32_t d;
		int32_t s;

		if (pe_cur_comp(&c, &d))
			break;
		if (!first && d == 0) { /* document record */
			pe_cur_comp(&c, &cur_doc);
			continue;
		}
		if (first) {
			il = d;
		} else {
			if (il > UINT32_MAX - d)
				return -EBADMSG;
			il += d;
		}
		first = false;
		pe_cur_comp(&c, &dlines);
		if (dlines == 0) {
			pe_cur_comp(&c, &v);
			dcols = (int32_t)v;
		} else {
			cur_scomp(&c, &dcols);
		}
		if (c.err)
			break;
		if (dlines == 0 && dcols == 0)
			continue; /* hidden */
		if (!have_line) {
			pe_cur_comp(&c, &line);
			pe_cur_comp(&c, &col);
		} else {
			cur_scomp(&c, &s);
			line = (uint32_t)((int64_t)line + s);
			cur_scomp(&c, &s);
			col = (uint32_t)((int64_t)col + s);
		}
		have_line = true;
		if (c.err || il > il_offset)
			break;
		found = true;
		best_doc = cur_doc;
		out->line = line;
		out->column = col;
		out->end_line = line + dlines;
		out->end_column = (uint32_t)((int64_t)col + dcols);
		out->sp_il_offset = il;
	}
	if (c.err && !found)
		return -EBADMSG;
	if (!found)
		return -ENOENT;
	out->file = doc_name(pdb, best_doc);
	if (!out->file)
		return -EBADMSG;
	return 0;
}

/* ---- finding an assembly's PDB ---- */

struct dbg_entry {
	uint32_t stamp, type, size;
	uint16_t minor;
	const uint8_t *data; /* NULL when outside the file */
};

/* Calls fn for each debug directory entry until it returns non-zero. */
static int each_debug_entry(const struct pe_file *pf,
			    int (*fn)(const struct dbg_entry *e, void *ctx), void *ctx)
{
	uint32_t rva, size, i;
	const uint8_t *dir;
	int r;

	if (pe_file_data_dir(pf, 6, &rva, &size) || size < 28)
		return -ENOENT;
	if (size > 28 * 64)
		size = 28 * 64;
	dir = pe_rva_ptr(pf, rva, size - size % 28);
	if (!dir)
		return -EBADMSG;
	for (i = 0; i + 28 <= size; i += 28) {
		const uint8_t *d = dir + i;
		struct dbg_entry e = {
			.stamp = ct_le32(d + 4),
			.minor = ct_le16(d + 10),
			.type = ct_le32(d + 12),
			.size = ct_le32(d + 16),
		};
		uint32_t raw_rva = ct_le32(d + 20), raw_off = ct_le32(d + 24);

		if (raw_rva)
			e.data = pe_rva_ptr(pf, raw_rva, e.size);
		else if (raw_off <= pf->len && e.size <= pf->len - raw_off)
			e.data = pf->data + raw_off;
		r = fn(&e, ctx);
		if (r)
			return r;
	}
	return -ENOENT;
}

struct cv_ctx {
	uint8_t *id;
	char *path;
	size_t path_len;
};

static int cv_entry(const struct dbg_entry *e, void *ctx)
{
	struct cv_ctx *cv = ctx;
	size_t n;

	if (e->type != DEBUG_TYPE_CODEVIEW || e->minor != PORTABLE_MINOR || !e->data ||
	    e->size < 24 || memcmp(e->data, "RSDS", 4))
		return 0;
	memcpy(cv->id, e->data + 4, 16);
	ct_put_le32(cv->id + 16, e->stamp);
	if (cv->path && cv->path_len) {
		const uint8_t *s = e->data + 24;
		size_t max = e->size - 24;

		for (n = 0; n < max && s[n] && n + 1 < cv->path_len; n++)
			cv->path[n] = (char)s[n];
		cv->path[n] = '\0';
	}
	return 1;
}

int pe_file_pdb_id(const struct pe_file *pf, uint8_t id[20], char *path, size_t path_len)
{
	struct cv_ctx cv = { id, path, path_len };
	int r;

	if (!pf || !id)
		return -EINVAL;
	if (path && path_len)
		path[0] = '\0';
	r = each_debug_entry(pf, cv_entry, &cv);
	return r == 1 ? 0 : r < 0 ? r : -ENOENT;
}

struct emb_ctx {
	struct pe_pdb **out;
	int err;
};

static int emb_entry(const struct dbg_entry *e, void *ctx)
{
	struct emb_ctx *em = ctx;
	uint32_t usize;
	uint8_t *buf;
	z_stream zs;
	int zr;

	if (e->type != DEBUG_TYPE_EMBEDDED_PDB)
		return 0;
	if (!e->data || e->size < 8 || memcmp(e->data, "MPDB", 4)) {
		em->err = -EBADMSG;
		return 1;
	}
	usize = ct_le32(e->data + 4);
	if (usize == 0 || usize > PE_PDB_MAX_SIZE) {
		em->err = usize ? -EFBIG : -EBADMSG;
		return 1;
	}
	buf = malloc(usize);
	if (!buf) {
		em->err = -ENOMEM;
		return 1;
	}
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, -15) != Z_OK) {
		free(buf);
		em->err = -ENOMEM;
		return 1;
	}
	zs.next_in = (Bytef *)(uintptr_t)(e->data + 8);
	zs.avail_in = e->size - 8;
	zs.next_out = buf;
	zs.avail_out = usize;
	zr = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (zr != Z_STREAM_END || zs.total_out != usize) {
		free(buf);
		em->err = -EBADMSG;
		return 1;
	}
	em->err = pdb_from(buf, usize, PE_PDB_SRC_EMBEDDED, em->out);
	return 1;
}

static int read_pdb_file(const char *path, const struct pe_open_opts *opts, struct pe_pdb **out)
{
	struct stat st;
	uint8_t *buf;
	size_t got;
	ssize_t r;
	int fd, err;

	err = pe_open_fd(opts, path, &fd);
	if (err)
		return err;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	if ((uint64_t)st.st_size > PE_PDB_MAX_SIZE || st.st_size == 0) {
		close(fd);
		return st.st_size ? -EFBIG : -EBADMSG;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	r = ct_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	got = r > 0 ? (size_t)r : 0;
	if (got != (size_t)st.st_size) {
		free(buf);
		return -EIO;
	}
	return pdb_from(buf, got, PE_PDB_SRC_FILE, out);
}

static int try_file(const char *path, const uint8_t want[20], bool have_id,
		    const struct pe_open_opts *opts, struct pe_pdb **out)
{
	int err = read_pdb_file(path, opts, out);

	if (err)
		return err;
	if (have_id && memcmp(pe_pdb_id(*out), want, 20)) {
		pe_pdb_close(*out);
		*out = NULL;
		return -ESTALE;
	}
	return 0;
}

int pe_pdb_open_for(const struct pe_file *pf, const char *asm_path,
		    const struct pe_open_opts *opts, struct pe_pdb **out)
{
	struct emb_ctx em = { out, -ENOENT };
	char recorded[PE_PDB_MAX_PATH], cand[PE_PDB_MAX_PATH];
	uint8_t want[20];
	bool have_id;
	const char *slash, *base, *dot;
	size_t dirlen;
	int err;

	if (!pf || !out)
		return -EINVAL;
	*out = NULL;
	have_id = pe_file_pdb_id(pf, want, recorded, sizeof(recorded)) == 0;
	if (each_debug_entry(pf, emb_entry, &em) == 1) {
		if (em.err)
			return em.err;
		if (have_id && memcmp(pe_pdb_id(*out), want, 20)) {
			pe_pdb_close(*out);
			*out = NULL;
			return -ESTALE;
		}
		return 0;
	}
	if (!have_id)
		return -ENOENT; /* no portable PDB recorded: nothing to match against */
	if (!asm_path)
		return -ENOENT;
	slash = strrchr(asm_path, '/');
	dirlen = slash ? (size_t)(slash - asm_path) + 1 : 0;
	/* 1: the recorded file name, in the assembly's directory */
	base = strrchr(recorded, '/');
	if (!base)
		base = strrchr(recorded, '\\');
	base = base ? base + 1 : recorded;
	if (base[0] && base[0] != '.' &&
	    snprintf(cand, sizeof(cand), "%.*s%s", (int)dirlen, asm_path, base) <
		    (int)sizeof(cand)) {
		err = try_file(cand, want, true, opts, out);
		if (err != -ENOENT)
			return err;
	}
	/* 2: <assembly without extension>.pdb */
	dot = strrchr(asm_path + dirlen, '.');
	if (!dot)
		dot = asm_path + strlen(asm_path);
	if (snprintf(cand, sizeof(cand), "%.*s.pdb", (int)(dot - asm_path), asm_path) >=
	    (int)sizeof(cand))
		return -ENOENT;
	return try_file(cand, want, true, opts, out);
}
