#!/usr/bin/env bash
# clrtap profile and top at scale (issue 16): a target with 500 threads that
# keep both cores busy. profile -F 999 -d 5 ends within 6 s of its start;
# the samples and threads it reports are the ones in its raw output, every
# sampled tid is a thread of the target (per-CPU events filtered by pid);
# the flame names the worker; top refreshes once a second; a signal during
# processing writes the partial result (exit 9); the symbol cache is written,
# reused, survives corruption and is not used when others can write it.
#
# The test shell and its timing harness (a small Python runner) run at
# real-time priority so that what is measured is clrtap, not a starved
# shell; clrtap itself is started at normal priority (SCHED_OTHER) and must
# raise its own.
. "$(dirname "$0")/lib.sh"
# test-run: alone

NCPU=$(nproc)
if [ "$(id -u)" -ne 0 ]; then
	skip "needs root (per-CPU perf events, SCHED_FIFO)"
	finish
fi

cat >"$WORK/rtrun.py" <<'EOF'
# rtrun.py JSON OUT [--term-after PATH S] -- CMD...: runs CMD at SCHED_OTHER
# from a SCHED_FIFO parent; stdout to OUT with the arrival time of each line;
# with --term-after, SIGTERM S s after PATH exists, then every 10 ms until CMD
# exits.
import json, os, signal, subprocess, sys, time
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))
out_json, out_file = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
term = None
if args[0] == "--term-after":
    term_path, term = args[1], float(args[2]); args = args[3:]
args = args[1:]  # "--"
t0 = time.monotonic()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     preexec_fn=lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0)))
lines, first_term = [], None
if term is not None:
    while not os.path.exists(term_path) and p.poll() is None:
        time.sleep(0.01)
    time.sleep(term)
    first_term = time.monotonic() - t0
    while p.poll() is None:
        p.send_signal(signal.SIGTERM)
        time.sleep(0.01)
for raw in p.stdout:
    lines.append([time.monotonic() - t0, raw.decode(errors="replace").rstrip("\n")])
rc = p.wait()
end = time.monotonic() - t0
with open(out_file, "w") as f:
    f.write("\n".join(l for _, l in lines) + "\n")
json.dump({"rc": rc, "elapsed": end, "lines": lines, "first_term": first_term}, open(out_json, "w"))
EOF
rt() { python3 "$WORK/rtrun.py" "$@"; }
jq_() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

start_fixture many-threads --threads 500
wait_for_line "$FIX_OUT" '^STARTED' 30 "$FIX_PID" || not_ok "fixture started its workload"
# From here this script (not the fixture, started before) runs at SCHED_FIFO:
# otherwise every grep and python of the test waits behind 500 busy threads.
# rtrun.py starts clrtap at SCHED_OTHER again.
chrt -f -p 1 $$ || not_ok "test shell at SCHED_FIFO"
sleep 1

# ---- profile -F 999 -d 5 on 500 busy threads ----
export CLRTAP_CACHE_DIR=$WORK/cache
cpu_snapshot() { # per-thread CPU time (ns, /proc/PID/task/TID/schedstat) of the fixture
	python3 -c '
import os, sys
d = "/proc/%s/task" % sys.argv[1]
for t in os.listdir(d):
    try:
        print(t, open("%s/%s/schedstat" % (d, t)).read().split()[0])
    except OSError:
        pass' "$FIX_PID" >"$1"
}
# The first run (cold symbol cache, --bundle for the raw records) checks the
# counts; the second, plain one (the cache warm, as on any later run) the time.
cpu_snapshot "$WORK/cpu0"
rt "$WORK/p0.json" "$WORK/p0.out" -- "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 5 \
	-o "$WORK/p0.folded" --bundle "$WORK/b1"
cpu_snapshot "$WORK/cpu1"
echo "    cold symbol cache, with --bundle: $(jq_ "$WORK/p0.json" '"%.2f" % d["elapsed"]') s," \
	"$(grep '^processing' "$WORK/p0.out")"
