/* SPDX-License-Identifier: MIT */
/*
 * openapi.c - the OpenAPI document serve answers with: lib/serve/openapi.json
 * (embedded) with the kinds and their parameters filled in from the task
 * table, so the document cannot disagree with what the server runs. The
 * template holds two markers, each a JSON string: "@TASK_NAMES@" (becomes
 * the array of the table's names: SessionRequest.kind's enum) and
 * "@TASK_TABLE@" (becomes task_table_json's object: every kind's params
 * with type, default, bounds and help).
 */
#include "common/compat.h"

#include "serve/serve.h"
#include "task/task.h"

#define M_NAMES "\"@TASK_NAMES@\""
#define M_TABLE "\"@TASK_TABLE@\""

int serve_tasks_json(struct strbuf *out)
{
	struct ct_json j;

	ct_json_init(&j, out);
	task_table_json(&j);
	return ct_json_finish(&j);
}

int serve_openapi_build(const char *tmpl, size_t len, struct strbuf *out)
{
	const struct task *const *all;
	const char *p = tmpl, *end = tmpl + len;
	size_t n, i;
	int seen = 0;

	all = task_all(&n);
	while (p < end) {
		const char *a = memmem(p, (size_t)(end - p), M_NAMES, strlen(M_NAMES));
		const char *b = memmem(p, (size_t)(end - p), M_TABLE, strlen(M_TABLE));
		const char *m = a && (!b || a < b) ? a : b;

		if (!m) {
			strbuf_add(out, p, (size_t)(end - p));
			break;
		}
		strbuf_add(out, p, (size_t)(m - p));
		if (m == a) {
			strbuf_addch(out, '[');
			for (i = 0; i < n; i++)
				strbuf_addf(out, "%s\"%s\"", i ? "," : "", all[i]->name); /* names are [a-z.] */
			strbuf_addch(out, ']');
			p = m + strlen(M_NAMES);
			seen |= 1;
		} else {
			serve_tasks_json(out);
			p = m + strlen(M_TABLE);
			seen |= 2;
		}
	}
	if (seen != 3)
		return -EINVAL; /* a template without its markers: a build error, caught by serve_test */
	return strbuf_error(out);
}
