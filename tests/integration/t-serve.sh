#!/usr/bin/env bash
# clrtap serve: every endpoint against real fixtures. Processes (host and
# namespaced), sessions of several kinds (a 3 s profile with the hot method in
# its report, an exceptions analysis with the exact count (lib/analyze), a
# hotpaths analysis and a doctor session with their facts, two at once on one
# target, cancel mid-run, a target killed mid-session), artifacts byte for byte,
# live views (SSE), /metrics scraped by a real Prometheus and queried by PromQL,
# the OpenAPI document against the routes, history across a restart, and the
# hostile side: bad pids and params, path traversal in every id and name,
# oversized bodies, a slow client, a non-loopback listen without a token; the
# web surface (a per-start token on loopback, Host, Origin, content type, no
# CORS, DNS rebinding; the history's files 0600). The browser's side of it is
# in t-ui.sh.
. "$(dirname "$0")/lib.sh"

DB=$WORK/db/serve.db
mkdir -p "$WORK/db"
SERVER_PIDS=()
CLEANUP_CMD='for p in "${SERVER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; [ -n "${PROM_PID:-}" ] && kill -KILL "$PROM_PID" 2>/dev/null'

# start_server LOG ARGS...: clrtap serve in the background; SRV_PID, SRV_OUT,
# TOKEN (the token it printed, else empty).
start_server() {
	local log=$1
	shift
	SRV_OUT=$WORK/$log.out
	"$CLRTAP" serve "$@" >"$SRV_OUT" 2>"$WORK/$log.err" &
	SRV_PID=$!
	SERVER_PIDS+=("$SRV_PID")
	wait_for_line "$SRV_OUT" 'history in' 20 "$SRV_PID" >/dev/null || {
		not_ok "server $log started" "$(cat "$SRV_OUT" "$WORK/$log.err")"
		finish
	}
	TOKEN=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$SRV_OUT")
}
# acurl ARGS...: curl with the server's token.
acurl() { curl ${TOKEN:+-H "Authorization: Bearer $TOKEN"} "$@"; }
stop_server() {
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# api METHOD PATH [BODY]: HTTP to $BASE; CODE and BODY (also in $WORK/body).
api() {
	local m=$1 p=$2
	shift 2
	if [ $# -gt 0 ]; then
		CODE=$(acurl -s --path-as-is -o "$WORK/body" -w '%{http_code}' -X "$m" \
			-H 'Content-Type: application/json' --data-binary "$1" "$BASE$p")
	else
		CODE=$(acurl -s --path-as-is -o "$WORK/body" -w '%{http_code}' -X "$m" "$BASE$p")
	fi
	BODY=$(cat "$WORK/body")
}
# jb EXPR: python over the last body (d).
jb() { json_get "$BODY" "$1"; }

# expect_api NAME STATUS CODE METHOD PATH [BODY]: an error with that HTTP status and exit code.
expect_api() {
	local name=$1 status=$2 code=$3
	shift 3
	api "$@"
	if [ "$CODE" = "$status" ] && [ "$(json_get "$BODY" 'd["error"]["code"]' 2>/dev/null)" = "$code" ]; then
		ok "$name ($CODE, code $code)"
	else
		not_ok "$name" "want $status/code $code, got $CODE: ${BODY:0:400}"
	fi
}

# wait_session ID [SECONDS]: until the session is no longer queued/running; STATUS.
wait_session() {
	local id=$1 secs=${2:-90} i
	for ((i = 0; i < secs * 5; i++)); do
		api GET "/api/v1/sessions/$id"
		STATUS=$(jb 'd["status"]' 2>/dev/null)
		[ "$STATUS" != queued ] && [ "$STATUS" != running ] && return 0
		sleep 0.2
	done
	return 1
}
# start_session BODY: POST; SID.
start_session() {
	api POST /api/v1/sessions "$1"
	SID=$(jb 'd["id"]' 2>/dev/null)
	[ "$CODE" = 201 ] || echo "    POST $1 -> $CODE ${BODY:0:300}"
}
# wait_running ID FILE PATTERN: the session's own stderr says PATTERN (armed)
wait_armed() {
	wait_for_line "$WORK/db/sessions/$1/stderr.txt" "$2" 30 >/dev/null
}

start_fixture cpu-split
CPU=$FIX_PID
start_fixture exceptions --count 7 --trigger "$WORK/trig-exc"
EXC=$FIX_PID
PORT=$(free_port)
start_server srv1 --listen "127.0.0.1:$PORT" --db "$DB" --pids "$CPU,$EXC"
S1=$SRV_PID
BASE=http://127.0.0.1:$PORT
contains "prints where it listens" "$(cat "$SRV_OUT")" "listening on http://127.0.0.1:$PORT/"
contains "says it is root-equivalent" "$(cat "$SRV_OUT")" "root-equivalent"
check "loopback: a per-start token printed (48 hex)" bash -c "[[ '$TOKEN' =~ ^[0-9a-f]{48}$ ]]"
contains "loopback: the UI's address with the token printed" "$(cat "$SRV_OUT")" "the UI: http://127.0.0.1:$PORT/?token=$TOKEN"

# ---- processes ----
# the runtime's version and assembly come from ProcessInfo: on a loaded machine
# the first ask may time out (then it is asked again 10 s later)
for ((i = 0; i < 40; i++)); do
	api GET /api/v1/processes
	[ "$(jb "[p['assembly'] for p in d['processes'] if p['pid']==$CPU]" 2>/dev/null)" = "['sample']" ] && break
	sleep 1
done
equals "processes: 200" "$CODE" 200
equals "processes: the cpu fixture listed" "$(jb "[p['pid'] for p in d['processes'] if p['pid']==$CPU]")" "[$CPU]"
equals "processes: its runtime version" "$(jb "[p['runtime'].split('.')[0] for p in d['processes'] if p['pid']==$CPU][0]")" \
	"$(dotnet --list-runtimes | awk '/Microsoft.NETCore.App/ {print $2}' | tail -1 | cut -d. -f1)"
equals "processes: entry assembly" "$(jb "[p['assembly'] for p in d['processes'] if p['pid']==$CPU][0]")" sample
equals "processes: host process not namespaced" "$(jb "[p['container']['namespaced'] for p in d['processes'] if p['pid']==$CPU][0]")" False
api GET "/api/v1/processes/$CPU"
equals "process info: 200" "$CODE" 200
equals "process info: pid" "$(jb 'd["pid"]')" "$CPU"
# the runtime may start or end a thread meanwhile: within 2 of /proc's count
check "process info: threads as /proc says" python3 -c "import sys; sys.exit(0 if abs($(jb 'd["threads"]') - $(awk '/^Threads:/ {print $2}' /proc/$CPU/status)) <= 2 else 1)"
check "process info: rss" test "$(jb 'd["rss_bytes"]')" -gt 1000000

sleep 30 &
SLEEP=$!
KILL_PIDS+=("$SLEEP")
sh -c 'exit 0' &
DEAD=$!
wait $DEAD
expect_api "unknown pid" 404 3 GET /api/v1/processes/2147483647
expect_api "dead pid" 404 3 GET "/api/v1/processes/$DEAD"
expect_api "not .NET" 400 4 GET "/api/v1/processes/$SLEEP"
expect_api "bad pid" 400 2 GET /api/v1/processes/12abc
expect_api "pid 0" 400 2 GET /api/v1/processes/0
expect_api "unknown route" 404 2 GET /api/v1/nothing
expect_api "wrong method" 405 2 DELETE /metrics
expect_api "session for a dead pid" 404 3 POST /api/v1/sessions "{\"kind\":\"stacks\",\"pid\":$DEAD}"
contains "dead pid: the CLI's message" "$BODY" "no process with pid $DEAD"
expect_api "session for a non-.NET pid" 400 4 POST /api/v1/sessions "{\"kind\":\"stacks\",\"pid\":$SLEEP}"
expect_api "unknown kind" 400 2 POST /api/v1/sessions "{\"kind\":\"nope\",\"pid\":$CPU}"
expect_api "unknown analyzer" 400 2 POST /api/v1/sessions "{\"kind\":\"analyze\",\"pid\":$CPU,\"params\":{\"analyzer\":\"gc\"}}"
contains "unknown analyzer: lists lib/analyze's analyzers (the task table's choices)" "$BODY" "exceptions hotpaths leaks memory"
expect_api "analyze without an analyzer" 400 2 POST /api/v1/sessions "{\"kind\":\"analyze\",\"pid\":$CPU}"
expect_api "doctor: unknown param" 400 2 POST /api/v1/sessions "{\"kind\":\"doctor\",\"pid\":$CPU,\"params\":{\"analyzer\":\"memory\"}}"
expect_api "duration 0" 400 2 POST /api/v1/sessions "{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"duration\":0}}"
expect_api "unknown param" 400 2 POST /api/v1/sessions "{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"output\":\"/tmp/x\"}}"
expect_api "not JSON" 400 2 POST /api/v1/sessions "kind=profile"
expect_api "pid as a string" 400 2 POST /api/v1/sessions "{\"kind\":\"stacks\",\"pid\":\"$CPU\"}"

# ---- a 3 s profile: the hot method in the report, the artifact byte for byte ----
start_session "{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"duration\":3}}"
equals "profile: 201" "$CODE" 201
PROF=$SID
check "profile: id shape" bash -c "[[ '$PROF' =~ ^s-[0-9a-f]{16}$ ]]"
equals "profile: listed at once" "$(acurl -s "$BASE/api/v1/sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"][0]["id"])')" "$PROF"
wait_session "$PROF"
equals "profile: done" "$STATUS" done
equals "profile: exit code 0" "$(jb 'd["exit_code"]')" 0
equals "profile: duration param kept" "$(jb 'd["params"]["duration"]')" 3
check "profile: elapsed >= 3 s" python3 -c "import sys; sys.exit(0 if $(jb 'd["progress"]["elapsed_s"]') >= 3 else 1)"
equals "profile: report named" "$(jb 'd["report"]')" report.json
api GET "/api/v1/sessions/$PROF/report"
equals "profile report: 200" "$CODE" 200
check "profile report (the task's result): CpuSplit::HotA has self samples, within the total" python3 -c "
import json,sys; d=json.loads(sys.argv[1])
n=sum(t['self'] for t in d['top'] if t['name'].endswith('CpuSplit::HotA'))
sys.exit(0 if d['task'] == 'profile' and n > 0 and d['samples'] >= n else 1)" "$BODY"
acurl -s -D "$WORK/hdr" -o "$WORK/folded" "$BASE/api/v1/sessions/$PROF/artifacts/profile.folded"
check "artifact: bytes as on disk" cmp "$WORK/folded" "$WORK/db/sessions/$PROF/profile.folded"
contains "artifact: attachment" "$(cat "$WORK/hdr")" 'Content-Disposition: attachment; filename="profile.folded"'
check "artifact: HotA in the folded file" grep -q 'CpuSplit::HotA' "$WORK/folded"
expect_api "artifact not in the list" 404 2 GET "/api/v1/sessions/$PROF/artifacts/trace.nettrace"
expect_api "unknown session" 404 2 GET /api/v1/sessions/s-0000000000000000
expect_api "cancel a finished session" 409 2 DELETE "/api/v1/sessions/$PROF"

# ---- two sessions at once on one target ----
start_session "{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"duration\":2}}"
A=$SID
start_session "{\"kind\":\"counters\",\"pid\":$CPU,\"params\":{\"duration\":2}}"
B=$SID
check "two at once: both running" bash -c "[ -n '$A' ] && [ -n '$B' ] && [ '$A' != '$B' ]"
wait_session "$A"
equals "two at once: profile done" "$STATUS" done
wait_session "$B"
equals "two at once: counters done" "$STATUS" done
api GET "/api/v1/sessions/$B/report"
check "two at once: counters report has cpu-usage of the target" python3 -c "
import json,sys; d=json.loads(sys.argv[1])
sys.exit(0 if d['pid']==$CPU and any(v['name']=='cpu-usage' for v in d['values']) else 1)" "$BODY"

# ---- stacks: run in the server's worker thread through lib/stacks ----
start_session "{\"kind\":\"stacks\",\"pid\":$CPU}"
STK=$SID
wait_session "$STK"
equals "stacks (in-process): done" "$STATUS" done
api GET "/api/v1/sessions/$STK/report"
check "stacks (in-process): the workload thread is in CpuSplit" python3 -c "
import json,sys; d=json.loads(sys.argv[1])
sys.exit(0 if d['pid']==$CPU and any('Clrtap.Fixtures.CpuSplit::' in f for t in d['threads'] for f in t['frames']) else 1)" "$BODY"
cp "$WORK/body" "$WORK/stacks-serve.json"
"$CLRTAP" stacks -p "$CPU" --json >"$WORK/stacks-cli.json"
check "stacks (in-process): the same document keys as clrtap stacks --json" python3 -c "
import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
# a thread's keys: tid, name, frames, and raw_frames only where a source name differs (which
# thread comes first varies between two samplings): compared as the keys every thread has
ka=set.intersection(*[set(t) for t in a['threads']]); kb=set.intersection(*[set(t) for t in b['threads']])
sys.exit(0 if sorted(a)==sorted(b) and ka==kb=={'tid','name','frames'} else 1)" "$WORK/stacks-cli.json" "$WORK/stacks-serve.json"
start_session "{\"kind\":\"stacks\",\"pid\":$DEAD}"
equals "stacks: dead pid refused before it starts" "$CODE" 404

# ---- an exceptions analysis: the exact count ----
start_session "{\"kind\":\"analyze\",\"pid\":$EXC,\"params\":{\"analyzer\":\"exceptions\",\"duration\":4}}"
EXS=$SID
wait_armed "$EXS" 'analyzing pid' || sleep 1.5
sleep 1.5
touch "$WORK/trig-exc"
wait_session "$EXS"
equals "exceptions analysis: done" "$STATUS" done
api GET "/api/v1/sessions/$EXS/report"
equals "exceptions analysis: lib/analyze's report" "$(jb 'd["analyzer"]')" exceptions
equals "exceptions analysis: exactly 7" "$(jb 'd["result"]["total"]')" 7
equals "exceptions analysis: the type" "$(jb 'd["result"]["groups"][0]["type"]')" Clrtap.Fixtures.FixtureException
api GET "/api/v1/sessions/$EXS"
equals "exceptions analysis: report.json, .md and .html" \
	"$(jb 'sorted(a["name"] for a in d["artifacts"] if a["name"].startswith("report."))')" \
	"['report.html', 'report.json', 'report.md']"
contains "exceptions analysis: the Markdown report names the type" \
	"$(acurl -s "$BASE/api/v1/sessions/$EXS/artifacts/report.md")" "FixtureException"

# ---- hotpaths (another analyzer): HotA first; doctor: findings ----
start_session "{\"kind\":\"analyze\",\"pid\":$CPU,\"params\":{\"analyzer\":\"hotpaths\",\"duration\":3}}"
HPS=$SID
wait_session "$HPS"
equals "hotpaths analysis: done" "$STATUS" done
api GET "/api/v1/sessions/$HPS/report"
equals "hotpaths analysis: HotA first" "$(jb 'd["result"]["methods"][0]["method"]')" Clrtap.Fixtures.CpuSplit::HotA
start_session "{\"kind\":\"doctor\",\"pid\":$CPU,\"params\":{\"duration\":2}}"
DOC=$SID
wait_session "$DOC"
equals "doctor: done" "$STATUS" done
api GET "/api/v1/sessions/$DOC/report"
equals "doctor: CPU busy ranked first, a warning" "$(jb '[d["findings"][0]["severity"], d["findings"][0]["title"].startswith("CPU busy")]')" "['warning', True]"
contains "doctor: the evidence names HotA" "$(jb 'd["findings"][0]["evidence"]')" "CpuSplit::HotA"
check "doctor: each finding has its next command" python3 -c "
import json,sys; f=json.loads(sys.argv[1])['findings']
sys.exit(0 if f and all(x['next'].startswith('clrtap ') for x in f) else 1)" "$BODY"

# ---- trace, dump, gcdump: artifacts and reports ----
start_session "{\"kind\":\"trace\",\"pid\":$CPU,\"params\":{\"duration\":2}}"
TRS=$SID
wait_session "$TRS"
equals "trace: done" "$STATUS" done
check "trace: the .nettrace artifact starts with the magic" bash -c "curl -sf -H 'Authorization: Bearer $TOKEN' '$BASE/api/v1/sessions/$TRS/artifacts/trace.nettrace' | head -c 8 | grep -q Nettrace"
api GET "/api/v1/sessions/$TRS/report"
equals "trace: report" "$CODE" 200
start_session "{\"kind\":\"dump\",\"pid\":$CPU,\"params\":{\"type\":\"mini\"}}"
DMP=$SID
wait_session "$DMP"
equals "dump: done" "$STATUS" done
check "dump: core.dump is an ELF core" bash -c "curl -sf -H 'Authorization: Bearer $TOKEN' '$BASE/api/v1/sessions/$DMP/artifacts/core.dump' | head -c 4 | od -An -c | grep -q 'E   L   F'"
api GET "/api/v1/sessions/$DMP/report"
equals "dump: the report names the file" "$(jb 'd["path"]')" "$WORK/db/sessions/$DMP/core.dump"
start_fixture heap --shape leak --count 321
HEAP=$FIX_PID
start_session "{\"kind\":\"gcdump\",\"pid\":$HEAP}"
GCD=$SID
wait_session "$GCD"
equals "gcdump: done" "$STATUS" done
api GET "/api/v1/sessions/$GCD/report"
equals "gcdump: exactly 321 leaked items" "$(jb '[x["count"] for x in d["types"] if x["type"]=="Clrtap.Fixtures.HeapLeakItem"][0]')" 321
stop_fixture "$HEAP"

# ---- cancel mid-run ----
start_session "{\"kind\":\"trace\",\"pid\":$CPU,\"params\":{\"duration\":60}}"
TR=$SID
sleep 2
api DELETE "/api/v1/sessions/$TR"
equals "cancel: 200" "$CODE" 200
equals "cancel: status cancelled" "$(jb 'd["status"]')" cancelled
check "cancel: ended well before 60 s" python3 -c "import sys; sys.exit(0 if $(jb 'd["progress"]["elapsed_s"]') < 20 else 1)"
check "cancel: the target lives on" kill -0 "$CPU"
check "cancel: no clrtap child left" bash -c "! pgrep -f '[c]lrtap trace collect -p $CPU' >/dev/null"

# cancel an in-process session (counters): its own stop flag; what it read is kept
start_session "{\"kind\":\"counters\",\"pid\":$CPU,\"params\":{\"duration\":60}}"
CC=$SID
sleep 4
api DELETE "/api/v1/sessions/$CC"
equals "cancel in-process: status cancelled" "$(jb 'd["status"]')" cancelled
api GET "/api/v1/sessions/$CC/report"
check "cancel in-process: the values read so far are the report" python3 -c "
import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if any(v['name']=='cpu-usage' for v in d['values']) else 1)" "$BODY"
check "cancel in-process: the other sessions' server lives on" kill -0 "$S1"

# ---- a target that dies mid-session ----
start_fixture idle
VICTIM=$FIX_PID
start_session "{\"kind\":\"counters\",\"pid\":$VICTIM,\"params\":{\"duration\":20}}"
V=$SID
sleep 2
kill -KILL "$VICTIM"
wait_session "$V" 40
equals "target died: session failed" "$STATUS" failed
api GET "/api/v1/sessions/$V"
equals "target died: code 9 (partial)" "$(jb 'd["error"]["code"]')" 9
contains "target died: the CLI's message" "$(jb 'd["error"]["message"]')" "the target went away during the session"
api GET /api/v1/processes
equals "target died: server still answers" "$CODE" 200
check "target died: server alive" kill -0 "$S1"

# ---- probe: a child clrtap (task_spawn); its calls counted in the result ----
N=5
start_fixture probe-warm --calls "$N" --interval-ms 2 --trigger "$WORK/trig-probe"
PW=$FIX_PID
start_session "{\"kind\":\"probe\",\"pid\":$PW,\"params\":{\"method\":\"System.Convert::ToString(int,int)\",\"duration\":6}}"
PS=$SID
wait_armed "$PS" 'tracing|waiting' || true
touch "$WORK/trig-probe"
wait_session "$PS"
equals "probe: done" "$STATUS" done
api GET "/api/v1/sessions/$PS/report"
equals "probe: the result counts every call" "$(jb 'd["methods"][0]["calls"]')" "$N"

# ---- live views ----
acurl -s -N --max-time 20 "$BASE/api/v1/processes/$CPU/counters/live?max_s=4" >"$WORK/live" || true
contains "counters live: counter events" "$(cat "$WORK/live")" 'event: counter'
check "counters live: cpu-usage of the fixture, > 0" python3 -c "
import json,sys
vals=[json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith('data: {')]
sys.exit(0 if any(v['name']=='cpu-usage' and v['pid']==$CPU and v['value']>0 for v in vals) else 1)" "$WORK/live"
acurl -s -N --max-time 20 "$BASE/api/v1/top/live?max_s=3" >"$WORK/top" || true
check "top live: the first event already has the fixture's CPU share (issue 33: it was null)" python3 -c "
import json,sys
ev=[json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith('data: {')]
r=[r for r in ev[0]['rows'] if r['pid']==$CPU] if ev else []
sys.exit(0 if r and r[0]['cpu'] is not None and r[0]['cpu']>1 else 1)" "$WORK/top"
check "top live: the fixture, busy" python3 -c "
import json,sys
rows=[r for l in open(sys.argv[1]) if l.startswith('data: {') for r in json.loads(l[6:])['rows']]
sys.exit(0 if any(r['pid']==$CPU and r['cpu'] is not None and r['cpu']>1 for r in rows) else 1)" "$WORK/top"
expect_api "counters live: dead pid" 404 3 GET "/api/v1/processes/$DEAD/counters/live"
expect_api "events: unknown session" 404 2 GET /api/v1/sessions/s-0000000000000000/events

# ---- /metrics and a real Prometheus ----
# the first scrape of a process already carries its families (issue 33): it
# waits for the new collector's first interval; the exceptions fixture was
# never scraped nor viewed live before this
acurl -s "$BASE/metrics" >"$WORK/metrics"
contains "metrics: cpu-usage labelled" "$(cat "$WORK/metrics")" "clrtap_dotnet_cpu_usage{pid=\"$CPU\",process=\"dotnet\",container_id=\"\",pod_uid=\"\"}"
contains "metrics: TYPE line" "$(cat "$WORK/metrics")" "# TYPE clrtap_dotnet_gc_heap_size gauge"
check "metrics: the first scrape of a new process has all its families (as many as the second), up 1, pending 0" python3 - "$WORK/metrics" "$EXC" "$(acurl -s "$BASE/metrics")" <<'EOF'
import re, sys
def fams(text, pid):
    return {m.group(1) for m in re.finditer(r'^(clrtap_dotnet_\w+)\{pid="%s",[^}]*\} (\S+)$' % pid, text, re.M)}
first = open(sys.argv[1]).read(); pid = sys.argv[2]; second = sys.argv[3]
a, b = fams(first, pid), fams(second, pid)
up = re.search(r'^clrtap_dotnet_up\{pid="%s",.*\} (\d)$' % pid, first, re.M)
pend = re.search(r'^clrtap_dotnet_pending\{pid="%s",.*\} (\d)$' % pid, first, re.M)
ok = len(a) >= 20 and a == b and up and up.group(1) == '1' and pend and pend.group(1) == '0'
if not ok:
    print("    first:", len(a), "second:", len(b), "missing:", sorted(b - a)[:10], "up:", up and up.group(1), "pending:", pend and pend.group(1))
sys.exit(0 if ok else 1)
EOF
if command -v prometheus >/dev/null; then
	PPORT=$(free_port)
	cat >"$WORK/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: clrtap
    authorization:
      credentials: $TOKEN
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
	prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/prom" \
		--web.listen-address="127.0.0.1:$PPORT" >"$WORK/prom.log" 2>&1 &
	PROM_PID=$!
	R=""
	for ((i = 0; i < 120; i++)); do
		R=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=clrtap_dotnet_cpu_usage{pid=\"$CPU\"}" 2>/dev/null)
		[[ "$R" == *'"result":[{'* ]] && break
		sleep 1
	done
	check "prometheus: PromQL returns the fixture's cpu-usage with its labels" python3 -c "
import json,sys; d=json.loads(sys.argv[1]); r=d['data']['result']
m=r[0]['metric']
sys.exit(0 if len(r)==1 and m['pid']=='$CPU' and m['process']=='dotnet' and m['job']=='clrtap' and float(r[0]['value'][1])>0 else 1)" "$R"
	[[ "$R" == *'"result":[{'* ]] || { echo "    prometheus log:"; tail -15 "$WORK/prom.log" | sed 's/^/    /'; }
	R=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode 'query=up{job="clrtap"}')
	contains "prometheus: target up" "$R" '"value":[' 
	kill -TERM "$PROM_PID"
	wait "$PROM_PID" 2>/dev/null
	PROM_PID=
