/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - a bounded cache of the System.Runtime counters of .NET
 * processes. One collector thread per process runs an EventPipe counters
 * session (lib/counters, the same calls as `clrtap counters`) at a 1 s
 * interval and keeps the latest value of each counter; a scrape of /metrics
 * or a live view only reads the cache. At most METRICS_MAX collectors; one
 * not asked for in METRICS_IDLE_MS is stopped; one whose process ended is
 * dropped. The first scrape of a new process starts its collector and waits
 * (at most METRICS_FIRST_WAIT_MS) for its first interval of values, so that
 * a scrape never shows a process without its families; one still not read
 * then is marked clrtap_dotnet_pending 1 (and clrtap_dotnet_up 0): not yet
 * measured, rather than absent.
 */
#include "common/compat.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "counters/counters.h"
#include "ipc/ipc.h"
#include "live/live.h"
#include "proc/proc.h"
#include "serve/internal.h"

#define METRICS_MAX 64
#define METRICS_IDLE_MS (10 * 60 * 1000)
#define METRICS_MAX_VALUES 256
#define METRICS_FIRST_WAIT_MS 5000 /* a new collector's first values (1 s interval) */
#define METRICS_QUIET_MS 200       /* no new counter for this long: the interval is whole */

struct mvalue {
	char name[64];
	char display[128];
	char units[32];
	enum counters_kind kind;
	double value;
	uint64_t seq;    /* collector-wide update number */
};

struct collector {
	pid_t pid;
	uint64_t starttime;
	char name[64];
	struct proc_container ctr;
	pthread_t th;
	bool running;            /* thread not joined yet */
	volatile bool ended;     /* the session is over */
	volatile sig_atomic_t stop;
	int64_t last_used;
	int64_t started_ms;
	char error[160];
	struct mvalue v[METRICS_MAX_VALUES];
	size_t nv;
	uint64_t seq;
	int64_t last_value_ms;   /* when a counter last came in (0: none yet) */
	bool fresh;              /* started by the scrape that holds it */
	struct srv_metrics *m;
	struct counters_decoder *dec;
};

struct srv_metrics {
	pthread_mutex_t lock;
	struct collector *c[METRICS_MAX];
};

