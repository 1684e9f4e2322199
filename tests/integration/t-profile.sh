#!/usr/bin/env bash
# clrtap profile against real fixtures: the CPU split of cpu-split (3:1 within
# +-5 points, exact names), kernel frames at the leaf end, framework R2R
# frames named, libcoreclr frames in gc mode, a namespaced fixture with a
# private /tmp, every output format, off-CPU vs on-CPU on the web routes,
# the perf map put back as it was (also after Ctrl-C and SIGKILL), and the
# bad inputs (dead pid, native process, no permission).
. "$(dirname "$0")/lib.sh"
# test-run: alone

# folded_share FILE A B: A's share (in %) of the samples whose stack holds A or B.
folded_share() {
	python3 - "$@" <<'EOF'
import sys
f, a, b = sys.argv[1:4]
na = nb = 0
for line in open(f):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    fr = st.split(";")
    if a in fr:
        na += int(n)
    elif b in fr:
        nb += int(n)
print("%.1f" % (100.0 * na / (na + nb)) if na + nb else "0")
EOF
}

# folded_total FILE NAME: the weight of the stacks holding frame NAME.
folded_total() {
	python3 - "$@" <<'EOF'
import sys
f, name = sys.argv[1:3]
t = 0
for line in open(f):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    if name in st.split(";"):
        t += int(n)
print(t)
EOF
}

# folded_sum FILE: the total weight.
folded_sum() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# kernel_frames_at_leaf FILE [placement-only]: "yes" when some stack has
# kernel frames and no stack has a user frame after (leafward of) a kernel
# frame; with placement-only, a profile without kernel frames passes too.
kernel_frames_at_leaf() {
	python3 - "$@" <<'EOF'
import sys
seen = bad = 0
for line in open(sys.argv[1]):
    fr = line.rstrip("\n").rsplit(" ", 1)[0].split(";")
    k = [x.startswith("[k] ") for x in fr]
    if any(k):
        seen += 1
        first = k.index(True)
        if not all(k[first:]):
            bad += 1
if len(sys.argv) > 2 and sys.argv[2] == "placement-only":
    seen = seen or 1  # cpu-bound code may by chance take no sample inside the kernel
print("yes" if seen and not bad else "no (%d with kernel frames, %d misplaced)" % (seen, bad))
EOF
}

in_range() { # in_range VALUE LO HI
	python3 -c 'import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if lo <= v <= hi else 1)' "$@"
}

perfmap_state() {
	"$CLRTAP" perfmap -p "$1" status --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["perfmap"])'
}

# ---------------------------------------------------------------- cpu-split
start_fixture cpu-split
PID1=$FIX_PID
OUT1=$FIX_OUT
equals "perf map off before" "$(perfmap_state "$PID1")" off
expect_exit "profile cpu-split" 0 "$CLRTAP" profile -p "$PID1" -F 199 -d 10 -o "$WORK/split.folded"
echo "$OUT" | sed 's/^/    | /'
contains "summary: samples" "$OUT" "samples: "
contains "summary: lost samples" "$OUT" "lost samples: "
contains "summary: unnamed frames" "$OUT" "unnamed frames: "
contains "summary: top method" "$OUT" "Clrtap.Fixtures.CpuSplit::HotA"
contains "HotA named exactly" "$(cat "$WORK/split.folded")" ";Clrtap.Fixtures.CpuSplit::HotA"
contains "HotB named exactly" "$(cat "$WORK/split.folded")" ";Clrtap.Fixtures.CpuSplit::HotB"
contains "caller named exactly" "$(cat "$WORK/split.folded")" ";Clrtap.Fixtures.CpuSplit::Run;"
SHARE=$(folded_share "$WORK/split.folded" Clrtap.Fixtures.CpuSplit::HotA Clrtap.Fixtures.CpuSplit::HotB)
echo "    HotA share of HotA+HotB: $SHARE %"
check "HotA:HotB within 75 +- 5 % ($SHARE %)" in_range "$SHARE" 70 80
# A CPU-bound loop rarely enters the kernel: here only the placement is checked;
# the off-CPU profile below, where every stack ends in the scheduler, must have them.
equals "kernel frames, if any, only at the leaf end" "$(kernel_frames_at_leaf "$WORK/split.folded" placement-only)" yes
equals "perf map off again after" "$(perfmap_state "$PID1")" off
check "perf map file removed (it did not exist before)" test ! -e "/tmp/perf-$PID1.map"

