/* SPDX-License-Identifier: MIT */
#include "common/compat.h"

#include <dirent.h>
#include <sys/stat.h>

#include "common/strparse.h"
#include "proc/proc.h"

/* Does the target hold a file whose path ends in "/<base>" open? */
static bool holds_open(pid_t pid, const char *base)
{
	char dirpath[64];
	size_t blen = strlen(base);
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dirpath, sizeof(dirpath), "/proc/%d/fd", (int)pid);
	d = opendir(dirpath);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
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

int proc_perfmap_state(const struct proc_target *t, struct proc_perfmap *pm)
{
	static const char *const dir_vars[] = { "DOTNET_PerfMapJitDumpPath",
						"COMPlus_PerfMapJitDumpPath" };
	static const char *const on_vars[] = { "DOTNET_PerfMapEnabled", "COMPlus_PerfMapEnabled" };
	struct strbuf sb = STRBUF_INIT_MAX(PROC_PATH_MAX - 1);
	char base[64], tpath[PROC_PATH_MAX + 64];
	struct stat st;
	size_t i;
	int err;

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

	snprintf(base, sizeof(base), "perf-%d.map", (int)t->nspid);
	snprintf(tpath, sizeof(tpath), "%s/%s", pm->dir, base);
	err = proc_host_path(t, tpath, pm->map_path, sizeof(pm->map_path));
	if (err)
		return err;
	pm->map_exists = stat(pm->map_path, &st) == 0;
	pm->map_open = holds_open(t->pid, base);

	snprintf(base, sizeof(base), "jit-%d.dump", (int)t->nspid);
	snprintf(tpath, sizeof(tpath), "%s/%s", pm->dir, base);
	err = proc_host_path(t, tpath, pm->jitdump_path, sizeof(pm->jitdump_path));
	if (err)
		return err;
	pm->jitdump_exists = stat(pm->jitdump_path, &st) == 0;
	pm->jitdump_open = holds_open(t->pid, base);
	pm->on = pm->map_open || pm->jitdump_open;
	return 0;
}
