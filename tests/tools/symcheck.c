/* SPDX-License-Identifier: MIT */
/*
 * symcheck - drives lib/sym against a live process for the integration test
 * (t-sym.sh) and for measuring it.
 *
 *   symcheck PID ADDR...                 name each address (hex)
 *   symcheck PID --jit PATTERN           perf map entries matching PATTERN, each
 *                                        looked up at start and start+size/2
 *   symcheck PID --r2r IMAGE PATTERN     the first R2R method of IMAGE (a file
 *                                        name like System.Private.CoreLib.dll)
 *                                        matching PATTERN, found with lib/pe: its
 *                                        live address from the maps, looked up
 *   symcheck PID --threads               the pc of every thread blocked in a
 *                                        system call (/proc/PID/task/T/syscall)
 *   symcheck PID --bench N               N lookups over addresses taken from the
 *                                        perf map and the executable mappings
 *   options (before PID): --kernel, --no-perfmap, --perfmap PATH
 *
 * A lookup prints one tab-separated line:
 *   ADDR KIND MODULE NAME +OFFSET SIG TIER      ("-" for none)
 * Exit: 0 all named, 1 some address unnamed or an error, 2 usage, 3 no process.
 */
#include "common/compat.h"

#include <dirent.h>
#include <time.h>

#include "common/strparse.h"
#include "pe/pe.h"
#include "sym/sym.h"

static const char *kind_name(enum sym_kind k)
{
	switch (k) {
	case SYM_JIT:
		return "JIT";
	case SYM_R2R:
		return "R2R";
	case SYM_NATIVE:
		return "NATIVE";
	case SYM_KERNEL:
		return "KERNEL";
	case SYM_STUB:
		return "STUB";
	default:
		return "UNKNOWN";
	}
}

static const char *dash(const char *s)
{
	return s ? s : "-";
}

static int show(struct sym_proc *sp, uint64_t addr)
{
	struct sym_frame f;
	int rc = sym_lookup(sp, addr, &f);

	printf("0x%" PRIx64 "\t%s\t%s\t%s\t+0x%" PRIx64 "\t%s\t%s\n", addr, kind_name(f.kind),
	       dash(f.module), rc ? "-" : dash(f.name), f.offset, dash(f.sig), dash(f.tier));
	return rc ? 1 : 0;
}

static int do_jit(struct sym_proc *sp, const char *pattern)
{
	struct sym_jit_entry e[256];
	size_t n, i;
	int ret = 0;

	sym_proc_find_jit(sp, pattern, e, ARRAY_SIZE(e), &n);
	if (!n) {
		fprintf(stderr, "symcheck: no perf map entry matches %s\n", pattern);
		return 1;
	}
	for (i = 0; i < n && i < ARRAY_SIZE(e); i++) {
		printf("entry\t0x%" PRIx64 "\t0x%" PRIx64 "\t%s\t%s\t%s\t%s\n", e[i].start, e[i].size,
		       e[i].name, dash(e[i].sig), dash(e[i].tier), dash(e[i].module));
		ret |= show(sp, e[i].start);
		ret |= show(sp, e[i].start + e[i].size / 2);
	}
	return ret;
}

static int do_r2r(struct sym_proc *sp, const char *image, const char *pattern)
{
	const struct pe_method *ms;
	struct pe_file *pf = NULL;
	const char *path;
	uint32_t idx;
	uint64_t addr;
	size_t n, nm;
	int err;

	err = sym_proc_find_image(sp, image, NULL, NULL, &path);
	if (err) {
		fprintf(stderr, "symcheck: %s is not mapped\n", image);
		return 1;
	}
	err = pe_file_open(path, NULL, &pf);
	if (!err)
		err = pe_file_methods(pf, &ms, &nm);
	if (!err)
		err = pe_file_find(pf, pattern, &idx, 1, &n);
	if (err || !n) {
		fprintf(stderr, "symcheck: %s: no R2R method %s (%s)\n", path, pattern,
			err ? strerror(-err) : "no match");
		pe_file_close(pf);
		return 1;
	}
	err = sym_proc_offset_to_addr(sp, image, ms[idx].entry_offset, &addr);
	if (err) {
		fprintf(stderr, "symcheck: offset 0x%" PRIx64 " of %s is not mapped\n",
			ms[idx].entry_offset, image);
		pe_file_close(pf);
		return 1;
	}
	printf("method\t0x%" PRIx64 "\t%s\t%s\t0x%" PRIx64 "\t0x%x\n", addr, ms[idx].name,
	       ms[idx].sig, ms[idx].entry_offset, ms[idx].code_size);
	err = show(sp, addr);
	if (ms[idx].code_size > 1)
		err |= show(sp, addr + ms[idx].code_size - 1);
	pe_file_close(pf);
	return err;
}

