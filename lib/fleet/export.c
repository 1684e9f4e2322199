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
#include "common/strparse.h"
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
	int spoolfd;           /* --spool DIR/<exporter> (-1: none) */
	uint64_t spool_cap;    /* its share of --spool-max */
	unsigned spool_seq;
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
	free(it->spool_name);
	free(it);
}

/* ---- the directory exporter: clrtap-<unix ms>-<pid>.pb.gz, oldest removed past the cap ---- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The files of dirfd named PREFIX*SUFFIX, oldest (by name) first: past cap
 * bytes the oldest are removed. Returns how many were removed; *n and *bytes
 * (may be NULL) say what is left, *oldest (may be NULL; the caller frees) the
 * oldest one left.
 */
static size_t dir_cap(int dirfd, const char *prefix, const char *suffix, uint64_t cap, size_t *left,
		      uint64_t *bytes, char **oldest)
{
	uint64_t total = 0;
	char **names = NULL;
	uint64_t *sizes = NULL;
	size_t n = 0, a = 0, i, removed = 0, pl = strlen(prefix), sl = strlen(suffix);
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (oldest)
		*oldest = NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d); /* the dup shares dirfd's offset: where the last listing ended */
	while ((de = readdir(d)) && n < 100000) {
		size_t l = strlen(de->d_name);

		if (l < pl + sl || strncmp(de->d_name, prefix, pl) || strcmp(de->d_name + l - sl, suffix))
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

		if (fstatat(dirfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
			sizes[i] = (uint64_t)sb.st_size;
		total += sizes[i];
	}
	for (i = 0; sizes && i < n && total > cap; i++) {
		if (unlinkat(dirfd, names[i], 0) == 0) {
			total -= sizes[i];
			removed++;
		}
	}
	if (left)
		*left = n - i;
	if (bytes)
		*bytes = total;
	if (oldest && i < n) {
		*oldest = names[i];
		names[i] = NULL;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sizes);
	return removed;
}

static void dir_rotate(struct exporter *x)
{
	dir_cap(x->dirfd, "clrtap-", ".pb.gz", x->o->dir_max_bytes ? x->o->dir_max_bytes : (uint64_t)256 << 20,
		NULL, NULL, NULL);
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

/* ---- the on-disk spool: what the memory queue cannot hold while a backend is away ---- */

#define SPOOL_MAGIC "clrtap-spool 1"
#define SPOOL_NAME_MAX 65536
#define SPOOL_BODY_MAX ((size_t)8 << 20) /* an encoded window's cap (run.c) */
#define SPOOL_HDR_MAX 256

static const char *const spool_types[] = { "cpu", "alloc", "exceptions", "lock" };

/* The type string as one of ours (a spool file is outside input). */
static const char *spool_type(const char *t)
{
	size_t i;

	for (i = 0; i < sizeof(spool_types) / sizeof(spool_types[0]); i++)
		if (!strcmp(t, spool_types[i]))
			return spool_types[i];
	return NULL;
}

bool fleet_spool_name_ok(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '-' || s[i] == '.' || s[i] == '_' || s[i] == '~' || s[i] == '%'))
			return false;
	return len > 0;
}

int fleet_spool_header(const char *buf, size_t len, struct fleet_spool_hdr *h)
{
	/* "clrtap-spool 1 FROM_S UNTIL_S FROM_MS PID HZ TYPE GZIP NAMELEN BODYLEN\n" */
	char line[SPOOL_HDR_MAX], *f[12], *save = NULL, *tok;
	const char *nl = memchr(buf, '\n', CT_MIN(len, sizeof(line)));
	size_t nf = 0;
	int64_t v[5];
	uint64_t g, n, b;

	memset(h, 0, sizeof(*h));
	if (!nl || memchr(buf, '\0', (size_t)(nl - buf)))
		return -EBADMSG;
	memcpy(line, buf, (size_t)(nl - buf));
	line[nl - buf] = '\0';
	for (tok = strtok_r(line, " ", &save); tok && nf < 12; tok = strtok_r(NULL, " ", &save))
		f[nf++] = tok;
	if (nf != 11 || strcmp(f[0], "clrtap-spool") || strcmp(f[1], "1") || ct_parse_i64(f[2], 10, &v[0]) ||
	    ct_parse_i64(f[3], 10, &v[1]) || ct_parse_i64(f[4], 10, &v[2]) || ct_parse_i64(f[5], 10, &v[3]) ||
	    ct_parse_i64(f[6], 10, &v[4]) || !spool_type(f[7]) || ct_parse_u64(f[8], 10, &g) ||
	    ct_parse_u64(f[9], 10, &n) || ct_parse_u64(f[10], 10, &b) || g > 1 || n > SPOOL_NAME_MAX ||
	    b > SPOOL_BODY_MAX || v[3] <= 0 || v[3] > INT32_MAX || v[4] < 0 || v[4] > 1000000)
		return -EBADMSG;
	h->from_s = v[0];
	h->until_s = v[1];
	h->from_ms = v[2];
	h->pid = (pid_t)v[3];
	h->hz = (unsigned)v[4];
	h->type = spool_type(f[7]);
	h->gzip = g == 1;
	h->name_len = (size_t)n;
	h->body_len = (size_t)b;
	h->off = (size_t)(nl - buf) + 1;
	return 0;
}

