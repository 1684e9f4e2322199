#!/usr/bin/env bash
# clrtap agent probe: ReJIT probes count every call exactly - a JIT'd method
# across tier-up (20,000 calls), overloads, a nested type, a ReadyToRun
# framework method past its tier-up - on a machine whatever its debug
# registers do; the IL is reverted at the end and the target's results are
# right; SIGKILL of clrtap mid-run reverts within 3 s.
. "$(dirname "$0")/lib.sh"

# --- 20,000 calls of a JIT'd method across tier-up -----------------------
# As on a machine whose hardware breakpoints do not fire (the self-test's
# answer forced to "silent"): ReJIT uses no debug register.
start_fixture steady --rate 20000 --calls 20000 --trigger "$WORK/go1"
P=$FIX_PID
CLRTAP_TEST_MECH_HWBP=broken "$CLRTAP" agent probe -p "$P" 'Clrtap.Fixtures.TierTarget::Work' --json \
	>"$WORK/p1.json" 2>"$WORK/p1.err" &
RUN=$!
for ((i = 0; i < 200; i++)); do
	"$CLRTAP" agent status -p "$P" --json 2>/dev/null | grep -q '"state":"active"' && break
	sleep 0.1
done
sleep 0.5
touch "$WORK/go1"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
contains "target's results right while probed" "$(cat "$FIX_OUT")" "DONE calls=20000 sum=400000000"
# No wait: before it stops, clrtap has the profiler write its counts (Flushed)
kill -INT "$RUN"
wait "$RUN"
equals "probe run exit code" "$?" 0
J=$(cat "$WORK/p1.json")
equals "one method probed" "$(json_get "$J" "len(d['probes'])")" 1
equals "Work: every one of 20000 calls counted" "$(json_get "$J" "d['probes'][0]['calls']")" 20000
equals "reverted, profiler dormant" "$(json_get "$J" "d['reverted_dormant']")" True
equals "counts final: the profiler flushed before the stop" "$(json_get "$J" "d['counts_final']")" True
expect_exit "status: dormant" 0 "$CLRTAP" agent status -p "$P" --json
equals "status says dormant" "$(json_get "$OUT" "d['state']")" dormant
expect_exit "a new attach is refused with the reason" 22 "$CLRTAP" agent run -p "$P" -d 1
contains "dormant message" "$ERR" "left dormant by earlier ReJIT probes"
stop_fixture "$P"

# --- the same 20,000 calls with arguments and return values --------------
start_fixture steady --rate 20000 --calls 20000 --trigger "$WORK/go1a"
P=$FIX_PID
"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Fixtures.TierTarget::Work' >"$WORK/p1b.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/p1b.out" '^probe .*ReJIT requested' 30 "$RUN"
touch "$WORK/go1a"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
contains "target's results right (args)" "$(cat "$FIX_OUT")" "DONE calls=20000 sum=400000000"
kill -INT "$RUN"
wait "$RUN"
CHECK=$(python3 - "$WORK/p1b.out" <<'PY'
import re, sys
got = [m.group(1) for m in (re.match(r"call Clrtap.Fixtures.TierTarget::Work (\(.*\) -> \S+)  \d+ ns$", l.rstrip("\n"))
       for l in open(sys.argv[1], encoding="utf-8")) if m]
want = [f"({i}) -> {2 * i + 1}" for i in range(20000)]
if got == want:
    print("ok")
else:
    first = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]), None)
    print(f"{len(got)} calls recorded; first difference at {first}")
PY
)
equals "Work: all 20000 calls' argument and return value exact, in order, across tier-up" "$CHECK" ok
stop_fixture "$P"

# --- overloads, nested type, R2R framework method past tier-up -----------
start_fixture probe-targets --calls 600 --interval-ms 1 --trigger "$WORK/go2"
P=$FIX_PID
"$CLRTAP" agent probe -p "$P" 'System.Convert::ToString(int32,int32)' \
	'Clrtap.Fixtures.ProbeTargets::Overloaded' 'Clrtap.Fixtures.Outer+Inner::Nested' \
	'Clrtap.Fixtures.Counter::Increment' --json >"$WORK/p2.json" 2>"$WORK/p2.err" &
RUN=$!
for ((i = 0; i < 200; i++)); do
	"$CLRTAP" agent status -p "$P" --json 2>/dev/null | grep -q '"state":"active"' && break
	sleep 0.1
done
sleep 0.5
touch "$WORK/go2"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
lacks "no result mismatch reported by the fixture" "$(cat "$FIX_OUT")" "mismatch"
kill -INT "$RUN"
wait "$RUN"
J=$(cat "$WORK/p2.json")
calls_of() { json_get "$J" "sorted(p['calls'] for p in d['probes'] if p['method']=='$1')"; }
equals "Convert.ToString(int,int) (ReadyToRun) past tier-up: 600" \
	"$(calls_of 'System.Convert::ToString(int32,int32)')" "[600]"
