/* SPDX-License-Identifier: MIT */
/*
 * clrtap symbols - how the native libraries of a process are named, and a
 * prefetch: every library mapped executable is loaded, so the symbol
 * sources given (--symbol-server, --debuginfod) are asked for the debug
 * files of the stripped ones, which land in the cache for later profiles
 * (an offline machine then names them). docs/cmd/symbols.md.
 */
#include "common/compat.h"

#include "cli.h"
#include "sym/sym.h"
#include "sym/sym_srv.h"

#define MAX_LIBS 4096

static const char *names_word(enum sym_native_names n)
{
	switch (n) {
	case SYM_NAMES_SYMTAB:
		return "symtab";
	case SYM_NAMES_DEBUG_FILE:
		return "debug_file";
	case SYM_NAMES_SERVED:
		return "served";
	default:
		return "address_only";
	}
}

static void hex(const uint8_t *id, size_t len, char *out)
{
	size_t i;

	out[0] = '\0';
	for (i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

int cmd_symbols(int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	struct cli_symbol_opts so = { 0 };
	bool json = false;
	const struct cli_option opts[] = {
		CLI_TARGET_OPTIONS(&to),
		CLI_SYMBOL_OPTIONS(&so),
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "the libraries as JSON" },
		{ 0 },
	};
	struct sym_opts sopt = { .no_perfmap = true };
	struct sym_native_image *v;
	struct sym_proc *sp = NULL;
	struct ipc_endpoint ep;
	struct proc_target t;
	size_t n = 0, i, shown, address_only = 0;
	char id[129];
	int first, code, err;

	if (cli_parse(argc, argv,
		      "clrtap symbols (-p PID | -n NAME) [--symbol-server URL] [--debuginfod URLS] "
		      "[--symbol-cache DIR] [--json]",
		      opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	code = cli_symbols_configure(&so);
	if (code)
		return code;
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		return code;
	sopt.cache_dir = getenv("CLRTAP_CACHE_DIR");
	err = sym_proc_open(&sp, t.pid, &sopt);
	if (err)
		return cli_error(ct_exit_for(err), "cannot read the libraries of pid %d: %s",
				 (int)t.pid, strerror(-err));
	v = calloc(MAX_LIBS, sizeof(*v));
	if (!v) {
		sym_proc_close(sp);
		return cli_error(EXIT_ERROR, "out of memory");
	}
	(void)sym_proc_native_images(sp, v, MAX_LIBS, &n);
	shown = n < MAX_LIBS ? n : MAX_LIBS;
	for (i = 0; i < shown; i++)
		address_only += v[i].names == SYM_NAMES_ADDRESS_ONLY;
	if (json) {
		struct strbuf sb = STRBUF_INIT;
		struct ct_json j;

		ct_json_init(&j, &sb);
		ct_json_obj_begin(&j);
		ct_json_kv_u64(&j, "pid", (uint64_t)t.pid);
		ct_json_kv_u64(&j, "libraries_count", n);
		ct_json_kv_u64(&j, "address_only_count", address_only);
		ct_json_kv_bool(&j, "servers_configured", sym_srv_servers());
		ct_json_kv_arr_begin(&j, "libraries");
		for (i = 0; i < shown; i++) {
			ct_json_obj_begin(&j);
			ct_json_kv_str(&j, "path", v[i].path);
			ct_json_kv_str(&j, "module", v[i].module);
			hex(v[i].build_id, v[i].build_id_len, id);
			if (v[i].build_id_len)
				ct_json_kv_str(&j, "build_id", id);
			else
				ct_json_kv_null(&j, "build_id");
			ct_json_kv_str(&j, "names", names_word(v[i].names));
			if (v[i].names == SYM_NAMES_SERVED)
				ct_json_kv_str(&j, "source",
					       sym_srv_source_name((enum sym_srv_source)v[i].source));
			else
				ct_json_kv_null(&j, "source");
			ct_json_obj_end(&j);
		}
		ct_json_arr_end(&j);
		ct_json_obj_end(&j);
		code = cli_json_out(&j, stdout);
		strbuf_release(&sb);
	} else {
		printf("pid %d: %zu native libraries mapped executable; %zu named by address only\n",
		       (int)t.pid, n, address_only);
		printf("%-26s %-40s %s\n", "names", "build-id", "library");
		for (i = 0; i < shown; i++) {
			char w[64];

			if (v[i].names == SYM_NAMES_SERVED)
				snprintf(w, sizeof(w), "served (%s)",
					 sym_srv_source_name((enum sym_srv_source)v[i].source));
			else
				snprintf(w, sizeof(w), "%s", names_word(v[i].names));
			hex(v[i].build_id, v[i].build_id_len, id);
			printf("%-26s %-40s %s\n", w, v[i].build_id_len ? id : "-",
			       cli_safe(v[i].path));
		}
		if (address_only && !sym_srv_servers())
			printf("(--symbol-server or --debuginfod fetch their debug files into the cache: "
			       "docs/internals/symsrv.md)\n");
		code = EXIT_OK;
	}
	free(v);
	sym_proc_close(sp);
	return code;
}
