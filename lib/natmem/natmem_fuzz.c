/* SPDX-License-Identifier: MIT */
/*
 * natmem_fuzz.c - libFuzzer harness for what clrtap reads from the target's
 * memory for native-memory: the header, the ring and the live table (the
 * target writes them; clrtap does not trust them).
 */
#include "common/compat.h"

#include "natmem/natmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nm_header h;
	static struct nm_sample ring[NM_RING];
	static struct nm_live live[NM_LIVE_SLOTS];
	struct natmem m;
	size_t n;

	memset(&m, 0, sizeof(m));
	m.fd = -1;
	m.next_seq = 1;
	memset(&h, 0, sizeof(h));
	memset(ring, 0, sizeof(ring));
	memset(live, 0, sizeof(live));
	n = size < 128 ? size : 128; /* the counters; the slot list stays zero */
	memcpy(&h, data, n);
	if (size > 0 && (data[0] & 1)) { /* mostly a valid header, to get past it */
		h.magic = NM_MAGIC;
		h.version = NM_VERSION;
		h.frames_max = NM_FRAMES;
		h.live_slots = NM_LIVE_SLOTS;
		h.ring_size = NM_RING;
		h.got_used %= NM_MAX_GOT + 1;
		h.samples %= 3 * NM_RING;
	}
	data += n;
	size -= n;
	if (natmem_header_take(&m, &h) == 0) {
		/* the rest fills ring entries, then live entries, from the start */
		n = size < sizeof(ring) ? size : sizeof(ring);
		memcpy(ring, data, n);
		if (n >= 2 * sizeof(ring[0]))
			memcpy(live, data, n < sizeof(live) ? n : sizeof(live));
		natmem_take_ring(&m, ring);
		natmem_take_live(&m, live);
		for (uint32_t i = 0; i < m.nst; i++)
			if (m.st[i].n > NM_FRAMES)
				__builtin_trap();
		if (m.nst > NATMEM_MAX_STACKS)
			__builtin_trap();
		natmem_sort(&m, true);
	}
	natmem_close(&m);
	return 0;
}
