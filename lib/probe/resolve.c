/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - from a method pattern to the code of the methods in a live
 * process: the managed assemblies mapped in /proc/PID/maps (opened through
 * /proc/PID/root, so a container's files are read from the host), their
 * metadata (every MethodDef, compiled or not), their ReadyToRun entry points
 * (lib/pe), and the JIT'd code versions listed in the runtime's perf map.
 */
#include "common/compat.h"

#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "common/clrname.h"
#include "common/log.h"
#include "common/strparse.h"
#include "jitdump/jitdump.h"
#include "srcline/srcline.h"
#include "probe/probe.h"
#include "proc/proc.h"
#include "sym/sym.h"

#define MAX_MAPS 65536
#define MAX_IMAGES 512
#define MAX_FOUND 4096
#define MAX_PM_ENTRIES (1u << 20)
#define PM_READ_MAX ((size_t)64 << 20)
#define PM_MEM_MAX ((uint64_t)64 << 20) /* perf map entries and their strings */

struct pmap {
	uint64_t start, end, pgoff;
	bool exec;
	char *path; /* as the target sees it; NULL when anonymous */
	char *host; /* root + path, made when first needed */
};

struct image {
	char *path, *host_path;
	struct pe_file *pf;
	bool r2r;
	uint32_t *rid_map; /* MethodDef RID -> R2R method index + 1 */
	uint32_t nrid;
	size_t ninst; /* InstanceMethodEntryPoints entries (generic code) */
	bool rid_built;
};

struct pm_ent {
	uint64_t start, size;
	char *module, *name, *args, *tier;
	char *base;  /* name without a generic type's instantiation */
	char *nargs; /* args normalized (probe_sig_normalize) */
};

struct probe_proc {
	pid_t pid;
	char root[64];
	char *perfmap_path;
	char *perfmap_tpath; /* as the target sees it: read inside its root */
	char *jitdump_tpath; /* jit-NSPID.dump as the target sees it, or NULL */
	char *jitdump_path;  /* its host path (watched), or NULL */
	struct jitdump_reader jd;
	bool jd_warned;
	uint64_t pm_off; /* bytes of the perf map consumed */
	uint64_t pm_mem; /* bytes of perf map strings held */
	bool pm_full;    /* PM_MEM_MAX or MAX_PM_ENTRIES reached: no more is read */
	struct pmap *maps;
	size_t nmaps;
	struct image *img;
	size_t nimg;
	struct probe_method **found;
	size_t nfound;
	struct pm_ent *pm;
	size_t npm, pmcap;
	struct sym_proc *sym; /* names for stack frames, opened on first use */
	bool sym_tried;
	struct srcline *lines; /* probe_proc_set_lines: managed frames' source lines */
	struct srcline_follow *lines_follow; /* probe_proc_lines: code compiled later */
	int mem_fd;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool ends_with_ci(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcasecmp(s + a - b, suf);
}

static int read_maps(struct probe_proc *pp)
{
	char path[64];
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pp->pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &cap, f) > 0) {
		struct pmap *m, *nm;
		char *fields[6], *p = line, *save = NULL;
		int nf = 0;
		char *dash;
		uint64_t s, e, off;

		line[strcspn(line, "\n")] = '\0';
		while (nf < 5 && (fields[nf] = strtok_r(nf ? NULL : p, " ", &save)))
			nf++;
		if (nf < 5)
			continue;
		fields[5] = save;
		while (fields[5] && *fields[5] == ' ')
			fields[5]++;
		dash = strchr(fields[0], '-');
		if (!dash)
			continue;
		*dash = '\0';
		if (ct_parse_u64(fields[0], 16, &s) || ct_parse_u64(dash + 1, 16, &e) ||
		    ct_parse_u64(fields[2], 16, &off))
			continue;
		if (pp->nmaps >= MAX_MAPS) {
			err = -E2BIG;
			break;
		}
		nm = realloc(pp->maps, (pp->nmaps + 1) * sizeof(*nm));
		if (!nm) {
			err = -ENOMEM;
			break;
		}
		pp->maps = nm;
		m = &pp->maps[pp->nmaps++];
		m->start = s;
		m->end = e;
		m->pgoff = off;
		m->exec = strlen(fields[1]) >= 3 && fields[1][2] == 'x';
		m->path = fields[5] && *fields[5] ? strdup(fields[5]) : NULL;
		m->host = NULL;
	}
	free(line);
	fclose(f);
	return err;
}

