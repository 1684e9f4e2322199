/* SPDX-License-Identifier: MIT */
/*
 * pe_fuzz.c - libFuzzer harness for lib/pe: parse an image from memory,
 * build the method table, and exercise names, signatures, lookups and the
 * R2R debug info (pe_file_r2r_bounds).
 * Seed corpus: tests/data/pe/.
 */
#include "common/compat.h"

#include "common/strbuf.h"
#include "pe/pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pe_open_opts o = { .max_names_bytes = 1 << 22 };
	const struct pe_method *ms, *m;
	const struct pe_range *rs, *r;
	struct strbuf sb = STRBUF_INIT_MAX(1 << 20);
	struct pe_file *pf = NULL;
	size_t n, nr, i, k;
	uint32_t idx[8], t;

	if (pe_file_open_mem(data, size, &o, &pf))
		return 0;
	/* metadata names for a few rows of each kind */
	for (t = 1; t <= 4; t++) {
		struct pe_sig *s;

		strbuf_reset(&sb);
		(void)pe_md_type_name(pf, 0x02000000 | t, &sb);
		(void)pe_md_type_name(pf, 0x01000000 | t, &sb);
		(void)pe_md_type_name(pf, 0x1B000000 | t, &sb);
		(void)pe_md_method_name(pf, 0x06000000 | t, &sb);
		(void)pe_md_method_name(pf, 0x0A000000 | t, &sb);
		if (pe_md_method_sig(pf, 0x06000000 | t, &s) == 0)
			pe_sig_free(s);
		if (pe_md_method_sig(pf, 0x0A000000 | t, &s) == 0)
			pe_sig_free(s);
	}
	if (pe_file_methods(pf, &ms, &n) == 0 && pe_file_ranges(pf, &rs, &nr) == 0) {
		for (i = 0; i < n && i < 256; i++) {
			static struct pe_bound bounds[1024];
			struct pe_sig *s;

			(void)pe_file_r2r_bounds(pf, ms[i].rf_index, bounds, ARRAY_SIZE(bounds), &k);
			(void)pe_file_lookup_rva(pf, ms[i].entry_rva, &m, &r);
			if (ms[i].code_size)
				(void)pe_file_lookup_rva(pf, ms[i].entry_rva + ms[i].code_size - 1, &m,
							 &r);
			(void)pe_file_lookup_offset(pf, ms[i].entry_offset, &m, &r);
			if (pe_file_method_sig(pf, &ms[i], &s) == 0)
				pe_sig_free(s);
		}
		(void)pe_file_find(pf, "*::*(*)", idx, ARRAY_SIZE(idx), &k);
		(void)pe_file_find(pf, "*a?c*", idx, ARRAY_SIZE(idx), &k);
	}
	strbuf_release(&sb);
	pe_file_close(pf);
	return 0;
}