/* Writes it as the newest spool file, then removes the oldest past the cap (counted).
 * Called with x->mu held. */
static void spool_put(struct exporter *x, const struct fleet_item *it)
{
	char name[96], tmp[112], hdr[256];
	int fd, err, hl;

	snprintf(name, sizeof(name), "w-%013lld-%08u.spool", (long long)it->from_ms, x->spool_seq++);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	hl = snprintf(hdr, sizeof(hdr), SPOOL_MAGIC " %lld %lld %lld %d %u %s %d %zu %zu\n",
		      (long long)it->from_s, (long long)it->until_s, (long long)it->from_ms, (int)it->pid,
		      it->hz, it->type ? it->type : "cpu", it->gzip ? 1 : 0, it->name ? strlen(it->name) : 0,
		      it->len);
	fd = openat(x->spoolfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		x->st.dropped++;
		return;
	}
	err = ct_write_all(fd, hdr, (size_t)hl);
	if (!err && it->name)
		err = ct_write_all(fd, it->name, strlen(it->name));
	if (!err)
		err = ct_write_all(fd, it->body, it->len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(x->spoolfd, tmp, x->spoolfd, name))
		err = -errno;
	if (err) {
		unlinkat(x->spoolfd, tmp, 0);
		x->st.dropped++;
		return;
	}
	x->st.spooled++;
	x->st.dropped += dir_cap(x->spoolfd, "w-", ".spool", x->spool_cap, &x->st.spool_depth,
				 &x->st.spool_bytes, NULL);
}

/* The oldest spool file as an item (its spool_name set), or NULL. A file that is not a
 * spool file of ours is removed and counted as dropped. Called without x->mu. */
static struct fleet_item *spool_take(struct exporter *x)
{
	struct fleet_item *it = NULL;
	struct fleet_spool_hdr h;
	char *name = NULL, hdr[SPOOL_HDR_MAX];
	int fd = -1;
	ssize_t r;
	bool bad = true;

