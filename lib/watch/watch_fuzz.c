/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/watch: the first byte picks what the rest is, a
 * rule (odd) or an action (even); a parsed rule is fed a few observations.
 */
#include "common/compat.h"

#include "watch/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[WATCH_MAX_TEXT * 2 + 1];
	char err[256];
	struct watch_rule r;
	struct watch_action a;
	struct watch_state s = { 0 };

	if (!size || size - 1 > sizeof(text) - 1)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	if (data[0] & 1) {
		if (!watch_rule_parse(text, &r, err, sizeof(err))) {
			(void)watch_rule_test(&r, 1e9, "MB");
			(void)watch_state_feed(&r, &s, 0, true, false);
			(void)watch_state_feed(&r, &s, r.for_ms, true, true);
			(void)watch_window_add(&r, &s, 5);
			(void)watch_window_add(&r, &s, r.win_ms);
			(void)watch_state_feed(&r, &s, r.for_ms * 3, true, false);
			watch_state_release(&s);
		}
	} else {
		(void)watch_action_parse(text, &a, err, sizeof(err));
	}
	return 0;
}
