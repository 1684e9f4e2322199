/* SPDX-License-Identifier: MIT */
/*
 * core.c - see core.h. Layouts read here (Linux, LP64):
 *
 *  ELF64 header: e_type @16, e_machine @18, e_phoff @32, e_shoff @40,
 *    e_phentsize @54, e_phnum @56, e_shentsize @58. e_phnum 0xffff (PN_XNUM):
 *    the count is section header 0's sh_info (@44).
 *  Phdr (56 bytes): p_type @0, p_flags @4, p_offset @8, p_vaddr @16,
 *    p_filesz @32, p_memsz @40.
 *  Note: namesz, descsz, type (4 bytes each), name and desc each padded to 4.
 *  elf_prstatus: pr_cursig (int16) @12, pr_pid @32, pr_reg @112
 *    (x86_64: 27 registers; aarch64: x0..x30, sp, pc, pstate).
 *  elf_prpsinfo: pr_pid @24, pr_fname[16] @40 (136 bytes on both).
 *  siginfo: si_signo @0, si_code @8, si_addr @16.
 *  NT_FILE: count, page size, count x (start, end, offset in pages), then
 *    count NUL-terminated paths.
 */
#include "common/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "core/core.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif
#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define SHDR_SIZE 64
#define PRSTATUS_REG_OFF 112
#define X86_64_NGREG 27
#define AARCH64_NGREG 34
#define PRPSINFO_SIZE 136
/*
 * No segment is larger than a whole user address space (x86_64 4-level
 * paging: 2^47; aarch64: up to 2^52; 2^48 here). Addresses themselves may be
 * anywhere: the kernel dumps the vsyscall page at 0xffffffffff600000.
 */
#define MAX_SEGMENT ((uint64_t)1 << 48)
#define MAX_NOTE_SEGMENTS 64

