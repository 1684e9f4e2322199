/* SPDX-License-Identifier: MIT */
/*
 * sym.c - the symbolizer of a live process: /proc/PID/maps decides where an
 * address lives, then the perf map (JIT code and stubs in anonymous and
 * /memfd:doublemapper mappings), the R2R image (lib/pe), the ELF file
 * (sym_elf.c) or kallsyms names it. Results are cached per address.
 * docs/internals/sym.md describes the whole.
 */
#include "common/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "common/hashtab.h"
#include "common/io.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "jitdump/jitdump.h"
#include "pe/pe.h"
#include "proc/proc.h"
#include "sym/sym_cache.h"
#include "sym/sym_internal.h"
#include "sym/sym_srv.h"

enum map_type {
	MT_ANON = 0, /* no file: JIT code when executable */
	MT_JIT,      /* /memfd:doublemapper: the runtime's W^X code heap */
	MT_FILE,
	MT_SPECIAL,  /* [vdso], [vsyscall], [heap], [stack] ... */
};

enum image_kind { IMG_UNTRIED = 0, IMG_ELF, IMG_PE, IMG_NONE };

struct image {
	struct image *next;
	char *tpath;       /* as the target sees it */
	char *hpath;       /* as we can open it */
	const char *base;  /* last path component (arena) */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	enum image_kind kind;
	struct sym_elf elf;
	struct pe_file *pe;
	bool pe_r2r;
	struct sym_img *cimg; /* set: lookups use it (sym_cache.c), elf and pe are unused */
	bool srv_retry;       /* loaded while downloads were held (sym_srv_hold): load again after */
};

struct map {
	uint64_t start, end, pgoff;
	char perms[5];
	uint8_t type;
	const char *special; /* arena: "[vdso]" ... */
	struct image *img;
};

struct pm_ent {
	uint64_t start, end;
	const char *name, *sig, *tier, *module;
	uint32_t seq;
	bool stub;
};

struct cache_slot {
	uint64_t addr, gen;
	int rc;
	struct sym_frame f;
};

struct sym_proc {
	pid_t pid;
	struct sym_opts opts;
	char root[64]; /* "/proc/PID/root" */
	struct sym_arena arena;

	struct strbuf maps_text;
	struct map *maps;
	size_t nmaps;
	struct image *images;
	size_t nimages;
	struct image *vdso;  /* clrtap's own vDSO copied to a memfd (same kernel, same image) */
	int vdso_fd;
	bool vdso_tried;

	char pm_path[PROC_PATH_MAX];
	bool pm_have_path;
	bool pm_in_target;  /* pm_path is as the target sees it: open inside its root */
	bool pm_full;       /* the index reached SYM_PERFMAP_MAX_MEM: no more is read */
	bool pm_warned;     /* the file was refused once (a link, a FIFO): said so */
	uint64_t pm_mem;    /* bytes of names charged to the perf map (all files) */
	bool pm_skip_line; /* inside a line longer than SYM_LINE_MAX */
	uint64_t pm_off, pm_ino, pm_dev, pm_bytes;
	char jd_path[PROC_PATH_MAX]; /* jit-PID.dump as the target sees it, or "" */
	struct jitdump_reader jd;
	bool jd_warned;
	struct pm_ent *pm;
	size_t npm, pm_cap;
	uint32_t *pm_idx;     /* sorted by (start, seq) */
	uint64_t *pm_maxend;  /* max end over pm_idx[0..i] */
	size_t nidx;
	const char *intern[128];
	size_t nintern;

	struct sym_table ksyms;
	int kstate; /* 0 untried, 1 loaded, <0 error */

	struct cache_slot *cache;
	uint32_t cache_mask;
	uint64_t gen;
	uint64_t last_auto_ns;
	uint64_t lookups, hits;
	unsigned srv_epoch; /* sym_srv_epoch() when the images were last checked */
};

#define SYM_AUTO_REFRESH_NS 250000000ULL
#define SYM_PM_SCAN_BACK 256
#define SYM_PM_CHUNK ((size_t)1 << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *intern(struct sym_proc *sp, const char *s, size_t len)
{
	size_t i;
	const char *r;

	if (!s)
		return NULL;
	for (i = 0; i < sp->nintern; i++)
		if (!strncmp(sp->intern[i], s, len) && sp->intern[i][len] == '\0')
			return sp->intern[i];
	r = sym_arena_strndup(&sp->arena, s, len);
	if (r && sp->nintern < ARRAY_SIZE(sp->intern))
		sp->intern[sp->nintern++] = r;
	return r;
}

/* ---- images ---- */

static struct image *image_get(struct sym_proc *sp, const struct sym_maps_line *ml)
{
	struct image *im;
	char tpath[PATH_MAX], hpath[PATH_MAX + 128];
	const char *slash;

	if (ml->path_len >= sizeof(tpath))
		return NULL;
	memcpy(tpath, ml->path, ml->path_len);
	tpath[ml->path_len] = '\0';
	for (im = sp->images; im; im = im->next)
		if (im->inode == ml->inode && im->dev_major == ml->dev_major &&
		    im->dev_minor == ml->dev_minor && !strcmp(im->tpath, tpath))
			return im;
	if (sp->nimages >= 65536)
		return NULL;
	/*
	 * The mapped inode itself, not a path the container could point at a
	 * host file since; the target's path only where clrtap may not follow
	 * map_files (not root: then it has no more rights than the target).
	 */
	if (proc_map_file_path(sp->pid, ml->start, ml->end, hpath, sizeof(hpath)) &&
	    !ml->deleted)
		snprintf(hpath, sizeof(hpath), "%s%s", sp->root, tpath);
	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->tpath = strdup(tpath);
	im->hpath = strdup(hpath);
	slash = strrchr(tpath, '/');
	im->base = sym_arena_strndup(&sp->arena, slash ? slash + 1 : tpath,
				     strlen(slash ? slash + 1 : tpath));
	if (!im->tpath || !im->hpath || !im->base) {
		free(im->tpath);
		free(im->hpath);
		free(im);
		return NULL;
	}
	im->inode = ml->inode;
	im->dev_major = ml->dev_major;
	im->dev_minor = ml->dev_minor;
	im->next = sp->images;
	sp->images = im;
	sp->nimages++;
	return im;
}