equals "profile (cold cache, bundle) exit code" "$(jq_ "$WORK/p0.json" 'd["rc"]')" 0
# What merely starting a process costs at this load (fork, exec, the first
# run behind 500 busy threads: up to ~1.5 s here when other work shares the
# machine) is the system's, not clrtap's: measured with /bin/true just
# before (the smallest of three) and left out of the 6 s.
for i in 1 2 3; do rt "$WORK/true$i.json" "$WORK/true.out" -- /bin/true; done
BASE=$(python3 -c 'import json,sys; print("%.2f" % min(json.load(open(f))["elapsed"] for f in sys.argv[1:]))' \
	"$WORK"/true[123].json)
# (CLRTAP_DEBUG: the debug lines, arriving as they are written, say where the
# time went when the bound is missed)
CLRTAP_DEBUG=1 rt "$WORK/p1.json" "$WORK/p1.out" -- "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 5 \
	-o "$WORK/p1.folded"
OUT=$(grep -v '^clrtap: ' "$WORK/p1.out")
echo "$OUT" | sed 's/^/    | /'
equals "profile exit code" "$(jq_ "$WORK/p1.json" 'd["rc"]')" 0
EL=$(jq_ "$WORK/p1.json" '"%.2f" % d["elapsed"]')
NET=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$EL" "$BASE")
echo "    wall time: $EL s for -d 5; starting /bin/true took $BASE s; clrtap from its start: $NET s"
jq_ "$WORK/p1.json" '"    timeline: " + "; ".join("%.2f s %s" % (t, l.replace("clrtap: ", "", 1)[:80]) for t, l in d["lines"] if "profile: setup" in l or "perf map" in l or l.startswith("processing"))'

check "exits within 6 s of its start (took $NET s after a process start of $BASE s)" \
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 6.0 else 1)" "$NET"
check "a per-CPU event for each of the $NCPU CPUs" grep -qE "^events: $NCPU; on-CPU per CPU" "$WORK/p1.out"
contains "priority raised and said so" "$OUT" "clrtap priority: raised to SCHED_FIFO 1"
contains "the worker method named" "$(cat "$WORK/p1.folded")" "Clrtap.Fixtures.ManyThreads::Burn"
LOST=$(sed -n 's/^lost samples: \([0-9]*\).*/\1/p' "$WORK/p1.out")
check "lost samples printed" test -n "$LOST"
equals "no sample lost" "$LOST" 0
SAMPLES=$(sed -n 's/^samples: \([0-9]*\) at 999 Hz from \([0-9]*\) threads$/\1/p' "$WORK/p0.out")
THREADS=$(sed -n 's/^samples: \([0-9]*\) at 999 Hz from \([0-9]*\) threads$/\2/p' "$WORK/p0.out")
LOST=$(sed -n 's/^lost samples: \([0-9]*\).*/\1/p' "$WORK/p0.out")
echo "    first run: samples $SAMPLES, threads $THREADS, lost $LOST"
equals "first run: no sample lost" "$LOST" 0
check "samples were taken" test "${SAMPLES:-0}" -gt 0
# What the kernel delivered, as clrtap kept it: one raw record per sample.
RAW=$(find "$WORK/b1" -name samples.txt | head -1)
equals "samples = raw records in the bundle" "$(grep -c ' cpu-clock$' "$RAW")" "$SAMPLES"
equals "samples = the flame's total" "$(awk '{ s += $NF } END { print s }' "$WORK/p0.folded")" "$SAMPLES"
equals "threads = distinct tids of the raw records" \
	"$(grep ' cpu-clock$' "$RAW" | awk '{ print $2 }' | sort -u | wc -l)" "$THREADS"
# Independently of perf: the threads' CPU time (/proc/PID/task/TID/schedstat,
# ns, before and after). A thread that ran >= 30 ms meanwhile (~30 samples at
# 999 Hz) must be among the sampled ones; a sampled tid must be a thread of
# the target that ran, or one that exited meanwhile (then not another
# process's: per-CPU events filtered by pid).
equals "threads: every thread that ran >= 30 ms was sampled; every sampled tid ran" "$(
	python3 - "$WORK/cpu0" "$WORK/cpu1" "$RAW" "$FIX_PID" <<'PY'
import os, sys
def load(f):
    d = {}
    for l in open(f):
        t, v = l.split()
        d[t] = int(v)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
