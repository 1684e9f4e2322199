/* SPDX-License-Identifier: MIT */
/*
 * export.c - one bounded queue and one thread per exporter. put() never
 * waits: past the cap (windows or bytes) the oldest window is dropped and
 * counted. A failed push is retried with exponential backoff (1 s doubling
 * to retry_max_ms) while newer windows queue behind it; a 4xx other than
 * 408/429 is the receiver refusing this window: dropped, counted as failed.
 */
#include "common/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "common/io.h"
#include "common/log.h"
#include "common/clock.h"
#include "fleet/internal.h"
#include "perf/perf.h"

struct exporter {
	enum fleet_exp_kind kind;
	bool on;
	const struct fleet_opts *o;
	char url[1024];
	int dirfd;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fleet_item *head, *tail;
	struct fleet_exp_stats st;
	bool stopping;
	uint64_t deadline_ns; /* when stopping: give up at */
};

struct fleet_exporters {
	struct exporter x[FLEET_EXP_N];
};

void fleet_item_free(struct fleet_item *it)
{
	if (!it)
		return;
	free(it->body);
	free(it->name);
	free(it);
}

/* ---- the directory exporter: clrtap-<unix ms>-<pid>.pb.gz, oldest removed past the cap ---- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dir_rotate(struct exporter *x)
{
	uint64_t cap = x->o->dir_max_bytes ? x->o->dir_max_bytes : (uint64_t)256 << 20, total = 0;
	char **names = NULL;
	uint64_t *sizes = NULL;
	size_t n = 0, a = 0, i;
	int fd = dup(x->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && n < 100000) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, "clrtap-", 7) || l < 7 || strcmp(de->d_name + l - 6, ".pb.gz"))
			continue;
		if (n == a) {
			size_t na = a ? 2 * a : 64;
			char **nn = realloc(names, na * sizeof(*nn));

			if (!nn)
				break;
			names = nn;
			a = na;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	sizes = calloc(n ? n : 1, sizeof(*sizes));
	for (i = 0; sizes && i < n; i++) {
		struct stat sb;

		if (fstatat(x->dirfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
			sizes[i] = (uint64_t)sb.st_size;
		total += sizes[i];
	}
	for (i = 0; sizes && i < n && total > cap; i++) {
		if (unlinkat(x->dirfd, names[i], 0) == 0)
			total -= sizes[i];
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sizes);
}

static int dir_write(struct exporter *x, const struct fleet_item *it)
{
	char name[96], tmp[112];
	int fd, err;

	if (it->type && strcmp(it->type, "cpu"))
		snprintf(name, sizeof(name), "clrtap-%013lld-%d-%s.pb.gz", (long long)it->from_ms,
			 (int)it->pid, it->type);
	else
		snprintf(name, sizeof(name), "clrtap-%013lld-%d.pb.gz", (long long)it->from_ms, (int)it->pid);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(x->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	err = ct_write_all(fd, it->body, it->len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(x->dirfd, tmp, x->dirfd, name))
		err = -errno;
	if (err)
		unlinkat(x->dirfd, tmp, 0);
	else
		dir_rotate(x);
	return err;
}

/* ---- HTTP ---- */

