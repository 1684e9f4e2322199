#!/usr/bin/env bash
# clrtap serve with N (20) .NET processes running (half of them namespaced):
# idle RSS and CPU of the server, latency p50/p99 of GET /api/v1/processes
# (keep-alive client, RUNS requests), /metrics scrape time with a collector
# per process, and RSS then. Beside dotnet-monitor (NuGet global tool,
# installed into build/tools if the registry serves it): its idle RSS and
# the latency of its GET /processes, same client, same processes.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
TOOLS=$ROOT/build/tools
RUNS=${RUNS:-300}
N=${N:-20}
pids=()
out=$(mktemp -d)
cleanup() {
	exec 2>/dev/null # no "Killed" notices for the fixtures
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 2
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT

for ((i = 0; i < N; i++)); do
	if ((i % 2)); then
		"$ROOT/tests/tools/contain.sh" "$DLL" idle >"$out/f$i" 2>&1 &
	else
		dotnet "$DLL" idle >"$out/f$i" 2>&1 &
	fi
	pids+=($!)
done
for ((i = 0; i < N; i++)); do wait_line "$out/f$i" '^READY' 60; done
# host pids of the fixtures (the namespaced ones are children of contain.sh)
fix=()
for p in "${pids[@]}"; do
	c=$(pgrep -P "$p" -x dotnet | head -1)
	fix+=("${c:-$p}")
done
list=$(IFS=,; echo "${fix[*]}")

# rss_kb PID; cpu_ticks PID
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# lat URL RUNS [TOKEN]: p50 and p99 in ms over one keep-alive connection
lat() {
	python3 - "$@" <<'EOF'
import http.client, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); n = int(sys.argv[2])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
t = []
for i in range(n + 5):
    s = time.perf_counter()
    c.request("GET", u.path, headers={"Authorization": "Bearer " + sys.argv[3]} if len(sys.argv) > 3 else {})
    r = c.getresponse(); r.read()
    if r.status != 200: print("status", r.status, file=sys.stderr); sys.exit(1)
    if i >= 5: t.append((time.perf_counter() - s) * 1000)
t.sort()
print("%.2f %.2f" % (t[len(t) // 2], t[min(len(t) - 1, int(len(t) * 0.99))]))
EOF
}

PORT=$((20000 + RANDOM % 20000))
"$CLRTAP" serve --listen "127.0.0.1:$PORT" --db "$out/serve.db" --pids "$list" >"$out/serve.out" 2>&1 &
SP=$!
pids+=($SP)
wait_line "$out/serve.out" 'history in' 20
# the token it printed (every TCP address needs one)
TOKEN=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$out/serve.out")
AUTH="Authorization: Bearer $TOKEN"
sleep 2
t0=$(cpu_ticks $SP)
sleep 10
t1=$(cpu_ticks $SP)
hz=$(getconf CLK_TCK)
echo "processes running: $N sample fixtures ($((N / 2)) namespaced)"
seen=$(curl -s -H "$AUTH" "http://127.0.0.1:$PORT/api/v1/processes" | python3 -c "
import json,sys; s=set(int(x) for x in '$list'.split(',')); print(len([p for p in json.load(sys.stdin)['processes'] if p['pid'] in s]))")
echo "clrtap serve lists $seen of them"
echo "clrtap serve idle: RSS $(rss_kb $SP) KB, CPU $(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz / 10 * 100}') % of a core over 10 s"
read -r p50 p99 < <(lat "http://127.0.0.1:$PORT/api/v1/processes" "$RUNS" "$TOKEN")
echo "clrtap serve GET /api/v1/processes: p50 $p50 ms, p99 $p99 ms ($RUNS requests)"
# /metrics: the first scrape starts the collectors and waits for their first values
T0=$(date +%s%N)
series=$(curl -s -H "$AUTH" "http://127.0.0.1:$PORT/metrics" | grep -c '^clrtap_dotnet_cpu_usage{')
T1=$(date +%s%N)
echo "clrtap serve first GET /metrics ($N new collectors): $(((T1 - T0) / 1000000)) ms, $series processes with values"
series=$(curl -s -H "$AUTH" "http://127.0.0.1:$PORT/metrics" | grep -c '^clrtap_dotnet_cpu_usage{')
read -r m50 m99 < <(lat "http://127.0.0.1:$PORT/metrics" 100 "$TOKEN")
echo "clrtap serve GET /metrics ($series processes with values): p50 $m50 ms, p99 $m99 ms (100 scrapes)"
echo "clrtap serve with $N collectors: RSS $(rss_kb $SP) KB"
kill -TERM $SP
wait $SP 2>/dev/null

if need_tool dotnet-monitor; then
	MP=$((20000 + RANDOM % 20000))
	DOTNETMONITOR_Urls="http://127.0.0.1:$MP" "$TOOLS/dotnet-monitor" collect --no-auth \
		--urls "http://127.0.0.1:$MP" --metricUrls "http://127.0.0.1:$((MP + 1))" >"$out/mon.out" 2>&1 &
	MPID=$!
	pids+=($MPID)
	for ((w = 0; w < 300; w++)); do curl -s -o /dev/null "http://127.0.0.1:$MP/processes" && break; sleep 0.1; done
	sleep 10
	mrss=$(rss_kb $MPID)
	echo "dotnet-monitor idle: RSS $mrss KB"
	read -r d50 d99 < <(lat "http://127.0.0.1:$MP/processes" "$RUNS")
	echo "dotnet-monitor GET /processes: p50 $d50 ms, p99 $d99 ms ($RUNS requests)"
	awk -v a="$p50" -v b="$d50" 'BEGIN {printf "ratio: p50 latency dotnet-monitor / clrtap serve = %.1f\n", b / a}'
	kill -TERM $MPID
fi
