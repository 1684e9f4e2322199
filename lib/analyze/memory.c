/* SPDX-License-Identifier: MIT */
/*
 * memory.c - resident memory by what holds it, from /proc/PID/smaps (the
 * kernel writes it; the target chooses only file names, which are looked at
 * for their kind, never printed), VmRSS, and the memory controller of the
 * target's cgroup (v2: memory.max, memory.current).
 *
 * Every mapping's Rss goes into exactly one kind, so the kinds add up to the
 * smaps total. Which anonymous memory is the GC heap is inferred from the
 * layout: the GC reserves one range of many GiB up front and commits
 * regions inside it; glibc malloc arenas are reserved MAP_NORESERVE
 * (VmFlags "nr");
 * thread stacks sit right above a small PROT_NONE guard page.
 */
#include "common/compat.h"

#include <ctype.h>
#include <fcntl.h>

#include "analyze/analyze.h"
#include "common/io.h"
#include "common/strbuf.h"
#include "common/strparse.h"
#include "proc/proc.h"

#define GC_RESERVE_MIN (4ull << 30)
#define GUARD_MAX (64ull << 10)
#define REGION_ALIGN (4ull << 20)
#define MAX_VMAS (1u << 20)

enum path_kind { P_ANON, P_HEAP, P_STACK, P_CODE, P_SPECIAL, P_FILE, P_OTHER };

struct vma {
	uint64_t start, end, rss_kb;
	uint8_t path;
	bool none; /* ---p */
	bool nr;   /* VmFlags nr: mapped MAP_NORESERVE (glibc malloc arenas) */
	bool write, exec;
	uint32_t run; /* index of its first vma in a contiguous anonymous run */
};

static const char *const kind_names[AN_MEM_KINDS] = {
	"gc_heap", "code_heaps", "native_heap", "stacks", "images", "other_anon", "other",
};
static const char *const kind_labels[AN_MEM_KINDS] = {
	"GC heap", "JIT code and stub heaps", "native heap (malloc)", "thread stacks",
	"mapped images", "other anonymous (large mallocs, runtime bookkeeping)", "other",
};

const char *analyze_mem_kind_name(enum an_mem_kind k)
{
	return (unsigned)k < AN_MEM_KINDS ? kind_names[k] : "?";
}

const char *analyze_mem_kind_label(enum an_mem_kind k)
{
	return (unsigned)k < AN_MEM_KINDS ? kind_labels[k] : "?";
}

static bool hexval(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	while (s < end && isxdigit((unsigned char)*s) && nd < 17) {
		char c = *s++;

		x = x * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
		nd++;
	}
	if (!nd || nd > 16)
		return false;
	*p = s;
	*v = x;
	return true;
}

/* "start-end perms offset dev inode path" */
static bool parse_header(const char *l, const char *end, struct vma *v)
{
	const char *p = l;
	uint64_t inode = 0;
	int field;

	if (!hexval(&p, end, &v->start) || p >= end || *p != '-')
		return false;
	p++;
	if (!hexval(&p, end, &v->end) || v->end < v->start || p + 5 > end || *p != ' ')
		return false;
	p++;
	v->none = p[0] == '-' && p[1] == '-' && p[2] == '-';
	v->write = p[1] == 'w';
	v->exec = p[2] == 'x';
	for (field = 0; field < 3; field++) { /* perms, offset, dev */
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
	}
	while (p < end && isdigit((unsigned char)*p))
		inode = inode * 10 + (uint64_t)(*p++ - '0');
	while (p < end && *p == ' ')
		p++;
	if (p == end)
		v->path = P_ANON;
	else if ((size_t)(end - p) >= 6 && !memcmp(p, "[heap]", 6))
		v->path = P_HEAP;
	else if ((size_t)(end - p) >= 7 && !memcmp(p, "[stack]", 7))
		v->path = P_STACK;
	else if ((size_t)(end - p) >= 6 && !memcmp(p, "[anon:", 6))
		v->path = P_ANON;
	else if (*p == '[')
		v->path = P_SPECIAL;
	else if ((size_t)(end - p) >= 19 && !memcmp(p, "/memfd:doublemapper", 19))
		v->path = P_CODE;
	else if (inode)
		v->path = P_FILE;
	else
		v->path = P_OTHER;
	return true;
}

static enum an_mem_kind classify(const struct vma *v, size_t i, const uint64_t *run_size)
{
	switch (v->path) {
	case P_HEAP: return AN_MEM_NATIVE;
	case P_STACK: return AN_MEM_STACKS;
	case P_CODE: return AN_MEM_CODE_HEAPS;
	case P_FILE: return AN_MEM_IMAGES;
	case P_SPECIAL:
	case P_OTHER: return AN_MEM_OTHER;
	default: break;
	}
	if (run_size[v->run] >= GC_RESERVE_MIN)
		return AN_MEM_GC_HEAP;
	if (v->nr)
		return AN_MEM_NATIVE;
	if (!v->none && i > v->run && v[-1].none && v[-1].end - v[-1].start <= GUARD_MAX)
		return AN_MEM_STACKS;
	return AN_MEM_OTHER_ANON;
}

