/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/dac's pure helpers: type names as the .NET 10 DAC wrote
 * them for the crash and keep10k fixtures' dumps (and what ClrMD 4.2 calls
 * the same types), and build ids from ELF headers made here.
 */
#include "common/compat.h"

#include <elf.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dac/dac.h"

static void name_is(const char *raw, const char *want)
{
	char out[512];

	dac_type_name(raw, out, sizeof(out));
	assert_string_equal(out, want);
}

static void test_type_names(void **state)
{
	(void)state;
	name_is("System.String", "System.String");
	name_is("System.Int32[]", "System.Int32[]");
	name_is("System.Int32[,]", "System.Int32[,]");
	name_is("System.Collections.Generic.List`1[[System.String, System.Private.CoreLib]]",
		"System.Collections.Generic.List<System.String>");
	name_is("System.Collections.Generic.Dictionary`2+Entry[[System.String, System.Private.CoreLib],"
		"[System.Object, System.Private.CoreLib]][]",
		"System.Collections.Generic.Dictionary<System.String, System.Object>+Entry[]");
	name_is("System.Buffers.SharedArrayPool`1+<>c[[System.Char, System.Private.CoreLib]]",
		"System.Buffers.SharedArrayPool<System.Char>+<>c");
	name_is("System.Collections.Generic.Dictionary`2[[System.Int32, System.Private.CoreLib],"
		"[System.Collections.Generic.List`1[[System.Runtime.InteropServices.PosixSignalRegistration+Token, "
		"System.Private.CoreLib]], System.Private.CoreLib]]",
		"System.Collections.Generic.Dictionary<System.Int32, System.Collections.Generic.List<"
		"System.Runtime.InteropServices.PosixSignalRegistration+Token>>");
	name_is("System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1"
		"[[System.Int32, System.Private.CoreLib],[Clrtap.Fixtures.Orders+<Get>d__0, sample]]",
		"System.Runtime.CompilerServices.AsyncTaskMethodBuilder<System.Int32>+AsyncStateMachineBox<"
		"Clrtap.Fixtures.Orders+<Get>d__0>");
	/* an open generic type: no arguments to show */
	name_is("System.Collections.Generic.List`1", "System.Collections.Generic.List");
	name_is("System.Func`1[[System.Diagnostics.Tracing.EventSource, System.Private.CoreLib]][]",
		"System.Func<System.Diagnostics.Tracing.EventSource>[]");
}

static void test_type_name_cut(void **state)
{
	char out[8];

	(void)state;
	dac_type_name("System.Collections.Generic.List`1[[System.String, System.Private.CoreLib]]", out,
		      sizeof(out));
	assert_string_equal(out, "System.");
	dac_type_name("[[[[", out, sizeof(out));
	assert_true(strlen(out) < sizeof(out));
}

static void test_build_id(void **state)
{
	uint8_t img[512] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr ph = { 0 };
	uint32_t note[3] = { 4, 4, NT_GNU_BUILD_ID };
	char hex[41];

	(void)state;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	ph.p_type = PT_NOTE;
	ph.p_offset = 200;
	ph.p_filesz = 20;
	memcpy(img + eh->e_phoff, &ph, sizeof(ph));
	memcpy(img + 200, note, sizeof(note));
	memcpy(img + 212, "GNU", 4);
	memcpy(img + 216, "\xde\xad\xbe\xef", 4);
	assert_int_equal(dac_build_id(img, sizeof(img), hex, sizeof(hex)), 0);
	assert_string_equal(hex, "deadbeef");
	/* the note's data runs past its segment: no id */
	ph.p_filesz = 18;
	memcpy(img + eh->e_phoff, &ph, sizeof(ph));
	assert_int_equal(dac_build_id(img, sizeof(img), hex, sizeof(hex)), -ENOENT);
	/* program headers past the end of what was read */
	eh->e_phoff = 500;
	assert_int_equal(dac_build_id(img, sizeof(img), hex, sizeof(hex)), -EINVAL);
	assert_int_equal(dac_build_id(img, 10, hex, sizeof(hex)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_type_name_cut),
		cmocka_unit_test(test_build_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
