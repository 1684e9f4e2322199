/* SPDX-License-Identifier: MIT */
/*
 * core_test.c - unit tests for lib/core.
 *
 *  - a synthetic core built here byte by byte (every expected value is the
 *    one written), then damaged one field at a time;
 *  - a real core the kernel writes of a child of this test that faults at a
 *    known address after starting two threads (skipped, with the reason,
 *    when this machine's core_pattern does not write a file in the cwd).
 */
#include "common/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/exitcode.h"
#include "core/core.h"

/* ---- a synthetic core ---- */

#define IMG_MAX 16384
#define NLOADS 4

struct img {
	uint8_t b[IMG_MAX];
	size_t len;
	/* offsets of fields the damage tests change */
	size_t phoff, shoff, load_ph[NLOADS], prstatus[2], file_note, file_desc, file_paths_end;
};

static void put16(struct img *im, size_t off, uint16_t v)
{
	im->b[off] = (uint8_t)v;
	im->b[off + 1] = (uint8_t)(v >> 8);
}

static void put32(struct img *im, size_t off, uint32_t v)
{
	put16(im, off, (uint16_t)v);
	put16(im, off + 2, (uint16_t)(v >> 16));
}

static void put64(struct img *im, size_t off, uint64_t v)
{
	put32(im, off, (uint32_t)v);
	put32(im, off + 4, (uint32_t)(v >> 32));
}

/* Appends a note; returns the offset of its desc. */
static size_t add_note(struct img *im, const char *name, uint32_t type, uint32_t descsz)
{
	size_t nsz = strlen(name) + 1, off = im->len, desc;

	put32(im, off, (uint32_t)nsz);
	put32(im, off + 4, descsz);
	put32(im, off + 8, type);
	memcpy(im->b + off + 12, name, nsz);
	desc = off + 12 + ((nsz + 3) & ~(size_t)3);
	im->len = desc + ((descsz + 3) & ~(size_t)3);
	assert_true(im->len < IMG_MAX);
	return desc;
}

static const struct {
	uint64_t vaddr, memsz, filesz;
	uint8_t fill; /* 0: the pattern (i * 7) */
} loads[NLOADS] = {
	{ 0x401000, 0x1000, 0x800, 0xAA },      /* contiguous with the next, half in the file */
	{ 0x400000, 0x1000, 0x1000, 0 },
	{ 0x10000000, 0x100, 0x100, 0x55 },
	{ 0x20000000, 0x1000, 0, 0 },            /* not dumped */
};

/* The machine build() writes: x86_64 (27 registers, prstatus 336 bytes) or aarch64 (34, 392). */
static uint16_t build_machine = EM_X86_64;

