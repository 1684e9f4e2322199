/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the symbol cache (sym_cache.c): a table survives the file
 * format unchanged and answers like the table it came from; every kind of
 * damage to a cache file is refused; CoreLib's R2R table gives pe's own
 * answers for every range; the directory is used only when it is private
 * and shared between lookups of the same image.
 */
#include "common/compat.h"

#include <glob.h>
#include <setjmp.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "pe/pe.h"
#include "sym/sym_cache.h"

static struct sym_img *small_elf(void)
{
	struct sym_arena ar = { 0 };
	struct sym_elf e = { 0 };
	struct sym_entry v[] = {
		{ 0x1000, 0x10, "alpha", NULL, false },
		{ 0x1010, 0, "beta", NULL, false },
		{ 0x1100, 0x20, "sub_1100", NULL, true },
	};
	struct sym_img *im;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(v); i++)
		assert_int_equal(sym_table_add(&e.syms, &v[i], 100), 0);
	e.segs[0] = (struct sym_elf_seg){ 0, 0x2000, 0x400000 };
	e.nsegs = 1;
	e.has_symtab = true;
	assert_int_equal(sym_img_from_elf(&im, &e), 0);
	memset(im->key, 0xab, sizeof(im->key));
	sym_elf_free(&e);
	sym_arena_free(&ar);
	return im;
}

static void test_roundtrip(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct sym_img *im = small_elf(), *back;
	const struct sym_img_ent *e;
	uint64_t va;

	(void)state;
	assert_int_equal(sym_img_encode(im, &sb), 0);
	assert_int_equal(sym_img_decode((const uint8_t *)sb.buf, sb.len, SYM_IMG_ELF, im->key, &back), 0);
	assert_int_equal(back->n, 3);
	assert_int_equal(back->nsegs, 1);
	assert_int_equal(back->flags, SYM_IMG_HAS_SYMTAB);
	/* the same answers as sym_table_find: sized, unsized (to the next), a gap */
	e = sym_img_find(back, 0x100f);
	assert_non_null(e);
	assert_string_equal(sym_img_str(back, e->name), "alpha");
	assert_null(sym_img_str(back, e->sig));
	e = sym_img_find(back, 0x10ff);
	assert_string_equal(sym_img_str(back, e->name), "beta");
	e = sym_img_find(back, 0x1100);
	assert_string_equal(sym_img_str(back, e->name), "sub_1100");
	assert_int_equal(e->flags, SYM_IMG_SYNTHETIC);
	assert_null(sym_img_find(back, 0x1120));
	assert_null(sym_img_find(back, 0xfff));
	assert_true(sym_img_off_to_vaddr(back, 0x10, &va));
	assert_int_equal(va, 0x400010);
	assert_false(sym_img_off_to_vaddr(back, 0x2000, &va));
	sym_img_free(back);
	/* another kind or key is not this file */
	assert_int_equal(sym_img_decode((const uint8_t *)sb.buf, sb.len, SYM_IMG_R2R, im->key, &back),
			 -EBADMSG);
	assert_null(back);
	im->key[0] ^= 1;
	assert_int_equal(sym_img_decode((const uint8_t *)sb.buf, sb.len, SYM_IMG_ELF, im->key, &back),
			 -EBADMSG);
	im->key[0] ^= 1;
	sym_img_free(im);
	strbuf_release(&sb);
}

/* Damages a copy of a good file at off (then re-signs it when resign) and expects a refusal. */
static void expect_refused(const struct strbuf *good, size_t off, uint8_t x, bool resign,
			   size_t cut)
{
	uint8_t *b = malloc(good->len);
	size_t len = good->len - cut;
	struct sym_img *im = NULL;
	uint8_t key[32];

	memcpy(b, good->buf, good->len);
	memset(key, 0xab, sizeof(key));
	if (off < len)
		b[off] ^= x;
	if (resign && len >= 32)
		sym_sha256(b, len - 32, b + len - 32);
	assert_int_equal(sym_img_decode(b, len, SYM_IMG_ELF, key, &im), -EBADMSG);
	assert_null(im);
	free(b);
}

