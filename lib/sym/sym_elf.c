/* SPDX-License-Identifier: MIT */
/*
 * sym_elf.c - function symbols of an ELF file through libelf: .symtab when
 * the file has one, else .dynsym; a separate debug file (found by the
 * ".dbg" beside it, .gnu_debuglink or the build-id) is preferred for its
 * .symtab. Addresses stay link-time; the PT_LOAD segments translate a file
 * offset (from /proc/PID/maps) into them.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/strparse.h"
#include "proc/proc.h"
#include "sym/sym_internal.h"
#include "sym/sym_srv.h"

struct elf_meta {
	uint8_t build_id[64];
	size_t build_id_len;
	char debuglink[256];
};

static void read_meta(Elf *elf, struct elf_meta *m)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	memset(m, 0, sizeof(*m));
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_type == SHT_NOTE && !m->build_id_len) {
			GElf_Nhdr nh;
			size_t off = 0, noff, doff;

			d = elf_getdata(scn, NULL);
			while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    !memcmp((char *)d->d_buf + noff, "GNU", 4) &&
				    nh.n_descsz <= sizeof(m->build_id)) {
					memcpy(m->build_id, (char *)d->d_buf + doff, nh.n_descsz);
					m->build_id_len = nh.n_descsz;
					break;
				}
			}
		} else if (!strcmp(name, ".gnu_debuglink")) {
			d = elf_getdata(scn, NULL);
			if (d && d->d_size > 1) {
				size_t n = strnlen(d->d_buf, d->d_size);

				if (n < d->d_size && n < sizeof(m->debuglink) && !memchr(d->d_buf, '/', n))
					memcpy(m->debuglink, d->d_buf, n + 1);
			}
		}
	}
}

/* Adds the function symbols of one symbol table section. */
static int add_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_table *t,
		       struct sym_arena *arena)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;
	int err;

	if (!d || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		struct sym_entry e = { 0 };
		GElf_Sym s;
		const char *name;
		int ty;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		ty = GELF_ST_TYPE(s.st_info);
		if (ty != STT_FUNC && ty != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		e.addr = s.st_value;
		e.size = s.st_size;
		e.name = sym_arena_strndup(arena, name, strnlen(name, SYM_LINE_MAX));
		if (!e.name)
			return -ENOMEM;
		err = sym_table_add(t, &e, SYM_ELF_MAX_SYMS);
		if (err)
			return err;
	}
	return 0;
}

/* Symbols of elf: .symtab if present (want_symtab: only that), else .dynsym. */
static int load_syms(Elf *elf, bool want_symtab, struct sym_table *t, struct sym_arena *arena,
		     bool *got_symtab)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh_sym, sh_dyn, sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab) {
			symtab = scn;
			sh_sym = sh;
		} else if (sh.sh_type == SHT_DYNSYM && !dynsym) {
			dynsym = scn;
			sh_dyn = sh;
		}
	}
	*got_symtab = symtab != NULL;
	if (symtab)
		return add_symbols(elf, symtab, &sh_sym, t, arena);
	if (want_symtab)
		return -ENOENT;
	if (dynsym)
		return add_symbols(elf, dynsym, &sh_dyn, t, arena);
	return 0;
}

/*
 * A stripped library (Microsoft's libcoreclr.so exports 11 functions and has
 * no .symtab) still says where every function starts: .eh_frame_hdr holds a
 * sorted table of (function start, FDE) pairs for the unwinder. Each start
 * becomes a "sub_<hex address>" symbol reaching to the next start, so samples
 * group by function and stay comparable across runs of the same build; a real
 * symbol at the same address wins when the table is sorted. Only the encoding
 * every toolchain emits is read (udata4 count, datarel sdata4 table); other
 * encodings are skipped.
 */
static int add_eh_frame_starts(Elf *elf, struct sym_table *t, struct sym_arena *arena)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *nm;
		Elf_Data *d;
		const uint8_t *p;
		uint32_t count, i;
		size_t need;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		nm = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!nm || strcmp(nm, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 12)
			return 0;
		p = d->d_buf;
		/* version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4 */
		if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
			return 0;
		memcpy(&count, p + 8, 4);
		need = 12 + (size_t)count * 8;
		if (count > SYM_ELF_MAX_SYMS || need > d->d_size)
			return 0;
		for (i = 0; i < count; i++) {
			struct sym_entry e = { 0 };
			int32_t rel, next_rel;
			char name[32];
			int err;

			memcpy(&rel, p + 12 + (size_t)i * 8, 4);
			e.addr = sh.sh_addr + (uint64_t)(int64_t)rel;
			if (i + 1 < count) {
				memcpy(&next_rel, p + 12 + (size_t)(i + 1) * 8, 4);
				if (next_rel > rel)
					e.size = (uint64_t)((int64_t)next_rel - rel);
			}
			snprintf(name, sizeof(name), "sub_%" PRIx64, e.addr);
			e.synthetic = true;
			e.name = sym_arena_strndup(arena, name, strlen(name));
			if (!e.name)
				return -ENOMEM;
			err = sym_table_add(t, &e, SYM_ELF_MAX_SYMS);
			if (err)
				return err;
		}
		return 0;
	}
	return 0;
}