static int push(struct exporter *x, const struct fleet_item *it, bool *permanent)
{
	struct fleet_http_req r = { 0 };
	struct strbuf url = STRBUF_INIT;
	char why[256] = "";
	long status = 0;
	int err;

	*permanent = false;
	if (x->kind == FLEET_EXP_DIR)
		return dir_write(x, it);
	r.o = x->o;
	r.body = it->body;
	r.len = it->len;
	if (x->kind == FLEET_EXP_PYROSCOPE) {
		strbuf_addf(&url, "%s/ingest?name=%s&from=%lld&until=%lld&format=pprof", x->url, it->name,
			    (long long)it->from_s, (long long)it->until_s);
		if (it->hz) /* CPU samples: their rate; event profiles have none */
			strbuf_addf(&url, "&sampleRate=%u", it->hz);
		strbuf_addstr(&url, "&spyName=clrtap");
		r.form_field = "profile";
		r.form_filename = "profile.pprof";
	} else {
		strbuf_addf(&url, "%s/v1development/profiles", x->url);
		r.content_type = "application/x-protobuf";
	}
	if (strbuf_error(&url)) {
		strbuf_release(&url);
		return -ENOMEM;
	}
	r.url = url.buf;
	err = fleet_http_post(&r, &status, why, sizeof(why));
	strbuf_release(&url);
	if (err) {
		ct_debug("fleet: %s push failed: %s", fleet_exp_name(x->kind), why);
		return err;
	}
	if (status >= 200 && status < 300)
		return 0;
	ct_debug("fleet: %s answered HTTP %ld", fleet_exp_name(x->kind), status);
	if (status >= 400 && status < 500 && status != 408 && status != 429)
		*permanent = true;
	return -EREMOTEIO;
}

static void unqueue_head(struct exporter *x)
{
	struct fleet_item *it = x->head;

	x->head = it->next;
	if (!x->head)
		x->tail = NULL;
	x->st.depth--;
	x->st.depth_bytes -= it->len;
}

/* The thread takes the head off the queue while it pushes it (put() drops only
 * what is queued); a push to retry goes back to the head. */
static void *run(void *arg)
{
	struct exporter *x = arg;
	int backoff_ms = 0, max_ms = x->o->retry_max_ms > 0 ? x->o->retry_max_ms : 30000;

	for (;;) {
		struct fleet_item *it;
		bool permanent;
		int err;

		pthread_mutex_lock(&x->mu);
		while (!x->head && !x->stopping)
			pthread_cond_wait(&x->cv, &x->mu);
		if (!x->head || (x->stopping && perf_now_ns() >= x->deadline_ns)) {
			pthread_mutex_unlock(&x->mu);
			break;
		}
		it = x->head;
		unqueue_head(x);
		pthread_mutex_unlock(&x->mu);
		err = push(x, it, &permanent);
		pthread_mutex_lock(&x->mu);
		if (!err || permanent) {
			if (err) {
				x->st.failed++;
				x->st.dropped++;
			} else {
				x->st.sent++;
				x->st.bytes += it->len;
			}
			fleet_item_free(it);
			backoff_ms = 0;
		} else {
			struct timespec ts;

			x->st.failed++;
			x->st.retries++;
			it->next = x->head; /* back in front */
			x->head = it;
			if (!x->tail)
				x->tail = it;
			x->st.depth++;
			x->st.depth_bytes += it->len;
			if (x->stopping) {
				pthread_mutex_unlock(&x->mu);
				break; /* no retries at stop: what is left is counted as dropped */
			}
			backoff_ms = backoff_ms ? backoff_ms * 2 : 1000;
			if (backoff_ms > max_ms)
				backoff_ms = max_ms;
			ct_deadline(CLOCK_MONOTONIC, backoff_ms, &ts);
			while (!x->stopping &&
			       pthread_cond_timedwait(&x->cv, &x->mu, &ts) != ETIMEDOUT)
				;
		}
		pthread_mutex_unlock(&x->mu);
	}
	return NULL;
}