static void build(struct img *im, bool xnum)
{
	uint32_t ngreg = build_machine == EM_X86_64 ? 27 : 34, prsz = 112 + 8 * ngreg + 8;

	size_t nph = 1 + NLOADS, notes, d, i, data;

	memset(im, 0, sizeof(*im));
	memcpy(im->b, ELFMAG, SELFMAG);
	im->b[EI_CLASS] = ELFCLASS64;
	im->b[EI_DATA] = ELFDATA2LSB;
	im->b[EI_VERSION] = EV_CURRENT;
	put16(im, 16, ET_CORE);
	put16(im, 18, build_machine);
	put32(im, 20, EV_CURRENT);
	put16(im, 52, 64);
	put16(im, 54, 56);
	im->phoff = 64;
	if (xnum) {
		/* the count in section header 0's sh_info, as createdump writes it past 65534 */
		im->shoff = 64;
		im->phoff = 128;
		put64(im, 40, im->shoff);
		put16(im, 58, 64);
		put16(im, 60, 1);
		put16(im, 56, PN_XNUM);
		put32(im, im->shoff + 44, (uint32_t)nph);
	} else {
		put16(im, 56, (uint16_t)nph);
	}
	put64(im, 32, im->phoff);
	notes = im->phoff + nph * 56;
	im->len = notes;

	d = add_note(im, "CORE", NT_PRPSINFO, 136);
	put32(im, d + 24, 4242);
	memcpy(im->b + d + 40, "crashy\0", 7);
	memcpy(im->b + d + 56, "crashy --now", 12);

	im->prstatus[0] = d = add_note(im, "CORE", NT_PRSTATUS, prsz);
	put16(im, d + 12, SIGSEGV);
	put32(im, d + 32, 4242);
	for (i = 0; i < ngreg; i++)
		put64(im, d + 112 + 8 * i, 0x1000 + i);

	d = add_note(im, "CORE", 0x53494749 /* NT_SIGINFO */, 128);
	put32(im, d, SIGSEGV);
	put32(im, d + 8, 1 /* SEGV_MAPERR */);
	put64(im, d + 16, 0xdead0);

	im->prstatus[1] = d = add_note(im, "CORE", NT_PRSTATUS, prsz);
	put32(im, d + 32, 4243);
	for (i = 0; i < ngreg; i++)
		put64(im, d + 112 + 8 * i, 0x2000 + i);

	/* another owner's note of the same type number: not a thread */
	(void)add_note(im, "LINUX", NT_PRSTATUS, 8);

	d = add_note(im, "CORE", NT_AUXV, 48);
	put64(im, d, AT_PAGESZ);
	put64(im, d + 8, 4096);
	put64(im, d + 16, AT_ENTRY);
	put64(im, d + 24, 0x401000);

	/* NT_FILE, entries out of address order */
	im->file_note = im->len;
	{
		static const char p1[] = "/lib/x.so", p0[] = "/opt/app/bin";
		uint32_t dsz = 16 + 2 * 24 + sizeof(p1) + sizeof(p0);

		im->file_desc = d = add_note(im, "CORE", 0x46494c45 /* NT_FILE */, dsz);
		put64(im, d, 2);
		put64(im, d + 8, 4096);
		put64(im, d + 16, 0x10000000);
		put64(im, d + 24, 0x10001000);
		put64(im, d + 32, 2);
		put64(im, d + 40, 0x400000);
		put64(im, d + 48, 0x402000);
		put64(im, d + 56, 0);
		memcpy(im->b + d + 64, p1, sizeof(p1));
		memcpy(im->b + d + 64 + sizeof(p1), p0, sizeof(p0));
		im->file_paths_end = d + dsz;
	}
	/* the PT_NOTE header */
	put32(im, im->phoff, PT_NOTE);
	put64(im, im->phoff + 8, notes);
	put64(im, im->phoff + 32, im->len - notes);

	data = (im->len + 7) & ~(size_t)7;
	for (i = 0; i < NLOADS; i++) {
		size_t ph = im->phoff + 56 * (i + 1), k;

		im->load_ph[i] = ph;
		put32(im, ph, PT_LOAD);
		put32(im, ph + 4, PF_R | PF_W);
		put64(im, ph + 8, data);
		put64(im, ph + 16, loads[i].vaddr);
		put64(im, ph + 32, loads[i].filesz);
		put64(im, ph + 40, loads[i].memsz);
		for (k = 0; k < loads[i].filesz; k++)
			im->b[data + k] = loads[i].fill ? loads[i].fill : (uint8_t)(k * 7);
		data += loads[i].filesz;
		assert_true(data <= IMG_MAX);
	}
	im->len = data;
}

static void expect_bad(struct img *im, const char *want);

static struct core_file *open_img(const struct img *im, size_t len)
{
	struct core_file *c = NULL;
	char why[256];
	int err = core_open_mem(im->b, len, &c, why, sizeof(why));

	if (err)
		fail_msg("core_open_mem: %d: %s", err, why);
	return c;
}

