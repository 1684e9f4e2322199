/* SPDX-License-Identifier: MIT */
/*
 * clrtap info - what a .NET process is: runtime, command line, socket,
 * namespaces, perf map state and (with --env) its environment.
 */
#include "common/compat.h"

#include "cli.h"

struct env_list {
	char **v;
	size_t n, alloc;
};

static int env_add(const char *entry, void *ctx)
{
	struct env_list *l = ctx;

	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 64;
		char **nv = reallocarray(l->v, na, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->alloc = na;
	}
	l->v[l->n] = strdup(entry);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_text(const struct proc_target *t, const struct ipc_process_info *pi,
		       const struct proc_perfmap *pm, const struct env_list *env)
{
	struct proc_container ctr;
	char cookie[40];
	size_t i;

	/* every string below may come from the target: through cli_safe() */
	(void)proc_container(t->pid, &ctr);
	for (i = 0; i < 16; i++)
		snprintf(cookie + 2 * i, 3, "%02x", pi->cookie[i]);
	printf("pid:              %d\n", (int)t->pid);
	printf("pid in namespace: %d\n", (int)pi->pid);
	printf("namespaces:       %s\n",
	       t->other_pidns || t->other_mntns
		       ? (t->other_pidns && t->other_mntns ? "own pid + mount namespace"
			  : t->other_pidns		     ? "own pid namespace"
							     : "own mount namespace")
		       : "same as clrtap");
	if (ctr.id[0] || ctr.pod[0])
		printf("container:        %s%s%s\n", ctr.id[0] ? cli_safe(ctr.id) : "-",
		       ctr.pod[0] ? ", Kubernetes pod uid " : "", cli_safe(ctr.pod));
	printf("runtime version:  %s\n",
	       pi->clr_version ? cli_safe(pi->clr_version) : "(not reported)");
	printf("entry assembly:   %s\n", pi->assembly ? cli_safe(pi->assembly) : "(not reported)");
	printf("os / arch:        %s / %s\n", pi->os ? cli_safe(pi->os) : "?",
	       pi->arch ? cli_safe(pi->arch) : "?");
	if (pi->rid)
		printf("runtime id:       %s\n", cli_safe(pi->rid));
	printf("command line:     %s\n", pi->cmdline ? cli_safe(pi->cmdline) : "");
	printf("runtime cookie:   %s\n", cookie);
	printf("socket:           %s%s\n", cli_safe(t->socket),
	       t->key_match ? "" : " (key not matched)");
	printf("temp dir:         %s\n", cli_safe(t->tmpdir));
	printf("perf map:         %s%s%s%s\n", pm->on ? "on" : "off",
	       pm->env_setting[0] ? " (DOTNET_PerfMapEnabled=" : "", cli_safe(pm->env_setting),
	       pm->env_setting[0] ? " at start)" : "");
	printf("perf map file:    %s%s\n", cli_safe(pm->map_path),
	       pm->map_exists ? "" : " (absent)");
	printf("jitdump file:     %s%s\n", cli_safe(pm->jitdump_path),
	       pm->jitdump_exists ? "" : " (absent)");
	if (env) {
		printf("environment:\n");
		for (i = 0; i < env->n; i++)
			printf("  %s\n", cli_safe(env->v[i]));
	}
}

/*
 * The environment as an object of name: value. The name is what precedes
 * the first '=', the value what follows it; an entry without '=' has the
 * value null, and one starting with '=' the empty name "". Names and values
 * are the exact strings (common/json.h); a name that occurs twice is written
 * twice.
 */
static int print_json(const struct proc_target *t, const struct ipc_process_info *pi,
		      const struct proc_perfmap *pm, const struct env_list *env)
{
	struct strbuf sb = STRBUF_INIT;
	struct proc_container ctr;
	struct ct_json j;
	size_t i;
	int code;

	(void)proc_container(t->pid, &ctr);
	ct_json_init(&j, &sb);
	ct_json_obj_begin(&j);
	ct_json_kv_u64(&j, "pid", (uint64_t)t->pid);
	ct_json_kv_u64(&j, "nspid", pi->pid);
	ct_json_kv_bool(&j, "other_pid_namespace", t->other_pidns);
	ct_json_kv_bool(&j, "other_mount_namespace", t->other_mntns);
	ct_json_kv_str(&j, "container", ctr.id[0] ? ctr.id : NULL);
	ct_json_kv_str(&j, "pod_uid", ctr.pod[0] ? ctr.pod : NULL);
	ct_json_kv_str(&j, "runtime_version", pi->clr_version);
	ct_json_kv_str(&j, "entry_assembly", pi->assembly);
	ct_json_kv_str(&j, "os", pi->os);
	ct_json_kv_str(&j, "arch", pi->arch);
	ct_json_kv_str(&j, "rid", pi->rid);
	ct_json_kv_str(&j, "cmdline", pi->cmdline);
	ct_json_kv_str(&j, "socket", t->socket);
	ct_json_kv_str(&j, "tmpdir", t->tmpdir);
	ct_json_kv_u64(&j, "process_info_version", pi->version);
	ct_json_kv_str(&j, "perfmap", pm->on ? "on" : "off");
	ct_json_kv_str(&j, "perfmap_file", pm->map_path);
	ct_json_kv_str(&j, "jitdump_file", pm->jitdump_path);
	if (env) {
		ct_json_kv_obj_begin(&j, "environment");
		for (i = 0; i < env->n; i++) {
			const char *e = env->v[i];
			size_t n = strcspn(e, "=");

			ct_json_keyn(&j, e, n);
			ct_json_str(&j, e[n] ? e + n + 1 : NULL);
		}
		ct_json_obj_end(&j);
	}
	ct_json_obj_end(&j);
	code = cli_json_out(&j, stdout);
	strbuf_release(&sb);
	return code;
}

int cmd_info(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	bool json = false, want_env = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 0, "env", CLI_OPT_BOOL, &want_env, NULL, "also print the environment" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print JSON" },
		{ 0 },
	};
	struct env_list env = { 0 };
	struct ipc_process_info pi;
	struct ipc_error rerr;
	struct ipc_endpoint ep;
	struct proc_target t;
	struct proc_perfmap pm;
	int first, code, err;
	size_t i;

	if (cli_parse(argc, argv, "clrtap info (-p PID | -n NAME) [--env] [--json]", opts, &first,
		      &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	err = ipc_process_info(&ep, &pi, &rerr);
	if (err)
		return cli_ipc_error("cannot read process info", err, &rerr);
	if (want_env) {
		err = ipc_process_env(&ep, env_add, &env, &rerr);
		if (err) {
			code = cli_ipc_error("cannot read the environment", err, &rerr);
			goto out;
		}
		qsort(env.v, env.n, sizeof(*env.v), cmp_str);
	}
	proc_perfmap_state(&t, &pm);
	if (json) {
		code = print_json(&t, &pi, &pm, want_env ? &env : NULL);
	} else {
		print_text(&t, &pi, &pm, want_env ? &env : NULL);
		code = EXIT_OK;
	}
out:
	for (i = 0; i < env.n; i++)
		free(env.v[i]);
	free(env.v);
	ipc_process_info_release(&pi);
	return code;
}