else
	not_ok "prometheus installed" "scripts/install-deps.sh installs the prometheus package"
fi

# ---- OpenAPI: each route served is documented and each documented route is served ----
api GET /api/v1/openapi.json
equals "openapi: 200" "$CODE" 200
check "openapi: routes match the server's (serve.h) both ways, and each answers" python3 - "$BODY" "$ROOT/lib/serve/serve.h" "$BASE" "$TOKEN" <<'EOF'
import json, re, sys, urllib.request, urllib.error
doc = json.loads(sys.argv[1]); base = sys.argv[3]
assert doc["openapi"].startswith("3.0"), doc["openapi"]
served = set()
for m in re.finditer(r"/\* ([A-Z|]+) (/[^ ]*)(?: and (/[^ ]*))? ", open(sys.argv[2]).read()):
    for path in filter(None, (m.group(2), m.group(3))):
        path = path.replace("...", "{path}") if path.startswith("/ui/") else path
        for meth in m.group(1).split("|"):
            served.add((meth.lower(), path.rstrip(":")))
documented = {(meth, p) for p, ops in doc["paths"].items() for meth in ops}
bad = served ^ documented
if bad:
    print("mismatch:", sorted(bad)); sys.exit(1)
# every ref resolves
def refs(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "$ref": yield v
            else: yield from refs(v)
    elif isinstance(o, list):
        for v in o: yield from refs(v)
for r in refs(doc):
    node = doc
    for part in r.lstrip("#/").split("/"): node = node[part]
# each documented GET path answers with something other than "no such resource"
for meth, p in documented:
    if meth != "get" or "{" in p or p.endswith("/live"): continue
    try:
        urllib.request.urlopen(urllib.request.Request(base + p, headers={"Authorization": "Bearer " + sys.argv[4]}), timeout=10).read()
    except urllib.error.HTTPError as e:
        print("GET", p, e.code); sys.exit(1)
EOF
if command -v openapi-spec-validator >/dev/null; then
	check "openapi: openapi-spec-validator" openapi-spec-validator "$WORK/body"
fi

# ---- UI ----
api GET /
equals "ui: / 200" "$CODE" 200
contains "ui: html" "$BODY" "<html"
expect_api "ui: unknown file" 404 2 GET /ui/nope.js

# ---- the web surface: what a page in a browser on this machine could send ----
# (the browser itself, a page of another origin trying fetch and a form POST,
# is in t-ui.sh). Each refused request must start nothing: the history's count
# and the sessions directory are compared at the end.
api GET /api/v1/sessions
NSESS=$(jb 'len(d["sessions"])')
NDIRS=$(find "$WORK/db/sessions" -mindepth 1 -maxdepth 1 | wc -l)
START="{\"kind\":\"stacks\",\"pid\":$CPU}"
# wcurl NAME STATUS CODE ARGS...: a raw request (token included) must get STATUS and exit code CODE
wcurl() {
	local name=$1 status=$2 code=$3
	shift 3
	CODE=$(acurl -s -D "$WORK/whdr" -o "$WORK/body" -w '%{http_code}' "$@")
	BODY=$(cat "$WORK/body")
	if [ "$CODE" = "$status" ] && [ "$(json_get "$BODY" 'd["error"]["code"]' 2>/dev/null)" = "$code" ]; then
		ok "$name ($CODE, code $code)"
	else
		not_ok "$name" "want $status/code $code, got $CODE: ${BODY:0:300}"
	fi
}
# the issue's request: a "simple" cross-origin POST (no preflight in a browser)
wcurl "text/plain POST from another origin: 403" 403 5 -X POST -H 'Content-Type: text/plain' \
	-H 'Origin: http://evil.example' --data "$START" "$BASE/api/v1/sessions"
wcurl "text/plain POST without an Origin: 415" 415 2 -X POST -H 'Content-Type: text/plain' --data "$START" "$BASE/api/v1/sessions"
wcurl "form POST (urlencoded): 415" 415 2 -X POST --data-urlencode "x=$START" "$BASE/api/v1/sessions"
wcurl "form POST (multipart): 415" 415 2 -X POST -F "x=$START" "$BASE/api/v1/sessions"
wcurl "POST without a content type: 415" 415 2 -X POST -H 'Content-Type:' --data-binary "$START" "$BASE/api/v1/sessions"
wcurl "JSON POST from a page on another loopback port: 403" 403 5 -X POST -H 'Content-Type: application/json' \
	-H "Origin: http://127.0.0.1:$((PORT == 65535 ? 1 : PORT + 1))" --data "$START" "$BASE/api/v1/sessions"
wcurl "JSON POST from a sandboxed page (Origin: null): 403" 403 5 -X POST -H 'Content-Type: application/json' \
	-H 'Origin: null' --data "$START" "$BASE/api/v1/sessions"
wcurl "JSON POST fetched cross-site (Sec-Fetch-Site): 403" 403 5 -X POST -H 'Content-Type: application/json' \
	-H 'Sec-Fetch-Site: same-site' --data "$START" "$BASE/api/v1/sessions"
wcurl "DELETE from another origin: 403" 403 5 -X DELETE -H 'Origin: http://evil.example' "$BASE/api/v1/sessions/$PROF"
wcurl "a CORS preflight from another origin: 403" 403 5 -X OPTIONS -H 'Origin: http://evil.example' \
	-H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type' "$BASE/api/v1/sessions"
lacks "the preflight's answer allows nothing (no Access-Control-* header)" "$(cat "$WORK/whdr")" "ccess-Control-"
wcurl "a same-origin preflight: 405, no CORS" 405 2 -X OPTIONS -H "Origin: http://127.0.0.1:$PORT" \
	-H 'Access-Control-Request-Method: POST' "$BASE/api/v1/sessions"
lacks "same-origin preflight: no Access-Control-* header" "$(cat "$WORK/whdr")" "ccess-Control-"
wcurl "a cross-origin read of the API: 403" 403 5 -H 'Origin: http://evil.example' "$BASE/api/v1/processes"
lacks "cross-origin read: no process in the answer" "$BODY" "\"pid\""
lacks "cross-origin read: no Access-Control-* header" "$(cat "$WORK/whdr")" "ccess-Control-"
# DNS rebinding: the right address, a foreign name in Host
wcurl "Host: evil.example: 403" 403 5 -H 'Host: evil.example' "$BASE/api/v1/processes"
wcurl "Host: evil.example:PORT: 403" 403 5 -H "Host: evil.example:$PORT" "$BASE/api/v1/processes"
CODE=$(acurl -s -o "$WORK/body" -w '%{http_code}' --resolve "rebind.example:$PORT:127.0.0.1" "http://rebind.example:$PORT/api/v1/processes?token=$TOKEN")
equals "DNS rebinding (a name resolved to 127.0.0.1, token and all): 403" "$CODE" 403
lacks "DNS rebinding: reads nothing" "$(cat "$WORK/body")" "\"pid\""
CODE=$(acurl -s -o "$WORK/body" -w '%{http_code}' --resolve "rebind.example:$PORT:127.0.0.1" "http://rebind.example:$PORT/metrics")
equals "DNS rebinding: /metrics 403" "$CODE" 403
lacks "DNS rebinding: /metrics reads nothing" "$(cat "$WORK/body")" "clrtap_dotnet"
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --resolve "rebind.example:$PORT:127.0.0.1" "http://rebind.example:$PORT/")
equals "DNS rebinding: not even the UI's page (403)" "$CODE" 403
wcurl "Host: evil.example on a valid session POST: 403" 403 5 -X POST -H 'Host: evil.example' \
	-H 'Content-Type: application/json' --data "$START" "$BASE/api/v1/sessions"
