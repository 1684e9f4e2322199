#!/usr/bin/env bash
# clrtap counters monitor|collect: System.Runtime EventCounters from a live
# session (alloc-rate > 0 while the alloc fixture allocates), CSV and JSON
# files, name filters, an EventSource and a Meter by name (ASP.NET Core
# Hosting in the web fixture: exact request totals and a histogram), the
# System.Runtime Meter, Ctrl-C and SIGKILL, a namespaced target, errors.
. "$(dirname "$0")/lib.sh"

# csv_check FILE PYTHON-EXPR: rows is a list of dicts (csv.DictReader).
csv_check() {
	python3 - "$1" "$2" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ok = eval(sys.argv[2])
if not ok:
    print("rows:", len(rows), rows[:3], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}
json_check() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
vals = d["values"]
ok = eval(sys.argv[2])
if not ok:
    print("values:", len(vals), vals[:3], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

# 1. The alloc fixture: CSV with the System.Runtime counters.
start_fixture alloc
expect_exit "collect csv for 3 s" 0 "$CLRTAP" counters collect -p "$FIX_PID" --format csv -o "$WORK/c.csv" -d 3
contains "collect says what it wrote" "$OUT" "wrote $WORK/c.csv"
equals "csv header" "$(head -1 "$WORK/c.csv")" "timestamp,source,type,name,tags,kind,value,units,interval_sec"
for name in cpu-usage gc-heap-size alloc-rate working-set gen-0-gc-count exception-count threadpool-thread-count time-in-gc; do
	check "csv has $name" csv_check "$WORK/c.csv" "any(r['name'] == '$name' and r['source'] == 'System.Runtime' for r in rows)"
done
check "csv: every row well-formed (9 fields, numeric value)" csv_check "$WORK/c.csv" \
	"len(rows) >= 20 and all(len(r) == 9 and None not in r.values() and float(r['value']) == float(r['value']) for r in rows)"
check "csv: alloc-rate > 0 in every interval (at least 2)" csv_check "$WORK/c.csv" \
	"len([r for r in rows if r['name'] == 'alloc-rate']) >= 2 and all(float(r['value']) > 0 for r in rows if r['name'] == 'alloc-rate')"
check "csv: alloc-rate is a delta in B, cpu-usage a mean in %" csv_check "$WORK/c.csv" \
	"all(r['kind'] == 'delta' and r['units'] == 'B' for r in rows if r['name'] == 'alloc-rate') and all(r['kind'] == 'mean' and r['units'] == '%' for r in rows if r['name'] == 'cpu-usage')"

# 2. JSON, with a name filter and a 2 s interval.
expect_exit "collect json, filtered, interval 2" 0 "$CLRTAP" counters collect -p "$FIX_PID" --format json -o "$WORK/c.json" \
	-d 5 --interval 2 --counters "System.Runtime[alloc-rate,gc-heap-size,cpu-usage]"
check "json parses; only the three names" json_check "$WORK/c.json" \
	"d['interval_sec'] == 2 and set(v['name'] for v in vals) == {'alloc-rate', 'gc-heap-size', 'cpu-usage'}"
check "json: alloc-rate > 0 and intervals about 2 s" json_check "$WORK/c.json" \
	"all(v['value'] > 0 and 1.5 < v['interval_sec'] < 2.5 for v in vals if v['name'] == 'alloc-rate')"
check "json: fields" json_check "$WORK/c.json" \
	"all(set(v) == {'timestamp','source','type','name','display_name','tags','kind','value','units','interval_sec'} for v in vals) and any(v['display_name'] == 'Allocation Rate' for v in vals)"

# 3. monitor, stdout not a TTY: timestamped lines.
expect_exit "monitor lines for 3 s" 0 "$CLRTAP" counters monitor -p "$FIX_PID" -d 3 --counters "System.Runtime[alloc-rate,cpu-usage]"
contains "monitor: alloc-rate line" "$OUT" " System.Runtime alloc-rate "
contains "monitor: cpu-usage line" "$OUT" " System.Runtime cpu-usage "
lacks "monitor: filtered out gc-heap-size" "$OUT" "gc-heap-size"
check "monitor: lines start with an ISO timestamp" bash -c '[[ "$1" =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9:.]+Z\ System.Runtime ]]' _ "$OUT"

# 4. The System.Runtime Meter (System.Diagnostics.Metrics).
expect_exit "collect the System.Runtime meter" 0 "$CLRTAP" counters collect -p "$FIX_PID" --meters System.Runtime \
	--format csv -o "$WORK/m.csv" -d 4
check "meter: total_allocated grows (delta > 0)" csv_check "$WORK/m.csv" \
	"any(r['type'] == 'meter' and r['name'] == 'dotnet.gc.heap.total_allocated' and r['kind'] == 'delta' and float(r['value']) > 0 for r in rows)"
NPROC=$(nproc)
check "meter: dotnet.process.cpu.count is $NPROC" csv_check "$WORK/m.csv" \
	"[float(r['value']) for r in rows if r['name'] == 'dotnet.process.cpu.count'][:1] == [$NPROC.0]"
check "meter: tagged series (gc.heap.generation=gen0)" csv_check "$WORK/m.csv" \
	"any(r['name'] == 'dotnet.gc.collections' and r['tags'] == 'gc.heap.generation=gen0' for r in rows)"
check "meter only: no EventCounters rows" csv_check "$WORK/m.csv" "all(r['type'] == 'meter' for r in rows)"

# 5. Ctrl-C stops monitor cleanly; SIGKILL leaves the target healthy.
"$CLRTAP" counters monitor -p "$FIX_PID" >"$WORK/int.out" 2>"$WORK/int.err" &
MON=$!
wait_for_line "$WORK/int.out" " alloc-rate " 20 "$MON"
kill -INT "$MON"
wait "$MON"
equals "monitor: SIGINT exit code" "$?" 0
"$CLRTAP" counters monitor -p "$FIX_PID" >"$WORK/kill.out" 2>/dev/null &
MON=$!
wait_for_line "$WORK/kill.out" " alloc-rate " 20 "$MON"
kill -KILL "$MON"
wait "$MON" 2>/dev/null
sleep 1
kill -0 "$FIX_PID" && ok "target alive after clrtap was killed" || not_ok "target alive after clrtap was killed"
expect_exit "a new counters session after the kill" 0 "$CLRTAP" counters collect -p "$FIX_PID" -d 2 --format json -o "$WORK/after.json"
check "after the kill: values again" json_check "$WORK/after.json" "any(v['name'] == 'alloc-rate' and v['value'] > 0 for v in vals)"
# --max-size: the file stops growing at the cap (one value past it at most),
# is kept as FILE.partial (JSON still closed), exit 9, and the session ends.
mkdir "$WORK/cap"
expect_exit "collect --max-size 2K stops early" 9 timeout 30 "$CLRTAP" counters collect -p "$FIX_PID" -d 20 \
	--max-size 2K -o "$WORK/cap/c.csv"
contains "--max-size: says so" "$ERR" "stopped at --max-size (2048 bytes)"
contains "--max-size: names the partial file" "$ERR" "kept the"
equals "--max-size: only c.csv.partial" "$(ls -A "$WORK/cap")" "c.csv.partial"
size=$(stat -c %s "$WORK/cap/c.csv.partial")
check "--max-size: 2 KiB, plus one value at most ($size bytes)" test "$size" -ge 2048 -a "$size" -le 2600
expect_exit "collect --max-size 2K --format json" 9 timeout 30 "$CLRTAP" counters collect -p "$FIX_PID" -d 20 \
	--max-size 2K --format json -o "$WORK/cap/c.json"
check "--max-size: the partial JSON is well-formed" json_check "$WORK/cap/c.json.partial" "len(vals) > 0"
expect_exit "--max-size 12X is a usage error" 2 "$CLRTAP" counters collect -p "$FIX_PID" --max-size 12X
stop_fixture "$FIX_PID"

# 6. An EventSource and a Meter by name: ASP.NET Core Hosting in the web fixture.
PORT=$(free_port)
start_fixture web --port "$PORT"
# HostingEventSource counts requests only while it is enabled: none before the session.
curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null
"$CLRTAP" counters monitor -p "$FIX_PID" --counters Microsoft.AspNetCore.Hosting --meters Microsoft.AspNetCore.Hosting \
	>"$WORK/web.out" 2>"$WORK/web.err" &
MON=$!
wait_for_line "$WORK/web.out" "Microsoft.AspNetCore.Hosting total-requests 0$" 20 "$MON" &&
	ok "EventSource by name: total-requests 0 at first" || not_ok "total-requests 0" "$(cat "$WORK/web.out")"
for i in 1 2 3 4 5; do curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=10" >/dev/null; done
wait_for_line "$WORK/web.out" "Microsoft.AspNetCore.Hosting total-requests 5$" 20 "$MON" &&
	ok "EventSource by name: total-requests 5 after 5 requests" || not_ok "total-requests 5" "$(cat "$WORK/web.out")"
for i in 1 2 3; do curl -s "http://127.0.0.1:$PORT/api/fibonacci?pos=10" >/dev/null; done
wait_for_line "$WORK/web.out" "Microsoft.AspNetCore.Hosting total-requests 8$" 20 "$MON" &&
	ok "EventSource by name: total-requests 8 after 3 more" || not_ok "total-requests 8" "$(cat "$WORK/web.out")"
# Sub-second times read in a fitting unit (72.7 µs, not 7.272e-05 s).
wait_for_line "$WORK/web.out" "http.server.request.duration\[.*http.route=/api/fibonacci.*Percentile=50\] [0-9]+(\.[0-9]+)? (ms|µs|ns)$" 20 "$MON" &&
	ok "Meter by name: request duration histogram (p50) in a readable unit" || not_ok "histogram p50" "$(cat "$WORK/web.out")"
kill -INT "$MON"
wait "$MON"
equals "web monitor: SIGINT exit code" "$?" 0
contains "Meter by name: p95 and p99 too" "$(cat "$WORK/web.out")" "Percentile=99]"
lacks "no exponent notation on screen" "$(grep 'request.duration' "$WORK/web.out")" "e-0"
# the unit that fits: 1 <= value < 1000 in ms or µs (72.7 µs, not 0.0727 ms)
P50=$(grep -E 'request.duration\[.*Percentile=50\] ' "$WORK/web.out" | tail -1 | awk '{print $(NF-1), $NF}')
check "p50 in the unit that fits ($P50)" python3 -c '
import sys
v, u = sys.argv[1].split()
v = float(v)
sys.exit(not ((u in ("ms", "\u00b5s") and 1 <= v < 1000) or (u == "s" and v >= 1) or (u == "ns" and v < 1000)))' "$P50"
stop_fixture "$FIX_PID"

# 7. A namespaced fixture (own PID + mount namespace, private /tmp).
start_fixture_ns alloc
expect_exit "namespaced: collect csv" 0 "$CLRTAP" counters collect -p "$FIX_PID" --format csv -o "$WORK/ns.csv" -d 3
check "namespaced: alloc-rate > 0" csv_check "$WORK/ns.csv" \
	"len([r for r in rows if r['name'] == 'alloc-rate']) >= 2 and all(float(r['value']) > 0 for r in rows if r['name'] == 'alloc-rate')"
check "namespaced: cpu-usage and gc-heap-size" csv_check "$WORK/ns.csv" \
	"{'cpu-usage', 'gc-heap-size'} <= set(r['name'] for r in rows)"

# 8. Errors.
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
expect_exit "dead pid" 3 "$CLRTAP" counters monitor -p "$DEAD" -d 1
sleep 30 &
NOTNET=$!
KILL_PIDS+=("$NOTNET")
expect_exit "not a .NET process" 4 "$CLRTAP" counters collect -p "$NOTNET" -d 1 -o "$WORK/x.csv"
expect_exit "bad --counters" 2 "$CLRTAP" counters monitor -p "$FIX_PID" --counters "System.Runtime[cpu-usage"
expect_exit "bad --interval" 2 "$CLRTAP" counters monitor -p "$FIX_PID" --interval 0
expect_exit "bad --duration" 2 "$CLRTAP" counters monitor -p "$FIX_PID" -d 1.5x
expect_exit "bad --format" 2 "$CLRTAP" counters collect -p "$FIX_PID" --format xml
expect_exit "unknown subcommand" 2 "$CLRTAP" counters watch -p "$FIX_PID"
expect_exit "unwritable output" 1 "$CLRTAP" counters collect -p "$FIX_PID" -d 1 -o /proc/none/x.csv
finish