/* pe_open_opts.open_fn: an assembly as the target sees it, inside its root. */
static int target_open(void *ctx, const char *path, int *fd)
{
	const struct sym_proc *sp = ctx;

	return proc_target_file_open(sp->pid, path, 0, fd, NULL);
}


/*
 * A cached table of a stripped ELF file (its unwind table's sub_<addr>
 * names) gives way to a debug file installed since it was cached: the table
 * names from a debug file are never cached, so this is checked on each load.
 */
static bool debug_file_since(const struct sym_proc *sp, const struct image *im,
			     const struct sym_img *ci)
{
	if (ci->kind != SYM_IMG_ELF || (ci->flags & (SYM_IMG_HAS_SYMTAB | SYM_IMG_FROM_DEBUG)))
		return false;
	/* lint-ok: target path: map_files (the mapped inode), or not root (see image_get) */
	return sym_elf_debug_file_found(im->hpath, sp->root, im->tpath);
}

/*
 * The image's table through the symbol cache (sym_cache.h): its bytes are
 * read once into a copy, hashed, and the table comes from this process's
 * set, the cache directory, or is built from that same copy and stored.
 * False when the image must be loaded the ordinary way: unreadable, not an
 * R2R or ELF image, or an R2R image whose names need other files.
 */
static bool image_load_cached(struct sym_proc *sp, struct image *im)
{
	struct sym_img *ci = NULL;
	uint8_t *buf, key[32], skey[32];
	uint32_t kind;
	size_t len;
	bool have_skey = false;
	int rc;

	if (!sym_sha256_ok()) /* no libcrypto: no keys, so no cache */
		return false;
	/* the file as last read whole, by its identity: no read, no hash */
	if (sp->opts.cache_dir == NULL || *sp->opts.cache_dir) {
		struct stat st;

		/* lint-ok: target path: map_files (the mapped inode), or not root (see image_get) */
		have_skey = stat(im->hpath, &st) == 0 && S_ISREG(st.st_mode);
		if (have_skey)
			sym_stat_key(&st, skey);
		if (have_skey && !sym_memo_get(sp->opts.cache_dir, skey, &kind, key)) {
			ci = sym_img_get(sp->opts.cache_dir, kind, key);
			if (ci && debug_file_since(sp, im, ci)) {
				sym_img_release(ci);
				ci = NULL;
			}
			if (ci) {
				im->cimg = ci;
				im->kind = kind == SYM_IMG_ELF ? IMG_ELF : IMG_PE;
				im->pe_r2r = kind == SYM_IMG_R2R;
				ct_debug("sym: %s: %zu entries (symbol cache) by file identity",
					 im->tpath, ci->n);
				return true;
			}
		}
	}
	if (sym_read_copy(im->hpath, &buf, &len))
		return false;
	if (len >= 4 && !memcmp(buf, "\177ELF", 4))
		kind = SYM_IMG_ELF;
	else if (len >= 2 && buf[0] == 'M' && buf[1] == 'Z')
		kind = SYM_IMG_R2R;
	else
		goto miss;
	sym_sha256(buf, len, key);
	ci = sym_img_get(sp->opts.cache_dir, kind, key);
	if (ci && debug_file_since(sp, im, ci)) {
		sym_img_release(ci);
		ci = NULL;
	}
	if (!ci && kind == SYM_IMG_R2R) {
		struct pe_file *pf;

		if (pe_file_open_mem(buf, len, NULL, &pf))
			goto miss;
		rc = sym_img_from_pe(&ci, pf);
		pe_file_close(pf);
		if (rc) {
			ct_debug("sym: %s: not cached (%s)", im->tpath, strerror(-rc));
			goto miss;
		}
		memcpy(ci->key, key, 32);
		ci = sym_img_put_new(sp->opts.cache_dir, ci);
	} else if (!ci) {
		struct sym_arena ar = { .max = SYM_ARENA_MAX_BYTES };
		struct sym_elf e;
		char path[64];
		int mfd = memfd_create("clrtap-elf", MFD_CLOEXEC);

		if (mfd < 0 || ct_write_all(mfd, buf, len)) {
			if (mfd >= 0)
				close(mfd);
			goto miss;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
		/* lint-ok: target path: a private copy of the image; debug files go through lib/proc */
		rc = sym_elf_load(&e, path, sp->root, im->tpath, &ar);
		close(mfd);
		if (!rc) {
			rc = sym_img_from_elf(&ci, &e);
			sym_elf_free(&e);
		}
		sym_arena_free(&ar);
		if (rc)
			goto miss;
		memcpy(ci->key, key, 32);
		/* Names from a separate debug file depend on more than these bytes: kept private. */
		if (!(ci->flags & SYM_IMG_FROM_DEBUG))
			ci = sym_img_put_new(sp->opts.cache_dir, ci);
	}
	free(buf);
	/* only for a table the cache holds: names from a debug file are kept private */
	if (have_skey && !(ci->flags & SYM_IMG_FROM_DEBUG))
		sym_memo_put(sp->opts.cache_dir, skey, kind, key);
	im->cimg = ci;
	im->kind = kind == SYM_IMG_ELF ? IMG_ELF : IMG_PE;
	im->pe_r2r = kind == SYM_IMG_R2R;
	ct_debug("sym: %s: %zu entries (%s)", im->tpath, ci->n,
		 ci->from_disk ? "symbol cache" : "loaded");
	return true;
miss:
	free(buf);
	return false;
}

static void image_load_now(struct sym_proc *sp, struct image *im);

static void image_load(struct sym_proc *sp, struct image *im)
{
	unsigned held = sym_srv_held_misses();

	image_load_now(sp, im);
	im->srv_retry = sym_srv_held_misses() != held;
}

/* Images loaded while downloads were held are loaded again once they are not. */
static void images_srv_retry(struct sym_proc *sp)
{
	struct image *im;
	bool any = false;

	for (im = sp->images; im; im = im->next) {
		if (!im->srv_retry)
			continue;
		sym_elf_free(&im->elf);
		pe_file_close(im->pe);
		im->pe = NULL;
		sym_img_release(im->cimg);
		im->cimg = NULL;
		im->kind = IMG_UNTRIED;
		im->srv_retry = false;
		any = true;
	}
	if (any)
		sp->gen++; /* names cached per address may change */
}

static void image_load_now(struct sym_proc *sp, struct image *im)
{
	unsigned char magic[4] = { 0 };
	ssize_t n;
	int fd, err;

	im->kind = IMG_NONE;
	if (image_load_cached(sp, im))
		return;
	/* lint-ok: target path: map_files (the mapped inode), or not root (see image_get) */
	fd = open(im->hpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ct_debug("sym: cannot open %s: %s", im->hpath, strerror(errno));
		return;
	}
	n = pread(fd, magic, sizeof(magic), 0);
	close(fd);
	if (n == 4 && !memcmp(magic, "\177ELF", 4)) {
		/* lint-ok: target path: as above; debug files go through lib/proc */
		err = sym_elf_load(&im->elf, im->hpath, sp->root, im->tpath, &sp->arena);
		if (!err) {
			im->kind = IMG_ELF;
			ct_debug("sym: %s: %zu symbols%s", im->tpath, im->elf.syms.n,
				 im->elf.from_debug_file ? " (debug file)" : "");
		} else {
			ct_debug("sym: %s: ELF: %s", im->tpath, strerror(-err));
		}
	} else if (n >= 2 && magic[0] == 'M' && magic[1] == 'Z') {
		const struct pe_method *ms;
		size_t nm;

		struct pe_open_opts po = { .open_fn = target_open, .open_ctx = sp };

		/* By the target's path, so that the assemblies next to it resolve too. */
		err = im->tpath[0] == '/' && !strstr(im->tpath, " (deleted)")
			      ? pe_file_open(im->tpath, &po, &im->pe)
			      : pe_file_open(im->hpath, NULL, &im->pe); /* lint-ok: target path */
		if (!err) {
			im->kind = IMG_PE;
			err = pe_file_methods(im->pe, &ms, &nm);
			im->pe_r2r = !err;
			ct_debug("sym: %s: PE, %zu R2R methods (%d)", im->tpath, err ? 0 : nm, err);
		} else {
			ct_debug("sym: %s: PE: %s", im->tpath, strerror(-err));
		}
	}
}

/*
 * The [vdso] mapping has no file to open. Every process on one kernel maps
 * the same vDSO image, so clrtap's own (AT_SYSINFO_EHDR) is copied into a
 * memfd and read like any ELF file: __vdso_clock_gettime and friends get
 * their names. Its size is where its section headers end.
 */
static struct image *vdso_image(struct sym_proc *sp)
{
	const unsigned char *base;
	const Elf64_Ehdr *eh;
	struct image *im;
	char hpath[64];
	size_t size;
	int fd;

	if (sp->vdso_tried)
		return sp->vdso;
	sp->vdso_tried = true;
	base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base || memcmp(base, ELFMAG, SELFMAG) || base[EI_CLASS] != ELFCLASS64)
		return NULL;
	eh = (const Elf64_Ehdr *)base;
	size = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size < sizeof(*eh) || size > ((size_t)1 << 20))
		return NULL;
	fd = memfd_create("clrtap-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ct_write_all(fd, base, size)) {
		close(fd);
		return NULL;
	}
	im = calloc(1, sizeof(*im));
	snprintf(hpath, sizeof(hpath), "/proc/self/fd/%d", fd);
	if (!im || !(im->tpath = strdup("[vdso]")) || !(im->hpath = strdup(hpath)) ||
	    !(im->base = intern(sp, "[vdso]", 6))) {
		if (im) {
			free(im->tpath);
			free(im->hpath);
		}
		free(im);
		close(fd);
		return NULL;
	}
	im->next = sp->images;
	sp->images = im;
	sp->nimages++;
	sp->vdso = im;
	sp->vdso_fd = fd;
	return im;
}

