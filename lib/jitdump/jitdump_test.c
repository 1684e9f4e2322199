/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the jitdump reader: files built here byte by byte, read
 * whole and as a runtime still writing them, and the malformed ones a hostile
 * target can write.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "jitdump/jitdump.h"

struct fb {
	uint8_t b[1 << 20];
	size_t n;
};

static void put32(struct fb *f, uint32_t v)
{
	memcpy(f->b + f->n, &v, 4);
	f->n += 4;
}

static void put64(struct fb *f, uint64_t v)
{
	memcpy(f->b + f->n, &v, 8);
	f->n += 8;
}

static void header(struct fb *f)
{
	put32(f, JITDUMP_MAGIC);
	put32(f, 1);
	put32(f, 40);
	put32(f, 62); /* EM_X86_64 */
	put32(f, 0);
	put32(f, 1234);
	put64(f, 1);
	put64(f, 0);
}

/* a JIT_CODE_LOAD with code bytes of code_len */
static void load(struct fb *f, uint64_t addr, uint64_t size, const char *name, size_t code_len)
{
	size_t nl = strlen(name) + 1;

	put32(f, JITDUMP_CODE_LOAD);
	put32(f, (uint32_t)(16 + 40 + nl + code_len));
	put64(f, 2);
	put32(f, 1234);
	put32(f, 1235);
	put64(f, addr);
	put64(f, addr);
	put64(f, size);
	put64(f, 7);
	memcpy(f->b + f->n, name, nl);
	f->n += nl;
	memset(f->b + f->n, 0xcc, code_len);
	f->n += code_len;
}

static void other(struct fb *f, uint32_t id, uint32_t body)
{
	put32(f, id);
	put32(f, 16 + body);
	put64(f, 3);
	memset(f->b + f->n, 0, body);
	f->n += body;
}

struct lines {
	char l[8][256];
	size_t n;
};

static int on_line(void *ctx, const char *line, size_t len)
{
	struct lines *ls = ctx;

	if (ls->n < 8)
		snprintf(ls->l[ls->n++], sizeof(ls->l[0]), "%.*s", (int)len, line);
	return 0;
}

static char path[64];

static void write_file(const struct fb *f, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->b, n), (ssize_t)n);
	close(fd);
}

static void test_header(void **state)
{
	static struct fb f;
	uint32_t hs = 0;

	(void)state;
	f.n = 0;
	header(&f);
	assert_int_equal(jitdump_parse_header(f.b, f.n, &hs), 0);
	assert_int_equal(hs, 40);
	assert_int_equal(jitdump_parse_header(f.b, 8, &hs), -EAGAIN);
	f.b[0] ^= 1;
	assert_int_equal(jitdump_parse_header(f.b, f.n, &hs), -EINVAL);
	f.n = 0;
	put32(&f, __builtin_bswap32(JITDUMP_MAGIC));
	put32(&f, 1);
	put32(&f, 40);
	assert_int_equal(jitdump_parse_header(f.b, f.n, &hs), -EPROTO);
	f.n = 0;
	put32(&f, JITDUMP_MAGIC);
	put32(&f, 1);
	put32(&f, 1u << 30); /* header size over the cap */
	assert_int_equal(jitdump_parse_header(f.b, f.n, &hs), -EINVAL);
}

/* Read whole, the other records and the code bytes skipped; a control byte in a name made '?'. */
static void test_read_whole(void **state)
{
	static struct fb f;
	static struct lines ls;
	struct jitdump_reader r;

	(void)state;
	f.n = 0;
	header(&f);
	load(&f, 0x7f0000001000, 0x80, "[Fx] void P::Burn(uint64,int32)[OptimizedTier1]", 0x80);
	other(&f, 2, 40); /* debug info */
	load(&f, 0x7f0000002000, 0x10, "bad\nname", 200000); /* code past one read window */
	load(&f, 0x7f0000003000, 0x20, "P::Calls()[QuickJitted]", 4);
	load(&f, 0x7f0000004000, 0x20, "[S.P.C] int32 X::Y()[PreJIT]", 4);
	write_file(&f, f.n);
	memset(&ls, 0, sizeof(ls));
	jitdump_reader_init(&r);
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.l[0],
			    "7f0000001000 80 [Fx] void P::Burn(uint64,int32)[OptimizedTier1]");
	assert_string_equal(ls.l[1], "7f0000002000 10 bad?name");
	assert_string_equal(ls.l[2], "7f0000003000 20 P::Calls()[QuickJitted]");
	assert_int_equal(r.off, f.n);
	assert_int_equal(r.loads, 3);
	assert_int_equal(r.prejit, 1);
	/* nothing new: nothing read again */
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 3);
}

