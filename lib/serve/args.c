/* SPDX-License-Identifier: MIT */
/*
 * args.c - a session request becomes a task's arguments: the kind is a task
 * of the table (lib/task), every param is checked by the task's own
 * parameter list (type, bounds, characters); a CLI-only param (an output
 * path) is refused. Nothing of the request becomes a command line or a path.
 */
#include "common/compat.h"

#include <pthread.h>

#include "serve/serve.h"
#include "task/task.h"

static char kinds[1024];
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void kinds_build(void)
{
	const struct task *const *all;
	size_t n, i, at = 0;

	all = task_all(&n);
	for (i = 0; i < n && at < sizeof(kinds); i++)
		at += (size_t)snprintf(kinds + at, sizeof(kinds) - at, "%s%s", i ? ", " : "", all[i]->name);
}

const char *serve_kinds(void)
{
	pthread_once(&kinds_once, kinds_build);
	return kinds;
}

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), -EINVAL)

int serve_session_args(const struct serve_session_req *req, struct task_args *a, char *why, size_t why_len)
{
	const struct task *t = task_find(req->kind);
	size_t i, k;
	int err;

	memset(a, 0, sizeof(*a));
	if (!t)
		return WHY("unknown kind (kinds: %s)", serve_kinds());
	if ((err = task_args_init(a, t, req->pid)))
		return WHY("the %s task's defaults are broken", t->name);
	for (i = 0; i < req->nparams; i++) {
		const struct serve_param *p = &req->params[i];

		for (k = 0; k < t->nparams; k++)
			if (!strcmp(t->params[k].name, p->key))
				break;
		if (k == t->nparams || (t->params[k].flags & TASK_PF_CLI_ONLY)) {
			char names[512];
			size_t at = 0, m;

			names[0] = 0;
			for (m = 0; m < t->nparams && at < sizeof(names); m++)
				if (!(t->params[m].flags & TASK_PF_CLI_ONLY))
					at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", at ? " " : "",
							       t->params[m].name);
			return WHY("unknown param '%s' for %s (accepted: %s)", p->key, t->name, *names ? names : "none");
		}
		if ((err = task_args_set(a, p->key, p->value, why, why_len)))
			return err;
	}
	return task_args_check(a, why, why_len);
}
