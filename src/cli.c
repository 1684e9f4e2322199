/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <ctype.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <getopt.h>
#include <pthread.h>
#include <time.h>

#include "cli.h"
#include "common/io.h"
#include "common/strparse.h"
#include "flame/flame.h"
#include "task/task.h"
#include "common/term.h"
#include "common/clock.h"
#include "sym/sym.h"
#include "sym/sym_srv.h"

int cli_verbose;
const char *cli_cmd_name = "clrtap";

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char buf[2048];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* Strings may come from other processes: no control characters. */
	cli_print_line(stderr, prefix, buf);
}

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	bool on, stop;
	char what[160];
	int64_t total_ms;
	struct timespec t0;
} cd = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

void cli_print_line(FILE *f, const char *prefix, const char *msg)
{
	bool lock = cd.on;

	if (lock) {
		pthread_mutex_lock(&cd.mu);
		if (f == stderr)
			fputs("\r\033[K", stderr);
	}
	fprintf(f, "clrtap: %s%s\n", prefix, cli_safe(msg));
	if (lock)
		pthread_mutex_unlock(&cd.mu);
}

static void *countdown_main(void *arg)
{
	struct timespec now, until;

	(void)arg;
	pthread_mutex_lock(&cd.mu);
	while (!cd.stop) {
		double el;

		clock_gettime(CLOCK_MONOTONIC, &now);
		el = (double)(now.tv_sec - cd.t0.tv_sec) + (double)(now.tv_nsec - cd.t0.tv_nsec) / 1e9;
		if (cd.total_ms)
			fprintf(stderr, "\r\033[Kclrtap: %s: %.0f s of %.0f s (Ctrl-C stops)", cd.what,
				el, (double)cd.total_ms / 1e3);
		else
			fprintf(stderr, "\r\033[Kclrtap: %s: %.0f s (Ctrl-C stops)", cd.what, el);
		fflush(stderr);
		ct_deadline(CLOCK_REALTIME, 250, &until);
		pthread_cond_timedwait(&cd.cv, &cd.mu, &until);
	}
	pthread_mutex_unlock(&cd.mu);
	return NULL;
}

void cli_countdown_start(const char *what, int64_t total_ms)
{
	if (cd.on || !isatty(STDERR_FILENO))
		return;
	snprintf(cd.what, sizeof(cd.what), "%s", cli_safe(what));
	cd.total_ms = total_ms;
	cd.stop = false;
	clock_gettime(CLOCK_MONOTONIC, &cd.t0);
	if (!pthread_create(&cd.thr, NULL, countdown_main, NULL))
		cd.on = true;
}

void cli_countdown_stop(void)
{
	if (!cd.on)
		return;
	pthread_mutex_lock(&cd.mu);
	cd.stop = true;
	pthread_cond_signal(&cd.cv);
	pthread_mutex_unlock(&cd.mu);
	pthread_join(cd.thr, NULL);
	cd.on = false;
	fputs("\r\033[K", stderr);
}

const char *cli_safe(const char *s)
{
	return ct_term_safe(s);
}

void cli_print_lines(FILE *f, struct strbuf *text)
{
	for (char *l = text->buf, *e; l && *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			break;
		*e = '\0';
		fprintf(f, "%s\n", cli_safe(l));
	}
}

int cli_json_out(struct ct_json *j, FILE *f)
{
	int err = ct_json_finish(j);

	if (!err)
		(void)strbuf_addch(j->sb, '\n');
	if (!err)
		err = strbuf_fwrite(j->sb, f);
	if (err)
		return cli_error(EXIT_ERROR, "cannot write the JSON output: %s", strerror(-err));
	return EXIT_OK;
}

int cli_json_flush(struct ct_json *j, FILE *f)
{
	int err = j->err ? j->err : strbuf_fwrite(j->sb, f);

	if (!err)
		strbuf_reset(j->sb);
	return err;
}

int cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	return code;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void cli_log_sink(void *ctx, enum ct_log_level level, const char *msg)
{
	(void)ctx;
	if (level == CT_LOG_WARN)
		cli_warn("%s", msg);
	else if (level == CT_LOG_INFO)
		cli_info("%s", msg);
}

