/* SPDX-License-Identifier: MIT */
/*
 * procs.c - the .NET processes of the host for the API: identity from
 * lib/proc (namespaces, container id, pod uid), the runtime version from the
 * diagnostics socket (ProcessInfo), cached per (pid, start time) so that a
 * listing does not ask every runtime again; and the rows of the top view.
 */
#include "common/compat.h"

#include <pthread.h>
#include <time.h>

#include "ipc/ipc.h"
#include "proc/proc.h"
#include "serve/internal.h"

#define PROCS_CACHE 256

struct proc_entry {
	pid_t pid;
	uint64_t starttime;
	bool have_info;
	int64_t failed_ms; /* ProcessInfo failed then: not asked again for 10 s */
	char runtime[64];
	char assembly[128];
};

struct srv_procs {
	pthread_mutex_t lock;
	struct proc_entry cache[PROCS_CACHE];
	size_t next;
};

int srv_procs_new(struct srv_procs **out)
{
	struct srv_procs *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return -ENOMEM;
	pthread_mutex_init(&pc->lock, NULL);
	*out = pc;
	return 0;
}

void srv_procs_free(struct srv_procs *pc)
{
	if (!pc)
		return;
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

void srv_proc_name(pid_t pid, char *buf, size_t len)
{
	struct strbuf sb = STRBUF_INIT_MAX(256);

	*buf = 0;
	if (!proc_read(pid, "comm", &sb)) {
		while (sb.len && (sb.buf[sb.len - 1] == '\n'))
			sb.len--;
		snprintf(buf, len, "%.*s", (int)sb.len, sb.buf);
	}
	strbuf_release(&sb);
}

/* Runtime version (cached), "" when the runtime did not say. */
static void runtime_info(struct srv_procs *pc, const struct proc_target *t, char *rt, size_t rtlen,
			 char *asmb, size_t asmlen)
{
	struct ipc_endpoint ep;
	struct ipc_process_info pi = { 0 };
	struct ipc_error rerr;
	struct proc_entry *e = NULL;
	size_t i;

	*rt = *asmb = 0;
	pthread_mutex_lock(&pc->lock);
	for (i = 0; i < PROCS_CACHE; i++) {
		if (pc->cache[i].pid == t->pid && pc->cache[i].starttime == t->starttime &&
		    !pc->cache[i].have_info && srv_now_ms() - pc->cache[i].failed_ms < 10000) {
			pthread_mutex_unlock(&pc->lock);
			return;
		}
		if (pc->cache[i].pid == t->pid && pc->cache[i].starttime == t->starttime &&
		    pc->cache[i].have_info) {
			snprintf(rt, rtlen, "%s", pc->cache[i].runtime);
			snprintf(asmb, asmlen, "%s", pc->cache[i].assembly);
			pthread_mutex_unlock(&pc->lock);
			return;
		}
	}
	pthread_mutex_unlock(&pc->lock);
	ipc_endpoint_init(&ep, t, 3000);
	if (ipc_process_info(&ep, &pi, &rerr)) {
		pthread_mutex_lock(&pc->lock);
		for (i = 0; i < PROCS_CACHE; i++) {
			if (pc->cache[i].pid == t->pid && pc->cache[i].starttime == t->starttime)
				break;
		}
		e = i < PROCS_CACHE ? &pc->cache[i] : &pc->cache[pc->next++ % PROCS_CACHE];
		memset(e, 0, sizeof(*e));
		e->pid = t->pid;
		e->starttime = t->starttime;
		e->failed_ms = srv_now_ms();
		pthread_mutex_unlock(&pc->lock);
		return;
	}
	if (pi.clr_version) {
		/* "10.0.12+commit": the version before '+' */
		snprintf(rt, rtlen, "%.*s", (int)strcspn(pi.clr_version, "+"), pi.clr_version);
	}
	if (pi.assembly)
		snprintf(asmb, asmlen, "%s", pi.assembly);
	ipc_process_info_release(&pi);
	pthread_mutex_lock(&pc->lock);
	for (i = 0; i < PROCS_CACHE; i++) {
		if (pc->cache[i].pid == t->pid && pc->cache[i].starttime == t->starttime)
			break;
	}
	e = i < PROCS_CACHE ? &pc->cache[i] : &pc->cache[pc->next++ % PROCS_CACHE];
	e->pid = t->pid;
	e->starttime = t->starttime;
	e->have_info = true;
	snprintf(e->runtime, sizeof(e->runtime), "%s", rt);
	snprintf(e->assembly, sizeof(e->assembly), "%s", asmb);
	pthread_mutex_unlock(&pc->lock);
}

static void proc_obj(struct srv_procs *pc, const struct proc_target *t, bool detail,
		     struct ct_json *j)
{
	struct strbuf cmd = STRBUF_INIT;
	struct proc_container ctr = { 0 };
	char name[64], rt[64], asmb[128];

	srv_proc_name(t->pid, name, sizeof(name));
	(void)proc_cmdline(t->pid, &cmd, 4096);
	(void)proc_container(t->pid, &ctr);
	runtime_info(pc, t, rt, sizeof(rt), asmb, sizeof(asmb));
	ct_json_obj_begin(j);
	ct_json_kv_i64(j, "pid", t->pid);
	ct_json_kv_i64(j, "nspid", t->nspid);
	ct_json_kv_str(j, "name", name);
	ct_json_kv_str(j, "cmdline", cmd.buf);
	if (*asmb)
		ct_json_kv_str(j, "assembly", asmb);
	else
		ct_json_kv_null(j, "assembly");
	if (*rt)
		ct_json_kv_str(j, "runtime", rt);
	else
		ct_json_kv_null(j, "runtime");
	ct_json_kv_obj_begin(j, "container");
	if (*ctr.id)
		ct_json_kv_str(j, "id", ctr.id);
	else
		ct_json_kv_null(j, "id");
	if (*ctr.pod)
		ct_json_kv_str(j, "pod_uid", ctr.pod);
	else
		ct_json_kv_null(j, "pod_uid");
	ct_json_kv_bool(j, "namespaced", t->other_pidns || t->other_mntns);
	ct_json_kv_bool(j, "other_pidns", t->other_pidns);
	ct_json_kv_bool(j, "other_mntns", t->other_mntns);
	ct_json_obj_end(j);
	if (detail) {
		struct strbuf st = STRBUF_INIT_MAX(65536);
		long threads = -1;
		uint64_t rss;
		const char *p;

		if (!proc_read(t->pid, "status", &st) && (p = strstr(st.buf, "\nThreads:")))
			threads = strtol(p + 9, NULL, 10);
		strbuf_release(&st);
		ct_json_kv_i64(j, "uid", t->uid);
		ct_json_kv_i64(j, "threads", threads);
		ct_json_kv_i64(j, "rss_bytes", proc_rss_bytes(t->pid, &rss) ? -1 : (int64_t)rss);
		ct_json_kv_str(j, "tmpdir", t->tmpdir);
		ct_json_kv_str(j, "socket", t->sock_tpath);
	}
	ct_json_obj_end(j);
	strbuf_release(&cmd);
}

/*
 * What proc_target_find said about each (pid, start time), for TARGET_TTL_MS:
 * a listing then costs a read of /proc/PID/stat per process instead of a
 * look into every process's temp directory (a process that execs into
 * dotnet keeps its start time: it shows up within the TTL).
 */
#define TARGET_CACHE 4096
#define TARGET_TTL_MS 5000

struct target_ent {
	pid_t pid;
	uint64_t starttime;
	int64_t at;
	int verdict;               /* proc_target_find's return */
	struct proc_target *t;     /* when verdict == 0 */
};

static pthread_mutex_t target_lock = PTHREAD_MUTEX_INITIALIZER;
static struct target_ent target_cache[TARGET_CACHE];

/* proc_target_find through the cache. */
static int target_find(pid_t pid, struct proc_target *out)
{
	struct target_ent *e = &target_cache[(unsigned)pid % TARGET_CACHE];
	uint64_t st;
	int64_t now = srv_now_ms();
	int err = proc_starttime(pid, &st);

	if (err)
		return err;
	pthread_mutex_lock(&target_lock);
	if (e->pid == pid && e->starttime == st && now - e->at < TARGET_TTL_MS) {
		err = e->verdict;
		if (!err)
			*out = *e->t;
		pthread_mutex_unlock(&target_lock);
		return err;
	}
	pthread_mutex_unlock(&target_lock);
	err = proc_target_find(pid, out);
	pthread_mutex_lock(&target_lock);
	if (!err && !e->t)
		e->t = malloc(sizeof(*e->t));
	if (err || e->t) {
		e->pid = pid;
		e->starttime = st;
		e->at = now;
		e->verdict = err;
		if (!err)
			*e->t = *out;
	}
	pthread_mutex_unlock(&target_lock);
	return err;
}

struct scan_ctx {
	pid_t *pids;
	size_t max, n;
};

static int scan_fn(pid_t pid, void *vctx)
{
	struct scan_ctx *c = vctx;
	struct proc_target t;

	if (pid == getpid())
		return 0;
	if (target_find(pid, &t))
		return 0;
	if (c->n < c->max)
		c->pids[c->n++] = pid;
	return 0;
}

int srv_procs_pids(pid_t *pids, size_t max, size_t *n)
{
	struct scan_ctx c = { .pids = pids, .max = max };
	int err = proc_scan(scan_fn, &c);

	*n = c.n;
	return err;
}

int srv_procs_list_json(struct srv_procs *pc, struct ct_json *j)
{
	pid_t pids[1024];
	size_t n, i;
	int err = srv_procs_pids(pids, ARRAY_SIZE(pids), &n);

	if (err)
		return err;
	ct_json_obj_begin(j);
	ct_json_kv_arr_begin(j, "processes");
	for (i = 0; i < n; i++) {
		struct proc_target t;

		if (target_find(pids[i], &t))
			continue; /* gone since the scan */
		proc_obj(pc, &t, false, j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	return 0;
}

int srv_procs_info_json(struct srv_procs *pc, pid_t pid, struct ct_json *j, struct proc_target *t)
{
	int err = proc_target_find(pid, t);

	if (err)
		return err;
	proc_obj(pc, t, true, j);
	return 0;
}

/* ----- top ----- */

#define TOP_MAX 256

struct top_prev {
	pid_t pid;
	uint64_t ticks;
};

struct srv_top {
	struct top_prev prev[TOP_MAX];
	size_t nprev;
	int64_t prev_ms;
};


/* The first sample, so that the first rows carry a CPU share. */
int srv_top_new(struct srv_top **out)
{
	struct srv_top *t = calloc(1, sizeof(*t));
	pid_t pids[TOP_MAX];
	size_t n = 0, i;

	if (!t)
		return -ENOMEM;
	if (!srv_procs_pids(pids, ARRAY_SIZE(pids), &n)) {
		for (i = 0; i < n; i++) {
			if (!proc_cpu_ticks(pids[i], &t->prev[t->nprev].ticks))
				t->prev[t->nprev++].pid = pids[i];
		}
	}
	t->prev_ms = srv_now_ms();
	*out = t;
	return 0;
}

void srv_top_free(struct srv_top *t)
{
	free(t);
}


int srv_top_json(struct srv_top *tp, struct ct_json *j)
{
	pid_t pids[TOP_MAX];
	struct top_prev cur[TOP_MAX];
	size_t n, i, k, ncur = 0;
	int64_t now = srv_now_ms();
	double dt = tp->prev_ms ? (double)(now - tp->prev_ms) / 1000.0 : 0;
	long hz = sysconf(_SC_CLK_TCK);
	int err = srv_procs_pids(pids, ARRAY_SIZE(pids), &n);

	if (err)
		return err;
	ct_json_obj_begin(j);
	ct_json_kv_arr_begin(j, "rows");
	for (i = 0; i < n; i++) {
		char name[64];
		uint64_t ticks, rss;

		if (proc_cpu_ticks(pids[i], &ticks))
			continue;
		srv_proc_name(pids[i], name, sizeof(name));
		ct_json_obj_begin(j);
		ct_json_kv_i64(j, "pid", pids[i]);
		ct_json_kv_str(j, "name", name);
		ct_json_key(j, "cpu");
		for (k = 0; k < tp->nprev && tp->prev[k].pid != pids[i]; k++)
			;
		if (k < tp->nprev && dt > 0 && hz > 0)
			ct_json_double(j, (double)(ticks - tp->prev[k].ticks) / (double)hz / dt * 100.0);
		else
			ct_json_null(j);
		ct_json_kv_i64(j, "rss_bytes", proc_rss_bytes(pids[i], &rss) ? -1 : (int64_t)rss);
		ct_json_obj_end(j);
		cur[ncur].pid = pids[i];
		cur[ncur++].ticks = ticks;
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	memcpy(tp->prev, cur, ncur * sizeof(cur[0]));
	tp->nprev = ncur;
	tp->prev_ms = now;
	return 0;
}