wcurl "Host: the right address, another port: 403" 403 5 -H "Host: 127.0.0.1:$((PORT == 65535 ? 1 : PORT + 1))" "$BASE/api/v1/processes"
wcurl "Host: an IPv6 literal that is not this address: 403" 403 5 -H "Host: [::2]:$PORT" "$BASE/api/v1/processes"
CODE=$(printf 'GET /api/v1/processes HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$TOKEN" | timeout 10 python3 -c "
import socket,sys; s=socket.create_connection(('127.0.0.1',$PORT)); s.sendall(sys.stdin.buffer.read()); print(s.recv(64).split()[1].decode())")
equals "no Host at all (HTTP/1.0): 403" "$CODE" 403
CODE=$(acurl -s -o /dev/null -w '%{http_code}' "http://localhost:$PORT/api/v1/processes")
equals "Host: localhost:PORT (loopback) is this server: 200" "$CODE" 200
# the token: every API call on loopback needs it; ?token= only on GET
CODE=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/processes")
equals "loopback without the token: 401" "$CODE" 401
CODE=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data "$START" "$BASE/api/v1/sessions?token=$TOKEN")
equals "?token= does not authorize a POST: 401" "$CODE" 401
CODE=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/metrics")
equals "/metrics without the token: 401" "$CODE" 401
# the same-origin request the UI makes is served
wcurl "a same-origin JSON POST reaches the session checks (a dead pid: 404)" 404 3 -X POST -H 'Content-Type: application/json; charset=utf-8' \
	-H "Origin: http://127.0.0.1:$PORT" -H 'Sec-Fetch-Site: same-origin' --data "{\"kind\":\"stacks\",\"pid\":$DEAD}" "$BASE/api/v1/sessions"
