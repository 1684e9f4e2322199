/* SPDX-License-Identifier: MIT */
/* roots.c - retention paths (placeholder, filled below). */
#include "common/compat.h"

#include "postmortem/pm_internal.h"

int pm_root(struct pm_report *r, const char *what, struct pm_path_result *out, char *why,
	    size_t whylen)
{
	(void)r;
	(void)what;
	memset(out, 0, sizeof(*out));
	snprintf(why, whylen, "not yet");
	return -ENOSYS;
}

void pm_path_result_free(struct pm_path_result *p)
{
	size_t i;

	for (i = 0; i < p->npaths; i++)
		free(p->paths[i]);
	free(p->paths);
	free(p->counts);
	memset(p, 0, sizeof(*p));
}
