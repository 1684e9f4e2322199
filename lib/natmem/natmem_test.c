/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/natmem: the weight of a sample, grouping by stack, the ring's bookkeeping. */
#include "common/compat.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "natmem/natmem.h"

static void test_weight(void **state)
{
	(void)state;
	/* small blocks stand for about one interval each */
	assert_true(fabs(natmem_weight(64, 524288) - 524288) < 64);
	/* a block far larger than the interval stands for itself */
	assert_true(fabs(natmem_weight(64u << 20, 524288) - (double)(64u << 20)) < 1);
	/* exactly one interval: s / (1 - 1/e) */
	assert_true(fabs(natmem_weight(1000, 1000) - 1000 / (1 - exp(-1.0))) < 1e-6);
}

static void sample(struct nm_sample *s, uint64_t seq, uint64_t ptr, uint64_t size, uint64_t f0)
{
	memset(s, 0, sizeof(*s));
	s->seq = s->seq2 = seq;
	s->ptr = ptr;
	s->size = size;
	s->nframes = 2;
	s->frames[0] = f0;
	s->frames[1] = 0x1000;
}

static void test_ring_and_live(void **state)
{
	static struct nm_header h;
	static struct nm_sample ring[NM_RING];
	static struct nm_live live[NM_LIVE_SLOTS];
	struct natmem m;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.fd = -1;
	m.next_seq = 1;
	h = (struct nm_header){ .magic = NM_MAGIC, .version = NM_VERSION, .frames_max = NM_FRAMES,
				.live_slots = NM_LIVE_SLOTS, .ring_size = NM_RING, .interval = 1000 };
	h.samples = 4;
	assert_int_equal(natmem_header_take(&m, &h), 0);
	sample(&ring[0], 1, 0x10, 10, 0xaaa); /* stack A */
	sample(&ring[1], 2, 0x20, 10, 0xaaa);
	sample(&ring[2], 3, 0x30, 10, 0xbbb); /* stack B */
	sample(&ring[3], 4, 0x40, 10, 0xbbb);
	ring[3].seq2 = 9; /* torn */
	assert_int_equal(natmem_take_ring(&m, ring), 0);
	assert_int_equal(m.nst, 2);
	assert_int_equal(m.ring_taken, 3);
	assert_int_equal(m.torn, 1);
	assert_int_equal(m.next_seq, 5);
	/* 0x20 is still live */
	live[7].key = 0x20;
	live[7].s = ring[1];
	live[8].key = 1; /* removed */
	assert_int_equal(natmem_take_live(&m, live), 0);
	natmem_sort(&m, true);
	assert_int_equal(m.st[0].frames[0], 0xaaa);
	assert_int_equal(m.st[0].live_samples, 1);
	assert_int_equal(m.st[0].alloc_samples, 2);
	/* a ring that ran over: the samples lost are counted */
	h.samples = 4 + NM_RING + 10;
	assert_int_equal(natmem_header_take(&m, &h), 0);
	memset(ring, 0, sizeof(ring));
	assert_int_equal(natmem_take_ring(&m, ring), 0);
	assert_int_equal(m.ring_lost, 10);
	/* a header that is not ours */
	h.magic = 1;
	assert_int_equal(natmem_header_take(&m, &h), -EPROTO);
	natmem_close(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_ring_and_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