static void check_synthetic(struct core_file *c)
{
	const struct core_info *in = core_info(c);
	const struct core_thread *t;
	const struct core_mapping *m;
	const struct core_load *l;
	uint8_t buf[64];
	unsigned i;

	assert_int_equal(in->pid, 4242);
	assert_string_equal(in->comm, "crashy");
	assert_int_equal(in->signo, SIGSEGV);
	assert_int_equal(in->si_code, 1);
	assert_int_equal(in->fault_addr, 0xdead0);
	assert_int_equal(in->machine, EM_X86_64);
	assert_int_equal(in->nthreads, 2);
	assert_int_equal(in->nmappings, 2);
	assert_int_equal(in->nloads, 4);
	assert_false(in->truncated);

	t = core_thread(c, 0);
	assert_int_equal(t->tid, 4242);
	assert_int_equal(t->signo, SIGSEGV);
	assert_int_equal(t->regs.ngpr, 27);
	assert_int_equal(t->regs.machine, EM_X86_64);
	assert_int_equal(t->regs.ip, 0x1000 + 16);
	assert_int_equal(t->regs.sp, 0x1000 + 19);
	assert_int_equal(t->regs.fp, 0x1000 + 4);
	for (i = 0; i < 27; i++)
		assert_int_equal(t->regs.gpr[i], 0x1000 + i);
	t = core_thread(c, 1);
	assert_int_equal(t->tid, 4243);
	assert_int_equal(t->signo, 0);
	assert_int_equal(t->regs.ip, 0x2000 + 16);
	assert_null(core_thread(c, 2));
	assert_string_equal(core_reg_name(EM_X86_64, 16), "rip");
	assert_string_equal(core_reg_name(EM_AARCH64, 31), "sp");
	assert_null(core_reg_name(EM_X86_64, 27));

	/* mappings sorted by address */
	m = core_mapping(c, 0);
	assert_int_equal(m->start, 0x400000);
	assert_int_equal(m->end, 0x402000);
	assert_int_equal(m->file_offset, 0);
	assert_string_equal(m->path, "/opt/app/bin");
	m = core_mapping(c, 1);
	assert_int_equal(m->file_offset, 2 * 4096);
	assert_string_equal(m->path, "/lib/x.so");
	assert_null(core_mapping(c, 2));
	assert_ptr_equal(core_mapping_at(c, 0x401fff), core_mapping(c, 0));
	assert_ptr_equal(core_mapping_at(c, 0x10000000), core_mapping(c, 1));
	assert_null(core_mapping_at(c, 0x402000));
	assert_null(core_mapping_at(c, 0x3fffff));

	assert_int_equal(core_auxv(c, AT_PAGESZ), 4096);
	assert_int_equal(core_auxv(c, AT_ENTRY), 0x401000);
	assert_int_equal(core_auxv(c, AT_PHDR), 0);

	/* loads sorted by address */
	l = core_load(c, 0);
	assert_int_equal(l->start, 0x400000);
	assert_int_equal(l->filesz, 0x1000);
	assert_int_equal(l->avail, 0x1000);
	assert_int_equal(core_load(c, 3)->start, 0x20000000);
	assert_null(core_load(c, 4));

	/* a read across two contiguous segments */
	assert_int_equal(core_read(c, 0x400ff0, buf, 32), 32);
	for (i = 0; i < 16; i++)
		assert_int_equal(buf[i], (uint8_t)((0xff0 + i) * 7));
	for (i = 16; i < 32; i++)
		assert_int_equal(buf[i], 0xAA);
	/* past p_filesz: zeros, then short at the end of the range */
	memset(buf, 0xEE, sizeof(buf));
	assert_int_equal(core_read(c, 0x4017f8, buf, 16), 16);
	for (i = 0; i < 8; i++)
		assert_int_equal(buf[i], 0xAA);
	for (i = 8; i < 16; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(core_read(c, 0x401ff0, buf, 64), 16);
	assert_int_equal(core_read(c, 0x100000f8, buf, 64), 8);
	assert_int_equal(buf[7], 0x55);
	assert_int_equal(core_read(c, 0x3fffff, buf, 1), -EFAULT);
	assert_int_equal(core_read(c, 0x402000, buf, 1), -EFAULT);
	assert_int_equal(core_read(c, UINT64_MAX, buf, 8), -EFAULT);
	assert_int_equal(core_read(c, 0x400000, buf, 0), 0);
	assert_int_equal(core_check_complete(c, (char[64]){ 0 }, 64), 0);
}

/* CT_CORE_SEED_DIR=dir: the synthetic cores are also written there (tests/data/core/ was made so). */
static void write_seed(const struct img *im, const char *name)
{
	const char *dir = getenv("CT_CORE_SEED_DIR");
	char path[PATH_MAX];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(im->b, 1, im->len, f), im->len);
	assert_int_equal(fclose(f), 0);
}

static void test_synthetic(void **state)
{
	struct img *im = malloc(sizeof(*im));
	struct core_file *c;

	build(im, false);
	write_seed(im, "synthetic.core");
	c = open_img(im, im->len);
	check_synthetic(c);
	core_close(c);
	/* the same with the program header count in section header 0 */
	build(im, true);
	write_seed(im, "synthetic-xnum.core");
	c = open_img(im, im->len);
	check_synthetic(c);
	core_close(c);
	free(im);
}