equals "both overloads: 600 each" "$(calls_of 'Clrtap.Fixtures.ProbeTargets::Overloaded')" "[600, 600]"
equals "nested type's method: 600" "$(calls_of 'Clrtap.Fixtures.Outer+Inner::Nested')" "[600]"
equals "instance method: 600" "$(calls_of 'Clrtap.Fixtures.Counter::Increment')" "[600]"
stop_fixture "$P"

# --- SIGKILL of clrtap mid-run: target finishes right, IL reverted -------
start_fixture steady --rate 4000 --calls 20000 --trigger "$WORK/go3"
P=$FIX_PID
"$CLRTAP" agent probe -p "$P" 'Clrtap.Fixtures.TierTarget::Work' >"$WORK/p3.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/p3.out" '^probe .*ReJIT requested' 30 "$RUN"
touch "$WORK/go3"
sleep 1
kill -KILL "$RUN"
sleep 3
expect_exit "status 3 s after SIGKILL" 0 "$CLRTAP" agent status -p "$P" --json
equals "reverted and dormant 3 s after clrtap was killed" "$(json_get "$OUT" "d['state']")" dormant
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
contains "target finished its work with right results" "$(cat "$FIX_OUT")" "DONE calls=20000 sum=400000000"
stop_fixture "$P"

# --- arguments and return values, every call, across tier-up -------------
start_fixture probe-targets --calls 600 --interval-ms 1 --trigger "$WORK/go4"
P=$FIX_PID
"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Fixtures.ProbeTargets::AddInts' \
	'Clrtap.Fixtures.ProbeTargets::Mix' 'Clrtap.Fixtures.ProbeTargets::StaticEcho' \
	'Clrtap.Fixtures.ProbeTargets::Greet' 'Clrtap.Fixtures.Counter::Increment' \
	'System.Convert::ToString(int32,int32)' >"$WORK/p4.out" 2>"$WORK/p4.err" &
RUN=$!
wait_for_line "$WORK/p4.out" '^probe System.Convert.*ReJIT requested' 30 "$RUN"
sleep 0.5
touch "$WORK/go4"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
kill -INT "$RUN"
wait "$RUN"
CHECK=$(python3 - "$WORK/p4.out" <<'PY'
import re, sys
calls = {}
this_seen = {}
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r"call (\S+) (\(.*\) -> .*?)  \d+ ns$", line.rstrip("\n"))
    if m:
        text = m.group(2)
        t = re.match(r"\(this=" + re.escape(m.group(1).split("::")[0]) + r"@0x([0-9a-f]+)(, |\))", text)
        if t:  # instance methods: the object's address, then the arguments
            this_seen.setdefault(m.group(1), set()).add(int(t.group(1), 16) != 0)
            text = "(" + text[t.end():] if t.group(2) == ", " else "()" + text[t.end():]
        calls.setdefault(m.group(1), []).append(text)
N = 600
want = {
    "Clrtap.Fixtures.ProbeTargets::AddInts": [f"({i}, 1000) -> {i + 1000}" for i in range(N)],
    "Clrtap.Fixtures.ProbeTargets::Mix": [
        f"({1234567890123 + i}, 3.25, {'true' if i % 2 == 0 else 'false'}, 'Z', 200, -1234, 1.5)"
        f" -> {1234567889519 + i + (1 if i % 2 == 0 else 0)}" for i in range(N)],
    "Clrtap.Fixtures.ProbeTargets::StaticEcho": ['("héllo wörld ✓") -> "héllo wörld ✓"'] * N,
    "Clrtap.Fixtures.ProbeTargets::Greet": ['("Zoë") -> "Hello, Zoë"'] * N,
    "Clrtap.Fixtures.Counter::Increment": [f"(7) -> {7 * (i + 1)}" for i in range(N)],
    # CoreLib disables runtime marshalling: its string return is not recorded (and says so)
    "System.Convert::ToString(int32,int32)": [f"({i}, 16) -> ?(not recorded by the ReJIT probe)" for i in range(N)],
}
bad = []
for k, v in want.items():
    got = calls.get(k, [])
    if got != v:
        first = next((j for j in range(min(len(got), len(v))) if got[j] != v[j]), None)
        bad.append(f"{k}: {len(got)} calls; first difference at {first}: "
                   f"{got[first] if first is not None else ''!r} vs {v[first] if first is not None else ''!r}")
for k in ("Clrtap.Fixtures.ProbeTargets::Greet", "Clrtap.Fixtures.Counter::Increment"):
    if this_seen.get(k) != {True}:
        bad.append(f"{k}: this not recorded as a non-zero address")
for k in ("Clrtap.Fixtures.ProbeTargets::AddInts", "Clrtap.Fixtures.ProbeTargets::Mix"):
    if k in this_seen:
        bad.append(f"{k}: static, yet a this was shown")
print("ok" if not bad else "; ".join(bad))
PY
)
equals "every call's this, arguments and return value exact (5 methods x 600, R2R too)" "$CHECK" ok
lacks "no result mismatch reported by the fixture (args)" "$(cat "$FIX_OUT")" "mismatch"
stop_fixture "$P"

