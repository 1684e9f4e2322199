/* SPDX-License-Identifier: MIT */
/*
 * clrtap counters monitor|collect - EventCounters and Meters of a live
 * process, read from an EventPipe session as they are published: a table
 * redrawn each interval (or timestamped lines), or a CSV/JSON file.
 */
#include "common/compat.h"

#include <signal.h>
#include <time.h>

#include "cli.h"
#include "counters/counters.h"
#include "live/live.h"

enum out_mode { OUT_TABLE, OUT_LINES, OUT_CSV, OUT_JSON };

struct run {
	enum out_mode mode;
	FILE *out;
	const struct counters_spec *spec;
	struct counters_table table;
	unsigned interval;
	pid_t pid;
	bool dirty;
	uint64_t nvalues;
	int werr;   /* first write error on the output file */
	uint64_t max_size; /* collect: --max-size (0: no cap) */
	bool full;         /* the file reached it: no more values, the session stops */
	struct strbuf jsb; /* --format json: the document, flushed value by value */
	struct ct_json j;
};

/* ----- outputs ----- */

static void csv_field(FILE *f, const char *s, bool last)
{
	if (strpbrk(s, ",\"\n\r")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
	fputc(last ? '\n' : ',', f);
}

/* One element of "values" (lib/counters), written out as it comes. */
static int json_value(struct run *r, const struct counters_value *v, const char *ts)
{
	counters_json_value(&r->j, v, ts);
	return cli_json_flush(&r->j, r->out);
}

/* Each value of the session (lib/counters counters_run: filtered, interval and time set). */
static int on_value(void *ctx, const struct counters_value *cv, const char *ts)
{
	struct run *r = ctx;
	const struct counters_value v = *cv;
	char num[64], units[300], label[1024];
	int err;

	if ((r->mode == OUT_CSV || r->mode == OUT_JSON) && r->max_size) {
		off_t at = ftello(r->out);

		if (r->full)
			return 1;
		if (at >= 0 && (uint64_t)at >= r->max_size) {
			r->full = true;
			cli_stop_requested = 1; /* a normal stop: the file so far is kept as .partial */
			return 1;
		}
	}
	switch (r->mode) {
	case OUT_TABLE:
		err = counters_table_update(&r->table, &v);
		if (err == -E2BIG)
			return 1; /* the table is full: new series are left out */
		if (err)
			return err;
		r->dirty = true;
		break;
	case OUT_LINES:
		counters_fmt_display(v.value, v.units, v.kind, r->interval, false, num, sizeof(num), units,
			    sizeof(units));
		counters_series_label(v.name, v.tags, label, sizeof(label));
		fprintf(r->out, "%s %s %s %s%s%s\n", ts, cli_safe(v.source), cli_safe(label), num,
			*units ? " " : "", cli_safe(units));
		fflush(r->out);
		break;
	case OUT_CSV:
		counters_fmt_exact(v.value, num, sizeof(num));
		snprintf(units, sizeof(units), "%g", v.interval_sec);
		csv_field(r->out, ts, false);
		csv_field(r->out, v.source, false);
		csv_field(r->out, v.meter ? "meter" : "eventcounters", false);
		csv_field(r->out, v.name, false);
		csv_field(r->out, v.tags, false);
		csv_field(r->out, counters_kind_name(v.kind), false);
		csv_field(r->out, strcmp(num, "null") ? num : "", false);
		csv_field(r->out, v.units, false);
		csv_field(r->out, units, true);
		break;
	case OUT_JSON:
		err = json_value(r, &v, ts);
		if (err) {
			r->werr = err;
			return err;
		}
		break;
	}
	r->nvalues++;
	if (ferror(r->out)) {
		/* a full disk, a closed pipe (| head): stop the session */
		r->werr = -EIO;
		return r->werr;
	}
	return 0;
}

static void draw_table(void *ctx)
{
	struct run *r = ctx;
	const char *last_source = NULL;
	bool last_meter = false;
	char now[40], num[64], units[300], label[1024];
	struct timespec tsn;
	struct tm tm;
	size_t i;
	int w = 24;

	if (r->mode != OUT_TABLE || !r->dirty)
		return;
	for (i = 0; i < r->table.n; i++) {
		counters_series_label(r->table.v[i].name, r->table.v[i].tags, label, sizeof(label));
		w = CT_MAX(w, (int)strlen(label));
	}
	w = CT_MIN(w, 80);
	r->dirty = false;
	clock_gettime(CLOCK_REALTIME, &tsn);
	gmtime_r(&tsn.tv_sec, &tm);
	snprintf(now, sizeof(now), "%02d:%02d:%02d UTC", tm.tm_hour, tm.tm_min, tm.tm_sec);
	fputs("\033[H\033[2J", r->out);
	fprintf(r->out, "clrtap counters: pid %d, every %u s, %s   Ctrl-C stops\n", (int)r->pid,
		r->interval, now);
	for (i = 0; i < r->table.n; i++) {
		const struct counters_series *s = &r->table.v[i];

		if (!last_source || strcmp(last_source, s->source) || last_meter != s->meter) {
			fprintf(r->out, "\n[%s]%s\n", cli_safe(s->source), s->meter ? " (meter)" : "");
			fprintf(r->out, "    %-*s %18s  %-14s%s\n", w, "NAME", "VALUE", "UNIT",
				s->meter ? "" : "DESCRIPTION");
			last_source = s->source;
			last_meter = s->meter;
		}
		counters_fmt_display(s->value, s->units, s->kind, r->interval, true, num, sizeof(num), units,
			    sizeof(units));
		counters_series_label(s->name, s->tags, label, sizeof(label));
		fprintf(r->out, "    %-*s %18s  %-14s%s\n", w, cli_safe(label), num, cli_safe(units),
			cli_safe(s->display_name));
	}
	fflush(r->out);
}

static int run_counters(bool collect, int argc, char **argv)
{
	struct cli_target_opts to = { 0 };
	const char *counters_s = NULL, *meters_s = NULL, *format = NULL, *out_path = NULL;
	int interval, max_ts = 1000, max_hist = 20;
	int64_t interval_ms = 1000;
	int64_t duration = 0;
	uint64_t max_size = 1ull << 30;
	struct cli_outfile of = { .fd = -1 };
	bool opened = false, kept = false;
	bool lines = false;
/* What monitor and collect share, ahead of and after their own options. */
#define COUNTERS_SOURCE_OPTIONS \
	CLI_TARGET_OPTIONS(&to), \
	{ 0, "counters", CLI_OPT_STRING, &counters_s, "LIST", \
	  "EventSources, e.g. System.Runtime[cpu-usage,alloc-rate] (default System.Runtime)" }, \
	{ 0, "meters", CLI_OPT_STRING, &meters_s, "LIST", "Meters by name, same syntax" }, \
	{ 0, "interval", CLI_OPT_DURATION, &interval_ms, "DUR", "publishing interval, whole seconds (default 1s)" }, \
	{ 'd', "duration", CLI_OPT_DURATION, &duration, "SECONDS", \
	  "stop after this long, e.g. 1.5 (default and 0: until Ctrl-C)" }
#define COUNTERS_LIMIT_OPTIONS \
	{ 0, "max-time-series", CLI_OPT_INT, &max_ts, "N", "meters: series limit (default 1000)" }, \
	{ 0, "max-histograms", CLI_OPT_INT, &max_hist, "N", "meters: histogram limit (default 20)" }
	const struct cli_option monitor_opts[] = {
		COUNTERS_SOURCE_OPTIONS,
		{ 0, "lines", CLI_OPT_BOOL, &lines, NULL, "timestamped lines even on a terminal" },
		COUNTERS_LIMIT_OPTIONS,
		{ 0 },
	};
	const struct cli_option collect_opts[] = {
		COUNTERS_SOURCE_OPTIONS,
		{ 'f', "format", CLI_OPT_STRING, &format, "csv|json", "file format (default csv)" },
		{ 'o', "output", CLI_OPT_OUTPUT, &out_path, "FILE", "output file (default counters.csv/.json)" },
		{ 0, "max-size", CLI_OPT_SIZE, &max_size, "SIZE",
		  "stop when the file reaches SIZE (default 1G, 0: no cap); kept as FILE.partial" },
		COUNTERS_LIMIT_OPTIONS,
		{ 0 },
	};
	struct counters_spec spec = { 0 };
	struct counters_run_opts ro = { 0 };
	struct counters_run_result res;
	struct run r = { .jsb = STRBUF_INIT };
	struct ipc_endpoint ep;
	struct proc_target t;
	int first, code, err;

	if (cli_parse(argc, argv,
		      collect ? "clrtap counters collect (-p PID | -n NAME) [--counters LIST] [--meters LIST] "
				"[--format csv|json] [-o FILE] [-d DUR] [--interval DUR] [--max-size SIZE]"
			      : "clrtap counters monitor (-p PID | -n NAME) [--counters LIST] [--meters LIST] "
				"[--interval DUR] [-d DUR]",
		      collect ? collect_opts : monitor_opts, &first, &code))
		return code;
	if (first < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first]);
	if (interval_ms < 1000 || interval_ms > 86400 * 1000 || interval_ms % 1000)
		return cli_error(EXIT_USAGE, "--interval must be whole seconds, 1s..24h (the runtime's unit)");
	interval = (int)(interval_ms / 1000);
	if (max_ts < 1 || max_hist < 1)
		return cli_error(EXIT_USAGE, "--max-time-series and --max-histograms must be at least 1");
	if (collect) {
		if (!format)
			format = "csv";
		if (!strcmp(format, "csv"))
			r.mode = OUT_CSV;
		else if (!strcmp(format, "json"))
			r.mode = OUT_JSON;
		else
			return cli_error(EXIT_USAGE, "unknown format '%s' (csv, json)", format);
		if (!out_path)
			out_path = r.mode == OUT_CSV ? "counters.csv" : "counters.json";
	} else {
		r.mode = lines || !isatty(STDOUT_FILENO) ? OUT_LINES : OUT_TABLE;
	}
	if (!counters_s && !meters_s)
		counters_s = "System.Runtime";
	if (counters_s && (err = counters_spec_add(&spec, counters_s, false))) {
		code = cli_error(EXIT_USAGE, "bad --counters '%s': %s", counters_s,
				 err == -E2BIG ? "too many or too long names" : "syntax is Source[name,...],...");
		goto out;
	}
	if (meters_s && (err = counters_spec_add(&spec, meters_s, true))) {
		code = cli_error(EXIT_USAGE, "bad --meters '%s': %s", meters_s,
				 err == -E2BIG ? "too many or too long names" : "syntax is Meter[name,...],...");
		goto out;
	}
	code = cli_resolve_target(&to, &t, &ep);
	if (code)
		goto out;
	r.spec = &spec;
	r.interval = (unsigned)interval;
	r.max_size = collect ? max_size : 0;
	r.pid = t.pid;
	if (collect) {
		/* An unnamed file beside the output, named when the session went well. */
		code = cli_outfile_open(&of, out_path);
		if (code)
			goto out;
		opened = true;
		r.out = fdopen(of.fd, "w");
		if (!r.out) {
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out_path, strerror(errno));
			goto out;
		}
	} else {
		r.out = stdout;
	}

	cli_catch_stop_signals();
	signal(SIGPIPE, SIG_IGN);

	if (r.mode == OUT_CSV)
		fputs("timestamp,source,type,name,tags,kind,value,units,interval_sec\n", r.out);
	else if (r.mode == OUT_JSON) {
		ct_json_init(&r.j, &r.jsb);
		ct_json_obj_begin_lines(&r.j);
		ct_json_kv_i64(&r.j, "pid", t.pid);
		ct_json_kv_i64(&r.j, "interval_sec", interval);
		ct_json_key(&r.j, "values");
		ct_json_arr_begin_lines(&r.j);
		r.werr = cli_json_flush(&r.j, r.out);
	}
	if (r.mode != OUT_TABLE)
		cli_info("reading counters of pid %d every %d s; %s", (int)t.pid, interval,
			 duration ? "waiting for the duration" : "Ctrl-C stops");
	else
		printf("waiting for the first values from pid %d...\n", (int)t.pid);

	ro.spec = &spec;
	ro.interval = (unsigned)interval;
	ro.max_ts = (unsigned)max_ts;
	ro.max_hist = (unsigned)max_hist;
	ro.duration_ms = duration;
	ro.stop = &cli_stop_requested;
	ro.value = on_value;
	ro.idle = draw_table;
	ro.ctx = &r;
	counters_run(&ep, &ro, &res);
	if (res.err && res.nothing_read) {
		code = cli_error(res.exit_code, "%s%s", res.message, collect ? "; no file written" : "");
		goto out_file;
	}
	if (r.mode == OUT_JSON && !r.werr) {
		ct_json_arr_end(&r.j);
		ct_json_obj_end(&r.j);
		if (cli_json_out(&r.j, r.out))
			r.werr = -EIO;
	}
	if (r.werr) {
		code = collect ? cli_error(EXIT_ERROR, "cannot write %s", out_path)
			       : cli_error(EXIT_ERROR, "cannot write to standard output");
		goto out_file;
	}
	if (res.err) {
		/* the target went away, the stream broke, the session ended badly */
		code = cli_error(res.exit_code, "%s", res.message);
		goto out_file;
	}
	if (r.full) {
		code = cli_error(EXIT_PARTIAL, "stopped at --max-size (%" PRIu64 " bytes) after %" PRIu64 " values",
				 max_size, r.nvalues);
		goto out_file;
	}
	code = EXIT_OK;