/* ---- /proc/PID/maps ---- */

static int maps_parse(struct sym_proc *sp)
{
	const char *t = sp->maps_text.buf;
	size_t len = sp->maps_text.len, pos = 0, n = 0, cap = 0;
	struct map *v = NULL;

	while (pos < len) {
		const char *nl = memchr(t + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (t + pos)) : len - pos;
		struct sym_maps_line ml;
		struct map m = { 0 };

		if (sym_parse_maps_line(t + pos, ll, &ml)) {
			pos += ll + 1;
			continue;
		}
		pos += ll + 1;
		m.start = ml.start;
		m.end = ml.end;
		m.pgoff = ml.pgoff;
		memcpy(m.perms, ml.perms, sizeof(m.perms));
		if (!ml.path_len || (ml.path_len > 6 && !memcmp(ml.path, "[anon:", 6))) {
			m.type = MT_ANON;
		} else if (ml.path_len >= 19 && !memcmp(ml.path, "/memfd:doublemapper", 19)) {
			m.type = MT_JIT;
		} else if (ml.path_len == 6 && !memcmp(ml.path, "[vdso]", 6) && !ml.pgoff &&
			   (m.img = vdso_image(sp))) {
			m.type = MT_FILE;
		} else if (ml.path[0] == '[') {
			m.type = MT_SPECIAL;
			m.special = intern(sp, ml.path, ml.path_len);
		} else if (ml.path[0] == '/') {
			m.type = MT_FILE;
			m.img = image_get(sp, &ml);
			if (!m.img)
				m.type = MT_SPECIAL;
		} else {
			m.type = MT_SPECIAL;
			m.special = intern(sp, ml.path, ml.path_len);
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct map *nv;

			if (n >= SYM_MAPS_MAX_ENTRIES) {
				free(v);
				return -E2BIG;
			}
			nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = m;
	}
	free(sp->maps);
	sp->maps = v;
	sp->nmaps = n;
	return 0;
}

static int maps_refresh(struct sym_proc *sp, bool *changed)
{
	struct strbuf sb = STRBUF_INIT_MAX(SYM_MAPS_MAX_BYTES);
	int err;

	*changed = false;
	err = proc_read(sp->pid, "maps", &sb);
	if (err) {
		strbuf_release(&sb);
		return err == -ENOENT ? -ESRCH : err;
	}
	if (sb.len == sp->maps_text.len && !memcmp(sb.buf, sp->maps_text.buf, sb.len)) {
		strbuf_release(&sb);
		return 0;
	}
	strbuf_release(&sp->maps_text);
	sp->maps_text = sb;
	*changed = true;
	return maps_parse(sp);
}

static struct map *map_find(struct sym_proc *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= sp->maps[lo - 1].end)
		return NULL;
	return &sp->maps[lo - 1];
}

