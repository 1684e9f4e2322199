#!/usr/bin/env bash
# Throughput of the JSON string escaper (lib/common/json.c) beside the
# per-byte escaper it replaced (strbuf_add_json_escaped, from git history:
# commit 814e1b2). Needs build/libclrtap.a (make). Prints MiB/s and the ratio.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$ROOT" show 814e1b2:lib/common/strbuf.c |
	sed -n '/^int strbuf_add_json_escaped/,/^}/p' |
	sed 's/^int strbuf_add_json_escaped/static int old_escape/' >"$tmp/old.inc"
cc -O2 -std=gnu11 -I"$ROOT/lib" -I"$tmp" "$ROOT/bench/json/escape.c" "$ROOT/build/libclrtap.a" \
	-o "$tmp/escape" || exit 1
"$tmp/escape"
