/* SPDX-License-Identifier: MIT */
/*
 * agent.c - libc detection, attach causes, the client-data config, the
 * decoder of the profiler's events, and where clrtap keeps the library.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <libgen.h>

#include "agent/agent.h"
#include "common/cursor.h"
#include "common/strbuf.h"
#include "common/utf16.h"

#define MAPS_MAX (16u << 20)

const char *agent_libc_name(enum agent_libc l)
{
	switch (l) {
	case AGENT_LIBC_GLIBC:
		return "glibc";
	case AGENT_LIBC_MUSL:
		return "musl";
	default:
		return "unknown";
	}
}

int agent_libc_parse(const char *s, enum agent_libc *out)
{
	if (!strcmp(s, "glibc"))
		*out = AGENT_LIBC_GLIBC;
	else if (!strcmp(s, "musl"))
		*out = AGENT_LIBC_MUSL;
	else
		return -EINVAL;
	return 0;
}

static bool starts(const char *p, size_t n, const char *z)
{
	size_t l = strlen(z);

	return n >= l && !memcmp(p, z, l);
}

enum agent_libc agent_libc_from_maps(const char *maps, size_t len)
{
	bool musl = false, glibc = false;
	size_t i = 0;

	while (i < len) {
		const char *line = maps + i, *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;
		const char *slash = NULL;

		for (size_t j = 0; j < n; j++)
			if (line[j] == '/')
				slash = line + j;
		if (slash) {
			const char *b = slash + 1;
			size_t bn = n - (size_t)(b - line);

			if (starts(b, bn, "ld-musl-") || starts(b, bn, "libc.musl-"))
				musl = true;
			/* Debian's musl: /lib/ld-musl-* links to <triplet>-musl/libc.so,
			 * and the map names the file itself */
			else if (bn == 7 && starts(b, bn, "libc.so") && b - line >= 6 &&
				 !memcmp(b - 6, "-musl/", 6))
				musl = true;
			else if (starts(b, bn, "libc.so.6") || starts(b, bn, "ld-linux-"))
				glibc = true;
		}
		i += n + 1;
	}
	if (musl == glibc)
		return AGENT_LIBC_UNKNOWN;
	return musl ? AGENT_LIBC_MUSL : AGENT_LIBC_GLIBC;
}

static int read_maps(pid_t pid, struct strbuf *sb)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	sb->max = MAPS_MAX;
	return strbuf_read_file(sb, path);
}

int agent_libc_detect(pid_t pid, enum agent_libc *out)
{
	struct strbuf sb = STRBUF_INIT;
	int err = read_maps(pid, &sb);

	if (!err)
		*out = agent_libc_from_maps(sb.buf, sb.len);
	strbuf_release(&sb);
	return err;
}

