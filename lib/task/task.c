/* SPDX-License-Identifier: MIT */
/*
 * task.c - a task's arguments (defaults, then values set by name from text,
 * each checked against its parameter's type and bounds), its result, running
 * it in this process, and the table as JSON. See task.h.
 */
#include "common/compat.h"

#include <math.h>

#include <fcntl.h>

#include "common/exitcode.h"
#include "common/io.h"
#include "ipc/ipc.h"
#include "proc/proc.h"
#include "common/strparse.h"
#include "task/task.h"

#define TASK_STORE_MAX (64u * 1024)        /* bytes of all string arguments of one task */
#define TASK_STRING_MAX 512                /* a STRING param with max 0 */

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

static const struct task_param *param_at(const struct task *t, const char *name, size_t *idx)
{
	size_t i;

	for (i = 0; i < t->nparams && i < TASK_MAX_PARAMS; i++) {
		if (!strcmp(t->params[i].name, name)) {
			*idx = i;
			return &t->params[i];
		}
	}
	return NULL;
}

static bool word_in(const char *list, const char *w)
{
	size_t wl = strlen(w);
	const char *p = list;

	if (!wl)
		return false;
	while (p && *p) {
		size_t n = strcspn(p, " ");

		if (n == wl && !strncmp(p, w, n))
			return true;
		p += n;
		p += strspn(p, " ");
	}
	return false;
}

/*
 * Appends a string to the store; the strings already there move with the
 * buffer, so every value that points into it is rebased.
 */
static int store_add(struct task_args *a, const char *s, size_t n, const char **out)
{
	size_t off[TASK_MAX_PARAMS];
	bool in[TASK_MAX_PARAMS];
	size_t i, at = a->store.len;
	int err;

	for (i = 0; i < TASK_MAX_PARAMS; i++) {
		in[i] = a->v[i].s && a->v[i].s >= a->store.buf && a->v[i].s < a->store.buf + a->store.len;
		off[i] = in[i] ? (size_t)(a->v[i].s - a->store.buf) : 0;
	}
	if ((err = strbuf_add(&a->store, s, n)) || (err = strbuf_addch(&a->store, 0))) {
		strbuf_rollback(&a->store, at);
		return err;
	}
	for (i = 0; i < TASK_MAX_PARAMS; i++)
		if (in[i])
			a->v[i].s = a->store.buf + off[i];
	*out = a->store.buf + at;
	return 0;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A STRING with choices: letters, digits and those characters only, never a leading '-'. */
static bool chars_ok(const char *s, const char *extra)
{
	if (*s == '-')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(extra, c)))
			return false;
	}
	return true;
}

/* Parses text into v by p's type and bounds. */
static int parse_value(struct task_args *a, const struct task_param *p, const char *text,
		       struct task_value *v, char *why, size_t whylen)
{
	struct task_value nv = { 0 };
	size_t len = strnlen(text, 4096);

	switch (p->type) {
	case TASK_P_BOOL:
		if (!strcmp(text, "true"))
			nv.b = true;
		else if (strcmp(text, "false"))
			return WHY("%s must be true or false", p->name);
		break;
	case TASK_P_INT: {
		int64_t x;

		if (ct_parse_i64(text, 10, &x) || (double)x < p->min || (double)x > p->max)
			return WHY("%s must be a whole number from %.0f to %.0f", p->name, p->min, p->max);
		nv.i = x;
		break;
	}
	case TASK_P_NUM: {
		char *end;
		double x;

		if (!len || len > 32 || !strchr("0123456789-.", text[0]))
			return WHY("%s must be a number from %g to %g", p->name, p->min, p->max);
		errno = 0;
		x = strtod(text, &end);
		if (errno || *end || !isfinite(x) || x < p->min || x > p->max)
			return WHY("%s must be a number from %g to %g", p->name, p->min, p->max);
		nv.d = x;
		break;
	}
	case TASK_P_DURATION: {
		int64_t ms;

		if (ct_parse_duration(text, &ms))
			return WHY("invalid duration for %s (a number with an optional unit ms, s, m or h: "
				   "\"500ms\", \"3\", \"1.5m\")", p->name);
		nv.d = (double)ms / 1000.0;
		if (nv.d < p->min || nv.d > p->max)
			return WHY("%s must be from %gs to %gs", p->name, p->min, p->max);
		break;
	}
	case TASK_P_STRING: {
		size_t max = p->max > 0 ? (size_t)p->max : TASK_STRING_MAX;

		if (len > max)
			return WHY("%s is longer than %zu bytes", p->name, max);
		if (!text_ok(text))
			return WHY("%s holds a control character", p->name);
		if (p->choices && !chars_ok(text, p->choices))
			return WHY("%s: only letters, digits and %s are accepted, and no leading '-'", p->name,
				   p->choices);
		if (store_add(a, text, len, &nv.s))
			return WHY("%s: out of memory for arguments", p->name);
		break;
	}
	case TASK_P_ENUM:
		if (!word_in(p->choices, text))
			return WHY("%s must be one of: %s", p->name, p->choices ? p->choices : "");
		if (store_add(a, text, len, &nv.s))
			return WHY("%s: out of memory for arguments", p->name);
		break;
	default:
		return WHY("%s has an unknown type", p->name);
	}
	*v = nv;
	return 0;
}

