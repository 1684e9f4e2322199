/* SPDX-License-Identifier: MIT */
/*
 * flame_folded.c - the folded-stack text format ("root;child;leaf 12"), both
 * directions. Writing walks the sorted trie so the lines come out in byte
 * order of their frames; reading parses untrusted text into a struct flame.
 */
#include "common/compat.h"

#include "common/log.h"
#include "common/strparse.h"
#include "flame/flame_int.h"

#define MAX_LINE ((size_t)1 << 20)
#define MAX_LINE_FRAMES 65536

/* ';' separates frames and '\n' lines: neither may appear inside a name. */
static void out_folded_name(struct flame_out *o, const struct flame_name *nm)
{
	size_t i, start = 0;

	for (i = 0; i < nm->len; i++) {
		char c = nm->s[i];
		const char *rep;

		if (c == ';')
			rep = ":";
		else if (c == '\n' || c == '\r')
			rep = " ";
		else
			continue;
		flame_out_add(o, nm->s + start, i - start);
		flame_out_add(o, rep, 1);
		start = i + 1;
	}
	flame_out_add(o, nm->s + start, nm->len - start);
}

int flame_write_folded(const struct flame_view *v, struct flame_out *o, const struct flame_opts *opts)
{
	const struct flame *f = v->f;
	struct flame_walk w;
	uint32_t c;
	int ev, i;

	flame_walk_init(&w, v);
	while (!o->err && (ev = flame_walk_next(&w, &c)) != FLAME_WALK_END) {
		if (ev != FLAME_WALK_ENTER || !f->nodes[c].self)
			continue;
		for (i = 1; i <= w.sp; i++) {
			if (i > 1)
				flame_out_add(o, ";", 1);
			out_folded_name(o, &f->names[f->nodes[w.stk[i]].name]);
		}
		flame_out_f(o, " %" PRIu64 "\n", f->nodes[c].self);
		flame_out_maybe_flush(o);
	}
	return o->err;
}

/* Parses one line (no newline, NUL-terminated copy in buf). Returns 1 when a stack was added. */
static int parse_line(struct flame *f, char *buf, size_t len, const char **frames, size_t maxframes)
{
	char *sp, *p;
	uint64_t w;
	size_t n = 0;
	int err;

	while (len && (buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		buf[--len] = '\0';
	if (len == 0 || buf[0] == '#')
		return 0;
	sp = strrchr(buf, ' ');
	if (!sp || sp == buf)
		return -EBADMSG;
	if (ct_parse_u64(sp + 1, 10, &w))
		return -EBADMSG;
	*sp = '\0';
	p = buf;
	for (;;) {
		char *semi = strchr(p, ';');

		if (n == maxframes)
			return -E2BIG;
		frames[n++] = p;
		if (!semi)
			break;
		*semi = '\0';
		p = semi + 1;
	}
	if (w == 0)
		return 0;
	err = flame_add(f, frames, n, w);
	return err < 0 ? err : 1;
}

int flame_read_folded(struct flame *f, const char *data, size_t len)
{
	const char **frames;
	char *buf;
	size_t off = 0, lineno = 0;
	int added = 0, err = 0;

	if (!f || (len && !data))
		return -EINVAL;
	/* a line has at most len + 1 frames and len bytes */
	frames = malloc(CT_MIN(len + 1, (size_t)MAX_LINE_FRAMES) * sizeof(*frames));
	buf = malloc(CT_MIN(len, MAX_LINE) + 1);
	if (!frames || !buf) {
		free(frames);
		free(buf);
		return -ENOMEM;
	}
	while (off < len) {
		const char *nl = memchr(data + off, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - (data + off)) : len - off;

		lineno++;
		if (ll > MAX_LINE) {
			err = -E2BIG;
			break;
		}
		memcpy(buf, data + off, ll);
		buf[ll] = '\0';
		if (memchr(buf, '\0', ll)) {
			err = -EBADMSG;
			break;
		}
		err = parse_line(f, buf, ll, frames, CT_MIN(len + 1, (size_t)MAX_LINE_FRAMES));
		if (err < 0)
			break;
		if (added < INT_MAX)
			added += err;
		err = 0;
		off += ll + (nl ? 1 : 0);
	}
	if (err)
		ct_debug("flame: folded input line %zu: %s", lineno, strerror(-err));
	free(frames);
	free(buf);
	return err ? err : added;
}
