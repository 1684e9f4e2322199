/* SPDX-License-Identifier: MIT */
/*
 * sym_srv.c - debug files by build-id from the cache directory, debuginfod
 * and Microsoft-style symbol servers (sym_srv.h, docs/internals/symsrv.md).
 */
#include "common/compat.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/curl_dl.h"
#include "common/io.h"
#include "common/log.h"
#include "sym/sym_cache.h"
#include "sym/sym_internal.h"
#include "sym/sym_srv.h"

#define ID_MAX 64          /* bytes of a build-id we accept */
#define TRIED_MAX 256      /* build-ids asked of the servers in this process */
#define URL_MAX 512

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool configured;
	char debuginfod[2048];
	char ssqp[SYM_SRV_MAX_SERVERS][URL_MAX];
	bool ssqp_dead[SYM_SRV_MAX_SERVERS]; /* did not answer: not asked again */
	size_t nssqp;
	char root[PATH_MAX];
	bool no_root;
	int timeout_ms;
	bool hold;
	unsigned epoch, held;
	struct {
		char hex[2 * ID_MAX + 1];
		enum sym_srv_source got; /* what served it in this run, or NONE */
	} tried[TRIED_MAX];
	size_t ntried;
	struct sym_srv_stats st;
} g;

const char *sym_srv_source_name(enum sym_srv_source s)
{
	switch (s) {
	case SYM_SRV_CACHE:
		return "cache";
	case SYM_SRV_DEBUGINFOD:
		return "debuginfod";
	case SYM_SRV_SSQP:
		return "symbol server";
	default:
		return "none";
	}
}

/* http:// or https://, printable, no spaces or quotes; trailing '/' dropped. */
static int url_ok(const char *u, size_t n, char *out, size_t cap)
{
	size_t i;

	if (!((n > 7 && !strncmp(u, "http://", 7)) || (n > 8 && !strncmp(u, "https://", 8))))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((unsigned char)u[i] <= ' ' || (unsigned char)u[i] >= 0x7f || u[i] == '"' ||
		    u[i] == '\\')
			return -EINVAL;
	while (n && u[n - 1] == '/')
		n--;
	if (n + 1 > cap - 96) /* room for the key */
		return -ENAMETOOLONG;
	memcpy(out, u, n);
	out[n] = '\0';
	return 0;
}

static int parse_list(const char *s, bool ssqp, char *why, size_t wlen)
{
	size_t dl = 0;

	while (*s) {
		size_t n;
		char one[URL_MAX];

		s += strspn(s, " \t,;");
		n = strcspn(s, " \t,;");
		if (!n)
			break;
		if (url_ok(s, n, one, sizeof(one))) {
			snprintf(why, wlen, "not an http:// or https:// URL: '%.*s'",
				 (int)(n > 80 ? 80 : n), s);
			return -EINVAL;
		}
		if (ssqp) {
			if (g.nssqp >= SYM_SRV_MAX_SERVERS) {
				snprintf(why, wlen, "at most %d symbol servers", SYM_SRV_MAX_SERVERS);
				return -EINVAL;
			}
			snprintf(g.ssqp[g.nssqp++], URL_MAX, "%s", one);
		} else {
			int w = snprintf(g.debuginfod + dl, sizeof(g.debuginfod) - dl, "%s%s",
					 dl ? " " : "", one);

			if (w < 0 || (size_t)w >= sizeof(g.debuginfod) - dl) {
				snprintf(why, wlen, "the debuginfod URLs are too long");
				return -EINVAL;
			}
			dl += (size_t)w;
		}
		s += n;
	}
	return 0;
}

