/* SPDX-License-Identifier: MIT */
/*
 * jitdump.c - the reader of jit-PID.dump (see jitdump.h). Format facts from
 * the Linux kernel's tools/perf/Documentation/jitdump-specification.txt:
 * file header (magic, version, header size, ELF machine, pad, pid,
 * timestamp, flags), then records, each (id u32, total size u32, timestamp
 * u64) followed by its body; JIT_CODE_LOAD's body is pid u32, tid u32, vma
 * u64, code address u64, code size u64, code index u64, a NUL-terminated
 * name, then the code bytes.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "jitdump/jitdump.h"
#include "proc/proc.h"

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int jitdump_parse_header(const uint8_t *buf, size_t len, uint32_t *hdr_size)
{
	uint32_t magic, size;

	if (len < 12)
		return -EAGAIN;
	magic = rd32(buf);
	if (magic == __builtin_bswap32(JITDUMP_MAGIC))
		return -EPROTO;
	if (magic != JITDUMP_MAGIC || rd32(buf + 4) != 1)
		return -EINVAL;
	size = rd32(buf + 8);
	if (size < JITDUMP_HDR_MIN || size > JITDUMP_HDR_MAX)
		return -EINVAL;
	*hdr_size = size;
	return 0;
}

int jitdump_parse_records(const uint8_t *buf, size_t len, uint64_t avail,
			  int (*load)(void *ctx, const struct jitdump_load *l), void *ctx,
			  uint64_t *consumed, uint64_t *skipped)
{
	uint64_t pos = 0;
	int rc = 0;

	*consumed = 0;
	if (avail < len)
		return -EINVAL;
	while (pos + JITDUMP_REC_HDR <= len) {
		uint32_t id = rd32(buf + pos), total = rd32(buf + pos + 4);

		if (total < JITDUMP_REC_HDR || total > JITDUMP_REC_MAX)
			return -EINVAL;
		if (pos + total > avail)
			break; /* still being written */
		if (id == JITDUMP_CODE_LOAD) {
			const uint8_t *body = buf + pos + JITDUMP_REC_HDR, *nul;
			uint64_t name_at = pos + JITDUMP_REC_HDR + JITDUMP_LOAD_FIXED;
			uint64_t room, inbuf;

			if (total < JITDUMP_REC_HDR + JITDUMP_LOAD_FIXED + 1)
				return -EINVAL;
			room = CT_MIN((uint64_t)total - (JITDUMP_REC_HDR + JITDUMP_LOAD_FIXED),
				      (uint64_t)JITDUMP_NAME_MAX + 1);
			inbuf = name_at < len ? len - name_at : 0;
			nul = memchr(buf + name_at, '\0', (size_t)CT_MIN(room, inbuf));
			if (!nul && inbuf < room)
				break; /* the name goes on past buf: read from here next */
			if (!nul) {
				if (skipped)
					(*skipped)++; /* no name within its record or the cap */
			} else {
				struct jitdump_load l = {
					.addr = rd64(body + 16),
					.size = rd64(body + 24),
					.name = (const char *)buf + name_at,
					.name_len = (size_t)(nul - (buf + name_at)),
				};

				rc = load(ctx, &l);
			}
		}
		pos += total;
		*consumed = pos;
		if (rc)
			return rc;
	}
	return 0;
}

void jitdump_reader_init(struct jitdump_reader *r)
{
	memset(r, 0, sizeof(*r));
}

struct line_ctx {
	int (*line)(void *ctx, const char *line, size_t len);
	void *ctx;
	struct jitdump_reader *r;
};

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

static int to_line(void *pctx, const struct jitdump_load *l)
{
	struct line_ctx *c = pctx;
	char buf[64 + JITDUMP_NAME_MAX];
	size_t i;
	int n = snprintf(buf, sizeof(buf), "%" PRIx64 " %" PRIx64 " ", l->addr, l->size);

	if (n < 0 || (size_t)n + l->name_len >= sizeof(buf))
		return 0;
	/* ReadyToRun code (written as the map is turned on): found in the images */
	if (ends_with(l->name, l->name_len, "[PreJIT]") ||
	    ends_with(l->name, l->name_len, "[PreJit-cold]")) {
		c->r->prejit++;
		return 0;
	}
	for (i = 0; i < l->name_len; i++) {
		unsigned char ch = (unsigned char)l->name[i];

		buf[(size_t)n + i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	c->r->loads++;
	return c->line(c->ctx, buf, (size_t)n + l->name_len);
}

#define WINDOW (64u * 1024u)

int jitdump_refresh(struct jitdump_reader *r, pid_t pid, const char *tpath, const char *hpath,
		    int (*line)(void *ctx, const char *line, size_t len), void *ctx)
{
	struct line_ctx lc = { line, ctx, r };
	uint64_t start, stamp;
	struct stat st;
	uint8_t *buf;
	int fd, err = 0;

	if (r->bad)
		return -EINVAL;
	if (tpath) {
		err = proc_target_file_open(pid, tpath, 0, &fd, &st);
		if (err)
			return err == -ENOENT ? 0 : err;
	} else if (hpath) {
		/* lint-ok: target path: only given alone by tests (a host file) */
		fd = open(hpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			return -EINVAL;
		}
	} else {
		return 0;
	}
	if (r->off && (pread(fd, &stamp, sizeof(stamp), 24) != (ssize_t)sizeof(stamp) ||
		       stamp != r->stamp))
		r->off = 0; /* written anew (the map turned off and on): from its start */
	if ((uint64_t)st.st_ino != r->ino || (uint64_t)st.st_dev != r->dev ||
	    (uint64_t)st.st_size < r->off) {
		/* another file at the name (a new map after off/on): from its start */
		r->ino = (uint64_t)st.st_ino;
		r->dev = (uint64_t)st.st_dev;
		r->off = 0;
	}
	buf = malloc(WINDOW);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	start = r->off;
	while (!err && r->off < (uint64_t)st.st_size && r->off - start < JITDUMP_REFRESH_MAX) {
		uint64_t avail = (uint64_t)st.st_size - r->off, used = 0;
		size_t want = (size_t)CT_MIN(avail, (uint64_t)WINDOW);
		ssize_t got = pread(fd, buf, want, (off_t)r->off);

		if (got < 0) {
			err = -errno;
			break;
		}
		if (got == 0)
			break;
		if (r->off == 0) {
			uint32_t hs;

			err = jitdump_parse_header(buf, (size_t)got, &hs);
			if (err == -EAGAIN || (!err && hs > avail)) {
				err = 0;
				break;
			}
			if (err)
				break;
			memcpy(&r->stamp, buf + 24, sizeof(r->stamp));
			r->off = hs;
			continue;
		}
		err = jitdump_parse_records(buf, (size_t)got, avail, to_line, &lc, &used,
					    &r->skipped);
		r->off += used;
		if (!err && !used)
			break; /* a record still being written */
	}
	free(buf);
	close(fd);
	if (err == -EINVAL || err == -EPROTO) {
		r->bad = true;
		err = -EINVAL;
	}
	return err;
}