int task_args_init(struct task_args *a, const struct task *t, int pid)
{
	char why[128];
	size_t i;

	memset(a, 0, sizeof(*a));
	strbuf_init(&a->store, TASK_STORE_MAX);
	a->task = t;
	a->pid = pid;
	if (!t || t->nparams > TASK_MAX_PARAMS)
		return -EINVAL;
	for (i = 0; i < t->nparams; i++) {
		const struct task_param *p = &t->params[i];

		if (p->def && parse_value(a, p, p->def, &a->v[i], why, sizeof(why)))
			return -EINVAL; /* a table error: task_test checks every default */
		a->v[i].set = false;
	}
	return 0;
}

int task_args_set(struct task_args *a, const char *name, const char *text, char *why, size_t whylen)
{
	const struct task_param *p;
	size_t i;
	int err;

	if (!a->task || !name || !text)
		return WHY("no task");
	p = param_at(a->task, name, &i);
	if (!p)
		return WHY("%s takes no parameter '%.64s'", a->task->name, name);
	if ((err = parse_value(a, p, text, &a->v[i], why, whylen)))
		return err;
	a->v[i].set = true;
	return 0;
}

int task_args_check(const struct task_args *a, char *why, size_t whylen)
{
	size_t i;

	if (!a->task)
		return WHY("no task");
	if ((a->task->flags & TASK_F_TARGET) && a->pid <= 0)
		return WHY("%s needs a target process", a->task->name);
	for (i = 0; i < a->task->nparams; i++) {
		const struct task_param *p = &a->task->params[i];

		if ((p->flags & TASK_PF_REQUIRED) && !a->v[i].set)
			return WHY("%s needs %s (%s)", a->task->name, p->name, p->help ? p->help : "");
	}
	return 0;
}

void task_args_release(struct task_args *a)
{
	strbuf_release(&a->store);
	memset(a->v, 0, sizeof(a->v));
}

const struct task_value *task_arg(const struct task_args *a, const char *name)
{
	size_t i;

	if (!a->task || !param_at(a->task, name, &i))
		return NULL;
	return &a->v[i];
}

void task_result_init(struct task_result *r)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->json, TASK_RESULT_MAX);
}

void task_result_release(struct task_result *r)
{
	strbuf_release(&r->json);
	if (r->data && r->free_data)
		r->free_data(r->data);
	r->data = NULL;
	r->free_data = NULL;
	r->nartifacts = 0;
}

void task_message_clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

int task_fail(struct task_result *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (err > 0)
		err = -err;
	if (!err)
		err = -EINVAL;
	r->err = err;
	r->exit_code = ct_exit_for(err);
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	task_message_clean(r->message);
	return err;
}

int task_error_json(struct strbuf *sb, int exit_code, const char *message)
{
	struct ct_json j;

	strbuf_reset(sb);
	ct_json_init(&j, sb);
	ct_json_obj_begin(&j);
	ct_json_kv_str(&j, "error", ct_exit_name(exit_code));
	ct_json_kv_i64(&j, "exit_code", exit_code);
	ct_json_kv_str(&j, "message", message);
	ct_json_obj_end(&j);
	return ct_json_finish(&j);
}

