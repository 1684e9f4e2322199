/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include "common/strparse.h"

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
