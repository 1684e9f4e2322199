#!/usr/bin/env bash
# clrtap serve's own cost while it runs a 30 s profile session and a 30 s
# probe session at once (issue 25: sessions are tasks; profile and probe run
# in a child clrtap through task_spawn): the server process's CPU
# (utime + stime from /proc/PID/stat, children not included) and its peak
# RSS (VmHWM), for two builds in one run, side by side.
#   BEFORE=path/to/clrtap AFTER=path/to/clrtap bench/bench-serve-tasks.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
BEFORE=${BEFORE:?BEFORE=clrtap binary}
AFTER=${AFTER:-$ROOT/build/clrtap}
DLL=$ROOT/build/fixtures/sample/sample.dll
DUR=${DUR:-30}
out=$(mktemp -d)
pids=()
cleanup() {
	exec 2>/dev/null
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT

dotnet "$DLL" cpu-split >"$out/cpu" 2>&1 &
pids+=($!)
CPU=$!
dotnet "$DLL" probe-warm --calls 1000000 --interval-ms 5 >"$out/probe" 2>&1 &
pids+=($!)
PW=$!
wait_line "$out/cpu" '^READY' 60
wait_line "$out/probe" '^READY' 60
# the runtime's own pids (READY pid=N)
CPU=$(sed -n 's/^READY pid=\([0-9]*\).*/\1/p' "$out/cpu")
PW=$(sed -n 's/^READY pid=\([0-9]*\).*/\1/p' "$out/probe")
pids+=("$CPU" "$PW")

ticks=$(getconf CLK_TCK)
run() { # run NAME BIN
	local name=$1 bin=$2 port tok spid c0 c1 hwm t0 t1
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$bin" serve --listen "127.0.0.1:$port" --db "$out/$name.db" >"$out/$name.log" 2>&1 &
	spid=$!
	pids+=($spid)
	wait_line "$out/$name.log" 'listening on' 30
	tok=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$out/$name.log")
	c0=$(awk '{print $14 + $15}' "/proc/$spid/stat")
	t0=$(date +%s.%N)
	for body in "{\"kind\":\"profile\",\"pid\":$CPU,\"params\":{\"duration\":$DUR}}" \
		"{\"kind\":\"probe\",\"pid\":$PW,\"params\":{\"method\":\"System.Convert::ToString(int,int)\",\"duration\":$DUR}}"; do
		curl -s -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$body" \
			"http://127.0.0.1:$port/api/v1/sessions" >/dev/null
	done
	# until both sessions end
	while curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/sessions" | grep -q '"status":"\(running\|queued\)"'; do
		sleep 1
	done
	t1=$(date +%s.%N)
	c1=$(awk '{print $14 + $15}' "/proc/$spid/stat")
	hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$spid/status")
	curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/sessions" |
		python3 -c 'import json,sys; print(" ".join(s["kind"]+":"+s["status"] for s in json.load(sys.stdin)["sessions"]))' >"$out/$name.st"
	printf '%-7s serve CPU %5.2f s over %4.1f s wall; peak RSS %6.1f MiB; sessions: %s\n' "$name" \
		"$(echo "($c1 - $c0) / $ticks" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" "$(cat "$out/$name.st")"
	kill -TERM "$spid"
	wait "$spid" 2>/dev/null
}
run before "$BEFORE"
run after "$AFTER"