/* ---- the perf map ---- */

/* What an index of cap entries costs: entries, sort index, running max, names. */
static uint64_t pm_mem_at(const struct sym_proc *sp, size_t cap, size_t names)
{
	return (uint64_t)cap * (sizeof(struct pm_ent) + sizeof(uint32_t) + sizeof(uint64_t)) +
	       sp->pm_mem + names;
}

static int pm_add(struct sym_proc *sp, const struct sym_pm_line *pl)
{
	size_t names = pl->name_len + 1 + (pl->sig ? pl->sig_len + 1 : 0);
	struct pm_ent *e;

	if (pm_mem_at(sp, sp->pm_cap, names) > SYM_PERFMAP_MAX_MEM)
		return -ENOSPC;
	if (sp->npm == sp->pm_cap) {
		size_t nc = sp->pm_cap ? sp->pm_cap * 2 : 1024;
		struct pm_ent *nv;

		if (sp->npm >= SYM_PERFMAP_MAX_ENTRIES)
			return -E2BIG;
		/* Grow by less when doubling would pass the memory bound. */
		while (nc > sp->pm_cap + 1 && pm_mem_at(sp, nc, names) > SYM_PERFMAP_MAX_MEM)
			nc = sp->pm_cap + (nc - sp->pm_cap) / 2;
		if (pm_mem_at(sp, nc, names) > SYM_PERFMAP_MAX_MEM)
			return -ENOSPC;
		nv = realloc(sp->pm, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		sp->pm = nv;
		sp->pm_cap = nc;
	}
	e = &sp->pm[sp->npm];
	memset(e, 0, sizeof(*e));
	e->start = pl->start;
	e->end = pl->start + (pl->size ? pl->size : 1);
	e->stub = pl->stub;
	e->name = sym_arena_strndup(&sp->arena, pl->name, pl->name_len);
	if (!e->name)
		return -ENOMEM;
	if (pl->sig) {
		e->sig = sym_arena_strndup(&sp->arena, pl->sig, pl->sig_len);
		if (!e->sig)
			return -ENOMEM;
	}
	e->tier = intern(sp, pl->tier, pl->tier_len);
	e->module = intern(sp, pl->module, pl->module_len);
	sp->pm_mem += names;
	e->seq = (uint32_t)sp->npm;
	sp->npm++;
	return 0;
}

static int pm_parse_lines(struct sym_proc *sp, const char *buf, size_t len)
{
	size_t pos = 0;
	int err;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		struct sym_pm_line pl;

		if (ll <= SYM_LINE_MAX && !sym_parse_perfmap_line(buf + pos, ll, &pl)) {
			err = pm_add(sp, &pl);
			if (err)
				return err;
		}
		pos += ll + 1;
	}
	return 0;
}

static const struct pm_ent *pm_ent_of(const struct sym_proc *sp, size_t i)
{
	return &sp->pm[sp->pm_idx[i]];
}

