/* SPDX-License-Identifier: MIT */
/*
 * counters.c - counter specs, the providers of a counters session, decoding
 * of EventCounters and MetricsEventSource events, and the latest-value table.
 */
#include "common/compat.h"

#include <math.h>
#include <sys/random.h>

#include "common/strbuf.h"
#include "counters/counters.h"

/* ------------------------------------------------------------------------ */
/* Specs                                                                     */

/* Characters a name may not contain: the spec's own syntax, the provider
 * argument syntax (;="), the Metrics filter's instrument separator, controls. */
static bool name_char_ok(unsigned char c)
{
	return c >= 0x20 && c != 0x7f && !strchr(",[];=\"\\", c);
}

static int check_name(const char *p, size_t len)
{
	size_t i;

	if (len == 0)
		return -EINVAL;
	if (len >= COUNTERS_MAX_NAME_LEN)
		return -E2BIG;
	for (i = 0; i < len; i++)
		if (!name_char_ok((unsigned char)p[i]))
			return -EINVAL;
	if (p[0] == ' ' || p[len - 1] == ' ')
		return -EINVAL;
	return 0;
}

static struct counters_source *find_source(struct counters_spec *s, const char *name, size_t len,
					   bool meter)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].meter == meter && strlen(s->v[i].name) == len &&
		    !memcmp(s->v[i].name, name, len))
			return &s->v[i];
	return NULL;
}