void cli_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int cli_parse_duration(const char *s, int64_t *ms)
{
	return ct_parse_duration(s, ms);
}

int cli_parse_timeout(const char *s, int *ms, bool *legacy_ms)
{
	int64_t v;
	size_t n = strspn(s, "0123456789");

	*legacy_ms = false;
	if (cli_parse_duration(s, &v))
		return -EINVAL;
	/* Before 0.1 a bare --timeout was milliseconds: "5000" stays 5 s, with a warning. */
	if (n && !s[n] && v >= 1000 * 1000) {
		v /= 1000;
		*legacy_ms = true;
	}
	if (v <= 0 || v > 3600 * 1000)
		return -ERANGE;
	*ms = (int)v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *unit;
		unsigned shift;
	} units[] = { { "", 0 }, { "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		      { "G", 30 }, { "GiB", 30 } };
	uint64_t v = 0;
	const char *p = s;
	size_t i;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcasecmp(p, units[i].unit))
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
			return -EINVAL;
		*bytes = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

int cli_outfile_open(struct cli_outfile *f, const char *out)
{
	const char *slash = strrchr(out, '/');
	struct strbuf dir = STRBUF_INIT;
	mode_t mask;
	int e;

	memset(f, 0, sizeof(*f));
	strbuf_init(&f->tmp, 0);
	f->fd = -1;
	/* An unnamed file in the output's directory: nothing to leave behind if clrtap dies. */
	if (!strbuf_add(&dir, out, slash ? (size_t)(slash - out) + 1 : 0) &&
	    !strbuf_addch(&dir, '.')) {
		f->fd = open(dir.buf, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
		f->anon = f->fd >= 0;
	}
	strbuf_release(&dir);
	if (f->anon)
		return EXIT_OK;
	/* File systems without O_TMPFILE: a named temporary beside the output. */
	mask = umask(0);
	umask(mask);
	if (strbuf_addf(&f->tmp, "%s.tmp-XXXXXX", out))
		return cli_error(EXIT_ERROR, "out of memory");
	f->fd = mkostemp(f->tmp.buf, O_CLOEXEC);
	if (f->fd < 0) {
		e = errno;
		strbuf_reset(&f->tmp);
		/* an output clrtap cannot write is 1 (exit-codes.md), whatever the errno */
		return cli_error(EXIT_ERROR, "cannot write %s: %s",
				 out, strerror(e));
	}
	(void)fchmod(f->fd, 0666 & ~mask); /* on failure the file stays private */
	return EXIT_OK;
}

int cli_outfile_keep(struct cli_outfile *f, const char *name)
{
	char proc[64];
	unsigned i;

	if (!f->anon) {
		if (!f->tmp.len)
			return -EBADF;
		if (rename(f->tmp.buf, name))
			return -errno;
		strbuf_reset(&f->tmp);
		return 0;
	}
	/* link the unnamed file under a fresh name, then rename it over name (atomic) */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	for (i = 0; i < 100; i++) {
		strbuf_reset(&f->tmp);
		if (strbuf_addf(&f->tmp, "%s.tmp-%d-%u", name, (int)getpid(), i))
			return -ENOMEM;
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp.buf, AT_SYMLINK_FOLLOW))
			break;
		if (errno != EEXIST) {
			strbuf_reset(&f->tmp);
			return -errno;
		}
	}
	if (i == 100) {
		strbuf_reset(&f->tmp);
		return -EEXIST;
	}
	if (rename(f->tmp.buf, name)) {
		int e = -errno;

		unlink(f->tmp.buf);
		strbuf_reset(&f->tmp);
		return e;
	}
	strbuf_reset(&f->tmp);
	f->anon = false; /* named now: nothing more to drop */
	return 0;
}

int cli_outfile_close(struct cli_outfile *f)
{
	int err = 0;

	if (f->fd >= 0 && close(f->fd))
		err = -errno;
	f->fd = -1;
	return err;
}