static int pm_idx_cmp(const void *a, const void *b, void *ctx)
{
	const struct pm_ent *pm = ctx;
	const struct pm_ent *x = &pm[*(const uint32_t *)a];
	const struct pm_ent *y = &pm[*(const uint32_t *)b];

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int pm_reindex(struct sym_proc *sp)
{
	uint32_t *idx;
	uint64_t *maxend, m = 0;
	size_t i;

	idx = realloc(sp->pm_idx, (sp->npm ? sp->npm : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	sp->pm_idx = idx;
	maxend = realloc(sp->pm_maxend, (sp->npm ? sp->npm : 1) * sizeof(*maxend));
	if (!maxend)
		return -ENOMEM;
	sp->pm_maxend = maxend;
	for (i = 0; i < sp->npm; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, sp->npm, sizeof(*idx), pm_idx_cmp, sp->pm);
	for (i = 0; i < sp->npm; i++) {
		m = CT_MAX(m, sp->pm[idx[i]].end);
		maxend[i] = m;
	}
	sp->nidx = sp->npm;
	return 0;
}

/* The newest entry containing addr, or NULL. */
static const struct pm_ent *pm_find(const struct sym_proc *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->nidx, j, steps = 0;
	const struct pm_ent *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm_ent_of(sp, mid)->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = lo; j > 0 && steps < SYM_PM_SCAN_BACK; j--, steps++) {
		const struct pm_ent *e = pm_ent_of(sp, j - 1);

		if (sp->pm_maxend[j - 1] <= addr)
			break;
		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best;
}

/* Reads what was appended to the perf map since last time. */
static int pm_refresh_map(struct sym_proc *sp, bool *changed)
{
	struct stat st;
	char *buf = NULL;
	size_t old = sp->npm;
	int fd, err = 0;

	*changed = false;
	if (sp->opts.no_perfmap || !sp->pm_have_path || sp->pm_full)
		return 0;
	if (sp->pm_in_target) {
		err = proc_target_file_open(sp->pid, sp->pm_path, 0, &fd, &st);
		if (err == -ENOENT)
			return 0;
		if (err) {
			if (!sp->pm_warned)
				ct_warn("sym: the target's perf map %s %s: not read", sp->pm_path,
					proc_tfile_strerror(err));
			sp->pm_warned = true;
			return err;
		}
	} else {
		fd = open(sp->pm_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		if (fstat(fd, &st)) {
			err = -errno;
			goto out;
		}
		if (!S_ISREG(st.st_mode)) {
			err = -EINVAL;
			goto out;
		}
	}
	if ((uint64_t)st.st_ino != sp->pm_ino || (uint64_t)st.st_dev != sp->pm_dev ||
	    (uint64_t)st.st_size < sp->pm_off) {
		/* a new file: start over (strings stay in the arena) */
		if (sp->npm)
			*changed = true;
		sp->npm = old = 0;
		sp->nidx = 0;
		sp->pm_off = 0;
		sp->pm_bytes = 0;
		sp->pm_skip_line = false;
		sp->pm_ino = (uint64_t)st.st_ino;
		sp->pm_dev = (uint64_t)st.st_dev;
	}
	if ((uint64_t)st.st_size == sp->pm_off)
		goto out;
	buf = malloc(SYM_PM_CHUNK);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	while (sp->pm_off < (uint64_t)st.st_size) {
		size_t want = (size_t)CT_MIN((uint64_t)SYM_PM_CHUNK, (uint64_t)st.st_size - sp->pm_off);
		ssize_t n;
		const char *lastnl, *start = buf;
		size_t used;

		if (sp->pm_bytes >= SYM_PERFMAP_MAX_BYTES) {
			ct_warn("sym: perf map over %" PRIu64 " bytes, not reading more",
				(uint64_t)SYM_PERFMAP_MAX_BYTES);
			break;
		}
		n = pread(fd, buf, want, (off_t)sp->pm_off);
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		lastnl = memrchr(buf, '\n', (size_t)n);
		if (!lastnl) {
			if ((size_t)n == SYM_PM_CHUNK) {
				/* a line longer than a chunk: drop it */
				sp->pm_off += (uint64_t)n;
				sp->pm_bytes += (uint64_t)n;
				sp->pm_skip_line = true;
				continue;
			}
			break; /* a line being written: next time */
		}
		used = (size_t)(lastnl - buf) + 1;
		if (sp->pm_skip_line) {
			const char *nl = memchr(buf, '\n', used);

			start = nl + 1;
			sp->pm_skip_line = false;
		}
		err = pm_parse_lines(sp, start, used - (size_t)(start - buf));
		sp->pm_off += used;
		sp->pm_bytes += used;
		if (err)
			break;
	}
	if (sp->npm != old || (*changed && !sp->npm)) {
		int e2 = pm_reindex(sp);

		*changed = true;
		if (!err)
			err = e2;
	}
out:
	free(buf);
	close(fd);
	if (err == -E2BIG || err == -ENOSPC) {
		sp->pm_full = true;
		ct_warn("sym: perf map %s: the symbol index is full (%zu entries, %s); the "
			"rest of the file, %" PRIu64 " bytes from offset %" PRIu64 ", is not read: "
			"JIT code named there shows as unknown",
			sp->pm_path, sp->npm,
			err == -E2BIG ? "the entry cap" : "64 MiB of memory",
			(uint64_t)st.st_size > sp->pm_off ? (uint64_t)st.st_size - sp->pm_off : 0,
			sp->pm_off);
		err = 0;
	}
	return err;
}

static int jd_line(void *ctx, const char *line, size_t len)
{
	struct sym_pm_line pl;

	if (len > SYM_LINE_MAX || sym_parse_perfmap_line(line, len, &pl))
		return 0;
	return pm_add(ctx, &pl);
}

/*
 * The perf map, then the jitdump file when one is given: .NET 11 buffers its
 * perf map but writes jitdump as code is published. Both name the same code
 * alike; the index takes either.
 */
static int pm_refresh(struct sym_proc *sp, bool *changed)
{
	size_t before = sp->npm;
	int err = pm_refresh_map(sp, changed), e2;

	if (!sp->jd_path[0] || sp->opts.no_perfmap || sp->pm_full)
		return err;
	if (sp->npm < before)
		jitdump_reader_init(&sp->jd); /* the index started over: jitdump too */
	before = sp->npm;
	e2 = jitdump_refresh(&sp->jd, sp->pid, sp->jd_path, NULL, jd_line, sp);
	if (sp->npm != before) {
		int e3 = pm_reindex(sp);

		*changed = true;
		if (!e2)
			e2 = e3;
	}
	if (e2 == -E2BIG || e2 == -ENOSPC) {
		sp->pm_full = true;
		ct_warn("sym: jitdump %s: the symbol index is full (%zu entries): JIT code "
			"compiled from now on shows as unknown",
			sp->jd_path, sp->npm);
	} else if (e2 && !sp->jd_warned) {
		ct_warn("sym: the target's jitdump file %s %s: not read further", sp->jd_path,
			e2 == -EINVAL ? "is malformed" : proc_tfile_strerror(e2));
		sp->jd_warned = true;
	}
	return err;
}

/* ---- public API ---- */

bool sym_is_kernel(uint64_t addr)
{
	return addr >= 0xffff800000000000ULL;
}

int sym_proc_open(struct sym_proc **out, pid_t pid, const struct sym_opts *o)
{
	struct sym_proc *sp;
	struct proc_target t;
	uint32_t slots;
	bool changed;
	int err;

	*out = NULL;
	if (pid <= 0)
		return -EINVAL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->pid = pid;
	sp->vdso_fd = -1;
	if (o)
		sp->opts = *o;
	sp->opts.perfmap_path = NULL; /* not kept: copied below */
	sp->opts.perfmap_tpath = NULL;
	sp->opts.jitdump_tpath = NULL;
	if (o && o->cache_dir)
		sp->opts.cache_dir = sym_arena_strndup(&sp->arena, o->cache_dir, strlen(o->cache_dir));
	snprintf(sp->root, sizeof(sp->root), "/proc/%d/root", (int)pid);
	strbuf_init(&sp->maps_text, SYM_MAPS_MAX_BYTES);
	sp->gen = 1;
	sp->srv_epoch = sym_srv_epoch();

	slots = o && o->cache_slots ? o->cache_slots : 16384;
	if (slots > (1u << 24))
		slots = 1u << 24;
	while (slots & (slots - 1))
		slots &= slots - 1;
	sp->cache = calloc(slots, sizeof(*sp->cache));
	if (!sp->cache) {
		err = -ENOMEM;
		goto fail;
	}
	sp->cache_mask = slots - 1;

	err = maps_refresh(sp, &changed);
	if (err)
		goto fail;

	jitdump_reader_init(&sp->jd);
	if (o && o->jitdump_tpath)
		ct_strlcpy(sp->jd_path, o->jitdump_tpath, sizeof(sp->jd_path));
	if (o && o->perfmap_tpath) {
		ct_strlcpy(sp->pm_path, o->perfmap_tpath, sizeof(sp->pm_path));
		sp->pm_have_path = true;
		sp->pm_in_target = true;
	} else if (o && o->perfmap_path) {
		ct_strlcpy(sp->pm_path, o->perfmap_path, sizeof(sp->pm_path));
		sp->pm_have_path = true;
	} else if (!sp->opts.no_perfmap) {
		struct proc_perfmap pm;

		err = proc_target_find(pid, &t);
		if (err == -ESRCH || err == -EACCES)
			goto fail;
		/* -ENOENT (no diagnostics socket) still names the files */
		if (!proc_perfmap_state(&t, &pm)) {
			ct_strlcpy(sp->pm_path, pm.map_tpath, sizeof(sp->pm_path));
			sp->pm_have_path = true;
			sp->pm_in_target = true;
		}
	}
	err = pm_refresh(sp, &changed);
	if (err)
		ct_debug("sym: perf map %s: %s", sp->pm_path, strerror(-err));
	*out = sp;
	return 0;
fail:
	sym_proc_close(sp);
	return err;
}

void sym_proc_close(struct sym_proc *sp)
{
	struct image *im, *next;

	if (!sp)
		return;
	for (im = sp->images; im; im = next) {
		next = im->next;
		sym_elf_free(&im->elf);
		pe_file_close(im->pe);
		sym_img_release(im->cimg);
		free(im->tpath);
		free(im->hpath);
		free(im);
	}
	if (sp->vdso_fd >= 0)
		close(sp->vdso_fd);
	free(sp->maps);
	strbuf_release(&sp->maps_text);
	free(sp->pm);
	free(sp->pm_idx);
	free(sp->pm_maxend);
	sym_table_free(&sp->ksyms);
	free(sp->cache);
	sym_arena_free(&sp->arena);
	free(sp);
}

int sym_proc_refresh(struct sym_proc *sp)
{
	bool c1 = false, c2 = false;
	int err, err2;

	err = maps_refresh(sp, &c1);
	err2 = pm_refresh(sp, &c2);
	if (c1 || c2)
		sp->gen++;
	sp->last_auto_ns = now_ns();
	return err ? err : err2;
}

/* A refresh on a miss, at most every SYM_AUTO_REFRESH_NS. True if anything changed. */
static bool auto_refresh(struct sym_proc *sp, bool maps)
{
	uint64_t t = now_ns();
	bool c1 = false, c2 = false;

	if (t - sp->last_auto_ns < SYM_AUTO_REFRESH_NS)
		return false;
	sp->last_auto_ns = t;
	if (maps)
		maps_refresh(sp, &c1);
	pm_refresh(sp, &c2);
	if (c1 || c2)
		sp->gen++;
	return c1 || c2;
}

static void fill_pm(struct sym_frame *out, const struct pm_ent *e, uint64_t addr)
{
	out->kind = e->stub ? SYM_STUB : SYM_JIT;
	out->name = e->name;
	out->module = e->module;
	out->start = e->start;
	out->offset = addr - e->start;
	out->sig = e->sig;
	out->tier = e->tier;
}

static int lookup_kernel(struct sym_proc *sp, uint64_t addr, struct sym_frame *out)
{
	const struct sym_entry *e;

	out->kind = SYM_KERNEL;
	if (!sp->opts.kernel)
		return -ENOENT;
	if (!sp->kstate) {
		struct strbuf sb = STRBUF_INIT_MAX(SYM_KALLSYMS_MAX_BYTES);

		sp->kstate = strbuf_read_file(&sb, "/proc/kallsyms");
		if (!sp->kstate)
			sp->kstate = sym_kallsyms_load(&sp->ksyms, sb.buf, sb.len, &sp->arena);
		if (!sp->kstate)
			sp->kstate = 1;
		else
			ct_warn("sym: /proc/kallsyms: %s", strerror(-sp->kstate));
		strbuf_release(&sb);
	}
	if (sp->kstate < 0)
		return -ENOENT;
	e = sym_table_find(&sp->ksyms, addr);
	if (!e)
		return -ENOENT;
	out->name = e->name;
	out->module = e->module ? e->module : "[kernel.kallsyms]";
	out->start = e->addr;
	out->offset = addr - e->addr;
	return 0;
}

/* lookup_image over a table from the symbol cache: the same answers. */
static int lookup_cimg(const struct image *im, uint64_t addr, uint64_t off, struct sym_frame *out)
{
	const struct sym_img *ci = im->cimg;
	const struct sym_img_ent *e;
	uint64_t va;

	if (ci->kind == SYM_IMG_ELF) {
		out->kind = SYM_NATIVE;
		if (!sym_img_off_to_vaddr(ci, off, &va))
			return -ENOENT;
		out->elf_path = im->hpath;
		out->elf_vaddr = va;
		e = sym_img_find(ci, va);
		if (!e)
			return -ENOENT;
		out->name = sym_img_str(ci, e->name);
		out->start = addr - (va - e->start);
		out->offset = va - e->start;
		return 0;
	}
	out->kind = SYM_R2R;
	e = sym_img_find(ci, off);
	if (!e)
		return -ENOENT;
	out->name = sym_img_str(ci, e->name);
	out->sig = sym_img_str(ci, e->sig);
	out->tier = "PreJIT";
	out->start = addr - (off - e->start);
	out->offset = off - e->start;
	return 0;
}

static int lookup_image(struct sym_proc *sp, const struct map *m, uint64_t addr,
			struct sym_frame *out)
{
	struct image *im = m->img;
	uint64_t off = addr - m->start + m->pgoff;

	if (im->kind == IMG_UNTRIED)
		image_load(sp, im);
	out->module = im->base;
	if (im->cimg)
		return lookup_cimg(im, addr, off, out);
	if (im->kind == IMG_ELF) {
		const struct sym_entry *e;
		uint64_t va;

		out->kind = SYM_NATIVE;
		if (!sym_elf_off_to_vaddr(&im->elf, off, &va))
			return -ENOENT;
		out->elf_path = im->hpath;
		out->elf_vaddr = va;
		e = sym_table_find(&im->elf.syms, va);
		if (!e)
			return -ENOENT;
		out->name = e->name;
		out->start = addr - (va - e->addr);
		out->offset = va - e->addr;
		return 0;
	}
	if (im->kind == IMG_PE && im->pe_r2r) {
		const struct pe_method *pm;
		const struct pe_range *pr;

		out->kind = SYM_R2R;
		if (pe_file_lookup_offset(im->pe, off, &pm, &pr))
			return -ENOENT;
		out->name = pm->name;
		out->sig = pm->sig;
		out->tier = "PreJIT";
		out->start = addr - (off - pr->file_offset);
		out->offset = off - pr->file_offset;
		return 0;
	}
	return -ENOENT;
}

static int lookup_uncached(struct sym_proc *sp, uint64_t addr, struct sym_frame *out)
{
	const struct pm_ent *e;
	struct map *m;

	if (sym_is_kernel(addr))
		return lookup_kernel(sp, addr, out);
	m = map_find(sp, addr);
	if (!m) {
		e = pm_find(sp, addr);
		if (!e && auto_refresh(sp, true)) {
			m = map_find(sp, addr);
			if (!m)
				e = pm_find(sp, addr);
		}
		if (e) {
			fill_pm(out, e, addr);
			return 0;
		}
		if (!m)
			return -ENOENT;
	}
	switch (m->type) {
	case MT_ANON:
	case MT_JIT:
		e = pm_find(sp, addr);
		if (!e && auto_refresh(sp, false))
			e = pm_find(sp, addr);
		if (e) {
			fill_pm(out, e, addr);
			return 0;
		}
		out->kind = (m->type == MT_JIT || m->perms[2] == 'x') ? SYM_JIT : SYM_UNKNOWN;
		return -ENOENT;
	case MT_FILE:
		return lookup_image(sp, m, addr, out);
	default:
		out->module = m->special;
		return -ENOENT;
	}
}

int sym_lookup(struct sym_proc *sp, uint64_t addr, struct sym_frame *out)
{
	struct cache_slot *s;
	int rc;

	sp->lookups++;
	if (sp->srv_epoch != sym_srv_epoch()) {
		sp->srv_epoch = sym_srv_epoch();
		images_srv_retry(sp);
	}
	s = &sp->cache[ct_hash_u64(addr) & sp->cache_mask];
	if (s->gen == sp->gen && s->addr == addr) {
		sp->hits++;
		*out = s->f;
		return s->rc;
	}
	memset(out, 0, sizeof(*out));
	/* an auto refresh inside bumps gen: the result belongs to the new one */
	rc = lookup_uncached(sp, addr, out);
	s->addr = addr;
	s->gen = sp->gen;
	s->rc = rc;
	s->f = *out;
	return rc;
}

/*
 * The mapping of an image named basename (file name or full target path),
 * executable ones first; with want_off, one that maps file offset off.
 */
static const struct map *find_file_map(const struct sym_proc *sp, const char *basename,
				       bool want_off, uint64_t off)
{
	const struct map *best = NULL;
	size_t i;

	for (i = 0; i < sp->nmaps; i++) {
		const struct map *m = &sp->maps[i];

		if (m->type != MT_FILE || !m->img)
			continue;
		if (strcmp(m->img->base, basename) && strcmp(m->img->tpath, basename))
			continue;
		if (want_off && (off < m->pgoff || off - m->pgoff >= m->end - m->start))
			continue;
		if (!best || (m->perms[2] == 'x' && best->perms[2] != 'x'))
			best = m;
	}
	return best;
}

int sym_proc_find_image(struct sym_proc *sp, const char *basename, uint64_t *map_start,
			uint64_t *pgoff, const char **path)
{
	const struct map *m = find_file_map(sp, basename, false, 0);

	if (!m)
		return -ENOENT;
	if (map_start)
		*map_start = m->start;
	if (pgoff)
		*pgoff = m->pgoff;
	if (path)
		*path = m->img->hpath;
	return 0;
}

int sym_proc_offset_to_addr(struct sym_proc *sp, const char *basename, uint64_t off,
			    uint64_t *addr)
{
	const struct map *m = find_file_map(sp, basename, true, off);

	if (!m)
		return -ENOENT;
	*addr = m->start + (off - m->pgoff);
	return 0;
}

int sym_proc_find_jit(struct sym_proc *sp, const char *pattern, struct sym_jit_entry *out,
		      size_t max, size_t *n)
{
	bool with_sig = strchr(pattern, '(') != NULL;
	struct strbuf sb = STRBUF_INIT_MAX(2 * SYM_LINE_MAX + 2);
	size_t i, cnt = 0;

	for (i = 0; i < sp->npm; i++) {
		const struct pm_ent *e = &sp->pm[i];
		bool match;

		if (with_sig) {
			strbuf_reset(&sb);
			if (strbuf_addstr(&sb, e->name) || strbuf_addstr(&sb, e->sig ? e->sig : ""))
				continue;
			match = pe_glob_match(pattern, sb.buf);
		} else {
			match = pe_glob_match(pattern, e->name);
		}
		if (!match)
			continue;
		if (cnt < max) {
			out[cnt].start = e->start;
			out[cnt].size = e->end - e->start;
			out[cnt].kind = e->stub ? SYM_STUB : SYM_JIT;
			out[cnt].name = e->name;
			out[cnt].sig = e->sig;
			out[cnt].tier = e->tier;
			out[cnt].module = e->module;
		}
		cnt++;
	}
	strbuf_release(&sb);
	*n = cnt;
	return 0;
}

static int native_list(struct sym_proc *sp, struct strbuf *out, bool stripped, const char *head)
{
	struct image *im;
	int n = 0, rc = 0;

	for (im = sp->images; im; im = im->next) {
		int src = 0;
		bool named;

		if (im->kind != IMG_ELF)
			continue;
		if (im->cimg) {
			named = im->cimg->flags & (SYM_IMG_HAS_SYMTAB | SYM_IMG_FROM_DEBUG);
			src = im->cimg->srv_source;
		} else {
			named = im->elf.has_symtab || im->elf.from_debug_file;
			src = im->elf.srv_source;
		}
		if (stripped ? named : !src)
			continue;
		rc |= strbuf_addstr(out, n++ ? ", " : head);
		rc |= strbuf_addstr(out, im->base);
		if (!stripped)
			rc |= strbuf_addf(out, " (%s)", sym_srv_source_name((enum sym_srv_source)src));
	}
	if (n)
		rc |= strbuf_addch(out, '\n');
	return rc ? -ENOMEM : n;
}

int sym_proc_native_images(struct sym_proc *sp, struct sym_native_image *out, size_t max,
			   size_t *n)
{
	struct image *im;
	size_t i;

	*n = 0;
	for (i = 0; i < sp->nmaps; i++) {
		struct map *m = &sp->maps[i];

		if (m->type == MT_FILE && m->img && m->perms[2] == 'x' && m->img->kind == IMG_UNTRIED)
			image_load(sp, m->img);
	}
	for (im = sp->images; im; im = im->next) {
		struct sym_native_image *o;
		uint32_t fl;
		bool from_debug;

		if (im->kind != IMG_ELF || im->tpath[0] == '[')
			continue;
		if (*n < max) {
			o = &out[*n];
			memset(o, 0, sizeof(*o));
			o->path = im->tpath;
			o->module = im->base;
			fl = im->cimg ? im->cimg->flags : 0;
			from_debug = im->cimg ? fl & SYM_IMG_FROM_DEBUG : im->elf.from_debug_file;
			o->source = im->cimg ? im->cimg->srv_source : im->elf.srv_source;
			if (o->source)
				o->names = SYM_NAMES_SERVED;
			else if (from_debug)
				o->names = SYM_NAMES_DEBUG_FILE;
			else if (im->cimg ? fl & SYM_IMG_HAS_SYMTAB : im->elf.has_symtab)
				o->names = SYM_NAMES_SYMTAB;
			else
				o->names = SYM_NAMES_ADDRESS_ONLY;
			/* lint-ok: target path: map_files (the mapped inode), or not root (see image_get) */
			(void)sym_elf_file_build_id(im->hpath, o->build_id, sizeof(o->build_id),
						    &o->build_id_len);
		}
		(*n)++;
	}
	return 0;
}

int sym_proc_native_note(struct sym_proc *sp, struct strbuf *out)
{
	int rc, n;

	rc = native_list(sp, out, false, "native names from symbol sources: ");
	if (rc < 0)
		return rc;
	n = native_list(sp, out, true,
			"native frames named by address only (sub_<address>: no .symtab, no debug "
			"file): ");
	if (n < 0)
		return n;
	if (n && !sym_srv_servers() &&
	    strbuf_addstr(out, "  (--symbol-server or --debuginfod name them from a symbol "
			       "server: docs/internals/symsrv.md)\n"))
		return -ENOMEM;
	return 0;
}

void sym_proc_stats(const struct sym_proc *sp, struct sym_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->lookups = sp->lookups;
	st->cache_hits = sp->hits;
	st->nmaps = sp->nmaps;
	st->perfmap_entries = sp->npm;
	st->perfmap_bytes = (size_t)sp->pm_bytes;
	st->images = sp->nimages;
	st->kernel_syms = sp->ksyms.n;
}
