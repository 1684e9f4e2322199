#!/usr/bin/env bash
# Native memory (issue 31): analyze memory over its duration names the kind
# that grew and its rate (the sample's native-grow at 8 MiB/s through
# Marshal.AllocHGlobal, docs/fixtures.md), in JSON, HTML, doctor and
# watch's memory-growth rule.
. "$(dirname "$0")/lib.sh"

# jpy FILE EXPR: d is the JSON document in FILE; fails (and shows it) when EXPR is false
jpy() {
	python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(d)[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
PYEOF
}

MIB=1048576
start_fixture native-grow --mb 4096 --mb-per-second 8
expect_exit "analyze memory -d 8 on 8 MiB/s of AllocHGlobal" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 8 --json
echo "$OUT" >"$WORK/grow.json"
check "the kind that grew is native" jpy "$WORK/grow.json" 'd["result"]["growth"]["grew"] == "native"'
check "native grew at 8 MiB/s +-15%" jpy "$WORK/grow.json" \
	"[abs(k['rate_bytes_per_s'] - 8 * $MIB) <= 0.15 * 8 * $MIB for k in d['result']['growth']['kinds'] if k['kind'] == 'native'] == [True]"
check "readings every 0.5 s (or more, for the cost) over the 8 s, then one more at the end; the GC heap flat (< 4 MiB)" jpy "$WORK/grow.json" \
	"(g := d['result']['growth'])['readings'] >= 4 and g['period_s'] == 0.5 and g['smaps_reads'] > g['readings'] and g['smaps_read_ms_mean'] > 0 and 7 <= g['span_s'] <= 8.5 and all(abs(k['growth_bytes']) < 4 * $MIB for k in g['kinds'] if k['kind'] == 'gc_heap')"
check "the series: one point a reading, the kinds of the breakdown" jpy "$WORK/grow.json" \
	"len((g := d['result']['growth'])['series']) == g['readings'] and all(set(p) >= {'t_s', 'gc_heap', 'other_anon', 'native_heap', 'total'} for p in g['series'])"
expect_exit "analyze memory -d 4 as HTML" 0 "$CLRTAP" analyze -p "$FIX_PID" memory -d 4 -o "$WORK/grow.html"
contains "HTML: the growth sentence names native memory" "$(cat "$WORK/grow.html")" \
	"native memory outside the GC heap (malloc heap and other anonymous memory) grew by"
check "HTML: offline (no URL, no script), with the SVG chart: a line for native" \
	bash -c '! grep -Eqi "https?://|<script|src=|href=" "$1" && grep -q "<svg" "$1" && grep -q "native (malloc heap + other anon)</text>" "$1"' _ "$WORK/grow.html"
expect_exit "doctor -d 3 on the growth" 0 "$CLRTAP" doctor -p "$FIX_PID" -d 3 --json
echo "$OUT" >"$WORK/doctor.json"
check "doctor: the memory finding says native grew (a notice)" jpy "$WORK/doctor.json" \
	"[(f['severity'], 'native grew' in f['title']) for f in d['findings'] if f['analyzer'] == 'memory'] == [('notice', True)]"
expect_exit "watch: a growth rule per kind, 3 s" 0 "$CLRTAP" watch -p "$FIX_PID" -d 3 \
	'memory-growth native > 4MB/s' 'memory-growth gc_heap > 4MB/s'
check "watch: native growth fired (rule 0, 8 MiB/s +-15%), the flat GC heap never did" python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.argv[1].splitlines()]
f = [e for e in ev if e["event"] == "fired"]
sys.exit(0 if f and all(e["rule"] == 0 and e["trigger"] == "memory-growth" and abs(e["value"] - 8 * 2**20) <= 0.15 * 8 * 2**20 for e in f) else 1)' "$OUT"
expect_exit "watch: an unknown kind of memory is a usage error" 2 "$CLRTAP" watch -p "$FIX_PID" -d 1 'memory-growth heap > 1MB/s'
contains "watch: the error names the kinds" "$ERR" "'heap': not a kind of memory (native, total, gc_heap"
expect_exit "watch: a size without /s is a usage error" 2 "$CLRTAP" watch -p "$FIX_PID" -d 1 'memory-growth native > 1MB'
stop_fixture "$FIX_PID"
finish