sampled = {l.split()[1] for l in open(sys.argv[3]) if l.endswith(" cpu-clock\n")}
ran = {t for t in b if b[t] - a.get(t, 0) >= 30000000}
missed = ran - sampled
stray = set()
for t in sampled - set(b):
    try:  # still alive somewhere else: another process's thread
        tg = [l for l in open("/proc/%s/status" % t) if l.startswith("Tgid:")][0].split()[1]
        if tg != sys.argv[4]:
            stray.add(t)
    except OSError:
        pass  # exited meanwhile
idle = {t for t in sampled & set(b) if b[t] == a.get(t, 0)}
print("missed %d stray %d idle %d" % (len(missed), len(stray), len(idle)))
PY
)" "missed 0 stray 0 idle 0"
check "the worker threads are among them" grep -q '^many-[0-9]* ' "$RAW"

# ---- the symbol cache: written, reused, corrupt files ignored ----
check "R2R table cached (CoreLib)" bash -c "ls '$WORK/cache/sym/'r2r-*.v1 >/dev/null"
check "ELF table cached" bash -c "ls '$WORK/cache/sym/'elf-*.v1 >/dev/null"
check "cache directory private" test "$(stat -c %a "$WORK/cache/sym")" = 700
COREF=$(ls -S "$WORK/cache/sym/"r2r-*.v1 | head -1)
for f in "$WORK/cache/sym/"*.v1; do printf 'XXXX' | dd of="$f" bs=1 seek=200 conv=notrunc 2>/dev/null; done
rt "$WORK/p2.json" "$WORK/p2.out" -- env CLRTAP_DEBUG=1 "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 1 \
	-o "$WORK/p2.folded"
equals "run over a corrupted cache: exit 0" "$(jq_ "$WORK/p2.json" 'd["rc"]')" 0
contains "corrupt cache file ignored" "$(cat "$WORK/p2.out")" "not a valid cache file, ignored"
contains "corrupt cache: names still right" "$(cat "$WORK/p2.folded")" "Clrtap.Fixtures.ManyThreads::Burn"
rt "$WORK/p3.json" "$WORK/p3.out" -- env CLRTAP_DEBUG=1 "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 1 \
	-o "$WORK/p3.folded"
contains "rewritten, then used: CoreLib from the cache" \
	"$(grep 'System.Private.CoreLib.dll' "$WORK/p3.out")" "(symbol cache)"
contains "warm cache: names still right" "$(cat "$WORK/p3.folded")" "Clrtap.Fixtures.ManyThreads::Burn"
check "CoreLib's file rewritten whole" test -s "$COREF"
mkdir -p "$WORK/opencache/sym"
chmod 777 "$WORK/opencache/sym"
rt "$WORK/p4.json" "$WORK/p4.out" -- env CLRTAP_CACHE_DIR="$WORK/opencache" "$CLRTAP" profile \
	-p "$FIX_PID" -F 99 -d 1 -o "$WORK/p4.folded"
equals "a cache others can write: not used, still exit 0" "$(jq_ "$WORK/p4.json" 'd["rc"]')" 0
equals "a cache others can write: nothing written there" "$(ls "$WORK/opencache/sym" | wc -l)" 0

# ---- a signal during processing: the partial result, exit 9, promptly ----
# A cold cache makes the processing long enough to be hit; the first signal
# ends the recording, the next ones land in the processing.
# The first signal 1.5 s after the perf map file appears (clrtap is sampling).
for ((i = 0; i < 100; i++)); do [ -e "/tmp/perf-$FIX_PID.map" ] || break; sleep 0.1; done
rt "$WORK/p5.json" "$WORK/p5.out" --term-after "/tmp/perf-$FIX_PID.map" 1.5 -- env CLRTAP_CACHE_DIR= "$CLRTAP" profile \
	-p "$FIX_PID" -F 999 -d 30 -o "$WORK/p5.folded"
