/* SPDX-License-Identifier: MIT */
/*
 * asyncflow.c - which async method each thread runs, and which async methods
 * await it, from the TPL event source (System.Threading.Tasks.TplEventSource,
 * keywords 0x2A: Tasks, AsyncCausalityOperation, AsyncCausalitySynchronousWork).
 *
 * What the runtime writes (measured on .NET 8, 9 and 10):
 *   TraceOperationBegin (14)  TaskID, OperationName "Async: <Price>d__4": an
 *                             async method's task is created (its first call)
 *   TraceOperationEnd (15)    TaskID, Status: it completed
 *   TaskWaitBegin (10)        ..., TaskID (awaited), Behavior,
 *                             ContinueWithTaskID (the awaiting method's task)
 *   TraceSynchronousWorkBegin (17) TaskID, Work (2: the box's MoveNext runs
 *                             on this thread: a resumption); End (18) pops it
 * Each thread keeps a stack of the tasks resumed on it; a task keeps the task
 * that awaits it. A thread's chain is its innermost running task, then its
 * awaiter, its awaiter's awaiter, ... each one an edge the runtime reported
 * for that very task instance (nothing inferred from types). Tasks created
 * before the session have no name (their TraceOperationBegin was missed).
 *
 * Bounded: NT_AF_MAX_TASKS live tasks, NT_AF_MAX_THREADS threads, a nesting
 * depth of AF_DEPTH per thread, NT_AF_MAX_NAMES distinct names; what does not
 * fit is counted (nt_asyncflow_stats), never guessed.
 */
#include "common/compat.h"

#include "common/hashtab.h"
#include "common/strbuf.h"
#include "nettrace/nettrace.h"

#define TPL_PROVIDER "System.Threading.Tasks.TplEventSource"
#define HOSTING_PROVIDER "Microsoft.AspNetCore.Hosting"
#define EV_REQUEST_START 3
#define EV_REQUEST_STOP 4
#define REQ_NAMES_MAX 1024 /* distinct "METHOD path" kept; then every request is "(other paths)" */
#define EV_WAIT_BEGIN 10
#define EV_OP_BEGIN 14
#define EV_OP_END 15
#define EV_WORK_BEGIN 17
#define EV_WORK_END 18
#define WORK_EXECUTION 2
#define AF_DEPTH 32
#define NAME_MAX_BYTES 512

struct af_task {
	int32_t id;
	int32_t awaiter; /* 0: none seen */
	uint32_t name;   /* index + 1 into names; 0: unnamed */
	uint32_t req;    /* the request it was created for: index + 1 into names; 0: none */
	bool dead;
};

struct af_thread {
	uint32_t tid;
	uint32_t depth; /* entries pushed (may exceed AF_DEPTH: those are not kept) */
	int32_t run[AF_DEPTH]; /* task id, 0 for work that is not an execution */
	uint32_t req;       /* the request it serves now (RequestStart..Stop): index + 1, 0 */
	uint32_t req_depth; /* depth at its RequestStart: leaving that work ends it here */
	uint8_t req_act[16];
};

struct nt_asyncflow {
	struct af_task *tasks;
	uint32_t ntasks, ndead, cap_tasks;
	struct ct_itab task_ix;
	struct af_thread *threads;
	uint32_t nthreads, cap_threads;
	struct ct_itab thread_ix;
	struct ct_strset names;
	uint32_t nreq_names;
	struct nt_asyncflow_stats st;
	nt_asyncflow_namer_fn namer;
	void *namer_ctx;
};

static uint64_t task_hash(const void *ctx, uint32_t i)
{
	return ct_hash_u64((uint32_t)((const struct af_task *)ctx)[i].id);
}

static bool task_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct af_task *)ctx)[i].id == *(const int32_t *)key;
}

static uint64_t thread_hash(const void *ctx, uint32_t i)
{
	return ct_hash_u64(((const struct af_thread *)ctx)[i].tid);
}

static bool thread_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct af_thread *)ctx)[i].tid == *(const uint32_t *)key;
}

