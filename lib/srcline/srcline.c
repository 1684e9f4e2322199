/* SPDX-License-Identifier: MIT */
/*
 * srcline.c - managed frame -> IL offset -> file:line. See srcline.h.
 *
 * Events only append to three arrays (code bodies, IL maps, modules); maps
 * are paired with their code bodies and bodies sorted by address on the first
 * lookup after new events (sorting, no hashing).
 */
#include "common/compat.h"

#include <pthread.h>

#include "common/cursor.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "srcline/srcline.h"

#define IL_NO_MAPPING 0xFFFFFFFFu
#define IL_PROLOG 0xFFFFFFFEu
#define IL_EPILOG 0xFFFFFFFDu
#define MAX_BACKSCAN 64 /* overlapping bodies examined before an address */

struct body {
	uint64_t start, method_id, module_id, seq;
	uint32_t size, token;
	uint32_t map; /* index into maps + 1, 0: none */
	uint32_t r2r_map; /* the same from the image's R2R debug info, 0: none */
	bool rundown, r2r_tried;
};

struct ilmap {
	uint64_t method_id, seq;
	uint32_t first, n; /* entries ents[first .. first + n) */
	bool rundown;
	bool r2r; /* decoded from an R2R image for one body: never paired by resolve() */
};

struct ent {
	uint32_t native, il;
};

struct module {
	uint64_t id;
	char *path;
	struct pe_file *pf;
	struct pe_pdb *pdb;
	bool tried, warned;
	int err;     /* opening the PDB (-EIO: the assembly itself) */
	uint64_t base; /* R2R: where the image's RVA 0 is in the process, 0: not known yet */
};

struct srcline {
	struct pe_open_opts opts;
	struct body *bodies;
	size_t nbodies, capbodies;
	struct ilmap *maps;
	size_t nmaps, capmaps;
	struct ent *ents;
	size_t nents, capents;
	struct module *mods;
	size_t nmods, capmods;
	uint32_t *by_addr; /* body indexes sorted by start */
	struct pe_bound *r2r_buf; /* PE_R2R_MAX_BOUNDS entries, for decoding */
	bool dirty;
	uint64_t seq;
	struct strbuf sb;
	pthread_mutex_t mu; /* events may come from a srcline_follow thread */
};

const char *srcline_why_str(enum srcline_why why)
{
	switch (why) {
	case SRCLINE_OK:
		return "ok";
	case SRCLINE_NO_METHOD:
		return "no method load event for the address";
	case SRCLINE_NO_MAP:
		return "no IL-to-native map for the code";
	case SRCLINE_NO_IL:
		return "prolog, epilog or unmapped code";
	case SRCLINE_NO_MODULE:
		return "assembly not readable";
	case SRCLINE_NO_PDB:
		return "no PDB";
	case SRCLINE_PDB_MISMATCH:
		return "PDB does not match the assembly";
	case SRCLINE_NO_SEQPOINT:
		return "no sequence point for the IL offset";
	}
	return "?";
}

int srcline_new(const struct pe_open_opts *opts, struct srcline **out)
{
	struct srcline *sl = calloc(1, sizeof(*sl));

	*out = NULL;
	if (!sl)
		return -ENOMEM;
	if (opts)
		sl->opts = *opts;
	sl->opts.flags |= PE_OPEN_NO_RESOLVE;
	pthread_mutex_init(&sl->mu, NULL);
	strbuf_init(&sl->sb, PE_PDB_MAX_PATH);
	*out = sl;
	return 0;
}

void srcline_free(struct srcline *sl)
{
	size_t i;

	if (!sl)
		return;
	for (i = 0; i < sl->nmods; i++) {
		free(sl->mods[i].path);
		pe_pdb_close(sl->mods[i].pdb);
		pe_file_close(sl->mods[i].pf);
	}
	free(sl->mods);
	free(sl->bodies);
	free(sl->maps);
	free(sl->ents);
	free(sl->by_addr);
	free(sl->r2r_buf);
	strbuf_release(&sl->sb);
	pthread_mutex_destroy(&sl->mu);
	free(sl);
}

