#!/usr/bin/env bash
# Peak memory of lib/sym reading a huge perf map (issue 19: a container's own
# process can write a 10-million-line map; profile once peaked at 819 MB).
# symcheck loads LINES lines (default 10,000,000) of "ADDR SIZE NAME" through
# sym_proc_open and names one address; /usr/bin/time gives the peak RSS. With
# OLD=path/to/an/older/symcheck both are run side by side.
set -eu
cd "$(dirname "$0")/.."
LINES=${LINES:-10000000}
SYMCHECK=${SYMCHECK:-build/tests/tools/symcheck}
map=$(mktemp /tmp/clrtap-bench-perfmap.XXXXXX)
trap 'rm -f "$map"' EXIT
awk -v n="$LINES" 'BEGIN { for (i = 0; i < n; i++) printf "%x 40 [bench] Bench.Type::Method_%d(int32)[Tier1]\n", 0x7f0000000000 + i * 64, i }' >"$map"
echo "perf map: $LINES lines, $(($(stat -c %s "$map") / 1048576)) MiB"
peak() {
	/usr/bin/time -f %M "$1" --perfmap "$map" $$ 7f0000000040 2>&1 >/dev/null | tail -1
}
new=$(peak "$SYMCHECK")
echo "clrtap symcheck: peak RSS $((new / 1024)) MiB"
if [ -n "${OLD:-}" ]; then
	old=$(peak "$OLD")
	echo "older symcheck:  peak RSS $((old / 1024)) MiB (ratio new/old $(awk -v a="$new" -v b="$old" 'BEGIN { printf "%.2f", a / b }'))"
fi