api GET /api/v1/sessions
equals "no refused request started a session (history)" "$(jb 'len(d["sessions"])')" "$NSESS"
equals "no refused request started a session (directories)" "$(find "$WORK/db/sessions" -mindepth 1 -maxdepth 1 | wc -l)" "$NDIRS"
curl -s -D "$WORK/whdr" -o /dev/null "$BASE/"
contains "the UI may not be framed by another page" "$(cat "$WORK/whdr")" "X-Frame-Options: DENY"
contains "no address (it may hold ?token=) leaves in a Referer" "$(cat "$WORK/whdr")" "Referrer-Policy: no-referrer"
# the history's files: the owner's alone, and no secret in them
equals "serve.db is 0600" "$(stat -c %a "$DB")" 600
equals "serve.db-wal is 0600" "$(stat -c %a "$DB-wal")" 600
equals "sessions/ is 0700" "$(stat -c %a "$WORK/db/sessions")" 700
equals "no session file or directory open to group or others" "$(find "$WORK/db/sessions" -mindepth 1 \( -type d ! -perm 700 -o -type f ! -perm 600 \) -printf '%m %p\n' | head -5)" ""
check "the session files checked include a child's (profile.folded, core.dump) and the server's (report.json)" \
	test -f "$WORK/db/sessions/$PROF/profile.folded" -a -f "$WORK/db/sessions/$DMP/core.dump" -a -f "$WORK/db/sessions/$PROF/report.json"
