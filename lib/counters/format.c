/* SPDX-License-Identifier: MIT */
/*
 * format.c - counter values as people read them (the screen: times in the
 * unit that fits, thousands separators in the table) and as files keep
 * them (exact), for `clrtap counters` and whoever shows counters.
 */
#include "common/compat.h"

#include <math.h>

#include "counters/counters.h"

static void fmt_value(double v, char *buf, size_t len)
{
	if (isnan(v) || isinf(v))
		snprintf(buf, len, "%s", isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else if (fabs(v) >= 1000)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.4g", v);
}

/* The table's rendering: integers get thousands separators. */
static void fmt_table_value(double v, char *buf, size_t len)
{
	char raw[64];
	size_t n, i, o = 0, lead;

	fmt_value(v, raw, sizeof(raw));
	n = strlen(raw);
	if (strspn(raw + (raw[0] == '-'), "0123456789") != n - (raw[0] == '-') || n + n / 3 + 1 > len) {
		snprintf(buf, len, "%s", raw);
		return;
	}
	lead = raw[0] == '-';
	for (i = 0; i < n; i++) {
		buf[o++] = raw[i];
		if (i >= lead && i + 1 < n && (n - 1 - i) % 3 == 0)
			buf[o++] = ',';
	}
	buf[o] = 0;
}

/* Exact text for files: enough digits to round-trip. */
void counters_fmt_exact(double v, char *buf, size_t len)
{
	if (isnan(v) || isinf(v))
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "%.17g", v);
}

/* "B", "B/1s" (a delta over the interval), "%", "" */
static void fmt_units(const char *units, enum counters_kind kind, double interval, char *buf,
		      size_t len)
{
	if (kind == COUNTERS_DELTA)
		snprintf(buf, len, "%s/%gs", *units ? units : "count", interval);
	else
		snprintf(buf, len, "%s", units);
}

/*
 * On screen, times read in the unit that fits: 7.272e-05 s is 72.7 µs. *v
 * and *units are rescaled for seconds and milliseconds below 1; files keep
 * the exact value in the source's unit.
 */
static void scale_time(double *v, const char **units)
{
	static const struct {
		const char *from, *to;
		double factor, below;
	} steps[] = {
		{ "s", "ms", 1e3, 1.0 }, { "ms", "\xc2\xb5s", 1e3, 1.0 }, { "\xc2\xb5s", "ns", 1e3, 1.0 },
	};
	size_t i;

	if (*v == 0 || isnan(*v) || isinf(*v))
		return;
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		if (!strcmp(*units, steps[i].from) && fabs(*v) < steps[i].below) {
			*v *= steps[i].factor;
			*units = steps[i].to;
		}
	}
}

/* A value and its units as shown on screen (lines and table). */
void counters_fmt_display(double v, const char *units, enum counters_kind kind, double interval,
			bool table, char *num, size_t nlen, char *ubuf, size_t ulen)
{
	if (kind != COUNTERS_DELTA)
		scale_time(&v, &units);
	if (table)
		fmt_table_value(v, num, nlen);
	else
		fmt_value(v, num, nlen);
	fmt_units(units, kind, interval, ubuf, ulen);
}

void counters_series_label(const char *name, const char *tags, char *buf, size_t len)
{
	if (*tags)
		snprintf(buf, len, "%s[%s]", name, tags);
	else
		snprintf(buf, len, "%s", name);
}

