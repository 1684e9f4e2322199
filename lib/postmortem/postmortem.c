/* SPDX-License-Identifier: MIT */
/*
 * postmortem.c - a core dump's threads, managed stacks and exceptions, read
 * through the runtime's DAC. The GC heap walk is in heapwalk.c.
 */
#include "common/compat.h"

#include "common/strparse.h"
#include "core/core.h"
#include "dac/dac.h"
#include "heap/heap.h"
#include "postmortem/pm_internal.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* "libc.so.6+0x9ee2" for an address in a mapped file. */
static void where(const struct core_file *c, uint64_t ip, char *out, size_t cap)
{
	const struct core_mapping *m = core_mapping_at(c, ip);
	const char *b;

	out[0] = '\0';
	if (!m || !m->path)
		return;
	b = strrchr(m->path, '/');
	snprintf(out, cap, "%s+0x%" PRIx64, b ? b + 1 : m->path, ip - m->start + m->file_offset);
}

/*
 * The frame pointer chain from fp: [fp] the caller's fp, [fp + 8] the return
 * address; followed while it climbs the stack (within 8 MiB of sp) and the
 * return address lies in a mapped file, up to the first managed frame
 * (stop_sp) or PM_MAX_NATIVE frames. Every read is core_read's (bounded).
 */
static void native_frames(const struct core_file *c, struct pm_thread *t, uint64_t sp, uint64_t fp,
			  uint64_t stop_sp)
{
	char where_buf[PM_NAME_MAX];
	size_t n = 0;

	t->native = calloc(PM_MAX_NATIVE, sizeof(*t->native));
	if (!t->native)
		return;
	while (n < PM_MAX_NATIVE && fp >= sp && fp - sp < (8u << 20) && !(fp & 7) &&
	       (!stop_sp || fp < stop_sp)) {
		uint64_t pair[2];

		if (core_read(c, fp, pair, sizeof(pair)) != (ssize_t)sizeof(pair) || !pair[1])
			break;
		where(c, pair[1], where_buf, sizeof(where_buf));
		if (!where_buf[0])
			break; /* not in a file: JIT code, the managed frames take over */
		t->native[n] = strdup(where_buf);
		if (!t->native[n])
			break;
		n++;
		if (pair[0] <= fp)
			break;
		fp = pair[0];
	}
	t->nnative = n;
}

static void exception_free(struct pm_exception *e)
{
	while (e) {
		struct pm_exception *next = e->inner;
		size_t i;

		free(e->type);
		free(e->message);
		for (i = 0; i < e->nframes; i++)
			free(e->frames[i]);
		free(e->frames);
		free(e);
		e = next;
	}
}

uint64_t pm_obj_mt(struct pm_priv *p, uint64_t obj)
{
	uint64_t mt = 0;

	if (dac_read(p->dac, obj, &mt, 8) != 8)
		return 0;
	return mt & ~(uint64_t)7;
}

/*
 * The exception's stack trace: Exception._stackTrace is a byte[] (or an
 * object[] whose element 0 is that byte[], when it must keep other objects
 * alive). Its payload: a count, a pointer, then one 32-byte element a frame
 * (ip, sp, MethodDesc, flags), throwing frame first. Every field is checked.
 */
static void exception_frames(struct pm_priv *p, uint64_t st, struct pm_exception *e)
{
	struct dac_globals g;
	struct dac_mt mi;
	uint64_t mt, len = 0, count = 0, i;
	char name[PM_NAME_MAX];

	if (!st) {
		e->never_thrown = true; /* constructed, never thrown: no stack trace */
		return;
	}
	if (dac_globals(p->dac, &g))
		return;
	mt = pm_obj_mt(p, st);
	if (!mt || dac_mt_info(p->dac, mt, &mi))
		return;
	if (mi.component_size == 8) { /* object[]: the byte[] is element 0 */
		uint32_t n = 0;

		if (dac_read(p->dac, st + 8, &n, 4) != 4 || !n || dac_read(p->dac, st + 16, &st, 8) != 8 ||
		    !st)
			return;
		mt = pm_obj_mt(p, st);
		if (!mt || dac_mt_info(p->dac, mt, &mi))
			return;
	}
	if (mi.component_size != 1)
		return;
	if (dac_read(p->dac, st + 8, &len, 4) != 4 || len < 16 ||
	    dac_read(p->dac, st + 16, &count, 8) != 8)
		return;
	len &= 0xffffffffu;
	if (count > (len - 16) / 32 || count > PM_MAX_FRAMES)
		return;
	e->frames = calloc(count ? count : 1, sizeof(*e->frames));
	if (!e->frames)
		return;
	for (i = 0; i < count; i++) {
		uint64_t el[4];

		if (dac_read(p->dac, st + 16 + 16 + i * 32, el, sizeof(el)) != sizeof(el))
			break;
		if (!el[2] || dac_method_name(p->dac, el[2], name, sizeof(name)))
			continue;
		e->frames[e->nframes] = strdup(name);
		if (e->frames[e->nframes])
			e->nframes++;
	}
	e->frames_read = true;
}