static int source_add_name(struct counters_source *src, const char *p, size_t len)
{
	char **nv;
	size_t i;

	for (i = 0; i < src->nnames; i++)
		if (strlen(src->names[i]) == len && !memcmp(src->names[i], p, len))
			return 0;
	if (src->nnames >= COUNTERS_MAX_NAMES)
		return -E2BIG;
	nv = realloc(src->names, (src->nnames + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	src->names = nv;
	nv[src->nnames] = strndup(p, len);
	if (!nv[src->nnames])
		return -ENOMEM;
	src->nnames++;
	return 0;
}

int counters_spec_add(struct counters_spec *s, const char *text, bool meter)
{
	const char *p = text;
	int err;

	if (!text || !*text)
		return -EINVAL;
	for (;;) {
		const char *start = p;
		struct counters_source *src;
		bool all = false, fresh = false;
		size_t len;

		while (*p && *p != ',' && *p != '[')
			p++;
		len = (size_t)(p - start);
		err = check_name(start, len);
		if (err)
			return err;
		src = find_source(s, start, len, meter);
		if (!src) {
			struct counters_source *nv;

			if (s->n >= COUNTERS_MAX_SOURCES)
				return -E2BIG;
			nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			s->v = nv;
			src = &s->v[s->n];
			memset(src, 0, sizeof(*src));
			src->meter = meter;
			src->name = strndup(start, len);
			if (!src->name)
				return -ENOMEM;
			s->n++;
			fresh = true;
		}
		if (*p == '[') {
			p++;
			for (;;) {
				const char *ns = p;

				while (*p && *p != ',' && *p != ']')
					p++;
				if (!*p)
					return -EINVAL;
				err = check_name(ns, (size_t)(p - ns));
				if (err)
					return err;
				/* A source already kept whole stays whole. */
				if (fresh || src->nnames) {
					err = source_add_name(src, ns, (size_t)(p - ns));
					if (err)
						return err;
				}
				if (*p++ == ']')
					break;
			}
			if (*p && *p != ',')
				return -EINVAL;
		} else {
			all = true;
		}
		if (all && !fresh) {
			/* Given again without a list: keep every name. */
			size_t i;

			for (i = 0; i < src->nnames; i++)
				free(src->names[i]);
			FREE_AND_NULL(src->names);
			src->nnames = 0;
		}
		if (!*p)
			return 0;
		p++; /* the comma */
	}
}

void counters_spec_release(struct counters_spec *s)
{
	size_t i, j;

	for (i = 0; i < s->n; i++) {
		for (j = 0; j < s->v[i].nnames; j++)
			free(s->v[i].names[j]);
		free(s->v[i].names);
		free(s->v[i].name);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

bool counters_spec_wants(const struct counters_spec *s, bool meter, const char *source,
			 const char *name)
{
	size_t i, j;

	for (i = 0; i < s->n; i++) {
		const struct counters_source *src = &s->v[i];

		if (src->meter != meter || strcmp(src->name, source))
			continue;
		if (!src->nnames)
			return true;
		for (j = 0; j < src->nnames; j++)
			if (!strcmp(src->names[j], name))
				return true;
	}
	return false;
}

/* ------------------------------------------------------------------------ */
/* Session providers                                                         */

static int make_guid(char *out, size_t len)
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, len,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return 0;
}

int counters_session_init(struct counters_session *out, const struct counters_spec *s,
			  unsigned interval_sec, unsigned max_time_series, unsigned max_histograms)
{
	size_t i, nes = 0, nmeters = 0, k = 0;
	size_t *offs;
	int err = 0;

	memset(out, 0, sizeof(*out));
	strbuf_init(&out->args, 1 << 20);
	if (interval_sec < 1 || interval_sec > 86400)
		return -EINVAL;
	for (i = 0; i < s->n; i++) {
		if (s->v[i].meter)
			nmeters++;
		else
			nes++;
	}
	if (nes + nmeters == 0)
		return -EINVAL;
	out->providers = calloc(nes + 1, sizeof(*out->providers));
	offs = calloc(nes + 1, sizeof(*offs));
	if (!out->providers || !offs) {
		free(offs);
		counters_session_release(out);
		return -ENOMEM;
	}
	/* Arguments go into one buffer first; pointers are taken once it stops moving. */
	for (i = 0; i < s->n && !err; i++) {
		if (s->v[i].meter)
			continue;
		offs[k] = out->args.len;
		out->providers[k].name = s->v[i].name;
		out->providers[k].keywords = 0;
		out->providers[k].level = 4;
		err = strbuf_addf(&out->args, "EventCounterIntervalSec=%u", interval_sec);
		if (!err)
			err = strbuf_add(&out->args, "", 1);
		k++;
	}
	if (!err && nmeters) {
		bool first = true;

		err = make_guid(out->session_id, sizeof(out->session_id));
		offs[k] = out->args.len;
		if (!err)
			err = strbuf_addf(&out->args, "SessionId=%s;Metrics=", out->session_id);
		for (i = 0; i < s->n && !err; i++) {
			if (!s->v[i].meter)
				continue;
			err = strbuf_addf(&out->args, "%s%s", first ? "" : ",", s->v[i].name);
			first = false;
		}
		if (!err)
			err = strbuf_addf(&out->args, ";RefreshInterval=%u;MaxTimeSeries=%u;MaxHistograms=%u",
					  interval_sec, max_time_series ? max_time_series : 1000,
					  max_histograms ? max_histograms : 20);
		if (!err)
			err = strbuf_add(&out->args, "", 1);
		out->providers[k].name = COUNTERS_METRICS_PROVIDER;
		out->providers[k].keywords = 0x2; /* TimeSeriesValues */
		out->providers[k].level = 4;
		k++;
	}
	if (err) {
		free(offs);
		counters_session_release(out);
		return err;
	}
	for (i = 0; i < k; i++)
		out->providers[i].arguments = out->args.buf + offs[i];
	out->nproviders = k;
	free(offs);
	return 0;
}

void counters_session_release(struct counters_session *cs)
{
	free(cs->providers);
	cs->providers = NULL;
	cs->nproviders = 0;
	strbuf_release(&cs->args);
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

const char *counters_kind_name(enum counters_kind k)
{
	switch (k) {
	case COUNTERS_MEAN:
		return "mean";
	case COUNTERS_DELTA:
		return "delta";
	case COUNTERS_GAUGE:
		return "gauge";
	case COUNTERS_QUANTILE:
		return "quantile";
	}
	return "?";
}

/* MetricsEventSource's string fields this decoder keeps. */
enum mfield {
	MF_SESSION,
	MF_METER,
	MF_INSTRUMENT,
	MF_UNIT,
	MF_TAGS,
	MF_RATE,
	MF_VALUE,
	MF_LAST,
	MF_QUANTILES,
	MF_MESSAGE,
	MF_RUNNING,
	MF_N
};

static const char *const mfield_names[MF_N] = {
	"sessionId", "meterName", "instrumentName", "unit", "tags", "rate",
	"value", "lastValue", "quantiles", "errorMessage", "runningSessionId",
};

struct counters_decoder {
	char *session_id;
	struct strbuf sb;   /* EventCounters strings; meter strings */
	struct strbuf tags; /* histogram tags with the percentile */
	struct strbuf msg;
	/* meter walk state */
	size_t off[MF_N];
	double sum;
	int64_t count;
	bool has_count;
};

int counters_decoder_new(struct counters_decoder **out, const char *session_id)
{
	struct counters_decoder *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	if (session_id && *session_id) {
		d->session_id = strdup(session_id);
		if (!d->session_id) {
			free(d);
			return -ENOMEM;
		}
	}
	strbuf_init(&d->sb, (size_t)MF_N * (COUNTERS_MAX_STRING + 1) + 1024);
	strbuf_init(&d->tags, COUNTERS_MAX_STRING + 64);
	strbuf_init(&d->msg, COUNTERS_MAX_STRING + 256);
	*out = d;
	return 0;
}

void counters_decoder_free(struct counters_decoder *d)
{
	if (!d)
		return;
	strbuf_release(&d->sb);
	strbuf_release(&d->tags);
	strbuf_release(&d->msg);
	free(d->session_id);
	free(d);
}

int counters_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "NaN")) {
		*out = NAN;
		return 0;
	}
	if (!strcmp(s, "Infinity") || !strcmp(s, "\xe2\x88\x9e")) {
		*out = INFINITY;
		return 0;
	}
	if (!strcmp(s, "-Infinity") || !strcmp(s, "-\xe2\x88\x9e")) {
		*out = -INFINITY;
		return 0;
	}
	/* strtod takes more than .NET writes (hex, "inf", leading spaces): refuse those. */
	if (!strchr("+-0123456789.", s[0]) || strpbrk(s, "xXiInN"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)))
		return -EINVAL;
	*out = v;
	return 0;
}

