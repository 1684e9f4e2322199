/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the request parsing of lib/serve: the first byte
 * picks what the rest is: a URL path for the router (and the name checks),
 * a POST /api/v1/sessions body (then its task's arguments are checked from
 * it, serve_session_args), or a listen address / bearer header /
 * Host, Origin and Content-Type headers (the browser-facing checks).
 * Seeds: tests/data/serve/.
 */
#include "common/compat.h"

#include "serve/serve.h"
#include "task/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	uint8_t pick;

	if (size < 1)
		return 0;
	pick = data[0] % 3;
	data++;
	size--;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (pick == 0) {
		struct serve_route r;

		if (serve_route_match(s, &r) == 0 && r.id == SERVE_R_ARTIFACT &&
		    !serve_artifact_name_valid(r.name))
			__builtin_trap();
		(void)serve_asset_path_valid(s);
	} else if (pick == 1) {
		struct serve_session_req req;
		struct task_args a;
		const char *why;
		char buf[256];

		if (serve_session_req_parse((const char *)data, size, &req, &why) == 0) {
			(void)serve_session_args(&req, &a, buf, sizeof(buf));
			task_args_release(&a);
		} else if (!why) {
			__builtin_trap();
		}
	} else {
		char host[64];
		unsigned port;

		const char *addrs[] = { "127.0.0.1", "::1" }, *allow[] = { "box.example" };
		struct serve_host_rules rules = { addrs, 2, true, allow, 1, 8477 };

		(void)serve_parse_listen(s, host, sizeof(host), &port);
		(void)serve_auth_ok(s, "0123456789abcdef0123456789abcdef");
		/* a Host the rules accept is one of the names they list */
		if (serve_host_ok(s, &rules) && !strcasestr(s, "127.0.0.1") && !strchr(s, '[') &&
		    !strcasestr(s, "localhost") && !strcasestr(s, "box.example"))
			__builtin_trap();
		(void)serve_origin_ok(s, "127.0.0.1:8477");
		(void)serve_ctype_is_json(s);
	}
	free(s);
	return 0;
}
