/* SPDX-License-Identifier: MIT */
/*
 * pe.c - PE/COFF envelope: mapping, headers, sections, RVA <-> offset, the
 * CLI header, the READYTORUN header, composite components, and the table of
 * other assemblies opened to resolve names.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/cursor.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "pe/pe.h"
#include "pe/pe_internal.h"

#define PE_MAX_SECTIONS 96
#define COR_IL_LIBRARY 0x4
#define R2R_SIGNATURE 0x00525452u
#define COR20_MIN_SIZE 72

static const uint16_t known_os[] = {
	PE_OS_WINDOWS, PE_OS_LINUX, PE_OS_APPLE, PE_OS_FREEBSD, PE_OS_NETBSD, PE_OS_SUNOS,
};
static const uint16_t known_arch[] = {
	PE_MACHINE_I386, PE_MACHINE_ARMNT, PE_MACHINE_AMD64, PE_MACHINE_ARM64,
	PE_MACHINE_LOONGARCH64, PE_MACHINE_RISCV64,
};

char *pe_strndup_cap(const uint8_t *p, size_t maxlen)
{
	size_t n = 0;
	char *s;

	if (maxlen > PE_MAX_STR)
		maxlen = PE_MAX_STR;
	while (n < maxlen && p[n])
		n++;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

int pe_file_rva_to_offset(const struct pe_file *pf, uint32_t rva, uint64_t *off)
{
	uint16_t i;

	if (!pf || !off)
		return -EINVAL;
	for (i = 0; i < pf->info.nsections; i++) {
		const struct pe_section *s = &pf->secs[i];

		if (rva >= s->virtual_address && rva - s->virtual_address < s->raw_size) {
			uint64_t o = (uint64_t)(rva - s->virtual_address) + s->raw_offset;

			if (o >= pf->len)
				return -EBADMSG;
			*off = o;
			return 0;
		}
	}
	/* The headers are mapped at RVA 0 .. SizeOfHeaders. */
	if (rva < pf->info.size_of_headers && rva < pf->len) {
		*off = rva;
		return 0;
	}
	return -ENOENT;
}

int pe_file_offset_to_rva(const struct pe_file *pf, uint64_t off, uint32_t *rva)
{
	uint16_t i;

	if (!pf || !rva)
		return -EINVAL;
	for (i = 0; i < pf->info.nsections; i++) {
		const struct pe_section *s = &pf->secs[i];

		if (off >= s->raw_offset && off - s->raw_offset < s->raw_size) {
			uint64_t r = off - s->raw_offset + s->virtual_address;

			if (r > UINT32_MAX)
				return -EBADMSG;
			*rva = (uint32_t)r;
			return 0;
		}
	}
	if (off < pf->info.size_of_headers) {
		*rva = (uint32_t)off;
		return 0;
	}
	return -ENOENT;
}

/*
 * Pointer to size bytes at rva, or NULL when they are not all inside one
 * section's raw data (or the headers) and the file.
 */
int pe_open_fd(const struct pe_open_opts *opts, const char *path, int *fd)
{
	if (opts && opts->open_fn)
		return opts->open_fn(opts->open_ctx, path, fd);
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return *fd < 0 ? -errno : 0;
}

const uint8_t *pe_rva_ptr(const struct pe_file *pf, uint32_t rva, uint32_t size)
{
	uint16_t i;

	for (i = 0; i < pf->info.nsections; i++) {
		const struct pe_section *s = &pf->secs[i];
		uint64_t o;

		if (rva < s->virtual_address || rva - s->virtual_address >= s->raw_size)
			continue;
		if (size > s->raw_size - (rva - s->virtual_address))
			return NULL;
		o = (uint64_t)(rva - s->virtual_address) + s->raw_offset;
		if (o > pf->len || size > pf->len - o)
			return NULL;
		return pf->data + o;
	}
	if (rva < pf->info.size_of_headers && rva < pf->len && size <= pf->len - rva &&
	    size <= pf->info.size_of_headers - rva)
		return pf->data + rva;
	return NULL;
}

