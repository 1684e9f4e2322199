#!/usr/bin/env bash
# clrtap trace report / convert on files collected from real fixtures: exact
# exception counts with type, message and stack; induced gen-2 GCs with
# pauses; the allocated type; sampled stacks (namespaced fixture) into every
# flame format; event counts equal to TraceEvent's (tests/fixtures/techeck);
# truncated and corrupted files: exit 8, a message naming the offset, the
# events before the damage still reported, no crash (also under ASan when
# SAN_CLRTAP points at a sanitizer build).
. "$(dirname "$0")/lib.sh"

MSG="clrtap fixture exception"
TECHECK=${TECHECK:-$ROOT/build/fixtures/techeck/techeck.dll}

# collect_workload OUT PROFILE SECONDS MODE [ARGS...]: the fixture waits for
# its trigger, which is touched once the session runs; DONE is awaited.
collect_workload() {
	local out=$1 profile=$2 secs=$3
	shift 3
	start_fixture "$@" --trigger "$WORK/go-$profile"
	(sleep 1.5; touch "$WORK/go-$profile") &
	expect_exit "collect $profile ($1)" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile "$profile" -d "$secs" -o "$out"
	stop_fixture "$FIX_PID"
}

# jq-like: python over the JSON report in $OUT
j() { json_get "$OUT" "$1"; }

# Counts per (provider, event id) equal to TraceEvent's, and the totals.
te_compare() {
	local name=$1 file=$2
	if [ ! -f "$TECHECK" ]; then
		skip "TraceEvent cross-check of $name: $TECHECK not built"
		return
	fi
	dotnet "$TECHECK" "$file" >"$WORK/te.txt" 2>"$WORK/te.err"
	"$CLRTAP" trace report "$file" --json >"$WORK/ct.json"
	local diff
	diff=$(python3 - "$WORK/te.txt" "$WORK/ct.json" <<'EOF'
import collections, json, sys
want, total = collections.Counter(), None
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "#id":
        p, i, n = f[1], int(f[2]), int(f[3])
        # TraceEvent re-labels GCDynamicEvent (runtime id 39) with its own id 0xFFF4.
        if p == "Microsoft-Windows-DotNETRuntime" and i == 0xFFF4:
            i = 39
        want[(p, i)] += n
    elif f and f[0] == "total":
        total = int(f[1])
d = json.load(open(sys.argv[2]))
got = collections.Counter()
for e in d["events"]:
    got[(e["provider"], e["id"])] += e["count"]
bad = sorted((k, want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k))
if total != d["trace"]["events"] or bad or not want:
    print("TraceEvent total %s, clrtap %s, differences %s" % (total, d["trace"]["events"], bad))
else:
    print("same: %d events in %d kinds" % (total, len(want)))
EOF
	)
	contains "TraceEvent agrees on $name event counts" "$diff" "same: "
}

# 1. Exceptions: exactly N, one group, with the throwing method on the stack.
N=23
collect_workload "$WORK/ex.nettrace" exceptions 4 exceptions --count $N
expect_exit "report exceptions" 0 "$CLRTAP" trace report "$WORK/ex.nettrace"
contains "text: exceptions line" "$OUT" "Exceptions: $N thrown, 1 type, 1 distinct type+message"
contains "text: the type line (count, messages, type)" "$OUT" "$N          1  Clrtap.Fixtures.FixtureException"
contains "text: all first throws, none rethrown" "$OUT" "$N first throws, 0 rethrown"
contains "text: the message line" "$OUT" "$N  $MSG"
contains "text: the throw site" "$OUT" "thrown in Clrtap.Fixtures.Thrower::ThrowOne ($N thrown here)"
contains "text: stack has the throwing method" "$OUT" "at Clrtap.Fixtures.Thrower::ThrowOne"
contains "text: stack has the catching caller" "$OUT" "at Clrtap.Fixtures.Thrower::ThrowMany"
expect_exit "report exceptions --json" 0 "$CLRTAP" trace report "$WORK/ex.nettrace" --json
equals "json: $N exceptions" "$(j 'd["exceptions"]["total"]')" $N
equals "json: one group" "$(j 'len(d["exceptions"]["groups"])')" 1
equals "json: type" "$(j 'd["exceptions"]["groups"][0]["type"]')" "Clrtap.Fixtures.FixtureException"
equals "json: message" "$(j 'd["exceptions"]["groups"][0]["message"]')" "$MSG"
equals "json: group count" "$(j 'd["exceptions"]["groups"][0]["count"]')" $N
equals "json: ThrowOne directly below ThrowMany" \
	"$(j '(lambda s: s[s.index("Clrtap.Fixtures.Thrower::ThrowOne") + 1])(d["exceptions"]["groups"][0]["stack"])')" \
	"Clrtap.Fixtures.Thrower::ThrowMany"