static void test_refused(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct sym_img *im = small_elf();
	size_t ents = 72 + 24, strs = ents + 3 * sizeof(struct sym_img_ent), i;

	(void)state;
	assert_int_equal(sym_img_encode(im, &sb), 0);
	expect_refused(&sb, 0, 1, true, 0);            /* magic */
	expect_refused(&sb, 8, 1, true, 0);            /* version */
	expect_refused(&sb, 48, 0x80, true, 0);        /* unknown flag */
	expect_refused(&sb, 52, 17 ^ 1, true, 0);      /* 17 segments */
	expect_refused(&sb, 63, 0x10, true, 0);        /* absurd entry count */
	expect_refused(&sb, 64, 1, true, 0);           /* string size off by one */
	expect_refused(&sb, ents + 16 + 3, 0x7f, true, 0); /* a name past the strings */
	expect_refused(&sb, ents + 32 + 2, 0x01, true, 0); /* entries out of order */
	expect_refused(&sb, ents + 24, 2, true, 0);    /* unknown entry flag */
	expect_refused(&sb, sb.len - 33, 'x', true, 0); /* strings not NUL-terminated */
	expect_refused(&sb, strs, 1, false, 0);        /* any byte changed: checksum */
	for (i = 1; i < sb.len; i += 7)
		expect_refused(&sb, SIZE_MAX, 0, false, i); /* truncated anywhere */
	sym_img_free(im);
	strbuf_release(&sb);
}

static void test_r2r_corelib(void **state)
{
	const struct pe_method *pm;
	const struct pe_range *rs, *pr;
	struct pe_file *pf, *pf2;
	struct sym_img *im;
	uint8_t *buf;
	size_t len, nr, i, checked = 0;
	glob_t g;

	(void)state;
	if (glob("/usr/share/dotnet/shared/Microsoft.NETCore.App/*/System.Private.CoreLib.dll", 0,
		 NULL, &g) || !g.gl_pathc) {
		skip();
		return;
	}
	assert_int_equal(sym_read_copy(g.gl_pathv[0], &buf, &len), 0);
	assert_int_equal(pe_file_open_mem(buf, len, NULL, &pf), 0);
	assert_int_equal(sym_img_from_pe(&im, pf), 0);
	assert_int_equal(pe_file_open(g.gl_pathv[0], NULL, &pf2), 0);
	assert_int_equal(pe_file_ranges(pf2, &rs, &nr), 0);
	assert_true(im->n > 10000);
	/* every range: its first, middle and last byte name the same method as lib/pe says */
	for (i = 0; i < nr; i++) {
		uint64_t offs[3] = { rs[i].file_offset,
				     rs[i].file_offset + (rs[i].end_rva - rs[i].begin_rva) / 2,
				     rs[i].file_offset + (rs[i].end_rva - rs[i].begin_rva) - 1 };
		size_t k;

		for (k = 0; k < 3; k++) {
			const struct sym_img_ent *e = sym_img_find(im, offs[k]);

			assert_int_equal(pe_file_lookup_offset(pf2, offs[k], &pm, &pr), 0);
			assert_non_null(e);
			assert_string_equal(sym_img_str(im, e->name), pm->name);
			if (pm->sig)
				assert_string_equal(sym_img_str(im, e->sig), pm->sig);
			assert_int_equal(e->start, pr->file_offset);
			checked++;
		}
	}
	assert_true(checked == 3 * nr);
	assert_null(sym_img_find(im, 0x10)); /* headers */
	sym_img_free(im);
	pe_file_close(pf);
	pe_file_close(pf2);
	free(buf);
	globfree(&g);
}