int pe_find_r2r_sec(const uint8_t *secs, uint32_t nsecs, uint32_t type, uint32_t *rva,
		    uint32_t *size)
{
	uint32_t i;

	for (i = 0; i < nsecs; i++) {
		const uint8_t *e = secs + 12 * (size_t)i;

		if (ct_le32(e) == type) {
			if (rva)
				*rva = ct_le32(e + 4);
			if (size)
				*size = ct_le32(e + 8);
			return 0;
		}
	}
	return -ENOENT;
}

int pe_file_r2r_section(const struct pe_file *pf, uint32_t component, uint32_t type,
			uint32_t *rva, uint32_t *size)
{
	if (!pf)
		return -EINVAL;
	if (!pf->info.is_r2r)
		return -ENOENT;
	if (component == PE_COMPONENT_GLOBAL || (!pf->info.composite && component == 0))
		return pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, type, rva, size);
	if (component >= pf->ncomps)
		return -ENOENT;
	return pe_find_r2r_sec(pf->comps[component].secs, pf->comps[component].nsecs, type, rva,
			       size);
}

const struct pe_info *pe_file_info(const struct pe_file *pf)
{
	return &pf->info;
}

const struct pe_section *pe_file_sections(const struct pe_file *pf, size_t *n)
{
	*n = pf->info.nsections;
	return pf->secs;
}

const uint8_t *pe_file_bytes(const struct pe_file *pf, size_t *len)
{
	*len = pf->len;
	return pf->data;
}

int pe_file_data_dir(const struct pe_file *pf, unsigned idx, uint32_t *rva, uint32_t *size)
{
	if (!pf || idx >= 16)
		return -EINVAL;
	if (idx >= pf->ndirs || (pf->dirs[idx][0] == 0 && pf->dirs[idx][1] == 0))
		return -ENOENT;
	if (rva)
		*rva = pf->dirs[idx][0];
	if (size)
		*size = pf->dirs[idx][1];
	return 0;
}

