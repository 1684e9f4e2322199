/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/strparse.h"

#include <ctype.h>

int ct_parse_u64(const char *s, int base, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ct_parse_i64(const char *s, int base, int64_t *out)
{
	long long v;
	char *end;

	if (!s || !*s || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ct_parse_u32(const char *s, int base, uint32_t *out)
{
	uint64_t v;
	int err = ct_parse_u64(s, base, &v);

	if (err)
		return err;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

int ct_parse_int(const char *s, int *out)
{
	int64_t v;
	int err = ct_parse_i64(s, 10, &v);

	if (err)
		return err;
	if (v < INT_MIN || v > INT_MAX)
		return -ERANGE;
	*out = (int)v;
	return 0;
}

int ct_parse_pid(const char *s, pid_t *out)
{
	uint64_t v;
	int err = ct_parse_u64(s, 10, &v);

	if (err)
		return err;
	if (v == 0 || v > INT32_MAX)
		return -ERANGE;
	*out = (pid_t)v;
	return 0;
}

size_t ct_strlcpy(char *dst, const char *src, size_t n)
{
	size_t len = strlen(src);

	if (n) {
		size_t c = len < n - 1 ? len : n - 1;

		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return len;
}

int ct_parse_duration(const char *s, int64_t *ms)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = { { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 } };
	const int64_t max = (int64_t)30 * 86400 * 1000;
	int64_t whole = 0, frac = 0, scale = 100000; /* frac in millionths */
	const char *p = s;
	size_t i;

	if (!isdigit((unsigned char)*p))
		return -EINVAL; /* also a sign: no negative durations */
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > max)
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (!scale)
				return -EINVAL; /* more than 6 decimals */
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		int64_t v;

		if (strcmp(p, units[i].unit))
			continue;
		if (whole > max / units[i].ms)
			return -EINVAL;
		v = whole * units[i].ms;
		if (frac * units[i].ms % 1000000)
			return -EINVAL; /* finer than a millisecond */
		v += frac * units[i].ms / 1000000;
		if (v > max)
			return -EINVAL;
		*ms = v;
		return 0;
	}
	return -EINVAL;
}