int task_run(const struct task *t, const struct task_args *a, const struct task_ctx *c, struct task_result *r)
{
	char why[256];
	int err;

	if (!t || !a || a->task != t || task_args_check(a, why, sizeof(why))) {
		task_fail(r, -EINVAL, "%s", t && a && a->task == t ? why : "arguments of another task");
		r->exit_code = EXIT_USAGE;
	} else {
		if (c && c->log)
			ct_log_set_thread(c->log, c->log_ctx);
		err = t->run(a, c, r);
		if (c && c->log)
			ct_log_set_thread(NULL, NULL);
		if (err && !r->err)
			task_fail(r, err, "%s: %s", t->name, strerror(err < 0 ? -err : err));
	}
	if (r->err && !r->exit_code)
		r->exit_code = ct_exit_for(r->err);
	if (r->err && !*r->message)
		snprintf(r->message, sizeof(r->message), "%s: %s", t ? t->name : "task", strerror(-r->err));
	/* a failed task without a result of its own answers with the error object */
	if (r->err && (!r->json.len || strbuf_error(&r->json)))
		task_error_json(&r->json, r->exit_code, r->message);
	return r->err;
}

/* ----- the table as JSON ----- */

const char *task_ptype_name(enum task_ptype t)
{
	switch (t) {
	case TASK_P_BOOL: return "bool";
	case TASK_P_INT: return "int";
	case TASK_P_NUM: return "number";
	case TASK_P_DURATION: return "duration";
	case TASK_P_STRING: return "string";
	case TASK_P_ENUM: return "enum";
	}
	return "unknown";
}

void task_param_json(struct ct_json *j, const struct task_param *p)
{
	ct_json_obj_begin(j);
	ct_json_kv_str(j, "name", p->name);
	ct_json_kv_str(j, "type", task_ptype_name(p->type));
	if (p->def)
		ct_json_kv_str(j, "default", p->def);
	if (p->type == TASK_P_INT || p->type == TASK_P_NUM || p->type == TASK_P_DURATION) {
		ct_json_kv_double(j, "min", p->min);
		ct_json_kv_double(j, "max", p->max);
	}
	if (p->type == TASK_P_STRING) {
		ct_json_kv_u64(j, "max_bytes", p->max > 0 ? (uint64_t)p->max : TASK_STRING_MAX);
		if (p->choices)
			ct_json_kv_str(j, "chars", p->choices); /* besides letters and digits */
	}
	if (p->type == TASK_P_ENUM && p->choices) {
		const char *s = p->choices;

		ct_json_kv_arr_begin(j, "choices");
		while (*s) {
			size_t n = strcspn(s, " ");

			if (n)
				ct_json_strn(j, s, n);
			s += n;
			s += strspn(s, " ");
		}
		ct_json_arr_end(j);
	}
	ct_json_kv_str(j, "help", p->help ? p->help : "");
	ct_json_kv_bool(j, "required", !!(p->flags & TASK_PF_REQUIRED));
	if (p->flags & TASK_PF_CLI_ONLY)
		ct_json_kv_bool(j, "cli_only", true);
	ct_json_obj_end(j);
}