equals "the token is in no file of the history" "$(grep -rlF "$TOKEN" "$WORK/db" | head -3)" ""

# ---- path traversal in every id, name and parameter ----
for p in "/api/v1/sessions/../../../../etc/passwd" "/api/v1/sessions/$PROF/artifacts/../../../../etc/passwd" \
	"/api/v1/sessions/$PROF/artifacts/..%2f..%2f..%2fetc%2fpasswd" "/api/v1/sessions/$PROF/artifacts/%2e%2e" \
	"/api/v1/sessions/$PROF/artifacts/.." "/api/v1/sessions/..%2f$PROF/report" "/ui/../../../etc/passwd" \
	"/ui/..%2f..%2fetc/passwd" "/api/v1/sessions/$PROF/../$PROF/report" "/api/v1/processes/..%2f1" \
	"/api/v1/sessions/s-../artifacts/x"; do
	api GET "$p"
	check "traversal refused: $p" bash -c "[ '$CODE' = 404 ] || [ '$CODE' = 400 ]"
	lacks "traversal: no file content: $p" "$BODY" "root:"
done
for body in "{\"kind\":\"probe\",\"pid\":$CPU,\"params\":{\"method\":\"../../etc/passwd\"}}" \
	"{\"kind\":\"dump\",\"pid\":$CPU,\"params\":{\"type\":\"../../../tmp/x\"}}" \
	"{\"kind\":\"trace\",\"pid\":$CPU,\"params\":{\"profile\":\"../x\"}}" \
	"{\"kind\":\"trace\",\"pid\":$CPU,\"params\":{\"providers\":\"--output=/etc/x\"}}" \
	"{\"kind\":\"counters\",\"pid\":$CPU,\"params\":{\"counters\":\"/etc/passwd\"}}" \
	"{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"engine\":\"../perf\"}}" \
	"{\"kind\":\"../profile\",\"pid\":$CPU}" "{\"kind\":\"stacks\",\"pid\":\"../$CPU\"}"; do
	expect_api "traversal in params refused: $body" 400 2 POST /api/v1/sessions "$body"
