#!/usr/bin/env bash
# clrtap doctor: the time it needs to reach its verdict (-d 2 plus starting
# the session, the rundown, the memory read and the rules) on the idle and
# cpu-split fixtures, median of RUNS runs; and its overhead on the target's
# throughput: the `busy` fixture's ops per 250 ms round while doctor runs
# back to back, against the rounds without it, as a ratio.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
RUNS=${RUNS:-5}

start() { # MODE ARGS... -> $fpid
	local f=$out/fix-$1
	dotnet "$DLL" "$@" >"$f" 2>&1 &
	fpid=$!
	pids+=("$fpid")
	wait_line "$f" '^STARTED' 60
}

for mode in idle cpu-split; do
	start "$mode"
	verdict=$("$CLRTAP" doctor -p "$fpid" -d 2 2>/dev/null | sed -n 3p)
	t=$(median_ms "$CLRTAP" doctor -p "$fpid" -d 2)
	echo "doctor -d 2 on $mode: ${t} ms to the verdict (median of $RUNS): $verdict"
	kill -TERM "$fpid"
done

# Overhead: rounds of the busy fixture without, then with doctor running.
start busy --threads 1
f=$out/fix-busy
sleep 2
n0=$(grep -c '^ROUND' "$f")
sleep 5
n1=$(grep -c '^ROUND' "$f")
end=$((SECONDS + 6))
while [ "$SECONDS" -lt "$end" ]; do "$CLRTAP" doctor -p "$fpid" -d 2 >/dev/null 2>&1; done
n2=$(grep -c '^ROUND' "$f")
base=$(sed -n "$((n0 + 1)),${n1}p" "$f" | awk '{sub("ops=", "", $3); s += $3; n++} END {print s / n}')
with=$(sed -n "$((n1 + 1)),${n2}p" "$f" | awk '{sub("ops=", "", $3); s += $3; n++} END {print s / n}')
awk -v b="$base" -v w="$with" 'BEGIN {printf "busy fixture: %.0f ops/round alone, %.0f with doctor running: %.2f of the throughput kept (%.1f%% overhead)\n", b, w, w / b, (1 - w / b) * 100}'