/* pe_open_opts.open_fn: a file as the target sees it, inside its root. */
static int target_open(void *ctx, const char *path, int *fd)
{
	const struct probe_proc *pp = ctx;

	return proc_target_file_open(pp->pid, path, 0, fd, NULL);
}

static int open_images(struct probe_proc *pp)
{
	size_t i, j;

	for (i = 0; i < pp->nmaps; i++) {
		const char *p = pp->maps[i].path;
		struct pe_open_opts po = { 0 };
		char host[1024];
		struct image *im, *ni;
		struct pe_file *pf;
		bool dup = false;
		int err;

		if (!p || p[0] != '/' || !(ends_with_ci(p, ".dll") || ends_with_ci(p, ".exe")))
			continue;
		for (j = 0; j < pp->nimg && !dup; j++)
			dup = !strcmp(pp->img[j].path, p);
		if (dup || pp->nimg >= MAX_IMAGES)
			continue;
		snprintf(host, sizeof(host), "%s%s", pp->root, p);
		po.flags = PE_OPEN_NO_RESOLVE;
		/* Read inside the target's root: a link the container planted leads nowhere. */
		po.open_fn = target_open;
		po.open_ctx = pp;
		err = pe_file_open(p, &po, &pf);
		if (err) {
			ct_debug("probe: %s: not an assembly (%s)", host, strerror(-err));
			continue;
		}
		if (!pe_file_info(pf)->has_cli) {
			pe_file_close(pf);
			continue;
		}
		ni = realloc(pp->img, (pp->nimg + 1) * sizeof(*ni));
		if (!ni) {
			pe_file_close(pf);
			return -ENOMEM;
		}
		pp->img = ni;
		im = &pp->img[pp->nimg++];
		memset(im, 0, sizeof(*im));
		im->path = strdup(p);
		im->host_path = strdup(host);
		im->pf = pf;
		im->r2r = pe_file_info(pf)->is_r2r && !pe_file_info(pf)->component;
		if (!im->path || !im->host_path)
			return -ENOMEM;
	}
	return 0;
}

/* ---- perf map ---- */