done

# ---- oversized bodies ----
head -c 200000 /dev/zero | tr '\0' 'a' >"$WORK/big"
CODE=$(acurl -s -o "$WORK/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/big" "$BASE/api/v1/sessions")
equals "oversized body: 413" "$CODE" 413
equals "oversized body: code 2" "$(json_get "$(cat "$WORK/body")" 'd["error"]["code"]')" 2
CODE=$(acurl -s -o "$WORK/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$WORK/big" "$BASE/api/v1/sessions")
equals "oversized chunked body (no length): 413" "$CODE" 413
CODE=$(acurl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 100000 /dev/zero | tr '\0' 'b')" "$BASE/api/v1/processes")
check "oversized headers refused ($CODE)" bash -c "[ '$CODE' = 413 ] || [ '$CODE' = 431 ] || [ '$CODE' = 400 ] || [ '$CODE' = 000 ]"

# ---- a slow client does not block others ----
exec 7<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /api/v1/proc' >&7
exec 8<>"/dev/tcp/127.0.0.1/$PORT"
printf 'POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"ki' >&8
T0=$(date +%s%N)
api GET /api/v1/processes
T1=$(date +%s%N)
equals "slow clients: others are served" "$CODE" 200
echo "    (answered in $(((T1 - T0) / 1000000)) ms with two stalled connections open)"
exec 7>&- 8>&-