struct core_file {
	const uint8_t *base;
	size_t size;
	void *map;              /* our mmap of a file opened by path, or NULL */
	size_t maplen;
	struct core_info info;
	struct core_load *loads;
	struct core_thread *threads;
	size_t threads_cap;
	struct core_mapping *maps;
	char *paths;            /* the mappings' paths, copied */
	uint64_t *auxv;         /* type, value pairs */
	size_t nauxv;
	uint64_t want_size;     /* the end of the last PT_LOAD's bytes in the file */
	bool have_psinfo, have_siginfo, have_file;
};

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EBADMSG)

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* [off, off + len) lies inside [0, size), without overflow. */
static bool in_range(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static uint64_t align4(uint64_t v)
{
	return (v + 3) & ~(uint64_t)3;
}

/*
 * struct core_load and struct core_mapping both begin with uint64_t start,
 * end: one comparator sorts both, one search finds in both.
 */
_Static_assert(offsetof(struct core_load, start) == 0 && offsetof(struct core_load, end) == 8, "layout");
_Static_assert(offsetof(struct core_mapping, start) == 0 && offsetof(struct core_mapping, end) == 8, "layout");

static int cmp_start(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* The index of the range of the sorted, disjoint array that covers addr, or n. */
static size_t range_find(const void *base, size_t n, size_t stride, uint64_t addr)
{
	const uint8_t *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint64_t *r = (const uint64_t *)(const void *)(b + mid * stride);

		if (r[1] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && ((const uint64_t *)(const void *)(b + lo * stride))[0] <= addr)
		return lo;
	return n;
}

static int parse_ehdr(struct core_file *c, uint64_t *phoff, uint64_t *phnum, char *why, size_t whylen)
{
	const uint8_t *e = c->base;
	uint16_t type, machine, phentsize;

	if (c->size < EHDR_SIZE)
		return WHY("not an ELF core file: %zu bytes, shorter than an ELF header", c->size);
	if (memcmp(e, ELFMAG, SELFMAG) != 0)
		return WHY("not an ELF core file: no ELF magic at its start");
	if (e[EI_CLASS] != ELFCLASS64 || e[EI_DATA] != ELFDATA2LSB)
		return WHY("an ELF file but not 64-bit little-endian (class %u, data %u): not read here",
			   e[EI_CLASS], e[EI_DATA]);
	type = rd16(e + 16);
	if (type != ET_CORE)
		return WHY("an ELF file but not a core dump (e_type %u, a core is %u)", type, ET_CORE);
	machine = rd16(e + 18);
	if (machine != EM_X86_64 && machine != EM_AARCH64)
		return WHY("a core dump of machine %u: only x86_64 (%u) and aarch64 (%u) are read", machine,
			   EM_X86_64, EM_AARCH64);
	c->info.machine = machine;
	phentsize = rd16(e + 54);
	*phoff = rd64(e + 32);
	*phnum = rd16(e + 56);
	if (*phnum && phentsize != PHDR_SIZE)
		return WHY("corrupt ELF header: program header size %u, not %u", phentsize, PHDR_SIZE);
	if (*phnum == PN_XNUM) {
		uint64_t shoff = rd64(e + 40);
		uint16_t shentsize = rd16(e + 58);

		if (shentsize != SHDR_SIZE || !in_range(shoff, SHDR_SIZE, c->size))
			return WHY("corrupt ELF header: %u program headers announced in section header 0, "
				   "which is not in the file", PN_XNUM);
		*phnum = rd32(c->base + shoff + 44);
	}
	if (*phnum > (uint64_t)CORE_MAX_LOADS + MAX_NOTE_SEGMENTS)
		return WHY("%" PRIu64 " program headers: over the cap of %u", *phnum,
			   CORE_MAX_LOADS + MAX_NOTE_SEGMENTS);
	if (!in_range(*phoff, *phnum * PHDR_SIZE, c->size))
		return WHY("truncated or corrupt: %" PRIu64 " program headers at offset %" PRIu64
			   " end past the file's %zu bytes", *phnum, *phoff, c->size);
	return 0;
}

static int add_thread(struct core_file *c, const uint8_t *d, uint32_t dsz, char *why, size_t whylen)
{
	struct core_thread *t;
	unsigned ngreg = c->info.machine == EM_X86_64 ? X86_64_NGREG : AARCH64_NGREG;
	const uint8_t *r = d + PRSTATUS_REG_OFF;
	unsigned i;

	if (dsz < PRSTATUS_REG_OFF + ngreg * 8)
		return WHY("corrupt NT_PRSTATUS note: %u bytes, a thread's status needs %u", dsz,
			   PRSTATUS_REG_OFF + ngreg * 8);
	if (c->info.nthreads >= CORE_MAX_THREADS)
		return WHY("more than %u threads (NT_PRSTATUS notes): over the cap", CORE_MAX_THREADS);
	if (c->info.nthreads == c->threads_cap) {
		size_t ncap = c->threads_cap ? c->threads_cap * 2 : 16;
		struct core_thread *nt = reallocarray(c->threads, ncap, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		c->threads = nt;
		c->threads_cap = ncap;
	}
	t = &c->threads[c->info.nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = (int)rd32(d + 32);
	t->signo = (int16_t)rd16(d + 12);
	t->regs.machine = c->info.machine;
	if (c->info.machine == EM_X86_64) {
		for (i = 0; i < X86_64_NGREG; i++)
			t->regs.gpr[i] = rd64(r + 8 * i);
		t->regs.ngpr = X86_64_NGREG;
		t->regs.ip = t->regs.gpr[16]; /* rip */
		t->regs.sp = t->regs.gpr[19]; /* rsp */
		t->regs.fp = t->regs.gpr[4];  /* rbp */
	} else {
		for (i = 0; i < 32; i++)
			t->regs.gpr[i] = rd64(r + 8 * i);
		t->regs.ngpr = 32;
		t->regs.ip = rd64(r + 8 * 32); /* pc */
		t->regs.sp = t->regs.gpr[31];
		t->regs.fp = t->regs.gpr[29];
	}
	return 0;
}

static int parse_file_note(struct core_file *c, const uint8_t *d, uint32_t dsz, char *why, size_t whylen)
{
	uint64_t count, page, i, pos, plen;
	size_t total = 0;
	char *p;

	if (dsz < 16)
		return WHY("corrupt NT_FILE note: %u bytes", dsz);
	count = rd64(d);
	page = rd64(d + 8);
	if (count > CORE_MAX_MAPPINGS)
		return WHY("NT_FILE lists %" PRIu64 " mapped files: over the cap of %u", count, CORE_MAX_MAPPINGS);
	if (count && (page == 0 || (page & (page - 1)) || page > ((uint64_t)1 << 30)))
		return WHY("corrupt NT_FILE note: page size %" PRIu64, page);
	if (16 + count * 24 > dsz)
		return WHY("corrupt NT_FILE note: %" PRIu64 " entries do not fit in its %u bytes", count, dsz);
	/* the paths: count NUL-terminated strings after the table */
	pos = 16 + count * 24;
	for (i = 0; i < count; i++) {
		const uint8_t *nul = memchr(d + pos, 0, dsz - pos);

		if (!nul)
			return WHY("corrupt NT_FILE note: path %" PRIu64 " of %" PRIu64 " runs past its end", i + 1,
				   count);
		plen = (uint64_t)(nul - (d + pos)) + 1;
		if (plen > CORE_MAX_PATH)
			return WHY("corrupt NT_FILE note: path %" PRIu64 " is %" PRIu64 " bytes, over the cap of %u",
				   i + 1, plen, CORE_MAX_PATH);
		total += plen;
		pos += plen;
	}
	c->maps = calloc(count ? count : 1, sizeof(*c->maps));
	c->paths = malloc(total ? total : 1);
	if (!c->maps || !c->paths)
		return -ENOMEM;
	pos = 16 + count * 24;
	p = c->paths;
	for (i = 0; i < count; i++) {
		const uint8_t *e = d + 16 + 24 * i;
		struct core_mapping *m = &c->maps[i];
		uint64_t pg = rd64(e + 16);

		m->start = rd64(e);
		m->end = rd64(e + 8);
		if (m->start >= m->end || m->end - m->start > MAX_SEGMENT)
			return WHY("corrupt NT_FILE note: entry %" PRIu64 " has range 0x%" PRIx64 "-0x%" PRIx64, i + 1,
				   m->start, m->end);
		if (pg > UINT64_MAX / page)
			return WHY("corrupt NT_FILE note: entry %" PRIu64 " has page offset %" PRIu64, i + 1, pg);
		m->file_offset = pg * page;
		plen = strlen((const char *)d + pos) + 1;
		memcpy(p, d + pos, plen);
		m->path = p;
		p += plen;
		pos += plen;
	}
	qsort(c->maps, count, sizeof(*c->maps), cmp_start);
	for (i = 1; i < count; i++)
		if (c->maps[i].start < c->maps[i - 1].end)
			return WHY("corrupt NT_FILE note: mapped files overlap at 0x%" PRIx64, c->maps[i].start);
	c->info.nmappings = count;
	return 0;
}

static int parse_note(struct core_file *c, uint32_t type, const uint8_t *d, uint32_t dsz, char *why,
		      size_t whylen)
{
	switch (type) {
	case NT_PRSTATUS:
		return add_thread(c, d, dsz, why, whylen);
	case NT_PRPSINFO:
		if (c->have_psinfo)
			return 0;
		if (dsz < PRPSINFO_SIZE)
			return WHY("corrupt NT_PRPSINFO note: %u bytes, not %u", dsz, PRPSINFO_SIZE);
		c->have_psinfo = true;
		c->info.pid = (int)rd32(d + 24);
		memcpy(c->info.comm, d + 40, 16);
		c->info.comm[16] = '\0';
		return 0;
	case NT_SIGINFO:
		if (dsz < 24)
			return WHY("corrupt NT_SIGINFO note: %u bytes", dsz);
		/* gdb writes one per thread: the first with a signal is the dumping one's */
		if (c->have_siginfo || rd32(d) == 0)
			return 0;
		c->have_siginfo = true;
		c->info.signo = (int)rd32(d);
		c->info.si_code = (int)rd32(d + 8);
		switch (c->info.signo) {
		case SIGSEGV:
		case SIGBUS:
		case SIGILL:
		case SIGFPE:
		case SIGTRAP:
			c->info.fault_addr = rd64(d + 16);
			break;
		default:
			break;
		}
		return 0;
	case NT_AUXV:
		if (c->auxv)
			return 0;
		if (dsz % 16)
			return WHY("corrupt NT_AUXV note: %u bytes, not whole entries", dsz);
		if (dsz / 16 > CORE_MAX_AUXV)
			return WHY("NT_AUXV has %u entries: over the cap of %u", dsz / 16, CORE_MAX_AUXV);
		c->nauxv = dsz / 16;
		c->auxv = malloc(c->nauxv ? dsz : 1);
		if (!c->auxv)
			return -ENOMEM;
		for (size_t i = 0; i < c->nauxv * 2; i++)
			c->auxv[i] = rd64(d + 8 * i);
		return 0;
	case NT_FILE:
		if (c->have_file)
			return 0;
		c->have_file = true;
		return parse_file_note(c, d, dsz, why, whylen);
	default:
		return 0;
	}
}

static int parse_notes(struct core_file *c, uint64_t off, uint64_t len, size_t *nnotes, char *why,
		       size_t whylen)
{
	const uint8_t *seg = c->base + off;
	uint64_t pos = 0;
	int err;

	/* fewer than 12 bytes left: the padding some writers leave at the end */
	while (len - pos >= 12) {
		uint32_t namesz = rd32(seg + pos), descsz = rd32(seg + pos + 4), type = rd32(seg + pos + 8);
		uint64_t name = pos + 12, desc = name + align4(namesz);

		if (++*nnotes > CORE_MAX_NOTES)
			return WHY("more than %u notes: over the cap", CORE_MAX_NOTES);
		if (desc > len || descsz > len - desc)
			return WHY("corrupt note at file offset %" PRIu64 ": name %u and data %u bytes run past "
				   "its PT_NOTE segment", off + pos, namesz, descsz);
		if ((namesz == 5 && memcmp(seg + name, "CORE", 5) == 0) ||
		    (namesz == 4 && memcmp(seg + name, "CORE", 4) == 0)) {
			err = parse_note(c, type, seg + desc, descsz, why, whylen);
			if (err)
				return err;
		}
		pos = desc + align4(descsz);
		if (pos > len)
			pos = len;
	}
	return 0;
}

static int parse(struct core_file *c, char *why, size_t whylen)
{
	uint64_t phoff, phnum, i, nloads = 0, nnoteseg = 0;
	size_t nnotes = 0;
	int err;

	err = parse_ehdr(c, &phoff, &phnum, why, whylen);
	if (err)
		return err;
	for (i = 0; i < phnum; i++)
		if (rd32(c->base + phoff + i * PHDR_SIZE) == PT_LOAD)
			nloads++;
	if (nloads > CORE_MAX_LOADS)
		return WHY("%" PRIu64 " PT_LOAD segments: over the cap of %u", nloads, CORE_MAX_LOADS);
	c->loads = calloc(nloads ? nloads : 1, sizeof(*c->loads));
	if (!c->loads)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		const uint8_t *ph = c->base + phoff + i * PHDR_SIZE;
		uint32_t type = rd32(ph);
		uint64_t offset = rd64(ph + 8), vaddr = rd64(ph + 16), filesz = rd64(ph + 32), memsz = rd64(ph + 40);

		if (type == PT_NOTE) {
			if (++nnoteseg > MAX_NOTE_SEGMENTS)
				return WHY("more than %u PT_NOTE segments: over the cap", MAX_NOTE_SEGMENTS);
			if (!in_range(offset, filesz, c->size))
				return WHY("truncated or corrupt: the notes (PT_NOTE at offset %" PRIu64 ", %" PRIu64
					   " bytes) end past the file's %zu bytes", offset, filesz, c->size);
			err = parse_notes(c, offset, filesz, &nnotes, why, whylen);
			if (err)
				return err;
		} else if (type == PT_LOAD) {
			struct core_load *l;

			if (memsz == 0)
				continue;
			if (memsz > MAX_SEGMENT || vaddr > UINT64_MAX - memsz)
				return WHY("corrupt PT_LOAD: 0x%" PRIx64 " + %" PRIu64
					   " bytes is larger than any address space", vaddr, memsz);
			if (filesz > memsz)
				return WHY("corrupt PT_LOAD at 0x%" PRIx64 ": %" PRIu64
					   " bytes in the file, more than its %" PRIu64 " in memory", vaddr, filesz, memsz);
			if (offset > UINT64_MAX - filesz)
				return WHY("corrupt PT_LOAD at 0x%" PRIx64 ": file offset %" PRIu64, vaddr, offset);
			l = &c->loads[c->info.nloads++];
			l->start = vaddr;
			l->end = vaddr + memsz;
			l->file_offset = offset;
			l->filesz = filesz;
			l->flags = rd32(ph + 4);
			if (offset >= c->size)
				l->avail = 0;
			else
				l->avail = CT_MIN(filesz, c->size - offset);
			if (l->avail < filesz)
				c->info.truncated = true;
			if (filesz && offset + filesz > c->want_size)
				c->want_size = offset + filesz;
		}
	}
	qsort(c->loads, c->info.nloads, sizeof(*c->loads), cmp_start);
	for (i = 1; i < c->info.nloads; i++)
		if (c->loads[i].start < c->loads[i - 1].end)
			return WHY("corrupt: PT_LOAD segments overlap at 0x%" PRIx64, c->loads[i].start);
	if (nnoteseg == 0)
		return WHY("a core file without notes (no PT_NOTE): no threads to read");
	if (c->info.nthreads == 0)
		return WHY("a core file without threads (no NT_PRSTATUS note)");
	return 0;
}

static int open_common(struct core_file *c, struct core_file **out, char *why, size_t whylen)
{
	int err = parse(c, why, whylen);

	if (err) {
		if (err == -ENOMEM)
			snprintf(why, whylen, "out of memory reading the core file");
		core_close(c);
		return err;
	}
	*out = c;
	return 0;
}

int core_open_mem(const void *data, size_t size, struct core_file **out, char *why, size_t whylen)
{
	struct core_file *c;

	*out = NULL;
	if (whylen)
		why[0] = '\0';
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->base = data;
	c->size = size;
	return open_common(c, out, why, whylen);
}

int core_open(const char *path, struct core_file **out, char *why, size_t whylen)
{
	struct core_file *c;
	struct stat st;
	int fd, err;
	void *map;

	*out = NULL;
	if (whylen)
		why[0] = '\0';
	/* O_NONBLOCK: a FIFO given as the dump must not hang the open (it is refused below) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, whylen, "%s is not a regular file", path);
		return -EINVAL;
	}
	if (st.st_size < EHDR_SIZE) {
		close(fd);
		snprintf(why, whylen, "not an ELF core file: %jd bytes, shorter than an ELF header",
			 (intmax_t)st.st_size);
		return -EBADMSG;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		snprintf(why, whylen, "%s is too large to map", path);
		return -EFBIG;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = -errno;
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "cannot map %s: %s", path, strerror(-err));
		return err;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(map, (size_t)st.st_size);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->map = map;
	c->maplen = (size_t)st.st_size;
	c->base = map;
	c->size = (size_t)st.st_size;
	return open_common(c, out, why, whylen);
}

void core_close(struct core_file *c)
{
	if (!c)
		return;
	if (c->map)
		munmap(c->map, c->maplen);
	free(c->loads);
	free(c->threads);
	free(c->maps);
	free(c->paths);
	free(c->auxv);
	free(c);
}

const struct core_info *core_info(const struct core_file *c)
{
	return &c->info;
}

const struct core_thread *core_thread(const struct core_file *c, size_t i)
{
	return i < c->info.nthreads ? &c->threads[i] : NULL;
}

const struct core_mapping *core_mapping(const struct core_file *c, size_t i)
{
	return i < c->info.nmappings ? &c->maps[i] : NULL;
}

const struct core_load *core_load(const struct core_file *c, size_t i)
{
	return i < c->info.nloads ? &c->loads[i] : NULL;
}

/* The PT_LOAD covering addr, or NULL. */
static const struct core_load *load_at(const struct core_file *c, uint64_t addr)
{
	size_t i = range_find(c->loads, c->info.nloads, sizeof(*c->loads), addr);

	return i < c->info.nloads ? &c->loads[i] : NULL;
}

ssize_t core_read(const struct core_file *c, uint64_t addr, void *buf, size_t len)
{
	const struct core_load *l = load_at(c, addr), *last = c->loads + c->info.nloads;
	uint8_t *out = buf;
	size_t done = 0;

	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (!l)
		return len ? -EFAULT : 0;
	while (done < len) {
		uint64_t rel = addr - l->start, n;

		if (rel < l->avail) {
			n = CT_MIN(l->avail - rel, len - done);
			memcpy(out + done, c->base + l->file_offset + rel, n);
		} else if (rel < l->filesz) {
			break; /* in the segment, but its bytes are not in the (truncated) file */
		} else {
			n = CT_MIN(l->end - addr, len - done);
			memset(out + done, 0, n);
		}
		done += n;
		addr += n;
		if (addr == l->end) {
			/* on into the next segment when it starts right here */
			if (l + 1 == last || l[1].start != addr)
				break;
			l++;
		}
	}
	if (done == 0 && len)
		return -EFAULT;
	return (ssize_t)done;
}

const struct core_mapping *core_mapping_at(const struct core_file *c, uint64_t addr)
{
	size_t i = range_find(c->maps, c->info.nmappings, sizeof(*c->maps), addr);

	return i < c->info.nmappings ? &c->maps[i] : NULL;
}

uint64_t core_auxv(const struct core_file *c, uint64_t type)
{
	for (size_t i = 0; i < c->nauxv; i++)
		if (c->auxv[2 * i] == type)
			return c->auxv[2 * i + 1];
	return 0;
}

int core_check_complete(const struct core_file *c, char *why, size_t whylen)
{
	size_t i, missing = 0;

	if (!c->info.truncated)
		return 0;
	for (i = 0; i < c->info.nloads; i++)
		if (c->loads[i].avail < c->loads[i].filesz)
			missing++;
	return WHY("truncated: the file has %zu bytes, its headers describe %" PRIu64
		   " (%zu of %zu memory segments are cut or missing)", c->size, c->want_size, missing,
		   c->info.nloads);
}

static const char *const x86_64_regs[X86_64_NGREG] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
	"rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
};

static const char *const aarch64_regs[32] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
	"x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29",
	"x30", "sp",
};

const char *core_reg_name(uint16_t machine, unsigned i)
{
	if (machine == EM_X86_64)
		return i < ARRAY_SIZE(x86_64_regs) ? x86_64_regs[i] : NULL;
	if (machine == EM_AARCH64)
		return i < ARRAY_SIZE(aarch64_regs) ? aarch64_regs[i] : NULL;
	return NULL;
}
