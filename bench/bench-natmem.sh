#!/usr/bin/env bash
# bench-natmem.sh: what clrtap agent native-memory costs a target doing
# malloc/free pairs as fast as one thread can (the sample's native-pairs
# mode: 64-byte pairs through libnatfix.so, ns per pair from inside the
# fixture), ABAB: A without clrtap, B with clrtap attached at its default
# sampling interval (512 KiB), ROUNDS rounds (default 3). Also clrtap's own
# CPU time in B. The loss at 1 M pairs a second is the added ns per pair
# times 1e6 over one second of one CPU. The peer, when installed: heaptrack
# attached at run time (heaptrack -p: gdb injects its library, which hooks
# the same functions and records every call, not a sample), case H.
# Usage: bench/bench-natmem.sh [SECONDS] [ROUNDS]   (env CLRTAP, DLL)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
SECS=${1:-3}
ROUNDS=${2:-3}

# run_pairs WITH: one fixture run (0 alone, 1 with clrtap, 2 with heaptrack);
# prints "ns_per_pair tool_cpu_s"
run_pairs() {
	local with=$1 f=$out/fix.$RANDOM t=$out/go.$RANDOM fpid cpid="" cpu=0 ns
	dotnet "$DLL" native-pairs --seconds "$SECS" --trigger "$t" >"$f" 2>&1 &
	fpid=$!
	pids+=("$fpid")
	wait_line "$f" '^READY ' 60 || { echo "fixture did not start" >&2; return 1; }
	if [ "$with" = 2 ]; then
		(cd "$out" && exec /usr/bin/time -f '%U %S' -o "$out/time" heaptrack -p "$fpid" >"$out/ht.out" 2>&1) &
		cpid=$!
		wait_line "$out/ht.out" 'injection finished' 120 || { echo "heaptrack: $(cat "$out/ht.out")" >&2; return 1; }
	fi
	if [ "$with" = 1 ]; then
		/usr/bin/time -f '%U %S' -o "$out/time" "$CLRTAP" agent native-memory -p "$fpid" \
			-d $((SECS + 2)) >"$out/nm.out" 2>"$out/nm.err" &
		cpid=$!
		wait_line "$out/nm.err" 'hooks in place' 30 || { echo "no hooks: $(cat "$out/nm.err")" >&2; return 1; }
	fi
	touch "$t"
	wait_line "$f" '^DONE ' $((SECS + 30)) || { echo "fixture did not finish" >&2; return 1; }
	ns=$(sed -n 's/^DONE .*cpu_ns_per_pair=\([0-9.]*\).*/\1/p' "$f")
	if [ "$with" = 2 ]; then
		kill -TERM "$fpid" 2>/dev/null # heaptrack ends with its target
		wait "$cpid"
		cpu=$(awk '{print $1 + $2}' "$out/time")
		cpid=""
	fi
	if [ -n "$cpid" ]; then
		wait "$cpid"
		cpu=$(awk '{print $1 + $2}' "$out/time")
		grep -q 'restored: \([0-9]*\) of \1 GOT slots' "$out/nm.out" || echo "note: restore line: $(grep restored "$out/nm.out")" >&2
		grep -E '^sampled' "$out/nm.out" >&2
	fi
	kill -TERM "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	echo "$ns $cpu"
}

HT=0
command -v heaptrack >/dev/null && command -v gdb >/dev/null && HT=1
echo "native-pairs, ${SECS} s a run, 64-byte malloc/free pairs, thread CPU ns a pair, ABAB x $ROUNDS$([ $HT = 1 ] && echo ' (+ heaptrack -p each round)')"
printf '%-6s %-10s %12s %14s\n' round case ns/pair tool_cpu_s
A=() B=() H=()
for ((r = 1; r <= ROUNDS; r++)); do
	read -r a _ < <(run_pairs 0)
	printf '%-6s %-10s %12s %14s\n' "$r" without "$a" -
	read -r b c < <(run_pairs 1)
	printf '%-6s %-10s %12s %14s\n' "$r" clrtap "$b" "$c"
	A+=("$a") B+=("$b")
	if [ $HT = 1 ]; then
		read -r h c < <(run_pairs 2)
		printf '%-6s %-10s %12s %14s\n' "$r" heaptrack "$h" "$c"
		H+=("$h")
	fi
done
python3 - "${A[*]}" "${B[*]}" "${H[*]:-}" <<'PY'
import sys, statistics as st
a = [float(x) for x in sys.argv[1].split()]
ma = st.median(a)
for name, arg in (("clrtap", sys.argv[2]), ("heaptrack", sys.argv[3])):
    v = [float(x) for x in arg.split()]
    if not v:
        continue
    m = st.median(v)
    print(f"{name}: median {m:.1f} ns/pair against {ma:.1f} without: throughput loss {100 * (m - ma) / m:.1f} %;"
          f" at 1 M pairs/s {(m - ma) * 1e6 / 1e9 * 100:.2f} % of one CPU added")
PY
