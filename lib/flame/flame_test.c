/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for lib/flame: aggregation, top, caps, the folded reader and
 * every writer. pprof output is decoded here with an independent protobuf
 * reader (zlib inflate + varints); speedscope JSON and SVG XML are also
 * parsed by python3 (tests/tools/flamecheck.py) when python3 is present.
 * FLAME_BENCH=1 in the environment adds a timing run (1M stacks, depth 30).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <zlib.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "common/strparse.h"
#include "flame/flame.h"

/* ---- helpers ---- */

static char *render(const struct flame *f, enum flame_format fmt, const struct flame_opts *o, size_t *len)
{
	int fd = memfd_create("flame", 0);
	struct stat st;
	char *buf;
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(flame_write(f, fmt, fd, o), 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	n = pread(fd, buf, (size_t)st.st_size, 0);
	assert_int_equal(n, st.st_size);
	buf[n] = '\0';
	close(fd);
	if (len)
		*len = (size_t)n;
	return buf;
}

static void add(struct flame *f, const char *stack, uint64_t w)
{
	const char *frames[64];
	char copy[1024];
	char *p = copy;
	size_t n = 0;

	ct_strlcpy(copy, stack, sizeof(copy));
	for (;;) {
		char *semi = strchr(p, ';');

		frames[n++] = p;
		if (!semi)
			break;
		*semi = '\0';
		p = semi + 1;
	}
	assert_int_equal(flame_add(f, frames, n, w), 0);
}

static size_t count_substr(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strcasestr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

/* Runs tests/tools/flamecheck.py MODE on data; returns its stdout, NULL when python3 is missing. */
static char *flamecheck(const char *mode, const char *data, size_t len)
{
	char path[] = "/tmp/flame_test_XXXXXX", cmd[512], line[4096];
	struct strbuf out = STRBUF_INIT;
	FILE *p;
	int fd, st;

	if (system("python3 -c pass >/dev/null 2>&1") != 0)
		return NULL;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/flamecheck.py %s %s", CT_SRCDIR, mode, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		assert_int_equal(strbuf_addstr(&out, line), 0);
	st = pclose(p);
	unlink(path);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	return strbuf_detach(&out, NULL);
}

static struct flame *sample_flame(void)
{
	struct flame *f;

	assert_int_equal(flame_new(&f), 0);
	add(f, "Main;Work;HotLoop", 50);
	add(f, "Main;Work", 7);
	add(f, "Main;Idle", 3);
	add(f, "Main;Work;HotLoop", 5);
	add(f, "Main;Work;Recurse;Recurse;Recurse", 4);
	return f;
}

/* ---- aggregation ---- */

static void test_aggregate(void **state)
{
	struct flame *f = sample_flame();
	struct flame_top *t;
	size_t n;

	assert_int_equal(flame_total(f), 69);
	/* Main, Work, HotLoop, Idle, Recurse x3 */
	assert_int_equal(flame_node_count(f), 7);
	assert_int_equal(flame_top(f, &t, &n), 0);
	assert_int_equal(n, 5);
	assert_string_equal(t[0].name, "HotLoop");
	assert_int_equal(t[0].self, 55);
	assert_int_equal(t[0].total, 55);
	assert_string_equal(t[1].name, "Work");
	assert_int_equal(t[1].self, 7);
	assert_int_equal(t[1].total, 66);
	/* recursion counts once per stack */
	assert_string_equal(t[2].name, "Recurse");
	assert_int_equal(t[2].self, 4);
	assert_int_equal(t[2].total, 4);
	assert_string_equal(t[3].name, "Idle");
	assert_string_equal(t[4].name, "Main");
	assert_int_equal(t[4].self, 0);
	assert_int_equal(t[4].total, 69);
	free(t);
	flame_free(f);
}

static void test_top_ties_sorted_by_name(void **state)
{
	struct flame *f;
	struct flame_top *t;
	size_t n;

	assert_int_equal(flame_new(&f), 0);
	add(f, "r;b", 2);
	add(f, "r;a", 2);
	add(f, "r;c", 3);
	assert_int_equal(flame_top(f, &t, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(t[0].name, "c");
	assert_string_equal(t[1].name, "a");
	assert_string_equal(t[2].name, "b");
	assert_string_equal(t[3].name, "r");
	free(t);
	flame_free(f);
}

static void test_names_are_copied(void **state)
{
	struct flame *f;
	char a[16], b[16];
	const char *frames[2] = { a, b };
	char *out;
	int i;

	assert_int_equal(flame_new(&f), 0);
	/* Same pointers, different contents: the pointer cache must not be fooled. */
	for (i = 0; i < 3; i++) {
		snprintf(a, sizeof(a), "root");
		snprintf(b, sizeof(b), "leaf%d", i % 2);
		assert_int_equal(flame_add(f, frames, 2, 1), 0);
	}
	memset(a, 'x', sizeof(a) - 1);
	out = render(f, FLAME_FOLDED, NULL, NULL);
	assert_string_equal(out, "root;leaf0 2\nroot;leaf1 1\n");
	free(out);
	flame_free(f);
}

static void test_folded_exact(void **state)
{
	struct flame *f = sample_flame();
	const char *hostile[] = { "Main", "a;b", "line\nbreak\r" };
	char *out;

	assert_int_equal(flame_add(f, hostile, 3, 1), 0);
	out = render(f, FLAME_FOLDED, NULL, NULL);
	assert_string_equal(out, "Main;Idle 3\n"
				 "Main;Work 7\n"
				 "Main;Work;HotLoop 55\n"
				 "Main;Work;Recurse;Recurse;Recurse 4\n"
				 "Main;a:b;line break  1\n");
	free(out);
	flame_free(f);
}

static void test_read_folded(void **state)
{
	struct strbuf in = STRBUF_INIT, want = STRBUF_INIT;
	struct flame *f, *g;
	char *out, *out2;

	assert_int_equal(strbuf_read_file(&in, CT_SRCDIR "/tests/data/flame/sample.folded"), 0);
	assert_int_equal(strbuf_read_file(&want, CT_SRCDIR "/tests/data/flame/sample.expected"), 0);
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(flame_read_folded(f, in.buf, in.len), 6);
	out = render(f, FLAME_FOLDED, NULL, NULL);
	assert_string_equal(out, want.buf);
	/* round trip: our own output reads back to the same text */
	assert_int_equal(flame_new(&g), 0);
	assert_int_equal(flame_read_folded(g, out, strlen(out)), 5);
	out2 = render(g, FLAME_FOLDED, NULL, NULL);
	assert_string_equal(out2, out);
	assert_int_equal(flame_total(g), flame_total(f));
	free(out);
	free(out2);
	flame_free(f);
	flame_free(g);
	strbuf_release(&in);
	strbuf_release(&want);
}

static void test_read_folded_errors(void **state)
{
	static const char *const bad[] = {
		"a;b\n", "a;b x\n", "a;b -1\n", "a;b 99999999999999999999999\n", "12\n", "a;b 1 extra\n",
	};
	struct flame *f;
	size_t i;

	assert_int_equal(flame_new(&f), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(flame_read_folded(f, bad[i], strlen(bad[i])), -EBADMSG);
	assert_int_equal(flame_read_folded(f, "a 1\0b 2\n", 8), -EBADMSG);
	assert_int_equal(flame_total(f), 0);
	/* stops at the first bad line, keeps what came before */
	assert_int_equal(flame_read_folded(f, "a 1\nb\nc 1\n", 10), -EBADMSG);
	assert_int_equal(flame_total(f), 1);
	/* no trailing newline, blank lines, trailing spaces */
	assert_int_equal(flame_read_folded(f, "\n\nx;y 4  ", 9), 1);
	assert_int_equal(flame_total(f), 5);
	flame_free(f);
}

/* ---- caps ---- */

static void test_caps_depth(void **state)
{
	const char **frames = calloc(3000, sizeof(*frames));
	struct flame *f;
	struct flame_top *t;
	char *out;
	size_t n, i;

	assert_non_null(frames);
	for (i = 0; i < 3000; i++)
		frames[i] = i == 2999 ? "leaf" : "mid";
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(flame_add(f, frames, 3000, 2), 0);
	assert_int_equal(flame_node_count(f), FLAME_MAX_DEPTH);
	out = render(f, FLAME_FOLDED, NULL, NULL);
	assert_true(strncmp(out, "[truncated];mid;", 16) == 0);
	assert_non_null(strstr(out, ";mid;leaf 2\n"));
	assert_int_equal(count_substr(out, ";"), FLAME_MAX_DEPTH - 1);
	free(out);
	assert_int_equal(flame_top(f, &t, &n), 0);
	assert_string_equal(t[0].name, "leaf");
	assert_int_equal(t[0].self, 2);
	free(t);
	/* every writer copes with the deepest stack */
	free(render(f, FLAME_HTML, NULL, NULL));
	free(render(f, FLAME_SVG, NULL, NULL));
	free(render(f, FLAME_SPEEDSCOPE, NULL, NULL));
	free(render(f, FLAME_PPROF, NULL, NULL));
	flame_free(f);
	free(frames);
}

static void test_caps_nodes(void **state)
{
	struct flame *f;
	char name[32], *before, *after;
	const char *frames[8];
	int i, rc = 0;

	assert_int_equal(flame_new(&f), 0);
	flame_set_max_nodes(f, 100);
	for (i = 0; i < 1000 && rc == 0; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		frames[0] = "root";
		frames[1] = name;
		frames[2] = "x";
		rc = flame_add(f, frames, 3, 1);
	}
	assert_int_equal(rc, -E2BIG);
	assert_true(flame_node_count(f) <= 100);
	/* a failed add changes nothing; known stacks still add */
	before = render(f, FLAME_FOLDED, NULL, NULL);
	assert_int_equal(flame_add(f, frames, 3, 1), -E2BIG);
	after = render(f, FLAME_FOLDED, NULL, NULL);
	assert_string_equal(before, after);
	add(f, "root;f0;x", 5);
	assert_int_equal(flame_total(f), (uint64_t)i - 1 + 5);
	free(before);
	free(after);
	flame_free(f);
}

static void test_caps_misc(void **state)
{
	char *longname = malloc(FLAME_MAX_NAME + 100);
	const char *frames[3] = { NULL, "", NULL };
	struct flame *f;
	char *out;

	assert_non_null(longname);
	memset(longname, 'n', FLAME_MAX_NAME + 99);
	longname[FLAME_MAX_NAME + 99] = '\0';
	assert_int_equal(flame_new(&f), 0);
	assert_int_equal(flame_add(f, frames, 2, 1), 0);
	assert_int_equal(flame_add(f, frames, 0, 1), 0);
	assert_int_equal(flame_add(f, frames, 1, 0), 0); /* weight 0: nothing */
	assert_int_equal(flame_add(NULL, frames, 1, 1), -EINVAL);
	assert_int_equal(flame_add(f, NULL, 1, 1), -EINVAL);
	frames[0] = longname;
	assert_int_equal(flame_add(f, frames, 1, 1), 0);
	assert_int_equal(flame_add(f, frames, 1, UINT64_MAX), -EOVERFLOW);
	assert_int_equal(flame_total(f), 3);
	out = render(f, FLAME_FOLDED, NULL, NULL);
	assert_int_equal(strlen(out), strlen("[unknown] 1\n[unknown];[unknown] 1\n") + FLAME_MAX_NAME + 3);
	assert_non_null(strstr(out, "[unknown] 1\n[unknown];[unknown] 1\n"));
	free(out);
	flame_free(f);
	free(longname);
}

static void test_format_from_path(void **state)
{
	assert_int_equal(flame_format_from_path("a.folded"), FLAME_FOLDED);
	assert_int_equal(flame_format_from_path("a.collapsed"), FLAME_FOLDED);
	assert_int_equal(flame_format_from_path("dir.x/a.TXT"), FLAME_FOLDED);
	assert_int_equal(flame_format_from_path("a.html"), FLAME_HTML);
	assert_int_equal(flame_format_from_path("a.htm"), FLAME_HTML);
	assert_int_equal(flame_format_from_path("a.svg"), FLAME_SVG);
	assert_int_equal(flame_format_from_path("a.speedscope.json"), FLAME_SPEEDSCOPE);
	assert_int_equal(flame_format_from_path("a.json"), FLAME_SPEEDSCOPE);
	assert_int_equal(flame_format_from_path("a.pb.gz"), FLAME_PPROF);
	assert_int_equal(flame_format_from_path("a.pprof"), FLAME_PPROF);
	assert_int_equal(flame_format_from_path("a.gz"), -EINVAL);
	assert_int_equal(flame_format_from_path("html"), -EINVAL);
	assert_int_equal(flame_format_from_path(""), -EINVAL);
	assert_int_equal(flame_format_from_path(NULL), -EINVAL);
}

/* ---- writers ---- */

static const char *const hostile_frames[] = {
	"Main", "</script><script>alert(1)</script>", "a&b<c>\"d'\x01 \xff \xe2\x80\xa8 \xc3\xbc \xe6\x97\xa5",
};

static struct flame *hostile_flame(void)
{
	struct flame *f = sample_flame();

	assert_int_equal(flame_add(f, hostile_frames, 2, 2), 0);
	assert_int_equal(flame_add(f, hostile_frames, 3, 1), 0);
	return f;
}

static void test_html(void **state)
{
	struct flame_opts o = { .title = "t</title><script>x</script>" };
	struct flame *f = hostile_flame();
	char *out = render(f, FLAME_HTML, &o, NULL);

	assert_true(strncmp(out, "<!DOCTYPE html>", 15) == 0);
	/* our two <script> elements, no more: names and title cannot open or close one */
	assert_int_equal(count_substr(out, "<script"), 2);
	assert_int_equal(count_substr(out, "</script"), 2);
	assert_non_null(strstr(out, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));
	assert_non_null(strstr(out, "<title>t&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>"));
	/* JSON side: control char, invalid byte, U+2028 escaped; valid UTF-8 kept */
	assert_non_null(strstr(out, "a\\u0026b\\u003cc\\u003e\\\"d'\\u0001 \xef\xbf\xbd \\u2028 \xc3\xbc \xe6\x97\xa5"));
	/* top table (HTML text) */
	assert_non_null(strstr(out, "<td class=\"n\">HotLoop</td>"));
	/* offline: nothing is fetched (the SVG namespace URI is a name, not a fetch) */
	assert_null(strstr(out, "src=\"http"));
	assert_null(strstr(out, "href=\"http"));
	assert_null(strstr(out, "url(http"));
	assert_null(strstr(out, "fetch("));
	/* drawn by the UI's own widget (web/flame.js) */
	assert_non_null(strstr(out, "class FlameGraph"));
	assert_non_null(strstr(out, ".flame-svg"));
	free(out);
	flame_free(f);
}

/* Notes (how the profile was made) in every format but folded, escaped, line by line. */
static void test_notes(void **state)
{
	struct flame_opts o = { .title = "t", .notes = "engine: EventPipe\nsees: <managed> & \"only\"" };
	struct flame *f = sample_flame();
	char *out;
	size_t len;

	(void)state;
	out = render(f, FLAME_HTML, &o, NULL);
	assert_non_null(strstr(out, "<pre id=\"notes\">engine: EventPipe\nsees: &lt;managed&gt; &amp; "));
	free(out);
	out = render(f, FLAME_SVG, &o, NULL);
	assert_non_null(strstr(out, "<desc>engine: EventPipe\nsees: &lt;managed&gt;"));
	free(out);
	out = render(f, FLAME_SPEEDSCOPE, &o, NULL);
	assert_non_null(strstr(out, "\"clrtapNotes\":[\"engine: EventPipe\",\"sees: "));
	assert_non_null(strstr(out, "\\\"only\\\"\"]}"));
	assert_non_null(strstr(out, "\"exporter\":\"clrtap\""));
	free(out);
	out = render(f, FLAME_FOLDED, &o, NULL);
	assert_null(strstr(out, "EventPipe"));
	free(out);
	/* pprof: the two lines are strings of the table, named by comment (field 13) */
	out = render(f, FLAME_PPROF, &o, &len);
	{
		static uint8_t raw[1 << 16];
		z_stream z = { 0 };

		assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
		z.next_in = (uint8_t *)out;
		z.avail_in = (unsigned)len;
		z.next_out = raw;
		z.avail_out = sizeof(raw);
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_non_null(memmem(raw, z.total_out, "\x32\x11" "engine: EventPipe", 19));
		/* two comment fields (13, varint) */
		assert_non_null(memmem(raw, z.total_out, "\x68", 1));
		inflateEnd(&z);
	}
	free(out);
	flame_free(f);
}

static void test_svg(void **state)
{
	struct flame_opts o = { .title = "a < b & c" };
	struct flame *f = hostile_flame();
	char *out = render(f, FLAME_SVG, &o, NULL), *py;
	size_t len = strlen(out);

	assert_true(strncmp(out, "<?xml", 5) == 0);
	assert_null(strstr(out, "<script"));
	assert_non_null(strstr(out, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(out, ">a &lt; b &amp; c</text>"));
	assert_non_null(strstr(out, "<title>HotLoop (55 samples, 76.39%)</title>"));
	py = flamecheck("svg", out, len);
	if (py) {
		assert_non_null(strstr(py, "\nHotLoop (55 samples, 76.39%)\n"));
		assert_non_null(strstr(py, "</script><script>alert(1)</script> (3 samples"));
		free(py);
	}
	free(out);
	flame_free(f);
}

static void test_speedscope(void **state)
{
	struct flame_opts o = { .title = "prof \"1\"", .unit = "nanoseconds" };
	static const char *const tricky[] = { "Main", "q\"uote\\back\tslash \xc3\xbc \xe6\x97\xa5 \xe2\x80\xa8 <&>" };
	struct flame *f = hostile_flame();
	char *out = render(f, FLAME_SPEEDSCOPE, &o, NULL), *py;

	assert_non_null(strstr(out, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
	assert_non_null(strstr(out, "\"type\":\"sampled\",\"name\":\"prof \\\"1\\\"\",\"unit\":\"nanoseconds\","
				    "\"startValue\":0,\"endValue\":72"));
	assert_non_null(strstr(out, "\"exporter\":\"clrtap\""));
	/* control character escaped, invalid byte replaced, valid UTF-8 kept */
	assert_non_null(strstr(out, "{\"name\":\"a\\u0026b\\u003cc\\u003e\\\"d'\\u0001 \xef\xbf\xbd \\u2028 \xc3\xbc \xe6\x97\xa5\"}"));
	py = flamecheck("speedscope", out, strlen(out));
	free(py);
	free(out);
	flame_free(f);

	/* names that survive both formats unchanged: JSON decodes back to the bytes */
	f = sample_flame();
	assert_int_equal(flame_add(f, tricky, 2, 9), 0);
	out = render(f, FLAME_SPEEDSCOPE, NULL, NULL);
	assert_non_null(strstr(out, "\"unit\":\"none\""));
	py = flamecheck("speedscope", out, strlen(out));
	if (py) {
		char *folded = render(f, FLAME_FOLDED, NULL, NULL);

		assert_string_equal(py, folded);
		free(folded);
		free(py);
	}
	free(out);
	flame_free(f);
}

/* ---- pprof: an independent decoder ---- */

struct pbr {
	const uint8_t *p, *end;
};

static uint64_t pbr_varint(struct pbr *r)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		uint8_t c;

		assert_true(r->p < r->end && shift < 64);
		c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
		if (c < 0x80)
			return v;
	}
}

/* Next field; *sub gets the bytes of a length-delimited one. */
static bool pbr_next(struct pbr *r, unsigned *field, uint64_t *v, struct pbr *sub)
{
	uint64_t key;

	if (r->p >= r->end)
		return false;
	key = pbr_varint(r);
	*field = (unsigned)(key >> 3);
	if ((key & 7) == 0) {
		*v = pbr_varint(r);
		sub->p = sub->end = NULL;
	} else {
		assert_int_equal(key & 7, 2);
		*v = pbr_varint(r);
		assert_true(*v <= (uint64_t)(r->end - r->p));
		sub->p = r->p;
		sub->end = r->p + *v;
		r->p += *v;
	}
	return true;
}

static uint8_t *gunzip(const char *in, size_t len, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	inflateEnd(&z);
	return out;
}

/* Decodes a profile into folded lines "root;..;leaf v1 v2" plus a header line. */
static char *pprof_decode(const char *gz, size_t gzlen)
{
	struct strbuf out = STRBUF_INIT, hdr = STRBUF_INIT;
	const char *strs[256];
	size_t nstr = 0, rawlen, i;
	uint64_t fn_name[256] = { 0 }, loc_fn[256] = { 0 }, types[4][2], period = 0, ptype[2] = { 0 };
	size_t ntypes = 0;
	struct { uint64_t ids[64], vals[4]; size_t nids, nvals; } samples[64];
	size_t nsamples = 0;
	uint8_t *raw = gunzip(gz, gzlen, &rawlen);
	struct pbr r = { raw, raw + rawlen }, sub, s2, s3;
	unsigned field, f2, f3;
	uint64_t v, v2, v3;
	char *strpool = calloc(1, rawlen + 256), *sp = strpool;

	assert_non_null(strpool);
	while (pbr_next(&r, &field, &v, &sub)) {
		switch (field) {
		case 1: /* sample_type */
			assert_true(ntypes < 4);
			while (pbr_next(&sub, &f2, &v2, &s2))
				types[ntypes][f2 - 1] = v2;
			ntypes++;
			break;
		case 2: /* sample */
			assert_true(nsamples < 64);
			samples[nsamples].nids = samples[nsamples].nvals = 0;
			while (pbr_next(&sub, &f2, &v2, &s2)) {
				assert_non_null(s2.p); /* packed */
				while (s2.p < s2.end) {
					uint64_t x = pbr_varint(&s2);

					if (f2 == 1)
						samples[nsamples].ids[samples[nsamples].nids++] = x;
					else
						samples[nsamples].vals[samples[nsamples].nvals++] = x;
				}
			}
			nsamples++;
			break;
		case 4: { /* location */
			uint64_t id = 0, fid = 0;

			while (pbr_next(&sub, &f2, &v2, &s2)) {
				if (f2 == 1)
					id = v2;
				if (f2 == 4)
					while (pbr_next(&s2, &f3, &v3, &s3))
						if (f3 == 1)
							fid = v3;
			}
			assert_true(id > 0 && id < 256);
			loc_fn[id] = fid;
			break;
		}
		case 5: { /* function */
			uint64_t id = 0, name = 0, sys = 0;

			while (pbr_next(&sub, &f2, &v2, &s2)) {
				if (f2 == 1)
					id = v2;
				if (f2 == 2)
					name = v2;
				if (f2 == 3)
					sys = v2;
			}
			assert_true(id > 0 && id < 256);
			assert_int_equal(name, sys);
			fn_name[id] = name;
			break;
		}
		case 6:
			assert_true(nstr < 256);
			memcpy(sp, sub.p, v);
			strs[nstr++] = sp;
			sp += v + 1;
			break;
		case 11:
			while (pbr_next(&sub, &f2, &v2, &s2))
				ptype[f2 - 1] = v2;
			break;
		case 12:
			period = v;
			break;
		default:
			break;
		}
	}
	assert_true(nstr > 0);
	assert_string_equal(strs[0], "");
	for (i = 0; i < ntypes; i++)
		assert_int_equal(strbuf_addf(&hdr, "%s%s/%s", i ? "," : "", strs[types[i][0]], strs[types[i][1]]), 0);
	if (period)
		assert_int_equal(strbuf_addf(&hdr, " period=%" PRIu64 " %s/%s", period, strs[ptype[0]], strs[ptype[1]]), 0);
	assert_int_equal(strbuf_addf(&out, "%s\n", hdr.buf), 0);
	for (i = 0; i < nsamples; i++) {
		size_t k = samples[i].nids;

		assert_int_equal(samples[i].nvals, ntypes);
		while (k-- > 0) { /* leaf first in the file */
			uint64_t fid = loc_fn[samples[i].ids[k]];

			assert_true(fid > 0);
			assert_int_equal(strbuf_addf(&out, "%s%s", k + 1 == samples[i].nids ? "" : ";", strs[fn_name[fid]]), 0);
		}
		for (k = 0; k < samples[i].nvals; k++)
			assert_int_equal(strbuf_addf(&out, " %" PRIu64, samples[i].vals[k]), 0);
		assert_int_equal(strbuf_addch(&out, '\n'), 0);
	}
	free(raw);
	free(strpool);
	strbuf_release(&hdr);
	return strbuf_detach(&out, NULL);
}

static void test_pprof(void **state)
{
	struct flame *f = sample_flame();
	struct flame_opts o = { .period = 1000, .duration_ns = 5, .time_unix_ns = 7 };
	size_t len;
	char *out, *dec, *py;

	out = render(f, FLAME_PPROF, NULL, &len);
	assert_true(len > 18 && (uint8_t)out[0] == 0x1f && (uint8_t)out[1] == 0x8b);
	dec = pprof_decode(out, len);
	assert_string_equal(dec, "samples/count\n"
				 "Main;Idle 3\n"
				 "Main;Work 7\n"
				 "Main;Work;HotLoop 55\n"
				 "Main;Work;Recurse;Recurse;Recurse 4\n");
	free(dec);
	free(out);

	out = render(f, FLAME_PPROF, &o, &len);
	dec = pprof_decode(out, len);
	assert_string_equal(dec, "samples/count,cpu/nanoseconds period=1000 cpu/nanoseconds\n"
				 "Main;Idle 3 3000\n"
				 "Main;Work 7 7000\n"
				 "Main;Work;HotLoop 55 55000\n"
				 "Main;Work;Recurse;Recurse;Recurse 4 4000\n");
	free(dec);
	py = flamecheck("pprof", out, len);
	if (py) {
		assert_string_equal(py, "types samples/count,cpu/nanoseconds\n"
					"period_type cpu/nanoseconds period 1000\n"
					"time_nanos 7\nduration_nanos 5\n"
					"Main;Idle 3 3000\nMain;Work 7 7000\nMain;Work;HotLoop 55 55000\n"
					"Main;Work;Recurse;Recurse;Recurse 4 4000\n");
		free(py);
	}
	free(out);
	flame_free(f);

	/* nanosecond weights: count = number of adds, second value = weight */
	assert_int_equal(flame_new(&f), 0);
	add(f, "a;b", 100);
	add(f, "a;b", 250);
	add(f, "a", 10);
	o.unit = "nanoseconds";
	o.period = 0;
	out = render(f, FLAME_PPROF, &o, &len);
	dec = pprof_decode(out, len);
	assert_string_equal(dec, "samples/count,cpu/nanoseconds\na 1 10\na;b 2 350\n");
	free(dec);
	free(out);
	flame_free(f);
}

static void test_empty(void **state)
{
	struct flame *f;
	char *out;
	size_t len;

	assert_int_equal(flame_new(&f), 0);
	out = render(f, FLAME_FOLDED, NULL, &len);
	assert_int_equal(len, 0);
	free(out);
	free(render(f, FLAME_HTML, NULL, NULL));
	free(render(f, FLAME_SVG, NULL, NULL));
	out = render(f, FLAME_SPEEDSCOPE, NULL, NULL);
	assert_non_null(strstr(out, "\"endValue\":0,\n\"samples\":[],\n\"weights\":[]"));
	free(out);
	out = render(f, FLAME_PPROF, NULL, &len);
	free(pprof_decode(out, len));
	free(out);
	assert_int_equal(flame_write(f, 99, 1, NULL), -EINVAL);
	assert_int_equal(flame_write(f, FLAME_FOLDED, -1, NULL), -EINVAL);
	flame_free(f);
	flame_free(NULL);
}

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* FLAME_BENCH=1: 1M stacks of depth 30 drawn at random from 1000 distinct ones. */
static void test_bench(void **state)
{
	static char names[2000][64];
	const char **stacks;
	struct flame *f;
	unsigned s = 1;
	double t0, t1;
	int i, k, fd;

	if (!getenv("FLAME_BENCH"))
		skip();
	for (i = 0; i < 2000; i++)
		snprintf(names[i], sizeof(names[i]), "Clrtap.Fixtures.Class%d.Method%d(int, string)", i % 97, i);
	stacks = malloc(sizeof(*stacks) * 30 * 1000);
	assert_non_null(stacks);
	for (i = 0; i < 1000; i++)
		for (k = 0; k < 30; k++) {
			s = s * 1103515245 + 12345;
			stacks[i * 30 + k] = k < 10 ? names[k] : names[(s >> 8) % 2000];
		}
	assert_int_equal(flame_new(&f), 0);
	t0 = cpu_now();
	for (i = 0; i < 1000000; i++) {
		s = s * 1103515245 + 12345;
		assert_int_equal(flame_add(f, stacks + ((s >> 4) % 1000) * 30, 30, 1), 0);
	}
	t1 = cpu_now();
	printf("bench: 1M adds of depth 30: %.3f s CPU, %zu nodes\n", t1 - t0, flame_node_count(f));
	fd = open("/dev/null", O_WRONLY);
	for (i = FLAME_FOLDED; i <= FLAME_PPROF; i++) {
		t0 = cpu_now();
		assert_int_equal(flame_write(f, i, fd, NULL), 0);
		printf("bench: write format %d: %.3f s CPU\n", i, cpu_now() - t0);
	}
	close(fd);
	flame_free(f);
	free(stacks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aggregate),
		cmocka_unit_test(test_top_ties_sorted_by_name),
		cmocka_unit_test(test_names_are_copied),
		cmocka_unit_test(test_folded_exact),
		cmocka_unit_test(test_read_folded),
		cmocka_unit_test(test_read_folded_errors),
		cmocka_unit_test(test_caps_depth),
		cmocka_unit_test(test_caps_nodes),
		cmocka_unit_test(test_caps_misc),
		cmocka_unit_test(test_format_from_path),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_speedscope),
		cmocka_unit_test(test_pprof),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bench),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