static int meter_cb(void *ctx, const struct nt_value *v)
{
	struct counters_decoder *d = ctx;
	const char *n = v->field->name;
	int i, err;

	if (v->kind != NT_V_SCALAR || v->depth != 0 || !n)
		return 0;
	if (v->field->type == NT_T_STRING) {
		size_t start = d->sb.len;

		for (i = 0; i < MF_N; i++)
			if (!strcmp(n, mfield_names[i]))
				break;
		if (i == MF_N)
			return 0;
		if (v->str.nunits > COUNTERS_MAX_STRING)
			return -EBADMSG;
		err = nt_str16_utf8(&v->str, &d->sb);
		if (!err)
			err = strbuf_add(&d->sb, "", 1);
		if (err)
			return err == -EMSGSIZE ? -EBADMSG : err;
		d->off[i] = start;
		return 0;
	}
	if (!strcmp(n, "count") && (v->field->type == NT_T_I32 || v->field->type == NT_T_I64 ||
				    v->field->type == NT_T_U32 || v->field->type == NT_T_U64)) {
		d->count = v->i;
		d->has_count = true;
	} else if (!strcmp(n, "sum") && (v->field->type == NT_T_F64 || v->field->type == NT_T_F32)) {
		d->sum = v->f;
	}
	return 0;
}

static const char *mstr(const struct counters_decoder *d, enum mfield f)
{
	return d->off[f] == SIZE_MAX ? NULL : d->sb.buf + d->off[f];
}

static int notice(struct counters_decoder *d, const struct counters_handlers *h, void *ctx,
		  const char *fmt, ...) PRINTF(4, 5);
static int notice(struct counters_decoder *d, const struct counters_handlers *h, void *ctx,
		  const char *fmt, ...)
{
	va_list ap;
	int err;

	if (!h->notice)
		return 0;
	strbuf_reset(&d->msg);
	va_start(ap, fmt);
	err = strbuf_vaddf(&d->msg, fmt, ap);
	va_end(ap);
	if (err && err != -EMSGSIZE)
		return err;
	return h->notice(ctx, d->msg.buf);
}

