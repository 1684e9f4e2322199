#!/usr/bin/env bash
# clrtap trace report --lines: file and line of exception frames (JIT'd code:
# the rundown's IL-to-native maps + the fixture's portable PDB) equal what the
# runtime itself prints in the same exception's StackTrace; a PDB whose id
# does not match is refused with the reason; no PDB is said, never guessed.
# One fixture run (from a copy, so its PDB can be swapped), four reports.
. "$(dirname "$0")/lib.sh"

FX=$WORK/fx
mkdir -p "$FX"
ORIG_DIR=$(dirname "$FIXTURE_DLL")
cp "$ORIG_DIR"/sample.* "$FX"/
[ -f "$FX/sample.pdb" ] || { not_ok "fixture has its portable PDB" "no $FX/sample.pdb"; finish; }
FIXTURE_DLL=$FX/sample.dll
FIX_ENV="CLRTAP_FIXTURE_STACK=1" start_fixture exceptions --count 20 --trigger "$WORK/go"
(sleep 1.5; touch "$WORK/go") &
expect_exit "collect exceptions" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile exceptions -d 4 -o "$WORK/ex.nettrace"
wait_for_line "$FIX_OUT" 'ThrowMany' 10 "$FIX_PID" || true
stop_fixture "$FIX_PID"

# what the runtime printed: "   at Clrtap.Fixtures.Thrower.ThrowOne() in PATH:line N"
runtime_line() {
	sed -n "s/^ *at Clrtap\.Fixtures\.Thrower\.$1(.*) in \(.*\):line \([0-9]*\)\$/\1:\2/p" "$FIX_OUT" | head -1
}
# what clrtap says: "Clrtap.Fixtures.Thrower::ThrowOne in PATH:line N"
clrtap_line() {
	sed -n "s/.*at Clrtap\.Fixtures\.Thrower::$1 in \(.*\):line \([0-9]*\)\$/\1:\2/p" "$WORK/r.txt" | head -1
}

expect_exit "report --lines" 0 "$CLRTAP" trace report "$WORK/ex.nettrace" --lines
printf '%s\n' "$OUT" >"$WORK/r.txt"
for m in ThrowOne ThrowMany; do
	want=$(runtime_line "$m")
	check "runtime printed a line for $m" test -n "$want"
	equals "$m: file:line as the runtime prints it" "$(clrtap_line "$m")" "$want"
done
with_line() { runtime_line "$1" | sed 's/:\([0-9]*\)$/:line \1/'; }
contains "throw site names its line" "$OUT" "thrown in Clrtap.Fixtures.Thrower::ThrowOne in $(with_line ThrowOne) ("

expect_exit "report --lines --json" 0 "$CLRTAP" trace report "$WORK/ex.nettrace" --lines --json
equals "json frame carries the line" \
	"$(json_get "$OUT" '[f for f in d["exceptions"]["groups"][0]["stack"] if "::ThrowOne" in f][0]')" \
	"Clrtap.Fixtures.Thrower::ThrowOne in $(with_line ThrowOne)"

expect_exit "report without --lines" 0 "$CLRTAP" trace report "$WORK/ex.nettrace"
lacks "no lines unless asked" "$OUT" ":line "

# another build's PDB under the fixture's name: refused, not used
cp "$ROOT/tests/data/pdb/lines-debug.pdb" "$FX/sample.pdb"
expect_exit "report --lines, mismatched PDB" 0 "$CLRTAP" trace report "$WORK/ex.nettrace" --lines
contains "mismatch said" "$OUT" "Clrtap.Fixtures.Thrower::ThrowOne (no line: PDB does not match the assembly)"
lacks "mismatch: no line shown" "$OUT" ":line "

rm -f "$FX/sample.pdb"
expect_exit "report --lines, no PDB" 0 "$CLRTAP" trace report "$WORK/ex.nettrace" --lines
contains "no PDB said" "$OUT" "Clrtap.Fixtures.Thrower::ThrowOne (no line: no PDB)"

# Sampled stacks with lines: pprof decoded by Go's own pprof shows the
# call sites' lines inside CpuSplit::Run (the source's "HotA();" and
# "HotB();" lines), speedscope carries file and line.
cp "$ORIG_DIR/sample.pdb" "$FX/sample.pdb"
start_fixture cpu-split --seconds 5
expect_exit "collect cpu-sampling" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile cpu-sampling -d 2 -o "$WORK/cs.nettrace"
stop_fixture "$FIX_PID"
expect_exit "report --lines --flame pprof" 0 "$CLRTAP" trace report "$WORK/cs.nettrace" --lines --flame "$WORK/cs.pb.gz"
expect_exit "report --lines --flame speedscope" 0 "$CLRTAP" trace report "$WORK/cs.nettrace" --lines --flame "$WORK/cs.speedscope.json"
SRCF=$(sed -n 's/.*"file":"\([^"]*Workloads\.cs\)".*/\1/p' "$WORK/cs.speedscope.json" | head -1)
check "speedscope names the fixture's source file" test -f "$SRCF"
LA=$(grep -n '^ *HotA();' "$SRCF" | head -1 | cut -d: -f1)
LB=$(grep -n '^ *HotB();' "$SRCF" | head -1 | cut -d: -f1)
if command -v go >/dev/null; then
	go tool pprof -lines -top "$WORK/cs.pb.gz" >"$WORK/pp.txt" 2>&1
	contains "go tool pprof -lines: HotA's call site" "$(cat "$WORK/pp.txt")" "Clrtap.Fixtures.CpuSplit::Run $SRCF:$LA"
	contains "go tool pprof -lines: HotB's call site" "$(cat "$WORK/pp.txt")" "Clrtap.Fixtures.CpuSplit::Run $SRCF:$LB"
else
	skip "go tool pprof: golang-go not installed (scripts/install-deps.sh)"
fi
contains "speedscope frame with file and line" "$(cat "$WORK/cs.speedscope.json")" \
	"\"name\":\"Clrtap.Fixtures.CpuSplit::Run in $SRCF:line $LA\",\"file\":\"$SRCF\",\"line\":$LA}"

finish