static int pm_add(struct probe_proc *pp, const struct probe_pm_entry *e)
{
	struct pm_ent *x;

	size_t mem = strlen(e->module) + strlen(e->name) + strlen(e->args) + strlen(e->tier) + 4 +
		     sizeof(struct pm_ent);

	if (pp->npm >= MAX_PM_ENTRIES || pp->pm_mem + mem > PM_MEM_MAX)
		return -E2BIG;
	pp->pm_mem += mem;
	if (pp->npm == pp->pmcap) {
		size_t nc = pp->pmcap ? pp->pmcap * 2 : 1024;
		struct pm_ent *n = realloc(pp->pm, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pp->pm = n;
		pp->pmcap = nc;
	}
	x = &pp->pm[pp->npm];
	x->start = e->start;
	x->size = e->size;
	x->module = strdup(e->module);
	x->name = strdup(e->name);
	x->args = strdup(e->args);
	x->tier = strdup(e->tier);
	{
		struct strbuf b = STRBUF_INIT_MAX(PROBE_PM_NAME_MAX * 2),
			      a = STRBUF_INIT_MAX(PROBE_PM_ARGS_MAX * 2);

		x->base = probe_pm_name_base(e->name, &b) ? NULL : strbuf_detach(&b, NULL);
		x->nargs = probe_sig_normalize(e->args, &a) ? NULL : strbuf_detach(&a, NULL);
		strbuf_release(&a);
		strbuf_release(&b);
	}
	if (!x->module || !x->name || !x->args || !x->tier || !x->base || !x->nargs) {
		free(x->module);
		free(x->name);
		free(x->args);
		free(x->tier);
		free(x->base);
		free(x->nargs);
		return -ENOMEM;
	}
	pp->npm++;
	return 0;
}

static bool pm_matches(const struct pm_ent *e, const struct probe_method *m)
{
	if (strcmp(e->base, m->name) || strcmp(e->module, m->module))
		return false;
	return m->nsig && !strcmp(e->nargs, m->nsig);
}

static int method_add_jit(struct probe_method *m, const struct pm_ent *e, uint64_t seen)
{
	struct probe_code *c;
	size_t i;

	for (i = 0; i < m->ncode; i++)
		if (m->code[i].kind == PROBE_CODE_JIT && m->code[i].addr == e->start)
			return 0;
	if (m->ncode >= PROBE_MAX_VERSIONS) {
		m->dropped_versions = true;
		return 0;
	}
	c = &m->code[m->ncode++];
	memset(c, 0, sizeof(*c));
	c->kind = PROBE_CODE_JIT;
	ct_strlcpy(c->tier, e->tier[0] ? e->tier : "JIT", sizeof(c->tier));
	if (strcmp(e->base, e->name)) {
		/* a generic type's instantiation: "[System.Int64,System.__Canon]" */
		const char *b = strchr(e->name, '[');
		const char *c2 = strstr(e->name, "]::");

		if (b && c2 && c2 > b)
			snprintf(c->inst, sizeof(c->inst), "%.*s", (int)(c2 - b + 1), b);
		/* the target wrote it: printed through cli_safe() */
	}
	c->addr = e->start;
	c->size = e->size;
	c->seen_ns = seen;
	return 1;
}

static int jd_line(void *ctx, const char *line, size_t len)
{
	struct probe_pm_entry e;

	if (probe_pm_parse(line, len, &e))
		return 0;
	return pm_add(ctx, &e);
}

/*
 * The jitdump file, where the runtime writes code as it publishes it also
 * when it buffers its perf map (.NET 11): read on from where the last read
 * stopped. The same code in both files is one entry (by address, below).
 */
static int jitdump_read(struct probe_proc *pp)
{
	int err = jitdump_refresh(&pp->jd, pp->pid, pp->jitdump_tpath, NULL, jd_line, pp);

	if (err == -E2BIG)
		return err;
	if (err && !pp->jd_warned) {
		ct_warn("probe: the target's jitdump file %s %s: not read further, JIT-compiled "
			"code from now on is seen only through the perf map",
			pp->jitdump_tpath,
			err == -EINVAL ? "is malformed" : proc_tfile_strerror(err));
		pp->jd_warned = true;
	}
	return 0;
}

int probe_proc_refresh(struct probe_proc *pp, size_t *added)
{
	struct strbuf sb = STRBUF_INIT_MAX(PM_READ_MAX);
	size_t i, j, first = pp->npm, cnt = 0, pos = 0;
	struct stat st;
	int fd, err = 0;
	uint64_t now = mono_ns();

	if (added)
		*added = 0;
	if (pp->pm_full)
		return 0;
	if (!pp->perfmap_tpath && !pp->perfmap_path)
		goto jitdump;
	if (pp->perfmap_tpath) {
		err = proc_target_file_open(pp->pid, pp->perfmap_tpath, 0, &fd, &st);
		if (err == -ELOOP || err == -EINVAL || err == -EISDIR) {
			/* The container put a link or a FIFO there: no JIT'd code is seen. */
			ct_warn("probe: the target's perf map %s %s: not read, JIT-compiled code "
				"is not seen",
				pp->perfmap_tpath, proc_tfile_strerror(err));
			pp->pm_full = true;
			return 0;
		}
		if (err == -ENOENT) {
			err = 0;
			goto jitdump;
		}
		if (err)
			return err;
	} else if (pp->perfmap_path) {
		/* lint-ok: target path: only given alone by tests (a host file) */
		fd = open(pp->perfmap_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			if (errno != ENOENT)
				return -errno;
			goto jitdump;
		}
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			return -EINVAL;
		}
	}
	if ((uint64_t)st.st_size <= pp->pm_off) {
		close(fd);
		goto jitdump;
	}
	{
		size_t want = (size_t)CT_MIN((uint64_t)st.st_size - pp->pm_off, (uint64_t)PM_READ_MAX);
		ssize_t r;

		err = strbuf_grow(&sb, want);
		if (!err) {
			r = pread(fd, sb.buf, want, (off_t)pp->pm_off);
			if (r < 0)
				err = -errno;
			else {
				sb.len = (size_t)r;
				sb.buf[sb.len] = '\0';
			}
		}
	}
	close(fd);
	while (!err && pos < sb.len) {
		char *nl = memchr(sb.buf + pos, '\n', sb.len - pos);
		struct probe_pm_entry e;

		if (!nl)
			break; /* partial line: next time */
		if (!probe_pm_parse(sb.buf + pos, (size_t)(nl - (sb.buf + pos)), &e))
			err = pm_add(pp, &e);
		pos = (size_t)(nl - sb.buf) + 1;
	}
	pp->pm_off += pos;
jitdump:
	strbuf_release(&sb);
	if (!err && pp->jitdump_tpath)
		err = jitdump_read(pp);
	if (err == -E2BIG) {
		ct_warn("probe: the perf map index is full (%zu entries, %" PRIu64 " bytes); "
			"methods JIT-compiled after offset %" PRIu64 " of the map are not seen",
			pp->npm, pp->pm_mem, pp->pm_off);
		pp->pm_full = true;
		err = 0;
	}
	for (i = first; i < pp->npm; i++)
		for (j = 0; j < pp->nfound; j++)
			if (pm_matches(&pp->pm[i], pp->found[j]))
				cnt += (size_t)method_add_jit(pp->found[j], &pp->pm[i],
							      first ? now : 0);
	if (added)
		*added = cnt;
	return err;
}