/* "0.5=12;0.95=30.5;0.99=41" -> one QUANTILE value per pair. */
static int emit_quantiles(struct counters_decoder *d, struct counters_value *cv,
			  const char *base_tags, const char *q, const struct counters_handlers *h,
			  void *ctx)
{
	char buf[128];
	int n = 0, err;

	while (*q) {
		const char *semi = strchr(q, ';'), *eq;
		size_t len = semi ? (size_t)(semi - q) : strlen(q);
		double pct, val;

		if (len >= sizeof(buf) || n >= COUNTERS_MAX_QUANTILES)
			return -EBADMSG;
		memcpy(buf, q, len);
		buf[len] = 0;
		eq = strchr(buf, '=');
		if (!eq)
			return -EBADMSG;
		buf[eq - buf] = 0;
		if (counters_parse_double(buf, &pct) || counters_parse_double(eq + 1, &val))
			return -EBADMSG;
		strbuf_reset(&d->tags);
		err = strbuf_addf(&d->tags, "%s%sPercentile=%g", base_tags, *base_tags ? "," : "",
				  pct * 100.0);
		if (err)
			return err == -EMSGSIZE ? -EBADMSG : err;
		cv->tags = d->tags.buf;
		cv->value = val;
		if (h->value) {
			err = h->value(ctx, cv);
			if (err)
				return err;
		}
		n++;
		q += len;
		if (*q)
			q++;
	}
	return n;
}

static int decode_meter(struct counters_decoder *d, const struct nt_event *ev,
			const struct counters_handlers *h, void *ctx)
{
	const struct nt_metadata *m = ev->meta;
	const char *ev_name = m->event_name, *sid, *s;
	struct counters_value cv;
	enum counters_kind kind;
	enum mfield vf;
	int i, err;

	strbuf_reset(&d->sb);
	for (i = 0; i < MF_N; i++)
		d->off[i] = SIZE_MAX;
	d->has_count = false;
	d->count = 0;
	d->sum = 0;
	err = nt_payload_walk(m, ev->payload, ev->payload_len, ev->pointer_size, meter_cb, d);
	if (err)
		return err == -ENOTSUP ? -EBADMSG : err;
	sid = mstr(d, MF_SESSION);
	if (!strcmp(ev_name, "MultipleSessionsNotSupportedError")) {
		s = mstr(d, MF_RUNNING);
		return notice(d, h, ctx,
			      "another tool already has a metrics session in this process (session %s): "
			      "meters cannot be read now",
			      s ? s : "?");
	}
	if (!strcmp(ev_name, "MultipleSessionsConfiguredIncorrectlyError"))
		return notice(d, h, ctx,
			      "another metrics session in this process uses different settings: "
			      "meters cannot be read now");
	/* Everything below belongs to one session. */
	if (d->session_id && (!sid || strcmp(sid, d->session_id)))
		return 0;
	if (!strcmp(ev_name, "Error") || !strcmp(ev_name, "ObservableInstrumentCallbackError")) {
		s = mstr(d, MF_MESSAGE);
		return notice(d, h, ctx, "metrics: %s", s ? s : "error");
	}
	if (!strcmp(ev_name, "TimeSeriesLimitReached"))
		return notice(d, h, ctx, "metrics: the time-series limit was reached; some series are not reported");
	if (!strcmp(ev_name, "HistogramLimitReached"))
		return notice(d, h, ctx, "metrics: the histogram limit was reached; some histograms are not reported");

	if (!strcmp(ev_name, "CounterRateValuePublished")) {
		kind = COUNTERS_DELTA;
		vf = MF_RATE;
	} else if (!strcmp(ev_name, "UpDownCounterRateValuePublished")) {
		kind = COUNTERS_GAUGE;
		vf = MF_VALUE;
	} else if (!strcmp(ev_name, "GaugeValuePublished")) {
		kind = COUNTERS_GAUGE;
		vf = MF_LAST;
	} else if (!strcmp(ev_name, "HistogramValuePublished")) {
		kind = COUNTERS_QUANTILE;
		vf = MF_QUANTILES;
	} else {
		return 0; /* CollectionStart/Stop, BeginInstrumentReporting, ... */
	}
	if (!mstr(d, MF_METER) || !mstr(d, MF_INSTRUMENT))
		return -EBADMSG;
	memset(&cv, 0, sizeof(cv));
	cv.meter = true;
	cv.source = mstr(d, MF_METER);
	cv.name = mstr(d, MF_INSTRUMENT);
	cv.display_name = "";
	cv.units = mstr(d, MF_UNIT) ? mstr(d, MF_UNIT) : "";
	cv.tags = mstr(d, MF_TAGS) ? mstr(d, MF_TAGS) : "";
	cv.kind = kind;
	cv.timestamp = ev->timestamp;
	s = mstr(d, vf);
	if (kind == COUNTERS_QUANTILE)
		return s ? emit_quantiles(d, &cv, cv.tags, s, h, ctx) : -EBADMSG;
	/* An observable counter's first collection has no rate yet (empty). */
	if (!s || !*s)
		return 0;
	if (counters_parse_double(s, &cv.value))
		return -EBADMSG;
	if (h->value) {
		err = h->value(ctx, &cv);
		if (err)
			return err;
	}
	return 1;
}

