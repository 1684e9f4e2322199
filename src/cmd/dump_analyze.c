/* SPDX-License-Identifier: MIT */
/*
 * clrtap dump analyze - what a core dump of a .NET process says, read on
 * this machine with the runtime's own DAC, no SDK: the triage summary (the
 * faulting thread, its signal, the managed exception on it), every managed
 * thread's stack, the GC heap by type and the retention path of a type or
 * object to its root. lib/postmortem does the work; this file parses and
 * renders.
 */
#include "common/compat.h"

#include "cli.h"
#include "common/clrname.h"
#include "heap/async.h"
#include "postmortem/postmortem.h"

/* A frame's name for people: the source form (Type::M [async]) unless --raw-names. */
static const char *display(const char *raw, char *buf, size_t cap)
{
	return raw ? ct_clrname_display(raw, buf, cap) : "?";
}

static int render_json(const char *file, const struct pm_report *r, const struct pm_path_result *root,
		       const struct heap_async *as)
{
	struct strbuf sb;
	struct ct_json j;
	int code;

	strbuf_init(&sb, 0);
	ct_json_init(&j, &sb);
	pm_report_json(&j, file, r, root, as);
	code = cli_json_out(&j, stdout);
	strbuf_release(&sb);
	return code;
}

static void print_exception(const struct pm_exception *e, const char *indent)
{
	char buf[PM_NAME_MAX];
	unsigned depth = 0;
	size_t i;

	for (; e; e = e->inner, depth++) {
		printf("%s%s%s: %s\n", indent, depth ? "inner: " : "", cli_safe(e->type),
		       e->message ? cli_safe(e->message) : "(no message)");
		if (e->nframes)
			printf("%s  thrown in %s\n", indent,
			       cli_safe(display(e->frames[0], buf, sizeof(buf))));
		for (i = 0; i < e->nframes; i++)
			printf("%s    at %s\n", indent, cli_safe(display(e->frames[i], buf, sizeof(buf))));
		if (e->never_thrown)
			printf("%s  (never thrown: no stack trace)\n", indent);
		else if (!e->frames_read)
			printf("%s  (its stack trace could not be read from the dump)\n", indent);
	}
}

static void print_thread(const struct pm_report *r, size_t ti, size_t max_frames)
{
	const struct pm_thread *t = &r->threads[ti];
	char buf[PM_NAME_MAX];
	size_t i, shown = 0;

	printf("thread %u (managed %u)%s", t->os_tid, t->managed_id,
	       ti == r->faulting ? " [faulting]" : "");
	if (t->signo)
		printf(" %s", pm_signame(t->signo));
	if (!t->in_dump)
		printf(" (not running: no registers in the dump)");
	printf("\n");
	if (t->in_dump && t->native_at[0])
		printf("    native  %s\n", cli_safe(t->native_at));
	for (i = 0; i < t->nnative; i++)
		printf("    native  %s\n", cli_safe(t->native[i]));
	for (i = 0; i < t->nframes && shown < max_frames; i++) {
		const struct pm_frame *f = &t->frames[i];

		if (f->runtime && !f->name)
			continue;
		printf("    %s%s\n", cli_safe(display(f->name, buf, sizeof(buf))),
		       f->runtime ? " [runtime frame]" : "");
		shown++;
	}
	if (i < t->nframes || t->frames_cut)
		printf("    ... (%zu frames more%s)\n", t->nframes - i,
		       t->frames_cut ? ", and the stack was cut" : "");
}

