/* SPDX-License-Identifier: MIT */
/*
 * sym_srv_fuzz.c - libFuzzer harness for what a symbol server can hand
 * clrtap: the input is a served "debug file", checked the way sym_srv.c
 * checks a download (sym_elf_check_debug: ELF, build-id, .symtab) and then
 * loaded the way sym_elf.c uses one (sym_elf_load through libelf), from a
 * memfd. The build-id asked for is the input's first 20 bytes (the check
 * reads the whole note and section table before it compares). Seed corpus:
 * tests/data/sym_srv/ (the native fixture's debug file and a stripped copy).
 */
#include "common/compat.h"

#include <sys/mman.h>

#include "common/io.h"
#include "sym/sym_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_arena ar = { .max = 1 << 24 };
	struct sym_elf e;
	char path[64];
	int fd = memfd_create("clrtap-fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (!ct_write_all(fd, data, size)) {
		(void)sym_elf_check_debug(fd, data, size < 20 ? size : 20);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!sym_elf_load(&e, path, "", NULL, &ar)) {
			size_t i;

			for (i = 0; i < e.syms.n && i < 64; i++)
				(void)sym_table_find(&e.syms, e.syms.v[i].addr);
			sym_elf_free(&e);
		}
	}
	close(fd);
	sym_arena_free(&ar);
	return 0;
}
