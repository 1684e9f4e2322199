#!/usr/bin/env bash
# clrtap fleet on a node of NPROC (default 20) fixture processes, BUSY (default
# 3) of them busy (the `busy` fixture, one thread each), ALLOC (default 0)
# allocating without pause (`alloc`), the rest idle, at the
# default rate (19 Hz, 10 s windows), pushing pprof and OTLP to the loopback
# receiver of the tests:
#  - clrtap's CPU as % of one core and its peak RSS while it runs;
#  - the busy fixtures' throughput (Op calls per 250 ms round) in windows of
#    WIN seconds without fleet (A), with fleet's CPU profiles (B) and with
#    --types cpu,alloc,exceptions,lock (C), ABC ABC for ROUNDS rounds: B/A, C/A;
#  - bytes pushed per process per hour, pprof (Pyroscope) vs OTLP, from fleet's
#    own /metrics.
# One run; ratios, not absolute speeds (the machine is shared).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
NPROC=${NPROC:-20}
BUSY=${BUSY:-3}
ALLOC=${ALLOC:-0} # of the idle ones, allocating as fast as one thread can (`alloc`): the worst case of --types alloc
ROUNDS=${ROUNDS:-3}
WIN=${WIN:-20}

busy_files=()
for ((i = 0; i < NPROC; i++)); do
	f=$out/fix-$i
	if [ "$i" -lt "$BUSY" ]; then
		dotnet "$DLL" busy --threads 1 >"$f" 2>&1 &
		busy_files+=("$f")
	elif [ "$i" -lt $((BUSY + ALLOC)) ]; then
		dotnet "$DLL" alloc >"$f" 2>&1 &
	else
		dotnet "$DLL" idle >"$f" 2>&1 &
	fi
	pids+=($!)
	fix_pids+=($!)
done
for ((i = 0; i < NPROC; i++)); do wait_line "$out/fix-$i" '^(STARTED|READY)' 120; done
list=$(IFS=,; echo "${fix_pids[*]}")
port=$((30000 + RANDOM % 20000))
mport=$((port + 1))
mkdir -p "$out/recv"
python3 "$ROOT/tests/tools/profrecv.py" "$port" "$out/recv" >"$out/recv.log" 2>&1 &
pids+=($!)
wait_line "$out/recv.log" '^READY' 10

# ops per round of every busy fixture over the last SEC seconds (rounds are 250 ms)
rounds_total() { # SEC -> sum over busy fixtures of the mean ops/round of their last SEC*4 rounds
	local n=$(($1 * 4)) f s=0 v
	for f in "${busy_files[@]}"; do
		v=$(grep '^ROUND' "$f" | tail -n "$n" | awk '{sub("ops=", "", $3); s += $3; k++} END {print (k ? s / k : 0)}')
		s=$(awk -v a="$s" -v b="$v" 'BEGIN {print a + b}')
	done
	echo "$s"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

A=() B=() C=()
fleet=
# with_fleet LABEL [ARGS...]: fleet for WIN seconds; prints its CPU, RSS, bytes; sets OPS
with_fleet() {
	local label=$1 t0 t1 s0 s1 rss v k cpu m pb ob np el
	shift
	"$CLRTAP" fleet --pids "$list" --pyroscope "http://127.0.0.1:$port" --otlp "http://127.0.0.1:$port" \
		--metrics "127.0.0.1:$mport" "$@" >"$out/fleet.out" 2>"$out/fleet.err" &
	fleet=$!
	pids+=("$fleet")
	sleep 2 # attaching: counted in the window's throughput, not in the CPU below
	t0=$(cpu_ticks "$fleet")
	s0=$(date +%s%N)
	rss=0
	for ((k = 0; k < WIN - 2; k++)); do
		v=$(awk '/^VmRSS/ {print $2}' "/proc/$fleet/status")
		[ "$v" -gt "$rss" ] && rss=$v
		sleep 1
	done
	t1=$(cpu_ticks "$fleet")
	s1=$(date +%s%N)
	OPS=$(rounds_total $((WIN - 2)))
	cpu=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v ns="$((s1 - s0))" 'BEGIN {printf "%.2f", 100 * t / hz / (ns / 1e9)}')
	m=$(curl -s "http://127.0.0.1:$mport/metrics")
	pb=$(echo "$m" | awk '$1 == "clrtap_fleet_pushed_bytes_total{exporter=\"pyroscope\"}" {print $2}')
	ob=$(echo "$m" | awk '$1 == "clrtap_fleet_pushed_bytes_total{exporter=\"otlp\"}" {print $2}')
	np=$(echo "$m" | awk '$1 == "clrtap_fleet_processes" {print $2}')
	el=$(awk -v ns="$((s1 - s0))" 'BEGIN {print ns / 1e9 + 2}')
	echo "round $r $label: $(printf %.0f "$OPS") ops/round ($(awk -v a="${A[-1]}" -v b="$OPS" 'BEGIN {printf "%.3f", b / a}') of A); clrtap ${cpu}% of a core (after attaching), peak RSS $((rss / 1024)) MiB, $np processes"
	echo "round $r $label: pushed pprof $pb B, OTLP (gzip) $ob B in ${el}s for $np processes: $(awk -v p="$pb" -v o="$ob" -v t="$el" -v n="$np" 'BEGIN {printf "%.0f KiB/process/hour pprof, %.0f KiB/process/hour OTLP (OTLP/pprof %.2f)", p / n / t * 3600 / 1024, o / n / t * 3600 / 1024, o / p}')"
	kill -TERM "$fleet"
	wait "$fleet"
}
for ((r = 1; r <= ROUNDS; r++)); do
	sleep "$WIN"
	A+=("$(rounds_total $((WIN - 2)))")
	with_fleet "B (cpu)"
	B+=("$OPS")
	with_fleet "C (cpu,alloc,exceptions,lock)" --types cpu,alloc,exceptions,lock
	C+=("$OPS")
done
sA=0 sB=0 sC=0
for ((r = 0; r < ROUNDS; r++)); do
	sA=$(awk -v a="$sA" -v b="${A[r]}" 'BEGIN {print a + b}')
	sB=$(awk -v a="$sB" -v b="${B[r]}" 'BEGIN {print a + b}')
	sC=$(awk -v a="$sC" -v b="${C[r]}" 'BEGIN {print a + b}')
done
awk -v a="$sA" -v b="$sB" -v n="$ROUNDS" 'BEGIN {printf "busy fixtures over %d rounds: %.3f of the throughput kept with fleet (%.1f%% loss)\n", n, b / a, (1 - b / a) * 100}'
awk -v a="$sA" -v b="$sC" -v n="$ROUNDS" 'BEGIN {printf "busy fixtures over %d rounds: %.3f of the throughput kept with fleet --types cpu,alloc,exceptions,lock (%.1f%% loss)\n", n, b / a, (1 - b / a) * 100}'
