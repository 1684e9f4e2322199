/* SPDX-License-Identifier: MIT */
/*
 * sym_cache.c - compact per-image symbol tables (sym_cache.h), shared by
 * every sym_proc of this process and kept on disk between runs.
 *
 * Key: the SHA-256 of the image's bytes, read once into a private copy that
 * is then the very bytes parsed (sym_read_copy), so no container can make a
 * cache entry say something its file does not. The size, mtime and inode of
 * a file say nothing a container cannot forge; its build id is chosen by
 * whoever built it.
 *
 * On disk: DIR/sym/<kind>-<sha256 hex>.v1, one file per image:
 *   header  "CLRTAPSY" u32 version u32 kind u8[32] key u32 flags u32 nsegs
 *           u64 n u64 str_len                                   (72 bytes)
 *   nsegs x { u64 offset, filesz, vaddr }
 *   n x struct sym_img_ent (32 bytes, sorted by start)
 *   str_len bytes of NUL-terminated strings
 *   u8[32] SHA-256 of all of the above
 * Written to a temporary name and renamed (atomic); read whole and checked
 * (sym_img_decode). The directory must be a real directory owned by clrtap's
 * user and writable by nobody else; otherwise the cache is off (memory only).
 * Any file may be deleted at any time: a reader holds its own copy.
 *
 * In front of it, a memo per file identity (issue 16: reading and hashing
 * every image on every run was a third of a warm run's time): DIR/sym/
 * stat-<sha256 of (st_dev, st_ino, st_size, st_mtim, st_ctim)>.v1 holds the
 * kind and content key the file had when it was last read whole:
 *   "CLRTAPST" u32 kind u8[32] content key u8[32] SHA-256 of the above
 * A file whose bytes change gets a new ctime, which no process can set
 * (only the system clock, CAP_SYS_TIME, moves it), so a memo never leads to
 * a table of other bytes than the file's; at worst (a clock set back) a
 * container's file is named by the table of its own earlier bytes. A memo
 * whose content key is no longer cached is a miss.
 */
#include "common/compat.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include "common/io.h"
#include "common/log.h"
#include "pe/pe.h"
#include "sym/sym_cache.h"

#define MAGIC "CLRTAPSY"
#define VERSION 1u
#define HDR_SIZE 72u

/* ---- building ---- */

static int img_new(struct sym_img **out, uint32_t kind, size_t n, size_t str_cap)
{
	struct sym_img *im = calloc(1, sizeof(*im));

	*out = NULL;
	if (!im)
		return -ENOMEM;
	im->kind = kind;
	im->refs = 1;
	im->v = calloc(n ? n : 1, sizeof(*im->v));
	im->str = malloc(str_cap ? str_cap : 1);
	if (!im->v || !im->str) {
		sym_img_free(im);
		return -ENOMEM;
	}
	*out = im;
	return 0;
}

/* Appends s (NUL included) to im->str (capacity cap); its offset, or SYM_IMG_NONE when full. */
static uint32_t str_add(struct sym_img *im, size_t cap, const char *s)
{
	size_t l;
	uint32_t off;

	if (!s)
		return SYM_IMG_NONE;
	l = strlen(s) + 1;
	if (l > cap - im->str_len || im->str_len + l > SYM_IMG_MAX_STR)
		return SYM_IMG_NONE;
	off = (uint32_t)im->str_len;
	memcpy(im->str + im->str_len, s, l);
	im->str_len += l;
	return off;
}