void cli_outfile_drop(struct cli_outfile *f)
{
	(void)cli_outfile_close(f);
	if (f->tmp.len)
		unlink(f->tmp.buf);
	strbuf_release(&f->tmp);
	f->anon = false;
}

int cli_write_file(const char *path, const char *buf, size_t len)
{
	struct cli_outfile of;
	int code, err;

	code = cli_outfile_open(&of, path);
	if (code)
		return code;
	err = ct_write_all(of.fd, buf, len);
	if (!err)
		err = cli_outfile_keep(&of, path);
	if (!err)
		err = cli_outfile_close(&of);
	if (err) {
		cli_outfile_drop(&of);
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-err));
	}
	strbuf_release(&of.tmp);
	return EXIT_OK;
}

int cli_write_flame(const char *path, const struct flame *f, int fmt, const struct flame_opts *fo)
{
	struct cli_outfile of;
	int code, err;

	code = cli_outfile_open(&of, path);
	if (code)
		return code;
	err = flame_write(f, (enum flame_format)fmt, of.fd, fo);
	if (!err)
		err = cli_outfile_keep(&of, path);
	if (cli_outfile_close(&of) && !err)
		err = errno ? -errno : -EIO;
	cli_outfile_drop(&of);
	if (err)
		return cli_error(EXIT_ERROR, "cannot write %s: %s", path, strerror(-err));
	return EXIT_OK;
}

static const char *type_name(enum cli_opt_type t)
{
	switch (t) {
	case CLI_OPT_BOOL: return "bool";
	case CLI_OPT_STRING: return "string";
	case CLI_OPT_INT: return "int";
	case CLI_OPT_PID: return "pid";
	case CLI_OPT_DURATION: return "duration";
	case CLI_OPT_TIMEOUT: return "timeout";
	case CLI_OPT_SIZE: return "size";
	case CLI_OPT_OUTPUT: return "output";
	default: break;
	}
	return "?";
}

int cli_check_output(const char *opt, const char *path)
{
	const char *slash = strrchr(path, '/');
	struct strbuf dir = STRBUF_INIT;
	struct stat st;
	int e = 0;

	if (!path[0])
		return cli_error(EXIT_ERROR, "--%s: an empty file name", opt);
	if (slash && !slash[1])
		return cli_error(EXIT_ERROR, "cannot write %s: it names a directory, not a file", path);
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			return cli_error(EXIT_ERROR, "cannot write %s: it is a directory (name a file in it)",
					 path);
		if (!S_ISREG(st.st_mode))
			return cli_error(EXIT_ERROR, "cannot write %s: it exists and is not a regular file",
					 path);
	}
	if (strbuf_add(&dir, path, slash ? (size_t)(slash - path) + 1 : 0) ||
	    strbuf_addch(&dir, '.'))
		return cli_error(EXIT_ERROR, "out of memory");
	if (stat(dir.buf, &st))
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir.buf, W_OK | X_OK))
		e = errno;
	strbuf_release(&dir);
	if (e == ENOENT || e == ENOTDIR)
		return cli_error(EXIT_ERROR, "cannot write %s: no folder %.*s", path,
				 (int)(slash - path > 0 ? slash - path : 1), path);
	if (e)
		return cli_error(EXIT_ERROR, "cannot write %s: its folder: %s", path, strerror(e));
	if (!access(path, F_OK))
		cli_info("note: %s exists: it is replaced when the new one is complete", path);
	return 0;
}

int cli_conflict(bool a, const char *aname, bool b, const char *bname, const char *why)
{
	if (!a || !b)
		return 0;
	return cli_error(EXIT_USAGE, "%s and %s do not go together%s%s", aname, bname,
			 why ? ": " : "", why ? why : "");
}

/* Every duration is written DUR (one syntax, given under the options). */
static const char *arg_name(const struct cli_option *o)
{
	enum cli_opt_type ty = o->type & CLI_OPT_TYPE_MASK;

	return ty == CLI_OPT_DURATION || ty == CLI_OPT_TIMEOUT ? "DUR" : o->argh;
}