int srv_metrics_new(struct srv_metrics **out)
{
	struct srv_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

static void collector_free(struct collector *c)
{
	c->stop = 1;
	if (c->running)
		pthread_join(c->th, NULL);
	counters_decoder_free(c->dec);
	free(c);
}

void srv_metrics_free(struct srv_metrics *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < METRICS_MAX; i++) {
		if (m->c[i])
			m->c[i]->stop = 1;
	}
	for (i = 0; i < METRICS_MAX; i++) {
		if (m->c[i])
			collector_free(m->c[i]);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int on_value(void *ctx, const struct counters_value *cv)
{
	struct collector *c = ctx;
	struct mvalue *mv = NULL;
	size_t i;

	if (cv->meter || strcmp(cv->source, "System.Runtime"))
		return 0;
	pthread_mutex_lock(&c->m->lock);
	for (i = 0; i < c->nv; i++) {
		if (!strcmp(c->v[i].name, cv->name)) {
			mv = &c->v[i];
			break;
		}
	}
	if (!mv && c->nv < METRICS_MAX_VALUES) {
		mv = &c->v[c->nv++];
		snprintf(mv->name, sizeof(mv->name), "%s", cv->name);
		snprintf(mv->display, sizeof(mv->display), "%s", cv->display_name);
		snprintf(mv->units, sizeof(mv->units), "%s", cv->units);
		mv->kind = cv->kind;
	}
	if (mv) {
		mv->value = cv->value;
		mv->seq = ++c->seq;
		c->last_value_ms = srv_now_ms();
	}
	pthread_mutex_unlock(&c->m->lock);
	return 0;
}

static int on_notice(void *ctx, const char *msg)
{
	return 0;
}

static const struct counters_handlers chand = { .value = on_value, .notice = on_notice };

static int on_event(void *ctx, const struct nt_event *ev)
{
	struct collector *c = ctx;
	int err = counters_decode(c->dec, ev, &chand, c);

	return err == -EBADMSG ? 0 : (err < 0 ? err : 0);
}

static void *collector_main(void *arg)
{
	struct collector *c = arg;
	struct counters_spec spec = { 0 };
	struct counters_session cs = { 0 };
	struct ipc_trace_config cfg = { 0 };
	struct live_session_opts live = { 0 };
	struct live_session_result res;
	struct nt_handlers h = { .event = on_event };
	struct proc_target t;
	struct ipc_endpoint ep;
	sigset_t set;
	int err;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	err = proc_target_find(c->pid, &t);
	if (!err)
		err = counters_spec_add(&spec, "System.Runtime", false);
	if (!err)
		err = counters_session_init(&cs, &spec, 1, 1000, 20);
	if (!err)
		err = counters_decoder_new(&c->dec, cs.session_id);
	if (err) {
		snprintf(c->error, sizeof(c->error), "%s", strerror(-err));
		goto out;
	}
	ipc_endpoint_init(&ep, &t, 5000);
	cfg.providers = cs.providers;
	cfg.nproviders = cs.nproviders;
	cfg.buffer_mb = 4;
	cfg.stackwalk = false;
	live.ep = &ep;
	live.cfg = &cfg;
	live.stop = &c->stop;
	live.h = &h;
	live.prompt = true; /* the latest values, not one flush late */
	live.ctx = c;
	err = live_session_run(&live, &res);
	if (err)
		snprintf(c->error, sizeof(c->error), "%s", strerror(-err));
	else if (res.session_err && res.session.bytes == 0)
		ipc_strerror(res.session_err, &res.rerr, c->error, sizeof(c->error));
out:
	counters_session_release(&cs);
	counters_spec_release(&spec);
	c->ended = true;
	return NULL;
}

/* Drops ended and idle collectors. Called with the lock held. */
static void sweep(struct srv_metrics *m, struct collector **dead, size_t *ndead)
{
	int64_t now = srv_now_ms();
	size_t i;

	for (i = 0; i < METRICS_MAX; i++) {
		struct collector *c = m->c[i];

		if (!c)
			continue;
		/* ended: keep it 5 s so that an error can be seen, then drop */
		if ((c->ended && now - c->last_used > 5000) || now - c->last_used > METRICS_IDLE_MS) {
			c->stop = 1;
			dead[(*ndead)++] = c;
			m->c[i] = NULL;
		}
	}
}

/* The collector of pid (started if needed). Called with the lock held. */
static struct collector *get(struct srv_metrics *m, pid_t pid, int *errp)
{
	struct proc_target t;
	struct collector *c;
	size_t i, slot = METRICS_MAX;
	int err;

	for (i = 0; i < METRICS_MAX; i++) {
		c = m->c[i];
		if (c && c->pid == pid && !c->ended) {
			c->last_used = srv_now_ms();
			return c;
		}
		if (!c && slot == METRICS_MAX)
			slot = i;
	}
	err = proc_target_find(pid, &t);
	if (err) {
		*errp = err;
		return NULL;
	}
	if (slot == METRICS_MAX) {
		*errp = -EBUSY;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		*errp = -ENOMEM;
		return NULL;
	}
	c->pid = pid;
	c->starttime = t.starttime;
	c->m = m;
	c->last_used = c->started_ms = srv_now_ms();
	srv_proc_name(pid, c->name, sizeof(c->name));
	(void)proc_container(pid, &c->ctr);
	err = pthread_create(&c->th, NULL, collector_main, c);
	if (err) {
		free(c);
		*errp = -err;
		return NULL;
	}
	c->running = true;
	c->fresh = true;
	m->c[slot] = c;
	return c;
}

static void reap(struct collector **dead, size_t ndead)
{
	size_t i;

	for (i = 0; i < ndead; i++)
		collector_free(dead[i]);
}

/* Prometheus metric names: clrtap_dotnet_<counter with [a-z0-9_]>. */
static void metric_name(const char *counter, char *out, size_t len)
{
	size_t o = 0;
	int n = snprintf(out, len, "clrtap_dotnet_");

	o = (size_t)n;
	for (; *counter && o + 1 < len; counter++) {
		char ch = *counter;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
			out[o++] = ch;
		else if (ch >= 'A' && ch <= 'Z')
			out[o++] = (char)(ch - 'A' + 'a');
		else
			out[o++] = '_';
	}
	out[o] = 0;
}

/* A label value: backslash, double quote and newline escaped. */
static void label(struct strbuf *out, const char *key, const char *v, bool last)
{
	strbuf_addf(out, "%s=\"", key);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			strbuf_addch(out, '\\'), strbuf_addch(out, *v);
		else if (*v == '\n')
			strbuf_addstr(out, "\\n");
		else
			strbuf_addch(out, *v);
	}
	strbuf_addf(out, "\"%s", last ? "" : ",");
}

static void labels(struct strbuf *out, const struct collector *c)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)c->pid);
	strbuf_addch(out, '{');
	label(out, "pid", pid, false);
	label(out, "process", c->name, false);
	label(out, "container_id", c->ctr.id, false);
	label(out, "pod_uid", c->ctr.pod, true);
	strbuf_addch(out, '}');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether a collector's first interval is in (or it ended). Lock held. */