int sym_img_from_elf(struct sym_img **out, const struct sym_elf *e)
{
	struct sym_img *im;
	size_t i, cap = 1;
	int rc;

	*out = NULL;
	if (e->syms.n > SYM_IMG_MAX_ENTS)
		return -E2BIG;
	for (i = 0; i < e->syms.n; i++)
		cap += strlen(e->syms.v[i].name ? e->syms.v[i].name : "") + 1;
	if (cap > SYM_IMG_MAX_STR)
		return -E2BIG;
	rc = img_new(&im, SYM_IMG_ELF, e->syms.n, cap);
	if (rc)
		return rc;
	for (i = 0; i < e->syms.n; i++) {
		const struct sym_entry *s = &e->syms.v[i];
		struct sym_img_ent *d = &im->v[i];

		d->start = s->addr;
		d->size = s->size;
		d->name = str_add(im, cap, s->name ? s->name : "");
		d->sig = SYM_IMG_NONE;
		d->flags = s->synthetic ? SYM_IMG_SYNTHETIC : 0;
	}
	im->n = e->syms.n;
	memcpy(im->segs, e->segs, sizeof(im->segs));
	im->nsegs = e->nsegs;
	im->flags = (e->from_debug_file ? SYM_IMG_FROM_DEBUG : 0) |
		    (e->has_symtab ? SYM_IMG_HAS_SYMTAB : 0);
	im->srv_source = e->srv_source;
	*out = im;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct sym_img_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->pad < y->pad ? -1 : x->pad > y->pad; /* pad holds the method index while sorting */
}

int sym_img_from_pe(struct sym_img **out, struct pe_file *pf)
{
	const struct pe_method *ms;
	const struct pe_range *rs;
	size_t nm, nr, i, o, cap = 1;
	uint32_t *name_of = NULL, *sig_of = NULL;
	struct sym_img *im = NULL;
	int rc;

	*out = NULL;
	rc = pe_file_methods(pf, &ms, &nm);
	if (!rc)
		rc = pe_file_ranges(pf, &rs, &nr);
	if (rc)
		return rc;
	if (nr > SYM_IMG_MAX_ENTS)
		return -E2BIG;
	for (i = 0; i < nm; i++) {
		if (ms[i].flags & PE_METHOD_UNRESOLVED)
			return -ENOLINK; /* named from another file: not a function of this one */
		cap += strlen(ms[i].name ? ms[i].name : "") + 1 + (ms[i].sig ? strlen(ms[i].sig) + 1 : 0);
	}
	if (cap > SYM_IMG_MAX_STR)
		return -E2BIG;
	rc = img_new(&im, SYM_IMG_R2R, nr, cap);
	name_of = malloc((nm ? nm : 1) * sizeof(*name_of));
	sig_of = malloc((nm ? nm : 1) * sizeof(*sig_of));
	if (rc || !name_of || !sig_of) {
		rc = rc ? rc : -ENOMEM;
		goto out;
	}
	for (i = 0; i < nm; i++)
		name_of[i] = sig_of[i] = SYM_IMG_NONE;
	for (i = 0, o = 0; i < nr; i++) {
		const struct pe_range *r = &rs[i];
		struct sym_img_ent *d;

		if (r->method >= nm || r->end_rva <= r->begin_rva)
			continue;
		if (name_of[r->method] == SYM_IMG_NONE) {
			name_of[r->method] = str_add(im, cap, ms[r->method].name ? ms[r->method].name : "");
			sig_of[r->method] = str_add(im, cap, ms[r->method].sig);
		}
		d = &im->v[o++];
		d->start = r->file_offset;
		d->size = r->end_rva - r->begin_rva;
		d->name = name_of[r->method];
		d->sig = sig_of[r->method];
		d->pad = r->method;
	}
	qsort(im->v, o, sizeof(*im->v), ent_cmp);
	/* Shared code: the earliest method keeps the range (as pe_file_lookup_*). */
	for (i = 0, im->n = 0; i < o; i++) {
		if (im->n && im->v[im->n - 1].start == im->v[i].start)
			continue;
		im->v[im->n] = im->v[i];
		im->v[im->n++].pad = 0;
	}
	*out = im;
	im = NULL;
out:
	free(name_of);
	free(sig_of);
	sym_img_free(im);
	return rc;
}

void sym_img_free(struct sym_img *im)
{
	if (!im)
		return;
	free(im->v);
	free(im->str);
	free(im);
}