struct pm_exception *pm_exception_read(struct pm_priv *p, uint64_t obj, unsigned depth)
{
	struct dac_exception de;
	struct pm_exception *e;
	char buf[4096];
	uint64_t mt;

	if (!obj || depth > PM_MAX_INNER)
		return NULL;
	mt = pm_obj_mt(p, obj);
	if (!mt || dac_mt_name(p->dac, mt, buf, sizeof(buf)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->obj = obj;
	e->type = strdup(buf);
	if (!dac_exception(p->dac, obj, &de)) {
		e->hresult = de.hresult;
		if (de.message && !dac_string(p->dac, de.message, buf, sizeof(buf)))
			e->message = strdup(buf);
		exception_frames(p, de.stack_trace, e);
		if (de.inner && de.inner != obj)
			e->inner = pm_exception_read(p, de.inner, depth + 1);
	}
	return e;
}

static int read_threads(struct pm_report *r)
{
	struct pm_priv *p = r->priv;
	const struct core_info *ci = core_info(p->core);
	struct dac_thread *dt = NULL;
	size_t n = 0, i;
	int err;

	err = dac_threads(p->dac, &dt, &n, PM_MAX_THREADS);
	if (err)
		return err;
	r->threads = calloc(n ? n : 1, sizeof(*r->threads));
	if (!r->threads) {
		free(dt);
		return -ENOMEM;
	}
	p->threads = dt;
	p->nthreads = n;
	for (i = 0; i < n; i++) {
		struct pm_thread *t = &r->threads[r->nthreads++];
		struct dac_frame *fr = NULL;
		const struct core_thread *ct;
		size_t nf = 0, k, j;
		char name[PM_NAME_MAX];

		t->os_tid = dt[i].os_tid;
		t->managed_id = dt[i].managed_id;
		for (k = 0; (ct = core_thread(p->core, k)); k++)
			if (t->os_tid && (uint32_t)ct->tid == t->os_tid) {
				t->in_dump = true;
				t->signo = ct->signo;
				t->ip = ct->regs.ip;
				where(p->core, t->ip, t->native_at, sizeof(t->native_at));
				break;
			}
		if (t->in_dump) {
			const struct core_thread *th = core_thread(p->core, k);
			uint64_t first_managed = 0;

			if (t->os_tid && !dac_stack(p->dac, t->os_tid, &fr, &nf, PM_MAX_FRAMES + 1)) {
				for (j = 0; j < nf && !first_managed; j++)
					if (!fr[j].runtime && fr[j].md)
						first_managed = fr[j].sp;
			}
			native_frames(p->core, t, th->regs.sp, th->regs.fp, first_managed);
		}
		if (fr) {
			if (nf > PM_MAX_FRAMES) {
				nf = PM_MAX_FRAMES;
				t->frames_cut = true;
			}
			t->frames = calloc(nf ? nf : 1, sizeof(*t->frames));
			for (j = 0; t->frames && j < nf; j++) {
				t->frames[j].ip = fr[j].ip;
				t->frames[j].sp = fr[j].sp;
				t->frames[j].runtime = fr[j].runtime;
				if (fr[j].md && !dac_method_name(p->dac, fr[j].md, name, sizeof(name)))
					t->frames[j].name = strdup(name);
			}
			if (t->frames)
				t->nframes = nf;
			free(fr);
		}
		t->exc = pm_exception_read(p, dt[i].last_thrown, 0);
	}
	/* the thread that took the signal */
	r->faulting = SIZE_MAX;
	r->fault_tid = 0;
	{
		const struct core_thread *ct;

		for (i = 0; (ct = core_thread(p->core, i)); i++)
			if (ct->signo) {
				r->fault_tid = ct->tid;
				break;
			}
		if (!r->fault_tid && (ct = core_thread(p->core, 0)) && ci->signo)
			r->fault_tid = ct->tid; /* the kernel writes the dumping thread first */
	}
	for (i = 0; i < r->nthreads; i++)
		if (r->fault_tid && r->threads[i].os_tid == (uint32_t)r->fault_tid)
			r->faulting = i;
	return 0;
}

/* "10.0.12" from the directory the DAC was found in, when it reads as a version. */
static void runtime_version(const struct dac_found *f, char *out, size_t cap)
{
	const char *v = f->version;
	size_t i;

	out[0] = '\0';
	if (!v[0] || !(v[0] >= '0' && v[0] <= '9'))
		return;
	for (i = 0; v[i]; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || v[i] == '.' || v[i] == '-' ||
		      (v[i] >= 'a' && v[i] <= 'z')))
			return;
	ct_strlcpy(out, v, cap);
}

int pm_open(const char *path, const struct pm_opts *o, struct pm_report **out, char *why,
	    size_t whylen)
{
	struct pm_report *r;
	struct pm_priv *p;
	struct dac_found f;
	const struct core_info *ci;
	int err;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	p = calloc(1, sizeof(*p));
	if (!r || !p) {
		free(r);
		free(p);
		return -ENOMEM;
	}
	r->priv = p;
	r->faulting = SIZE_MAX;
	err = core_open(path, &p->core, why, whylen);
	if (err)
		goto fail;
	ci = core_info(p->core);
	r->pid = ci->pid;
	memcpy(r->comm, ci->comm, sizeof(r->comm));
	r->comm[sizeof(r->comm) - 1] = '\0';
	r->signo = ci->signo;
	r->si_code = ci->si_code;
	r->fault_addr = ci->fault_addr;
	r->native_threads = ci->nthreads;
	err = core_check_complete(p->core, why, whylen);
	if (err)
		goto fail;
	err = dac_find(p->core, o->dac, &f, why, whylen);
	if (err)
		goto fail;
	ct_strlcpy(r->dac, f.path, sizeof(r->dac));
	r->dac_how = f.how;
	ct_strlcpy(r->build_id, f.build_id, sizeof(r->build_id));
	runtime_version(&f, r->runtime, sizeof(r->runtime));
	err = dac_open(p->core, &f, &p->dac, why, whylen);
	if (err)
		goto fail;
	err = read_threads(r);
	if (err) {
		snprintf(why, whylen, "the DAC could not list the runtime's threads: %s", strerror(-err));
		goto fail;
	}
	if (o->heap)
		pm_heap(r);
	r->failed_reads = dac_reads_failed(p->dac);
	*out = r;
	return 0;
fail:
	pm_free(r);
	return err;
}

void pm_free(struct pm_report *r)
{
	size_t i, j;

	if (!r)
		return;
	for (i = 0; i < r->nthreads; i++) {
		for (j = 0; j < r->threads[i].nframes; j++)
			free(r->threads[i].frames[j].name);
		for (j = 0; j < r->threads[i].nnative; j++)
			free(r->threads[i].native[j]);
		free(r->threads[i].native);
		free(r->threads[i].frames);
		exception_free(r->threads[i].exc);
	}
	free(r->threads);
	for (i = 0; i < r->ntypes; i++)
		free(r->types[i].name);
	free(r->types);
	free(r->objects);
	if (r->priv) {
		dac_close(r->priv->dac);
		core_close(r->priv->core);
		free(r->priv->threads);
		heap_graph_free(r->priv->graph);
		free(r->priv);
	}
	free(r);
}

char *pm_strdup(const char *s)
{
	return dup_or_null(s);
}