/* ---- open/close ---- */

int probe_proc_open(pid_t pid, const struct probe_open_opts *o, struct probe_proc **out)
{
	struct probe_proc *pp = calloc(1, sizeof(*pp));
	char path[64];
	int err;

	if (!pp)
		return -ENOMEM;
	pp->pid = pid;
	pp->mem_fd = -1;
	if (o && o->root)
		ct_strlcpy(pp->root, o->root, sizeof(pp->root));
	if (o && o->perfmap_tpath && !(pp->perfmap_tpath = strdup(o->perfmap_tpath))) {
		probe_proc_close(pp);
		return -ENOMEM;
	}
	jitdump_reader_init(&pp->jd);
	if (o && o->jitdump_tpath && !(pp->jitdump_tpath = strdup(o->jitdump_tpath))) {
		probe_proc_close(pp);
		return -ENOMEM;
	}
	if (o && o->jitdump_path && !(pp->jitdump_path = strdup(o->jitdump_path))) {
		probe_proc_close(pp);
		return -ENOMEM;
	}
	if (o && o->perfmap_path && !(pp->perfmap_path = strdup(o->perfmap_path))) {
		probe_proc_close(pp);
		return -ENOMEM;
	}
	err = read_maps(pp);
	if (!err)
		err = open_images(pp);
	if (!err)
		err = probe_proc_refresh(pp, NULL);
	if (err) {
		probe_proc_close(pp);
		return err;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	pp->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	*out = pp;
	return 0;
}

static void method_free(struct probe_method *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->sig);
	free(m->nsig);
	free(m->ret);
	free(m->module);
	free(m->image);
	free(m->host_image);
	pe_sig_free(m->psig);
	free(m);
}

void probe_proc_set_lines(struct probe_proc *pp, struct srcline *sl)
{
	srcline_follow_stop(pp->lines_follow);
	pp->lines_follow = NULL;
	srcline_free(pp->lines);
	pp->lines = sl;
}

int probe_proc_lines(struct probe_proc *pp, const struct ipc_endpoint *ep, struct ipc_error *rerr)
{
	struct srcline *sl;
	int err = srcline_new_proc(pp->pid, &sl);

	if (!err)
		err = srcline_collect(ep, NULL, sl, rerr);
	if (err) {
		srcline_free(sl);
		return err;
	}
	probe_proc_set_lines(pp, sl);
	/* callers compiled from now on (first calls, tier-up, OSR) */
	if (srcline_follow_start(ep, sl, &pp->lines_follow))
		pp->lines_follow = NULL;
	return 0;
}

