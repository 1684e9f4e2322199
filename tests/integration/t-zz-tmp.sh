#!/usr/bin/env bash
# clrtap analyze and clrtap doctor on fixtures with known answers
# (docs/fixtures.md): exception type and count (live and from a .nettrace
# file), the allocating type's share, the induced GC count, the hot method's
# share, blocked threads grouped by method, lock contention, thread-pool
# starvation with its blocking call, leaks, duplicated strings, the memory
# breakdown adding up to RSS and naming native growth; doctor ranking the
# pathology first and calling an idle process unalarming; errors.
. "$(dirname "$0")/lib.sh"

# py FILE 'a = ...; EXPR': d is the JSON document in FILE; fails (and shows it) when EXPR is false.
py() {
	python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
*pre, last = sys.argv[2].split("; ")
for st in pre:
    exec(st)
ok = eval(last)
if not ok:
    print(json.dumps(d)[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
PYEOF
}

# offline_html FILE: a self-contained page: no external URL, no resource loaded
offline_html() {
	grep -q '^<!DOCTYPE html>' "$1" && ! grep -Eqi 'https?://|src=|href=|@import|url\(' "$1"
}

# in_background_then_trigger TRIGGER CMD...: runs CMD (stdout to $WORK/bg.out),
# creates TRIGGER once the session is surely up, waits for CMD.
in_background_then_trigger() {
	local trig=$1
	shift
	"$@" >"$WORK/bg.out" 2>"$WORK/bg.err" &
	local p=$!
	sleep 1.5
	touch "$trig"
	wait "$p"
	RC=$?
}

# --- exceptions: exact type and count, live and offline ---
TRIG=$WORK/trig-exc
start_fixture exceptions --count 137 --trigger "$TRIG"
P=$FIX_PID
"$CLRTAP" trace collect -p "$P" --profile exceptions -d 4 -o "$WORK/exc.nettrace" >/dev/null 2>&1 &
TC=$!
in_background_then_trigger "$TRIG" "$CLRTAP" analyze -p "$P" exceptions -d 3 -o "$WORK/exc.json"
equals "exceptions exit" "$RC" 0
check "exceptions: 137 Clrtap.Fixtures.FixtureException, one message" py "$WORK/exc.json" \
	'd["result"]["total"] == 137 and d["result"]["types"] == [{"type": "Clrtap.Fixtures.FixtureException", "count": 137, "messages": 1}]'
check "exceptions: the stack names Thrower::ThrowOne" py "$WORK/exc.json" \
	'"Clrtap.Fixtures.Thrower::ThrowOne" in d["result"]["groups"][0]["stack"] and d["result"]["groups"][0]["message"] == "clrtap fixture exception"'
check "exceptions: says what it cannot see and what next" py "$WORK/exc.json" \
	'len(d["not_seen"]) >= 1 and d["next"][0].startswith("clrtap ") and d["duration_s"] > 2'
wait "$TC"
expect_exit "offline analyze of the collected trace" 0 "$CLRTAP" analyze "$WORK/exc.nettrace" exceptions --json
echo "$OUT" >"$WORK/exc-off.json"
check "offline: the same 137 exceptions" py "$WORK/exc-off.json" \
	'd["file"].endswith("exc.nettrace") and d["result"]["types"][0]["count"] == 137'
expect_exit "memory cannot run on a file" 2 "$CLRTAP" analyze "$WORK/exc.nettrace" memory
expect_exit "exceptions HTML report" 0 "$CLRTAP" analyze "$WORK/exc.nettrace" exceptions -o "$WORK/exc.html"
check "exceptions HTML: offline, the type and count in a table row" offline_html "$WORK/exc.html"
contains "exceptions HTML: 137 FixtureException" "$(cat "$WORK/exc.html")" "<tr><td>137</td><td>Clrtap.Fixtures.FixtureException</td><td>1</td></tr>"
stop_fixture "$P"

# --- deadlock: a cycle that forms during the session, live and offline ---
# tid_of PID NAME: the OS id of the thread called NAME
tid_of() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && basename "$t"
	done
}
TRIG=$WORK/trig-dl
start_fixture deadlock-late --trigger "$TRIG"
P=$FIX_PID
"$CLRTAP" trace collect -p "$P" --providers 'Microsoft-Windows-DotNETRuntime:0x4018:4' -d 4 -o "$WORK/dl.nettrace" >/dev/null 2>&1 &
TC=$!
in_background_then_trigger "$TRIG" "$CLRTAP" analyze -p "$P" deadlock -d 3 --json
equals "deadlock exit" "$RC" 0
cp "$WORK/bg.out" "$WORK/dl.json"
A=$(tid_of "$P" cycle-a)
B=$(tid_of "$P" cycle-b)
check "deadlock: one cycle, cycle-a ($A) and cycle-b ($B) each held by the other, both lock sites" py "$WORK/dl.json" \
	"r = d['result']; c = r['cycles'][0]['threads']; t = {x['tid']: x for x in c}; r['deadlocks'] == 1 and len(c) == 2 and t[$A]['held_by'] == $B and t[$B]['held_by'] == $A and t[$A]['site'] == 'Clrtap.Fixtures.LockCycle::TakeFirstThenSecond' and t[$B]['site'] == 'Clrtap.Fixtures.LockCycle::TakeSecondThenFirst' and t[$A]['name'] == 'cycle-a' and t[$A]['lock_id'] != t[$B]['lock_id'] and 'System.Threading.Monitor::Enter' in t[$A]['stack']"
wait "$TC"
expect_exit "deadlock offline from a trace collect file" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock --json
echo "$OUT" >"$WORK/dl-off.json"
check "deadlock offline: the same cycle of $A and $B" py "$WORK/dl-off.json" \
	"c = d['result']['cycles'][0]['threads']; d['result']['deadlocks'] == 1 and sorted(x['tid'] for x in c) == sorted([$A, $B]) and {x['site'] for x in c} == {'Clrtap.Fixtures.LockCycle::TakeFirstThenSecond', 'Clrtap.Fixtures.LockCycle::TakeSecondThenFirst'}"
expect_exit "deadlock text" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock
contains "deadlock text: the cycle heading" "$OUT" "### Deadlock 1: 2 threads wait on each other's locks"
contains "deadlock text: cycle-a's wait, held by cycle-b" "$OUT" "- thread $A waits in Clrtap.Fixtures.LockCycle::TakeFirstThenSecond for lock"
expect_exit "deadlock HTML" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock -o "$WORK/dl.html"
check "deadlock HTML: offline" offline_html "$WORK/dl.html"
contains "deadlock HTML: the cycle and cycle-b's site" "$(cat "$WORK/dl.html")" "<h3>Deadlock 1: 2 threads wait on each other&#39;s locks</h3>"
contains "deadlock HTML: thread $B waits in TakeSecondThenFirst" "$(cat "$WORK/dl.html")" "<li>thread $B waits in Clrtap.Fixtures.LockCycle::TakeSecondThenFirst for lock"
stop_fixture "$P"
# a deadlock that formed before the session: no events, the stacks show both threads in Monitor enter
start_fixture deadlock
expect_exit "deadlock before the session" 0 "$CLRTAP" analyze -p "$FIX_PID" deadlock -d 1 --json
echo "$OUT" >"$WORK/dl-old.json"
check "deadlock before the session: suspected, ThreadA and ThreadB blocked in Monitor enter, no proven cycle" py "$WORK/dl-old.json" \
	"r = d['result']; g = {x['method']: x['threads'] for x in r['blocked_before']}; r['deadlocks'] == 0 and r['suspected'] and g == {'Clrtap.Fixtures.Deadlock::ThreadA': 1, 'Clrtap.Fixtures.Deadlock::ThreadB': 1}"
stop_fixture "$FIX_PID"
# heavy contention without a deadlock: none
start_fixture contention --threads 4
expect_exit "deadlock on contention" 0 "$CLRTAP" analyze -p "$FIX_PID" deadlock -d 2 --json
echo "$OUT" >"$WORK/dl-cont.json"
check "contention is no deadlock: 0 cycles, nothing suspected, waits seen" py "$WORK/dl-cont.json" \
	"r = d['result']; r['deadlocks'] == 0 and not r['suspected'] and r['waits'] > 10 and r['waits_with_owner'] == r['waits']"
stop_fixture "$FIX_PID"

# --- hostile names: escaped on the terminal, exact in JSON ---
TRIG=$WORK/trig-hostile
start_fixture hostile-strings --count 3 --trigger "$TRIG"
in_background_then_trigger "$TRIG" "$CLRTAP" analyze -p "$FIX_PID" exceptions -d 3
lacks "hostile: no raw ESC in the text report" "$(cat "$WORK/bg.out")" $'\e'
contains "hostile: the type is shown (escaped)" "$(cat "$WORK/bg.out")" "Clrtap.Fixtures.HostileException"
TRIG2=$WORK/trig-hostile2
rm -f "$TRIG2"
stop_fixture "$FIX_PID"
start_fixture hostile-strings --count 3 --trigger "$TRIG2"
in_background_then_trigger "$TRIG2" "$CLRTAP" analyze -p "$FIX_PID" exceptions -d 3 --json
cp "$WORK/bg.out" "$WORK/hostile.json"
check "hostile: the JSON keeps the exact message, 3 thrown" py "$WORK/hostile.json" \
	'g = d["result"]["groups"][0]; g["count"] == 3 and g["message"].startswith("boom\x1b[31m \"q\" \\ a\r\nb\u2028c")'
stop_fixture "$FIX_PID"

finish
