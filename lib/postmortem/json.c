/* SPDX-License-Identifier: MIT */
/* `clrtap dump analyze --json`: the report as one JSON document (docs/cmd/dump.md). */
#include "common/compat.h"

#include <signal.h>

#include "common/clrname.h"
#include "common/json.h"
#include "heap/async.h"
#include "postmortem/postmortem.h"

const char *pm_signame(int s)
{
	static const char *const names[] = {
		[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
		[SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE",
		[SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV",
		[SIGUSR2] = "SIGUSR2", [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",
		[SIGTERM] = "SIGTERM", [SIGSTOP] = "SIGSTOP", [SIGSYS] = "SIGSYS",
	};

	return s > 0 && (size_t)s < ARRAY_SIZE(names) && names[s] ? names[s] : "signal";
}

/* A frame's name for people: the source form (Type::M [async]) unless --raw-names. */
static const char *display(const char *raw, char *buf, size_t cap)
{
	return raw ? ct_clrname_display(raw, buf, cap) : "?";
}

static void kv_str_or_null(struct ct_json *j, const char *key, const char *v)
{
	if (v)
		ct_json_kv_str(j, key, v);
	else
		ct_json_kv_null(j, key);
}

static void json_exception(struct ct_json *j, const struct pm_exception *e)
{
	char buf[PM_NAME_MAX];
	size_t i;

	if (!e) {
		ct_json_null(j);
		return;
	}
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "type", e->type);
	kv_str_or_null(j, "message", e->message);
	ct_json_kv_i64(j, "hresult", e->hresult);
	ct_json_kv_bool(j, "stack_read", e->frames_read);
	ct_json_kv_bool(j, "never_thrown", e->never_thrown);
	kv_str_or_null(j, "thrown_in", e->nframes ? e->frames[0] : NULL);
	ct_json_kv_arr_begin(j, "stack");
	for (i = 0; i < e->nframes; i++)
		ct_json_str(j, e->frames[i]);
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "stack_display");
	for (i = 0; i < e->nframes; i++)
		ct_json_str(j, display(e->frames[i], buf, sizeof(buf)));
	ct_json_arr_end(j);
	ct_json_key(j, "inner");
	json_exception(j, e->inner);
	ct_json_obj_end(j);
}

static void json_thread(struct ct_json *j, const struct pm_report *r, size_t ti)
{
	const struct pm_thread *t = &r->threads[ti];
	char buf[PM_NAME_MAX];
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_u64(j, "os_tid", t->os_tid);
	ct_json_kv_u64(j, "managed_tid", t->managed_id);
	ct_json_kv_bool(j, "faulting", ti == r->faulting);
	ct_json_kv_i64(j, "signal", t->signo);
	ct_json_kv_bool(j, "in_dump", t->in_dump);
	if (t->in_dump) {
		ct_json_kv_u64(j, "native_ip", t->ip);
		ct_json_kv_str(j, "native_at", t->native_at);
	}
	ct_json_kv_arr_begin(j, "native_frames");
	for (i = 0; i < t->nnative; i++)
		ct_json_str(j, t->native[i]);
	ct_json_arr_end(j);
	ct_json_kv_arr_begin(j, "frames");
	for (i = 0; i < t->nframes; i++) {
		const struct pm_frame *f = &t->frames[i];

		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "ip", f->ip);
		ct_json_kv_u64(j, "sp", f->sp);
		ct_json_kv_str(j, "kind", f->runtime ? "runtime" : "managed");
		kv_str_or_null(j, "method", f->name);
		if (f->name)
			ct_json_kv_str(j, "name", display(f->name, buf, sizeof(buf)));
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_bool(j, "frames_cut", t->frames_cut);
	ct_json_key(j, "exception");
	json_exception(j, t->exc);
	ct_json_obj_end(j);
}

static int cmp_size_desc(const void *x, const void *y)
{
	const struct pm_object *a = *(const struct pm_object *const *)x;
	const struct pm_object *b = *(const struct pm_object *const *)y;

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The largest n objects (pointers into r->objects), biggest first. */
size_t pm_largest(const struct pm_report *r, const struct pm_object **out, size_t n)
{
	size_t k = 0, i;

	for (i = 0; i < r->nobjects; i++) {
		const struct pm_object *o = &r->objects[i];

		if (!strcmp(r->types[o->type].name, "Free"))
			continue;
		if (k < n) {
			out[k++] = o;
			qsort(out, k, sizeof(*out), cmp_size_desc);
		} else if (o->size > out[n - 1]->size) {
			out[n - 1] = o;
			qsort(out, k, sizeof(*out), cmp_size_desc);
		}
	}
	return k;
}

static void json_heap(struct ct_json *j, const struct pm_report *r)
{
	const struct pm_object *big[PM_TOP_LARGEST];
	size_t i, n;

	ct_json_obj_begin(j);
	ct_json_kv_bool(j, "read", r->heap_read);
	kv_str_or_null(j, "note", r->heap_note[0] ? r->heap_note : NULL);
	ct_json_kv_u64(j, "objects", r->nobjects);
	ct_json_kv_u64(j, "bytes", r->heap_bytes);
	ct_json_kv_u64(j, "regions", r->segments);
	ct_json_kv_u64(j, "regions_cut", r->segments_cut);
	ct_json_kv_arr_begin(j, "types");
	for (i = 0; i < r->ntypes; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_str(j, "type", r->types[i].name);
		ct_json_kv_u64(j, "count", r->types[i].count);
		ct_json_kv_u64(j, "bytes", r->types[i].bytes);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	n = pm_largest(r, big, PM_TOP_LARGEST);
	ct_json_kv_arr_begin(j, "largest");
	for (i = 0; i < n; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "address", big[i]->addr);
		ct_json_kv_u64(j, "size", big[i]->size);
		ct_json_kv_str(j, "type", r->types[big[i]->type].name);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

static void json_root(struct ct_json *j, const struct pm_path_result *p)
{
	size_t i;

	ct_json_obj_begin(j);
	ct_json_kv_str(j, "target", p->target);
	ct_json_kv_u64(j, "instances", p->instances);
	ct_json_kv_u64(j, "reached", p->reached);
	kv_str_or_null(j, "note", p->note[0] ? p->note : NULL);
	ct_json_kv_arr_begin(j, "paths");
	for (i = 0; i < p->npaths; i++) {
		ct_json_obj_begin(j);
		ct_json_kv_u64(j, "count", p->counts[i]);
		ct_json_kv_str(j, "path", p->paths[i]);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

void pm_report_json(struct ct_json *j, const char *file, const struct pm_report *r,
		    const struct pm_path_result *root, const struct heap_async *as)
{
	size_t i;

	ct_json_obj_begin_lines(j);
	ct_json_kv_str(j, "dump", file);
	ct_json_kv_i64(j, "pid", r->pid);
	ct_json_kv_str(j, "process", r->comm);
	ct_json_kv_str(j, "runtime", r->runtime);
	ct_json_kv_obj_begin(j, "dac");
	ct_json_kv_str(j, "path", r->dac);
	ct_json_kv_str(j, "matched_by", r->dac_how ? r->dac_how : "");
	ct_json_kv_str(j, "build_id", r->build_id);
	ct_json_obj_end(j);
	ct_json_kv_obj_begin(j, "signal");
	ct_json_kv_i64(j, "number", r->signo);
	ct_json_kv_str(j, "name", r->signo ? pm_signame(r->signo) : "");
	ct_json_kv_i64(j, "code", r->si_code);
	ct_json_kv_u64(j, "address", r->fault_addr);
	ct_json_kv_i64(j, "tid", r->fault_tid);
	ct_json_obj_end(j);
	if (r->faulting != SIZE_MAX)
		ct_json_kv_u64(j, "faulting_thread", r->threads[r->faulting].os_tid);
	else
		ct_json_kv_null(j, "faulting_thread");
	ct_json_kv_u64(j, "threads_in_dump", r->native_threads);
	ct_json_kv_arr_begin(j, "threads");
	for (i = 0; i < r->nthreads; i++)
		json_thread(j, r, i);
	ct_json_arr_end(j);
	ct_json_key(j, "heap");
	json_heap(j, r);
	if (root) {
		ct_json_key(j, "root");
		json_root(j, root);
	}
	if (as) {
		ct_json_kv_obj_begin(j, "async");
		heap_async_json(as, j);
		ct_json_obj_end(j);
	}
	ct_json_kv_u64(j, "failed_reads", r->failed_reads);
	ct_json_obj_end(j);
}