static int do_threads(struct sym_proc *sp, pid_t pid)
{
	char dpath[64];
	struct dirent *de;
	DIR *d;
	int ret = 0, seen = 0;

	snprintf(dpath, sizeof(dpath), "/proc/%d/task", (int)pid);
	d = opendir(dpath);
	if (!d)
		return 3;
	while ((de = readdir(d))) {
		char p[384], buf[256];
		FILE *f;
		char *last;
		uint64_t pc;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/syscall", dpath, de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f)) {
			fclose(f);
			continue;
		}
		fclose(f);
		buf[strcspn(buf, "\n")] = '\0';
		last = strrchr(buf, ' ');
		if (!last || !strncmp(buf, "running", 7) || ct_parse_u64(last + 1, 16, &pc) ||
		    !pc)
			continue;
		printf("tid %s\t", de->d_name);
		ret |= show(sp, pc);
		seen++;
	}
	closedir(d);
	return seen ? ret : 1;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int do_bench(pid_t pid, const struct sym_opts *o, uint64_t n)
{
	struct sym_jit_entry *je;
	struct sym_proc *sp;
	struct sym_frame f;
	struct sym_stats st;
	uint64_t *addrs, i, named = 0;
	size_t nj, na = 0, want = 20000;
	char mp[64], line[1024];
	FILE *mf;
	double t0, t1, t2;
	int err;
	uint64_t x = 88172645463325252ULL;

	t0 = secs();
	err = sym_proc_open(&sp, pid, o);
	if (err)
		return 1;
	t1 = secs();
	printf("open\t%.3f ms\n", (t1 - t0) * 1e3);
	addrs = calloc(want, sizeof(*addrs));
	je = calloc(want, sizeof(*je));
	if (!addrs || !je)
		return 1;
	sym_proc_find_jit(sp, "*", je, want / 2, &nj);
	for (i = 0; i < nj && i < want / 2; i++)
		addrs[na++] = je[i].start + (je[i].size ? (i % je[i].size) : 0);
	/* random addresses inside executable file mappings */
	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	mf = fopen(mp, "r");
	if (mf) {
		uint64_t ex[512][2];
		size_t ne = 0;

		while (fgets(line, sizeof(line), mf) && ne < 512) {
			char *dsh = strchr(line, '-'), *sp1 = strchr(line, ' ');

			if (!dsh || !sp1 || sp1[3] != 'x' || !strchr(line, '/'))
				continue;
			*dsh = *sp1 = '\0';
			if (ct_parse_u64(line, 16, &ex[ne][0]) || ct_parse_u64(dsh + 1, 16, &ex[ne][1]))
				continue;
			ne++;
		}
		fclose(mf);
		while (ne && na < want) {
			size_t k;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k = (size_t)(x % ne);
			addrs[na++] = ex[k][0] + (x >> 20) % (ex[k][1] - ex[k][0]);
		}
	}
	if (!na)
		return 1;
	/* first pass: every address once (cold cache, images loaded here) */
	t1 = secs();
	for (i = 0; i < na; i++)
		named += !sym_lookup(sp, addrs[i], &f);
	t2 = secs();
	printf("first\t%zu lookups\t%.0f/s\t%" PRIu64 " named\n", na, (double)na / (t2 - t1), named);
	t1 = secs();
	for (i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		sym_lookup(sp, addrs[x % na], &f);
	}
	t2 = secs();
	sym_proc_stats(sp, &st);
	printf("repeat\t%" PRIu64 " lookups\t%.0f/s\thits %" PRIu64 "/%" PRIu64
	       "\tperfmap %zu entries\timages %zu\n",
	       n, (double)n / (t2 - t1), st.cache_hits, st.lookups, st.perfmap_entries, st.images);
	sym_proc_close(sp);
	/* the same without the cache (one slot): the cost of a real lookup */
	{
		struct sym_opts o1 = *o;

		o1.cache_slots = 1;
		if (sym_proc_open(&sp, pid, &o1))
			return 1;
		for (i = 0; i < na; i++) /* load the images first */
			sym_lookup(sp, addrs[i], &f);
		t1 = secs();
		for (i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			sym_lookup(sp, addrs[x % na], &f);
		}
		t2 = secs();
		printf("nocache\t%" PRIu64 " lookups\t%.0f/s\n", n, (double)n / (t2 - t1));
		sym_proc_close(sp);
	}
	free(addrs);
	free(je);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: symcheck [--kernel] [--no-perfmap] [--perfmap PATH] PID "
			"(ADDR...|--jit PAT|--r2r IMAGE PAT|--threads|--bench N)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sym_opts o = { 0 };
	struct sym_proc *sp;
	pid_t pid;
	int i = 1, err, ret = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--kernel"))
			o.kernel = true;
		else if (!strcmp(argv[i], "--no-perfmap"))
			o.no_perfmap = true;
		else if (!strcmp(argv[i], "--perfmap") && i + 1 < argc)
			o.perfmap_path = argv[++i];
		else
			return usage();
	}
	if (i + 1 >= argc || ct_parse_pid(argv[i], &pid))
		return usage();
	i++;
	if (!strcmp(argv[i], "--bench")) {
		uint64_t n;

		if (i + 1 >= argc || ct_parse_u64(argv[i + 1], 10, &n))
			return usage();
		return do_bench(pid, &o, n);
	}
	err = sym_proc_open(&sp, pid, &o);
	if (err) {
		fprintf(stderr, "symcheck: %d: %s\n", (int)pid, strerror(-err));
		return err == -ESRCH ? 3 : 1;
	}
	if (!strcmp(argv[i], "--jit")) {
		ret = i + 1 < argc ? do_jit(sp, argv[i + 1]) : usage();
	} else if (!strcmp(argv[i], "--r2r")) {
		ret = i + 2 < argc ? do_r2r(sp, argv[i + 1], argv[i + 2]) : usage();
	} else if (!strcmp(argv[i], "--threads")) {
		ret = do_threads(sp, pid);
	} else {
		for (; i < argc; i++) {
			uint64_t a;

			if (ct_parse_u64(argv[i], 16, &a)) {
				ret = usage();
				break;
			}
			ret |= show(sp, a);
		}
	}
	sym_proc_close(sp);
	return ret;
}
