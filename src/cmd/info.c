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
	ct_sanitize(l->v[l->n]);
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
		printf("container:        %s%s%s\n", ctr.id[0] ? ctr.id : "-",
		       ctr.pod[0] ? ", Kubernetes pod uid " : "", ctr.pod);
	printf("runtime version:  %s\n", pi->clr_version ? pi->clr_version : "(not reported)");
	printf("entry assembly:   %s\n", pi->assembly ? pi->assembly : "(not reported)");
	printf("os / arch:        %s / %s\n", pi->os ? pi->os : "?", pi->arch ? pi->arch : "?");
	if (pi->rid)
		printf("runtime id:       %s\n", pi->rid);
	printf("command line:     %s\n", pi->cmdline ? pi->cmdline : "");
	printf("runtime cookie:   %s\n", cookie);
	printf("socket:           %s%s\n", t->socket, t->key_match ? "" : " (key not matched)");
	printf("temp dir:         %s\n", t->tmpdir);
	printf("perf map:         %s%s%s%s\n", pm->on ? "on" : "off",
	       pm->env_setting[0] ? " (DOTNET_PerfMapEnabled=" : "", pm->env_setting,
	       pm->env_setting[0] ? " at start)" : "");
	printf("perf map file:    %s%s\n", pm->map_path, pm->map_exists ? "" : " (absent)");
	printf("jitdump file:     %s%s\n", pm->jitdump_path, pm->jitdump_exists ? "" : " (absent)");
	if (env) {
		printf("environment:\n");
		for (i = 0; i < env->n; i++)
			printf("  %s\n", env->v[i]);
	}
}

static void print_json(const struct proc_target *t, const struct ipc_process_info *pi,
		       const struct proc_perfmap *pm, const struct env_list *env)
{
	struct strbuf sb = STRBUF_INIT;
	struct proc_container ctr;
	size_t i;

	(void)proc_container(t->pid, &ctr);
	(void)strbuf_addch(&sb, '{');
	cli_json_u64(&sb, "pid", (uint64_t)t->pid, false);
	cli_json_u64(&sb, "nspid", pi->pid, true);
	cli_json_bool(&sb, "other_pid_namespace", t->other_pidns, true);
	cli_json_bool(&sb, "other_mount_namespace", t->other_mntns, true);
	cli_json_str(&sb, "container", ctr.id[0] ? ctr.id : NULL, true);
	cli_json_str(&sb, "pod_uid", ctr.pod[0] ? ctr.pod : NULL, true);
	cli_json_str(&sb, "runtime_version", pi->clr_version, true);
	cli_json_str(&sb, "entry_assembly", pi->assembly, true);
	cli_json_str(&sb, "os", pi->os, true);
	cli_json_str(&sb, "arch", pi->arch, true);
	cli_json_str(&sb, "rid", pi->rid, true);
	cli_json_str(&sb, "cmdline", pi->cmdline, true);
	cli_json_str(&sb, "socket", t->socket, true);
	cli_json_str(&sb, "tmpdir", t->tmpdir, true);
	cli_json_u64(&sb, "process_info_version", pi->version, true);
	cli_json_str(&sb, "perfmap", pm->on ? "on" : "off", true);
	cli_json_str(&sb, "perfmap_file", pm->map_path, true);
	cli_json_str(&sb, "jitdump_file", pm->jitdump_path, true);
	if (env) {
		(void)strbuf_addstr(&sb, ",\"environment\":{");
		for (i = 0; i < env->n; i++) {
			char *eq = strchr(env->v[i], '=');

			if (!eq)
				continue;
			*eq = '\0';
			cli_json_str(&sb, env->v[i], eq + 1, i > 0);
			*eq = '=';
		}
		(void)strbuf_addch(&sb, '}');
	}
	(void)strbuf_addstr(&sb, "}\n");
	fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
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
	if (pi.cmdline)
		ct_sanitize(pi.cmdline);
	proc_perfmap_state(&t, &pm);
	if (json)
		print_json(&t, &pi, &pm, want_env ? &env : NULL);
	else
		print_text(&t, &pi, &pm, want_env ? &env : NULL);
	code = EXIT_OK;
out:
	for (i = 0; i < env.n; i++)
		free(env.v[i]);
	free(env.v);
	ipc_process_info_release(&pi);
	return code;
}