int agent_library_mapped(pid_t pid, bool *mapped, char *path, size_t pathlen)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p;
	int err = read_maps(pid, &sb);

	*mapped = false;
	if (err)
		goto out;
	p = sb.buf;
	while (p && p < sb.buf + sb.len) {
		const char *nl = memchr(p, '\n', (size_t)(sb.buf + sb.len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(sb.buf + sb.len - p);
		const char *hit = memmem(p, n, "/clrtap-profiler-", 17);

		if (hit) {
			const char *start = memchr(p, '/', n);

			*mapped = true;
			if (path && pathlen)
				snprintf(path, pathlen, "%.*s", (int)(p + n - start), start);
			break;
		}
		p = nl ? nl + 1 : NULL;
	}
out:
	strbuf_release(&sb);
	return err;
}

/* ---------------------------------------------------------------- causes */

#define HR_MOD_NOT_FOUND ((int32_t)0x8007007E)
#define HR_FILE_NOT_FOUND ((int32_t)0x80070002)
#define HR_PATH_NOT_FOUND ((int32_t)0x80070003)
#define HR_CANCEL_ACTIVATION ((int32_t)0x80131375)
#define HR_CLASS_NOT_AVAILABLE ((int32_t)0x80040111)
#define HR_E_FAIL ((int32_t)0x80004005)

const char *agent_cause_name(enum agent_cause c)
{
	static const char *const names[] = {
		[AGENT_OK] = "ok",
		[AGENT_NO_LIBRARY] = "no-library",
		[AGENT_NOT_IN_TARGET] = "not-in-target",
		[AGENT_WRONG_LIBC] = "wrong-libc",
		[AGENT_SLOT_TAKEN] = "slot-taken",
		[AGENT_TOO_OLD] = "runtime-too-old",
		[AGENT_ALREADY] = "already-attached",
		[AGENT_PLACE_FAILED] = "place-failed",
		[AGENT_NOT_SUPPORTED] = "attach-not-supported",
		[AGENT_REFUSED] = "refused",
		[AGENT_NO_ANSWER] = "no-answer",
	};

	if ((size_t)c < ARRAY_SIZE(names) && names[c])
		return names[c];
	return "unknown";
}

enum agent_cause agent_cause_from_hresult(int32_t hr, enum agent_libc lib,
					  enum agent_libc target, bool file_exists)
{
	switch (hr) {
	case 0:
		return AGENT_OK;
	case IPC_E_PROFILER_ALREADY_ACTIVE:
		return AGENT_SLOT_TAKEN;
	case HR_CANCEL_ACTIVATION:
		return AGENT_TOO_OLD;
	case IPC_E_NOTSUPPORTED:
	case IPC_E_UNKNOWN_COMMAND:
		return AGENT_NOT_SUPPORTED;
	case HR_CLASS_NOT_AVAILABLE:
		return AGENT_ALREADY;
	default:
		break;
	}
	/* The runtime reports a failed dlopen as a load error; tell apart a
	 * missing file from one the target's loader could not use. */
	if (hr == HR_MOD_NOT_FOUND || hr == HR_FILE_NOT_FOUND || hr == HR_PATH_NOT_FOUND ||
	    hr == HR_E_FAIL) {
		if (!file_exists)
			return AGENT_NOT_IN_TARGET;
		if (lib != AGENT_LIBC_UNKNOWN && target != AGENT_LIBC_UNKNOWN && lib != target)
			return AGENT_WRONG_LIBC;
		if (hr != HR_E_FAIL)
			return AGENT_WRONG_LIBC;
	}
	return AGENT_REFUSED;
}

void agent_cause_text(enum agent_cause c, int32_t hr, char *buf, size_t len)
{
	const char *s;

	switch (c) {
	case AGENT_OK:
		s = "attached";
		break;
	case AGENT_NO_LIBRARY:
		s = "clrtap's copy of libclrtap-profiler.so is missing (looked in profiler/<libc>/ "
		    "and ../lib/clrtap/<libc>/ beside the binary): install clrtap whole (make "
		    "install, the release archive or the .deb) or set CLRTAP_PROFILER_DIR";
		break;
	case AGENT_NOT_IN_TARGET:
		s = "the profiler library was not found in the target's filesystem (its mount "
		    "namespace): the path must exist as the target sees it";
		break;
	case AGENT_WRONG_LIBC:
		s = "the target's runtime could not load the profiler library: it was built for "
		    "another C library than the one the target uses (glibc vs musl); let clrtap "
		    "pick (drop --libc)";
		break;
	case AGENT_SLOT_TAKEN:
		s = "another profiler (e.g. an APM agent) holds the main profiler slot; use "
		    "--mode notification (or auto): no ReJIT probes then";
		break;
	case AGENT_TOO_OLD:
		s = "the target's runtime is too old: the profiler needs .NET 8 or later "
		    "(ICorProfilerInfo14)";
		break;
	case AGENT_ALREADY:
		s = "a clrtap profiler is already active in this process; wait for it to detach "
		    "(clrtap agent status)";
		break;
	case AGENT_PLACE_FAILED:
		s = "could not write the profiler library into the target's temp directory";
		break;
	case AGENT_NOT_SUPPORTED:
		s = "the target's runtime does not support attaching a profiler";
		break;
	case AGENT_NO_ANSWER:
		s = "the profiler attached but sent nothing over EventPipe";
		break;
	default:
		s = "the runtime refused to attach the profiler";
		break;
	}
	if (hr) {
		const char *name = ipc_hresult_name(hr);

		if (hr == (int32_t)0x8007007E)
			name = "ERROR_MOD_NOT_FOUND";
		snprintf(buf, len, "%s (HRESULT 0x%08x%s%s)", s, (unsigned)hr, name ? " " : "",
			 name ? name : "");
	}
	else
		snprintf(buf, len, "%s", s);
}

/* ---------------------------------------------------------------- config */

int agent_config_encode(const struct agent_config *c, char *buf, size_t len, size_t *outlen)
{
	int n = snprintf(buf, len, "hb=%u;wait=%u;feat=%u", c->heartbeat_ms, c->wait_ms,
			 c->features);

	if (n < 0 || (size_t)n >= len || (size_t)n > PRF_CONFIG_MAX)
		return -ENOSPC;
	*outlen = (size_t)n;
	return 0;
}

int agent_config_add_probe(char *buf, size_t len, size_t *outlen, const char *spec)
{
	const char *sep = strstr(spec, "::"), *paren = strchr(spec, '(');
	size_t n = strlen(spec);
	int w;

	if (!sep || sep == spec || !sep[2] || sep[2] == '(' || n >= PRF_SPEC_MAX ||
	    strpbrk(spec, ";= \t"))
		return -EINVAL;
	if (paren && (paren < sep || spec[n - 1] != ')'))
		return -EINVAL;
	if (paren) {
		static const char *const types[] = { "bool", "char", "int8", "uint8", "int16",
						     "uint16", "int32", "uint32", "int64",
						     "uint64", "float32", "float64", "string",
						     "object" };
		const char *p = paren + 1;

		while (*p != ')') {
			size_t k = strcspn(p, ",)");
			bool ok = false;

			for (size_t i = 0; i < ARRAY_SIZE(types); i++)
				if (strlen(types[i]) == k && !strncmp(types[i], p, k))
					ok = true;
			if (!ok)
				return -EINVAL;
			p += k;
			if (*p == ',')
				p++;
		}
	}
	w = snprintf(buf + *outlen, len - *outlen, ";probe=%s", spec);
	if (w < 0 || (size_t)w >= len - *outlen || *outlen + (size_t)w > PRF_CONFIG_MAX)
		return -ENOSPC;
	*outlen += (size_t)w;
	return 0;
}

void agent_clsid(int mode, uint8_t out[16])
{
	uint32_t d1 = mode == PRF_MODE_NOTIFICATION ? PRF_CLSID_NOTIFY_D1 : PRF_CLSID_MAIN_D1;
	static const uint8_t d4m[8] = PRF_CLSID_D4_MAIN, d4n[8] = PRF_CLSID_D4_NOTIFY;

	/* GUID memory layout: Data1..3 little-endian, Data4 as bytes. */
	out[0] = (uint8_t)d1;
	out[1] = (uint8_t)(d1 >> 8);
	out[2] = (uint8_t)(d1 >> 16);
	out[3] = (uint8_t)(d1 >> 24);
	out[4] = (uint8_t)PRF_CLSID_D2;
	out[5] = (uint8_t)(PRF_CLSID_D2 >> 8);
	out[6] = (uint8_t)PRF_CLSID_D3;
	out[7] = (uint8_t)(PRF_CLSID_D3 >> 8);
	memcpy(out + 8, mode == PRF_MODE_NOTIFICATION ? d4n : d4m, 8);
}

/* ---------------------------------------------------------------- events */

/* A NUL-terminated UTF-16 string at the end of the payload, into text. */
static int take_string(struct cursor *c, struct agent_event *ev)
{
	struct strbuf sb = STRBUF_INIT_MAX(sizeof(ev->text) - 1);
	size_t n = 0, avail = cur_left(c) / 2;
	const uint8_t *p = c->p + c->off;
	int err;

	while (n < avail && (p[2 * n] | p[2 * n + 1]))
		n++;
	if (n == avail)
		return -EBADMSG; /* no terminator */
	err = utf16le_to_utf8(&sb, p, n, true);
	if (err && err != -ENOSPC) {
		strbuf_release(&sb);
		return -EBADMSG;
	}
	snprintf(ev->text, sizeof(ev->text), "%.*s", (int)sb.len, sb.buf);
	strbuf_release(&sb);
	c->off += 2 * (n + 1);
	return 0;
}

int agent_event_decode(int id, const uint8_t *p, size_t len, struct agent_event *ev)
{
	struct cursor c;
	int err = 0;

	if (id == PRF_EV_CALL_STACK) {
		uint32_t clen;
		size_t k, n;

		if (len < 4)
			return -EBADMSG;
		clen = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		       (uint32_t)p[3] << 24;
		if (clen > len - 4 || (len - 4 - clen) % 8 ||
		    (len - 4 - clen) / 8 > AGENT_STACK_MAX)
			return -EBADMSG;
		err = agent_event_decode(PRF_EV_CALL, p + 4, clen, ev);
		if (err)
			return err;
		n = (len - 4 - clen) / 8;
		for (k = 0; k < n; k++) {
			const uint8_t *q = p + 4 + clen + 8 * k;
			uint64_t v = 0;

			for (int b = 7; b >= 0; b--)
				v = v << 8 | q[b];
			ev->stack[k] = v;
		}
		ev->nstack = (uint32_t)n;
		return 0;
	}
	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	cur_init(&c, p, len);
	switch (id) {
	case PRF_EV_HELLO:
		err = err ?: cur_u32(&c, &ev->protocol);
		err = err ?: cur_u32(&c, &ev->mode);
		err = err ?: cur_u32(&c, &ev->features);
		err = err ?: cur_u16(&c, &ev->rt_major);
		err = err ?: cur_u16(&c, &ev->rt_minor);
		err = err ?: cur_u16(&c, &ev->rt_build);
		err = err ?: cur_u32(&c, &ev->generation);
		err = err ?: cur_u32(&c, &ev->pid);
		err = err ?: take_string(&c, ev);
		break;
	case PRF_EV_STATUS:
		err = err ?: cur_u32(&c, &ev->state);
		err = err ?: cur_u32(&c, &ev->mode);
		err = err ?: cur_u32(&c, &ev->features);
		err = err ?: cur_u32(&c, &ev->generation);
		err = err ?: cur_u64(&c, &ev->seq);
		err = err ?: cur_u64(&c, &ev->written);
		err = err ?: cur_u64(&c, &ev->write_errors);
		err = err ?: cur_u64(&c, &ev->modules);
		err = err ?: cur_u64(&c, &ev->jit);
		err = err ?: cur_u64(&c, &ev->exceptions);
		err = err ?: cur_u64(&c, &ev->threads);
		err = err ?: take_string(&c, ev);
		if (!err && cur_left(&c) >= 8)
			err = cur_u64(&c, &ev->rejit_errors);
		break;
	case PRF_EV_MODULE: {
		uint32_t hr = 0;

		err = err ?: cur_u64(&c, &ev->module_id);
		err = err ?: cur_u32(&c, &hr);
		err = err ?: take_string(&c, ev);
		ev->hresult = (int32_t)hr;
		break;
	}
	case PRF_EV_DETACHING:
		err = err ?: cur_u32(&c, &ev->reason);
		err = err ?: cur_u32(&c, &ev->generation);
		break;
	case PRF_EV_PROBE_INSTALLED: {
		uint32_t hr = 0;

		err = err ?: cur_u32(&c, &ev->spec);
		err = err ?: cur_u32(&c, &ev->methods);
		err = err ?: cur_u32(&c, &hr);
		err = err ?: take_string(&c, ev);
		ev->hresult = (int32_t)hr;
		break;
	}
	case PRF_EV_CALL:
		err = err ?: cur_u32(&c, &ev->probe);
		err = err ?: cur_u32(&c, &ev->kinds);
		err = err ?: cur_u32(&c, &ev->retkind);
		err = err ?: cur_u64(&c, &ev->latency_ns);
		for (int i = 0; i < PRF_MAX_ARGS; i++)
			err = err ?: cur_u64(&c, &ev->a[i]);
		err = err ?: cur_u64(&c, &ev->ret);
		err = err ?: take_string(&c, ev);
		err = err ?: cur_u64(&c, &ev->self);
		if (!err && ((ev->retkind >> 8) & 0xff) > PRF_MAX_ARGS)
			err = -EBADMSG;
		break;
	case PRF_EV_NATMEM: {
		uint32_t e = 0;

		err = err ?: cur_u64(&c, &ev->module_id); /* the tables' address */
		err = err ?: cur_u64(&c, &ev->count);     /* their size */
		err = err ?: cur_u64(&c, &ev->seq);       /* the mean interval */
		err = err ?: cur_u32(&c, &ev->methods);   /* GOT slots patched */
		err = err ?: cur_u32(&c, &ev->spec);      /* modules */
		err = err ?: cur_u32(&c, &e);
		ev->hresult = (int32_t)e;
		break;
	}
	case PRF_EV_FLUSHED:
		err = err ?: cur_u64(&c, &ev->seq);
		err = err ?: cur_u32(&c, &ev->generation);
		break;
	case PRF_EV_PROBE_COUNT:
		err = err ?: cur_u32(&c, &ev->probe);
		err = err ?: cur_u32(&c, &ev->spec);
		err = err ?: cur_u32(&c, &ev->token);
		err = err ?: cur_u64(&c, &ev->module_id);
		err = err ?: cur_u64(&c, &ev->count);
		break;
	default:
		return -ENOENT;
	}
	return err ? -EBADMSG : 0;
}

/* --------------------------------------------------------------- library */

int agent_library_host_path(enum agent_libc l, char *out, size_t len)
{
	const char *dir = getenv("CLRTAP_PROFILER_DIR");
	char self[PATH_MAX];
	ssize_t n;
	int w;

	if (l != AGENT_LIBC_GLIBC && l != AGENT_LIBC_MUSL)
		return -EINVAL;
	if (dir && dir[0]) {
		w = snprintf(out, len, "%s/%s/libclrtap-profiler.so", dir, agent_libc_name(l));
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return -ENOENT;
		self[n] = '\0';
		/* the build tree: <dir>/profiler/<libc>/ */
		w = snprintf(out, len, "%s/profiler/%s/libclrtap-profiler.so", dirname(self),
			     agent_libc_name(l));
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
		if (!access(out, R_OK))
			return 0;
		/* installed (make install, .deb, release archive): PREFIX/bin/../lib/clrtap/<libc>/ */
		w = snprintf(out, len, "%s/../lib/clrtap/%s/libclrtap-profiler.so", self,
			     agent_libc_name(l));
	}
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	return access(out, R_OK) ? -ENOENT : 0;
}

/* ------------------------------------------------------------ call format */

static void fmt_double(struct strbuf *sb, uint64_t bits)
{
	double d;
	char tmp[40];

	memcpy(&d, &bits, 8);
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d || prec == 17)
			break;
	}
	(void)strbuf_addstr(sb, tmp);
}