equals "json: ExceptionThrown events" \
	"$(j '[e["count"] for e in d["events"] if e["name"]=="ExceptionThrown"][0]')" $N
equals "json: complete, no error" "$(j 'd["complete"], d["error"]')" "(True, None)"
te_compare exceptions "$WORK/ex.nettrace"
equals "json: by type" "$(j '[(t["type"], t["count"], t["first"], t["rethrown"], t["messages"]) for t in d["exceptions"]["types"]]')" \
	"[('Clrtap.Fixtures.FixtureException', $N, $N, 0, 1)]"

# 1b. Messages that carry the input (an ASP.NET route, 37 distinct keys):
#     one type, 37 messages, one throw site, the exact total.
PORT=$(free_port)
start_fixture web --port "$PORT"
curl -s "http://127.0.0.1:$PORT/api/item/warm-up" >/dev/null # compiled before the session
"$CLRTAP" trace collect -p "$FIX_PID" --profile exceptions -o "$WORK/items.nettrace" >/dev/null 2>"$WORK/items.err" &
COLLECT=$!
wait_for_line "$WORK/items.err" "Ctrl-C stops" 10
sleep 1
for ((i = 1; i <= 37; i++)); do curl -s "http://127.0.0.1:$PORT/api/item/key-$i" >/dev/null; done
sleep 0.5
kill -INT "$COLLECT"
wait "$COLLECT"
equals "collect during 37 item requests, stopped by Ctrl-C" "$?" 0
# every runtime keyword while routes run for the first time: the runtime
# events are named as TraceEvent names them (R2RGetEntryPoint, not Event159)
"$CLRTAP" trace collect -p "$FIX_PID" --providers 'Microsoft-Windows-DotNETRuntime:0xFFFFFFFFFFFFFFFF:5' \
	-d 2 -o "$WORK/all.nettrace" >/dev/null 2>"$WORK/all.err" &
COLLECT=$!
wait_for_line "$WORK/all.err" "tracing pid" 10
sleep 0.3
for r in "echo?echo=x" "jit-late" "exception/1" "fibonacci?pos=5" "gc"; do curl -s "http://127.0.0.1:$PORT/api/$r" >/dev/null; done
wait "$COLLECT"
equals "collect with every runtime keyword" "$?" 0
stop_fixture "$FIX_PID"
expect_exit "report the every-keyword trace --json" 0 "$CLRTAP" trace report "$WORK/all.nettrace" --json
equals "every runtime event named (no EventNNN)" \
	"$(j '[(e["provider"], e["id"]) for e in d["events"] if __import__("re").fullmatch(r"Event[0-9]+", e["name"] or "Event0")]')" "[]"
equals "R2RGetEntryPoint (159) named" "$(j '[e["name"] for e in d["events"] if e["provider"] == "Microsoft-Windows-DotNETRuntime" and e["id"] == 159]')" "['R2RGetEntryPoint']"
expect_exit "report items --json" 0 "$CLRTAP" trace report "$WORK/items.nettrace" --json
equals "items: the KeyNotFoundExceptions grouped by type with the exact total" \
	"$(j '[(t["type"], t["count"], t["messages"]) for t in d["exceptions"]["types"] if t["type"].endswith("KeyNotFoundException")]')" \
	"[('System.Collections.Generic.KeyNotFoundException', 37, 37)]"
