/* SPDX-License-Identifier: MIT */
/*
 * sym_fuzz.c - libFuzzer harness for lib/sym's parsers of outside text:
 * every line of the input goes through the perf map, /proc/PID/maps and
 * kallsyms line parsers (whose pieces must stay inside the line), then the
 * whole input is loaded as kallsyms into a symbol table and looked up.
 * Seed corpus: tests/data/sym/ (real captures).
 */
#include "common/compat.h"

#include "sym/sym_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *line, size_t len, const char *p, size_t plen)
{
	if (p && (p < line || p + plen > line + len))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct sym_arena ar = { .max = 1 << 24 };
	struct sym_table t = { 0 };
	size_t pos = 0;

	while (pos < size) {
		const char *nl = memchr(text + pos, '\n', size - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : size - pos;
		const char *l = text + pos;
		struct sym_pm_line pl;
		struct sym_maps_line ml;
		struct sym_ks_line kl;

		if (!sym_parse_perfmap_line(l, ll, &pl)) {
			inside(l, ll, pl.name, pl.name_len);
			inside(l, ll, pl.sig, pl.sig_len);
			inside(l, ll, pl.tier, pl.tier_len);
			inside(l, ll, pl.module, pl.module_len);
			if (!pl.name_len || pl.start + pl.size < pl.start)
				__builtin_trap();
		}
		if (!sym_parse_maps_line(l, ll, &ml)) {
			inside(l, ll, ml.path, ml.path_len);
			if (ml.end < ml.start)
				__builtin_trap();
		}
		if (!sym_parse_kallsyms_line(l, ll, &kl)) {
			inside(l, ll, kl.name, kl.name_len);
			inside(l, ll, kl.module, kl.module_len);
		}
		pos += ll + 1;
	}
	if (!sym_kallsyms_load(&t, text, size, &ar)) {
		size_t i;

		for (i = 1; i < t.n; i++)
			if (t.v[i - 1].addr >= t.v[i].addr)
				__builtin_trap();
		for (i = 0; i < t.n && i < 64; i++)
			if (!sym_table_find(&t, t.v[i].addr))
				__builtin_trap();
	}
	sym_table_free(&t);
	sym_arena_free(&ar);
	return 0;
}