static void print_help(FILE *f, const char *usage, const struct cli_option *opts)
{
	const struct cli_option *o;

	fprintf(f, "usage: %s\n\n", usage);
	for (o = opts; o->type != CLI_OPT_END; o++) {
		char left[64];

		const char *argh = arg_name(o);

		if (o->type & CLI_DEPRECATED)
			continue;
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->long_name,
				 argh ? " " : "", argh ? argh : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->long_name,
				 argh ? " " : "", argh ? argh : "");
		fprintf(f, "  %-26s %s\n", left, o->help);
	}
	fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
	for (o = opts; o->type != CLI_OPT_END; o++) {
		enum cli_opt_type ty = o->type & CLI_OPT_TYPE_MASK;

		if (ty == CLI_OPT_DURATION || ty == CLI_OPT_TIMEOUT) {
			fprintf(f, "\nDUR: 5, 5s, 1.5, 500ms, 2m or 1h (a bare number is seconds).\n");
			break;
		}
	}
}

/*
 * The option table as tab-separated lines, for scripts/gen-docs.sh (man
 * pages, completions) and t-cli.sh: "usage\tUSAGE", then one
 * "opt\tSHORT|-\tLONG\tTYPE\tARGH|-\tHELP\tdeprecated|-" per option.
 */
static void print_table(FILE *f, const char *usage, const struct cli_option *opts)
{
	const struct cli_option *o;
	char sh[2] = { 0 };

	fprintf(f, "usage\t%s\n", usage);
	for (o = opts; o->type != CLI_OPT_END; o++) {
		sh[0] = (char)o->short_name;
		fprintf(f, "opt\t%s\t%s\t%s\t%s\t%s\t%s\n", o->short_name ? sh : "-", o->long_name,
			type_name(o->type & CLI_OPT_TYPE_MASK), arg_name(o) ? arg_name(o) : "-", o->help,
			(o->type & CLI_DEPRECATED) ? "deprecated" : "-");
	}
}

