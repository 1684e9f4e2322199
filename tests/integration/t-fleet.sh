#!/usr/bin/env bash
# clrtap fleet (issue 27): continuous CPU windows of several .NET processes
# pushed to a loopback receiver speaking Pyroscope's /ingest and OTLP/HTTP
# (tests/tools/profrecv.py) and written as gzipped pprof files; everything read
# back with third-party decoders only (go tool pprof, protoc --decode over
# tests/tools/otlp-proto, opentelemetry-proto v1.11.0).
# Two fleets run side by side so that the 30 s outage costs no extra time:
# fleet A finds its targets by an environment variable (a process started
# while it runs is picked up, one that exits is dropped), with the
# allocation, exception and lock profiles (exact facts on the `mixed`
# fixture) and gzipped OTLP, and its windows are checked; fleet B profiles
# the hostile target and its receiver goes away for 30 s while A's checks
# run: no crash or stall, RSS under 64 MiB, its spool under its cap, the
# dropped windows counted on /metrics as the real prometheus scrapes it,
# pushing (and the spool) resumes. Fleet C checks that the spool outlives a
# restart. SIGTERM pushes the last windows within seconds.
. "$(dirname "$0")/lib.sh"
# test-run: alone

for tool in go protoc prometheus; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "$tool installed" "scripts/install-deps.sh installs golang-go, protobuf-compiler, prometheus"
		finish
	fi
done
CHECK=$ROOT/tests/tools/fleetcheck.py
export WORK
HOTA=Clrtap.Fixtures.CpuSplit::HotA
HOTB=Clrtap.Fixtures.CpuSplit::HotB
# fleet A profiles the processes started with this in their environment (not the other
# .NET processes of the machine)
KEY=CLRTAP_FLEET_TEST=t$$x$RANDOM

# ---- targets: a hostile one on the host (starting while the next one starts), a namespaced
# cpu-split in a containerd-named pod cgroup
# hostile strings in the environment (label syntax, a newline, ESC, invalid UTF-8) and argv
EVIL_SVC=$'evil},k8s_pod_name=own{x="1"\n\e[31mred\xff,'
EVIL_POD=$'p,process_pid=1}\r\n'
HOST_OUT=$WORK/hostile.out
env OTEL_SERVICE_NAME="$EVIL_SVC" K8S_POD_NAME="$EVIL_POD" DOTNET_CLI_TELEMETRY_OPTOUT=1 \
	dotnet "$FIXTURE_DLL" hostile --label $'x}\n{y=1' >"$HOST_OUT" 2>&1 &
EVIL_PID=$!
KILL_PIDS+=("$EVIL_PID")

FIX_ENV="$KEY OTEL_SERVICE_NAME=checkout-svc K8S_POD_NAME=checkout-7d9f K8S_NAMESPACE_NAME=shop"
start_fixture_ns cpu-split
FIX_ENV=
NS_PID=$FIX_PID
CG2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
CID=9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9
POD=9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a
POD_DIR="$CG2/clrtap-fleet-pod${POD//-/_}.slice"
IN_CG=0
if [ -n "$CG2" ] && mkdir -p "$POD_DIR/cri-containerd-$CID.scope" 2>/dev/null &&
	echo "$NS_PID" >"$POD_DIR/cri-containerd-$CID.scope/cgroup.procs" 2>/dev/null; then
	IN_CG=1
	CLEANUP_CMD="rmdir '$POD_DIR/cri-containerd-$CID.scope' '$POD_DIR' 2>/dev/null"
fi
wait_for_line "$HOST_OUT" '^READY ' 60 "$EVIL_PID" || { not_ok "hostile fixture started"; finish; }

# ---- receivers, fleets, prometheus
RPORT=$(free_port)
MPORT=$(free_port)
BPORT=$(free_port)
BMPORT=$(free_port)
mkdir -p "$WORK/recv" "$WORK/recvb" "$WORK/dir"
# start_recv PORT DIR: sets RECV_PID
start_recv() {
	python3 "$ROOT/tests/tools/profrecv.py" "$1" "$2" >"$2.log" 2>&1 &
	RECV_PID=$!
	KILL_PIDS+=("$RECV_PID")
	wait_for_line "$2.log" '^READY' 10 "$RECV_PID"
}
start_recv "$RPORT" "$WORK/recv"
start_recv "$BPORT" "$WORK/recvb"
RECVB_PID=$RECV_PID
# 3 s windows (default 10 s) and -F 199 (default 19) so three windows carry enough samples
# for a +-5 point split in a short test
"$CLRTAP" fleet --env-match "$KEY" --window 3 -F 199 --scan 0.5 --types cpu,alloc,exceptions,lock \
	--pyroscope "http://127.0.0.1:$RPORT" --otlp "http://127.0.0.1:$RPORT/" --dir "$WORK/dir" \
	--metrics "127.0.0.1:$MPORT" >"$WORK/fleet.out" 2>"$WORK/fleet.err" &
