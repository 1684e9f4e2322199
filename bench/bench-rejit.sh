#!/usr/bin/env bash
# bench-rejit.sh: cost per call of a probed .NET method, one run, side by
# side, measured inside the fixture (probe-bench mode: N calls in a tight
# loop, Stopwatch, ns/call):
#   1. no probe                                   (R2R framework method, JIT'd method)
#   2. clrtap agent probe (ReJIT, count only)     both methods
#   3. clrtap agent probe --args (ReJIT, args + return + latency, one event per call)
#   4. clrtap probe --count (uprobe on R2R code)  the framework method
#   5. perf probe + perf record (uprobe)          the same file offset
# Then: time from starting `clrtap agent probe` to the probe being in place
# (the next call is counted), and the target's RSS before attach, with the
# profiler attached and probing, and after the run.
# The fixture runs with DOTNET_TieredCompilation=0 as in bench-probe.sh, so
# the uprobe rows hit ReadyToRun code (ReJIT does not care).
# Usage: bench/bench-rejit.sh [CALLS]   (env CLRTAP, FIXTURE_DLL)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
FIXTURE_DLL=${FIXTURE_DLL:-$ROOT/build/fixtures/sample/sample.dll}
CALLS=${1:-2000000}
WORK=$(mktemp -d /tmp/clrtap-bench-rejit.XXXXXX)
FPID=""
TOOLPID=""
R2R='System.Convert::ToString(int32,int32)'
JIT='Clrtap.Fixtures.ProbeTargets::AddInts'