int task_table_json(struct ct_json *j)
{
	const struct task *const *all;
	size_t n, i, k;

	all = task_all(&n);
	ct_json_obj_begin(j);
	ct_json_kv_arr_begin(j, "tasks");
	for (i = 0; i < n; i++) {
		const struct task *t = all[i];

		ct_json_obj_begin(j);
		ct_json_kv_str(j, "name", t->name);
		ct_json_kv_str(j, "summary", t->summary);
		ct_json_kv_bool(j, "target", !!(t->flags & TASK_F_TARGET));
		ct_json_kv_bool(j, "isolate", !!(t->flags & TASK_F_ISOLATE));
		ct_json_kv_arr_begin(j, "params");
		for (k = 0; k < t->nparams; k++)
			task_param_json(j, &t->params[k]);
		ct_json_arr_end(j);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	return j->err;
}

/* ----- --help from the table ----- */

static void bound_text(struct strbuf *sb, const struct task_param *p)
{
	if (p->type == TASK_P_DURATION)
		strbuf_addf(sb, "%gs..%gs", p->min, p->max);
	else if (p->type == TASK_P_INT || p->type == TASK_P_NUM)
		strbuf_addf(sb, "%g..%g", p->min, p->max);
	else if (p->type == TASK_P_ENUM && p->choices)
		strbuf_addf(sb, "%s", p->choices);
}

int task_help_text(const struct task *t, const char *skip, struct strbuf *out)
{
	size_t i;

	for (i = 0; i < t->nparams; i++) {
		const struct task_param *p = &t->params[i];
		size_t mark = out->len, col;
		const char *c;

		if (skip && word_in(skip, p->name))
			continue;
		strbuf_addstr(out, "  --");
		for (c = p->name; *c; c++)
			strbuf_addch(out, *c == '_' ? '-' : *c);
		switch (p->type) {
		case TASK_P_BOOL: break;
		case TASK_P_INT: strbuf_addstr(out, " N"); break;
		case TASK_P_NUM: strbuf_addstr(out, " X"); break;
		case TASK_P_DURATION: strbuf_addstr(out, " TIME"); break;
		case TASK_P_STRING: strbuf_addstr(out, " TEXT"); break;
		case TASK_P_ENUM: strbuf_addstr(out, " WORD"); break;
		}
		col = out->len - mark;
		strbuf_addf(out, "%*s%s", col < 26 ? (int)(26 - col) : 1, "", p->help ? p->help : "");
		if (p->type != TASK_P_BOOL && (p->def || p->type != TASK_P_STRING)) {
			strbuf_addstr(out, " (");
			if (p->def)
				strbuf_addf(out, "default %s%s", p->def,
					    p->type == TASK_P_DURATION && p->def[strspn(p->def, "0123456789.")] == 0 ? "s" : "");
			if (p->type != TASK_P_STRING) {
				strbuf_addstr(out, p->def ? "; " : "");
				bound_text(out, p);
			}
			strbuf_addch(out, ')');
		}
		if (p->flags & TASK_PF_REQUIRED)
			strbuf_addstr(out, " [required]");
		strbuf_addch(out, '\n');
	}
	return strbuf_error(out);
}

/* ----- helpers for run functions ----- */

int task_target(const struct task_args *a, struct task_result *r, struct proc_target *t, struct ipc_endpoint *ep,
		int timeout_ms)
{
	char why[512];
	int err = proc_target_find(a->pid, t);

	if (err) {
		proc_target_strerror(a->pid, err, t, why, sizeof(why));
		return task_fail(r, err, "%s", why);
	}
	if (ep)
		ipc_endpoint_init(ep, t, timeout_ms);
	return 0;
}

volatile sig_atomic_t *task_stop_flag(const struct task_ctx *c, volatile sig_atomic_t *fallback)
{
	/* the caller's flag is writable (serve's session flag, the CLI's cli_stop_requested) */
	return c && c->stop ? (volatile sig_atomic_t *)(uintptr_t)c->stop : fallback;
}

int task_artifact_open(const struct task_ctx *c, struct task_result *r, const char *name, const char *mime)
{
	int fd;

	if (!c || c->outdir_fd < 0 || strchr(name, '/') || r->nartifacts >= TASK_MAX_ARTIFACTS) {
		errno = c && c->outdir_fd >= 0 ? EINVAL : EBADF;
		return -1;
	}
	fd = openat(c->outdir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	snprintf(r->artifacts[r->nartifacts].name, sizeof(r->artifacts[0].name), "%s", name);
	snprintf(r->artifacts[r->nartifacts].mime, sizeof(r->artifacts[0].mime), "%s", mime);
	r->nartifacts++;
	return fd;
}

int task_artifact_write(const struct task_ctx *c, struct task_result *r, const char *name, const char *mime,
			const void *buf, size_t len)
{
	int fd = task_artifact_open(c, r, name, mime), err;

	if (fd < 0)
		return -errno;
	err = ct_write_all(fd, buf, len);
	if (close(fd) && !err)
		err = -errno;
	return err;
}