# The same fixture, every output format.
expect_exit "profile -o .html" 0 "$CLRTAP" profile -p "$PID1" -d 3 -o "$WORK/split.html"
HC=0
"$ROOT/tests/tools/html-check.sh" -s "$WORK/split.html" "CpuSplit::HotA" || HC=$?
if [ "$HC" -eq 77 ]; then
	skip "no chromium"
else
	equals "HTML renders in headless chromium with CpuSplit::HotA" "$HC" 0
fi

# --json: the task's result (docs/tasks/profile.md) in place of the summary
expect_exit "profile -o .pb.gz --json" 0 "$CLRTAP" profile -p "$PID1" -d 3 -o "$WORK/split.pb.gz" --json
PJ=$OUT
NS=$(json_get "$PJ" 'd["samples"]')
equals "json: task, engine, frequency, output, partial" \
	"$(json_get "$PJ" '(d["task"], d["pid"], d["engine"], d["frequency_hz"], d["output"], d["partial"])')" \
	"('profile', $PID1, 'perf', 99, '$WORK/split.pb.gz', False)"
equals "json: the top method by self is HotA, exactly" "$(json_get "$PJ" 'd["top"][0]["name"]')" \
	"Clrtap.Fixtures.CpuSplit::HotA"
equals "json: its self count and share agree with the samples" \
	"$(json_get "$PJ" 'abs(d["top"][0]["self_pct"] - 100.0 * d["top"][0]["self"] / d["samples"]) < 0.01')" True
equals "json: statements is a list, lost and unnamed are counts" \
	"$(json_get "$PJ" '(type(d["statements"]), type(d["lost_samples"]), d["unnamed_frames"] <= d["frames"])')" \
	"(<class 'list'>, <class 'int'>, True)"
PPROF_SUM=$(python3 - "$WORK/split.pb.gz" <<'EOF'
import gzip, sys
data = gzip.open(sys.argv[1]).read()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif t == 1:
            v = b[i:i + 8]; i += 8
        elif t == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise SystemExit("bad wire type %d" % t)
        yield f, t, v
total = samples = 0
for f, t, v in fields(data):
    if f == 2:  # Profile.sample
        samples += 1
        for g, u, w in fields(v):
            if g == 2:  # Sample.value: packed or not; the first is the count
                if u == 2:
                    total += varint(w, 0)[0]
                else:
                    total += w
                break
print(total)
EOF
)
equals "pprof decodes to the JSON's sample count" "$PPROF_SUM" "$NS"

expect_exit "profile -o .speedscope.json" 0 "$CLRTAP" profile -p "$PID1" -d 3 -o "$WORK/split.speedscope.json"
SS=$(python3 - "$WORK/split.speedscope.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["profiles"][0]
ok = (d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
      and isinstance(d["shared"]["frames"], list)
      and all("name" in f for f in d["shared"]["frames"])
      and p["type"] == "sampled"
      and len(p["samples"]) == len(p["weights"]) > 0
      and all(0 <= i < len(d["shared"]["frames"]) for s in p["samples"] for i in s)
      and any(f["name"] == "Clrtap.Fixtures.CpuSplit::HotA" for f in d["shared"]["frames"]))
print("ok" if ok else "bad")
EOF
)
equals "speedscope file has the shape speedscope loads" "$SS" ok

expect_exit "profile -o .svg" 0 "$CLRTAP" profile -p "$PID1" -d 2 -o "$WORK/split.svg"
check "SVG is XML with HotA" python3 -c 'import sys,xml.dom.minidom as m; d=m.parse(sys.argv[1]).toxml(); sys.exit(0 if "CpuSplit::HotA" in d else 1)' "$WORK/split.svg"

mkdir -p "$WORK/def"
expect_exit "profile without -o" 0 bash -c 'cd "$1" && "$2" profile -p "$3" -d 1' _ "$WORK/def" "$CLRTAP" "$PID1"
DEF=$(echo "$OUT" | sed -n 's/^wrote: //p')
check "default output profile-PID-TIMESTAMP.html ($DEF)" bash -c '[[ "$1" =~ ^profile-$2-[0-9]{8}-[0-9]{6}\.html$ ]] && test -s "$3/$1"' _ "$DEF" "$PID1" "$WORK/def"