expect_exit "report items (text)" 0 "$CLRTAP" trace report "$WORK/items.nettrace"
contains "items: one type line with 37 messages" "$OUT" "37         37  System.Collections.Generic.KeyNotFoundException"
contains "items: the first messages, then how many more" "$OUT" "(34 more messages)"
equals "items: one stack for the one throw site" "$(grep -c 'thrown in Clrtap.Fixtures.ItemLookup::Find (37 thrown here)' <<<"$OUT")" 1
check "items: at most 60 lines for 37 exceptions" test "$(sed -n '/^Exceptions/,/^GC/p' <<<"$OUT" | wc -l)" -le 60

# 1c. Sections whose events were not collected say so, with how to collect them.
start_fixture idle
expect_exit "collect the sampler only" 0 "$CLRTAP" trace collect -p "$FIX_PID" \
	--providers Microsoft-DotNETCore-SampleProfiler -d 1 -o "$WORK/sampler.nettrace"
expect_exit "collect cpu-sampling on an idle app" 0 "$CLRTAP" trace collect -p "$FIX_PID" -d 1 -o "$WORK/idle.nettrace"
stop_fixture "$FIX_PID"
expect_exit "report the sampler-only trace" 0 "$CLRTAP" trace report "$WORK/sampler.nettrace"
contains "sampler only: exceptions not collected" "$OUT" "Exceptions: not collected (enable with --profile exceptions"
contains "sampler only: contention not collected" "$OUT" "Contention: not collected (enable with --profile contention"
contains "sampler only: GC not collected" "$OUT" "GC: not collected (enable with --profile gc-collect"
lacks "sampler only: no '0 thrown'" "$OUT" "0 thrown"
contains "thread samples are not called CPU time" "$OUT" "thread samples, not CPU time"
expect_exit "report the idle cpu-sampling trace" 0 "$CLRTAP" trace report "$WORK/idle.nettrace"
lacks "idle: no hint to collect what was collected" "$OUT" "collect with the cpu-sampling profile"
contains "idle: says the app was mostly idle" "$OUT" "mostly idle: "
expect_exit "report the idle trace --json" 0 "$CLRTAP" trace report "$WORK/idle.nettrace" --json
equals "idle: the span covers the session (>= 0.9 s), not just the rundown" "$(j 'd["trace"]["duration_ns"] >= 900000000')" True

# 1d. Contention with the stacks ContentionStart carries.
collect_workload "$WORK/cont.nettrace" contention 3 contention --threads 4 --seconds 2
expect_exit "report contention --json" 0 "$CLRTAP" trace report "$WORK/cont.nettrace" --json
check "contention: waits started" test "$(j 'd["contention"]["starts"]')" -gt 10
contains "contention: the top site's stack has the contending method" \
	"$(j 'd["contention"]["sites"][0]["stack"]')" "Clrtap.Fixtures.Contention::Contend"
expect_exit "report contention (text)" 0 "$CLRTAP" trace report "$WORK/cont.nettrace"
contains "contention: text names where threads waited" "$OUT" "where threads waited"
contains "contention: text has the stack" "$OUT" "at Clrtap.Fixtures.Contention::Contend"

# 2. GC: K induced, compacting, blocking gen-2 collections, with pauses.
K=4
collect_workload "$WORK/gc.nettrace" gc-collect 4 gc --count $K
expect_exit "report gc --json" 0 "$CLRTAP" trace report "$WORK/gc.nettrace" --json
equals "$K GCs, all gen 2" "$(j 'd["gc"]["count"], d["gc"]["by_gen"]')" "($K, [0, 0, $K])"
equals "$K induced gen-2 GCs" "$(j 'd["gc"]["induced_by_gen"][2]')" $K
equals "reason InducedCompacting" "$(j 'd["gc"]["by_reason"]')" "{'InducedCompacting': $K}"
equals "pauses from SuspendEE/RestartEE" "$(j 'd["gc"]["pause_source"], d["gc"]["pauses"]')" "('SuspendEE/RestartEE', $K)"
equals "pauses > 0 and < 1 s" \
	"$(j 'all(0 < d["gc"][k] < 10**9 for k in ("pause_p50_ns","pause_p95_ns","pause_p99_ns","pause_max_ns"))')" True