/*
 * Opens a debug file candidate; accepts it when the build-ids agree. With pid
 * set, path is as that target sees it and is opened inside its root (lib/proc).
 */
static int try_debug_file(pid_t pid, const char *path, const struct elf_meta *main_meta,
			  struct sym_elf *e, struct sym_arena *arena)
{
	struct elf_meta m;
	struct stat st;
	bool got = false;
	Elf *elf;
	int fd, err = -ENOENT;

	if (pid > 0) {
		err = proc_target_file_open(pid, path, 0, &fd, NULL);
		if (err)
			return err;
		err = -ENOENT;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			return -EINVAL;
		}
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		read_meta(elf, &m);
		if (!main_meta->build_id_len ||
		    (m.build_id_len == main_meta->build_id_len &&
		     !memcmp(m.build_id, main_meta->build_id, m.build_id_len))) {
			struct sym_table t = { 0 };

			err = load_syms(elf, true, &t, arena, &got);
			if (!err && got && t.n) {
				sym_table_free(&e->syms);
				e->syms = t;
				e->from_debug_file = true;
				e->has_symtab = true;
				ct_debug("sym: %zu symbols from %s", t.n, path);
			} else {
				sym_table_free(&t);
				err = err ? err : -ENOENT;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* "/proc/<pid>/root": the target whose root it is. */
static bool root_pid(const char *root, pid_t *pid)
{
	char num[16];
	size_t n;

	if (strncmp(root, "/proc/", 6))
		return false;
	n = strcspn(root + 6, "/");
	if (n == 0 || n >= sizeof(num) || strcmp(root + 6 + n, "/root"))
		return false;
	memcpy(num, root + 6, n);
	num[n] = '\0';
	return !ct_parse_pid(num, pid) && *pid > 0;
}

/*
 * The host's installs of the shared runtime. A self-contained app's copy of a
 * runtime library is byte for byte the runtime pack's, with the build-id of
 * the shared runtime of that version: a debug file installed beside the
 * shared one (dotnet-symbol, a -dbg package) names the copy as well. Only a
 * file whose build-id equals the library's is taken.
 */
static const char *const shared_fx_dirs[] = {
	"/usr/share/dotnet/shared/Microsoft.NETCore.App",
	"/usr/lib/dotnet/shared/Microsoft.NETCore.App",
	"/opt/dotnet/shared/Microsoft.NETCore.App",
};
#define SHARED_FX_MAX_VERSIONS 64

static int try_shared_runtimes(const char *base, const struct elf_meta *m, struct sym_elf *e,
			       struct sym_arena *arena)
{
	size_t i;

	/* tests: one directory of their own instead of the host's installs */
	const char *test_dir = getenv("CLRTAP_TEST_SHARED_FX");
	const char *dirs[ARRAY_SIZE(shared_fx_dirs)];
	size_t ndirs = 0;

	if (!m->build_id_len || !*base)
		return -ENOENT;
	if (test_dir && *test_dir)
		dirs[ndirs++] = test_dir;
	else
		for (i = 0; i < ARRAY_SIZE(shared_fx_dirs); i++)
			dirs[ndirs++] = shared_fx_dirs[i];
	for (i = 0; i < ndirs; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *de;
		int n = 0;

		if (!d)
			continue;
		while ((de = readdir(d)) && n < SHARED_FX_MAX_VERSIONS) {
			char cand[PATH_MAX];
			int w;

			if (de->d_name[0] == '.')
				continue;
			n++;
			w = snprintf(cand, sizeof(cand), "%s/%s/%s.dbg", dirs[i], de->d_name, base);
			if (w < 0 || (size_t)w >= sizeof(cand))
				continue;
			if (!try_debug_file(0, cand, m, e, arena)) {
				closedir(d);
				return 0;
			}
		}
		closedir(d);
	}
	return -ENOENT;
}

static int find_debug_file(struct sym_elf *e, const char *root, const char *tpath,
			   const struct elf_meta *m, struct sym_arena *arena)
{
	/* The target's view first (inside its root), then the host's own debug files. */
	const char *roots[2] = { "", "" };
	pid_t pids[2] = { 0, 0 };
	char dir[PATH_MAX], cand[PATH_MAX + 512];
	const char *slash = strrchr(tpath, '/');
	size_t dl = slash ? (size_t)(slash - tpath) : 0;
	size_t r;

	if (dl >= sizeof(dir))
		return -ENAMETOOLONG;
	/* A name from the target's file: never a path of its own. */
	if (strchr(m->debuglink, '/') || !strcmp(m->debuglink, "..") || !strcmp(m->debuglink, "."))
		return -EINVAL;
	if (!root_pid(root, &pids[0]))
		roots[0] = root;
	memcpy(dir, tpath, dl);
	dir[dl] = '\0';
	for (r = 0; r < 2; r++) {
		const char *rt = roots[r];

		if (r == 1 && !*root)
			break; /* the same view twice */
		snprintf(cand, sizeof(cand), "%s%s.dbg", rt, tpath);
		if (!try_debug_file(pids[r], cand, m, e, arena))
			return 0;
		if (m->debuglink[0]) {
			snprintf(cand, sizeof(cand), "%s%s/%s", rt, dir, m->debuglink);
			if (strcmp(m->debuglink, slash ? slash + 1 : tpath) &&
			    !try_debug_file(pids[r], cand, m, e, arena))
				return 0;
			snprintf(cand, sizeof(cand), "%s%s/.debug/%s", rt, dir, m->debuglink);
			if (!try_debug_file(pids[r], cand, m, e, arena))
				return 0;
			snprintf(cand, sizeof(cand), "%s/usr/lib/debug%s/%s", rt, dir, m->debuglink);
			if (!try_debug_file(pids[r], cand, m, e, arena))
				return 0;
		}
		if (m->build_id_len >= 2) {
			char hex[2 * sizeof(m->build_id) + 1];
			size_t i;

			for (i = 0; i < m->build_id_len; i++)
				snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
			snprintf(cand, sizeof(cand), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", rt, hex,
				 hex + 2);
			if (!try_debug_file(pids[r], cand, m, e, arena))
				return 0;
		}
	}
	if (!try_shared_runtimes(slash ? slash + 1 : tpath, m, e, arena))
		return 0;
	/* last: the symbol sources the user configured (sym_srv.h), by build-id */
	if (m->build_id_len) {
		enum sym_srv_source src;

		if (!sym_srv_find(m->build_id, m->build_id_len, slash ? slash + 1 : tpath, cand,
				  sizeof(cand), &src) &&
		    !try_debug_file(0, cand, m, e, arena)) {
			e->srv_source = (int)src;
			return 0;
		}
	}
	return -ENOENT;
}

/* The build-id note and whether there is a .symtab, of the ELF file open as fd. */
static int fd_meta(int fd, struct elf_meta *m, bool *symtab)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;

	*symtab = false;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EPROTO;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		return -EBADMSG;
	}
	read_meta(elf, m);
	while (!*symtab && (scn = elf_nextscn(elf, scn)))
		*symtab = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
	elf_end(elf);
	return 0;
}

int sym_elf_file_build_id(const char *path, uint8_t *id, size_t cap, size_t *len)
{
	struct elf_meta m;
	bool symtab;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	*len = 0;
	if (fd < 0)
		return -errno;
	rc = fd_meta(fd, &m, &symtab);
	close(fd);
	if (rc)
		return rc;
	if (!m.build_id_len || m.build_id_len > cap)
		return -ENOENT;
	memcpy(id, m.build_id, m.build_id_len);
	*len = m.build_id_len;
	return 0;
}

int sym_elf_check_debug(int fd, const uint8_t *id, size_t len)
{
	struct elf_meta m;
	bool symtab;

	if (fd_meta(fd, &m, &symtab) || !symtab || m.build_id_len != len ||
	    memcmp(m.build_id, id, len))
		return -EBADMSG;
	return 0;
}

bool sym_elf_debug_file_found(const char *path, const char *root, const char *tpath)
{
	struct sym_arena ar = { .max = SYM_ARENA_MAX_BYTES };
	struct elf_meta m;
	struct sym_elf e;
	bool found = false;
	Elf *elf;
	int fd;

	if (!tpath || elf_version(EV_CURRENT) == EV_NONE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		read_meta(elf, &m);
		memset(&e, 0, sizeof(e));
		if (m.debuglink[0] || m.build_id_len)
			found = find_debug_file(&e, root ? root : "", tpath, &m, &ar) == 0;
		sym_table_free(&e.syms);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	sym_arena_free(&ar);
	return found;
}

int sym_elf_load(struct sym_elf *e, const char *path, const char *root, const char *tpath,
		 struct sym_arena *arena)
{
	struct elf_meta m;
	size_t i, nph;
	Elf *elf;
	int fd, err = 0;
	bool got = false;

	memset(e, 0, sizeof(*e));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EPROTO;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -EPROTO;
		goto out;
	}
	if (elf_getphdrnum(elf, &nph)) {
		err = -EBADMSG;
		goto out;
	}
	for (i = 0; i < nph && e->nsegs < ARRAY_SIZE(e->segs); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs].offset = ph.p_offset;
		e->segs[e->nsegs].filesz = ph.p_filesz;
		e->segs[e->nsegs].vaddr = ph.p_vaddr;
		e->nsegs++;
	}
	read_meta(elf, &m);
	err = load_syms(elf, false, &e->syms, arena, &got);
	if (err)
		goto out;
	e->has_symtab = got;
	if (!got && tpath && (m.debuglink[0] || m.build_id_len))
		find_debug_file(e, root ? root : "", tpath, &m, arena);
	if (!e->has_symtab && !e->from_debug_file) {
		err = add_eh_frame_starts(elf, &e->syms, arena);
		if (err)
			goto out;
	}
	sym_table_sort(&e->syms);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err)
		sym_elf_free(e);
	return err;
}

bool sym_elf_off_to_vaddr(const struct sym_elf *e, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct sym_elf_seg *s = &e->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

void sym_elf_free(struct sym_elf *e)
{
	sym_table_free(&e->syms);
	e->nsegs = 0;
}