cleanup() {
	[ -n "$TOOLPID" ] && kill -INT "$TOOLPID" 2>/dev/null
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	perf probe -q --del 'clrtaprj:*' >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

start() { # TARGET
	rm -f "$WORK/trig" "$WORK/fix.out"
	DOTNET_TieredCompilation=0 dotnet "$FIXTURE_DLL" probe-bench --calls "$CALLS" --target "$1" \
		--trigger "$WORK/trig" >"$WORK/fix.out" 2>&1 &
	FPID=$!
	wait_line "$WORK/fix.out" '^READY' 60 || { echo "fixture did not start" >&2; exit 1; }
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$FPID/status"; }

finish_run() { # sets NS
	touch "$WORK/trig"
	wait_line "$WORK/fix.out" '^DONE' 600 || { echo "fixture did not finish" >&2; exit 1; }
	NS=$(sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' "$WORK/fix.out")
	sleep 0.5
	[ -n "$TOOLPID" ] && { kill -INT "$TOOLPID" 2>/dev/null; wait "$TOOLPID" 2>/dev/null; }
	TOOLPID=""
	kill "$FPID" 2>/dev/null
	wait "$FPID" 2>/dev/null
	FPID=""
}

agent_probe() { # METHOD OUT: starts clrtap agent probe, waits until the probe is in place
	local s e
	s=$(date +%s%N)
	"$CLRTAP" agent probe -p "$FPID" ${AGENT_ARGS:-} "$1" --json >"$2" 2>"$2.err" &
	TOOLPID=$!
	for ((i = 0; i < 300; i++)); do
		"$CLRTAP" agent status -p "$FPID" --json 2>/dev/null | grep -q '"state":"active"' && break
		sleep 0.05
	done
	e=$(date +%s%N)
	READY_MS=$(((e - s) / 1000000))
}

calls_in() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(p["calls"] for p in d["probes"]))' "$1" 2>/dev/null; }

row() { printf '%-46s %10s %10s  %s\n' "$@"; }

# 1. no probe
start framework; finish_run; BASE_R2R=$NS
start jit; finish_run; BASE_JIT=$NS

# 2. ReJIT count-only
start framework
RSS0=$(rss_kb)
agent_probe "$R2R" "$WORK/r1.json"
READY1=$READY_MS
RSS1=$(rss_kb)
finish_run; RJ_R2R=$NS; C1=$(calls_in "$WORK/r1.json")
start jit
agent_probe "$JIT" "$WORK/r2.json"
READY2=$READY_MS
finish_run; RJ_JIT=$NS; C2=$(calls_in "$WORK/r2.json")

# 3. ReJIT with arguments (one Call event per call; the tool reads them all)
start jit
AGENT_ARGS=--args agent_probe "$JIT" "$WORK/r3.json"
finish_run; RJA_JIT=$NS
C4=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("calls_recorded","?"))' "$WORK/r3.json" 2>/dev/null)

# 4. clrtap's uprobe on the R2R code
start framework
"$CLRTAP" probe -p "$FPID" --count "$R2R" >"$WORK/u.out" 2>"$WORK/u.err" &
TOOLPID=$!
wait_line "$WORK/u.err" 'tracing' 30
finish_run; UP_R2R=$NS
C3=$(sed -n 's/.*ToString(int32, int32): \([0-9]*\) calls.*/\1/p' "$WORK/u.err")

# 5. perf probe + perf record, same offset
start framework
EMIT=$("$CLRTAP" probe -p "$FPID" --emit perf "$R2R" 2>/dev/null | head -1)
IMAGE=$(echo "$EMIT" | awk '{print $4}')
OFF=$(echo "$EMIT" | awk '{print $6}')
PERF_R2R=n/a
PC=""
if command -v perf >/dev/null && [ -n "$IMAGE" ] &&
	perf probe -q -x "$IMAGE" --add "clrtaprj:tostring=$OFF" >"$WORK/pp.log" 2>&1; then
	perf record -q -e clrtaprj:tostring -p "$FPID" -o "$WORK/perf.data" >"$WORK/pr.log" 2>&1 &
	TOOLPID=$!
	sleep 2
	finish_run; PERF_R2R=$NS
	PC=$(perf script -i "$WORK/perf.data" -F event 2>/dev/null | grep -c .)
	perf probe -q --del 'clrtaprj:*' >/dev/null 2>&1
else
	echo "perf probe unavailable: $(head -2 "$WORK/pp.log" 2>/dev/null)" >&2
	finish_run
fi

net() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || a == "") print "n/a"; else printf "%.1f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || a == "" || b == "" || b <= 0) print "n/a"; else printf "%.1fx", a / b }'; }
echo "probe cost per call, $CALLS calls each ($(uname -r), $(nproc) CPUs)"
row "case" "ns/call" "added ns" "calls counted"
row "no probe: CallFramework -> Convert.ToString (R2R)" "$BASE_R2R" "" ""
row "no probe: AddInts (JIT)" "$BASE_JIT" "" ""
row "ReJIT count-only, Convert.ToString (R2R)" "$RJ_R2R" "$(net "$RJ_R2R" "$BASE_R2R")" "${C1:-?}"
row "ReJIT count-only, AddInts (JIT)" "$RJ_JIT" "$(net "$RJ_JIT" "$BASE_JIT")" "${C2:-?}"
row "ReJIT with args+return+latency, AddInts (JIT)" "$RJA_JIT" "$(net "$RJA_JIT" "$BASE_JIT")" "${C4:-?} recorded"
row "clrtap probe --count (uprobe), Convert.ToString" "$UP_R2R" "$(net "$UP_R2R" "$BASE_R2R")" "${C3:-?}"
row "perf probe + perf record (uprobe), same offset" "$PERF_R2R" "$(net "$PERF_R2R" "$BASE_R2R")" "${PC:-?}"
# The ReJIT row on the R2R method compares fresh optimized JIT code with the
# ReadyToRun code it replaces (it can even be faster), so the probe's own cost
# is read on the JIT'd method, where the code is the same with and without.
A1=$(net "$RJ_JIT" "$BASE_JIT"); A2=$(net "$UP_R2R" "$BASE_R2R"); A3=$(net "$PERF_R2R" "$BASE_R2R")
echo "probe's own cost per call: ReJIT ${A1} ns (JIT'd method), clrtap uprobe ${A2} ns, perf uprobe ${A3} ns"
echo "ratios: clrtap uprobe / ReJIT $(ratio "$A2" "$A1"); perf uprobe / ReJIT $(ratio "$A3" "$A1")"
echo "note: the R2R ReJIT row runs freshly JIT-optimized code instead of ReadyToRun code"
echo "time from 'clrtap agent probe' to the probe in place: ${READY1} ms (R2R), ${READY2} ms (JIT)"
echo "target RSS: ${RSS0} kB before attach, ${RSS1} kB attached and probing (+$((RSS1 - RSS0)) kB)"