equals "percentiles ordered, max = p99 for $K pauses" \
	"$(j '(lambda g: g["pause_p50_ns"] <= g["pause_p95_ns"] <= g["pause_p99_ns"] == g["pause_max_ns"])(d["gc"])')" True
equals "paused share between 0 and 100 %" "$(j '0 < d["gc"]["paused_pct"] < 100')" True
expect_exit "report gc (text)" 0 "$CLRTAP" trace report "$WORK/gc.nettrace"
contains "text: GC line" "$OUT" "GC: $K collections (gen0 0, gen1 0, gen2 $K; 0 background)"
contains "text: induced" "$OUT" "induced: gen0 0, gen1 0, gen2 $K"
contains "text: pause percentiles" "$OUT" "p50 "
te_compare gc "$WORK/gc.nettrace"

# 3. Allocations: AllocTarget is the top allocated type.
collect_workload "$WORK/alloc.nettrace" gc-verbose 3 alloc
expect_exit "report alloc --json" 0 "$CLRTAP" trace report "$WORK/alloc.nettrace" --json --top 3
equals "AllocTarget tops allocations" "$(j 'd["allocations"]["types"][0]["type"]')" "Clrtap.Fixtures.AllocTarget"
equals "AllocTarget has more than 90 % of the sampled bytes" \
	"$(j 'd["allocations"]["types"][0]["bytes"] * 10 > d["allocations"]["bytes"] * 9')" True
equals "--top 3 caps the table" "$(j 'len(d["allocations"]["types"]) <= 3')" True
te_compare alloc "$WORK/alloc.nettrace"

# 4. Sampled stacks, from a fixture in its own PID + mount namespace.
start_fixture_ns cpu-split
expect_exit "collect cpu-sampling (namespaced cpu-split)" 0 "$CLRTAP" trace collect -p "$FIX_PID" --profile cpu-sampling -d 3 -o "$WORK/cpu.nettrace"
stop_fixture "$FIX_PID"
expect_exit "report cpu --json --flame" 0 "$CLRTAP" trace report "$WORK/cpu.nettrace" --json --top 5 --flame "$WORK/cpu.folded"
equals "HotA is the top self frame" "$(j 'd["samples"]["top_self"][0]["name"]')" "Clrtap.Fixtures.CpuSplit::HotA"
equals "HotA has more samples than HotB (3:1 split)" \
	"$(j '(lambda t: t["Clrtap.Fixtures.CpuSplit::HotA"] > t.get("Clrtap.Fixtures.CpuSplit::HotB", 0) > 0)({x["name"]: x["self"] for x in d["samples"]["top_self"]})')" True
equals "CpuSplit::Run in the total top 5" "$(j 'any(x["name"]=="Clrtap.Fixtures.CpuSplit::Run" for x in d["samples"]["top_total"])')" True
INFLAME=$(j 'd["samples"]["in_flame"]')
equals "folded file sums to the samples in the flame" \
	"$(awk '{s += $NF} END {print s}' "$WORK/cpu.folded")" "$INFLAME"
contains "folded stacks run root to HotA" "$(cat "$WORK/cpu.folded")" "Clrtap.Fixtures.CpuSplit::Run;Clrtap.Fixtures.CpuSplit::HotA "
expect_exit "report cpu (text)" 0 "$CLRTAP" trace report "$WORK/cpu.nettrace" --top 5
contains "text: top self table" "$OUT" "Clrtap.Fixtures.CpuSplit::HotA"
te_compare cpu-sampling "$WORK/cpu.nettrace"

# convert: default name beside the input, every format
expect_exit "convert (default speedscope)" 0 "$CLRTAP" trace convert "$WORK/cpu.nettrace"
contains "convert names its output" "$OUT" "wrote $WORK/cpu.speedscope.json (speedscope, $INFLAME samples"
equals "speedscope JSON has HotA" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(any(f["name"]=="Clrtap.Fixtures.CpuSplit::HotA" for f in d["shared"]["frames"]))' "$WORK/cpu.speedscope.json")" True
for f in folded html svg pprof; do
	expect_exit "convert --format $f" 0 "$CLRTAP" trace convert "$WORK/cpu.nettrace" --format $f -o "$WORK/conv.$f"