static void render_text(const char *file, const struct pm_report *r, const struct pm_path_result *root,
			const struct heap_async *as, size_t top)
{
	const struct pm_object *big[PM_TOP_LARGEST];
	size_t i, n;

	printf("dump %s: pid %d (%s), .NET %s\n", cli_safe(file), r->pid, cli_safe(r->comm),
	       r->runtime[0] ? r->runtime : "(version unknown)");
	printf("  DAC %s (matched by %s)\n", cli_safe(r->dac), r->dac_how ? r->dac_how : "?");
	if (r->signo)
		printf("signal %s (%d) on thread %d%s\n", pm_signame(r->signo), r->signo, r->fault_tid,
		       r->faulting != SIZE_MAX ? "" : " (not a managed thread)");
	else
		printf("no signal recorded (a dump of a live process)\n");
	if (r->faulting != SIZE_MAX) {
		const struct pm_thread *t = &r->threads[r->faulting];

		if (t->exc) {
			printf("exception on the faulting thread:\n");
			print_exception(t->exc, "  ");
		} else {
			printf("no managed exception on the faulting thread\n");
		}
	}
	printf("threads: %zu managed, %zu in the dump\n\n", r->nthreads, r->native_threads);
	for (i = 0; i < r->nthreads; i++) {
		print_thread(r, i, 40);
		if (i != r->faulting && r->threads[i].exc) {
			printf("    last exception:\n");
			print_exception(r->threads[i].exc, "      ");
		}
	}
	printf("\n");
	if (!r->heap_read) {
		printf("heap: not read: %s\n", r->heap_note[0] ? r->heap_note : "not asked");
	} else {
		printf("heap: %zu objects, %" PRIu64 " bytes, %zu types\n", r->nobjects, r->heap_bytes,
		       r->ntypes);
		if (r->heap_note[0])
			printf("  note: %s\n", r->heap_note);
		printf("  %12s %14s  %s\n", "count", "bytes", "type");
		for (i = 0; i < r->ntypes && i < top; i++)
			printf("  %12" PRIu64 " %14" PRIu64 "  %s\n", r->types[i].count,
			       r->types[i].bytes, cli_safe(r->types[i].name));
		if (r->ntypes > top)
			printf("  ... %zu types more (--top, --json)\n", r->ntypes - top);
		n = pm_largest(r, big, PM_TOP_LARGEST);
		if (n) {
			printf("largest objects:\n");
			for (i = 0; i < n; i++)
				printf("  0x%-16" PRIx64 " %12" PRIu64 "  %s\n", big[i]->addr, big[i]->size,
				       cli_safe(r->types[big[i]->type].name));
		}
	}
	if (root) {
		printf("\nretention of %s: %" PRIu64 " instance(s), %" PRIu64 " reached from a root\n",
		       cli_safe(root->target), root->instances, root->reached);
		for (i = 0; i < root->npaths; i++)
			printf("  %" PRIu64 " x %s\n", root->counts[i], cli_safe(root->paths[i]));
		if (root->note[0])
			printf("  (%s)\n", root->note);
	}
	if (as) {
		struct strbuf sb = STRBUF_INIT;

		printf("\n%" PRIu64 " async state machine%s on the heap, %" PRIu64
		       " on %u kind%s of pending chain\n",
		       as->boxes, as->boxes == 1 ? "" : "s", as->chained, as->ngroups,
		       as->ngroups == 1 ? "" : "s");
		if (!heap_async_text(as, &sb))
			fputs(sb.buf ? sb.buf : "", stdout);
		strbuf_release(&sb);
	}
	if (r->failed_reads)
		printf("\n(%" PRIu64 " reads asked for memory the dump does not hold: a heap or triage dump lacks some; what is shown was read)\n",
		       r->failed_reads);
}

int cmd_dump_analyze(int argc, char **argv)
{
	const char *dac = NULL, *root_s = NULL;
	bool json = false, no_heap = false, async = false;
	int top = 20, first, code, err;
	const struct cli_option opts[] = {
		{ 0, "dac", CLI_OPT_STRING, &dac, "PATH",
		  "the runtime's libmscordaccore.so (default: found by the dump's libcoreclr.so build id)" },
		{ 0, "root", CLI_OPT_STRING, &root_s, "TYPE|ADDR",
		  "retention path to a root of a type's instances or of one object (0x...)" },
		{ 0, "async", CLI_OPT_BOOL, &async, NULL,
		  "pending async state machines and what they await (the dumpasync job)" },
		{ 0, "top", CLI_OPT_INT, &top, "N", "heap types shown (default 20; --json has all)" },
		{ 0, "no-heap", CLI_OPT_BOOL, &no_heap, NULL, "do not walk the GC heap" },
		{ 0, "json", CLI_OPT_BOOL, &json, NULL, "print the result as JSON" },
		{ 0 },
	};
	struct pm_opts o = { 0 };
	struct pm_path_result root = { 0 };
	struct pm_report *r = NULL;
	struct heap_async *as = NULL;
	char why[512] = "";

	if (cli_parse(argc, argv, "clrtap dump analyze FILE [--json] [--root TYPE|ADDR] [--async] [--dac PATH]",
		      opts, &first, &code))
		return code;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "dump analyze: give the core file");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "unexpected argument '%s'", argv[first + 1]);
	if (top < 1)
		return cli_error(EXIT_USAGE, "--top must be 1 or more");
	if ((root_s || async) && no_heap)
		return cli_error(EXIT_USAGE, "--%s needs the heap: drop --no-heap", root_s ? "root" : "async");
	o.dac = dac;
	o.heap = !no_heap;
	err = pm_open(argv[first], &o, &r, why, sizeof(why));
	if (err) {
		switch (err) {
		case -EINVAL:
		case -EBADMSG:
			return cli_error(EXIT_BAD_INPUT, "%s: %s", argv[first], why);
		case -ENODATA:
			return cli_error(EXIT_NOT_DOTNET, "%s: %s", argv[first], why);
		case -ENOPKG:
		case -EPROTONOSUPPORT:
		case -ELIBBAD:
		case -EPROTO:
			return cli_error(EXIT_RUNTIME, "%s: %s", argv[first], why);
		default: /* I/O: a missing or unreadable file */
			return cli_error(EXIT_ERROR, "%s: %s", argv[first], why[0] ? why : strerror(-err));
		}
	}
	if (root_s) {
		err = pm_root(r, root_s, &root, why, sizeof(why));
		if (err) {
			pm_free(r);
			return cli_error(err == -ENOENT ? EXIT_USAGE : EXIT_ERROR, "--root %s: %s",
					 root_s, why);
		}
	}
	if (async) {
		err = pm_async(r, &as, why, sizeof(why));
		if (err) {
			pm_path_result_free(&root);
			pm_free(r);
			return cli_error(EXIT_ERROR, "--async: %s", why);
		}
	}
	if (json)
		code = render_json(argv[first], r, root_s ? &root : NULL, as);
	else
		code = (render_text(argv[first], r, root_s ? &root : NULL, as, (size_t)top), EXIT_OK);
	heap_async_free(as);
	pm_path_result_free(&root);
	pm_free(r);
	return code;
}
