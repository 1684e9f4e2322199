#!/usr/bin/env bash
# clrtap gcdump against real fixtures with known heaps (sample heap, sample strings):
#  - leak: exactly N HeapLeakItem (32 bytes each), each retaining its own
#    32-byte HeapLeakPayload: retained = N x 64; the path goes from the static
#    root through List<HeapLeakItem> and its array to the item;
#  - dominator: the hand-computed retained sizes (a spanning tree would give
#    DomLeft 96);
#  - strings: the exact duplicated value and its count;
#  - watch / diff on a leak at a known rate with churn: only HeapLeakItem grows
#    (its payload is listed as held by it); the churned types do not;
#  - type counts and bytes equal to what TraceEvent's parsers read from the
#    same heap session (collect --nettrace; tests/fixtures/techeck --heap);
#  - and to what dotnet-gcdump's own graph reader makes of that session
#    (convert + report; skipped when build/tools/dotnet-gcdump is missing);
#  - Server GC with two GC heaps (the events of its GC threads out of time
#    order in the stream): 3 collects, exact, and equal to dotnet-gcdump's
#    reading of the same session; a real app's saved session (shared data):
#    its 74,800 objects, the same per type as dotnet-gcdump;
#  - lossless buffering where the runtime has it (.NET 11+), else lost
#    events detected: a 1 MB buffer makes .NET 10 drop events (exit 6);
#  - progress on a TTY (script(1)) and none otherwise; --gc-timeout on a
#    target stopped mid-walk (exit 6, clrtap not stuck);
#  - the same leak facts in a namespaced fixture;
#  - truncated / corrupt / foreign snapshot files, a process that exits during
#    the snapshot, bad command lines: clear errors and exit codes.
. "$(dirname "$0")/lib.sh"

N=1234
TECHECK=${TECHECK:-$ROOT/build/fixtures/techeck/techeck.dll}
ITEM=Clrtap.Fixtures.HeapLeakItem
PAYLOAD=Clrtap.Fixtures.HeapLeakPayload
LIST="System.Collections.Generic.List<$ITEM>"

# pyj FILE EXPR: evaluates EXPR with d = the JSON document; t(name) = its type row.
pyj() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def t(name):
    return next((x for x in d.get("types", []) if x["type"] == name), None)
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(d)[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

check_leak() { # LABEL PID
	local label=$1 pid=$2
	expect_exit "$label: collect" 0 "$CLRTAP" gcdump collect -p "$pid" -o "$WORK/leak.heap"
	OUT_COLLECT=$OUT
	contains "$label: collect says it forced a blocking GC" "$ERR" "forcing a full, blocking gen-2 GC"
	check "$label: collect reports the pause it caused" bash -c 'grep -qE "paused the process for [0-9]+\.[0-9]+ ms" <<<"$1"' _ "$OUT"
	expect_exit "$label: report --json --path" 0 "$CLRTAP" gcdump report "$WORK/leak.heap" --json --top 0 --path "$ITEM"
	printf '%s\n' "$OUT" >"$WORK/leak.json"
	check "$label: exactly $N $ITEM" pyj "$WORK/leak.json" "t('$ITEM')['count'] == $N"
	check "$label: shallow bytes = $N x 32" pyj "$WORK/leak.json" "t('$ITEM')['shallow'] == $N * 32"
	check "$label: retained bytes = $N x 64 (item + its payload)" pyj "$WORK/leak.json" "t('$ITEM')['retained'] == $N * 64"
	check "$label: exactly $N payloads" pyj "$WORK/leak.json" "t('$PAYLOAD')['count'] == $N"
	check "$label: the list retains at least the items" pyj "$WORK/leak.json" "t('$LIST')['retained'] >= $N * 64 + 8 * $N"
	check "$label: one path group holds all $N items" pyj "$WORK/leak.json" \
		"d['paths']['groups'][0]['count'] == $N and len(d['paths']['groups']) == 1"
	check "$label: path = static root -> List -> array -> item" pyj "$WORK/leak.json" \
		"d['paths']['groups'][0]['path'] == ['$LIST', '$ITEM[]', '$ITEM'] and d['paths']['groups'][0]['root'] == 'static variable'"
	check "$label: strings were read from the target" pyj "$WORK/leak.json" \
		"d['strings']['read'] and d['strings']['compared'] > 0"
	local addr
	addr=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["paths"]["groups"][0]["example"])' "$WORK/leak.json")
	expect_exit "$label: --path of one object ($addr)" 0 "$CLRTAP" gcdump report "$WORK/leak.heap" --json --path "$addr"
	printf '%s\n' "$OUT" >"$WORK/obj.json"
	check "$label: the object's path: item, array, list (static root), retained 64" pyj "$WORK/obj.json" \
		"[x['type'] for x in d['object_path']['path']] == ['$ITEM', '$ITEM[]', '$LIST'] and d['object_path']['path'][0]['retained'] == 64 and d['object_path']['path'][2]['root'] == 'static variable'"
	expect_exit "$label: text report with --path" 0 "$CLRTAP" gcdump report "$WORK/leak.heap" --path "$ITEM"
	contains "$label: text path line" "$OUT" "[static variable] $LIST -> $ITEM[] -> $ITEM"
	check "$label: text row for $ITEM" bash -c 'grep -qE "^ +[0-9,]+ +[0-9,]+ +1,234  $1\$" <<<"$2"' _ "$ITEM" "$OUT"
}