int cli_parse(int argc, char **argv, const char *usage, const struct cli_option *opts,
	      int *first, int *code)
{
	struct option lopts[64];
	char sopts[160];
	size_t n = 0, s = 0, i;
	int c, ret = 0;

	if (argc > 1 && !strcmp(argv[1], "--help-table")) {
		print_table(stdout, usage, opts);
		*code = EXIT_OK;
		return 1;
	}
	/* GNU getopt permutes: options may come before or after positionals. */
	sopts[s++] = ':';
	for (i = 0; opts[i].type != CLI_OPT_END && n < ARRAY_SIZE(lopts) - 2; i++) {
		bool arg = (opts[i].type & CLI_OPT_TYPE_MASK) != CLI_OPT_BOOL, dup = false;
		size_t k;

		/* a deprecated short letter may share its long name with the new entry: one --NAME */
		for (k = 0; k < i && !dup; k++)
			dup = !strcmp(opts[k].long_name, opts[i].long_name);
		if (!dup) {
			lopts[n].name = opts[i].long_name;
			lopts[n].has_arg = arg ? required_argument : no_argument;
			lopts[n].flag = NULL;
			lopts[n].val = 256 + (int)i;
			n++;
		}
		if (opts[i].short_name && s < sizeof(sopts) - 3) {
			sopts[s++] = (char)opts[i].short_name;
			if (arg)
				sopts[s++] = ':';
		}
	}
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ NULL, 0, NULL, 0 };
	sopts[s++] = 'h';
	sopts[s] = '\0';

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		const struct cli_option *o = NULL;
		bool legacy = false;

		if (c == 'h') {
			print_help(stdout, usage, opts);
			*code = EXIT_OK;
			return 1;
		}
		if (c == '?' || c == ':') {
			/* one line; the options are one --help away */
			if (optopt && optopt < 256)
				cli_error(0, "%s option '-%c' (see 'clrtap %s --help')",
					  c == ':' ? "missing argument for" : "unknown", optopt,
					  cli_cmd_name);
			else
				cli_error(0, "%s option '%s' (see 'clrtap %s --help')",
					  c == ':' ? "missing argument for" : "unknown", argv[optind - 1],
					  cli_cmd_name);
			*code = EXIT_USAGE;
			return 1;
		}
		if (c >= 256) {
			o = &opts[c - 256];
		} else {
			for (i = 0; opts[i].type != CLI_OPT_END; i++)
				if (opts[i].short_name == c)
					o = &opts[i];
		}
		if (!o)
			continue;
		if ((o->type & CLI_DEPRECATED) && c < 256)
			cli_warn("-%c is deprecated here and will go: use %s", c, o->help);
		else if (o->type & CLI_DEPRECATED)
			cli_warn("--%s is deprecated and will go: use %s", o->long_name, o->help);
		switch (o->type & CLI_OPT_TYPE_MASK) {
		case CLI_OPT_BOOL:
			*(bool *)o->value = true;
			break;
		case CLI_OPT_STRING:
			*(const char **)o->value = optarg;
			break;
		case CLI_OPT_OUTPUT:
			if (cli_check_output(o->long_name, optarg)) {
				*code = EXIT_ERROR;
				return 1;
			}
			*(const char **)o->value = optarg;
			break;
		case CLI_OPT_INT:
			ret = ct_parse_int(optarg, (int *)o->value);
			break;
		case CLI_OPT_PID:
			ret = ct_parse_pid(optarg, (pid_t *)o->value);
			break;
		case CLI_OPT_DURATION:
			ret = cli_parse_duration(optarg, (int64_t *)o->value);
			break;
		case CLI_OPT_TIMEOUT:
			ret = cli_parse_timeout(optarg, (int *)o->value, &legacy);
			if (legacy)
				cli_warn("--%s %s read as milliseconds (deprecated): write %sms, or "
					 "seconds (a bare number is seconds below 1000)",
					 o->long_name, optarg, optarg);
			else if (!ret && optarg[strspn(optarg, "0123456789")] == '\0' &&
				 *(int *)o->value >= 60000)
				cli_warn("--%s %s is %s seconds (a bare number is seconds; write %sms "
					 "for milliseconds)", o->long_name, optarg, optarg, optarg);
			break;
		case CLI_OPT_SIZE:
			ret = cli_parse_size(optarg, (uint64_t *)o->value);
			break;
		case CLI_OPT_END:
			break;
		}
		if (ret) {
			enum cli_opt_type ty = o->type & CLI_OPT_TYPE_MASK;

			if (ty == CLI_OPT_DURATION || ty == CLI_OPT_TIMEOUT)
				cli_error(0, "invalid duration '%s' for --%s: say 5, 5s, 1.5, 500ms, 2m%s",
					  optarg, o->long_name,
					  ty == CLI_OPT_TIMEOUT ? " (more than 0, at most 1h)" : "");
			else
				cli_error(0, "invalid value '%s' for --%s", optarg, o->long_name);
			*code = EXIT_USAGE;
			return 1;
		}
	}
	*first = optind;
	return 0;
}

int cli_symbols_configure(const struct cli_symbol_opts *o)
{
	struct sym_srv_opts so = { .servers = o->server, .debuginfod = o->debuginfod,
				   .cache_dir = o->cache };
	char why[256];

	if (sym_srv_configure(&so, why, sizeof(why)))
		return cli_error(EXIT_USAGE, "%s", why);
	return 0;
}