int counters_decode(struct counters_decoder *d, const struct nt_event *ev,
		    const struct counters_handlers *h, void *ctx)
{
	const struct nt_metadata *m = ev->meta;
	struct counters_value cv;
	struct nt_counter c;
	int err;

	if (!m || m->provider_kind != NT_PROV_OTHER || (m->flags & NT_META_BAD_FIELDS))
		return 0;
	if (!strcmp(m->provider, COUNTERS_METRICS_PROVIDER))
		return decode_meter(d, ev, h, ctx);
	if (strcmp(m->event_name, "EventCounters"))
		return 0;
	err = nt_counter_decode(m, ev->payload, ev->payload_len, ev->pointer_size, &c, &d->sb);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err == -EMSGSIZE ? -EBADMSG : err;
	memset(&cv, 0, sizeof(cv));
	cv.source = m->provider;
	cv.name = c.name;
	cv.display_name = c.display_name;
	cv.units = c.units;
	cv.tags = "";
	cv.kind = c.is_rate ? COUNTERS_DELTA : COUNTERS_MEAN;
	cv.value = c.value;
	cv.interval_sec = c.interval_sec;
	cv.timestamp = ev->timestamp;
	if (h->value) {
		err = h->value(ctx, &cv);
		if (err)
			return err;
	}
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                     */

static int series_cmp(const struct counters_series *s, const struct counters_value *v)
{
	int c;

	if (s->meter != v->meter)
		return s->meter ? 1 : -1;
	c = strcmp(s->source, v->source);
	if (!c)
		c = strcmp(s->name, v->name);
	if (!c)
		c = strcmp(s->tags, v->tags);
	return c;
}

static int dup_into(char **dst, const char *src)
{
	char *n;

	if (*dst && !strcmp(*dst, src))
		return 0;
	n = strdup(src);
	if (!n)
		return -ENOMEM;
	free(*dst);
	*dst = n;
	return 0;
}

int counters_table_update(struct counters_table *t, const struct counters_value *v)
{
	size_t lo = 0, hi = t->n;
	struct counters_series *s;
	int err;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = series_cmp(&t->v[mid], v);

		if (c == 0) {
			lo = mid;
			goto found;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (t->n >= COUNTERS_MAX_SERIES)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 32;
		struct counters_series *nv = realloc(t->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = ncap;
	}
	memmove(&t->v[lo + 1], &t->v[lo], (t->n - lo) * sizeof(*t->v));
	s = &t->v[lo];
	memset(s, 0, sizeof(*s));
	s->meter = v->meter;
	if (!(s->source = strdup(v->source)) || !(s->name = strdup(v->name)) ||
	    !(s->tags = strdup(v->tags))) {
		free(s->source);
		free(s->name);
		free(s->tags);
		memmove(&t->v[lo], &t->v[lo + 1], (t->n - lo) * sizeof(*t->v));
		return -ENOMEM;
	}
	t->n++;
found:
	s = &t->v[lo];
	err = dup_into(&s->display_name, v->display_name);
	if (!err)
		err = dup_into(&s->units, v->units);
	if (err)
		return err;
	s->kind = v->kind;
	s->value = v->value;
	s->interval_sec = v->interval_sec;
	s->timestamp = v->timestamp;
	s->updates++;
	return 0;
}

void counters_table_release(struct counters_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->v[i].source);
		free(t->v[i].name);
		free(t->v[i].display_name);
		free(t->v[i].units);
		free(t->v[i].tags);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}
