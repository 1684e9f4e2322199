/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for lib/watch: the first byte picks what the rest is, a
 * rule (1 mod 3), an action (0 mod 3), or a nettrace stream whose events go
 * through the request decoder (2 mod 3); a parsed rule is fed a few
 * observations.
 */
#include "common/compat.h"

#include "watch/events.h"
#include "watch/watch.h"

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct watch_request q;
	struct watch_rule *r = ctx;

	if (!watch_request_decode(ev, &q))
		(void)watch_request_match(r, &q);
	return 0;
}

/* A stream: every event is offered to the request decoder. */
static void fuzz_stream(const uint8_t *data, size_t size)
{
	struct nt_membuf mb = { data, size, 0 };
	struct nt_handlers h = { .event = on_event };
	struct watch_rule r;
	struct nt_reader *rd = NULL;
	char err[64];

	if (watch_rule_parse("status 5xx path /api", &r, err, sizeof(err)))
		return;
	if (!nt_reader_new(&rd, nt_read_mem, &mb, NULL))
		(void)nt_reader_run(rd, &h, &r);
	nt_reader_free(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[WATCH_MAX_TEXT * 2 + 1];
	char err[256];
	struct watch_rule r;
	struct watch_action a;
	struct watch_state s = { 0 };

	if (size && data[0] % 3 == 2) {
		fuzz_stream(data + 1, size - 1);
		return 0;
	}
	if (!size || size - 1 > sizeof(text) - 1)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	if (data[0] % 3 == 1) {
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