/* aarch64: x0..x30, sp in gpr; pc is ip; x29 is fp. */
static void test_aarch64(void **state)
{
	struct img *im = malloc(sizeof(*im));
	const struct core_thread *t;
	struct core_file *c;
	uint8_t buf[32];
	unsigned i;

	build_machine = EM_AARCH64;
	build(im, false);
	build_machine = EM_X86_64;
	c = open_img(im, im->len);
	assert_int_equal(core_info(c)->machine, EM_AARCH64);
	assert_int_equal(core_info(c)->nthreads, 2);
	t = core_thread(c, 0);
	assert_int_equal(t->tid, 4242);
	assert_int_equal(t->regs.machine, EM_AARCH64);
	assert_int_equal(t->regs.ngpr, 32);
	for (i = 0; i < 32; i++)
		assert_int_equal(t->regs.gpr[i], 0x1000 + i);
	assert_int_equal(t->regs.ip, 0x1000 + 32); /* pc */
	assert_int_equal(t->regs.sp, 0x1000 + 31);
	assert_int_equal(t->regs.fp, 0x1000 + 29);
	assert_int_equal(core_thread(c, 1)->regs.ip, 0x2000 + 32);
	assert_int_equal(core_read(c, 0x400ff0, buf, 32), 32);
	assert_int_equal(buf[31], 0xAA);
	core_close(c);
	/* an x86_64-sized status is too short for aarch64's registers */
	build(im, false);
	put16(im, 18, EM_AARCH64);
	expect_bad(im, "corrupt NT_PRSTATUS note: 336 bytes, a thread's status needs 384");
	free(im);
}

static void test_truncated(void **state)
{
	struct img *im = malloc(sizeof(*im));
	struct core_file *c;
	uint64_t l2off;
	uint8_t buf[0x100];
	char why[256];

	build(im, false);
	l2off = 0;
	for (size_t i = 0; i < 8; i++)
		l2off |= (uint64_t)im->b[im->load_ph[2] + 8 + i] << (8 * i);
	/* cut in the middle of the third segment's bytes (0x10000000): 0x40 of 0x100 remain */
	c = open_img(im, l2off + 0x40);
	assert_true(core_info(c)->truncated);
	assert_int_equal(core_check_complete(c, why, sizeof(why)), -EBADMSG);
	assert_int_equal(ct_exit_for(-EBADMSG), EXIT_BAD_INPUT);
	assert_non_null(strstr(why, "truncated: the file has"));
	assert_non_null(strstr(why, "1 of 4 memory segments"));
	assert_int_equal(core_read(c, 0x10000000, buf, 0x100), 0x40);
	assert_int_equal(core_read(c, 0x10000040, buf, 1), -EFAULT);
	assert_int_equal(core_read(c, 0x400000, buf, 16), 16);
	core_close(c);
	/* cut inside the notes: refused */
	assert_int_equal(core_open_mem(im->b, im->file_desc, &c, why, sizeof(why)), -EBADMSG);
	assert_null(c);
	assert_non_null(strstr(why, "truncated or corrupt: the notes"));
	/* cut inside the program headers */
	assert_int_equal(core_open_mem(im->b, 100, &c, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "program headers"));
	assert_int_equal(core_open_mem(im->b, 10, &c, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "shorter than an ELF header"));
	free(im);
}

/* One damage: where, what, and the words of the refusal. */
static void expect_bad(struct img *im, const char *want)
{
	struct core_file *c = (struct core_file *)1;
	char why[256] = "";
	int err = core_open_mem(im->b, im->len, &c, why, sizeof(why));

	if (err != -EBADMSG || !strstr(why, want))
		fail_msg("want -EBADMSG and '%s', got %d '%s'", want, err, why);
	assert_null(c);
	assert_null(strchr(why, '\n'));
}