	pthread_mutex_lock(&x->mu);
	dir_cap(x->spoolfd, "w-", ".spool", UINT64_MAX, &x->st.spool_depth, &x->st.spool_bytes, &name);
	pthread_mutex_unlock(&x->mu);
	if (!name)
		return NULL;
	fd = openat(x->spoolfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	r = fd >= 0 ? pread(fd, hdr, sizeof(hdr) - 1, 0) : -1;
	if (r > 0 && !fleet_spool_header(hdr, (size_t)r, &h)) {
		it = calloc(1, sizeof(*it));
		if (!it) {
			close(fd);
			free(name);
			return NULL; /* memory: the file stays */
		}
		it->name = h.name_len ? malloc(h.name_len + 1) : NULL;
		it->body = malloc(h.body_len ? h.body_len : 1);
		if (it->body && (!h.name_len || (it->name && pread(fd, it->name, h.name_len, (off_t)h.off) ==
								   (ssize_t)h.name_len)) &&
		    pread(fd, it->body, h.body_len, (off_t)(h.off + h.name_len)) == (ssize_t)h.body_len) {
			if (it->name)
				it->name[h.name_len] = '\0';
			bad = h.name_len && !fleet_spool_name_ok(it->name, h.name_len);
		}
		if (!bad) {
			it->len = h.body_len;
			it->from_s = h.from_s;
			it->until_s = h.until_s;
			it->from_ms = h.from_ms;
			it->pid = h.pid;
			it->hz = h.hz;
			it->type = h.type;
			it->gzip = h.gzip;
			it->spool_name = name;
			name = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	if (bad) {
		fleet_item_free(it);
		it = NULL;
		ct_warn("fleet: %s spool: %s is not a window clrtap spooled: removed",
			fleet_exp_name(x->kind), name);
		pthread_mutex_lock(&x->mu);
		if (unlinkat(x->spoolfd, name, 0) == 0) {
			x->st.dropped++;
			if (x->st.spool_depth)
				x->st.spool_depth--;
		}
		pthread_mutex_unlock(&x->mu);
	}
	free(name);
	return it;
}

/* DIR/<exporter name>, both made if missing; what an earlier run left there is pushed. */
static int spool_open(struct exporter *x, const struct fleet_opts *o, char *why, size_t wlen)
{
	const char *sub = fleet_exp_name(x->kind);
	int dfd, n = 0;

	(void)mkdir(o->spool_dir, 0700); /* made if missing (its parent must exist) */
	dfd = open(o->spool_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0 && mkdirat(dfd, sub, 0700) && errno != EEXIST) {
		close(dfd);
		dfd = -1;
	}
	if (dfd >= 0)
		x->spoolfd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || x->spoolfd < 0) {
		snprintf(why, wlen, "cannot open the spool directory %s/%s: %s", o->spool_dir, sub,
			 strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -errno ? -errno : -EIO;
	}
	close(dfd);
	n += o->pyroscope_url != NULL;
	n += o->otlp_url != NULL;
	x->spool_cap = (o->spool_max_bytes ? o->spool_max_bytes : (uint64_t)64 << 20) / (uint64_t)(n ? n : 1);
	x->st.dropped += dir_cap(x->spoolfd, "w-", ".spool", x->spool_cap, &x->st.spool_depth,
				 &x->st.spool_bytes, NULL);
	x->st.spool_on = true;
	return 0;
}

/* A spooled window was pushed, or refused for good: its file goes. */
static void spool_done(struct exporter *x, struct fleet_item *it)
{
	struct stat sb;

	if (fstatat(x->spoolfd, it->spool_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    unlinkat(x->spoolfd, it->spool_name, 0) == 0) {
		if (x->st.spool_depth)
			x->st.spool_depth--;
		x->st.spool_bytes -= CT_MIN(x->st.spool_bytes, (uint64_t)sb.st_size);
	}
}

/* The memory queue lets go of it: to the spool, or dropped (counted). With x->mu. */
static void let_go(struct exporter *x, struct fleet_item *it)
{
	if (it->spool_name)
		; /* still on disk: taken again later */
	else if (x->spoolfd >= 0)
		spool_put(x, it);
	else
		x->st.dropped++;
	fleet_item_free(it);
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
		r.content_encoding = it->gzip ? "gzip" : NULL;
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
		while (!x->head && !x->stopping && !(x->spoolfd >= 0 && x->st.spool_depth))
			pthread_cond_wait(&x->cv, &x->mu);
		if (!x->head && !x->stopping) {
			/* the memory queue is empty: the oldest spooled window */
			pthread_mutex_unlock(&x->mu);
			it = spool_take(x);
			pthread_mutex_lock(&x->mu);
			if (it) {
				it->next = x->head;
				x->head = it;
				if (!x->tail)
					x->tail = it;
				x->st.depth++;
				x->st.depth_bytes += it->len;
			}
		}
		if (!x->head || (x->stopping && perf_now_ns() >= x->deadline_ns)) {
			pthread_mutex_unlock(&x->mu);
			if (!x->stopping)
				continue;
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
			if (it->spool_name)
				spool_done(x, it);
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
		x->spoolfd = -1;
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
			if (o->spool_dir && (err = spool_open(x, o, why, wlen)))
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
	size_t maxn = x->o->queue_max ? x->o->queue_max : 256;
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
		let_go(x, old);
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
		pthread_mutex_lock(&x->mu);
		while (x->head) { /* not pushed in time: to the spool, or dropped (counted) */
			struct fleet_item *it = x->head;

			unqueue_head(x);
			let_go(x, it);
		}
		pthread_mutex_unlock(&x->mu);
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
		if (e->x[k].spoolfd >= 0)
			close(e->x[k].spoolfd);
		pthread_mutex_destroy(&e->x[k].mu);
		pthread_cond_destroy(&e->x[k].cv);
	}
	free(e);
}