void probe_proc_close(struct probe_proc *pp)
{
	size_t i;

	if (!pp)
		return;
	srcline_follow_stop(pp->lines_follow);
	srcline_free(pp->lines);
	for (i = 0; i < pp->nmaps; i++) {
		free(pp->maps[i].path);
		free(pp->maps[i].host);
	}
	free(pp->maps);
	for (i = 0; i < pp->nimg; i++) {
		free(pp->img[i].path);
		free(pp->img[i].host_path);
		free(pp->img[i].rid_map);
		pe_file_close(pp->img[i].pf);
	}
	free(pp->img);
	for (i = 0; i < pp->nfound; i++)
		method_free(pp->found[i]);
	free(pp->found);
	for (i = 0; i < pp->npm; i++) {
		free(pp->pm[i].module);
		free(pp->pm[i].name);
		free(pp->pm[i].args);
		free(pp->pm[i].tier);
		free(pp->pm[i].base);
		free(pp->pm[i].nargs);
	}
	free(pp->pm);
	sym_proc_close(pp->sym);
	free(pp->perfmap_path);
	free(pp->perfmap_tpath);
	free(pp->jitdump_tpath);
	free(pp->jitdump_path);
	if (pp->mem_fd >= 0)
		close(pp->mem_fd);
	free(pp);
}

size_t probe_proc_nimages(const struct probe_proc *pp)
{
	return pp->nimg;
}

pid_t probe_proc_pid(const struct probe_proc *pp)
{
	return pp->pid;
}

const char *probe_proc_perfmap_path(const struct probe_proc *pp)
{
	return pp->perfmap_path;
}

const char *probe_proc_jitdump_path(const struct probe_proc *pp)
{
	return pp->jitdump_path;
}

/* ---- R2R ---- */

static int build_rid_map(struct image *im)
{
	const struct pe_method *ms;
	size_t n, i;
	uint32_t rows;

	if (im->rid_built)
		return 0;
	im->rid_built = true;
	if (!im->r2r)
		return 0;
	if (pe_file_methods(im->pf, &ms, &n))
		return 0;
	rows = pe_md_rows(im->pf, PE_MD_METHODDEF);
	im->rid_map = calloc((size_t)rows + 1, sizeof(uint32_t));
	if (!im->rid_map)
		return -ENOMEM;
	im->nrid = rows + 1;
	for (i = 0; i < n; i++) {
		uint32_t rid = ms[i].token & 0xFFFFFF;

		if (ms[i].flags & PE_METHOD_INSTANCE)
			im->ninst++;
		if ((ms[i].flags & (PE_METHOD_INSTANCE | PE_METHOD_MEMBERREF)) || ms[i].component ||
		    (ms[i].token >> 24) != PE_MD_METHODDEF || rid >= im->nrid)
			continue;
		if (!im->rid_map[rid])
			im->rid_map[rid] = (uint32_t)i + 1;
	}
	return 0;
}

/* File offset -> address through an executable mapping of the image. */
static uint64_t image_addr(const struct probe_proc *pp, const char *path, uint64_t off)
{
	size_t i;

	for (i = 0; i < pp->nmaps; i++) {
		const struct pmap *m = &pp->maps[i];

		if (m->exec && m->path && !strcmp(m->path, path) && off >= m->pgoff &&
		    off < m->pgoff + (m->end - m->start))
			return m->start + (off - m->pgoff);
	}
	return 0;
}

static void add_r2r_code(struct probe_proc *pp, struct image *im, struct probe_method *m,
			 const struct pe_method *pm, const struct pe_range *rs)
{
	struct probe_code *c;
	size_t k;

	if (m->ncode >= PROBE_MAX_VERSIONS) {
		m->dropped_versions = true;
		return;
	}
	c = &m->code[m->ncode++];
	memset(c, 0, sizeof(*c));
	c->kind = PROBE_CODE_R2R;
	ct_strlcpy(c->tier, "ReadyToRun", sizeof(c->tier));
	c->file_offset = pm->entry_offset;
	c->size = pm->code_size;
	for (k = 0; k < pm->nranges; k++) {
		const struct pe_range *r = &rs[pm->first_range + k];

		if (r->kind == PE_RANGE_MAIN)
			c->size = r->end_rva - r->begin_rva;
		else if (r->kind == PE_RANGE_COLD && !c->cold_offset) {
			c->cold_offset = r->file_offset;
			c->cold_size = r->end_rva - r->begin_rva;
		}
	}
	if (pm->flags & PE_METHOD_INSTANCE) {
		/* "Ns.Box`1[System.__Canon]::Get": the instantiation this code is for */
		const char *b = strchr(pm->name, '[');
		const char *e = strstr(pm->name, "]::");

		if (b && e && e > b)
			snprintf(c->inst, sizeof(c->inst), "%.*s", (int)(e - b + 1), b);
	}
	c->addr = image_addr(pp, im->path, c->file_offset);
}

