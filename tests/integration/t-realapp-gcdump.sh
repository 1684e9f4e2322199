#!/usr/bin/env bash
# gcdump and exception counts on the realapp fixture (docs/fixtures.md: ASP.NET
# Core minimal API, EF Core over SQLite, Identity; Web SDK defaults, Server GC)
# with a heap per core (dynamic adaptation off), under wrk load:
#  - gcdump collect succeeds while wrk runs, and dotnet-gcdump reads the same
#    objects per type from the same session (where it is installed); before
#    the reader put events back in time order, 4 of 4 collects on such an app
#    found "no complete heap walk";
#  - every bad POST /api/orders is exactly one first throw of
#    System.Text.Json.JsonException (the app's own json_failures count) and
#    one of the JsonReaderException it wraps; its rethrows by the awaiting async
#    frames (ParseAsync, ValidateAsync, ReadAsync at least) counted apart. One
#    app, one file: its start is most of the cost.
. "$(dirname "$0")/lib.sh"

need_realapp
start_realapp DOTNET_GCDynamicAdaptationMode=0

# 1. A snapshot under load.
realapp_load 4 /api/products &
LOAD=$!
sleep 1
expect_exit "gcdump collect under wrk load" 0 "$CLRTAP" gcdump collect -p "$REALAPP_PID" -o "$WORK/ra.heap" \
	--nettrace "$WORK/ra.nettrace"
wait "$LOAD"
expect_exit "gcdump report" 0 "$CLRTAP" gcdump report "$WORK/ra.heap" --json --top 0
printf '%s\n' "$OUT" >"$WORK/ra.json"
check "gcdump: an induced blocking gen-2 GC, nothing lost, the app's types there" python3 - "$WORK/ra.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
names = {t["type"] for t in d["types"]}
ok = (d["gc"]["induced"] and d["gc"]["generation"] == 2 and d["gc"]["blocking"] and d["lost_events"] == 0
      and d["objects"] > 10000 and any(n.startswith("RealApp.") for n in names))
if not ok:
    print(json.dumps(d)[:1500], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
if [ ! -x "$DGC" ]; then
	skip "dotnet-gcdump cross-check: no dotnet-gcdump (set DOTNET_GCDUMP, or dotnet tool install -g dotnet-gcdump)"
else
	STRINGS=$(python3 -c 'import json,sys; print(next(t["count"] for t in json.load(open(sys.argv[1]))["types"] if t["type"] == "System.String"))' "$WORK/ra.json")
	dgc_same "under load" "$WORK/ra.nettrace" "$WORK/ra.json" System.String "$STRINGS"
fi

# 2. Bad orders under load: one JsonException each, rethrown on the way up.
FAIL0=$(realapp_stats 'd["json_failures"]')
"$CLRTAP" trace collect -p "$REALAPP_PID" --profile exceptions -d 6 -o "$WORK/ex.nettrace" >"$WORK/tc.out" 2>&1 &
TC=$!
# (the file appears only when complete; the line comes as the session starts)
wait_for_line "$WORK/tc.out" "tracing pid" 10 "$TC" && sleep 1
REALAPP_BODY='{"sku":' realapp_load 2 /api/orders
wait "$TC"
N=$(($(realapp_stats 'd["json_failures"]') - FAIL0))
check "bad orders: the app answered some ($N) with 400" test "$N" -gt 100
expect_exit "analyze exceptions of the session" 0 "$CLRTAP" analyze "$WORK/ex.nettrace" exceptions --json
printf '%s\n' "$OUT" >"$WORK/ex.json"
check "bad orders: exactly $N first throws of JsonException (one per failure), its rethrows apart" \
	python3 - "$WORK/ex.json" "$N" <<'EOF'
import json, sys
d, n = json.load(open(sys.argv[1])), int(sys.argv[2])
t = {x["type"]: x for x in d["result"]["types"]}
j = t.get("System.Text.Json.JsonException")
r = t.get("System.Text.Json.JsonReaderException")
ok = (d["dropped_events"] == 0 and j and j["first"] == n and j["rethrown"] >= 3 * n
      and j["count"] == j["first"] + j["rethrown"] and r and r["first"] == n and r["rethrown"] == 0)
if not ok:
    print(json.dumps(d["result"]["types"]), d["dropped_events"], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
finish
