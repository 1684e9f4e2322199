/* SPDX-License-Identifier: MIT */
/*
 * sym_cache_fuzz.c - libFuzzer harness for the symbol cache's file parser
 * (sym_img_decode). The input is taken as a cache file without its
 * checksum; the harness appends the right one so that the fuzzer reaches
 * the checks behind it (sizes, offsets, order), then looks addresses up in
 * whatever was accepted: every name must lie inside the string block.
 */
#include "common/compat.h"

#include "sym/sym_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_img *im = NULL;
	uint8_t *buf;
	uint32_t kind;
	size_t i;

	if (size > ((size_t)4 << 20))
		return 0;
	buf = malloc(size + 32);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	sym_sha256(buf, size, buf + size);
	for (kind = SYM_IMG_ELF; kind <= SYM_IMG_R2R; kind++) {
		if (sym_img_decode(buf, size + 32, kind, NULL, &im))
			continue;
		for (i = 0; i < 64; i++) {
			uint64_t a = i < im->n ? im->v[i].start + i : i * 977;
			const struct sym_img_ent *e = sym_img_find(im, a);
			uint64_t va;

			if (e) {
				const char *n = sym_img_str(im, e->name), *s = sym_img_str(im, e->sig);

				if (!n || n < im->str || n >= im->str + im->str_len || strlen(n) >= im->str_len)
					__builtin_trap();
				if (s && (s < im->str || s >= im->str + im->str_len))
					__builtin_trap();
			}
			(void)sym_img_off_to_vaddr(im, a, &va);
		}
		sym_img_free(im);
	}
	free(buf);
	return 0;
}