done
equals "convert folded = report --flame folded" "$(cmp -s "$WORK/conv.folded" "$WORK/cpu.folded" && echo same)" same
contains "html has HotA" "$(cat "$WORK/conv.html")" "CpuSplit::HotA"
contains "svg is SVG with HotA" "$(head -c 300 "$WORK/conv.svg"; grep -c 'CpuSplit::HotA' "$WORK/conv.svg")" "<svg"
check "pprof output is gzip" gzip -t "$WORK/conv.pprof"
expect_exit "convert: format from -o name" 0 "$CLRTAP" trace convert "$WORK/cpu.nettrace" -o "$WORK/x.svg"
contains "format from the name" "$OUT" "(svg,"
expect_exit "convert a trace without samples warns" 0 "$CLRTAP" trace convert "$WORK/gc.nettrace" -f folded -o "$WORK/none.folded"
contains "no-samples warning" "$ERR" "has no sampled stacks"

# 5. Damaged files: cuts at block boundaries, random cuts, flipped bytes.
BOUNDS=$(python3 - "$WORK/ex.nettrace" <<'EOF'
import re, sys
d = open(sys.argv[1], "rb").read()
# a block object starts 15 bytes before its type name (tags, versions, name length)
print(" ".join(str(m.start() - 15) for m in re.finditer(rb"(EventBlock|MetadataBlock|StackBlock|SPBlock)", d)))
EOF
)
SIZE=$(stat -c %s "$WORK/ex.nettrace")
read -r -a B <<<"$BOUNDS"
NB=${#B[@]}
check "found block boundaries ($NB)" test "$NB" -gt 5
prev=0
mono=ok
for i in 1 2 $((NB / 3)) $((NB / 2)) $((NB - 2)) $((NB - 1)); do
	off=${B[$i]}
	head -c "$off" "$WORK/ex.nettrace" >"$WORK/cut.nettrace"
	expect_exit "cut at block boundary $off: exit 8" 8 "$CLRTAP" trace report "$WORK/cut.nettrace" --json
	contains "cut at $off: message names the offset" "$ERR" "at byte offset $off"
	n=$(j 'd["exceptions"]["total"]')
	equals "cut at $off: json says incomplete at $off" "$(j 'd["complete"], d["error"]["offset"]')" "(False, $off)"
	[ "$n" -ge "$prev" ] && [ "$n" -le $N ] || mono="bad: $n after $prev at $off"
	prev=$n
done
equals "exceptions before block cuts grow and stay <= $N" "$mono" ok
equals "the last boundary keeps all $N exceptions" "$prev" $N
head -c $((SIZE / 2)) "$WORK/ex.nettrace" >"$WORK/half.nettrace"
expect_exit "cut in the middle: exit 8" 8 "$CLRTAP" trace report "$WORK/half.nettrace"
contains "middle cut: report printed first" "$OUT" "INCOMPLETE: damaged at byte offset"
contains "middle cut: clear error" "$ERR" "is damaged or truncated at byte offset"
equals "middle cut: 0 < exceptions before it <= $N" \
	"$("$CLRTAP" trace report "$WORK/half.nettrace" --json 2>/dev/null | python3 -c 'import json,sys; n=json.load(sys.stdin)["exceptions"]["total"]; print(0 < n <= '$N')')" True

# random cuts and byte flips, with this binary and (if built) the ASan one
fuzz_files() {
	local bin=$1 tag=$2 i off rc bad=""
	for ((i = 0; i < 15; i++)); do
		off=$(((RANDOM * 32768 + RANDOM) % (SIZE - 1) + 1))
		head -c "$off" "$WORK/ex.nettrace" >"$WORK/r.nettrace"
		"$bin" trace report "$WORK/r.nettrace" >/dev/null 2>"$WORK/r.err"
		rc=$?
		if [ $rc -ne 8 ] || ! grep -q "byte offset" "$WORK/r.err"; then bad+=" cut@$off:rc=$rc"; fi
		cp "$WORK/ex.nettrace" "$WORK/f.nettrace"
		python3 - "$WORK/f.nettrace" "$((RANDOM))" <<'EOF'
import random, sys
p = sys.argv[1]; r = random.Random(int(sys.argv[2]))
d = bytearray(open(p, "rb").read())
for _ in range(8):
    d[r.randrange(len(d))] ^= 1 << r.randrange(8)
open(p, "wb").write(bytes(d))
EOF
		"$bin" trace report "$WORK/f.nettrace" --json >/dev/null 2>"$WORK/f.err"
		rc=$?
		# a flip inside a string payload leaves a valid stream: 0 is fine then
		if [ $rc -ne 0 ] && { [ $rc -ne 8 ] || ! grep -q "byte offset" "$WORK/f.err"; }; then
			bad+=" flip:rc=$rc:$(head -c 200 "$WORK/f.err")"
		fi
	done
	equals "$tag: 15 random cuts exit 8 and 15 flipped files exit 0 or 8, no crash" "${bad:-none}" none
}
fuzz_files "$CLRTAP" "random damage"
if [ -n "${SAN_CLRTAP:-}" ] && [ -x "$SAN_CLRTAP" ]; then
	fuzz_files "$SAN_CLRTAP" "random damage under ASan"
	ASAN_OPTIONS=detect_leaks=1 expect_exit "ASan: full report of the cpu trace" 0 "$SAN_CLRTAP" trace report "$WORK/cpu.nettrace" --flame "$WORK/san.html"
fi

# 6. Bad input and usage.
expect_exit "missing file: exit 1" 1 "$CLRTAP" trace report "$WORK/nope.nettrace"
contains "missing file: message" "$ERR" "cannot open $WORK/nope.nettrace: No such file or directory"
printf 'hello, not a trace\n' >"$WORK/text.nettrace"
expect_exit "not a nettrace file: exit 8" 8 "$CLRTAP" trace report "$WORK/text.nettrace"
contains "not a nettrace file: message" "$ERR" "is not a nettrace file"
: >"$WORK/empty.nettrace"
expect_exit "empty file: exit 8" 8 "$CLRTAP" trace convert "$WORK/empty.nettrace" -o "$WORK/e.folded"
check "empty file: convert writes nothing" test ! -e "$WORK/e.folded" -a ! -e "$WORK/e.folded.partial"
lacks "empty file: no profile hint" "$ERR" "cpu-sampling"
contains "empty file: says nothing was written" "$ERR" "nothing written"
# A damaged trace with samples: only a file marked partial, no misleading hint.
head -c $(($(stat -c %s "$WORK/cpu.nettrace") / 2)) "$WORK/cpu.nettrace" >"$WORK/cpuhalf.nettrace"
expect_exit "convert a damaged trace: exit 8" 8 "$CLRTAP" trace convert "$WORK/cpuhalf.nettrace" -f folded -o "$WORK/h.folded"
check "damaged: no h.folded" test ! -e "$WORK/h.folded"
check "damaged: h.folded.partial kept" test -s "$WORK/h.folded.partial"
contains "damaged: says it is incomplete" "$OUT" "wrote $WORK/h.folded.partial"
lacks "damaged: no profile hint" "$ERR" "cpu-sampling"
check "no temporary file left by convert" test -z "$(ls "$WORK" | grep -- '.tmp-')"
expect_exit "report without a file" 2 "$CLRTAP" trace report
expect_exit "report --top 0" 2 "$CLRTAP" trace report "$WORK/ex.nettrace" --top 0
expect_exit "report --flame with an unknown extension" 2 "$CLRTAP" trace report "$WORK/ex.nettrace" --flame "$WORK/x.png"
expect_exit "convert --format bogus" 2 "$CLRTAP" trace convert "$WORK/ex.nettrace" --format bogus
expect_exit "unknown subcommand" 2 "$CLRTAP" trace frobnicate
finish