void analyze_memory_parse(const char *text, size_t len, struct an_memory *m)
{
	const char *p = text, *end = text + len;
	struct vma *v = NULL;
	uint64_t *run_size = NULL;
	size_t n = 0, cap = 0, i;

	memset(m->rss_kb, 0, sizeof(m->rss_kb));
	memset(m->mappings, 0, sizeof(m->mappings));
	m->code_exec_kb = m->code_rw_kb = m->code_jit_kb = 0;
	m->ncode_maps = 0;
	m->code_jit_known = false;
	m->jit_methods = m->jit_bytes = 0;
	m->gc_gen[0] = m->gc_gen[1] = m->gc_gen[2] = m->gc_gen[3] = m->gc_gen[4] = -1;
	m->gc_committed = -1;
	m->total_kb = 0;
	m->nmappings = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct vma x = { 0 };

		if (parse_header(p, le, &x)) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct vma *nv;

				if (nc > MAX_VMAS) {
					m->truncated = true;
					break;
				}
				nv = realloc(v, nc * sizeof(*v));
				if (!nv) {
					m->truncated = true;
					break;
				}
				v = nv;
				cap = nc;
			}
			v[n++] = x;
		} else if (n && (size_t)(le - p) > 4 && !memcmp(p, "Rss:", 4)) {
			const char *q = p + 4;
			uint64_t kb = 0;

			while (q < le && *q == ' ')
				q++;
			while (q < le && isdigit((unsigned char)*q) && kb < (1ull << 50))
				kb = kb * 10 + (uint64_t)(*q++ - '0');
			v[n - 1].rss_kb = kb;
		} else if (n && (size_t)(le - p) > 8 && !memcmp(p, "VmFlags:", 8)) {
			const char *q;

			for (q = p + 8; q + 2 < le; q++)
				if (q[0] == ' ' && q[1] == 'n' && q[2] == 'r' && (q + 3 == le || q[3] == ' '))
					v[n - 1].nr = true;
		}
		p = nl ? nl + 1 : end;
	}
	run_size = n ? calloc(n, sizeof(*run_size)) : NULL;
	if (n && !run_size) {
		m->truncated = true;
		n = 0;
	}
	for (i = 0; i < n; i++) {
		/*
		 * One reservation alternates committed and PROT_NONE parts. Two
		 * PROT_NONE neighbours come from different mappings; two committed
		 * neighbours too (e.g. a malloc'd block placed right below the GC's
		 * range, which starts a run of its own off the 4 MiB grid), unless
		 * the upper starts on a GC region boundary (4 MiB) and the lower is
		 * on it too or already inside a run: the kernel does not always
		 * merge the GC's neighbouring committed regions.
		 */
		bool joins = i && v[i].path == P_ANON && v[i - 1].path == P_ANON &&
			     v[i - 1].end == v[i].start && v[i - 1].nr == v[i].nr &&
			     (v[i - 1].none != v[i].none ||
			      (!v[i].none && v[i].start % REGION_ALIGN == 0 &&
			       (v[i - 1].start % REGION_ALIGN == 0 || v[i - 1].run != i - 1)));

		v[i].run = joins ? v[i - 1].run : (uint32_t)i;
		run_size[v[i].run] += v[i].end - v[i].start;
	}
	for (i = 0; i < n; i++) {
		enum an_mem_kind k = classify(&v[i], i, run_size);

		m->rss_kb[k] += v[i].rss_kb;
		m->mappings[k]++;
		if (k == AN_MEM_CODE_HEAPS && v[i].exec) {
			m->code_exec_kb += v[i].rss_kb;
			if (m->ncode_maps < AN_MEM_CODE_MAPS) {
				m->code_maps[m->ncode_maps].start = v[i].start;
				m->code_maps[m->ncode_maps].end = v[i].end;
				m->code_maps[m->ncode_maps++].rss_kb = v[i].rss_kb;
			}
		} else if (k == AN_MEM_CODE_HEAPS) {
			m->code_rw_kb += v[i].rss_kb;
		}
		m->total_kb += v[i].rss_kb;
	}
	m->nmappings = n;
	free(run_size);
	free(v);
}

static int64_t read_cg(const char *dir, const char *file)
{
	char path[PATH_MAX], buf[64];
	ssize_t r;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", dir, file) >= sizeof(path))
		return -2;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -2;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -2;
	buf[r] = 0;
	if (!strncmp(buf, "max", 3))
		return -1;
	if (!isdigit((unsigned char)buf[0]))
		return -2;
	return (int64_t)strtoull(buf, NULL, 10);
}