# ---- restart: the history is still there ----
stop_server "$S1"
check "server stopped on SIGTERM" bash -c "! kill -0 $S1 2>/dev/null"
# as an older clrtap left them: 0644 and 0755
chmod 644 "$DB"
chmod 755 "$WORK/db/sessions"
start_server srv2 --listen "127.0.0.1:$PORT" --db "$DB" --pids "$CPU" --allow-host box.example
equals "restart: an older 0644 serve.db is made 0600" "$(stat -c %a "$DB")" 600
equals "restart: an older 0755 sessions/ is made 0700" "$(stat -c %a "$WORK/db/sessions")" 700
CODE=$(acurl -s -o /dev/null -w '%{http_code}' --resolve "box.example:$PORT:127.0.0.1" "http://box.example:$PORT/api/v1/processes")
equals "--allow-host box.example: that name is served" "$CODE" 200
CODE=$(acurl -s -o /dev/null -w '%{http_code}' --resolve "box2.example:$PORT:127.0.0.1" "http://box2.example:$PORT/api/v1/processes")
equals "--allow-host box.example: another name is not (403)" "$CODE" 403
api GET /api/v1/sessions
check "restart: every session still listed" python3 -c "
import json,sys; ids={s['id'] for s in json.loads(sys.argv[1])['sessions']}
sys.exit(0 if {'$PROF','$A','$B','$EXS','$TR','$V','$PS','$GCD','$DMP'} <= ids else 1)" "$BODY"
api GET "/api/v1/sessions/$PROF"
equals "restart: status kept" "$(jb 'd["status"]')" done
acurl -s -o "$WORK/folded2" "$BASE/api/v1/sessions/$PROF/artifacts/profile.folded"
check "restart: artifact still downloadable" cmp "$WORK/folded2" "$WORK/folded"
api GET "/api/v1/sessions/$EXS/report"
equals "restart: report kept" "$(jb 'd["result"]["total"]')" 7
stop_server "$SRV_PID"

