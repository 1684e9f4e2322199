#!/usr/bin/env bash
# The README's first command (make demo): start the bundled sample app (once
# on the host, once as PID 1 of its own PID + mount namespace with a private
# /tmp, like a container), put load on it, and run clrtap on both: list them,
# CPU-profile the containerised one into an HTML flame graph, trace and report
# its exceptions, read its counters and stacks, and probe a method's calls.
# Everything it starts is stopped when it ends. Output goes to build/demo/.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
OUT=$ROOT/build/demo
mkdir -p "$OUT"
PORT=${PORT:-18080}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT

wait_ready() {
	local i
	for ((i = 0; i < 600; i++)); do grep -q '^READY' "$1" 2>/dev/null && return 0; sleep 0.1; done
	echo "demo: the sample app did not start:" >&2
	cat "$1" >&2
	exit 1
}
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

dotnet "$DLL" web --port "$PORT" >"$OUT/web.log" 2>&1 &
WEB=$!
pids+=("$WEB")
"$ROOT/tests/tools/contain.sh" "$DLL" web --port $((PORT + 1)) >"$OUT/container.log" 2>&1 &
pids+=($!)
wait_ready "$OUT/web.log"
wait_ready "$OUT/container.log"
CONT=$(pgrep -P "${pids[1]}" | head -1)

for i in $(seq 1 20); do
	curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=10" >/dev/null
	curl -s "http://127.0.0.1:$((PORT + 1))/api/echo?echo=hello" >/dev/null
done
echo "sample app on the host: pid $WEB, port $PORT; in its own namespaces: pid $CONT, port $((PORT + 1))"

step "$CLRTAP" ps
step "$CLRTAP" info -p "$CONT"

# Load on the containerised app's CPU-heavy route while it is profiled.
touch "$OUT/load"
( while [ -e "$OUT/load" ]; do curl -s "http://127.0.0.1:$((PORT + 1))/api/on-cpu" >/dev/null; done ) &
LOAD=$!
pids+=("$LOAD")
step "$CLRTAP" profile -p "$CONT" -d 5 -o "$OUT/flamegraph.html"
rm -f "$OUT/load"
wait "$LOAD" 2>/dev/null

# Exceptions thrown by a route, traced over EventPipe and reported.
( sleep 1; for i in $(seq 1 5); do curl -s "http://127.0.0.1:$((PORT + 1))/api/exception/3" >/dev/null; done ) &
step "$CLRTAP" trace collect -p "$CONT" --profile exceptions -d 4 -o "$OUT/exceptions.nettrace"
step "$CLRTAP" trace report "$OUT/exceptions.nettrace" --top 3
step "$CLRTAP" counters monitor -p "$CONT" -d 2 --counters 'System.Runtime[cpu-usage,gc-heap-size,alloc-rate]'
step "$CLRTAP" stacks -p "$WEB"

# Every call of a JIT-compiled method, with its argument and return value.
( sleep 2; for i in 5 10 20; do curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=$i" >/dev/null; done ) &
step "$CLRTAP" probe -p "$WEB" -d 4 --ret '*::CalculateFibonacciValue'

# A heap snapshot, then a triage of the containerised app under CPU load.
step "$CLRTAP" gcdump collect -p "$WEB" -o "$OUT/web.gcdump"
step "$CLRTAP" gcdump report "$OUT/web.gcdump" --top 5
touch "$OUT/load"
( while [ -e "$OUT/load" ]; do curl -s "http://127.0.0.1:$((PORT + 1))/api/on-cpu" >/dev/null; done ) &
LOAD=$!
pids+=("$LOAD")
step "$CLRTAP" doctor -p "$CONT" -d 5
rm -f "$OUT/load"
wait "$LOAD" 2>/dev/null
echo
echo "demo: done; the flame graph is $OUT/flamegraph.html (open it in a browser); other files in $OUT"