FLEET=$!
KILL_PIDS+=("$FLEET")
# fleet B: 1 s windows, a queue of 2 and a spool of 16 KiB, so 30 s down overflows both
"$CLRTAP" fleet --pids "$EVIL_PID" --window 1 -F 199 --spool "$WORK/spool" --spool-max 16K \
	--pyroscope "http://127.0.0.1:$BPORT" --otlp "http://127.0.0.1:$BPORT/" \
	--queue 2 --retry-max 1 --http-timeout 2 --metrics "127.0.0.1:$BMPORT" \
	>"$WORK/fleetb.out" 2>"$WORK/fleetb.err" &
FLEETB=$!
KILL_PIDS+=("$FLEETB")
PPORT=$(free_port)
cat >"$WORK/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: fleet
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
  - job_name: fleetb
    static_configs:
      - targets: ['127.0.0.1:$BMPORT']
EOF
prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/prom" \
	--web.listen-address="127.0.0.1:$PPORT" >"$WORK/prom.log" 2>&1 &
KILL_PIDS+=($!)

# pyroscope CPU windows of one pid (in receiver dir $2, default A's), oldest first; the
# other profile types have no sampleRate
pyro_of() { grep -l "process_pid%3D$1%2C.*sampleRate=" "${2:-$WORK/recv}"/*-pyro.json 2>/dev/null | sed 's/\.json$/.pb.gz/'; }
pyro_ev_of() { grep -l "process_pid%3D$1%2C" "$WORK"/recv/*-pyro.json | xargs grep -L "sampleRate=" | sed 's/\.json$/.pb.gz/'; }
otlp_all() { ls "${1:-$WORK/recv}"/*-otlp.pb 2>/dev/null; }
metric() { curl -s "http://127.0.0.1:${2:-$MPORT}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# prom_ge QUERY N: prometheus has scraped a value >= N for QUERY (waits up to 30 s)
prom_ge() {
	local i r
	for ((i = 0; i < 30; i++)); do
		r=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" 2>/dev/null)
		python3 -c 'import json,sys; r=json.loads(sys.argv[1])["data"]["result"]; sys.exit(0 if r and float(r[0]["value"][1]) >= float(sys.argv[2]) else 1)' "$r" "$2" 2>/dev/null && return 0
		sleep 1
	done
	return 1
}

# ---- fleet B's first windows of the hostile target, then its receiver goes away for 30 s
for ((i = 0; i < 200; i++)); do
	[ "$(pyro_of "$EVIL_PID" "$WORK/recvb" | wc -l)" -ge 1 ] && [ "$(otlp_all "$WORK/recvb" | wc -l)" -ge 1 ] && break
	kill -0 "$FLEETB" 2>/dev/null || break
	sleep 0.1
done
kill -TERM "$RECVB_PID"
wait "$RECVB_PID" 2>/dev/null
DOWN_AT=$(date +%s)
# fleet B's RSS every half second while its receiver is down
(
	max=0
	while [ ! -e "$WORK/rss.stop" ]; do
		r=$(awk '/^VmRSS/ {print $2}' "/proc/$FLEETB/status" 2>/dev/null)
		if [ -n "$r" ] && [ "$r" -gt "$max" ]; then
			max=$r
			echo "$max" >"$WORK/rss.max"
		fi
		sleep 0.5
	done
) &
KILL_PIDS+=($!)
# meanwhile, the EventPipe engine where perf_event_open is denied (a seccomp filter)
mkdir -p "$WORK/ep"
"$TOOLS/noperf" "$CLRTAP" fleet --pids "$NS_PID" --window 2 -d 6 --dir "$WORK/ep" \
	>"$WORK/ep.out" 2>"$WORK/ep.err" &
EP_FLEET=$!
KILL_PIDS+=("$EP_FLEET")

# meanwhile, the spool across a restart: fleet C pushes to a port where nothing listens and
# stops (what it could not push is spooled), then runs again pushing to A's receiver
DEADPORT=$(free_port)
(
	"$CLRTAP" fleet --pids "$EVIL_PID" --window 1 -d 2.5 --otlp "http://127.0.0.1:$DEADPORT" \
		--spool "$WORK/spool2" --flush 1 >/dev/null 2>"$WORK/c1.err"
	"$CLRTAP" fleet --pids "$EVIL_PID" --window 1 -d 3 --otlp "http://127.0.0.1:$RPORT" \
		--spool "$WORK/spool2" >/dev/null 2>"$WORK/c2.err"
) &
SPOOL_RUNS=$!
KILL_PIDS+=("$SPOOL_RUNS")
mkdir -p "$WORK/spool2"

# ---- the hostile target (fleet B's windows): valid pprof and OTLP, its strings cleaned, no label of its own
export EVIL_SVC EVIL_POD
mapfile -t EW < <(pyro_of "$EVIL_PID" "$WORK/recvb")
python3 "$CHECK" pprof "${EW[@]}" >"$WORK/evil-pp.json"
jcheck "hostile target: its pprof windows decode" "$WORK/evil-pp.json" 'print("ok" if d and all(w["ok"] for w in d) else d)'
jcheck "hostile target: Pyroscope labels are the fixed set, values cleaned" "${EW[0]%.pb.gz}.json" "
import re
n = d['query']['name'][0]
clean = lambda b: re.sub(rb'[^A-Za-z0-9._:/@+-]', b'_', b)[:128].decode()
svc = clean(env('EVIL_SVC')); pod = clean(env('EVIL_POD'))
body = n[len(svc) + 1:-1] if n.startswith(svc + '{') and n.endswith('}') else ''
keys = [kv.split('=', 1)[0] for kv in body.split(',')]
vals = dict(kv.split('=', 1) for kv in body.split(',') if '=' in kv)
ok = keys == ['service_name', 'process_pid', 'host_name', 'k8s_pod_name', 'process_runtime_version'] \
     and vals['service_name'] == svc and vals['k8s_pod_name'] == pod and vals['process_pid'] == '$EVIL_PID'
print('ok' if ok else repr(n))"
mapfile -t EOT < <(otlp_all "$WORK/recvb")
python3 "$CHECK" otlp "${EOT[@]}" >"$WORK/evil-ot.json"
jcheck "hostile target: OTLP decodes, attributes are the fixed set, values cleaned" "$WORK/evil-ot.json" "
import re
clean = lambda b: re.sub(rb'[^A-Za-z0-9._:/@+-]', b'_', b)[:128].decode()
r = [x for x in d if x['ok'] and x['strings_ok'] and x['attrs'].get('process.pid') == $EVIL_PID]
a = r[0]['attr_keys'] if r else []
ok = r and a == ['service.name', 'process.pid', 'host.name', 'k8s.pod.name', 'process.runtime.name', 'process.runtime.version'] \
     and r[0]['attrs']['service.name'] == clean(env('EVIL_SVC')) and r[0]['attrs']['k8s.pod.name'] == clean(env('EVIL_POD'))
print('ok' if ok else d[:1])"

# ---- a process started while fleet A runs is picked up within seconds
MIX_OUT=$WORK/mixed.out
env "$KEY" OTEL_SERVICE_NAME=mixed-svc DOTNET_CLI_TELEMETRY_OPTOUT=1 \
	dotnet "$FIXTURE_DLL" mixed --allocs 160000 --exceptions 25 --waits 6 --trigger "$WORK/mix-go" >"$MIX_OUT" 2>&1 &
MIX_PID=$!
KILL_PIDS+=("$MIX_PID")
wait_for_line "$MIX_OUT" '^READY ' 60 "$MIX_PID" || { not_ok "mixed fixture started"; finish; }
T0=$(date +%s%N)
for ((i = 0; i < 100; i++)); do
	[ "$(metric clrtap_fleet_processes)" = 2 ] && break
	sleep 0.1
done
T1=$(date +%s%N)
equals "a process started while fleet runs is profiled ($(((T1 - T0) / 1000000)) ms after its READY)" "$(metric clrtap_fleet_processes)" 2
check "... within 5 s (a scan every 0.5 s)" test $(((T1 - T0) / 1000000)) -lt 5000
# its allocations, exceptions and lock waits, once fleet A's event session on it runs
for ((i = 0; i < 150; i++)); do
	[ "$(metric clrtap_fleet_event_sessions)" = 2 ] && break
	sleep 0.1
done
equals "the event sessions of both processes run" "$(metric clrtap_fleet_event_sessions)" 2
touch "$WORK/mix-go"

# wait until the namespaced target has 4 windows (the first one starts mid-way)
for ((i = 0; i < 300; i++)); do
	[ "$(pyro_of "$NS_PID" | wc -l)" -ge 4 ] && break
	kill -0 "$FLEET" 2>/dev/null || break
	sleep 0.1
done
check "fleet running" kill -0 "$FLEET"

# ---- pprof (Pyroscope): the namespaced target's windows 2..4 through go tool pprof; the
# split counts samples whose stack holds HotA or HotB (as t-profile.sh: a kernel leaf under
# HotA, an interrupt, is HotA's time)
mapfile -t NSW < <(pyro_of "$NS_PID" | sed -n 2,4p)
equals "three full windows of the namespaced target pushed to /ingest" "${#NSW[@]}" 3
python3 "$CHECK" pprof "${NSW[@]}" >"$WORK/pp.json"
jcheck "every window decodes in go tool pprof" "$WORK/pp.json" 'print("ok" if all(w["ok"] for w in d) else d)'
jcheck "pprof: HotA:HotB over three windows 75 +- 5" "$WORK/pp.json" "
a = sum(w['cum'].get('$HOTA', 0) for w in d); b = sum(w['cum'].get('$HOTB', 0) for w in d)
s = 100.0 * a / (a + b) if a + b else 0
open(os.environ['WORK'] + '/split-pp', 'w').write('%.1f %% of %d samples' % (s, a + b))
print('ok' if 70 <= s <= 80 and a + b >= 60 else 'split %.1f of %d' % (s, a + b))"
echo "    pprof split: $(cat "$WORK/split-pp")"
Q=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["raw_query"])' "${NSW[0]%.pb.gz}.json")
contains "query: format=pprof" "$Q" "&format=pprof&"
contains "query: sampleRate" "$Q" "&sampleRate=199&"
contains "query: from and until" "$Q" "&from="
jcheck "Pyroscope name: labels of the namespaced target exact" "${NSW[0]%.pb.gz}.json" "
n = d['query']['name'][0]
want = 'checkout-svc{service_name=checkout-svc,process_pid=$NS_PID,host_name=%s' % os.uname().nodename
cg = ',container_id=$CID,k8s_pod_uid=$POD' if $IN_CG else ''
ok = n.startswith(want + cg + ',k8s_pod_name=checkout-7d9f,k8s_namespace_name=shop,process_runtime_version=')
print('ok' if ok and n.endswith('}') else n)"
[ "$IN_CG" = 1 ] || skip "no writable cgroup v2 hierarchy: container id and pod uid not checked"

# ---- OTLP: decoded by protoc; the namespaced target's resource exact, the split again
mapfile -t OT < <(otlp_all)
python3 "$CHECK" otlp "${OT[@]}" >"$WORK/ot.json"
jcheck "every OTLP request decodes with protoc over the v1.11.0 .proto" "$WORK/ot.json" \
	'print("ok" if d and all(r["ok"] and r["unknown_fields"] == 0 and r["zero_entries"] and r["strings_ok"] for r in d) else [r for r in d if not r["ok"] or not r["zero_entries"]][:1])'
jcheck "OTLP requests are gzipped (Content-Encoding: gzip), the receiver gunzips them" "${OT[0]%.pb}.json" \
	'print("ok" if d["headers"].get("Content-Encoding") == "gzip" and d["wire_bytes"] < os.path.getsize(sys.argv[1][:-5] + ".pb") else d)'
jcheck "OTLP resource of the namespaced target exact" "$WORK/ot.json" "
r = [x for x in d if x['attrs'].get('process.pid') == $NS_PID][0]['attrs']
want = {'service.name': 'checkout-svc', 'process.pid': $NS_PID, 'host.name': os.uname().nodename,
        'k8s.pod.name': 'checkout-7d9f', 'k8s.namespace.name': 'shop', 'process.runtime.name': '.NET'}
if $IN_CG: want.update({'container.id': '$CID', 'k8s.pod.uid': '$POD'})
got = {k: v for k, v in r.items() if k != 'process.runtime.version'}
print('ok' if got == want and r['process.runtime.version'] else r)"
jcheck "OTLP: HotA:HotB over three windows 75 +- 5" "$WORK/ot.json" "
w = [x for x in d if x['attrs'].get('process.pid') == $NS_PID and x['sample_type'] == ['samples', 'count']][1:4]
a = sum(x['cum'].get('$HOTA', 0) for x in w); b = sum(x['cum'].get('$HOTB', 0) for x in w)
s = 100.0 * a / (a + b) if a + b else 0
open(os.environ['WORK'] + '/split-ot', 'w').write('%.1f %% of %d samples' % (s, a + b))
print('ok' if len(w) == 3 and 70 <= s <= 80 else 'split %.1f of %d in %d windows' % (s, a + b, len(w)))"
echo "    OTLP split: $(cat "$WORK/split-ot")"

# ---- gzipped pprof files
mapfile -t DF < <(ls "$WORK"/dir/clrtap-*-"$NS_PID".pb.gz)
python3 "$CHECK" pprof "${DF[@]}" >"$WORK/dir.json"
jcheck "pprof files decode (${#DF[@]} of the namespaced target)" "$WORK/dir.json" 'print("ok" if len(d) >= 3 and all(w["ok"] for w in d) else d)'

# ---- the process that exits is dropped: its last window is pushed, the gauge goes down
wait_for_line "$MIX_OUT" '^DONE ' 30 "$MIX_PID"
NMIX=$(pyro_of "$MIX_PID" | wc -l)
kill -TERM "$MIX_PID"
T0=$(date +%s%N)
for ((i = 0; i < 100; i++)); do
	[ "$(metric clrtap_fleet_processes)" = 1 ] && [ "$(pyro_of "$MIX_PID" | wc -l)" -gt "$NMIX" ] && break
	sleep 0.1
done
T1=$(date +%s%N)
equals "an exited process is dropped ($(((T1 - T0) / 1000000)) ms after its SIGTERM)" "$(metric clrtap_fleet_processes)" 1
check "... and its last window pushed" test "$(pyro_of "$MIX_PID" | wc -l)" -gt "$NMIX"

# ---- allocation, exception and lock profiles of the mixed fixture, over all its windows
# (pprof through go tool pprof, OTLP through protoc): 160000 AllocTargets of 64 bytes in
# MixedAlloc::AllocMany (allocation ticks are a sample: +-5 %), exactly 25 FixtureExceptions
# thrown in Thrower::ThrowOne, exactly 6 waits in LockWaiter::Wait of at least 20 ms each
for ((i = 0; i < 50; i++)); do
	[ "$(metric 'clrtap_fleet_queue_windows{exporter="pyroscope"}')" = 0 ] &&
		[ "$(metric 'clrtap_fleet_queue_windows{exporter="otlp"}')" = 0 ] && break
	sleep 0.1
done
mapfile -t MEV < <(pyro_ev_of "$MIX_PID")
python3 "$CHECK" events pprof "$MIX_PID" "${MEV[@]}" >"$WORK/mix-pp.json"
mapfile -t MOT < <(grep -la "mixed-svc" $(otlp_all))
python3 "$CHECK" events otlp "$MIX_PID" "${MOT[@]}" >"$WORK/mix-ot.json"
EVFACTS="
t = d['totals']; g = lambda ty, k, n: t.get(ty, {}).get(k, {}).get(n, 0)
AT, AM = 'Clrtap.Fixtures.AllocTarget', 'Clrtap.Fixtures.MixedAlloc::AllocMany'
FE, TO = 'Clrtap.Fixtures.FixtureException', 'Clrtap.Fixtures.Thrower::ThrowOne'
LW = 'Clrtap.Fixtures.LockWaiter::Wait'
f = {'alloc_bytes': g('alloc_size/bytes', 'self', AT), 'alloc_bytes_in': g('alloc_size/bytes', 'cum', AM),
     'alloc_ticks': g('alloc_samples/count', 'cum', AM),
     'exceptions': g('exception/count', 'self', FE), 'exceptions_in': g('exception/count', 'cum', TO),
     'exceptions_all': sum(t.get('exception/count', {}).get('self', {}).values()),
     'lock_count': g('lock_count/count', 'cum', LW), 'lock_ms': g('lock_time/nanoseconds', 'cum', LW) / 1e6}
want = 160000 * 64
ok = not d['bad'] and abs(f['alloc_bytes'] - want) <= want * 0.05 and f['alloc_bytes_in'] == f['alloc_bytes'] \
     and f['alloc_ticks'] >= 50 and f['exceptions'] == f['exceptions_in'] == f['exceptions_all'] == 25 \
     and f['lock_count'] == 6 and 120 <= f['lock_ms'] <= 6000
open(os.environ['WORK'] + '/evfacts', 'a').write(json.dumps(f) + '\n')
print('ok' if ok else (f, d['bad'][:1]))"
jcheck "pprof (${#MEV[@]} windows): alloc_size 10240000 +-5 % in AllocMany, 25 exceptions in ThrowOne, 6 lock waits in LockWaiter::Wait, >= 120 ms" \
	"$WORK/mix-pp.json" "$EVFACTS"
jcheck "OTLP: the same allocation, exception and lock facts" "$WORK/mix-ot.json" "$EVFACTS"
sed 's/^/    /' "$WORK/evfacts"
equals "/metrics: the 25 exceptions counted" "$(metric 'clrtap_fleet_events_total{type="exceptions"}')" 25
EVL=$(metric 'clrtap_fleet_events_total{type="lock"}')
check "/metrics: the lock waits counted (${EVL:-none}, at least 6)" test "${EVL:-0}" -ge 6

# ---- the EventPipe engine (started when fleet B's receiver went away)
wait "$EP_FLEET"
equals "EventPipe engine: fleet under the seccomp wrapper exits 0" "$?" 0
contains "EventPipe engine: the fallback is said" "$(cat "$WORK/ep.err")" "profiling with the EventPipe engine (perf_event denied: a seccomp filter"
mapfile -t EPF < <(ls "$WORK"/ep/clrtap-*.pb.gz)
python3 "$CHECK" pprof "${EPF[@]}" >"$WORK/ep.json"
# The EventPipe engine keeps only on-CPU samples, and few of them (45 in 6 s
# in one run): the bound is 5 points or two standard deviations of a 75/25
# split over that many samples, whichever is wider (13 points at 45); the
# split is checked from 30 samples on (9 in 6 s in another run: then only
# that every window decodes and the samples it has name the hot methods).
jcheck "EventPipe engine: ${#EPF[@]} windows decode, HotA:HotB 75 +- max(5, 2 sd) from 30 samples" "$WORK/ep.json" "
a = sum(w['cum'].get('$HOTA', 0) for w in d); b = sum(w['cum'].get('$HOTB', 0) for w in d)
n = a + b
s = 100.0 * a / n if n else 0
tol = max(5.0, 200.0 * (0.75 * 0.25 / n) ** 0.5) if n else 0
good = len(d) >= 2 and all(w['ok'] for w in d) and a > 0 and (n < 30 or abs(s - 75) <= tol)
print('ok' if good else 'split %.1f of %d (bound %.1f), %s' % (s, n, tol, d))"

# ---- the spool across a restart: fleet C's second run pushed what its first one spooled
wait "$SPOOL_RUNS"
C1=$(grep -o 'otlp spool: [0-9]* windows written, [0-9]* waiting' "$WORK/c1.err")
C2=$(tail -1 "$WORK/c2.err")
echo "    first run: $C1; second run: ${C2#*; otlp:}"
N1=$(echo "$C1" | awk '{print $3}')
check "fleet C spooled its windows at stop (${N1:-none}, at least 2)" test "${N1:-0}" -ge 2 -a "$C1" = "otlp spool: $N1 windows written, $N1 waiting"
S2=$(echo "$C2" | grep -o 'otlp: [0-9]* sent' | awk '{print $2}')
check "its second run pushed them and its own (${S2:-none} sent, at least $((N1 + 2)))" test "${S2:-0}" -ge $((N1 + 2))
contains "... and left nothing in the spool" "$C2" "otlp spool: 0 windows written, 0 waiting"

# ---- fleet B after 30 s without its receiver
while [ $(($(date +%s) - DOWN_AT)) -lt 30 ]; do sleep 0.2; done
touch "$WORK/rss.stop"
MAXRSS=$(cat "$WORK/rss.max" 2>/dev/null || echo 0)
check "fleet alive after its receiver was down for 30 s" kill -0 "$FLEETB"
check "fleet answers /metrics while the receiver is down (no stall)" \
	curl -sf -m 2 -o /dev/null "http://127.0.0.1:$BMPORT/metrics"
echo "    fleet RSS peak while down: $((MAXRSS / 1024)) MiB"
check "RSS under 64 MiB while down ($((MAXRSS / 1024)) MiB)" test "$MAXRSS" -gt 0 -a "$MAXRSS" -lt 65536
SPOOLB=$(du -cb "$WORK"/spool/*/w-*.spool 2>/dev/null | tail -1 | cut -f1)
check "the spool stays under its 16 KiB (${SPOOLB:-0} bytes)" test "${SPOOLB:-0}" -gt 0 -a "${SPOOLB:-0}" -le 16384
SPOOLED=$(metric 'clrtap_fleet_spooled_windows_total{exporter="otlp"}' "$BMPORT")
check "OTLP windows spooled while down (${SPOOLED:-none})" test "${SPOOLED:-0}" -ge 4
DROPPED=$(metric 'clrtap_fleet_dropped_windows_total{exporter="pyroscope"}' "$BMPORT")
# 30 s of 1 s windows: about 30 per exporter, 2 held in the queue, a few in the spool
check "dropped Pyroscope windows counted on /metrics (${DROPPED:-none}, at least 6)" test "${DROPPED:-0}" -ge 6
check "prometheus scraped the dropped OTLP windows (at least 6)" \
	prom_ge 'clrtap_fleet_dropped_windows_total{job="fleetb",exporter="otlp"}' 6