# 1. The leak, on the host; the snapshot is also written as HTML.
start_fixture heap --shape leak --count $N
LEAK_PID=$FIX_PID
check_leak host "$LEAK_PID"
expect_exit "html view" 0 "$CLRTAP" gcdump report "$WORK/leak.heap" --html "$WORK/leak.html"
check "html is self-contained (no external URLs)" bash -c '! grep -qE "(src|href)=\"?https?:" "$1"' _ "$WORK/leak.html"
check "html holds the leaking type" grep -q "$ITEM" "$WORK/leak.html"
if command -v chromium >/dev/null 2>&1; then
	# rendered offline in a real browser: the types table and the dominator tree are drawn
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage \
		--user-data-dir="$WORK/chromium" --virtual-time-budget=3000 --dump-dom "file://$WORK/leak.html" \
		>"$WORK/dom.html" 2>/dev/null
	check "html renders: types table row for $ITEM" grep -q "<td>$ITEM</td>" "$WORK/dom.html"
	check "html renders: the dominator tree has the list with its retained bytes" \
		grep -qE "class=\"row\">\+ [0-9,]+ retained  32 B  0x[0-9a-f]+  System.Collections.Generic.List&lt;$ITEM&gt;" "$WORK/dom.html"
	check "html renders: one script element" test "$(grep -c '<script' "$WORK/dom.html")" -eq 1
	check "html renders: the leak's retention path" grep -qF "[static variable] System.Collections.Generic.List&lt;$ITEM&gt; → $ITEM[] → $ITEM" "$WORK/dom.html"
	# expanding by clicks (as a user would; a copy of the page with one more
	# script doing the clicks): list -> its array -> one item -> its payload
	python3 - "$WORK/leak.html" "$WORK/click.html" "$LIST" "$ITEM[]" "$ITEM" <<'EOF'
import json, sys
s = open(sys.argv[1]).read()
js = ("<script>setTimeout(() => { const f = t => [...document.querySelectorAll('#tree .row')]"
      ".find(r => r.textContent.split('  (+')[0].endsWith('  ' + t)); for (const t of %s) f(t).click(); }, 200)"
      "</script>" % json.dumps(sys.argv[3:]))
i = s.rindex("</body>")
open(sys.argv[2], "w").write(s[:i] + js + s[i:])
EOF
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage \
		--user-data-dir="$WORK/chromium" --virtual-time-budget=3000 --dump-dom "file://$WORK/click.html" \
		>"$WORK/click-dom.html" 2>/dev/null
	check "html: the dominator tree expands by clicks down to one item (64 retained) and its payload" python3 -c '
import html, re, sys
rows = [html.unescape(r) for r in re.findall(r"class=\"row\">([^<]*)", open(sys.argv[1]).read())]
want = [r"- [0-9,]+ retained  32 B  0x[0-9a-f]+  " + re.escape(sys.argv[2]) + "$",
        r"- [0-9,]+ retained  [0-9,]+ B  0x[0-9a-f]+  " + re.escape(sys.argv[3]) + r"  \(\+[0-9]+ smaller\)$",
        r"- 64 retained  32 B  0x[0-9a-f]+  " + re.escape(sys.argv[4]) + "$",
        r"  32 retained  32 B  0x[0-9a-f]+  " + re.escape(sys.argv[5]) + "$"]
k = next((i for i, r in enumerate(rows) if re.match(want[0], r)), None)
ok = k is not None and all(re.match(w, r) for w, r in zip(want, rows[k:k + 4]))
if not ok:
    print(rows[:12], file=sys.stderr)
sys.exit(0 if ok else 1)
' "$WORK/click-dom.html" "$LIST" "$ITEM[]" "$ITEM" "$PAYLOAD"
else
	skip "html rendering: no chromium"
fi
# report straight from the process
expect_exit "report -p" 0 "$CLRTAP" gcdump report -p "$LEAK_PID" --json --top 0
printf '%s\n' "$OUT" >"$WORK/live.json"
check "report -p: exactly $N items" pyj "$WORK/live.json" "t('$ITEM')['count'] == $N and t('$ITEM')['retained'] == $N * 64"
check "report -p: the GC was induced, gen 2, blocking" pyj "$WORK/live.json" \
	"d['gc']['induced'] and d['gc']['generation'] == 2 and d['gc']['blocking'] and d['lost_events'] == 0"
check "report -p: the pause (SuspendEE..RestartEE) is measured and holds the GC (GCStart..GCEnd)" pyj "$WORK/live.json" \
	"d['gc']['pause_ns'] >= d['gc']['gc_ns'] > 0"