static int parse_pe_headers(struct pe_file *pf)
{
	struct cursor c;
	uint32_t lfanew, sig, ndirs;
	uint16_t nsec, optsize, magic;
	size_t i, j, dirs_off;
	const uint8_t *p;

	if (pf->len < 64 || pf->data[0] != 'M' || pf->data[1] != 'Z')
		return -EPROTO;
	lfanew = ct_le32(pf->data + 0x3c);
	if (lfanew > pf->len || pf->len - lfanew < 24)
		return -EBADMSG;
	cur_init(&c, pf->data + lfanew, pf->len - lfanew);
	cur_u32(&c, &sig);
	if (sig != 0x00004550u)
		return -EPROTO;
	cur_u16(&c, &pf->info.machine_raw);
	cur_u16(&c, &nsec);
	cur_skip(&c, 12);
	cur_u16(&c, &optsize);
	cur_skip(&c, 2);
	if (c.err)
		return -EBADMSG;

	pf->info.os = (enum pe_os)0xffff;
	for (i = 0; i < ARRAY_SIZE(known_os) && pf->info.os == (enum pe_os)0xffff; i++) {
		uint16_t arch = pf->info.machine_raw ^ known_os[i];

		for (j = 0; j < ARRAY_SIZE(known_arch); j++) {
			if (arch == known_arch[j]) {
				pf->info.machine = arch;
				pf->info.os = (enum pe_os)known_os[i];
				break;
			}
		}
	}
	if (pf->info.os == (enum pe_os)0xffff) {
		/* Unknown machine: keep the raw value; R2R code tables need the arch. */
		pf->info.machine = pf->info.machine_raw;
		pf->info.os = PE_OS_WINDOWS;
	}

	p = cur_take(&c, optsize);
	if (!p || optsize < 2)
		return -EBADMSG;
	magic = ct_le16(p);
	if (magic == 0x20b) {
		pf->info.pe32plus = true;
		dirs_off = 112;
		if (optsize < dirs_off)
			return -EBADMSG;
		pf->info.image_base = ct_le64(p + 24);
		ndirs = ct_le32(p + 108);
	} else if (magic == 0x10b) {
		dirs_off = 96;
		if (optsize < dirs_off)
			return -EBADMSG;
		pf->info.image_base = ct_le32(p + 28);
		ndirs = ct_le32(p + 92);
	} else {
		return -EBADMSG;
	}
	/* both layouts: offsets below 96 are inside the checked size */
	pf->info.section_alignment = ct_le32(p + 32);
	pf->info.file_alignment = ct_le32(p + 36);
	pf->info.size_of_image = ct_le32(p + 56);
	pf->info.size_of_headers = ct_le32(p + 60);
	if (ndirs > 16)
		ndirs = 16;
	if (ndirs > (optsize - dirs_off) / 8)
		ndirs = (uint32_t)((optsize - dirs_off) / 8);
	pf->ndirs = ndirs;
	for (i = 0; i < ndirs; i++) {
		pf->dirs[i][0] = ct_le32(p + dirs_off + 8 * i);
		pf->dirs[i][1] = ct_le32(p + dirs_off + 8 * i + 4);
	}

	if (nsec > PE_MAX_SECTIONS)
		return -EBADMSG;
	p = cur_take(&c, (size_t)nsec * 40);
	if (!p)
		return -EBADMSG;
	pf->secs = calloc(nsec ? nsec : 1, sizeof(*pf->secs));
	if (!pf->secs)
		return -ENOMEM;
	for (i = 0; i < nsec; i++) {
		const uint8_t *s = p + 40 * i;
		struct pe_section *d = &pf->secs[i];

		memcpy(d->name, s, 8);
		d->name[8] = '\0';
		d->virtual_size = ct_le32(s + 8);
		d->virtual_address = ct_le32(s + 12);
		d->raw_size = ct_le32(s + 16);
		d->raw_offset = ct_le32(s + 20);
		d->characteristics = ct_le32(s + 36);
	}
	pf->info.nsections = nsec;
	return 0;
}

/* Finds the export named `name`; returns its RVA. */
static int find_export(const struct pe_file *pf, const char *name, uint32_t *rva)
{
	const uint8_t *ed, *names, *ords, *funcs;
	uint32_t ed_rva, ed_size, nfuncs, nnames, i;
	size_t nlen = strlen(name);

	if (pe_file_data_dir(pf, 0, &ed_rva, &ed_size))
		return -ENOENT;
	ed = pe_rva_ptr(pf, ed_rva, 40);
	if (!ed)
		return -EBADMSG;
	nfuncs = ct_le32(ed + 20);
	nnames = ct_le32(ed + 24);
	if (nfuncs > pf->len / 4 || nnames > pf->len / 4)
		return -EBADMSG;
	funcs = pe_rva_ptr(pf, ct_le32(ed + 28), nfuncs * 4);
	names = pe_rva_ptr(pf, ct_le32(ed + 32), nnames * 4);
	ords = pe_rva_ptr(pf, ct_le32(ed + 36), nnames * 2);
	if ((nfuncs && !funcs) || (nnames && (!names || !ords)))
		return -EBADMSG;
	for (i = 0; i < nnames; i++) {
		const uint8_t *s = pe_rva_ptr(pf, ct_le32(names + 4 * i), (uint32_t)nlen + 1);
		uint16_t ord;

		if (!s || memcmp(s, name, nlen + 1))
			continue;
		ord = ct_le16(ords + 2 * i);
		if (ord >= nfuncs)
			return -EBADMSG;
		*rva = ct_le32(funcs + 4 * ord);
		return 0;
	}
	return -ENOENT;
}