/* A file being written: a record is taken only when all of it is there. */
static void test_incremental(void **state)
{
	static struct fb f;
	static struct lines ls;
	struct jitdump_reader r;
	size_t first;

	(void)state;
	f.n = 0;
	header(&f);
	load(&f, 0x1000, 0x10, "A::One()", 8);
	first = f.n;
	load(&f, 0x2000, 0x20, "A::Two()", 8);
	memset(&ls, 0, sizeof(ls));
	jitdump_reader_init(&r);
	write_file(&f, 20); /* half a header */
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 0);
	write_file(&f, first + 30); /* the second record cut in its name */
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 1);
	assert_int_equal(r.off, first);
	/* the same file grown (O_TRUNC keeps the inode) */
	write_file(&f, f.n - 1); /* all but its last code byte */
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 1);
	write_file(&f, f.n);
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 2);
	assert_string_equal(ls.l[1], "2000 20 A::Two()");
	/* written anew at the same size (the map turned off and on): read from its start */
	f.b[24] ^= 0xff; /* the header's timestamp */
	write_file(&f, f.n);
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), 0);
	assert_int_equal(ls.n, 4);
	assert_string_equal(ls.l[2], "1000 10 A::One()");
}

static int count_load(void *ctx, const struct jitdump_load *l)
{
	(void)l;
	(*(size_t *)ctx)++;
	return 0;
}

/* Malformed records stop the reading for good; an overlong name is skipped. */
static void test_malformed(void **state)
{
	static struct fb f;
	static struct lines ls;
	static char longname[JITDUMP_NAME_MAX + 10];
	struct jitdump_reader r;
	uint64_t used, skipped = 0;
	size_t n = 0;

	(void)state;
	f.n = 0;
	memset(longname, 'x', sizeof(longname) - 1);
	load(&f, 0x1000, 0x10, longname, 0);
	load(&f, 0x2000, 0x20, "B::Ok()", 0);
	assert_int_equal(jitdump_parse_records(f.b, f.n, f.n, count_load, &n, &used, &skipped), 0);
	assert_int_equal(n, 1);
	assert_int_equal(skipped, 1);
	assert_int_equal(used, f.n);
	/* a total size under the record header's, and one over the cap */
	f.n = 0;
	put32(&f, 0);
	put32(&f, 8);
	put64(&f, 0);
	assert_int_equal(jitdump_parse_records(f.b, f.n, f.n, count_load, &n, &used, NULL), -EINVAL);
	f.n = 0;
	put32(&f, 5);
	put32(&f, JITDUMP_REC_MAX + 1);
	put64(&f, 0);
	assert_int_equal(jitdump_parse_records(f.b, f.n, f.n, count_load, &n, &used, NULL), -EINVAL);
	/* a load too short for its fixed part */
	f.n = 0;
	put32(&f, JITDUMP_CODE_LOAD);
	put32(&f, 24);
	put64(&f, 0);
	put64(&f, 0);
	assert_int_equal(jitdump_parse_records(f.b, f.n, f.n, count_load, &n, &used, NULL), -EINVAL);
	/* in a file: read no more after it */
	memset(&ls, 0, sizeof(ls));
	{
		static struct fb g;

		g.n = 0;
		header(&g);
		load(&g, 0x3000, 0x30, "C::First()", 0);
		memcpy(g.b + g.n, f.b, f.n);
		g.n += f.n;
		load(&g, 0x4000, 0x40, "C::After()", 0);
		write_file(&g, g.n);
	}
	jitdump_reader_init(&r);
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), -EINVAL);
	assert_int_equal(ls.n, 1);
	assert_true(r.bad);
	assert_int_equal(jitdump_refresh(&r, 0, NULL, path, on_line, &ls), -EINVAL);
	assert_int_equal(ls.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_read_whole),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_malformed),
	};

	snprintf(path, sizeof(path), "/tmp/clrtap-jitdump-test-%d", (int)getpid());
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	unlink(path);
	return rc;
}