/* The memo by file identity: round trip, a changed file is another key, damage is a miss. */
static void test_memo(void **state)
{
	char dir[] = "/tmp/clrtap-symmemo-XXXXXX", path[128], memo[256];
	uint8_t skey[32], skey2[32], key[32], got[32];
	struct stat st;
	uint32_t kind = 0;
	size_t i;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/image", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	assert_int_equal(stat(path, &st), 0);
	sym_stat_key(&st, skey);
	assert_int_equal(sym_memo_get(dir, skey, &kind, got), -ENOENT);
	for (i = 0; i < 32; i++)
		key[i] = (uint8_t)(i * 7);
	sym_memo_put(dir, skey, SYM_IMG_R2R, key);
	assert_int_equal(sym_memo_get(dir, skey, &kind, got), 0);
	assert_int_equal(kind, SYM_IMG_R2R);
	assert_memory_equal(got, key, 32);
	/* a write changes ctime (and mtime): another identity */
	usleep(20000);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "d", 1), 1);
	close(fd);
	assert_int_equal(stat(path, &st), 0);
	sym_stat_key(&st, skey2);
	assert_memory_not_equal(skey, skey2, 32);
	assert_int_equal(sym_memo_get(dir, skey2, &kind, got), -ENOENT);
	/* a damaged memo is a miss */
	snprintf(memo, sizeof(memo), "%s/sym/stat-", dir);
	for (i = 0; i < 32; i++)
		snprintf(memo + strlen(memo), 3, "%02x", skey[i]);
	snprintf(memo + strlen(memo), 4, ".v1");
	fd = open(memo, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1, 20), 1);
	close(fd);
	assert_int_equal(sym_memo_get(dir, skey, &kind, got), -EBADMSG);
	unlink(memo);
	unlink(path);
	snprintf(memo, sizeof(memo), "%s/sym", dir);
	rmdir(memo);
	rmdir(dir);
}

static void test_dir(void **state)
{
	char dir[] = "/tmp/clrtap-symcache-XXXXXX", sub[64], file[256];
	struct sym_img *im = small_elf(), *got, *again;
	uint8_t key[32];
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memcpy(key, im->key, 32);
	assert_null(sym_img_get(dir, SYM_IMG_ELF, key));
	got = sym_img_put_new(dir, im);
	assert_ptr_equal(got, im);
	/* shared while held: the same table, no file read */
	again = sym_img_get(dir, SYM_IMG_ELF, key);
	assert_ptr_equal(again, im);
	sym_img_release(again);
	sym_img_release(got);
	/* from the directory in a later "run" */
	got = sym_img_get(dir, SYM_IMG_ELF, key);
	assert_non_null(got);
	assert_true(got->from_disk);
	assert_int_equal(got->n, 3);
	sym_img_release(got);
	snprintf(sub, sizeof(sub), "%s/sym", dir);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* a damaged file is a miss */
	snprintf(file, sizeof(file), "%s/elf-", sub);
	for (size_t i = 0; i < 32; i++)
		snprintf(file + strlen(file), 3, "%02x", key[i]);
	snprintf(file + strlen(file), 4, ".v1");
	fd = open(file, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XX", 2, 100), 2);
	close(fd);
	assert_null(sym_img_get(dir, SYM_IMG_ELF, key));
	/* a directory others can write is not used */
	unlink(file);
	assert_int_equal(chmod(sub, 0777), 0);
	im = small_elf();
	memcpy(key, im->key, 32);
	got = sym_img_put_new(dir, im);
	sym_img_release(got);
	assert_int_equal(stat(file, &st), -1);
	assert_null(sym_img_get(dir, SYM_IMG_ELF, key));
	/* nor a symlink in its place */
	rmdir(sub);
	assert_int_equal(symlink("/tmp", sub), 0);
	assert_null(sym_img_get(dir, SYM_IMG_ELF, key));
	unlink(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_r2r_corelib),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_memo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
