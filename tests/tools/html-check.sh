#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# html-check.sh - checks that a flame graph HTML page written by lib/flame
# renders in a real browser and draws frames with the given names.
#
#   html-check.sh [-s] FILE NAME [NAME...]
#
# Loads FILE in headless chromium (JavaScript on, no network), dumps the DOM
# after the page's script ran, and checks that for every NAME a drawn frame
# (web/flame.js's <g class="fr"> in the SVG) is labelled exactly that text,
# or contains it with -s (a narrow frame's label may be shortened).
# Also fails when the page has other <script> elements than its own two
# (a frame name that escaped its quoting would add one).
#
# Exit: 0 all found, 1 a name is missing or the page is wrong, 77 no
# chromium/python3 (the test harness treats 77 as "skipped").
set -u

substr=0
if [ "${1:-}" = "-s" ]; then
	substr=1
	shift
fi
if [ $# -lt 2 ]; then
	echo "usage: html-check.sh [-s] FILE NAME [NAME...]" >&2
	exit 2
fi
file=$1
shift
browser=
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [ -z "$browser" ] || ! command -v python3 >/dev/null 2>&1; then
	echo "html-check: no chromium or python3, skipping" >&2
	exit 77
fi
if [ ! -r "$file" ]; then
	echo "html-check: cannot read $file" >&2
	exit 1
fi
abs=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A private profile dir so concurrent runs do not share a lock.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
	--disable-dev-shm-usage --user-data-dir="$tmp/profile" --window-size=1280,900 \
	--virtual-time-budget=3000 --dump-dom "file://$abs" >"$tmp/dom.html" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$tmp/dom.html" ]; then
	echo "html-check: $browser failed (exit $rc):" >&2
	tail -5 "$tmp/err" >&2
	exit 1
fi

python3 - "$tmp/dom.html" "$substr" "$@" <<'EOF'
import sys
from html.parser import HTMLParser

class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.frames, self.scripts, self.cur, self.depth = [], 0, None, 0
    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if self.cur is not None:
            self.depth += 1
        elif tag == "g" and "fr" in (dict(attrs).get("class") or "").split():
            self.cur, self.depth = [], 0
    def handle_endtag(self, tag):
        if self.cur is None:
            return
        if self.depth == 0:
            self.frames.append("".join(self.cur))
            self.cur = None
        else:
            self.depth -= 1
    def handle_data(self, data):
        if self.cur is not None:
            self.cur.append(data)

dom, substr, names = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
p = P()
p.feed(open(dom, encoding="utf-8", errors="replace").read())
bad = 0
if not p.frames:
    print("html-check: no frames were drawn (did the script run?)", file=sys.stderr)
    sys.exit(1)
if p.scripts != 2:
    print("html-check: page has %d <script> elements, expected 2" % p.scripts, file=sys.stderr)
    bad = 1
for n in names:
    ok = any((n in f) if substr else (n == f) for f in p.frames)
    if not ok:
        print("html-check: no frame named %r among %d drawn frames" % (n, len(p.frames)), file=sys.stderr)
        bad = 1
sys.exit(bad)
EOF
