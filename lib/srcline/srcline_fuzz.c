/* SPDX-License-Identifier: MIT */
/*
 * srcline_fuzz.c - libFuzzer harness for lib/srcline: the input is a run of
 * records [kind u8][len u16 LE][payload], each fed as one runtime or
 * rundown event (method load, module load, IL map), then addresses looked
 * up. Files named by module events are never opened (open_fn refuses).
 */
#include "common/compat.h"

#include "common/cursor.h"
#include "srcline/srcline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int refuse(void *ctx, const char *path, int *fd)
{
	(void)ctx;
	(void)path;
	*fd = -1;
	return -ENOENT;
}

static const struct {
	enum nt_provider prov;
	uint32_t id;
} kinds[] = {
	{ NT_PROV_RUNTIME, 143 }, { NT_PROV_RUNTIME, 190 }, { NT_PROV_RUNTIME, 152 },
	{ NT_PROV_RUNDOWN, 144 }, { NT_PROV_RUNDOWN, 150 }, { NT_PROV_RUNDOWN, 154 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pe_open_opts o = { .open_fn = refuse };
	struct srcline *sl;
	struct pe_srcline l;
	enum srcline_why why;
	struct cursor c;
	uint32_t il;
	uint64_t ip;

	if (srcline_new(&o, &sl))
		return 0;
	cur_init(&c, data, size);
	while (cur_left(&c) >= 3) {
		struct nt_metadata md = { 0 };
		struct nt_event ev = { 0 };
		uint8_t k;
		uint16_t len;
		const uint8_t *p;
		size_t take;

		cur_u8(&c, &k);
		cur_u16(&c, &len);
		take = CT_MIN((size_t)len, cur_left(&c));
		p = cur_take(&c, take);
		if (!p)
			break;
		md.provider_kind = kinds[k % ARRAY_SIZE(kinds)].prov;
		md.event_id = kinds[k % ARRAY_SIZE(kinds)].id;
		md.version = k / ARRAY_SIZE(kinds) % 3;
		ev.meta = &md;
		ev.payload = p;
		ev.payload_len = (uint32_t)take;
		ev.pointer_size = 8;
		(void)srcline_add_event(sl, &ev);
	}
	for (ip = 0; ip < 0x100; ip += 7) {
		(void)srcline_lookup(sl, ip, false, &l, &il, &why);
		(void)srcline_lookup(sl, ip << 12, true, &l, &il, &why);
	}
	srcline_free(sl);
	return 0;
}