/* Grows *v (element size sz) to hold one more than *n, up to max. */
static int grow(void **v, size_t *cap, size_t n, size_t sz, size_t max, size_t more)
{
	size_t ncap;
	void *nv;

	if (n + more > max)
		return -EFBIG;
	if (n + more <= *cap)
		return 0;
	ncap = *cap ? *cap : 256;
	while (ncap < n + more)
		ncap *= 2;
	nv = realloc(*v, ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static int add_body(struct srcline *sl, const struct nt_event *ev, bool rundown)
{
	struct nt_method_load ml;
	struct body *b;
	int err = nt_decode_method_load(ev->payload, ev->payload_len, ev->meta->version,
					ev->pointer_size, &ml);

	if (err)
		return err;
	if (!ml.size || ml.start > UINT64_MAX - ml.size)
		return 0;
	err = grow((void **)&sl->bodies, &sl->capbodies, sl->nbodies, sizeof(*b),
		   SRCLINE_MAX_BODIES, 1);
	if (err)
		return err;
	b = &sl->bodies[sl->nbodies++];
	memset(b, 0, sizeof(*b));
	b->start = ml.start;
	b->size = ml.size;
	b->method_id = ml.method_id;
	b->module_id = ml.module_id;
	b->token = ml.token;
	b->seq = sl->seq++;
	b->rundown = rundown;
	sl->dirty = true;
	return 0;
}

/* MethodILToNativeMap (all versions): MethodID, ReJITID, MethodExtent, Count, IL[], Native[]. */
static int add_map(struct srcline *sl, const struct nt_event *ev, bool rundown)
{
	struct cursor c;
	uint64_t mid, rejit;
	uint8_t extent;
	uint16_t n, i;
	const uint8_t *ils, *nats;
	struct ilmap *m;
	int err;

	cur_init(&c, ev->payload, ev->payload_len);
	cur_u64(&c, &mid);
	cur_u64(&c, &rejit);
	cur_u8(&c, &extent);
	cur_u16(&c, &n);
	ils = cur_take(&c, (size_t)n * 4);
	nats = cur_take(&c, (size_t)n * 4);
	if (c.err || !ils || !nats)
		return -EBADMSG;
	if (extent != 0 || n == 0)
		return 0; /* cold part of split code: not kept */
	err = grow((void **)&sl->maps, &sl->capmaps, sl->nmaps, sizeof(*m), SRCLINE_MAX_BODIES, 1);
	if (!err)
		err = grow((void **)&sl->ents, &sl->capents, sl->nents, sizeof(struct ent),
			   SRCLINE_MAX_MAP_ENTRIES, n);
	if (err)
		return err;
	m = &sl->maps[sl->nmaps++];
	m->method_id = mid;
	m->seq = sl->seq++;
	m->first = (uint32_t)sl->nents;
	m->n = n;
	m->rundown = rundown;
	m->r2r = false;
	for (i = 0; i < n; i++) {
		sl->ents[sl->nents].il = ct_le32(ils + 4 * (size_t)i);
		sl->ents[sl->nents].native = ct_le32(nats + 4 * (size_t)i);
		sl->nents++;
	}
	sl->dirty = true;
	return 0;
}

static int add_module(struct srcline *sl, const struct nt_event *ev)
{
	struct nt_module_load mo;
	struct module *m;
	size_t i;
	int err = nt_decode_module_load(ev->payload, ev->payload_len, ev->meta->version,
					ev->pointer_size, &mo);

	if (err)
		return err;
	for (i = 0; i < sl->nmods; i++)
		if (sl->mods[i].id == mo.module_id)
			return 0;
	strbuf_reset(&sl->sb);
	err = nt_str16_utf8(&mo.il_path, &sl->sb);
	if (err || !sl->sb.len || sl->sb.buf[0] != '/')
		return err == -EMSGSIZE ? 0 : err;
	err = grow((void **)&sl->mods, &sl->capmods, sl->nmods, sizeof(*m), SRCLINE_MAX_MODULES, 1);
	if (err)
		return err;
	m = &sl->mods[sl->nmods];
	memset(m, 0, sizeof(*m));
	m->id = mo.module_id;
	m->path = strdup(sl->sb.buf);
	if (!m->path)
		return -ENOMEM;
	sl->nmods++;
	return 0;
}

static int add_event(struct srcline *sl, const struct nt_event *ev)
{
	const struct nt_metadata *md = ev->meta;

	if (md->provider_kind == NT_PROV_RUNTIME) {
		if (md->event_id == 143)
			return add_body(sl, ev, false);
		if (md->event_id == 190)
			return add_map(sl, ev, false);
		if (md->event_id == 152)
			return add_module(sl, ev);
	} else if (md->provider_kind == NT_PROV_RUNDOWN) {
		if (md->event_id == 143 || md->event_id == 144)
			return add_body(sl, ev, true);
		if (md->event_id == 149 || md->event_id == 150)
			return add_map(sl, ev, true);
		if (md->event_id == 153 || md->event_id == 154)
			return add_module(sl, ev);
	}
	return 0;
}

int srcline_add_event(struct srcline *sl, const struct nt_event *ev)
{
	int rc;

	pthread_mutex_lock(&sl->mu);
	rc = add_event(sl, ev);
	pthread_mutex_unlock(&sl->mu);
	return rc;
}

/* ---- pairing and lookup ---- */

static const struct srcline *sort_ctx;

static int cmp_by_mid(const void *a, const void *b)
{
	const struct body *x = &sort_ctx->bodies[*(const uint32_t *)a];
	const struct body *y = &sort_ctx->bodies[*(const uint32_t *)b];

	if (x->method_id != y->method_id)
		return x->method_id < y->method_id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_by_addr(const void *a, const void *b)
{
	const struct body *x = &sort_ctx->bodies[*(const uint32_t *)a];
	const struct body *y = &sort_ctx->bodies[*(const uint32_t *)b];

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * A runtime map follows its MethodLoadVerbose: the latest runtime body of
 * that method before it. A rundown map precedes its DCStart/DCEnd: the first
 * rundown body of that method after it.
 */
static int resolve(struct srcline *sl)
{
	uint32_t *idx;
	size_t i;

	free(sl->by_addr);
	sl->by_addr = NULL;
	idx = malloc((sl->nbodies ? sl->nbodies : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < sl->nbodies; i++) {
		idx[i] = (uint32_t)i;
		sl->bodies[i].map = 0;
	}
	sort_ctx = sl;
	qsort(idx, sl->nbodies, sizeof(*idx), cmp_by_mid);
	for (i = 0; i < sl->nmaps; i++) {
		const struct ilmap *m = &sl->maps[i];
		size_t lo = 0, hi = sl->nbodies, k;

		if (m->r2r)
			continue;
		/* first body with (method_id, seq) > (m->method_id, m->seq) */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct body *b = &sl->bodies[idx[mid]];

			if (b->method_id < m->method_id ||
			    (b->method_id == m->method_id && b->seq < m->seq))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (m->rundown) {
			for (k = lo; k < sl->nbodies; k++) {
				struct body *b = &sl->bodies[idx[k]];

				if (b->method_id != m->method_id)
					break;
				if (b->rundown) {
					if (!b->map)
						b->map = (uint32_t)i + 1;
					break;
				}
			}
		} else {
			for (k = lo; k-- > 0;) {
				struct body *b = &sl->bodies[idx[k]];

				if (b->method_id != m->method_id)
					break;
				if (!b->rundown) {
					b->map = (uint32_t)i + 1;
					break;
				}
			}
		}
	}
	for (i = 0; i < sl->nbodies; i++)
		idx[i] = (uint32_t)i;
	qsort(idx, sl->nbodies, sizeof(*idx), cmp_by_addr);
	sort_ctx = NULL;
	sl->by_addr = idx;
	sl->dirty = false;
	return 0;
}

/* The body containing ip, latest recorded first; one with a map preferred. */
static const struct body *find_body(struct srcline *sl, uint64_t ip)
{
	size_t lo = 0, hi = sl->nbodies, k, seen = 0;
	const struct body *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sl->bodies[sl->by_addr[mid]].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k-- > 0 && seen < MAX_BACKSCAN; seen++) {
		const struct body *b = &sl->bodies[sl->by_addr[k]];

		if (ip - b->start >= b->size)
			continue;
		if (!best || (!best->map && b->map) || (!best->map == !b->map && b->seq > best->seq))
			best = b;
	}
	return best;
}

static struct module *find_module(struct srcline *sl, uint64_t id)
{
	size_t i;

	for (i = 0; i < sl->nmods; i++)
		if (sl->mods[i].id == id)
			return &sl->mods[i];
	return NULL;
}

/* Opens the module's assembly and its PDB once (the PDB's id checked). */
static void open_module(struct srcline *sl, struct module *mod)
{
	if (mod->tried)
		return;
	mod->tried = true;
	mod->err = pe_file_open(mod->path, &sl->opts, &mod->pf);
	if (!mod->err)
		mod->err = pe_pdb_open_for(mod->pf, mod->path, &sl->opts, &mod->pdb);
	else
		mod->err = -EIO;
	if (mod->err == -ESTALE && !mod->warned) {
		mod->warned = true; /* one line per assembly, in every view */
		ct_warn("%s: its PDB does not match the assembly (another build's PDB id): "
			"refused, no lines for its frames", mod->path);
	}
}

/*
 * The R2R method of body b: the image's RVA 0 in the process is learnt from
 * the first body whose MethodDef has one entry point (start - entry RVA),
 * then every body is looked up by its RVA (generic instantiations too).
 */
static const struct pe_method *r2r_method(struct module *mod, const struct body *b)
{
	const struct pe_method *ms, *m = NULL;
	const struct pe_range *r;
	size_t n, i;

	if (pe_file_methods(mod->pf, &ms, &n))
		return NULL;
	if (!mod->base) {
		for (i = 0; i < n; i++)
			if (ms[i].token == b->token && !(ms[i].flags & PE_METHOD_INSTANCE) &&
			    !ms[i].component && b->start > ms[i].entry_rva)
				mod->base = b->start - ms[i].entry_rva;
		if (!mod->base)
			return NULL;
	}
	if (b->start - mod->base > UINT32_MAX ||
	    pe_file_lookup_rva(mod->pf, (uint32_t)(b->start - mod->base), &m, &r) ||
	    m->token != b->token || m->entry_rva != b->start - mod->base)
		return NULL;
	return m;
}

/* The IL map of an R2R body from its image's debug info (decoded once). */
static uint32_t r2r_map(struct srcline *sl, struct module *mod, struct body *b)
{
	const struct pe_method *m;
	struct ilmap *im;
	size_t n, i;

	if (b->r2r_tried)
		return b->r2r_map;
	b->r2r_tried = true;
	if (!mod->pf || !pe_file_info(mod->pf)->is_r2r || pe_file_info(mod->pf)->composite)
		return 0;
	m = r2r_method(mod, b);
	if (!m)
		return 0;
	if (!sl->r2r_buf) {
		sl->r2r_buf = malloc(PE_R2R_MAX_BOUNDS * sizeof(*sl->r2r_buf));
		if (!sl->r2r_buf)
			return 0;
	}
	if (pe_file_r2r_bounds(mod->pf, m->rf_index, sl->r2r_buf, PE_R2R_MAX_BOUNDS, &n) ||
	    grow((void **)&sl->maps, &sl->capmaps, sl->nmaps, sizeof(*im), SRCLINE_MAX_BODIES, 1) ||
	    grow((void **)&sl->ents, &sl->capents, sl->nents, sizeof(struct ent),
		 SRCLINE_MAX_MAP_ENTRIES, n))
		return 0;
	im = &sl->maps[sl->nmaps++];
	memset(im, 0, sizeof(*im));
	im->method_id = b->method_id;
	im->first = (uint32_t)sl->nents;
	im->n = (uint32_t)n;
	im->r2r = true;
	for (i = 0; i < n; i++) {
		sl->ents[sl->nents].native = sl->r2r_buf[i].native;
		sl->ents[sl->nents].il = sl->r2r_buf[i].il;
		sl->nents++;
	}
	b->r2r_map = (uint32_t)sl->nmaps;
	return b->r2r_map;
}

static int lookup(struct srcline *sl, uint64_t ip, bool return_address, struct pe_srcline *out,
		  uint32_t *il_offset, enum srcline_why *why)
{
	struct body *b;
	const struct ilmap *m;
	const struct ent *best = NULL;
	struct module *mod;
	uint32_t i, map;
	uint64_t off;
	int err;

	memset(out, 0, sizeof(*out));
	*il_offset = 0;
	*why = SRCLINE_NO_METHOD;
	if (sl->dirty && resolve(sl))
		return -ENOMEM;
	if (return_address && ip)
		ip--;
	b = (struct body *)find_body(sl, ip);
	if (!b)
		return -ENOENT;
	mod = find_module(sl, b->module_id);
	if (mod)
		open_module(sl, mod);
	/* R2R debug info only for a module with a PDB (building an image's method
	 * table costs: System.Private.CoreLib's takes a few hundred ms) */
	map = b->map ? b->map : mod && !mod->err ? r2r_map(sl, mod, b) : 0;
	*why = SRCLINE_NO_MAP;
	if (!map)
		return -ENOENT;
	m = &sl->maps[map - 1];
	off = ip - b->start;
	for (i = 0; i < m->n; i++) {
		const struct ent *e = &sl->ents[m->first + i];

		if (e->native <= off && (!best || e->native >= best->native))
			best = e;
	}
	*why = SRCLINE_NO_IL;
	if (!best || best->il == IL_NO_MAPPING || best->il == IL_PROLOG || best->il == IL_EPILOG)
		return -ENOENT;
	*il_offset = best->il;
	*why = SRCLINE_NO_MODULE;
	if (!mod)
		return -ENOENT;
	if (mod->err) {
		*why = mod->err == -EIO ? SRCLINE_NO_MODULE
		     : mod->err == -ESTALE ? SRCLINE_PDB_MISMATCH : SRCLINE_NO_PDB;
		return mod->err == -ESTALE ? -ESTALE : -ENOENT;
	}
	*why = SRCLINE_NO_SEQPOINT;
	err = pe_pdb_line(mod->pdb, b->token, best->il, out);
	if (err)
		return err == -ENOMEM ? err : -ENOENT;
	*why = SRCLINE_OK;
	return 0;
}

int srcline_lookup(struct srcline *sl, uint64_t ip, bool return_address, struct pe_srcline *out,
		   uint32_t *il_offset, enum srcline_why *why)
{
	int rc;

	pthread_mutex_lock(&sl->mu);
	rc = lookup(sl, ip, return_address, out, il_offset, why);
	pthread_mutex_unlock(&sl->mu);
	return rc;
}

int srcline_name(struct srcline *sl, uint64_t ip, bool return_address, const char *name,
		 char *buf, size_t len)
{
	struct pe_srcline l;
	enum srcline_why why;
	uint32_t il;
	char *own = NULL;
	int r = sl ? srcline_lookup(sl, ip, return_address, &l, &il, &why) : -ENOENT;

	if (r == -ENOMEM)
		return r;
	if (r && sl)
		ct_debug("source lines: %s at 0x%" PRIx64 ": %s (IL 0x%x)", name, ip,
			 srcline_why_str(why), il);
	if (r == 0 && buf == name) { /* in place */
		own = strdup(name);
		if (!own)
			return -ENOMEM;
		name = own;
	}
	if (r == 0 && (size_t)snprintf(buf, len, "%s in %s:line %u", name, l.file, l.line) < len)
		r = 1;
	else if (buf != name)
		snprintf(buf, len, "%s", name);
	free(own);
	return r == 1;
}

void srcline_counts(const struct srcline *sl, size_t *bodies, size_t *maps)
{
	*bodies = sl ? sl->nbodies : 0;
	*maps = sl ? sl->nmaps : 0;
}