cat "$WORK/p5.out" | sed 's/^/    | /'
equals "SIGTERM during processing: exit 9 (partial)" "$(jq_ "$WORK/p5.json" 'd["rc"]')" 9
contains "SIGTERM during processing: said so" "$(cat "$WORK/p5.out")" "partial: stopped by a signal while processing"
check "SIGTERM during processing: the partial flame written" test -f "$WORK/p5.folded"
T2E=$(jq_ "$WORK/p5.json" '"%.2f" % (d["elapsed"] - d["first_term"])')
echo "    first signal to exit: $T2E s"
check "SIGTERM: exits within 2 s of the first signal ($T2E s)" python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 2.0)' "$T2E"
# (turned off by clrtap, or by its watcher when the busy target answered late)
for ((i = 0; i < 50; i++)); do
	ST=$("$CLRTAP" perfmap -p "$FIX_PID" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["perfmap"])')
	[ "$ST" = off ] && break
	sleep 0.1
done
equals "perf map off after the interrupted run" "$ST" off

# ---- --wall still works at this scale ----
rt "$WORK/p6.json" "$WORK/p6.out" -- "$CLRTAP" profile -p "$FIX_PID" -d 2 --wall -o "$WORK/p6.folded"
equals "--wall: exit 0" "$(jq_ "$WORK/p6.json" 'd["rc"]')" 0
contains "--wall: the worker named" "$(cat "$WORK/p6.folded")" "Clrtap.Fixtures.ManyThreads::Burn"
contains "--wall: the sleep named" "$(cat "$WORK/p6.folded")" "System.Threading.Thread::Sleep"

# ---- top refreshes every second without falling behind ----
rt "$WORK/t1.json" "$WORK/t1.out" -- "$CLRTAP" top -p "$FIX_PID" -i 6
equals "top -i 6: exit 0" "$(jq_ "$WORK/t1.json" 'd["rc"]')" 0
MARKS=$(jq_ "$WORK/t1.json" '" ".join("%.2f" % t for t, l in d["lines"] if l.startswith("-- "))')
echo "    top refreshes at: $MARKS s"
equals "top: six refreshes" "$(echo "$MARKS" | wc -w)" 6
check "top: refreshes 1 s apart (0.8..1.2 s), not falling behind" python3 -c '
import sys
t = [float(x) for x in sys.argv[1].split()]
gaps = [b - a for a, b in zip(t, t[1:])]
sys.exit(not gaps or any(g < 0.8 or g > 1.2 for g in gaps))' "$MARKS"
contains "top: the worker named" "$(cat "$WORK/t1.out")" "Clrtap.Fixtures.ManyThreads::Burn"

stop_fixture "$FIX_PID"

# ---- cgroup mode: the target in a cgroup v2 of its own ----
# (this machine's capability, checked here: a cgroup2 mount we can create in)
CG2=""
for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ]; then CG2=$m; break; fi
done
CGD=$CG2/clrtap-test-$$
if [ -n "$CG2" ] && mkdir "$CGD" 2>/dev/null; then
	CLEANUP_CMD="rmdir '$CGD' 2>/dev/null"
	start_fixture many-threads --threads 4
	echo "$FIX_PID" >"$CGD/cgroup.procs"
	wait_for_line "$FIX_OUT" '^STARTED' 30 "$FIX_PID"
	rt "$WORK/g1.json" "$WORK/g1.out" -- "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 2 -o "$WORK/g1.folded"
	contains "cgroup: on-CPU events per CPU in the target's cgroup" "$(cat "$WORK/g1.out")" \
		"on-CPU per CPU in the target's cgroup, filtered by pid; cgroup /clrtap-test-$$"
	contains "cgroup: the worker named" "$(cat "$WORK/g1.folded")" "Clrtap.Fixtures.ManyThreads::Burn"
	rt "$WORK/g2.json" "$WORK/g2.out" -- "$CLRTAP" profile -p "$FIX_PID" -d 2 --off-cpu -o "$WORK/g2.folded"
	contains "cgroup: off-CPU events per CPU too" "$(cat "$WORK/g2.out")" "off-CPU per CPU in the target's cgroup"
	contains "cgroup: the sleep named (switch records of per-CPU events)" "$(cat "$WORK/g2.folded")" \
		"System.Threading.Thread::Sleep"
	stop_fixture "$FIX_PID"
else
	skip "cgroup mode: no cgroup2 mount to create a cgroup in"
fi
finish