int fleet_exporters_start(struct fleet_exporters **out, const struct fleet_opts *o, char *why,
			  size_t wlen)
{
	struct fleet_exporters *e = calloc(1, sizeof(*e));
	int k, err = 0;

	if (!e)
		return -ENOMEM;
	for (k = 0; k < FLEET_EXP_N; k++) {
		struct exporter *x = &e->x[k];
		const char *u = k == FLEET_EXP_PYROSCOPE ? o->pyroscope_url
			      : k == FLEET_EXP_OTLP      ? o->otlp_url
							 : NULL;
		size_t l;

		x->kind = (enum fleet_exp_kind)k;
		x->o = o;
		x->dirfd = -1;
		pthread_mutex_init(&x->mu, NULL);
		{
			pthread_condattr_t ca;

			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&x->cv, &ca);
			pthread_condattr_destroy(&ca);
		}
		if (k == FLEET_EXP_DIR) {
			if (!o->dir)
				continue;
			x->dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (x->dirfd < 0) {
				err = -errno;
				snprintf(why, wlen, "cannot open directory %s: %s", o->dir, strerror(errno));
				break;
			}
		} else {
			if (!u)
				continue;
			l = strlen(u);
			while (l && u[l - 1] == '/')
				l--;
			if (l >= sizeof(x->url) || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))) {
				err = -EINVAL;
				snprintf(why, wlen, "%s URL must be http:// or https:// (at most %zu bytes)",
					 fleet_exp_name(x->kind), sizeof(x->url) - 1);
				break;
			}
			memcpy(x->url, u, l);
			x->url[l] = '\0';
			err = fleet_curl_load(why, wlen);
			if (err)
				break;
		}
		x->on = true;
		x->st.configured = true;
	}
	for (k = 0; !err && k < FLEET_EXP_N; k++) {
		struct exporter *x = &e->x[k];

		if (!x->on)
			continue;
		err = -pthread_create(&x->th, NULL, run, x);
		if (err) {
			snprintf(why, wlen, "cannot start a thread: %s", strerror(-err));
			break;
		}
		x->started = true;
	}
	if (err) {
		fleet_exporters_stop(e, 0);
		fleet_exporters_free(e);
		return err;
	}
	*out = e;
	return 0;
}

bool fleet_exporter_on(const struct fleet_exporters *e, enum fleet_exp_kind k)
{
	return e->x[k].on;
}

void fleet_exporter_put(struct fleet_exporters *e, enum fleet_exp_kind k, struct fleet_item *it)
{
	struct exporter *x = &e->x[k];
	size_t maxn = x->o->queue_max ? x->o->queue_max : 64;
	size_t maxb = x->o->queue_max_bytes ? x->o->queue_max_bytes : (size_t)16 << 20;

	pthread_mutex_lock(&x->mu);
	it->next = NULL;
	if (x->tail)
		x->tail->next = it;
	else
		x->head = it;
	x->tail = it;
	x->st.depth++;
	x->st.depth_bytes += it->len;
	while (x->head != it && (x->st.depth > maxn || x->st.depth_bytes > maxb)) {
		struct fleet_item *old = x->head; /* oldest first */

		unqueue_head(x);
		x->st.dropped++;
		fleet_item_free(old);
	}
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

void fleet_exporter_stats(struct fleet_exporters *e, enum fleet_exp_kind k,
			  struct fleet_exp_stats *st)
{
	struct exporter *x = &e->x[k];

	pthread_mutex_lock(&x->mu);
	*st = x->st;
	pthread_mutex_unlock(&x->mu);
}

void fleet_exporters_stop(struct fleet_exporters *e, int flush_ms)
{
	int k;

	for (k = 0; k < FLEET_EXP_N; k++) {
		struct exporter *x = &e->x[k];

		pthread_mutex_lock(&x->mu);
		x->stopping = true;
		x->deadline_ns = perf_now_ns() + (uint64_t)(flush_ms > 0 ? flush_ms : 0) * 1000000ull;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->mu);
	}
	for (k = 0; k < FLEET_EXP_N; k++) {
		struct exporter *x = &e->x[k];

		if (x->started)
			pthread_join(x->th, NULL);
		x->started = false;
		while (x->head) { /* not pushed in time: dropped, counted */
			struct fleet_item *it = x->head;

			unqueue_head(x);
			x->st.dropped++;
			fleet_item_free(it);
		}
	}
}

void fleet_exporters_free(struct fleet_exporters *e)
{
	int k;

	if (!e)
		return;
	for (k = 0; k < FLEET_EXP_N; k++) {
		if (e->x[k].dirfd >= 0)
			close(e->x[k].dirfd);
		pthread_mutex_destroy(&e->x[k].mu);
		pthread_cond_destroy(&e->x[k].cv);
	}
	free(e);
}
