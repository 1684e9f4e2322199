/* SPDX-License-Identifier: MIT */
/*
 * ring.c - perf_event_open, the mmap'd ring buffer, sample records, and the
 * sysfs/tracefs look-ups for dynamic PMUs and tracepoints.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "common/strparse.h"
#include "perf/perf.h"

/* A record is at most 64 KiB (its size field is 16 bits). */
#define PERF_MAX_RECORD 65536u

int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd, unsigned long flags)
{
	long fd;

	attr->size = sizeof(*attr);
	fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	return (int)fd;
}

int perf_ring_open(struct perf_ring *r, int fd, unsigned pages_log2)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t data;
	void *base;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (page <= 0 || pages_log2 > 16)
		return -EINVAL;
	data = (size_t)page << pages_log2;
	base = mmap(NULL, data + (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	r->scratch = malloc(PERF_MAX_RECORD);
	if (!r->scratch) {
		munmap(base, data + (size_t)page);
		return -ENOMEM;
	}
	r->fd = fd;
	r->base = base;
	r->data_size = data;
	r->mmap_size = data + (size_t)page;
	r->scratch_size = PERF_MAX_RECORD;
	return 0;
}

void perf_ring_close(struct perf_ring *r)
{
	if (r->base)
		munmap(r->base, r->mmap_size);
	if (r->fd >= 0 && r->base)
		close(r->fd);
	free(r->scratch);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int perf_ring_drain(struct perf_ring *r, perf_record_fn fn, void *ctx)
{
	struct perf_event_mmap_page *meta;
	const uint8_t *data;
	uint64_t head, tail;
	int n = 0, rc = 0;

	if (!r->base)
		return -EINVAL;
	meta = r->base;
	data = (const uint8_t *)r->base + (r->mmap_size - r->data_size);
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	while (tail < head) {
		size_t off = (size_t)(tail % r->data_size);
		struct perf_event_header hdr;
		const struct perf_event_header *h;

		if (head - tail < sizeof(hdr))
			break;
		if (off + sizeof(hdr) <= r->data_size) {
			memcpy(&hdr, data + off, sizeof(hdr));
		} else {
			size_t first = r->data_size - off;

			memcpy(&hdr, data + off, first);
			memcpy((uint8_t *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail || (hdr.size & 7)) {
			/* The kernel never writes this; resynchronise by dropping the ring's content. */
			tail = head;
			rc = -EBADMSG;
			break;
		}
		if (off + hdr.size <= r->data_size) {
			h = (const struct perf_event_header *)(data + off);
		} else {
			size_t first = r->data_size - off;

			memcpy(r->scratch, data + off, first);
			memcpy(r->scratch + first, data, hdr.size - first);
			h = (const struct perf_event_header *)r->scratch;
		}
		if (hdr.type == PERF_RECORD_LOST && hdr.size >= sizeof(hdr) + 16) {
			uint64_t lost;

			memcpy(&lost, (const uint8_t *)h + sizeof(hdr) + 8, sizeof(lost));
			r->lost += lost;
		}
		tail += hdr.size;
		n++;
		rc = fn ? fn(ctx, h) : 0;
		if (rc)
			break;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return rc ? rc : n;
}

/* Bounded reads from a sample record. */
struct rec_cursor {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint64_t rc_u64(struct rec_cursor *c)
{
	uint64_t v = 0;

	if (c->left < 8) {
		c->bad = true;
		c->left = 0;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	c->left -= 8;
	return v;
}

static const uint8_t *rc_take(struct rec_cursor *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if (n > c->left) {
		c->bad = true;
		c->left = 0;
		return NULL;
	}
	c->p += n;
	c->left -= (size_t)n;
	return p;
}

static void skip_read_values(struct rec_cursor *c, uint64_t read_format)
{
	unsigned per = 1 + !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);

	if (read_format & PERF_FORMAT_GROUP) {
		uint64_t nr = rc_u64(c);

		if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
			rc_u64(c);
		if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
			rc_u64(c);
		if (nr > 4096) {
			c->bad = true;
			return;
		}
		rc_take(c, nr * per * 8);
	} else {
		rc_u64(c);
		if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
			rc_u64(c);
		if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
			rc_u64(c);
		if (read_format & PERF_FORMAT_ID)
			rc_u64(c);
		if (read_format & PERF_FORMAT_LOST)
			rc_u64(c);
	}
}

int perf_sample_parse(const struct perf_event_attr *attr, const struct perf_event_header *h,
		      struct perf_sample *s)
{
	struct rec_cursor c = { (const uint8_t *)(h + 1), h->size - sizeof(*h), false };
	uint64_t st = attr->sample_type, v;

	memset(s, 0, sizeof(*s));
	if (h->size < sizeof(*h))
		return -EBADMSG;
	if (st & PERF_SAMPLE_IDENTIFIER)
		s->id = rc_u64(&c);
	if (st & PERF_SAMPLE_IP)
		s->ip = rc_u64(&c);
	if (st & PERF_SAMPLE_TID) {
		v = rc_u64(&c);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = rc_u64(&c);
	if (st & PERF_SAMPLE_ADDR)
		s->addr = rc_u64(&c);
	if (st & PERF_SAMPLE_ID)
		s->id = rc_u64(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		s->stream_id = rc_u64(&c);
	if (st & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)rc_u64(&c);
	if (st & PERF_SAMPLE_PERIOD)
		s->period = rc_u64(&c);
	if (st & PERF_SAMPLE_READ)
		skip_read_values(&c, attr->read_format);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s->nr = rc_u64(&c);
		if (s->nr > 65536)
			return -EBADMSG;
		s->callchain = (const uint64_t *)rc_take(&c, s->nr * 8);
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t sz = 0;
		const uint8_t *p = rc_take(&c, 4);

		if (p)
			memcpy(&sz, p, 4);
		s->raw_size = sz;
		s->raw = rc_take(&c, sz);
		/* The raw area is padded so the record stays 8-byte aligned. */
		if (!c.bad && ((4 + sz) & 7))
			rc_take(&c, 8 - ((4 + sz) & 7));
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr = rc_u64(&c);

		if (nr > 4096)
			return -EBADMSG;
		if (attr->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			rc_u64(&c);
		rc_take(&c, nr * 24);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = rc_u64(&c);
		if (s->regs_abi) {
			s->nregs = (unsigned)__builtin_popcountll(attr->sample_regs_user);
			s->regs = (const uint64_t *)rc_take(&c, (uint64_t)s->nregs * 8);
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		s->stack_size = rc_u64(&c);
		if (s->stack_size) {
			s->stack = rc_take(&c, s->stack_size);
			s->stack_dyn_size = rc_u64(&c);
			if (s->stack_dyn_size > s->stack_size)
				s->stack_dyn_size = s->stack_size;
		}
	}
	return c.bad ? -EBADMSG : 0;
}

static int read_small_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int perf_pmu_type(const char *name)
{
	char path[256], buf[64];
	uint64_t v;
	int rc;

	if (snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = read_small_file(path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	buf[strcspn(buf, "\n")] = '\0';
	if (ct_parse_u64(buf, 10, &v) < 0 || v > INT_MAX)
		return -EINVAL;
	return (int)v;
}

int perf_pmu_format_bit(const char *pmu, const char *attr)
{
	char path[256], buf[64];
	uint64_t v;
	char *colon;
	int rc;

	if (snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/format/%s", pmu, attr) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = read_small_file(path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	/* "config:0" */
	buf[strcspn(buf, "\n")] = '\0';
	colon = strchr(buf, ':');
	if (!colon || ct_parse_u64(colon + 1, 10, &v) < 0 || v > 63)
		return -EINVAL;
	return (int)v;
}

int perf_tracepoint_id(const char *sys, const char *name)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[512], buf[64];
	size_t i;
	int rc = -ENOENT;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		uint64_t v;

		if (snprintf(path, sizeof(path), "%s/events/%s/%s/id", roots[i], sys, name) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		rc = read_small_file(path, buf, sizeof(buf));
		if (rc < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (ct_parse_u64(buf, 10, &v) < 0 || v > INT_MAX)
			return -EINVAL;
		return (int)v;
	}
	return rc;
}
