/* SPDX-License-Identifier: MIT */
/*
 * html.c - an analyze report as one self-contained, offline HTML page: the
 * Markdown report (the subset the reports use: #/##/### headings, "- "
 * lists, "|" tables, 4-space indented stacks, paragraphs, **bold** and
 * `code`) turned into HTML with an inline style sheet; no script, no link,
 * no external resource. Every byte of the text is HTML-escaped, so a name
 * the target chose cannot open an element. (hotpaths uses lib/flame's
 * HTML flame graph page instead, with this report as its notes.)
 */
#include "common/compat.h"

#include "analyze/analyze.h"

static const char style[] =
	"<style>\n"
	"body{font:14px system-ui,sans-serif;margin:16px auto;max-width:1100px;color:#222;background:#fdfdf8}\n"
	"h1{font-size:20px}h2{font-size:17px;border-bottom:1px solid #ccc;margin-top:22px}h3{font-size:15px}\n"
	"table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:2px 8px;vertical-align:top}\n"
	"th{background:#f0f0e8}td{font-family:monospace;word-break:break-all}\n"
	"pre{background:#f4f4ee;padding:6px 8px;overflow-x:auto}code{background:#f4f4ee}\n"
	"</style>\n";

enum block { B_NONE, B_P, B_UL, B_TABLE, B_PRE };

/* strspn within n bytes (the text need not be NUL-terminated). */
static size_t span(const char *s, size_t n, const char *set)
{
	size_t i = 0;

	while (i < n && s[i] && strchr(set, s[i]))
		i++;
	return i;
}

static void esc(struct strbuf *o, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (s[i]) {
		case '&': strbuf_addstr(o, "&amp;"); break;
		case '<': strbuf_addstr(o, "&lt;"); break;
		case '>': strbuf_addstr(o, "&gt;"); break;
		case '"': strbuf_addstr(o, "&quot;"); break;
		case '\'': strbuf_addstr(o, "&#39;"); break;
		case '\r': break;
		default: strbuf_addch(o, (unsigned char)s[i]);
		}
	}
}

/* Inline text: **bold** and `code`, the rest escaped. */
static void inl(struct strbuf *o, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const char *end;

		if (i + 1 < n && s[i] == '*' && s[i + 1] == '*' &&
		    (end = memmem(s + i + 2, n - i - 2, "**", 2)) != NULL) {
			strbuf_addstr(o, "<b>");
			esc(o, s + i + 2, (size_t)(end - s) - i - 2);
			strbuf_addstr(o, "</b>");
			i = (size_t)(end - s) + 2;
		} else if (s[i] == '`' && (end = memchr(s + i + 1, '`', n - i - 1)) != NULL) {
			strbuf_addstr(o, "<code>");
			esc(o, s + i + 1, (size_t)(end - s) - i - 1);
			strbuf_addstr(o, "</code>");
			i = (size_t)(end - s) + 1;
		} else {
			esc(o, s + i, 1);
			i++;
		}
	}
}

static void close_block(struct strbuf *o, enum block *b)
{
	static const char *const end[] = { "", "</p>\n", "</ul>\n", "</table>\n", "</pre>\n" };

	strbuf_addstr(o, end[*b]);
	*b = B_NONE;
}

static void open_block(struct strbuf *o, enum block *b, enum block want)
{
	static const char *const start[] = { "", "<p>", "<ul>\n", "<table>\n", "<pre>" };

	if (*b == want)
		return;
	close_block(o, b);
	strbuf_addstr(o, start[want]);
	*b = want;
}

/* A table row: cells between '|'; separator rows (|---|) are skipped. */
static void row(struct strbuf *o, const char *s, size_t n, bool head)
{
	size_t i = 1, start;

	if (n >= 2 && span(s, n, "|-: ") == n)
		return;
	strbuf_addstr(o, "<tr>");
	while (i < n) {
		start = i;
		while (i < n && s[i] != '|')
			i++;
		if (i == n)
			break; /* text after the last '|' is not a cell */
		strbuf_addstr(o, head ? "<th>" : "<td>");
		while (start < i && s[start] == ' ')
			start++;
		inl(o, s + start, i > start && s[i - 1] == ' ' ? i - start - 1 : i - start);
		strbuf_addstr(o, head ? "</th>" : "</td>");
		i++;
	}
	strbuf_addstr(o, "</tr>\n");
}

int analyze_html_from_md(const char *md, size_t len, const char *title, struct strbuf *o)
{
	enum block b = B_NONE;
	size_t pos = 0, blank = 0; /* blank lines inside a <pre>, written if it goes on */

	strbuf_addstr(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			 "<meta name=\"generator\" content=\"clrtap\">\n<title>");
	esc(o, title, strlen(title));
	strbuf_addstr(o, "</title>\n");
	strbuf_addstr(o, style);
	strbuf_addstr(o, "</head><body>\n");
	while (pos < len) {
		const char *s = md + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		pos += n + (nl ? 1 : 0);
		if (n && s[n - 1] == '\r')
			n--;
		if (!n) {
			if (b != B_PRE)
				close_block(o, &b);
			else
				blank++;
			continue;
		}
		if (n >= 4 && !memcmp(s, "    ", 4)) {
			if (b != B_PRE)
				blank = 0;
			open_block(o, &b, B_PRE);
			for (; blank; blank--)
				strbuf_addch(o, '\n');
			esc(o, s + 4, n - 4);
			strbuf_addch(o, '\n');
			continue;
		}
		blank = 0;
		if (s[0] == '#') {
			size_t h = span(s, n, "#"), level = CT_MIN(h, (size_t)3);

			close_block(o, &b);
			strbuf_addf(o, "<h%zu>", level);
			h += span(s + h, n - h, " ");
			inl(o, s + h, n - h);
			strbuf_addf(o, "</h%zu>\n", level);
		} else if (n >= 2 && s[0] == '-' && s[1] == ' ') {
			open_block(o, &b, B_UL);
			strbuf_addstr(o, "<li>");
			inl(o, s + 2, n - 2);
			strbuf_addstr(o, "</li>\n");
		} else if (s[0] == '|') {
			bool head = b != B_TABLE;

			open_block(o, &b, B_TABLE);
			row(o, s, n, head);
		} else {
			if (b == B_P)
				strbuf_addch(o, '\n');
			open_block(o, &b, B_P);
			inl(o, s, n);
		}
	}
	close_block(o, &b);
	strbuf_addstr(o, "</body></html>\n");
	return strbuf_error(o);
}