/* Reads a READYTORUN_CORE_HEADER {flags, nsecs, sections[]} at rva. */
static int read_core_header(const struct pe_file *pf, uint32_t rva, uint32_t *flags,
			    uint32_t *nsecs, const uint8_t **secs)
{
	const uint8_t *h = pe_rva_ptr(pf, rva, 8);
	uint32_t n;

	if (!h)
		return -EBADMSG;
	n = ct_le32(h + 4);
	if (n > pf->len / 12)
		return -EBADMSG;
	*secs = pe_rva_ptr(pf, rva + 8, n * 12);
	if (!*secs && n)
		return -EBADMSG;
	if (rva > UINT32_MAX - 8)
		return -EBADMSG;
	*flags = ct_le32(h);
	*nsecs = n;
	return 0;
}

static int read_section_string(const struct pe_file *pf, const uint8_t *secs, uint32_t nsecs,
			       uint32_t type, const char **out)
{
	uint32_t rva, size;
	const uint8_t *p;
	char *s;

	if (pe_find_r2r_sec(secs, nsecs, type, &rva, &size) || size == 0)
		return 0;
	p = pe_rva_ptr(pf, rva, size);
	if (!p)
		return -EBADMSG;
	s = pe_strndup_cap(p, size);
	if (!s)
		return -ENOMEM;
	*out = s;
	return 0;
}

static int add_mod(struct pe_file *pf, const char *name, struct pe_file *mpf, bool owned,
		   uint32_t *idx)
{
	struct pe_modref *nm;

	if (pf->nmods >= PE_MAX_MODULES)
		return -EMSGSIZE;
	nm = realloc(pf->mods, (pf->nmods + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	pf->mods = nm;
	nm = &pf->mods[pf->nmods];
	memset(nm, 0, sizeof(*nm));
	nm->name = strdup(name ? name : "");
	if (!nm->name)
		return -ENOMEM;
	nm->pf = mpf;
	nm->tried = mpf != NULL;
	nm->owned = owned;
	*idx = pf->nmods++;
	return 0;
}

static int parse_cli(struct pe_file *pf, struct pe_file *meta_of, uint32_t cor_rva,
		     uint32_t *mnh_rva, uint32_t *mnh_size);

/* A pe_file over the root's bytes whose metadata is an embedded MSIL image. */
static int open_embedded(struct pe_file *root, uint32_t cor_rva, struct pe_file **out)
{
	struct pe_file *e = calloc(1, sizeof(*e));
	uint32_t a, b;
	int err;

	if (!e)
		return -ENOMEM;
	e->data = root->data;
	e->len = root->len;
	e->opts = root->opts;
	e->opts.flags |= PE_OPEN_NO_RESOLVE;
	e->info.nsections = root->info.nsections;
	e->info.size_of_headers = root->info.size_of_headers;
	e->secs = calloc(root->info.nsections ? root->info.nsections : 1, sizeof(*e->secs));
	strbuf_init(&e->tn_cache, root->opts.max_names_bytes);
	if (!e->secs) {
		pe_file_close(e);
		return -ENOMEM;
	}
	memcpy(e->secs, root->secs, root->info.nsections * sizeof(*e->secs));
	err = parse_cli(e, e, cor_rva, &a, &b);
	if (err) {
		pe_file_close(e);
		return err;
	}
	*out = e;
	return 0;
}

static int parse_components(struct pe_file *pf)
{
	uint32_t rva, size, n, i, mv_rva = 0, mv_size = 0;
	const uint8_t *p, *mv = NULL;
	int err;

	if (pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_COMPONENT_ASSEMBLIES, &rva, &size))
		return 0;
	pf->info.composite = true;
	n = size / 16;
	p = pe_rva_ptr(pf, rva, n * 16);
	if (!p && n)
		return -EBADMSG;
	if (!pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_MANIFEST_ASSEMBLY_MVIDS, &mv_rva,
			      &mv_size) && mv_size / 16 >= n)
		mv = pe_rva_ptr(pf, mv_rva, n * 16);
	pf->comps = calloc(n ? n : 1, sizeof(*pf->comps));
	if (!pf->comps)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct pe_comp *cp = &pf->comps[i];
		uint32_t flags;
		const char *name = NULL;
		uint32_t ref_rid = i + 1, nameidx;

		cp->cor_rva = ct_le32(p + 16 * i);
		cp->cor_size = ct_le32(p + 16 * i + 4);
		cp->core_rva = ct_le32(p + 16 * i + 8);
		cp->core_size = ct_le32(p + 16 * i + 12);
		err = read_core_header(pf, cp->core_rva, &flags, &cp->nsecs, &cp->secs);
		if (err)
			return err;
		if (mv) {
			memcpy(cp->mvid, mv + 16 * i, 16);
			cp->has_mvid = true;
		}
		/* Component i is manifest AssemblyRef RID i + 1. */
		if (pf->manifest.present &&
		    !pe_md_col(&pf->manifest, PE_MD_ASSEMBLYREF, ref_rid, 6, &nameidx))
			name = pe_md_str(&pf->manifest, nameidx);
		err = add_mod(pf, name, NULL, true, &cp->mod);
		if (err)
			return err;
		pf->ncomps = i + 1;
		if (cp->cor_size) {
			struct pe_file *e;

			/* MSIL embedded in the composite image. */
			if (!open_embedded(pf, cp->cor_rva, &e)) {
				pf->mods[cp->mod].pf = e;
				pf->mods[cp->mod].tried = true;
			}
		}
	}
	pf->info.ncomponents = n;
	return 0;
}

