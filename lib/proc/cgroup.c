/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c - which container and Kubernetes pod a process belongs to, read
 * from the names container runtimes give their cgroups.
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/strparse.h"
#include "proc/proc.h"

#define CGROUP_MAX_BYTES 65536

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A path component of exactly 64 hex digits after a known prefix, before ".scope". */
static bool component_id(const char *p, size_t n, char id[65])
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-",
						"containerd-", "" };
	size_t i, j;

	if (n > 6 && !memcmp(p + n - 6, ".scope", 6))
		n -= 6;
	for (i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n != pl + 64 || memcmp(p, prefixes[i], pl))
			continue;
		for (j = 0; j < 64 && is_hex(p[pl + j]); j++)
			;
		if (j == 64) {
			memcpy(id, p + pl, 64);
			id[64] = '\0';
			return true;
		}
	}
	return false;
}

/* "pod<uid>" anywhere in a component, the uid with '-' or '_' separators. */
static bool component_pod(const char *p, size_t n, char pod[37])
{
	static const unsigned groups[] = { 8, 4, 4, 4, 12 };
	size_t i;

	for (i = 0; i + 3 + 36 <= n; i++) {
		const char *u = p + i + 3;
		size_t k = 0, g, o = 0;
		bool ok = true;

		if (memcmp(p + i, "pod", 3))
			continue;
		for (g = 0; g < ARRAY_SIZE(groups) && ok; g++) {
			size_t d;

			for (d = 0; d < groups[g]; d++)
				if (!is_hex(u[k++]))
					ok = false;
			if (ok && g + 1 < ARRAY_SIZE(groups) && u[k] != '-' && u[k] != '_')
				ok = false;
			k++;
		}
		if (!ok)
			continue;
		for (k = 0; k < 36; k++)
			pod[o++] = (u[k] == '_') ? '-' : u[k];
		pod[36] = '\0';
		return true;
	}
	return false;
}

/* One cgroup path: the deepest id and pod in it. */
static void scan_path(const char *p, size_t n, struct proc_container *c)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && p[j] != '/')
			j++;
		if (j > i) {
			component_id(p + i, j - i, c->id);
			component_pod(p + i, j - i, c->pod);
		}
		i = j + 1;
	}
}

void proc_parse_cgroup(const char *text, size_t len, struct proc_container *c)
{
	struct proc_container v1 = { "", "" }, v2 = { "", "" };
	size_t pos = 0;

	memset(c, 0, sizeof(*c));
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : len - pos;
		const char *c1 = memchr(line, ':', ll), *c2;

		pos += ll + 1;
		if (!c1)
			continue;
		c2 = memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - line));
		if (!c2)
			continue;
		/* "0::/path" is the unified hierarchy */
		scan_path(c2 + 1, ll - (size_t)(c2 + 1 - line),
			  (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) ? &v2 : &v1);
	}
	memcpy(c->id, v2.id[0] ? v2.id : v1.id, sizeof(c->id));
	memcpy(c->pod, v2.pod[0] ? v2.pod : v1.pod, sizeof(c->pod));
}

int proc_container(pid_t pid, struct proc_container *c)
{
	struct strbuf sb = STRBUF_INIT_MAX(CGROUP_MAX_BYTES);
	int err;

	memset(c, 0, sizeof(*c));
	err = proc_read(pid, "cgroup", &sb);
	if (!err)
		proc_parse_cgroup(sb.buf, sb.len, c);
	strbuf_release(&sb);
	return err;
}

/* A decimal number (or "max": *v = 0) from DIR/NAME. */
static int cg_read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX + 64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (!strcmp(buf, "max")) {
		*v = 0;
		return 0;
	}
	return ct_parse_u64(buf, 10, v) ? -EBADMSG : 0;
}

int proc_cgroup_memory(pid_t pid, struct proc_cgmem *m)
{
	struct strbuf sb;
	const char *l, *found = NULL;
	char rel[PROC_PATH_MAX], dir[PATH_MAX];
	const char *base, *fcur, *fmax;
	size_t len;
	struct stat st;
	int err;

	memset(m, 0, sizeof(*m));
	strbuf_init(&sb, CGROUP_MAX_BYTES);
	err = proc_read(pid, "cgroup", &sb);
	if (err)
		goto out;
	for (l = sb.buf; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *e = strchrnul(l, '\n');

		if (!c2 || c2 > e)
			continue;
		/* v1: the controller list holds "memory" */
		for (const char *p = c1 + 1; p < c2;) {
			const char *q = memchr(p, ',', (size_t)(c2 - p));

			if (!q)
				q = c2;
			if (q - p == 6 && !memcmp(p, "memory", 6))
				found = c2 + 1;
			p = q + 1;
		}
	}
	m->v2 = !found;
	if (!found) {
		for (l = sb.buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (!strncmp(l, "0::/", 4)) {
				found = l + 3;
				break;
			}
		if (!found || stat("/sys/fs/cgroup/cgroup.controllers", &st)) {
			err = -ENOENT;
			goto out;
		}
	}
	len = (size_t)(strchrnul(found, '\n') - found);
	if (len >= sizeof(rel)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	memcpy(rel, found, len);
	rel[len] = 0;
	if (rel[0] != '/' || strstr(rel, "/..") || strstr(rel, "//")) {
		err = -EINVAL;
		goto out;
	}
	base = m->v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
	fcur = m->v2 ? "memory.current" : "memory.usage_in_bytes";
	fmax = m->v2 ? "memory.max" : "memory.limit_in_bytes";
	err = -ENOENT;
	for (;;) {
		uint64_t cur, lim;

		snprintf(dir, sizeof(dir), "%s%s", base, strcmp(rel, "/") ? rel : "");
		if (!cg_read_u64(dir, fcur, &cur)) {
			if (err) { /* the leaf: its usage, until a limit is found */
				m->current = cur;
				ct_strlcpy(m->path, rel, sizeof(m->path));
				err = 0;
			}
			if (!cg_read_u64(dir, fmax, &lim) && lim && lim < (1ULL << 62) &&
			    (!m->limit || lim < m->limit)) {
				m->limit = lim;
				m->current = cur;
				ct_strlcpy(m->path, rel, sizeof(m->path));
			}
		}
		if (!strcmp(rel, "/"))
			break;
		{
			char *slash = strrchr(rel, '/');

			if (slash == rel)
				rel[1] = 0;
			else
				*slash = 0;
		}
	}
out:
	strbuf_release(&sb);
	return err;
}