/* The next string of the Strings field: up to U+001F or U+001E (or the end). */
static void next_string(const char **p, struct strbuf *sb)
{
	const char *s = *p, *e = s;

	while (*e && *e != 0x1F && *e != 0x1E)
		e++;
	(void)strbuf_addch(sb, '"');
	(void)strbuf_add(sb, s, (size_t)(e - s));
	(void)strbuf_addch(sb, '"');
	*p = *e == 0x1F ? e + 1 : e;
}

static void fmt_value(struct strbuf *sb, unsigned kind, uint64_t v, const char **strs)
{
	switch (kind) {
	case PRF_K_INT:
		(void)strbuf_addf(sb, "%" PRId64, (int64_t)v);
		break;
	case PRF_K_UINT:
		(void)strbuf_addf(sb, "%" PRIu64, v);
		break;
	case PRF_K_FLOAT:
		fmt_double(sb, v);
		break;
	case PRF_K_BOOL:
		(void)strbuf_addstr(sb, v ? "true" : "false");
		break;
	case PRF_K_CHAR: {
		uint8_t u[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

		(void)strbuf_addch(sb, '\'');
		(void)utf16le_to_utf8(sb, u, 1, false);
		(void)strbuf_addch(sb, '\'');
		break;
	}
	case PRF_K_STRING:
		next_string(strs, sb);
		break;
	case PRF_K_NULL:
		(void)strbuf_addstr(sb, "null");
		break;
	case PRF_K_VOID:
		(void)strbuf_addstr(sb, "void");
		break;
	default:
		/* objects other than strings, structs; strings where marshalling is off */
		(void)strbuf_addstr(sb, "?(not recorded by the ReJIT probe)");
		break;
	}
}

int agent_call_format_split(const struct agent_event *ev, const char *this_type, char *args,
			    size_t alen, char *ret, size_t rlen)
{
	struct strbuf sb = STRBUF_INIT_MAX(8192);
	const char *strs = ev->text, *rs;
	unsigned n = (ev->retkind >> 8) & 0xff;
	int err;

	(void)strbuf_addch(&sb, '(');
	if (ev->retkind & (1u << 16))
		(void)strbuf_addf(&sb, "this=%s%s0x%" PRIx64 "%s", this_type ? this_type : "",
				  this_type ? "@" : "", ev->self, n ? ", " : "");
	for (unsigned i = 0; i < n && i < PRF_MAX_ARGS; i++) {
		if (i)
			(void)strbuf_addstr(&sb, ", ");
		fmt_value(&sb, (ev->kinds >> (4 * i)) & 0xf, ev->a[i], &strs);
	}
	(void)strbuf_addch(&sb, ')');
	err = snprintf(args, alen, "%s", sb.buf) >= (int)alen ? -ENOSPC : 0;
	strbuf_reset(&sb);
	rs = strchr(ev->text, 0x1E);
	rs = rs ? rs + 1 : "";
	fmt_value(&sb, ev->retkind & 0xf, ev->ret, &rs);
	if (!err)
		err = snprintf(ret, rlen, "%s", sb.buf) >= (int)rlen ? -ENOSPC : 0;
	strbuf_release(&sb);
	return err;
}

int agent_call_format(const struct agent_event *ev, const char *this_type, char *buf,
		      size_t len)
{
	char args[4096], ret[2048];
	int err = agent_call_format_split(ev, this_type, args, sizeof(args), ret, sizeof(ret));

	if (err)
		return err;
	return snprintf(buf, len, "%s -> %s", args, ret) >= (int)len ? -ENOSPC : 0;
}