static int parse_r2r(struct pe_file *pf, uint32_t hdr_rva)
{
	const uint8_t *h = pe_rva_ptr(pf, hdr_rva, 16);
	uint32_t rva, size;
	int err;

	if (!h)
		return -EBADMSG;
	if (ct_le32(h) != R2R_SIGNATURE)
		return -EBADMSG;
	pf->info.r2r_header_rva = hdr_rva;
	pf->info.r2r_major = ct_le16(h + 4);
	pf->info.r2r_minor = ct_le16(h + 6);
	if (hdr_rva > UINT32_MAX - 8)
		return -EBADMSG;
	err = read_core_header(pf, hdr_rva + 8, &pf->info.r2r_flags, &pf->r2r_nsecs,
			       &pf->r2r_secs);
	if (err)
		return err;
	pf->info.is_r2r = true;
	pf->info.component = (pf->info.r2r_flags & PE_R2R_FLAG_COMPONENT) != 0;
	err = read_section_string(pf, pf->r2r_secs, pf->r2r_nsecs,
				  PE_R2R_OWNER_COMPOSITE_EXECUTABLE, &pf->info.owner_composite);
	if (!err)
		err = read_section_string(pf, pf->r2r_secs, pf->r2r_nsecs,
					  PE_R2R_COMPILER_IDENTIFIER, &pf->info.compiler_id);
	if (err)
		return err;
	if (!pe_find_r2r_sec(pf->r2r_secs, pf->r2r_nsecs, PE_R2R_MANIFEST_METADATA, &rva, &size) &&
	    size) {
		const uint8_t *mp = pe_rva_ptr(pf, rva, size);

		if (!mp)
			return -EBADMSG;
		err = pe_md_parse(&pf->manifest, mp, size);
		if (err)
			return err;
	}
	err = parse_components(pf);
	if (err)
		return err;
	if (!pf->info.composite && !pf->info.component)
		pf->info.ncomponents = 1;
	return 0;
}

