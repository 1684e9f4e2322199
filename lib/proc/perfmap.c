/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <dirent.h>

#include "common/strparse.h"
#include "proc/proc.h"

/* Does the target hold a file whose path ends in "/<base>" open? */
static bool holds_open(pid_t pid, const char *base)
{
	char dirpath[64];
	size_t blen = strlen(base);
	struct dirent *de;
	bool found = false;
	unsigned seen = 0;
	DIR *d;

	snprintf(dirpath, sizeof(dirpath), "/proc/%d/fd", (int)pid);
	d = opendir(dirpath);
	if (!d)
		return false;
	/* A target can hold many descriptors: look at the first 65536. */
	while (!found && seen++ < 65536 && (de = readdir(d))) {
		char link[64 + 256], target[PROC_PATH_MAX];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dirpath, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0 || (size_t)n <= blen)
			continue;
		target[n] = '\0';
		found = target[n - (ssize_t)blen - 1] == '/' && !strcmp(target + n - blen, base);
	}
	closedir(d);
	return found;
}

/*
 * dir/base as the target sees it (tpath) and for messages (hpath); whether
 * anything is at that name, looked up inside the target's root (a link there
 * counts as there, and is never followed).
 */
static int name_file(const struct proc_target *t, int rootfd, const char *dir, const char *base,
		     char *tpath, char *hpath, bool *exists)
{
	int n, fd, err;

	n = snprintf(tpath, PROC_PATH_MAX, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base);
	if (n < 0 || n >= PROC_PATH_MAX)
		return -ENAMETOOLONG;
	err = proc_host_path(t, tpath, hpath, PROC_PATH_MAX);
	if (err)
		return err;
	*exists = false;
	if (rootfd >= 0) {
		err = proc_tpath_open(rootfd, tpath, 0, &fd);
		if (!err)
			close(fd);
		*exists = !err || err == -ELOOP;
	}
	return 0;
}

int proc_perfmap_state(const struct proc_target *t, struct proc_perfmap *pm)
{
	static const char *const dir_vars[] = { "DOTNET_PerfMapJitDumpPath",
						"COMPlus_PerfMapJitDumpPath" };
	static const char *const on_vars[] = { "DOTNET_PerfMapEnabled", "COMPlus_PerfMapEnabled" };
	struct strbuf sb = STRBUF_INIT_MAX(PROC_PATH_MAX - 1);
	char base[64];
	size_t i;
	int err, rootfd;

	memset(pm, 0, sizeof(*pm));
	ct_strlcpy(pm->dir, "/tmp", sizeof(pm->dir));
	for (i = 0; i < ARRAY_SIZE(dir_vars); i++) {
		strbuf_reset(&sb);
		if (!proc_environ_get(t->pid, dir_vars[i], &sb) && sb.len) {
			ct_strlcpy(pm->dir, sb.buf, sizeof(pm->dir));
			break;
		}
	}
	for (i = 0; i < ARRAY_SIZE(on_vars); i++) {
		strbuf_reset(&sb);
		if (!proc_environ_get(t->pid, on_vars[i], &sb) && sb.len) {
			ct_strlcpy(pm->env_setting, sb.buf, sizeof(pm->env_setting));
			break;
		}
	}
	strbuf_release(&sb);
	{
		size_t dl = strlen(pm->dir);

		while (dl > 1 && pm->dir[dl - 1] == '/')
			pm->dir[--dl] = '\0';
	}

	if (proc_root_open(t->pid, &rootfd))
		rootfd = -1;
	snprintf(base, sizeof(base), "perf-%d.map", (int)t->nspid);
	err = name_file(t, rootfd, pm->dir, base, pm->map_tpath, pm->map_path, &pm->map_exists);
	if (err)
		goto out;
	pm->map_open = holds_open(t->pid, base);

	snprintf(base, sizeof(base), "jit-%d.dump", (int)t->nspid);
	err = name_file(t, rootfd, pm->dir, base, pm->jitdump_tpath, pm->jitdump_path,
			&pm->jitdump_exists);
	if (err)
		goto out;
	pm->jitdump_open = holds_open(t->pid, base);
	pm->on = pm->map_open || pm->jitdump_open;
out:
	if (rootfd >= 0)
		close(rootfd);
	return err;
}
