/* SPDX-License-Identifier: MIT */
/*
 * clrtap perfmap - turn the runtime's perf map / jitdump on or off at run
 * time (.NET 8+), the IPC equivalent of DOTNET_PerfMapEnabled without a
 * restart, and say where the files are from here.
 */
#include "common/compat.h"

#include "cli.h"

static int parse_type(const char *s, enum ipc_perfmap_type *type)
{
	if (!strcmp(s, "all"))
		*type = IPC_PERFMAP_ALL;
	else if (!strcmp(s, "jitdump"))
		*type = IPC_PERFMAP_JITDUMP;
	else if (!strcmp(s, "perfmap"))
		*type = IPC_PERFMAP_PERFMAP;
	else
		return -EINVAL;
	return 0;
}

static int print_state(const struct proc_target *t, bool json)
{
	struct proc_perfmap pm;

	if (proc_perfmap_state(t, &pm)) {
		cli_warn("cannot tell where the perf map files are");
		return EXIT_OK;
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;
		int code;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t->pid);
		ct_json_kv_str(&j, "perfmap", pm.on ? "on" : "off");
		ct_json_kv_str(&j, "perfmap_file", pm.map_path);
		ct_json_kv_bool(&j, "perfmap_file_exists", pm.map_exists);
		ct_json_kv_str(&j, "jitdump_file", pm.jitdump_path);
		ct_json_kv_bool(&j, "jitdump_file_exists", pm.jitdump_exists);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
		return code;
	}
	printf("perf map: %s\n", pm.on ? "on" : "off");
	printf("perf map file: %s%s\n", cli_safe(pm.map_path), pm.map_exists ? "" : " (absent)");
	printf("jitdump file:  %s%s\n", cli_safe(pm.jitdump_path),
	       pm.jitdump_exists ? "" : " (absent)");
	return EXIT_OK;
}

int cmd_perfmap(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	const char *type_s = "all";
	bool json = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		{ 't', "type", CLI_OPT_STRING, &type_s, "TYPE",
		  "with 'on': all (perf map + jitdump, default), perfmap, jitdump" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the resulting state as JSON" },
		{ 0 },
	};
	enum ipc_perfmap_type type;
	struct ipc_endpoint ep;
	struct ipc_error rerr;
	struct proc_target t;
	const char *action;
	int first, code, err;

	if (cli_parse(argc, argv, "clrtap perfmap (-p PID | -n NAME) on|off|status [--type TYPE]",
		      opts, &first, &code))
		return code;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "say 'on', 'off' or 'status'");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	action = argv[first];
	if (strcmp(action, "on") && strcmp(action, "off") && strcmp(action, "status"))
		return cli_error(EXIT_USAGE, "unknown action '%s': say 'on', 'off' or 'status'",
				 action);
	if (parse_type(type_s, &type))
		return cli_error(EXIT_USAGE, "unknown perf map type '%s'", type_s);
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	if (!strcmp(action, "on")) {
		err = ipc_perfmap_enable(&ep, type, &rerr);
		if (err == -EREMOTEIO && rerr.hresult == IPC_E_UNKNOWN_COMMAND)
			return cli_error(EXIT_RUNTIME, "this runtime cannot turn perf maps on at run "
						       "time (needs .NET 8 or later)");
		if (err)
			return cli_ipc_error("cannot enable the perf map", err, &rerr);
	} else if (!strcmp(action, "off")) {
		err = ipc_perfmap_disable(&ep, &rerr);
		if (err == -EREMOTEIO && rerr.hresult == IPC_E_UNKNOWN_COMMAND)
			return cli_error(EXIT_RUNTIME, "this runtime cannot turn perf maps off at run "
						       "time (needs .NET 8 or later)");
		if (err)
			return cli_ipc_error("cannot disable the perf map", err, &rerr);
	}
	return print_state(&t, json);
}