/* Parses the COR20 header at cor_rva and meta_of's metadata. */
static int parse_cli(struct pe_file *pf, struct pe_file *meta_of, uint32_t cor_rva,
		     uint32_t *mnh_rva, uint32_t *mnh_size)
{
	const uint8_t *cor = pe_rva_ptr(pf, cor_rva, COR20_MIN_SIZE), *mdp;
	uint32_t md_rva, md_size, nameidx;
	int err;

	if (!cor)
		return -EBADMSG;
	if (ct_le32(cor) < COR20_MIN_SIZE)
		return -EBADMSG;
	meta_of->info.has_cli = true;
	md_rva = ct_le32(cor + 8);
	md_size = ct_le32(cor + 12);
	meta_of->info.cli_flags = ct_le32(cor + 16);
	meta_of->info.metadata_rva = md_rva;
	meta_of->info.metadata_size = md_size;
	*mnh_rva = ct_le32(cor + 64);
	*mnh_size = ct_le32(cor + 68);
	if (!md_size)
		return 0;
	mdp = pe_rva_ptr(pf, md_rva, md_size);
	if (!mdp)
		return -EBADMSG;
	err = pe_md_parse(&meta_of->md, mdp, md_size);
	if (err)
		return err;
	if (!pe_md_col(&meta_of->md, PE_MD_ASSEMBLY, 1, 7, &nameidx)) {
		meta_of->info.assembly_name =
			pe_strndup_cap((const uint8_t *)pe_md_str(&meta_of->md, nameidx), PE_MAX_STR);
		if (!meta_of->info.assembly_name)
			return -ENOMEM;
	}
	return 0;
}

static int parse_all(struct pe_file *pf)
{
	uint32_t cor_rva, cor_size, mnh_rva = 0, mnh_size = 0, exp_rva, self;
	int err;

	err = parse_pe_headers(pf);
	if (err)
		return err;
	if (!pe_file_data_dir(pf, 14, &cor_rva, &cor_size) && cor_size) {
		err = parse_cli(pf, pf, cor_rva, &mnh_rva, &mnh_size);
		if (err)
			return err;
	}
	err = add_mod(pf, pf->info.assembly_name, pf, false, &self);
	if (err)
		return err;
	if (pf->info.has_cli && (pf->info.cli_flags & COR_IL_LIBRARY) && mnh_size) {
		err = parse_r2r(pf, mnh_rva);
	} else {
		/* Composite images: the header is the RTR_HEADER export. */
		err = find_export(pf, "RTR_HEADER", &exp_rva);
		if (err == -ENOENT)
			return pf->info.has_cli ? 0 : -EPROTO;
		if (!err) {
			pf->info.r2r_via_export = true;
			err = parse_r2r(pf, exp_rva);
		}
	}
	return err;
}

static int init_common(struct pe_file *pf, const struct pe_open_opts *opts)
{
	if (opts)
		pf->opts = *opts;
	if (!pf->opts.max_file_size)
		pf->opts.max_file_size = PE_DEFAULT_MAX_FILE_SIZE;
	if (!pf->opts.max_names_bytes)
		pf->opts.max_names_bytes = PE_DEFAULT_MAX_NAMES_BYTES;
	pf->opts.search_dirs = NULL;
	strbuf_init(&pf->tn_cache, pf->opts.max_names_bytes);
	return 0;
}

int pe_file_open_mem(const void *data, size_t len, const struct pe_open_opts *opts,
		     struct pe_file **out)
{
	struct pe_file *pf;
	int err;

	if (!data || !out)
		return -EINVAL;
	*out = NULL;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	init_common(pf, opts);
	pf->opts.flags |= PE_OPEN_NO_RESOLVE;
	if (len > pf->opts.max_file_size) {
		free(pf);
		return -EFBIG;
	}
	pf->data = data;
	pf->len = len;
	err = parse_all(pf);
	if (err) {
		pe_file_close(pf);
		return err;
	}
	*out = pf;
	return 0;
}

int pe_md_open_mem(const void *data, size_t len, struct pe_file **out)
{
	struct pe_file *pf;
	int err;

	if (!data || !out)
		return -EINVAL;
	*out = NULL;
	if (len > UINT32_MAX)
		return -EFBIG;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	init_common(pf, NULL);
	pf->opts.flags |= PE_OPEN_NO_RESOLVE;
	err = pe_md_parse(&pf->md, data, (uint32_t)len);
	if (err) {
		pe_file_close(pf);
		return err;
	}
	*out = pf;
	return 0;
}

