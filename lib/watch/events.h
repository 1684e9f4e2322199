/* SPDX-License-Identifier: MIT */
/*
 * events.h - what watch reads from a target's EventPipe session beyond
 * counters: ASP.NET Core requests as the hosting layer ends them, and the
 * names of the frames of an event's stack (the throw of an exception).
 */
#ifndef CLRTAP_WATCH_EVENTS_H
#define CLRTAP_WATCH_EVENTS_H

#include "common/compat.h"
#include "common/strbuf.h"
#include "ipc/ipc.h"
#include "nettrace/nettrace.h"
#include "watch/watch.h"

#define WATCH_REQ_TEXT 512 /* bytes kept of a request's path or query (longer: cut, "truncated") */

/* One request, at its end. Strings are the target's (escape before showing). */
struct watch_request {
	char method[16];
	char path[WATCH_REQ_TEXT];
	char query[WATCH_REQ_TEXT];
	char trace_id[64];
	int status;        /* -1: not reported */
	double ms;         /* the hosting activity's duration; NAN: not reported */
	bool truncated;    /* a string was longer than its buffer */
};

/*
 * The provider that makes the hosting layer report each request's end:
 * Microsoft-Diagnostics-DiagnosticSource with a filter on the
 * Microsoft.AspNetCore.Hosting.HttpRequestIn activity, whose Stop event
 * carries method, path, query, status code, duration and trace id.
 */
const struct ipc_provider *watch_request_provider(void);

/*
 * Decodes ev: 0 with *out for a request's end (Activity1Stop of
 * Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop), -ENOENT for any other
 * event, -EBADMSG for a payload that does not fit its metadata.
 */
int watch_request_decode(const struct nt_event *ev, struct watch_request *out);

/*
 * Whether request q meets rule r (a request or status rule): its path
 * starts with r->path, and it was slower than the threshold (request) or its
 * status is in the rule's class (status).
 */
bool watch_request_match(const struct watch_rule *r, const struct watch_request *q);

/*
 * Names the frames of a stack the runtime recorded in the process at ep
 * (ips leaf first, as nt_event.stack): a short EventPipe session whose
 * rundown lists every method's code (JIT'd and ReadyToRun), stopped at
 * once. out gets one name a line, leaf first; a frame no method covers is
 * "[unknown]" (runs of them one line). *named counts the named frames.
 * lines: a frame with a source line is "NAME in FILE:line N" (lib/srcline;
 * the rundown then carries the IL-to-native maps).
 * stop: the caller's flag. Returns 0 or a negative errno (the session
 * could not run, the stream was damaged).
 */
int watch_stack_name(const struct ipc_endpoint *ep, const uint64_t *ips, uint32_t n, bool lines,
		     volatile sig_atomic_t *stop, struct strbuf *out, uint32_t *named);

#endif
