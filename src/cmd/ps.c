/* SPDX-License-Identifier: MIT */
/*
 * clrtap ps - every .NET process on the host, containers included.
 */
#include "common/compat.h"

#include <sys/stat.h>

#include "cli.h"

struct ps_row {
	pid_t pid, nspid;
	char status[64];       /* "ok" or why it cannot be talked to */
	char assembly[128];
	char runtime[64];
	char ns[32];
	struct proc_container ctr; /* container id / pod uid from its cgroups */
	char socket[PROC_PATH_MAX];
	char *cmdline;
	bool live;
};

struct ps_state {
	struct ps_row *rows;
	size_t n, alloc;
	int timeout_ms;
	size_t nstale;
	bool all;
};

static struct ps_row *add_row(struct ps_state *s)
{
	struct ps_row *r;

	if (s->n == s->alloc) {
		size_t na = s->alloc ? s->alloc * 2 : 32;
		struct ps_row *nr = reallocarray(s->rows, na, sizeof(*nr));

		if (!nr)
			return NULL;
		s->rows = nr;
		s->alloc = na;
	}
	r = &s->rows[s->n++];
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * When /proc/PID is closed to us we cannot see its /tmp; say it is .NET only
 * if it looks like one: a dotnet host, or a socket for its pid in our /tmp.
 */
static bool looks_dotnet(pid_t pid)
{
	struct strbuf cmd = STRBUF_INIT;
	char path[128];
	struct stat st;
	bool yes = false;

	if (!proc_cmdline(pid, &cmd, 4096)) {
		const char *base = strrchr(cmd.buf, '/');
		size_t blen;

		base = base ? base + 1 : cmd.buf;
		blen = strcspn(base, " ");
		yes = blen == 6 && !strncmp(base, "dotnet", 6);
		if (!yes && strstr(cmd.buf, ".dll"))
			yes = true;
	}
	strbuf_release(&cmd);
	if (!yes) {
		uint64_t key;

		if (!proc_starttime(pid, &key)) {
			snprintf(path, sizeof(path), "/tmp/dotnet-diagnostic-%d-%" PRIu64 "-socket",
				 (int)pid, key);
			yes = lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
		}
	}
	return yes;
}

static void set_ns(struct ps_row *r, const struct proc_target *t)
{
	if (t->other_pidns && t->other_mntns)
		snprintf(r->ns, sizeof(r->ns), "pid+mnt");
	else if (t->other_pidns)
		snprintf(r->ns, sizeof(r->ns), "pid");
	else if (t->other_mntns)
		snprintf(r->ns, sizeof(r->ns), "mnt");
	else
		snprintf(r->ns, sizeof(r->ns), "host");
}

static int scan_one(pid_t pid, void *ctx)
{
	struct ps_state *s = ctx;
	struct proc_target t;
	struct ipc_endpoint ep;
	struct ipc_process_info pi;
	struct ipc_error rerr;
	struct strbuf cmd = STRBUF_INIT;
	struct ps_row *r;
	int err;

	if (pid == getpid())
		return 0;
	err = proc_target_find(pid, &t);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (err == -EACCES && !looks_dotnet(pid))
		return 0;
	if (err && err != -EACCES && err != -ELOOP && err != -ENOTSOCK)
		return 0;
	r = add_row(s);
	if (!r)
		return -ENOMEM;
	r->pid = pid;
	r->nspid = t.nspid;
	set_ns(r, &t);
	(void)proc_container(pid, &r->ctr);
	ct_strlcpy(r->socket, t.socket, sizeof(r->socket));
	if (!proc_cmdline(pid, &cmd, 4096))
		r->cmdline = strbuf_detach(&cmd, NULL);
	strbuf_release(&cmd);
	if (err == -EACCES) {
		snprintf(r->status, sizeof(r->status), "permission denied");
		snprintf(r->ns, sizeof(r->ns), "?");
		return 0;
	}
	if (err) {
		snprintf(r->status, sizeof(r->status), "refused: not the target's socket");
		return 0;
	}
	ipc_endpoint_init(&ep, &t, s->timeout_ms);
	err = ipc_process_info(&ep, &pi, &rerr);
	switch (err) {
	case 0:
		r->live = true;
		snprintf(r->status, sizeof(r->status), "ok");
		ct_strlcpy(r->assembly, pi.assembly ? pi.assembly : "?", sizeof(r->assembly));
		ct_strlcpy(r->runtime, pi.clr_version ? pi.clr_version : "?", sizeof(r->runtime));
		/* "10.0.12+abcdef": the commit hash is noise in a table. */
		r->runtime[strcspn(r->runtime, "+")] = '\0';
		if (pi.cmdline && !r->cmdline)
			r->cmdline = strdup(pi.cmdline);
		ipc_process_info_release(&pi);
		break;
	case -ECONNREFUSED:
	case -ENOENT:
		snprintf(r->status, sizeof(r->status), "stale socket");
		break;
	case -EACCES:
		snprintf(r->status, sizeof(r->status), "permission denied (socket)");
		break;
	case -ETIMEDOUT:
		snprintf(r->status, sizeof(r->status), "not responding");
		break;
	case -EXDEV:
	case -ENOTSOCK:
	case -ELOOP:
		/* Its socket leads to another process: nothing it says is shown. */
		snprintf(r->status, sizeof(r->status), "refused: not the target's socket");
		break;
	default:
		snprintf(r->status, sizeof(r->status), "error: %s",
			 err == -EPROTO ? "malformed reply" : strerror(-err));
	}
	return 0;
}

static void stale_cb(const char *path, pid_t pid, void *ctx)
{
	struct ps_state *s = ctx;
	struct ps_row *r;

	s->nstale++;
	if (!s->all)
		return;
	r = add_row(s);
	if (!r)
		return;
	r->pid = 0;
	r->nspid = pid;
	snprintf(r->status, sizeof(r->status), "stale socket (process gone)");
	snprintf(r->ns, sizeof(r->ns), "-");
	ct_strlcpy(r->socket, path, sizeof(r->socket));
}

static void print_table(const struct ps_state *s, bool wide)
{
	bool containers = false;
	size_t i;

	/* The CONTAINER column (first 12 digits, as docker ps shows) only when one has an id. */
	for (i = 0; i < s->n; i++)
		containers |= s->rows[i].ctr.id[0] != '\0';
	printf("%7s %7s %-8s ", "PID", "NSPID", "NS");
	if (containers)
		printf("%-12s ", "CONTAINER");
	printf("%-9s %-20s %-18s %s\n", "RUNTIME", "ASSEMBLY", "STATUS", "COMMAND");
	for (i = 0; i < s->n; i++) {
		const struct ps_row *r = &s->rows[i];
		char pid[16], cmd[4096];
		size_t n;

		if (r->pid)
			snprintf(pid, sizeof(pid), "%d", (int)r->pid);
		else
			snprintf(pid, sizeof(pid), "-");
		/* target strings through cli_safe(), then cut at a character */
		n = ct_strlcpy(cmd, cli_safe(r->cmdline ? r->cmdline : (r->pid ? "?" : r->socket)),
			       sizeof(cmd));
		if (!wide && n > 60) {
			n = 57;
			while (n && ((unsigned char)cmd[n] & 0xc0) == 0x80)
				n--;
			memcpy(cmd + n, "...", 4);
		}
		printf("%7s %7d %-8s ", pid, (int)r->nspid, cli_safe(r->ns));
		if (containers)
			printf("%-12.12s ", r->ctr.id[0] ? cli_safe(r->ctr.id) : "-");
		printf("%-9s %-20s %-18s %s\n", r->runtime[0] ? cli_safe(r->runtime) : "-",
		       r->assembly[0] ? cli_safe(r->assembly) : "-", r->status, cmd);
	}
}

static int print_json(const struct ps_state *s)
{
	struct strbuf sb = STRBUF_INIT;
	struct ct_json j;
	size_t i;
	int code;

	ct_json_init(&j, &sb);
	ct_json_arr_begin_lines(&j);
	for (i = 0; i < s->n; i++) {
		const struct ps_row *r = &s->rows[i];

		ct_json_obj_begin(&j);
		if (r->pid)
			ct_json_kv_u64(&j, "pid", (uint64_t)r->pid);
		else
			ct_json_kv_null(&j, "pid");
		ct_json_kv_u64(&j, "nspid", (uint64_t)r->nspid);
		ct_json_kv_str(&j, "namespace", r->ns);
		ct_json_kv_str(&j, "container", r->ctr.id[0] ? r->ctr.id : NULL);
		ct_json_kv_str(&j, "pod_uid", r->ctr.pod[0] ? r->ctr.pod : NULL);
		ct_json_kv_bool(&j, "live", r->live);
		ct_json_kv_str(&j, "status", r->status);
		ct_json_kv_str(&j, "runtime", r->runtime[0] ? r->runtime : NULL);
		ct_json_kv_str(&j, "assembly", r->assembly[0] ? r->assembly : NULL);
		ct_json_kv_str(&j, "socket", r->socket[0] ? r->socket : NULL);
		ct_json_kv_str(&j, "cmdline", r->cmdline);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);
	code = cli_json_out(&j, stdout);
	strbuf_release(&sb);
	return code;
}

int cmd_ps(int argc, char **argv)
{
	bool json = false, wide = false;
	struct ps_state s = { .timeout_ms = 1000 };
	const struct cli_option opts[] = {
		{ 0, "all", CLI_OPT_BOOL, &s.all, NULL,
		  "also list stale sockets in /tmp whose process is gone" },
		{ 'a', "all", CLI_OPT_BOOL | CLI_DEPRECATED, &s.all, NULL, "--all" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print a JSON array" },
		{ 'w', "wide", CLI_OPT_BOOL, &wide, NULL, "do not shorten command lines" },
		{ 0, "timeout", CLI_OPT_TIMEOUT, &s.timeout_ms, "DUR",
		  "how long to wait for each process to answer (default 1s)" },
		{ 0 },
	};
	int first, code, err;
	size_t i;

	if (cli_parse(argc, argv, "clrtap ps [--all] [--json] [-w]", opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "ps takes no arguments");
	err = proc_scan(scan_one, &s);
	if (!err)
		err = proc_scan_stale_sockets("/tmp", stale_cb, &s);
	if (err && err != -ENOENT)
		cli_warn("scan incomplete: %s", strerror(-err));
	if (s.nstale && !s.all)
		cli_info("%zu stale diagnostics socket%s in /tmp (processes gone): 'clrtap ps --all' "
			 "lists them",
			 s.nstale, s.nstale == 1 ? "" : "s");
	if (json)
		code = print_json(&s);
	else
		print_table(&s, wide);
	for (i = 0; i < s.n; i++)
		free(s.rows[i].cmdline);
	free(s.rows);
	return json ? code : EXIT_OK;
}
