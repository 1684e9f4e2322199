#!/usr/bin/env bash
# clrtap probe's cost budget (issue 30) on a JIT'd method called more than
# 100,000 times a second (fixture hot-calls): the default probe hands it over
# to ReJIT, says which mechanism and why, counts every call exactly (against
# the fixture's own counter), and the fixture's throughput loss, measured by
# the fixture in ABAB rounds, stays within the budget; forced low on a
# mechanism that cannot meet it, the probe stops with exit 11. Also: --stack
# on ReJIT'd code names the caller in every record; SIGKILL of clrtap probe
# after a hand-over leaves the profiler reverted and dormant.
# test-run: alone (the throughput rounds are CPU-time shares)
. "$(dirname "$0")/lib.sh"

M='Clrtap.Fixtures.HotCalls::Tick'
HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: hardware execute breakpoints: $HWBP"

# --- --stack on ReJIT'd code: each record's stack names the caller --------
# (no breakpoint involved: the same facts on every machine.) TierTarget::Work
# is called only by SteadyDriver::Run, 2000 times.
start_fixture steady --rate 2000 --calls 2000 --trigger "$WORK/go-s"
SP=$FIX_PID
SOUT=$FIX_OUT
"$CLRTAP" probe -p "$SP" --via rejit --stack --budget 50% 'Clrtap.Fixtures.TierTarget::Work' \
	>"$WORK/s.out" 2>"$WORK/s.err" &
RUN=$!
wait_for_line "$WORK/s.err" 'ReJIT requested' 30 "$RUN"
touch "$WORK/go-s"
wait_for_line "$SOUT" '^DONE ' 60 "$SP"
wait_for_line "$WORK/s.out" '^call .*::Work\(int32\) \(1999\) -> 3999 ' 30 "$RUN"
kill -INT "$RUN"
wait "$RUN"
equals "--via rejit --stack: exit code" "$?" 0
CHECK=$(python3 - "$WORK/s.out" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
calls, bad = [], []
for i, l in enumerate(lines):
    m = re.match(r"call Clrtap\.Fixtures\.TierTarget::Work\(int32\) \((\d+)\) -> (\d+)  \d+ ns$", l)
    if not m:
        continue
    calls.append((int(m.group(1)), int(m.group(2))))
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    if not nxt.startswith("    at Clrtap.Fixtures.SteadyDriver::Run <- "):
        bad.append(f"call {m.group(1)}: {nxt!r}")
want = [(i, 2 * i + 1) for i in range(2000)]
if calls != want:
    print(f"{len(calls)} calls recorded, not the 2000 made in order")
elif bad:
    print(f"{len(bad)} records whose stack does not start at the caller, first: {bad[0]}")
else:
    print("ok")
PY
)
equals "--stack on ReJIT'd code: 2000 records, each stack's first frame the caller SteadyDriver::Run" "$CHECK" ok
contains "--via rejit --stack: says the consequence" "$(cat "$WORK/s.err")" "records every call with its stack (about 10000 ns a call: at most 50000 calls/s in the 50% budget); it stays loaded in the target afterwards, dormant"
stop_fixture "$SP"

G=$WORK/gate
start_fixture hot-calls --gate "$G" --spin 4000
P=$FIX_PID
wait_for_line "$FIX_OUT" '^PAUSED total=' 30 "$P"

expect_exit "--budget 0 refused" 2 "$CLRTAP" probe -p "$P" --budget 0 "$M"
expect_exit "--budget abc refused" 2 "$CLRTAP" probe -p "$P" --budget abc "$M"
contains "--budget: says what it takes" "$ERR" "--budget takes a share of one core in percent"

paused() { grep -c '^PAUSED' "$FIX_OUT"; }
total() { sed -n 's/^PAUSED total=//p' "$FIX_OUT" | tail -1; }
rounds() { grep -c '^ROUND' "$FIX_OUT"; }
# run_rounds SECONDS: opens the gate, lets the fixture run, closes it; sets
# R0..R1 (the ROUND lines made in the middle of the run)
run_rounds() {
	local n
	n=$(paused)
	touch "$G"
	sleep 0.6
	R0=$(rounds)
	sleep "$1"
	R1=$(rounds)
	rm -f "$G"
	wait_for_line "$FIX_OUT" "PAUSED" 10 "$P"
	for ((i = 0; i < 100; i++)); do [ "$(paused)" -gt "$n" ] && break; sleep 0.05; done
}
# b_round K: the default probe while the fixture runs (phase B); asserts
# the hand-over and the exact count
b_round() {
	local k=$1 t0 t1 rc
	t0=$(total)
	"$CLRTAP" probe -p "$P" "$M" --json >"$WORK/b$k.json" 2>"$WORK/b$k.err" &
	RUN=$!
	wait_for_line "$WORK/b$k.err" '^clrtap: tracing' 30 "$RUN"
	touch "$G"
	wait_for_line "$WORK/b$k.err" 'ReJIT requested' 30 "$RUN"
	sleep 0.8 # the re-JIT'd code compiled and tiered up
	R0=$(rounds)
	sleep 2.5
	R1=$(rounds)
	local n
	n=$(paused)
	rm -f "$G"
	for ((i = 0; i < 200; i++)); do [ "$(paused)" -gt "$n" ] && break; sleep 0.05; done
	kill -INT "$RUN"
	wait "$RUN"
	rc=$?
	t1=$(total)
	equals "B$k: probe exit code" "$rc" 0
	J=$(cat "$WORK/b$k.json")
	equals "B$k: every call counted (the fixture's counter: $t0 -> $t1)" \
		"$(json_get "$J" "d['methods'][0]['calls']")" "$((t1 - t0))"
	equals "B$k: handed to ReJIT, counting" "$(json_get "$J" "(d['handed_to_rejit'], d['rejit_args'], d['mechanism'])")" \
		"(True, False, 'breakpoint+rejit')"
	equals "B$k: ReJIT's final count came" "$(json_get "$J" "d['methods'][0]['rejit_counts_final']")" True
	contains "B$k: says why (over the budget under the breakpoint)" "$(cat "$WORK/b$k.err")" \
		"clrtap: budget: handed to ReJIT at +"
	contains "B$k: says the breakpoint's cost measured here" "$(cat "$WORK/b$k.err")" \
		"under a breakpoint (measured here)"
	contains "B$k: states the consequence" "$(cat "$WORK/b$k.err")" \
		"the ReJIT profiler stays loaded in the target afterwards, dormant"
	contains "B$k: says what it cost the target" "$(cat "$WORK/b$k.err")" "clrtap: cost to the target (estimated): "
}
# per_call FROM TO: the fixture's CPU ns per call in ROUND lines FROM+1..TO
per_call() {
	grep '^ROUND' "$FIX_OUT" | sed -n "$(($1 + 1)),$2p" |
		sed -E 's/.* calls=([0-9]+) cpu_ns=([0-9]+).*/\2 \1/' | awk '$2 > 0 { print $1 / $2 }'
}