const struct sym_img_ent *sym_img_find(const struct sym_img *im, uint64_t addr)
{
	size_t lo = 0, hi = im->n;
	const struct sym_img_ent *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &im->v[lo - 1];
	if (e->size && addr - e->start >= e->size)
		return NULL;
	if (!e->size && im->kind == SYM_IMG_R2R)
		return NULL;
	return e;
}

bool sym_img_off_to_vaddr(const struct sym_img *im, uint64_t off, uint64_t *vaddr)
{
	struct sym_elf e = { .nsegs = im->nsegs };

	memcpy(e.segs, im->segs, sizeof(e.segs));
	return sym_elf_off_to_vaddr(&e, off, vaddr);
}

/* ---- the file format ---- */

/*
 * libcrypto is loaded when the cache first needs a digest, not at every
 * start: linked in, its initialisation was 1.8 ms of the 2.4 ms of CPU every
 * clrtap command spent before main(), paid at the starved priority a
 * profile of a saturated machine starts with.
 */
#define CRYPTO_STR2(x) #x
#define CRYPTO_STR(x) CRYPTO_STR2(x)
static struct {
	__typeof__(&EVP_Digest) digest;
	__typeof__(&EVP_sha256) sha256;
} crypto;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

static void crypto_load(void)
{
	void *h = dlopen("libcrypto.so." CRYPTO_STR(OPENSSL_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		ct_debug("sym: no symbol cache: %s", dlerror());
		return;
	}
	*(void **)&crypto.digest = dlsym(h, "EVP_Digest");
	*(void **)&crypto.sha256 = dlsym(h, "EVP_sha256");
	if (!crypto.digest || !crypto.sha256) {
		ct_debug("sym: no symbol cache: libcrypto without EVP_Digest/EVP_sha256");
		crypto.digest = NULL;
	}
}

bool sym_sha256_ok(void)
{
	(void)pthread_once(&crypto_once, crypto_load);
	return crypto.digest != NULL;
}

void sym_sha256(const void *p, size_t len, uint8_t out[32])
{
	unsigned int ol = 32;

	if (!sym_sha256_ok() || !crypto.digest(p, len, out, &ol, crypto.sha256(), NULL))
		memset(out, 0, 32); /* callers check sym_sha256_ok() first */
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int sym_img_encode(const struct sym_img *im, struct strbuf *out)
{
	uint8_t hdr[HDR_SIZE], seg[24], sum[32];
	size_t i, base = out->len;
	int rc;

	memcpy(hdr, MAGIC, 8);
	put32(hdr + 8, VERSION);
	put32(hdr + 12, im->kind);
	memcpy(hdr + 16, im->key, 32);
	put32(hdr + 48, im->flags);
	put32(hdr + 52, (uint32_t)im->nsegs);
	put64(hdr + 56, im->n);
	put64(hdr + 64, im->str_len);
	rc = strbuf_add(out, hdr, sizeof(hdr));
	for (i = 0; !rc && i < im->nsegs; i++) {
		put64(seg, im->segs[i].offset);
		put64(seg + 8, im->segs[i].filesz);
		put64(seg + 16, im->segs[i].vaddr);
		rc = strbuf_add(out, seg, sizeof(seg));
	}
	if (!rc)
		rc = strbuf_add(out, im->v, im->n * sizeof(*im->v));
	if (!rc)
		rc = strbuf_add(out, im->str, im->str_len);
	if (rc)
		return rc;
	sym_sha256(out->buf + base, out->len - base, sum);
	return strbuf_add(out, sum, sizeof(sum));
}

int sym_img_decode(const uint8_t *p, size_t len, uint32_t kind, const uint8_t key[32],
		   struct sym_img **out)
{
	uint8_t sum[32];
	uint64_t n, sl, need;
	uint32_t nsegs, flags;
	struct sym_img *im;
	const uint8_t *q;
	size_t i;
	int rc;

	*out = NULL;
	if (len < HDR_SIZE + 32 || memcmp(p, MAGIC, 8) || get32(p + 8) != VERSION ||
	    get32(p + 12) != kind || (key && memcmp(p + 16, key, 32)))
		return -EBADMSG;
	flags = get32(p + 48);
	nsegs = get32(p + 52);
	n = get64(p + 56);
	sl = get64(p + 64);
	if ((flags & ~(SYM_IMG_FROM_DEBUG | SYM_IMG_HAS_SYMTAB)) || nsegs > 16 ||
	    n > SYM_IMG_MAX_ENTS || sl > SYM_IMG_MAX_STR || sl < 1)
		return -EBADMSG;
	need = HDR_SIZE + (uint64_t)nsegs * 24 + n * sizeof(struct sym_img_ent) + sl + 32;
	if (need != len)
		return -EBADMSG;
	sym_sha256(p, len - 32, sum);
	if (memcmp(sum, p + len - 32, 32))
		return -EBADMSG;
	q = p + HDR_SIZE + (size_t)nsegs * 24 + (size_t)n * sizeof(struct sym_img_ent);
	if (q[sl - 1] != '\0')
		return -EBADMSG;
	rc = img_new(&im, kind, (size_t)n, (size_t)sl);
	if (rc)
		return rc;
	memcpy(im->key, p + 16, 32);
	im->flags = flags;
	for (i = 0; i < nsegs; i++) {
		const uint8_t *s = p + HDR_SIZE + i * 24;

		im->segs[i].offset = get64(s);
		im->segs[i].filesz = get64(s + 8);
		im->segs[i].vaddr = get64(s + 16);
	}
	im->nsegs = nsegs;
	memcpy(im->v, p + HDR_SIZE + (size_t)nsegs * 24, (size_t)n * sizeof(*im->v));
	im->n = (size_t)n;
	memcpy(im->str, q, (size_t)sl);
	im->str_len = (size_t)sl;
	for (i = 0; i < im->n; i++) {
		const struct sym_img_ent *e = &im->v[i];

		if (e->name >= sl || (e->sig != SYM_IMG_NONE && e->sig >= sl) ||
		    (e->flags & ~SYM_IMG_SYNTHETIC) || e->pad || (i && e->start <= im->v[i - 1].start) ||
		    (kind == SYM_IMG_R2R && !e->size)) {
			sym_img_free(im);
			return -EBADMSG;
		}
	}
	*out = im;
	return 0;
}

int sym_read_copy(const char *path, uint8_t **buf, size_t *len)
{
	struct stat st;
	uint8_t *b;
	size_t got = 0;
	int fd, rc = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > SYM_IMG_MAX_FILE) {
		rc = -EFBIG;
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(fd, b + got, (size_t)st.st_size - got, (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* shrank meanwhile: hash and parse what was read */
		got += (size_t)r;
	}
	*buf = b;
	*len = got;
out:
	close(fd);
	return rc;
}

void sym_stat_key(const struct stat *st, uint8_t out[32])
{
	uint64_t v[8] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
			  (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
			  (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec, 0x53544154 };

	sym_sha256(v, sizeof(v), out);
}

#define MEMO_MAGIC "CLRTAPST"
#define MEMO_SIZE (8u + 4u + 32u + 32u)

static void memo_name(char *buf, size_t len, const uint8_t skey[32])
{
	char hex[65];
	size_t i;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", skey[i]);
	snprintf(buf, len, "stat-%s.v1", hex);
}

int sym_memo_get(const char *dir, const uint8_t skey[32], uint32_t *kind, uint8_t key[32])
{
	uint8_t b[MEMO_SIZE + 1], sum[32];
	char name[96];
	struct stat st;
	ssize_t n;
	int dfd, fd;

	dfd = sym_cache_dir_open(dir, "sym");
	if (dfd < 0)
		return dfd;
	memo_name(name, sizeof(name), skey);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -ENOENT;
	}
	n = read(fd, b, sizeof(b));
	close(fd);
	if (n != (ssize_t)MEMO_SIZE || memcmp(b, MEMO_MAGIC, 8))
		return -EBADMSG;
	sym_sha256(b, MEMO_SIZE - 32, sum);
	if (memcmp(sum, b + MEMO_SIZE - 32, 32))
		return -EBADMSG;
	memcpy(kind, b + 8, 4);
	if (*kind != SYM_IMG_ELF && *kind != SYM_IMG_R2R)
		return -EBADMSG;
	memcpy(key, b + 12, 32);
	return 0;
}

void sym_memo_put(const char *dir, const uint8_t skey[32], uint32_t kind, const uint8_t key[32])
{
	uint8_t b[MEMO_SIZE];
	char name[96], tmp[128];
	int dfd, fd, rc;

	dfd = sym_cache_dir_open(dir, "sym");
	if (dfd < 0)
		return;
	memcpy(b, MEMO_MAGIC, 8);
	memcpy(b + 8, &kind, 4);
	memcpy(b + 12, key, 32);
	sym_sha256(b, MEMO_SIZE - 32, b + MEMO_SIZE - 32);
	memo_name(name, sizeof(name), skey);
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%s", (int)getpid(), name);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		rc = ct_write_all(fd, b, sizeof(b));
		if (close(fd) < 0)
			rc = -1;
		if (rc || renameat(dfd, tmp, dfd, name) < 0)
			(void)unlinkat(dfd, tmp, 0);
	}
	close(dfd);
}

/* ---- the process-wide set and the directory ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sym_img *held;
static struct sym_cache_stats stats;

void sym_cache_stats(struct sym_cache_stats *st)
{
	pthread_mutex_lock(&lock);
	*st = stats;
	pthread_mutex_unlock(&lock);
}

static const char *kind_name(uint32_t kind)
{
	return kind == SYM_IMG_ELF ? "elf" : "r2r";
}

static void file_name(char *buf, size_t len, uint32_t kind, const uint8_t key[32])
{
	char hex[65];
	size_t i;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	snprintf(buf, len, "%s-%s.v1", kind_name(kind), hex);
}

int sym_cache_dir_open(const char *dir, const char *sub)
{
	struct stat st;
	int d, s;

	if (!dir)
		dir = SYM_CACHE_DEFAULT_DIR;
	if (!*dir)
		return -ENOENT;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return -errno;
	if (fstat(d, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(d);
		return -EPERM;
	}
	if (mkdirat(d, sub, 0700) < 0 && errno != EEXIST) {
		close(d);
		return -errno;
	}
	s = openat(d, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(d);
	if (s < 0)
		return -errno;
	if (fstat(s, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(s);
		return -EPERM;
	}
	return s;
}

static struct sym_img *disk_load(int dfd, uint32_t kind, const uint8_t key[32])
{
	char name[96];
	struct stat st;
	struct sym_img *im = NULL;
	uint8_t *buf;
	size_t got = 0;
	int fd;

	file_name(name, sizeof(name), kind, key);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size > SYM_IMG_MAX_STR + SYM_IMG_MAX_ENTS * sizeof(struct sym_img_ent) + 4096) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (buf && sym_img_decode(buf, got, kind, key, &im) == 0) {
		im->from_disk = true;
		(void)futimens(fd, NULL); /* recently used: pruned last */
	} else {
		ct_debug("sym cache: %s: not a valid cache file, ignored", name);
	}
	free(buf);
	close(fd);
	return im;
}

