/* SPDX-License-Identifier: MIT */
/*
 * probe_fuzz.c - libFuzzer harness for the outside bytes lib/probe parses
 * itself: perf map lines (written by the target) and the text that goes
 * through pattern matching and signature normalization. Seeds:
 * tests/data/probe/.
 */
#include "common/compat.h"

#include "probe/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	size_t pos = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	/* line by line, like probe_proc_refresh */
	while (pos < size) {
		char *nl = memchr(s + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - (s + pos)) : size - pos;
		struct probe_pm_entry e;

		if (!probe_pm_parse(s + pos, len, &e)) {
			struct strbuf sb = STRBUF_INIT_MAX(4096);

			(void)probe_sig_normalize(e.args, &sb);
			(void)probe_pattern_match("*::*(int,string)", e.name, e.args);
			(void)probe_edit_distance(e.name, "System.Convert::ToString", 8);
			strbuf_release(&sb);
		}
		pos += len + 1;
	}
	/* the whole input as an inlining event payload (the runtime writes it) and a cache line */
	{
		struct probe_inline_ev ev;
		struct probe_mech m;
		struct strbuf sb = STRBUF_INIT_MAX(1 << 16);

		(void)probe_inline_decode(data, size, false, &ev);
		(void)probe_inline_decode(data, size, true, &ev);
		(void)probe_mech_parse(s, size, "boot", &m);
		{
			/* a line of the ReJIT child (method names from the target in it) */
			struct probe_rejit_line rl;
			double pct;

			(void)probe_rejit_parse_line(s, &rl);
			(void)probe_budget_parse(s, &pct);
		}
		(void)probe_pm_name_base(s, &sb);
		strbuf_release(&sb);
	}
	/* the whole input as a pattern */
	(void)probe_pattern_match(s, "Ns.Type::Method", "(int32, string)");
	{
		struct strbuf sb = STRBUF_INIT_MAX(1 << 16);

		(void)probe_sig_normalize(s, &sb);
		strbuf_release(&sb);
	}
	free(s);
	return 0;
}