if [[ $HWBP != fires* ]]; then
	# Breakpoints do not fire here: the JIT'd method cannot be watched
	# natively, and clrtap says so instead of counting 0 (t-probe's facts).
	touch "$G"
	expect_exit "breakpoints do not fire: not traced" 1 "$CLRTAP" probe -p "$P" -d 1 "$M"
	contains "not traced, said so" "$ERR" "NOT traced"
	rm -f "$G"
	stop_fixture "$P"
	finish
fi

b_round 1
B1=$(per_call "$R0" "$R1")
run_rounds 2.5
A1=$(per_call "$R0" "$R1")
b_round 2
B2=$(per_call "$R0" "$R1")
contains "B2: the dormant profiler re-armed" "$(cat "$WORK/b2.err")" "reusing the dormant clrtap profiler"
run_rounds 2.5
A2=$(per_call "$R0" "$R1")
LOSS=$(printf '%s\n' "$A1" "$A2" | python3 -c '
import statistics, sys
a = [float(x) for x in sys.stdin.read().split()]
print(statistics.median(a))' | {
	read -r A
	printf '%s\n' "$B1" "$B2" | python3 -c '
import statistics, sys
a = float(sys.argv[1])
b = statistics.median(float(x) for x in sys.stdin.read().split())
print(f"{(b - a) / a * 100:.2f} {a:.0f} {b:.0f} {1e9 / a:.0f}")' "$A"
})
read -r LOSS_PCT A_NS B_NS A_RATE <<<"$LOSS"
echo "    fixture CPU per call: A ${A_NS} ns, B (probed, ReJIT) ${B_NS} ns: loss ${LOSS_PCT}% (default budget 5%); ${A_RATE} calls per CPU-second"
check "the fixture's method is hot: >= 100,000 calls per CPU-second (${A_RATE})" \
	python3 -c "import sys; sys.exit(0 if $A_RATE >= 100000 else 1)"
check "throughput loss under the default probe (${LOSS_PCT}%) within its default 5% budget (ABAB rounds)" \
	python3 -c "import sys; sys.exit(0 if $LOSS_PCT <= 5 else 1)"

# --- SIGKILL of clrtap mid-probe: its ReJIT child ends too, the IL reverted --
touch "$G"
"$CLRTAP" probe -p "$P" --count "$M" >"$WORK/k.out" 2>"$WORK/k.err" &
RUN=$!
wait_for_line "$WORK/k.err" 'ReJIT requested' 30 "$RUN"
expect_exit "status while handed over" 0 "$CLRTAP" agent status -p "$P" --json
equals "the profiler active while the probe runs" "$(json_get "$OUT" "d['state']")" active
kill -KILL "$RUN"
wait "$RUN" 2>/dev/null
sleep 3
expect_exit "status 3 s after SIGKILL of clrtap probe" 0 "$CLRTAP" agent status -p "$P" --json
equals "reverted and dormant 3 s after clrtap probe was killed" "$(json_get "$OUT" "d['state']")" dormant
rm -f "$G"

# --- forced low on a mechanism that cannot meet it: stopped, exit 11 ------
touch "$G"
expect_exit "--no-rejit, budget 0.01%: stopped over budget" 11 "$CLRTAP" probe -p "$P" --count \
	--budget 0.01% --no-rejit "$M"
contains "--no-rejit: says why it stopped" "$ERR" \
	"over the 0.01% budget (the ReJIT hand-over was refused: --no-rejit or --via)"
contains "--no-rejit: the cost it had" "$ERR" "clrtap: cost to the target (estimated): "
expect_exit "--via breakpoint --json, budget 0.01%: stopped, exit 11" 11 "$CLRTAP" probe -p "$P" \
	--via breakpoint --budget 0.01% --json "$M"
equals "JSON: stopped over budget" "$(json_get "$OUT" "d['over_budget']")" True
equals "JSON: the breakpoint's counts, no ReJIT" "$(json_get "$OUT" "(d['mechanism'], d['handed_to_rejit'])")" \
	"('breakpoint', False)"
rm -f "$G"
stop_fixture "$P"
finish