int sym_srv_configure(const struct sym_srv_opts *o, char *why, size_t wlen)
{
	const char *d = o->debuginfod ? o->debuginfod : getenv("DEBUGINFOD_URLS");
	const char *s = o->servers ? o->servers : getenv("CLRTAP_SYMBOL_SERVER");
	const char *r = o->cache_dir ? o->cache_dir : getenv("CLRTAP_CACHE_DIR");
	int rc;

	pthread_mutex_lock(&lock);
	memset(&g, 0, sizeof(g));
	rc = parse_list(d ? d : "", false, why, wlen);
	if (!rc)
		rc = parse_list(s ? s : "", true, why, wlen);
	if (rc) {
		memset(&g, 0, sizeof(g));
		pthread_mutex_unlock(&lock);
		return rc;
	}
	if (r && !*r)
		g.no_root = true; /* "": no cache (so nothing can be fetched either) */
	else
		snprintf(g.root, sizeof(g.root), "%s", r && *r ? r : SYM_CACHE_DEFAULT_DIR);
	g.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : SYM_SRV_TIMEOUT_MS;
	g.configured = true;
	g.st.configured = true;
	g.st.servers = g.debuginfod[0] || g.nssqp;
	pthread_mutex_unlock(&lock);
	return 0;
}

bool sym_srv_servers(void)
{
	return g.st.servers;
}

void sym_srv_hold(bool hold)
{
	pthread_mutex_lock(&lock);
	if (g.hold && !hold)
		g.epoch++;
	g.hold = hold;
	pthread_mutex_unlock(&lock);
}

unsigned sym_srv_epoch(void)
{
	return __atomic_load_n(&g.epoch, __ATOMIC_RELAXED);
}

unsigned sym_srv_held_misses(void)
{
	return __atomic_load_n(&g.held, __ATOMIC_RELAXED);
}

void sym_srv_stats(struct sym_srv_stats *st)
{
	pthread_mutex_lock(&lock);
	*st = g.st;
	pthread_mutex_unlock(&lock);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g.st.last_error, sizeof(g.st.last_error), fmt, ap);
	va_end(ap);
	g.st.failed++;
	ct_debug("symsrv: %s", g.st.last_error);
}

/*
 * Moves the downloaded file tmp (in dfd) to NAME once it is a debug file
 * for id; else deletes it. 0, or -EBADMSG (refused).
 */
static int accept_file(int dfd, const char *tmp, const char *name, const uint8_t *id, size_t len)
{
	struct stat st;
	int fd = openat(dfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int rc = -EBADMSG;

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size <= SYM_SRV_MAX_FILE)
		rc = sym_elf_check_debug(fd, id, len);
	if (fd >= 0)
		close(fd);
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc) {
		(void)unlinkat(dfd, tmp, 0);
		if (rc == -EBADMSG)
			g.st.refused++;
		return rc;
	}
	sym_cache_prune(dfd, SYM_SRV_CACHE_MAX);
	return 0;
}