/* The v2 line "0::/path" of /proc/PID/cgroup (kernel-written); no "..". */
static void read_cgroup(pid_t pid, struct an_memory *m)
{
	struct strbuf sb = STRBUF_INIT_MAX(64 << 10);
	const char *l;

	m->cgroup_max = -2;
	m->cgroup_current = -1;
	if (proc_read(pid, "cgroup", &sb))
		goto out;
	for (l = sb.buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *e = strchrnul(l, '\n');
		char dir[PATH_MAX];
		size_t len;

		if (strncmp(l, "0::/", 4))
			continue;
		len = (size_t)(e - l - 3);
		if (len >= sizeof(dir))
			break;
		memcpy(dir, l + 3, len);
		dir[len] = 0;
		if (strstr(dir, "/..") || strchr(dir, ' '))
			break;
		if (!strcmp(dir, "/"))
			dir[0] = 0;
		m->cgroup_max = read_cg(dir, "memory.max");
		m->cgroup_current = read_cg(dir, "memory.current");
		if (m->cgroup_current < 0)
			m->cgroup_current = -1;
		break;
	}
out:
	strbuf_release(&sb);
}

int analyze_memory_read(pid_t pid, struct an_memory *m)
{
	struct strbuf sb = STRBUF_INIT_MAX(AN_SMAPS_MAX);
	uint64_t rss;
	int err;

	memset(m, 0, sizeof(*m));
	err = proc_read(pid, "smaps", &sb);
	if (err == -E2BIG || err == -EFBIG)
		m->truncated = true;
	else if (err) {
		strbuf_release(&sb);
		return err;
	}
	analyze_memory_parse(sb.buf, sb.len, m);
	m->truncated |= err != 0;
	strbuf_release(&sb);
	if (!proc_rss_bytes(pid, &rss))
		m->vmrss_kb = rss / 1024;
	read_cgroup(pid, m);
	return 0;
}

enum an_mem_kind analyze_memory_dominant(const struct an_memory *m)
{
	uint64_t best = m->rss_kb[AN_MEM_NATIVE] + m->rss_kb[AN_MEM_OTHER_ANON];
	enum an_mem_kind k, bk = AN_MEM_NATIVE;

	for (k = 0; k < AN_MEM_KINDS; k++) {
		if (k == AN_MEM_NATIVE || k == AN_MEM_OTHER_ANON)
			continue;
		if (m->rss_kb[k] > best) {
			best = m->rss_kb[k];
			bk = k;
		}
	}
	return bk;
}

static int by_start(const void *a, const void *b)
{
	const struct an_code_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

uint64_t analyze_memory_gc_excess(uint64_t rss_kb[AN_MEM_KINDS], double committed)
{
	uint64_t committed_kb, gc_kb = rss_kb[AN_MEM_GC_HEAP], excess;

	if (committed < 0)
		return 0;
	committed_kb = (uint64_t)(committed / 1024);
	if (gc_kb <= committed_kb + committed_kb / 4 + (16u << 10))
		return 0;
	excess = gc_kb - committed_kb;
	rss_kb[AN_MEM_GC_HEAP] -= excess;
	rss_kb[AN_MEM_OTHER_ANON] += excess;
	return excess;
}

void analyze_memory_runtime(struct an_memory *m, struct an_session *s)
{
	size_t i, k;

	for (k = 0; k < 5; k++)
		m->gc_gen[k] = s->gc_gen[k];
	m->gc_committed = s->gc_committed_mb >= 0 ? s->gc_committed_mb * 1e6 : -1;
	/*
	 * Resident GC memory cannot exceed what the GC committed. Much more
	 * than that in the GC's range is another mapping the kernel merged
	 * with the GC's first committed region (a malloc'd block mapped right
	 * below it has the same flags): the excess over the committed bytes
	 * is counted as other anonymous memory. The slack (a quarter, plus
	 * 16 MiB) covers the GC's bookkeeping and a counter that lags smaps.
	 */
	m->gc_excess_kb = analyze_memory_gc_excess(m->rss_kb, m->gc_committed);
	if (!s->ncode)
		return;
	qsort(s->code, s->ncode, sizeof(*s->code), by_start);
	m->code_jit_known = true;
	for (i = 0; i < s->ncode; i++)
		if (!i || s->code[i].start != s->code[i - 1].start) {
			m->jit_methods++;
			m->jit_bytes += s->code[i].size;
		}
	for (k = 0; k < m->ncode_maps; k++) {
		/* the first method at or above the view's start: inside it? */
		size_t lo = 0, hi = s->ncode;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (s->code[mid].start < m->code_maps[k].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < s->ncode && s->code[lo].start < m->code_maps[k].end)
			m->code_jit_kb += m->code_maps[k].rss_kb;
	}
}