static int copy_search_dirs(struct pe_file *pf, const char *const *dirs)
{
	size_t n = 0, i;

	if (!dirs)
		return 0;
	while (dirs[n] && n < 64)
		n++;
	pf->search_dirs = calloc(n + 1, sizeof(char *));
	if (!pf->search_dirs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		pf->search_dirs[i] = strdup(dirs[i]);
		if (!pf->search_dirs[i])
			return -ENOMEM;
	}
	return 0;
}

static int resolve_components(struct pe_file *pf);

int pe_file_open(const char *path, const struct pe_open_opts *opts, struct pe_file **out)
{
	struct pe_file *pf;
	struct stat st;
	char *slash;
	void *map;
	int fd, err;

	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	init_common(pf, opts);
	pf->path = strdup(path);
	if (!pf->path) {
		err = -ENOMEM;
		goto out;
	}
	err = copy_search_dirs(pf, opts ? opts->search_dirs : NULL);
	if (err)
		goto out;
	pf->dir = strdup(path);
	if (!pf->dir) {
		err = -ENOMEM;
		goto out;
	}
	slash = strrchr(pf->dir, '/');
	if (slash)
		*slash = '\0';
	else
		pf->dir[0] = '\0';

	err = pe_open_fd(&pf->opts, path, &fd);
	if (err)
		goto out;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		err = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > pf->opts.max_file_size) {
		close(fd);
		err = -EFBIG;
		goto out;
	}
	if (st.st_size == 0) {
		close(fd);
		err = -EPROTO;
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	pf->data = map;
	pf->len = (size_t)st.st_size;
	pf->mapped = true;
	err = parse_all(pf);
	if (!err && pf->info.composite && !(pf->opts.flags & PE_OPEN_NO_RESOLVE))
		err = resolve_components(pf);
out:
	if (err) {
		pe_file_close(pf);
		return err;
	}
	*out = pf;
	return 0;
}

void pe_file_close(struct pe_file *pf)
{
	uint32_t i;

	if (!pf)
		return;
	for (i = 0; i < pf->nmods; i++) {
		if (pf->mods[i].owned)
			pe_file_close(pf->mods[i].pf);
		free(pf->mods[i].name);
	}
	free(pf->mods);
	free(pf->comps);
	if (pf->mapped)
		munmap((void *)pf->data, pf->len);
	if (pf->search_dirs) {
		for (i = 0; pf->search_dirs[i]; i++)
			free(pf->search_dirs[i]);
		free(pf->search_dirs);
	}
	pe_md_release(&pf->md);
	pe_md_release(&pf->manifest);
	free(pf->enclosing);
	free(pf->method_owner);
	free(pf->tn_off);
	strbuf_release(&pf->tn_cache);
	free(pf->methods);
	free(pf->ranges);
	free(pf->sorted);
	free(pf->arena);
	free(pf->meth_mod);
	free(pf->inst_sig);
	free((char *)pf->info.assembly_name);
	free((char *)pf->info.owner_composite);
	free((char *)pf->info.compiler_id);
	free(pf->secs);
	free(pf->path);
	free(pf->dir);
	free(pf);
}

/* ---- other assemblies ---- */

static bool safe_asm_name(const char *name)
{
	if (!name[0] || strlen(name) > 255 || name[0] == '.')
		return false;
	return !strchr(name, '/');
}

static struct pe_file *try_open_in(struct pe_file *root, const char *dir, const char *name)
{
	struct pe_open_opts o = root->opts;
	struct strbuf path = STRBUF_INIT_MAX(4096);
	struct pe_file *m = NULL;

	o.flags |= PE_OPEN_NO_RESOLVE;
	o.search_dirs = NULL;
	if (strbuf_addf(&path, "%s%s%s.dll", dir, dir[0] ? "/" : "", name) == 0) {
		if (pe_file_open(path.buf, &o, &m))
			m = NULL;
	}
	strbuf_release(&path);
	/* The file must define the assembly we asked for. */
	if (m && (!m->info.assembly_name || strcmp(m->info.assembly_name, name))) {
		pe_file_close(m);
		m = NULL;
	}
	return m;
}