check "prometheus: failed pushes counted" \
	prom_ge 'clrtap_fleet_pushes_total{job="fleetb",exporter="pyroscope",result="failed"}' 1
BEFORE=$(ls "$WORK"/recvb | wc -l)
start_recv "$BPORT" "$WORK/recvb"
for ((i = 0; i < 100; i++)); do
	[ "$(ls "$WORK"/recvb | wc -l)" -gt "$BEFORE" ] && break
	sleep 0.1
done
check "pushing resumed after the receiver came back" test "$(ls "$WORK"/recvb | wc -l)" -gt "$BEFORE"
for ((i = 0; i < 100; i++)); do
	[ "$(metric 'clrtap_fleet_spool_windows{exporter="otlp"}' "$BMPORT")" = 0 ] &&
		[ "$(metric 'clrtap_fleet_spool_windows{exporter="pyroscope"}' "$BMPORT")" = 0 ] && break
	sleep 0.1
done
equals "the spooled windows were pushed once it was back" \
	"$(metric 'clrtap_fleet_spool_windows{exporter="otlp"}' "$BMPORT") $(metric 'clrtap_fleet_spool_windows{exporter="pyroscope"}' "$BMPORT")" "0 0"
kill -TERM "$FLEETB"
wait "$FLEETB"
equals "fleet B exits 0 on SIGTERM" "$?" 0
SENT1=$(metric 'clrtap_fleet_pushes_total{exporter="otlp",result="sent"}')

# ---- SIGTERM: the last (partial) windows are pushed, and it exits within a few seconds
for ((i = 0; i < 50; i++)); do
	[ "$(metric 'clrtap_fleet_queue_windows{exporter="otlp"}')" = 0 ] && break
	sleep 0.1
done
N0=$(ls "$WORK"/recv/*-otlp.pb | wc -l)
T0=$(date +%s%N)
kill -TERM "$FLEET"
wait "$FLEET"
RC=$?
T1=$(date +%s%N)
equals "fleet exits 0 on SIGTERM" "$RC" 0
check "SIGTERM to exit within 5 s ($(((T1 - T0) / 1000000)) ms)" test $(((T1 - T0) / 1000000)) -lt 5000
check "the last window (of the namespaced target) was pushed at SIGTERM" test "$(ls "$WORK"/recv/*-otlp.pb | wc -l)" -ge $((N0 + 1))
check "OTLP pushes sent before the stop (${SENT1:-none})" test "${SENT1:-0}" -ge 4
contains "the stop says what was sent and dropped" "$(tail -1 "$WORK/fleet.err")" "clrtap fleet: stopped: 2 processes profiled (0 could not be)"
finish