/*
 * The method's ReadyToRun code: its MethodDefEntryPoints body, and for a
 * method of a generic type (or a generic method) each precompiled
 * instantiation of it in InstanceMethodEntryPoints, e.g. UserManager`1's
 * methods over System.__Canon: the shared code every reference-type
 * instantiation runs until it tiers up.
 */
static void add_r2r(struct probe_proc *pp, struct image *im, struct probe_method *m, uint32_t rid)
{
	const struct pe_info *inf = pe_file_info(im->pf);
	const struct pe_method *ms;
	const struct pe_range *rs;
	uint32_t token = ((uint32_t)PE_MD_METHODDEF << 24) | rid;
	size_t n, nr, i;

	if (build_rid_map(im) || !im->rid_map || rid >= im->nrid)
		return;
	if (pe_file_methods(im->pf, &ms, &n) || pe_file_ranges(im->pf, &rs, &nr))
		return;
	if (im->rid_map[rid])
		add_r2r_code(pp, im, m, &ms[im->rid_map[rid] - 1], rs);
	if (!im->ninst)
		return;
	for (i = 0; i < n; i++) {
		const struct pe_method *pm = &ms[i];

		if (!(pm->flags & PE_METHOD_INSTANCE) || pm->token != token || pm->component ||
		    (pm->flags & (PE_METHOD_UNBOXING | PE_METHOD_MEMBERREF | PE_METHOD_UNRESOLVED)) ||
		    !pm->module || !inf->assembly_name || strcmp(pm->module, inf->assembly_name))
			continue;
		add_r2r_code(pp, im, m, pm, rs);
	}
}

/* ---- find ---- */

static int make_method(struct probe_proc *pp, struct image *im, uint32_t rid, const char *name,
		       struct pe_sig *sig, struct probe_method **out)
{
	struct probe_method *m = calloc(1, sizeof(*m));
	const struct pe_info *inf = pe_file_info(im->pf);
	size_t i;

	if (!m)
		return -ENOMEM;
	m->name = strdup(name);
	m->sig = strdup(sig->text ? sig->text : "()");
	m->ret = strdup(sig->ret.name ? sig->ret.name : "?");
	m->module = strdup(inf->assembly_name ? inf->assembly_name : "?");
	m->image = strdup(im->path);
	m->host_image = strdup(im->host_path);
	m->token = (PE_MD_METHODDEF << 24) | rid;
	m->psig = sig;
	{
		struct strbuf nb = STRBUF_INIT_MAX(PROBE_PM_ARGS_MAX * 2);

		m->nsig = m->sig && !probe_sig_normalize(m->sig, &nb) ? strbuf_detach(&nb, NULL) : NULL;
		strbuf_release(&nb);
	}
	if (!m->name || !m->sig || !m->nsig || !m->ret || !m->module || !m->image || !m->host_image) {
		m->psig = NULL;
		method_free(m);
		return -ENOMEM;
	}
	add_r2r(pp, im, m, rid);
	for (i = 0; i < pp->npm; i++)
		if (pm_matches(&pp->pm[i], m))
			method_add_jit(m, &pp->pm[i], 0);
	*out = m;
	return 0;
}

typedef int (*each_fn)(void *ctx, struct image *im, uint32_t rid, const char *name);

static int each_method(struct probe_proc *pp, each_fn fn, void *ctx)
{
	struct strbuf sb = STRBUF_INIT_MAX(4096);
	size_t i;
	int rc = 0;

	for (i = 0; i < pp->nimg && !rc; i++) {
		uint32_t rows = pe_md_rows(pp->img[i].pf, PE_MD_METHODDEF), rid;

		for (rid = 1; rid <= rows && !rc; rid++) {
			strbuf_reset(&sb);
			if (pe_md_method_name(pp->img[i].pf, (PE_MD_METHODDEF << 24) | rid, &sb))
				continue;
			rc = fn(ctx, &pp->img[i], rid, sb.buf);
		}
	}
	strbuf_release(&sb);
	return rc < 0 ? rc : 0;
}

