#!/usr/bin/env bash
# CPU means on-CPU (issue 33, case 4). The runtime's sample profiler samples
# every managed thread, running or blocked, and its "managed" sample type does
# not mean running: the suspension catches threads entering or leaving a
# blocking wait or a system call. On the realapp fixture under wrk load, 16
# connections on /api/quote (RealApp.Pricing::Quote: decimal math) and 8 on
# /api/lock?ms=5 (a process-wide lock held 5 ms: waiters in Monitor.Enter),
# the EventPipe engine (forced), `analyze hotpaths` and `doctor` leave out the
# samples of threads whose CPU time (/proc/PID/task/TID/schedstat) did not
# advance and the samples caught in a blocking wait or a P/Invoke stub: Quote
# or the decimal math under it is hottest, and Monitor::Enter_Slowpath,
# LowLevelLifoSemaphore::Wait and [unknown] do not rank as CPU (before:
# LowLevelLifoSemaphore::Wait 32 %, WorkerThreadStart 19 %, Enter_Slowpath
# 18 %, [unknown] 15 %, DecCalc::ScaleResult 2.8 %; doctor's hottest method
# was LowLevelLifoSemaphore::Wait). Where running cannot be told (a trace
# file; --wall) every output says "thread time, waiting included".
. "$(dirname "$0")/lib.sh"
# test-run: alone

need_realapp
if ! command -v wrk >/dev/null; then
	skip "wrk is not installed (scripts/install-deps.sh installs it)"
	finish
fi

QUOTE=RealApp.Pricing::Quote
# the frames of a thread that waits: none of them may rank as CPU
export WAITS='System.Threading.Monitor::Enter_Slowpath System.Threading.LowLevelLifoSemaphore::Wait System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart System.Threading.Thread::Sleep System.Threading.WaitHandle::WaitOneNoCheck [unknown]'
# hottest NAME: Quote or the decimal math it calls
# The route's delegate that calls Quote is code the runtime generates
# (dynamicClass::lambda_methodN): the EventPipe sampler suspends threads at
# safe points and can catch one as Quote returns into it, so on a loaded
# machine with few samples it can top the self column (seen once, in a run
# beside other tests). It is still the quote route's CPU, never a wait.
hottest() {
	case "$1" in
	"$QUOTE" | System.Decimal+DecCalc::* | dynamicClass::lambda_method*) return 0 ;;
	*) return 1 ;;
	esac
}

start_realapp
PID=$REALAPP_PID
wrk -t1 -c16 -d60s "$REALAPP_URL/api/quote?sku=SKU1&qty=2" >/dev/null 2>&1 &
KILL_PIDS+=("$!")
wrk -t1 -c8 -d60s "$REALAPP_URL/api/lock?ms=5" >/dev/null 2>&1 &
KILL_PIDS+=("$!")
sleep 2 # Quote reaches tier 1

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
# total_share FILE.folded FRAME: the share (%) of the samples with FRAME in their stack
total_share() {
	python3 - "$1" "$2" <<'EOF'
import sys
t = n = 0
for line in open(sys.argv[1]):
    st, c = line.rstrip("\n").rsplit(" ", 1)
    t += int(c)
    n += int(c) if sys.argv[2] in st.split(";") else 0
print("%.1f" % (100.0 * n / t if t else 0))
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
expect_exit "profile --engine eventpipe under load" 0 "$CLRTAP" profile -p "$PID" --engine eventpipe -d 4 -o "$WORK/ep.folded"
echo "$OUT" | sed 's/^/    | /'
contains "EventPipe: the summary says on-CPU and how" "$OUT" "basis: on-CPU: "
contains "EventPipe: thread CPU time from schedstat" "$OUT" "/proc/PID/task/TID/schedstat every "
shares "$WORK/ep.folded" >"$WORK/ep.shares"
# The runtime's sampler keeps few on-CPU samples of a saturated 2-core
# machine (14 of 31,398 events in 4 s in a quiet fresh-clone run; 17-400 in
# others): with 50 or more the ranking is asserted; with fewer, that the
# summary told the user how few were kept and why.
KEPT=$(echo "$OUT" | sed -n 's/^samples: \([0-9]*\) kept of .*/\1/p')
if [ "${KEPT:-0}" -ge 50 ]; then
	TOP=$(head -1 "$WORK/ep.shares" | cut -d' ' -f1)
	check "EventPipe: the top self frame is Quote or its decimal math ($TOP)" hottest "$TOP"
	Q=$(total_share "$WORK/ep.folded" "$QUOTE")
	# perf_event: Quote (with the decimal math under it) is 55-65 % of the
	# samples here. Before: 14.5 %.
	check "EventPipe: Quote in over a quarter of the samples ($Q %)" python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 25 else 1)' "$Q"
else
	contains "EventPipe: ${KEPT:-no} samples kept: the summary says they are too few" "$OUT" \
		"samples: too few kept (${KEPT:-0}) for the shares to mean much"
fi
check "EventPipe: every waiting frame under 5 %" waits_below "$WORK/ep.shares" 5

# ---- analyze hotpaths
# On a saturated 2-core machine the runtime's sampler keeps few on-CPU
# samples (2 in 3 s in one quiet CI-like run, 17-400 in 4 s in others): with
# at least 50 the ranking is asserted, with fewer the report must say that
# its shares are rough (too_few_samples) rather than rank 2 samples silently.
expect_exit "analyze hotpaths under load" 0 "$CLRTAP" analyze -p "$PID" hotpaths -d 5 --json
echo "$OUT" >"$WORK/hot.json"
jcheck "hotpaths: on-CPU, Quote or its decimal math first, Quote in over a quarter (or: too few samples, said)" "$WORK/hot.json" '
r = d["result"]; m = r["methods"]
assert r["basis"] == "on-CPU", r["basis"]
assert r["thread_cpu_source"] == "schedstat" and r["samples_waiting"] > 0, r
assert r["too_few_samples"] == (r["samples"] < 50), r
if r["samples"] >= 50:
    assert m[0]["method"] == "RealApp.Pricing::Quote" or m[0]["method"].startswith("System.Decimal+DecCalc::"), m[:3]
    q = [x for x in m if x["method"] == "RealApp.Pricing::Quote"]
    assert q and q[0]["total_pct"] > 25, m
print("ok")'
jcheck "hotpaths: every waiting frame under 5 %" "$WORK/hot.json" '
m = d["result"]["methods"]; waits = set(env("WAITS").decode().split())
bad = [(x["method"], x["self_pct"]) for x in m if x["method"] in waits and x["self_pct"] >= 5]
assert not bad, bad
print("ok")'

# ---- doctor: the hottest named method
expect_exit "doctor under load" 0 "$CLRTAP" doctor -p "$PID" -d 3
HOT=$(echo "$OUT" | sed -n 's/.*(on-CPU); hottest method \(.*\) ([0-9]*% self).*/\1/p')
FEW=$(echo "$OUT" | sed -n 's/.* \([0-9]*\) managed samples in .* (on-CPU): too few to name the hottest method.*/\1/p')
if [ -n "$FEW" ]; then
	# under 50 kept samples doctor names no hottest method and says so
	check "doctor: $FEW samples: too few to name the hottest method, said" test "$FEW" -lt 50
else
	check "doctor: the on-CPU finding names Quote or its decimal math hottest ($HOT)" hottest "$HOT"
	contains "doctor: says how much was unnamed" "$OUT" "of the samples in unnamed code"
fi

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
