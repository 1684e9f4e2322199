/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <ctype.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <getopt.h>

#include "cli.h"
#include "common/strparse.h"
#include "common/term.h"

int cli_verbose;
const char *cli_cmd_name = "clrtap";

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char buf[2048];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* Strings may come from other processes: no control characters. */
	cli_print_line(stderr, prefix, buf);
}

void cli_print_line(FILE *f, const char *prefix, const char *msg)
{
	fprintf(f, "clrtap: %s%s\n", prefix, cli_safe(msg));
}

const char *cli_safe(const char *s)
{
	return ct_term_safe(s);
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

void cli_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int cli_parse_duration(const char *s, int64_t *ms)
{
	int64_t whole = 0, frac = 0, scale = 100;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 30 * 86400)
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (!scale)
				return -EINVAL; /* finer than a millisecond */
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p || (whole == 30 * 86400 && frac))
		return -EINVAL;
	*ms = whole * 1000 + frac;
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
		return cli_error(e == EACCES ? EXIT_PERMISSION : EXIT_ERROR, "cannot write %s: %s",
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

static void print_help(FILE *f, const char *usage, const struct cli_option *opts)
{
	const struct cli_option *o;

	fprintf(f, "usage: %s\n\n", usage);
	for (o = opts; o->type != CLI_OPT_END; o++) {
		char left[64];

		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->long_name,
				 o->argh ? " " : "", o->argh ? o->argh : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->long_name,
				 o->argh ? " " : "", o->argh ? o->argh : "");
		fprintf(f, "  %-26s %s\n", left, o->help);
	}
	fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
}

int cli_parse(int argc, char **argv, const char *usage, const struct cli_option *opts,
	      int *first, int *code)
{
	struct option lopts[64];
	char sopts[160];
	size_t n = 0, s = 0, i;
	int c, ret = 0;

	/* GNU getopt permutes: options may come before or after positionals. */
	sopts[s++] = ':';
	for (i = 0; opts[i].type != CLI_OPT_END && n < ARRAY_SIZE(lopts) - 2; i++) {
		bool arg = opts[i].type != CLI_OPT_BOOL;

		lopts[n].name = opts[i].long_name;
		lopts[n].has_arg = arg ? required_argument : no_argument;
		lopts[n].flag = NULL;
		lopts[n].val = 256 + (int)i;
		n++;
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

		if (c == 'h') {
			print_help(stdout, usage, opts);
			*code = EXIT_OK;
			return 1;
		}
		if (c == '?' || c == ':') {
			if (optopt && optopt < 256)
				cli_error(0, "%s option '-%c'", c == ':' ? "missing argument for" : "unknown",
					  optopt);
			else
				cli_error(0, "%s option '%s'", c == ':' ? "missing argument for" : "unknown",
					  argv[optind - 1]);
			print_help(stderr, usage, opts);
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
		switch (o->type) {
		case CLI_OPT_BOOL:
			*(bool *)o->value = true;
			break;
		case CLI_OPT_STRING:
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
		case CLI_OPT_SIZE:
			ret = cli_parse_size(optarg, (uint64_t *)o->value);
			break;
		case CLI_OPT_END:
			break;
		}
		if (ret) {
			cli_error(0, "invalid value '%s' for --%s", optarg, o->long_name);
			*code = EXIT_USAGE;
			return 1;
		}
	}
	*first = optind;
	return 0;
}

int cli_resolve_target(const struct cli_target_opts *o, struct proc_target *t,
		       struct ipc_endpoint *ep)
{
	pid_t pid = o->pid;
	int err;

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
	cli_stop_requested = 1;
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
