/* SPDX-License-Identifier: MIT */
/*
 * flame_line.c - a frame name that carries its source line,
 * "NAME in FILE:line N" (as `trace report --lines` names frames), split for
 * the formats that have fields for them (pprof Function.filename/Line.line,
 * speedscope file/line).
 */
#include "common/compat.h"

#include "flame/flame_int.h"

bool flame_name_line(const char *s, size_t len, size_t *name_len, const char **file,
		     size_t *file_len, uint32_t *line)
{
	static const char tag[] = ":line ";
	const char *in = NULL, *p, *t;
	uint64_t v = 0;
	size_t i;

	/* the digits at the end */
	for (i = len; i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9'; i--)
		;
	if (i == len || len - i > 9 || i < sizeof(tag) - 1)
		return false;
	t = s + i - (sizeof(tag) - 1);
	if (memcmp(t, tag, sizeof(tag) - 1))
		return false;
	/* the first " in " (a managed method name has no spaces, a path may) */
	for (p = s; p + 4 <= t && !in; p++)
		if (!memcmp(p, " in ", 4))
			in = p;
	if (!in || in == s || in + 4 == t)
		return false;
	for (p = s + i; p < s + len; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (v == 0 || v > UINT32_MAX)
		return false;
	*name_len = (size_t)(in - s);
	*file = in + 4;
	*file_len = (size_t)(t - (in + 4));
	*line = (uint32_t)v;
	return true;
}
