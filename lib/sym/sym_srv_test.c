/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the symbol sources (sym_srv.c), without any server: bad
 * URLs are refused with the reason; unconfigured, nothing is found; the
 * cache answers by build-id (lowercase hex) with no server configured; a
 * link or a file of the wrong shape in the cache is not taken; while held,
 * a configured server is not asked (-EAGAIN, counted) and releasing the
 * hold moves the epoch; a served file is accepted only with the build-id
 * asked for and a .symtab (the native fixture's files, tests/data/sym_srv).
 */
#include "common/compat.h"

#include <setjmp.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sym/sym_internal.h"
#include "sym/sym_srv.h"

static const uint8_t ID[4] = { 0xde, 0xad, 0xBE, 0x01 };

static void test_urls(void **state)
{
	struct sym_srv_opts o = { .debuginfod = "", .cache_dir = "" };
	char why[256] = "";

	(void)state;
	o.servers = "ftp://example.org/x";
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "not an http:// or https:// URL: 'ftp://example.org/x'");
	o.servers = "http://a/\"x";
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), -EINVAL);
	o.servers = "http://a, https://b/;http://c";
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), 0);
	assert_true(sym_srv_servers());
	o.servers = "1,2,3,4,5,6,7,8,9";
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), -EINVAL);
	o.servers = "";
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), 0);
	assert_false(sym_srv_servers());
}

static void test_cache(void **state)
{
	char root[] = "/tmp/clrtap-symsrv-XXXXXX", path[PATH_MAX], want[PATH_MAX + 64];
	struct sym_srv_opts o = { .debuginfod = "", .servers = "" };
	enum sym_srv_source src;
	char why[64];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(root));
	o.cache_dir = root;
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), 0);
	assert_int_equal(sym_srv_find(ID, sizeof(ID), "libx.so", path, sizeof(path), &src), -ENOENT);
	/* the directory now exists (0700): a file by the id's lowercase hex is found */
	snprintf(want, sizeof(want), "%s/debug/deadbe01.debug", root);
	fd = open(want, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sym_srv_find(ID, sizeof(ID), "libx.so", path, sizeof(path), &src), 0);
	assert_string_equal(path, want);
	assert_int_equal(src, SYM_SRV_CACHE);
	/* a link in its place is not followed */
	assert_int_equal(unlink(want), 0);
	assert_int_equal(symlink("/etc/passwd", want), 0);
	assert_int_equal(sym_srv_find(ID, sizeof(ID), "libx.so", path, sizeof(path), &src), -ENOENT);
	assert_int_equal(unlink(want), 0);
	/* a build-id of one byte or of more than 64 is no key */
	assert_int_equal(sym_srv_find(ID, 1, "libx.so", path, sizeof(path), &src), -ENOENT);
	snprintf(want, sizeof(want), "%s/debug", root);
	assert_int_equal(rmdir(want), 0);
	assert_int_equal(rmdir(root), 0);
}

static void test_hold(void **state)
{
	char root[] = "/tmp/clrtap-symsrv-XXXXXX", path[PATH_MAX], d[PATH_MAX + 16];
	/* port 9 on loopback: never reached while held */
	struct sym_srv_opts o = { .debuginfod = "", .servers = "http://127.0.0.1:9" };
	enum sym_srv_source src;
	struct sym_srv_stats st;
	unsigned ep, held;
	char why[64];

	(void)state;
	assert_non_null(mkdtemp(root));
	o.cache_dir = root;
	assert_int_equal(sym_srv_configure(&o, why, sizeof(why)), 0);
	sym_srv_hold(true);
	ep = sym_srv_epoch();
	held = sym_srv_held_misses();
	assert_int_equal(sym_srv_find(ID, sizeof(ID), "libx.so", path, sizeof(path), &src), -EAGAIN);
	assert_int_equal(sym_srv_held_misses(), held + 1);
	sym_srv_stats(&st);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.failed, 0);
	sym_srv_hold(false);
	assert_int_equal(sym_srv_epoch(), ep + 1);
	snprintf(d, sizeof(d), "%s/debug", root);
	assert_int_equal(rmdir(d), 0);
	assert_int_equal(rmdir(root), 0);
}

static int open_data(const char *name)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/tests/data/sym_srv/%s", CT_SRCDIR, name);
	return open(p, O_RDONLY | O_CLOEXEC);
}

/* The fixture's files: the build-id from the note's bytes (namesz 4, descsz 20, NT_GNU_BUILD_ID, "GNU"). */
static void test_check(void **state)
{
	uint8_t id[20];
	int dbg = open_data("libclrtapnat.so.debug"), lib = open_data("libclrtapnat.so");
	size_t i;

	(void)state;
	assert_true(dbg >= 0 && lib >= 0);
	{
		static const uint8_t hdr[16] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
		uint8_t buf[4096];
		ssize_t n = pread(dbg, buf, sizeof(buf), 0);
		const uint8_t *g = n > 0 ? memmem(buf, (size_t)n, hdr, sizeof(hdr)) : NULL;

		assert_non_null(g);
		memcpy(id, g + sizeof(hdr), sizeof(id));
	}
	assert_int_equal(sym_elf_check_debug(dbg, id, sizeof(id)), 0);
	/* the stripped library itself: the same build-id, no .symtab */
	assert_int_equal(sym_elf_check_debug(lib, id, sizeof(id)), -EBADMSG);
	/* another build-id */
	for (i = 0; i < sizeof(id); i++)
		id[i] ^= 0xff;
	assert_int_equal(sym_elf_check_debug(dbg, id, sizeof(id)), -EBADMSG);
	close(dbg);
	close(lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