out_file:
	if (collect && r.out) {
		int e;

		if ((fflush(r.out) || ferror(r.out)) && code == EXIT_OK)
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out_path, strerror(errno));
		if (code == EXIT_OK) {
			e = cli_outfile_keep(&of, out_path);
			if (e)
				code = cli_error(EXIT_ERROR, "cannot write %s: %s", out_path, strerror(-e));
			else
				kept = true;
		}
		if (code == EXIT_OK) {
			printf("wrote %s (%" PRIu64 " values)\n", out_path, r.nvalues);
		} else if (r.nvalues && code != EXIT_ERROR) {
			/* The values read before the failure: true, but not the whole run. */
			struct strbuf partial = STRBUF_INIT;

			if (!strbuf_addf(&partial, "%s.partial", out_path) &&
			    !cli_outfile_keep(&of, partial.buf)) {
				kept = true;
				cli_info("kept the %" PRIu64 " values read in %s", r.nvalues, partial.buf);
			}
			strbuf_release(&partial);
		}
		if (fclose(r.out) && code == EXIT_OK)
			code = cli_error(EXIT_ERROR, "cannot write %s: %s", out_path, strerror(errno));
		of.fd = -1; /* closed with r.out */
	}
out:
	strbuf_release(&r.jsb);
	if (opened && !kept)
		cli_info("no file written (%s left as it was)", out_path);
	cli_outfile_drop(&of);
	counters_table_release(&r.table);
	counters_spec_release(&spec);
	return code;
}

int cmd_counters(int argc, char **argv)
{
	if (argc < 2)
		return cli_error(EXIT_USAGE, "say monitor or collect (see 'clrtap counters --help')");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: clrtap counters monitor (-p PID | -n NAME) [options]\n"
		       "       clrtap counters collect (-p PID | -n NAME) --format csv|json -o FILE [options]\n\n"
		       "'clrtap counters monitor --help' lists the options.\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "monitor"))
		return run_counters(false, argc - 1, argv + 1);
	if (!strcmp(argv[1], "collect"))
		return run_counters(true, argc - 1, argv + 1);
	return cli_error(EXIT_USAGE, "unknown counters subcommand '%s' (monitor, collect)", argv[1]);
}