# --- a namespaced target (own PID + mount namespace, private /tmp) --------
start_fixture_ns probe-targets --calls 50 --trigger /tmp/go-ns
P=$FIX_PID
"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Fixtures.ProbeTargets::AddInts' >"$WORK/p6.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/p6.out" '^probe .*ReJIT requested' 30 "$RUN"
touch "/proc/$P/root/tmp/go-ns"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
kill -INT "$RUN"
wait "$RUN"
check "namespaced: 50 calls counted" grep -qE '^calls Clrtap.Fixtures.ProbeTargets::AddInts \[0x06[0-9a-f]{6}\]: 50$' "$WORK/p6.out"
check "namespaced: call 49 recorded exactly" grep -qE '^call Clrtap.Fixtures.ProbeTargets::AddInts \(49, 1000\) -> 1049 ' "$WORK/p6.out"
stop_fixture "$P"

# --- clrtap probe --via rejit hands over to the agent ---------------------
start_fixture steady --rate 20000 --calls 3000 --trigger "$WORK/go5"
P=$FIX_PID
"$CLRTAP" probe -p "$P" --via rejit --count -d 5 'Clrtap.Fixtures.TierTarget::Work' \
	>"$WORK/p5.out" 2>"$WORK/p5.err" &
RUN=$!
wait_for_line "$WORK/p5.err" '^clrtap: probe .*ReJIT requested' 30 "$RUN"
touch "$WORK/go5"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
wait "$RUN"
# probe's shape: the summary on stderr as the other mechanisms print it, nothing on stdout with --count
check "probe --via rejit: 3000 calls counted (probe's summary, stderr)" \
	grep -qE '^clrtap: Clrtap.Fixtures.TierTarget::Work \[0x06[0-9a-f]{6}\]: 3000 calls$' "$WORK/p5.err"
check "probe --via rejit: per-kind line" grep -qxF 'clrtap:   [every tier] 3000 calls (rejit)' "$WORK/p5.err"
equals "probe --via rejit --count: stdout empty" "$(wc -c <"$WORK/p5.out")" 0
expect_exit "probe --via bogus" 2 "$CLRTAP" probe -p "$P" --via bogus 'A.B::C'
stop_fixture "$P"

# --- a dormant profiler is re-armed by the next probe ---------------------
PORT=$(free_port)
start_fixture web --port "$PORT"
P=$FIX_PID
for round in 1 2; do
	"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Fixtures.FibonacciProvider::CalculateFibonacciValue' \
		>"$WORK/rw$round.out" 2>&1 &
	RUN=$!
	wait_for_line "$WORK/rw$round.out" '^probe .*ReJIT requested' 30 "$RUN"
	for ((i = 1; i <= round * 3; i++)); do
		curl -sf "http://127.0.0.1:$PORT/api/fibonacci?pos=$i" >/dev/null
	done
	# Stopped at once after the last answer: EventPipe writes the request
	# threads' Calls and the profiler thread's counts out of time order, and
	# flushes them on its own timer; clrtap puts them back in order and has
	# the profiler flush before it stops, so nothing may be missing.
	kill -INT "$RUN"
	wait "$RUN"
done
contains "round 2 reused the dormant profiler" "$(cat "$WORK/rw2.out")" "reusing the dormant clrtap profiler"
check "round 1: 3 calls" grep -qE '^calls .*CalculateFibonacciValue \[0x06[0-9a-f]{6}\]: 3$' "$WORK/rw1.out"
check "round 2: 6 calls" grep -qE '^calls .*CalculateFibonacciValue \[0x06[0-9a-f]{6}\]: 6$' "$WORK/rw2.out"
lacks "round 1: every call named (none before its probe's name was known)" "$(cat "$WORK/rw1.out")" "call #"
lacks "round 2: every call named" "$(cat "$WORK/rw2.out")" "call #"
equals "round 2: the six calls in the order they were made" \
	"$(sed -nE 's/^call .*CalculateFibonacciValue \(this=[^,]+, ([0-9]+)\) -> ([0-9]+) .*/\1:\2/p' "$WORK/rw2.out" | tr '\n' ' ')" \
	"1:1 2:2 3:3 4:5 5:8 6:13 "
check "round 2: fib(6) = 13 recorded" grep -qE '^call .*CalculateFibonacciValue \(this=Clrtap.Fixtures.FibonacciProvider@0x[0-9a-f]+, 6\) -> 13 ' "$WORK/rw2.out"
equals "target answers right afterwards" "$(curl -sf "http://127.0.0.1:$PORT/api/fibonacci?pos=10")" 89
stop_fixture "$P"

# --- bad input -------------------------------------------------------------
start_fixture idle
expect_exit "no method named" 2 "$CLRTAP" agent probe -p "$FIX_PID"
expect_exit "malformed method" 2 "$CLRTAP" agent probe -p "$FIX_PID" 'NoColons'
expect_exit "unknown parameter type" 2 "$CLRTAP" agent probe -p "$FIX_PID" 'A.B::C(int33)'
expect_exit "notification mode refused for probes" 2 "$CLRTAP" agent probe -p "$FIX_PID" \
	--mode notification 'A.B::C'
finish