/* Copies the file at path (a debuginfod download) to tmp in dfd, at most SYM_SRV_MAX_FILE. */
static int copy_in(int sfd, int dfd, const char *tmp)
{
	char buf[65536];
	uint64_t total = 0;
	int out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = 0;

	if (out < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(sfd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		total += (uint64_t)r;
		if (total > SYM_SRV_MAX_FILE) {
			rc = -EFBIG;
			break;
		}
		rc = ct_write_all(out, buf, (size_t)r);
		if (rc)
			break;
	}
	if (close(out) < 0 && !rc)
		rc = -errno;
	if (rc)
		(void)unlinkat(dfd, tmp, 0);
	return rc;
}

/* ---- debuginfod, through libdebuginfod (dlopen), in a child process ---- */

/*
 * libdebuginfod is configured through its environment, keeps state of its
 * own (and leaks a little of it), and parses what the server sends. So it
 * runs in a child: it is loaded there, its environment is the child's, and
 * whatever it does ends with the child, which only copies the file it got
 * into tmp (in dfd). The child's exit status says how it went.
 */
enum { DI_OK = 0, DI_NOLIB = 10, DI_NOTFOUND = 11, DI_FAILED = 12, DI_COPY = 13 };

struct dinf_client;

static void __attribute__((noreturn)) dinf_child(int dfd, const char *ddir, const char *tmp,
						 const uint8_t *id, size_t len)
{
	struct dinf_client *(*begin)(void);
	int (*find)(struct dinf_client *, const unsigned char *, int, char **);
	void (*end)(struct dinf_client *);
	char cache[PATH_MAX + 32], num[32];
	struct dinf_client *c;
	char *got = NULL;
	struct sched_param sp = { 0 };
	void *h;
	int fd;

	/* a profiler runs at a real-time priority; a download needs none */
	(void)sched_setscheduler(0, SCHED_OTHER, &sp);
	h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		_exit(DI_NOLIB);
	*(void **)&begin = dlsym(h, "debuginfod_begin");
	*(void **)&find = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&end = dlsym(h, "debuginfod_end");
	if (!begin || !find || !end)
		_exit(DI_NOLIB);
	snprintf(cache, sizeof(cache), "%s/.debuginfod", ddir);
	setenv("DEBUGINFOD_URLS", g.debuginfod, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	snprintf(num, sizeof(num), "%d", (g.timeout_ms + 999) / 1000);
	setenv("DEBUGINFOD_TIMEOUT", num, 1);
	setenv("DEBUGINFOD_MAXTIME", num, 1);
	snprintf(num, sizeof(num), "%" PRIu64, SYM_SRV_MAX_FILE);
	setenv("DEBUGINFOD_MAXSIZE", num, 1);
	unsetenv("DEBUGINFOD_PROGRESS");
	unsetenv("DEBUGINFOD_VERBOSE");
	c = begin();
	if (!c)
		_exit(DI_FAILED);
	fd = find(c, id, (int)len, &got);
	end(c);
	if (fd < 0)
		_exit(fd == -ENOENT ? DI_NOTFOUND : DI_FAILED);
	/* the client hands over the descriptor it wrote: at its end */
	if (lseek(fd, 0, SEEK_SET) != 0 || copy_in(fd, dfd, tmp))
		_exit(DI_COPY);
	if (got)
		(void)unlink(got); /* our copy is the one kept; the client's cache stays empty */
	_exit(DI_OK);
}

static int from_debuginfod(int dfd, const char *ddir, const char *hex, const char *name,
			   const uint8_t *id, size_t len)
{
	/* the child's own timeouts bound it; this bounds it if they do not */
	uint64_t waited_ms = 0, limit_ms = (uint64_t)g.timeout_ms * 2 + 5000;
	char tmp[160];
	int status = 0, rc;
	pid_t pid, w;

	snprintf(tmp, sizeof(tmp), ".tmp-%d-%s", (int)getpid(), name);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		dinf_child(dfd, ddir, tmp, id, len);
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && waited_ms < limit_ms) {
		usleep(10000);
		waited_ms += 10;
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
		(void)unlinkat(dfd, tmp, 0);
		fail("debuginfod: %s: no answer within %" PRIu64 " ms", hex, limit_ms);
		return -ETIMEDOUT;
	}
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : DI_FAILED;
	if (rc != DI_OK) {
		(void)unlinkat(dfd, tmp, 0);
		if (rc == DI_NOLIB)
			fail("cannot load libdebuginfod.so.1 (install libdebuginfod1)");
		else if (rc != DI_NOTFOUND)
			fail("debuginfod: %s: the download failed", hex);
		return rc == DI_NOTFOUND ? -ENOENT : -EIO;
	}
	rc = accept_file(dfd, tmp, name, id, len);
	if (rc == -EBADMSG)
		fail("debuginfod served a file for %s that is not its debug file: refused", hex);
	return rc;
}

/* ---- a Microsoft-style symbol server (SSQP), through libcurl (dlopen) ---- */

struct dl_ctx {
	int fd;
	uint64_t total;
	int err;
};

static size_t dl_write(char *p, size_t sz, size_t n, void *ctx)
{
	struct dl_ctx *d = ctx;
	size_t len = sz * n;

	d->total += len;
	if (d->total > SYM_SRV_MAX_FILE) {
		d->err = -EFBIG;
		return 0;
	}
	if (ct_write_all(d->fd, p, len)) {
		d->err = -EIO;
		return 0;
	}
	return len;
}

/*
 * The library's file name for the SSQP binary key, lowercased: only
 * [a-z0-9._+-], not starting with '.', at most 128 bytes; else false (that
 * key is not asked).
 */
static bool ssqp_file_name(const char *file, char *out, size_t cap)
{
	size_t i, n = file ? strlen(file) : 0;

	if (!n || n > 128 || n + 1 > cap || file[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = file[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '+' || c == '-'))
			return false;
		out[i] = c;
	}
	out[n] = '\0';
	return true;
}

/* One GET of url into tmp (in dfd), at most SYM_SRV_MAX_FILE: 0, -ENOENT (not there), -EIO. */
static int ssqp_get(int dfd, size_t si, const char *url, const char *tmp, const char *hex)
{
	struct dl_ctx d = { .fd = -1 };
	long status = 0;
	CURLcode cr;
	CURL *c;
	int rc;

	d.fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d.fd < 0)
		return -errno;
	c = ct_cu.curl_easy_init();
	if (!c) {
		close(d.fd);
		(void)unlinkat(dfd, tmp, 0);
		return -ENOMEM;
	}
	ct_cu.curl_easy_setopt(c, CURLOPT_URL, url);
	ct_cu.curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	ct_cu.curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)g.timeout_ms);
	ct_cu.curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	ct_cu.curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	ct_cu.curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	/* Microsoft's server answers with a redirect to its blob storage */
	ct_cu.curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	ct_cu.curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
	ct_cu.curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SYM_SRV_MAX_FILE);
	ct_cu.curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, dl_write);
	ct_cu.curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
	ct_cu.curl_easy_setopt(c, CURLOPT_USERAGENT, "clrtap-symbols");
	cr = ct_cu.curl_easy_perform(c);
	if (cr == CURLE_OK)
		ct_cu.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (close(d.fd) < 0 && !d.err)
		d.err = -EIO;
	if (cr != CURLE_OK) {
		fail("symbol server %s: %s", g.ssqp[si],
		     d.err == -EFBIG ? "file over the size cap" : ct_cu.curl_easy_strerror(cr));
		/* a server that did not answer is not asked again in this run */
		if (cr == CURLE_COULDNT_CONNECT || cr == CURLE_OPERATION_TIMEDOUT ||
		    cr == CURLE_COULDNT_RESOLVE_HOST)
			g.ssqp_dead[si] = true;
		rc = -EIO;
	} else if (status != 200) {
		if (status != 404)
			fail("symbol server %s: HTTP %ld for %s", g.ssqp[si], status, hex);
		rc = -ENOENT;
	} else {
		rc = d.err;
	}
	ct_cu.curl_easy_cleanup(c);
	if (rc)
		(void)unlinkat(dfd, tmp, 0);
	return rc;
}

