#!/usr/bin/env bash
# clrtap watch on the realapp fixture under wrk load (GET /api/quote, 16
# connections): the target's throughput without watch, with a request rule
# (one DiagnosticSource event per request, no firing), ABAB; the storm of
# issue 33 (`cpu > 50%` with a 5 s profile action, the default cooldown):
# firings, actions at most at once and throughput; and the time from a
# throw to its `fired` line with the stack named (rundown at the firing).
# No peer: dotnet-monitor's collection rules are the peer, not installed here.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_setup
RDLL=${RDLL:-$ROOT/build/fixtures/realapp/realapp.dll}
SECS=${SECS:-8}
[ -f "$RDLL" ] || { echo "no realapp fixture ($RDLL)"; exit 0; }
command -v wrk >/dev/null || { echo "no wrk"; exit 0; }

port=$((20000 + RANDOM % 20000))
url=http://127.0.0.1:$port
dotnet "$RDLL" --port "$port" --db "$out/r.db" >"$out/realapp.out" 2>&1 &
rpid=$!
pids+=("$rpid")
for ((i = 0; i < 600; i++)); do [ "$(curl -s -m 1 "$url/health")" = ok ] && break; sleep 0.1; done

rps() { # SECONDS -> requests/s wrk measured on /api/quote
	wrk -t1 -c16 -d"$1s" "$url/api/quote?sku=SKU1&qty=2" 2>/dev/null | awk '/^Requests\/sec/ {print $2}'
}
rps "$SECS" >/dev/null # warm-up (tiering: the first seconds are slower)

for round in 1 2; do
	a=$(rps "$SECS")
	"$CLRTAP" watch -p "$rpid" 'request > 10s' -o "$out/w" -d $((SECS + 4)) >"$out/req.jsonl" 2>/dev/null &
	w=$!
	sleep 2 # the session is up
	b=$(rps "$SECS")
	wait "$w"
	echo "round $round: without watch $a req/s, with a request rule $b req/s"
done

a=$(rps "$SECS")
"$CLRTAP" watch -p "$rpid" 'cpu > 50%' -a profile:5 -o "$out/storm" -d $((SECS + 12)) >"$out/storm.jsonl" 2>/dev/null &
w=$!
b=$(rps $((SECS + 10)))
wait "$w"
python3 - "$out/storm.jsonl" "$a" "$b" <<'PY'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
fired = sum(l['event'] == 'fired' for l in L)
run = peak = 0
for l in L:
    if l['event'] == 'action-start' and 'child' in l:
        run += 1
        peak = max(peak, run)
    elif l['event'] == 'action-end':
        run -= 1
print(f"storm ('cpu > 50%' -a profile:5, default cooldown) under load: {fired} firing(s), "
      f"{peak} action(s) at most at once; {sys.argv[2]} req/s before, {sys.argv[3]} req/s during")
PY

"$CLRTAP" watch -p "$rpid" 'exception RealApp.Ledger+ReconcileFault cooldown 0' -o "$out/exc" -d 12 \
	>"$out/exc.jsonl" 2>/dev/null &
w=$!
sleep 2
: >"$out/throws"
for i in 1 2 3; do
	date +%s.%N >>"$out/throws"
	curl -s -o /dev/null "$url/api/throw"
	sleep 2
done
wait "$w"
python3 - "$out/exc.jsonl" "$out/throws" <<'PY'
import datetime, json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
t = [float(x) for x in open(sys.argv[2])]
f = [datetime.datetime.strptime(l['time'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=datetime.timezone.utc).timestamp()
     for l in L if l['event'] == 'fired']
d = sorted(round((a - b) * 1000) for a, b in zip(f, t))
print(f"throw -> fired line with the stack named: {d} ms ({len(f)} of {len(t)} throws fired)")
PY
