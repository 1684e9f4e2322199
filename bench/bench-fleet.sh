#!/usr/bin/env bash
# clrtap fleet on a node of NPROC (default 20) fixture processes, BUSY (default
# 3) of them busy (the `busy` fixture, one thread each), the rest idle, at the
# default rate (19 Hz, 10 s windows), pushing pprof and OTLP to the loopback
# receiver of the tests:
#  - clrtap's CPU as % of one core and its peak RSS while it runs;
#  - the busy fixtures' throughput (Op calls per 250 ms round) in windows of
#    WIN seconds without (A) and with (B) fleet, ABAB for ROUNDS rounds: B/A;
#  - bytes pushed per process per hour, pprof (Pyroscope) vs OTLP, from fleet's
#    own /metrics.
# One run; ratios, not absolute speeds (the machine is shared).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
NPROC=${NPROC:-20}
BUSY=${BUSY:-3}
ROUNDS=${ROUNDS:-3}
WIN=${WIN:-20}

busy_files=()
for ((i = 0; i < NPROC; i++)); do
	f=$out/fix-$i
	if [ "$i" -lt "$BUSY" ]; then
		dotnet "$DLL" busy --threads 1 >"$f" 2>&1 &
		busy_files+=("$f")
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

A=() B=()
fleet=
for ((r = 1; r <= ROUNDS; r++)); do
	sleep "$WIN"
	A+=("$(rounds_total $((WIN - 2)))")
	"$CLRTAP" fleet --pids "$list" --pyroscope "http://127.0.0.1:$port" --otlp "http://127.0.0.1:$port" \
		--metrics "127.0.0.1:$mport" >"$out/fleet.out" 2>"$out/fleet.err" &
	fleet=$!
	pids+=("$fleet")
	sleep 2 # attaching: counted in the B window's CPU below
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
	B+=("$(rounds_total $((WIN - 2)))")
	cpu=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v ns="$((s1 - s0))" 'BEGIN {printf "%.2f", 100 * t / hz / (ns / 1e9)}')
	m=$(curl -s "http://127.0.0.1:$mport/metrics")
	pb=$(echo "$m" | awk '$1 == "clrtap_fleet_pushed_bytes_total{exporter=\"pyroscope\"}" {print $2}')
	ob=$(echo "$m" | awk '$1 == "clrtap_fleet_pushed_bytes_total{exporter=\"otlp\"}" {print $2}')
	np=$(echo "$m" | awk '$1 == "clrtap_fleet_processes" {print $2}')
	el=$(awk -v ns="$((s1 - s0))" 'BEGIN {print ns / 1e9 + 2}')
	echo "round $r: A $(printf %.0f "${A[-1]}") ops/round, B $(printf %.0f "${B[-1]}") ops/round ($(awk -v a="${A[-1]}" -v b="${B[-1]}" 'BEGIN {printf "%.3f", b / a}') kept); clrtap ${cpu}% of a core (after attaching), peak RSS $((rss / 1024)) MiB, $np processes"
	echo "round $r: pushed pprof $pb B, OTLP $ob B in ${el}s for $np processes: $(awk -v p="$pb" -v o="$ob" -v t="$el" -v n="$np" 'BEGIN {printf "%.0f KiB/process/hour pprof, %.0f KiB/process/hour OTLP (OTLP/pprof %.2f)", p / n / t * 3600 / 1024, o / n / t * 3600 / 1024, o / p}')"
	kill -TERM "$fleet"
	wait "$fleet"
done
sA=0 sB=0
for ((r = 0; r < ROUNDS; r++)); do
	sA=$(awk -v a="$sA" -v b="${A[r]}" 'BEGIN {print a + b}')
	sB=$(awk -v a="$sB" -v b="${B[r]}" 'BEGIN {print a + b}')
done
awk -v a="$sA" -v b="$sB" -v n="$ROUNDS" 'BEGIN {printf "busy fixtures over %d ABAB rounds: %.3f of the throughput kept with fleet (%.1f%% loss)\n", n, b / a, (1 - b / a) * 100}'