/*
 * SSQP's keys for an ELF file, in order: the debug file
 * ("_.debug/elf-buildid-sym-<id>/_.debug"), then the image itself
 * ("<file>/elf-buildid-<id>/<file>", useful where a server holds it
 * unstripped). Only the id's hex and a checked file name reach the URL.
 */
static int from_ssqp(int dfd, size_t si, const char *hex, const char *file, const char *name,
		     const uint8_t *id, size_t len)
{
	char url[URL_MAX + 420], tmp[160], why[256], fn[129];
	int k, rc = -ENOENT;

	if (ct_curl_load(why, sizeof(why))) {
		fail("%s", why);
		return -ENOENT;
	}
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%s", (int)getpid(), name);
	for (k = 0; k < 2 && !g.ssqp_dead[si]; k++) {
		if (k == 0)
			snprintf(url, sizeof(url), "%s/_.debug/elf-buildid-sym-%s/_.debug", g.ssqp[si],
				 hex);
		else if (ssqp_file_name(file, fn, sizeof(fn)))
			snprintf(url, sizeof(url), "%s/%s/elf-buildid-%s/%s", g.ssqp[si], fn, hex, fn);
		else
			break;
		rc = ssqp_get(dfd, si, url, tmp, hex);
		if (rc == -ENOENT)
			continue;
		if (rc)
			return rc;
		rc = accept_file(dfd, tmp, name, id, len);
		if (!rc)
			return 0;
		if (rc == -EBADMSG)
			fail("symbol server %s served a file for %s that is not its debug file "
			     "(build-id or .symtab): refused", g.ssqp[si], hex);
	}
	return rc;
}