void cli_print_native_note(struct sym_proc *sp)
{
	struct strbuf sb = STRBUF_INIT_MAX(65536);
	char *line, *save = NULL;

	if (sp && !sym_proc_native_note(sp, &sb) && sb.len)
		for (line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			printf("%s\n", cli_safe(line));
	strbuf_release(&sb);
}

int cli_resolve_target(const struct cli_target_opts *o, struct proc_target *t,
		       struct ipc_endpoint *ep)
{
	pid_t pid = o->pid;
	int err;

	if (o->name && !o->name[0])
		return cli_error(EXIT_USAGE, "-n: an empty name");
	if (!o->pid && !o->name)
		return cli_error(EXIT_USAGE, "no target: give -p PID or -n NAME");
	if (o->pid && o->name)
		return cli_error(EXIT_USAGE, "give either -p or -n, not both");
	if (o->name) {
		pid_t pids[16];
		size_t n = 0, i, live = 0;

		err = proc_find_by_name(o->name, pids, ARRAY_SIZE(pids), &n);
		if (err)
			return cli_error(EXIT_ERROR, "cannot scan /proc: %s", strerror(-err));
		/* Among the name matches keep those with a diagnostics socket. */
		for (i = 0; i < n && i < ARRAY_SIZE(pids); i++) {
			struct proc_target cand;

			if (!proc_target_find(pids[i], &cand)) {
				*t = cand;
				pid = pids[i];
				live++;
			}
		}
		if (n == 0)
			return cli_error(EXIT_NO_PROCESS, "no process named '%s'", o->name);
		if (live == 0)
			return cli_error(EXIT_NOT_DOTNET,
					 "no .NET process named '%s' (%zu process%s matched, none "
					 "has a diagnostics socket)",
					 o->name, n, n == 1 ? "" : "es");
		if (live > 1)
			return cli_error(EXIT_USAGE,
					 "%zu .NET processes are named '%s': choose one with -p "
					 "(see 'clrtap ps')",
					 live, o->name);
	}
	/* With -n the single live match is already in t. */
	err = o->name ? 0 : proc_target_find(pid, t);
	if (err) {
		char why[PROC_PATH_MAX * 2 + 256];

		proc_target_strerror(pid, err, t, why, sizeof(why));
		return cli_error(ct_exit_for(err), "%s", why);
	}
	ipc_endpoint_init(ep, t, o->timeout_ms);
	/* Before any command: is the process behind the socket the target? */
	{
		struct ipc_error rerr;

		err = ipc_peer_verify_major(ep, &t->runtime_major, &rerr);
		if (err == -EACCES || err == -EPERM) {
			char why[400];

			/* connect() needs write permission on the socket (mode 0600) */
			if (!proc_access_explain(t->uid, why, sizeof(why)))
				return cli_error(EXIT_PERMISSION,
						 "not allowed to inspect pid %d (owned by uid %u): its "
						 "diagnostics socket refused the connection: %s",
						 (int)pid, (unsigned)t->uid, why);
		}
		if (err)
			return cli_ipc_error("cannot use the diagnostics socket", err, &rerr);
	}
	return EXIT_OK;
}

int cli_ipc_error(const char *what, int err, const struct ipc_error *rerr)
{
	char buf[512];

	ipc_strerror(err, rerr, buf, sizeof(buf));
	return cli_error(ct_exit_for(err), "%s: %s", what, buf);
}

volatile sig_atomic_t cli_stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	/* counts the signals (a task stops its processing on a further one) */
	if (cli_stop_requested < 100)
		cli_stop_requested++;
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ----- defaults from the task table ----- */

static const struct task_value *task_default(const char *task, const char *param, struct task_args *a)
{
	const struct task *t = task_find(task);

	if (!t || task_args_init(a, t, 0))
		return NULL;
	return task_arg(a, param);
}

int64_t cli_task_default_ms(const char *task, const char *param, int64_t fallback)
{
	struct task_args a;
	const struct task_value *v = task_default(task, param, &a);
	int64_t ms = v ? (int64_t)(v->d * 1000 + 0.5) : fallback;

	task_args_release(&a);
	return ms;
}

long long cli_task_default_int(const char *task, const char *param, long long fallback)
{
	struct task_args a;
	const struct task_value *v = task_default(task, param, &a);
	long long x = v ? v->i : fallback;

	task_args_release(&a);
	return x;
}

const char *cli_task_help(const char *task, const char *param, const char *extra, char *buf, size_t len)
{
	const struct task *t = task_find(task);
	size_t i;

	snprintf(buf, len, "%s", extra ? extra : "");
	for (i = 0; t && i < t->nparams; i++) {
		const struct task_param *p = &t->params[i];

		if (strcmp(p->name, param))
			continue;
		snprintf(buf, len, "%s (default %s%s%s%s)", p->help, p->def ? p->def : "none",
			 p->type == TASK_P_DURATION && p->def && !p->def[strspn(p->def, "0123456789.")] ? "s" : "",
			 extra ? "; " : "", extra ? extra : "");
	}
	return buf;
}