struct old_file {
	char name[96];
	struct timespec mtime;
	uint64_t size;
};

static int old_cmp(const void *a, const void *b)
{
	const struct old_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

void sym_cache_prune(int dfd, uint64_t max)
{
	struct old_file *v = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	DIR *d;
	int fd = dup(dfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && n < 100000) {
		struct stat st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->name) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct old_file *nv = reallocarray(v, cap ? cap * 2 : 64, sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].mtime = st.st_mtim;
		v[n].size = (uint64_t)st.st_size;
		total += v[n].size;
		n++;
	}
	closedir(d);
	if (total > max) {
		qsort(v, n, sizeof(*v), old_cmp);
		for (i = 0; i < n && total > max; i++) {
			if (unlinkat(dfd, v[i].name, 0) == 0) {
				total -= v[i].size;
				stats.pruned++;
			}
		}
	}
	free(v);
}

static int disk_store(int dfd, const struct sym_img *im)
{
	struct strbuf sb = STRBUF_INIT_MAX(SYM_IMG_MAX_STR * 2);
	char name[96], tmp[128];
	int fd, rc;

	rc = sym_img_encode(im, &sb);
	if (rc)
		goto out;
	file_name(name, sizeof(name), im->kind, im->key);
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%s", (int)getpid(), name);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = ct_write_all(fd, sb.buf, sb.len);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc)
		(void)unlinkat(dfd, tmp, 0);
	else
		sym_cache_prune(dfd, SYM_CACHE_MAX_BYTES);
out:
	strbuf_release(&sb);
	return rc;
}