/* ---- lookup ---- */

/* The build-ids asked of the servers in this run, and what served each. */
static size_t tried_find(const char *hex)
{
	size_t i;

	for (i = 0; i < g.ntried; i++)
		if (!strcmp(g.tried[i].hex, hex))
			return i;
	return SIZE_MAX;
}

static bool tried_before(const char *hex)
{
	if (tried_find(hex) != SIZE_MAX)
		return true;
	if (g.ntried < TRIED_MAX) {
		snprintf(g.tried[g.ntried].hex, sizeof(g.tried[0].hex), "%s", hex);
		g.tried[g.ntried++].got = SYM_SRV_NONE;
	}
	return false;
}

static void tried_got(const char *hex, enum sym_srv_source src)
{
	size_t i = tried_find(hex);

	if (i != SIZE_MAX)
		g.tried[i].got = src;
}

static int find_locked(const uint8_t *id, size_t len, const char *file, char *path, size_t cap,
		       enum sym_srv_source *src)
{
	char hex[2 * ID_MAX + 1], name[2 * ID_MAX + 16], ddir[PATH_MAX + 16];
	struct stat st;
	size_t i;
	int dfd, fd, rc = -ENOENT;

	*src = SYM_SRV_NONE;
	if (!g.configured || len < 2 || len > ID_MAX)
		return -ENOENT;
	/* the only name made from the target's file: its build-id, in hex */
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(name, sizeof(name), "%s.debug", hex);
	if (g.no_root)
		return -ENOENT;
	snprintf(ddir, sizeof(ddir), "%s/debug", g.root);
	dfd = sym_cache_dir_open(g.root, "debug");
	if (dfd < 0) {
		if (g.st.servers)
			fail("no usable cache directory %s: %s", ddir, strerror(-dfd));
		return -ENOENT;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			  (uint64_t)st.st_size <= SYM_SRV_MAX_FILE;

		if (ok)
			(void)futimens(fd, NULL); /* recently used: pruned last */
		close(fd);
		if (ok) {
			size_t t = tried_find(hex);

			/* a file this run downloaded is reported by the server that gave it */
			*src = t != SIZE_MAX && g.tried[t].got ? g.tried[t].got : SYM_SRV_CACHE;
			g.st.from_cache++;
			rc = 0;
			goto found;
		}
	}
	if (!g.st.servers)
		goto out;
	if (g.hold) {
		__atomic_add_fetch(&g.held, 1, __ATOMIC_RELAXED);
		g.st.held++;
		rc = -EAGAIN;
		goto out;
	}
	if (tried_before(hex))
		goto out;
	if (g.debuginfod[0]) {
		rc = from_debuginfod(dfd, ddir, hex, name, id, len);
		if (!rc) {
			*src = SYM_SRV_DEBUGINFOD;
			g.st.from_debuginfod++;
			tried_got(hex, *src);
			goto found;
		}
	}
	for (i = 0; i < g.nssqp; i++) {
		if (g.ssqp_dead[i])
			continue;
		rc = from_ssqp(dfd, i, hex, file, name, id, len);
		if (!rc) {
			*src = SYM_SRV_SSQP;
			g.st.from_ssqp++;
			tried_got(hex, *src);
			goto found;
		}
	}
	g.st.not_found++;
	ct_debug("symsrv: no debug file for %s (%s)", file ? file : "?", hex);
	rc = -ENOENT;
	goto out;
found:
	if ((size_t)snprintf(path, cap, "%s/%s", ddir, name) >= cap)
		rc = -ENAMETOOLONG;
	else
		ct_debug("symsrv: %s: %s from %s", file ? file : "?", name, sym_srv_source_name(*src));
out:
	close(dfd);
	return rc;
}

int sym_srv_find(const uint8_t *id, size_t len, const char *file, char *path, size_t cap,
		 enum sym_srv_source *src)
{
	int rc;

	pthread_mutex_lock(&lock);
	rc = find_locked(id, len, file, path, cap, src);
	pthread_mutex_unlock(&lock);
	return rc;
}