int nt_asyncflow_new(struct nt_asyncflow **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void nt_asyncflow_free(struct nt_asyncflow *a)
{
	uint32_t i;

	if (!a)
		return;
	for (i = 0; i < a->names.n; i++)
		free((void *)a->names.v[i]);
	ct_strset_release(&a->names);
	ct_itab_release(&a->task_ix);
	ct_itab_release(&a->thread_ix);
	free(a->tasks);
	free(a->threads);
	free(a);
}

void nt_asyncflow_set_namer(struct nt_asyncflow *a, nt_asyncflow_namer_fn fn, void *ctx)
{
	a->namer = fn;
	a->namer_ctx = ctx;
}

/*
 * The state machine of an AsyncStateMachineBox's method, from its raw name
 * ("...AsyncStateMachineBox`1[System.Int64,N.Shop+<Run>d__1]::MoveNext" ->
 * "<Run>d__1"), into out. False when raw is not one, or it does not fit.
 */
bool nt_asyncflow_box_machine(const char *raw, char *out, size_t len)
{
	static const char box[] = "AsyncStateMachineBox`1[";
	const char *b = strstr(raw, box), *e, *p;

	if (!b || !(e = strstr(b, "]::")))
		return false;
	b += sizeof(box) - 1; /* the type arguments start here: never read before */
	for (p = e; p > b && p[-1] != '+' && p[-1] != ',' && p[-1] != '.'; p--)
		;
	if (p == b || p[-1] != '+' || *p != '<' || (size_t)(e - p) >= len)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return true;
}

void nt_asyncflow_stats(const struct nt_asyncflow *a, struct nt_asyncflow_stats *st)
{
	*st = a->st;
	st->live_tasks = a->ntasks - a->ndead;
}

/* Room in an array of cap elements of size bytes for one past n (doubling). */
static int room(void **v, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t nc = *cap ? *cap * 2 : 64;
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, (size_t)nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

static struct af_task *task_find(struct nt_asyncflow *a, int32_t id)
{
	uint32_t i = ct_itab_get(&a->task_ix, ct_hash_u64((uint32_t)id), task_eq, a->tasks, &id);

	return i == UINT32_MAX || a->tasks[i].dead ? NULL : &a->tasks[i];
}

/* Drops the dead tasks once they are half the array, and reindexes. */
static int task_compact(struct nt_asyncflow *a)
{
	uint32_t i, n = 0;

	for (i = 0; i < a->ntasks; i++)
		if (!a->tasks[i].dead)
			a->tasks[n++] = a->tasks[i];
	a->ntasks = n;
	a->ndead = 0;
	return ct_itab_rebuild(&a->task_ix, n, task_hash, a->tasks);
}

static struct af_task *task_get(struct nt_asyncflow *a, int32_t id)
{
	struct af_task *t = task_find(a, id);
	uint32_t *slot;

	if (t)
		return t;
	if (a->ndead > 1024 && a->ndead * 2 > a->ntasks && task_compact(a))
		return NULL;
	if (a->ntasks - a->ndead >= NT_AF_MAX_TASKS) {
		a->st.tasks_dropped++;
		return NULL;
	}
	if (room((void **)&a->tasks, &a->cap_tasks, a->ntasks, sizeof(*a->tasks)) ||
	    ct_itab_reserve(&a->task_ix, task_hash, a->tasks))
		return NULL;
	slot = ct_itab_slot(&a->task_ix, ct_hash_u64((uint32_t)id), task_eq, a->tasks, &id);
	if (*slot) { /* a dead entry with this id (ids are reused after 2^31): revive it */
		t = &a->tasks[*slot - 1];
		a->ndead--;
	} else {
		t = &a->tasks[a->ntasks];
		*slot = ct_itab_add(&a->task_ix, a->ntasks++);
	}
	*t = (struct af_task){ .id = id };
	return t;
}

static struct af_thread *thread_get(struct nt_asyncflow *a, uint32_t tid, bool add)
{
	uint32_t *slot;
	struct af_thread *t;

	if (!add) {
		uint32_t i = ct_itab_get(&a->thread_ix, ct_hash_u64(tid), thread_eq, a->threads, &tid);

		return i == UINT32_MAX ? NULL : &a->threads[i];
	}
	if (ct_itab_reserve(&a->thread_ix, thread_hash, a->threads))
		return NULL;
	slot = ct_itab_slot(&a->thread_ix, ct_hash_u64(tid), thread_eq, a->threads, &tid);
	if (*slot)
		return &a->threads[*slot - 1];
	if (a->nthreads >= NT_AF_MAX_THREADS) {
		a->st.threads_dropped++;
		return NULL;
	}
	if (room((void **)&a->threads, &a->cap_threads, a->nthreads, sizeof(*a->threads)))
		return NULL;
	t = &a->threads[a->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	*slot = ct_itab_add(&a->thread_ix, a->nthreads++);
	return t;
}

static int store_name(void *ctx, const char *s, size_t len, const char **copy)
{
	char *c;

	(void)ctx;
	c = malloc(len + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, s, len);
	c[len] = '\0';
	*copy = c;
	return 0;
}

/* The index + 1 of the interned name, or 0 (counted) when no more fit. */
static uint32_t intern(struct nt_asyncflow *a, const char *name)
{
	const char *copy;
	uint32_t i;

	for (i = a->names.n; a->names.n >= NT_AF_MAX_NAMES && i-- > 0;) /* known already? */
		if (!strcmp(a->names.v[i], name))
			return i + 1;
	if (a->names.n >= NT_AF_MAX_NAMES) {
		a->st.names_dropped++;
		return 0;
	}
	if (ct_strset_intern(&a->names, name, strlen(name), store_name, NULL, &copy))
		return 0;
	for (i = a->names.n; i-- > 0;)
		if (a->names.v[i] == copy)
			return i + 1;
	return 0;
}

/* The operation name of a TraceOperationBegin (UTF-16, "Async: " dropped). */
static uint32_t name_of(struct nt_asyncflow *a, const uint8_t *p, size_t len)
{
	struct nt_str16 s = { p, 0 };
	struct strbuf u = STRBUF_INIT_MAX(NAME_MAX_BYTES);
	uint32_t r = 0;

	while ((size_t)s.nunits * 2 + 1 < len && (p[s.nunits * 2] || p[s.nunits * 2 + 1]))
		s.nunits++;
	if ((size_t)s.nunits * 2 + 1 < len && !nt_str16_utf8(&s, &u) && u.len)
		r = intern(a, strncmp(u.buf, "Async: ", 7) ? u.buf : u.buf + 7);
	strbuf_release(&u);
	return r;
}

static bool rd32(const struct nt_event *ev, size_t off, int32_t *v)
{
	if (ev->payload_len < off + 4)
		return false;
	memcpy(v, ev->payload + off, 4);
	return true;
}

/* The request a thread serves now: its own RequestStart..Stop, else the one
 * its innermost resumed task was created for. Index + 1 into names, or 0. */
static uint32_t thread_req(struct nt_asyncflow *a, struct af_thread *th)
{
	uint32_t d;

	if (th->req && th->depth <= th->req_depth) /* nothing resumed on it since */
		return th->req;
	for (d = CT_MIN(th->depth, (uint32_t)AF_DEPTH); d-- > 0;)
		if (th->run[d]) {
			struct af_task *t = task_find(a, th->run[d]);

			return t ? t->req : 0;
		}
	return 0;
}

/* "METHOD path" of a RequestStart (two UTF-16 strings), interned (capped). */
static uint32_t request_name(struct nt_asyncflow *a, const struct nt_event *ev)
{
	struct strbuf u = STRBUF_INIT_MAX(NAME_MAX_BYTES);
	const uint8_t *p = ev->payload;
	size_t len = ev->payload_len, off = 0;
	uint32_t r = 0, f, i;

	for (f = 0; f < 2; f++) {
		struct nt_str16 s = { p + off, 0 };

		while (off + (size_t)s.nunits * 2 + 1 < len && (s.p[s.nunits * 2] || s.p[s.nunits * 2 + 1]))
			s.nunits++;
		if (off + (size_t)s.nunits * 2 + 1 >= len || (f && strbuf_addch(&u, ' ')) ||
		    nt_str16_utf8(&s, &u))
			goto out;
		off += (size_t)s.nunits * 2 + 2;
	}
	for (i = 0; i < u.len; i++) /* a path is the client's: no control bytes in a frame name */
		if ((unsigned char)u.buf[i] < 0x20 || u.buf[i] == 0x7f)
			u.buf[i] = '?';
	if (a->nreq_names >= REQ_NAMES_MAX) {
		a->st.requests_other++;
		r = intern(a, "(other paths)");
		goto out;
	}
	f = a->names.n;
	r = intern(a, u.buf);
	if (a->names.n > f) /* a new one */
		a->nreq_names++;
out:
	strbuf_release(&u);
	return r;
}

static void request_event(struct nt_asyncflow *a, const struct nt_event *ev)
{
	struct af_thread *th = thread_get(a, (uint32_t)ev->thread_id, ev->meta->event_id == EV_REQUEST_START);

	if (!th)
		return;
	if (ev->meta->event_id == EV_REQUEST_START) {
		a->st.requests++;
		th->req = request_name(a, ev);
		th->req_depth = th->depth;
		memcpy(th->req_act, ev->activity_id, 16);
	} else if (!memcmp(th->req_act, ev->activity_id, 16)) {
		th->req = 0;
	}
}

bool nt_asyncflow_event(struct nt_asyncflow *a, const struct nt_event *ev)
{
	const struct nt_metadata *m = ev->meta;
	struct af_thread *th;
	struct af_task *t;
	int32_t id, v;

	if (m && m->provider_kind == NT_PROV_OTHER && !strcmp(m->provider, HOSTING_PROVIDER)) {
		if (m->event_id == EV_REQUEST_START || m->event_id == EV_REQUEST_STOP)
			request_event(a, ev);
		return true;
	}
	if (!m || m->provider_kind != NT_PROV_OTHER || strcmp(m->provider, TPL_PROVIDER))
		return false;
	a->st.events++;
	switch (m->event_id) {
	case EV_OP_BEGIN:
		if (rd32(ev, 0, &id) && (t = task_get(a, id))) {
			t->name = name_of(a, ev->payload + 4, ev->payload_len - 4);
			th = thread_get(a, (uint32_t)ev->thread_id, false);
			t->req = th ? thread_req(a, th) : 0; /* created while serving it */
		}
		break;
	case EV_OP_END:
		if (rd32(ev, 0, &id) && (t = task_find(a, id))) {
			t->dead = true;
			a->ndead++;
		}
		break;
	case EV_WAIT_BEGIN:
		if (rd32(ev, 8, &id) && rd32(ev, 16, &v) && v && (t = task_get(a, id)))
			t->awaiter = v;
		/* the request's own code suspends: it goes on in its tasks, and this
		 * thread only unwinds back to the pool */
		if ((th = thread_get(a, (uint32_t)ev->thread_id, false)) && th->req &&
		    th->depth == th->req_depth)
			th->req = 0;
		break;
	case EV_WORK_BEGIN:
		/* a task begun before the session is named when it resumes: its
		 * box's MoveNext is on the event's stack */
		if (rd32(ev, 0, &id) && rd32(ev, 4, &v) && v == WORK_EXECUTION && a->namer &&
		    (!(t = task_find(a, id)) || !t->name) && (t = task_get(a, id))) {
			char buf[NAME_MAX_BYTES];

			if (a->namer(a->namer_ctx, ev, buf, sizeof(buf)))
				t->name = intern(a, buf);
		}
		if (rd32(ev, 0, &id) && rd32(ev, 4, &v) && (th = thread_get(a, (uint32_t)ev->thread_id, true))) {
			if (th->depth < AF_DEPTH)
				th->run[th->depth] = v == WORK_EXECUTION ? id : 0;
			th->depth++;
		}
		break;
	case EV_WORK_END:
		if ((th = thread_get(a, (uint32_t)ev->thread_id, false)) && th->depth) {
			th->depth--;
			if (th->req && th->depth < th->req_depth) /* left the work that began it */
				th->req = 0;
		}
		break;
	default:
		break;
	}
	return true;
}

size_t nt_asyncflow_chain(struct nt_asyncflow *a, uint32_t tid, const char **names, size_t cap)
{
	struct af_thread *th = thread_get(a, tid, false);
	struct af_task *t = NULL;
	size_t n = 0;
	uint32_t d;

	if (!th || !th->depth || th->depth > AF_DEPTH)
		return 0;
	for (d = th->depth; d-- > 0 && !t;) /* the innermost execution */
		if (th->run[d])
			t = task_find(a, th->run[d]);
	while (t && n < cap) {
		int32_t next = t->awaiter;

		names[n++] = t->name ? a->names.v[t->name - 1] : NULL;
		t = next && next != t->id ? task_find(a, next) : NULL;
		if (next && !t && n < cap) /* awaited by one begun before the session */
			names[n++] = NULL;
	}
	return n;
}

const char *nt_asyncflow_request(struct nt_asyncflow *a, uint32_t tid)
{
	struct af_thread *th = thread_get(a, tid, false);
	uint32_t r = th ? thread_req(a, th) : 0;

	return r ? a->names.v[r - 1] : NULL;
}

bool nt_asyncflow_is_movenext(const char *raw, const void *op)
{
	size_t lo = strlen(op), lr;
	const char *p = raw;

	while ((p = strstr(p, op))) {
		const char *rest = p + lo;

		if (p > raw && (p[-1] == '+' || p[-1] == '.')) {
			if (!strcmp(rest, "::MoveNext"))
				return true;
			lr = strlen(rest);
			if (rest[0] == '[' && lr > 11 && !strcmp(rest + lr - 11, "]::MoveNext"))
				return true;
		}
		p++;
	}
	return false;
}
