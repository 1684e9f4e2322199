#!/usr/bin/env bash
# CPU means on-CPU (issue 33, case 4). The runtime's sample profiler samples
# every managed thread, running or blocked, and its "managed" sample type does
# not mean running: a request thread blocked in Task.Wait, a pool thread
# parked on its semaphore count. Under wrk load on the web fixture, 2
# connections on /api/on-cpu (OnCpu::Burn, ~100 ms of CPU a request) and 16
# on /api/off-cpu (OffCpu::Block, Task.Delay(100).Wait(): blocked), the
# EventPipe engine (forced), `analyze hotpaths` and `doctor` leave out the
# samples of threads whose CPU time (/proc/PID/task/TID/schedstat) did not
# advance: Burn is first with most of the samples, and the waiting frames
# are near 0 (before: Task::SpinWait 43 %, LowLevelLifoSemaphore::Wait 27 %,
# Burn 15 %; doctor's hottest method was Task::SpinWait). Where running
# cannot be told (a trace file; --wall) every output says "thread time,
# waiting included".
. "$(dirname "$0")/lib.sh"
# test-run: alone

BURN=Clrtap.Fixtures.OnCpu::Burn
# the frames of a thread that waits: none of them may rank as CPU
export WAITS='System.Threading.Thread::Sleep System.Threading.LowLevelLifoSemaphore::Wait System.Threading.Monitor::Enter_Slowpath System.Threading.WaitHandle::WaitOneNoCheck System.Threading.Tasks.Task::SpinWait System.Threading.ManualResetEventSlim::Wait System.Threading.Monitor::Wait [unknown]'

if ! command -v wrk >/dev/null; then
	echo "$TEST_NAME: skipped: wrk is not installed (scripts/install-deps.sh installs it)"
	exit 0
fi

PORT=$(free_port)
start_fixture web --port "$PORT"
PID=$FIX_PID
wrk -t1 -c2 -d40s "http://127.0.0.1:$PORT/api/on-cpu" >/dev/null 2>&1 &
KILL_PIDS+=("$!")
wrk -t1 -c16 -d40s "http://127.0.0.1:$PORT/api/off-cpu" >/dev/null 2>&1 &
KILL_PIDS+=("$!")
sleep 1

# shares FILE.folded: "METHOD PCT" per leaf frame, largest first
shares() {
	python3 - "$1" <<'EOF'
import collections, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    c[st.split(";")[-1]] += int(n)
t = sum(c.values()) or 1
for k, v in c.most_common():
    print("%s %.1f" % (k, 100.0 * v / t))
EOF
}
# waits_below FILE.shares MAX: every waiting frame's share is under MAX %
waits_below() {
	python3 - "$1" "$2" "$WAITS" <<'EOF'
import sys
d = dict(l.rsplit(" ", 1) for l in open(sys.argv[1]).read().splitlines())
bad = [(w, d[w]) for w in sys.argv[3].split() if float(d.get(w, 0)) >= float(sys.argv[2])]
print(bad, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
}

# ---- the EventPipe engine, forced
expect_exit "profile --engine eventpipe under load" 0 "$CLRTAP" profile -p "$PID" --engine eventpipe -d 2 -o "$WORK/ep.folded"
echo "$OUT" | sed 's/^/    | /'
contains "EventPipe: the summary says on-CPU and how" "$OUT" "basis: on-CPU: "
contains "EventPipe: thread CPU time from schedstat" "$OUT" "/proc/PID/task/TID/schedstat every "
shares "$WORK/ep.folded" >"$WORK/ep.shares"
head -5 "$WORK/ep.shares" | sed 's/^/    ep: /'
equals "EventPipe: Burn is the top self frame" "$(head -1 "$WORK/ep.shares" | cut -d' ' -f1)" "$BURN"
check "EventPipe: Burn has over half the samples" python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 50 else 1)' "$(head -1 "$WORK/ep.shares" | cut -d' ' -f2)"
check "EventPipe: every waiting frame under 10 %" waits_below "$WORK/ep.shares" 10

# ---- analyze hotpaths
expect_exit "analyze hotpaths under load" 0 "$CLRTAP" analyze -p "$PID" hotpaths -d 2 --json
echo "$OUT" >"$WORK/hot.json"
jcheck "hotpaths: on-CPU, Burn first with over half" "$WORK/hot.json" '
r = d["result"]; m = r["methods"]
assert r["basis"] == "on-CPU", r["basis"]
assert r["thread_cpu_source"] == "schedstat" and r["samples_waiting"] > 0, r
assert m[0]["method"] == "Clrtap.Fixtures.OnCpu::Burn" and m[0]["self_pct"] > 50, m[:3]
print("ok")'
jcheck "hotpaths: every waiting frame under 10 %" "$WORK/hot.json" '
m = d["result"]["methods"]; waits = set(env("WAITS").decode().split())
bad = [(x["method"], x["self_pct"]) for x in m if x["method"] in waits and x["self_pct"] >= 10]
assert not bad, bad
print("ok")'

# ---- doctor: the hottest named method
expect_exit "doctor under load" 0 "$CLRTAP" doctor -p "$PID" -d 2
contains "doctor: the CPU finding is on-CPU and names Burn hottest" "$OUT" "(on-CPU); hottest method $BURN ("
contains "doctor: says how much was unnamed" "$OUT" "of the samples in unnamed code"

# ---- where running cannot be told: thread time, waiting included
expect_exit "profile --engine eventpipe --wall" 0 "$CLRTAP" profile -p "$PID" --engine eventpipe --wall -d 1 -o "$WORK/wall.html"
contains "--wall: the summary says thread time" "$OUT" "basis: thread time, waiting included"
contains "--wall: the HTML title says thread time" "$(cat "$WORK/wall.html")" "thread time, waiting included (EventPipe engine)</title>"
"$CLRTAP" trace collect -p "$PID" --providers 'Microsoft-DotNETCore-SampleProfiler,Microsoft-Windows-DotNETRuntime:0x18:4' -d 1 -o "$WORK/s.nettrace" >/dev/null 2>&1
expect_exit "hotpaths of a trace file" 0 "$CLRTAP" analyze "$WORK/s.nettrace" hotpaths --json
echo "$OUT" >"$WORK/file.json"
jcheck "hotpaths of a file: thread time, waiting included" "$WORK/file.json" '
r = d["result"]
assert r["basis"] == "thread time, waiting included" and "a trace file cannot tell" in r["basis_why"], r
print("ok")'
expect_exit "hotpaths of a trace file (text)" 0 "$CLRTAP" analyze "$WORK/s.nettrace" hotpaths
contains "hotpaths of a file (text): thread time, waiting included" "$OUT" "samples in managed code (thread time, waiting included)."
finish
