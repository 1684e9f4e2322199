/* SPDX-License-Identifier: MIT */
/*
 * analyze_fuzz.c - libFuzzer harness for the /proc/PID/smaps parser (the
 * kernel writes it, but the target chooses its mappings' file names, which
 * may hold newlines and anything else), and the lock-wait tables and
 * their cycle search fed contention events made of the same bytes (tids,
 * owners and payloads the target controls), and the report's HTML page of
 * the same bytes as Markdown (no element may come from the text).
 */
#include "common/compat.h"

#include "analyze/analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 32-byte records: op (start/stop, version), thread id, payload. */
static void fuzz_locks(const uint8_t *data, size_t size)
{
	struct nt_metadata m = { .provider_kind = NT_PROV_RUNTIME };
	struct an_lock_cycle c[8];
	const struct an_lock_stat *ls;
	struct an_locks *l;
	size_t i, n;

	if (analyze_locks_new(&l))
		return;
	for (i = 0; i + 32 <= size; i += 32) {
		struct nt_event ev = { .meta = &m, .pointer_size = 8 };
		uint64_t ips[3] = { 1, 2, 3 };

		m.event_id = data[i] & 1 ? 81 : 91;
		m.version = (data[i] >> 1) & 3;
		ev.thread_id = data[i + 1] & 15;
		ev.payload = data + i + 2;
		ev.payload_len = data[i] >> 3 < 30 ? data[i] >> 3 : 30;
		ev.stack = ips;
		ev.nframes = data[i] & 0x80 ? 3 : 0;
		analyze_locks_event(l, &ev);
	}
	n = analyze_locks_cycles(l, c, 8);
	for (i = 0; i < n; i++)
		if (!c[i].n || c[i].n > AN_CYCLE_MAX)
			__builtin_trap();
	analyze_locks_by_wait(l, &ls);
	analyze_locks_free(l);
}

/* The Markdown-to-HTML page: no raw '<' from the text gets through. */
static void fuzz_html(const uint8_t *data, size_t size)
{
	struct strbuf sb = STRBUF_INIT;

	if (analyze_html_from_md((const char *)data, size, "t<", &sb))
		__builtin_trap();
	if (memmem(sb.buf, sb.len, "<script", 7) || memmem(sb.buf, sb.len, "<title>t<", 9))
		__builtin_trap();
	strbuf_release(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_memory m = { 0 };
	uint64_t sum = 0;
	int k;

	analyze_memory_parse((const char *)data, size, &m);
	for (k = 0; k < AN_MEM_KINDS; k++)
		sum += m.rss_kb[k];
	if (sum != m.total_kb)
		__builtin_trap();
	fuzz_locks(data, size);
	fuzz_html(data, size);
	return 0;
}