static void test_corrupt(void **state)
{
	struct img *im = malloc(sizeof(*im));
	unsigned seed = 12345;
	size_t i;

	/* random bytes */
	build(im, false);
	for (i = 0; i < im->len; i++)
		im->b[i] = (uint8_t)(rand_r(&seed) >> 7);
	expect_bad(im, "no ELF magic");
	build(im, false);
	im->b[EI_CLASS] = ELFCLASS32;
	expect_bad(im, "not 64-bit little-endian");
	build(im, false);
	put16(im, 16, ET_EXEC);
	expect_bad(im, "not a core dump");
	build(im, false);
	put16(im, 18, 3);
	expect_bad(im, "machine 3");
	build(im, false);
	put16(im, 56, 1000);
	expect_bad(im, "1000 program headers at offset 64 end past");
	build(im, false);
	put16(im, 56, PN_XNUM);
	expect_bad(im, "section header 0");
	/* a note size past its segment */
	build(im, false);
	put32(im, im->file_note + 4, 0x7fffffff);
	expect_bad(im, "run past its PT_NOTE segment");
	/* a thread's status too short for its registers */
	build(im, false);
	put32(im, im->prstatus[0] - 20 + 4, 100);
	expect_bad(im, "corrupt NT_PRSTATUS note: 100 bytes");
	/* no thread at all */
	build(im, false);
	put32(im, im->prstatus[0] - 20 + 8, 99);
	put32(im, im->prstatus[1] - 20 + 8, 99);
	expect_bad(im, "without threads");
	/* overlapping segments */
	build(im, false);
	put64(im, im->load_ph[2] + 16, 0x400800);
	expect_bad(im, "PT_LOAD segments overlap at 0x400800");
	/* a huge segment */
	build(im, false);
	put64(im, im->load_ph[3] + 40, (uint64_t)1 << 63);
	expect_bad(im, "larger than any address space");
	build(im, false);
	put64(im, im->load_ph[3] + 16, UINT64_MAX - 10);
	expect_bad(im, "larger than any address space");
	build(im, false);
	put64(im, im->load_ph[1] + 32, 0x2000);
	expect_bad(im, "more than its 4096 in memory");
	/* NT_FILE: a count over the cap, a count that does not fit, a path without its end */
	build(im, false);
	put64(im, im->file_desc, (uint64_t)1 << 40);
	expect_bad(im, "over the cap of 1048576");
	build(im, false);
	put64(im, im->file_desc, 1000);
	expect_bad(im, "1000 entries do not fit");
	build(im, false);
	memset(im->b + im->file_paths_end - 4, 'x', 4);
	expect_bad(im, "path 2 of 2 runs past its end");
	build(im, false);
	put64(im, im->file_desc + 8, 3000);
	expect_bad(im, "page size 3000");
	build(im, false);
	put64(im, im->file_desc + 40, 0x10000800);
	put64(im, im->file_desc + 48, 0x10002000);
	expect_bad(im, "mapped files overlap");
	free(im);
}

/* Every prefix of the file and every single-byte change of its headers: never a crash. */
static void test_damage_sweep(void **state)
{
	struct img *im = malloc(sizeof(*im)), *bad = malloc(sizeof(*bad));
	struct core_file *c;
	char why[256];
	uint8_t buf[64];
	size_t i;

	build(im, false);
	for (i = 0; i <= im->len; i += (i < im->file_paths_end ? 1 : 97)) {
		if (core_open_mem(im->b, i, &c, why, sizeof(why)) == 0) {
			(void)core_read(c, 0x400000, buf, sizeof(buf));
			core_close(c);
		} else {
			assert_true(why[0] != '\0');
		}
	}
	for (i = 0; i < im->file_paths_end; i++) {
		*bad = *im;
		bad->b[i] ^= 0xff;
		if (core_open_mem(bad->b, bad->len, &c, why, sizeof(why)) == 0) {
			(void)core_read(c, 0x400ff0, buf, sizeof(buf));
			core_close(c);
		}
	}
	free(bad);
	free(im);
}

static void test_open_errors(void **state)
{
	struct core_file *c;
	char why[256];

	assert_int_equal(core_open("/nonexistent/core.1", &c, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "cannot open /nonexistent/core.1"));
	assert_int_equal(core_open("/", &c, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a regular file"));
	assert_int_equal(core_open("/etc/passwd", &c, why, sizeof(why)), -EBADMSG);
	assert_int_equal(ct_exit_for(-EBADMSG), EXIT_BAD_INPUT);
	/* a FIFO with no writer: refused at once, not waited on */
	{
		char dir[] = "/tmp/core_test.XXXXXX", fifo[64];

		assert_non_null(mkdtemp(dir));
		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(core_open(fifo, &c, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "is not a regular file"));
		unlink(fifo);
		rmdir(dir);
	}
}

/* ---- a core the kernel writes ---- */

#define FAULT_ADDR 0x1234
static uint8_t pattern[4096] = { 1 }; /* .data: dumped as file-backed private memory */
static pthread_barrier_t started;

static void *idle_thread(void *arg)
{
	int *tid = arg;

	*tid = (int)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	for (;;)
		pause();
	return NULL;
}

static NORETURN void crash_child(int fd)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct sigaction sa = { .sa_handler = SIG_DFL };
	pthread_t th[2];
	int tids[3], i, f;

	for (i = 0; i < (int)sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i ^ getpid());
	if (setrlimit(RLIMIT_CORE, &rl) < 0) {
		rl.rlim_cur = rl.rlim_max = 64 << 20;
		(void)setrlimit(RLIMIT_CORE, &rl);
	}
	/* file-backed private and ELF headers only: a small core, also under ASan */
	f = open("/proc/self/coredump_filter", O_WRONLY);
	if (f >= 0) {
		(void)!write(f, "0x14", 4);
		close(f);
	}
	sigaction(SIGSEGV, &sa, NULL);
	pthread_barrier_init(&started, NULL, 3);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, idle_thread, &tids[i + 1]);
	pthread_barrier_wait(&started);
	tids[0] = getpid();
	(void)!write(fd, tids, sizeof(tids));
	close(fd);
	*(volatile int *)FAULT_ADDR = 1;
	_exit(3);
}