static struct pe_file *load_mod(struct pe_file *root, uint32_t idx)
{
	struct pe_modref *mr = &root->mods[idx];
	struct pe_file *m = NULL;
	size_t i;

	if (mr->tried)
		return mr->pf;
	mr->tried = true;
	if ((root->opts.flags & PE_OPEN_NO_RESOLVE) || !root->dir || !safe_asm_name(mr->name))
		return NULL;
	m = try_open_in(root, root->dir, mr->name);
	for (i = 0; !m && root->search_dirs && root->search_dirs[i]; i++)
		m = try_open_in(root, root->search_dirs[i], mr->name);
	mr->pf = m;
	mr->owned = true;
	if (!m)
		ct_debug("pe: %s: assembly %s not found", root->path, mr->name);
	return m;
}

static int resolve_components(struct pe_file *pf)
{
	uint32_t i;

	for (i = 0; i < pf->ncomps; i++) {
		struct pe_comp *cp = &pf->comps[i];
		struct pe_file *m = load_mod(pf, cp->mod);
		uint32_t guid_idx;
		uint8_t mvid[16];

		if (!m || !cp->has_mvid)
			continue;
		/* Check the IL file is the one the composite was compiled from. */
		if (pe_md_col(&m->md, PE_MD_MODULE, 1, 2, &guid_idx) ||
		    pe_md_guid(m, guid_idx, mvid) || memcmp(mvid, cp->mvid, 16)) {
			ct_warn("pe: %s: component %s has another MVID; not used", pf->path,
				pf->mods[cp->mod].name);
			pe_file_close(m);
			pf->mods[cp->mod].pf = NULL;
		}
	}
	return 0;
}

static struct pe_file *mod_by_name(struct pe_file *root, const char *name)
{
	uint32_t i, idx;

	if (!name || !name[0])
		return NULL;
	for (i = 0; i < root->nmods; i++)
		if (!strcmp(root->mods[i].name, name))
			return load_mod(root, i);
	if (add_mod(root, name, NULL, true, &idx))
		return NULL;
	return load_mod(root, idx);
}

/*
 * Module index as used by R2R signatures (MODULE_ZAPSIG, UpdateContext),
 * relative to the root image: 0 is the root itself; 1..nAssemblyRef the
 * root's own AssemblyRefs; then (R2R >= 6.3) one for the manifest itself,
 * then the ManifestMetadata AssemblyRefs. A composite image has no own
 * AssemblyRefs, so 1 is the composite and 2.. are manifest AssemblyRef 1..,
 * the first ncomponents of which are the components.
 */
struct pe_file *pe_module_by_index(struct pe_file *root, uint32_t index)
{
	uint32_t nref = 0, k, nameidx;
	bool two = root->info.r2r_major > 6 ||
		   (root->info.r2r_major == 6 && root->info.r2r_minor >= 3);

	/* a composite's own metadata is a stub: no method tokens live there */
	if (index == 0)
		return root->md.present && !root->info.composite ? root : NULL;
	if (!root->info.composite) {
		nref = pe_md_rows(root, PE_MD_ASSEMBLYREF);
		if (index <= nref) {
			if (pe_md_col(&root->md, PE_MD_ASSEMBLYREF, index, 6, &nameidx))
				return NULL;
			return mod_by_name(root, pe_md_str(&root->md, nameidx));
		}
	}
	k = index - nref;
	if (two) {
		if (k == 1)
			return root->md.present && !root->info.composite ? root : NULL;
		k--;
	}
	if (root->info.composite && k >= 1 && k - 1 < root->ncomps)
		return load_mod(root, root->comps[k - 1].mod);
	if (!root->manifest.present || pe_md_col(&root->manifest, PE_MD_ASSEMBLYREF, k, 6, &nameidx))
		return NULL;
	return mod_by_name(root, pe_md_str(&root->manifest, nameidx));
}