expect_exit "profile --threads" 0 "$CLRTAP" profile -p "$PID1" -d 2 --threads -o "$WORK/threads.folded"
contains "--threads: the workload thread is a root frame" "$(cat "$WORK/threads.folded")" "[thread] workload;"

# Bundle: a timestamped directory with folded, html, raw samples and a tar.gz.
expect_exit "profile --bundle" 0 "$CLRTAP" profile -p "$PID1" -d 2 -o "$WORK/b.folded" --bundle "$WORK/bundle"
BDIR=$(echo "$OUT" | sed -n 's/^bundle: //p')
check "bundle dir is timestamped" bash -c '[[ "$(basename "$1")" =~ ^profile-[0-9]+-[0-9]{8}-[0-9]{6}$ ]]' _ "$BDIR"
check "bundle: folded" test -s "$BDIR/profile.folded"
check "bundle: html" test -s "$BDIR/profile.html"
contains "bundle: raw samples name HotA" "$(cat "$BDIR/samples.txt")" "Clrtap.Fixtures.CpuSplit::HotA (jit)"
TARLIST=$(tar tzf "$BDIR"/*.tar.gz | sort | tr '\n' ' ')
equals "bundle: tar.gz holds the four files" "$TARLIST" "$(basename "$BDIR")/metadata.txt $(basename "$BDIR")/profile.folded $(basename "$BDIR")/profile.html $(basename "$BDIR")/samples.txt "
contains "bundle: metadata names the engine" "$(cat "$BDIR/metadata.txt")" "engine: perf_event"
check "bundle: tar.gz content equals the files" bash -c 'mkdir -p "$2/x" && tar xzf "$1"/*.tar.gz -C "$2/x" && cmp "$2/x/$(basename "$1")/samples.txt" "$1/samples.txt"' _ "$BDIR" "$WORK"

# Ctrl-C stops early with a complete result and the perf map off again.
"$CLRTAP" profile -p "$PID1" -d 60 -o "$WORK/int.folded" >"$WORK/int.out" 2>&1 &
CP=$!
sleep 3
kill -INT "$CP"
wait "$CP"
equals "Ctrl-C: exit 0" "$?" 0
contains "Ctrl-C: says it stopped early" "$(cat "$WORK/int.out")" "stopped early"
contains "Ctrl-C: complete folded output" "$(cat "$WORK/int.folded")" "Clrtap.Fixtures.CpuSplit::HotA"
equals "Ctrl-C: perf map off again" "$(perfmap_state "$PID1")" off

# SIGKILL: the watcher process turns the perf map back off.
"$CLRTAP" profile -p "$PID1" -d 60 -o "$WORK/kill.folded" >/dev/null 2>&1 &
CP=$!
sleep 2
equals "during a session the perf map is on" "$(perfmap_state "$PID1")" on
kill -KILL "$CP"
{ wait "$CP"; } 2>/dev/null
for ((i = 0; i < 100; i++)); do
	[ "$(perfmap_state "$PID1")" = off ] && break
	sleep 0.1
done
equals "SIGKILL of clrtap: perf map off again" "$(perfmap_state "$PID1")" off

check "fixture not restarted (same pid alive)" kill -0 "$PID1"
equals "fixture not restarted (one READY line)" "$(grep -c '^READY' "$OUT1")" 1

# A perf map that was on before stays on.
expect_exit "perfmap on (by hand)" 0 "$CLRTAP" perfmap -p "$PID1" on --type perfmap
expect_exit "profile with the perf map already on" 0 "$CLRTAP" profile -p "$PID1" -d 2 -o "$WORK/on.folded"
equals "perf map left on" "$(perfmap_state "$PID1")" on
expect_exit "perfmap off (by hand)" 0 "$CLRTAP" perfmap -p "$PID1" off
stop_fixture "$PID1"

# ---------------------------------------------------------------- gc: libcoreclr frames
start_fixture gc --count 2000
# A GC every 50 ms is little CPU: sample at 999 Hz so the inducing thread is seen.
expect_exit "profile gc mode" 0 "$CLRTAP" profile -p "$FIX_PID" -F 999 -d 4 -o "$WORK/gc.folded"
GCF=$(cat "$WORK/gc.folded")
contains "gc: GcInducer::Induce named" "$GCF" "Clrtap.Fixtures.GcInducer::Induce"
contains "gc: libcoreclr frames present" "$GCF" "libcoreclr.so"
CORECLR=$(readlink -f "/proc/$FIX_PID/map_files/$(grep -m1 'libcoreclr.so' "/proc/$FIX_PID/maps" | awk '{print $1}')" 2>/dev/null)
if [ -e "${CORECLR}.dbg" ] || [ -e "/usr/lib/debug${CORECLR}.dbg" ]; then
	contains "gc: libcoreclr frames named (a .dbg is present)" "$GCF" "libcoreclr.so!"
else
	# No .dbg here: Microsoft ships libcoreclr.so with 11 exported names, so its
	# functions are named by their start from .eh_frame_hdr (lib/sym). Each
	# such name must be a real function start in readelf's FDE list.
	SUB=$(grep -o 'libcoreclr.so!sub_[0-9a-f]*' "$WORK/gc.folded" | sort | uniq -c | sort -rn | awk 'NR==1 {print $2}')
	check "gc: libcoreclr frames named by function start ($SUB)" test -n "$SUB"
	check "gc: $SUB is an FDE start of libcoreclr.so" \
		grep -qE "pc=0*${SUB#libcoreclr.so!sub_}\.\." <(readelf -W --debug-dump=frames "$CORECLR")
fi
stop_fixture "$FIX_PID"

# ---------------------------------------------------------------- namespaced, private /tmp
start_fixture_ns cpu-split
equals "ns: perf map off before" "$(perfmap_state "$FIX_PID")" off
expect_exit "ns: profile from the host" 0 "$CLRTAP" profile -p "$FIX_PID" -F 199 -d 8 -o "$WORK/ns.folded"
contains "ns: HotA named" "$(cat "$WORK/ns.folded")" ";Clrtap.Fixtures.CpuSplit::HotA"
SHARE=$(folded_share "$WORK/ns.folded" Clrtap.Fixtures.CpuSplit::HotA Clrtap.Fixtures.CpuSplit::HotB)
check "ns: HotA:HotB within 75 +- 5 % ($SHARE %)" in_range "$SHARE" 70 80
equals "ns: perf map off after" "$(perfmap_state "$FIX_PID")" off
check "ns: no perf map file left in its /tmp" test ! -e "/proc/$FIX_PID/root/tmp/perf-1.map"
stop_fixture "$FIX_PID"

# ---------------------------------------------------------------- web: on-CPU route, on vs off CPU
PORT=$(free_port)
start_fixture web --port "$PORT"
WEB=$FIX_PID
loop() { # loop ROUTE FLAGFILE
	while [ -e "$2" ]; do curl -s "http://127.0.0.1:$PORT$1" >/dev/null; done
}
touch "$WORK/run-on"
loop /api/on-cpu "$WORK/run-on" &
LOOP_ON=$!
sleep 15 # warm up: the tiered JIT settles, so JIT threads do not dominate
expect_exit "web: profile the on-CPU route" 0 "$CLRTAP" profile -p "$WEB" -d 6 -o "$WORK/web.folded" --bundle "$WORK/wb"
echo "$OUT" | sed 's/^/    | /'
UNNAMED_LEAF=$(echo "$OUT" | sed -n 's/^unnamed leaf frames: \([0-9.]*\) .*/\1/p')
UNNAMED_ALL=$(echo "$OUT" | sed -n 's/^unnamed frames: \([0-9.]*\) .*/\1/p')
SUBS=$(echo "$OUT" | sed -n 's/^frames named by address only.*library): //p')
echo "    /api/on-cpu: unnamed leaf frames $UNNAMED_LEAF % of samples; unnamed frames $UNNAMED_ALL % of all frames; named by address only (sub_...): ${SUBS:-none}"
check "web: unnamed leaf frames < 2 % of samples ($UNNAMED_LEAF %)" in_range "$UNNAMED_LEAF" 0 1.999
contains "web: OnCpu::Burn named" "$(cat "$WORK/web.folded")" ";Clrtap.Fixtures.OnCpu::Burn"
WB=$(echo "$OUT" | sed -n 's/^bundle: //p')
R2R=$(grep -E '^\s+[0-9a-f]+ System\.[^ ]+::[^ ]+ \(r2r\)$' "$WB/samples.txt" | awk '{print $2}' | sort | uniq -c | sort -rn | head -3)
echo "    framework frames named from R2R images: $(echo $R2R)"
check "web: a framework ReadyToRun frame is named from its image" test -n "$R2R"

# The seeds' experiment: both routes under equal load.
touch "$WORK/run-off"
loop /api/off-cpu "$WORK/run-off" &
LOOP_OFF=$!
sleep 2
expect_exit "web: on-CPU profile under both loads" 0 "$CLRTAP" profile -p "$WEB" -d 6 -o "$WORK/both-on.folded"
ON_BURN=$(folded_total "$WORK/both-on.folded" Clrtap.Fixtures.OnCpu::Burn)
ON_BLOCK=$(folded_total "$WORK/both-on.folded" Clrtap.Fixtures.OffCpu::Block)
ON_ALL=$(folded_sum "$WORK/both-on.folded")
echo "    on-CPU: OnCpu::Burn $ON_BURN, OffCpu::Block $ON_BLOCK of $ON_ALL samples"
check "on-CPU: dominated by OnCpu::Burn (> 50 % of samples)" test $((ON_BURN * 2)) -gt "$ON_ALL"
check "on-CPU: OffCpu::Block far behind (< 1/10 of Burn)" test $((ON_BLOCK * 10)) -lt "$ON_BURN"
expect_exit "web: --off-cpu profile under both loads" 0 "$CLRTAP" profile -p "$WEB" -d 6 --off-cpu -o "$WORK/both-off.folded"
echo "$OUT" | sed 's/^/    | /'
OFF_BURN=$(folded_total "$WORK/both-off.folded" Clrtap.Fixtures.OnCpu::Burn)
OFF_BLOCK=$(folded_total "$WORK/both-off.folded" Clrtap.Fixtures.OffCpu::Block)
echo "    off-CPU: OffCpu::Block $OFF_BLOCK ns, OnCpu::Burn $OFF_BURN ns blocked"
check "off-CPU: OffCpu::Block blocked >= 2.4 s of the 6 s" test "$OFF_BLOCK" -ge 2400000000
check "off-CPU: OffCpu::Block dominates OnCpu::Burn (> 10x)" test "$OFF_BLOCK" -gt $((OFF_BURN * 10))
equals "off-CPU: kernel frames present (run as root), only at the leaf end" "$(kernel_frames_at_leaf "$WORK/both-off.folded")" yes
BLOCK_LEAF=$(python3 - "$WORK/both-off.folded" <<'EOF'
import sys, collections
c = collections.Counter()
for line in open(sys.argv[1]):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    fr = st.split(";")
    if "Clrtap.Fixtures.OffCpu::Block" in fr:
        i = fr.index("Clrtap.Fixtures.OffCpu::Block")
        c[";".join(x for x in fr[i + 1:] if not x.startswith("[k] "))] += int(n)
print(c.most_common(1)[0][0] if c else "")
EOF
)
echo "    the blocking wait under OffCpu::Block: $BLOCK_LEAF"
contains "off-CPU: the managed wait is named" "$BLOCK_LEAF" "System.Threading.Tasks.Task::InternalWaitCore"
contains "off-CPU: the native wait below it is named" "$BLOCK_LEAF" "libc.so.6!__GI___pthread_cond_wait"
contains "off-CPU: kernel side of the wait named" "$(cat "$WORK/both-off.folded")" "[k] schedule"
expect_exit "web: --wall profile" 0 "$CLRTAP" profile -p "$WEB" -d 3 --wall -o "$WORK/wall.folded"
check "wall: both routes present" bash -c 'grep -q "OnCpu::Burn" "$1" && grep -q "OffCpu::Block" "$1"' _ "$WORK/wall.folded"
rm -f "$WORK/run-on" "$WORK/run-off"
wait "$LOOP_ON" "$LOOP_OFF"
equals "web: perf map off after" "$(perfmap_state "$WEB")" off
stop_fixture "$WEB"

# ---------------------------------------------------------------- bad input
sleep 100 &
SLEEPER=$!
KILL_PIDS+=("$SLEEPER")
expect_exit "native process: still profiles" 0 "$CLRTAP" profile -p "$SLEEPER" -d 1 -o "$WORK/native.folded"
contains "native process: says so" "$ERR" "not a .NET process"
contains "native process: summary says native only" "$OUT" "not a .NET process"
kill "$SLEEPER"
wait "$SLEEPER" 2>/dev/null
expect_exit "dead pid" 3 "$CLRTAP" profile -p "$SLEEPER" -d 1 -o "$WORK/dead.folded"
contains "dead pid: message" "$ERR" "no process"
expect_exit "bad extension" 2 "$CLRTAP" profile -p 1 -o "$WORK/x.doc"
expect_exit "bad -F" 2 "$CLRTAP" profile -p 1 -F 0

if command -v setpriv >/dev/null; then
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	NPF=/tmp/clrtap-nobody-pid-$$ # nobody cannot write in $WORK
	rm -f "$NPF"
	"${NOBODY[@]}" sh -c 'sleep 100 & echo $! > "$1"; wait' _ "$NPF" &
	KILL_PIDS+=($!)
	for ((i = 0; i < 50; i++)); do [ -s "$NPF" ] && break; sleep 0.1; done
	NP=$(cat "$NPF")
	rm -f "$NPF"
	KILL_PIDS+=("$NP")
	if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
		expect_exit "unprivileged, own process: user stacks only" 0 \
			"${NOBODY[@]}" "$CLRTAP" profile -p "$NP" -d 1 -o "/tmp/clrtap-nobody-$$.folded"
		contains "unprivileged: says kernel stacks are not permitted" "$ERR" "kernel.perf_event_paranoid"
		contains "unprivileged: summary says so" "$OUT" "kernel stacks: no"
		expect_exit "unprivileged --off-cpu: refused" 5 \
			"${NOBODY[@]}" "$CLRTAP" profile -p "$NP" -d 1 --off-cpu -o "/tmp/clrtap-nobody-$$.folded"
		rm -f "/tmp/clrtap-nobody-$$.folded"
	fi
	kill "$NP" 2>/dev/null
fi

start_fixture idle
if command -v setpriv >/dev/null; then
	expect_exit "no permission (nobody vs a root fixture)" 5 \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$CLRTAP" profile -p "$FIX_PID" -d 1 -o /tmp/clrtap-nobody-$$.folded
	# nobody may not ptrace a root process: that is the cause, not the sysctl
	contains "no permission: names the ptrace cause" "$ERR" "no ptrace access to the target"
	contains "no permission: names CAP_SYS_PTRACE" "$ERR" "CAP_SYS_PTRACE"
	contains "no permission: the socket is out of reach too" "$ERR" "may not reach the diagnostics socket"
	lacks "no permission: not the sysctl advice" "$ERR" "perf_event_paranoid <= 2"
	rm -f /tmp/clrtap-nobody-$$.folded
fi
stop_fixture "$FIX_PID"

# The target killed (by someone else) while profile has its perf map on: the
# map file profile caused is removed all the same (through the target's root
# opened at the start; /proc/PID/root is gone by then).
start_fixture cpu-split
KPID=$FIX_PID
rm -f "/tmp/perf-$KPID.map"
"$CLRTAP" profile -p "$KPID" -d 6 -o "$WORK/killed.folded" >"$WORK/killed.out" 2>&1 &
PROF=$!
for ((i = 0; i < 100; i++)); do [ -e "/tmp/perf-$KPID.map" ] && break; sleep 0.05; done
check "the perf map file appeared while profiling" test -e "/tmp/perf-$KPID.map"
sleep 1
kill -KILL "$KPID"
wait "$PROF"
check "target SIGKILLed mid-profile: profile ends (exit $?)" true
for ((i = 0; i < 40; i++)); do [ -e "/tmp/perf-$KPID.map" ] || break; sleep 0.05; done
check "target SIGKILLed mid-profile: no perf map file left in /tmp" test ! -e "/tmp/perf-$KPID.map"
stop_fixture "$KPID"
finish