static void test_kernel_core(void **state)
{
	char pat[256] = "", dir[] = "/tmp/core_test.XXXXXX", path[300], why[256], exe[PATH_MAX];
	const struct core_mapping *m;
	const struct core_info *in;
	struct core_file *c;
	int fds[2], tids[3], st, i, f, seen = 0;
	uint8_t buf[sizeof(pattern)];
	pid_t pid;
	ssize_t n;

	f = open("/proc/sys/kernel/core_pattern", O_RDONLY);
	if (f >= 0) {
		n = read(f, pat, sizeof(pat) - 1);
		pat[n > 0 ? n : 0] = '\0';
		close(f);
	}
	pat[strcspn(pat, "\n")] = '\0';
	if (strcmp(pat, "core") != 0) {
		/* a pipe to a crash collector, or a path elsewhere: not ours to change */
		printf("skipped: core_pattern is '%s', not 'core' (no kernel core in the cwd)\n", pat);
		skip();
	}
	assert_non_null(mkdtemp(dir));
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		if (chdir(dir) < 0)
			_exit(4);
		crash_child(fds[1]);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], tids, sizeof(tids)), sizeof(tids));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	snprintf(path, sizeof(path), "%s/core", dir);
	if (access(path, F_OK) != 0)
		snprintf(path, sizeof(path), "%s/core.%d", dir, (int)pid);
	if (!WCOREDUMP(st) || access(path, F_OK) != 0) {
		printf("skipped: the kernel wrote no core (RLIMIT_CORE hard limit 0?)\n");
		rmdir(dir);
		skip();
	}
	/* the mapping keeps the bytes: the file goes now, whatever the checks below say */
	f = core_open(path, &c, why, sizeof(why));
	unlink(path);
	rmdir(dir);
	if (f != 0)
		fail_msg("%s: %s", path, why);
	in = core_info(c);
	assert_int_equal(in->pid, pid);
#if defined(__aarch64__)
	assert_int_equal(in->machine, EM_AARCH64);
#else
	assert_int_equal(in->machine, EM_X86_64);
#endif
	assert_int_equal(in->signo, SIGSEGV);
	assert_int_equal(in->si_code, SEGV_MAPERR);
	assert_int_equal(in->fault_addr, FAULT_ADDR);
	assert_string_equal(in->comm, "core_test");
	assert_false(in->truncated);
	assert_int_equal(in->nthreads, 3);
	/* the faulting thread first; the kernel writes the signal on every thread */
	assert_int_equal(core_thread(c, 0)->tid, pid);
	for (i = 0; i < 3; i++) {
		const struct core_thread *t = core_thread(c, (size_t)i);

		for (int k = 0; k < 3; k++)
			if (t->tid == tids[k])
				seen |= 1 << k;
		assert_int_equal(t->signo, SIGSEGV);
	}
	assert_int_equal(seen, 7);
	/* the child's own bytes, not ours */
	assert_int_equal(core_read(c, (uintptr_t)pattern, buf, sizeof(buf)), sizeof(buf));
	for (i = 0; i < (int)sizeof(pattern); i++)
		assert_int_equal(buf[i], (uint8_t)(i ^ pid));
	/* the mapped file holding this code is this binary */
	m = core_mapping_at(c, (uintptr_t)test_kernel_core);
	assert_non_null(m);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_string_equal(m->path, exe);
	assert_int_equal(core_auxv(c, AT_ENTRY), getauxval(AT_ENTRY));
	assert_int_equal(core_auxv(c, AT_PAGESZ), (uint64_t)sysconf(_SC_PAGESIZE));
	core_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_aarch64),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_damage_sweep),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_kernel_core),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