static bool first_in(const struct collector *c, int64_t now)
{
	return c->ended || (c->last_value_ms && now - c->last_value_ms >= METRICS_QUIET_MS);
}

/*
 * The collectors this scrape started: waits, the lock released, until each
 * has its first whole interval, ended, or METRICS_FIRST_WAIT_MS passed. They
 * stay valid meanwhile: sweep() drops only collectors unused for 5 s (ended)
 * or 10 minutes, and last_used is renewed here. Called with the lock held.
 */
static void wait_first_values(struct srv_metrics *m, struct collector **cs, size_t nc)
{
	int64_t t0 = srv_now_ms();
	size_t i;
	bool any = false;

	for (i = 0; i < nc; i++)
		any |= cs[i]->fresh;
	while (any) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		int64_t now;

		pthread_mutex_unlock(&m->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&m->lock);
		now = srv_now_ms();
		any = false;
		for (i = 0; i < nc; i++) {
			if (!cs[i]->fresh)
				continue;
			cs[i]->last_used = now;
			if (first_in(cs[i], now) || now - t0 >= METRICS_FIRST_WAIT_MS)
				cs[i]->fresh = false;
			else
				any = true;
		}
	}
}

int srv_metrics_prometheus(struct srv_metrics *m, const pid_t *only, size_t n_only,
			   struct strbuf *out)
{
	pid_t all[1024];
	const pid_t *pids = only;
	size_t n = n_only, i, k, ndead = 0, nc = 0, nnames = 0;
	struct collector *dead[METRICS_MAX], *cs[METRICS_MAX];
	const char *names[METRICS_MAX_VALUES];
	int err;