struct find_ctx {
	struct probe_proc *pp;
	const char *pattern;
	char namepat[1024];
	bool method_only;
	struct probe_method **out;
	size_t max, n;
};

static int find_one(void *vctx, struct image *im, uint32_t rid, const char *name)
{
	struct find_ctx *fc = vctx;
	const char *target = name;
	struct pe_sig *sig;
	struct probe_method *m = NULL;
	size_t i;
	int err;

	if (fc->method_only) {
		const char *c = strstr(name, "::");

		target = c ? c + 2 : name;
	}
	if (!pe_glob_match(fc->namepat, target) &&
	    !(fc->method_only && probe_pattern_type_match(fc->namepat, name)))
		return 0;
	if (pe_md_method_sig(im->pf, (PE_MD_METHODDEF << 24) | rid, &sig))
		return 0;
	if (!probe_pattern_match(fc->pattern, name, sig->text)) {
		pe_sig_free(sig);
		return 0;
	}
	/* already found in an earlier call? */
	for (i = 0; i < fc->pp->nfound; i++) {
		struct probe_method *f = fc->pp->found[i];

		if (f->token == ((PE_MD_METHODDEF << 24) | rid) && !strcmp(f->image, im->path)) {
			m = f;
			break;
		}
	}
	if (m) {
		pe_sig_free(sig);
	} else {
		struct probe_method **nf;

		if (fc->pp->nfound >= MAX_FOUND) {
			pe_sig_free(sig);
			return -E2BIG;
		}
		err = make_method(fc->pp, im, rid, name, sig, &m);
		if (err) {
			pe_sig_free(sig);
			return err;
		}
		nf = realloc(fc->pp->found, (fc->pp->nfound + 1) * sizeof(*nf));
		if (!nf) {
			method_free(m);
			return -ENOMEM;
		}
		fc->pp->found = nf;
		fc->pp->found[fc->pp->nfound++] = m;
	}
	if (fc->n < fc->max)
		fc->out[fc->n] = m;
	fc->n++;
	return 0;
}

int probe_proc_find(struct probe_proc *pp, const char *pattern, struct probe_method **out,
		    size_t max, size_t *n)
{
	struct find_ctx fc = { .pp = pp, .pattern = pattern, .out = out, .max = max };
	size_t nlen = strcspn(pattern, "(");
	int err;

	if (nlen >= sizeof(fc.namepat))
		return -ENAMETOOLONG;
	memcpy(fc.namepat, pattern, nlen);
	fc.namepat[nlen] = '\0';
	fc.method_only = !strstr(fc.namepat, "::");
	err = each_method(pp, find_one, &fc);
	*n = fc.n;
	return err;
}

/* ---- suggestions ---- */

#define SUGGEST_MAX 8

struct sug_ctx {
	char full[512], meth[256];
	bool has_type;
	unsigned cap;
	char *best[SUGGEST_MAX];
	unsigned score[SUGGEST_MAX];
	size_t nbest;
};

static int suggest_one(void *vctx, struct image *im, uint32_t rid, const char *name)
{
	struct sug_ctx *sc = vctx;
	const char *c = strstr(name, "::");
	unsigned d, dm;
	size_t i, worst = 0;
	char *s;

	(void)im;
	(void)rid;
	if (!c)
		return 0;
	dm = probe_edit_distance(sc->meth, c + 2, sc->cap);
	if (dm >= sc->cap)
		return 0;
	d = sc->has_type ? probe_edit_distance(sc->full, name, sc->cap) : dm;
	if (sc->has_type && dm + 2 < d) {
		/* same (or near) method name in another type: rank after close full names */
		d = dm + 2;
	}
	if (d >= sc->cap)
		return 0;
	for (i = 0; i < sc->nbest; i++)
		if (!strcmp(sc->best[i], name))
			return 0;
	if (sc->nbest == SUGGEST_MAX) {
		for (i = 1; i < sc->nbest; i++)
			if (sc->score[i] > sc->score[worst])
				worst = i;
		if (sc->score[worst] <= d)
			return 0;
		free(sc->best[worst]);
		i = worst;
	} else {
		i = sc->nbest++;
	}
	s = strdup(name);
	if (!s)
		return -ENOMEM;
	sc->best[i] = s;
	sc->score[i] = d;
	return 0;
}