# Lossless mode where the runtime has it: Block buffering (CollectTracing6)
# exists from .NET 11; an older runtime refuses it and the session runs
# lossy, which collect and report say (losses are then detected, below).
MAJOR=$("$CLRTAP" info -p "$LEAK_PID" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runtime_version"].split(".")[0])')
if [ "${MAJOR:-0}" -ge 11 ]; then LOSSLESS=True; else LOSSLESS=False; fi
check "report -p: lossless is $LOSSLESS on runtime $MAJOR (Block buffering from .NET 11)" pyj "$WORK/live.json" \
	"d['lossless'] == $LOSSLESS"
if [ "$LOSSLESS" = True ]; then
	contains "collect: says the events were lossless" "$OUT_COLLECT" "events: lossless"
else
	contains "collect: says the buffer was lossy and nothing was lost" "$OUT_COLLECT" \
		"events: the runtime's lossy buffer (Block buffering needs .NET 11); none was lost"
fi
# cross-check with TraceEvent on the same GC: the raw events kept by --nettrace
expect_exit "collect --nettrace" 0 "$CLRTAP" gcdump collect -p "$LEAK_PID" -o "$WORK/x.heap" --nettrace "$WORK/x.nettrace"
if [ ! -f "$TECHECK" ]; then
	skip "TraceEvent cross-check: $TECHECK not built"
else
	dotnet "$TECHECK" --heap "$WORK/x.nettrace" >"$WORK/te-heap.txt" 2>"$WORK/te-heap.err"
	"$CLRTAP" gcdump report "$WORK/x.heap" --json --top 0 >"$WORK/x.json"
	check "TraceEvent: same objects, bytes and per-type counts and bytes (by type id)" python3 - "$WORK/te-heap.txt" "$WORK/x.json" <<'EOF'
import json, sys
te, tot = {}, {}
for line in open(sys.argv[1]):
    p = line.split(" ", 4)
    if p[0] == "type":
        te[int(p[1], 16)] = (int(p[2]), int(p[3]))
    elif len(p) == 2:
        tot[p[0]] = int(p[1])
d = json.load(open(sys.argv[2]))
ours = {int(t["id"], 16): (t["count"], t["shallow"]) for t in d["types"]}
ok = te == ours and tot.get("objects") == d["objects"] and tot.get("bytes") == d["bytes"] and len(te) > 50
if not ok:
    print("TraceEvent", tot, len(te), "clrtap", d["objects"], d["bytes"], len(ours), file=sys.stderr)
    print(sorted(set(te.items()) ^ set(ours.items()))[:20], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
	expect_exit "report of the saved heap session (.nettrace)" 0 "$CLRTAP" gcdump report "$WORK/x.nettrace" --json --top 0
	printf '%s\n' "$OUT" >"$WORK/xn.json"
	check "report of the .nettrace: the same $N items retaining $N x 64" pyj "$WORK/xn.json" \
		"t('$ITEM')['count'] == $N and t('$ITEM')['retained'] == $N * 64 and not d['strings']['read']"
	head -c 100000 "$WORK/x.nettrace" >"$WORK/xcut.nettrace"
	expect_exit "report of a cut .nettrace: bad input" 8 "$CLRTAP" gcdump report "$WORK/xcut.nettrace"
	contains "report of a cut .nettrace: says where" "$ERR" "the trace is damaged at byte"
	check "TraceEvent: $N $ITEM there too" grep -qE "^type 0x[0-9a-f]+ $N $((N * 32)) $ITEM\$" "$WORK/te-heap.txt"
fi
if [ ! -x "$DGC" ]; then
	skip "dotnet-gcdump cross-check: no dotnet-gcdump (set DOTNET_GCDUMP, or dotnet tool install -g dotnet-gcdump)"
else
	"$CLRTAP" gcdump report "$WORK/x.heap" --json --top 0 >"$WORK/xd.json"
	dgc_same leak "$WORK/x.nettrace" "$WORK/xd.json" "$ITEM" "$N"
fi
# wait_bytes FILE N: until FILE holds N bytes (the heap session is streaming)
wait_bytes() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.02
	done
	return 1
}
# Ctrl-C before the heap walk: exit 130 (nothing written), no file. Ctrl-C
# during the walk: the runtime finishes its walk (a GC cannot be interrupted)
# and clrtap writes the complete snapshot, as every clrtap command writes its
# result when stopped.
start_fixture heap --shape big --count 3000000
BIG=$FIX_PID
# The window is the type-table flush session (>= 50 ms): on a loaded machine
# the signal may come later, in the walk (then exit 0 with the whole heap, as
# below); up to 3 tries for one that lands before it.
for try in 1 2 3; do
	rm -f "$WORK/int.heap" "$WORK/int.err"
	"$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/int.heap" >"$WORK/int.out" 2>"$WORK/int.err" &
	CPID=$!
	for ((i = 0; i < 4000; i++)); do grep -q forcing "$WORK/int.err" 2>/dev/null && break; sleep 0.005; done
	kill -INT "$CPID"
	wait "$CPID"
	RC=$?
	[ "$RC" -eq 0 ] || break
	check "Ctrl-C (try $try) came in the walk: the whole heap written" grep -qE "^wrote .*int.heap: 3,00[0-9],[0-9]{3} objects" "$WORK/int.out"
done
equals "Ctrl-C before the walk: exit 130 (interrupted, nothing written)" "$RC" 130
check "Ctrl-C before the walk: says so" grep -q "interrupted before the snapshot was complete" "$WORK/int.err"
check "Ctrl-C before the walk: no file" test ! -e "$WORK/int.heap"
check "Ctrl-C before the walk: the target runs on" kill -0 "$BIG"
"$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/int2.heap" --nettrace "$WORK/int.nettrace" >"$WORK/int2.out" 2>"$WORK/int2.err" &
CPID=$!
wait_bytes "$WORK/int.nettrace" 2000000
kill -INT "$CPID"
wait "$CPID"
RC=$?
equals "Ctrl-C during the walk: exit 0, the walk is complete" "$RC" 0
check "Ctrl-C during the walk: all 3,00x,xxx objects written" grep -qE "^wrote .*int2.heap: 3,00[0-9],[0-9]{3} objects" "$WORK/int2.out"
lacks "no TTY: no progress lines" "$(cat "$WORK/int2.err")" "walking the heap"
# progress on a TTY (script(1) gives collect a pseudo-terminal)
if command -v script >/dev/null 2>&1; then
	script -qefc "$(printf '%q ' "$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/tty.heap")" "$WORK/tty.log" \
		</dev/null >/dev/null 2>&1
	check "TTY: progress while walking" grep -aqE "walking the heap: [0-9,]+ objects" "$WORK/tty.log"
	check "TTY: progress ends with the whole walk (3,00x,xxx objects)" \
		grep -aqE "heap walk done: 3,00[0-9],[0-9]{3} objects, 3,0[0-9]{2},[0-9]{3} references" "$WORK/tty.log"
else
	skip "TTY progress: no script(1)"
fi
# Lost events: a 1 MB session buffer for ~130 MB of heap-walk events. A lossy
# runtime drops events: exit 6, said, no file (never a silently wrong graph).
# A lossless one (Block buffering, .NET 11+) waits instead: the whole graph.
for try in 1 2 3; do
	rm -f "$WORK/lossy.heap"
	"$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/lossy.heap" --buffer 1 >"$WORK/lossy.out" 2>"$WORK/lossy.err"
	RC=$?
	if [ "$RC" -eq 0 ]; then
		check "--buffer 1 (try $try): a snapshot taken is the whole heap" grep -qE "^wrote .*: 3,00[0-9],[0-9]{3} objects" "$WORK/lossy.out"
	fi
	if [ "$RC" -eq 6 ] || [ "$LOSSLESS" = True ]; then break; fi
done
if [ "$LOSSLESS" = True ]; then
	equals "--buffer 1 on a lossless runtime: exit 0" "$RC" 0
else
	equals "--buffer 1 on a lossy runtime: events dropped, exit 6" "$RC" 6
	check "--buffer 1: says the runtime dropped events and writes no graph" \
		grep -q "no snapshot: the runtime dropped events during the heap walk" "$WORK/lossy.err"
	check "--buffer 1: no file" test ! -e "$WORK/lossy.heap"
fi
# Timeout: the target stops (SIGSTOP) during its heap walk; clrtap gives up
# after --gc-timeout by itself (the target still stopped), exit 6, no file.
"$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/to.heap" --gc-timeout 3 --nettrace "$WORK/to.nettrace" \
	>"$WORK/to.out" 2>"$WORK/to.err" &
CPID=$!
wait_bytes "$WORK/to.nettrace" 2000000
kill -STOP "$BIG"
for ((i = 0; i < 300; i++)); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$CPID" 2>/dev/null; then STATE=running; else STATE=exited; fi
kill -CONT "$BIG"
wait "$CPID"
RC=$?
equals "stalled target: clrtap gave up by itself within 30 s" "$STATE" exited
equals "stalled target: exit 6" "$RC" 6
check "stalled target: says no complete walk within --gc-timeout" grep -q "no snapshot: no complete heap walk within 3000 ms" "$WORK/to.err"
check "stalled target: no file" test ! -e "$WORK/to.heap"
expect_exit "Ctrl-C: the next snapshot works" 0 "$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/big.heap"
check "Ctrl-C: the next snapshot has the 3,00x,xxx objects" bash -c 'grep -qE "^wrote .*: 3,00[0-9],[0-9]{3} objects" <<<"$1"' _ "$OUT"
# Bounded memory while streaming: the graph is kept, never the stream. The
# heap session's events alone are ~43 bytes per object here (~130 MB);
# clrtap's peak stays under 64 bytes per object (measured: ~45).
python3 - "$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/rss.heap" >"$WORK/rss.out" 2>"$WORK/rss.err" <<'EOF'
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:])
print("rc", r.returncode, "maxrss_kb", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
check "bounded memory: collect's peak RSS < 64 bytes per object (3,00x,xxx objects)" python3 -c '
import re, sys
t = open(sys.argv[1]).read()
objs = int(re.search(r"wrote .*: ([0-9,]+) objects", t).group(1).replace(",", ""))
rc, kb = re.search(r"rc (\d+) maxrss_kb (\d+)", t).groups()
print("peak", kb, "KiB for", objs, "objects:", int(kb) * 1024 // objs, "bytes each", file=sys.stderr)
sys.exit(0 if rc == "0" and objs >= 3000000 and int(kb) * 1024 < 64 * objs else 1)
' "$WORK/rss.out"
# the process exits (SIGKILL) while its heap walk streams
"$CLRTAP" gcdump collect -p "$BIG" -o "$WORK/gone.heap" --nettrace "$WORK/gone.nettrace" >"$WORK/exit.out" 2>"$WORK/exit.err" &
CPID=$!
wait_bytes "$WORK/gone.nettrace" 2000000
kill -KILL "$BIG"
wait "$CPID"
RC=$?
equals "process killed during the heap walk: exit 3 (no process)" "$RC" 3
check "process killed during the heap walk: says so" grep -q "no snapshot: the process ended before the snapshot was complete" "$WORK/exit.err"
check "process killed during the heap walk: no file" test ! -e "$WORK/gone.heap"
# a heap larger than --max-objects: refused, no file, the target runs on
expect_exit "--max-objects 100: refused" 1 "$CLRTAP" gcdump collect -p "$LEAK_PID" -o "$WORK/cap.heap" --max-objects 100
contains "--max-objects: says so" "$ERR" "more than the cap of 100 objects"
check "--max-objects: no file" test ! -e "$WORK/cap.heap"
check "--max-objects: the target runs on" kill -0 "$LEAK_PID"
stop_fixture "$LEAK_PID"

# 2. The dominator shape.
start_fixture heap --shape dominator
expect_exit "dominator: report -p" 0 "$CLRTAP" gcdump report -p "$FIX_PID" --json --top 0
printf '%s\n' "$OUT" >"$WORK/dom.json"
for pair in DomHolder:152 DomLeft:24 DomRight:24 DomShared:72 DomPayload:48; do
	name=Clrtap.Fixtures.${pair%%:*}
	want=${pair##*:}
	check "dominator: $name retains $want bytes" pyj "$WORK/dom.json" "t('$name')['retained'] == $want and t('$name')['count'] == 1"
done
stop_fixture "$FIX_PID"

# 2b. A linked list 200,000 long: retained sizes and paths, in linear time.
CHAIN=Clrtap.Fixtures.HeapChainNode
start_fixture heap --shape chain --count 200000
expect_exit "chain: report -p --path" 0 timeout 120 "$CLRTAP" gcdump report -p "$FIX_PID" --json --top 0 --path "$CHAIN"
printf '%s\n' "$OUT" >"$WORK/chain.json"
check "chain: 200,000 nodes, the type retains 200,000 x 32 (nested nodes once)" pyj "$WORK/chain.json" \
	"t('$CHAIN')['count'] == 200000 and t('$CHAIN')['retained'] == 200000 * 32"
check "chain: the head is the largest retainer with 200,000 x 32" pyj "$WORK/chain.json" \
	"d['retainers'][0]['type'] == '$CHAIN' and d['retainers'][0]['retained'] == 200000 * 32"
check "chain: 32 short paths and one long one (first 8 types, ..., last 23)" pyj "$WORK/chain.json" \
	"len(d['paths']['groups']) == 20 and d['paths']['groups'][0]['count'] == 200000 - 32 and d['paths']['groups'][0]['path'][8] == '...' and d['paths']['groups'][0]['path'][31] == '$CHAIN'"
stop_fixture "$FIX_PID"

# 3. Duplicated strings: 5000 copies of "duplicated-string-value" (23 chars).
start_fixture strings --count 5000
wait_for_line "$FIX_OUT" '^DONE ' 60 "$FIX_PID" || not_ok "strings fixture done"
expect_exit "strings: report -p" 0 "$CLRTAP" gcdump report -p "$FIX_PID" --json
printf '%s\n' "$OUT" >"$WORK/str.json"
check "strings: the top duplicated value is exact, 5000 copies" pyj "$WORK/str.json" \
	"d['strings']['top'][0]['value'] == 'duplicated-string-value' and d['strings']['top'][0]['copies'] == 5000"
check "strings: 23 chars, wasted_bytes = 4999 copies x 68 bytes (the one duplicated-string shape)" pyj "$WORK/str.json" \
	"d['task'] == 'gcdump.report' and d['strings']['top'][0]['chars'] == 23 and d['strings']['top'][0]['wasted_bytes'] == 4999 * 68 and d['strings']['wasted_bytes'] >= 4999 * 68"
check "strings: the contents were read, none moved" pyj "$WORK/str.json" \
	"d['strings']['read'] and d['strings']['moved'] == 0 and 'process_vm_readv' in d['strings']['how']"
expect_exit "strings: text" 0 "$CLRTAP" gcdump report -p "$FIX_PID"
check "strings: text line" bash -c 'grep -qE "^ +[0-9,]+ +5000  \"duplicated-string-value\"$" <<<"$1"' _ "$OUT"
stop_fixture "$FIX_PID"

# 4. A leak at a known rate with churn: watch and diff report only the leak.
start_fixture heap --shape leak --count 100 --per-second 2000
expect_exit "watch" 0 "$CLRTAP" gcdump watch -p "$FIX_PID" --every 1s --snapshots 3 --json -o "$WORK/w"
printf '%s\n' "$OUT" >"$WORK/watch.json"
check "watch: the only growing type (not held by another) is $ITEM" pyj "$WORK/watch.json" \
	"[g['type'] for g in d['growing'] if g['held_by'] is None] == ['$ITEM']"
check "watch: its payload is held by it" pyj "$WORK/watch.json" \
	"all(g['held_by'] == '$ITEM' for g in d['growing'] if g['type'] != '$ITEM')"
check "watch: its count grows by about 2000/s each interval" pyj "$WORK/watch.json" \
	"[g for g in d['growing'] if g['type'] == '$ITEM'][0]['count'][2] - [g for g in d['growing'] if g['type'] == '$ITEM'][0]['count'][0] >= 2000"
check "watch: the path of the growth is the static list" pyj "$WORK/watch.json" \
	"[g for g in d['growing'] if g['type'] == '$ITEM'][0]['paths'][0]['path'] == ['$LIST', '$ITEM[]', '$ITEM']"
check "watch: the leak's path holds more objects in the last snapshot than in the first" pyj "$WORK/watch.json" \
	"(lambda pg: pg['count'][1] > pg['count'][0] > 0 and pg['path'].startswith('[static variable] $LIST'))([g for g in d['growing'] if g['type'] == '$ITEM'][0]['path_growth'][0])"
check "watch: the churned types are not reported" pyj "$WORK/watch.json" \
	"not any('HeapChurn' in g['type'] for g in d['growing'])"
# Ctrl-C during watch: the snapshots taken are compared, exit 9 (partial).
"$CLRTAP" gcdump watch -p "$FIX_PID" --every 1s --snapshots 20 --json >"$WORK/wi.json" 2>"$WORK/wi.err" &
CPID=$!
for ((i = 0; i < 600; i++)); do grep -q "snapshot 2 of 20" "$WORK/wi.err" 2>/dev/null && break; sleep 0.05; done
kill -INT "$CPID"
wait "$CPID"
RC=$?
equals "watch interrupted after 2 snapshots: exit 9 (partial)" "$RC" 9
check "watch interrupted: says it compared the snapshots taken" grep -qE "interrupted: compared the [23] snapshots taken" "$WORK/wi.err"
check "watch interrupted: the leak grows across the snapshots taken" pyj "$WORK/wi.json" \
	"d['partial'] and len(d['snapshots']) in (2, 3) and '$ITEM' in [g['type'] for g in d['growing'] if g['held_by'] is None] and not any('HeapChurn' in g['type'] for g in d['growing'])"
expect_exit "diff of the three snapshots" 0 "$CLRTAP" gcdump diff "$WORK/w-1.heap" "$WORK/w-2.heap" "$WORK/w-3.heap"
contains "diff: text names the leak" "$OUT" "grow in every one of 3 snapshots: 1"
contains "diff: the leak's path" "$OUT" "[static variable] $LIST -> $ITEM[] -> $ITEM"
check "diff: the path's object count grows" bash -c 'grep -qE "path \(([0-9]+) -> ([0-9]+) objects\)" <<<"$1"' _ "$OUT"
contains "diff: the payload is held by it" "$OUT" "held by it, growing too: $PAYLOAD"
lacks "diff: no churn type" "$OUT" "HeapChurn"
stop_fixture "$FIX_PID"

# 5. Server GC with two GC heaps (dynamic adaptation off, else .NET 10 starts
# with one): each heap's GC thread writes its own events and EventPipe flushes
# them a thread at a time, so GCStart (one thread) often comes after the walk
# and GCEnd (another) in the stream; the reader puts them back in time order.
# Before it, 4 of 4 collects here found "no complete heap walk".
if [ "$(nproc)" -lt 2 ]; then
	skip "two GC heaps: this machine has $(nproc) CPU (Server GC makes a heap per CPU)"
else
	FIX_ENV="DOTNET_gcServer=1 DOTNET_GCDynamicAdaptationMode=0" start_fixture heap --shape leak --count $N
	for i in 1 2 3; do
		expect_exit "two GC heaps: collect $i" 0 "$CLRTAP" gcdump collect -p "$FIX_PID" -o "$WORK/srv$i.heap" \
			--nettrace "$WORK/srv$i.nettrace"
		expect_exit "two GC heaps: report $i" 0 "$CLRTAP" gcdump report "$WORK/srv$i.heap" --json --top 0
		printf '%s\n' "$OUT" >"$WORK/srv$i.json"
		check "two GC heaps: collect $i: exactly $N items retaining $N x 64" pyj "$WORK/srv$i.json" \
			"t('$ITEM')['count'] == $N and t('$ITEM')['retained'] == $N * 64"
	done
	if [ -x "$DGC" ]; then
		dgc_same "two GC heaps" "$WORK/srv3.nettrace" "$WORK/srv3.json" "$ITEM" "$N"
	fi
	stop_fixture "$FIX_PID"
fi
# A real app's heap session (ASP.NET Core + EF Core, Server GC, 2 heaps),
# saved by clrtap: heap 1's thread wrote GCStart after heap 0's wrote the walk
# and GCEnd. dotnet-gcdump reads 77,692 graph nodes from it: these 74,800
# objects (the sum of its histogram) and its root and pseudo nodes.
SHARED=$ROOT/../shared/data/aspnet-efcore-heapwalk.nettrace
if [ ! -f "$SHARED" ]; then
	skip "real-app heap session: $SHARED absent (the shared data beside the clone)"
else
	expect_exit "real-app heap session: report" 0 "$CLRTAP" gcdump report "$SHARED" --json --top 0
	printf '%s\n' "$OUT" >"$WORK/shared.json"
	check "real-app heap session: 74,800 objects, 5,184,327 bytes, 142,644 references, 9,591 strings" pyj "$WORK/shared.json" \
		"d['objects'] == 74800 and d['bytes'] == 5184327 and d['references'] == 142644 and t('System.String')['count'] == 9591"
	if [ -x "$DGC" ]; then
		dgc_same "real-app heap session" "$SHARED" "$WORK/shared.json" System.String 9591
		check "real-app heap session: dotnet-gcdump's headline is 77,692 graph nodes" grep -qE "^ +77,692 +GC Heap objects" "$WORK/dgc.txt"
	fi
fi

# 6. Namespaced fixture.
start_fixture_ns heap --shape leak --count $N
check_leak namespaced "$FIX_PID"

# 7. Bad snapshot files and command lines.
cp "$WORK/leak.heap" "$WORK/good.heap"
SZ=$(stat -c %s "$WORK/good.heap")
head -c $((SZ / 2)) "$WORK/good.heap" >"$WORK/trunc.heap"
expect_exit "truncated file: bad input" 8 "$CLRTAP" gcdump report "$WORK/trunc.heap"
contains "truncated file: says which part" "$ERR" "section is missing or cut"
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 3] ^= 0x41; open(sys.argv[2], "wb").write(b)' \
	"$WORK/good.heap" "$WORK/flip.heap"
expect_exit "corrupt file: bad input" 8 "$CLRTAP" gcdump report "$WORK/flip.heap"
contains "corrupt file: says it is damaged" "$ERR" "damaged"
head -c 300 /dev/urandom >"$WORK/noise.heap"
expect_exit "not a snapshot: bad input" 8 "$CLRTAP" gcdump report "$WORK/noise.heap"
contains "not a snapshot: says so" "$ERR" "not a clrtap heap snapshot"
: >"$WORK/empty.heap"
expect_exit "empty file: bad input" 8 "$CLRTAP" gcdump report "$WORK/empty.heap"
expect_exit "missing file" 1 "$CLRTAP" gcdump report "$WORK/nope.heap"
expect_exit "diff: truncated second file" 8 "$CLRTAP" gcdump diff "$WORK/good.heap" "$WORK/trunc.heap"
expect_exit "diff needs two files" 2 "$CLRTAP" gcdump diff "$WORK/good.heap"
expect_exit "report: unknown type for --path" 2 "$CLRTAP" gcdump report "$WORK/good.heap" --path No.Such.Type
expect_exit "report: no object at that address" 2 "$CLRTAP" gcdump report "$WORK/good.heap" --path 0x10
expect_exit "watch: bad --every" 2 "$CLRTAP" gcdump watch -p 1 --every 3x
expect_exit "watch: --snapshots 1" 2 "$CLRTAP" gcdump watch -p 1 --snapshots 1
expect_exit "unknown subcommand" 2 "$CLRTAP" gcdump frobnicate
expect_exit "collect: output not writable, before any GC" 1 "$CLRTAP" gcdump collect -p $$ -o /nonexistent-dir/x.heap
contains "collect: output not writable: says so" "$ERR" "cannot write /nonexistent-dir/x.heap: no folder /nonexistent-dir"
expect_exit "collect: dead pid" 3 "$CLRTAP" gcdump collect -p 999999
expect_exit "collect: not .NET" 4 "$CLRTAP" gcdump collect -p $$

# 8. Hostile names in snapshot files (written here, docs/formats/gcdump.md):
# type names, the process name and a duplicated string value with ESC, quotes,
# a backslash, CR/LF, BEL, 0xff (not UTF-8) and U+2028. --json holds the exact
# bytes (0xff by the surrogateescape rule); the text and stderr hold no control
# byte, the names shown escaped (docs/internals/output.md).
mkheap() {
	python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
def var(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)
def s(b):
    return var(len(b)) + b
def sec(tag, b):
    return tag + struct.pack("<Q", len(b)) + b
k = int(sys.argv[2])
holder = b"Holder\x1b]0;title\x07"
item = b'Hostile\x1b[31mType"q"\\\n\xffz'
meta = b"".join(var(v) for v in (4242, 1700000000, 8, 7, 2, 1, 0, 1000000, 2000000, 0, 0, 1))
meta += s(b"pr\x1b[2J\r\n\xff")
types = var(2) + var(0x1000) + s(holder) + var(0x2000) + s(item)
nodes = var(k + 1) + var(0x10000) + var(32) + var(0) + var(k)
nodes += b"".join(var(0x20) + var(32) + var(1) + var(0) for _ in range(k))
edges = var(k) + b"".join(var(2 * t) for t in range(1, k + 1))
roots = var(1) + var(0) + bytes([7]) + var(0)
val = "v\x1b[31m\r\n\"\\\u2028".encode()
strs = bytes([1]) + b"".join(var(v) for v in (10, 10, 0, 0, 0, 1, 2, 40))
strs += var(1) + var(2) + var(40) + var(9) + bytes([0]) + s(val)
body = b"CLRTAPHS" + struct.pack("<II", 1, 0)
for tag, b in ((b"META", meta), (b"TYPE", types), (b"NODE", nodes), (b"EDGE", edges),
               (b"ROOT", roots), (b"STRS", strs)):
    body += sec(tag, b)
body += b"END " + struct.pack("<Q", 4)
open(sys.argv[1], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
}
# no control byte but newline (C0, DEL, C1 as UTF-8)
clean() {
	! LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1"
}
HITEM=$'Hostile\x1b[31mType"q"\\\n\xffz'
mkheap "$WORK/h1.heap" 1
mkheap "$WORK/h3.heap" 3
"$CLRTAP" gcdump report "$WORK/h3.heap" --json --top 0 --path "$HITEM" >"$WORK/h.json" 2>"$WORK/h.err"
check "hostile names: report --json is strict JSON with the exact bytes" python3 - "$WORK/h.json" <<'PY'
import json, sys
def no_const(c):
    raise ValueError(c)
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), parse_constant=no_const)
raw = lambda s: s.encode("utf-8", "surrogateescape")
item = b'Hostile\x1b[31mType"q"\\\n\xffz'
assert raw(d["process"]) == b"pr\x1b[2J\r\n\xff", d["process"]
t = [x for x in d["types"] if raw(x["type"]) == item]
assert len(t) == 1 and t[0]["count"] == 3, d["types"]
assert raw(d["types"][0]["type"]) == b"Holder\x1b]0;title\x07" and d["types"][0]["retained"] == 4 * 32, d["types"]
assert d["paths"]["count"] == 3 and raw(d["paths"]["groups"][0]["path"][-1]) == item, d["paths"]
assert d["strings"]["top"][0]["value"] == "v\x1b[31m\r\n\"\\\u2028", d["strings"]
PY
expect_exit "hostile names: text report" 0 "$CLRTAP" gcdump report "$WORK/h3.heap" --path "$HITEM" --html "$WORK/h.html"
printf '%s\n%s\n' "$OUT" "$ERR" >"$WORK/h.txt"
check "hostile names: no control byte in the text report" clean "$WORK/h.txt"
contains "hostile names: the type shown escaped" "$OUT" 'Hostile\x1b[31mType"q"\\\n\xffz'
contains "hostile names: the process shown escaped" "$OUT" '(pr\x1b[2J\r\n\xff)'
contains "hostile names: the string value shown escaped" "$OUT" '"v\x1b[31m\r\n"\\\u{2028}"'
equals "hostile names: one script element in the HTML view" "$(grep -o '<script' "$WORK/h.html" | wc -l)" 1
"$CLRTAP" gcdump diff "$WORK/h1.heap" "$WORK/h3.heap" --json >"$WORK/hd.json" 2>"$WORK/hd.err"
check "hostile names: diff --json: the growing type, exact" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [x for x in d["growing"] if x["type"].encode("utf-8", "surrogateescape") == b"Hostile\x1b[31mType\"q\"\\\n\xffz"]
assert len(g) == 1 and g[0]["count"] == [1, 3] and g[0]["path_growth"][0]["count"] == [1, 3], d
' "$WORK/hd.json"
expect_exit "hostile names: diff text" 0 "$CLRTAP" gcdump diff "$WORK/h1.heap" "$WORK/h3.heap"
printf '%s\n%s\n' "$OUT" "$ERR" >"$WORK/hd.txt"
check "hostile names: no control byte in the diff text" clean "$WORK/hd.txt"
contains "hostile names: diff shows the type escaped" "$OUT" '  Hostile\x1b[31mType"q"\\\n\xffz'

finish
