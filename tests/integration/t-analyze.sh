#!/usr/bin/env bash
# clrtap analyze and clrtap doctor on fixtures with known answers
# (docs/fixtures.md): exception type and count (live and from a .nettrace
# file), the allocating type's share, the induced GC count, the hot method's
# share, blocked threads grouped by method, lock contention, thread-pool
# starvation with its blocking call, leaks, duplicated strings, the memory
# breakdown adding up to RSS and naming native growth; doctor ranking the
# pathology first and calling an idle process unalarming; errors.
. "$(dirname "$0")/lib.sh"
# test-run: alone

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
# (the flame graph's script names the SVG namespace, a name, never fetched)
offline_html() {
	grep -q '^<!DOCTYPE html>' "$1" &&
		! sed 's#http://www\.w3\.org/2000/svg##g' "$1" |
			grep -Eqi 'https?://|src=|href=|@import|url\(|fetch\(|XMLHttpRequest'
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
# 137 failures, each thrown in Thrower::ThrowOneAsync and awaited through 2
# async frames before it is caught: 137 first throws and exactly 274 rethrows
# (each await passes the same exception on), counted apart.
TRIG=$WORK/trig-exc
start_fixture exceptions --count 137 --rethrows 2 --trigger "$TRIG"
P=$FIX_PID
"$CLRTAP" trace collect -p "$P" --profile exceptions -d 4 -o "$WORK/exc.nettrace" >/dev/null 2>&1 &
TC=$!
in_background_then_trigger "$TRIG" "$CLRTAP" analyze -p "$P" exceptions -d 3 -o "$WORK/exc.json"
equals "exceptions exit" "$RC" 0
check "exceptions: 137 first throws of Clrtap.Fixtures.FixtureException, 274 rethrown apart, one message" py "$WORK/exc.json" \
	'd["result"]["total"] == 411 and d["result"]["first"] == 137 and d["result"]["rethrown"] == 274 and d["result"]["types"] == [{"type": "Clrtap.Fixtures.FixtureException", "count": 411, "first": 137, "rethrown": 274, "messages": 1}]'
check "exceptions: the stack names Thrower::ThrowOneAsync" py "$WORK/exc.json" \
	'any(f.startswith("Clrtap.Fixtures.Thrower::ThrowOneAsync [async]") for f in d["result"]["groups"][0]["stack"]) and d["result"]["groups"][0]["message"] == "clrtap fixture exception"'
check "exceptions: says what it cannot see and what next" py "$WORK/exc.json" \
	'len(d["not_seen"]) >= 1 and d["next"][0].startswith("clrtap ") and d["duration_s"] > 2'
wait "$TC"
expect_exit "offline analyze of the collected trace" 0 "$CLRTAP" analyze "$WORK/exc.nettrace" exceptions --json
echo "$OUT" >"$WORK/exc-off.json"
check "offline: the same 137 first throws and 274 rethrows" py "$WORK/exc-off.json" \
	'd["file"].endswith("exc.nettrace") and [d["result"]["types"][0][k] for k in ("count", "first", "rethrown")] == [411, 137, 274]'
expect_exit "memory cannot run on a file" 2 "$CLRTAP" analyze "$WORK/exc.nettrace" memory
expect_exit "exceptions HTML report" 0 "$CLRTAP" analyze "$WORK/exc.nettrace" exceptions -o "$WORK/exc.html"
check "exceptions HTML: offline, the type and count in a table row" offline_html "$WORK/exc.html"
contains "exceptions HTML: 411 FixtureException, 137 first throws, 274 rethrown" "$(cat "$WORK/exc.html")" "<tr><td>411</td><td>137</td><td>274</td><td>Clrtap.Fixtures.FixtureException</td><td>1</td></tr>"
expect_exit "trace report of the same trace" 0 "$CLRTAP" trace report "$WORK/exc.nettrace"
contains "trace report: the split, in words" "$OUT" "137 first throws, 274 rethrown"
contains "trace report: the throw site counts the throws only" "$OUT" "(137 thrown here)"
stop_fixture "$P"

# --- doctor ranks exceptions first on a throwing process ---
TRIG=$WORK/trig-exc2
start_fixture exceptions --count 3000 --trigger "$TRIG"
in_background_then_trigger "$TRIG" "$CLRTAP" doctor -p "$FIX_PID" -d 3 --json
cp "$WORK/bg.out" "$WORK/doc-exc.json"
check "doctor: exceptions ranked first, with the next command" py "$WORK/doc-exc.json" \
	'd["findings"][0]["analyzer"] == "exceptions" and "FixtureException" in d["findings"][0]["evidence"] and d["findings"][0]["next"].startswith("clrtap analyze -p ")'
stop_fixture "$FIX_PID"

# --- allocations: AllocTarget above 90% ---
start_fixture alloc
expect_exit "allocations" 0 "$CLRTAP" analyze -p "$FIX_PID" allocations -d 2 --json
echo "$OUT" >"$WORK/alloc.json"
check "allocations: Clrtap.Fixtures.AllocTarget > 90%" py "$WORK/alloc.json" \
	'd["result"]["types"][0]["type"] == "Clrtap.Fixtures.AllocTarget" and d["result"]["types"][0]["share_pct"] > 90'
stop_fixture "$FIX_PID"

# --- pauses: the induced GCs ---
TRIG=$WORK/trig-gc
start_fixture gc --count 6 --trigger "$TRIG"
in_background_then_trigger "$TRIG" "$CLRTAP" analyze -p "$FIX_PID" pauses -d 3 --json
cp "$WORK/bg.out" "$WORK/gc.json"
check "pauses: 6 GCs, 6 induced gen2, 6 pauses with quantiles" py "$WORK/gc.json" \
	'r = d["result"]; r["gcs"] == 6 and r["induced"] == 6 and r["by_gen"][2] == 6 and r["pauses"] == 6 and 0 < r["p50_ms"] <= r["max_ms"]'
stop_fixture "$FIX_PID"

# --- hotpaths and doctor on cpu-split: HotA 75% +- 5 ---
start_fixture cpu-split
expect_exit "hotpaths" 0 "$CLRTAP" analyze -p "$FIX_PID" hotpaths -d 3 --json
echo "$OUT" >"$WORK/cpu.json"
check "hotpaths: HotA first at 75% +- 5 of the managed samples" py "$WORK/cpu.json" \
	'm = d["result"]["methods"]; m[0]["method"] == "Clrtap.Fixtures.CpuSplit::HotA" and 70 <= m[0]["self_pct"] <= 80'
expect_exit "hotpaths HTML (the flame graph page)" 0 "$CLRTAP" analyze -p "$FIX_PID" hotpaths -d 2 -o "$WORK/cpu.html"
check "hotpaths HTML: offline" offline_html "$WORK/cpu.html"
contains "hotpaths HTML: the flame graph with the report naming HotA" "$(cat "$WORK/cpu.html")" "id=\"flamedata\""
contains "hotpaths HTML: HotA" "$(cat "$WORK/cpu.html")" "Clrtap.Fixtures.CpuSplit::HotA"
expect_exit "doctor on cpu-split" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 2
contains "doctor: CPU ranked first" "$(echo "$OUT" | sed -n 3,4p)" "1. [warning] CPU busy"
contains "doctor: names HotA" "$OUT" "CpuSplit::HotA"
stop_fixture "$FIX_PID"

# --- stacks: blocked threads grouped by method ---
start_fixture blocked
"$CLRTAP" trace collect -p "$FIX_PID" --providers 'Microsoft-DotNETCore-SampleProfiler,Microsoft-Windows-DotNETRuntime:0x18:4' -d 1 -o "$WORK/blocked.nettrace" >/dev/null 2>&1 &
TC=$!
expect_exit "stacks" 0 "$CLRTAP" analyze -p "$FIX_PID" stacks -d 1 --json
echo "$OUT" >"$WORK/blocked.json"
wait "$TC"
expect_exit "stacks offline" 0 "$CLRTAP" analyze "$WORK/blocked.nettrace" stacks --json
echo "$OUT" >"$WORK/blocked-off.json"
check "stacks offline: 5 in Blocker::WaitHere, 1 in OtherBlocker::WaitElsewhere" py "$WORK/blocked-off.json" \
	'g = {x["method"]: x["threads"] for x in d["result"]["groups"]}; g.get("Clrtap.Fixtures.Blocker::WaitHere") == 5 and g.get("Clrtap.Fixtures.OtherBlocker::WaitElsewhere") == 1' 
check "stacks: 5 in Blocker::WaitHere, 1 in OtherBlocker::WaitElsewhere" py "$WORK/blocked.json" \
	'g = {x["method"]: x["threads"] for x in d["result"]["groups"]}; g.get("Clrtap.Fixtures.Blocker::WaitHere") == 5 and g.get("Clrtap.Fixtures.OtherBlocker::WaitElsewhere") == 1'
stop_fixture "$FIX_PID"

# --- contention (live, and offline from a trace collect file) ---
start_fixture contention --threads 3
"$CLRTAP" trace collect -p "$FIX_PID" --providers 'Microsoft-Windows-DotNETRuntime:0x4018:4' -d 2 -o "$WORK/cont.nettrace" >/dev/null 2>&1 &
TC=$!
expect_exit "contention" 0 "$CLRTAP" analyze -p "$FIX_PID" contention -d 2 --json
echo "$OUT" >"$WORK/cont.json"
wait "$TC"
expect_exit "contention offline" 0 "$CLRTAP" analyze "$WORK/cont.nettrace" contention --json
echo "$OUT" >"$WORK/cont-off.json"
check "contention offline: one lock, first waiter in Contention::Contend" py "$WORK/cont-off.json" \
	'r = d["result"]; len(r["locks"]) == 1 and r["waits"] > 10 and r["locks"][0]["site"] == "Clrtap.Fixtures.Contention::Contend"' 
check "contention: waits seen, Contention::Contend on the top stack" py "$WORK/cont.json" \
	'd["result"]["waits"] > 10 and "Clrtap.Fixtures.Contention::Contend" in d["result"]["sites"][0]["stack"]'
check "contention: exactly one lock (Contention.Gate), every wait on it, first waiter in Contention::Contend" py "$WORK/cont.json" \
	'r = d["result"]; l = r["locks"]; len(l) == 1 and l[0]["waits"] == r["waits"] and l[0]["site"] == "Clrtap.Fixtures.Contention::Contend" and 0 < l[0]["total_ms"] <= r["total_ms"] + 0.001'
stop_fixture "$FIX_PID"

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
	"r = d['result']; c = r['cycles'][0]['threads']; t = {x['tid']: x for x in c}; r['deadlocks'] == 1 and len(c) == 2 and t[$A]['held_by'] == $B and t[$B]['held_by'] == $A and t[$A]['site'] == 'Clrtap.Fixtures.Deadlock::ThreadA' and t[$B]['site'] == 'Clrtap.Fixtures.Deadlock::ThreadB' and t[$A]['name'] == 'cycle-a' and t[$A]['lock_id'] != t[$B]['lock_id'] and 'System.Threading.Monitor::Enter' in t[$A]['stack']"
wait "$TC"
expect_exit "deadlock offline from a trace collect file" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock --json
echo "$OUT" >"$WORK/dl-off.json"
check "deadlock offline: the same cycle of $A and $B" py "$WORK/dl-off.json" \
	"c = d['result']['cycles'][0]['threads']; d['result']['deadlocks'] == 1 and sorted(x['tid'] for x in c) == sorted([$A, $B]) and {x['site'] for x in c} == {'Clrtap.Fixtures.Deadlock::ThreadA', 'Clrtap.Fixtures.Deadlock::ThreadB'}"
expect_exit "deadlock text" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock
contains "deadlock text: the cycle heading" "$OUT" "### Deadlock 1: 2 threads wait on each other's locks"
contains "deadlock text: cycle-a's wait, held by cycle-b" "$OUT" "- thread $A waits in Clrtap.Fixtures.Deadlock::ThreadA for lock"
expect_exit "deadlock HTML" 0 "$CLRTAP" analyze "$WORK/dl.nettrace" deadlock -o "$WORK/dl.html"
check "deadlock HTML: offline" offline_html "$WORK/dl.html"
contains "deadlock HTML: the cycle and cycle-b's site" "$(cat "$WORK/dl.html")" "<h3>Deadlock 1: 2 threads wait on each other&#39;s locks</h3>"
contains "deadlock HTML: thread $B waits in Deadlock::ThreadB" "$(cat "$WORK/dl.html")" "<li>thread $B waits in Clrtap.Fixtures.Deadlock::ThreadB for lock"
stop_fixture "$P"
# doctor ranks a deadlock that forms while it watches first (critical)
TRIG=$WORK/trig-dl-doc
start_fixture deadlock-late --trigger "$TRIG"
in_background_then_trigger "$TRIG" "$CLRTAP" doctor -p "$FIX_PID" -d 3 --json
cp "$WORK/bg.out" "$WORK/doc-dl.json"
check "doctor: the deadlock ranked first, critical, both sites named" py "$WORK/doc-dl.json" \
	'x = d["findings"][0]; x["analyzer"] == "deadlock" and x["severity"] == "critical" and "Deadlock::ThreadA" in x["evidence"] and "Deadlock::ThreadB" in x["evidence"] and d["alarming"]'
stop_fixture "$FIX_PID"
# a deadlock that formed before the session: no events, the stacks show both threads in Monitor enter
start_fixture deadlock
expect_exit "doctor on a deadlock older than the session" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 2 --json
echo "$OUT" >"$WORK/doc-dl-old.json"
check "doctor: the likely deadlock ranked first (warning), ThreadA and ThreadB" py "$WORK/doc-dl-old.json" \
	'x = d["findings"][0]; x["analyzer"] == "deadlock" and x["severity"] == "warning" and "Deadlock::ThreadA" in x["evidence"] and "Deadlock::ThreadB" in x["evidence"]'
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

# --- memory: adds up to RSS; native growth is native ---
start_fixture native-grow --mb 200
wait_for_line "$FIX_OUT" '^DONE ' 30 "$FIX_PID"
expect_exit "memory" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 1.5 --json
echo "$OUT" >"$WORK/mem.json"
VMRSS=$(awk '/^VmRSS:/ { print $2 * 1024 }' /proc/"$FIX_PID"/status)
check "memory: kinds add up to the total, the total within 2% of RSS" py "$WORK/mem.json" \
	"r = d['result']; sum(k['rss_bytes'] for k in r['kinds']) == r['total_bytes'] and abs(r['total_bytes'] - $VMRSS) <= 0.02 * $VMRSS"
check "memory: 200 MiB of AllocHGlobal is native, not GC heap" py "$WORK/mem.json" \
	'r = d["result"]; k = {x["kind"]: x["rss_bytes"] for x in r["kinds"]}; r["mostly"] == "native" and k["native_heap"] + k["other_anon"] >= 190 << 20 and k["gc_heap"] < 20 << 20'
check "memory: the code heaps split into executable and writable views; the executable views holding JIT'd methods are among them" py "$WORK/mem.json" \
	'r = d["result"]; c = r["code_heaps"]; k = {x["kind"]: x["rss_bytes"] for x in r["kinds"]}; c["exec_bytes"] + c["writable_bytes"] == k["code_heaps"] and c["jit_methods"] >= 50 and 0 < c["jit_views_bytes"] <= c["exec_bytes"] and c["jit_code_bytes"] > 0'
check "memory: 200 MiB allocated before the run and held: no kind grew over it" py "$WORK/mem.json" \
	'g = d["result"]["growth"]; g["readings"] >= 2 and g["grew"] is None'
check "memory: the runtime told the generation sizes (all five counters)" py "$WORK/mem.json" \
	'g = d["result"]["gc_generations"]; all(g[x] is not None for x in ("gen0", "gen1", "gen2", "loh", "poh", "committed"))'
expect_exit "memory text" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 1.5 -o "$WORK/mem.md"
contains "memory report: one sentence on where memory is" "$(cat "$WORK/mem.md")" "Most resident memory is native"
expect_exit "memory HTML" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 1.5 -o "$WORK/mem.html"
check "memory HTML: offline" offline_html "$WORK/mem.html"
contains "memory HTML: the sentence" "$(cat "$WORK/mem.html")" "Most resident memory is native"
stop_fixture "$FIX_PID"
# a growing GC heap (the leak fixture at 100000 items/s: about 100 MB/s retained) says GC heap
start_fixture leak --per-second 100000
sleep 2.5
expect_exit "memory on a growing GC heap" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 1.5 --json
echo "$OUT" >"$WORK/mem-gc.json"
check "memory: a growing GC heap is GC heap" py "$WORK/mem-gc.json" \
	'r = d["result"]; k = {x["kind"]: x["rss_bytes"] for x in r["kinds"]}; r["mostly"] == "gc_heap" and k["gc_heap"] >= 100 << 20'
check "memory: the kind that grew over the 1.5 s is the GC heap" py "$WORK/mem-gc.json" \
	'd["result"]["growth"]["grew"] == "gc_heap"'
check "memory: each generation's first and last counter value over the session, gen2 not shrinking under a leak" py "$WORK/mem-gc.json" \
	'g = d["result"]["growth"]["gc_generations"]; all(g[x] is not None for x in ("gen0", "gen1", "gen2", "loh", "poh")) and g["gen2"]["last_bytes"] >= g["gen2"]["first_bytes"]'
check "memory: the runtime's generations hold the growth (gen1 + gen2 >= 50 MiB, GC committed >= that)" py "$WORK/mem-gc.json" \
	'g = d["result"]["gc_generations"]; g["gen1"] + g["gen2"] >= 50 << 20 and g["committed"] >= g["gen1"] + g["gen2"]'
stop_fixture "$FIX_PID"

# --- doctor on idle: nothing alarming ---
start_fixture idle
expect_exit "doctor on idle" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 2 --json
echo "$OUT" >"$WORK/idle.json"
check "doctor idle: nothing alarming, memory reported" py "$WORK/idle.json" \
	'not d["alarming"] and all(f["severity"] in ("info", "notice") for f in d["findings"]) and any(f["analyzer"] == "memory" for f in d["findings"])'
expect_exit "doctor idle text" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 1
contains "doctor idle text says so" "$OUT" "Nothing alarming."
expect_exit "threadpool on idle" 0 "$CLRTAP" analyze -p "$FIX_PID" threadpool -d 2 --json
echo "$OUT" >"$WORK/tp-idle.json"
check "threadpool idle: no starvation" py "$WORK/tp-idle.json" 'not d["result"]["starvation"]'

IDLE=$FIX_PID

# --- strings: the duplicated value and its exact count (a heap snapshot) ---
start_fixture strings --count 321
wait_for_line "$FIX_OUT" '^DONE ' 30 "$FIX_PID"
expect_exit "strings" 0 "$CLRTAP" analyze -p "$FIX_PID" strings --json
echo "$OUT" >"$WORK/strings.json"
check "strings: duplicated-string-value x321 first" py "$WORK/strings.json" \
	'x = d["result"]["duplicates"][0]; x["value"] == "duplicated-string-value" and x["copies"] == 321 and x["chars"] == 23'
expect_exit "strings HTML" 0 "$CLRTAP" analyze -p "$FIX_PID" strings -o "$WORK/strings.html"
check "strings HTML: offline" offline_html "$WORK/strings.html"
contains "strings HTML: the value x321" "$(cat "$WORK/strings.html")" "<tr><td>321</td>"
contains "strings HTML: the value" "$(cat "$WORK/strings.html")" "duplicated-string-value</td></tr>"
expect_exit "strings cannot run on a file" 2 "$CLRTAP" analyze "$WORK/exc.nettrace" strings
stop_fixture "$FIX_PID"

# --- leaks: the leaking type first ---
start_fixture leak
expect_exit "leaks" 0 "$CLRTAP" analyze -p "$FIX_PID" leaks -d 2 --json
echo "$OUT" >"$WORK/leaks.json"
check "leaks: Clrtap.Fixtures.LeakedItem grows first, 3 snapshots" py "$WORK/leaks.json" \
	'x = d["result"]["growing"][0]; d["result"]["snapshots"] == 3 and x["type"] == "Clrtap.Fixtures.LeakedItem" and x["count"][0] < x["count"][1] < x["count"][2]'
check "leaks: the one leak comparison (gcdump watch's): the leaking type is held by no other growing type" py "$WORK/leaks.json" \
	'x = d["result"]["growing"][0]; "held_by" in x and x["held_by"] is None'
expect_exit "survivors" 0 "$CLRTAP" analyze -p "$FIX_PID" survivors --json
echo "$OUT" >"$WORK/surv.json"
check "survivors: the List<LeakedItem> retains the most, LeakedItem in the top 3" py "$WORK/surv.json" \
	't = d["result"]["types"]; t[0]["type"] == "System.Collections.Generic.List<Clrtap.Fixtures.LeakedItem>" and "Clrtap.Fixtures.LeakedItem" in [x["type"] for x in t[:3]]'
stop_fixture "$FIX_PID"

# --- threadpool: sync-over-async starvation named, with the blocking call ---
start_fixture starve --items 100
sleep 1
expect_exit "threadpool" 0 "$CLRTAP" analyze -p "$FIX_PID" threadpool -d 3 --json
echo "$OUT" >"$WORK/tp.json"
check "threadpool: starvation, workers blocked in Starver::BlockOnAsync calling Task::Wait" py "$WORK/tp.json" \
	'r = d["result"]; b = r["blocked"][0]; r["starvation"] and r["queue_max"] >= 10 and b["method"] == "Clrtap.Fixtures.Starver::BlockOnAsync" and b["calling"] == "System.Threading.Tasks.Task::Wait"'
expect_exit "doctor on starve" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 3 --json
echo "$OUT" >"$WORK/doc-tp.json"
check "doctor: thread pool ranked first, naming BlockOnAsync" py "$WORK/doc-tp.json" \
	'x = d["findings"][0]; x["analyzer"] == "threadpool" and x["severity"] == "warning" and "Starver::BlockOnAsync" in x["evidence"]'
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

# --- a target that exits mid-analysis: what came before, exit 9, said so ---
start_fixture cpu-split
(sleep 1.2; kill -KILL "$FIX_PID") &
expect_exit "target killed mid-analysis" 9 "$CLRTAP" analyze -p "$FIX_PID" hotpaths -d 4 --json
echo "$OUT" >"$WORK/killed.json"
check "killed: the report says partial and why" py "$WORK/killed.json" \
	'd["partial"] and any("went away" in n for n in d["not_seen"])'
contains "killed: a warning on stderr" "$ERR" "went away"
TRIG=$WORK/trig-dl-kill
start_fixture deadlock-late --trigger "$TRIG"
P=$FIX_PID
(sleep 1.5; touch "$TRIG"; sleep 1; kill -KILL "$P") &
expect_exit "deadlock: target killed mid-analysis" 9 "$CLRTAP" analyze -p "$P" deadlock -d 5 --json
echo "$OUT" >"$WORK/dl-killed.json"
check "deadlock killed: partial, and the cycle that formed before is still reported" py "$WORK/dl-killed.json" \
	'd["partial"] and d["result"]["deadlocks"] == 1' 

# --- a namespaced fixture ("container") ---
start_fixture_ns blocked
expect_exit "namespaced: stacks" 0 "$CLRTAP" analyze -p "$FIX_PID" stacks -d 1 --json
echo "$OUT" >"$WORK/ns-blocked.json"
check "namespaced: 5 threads in Blocker::WaitHere" py "$WORK/ns-blocked.json" \
	'g = {x["method"]: x["threads"] for x in d["result"]["groups"]}; g.get("Clrtap.Fixtures.Blocker::WaitHere") == 5'
expect_exit "namespaced: memory" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 1.5 --json
echo "$OUT" >"$WORK/ns-mem.json"
VMRSS=$(awk '/^VmRSS:/ { print $2 * 1024 }' /proc/"$FIX_PID"/status)
check "namespaced: memory within 2% of RSS" py "$WORK/ns-mem.json" \
	"abs(d['result']['total_bytes'] - $VMRSS) <= 0.02 * $VMRSS"
stop_fixture "$FIX_PID"
start_fixture_ns deadlock
expect_exit "namespaced: deadlock" 0 "$CLRTAP" analyze -p "$FIX_PID" deadlock -d 1 --json
echo "$OUT" >"$WORK/ns-dl.json"
check "namespaced: the deadlocked ThreadA and ThreadB found in Monitor enter" py "$WORK/ns-dl.json" \
	"r = d['result']; g = {x['method']: x['threads'] for x in r['blocked_before']}; r['suspected'] and g == {'Clrtap.Fixtures.Deadlock::ThreadA': 1, 'Clrtap.Fixtures.Deadlock::ThreadB': 1}"
stop_fixture "$FIX_PID"

# --- errors ---
expect_exit "leaks -d 0 is a usage error (it compares snapshots over -d)" 2 "$CLRTAP" analyze -p "$IDLE" leaks -d 0
contains "leaks -d 0: says why" "$ERR" "it needs -d > 0"
sleep 30 &
NOTNET=$!
KILL_PIDS+=("$NOTNET")
DEAD=$(sh -c 'echo $$')
expect_exit "analyze dead pid" 3 "$CLRTAP" analyze -p "$DEAD" exceptions -d 1
expect_exit "doctor dead pid" 3 "$CLRTAP" doctor -p "$DEAD" -d 1
expect_exit "analyze non-.NET pid" 4 "$CLRTAP" analyze -p "$NOTNET" pauses -d 1
expect_exit "deadlock dead pid" 3 "$CLRTAP" analyze -p "$DEAD" deadlock -d 1
expect_exit "deadlock non-.NET pid" 4 "$CLRTAP" analyze -p "$NOTNET" deadlock -d 1
expect_exit "doctor non-.NET pid" 4 "$CLRTAP" doctor -p "$NOTNET" -d 1
expect_exit "unknown analyzer" 2 "$CLRTAP" analyze -p "$IDLE" nosuch
expect_exit "no analyzer" 2 "$CLRTAP" analyze -p "$IDLE"
printf 'not a trace' >"$WORK/bad.nettrace"
expect_exit "a file that is not a trace" 8 "$CLRTAP" analyze "$WORK/bad.nettrace" exceptions
expect_exit "--list" 0 "$CLRTAP" analyze --list
contains "--list names memory" "$OUT" "memory"
stop_fixture "$IDLE"

finish