int probe_proc_suggest(struct probe_proc *pp, const char *pattern, char **out, size_t max)
{
	struct sug_ctx sc;
	size_t nlen = strcspn(pattern, "("), i, j, n;
	const char *c;
	int err;

	memset(&sc, 0, sizeof(sc));
	if (nlen >= sizeof(sc.full))
		return 0;
	memcpy(sc.full, pattern, nlen);
	sc.full[nlen] = '\0';
	c = strstr(sc.full, "::");
	sc.has_type = c != NULL;
	ct_strlcpy(sc.meth, c ? c + 2 : sc.full, sizeof(sc.meth));
	sc.cap = (unsigned)CT_MAX(3, strlen(sc.meth) / 3 + 1);
	if (sc.has_type)
		sc.cap = CT_MAX(sc.cap, (unsigned)(strlen(sc.full) / 3 + 1));
	err = each_method(pp, suggest_one, &sc);
	/* sort by score */
	for (i = 0; i < sc.nbest; i++)
		for (j = i + 1; j < sc.nbest; j++)
			if (sc.score[j] < sc.score[i] ||
			    (sc.score[j] == sc.score[i] && strcmp(sc.best[j], sc.best[i]) < 0)) {
				unsigned ts = sc.score[i];
				char *tb = sc.best[i];

				sc.score[i] = sc.score[j];
				sc.best[i] = sc.best[j];
				sc.score[j] = ts;
				sc.best[j] = tb;
			}
	n = CT_MIN(max, sc.nbest);
	for (i = 0; i < sc.nbest; i++) {
		if (i < n)
			out[i] = sc.best[i];
		else
			free(sc.best[i]);
	}
	return err ? err : (int)n;
}

/* ---- memory and symbols ---- */

int probe_proc_read(struct probe_proc *pp, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pp->pid, &l, 1, &r, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (pp->mem_fd >= 0) {
		n = pread(pp->mem_fd, buf, len, (off_t)addr);
		if (n == (ssize_t)len)
			return 0;
	}
	return -EFAULT;
}

int probe_proc_addr_file(struct probe_proc *pp, uint64_t addr, const char **host_path,
			 uint64_t *off)
{
	size_t i;

	for (i = 0; i < pp->nmaps; i++) {
		struct pmap *m = &pp->maps[i];

		if (addr < m->start || addr >= m->end)
			continue;
		if (!m->exec || !m->path || m->path[0] != '/' || strstr(m->path, "(deleted)"))
			return -ENOENT;
		if (!m->host) {
			size_t n = strlen(pp->root) + strlen(m->path) + 1;

			m->host = malloc(n);
			if (!m->host)
				return -ENOMEM;
			snprintf(m->host, n, "%s%s", pp->root, m->path);
		}
		*host_path = m->host;
		*off = addr - m->start + m->pgoff;
		return 0;
	}
	return -ENOENT;
}

int probe_proc_symbolize(struct probe_proc *pp, uint64_t addr, struct strbuf *out)
{
	struct sym_frame f;

	if (!pp->sym_tried) {
		struct sym_opts o = { .perfmap_path = pp->perfmap_tpath ? NULL : pp->perfmap_path,
				      .perfmap_tpath = pp->perfmap_tpath };

		pp->sym_tried = true;
		if (sym_proc_open(&pp->sym, pp->pid, &o))
			pp->sym = NULL;
	}
	if (pp->sym && sym_lookup(pp->sym, addr, &f) == 0 && f.name) {
		char shown[1024];

		char lined[PE_PDB_MAX_PATH + 1024];
		const char *nm;

		if (f.kind == SYM_NATIVE && f.module)
			return strbuf_addf(out, "%s!%s", f.module, f.name);
		nm = ct_clrname_display(f.name, shown, sizeof(shown));
		if (pp->lines && srcline_name(pp->lines, addr, false, nm, lined, sizeof(lined)) == 1)
			nm = lined;
		return strbuf_addstr(out, nm);
	}
	if (pp->sym && f.module)
		return strbuf_addf(out, "%s@0x%" PRIx64, f.module, addr);
	return strbuf_addf(out, "0x%" PRIx64, addr);
}