# ---- history limit ----
start_server srv3 --listen "127.0.0.1:$PORT" --db "$DB" --max-sessions 2
api GET /api/v1/sessions
equals "history limit: 2 kept" "$(jb 'len(d["sessions"])')" 2
check "history limit: dropped sessions' files removed" test ! -e "$WORK/db/sessions/$PROF"
stop_server "$SRV_PID"

# ---- a namespaced fixture ----
start_fixture_ns cpu-split
NS=$FIX_PID
start_server srv4 --listen "127.0.0.1:$PORT" --db "$WORK/db/ns.db" --pids "$NS"
api GET "/api/v1/processes/$NS"
equals "namespaced: found" "$CODE" 200
equals "namespaced: marked" "$(jb 'd["container"]["namespaced"]')" True
equals "namespaced: pid 1 inside" "$(jb 'd["nspid"]')" 1
start_session "{\"kind\":\"counters\",\"pid\":$NS,\"params\":{\"duration\":2}}"
wait_session "$SID"
equals "namespaced: counters session done" "$STATUS" done
sleep 1
contains "namespaced: metrics (first scrape)" "$(acurl -s "$BASE/metrics")" "clrtap_dotnet_cpu_usage{pid=\"$NS\""
stop_server "$SRV_PID"

# ---- auth: non-loopback needs a token ----
P2=$(free_port)
start_server srv5 --listen "0.0.0.0:$P2" --db "$WORK/db/auth.db"
TOKEN=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$SRV_OUT")
check "non-loopback: token printed (48 hex)" bash -c "[[ '$TOKEN' =~ ^[0-9a-f]{48}$ ]]"
BASE=http://127.0.0.1:$P2
T5=$TOKEN
TOKEN=
expect_api "no token: 401" 401 5 GET /api/v1/processes
expect_api "no token on /metrics: 401" 401 5 GET /metrics
expect_api "no token on a POST: 401" 401 5 POST /api/v1/sessions "{\"kind\":\"stacks\",\"pid\":$CPU}"
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${T5}x" "$BASE/api/v1/processes")
equals "wrong token: 401" "$CODE" 401
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T5" "$BASE/api/v1/processes")
equals "bearer token: 200" "$CODE" 200
CODE=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/processes?token=$T5")
equals "?token= on GET: 200" "$CODE" 200
stop_server "$SRV_PID"
printf 'abcdefabcdefabcdef0123\n' >"$WORK/tok"
chmod 644 "$WORK/tok"
expect_exit "token file readable by others refused" 2 "$CLRTAP" serve --listen "0.0.0.0:$P2" --token-file "$WORK/tok" --db "$WORK/db/auth.db"
chmod 600 "$WORK/tok"
start_server srv6 --listen "0.0.0.0:$P2" --token-file "$WORK/tok" --db "$WORK/db/auth.db"
lacks "token file: token not printed" "$(cat "$SRV_OUT")" abcdefabcdef
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer abcdefabcdefabcdef0123" "$BASE/api/v1/processes")
equals "token file: its token works" "$CODE" 200
expect_api "token file: none, 401" 401 5 GET /api/v1/processes
stop_server "$SRV_PID"

# ---- a 0600 Unix socket ----
start_server srv7 --unix "$WORK/serve.sock" --db "$WORK/db/unix.db"
equals "unix socket: mode 0600" "$(stat -c %a "$WORK/serve.sock")" 600
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --unix-socket "$WORK/serve.sock" http://x/api/v1/processes)
equals "unix socket: 200 without a token" "$CODE" 200
stop_server "$SRV_PID"
check "unix socket: removed at exit" test ! -e "$WORK/serve.sock"

expect_exit "bad --listen" 2 "$CLRTAP" serve --listen nope
expect_exit "bad --allow-host" 2 "$CLRTAP" serve --allow-host 'a b' --db "$WORK/db/x.db"
expect_exit "--listen and --unix" 2 "$CLRTAP" serve --listen 127.0.0.1:1 --unix "$WORK/x.sock"
expect_exit "unix socket cannot be made" 1 "$CLRTAP" serve --db "$WORK/db/x.db" --unix /dev/null/x

check "fixtures survived everything" kill -0 "$CPU"
finish