	if (!n_only) {
		err = srv_procs_pids(all, ARRAY_SIZE(all), &n);
		if (err)
			return err;
		pids = all;
	}
	pthread_mutex_lock(&m->lock);
	sweep(m, dead, &ndead);
	for (i = 0; i < n; i++) {
		int e = 0;
		struct collector *c = get(m, pids[i], &e);

		if (c)
			cs[nc++] = c;
		if (nc == METRICS_MAX)
			break;
	}
	wait_first_values(m, cs, nc);
	strbuf_addstr(out, "# HELP clrtap_dotnet_up 1 when clrtap reads the process's System.Runtime "
			   "counters\n# TYPE clrtap_dotnet_up gauge\n");
	for (i = 0; i < nc; i++) {
		strbuf_addstr(out, "clrtap_dotnet_up");
		labels(out, cs[i]);
		strbuf_addf(out, " %d\n", !cs[i]->ended && cs[i]->nv ? 1 : 0);
	}
	strbuf_addstr(out, "# HELP clrtap_dotnet_pending 1 while clrtap's collector of the process has "
			   "not read its first counters yet: its families are not measured yet, not "
			   "absent\n# TYPE clrtap_dotnet_pending gauge\n");
	for (i = 0; i < nc; i++) {
		strbuf_addstr(out, "clrtap_dotnet_pending");
		labels(out, cs[i]);
		strbuf_addf(out, " %d\n", !cs[i]->ended && !cs[i]->nv ? 1 : 0);
	}
	/* every counter name seen, then one family each (Prometheus wants families together) */
	for (i = 0; i < nc; i++) {
		for (k = 0; k < cs[i]->nv; k++) {
			size_t x;

			for (x = 0; x < nnames && strcmp(names[x], cs[i]->v[k].name); x++)
				;
			if (x == nnames && nnames < ARRAY_SIZE(names))
				names[nnames++] = cs[i]->v[k].name;
		}
	}
	qsort(names, nnames, sizeof(names[0]), cmp_str);
	for (k = 0; k < nnames; k++) {
		char mname[160];
		bool head = false;

		metric_name(names[k], mname, sizeof(mname));
		for (i = 0; i < nc; i++) {
			size_t x;

			for (x = 0; x < cs[i]->nv && strcmp(cs[i]->v[x].name, names[k]); x++)
				;
			if (x == cs[i]->nv || isnan(cs[i]->v[x].value) || isinf(cs[i]->v[x].value))
				continue;
			if (!head) {
				const char *d = cs[i]->v[x].display;

				strbuf_addf(out, "# HELP %s %s (System.Runtime %s", mname, *d ? d : names[k],
					    names[k]);
				if (*cs[i]->v[x].units)
					strbuf_addf(out, ", %s", cs[i]->v[x].units);
				strbuf_addf(out, "%s)\n# TYPE %s gauge\n",
					    cs[i]->v[x].kind == COUNTERS_DELTA ? ", per interval" : "", mname);
				head = true;
			}
			strbuf_addstr(out, mname);
			labels(out, cs[i]);
			strbuf_addf(out, " %.17g\n", cs[i]->v[x].value);
		}
	}
	pthread_mutex_unlock(&m->lock);
	reap(dead, ndead);
	return strbuf_error(out);
}

int srv_metrics_updates(struct srv_metrics *m, pid_t pid, uint64_t *seq, double t,
			struct strbuf *out)
{
	struct collector *dead[METRICS_MAX], *c;
	size_t ndead = 0, i;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	sweep(m, dead, &ndead);
	c = get(m, pid, &err);
	if (c) {
		uint64_t top = *seq;

		for (i = 0; i < c->nv; i++) {
			struct ct_json j;
			struct mvalue *v = &c->v[i];

			if (v->seq <= *seq)
				continue;
			top = CT_MAX(top, v->seq);
			ct_json_init(&j, out);
			ct_json_obj_begin(&j);
			ct_json_kv_double(&j, "t", t);
			ct_json_kv_i64(&j, "pid", pid);
			ct_json_kv_str(&j, "provider", "System.Runtime");
			ct_json_kv_str(&j, "name", v->name);
			ct_json_kv_str(&j, "display", v->display);
			ct_json_key(&j, "value");
			if (isnan(v->value) || isinf(v->value))
				ct_json_null(&j);
			else
				ct_json_double(&j, v->value);
			ct_json_kv_str(&j, "unit", v->units);
			ct_json_kv_str(&j, "kind", counters_kind_name(v->kind));
			ct_json_obj_end(&j);
			if (ct_json_finish(&j))
				err = -ENOMEM;
			strbuf_addch(out, '\n');
		}
		*seq = top;
	}
	pthread_mutex_unlock(&m->lock);
	reap(dead, ndead);
	return err;
}