static struct sym_img *held_find(uint32_t kind, const uint8_t key[32])
{
	struct sym_img *im;

	for (im = held; im; im = im->next)
		if (im->kind == kind && !memcmp(im->key, key, 32))
			return im;
	return NULL;
}

struct sym_img *sym_img_get(const char *dir, uint32_t kind, const uint8_t key[32])
{
	struct sym_img *im;
	int dfd;

	pthread_mutex_lock(&lock);
	im = held_find(kind, key);
	if (im) {
		im->refs++;
		stats.mem_hits++;
		pthread_mutex_unlock(&lock);
		return im;
	}
	pthread_mutex_unlock(&lock);
	dfd = sym_cache_dir_open(dir, "sym");
	if (dfd < 0) {
		if (dfd == -EPERM)
			ct_debug("sym cache: %s is not a private directory of ours: not used",
				 dir ? dir : SYM_CACHE_DEFAULT_DIR);
		pthread_mutex_lock(&lock);
		stats.disabled = dir == NULL || *dir;
		stats.misses++;
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	im = disk_load(dfd, kind, key);
	close(dfd);
	pthread_mutex_lock(&lock);
	if (im) {
		struct sym_img *other = held_find(kind, key);

		stats.disk_hits++;
		if (other) {
			sym_img_free(im);
			im = other;
			im->refs++;
		} else {
			im->next = held;
			held = im;
		}
	} else {
		stats.misses++;
	}
	pthread_mutex_unlock(&lock);
	return im;
}

struct sym_img *sym_img_put_new(const char *dir, struct sym_img *im)
{
	struct sym_img *other;
	int dfd, rc;

	pthread_mutex_lock(&lock);
	other = held_find(im->kind, im->key);
	if (other) {
		other->refs++;
		pthread_mutex_unlock(&lock);
		sym_img_free(im);
		return other;
	}
	im->next = held;
	held = im;
	pthread_mutex_unlock(&lock);
	dfd = sym_cache_dir_open(dir, "sym");
	if (dfd < 0)
		return im;
	rc = disk_store(dfd, im);
	close(dfd);
	pthread_mutex_lock(&lock);
	if (rc) {
		stats.store_errors++;
		ct_debug("sym cache: cannot store a %s table: %s", kind_name(im->kind), strerror(-rc));
	} else {
		stats.stored++;
	}
	pthread_mutex_unlock(&lock);
	return im;
}

void sym_img_release(struct sym_img *im)
{
	struct sym_img **pp;

	if (!im)
		return;
	pthread_mutex_lock(&lock);
	if (--im->refs) {
		pthread_mutex_unlock(&lock);
		return;
	}
	for (pp = &held; *pp; pp = &(*pp)->next)
		if (*pp == im) {
			*pp = im->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	sym_img_free(im);
}
