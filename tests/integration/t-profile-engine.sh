#!/usr/bin/env bash
# clrtap profile/top --engine: with perf_event_open denied by a seccomp filter
# (tests/tools/noperf, as Docker's default profile does), `profile` falls back
# to EventPipe, says so in every output, names the hot methods and keeps the
# 3:1 split of cpu-split within +-5 points; `--engine perf` fails with the
# seccomp cause (exit 5); a process without a diagnostics socket gets one
# message naming both causes; `top` works on EventPipe; both engines agree
# here; CAP_PERFMON + CAP_SYS_ADMIN dropped at perf_event_paranoid 3 gives
# the engine this kernel's rule implies (checked by the test's own probe); and
# a namespaced target (private /tmp, own thread ids) works through EventPipe.
. "$(dirname "$0")/lib.sh"
# test-run: alone

NOPERF="$TOOLS/noperf"

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

in_range() { # in_range VALUE LO HI
	python3 -c 'import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if lo <= v <= hi else 1)' "$@"
}

HOTA=Clrtap.Fixtures.CpuSplit::HotA
HOTB=Clrtap.Fixtures.CpuSplit::HotB

start_fixture cpu-split
PID=$FIX_PID

# ---------------------------------------------------------------- seccomp
expect_exit "profile under the seccomp wrapper (auto)" 0 "$NOPERF" "$CLRTAP" profile -p "$PID" -d 5 -o "$WORK/ep.folded"
echo "$OUT" | sed 's/^/    | /'
contains "summary states the engine and why" "$OUT" "engine: EventPipe (--engine auto, and perf_event_open was denied: a seccomp filter denies the system call)"
contains "summary states what it cannot see" "$OUT" "kernel stacks: no (EventPipe sees managed frames only)"
contains "summary states the basis: on-CPU (issue 33)" "$OUT" "basis: on-CPU: "
contains "warning names the seccomp cause" "$ERR" "perf_event_open was denied (a seccomp filter"
contains "summary names HotA" "$OUT" "$HOTA"
contains "HotA named exactly" "$(cat "$WORK/ep.folded")" ";$HOTA"
contains "HotB named exactly" "$(cat "$WORK/ep.folded")" ";$HOTB"
SHARE_EP=$(folded_share "$WORK/ep.folded" "$HOTA" "$HOTB")
echo "    EventPipe (seccomp): HotA share of HotA+HotB: $SHARE_EP %"
check "EventPipe split 75 +- 5 ($SHARE_EP %)" in_range "$SHARE_EP" 70 80

expect_exit "profile -o .html under the wrapper" 0 "$NOPERF" "$CLRTAP" profile -p "$PID" -d 3 -o "$WORK/ep.html"
HTML=$(cat "$WORK/ep.html")
contains "HTML title states the engine" "$HTML" "(EventPipe engine)</title>"
contains "HTML notes: engine" "$HTML" "engine: EventPipe (the runtime&#39;s sample profiler" 
contains "HTML notes: why" "$HTML" "why: --engine auto, and perf_event_open was denied (a seccomp filter"
contains "HTML notes: what it cannot see" "$HTML" "no native, runtime or kernel frames"
contains "HTML notes: -F" "$HTML" "not -F"
contains "HTML notes: on-CPU and how" "$HTML" "samples: on-CPU: the sampler samples every managed thread"
contains "HTML title: on-CPU" "$HTML" "on-CPU samples of managed code (EventPipe engine)</title>"
contains "HTML names HotA" "$HTML" "$HOTA"

# -F given, perf denied, --engine auto: EventPipe all the same, and the
# warning says -F is not used (the runtime's interval is)
expect_exit "profile -F 199 -o .svg under the wrapper" 0 "$NOPERF" "$CLRTAP" profile -F 199 -p "$PID" -d 2 -o "$WORK/ep.svg"
contains "-F under the fallback: said to be unused" "$ERR" "-F 199 is not used by the EventPipe engine: the runtime samples every managed thread at its own interval"
SVG=$(cat "$WORK/ep.svg")
contains "SVG title states the engine" "$SVG" "(EventPipe engine)</text>"
contains "SVG desc: engine" "$SVG" "<desc>engine: EventPipe"
contains "SVG desc: what it cannot see" "$SVG" "no native, runtime or kernel frames"
contains "SVG desc: on-CPU" "$SVG" "samples: on-CPU: "
contains "SVG names HotA" "$SVG" "<title>$HOTA ("

expect_exit "profile -o .pb.gz under the wrapper" 0 "$NOPERF" "$CLRTAP" profile -p "$PID" -d 2 -o "$WORK/ep.pb.gz"
PB=$(python3 - "$WORK/ep.pb.gz" <<'EOF'
import gzip, sys
b = gzip.open(sys.argv[1]).read()
def varint(i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
strs, comments, i = [], [], 0
while i < len(b):
    key, i = varint(i)
    f, wt = key >> 3, key & 7
    if wt == 0:
        v, i = varint(i)
        if f == 13:
            comments.append(v)
    elif wt == 2:
        n, i = varint(i)
        if f == 6:
            strs.append(b[i:i + n].decode())
        i += n
    else:
        sys.exit("wire type %d" % wt)
print("\n".join(strs[c] for c in comments))
EOF
)
contains "pprof comment states the engine" "$PB" "engine: EventPipe"
contains "pprof comment: why" "$PB" "why: --engine auto, and perf_event_open was denied (a seccomp filter"
contains "pprof comment: what it cannot see" "$PB" "no native, runtime or kernel frames"
contains "pprof comment: on-CPU" "$PB" "samples: on-CPU: "

expect_exit "profile -o .speedscope.json under the wrapper" 0 "$NOPERF" "$CLRTAP" profile -p "$PID" -d 2 -o "$WORK/ep.speedscope.json"
SS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\n".join(d["clrtapNotes"])); print(d["name"])' "$WORK/ep.speedscope.json")
contains "speedscope notes state the engine" "$SS" "engine: EventPipe"
contains "speedscope notes: why" "$SS" "why: --engine auto, and perf_event_open was denied (a seccomp filter"
contains "speedscope notes: what it cannot see" "$SS" "no native, runtime or kernel frames"
contains "speedscope notes: on-CPU" "$SS" "samples: on-CPU: "
contains "speedscope name states the engine" "$SS" "(EventPipe engine)"

expect_exit "profile --threads --bundle under the wrapper" 0 "$NOPERF" "$CLRTAP" profile -p "$PID" -d 2 --threads -o "$WORK/ept.folded" --bundle "$WORK/bundle"
contains "--threads: a root per thread name" "$(cat "$WORK/ept.folded")" "[thread] workload;"
BDIR=$(echo "$OUT" | sed -n 's/^bundle: //p')
contains "bundle metadata states the engine" "$(cat "$BDIR/metadata.txt")" "engine: EventPipe"
contains "bundle metadata: why" "$(cat "$BDIR/metadata.txt")" "why: --engine auto, and perf_event_open was denied (a seccomp filter"
contains "bundle metadata: what it cannot see" "$(cat "$BDIR/metadata.txt")" "no native, runtime or kernel frames"
contains "bundle metadata: on-CPU" "$(cat "$BDIR/metadata.txt")" "samples: on-CPU: "
check "bundle tar holds metadata.txt" bash -c 'tar tzf "$1"/*.tar.gz | grep -q metadata.txt' _ "$BDIR"
contains "raw samples name HotA" "$(cat "$BDIR/samples.txt")" "$HOTA (managed)"

# the call blocked with ENOSYS (Podman's profile before containers/common#2534): the same fallback
expect_exit "profile, perf_event_open failing with ENOSYS" 0 "$NOPERF" --enosys "$CLRTAP" profile -p "$PID" -d 2 -o "$WORK/enosys.folded"
contains "ENOSYS: the EventPipe engine, with the seccomp cause" "$OUT" "engine: EventPipe (--engine auto, and perf_event_open was denied: a seccomp filter"
contains "ENOSYS: HotA named" "$(cat "$WORK/enosys.folded")" ";$HOTA"

expect_exit "--engine perf under the wrapper fails" 5 "$NOPERF" "$CLRTAP" profile --engine perf -p "$PID" -d 2 -o "$WORK/no.folded"
contains "--engine perf: the seccomp cause" "$ERR" "a seccomp filter denies the perf_event_open system call"
contains "--engine perf: names the fix" "$ERR" "--engine eventpipe"
lacks "--engine perf: not the paranoid advice" "$ERR" "perf_event_paranoid <= 2"
check "--engine perf: no output file" test ! -e "$WORK/no.folded"

expect_exit "-F with --engine eventpipe is refused" 2 "$CLRTAP" profile --engine eventpipe -F 199 -p "$PID" -d 1 -o "$WORK/no.folded"
contains "-F refusal says why" "$ERR" "the runtime samples every managed thread at its own interval"
expect_exit "unknown engine" 2 "$CLRTAP" profile --engine bpf -p "$PID" -d 1 -o "$WORK/no.folded"

# top on the EventPipe engine, through the fallback
expect_exit "top under the wrapper" 0 "$NOPERF" "$CLRTAP" top -p "$PID" -i 2
echo "$OUT" | sed 's/^/    | /'
contains "top states the engine" "$OUT" "EventPipe engine"
contains "top states on-CPU" "$OUT" "managed-code samples in the last second, on-CPU (EventPipe engine"
contains "top names HotA" "$OUT" "$HOTA"
equals "top: two refreshes" "$(echo "$OUT" | grep -c '^clrtap top - pid ')" 2

expect_exit "top --engine perf under the wrapper fails" 5 "$NOPERF" "$CLRTAP" top --engine perf -p "$PID" -i 1
contains "top --engine perf: the seccomp cause" "$ERR" "a seccomp filter denies the perf_event_open system call"
expect_exit "top -F with --engine eventpipe is refused" 2 "$CLRTAP" top --engine eventpipe -F 99 -p "$PID" -i 1
expect_exit "top --engine eventpipe" 0 "$CLRTAP" top --engine eventpipe -p "$PID" -i 1
contains "top --engine eventpipe: the engine" "$OUT" "EventPipe engine"
contains "top --engine eventpipe: HotA" "$OUT" "$HOTA"

# a process without a diagnostics socket while perf is denied: both causes, once
sleep 300 &
SPID=$!
KILL_PIDS+=("$SPID")
expect_exit "no socket + perf denied" 5 "$NOPERF" "$CLRTAP" profile -p "$SPID" -d 1 -o "$WORK/no.folded"
contains "names the perf cause" "$ERR" "perf_event_open was denied (a seccomp filter"
contains "names the socket cause" "$ERR" "no diagnostics socket clrtap can reach"
equals "one message" "$(echo "$ERR" | grep -c 'clrtap:')" 1
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null

# --engine eventpipe on a process without a diagnostics socket: exit 4
sleep 300 &
SPID=$!
KILL_PIDS+=("$SPID")
expect_exit "--engine eventpipe on a native process" 4 "$CLRTAP" profile --engine eventpipe -p "$SPID" -d 1 -o "$WORK/no.folded"
contains "--engine eventpipe: says a .NET process is needed" "$ERR" "needs a .NET process"
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null

# --engine eventpipe as nobody on root's process: the socket is out of reach (exit 5, not 4)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	expect_exit "--engine eventpipe, socket out of reach" 5 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CLRTAP" profile --engine eventpipe -p "$PID" -d 1 -o /tmp/clrtap-nobody-$$.folded
	contains "--engine eventpipe, out of reach: says so" "$ERR" "clrtap may not reach its diagnostics socket"
	contains "--engine eventpipe, out of reach: names the fix" "$ERR" "CAP_SYS_PTRACE"
	check "--engine eventpipe, out of reach: no output" test ! -e /tmp/clrtap-nobody-$$.folded
fi

# Ctrl-C on the EventPipe engine: a complete result, exit 0
"$CLRTAP" profile --engine eventpipe -p "$PID" -d 60 -o "$WORK/int.folded" >"$WORK/int.out" 2>&1 &
CP=$!
sleep 3
kill -INT "$CP"
wait "$CP"
equals "EventPipe, Ctrl-C: exit 0" "$?" 0
contains "EventPipe, Ctrl-C: says it stopped early" "$(cat "$WORK/int.out")" "stopped early"
contains "EventPipe, Ctrl-C: HotA in the result" "$(cat "$WORK/int.folded")" ";$HOTA"

# SIGKILL of clrtap mid-session: the runtime ends the session itself; the
# target runs on and a new session works (nothing was left to restore)
"$CLRTAP" profile --engine eventpipe -p "$PID" -d 60 -o "$WORK/killed.folded" >/dev/null 2>&1 &
CP=$!
sleep 3
kill -KILL "$CP"
wait "$CP" 2>/dev/null
check "EventPipe, SIGKILL: the target runs on" kill -0 "$PID"
expect_exit "EventPipe, SIGKILL: a new session works" 0 "$CLRTAP" profile --engine eventpipe -p "$PID" -d 2 -o "$WORK/after.folded"
contains "EventPipe, SIGKILL: the new session names HotA" "$(cat "$WORK/after.folded")" ";$HOTA"

# ---------------------------------------------------------------- both engines here
# perf_event_open allowed here? (this test's own probe: a user-only event on itself)
perf_probe() {
	python3 - <<'EOF'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = bytearray(128)
struct.pack_into("IIQ", attr, 0, 1, 128, 1)  # PERF_TYPE_SOFTWARE, size, TASK_CLOCK
struct.pack_into("Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))  # disabled, exclude_kernel, exclude_hv
buf = ctypes.create_string_buffer(bytes(attr), 128)
nr = {"x86_64": 298, "aarch64": 241}[os.uname().machine]
fd = libc.syscall(nr, buf, 0, -1, -1, 0)
print("allowed" if fd >= 0 else "denied")
EOF
}
if [ "$(perf_probe)" != allowed ]; then
	skip "both engines: perf_event_open is denied to this test here"
else
expect_exit "profile --engine perf" 0 "$CLRTAP" profile --engine perf -F 499 -p "$PID" -d 5 -o "$WORK/perf.folded"
contains "perf summary states the engine" "$OUT" "engine: perf_event"
expect_exit "profile --engine eventpipe" 0 "$CLRTAP" profile --engine eventpipe -p "$PID" -d 5 -o "$WORK/ep2.folded"
contains "eventpipe summary states the engine" "$OUT" "engine: EventPipe (as asked)"
SP=$(folded_share "$WORK/perf.folded" "$HOTA" "$HOTB")
SE=$(folded_share "$WORK/ep2.folded" "$HOTA" "$HOTB")
echo "    HotA share: perf_event $SP %, EventPipe $SE %"
check "both engines agree within 5 points ($SP vs $SE)" python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= 5 else 1)' "$SP" "$SE"
# the count is the last field: frame names may hold spaces ("Main [lambda]")
top_leaf() { awk '{print $NF "\t" $0}' "$1" | sort -t$'\t' -k1,1 -n -r | head -1 | cut -f2- | sed 's/ [0-9]*$//; s/.*;//'; }
TOPP=$(top_leaf "$WORK/perf.folded")
TOPE=$(top_leaf "$WORK/ep2.folded")
equals "perf's top leaf is HotA" "$TOPP" "$HOTA"
equals "EventPipe's top leaf is HotA" "$TOPE" "$HOTA"
fi

# ---------------------------------------------------------------- caps dropped, paranoid 3
DROP=(setpriv --inh-caps=-perfmon,-sys_admin --ambient-caps=-perfmon,-sys_admin --bounding-set=-perfmon,-sys_admin --)
PARA=/proc/sys/kernel/perf_event_paranoid
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! "${DROP[@]}" true 2>/dev/null; then
	skip "caps-dropped run (needs root and setpriv)"
else
	OLD=$(cat "$PARA")
	CLEANUP_CMD='echo "$OLD" > "$PARA"'
	if echo 3 > "$PARA" 2>/dev/null; then
		# This kernel's rule at paranoid 3 for a process without CAP_PERFMON: may it
		# open a user-only event on itself? (Debian/Ubuntu kernels: no; upstream: yes.)
		export -f perf_probe
		PROBE=$("${DROP[@]}" bash -c perf_probe)
		echo "    paranoid 3 without CAP_PERFMON/CAP_SYS_ADMIN: perf_event_open $PROBE here"
		# the flame graph (HTML) and its folded stacks come from one run: the bundle;
		# -F 499: enough samples in 5 s that the split is not at the mercy of chance
		expect_exit "profile with the caps dropped at paranoid 3" 0 "${DROP[@]}" "$CLRTAP" profile -F 499 -p "$PID" -d 5 -o "$WORK/caps.html" --bundle "$WORK/capsb"
		echo "$OUT" | sed 's/^/    | /'
		echo "$OLD" > "$PARA"
		CB=$(echo "$OUT" | sed -n 's/^bundle: //p')
		SC=$(folded_share "$CB/profile.folded" "$HOTA" "$HOTB")
		echo "    caps dropped: HotA share $SC %"
		check "caps dropped: split 75 +- 5 ($SC %)" in_range "$SC" 70 80
		contains "caps dropped: HotA named" "$(cat "$CB/profile.folded")" ";$HOTA"
		contains "caps dropped: the flame graph names HotA" "$(cat "$WORK/caps.html")" "$HOTA"
		if [ "$PROBE" = denied ]; then
			contains "caps dropped: EventPipe engine" "$OUT" "engine: EventPipe"
			contains "caps dropped: the flame graph states the EventPipe engine" "$(cat "$WORK/caps.html")" "(EventPipe engine)</title>"
			contains "caps dropped: the paranoid cause" "$ERR" "perf_event_paranoid >= 3 and no CAP_PERFMON"
		else
			# the kernel lets it sample its own user stacks: perf_event stays, without kernel stacks
			contains "caps dropped: this kernel keeps perf_event" "$OUT" "engine: perf_event"
			contains "caps dropped: the flame graph states the perf_event engine" "$(cat "$WORK/caps.html")" "(perf_event engine)</title>"
			contains "caps dropped: kernel stacks refused" "$ERR" "kernel stacks not permitted"
		fi
		# --engine eventpipe under the same conditions works whatever the kernel says
		echo 3 > "$PARA"
		expect_exit "caps dropped, paranoid 3: --engine eventpipe" 0 "${DROP[@]}" "$CLRTAP" profile --engine eventpipe -p "$PID" -d 4 -o "$WORK/caps-ep.html" --bundle "$WORK/capsb2"
		echo "$OLD" > "$PARA"
		CB=$(echo "$OUT" | sed -n 's/^bundle: //p')
		SC=$(folded_share "$CB/profile.folded" "$HOTA" "$HOTB")
		check "caps dropped, EventPipe: split 75 +- 5 ($SC %)" in_range "$SC" 70 80
		contains "caps dropped, EventPipe: the flame graph states the engine" "$(cat "$WORK/caps-ep.html")" "(EventPipe engine)</title>"
		contains "caps dropped, EventPipe: the flame graph names HotA" "$(cat "$WORK/caps-ep.html")" "$HOTA"
	else
		skip "cannot set perf_event_paranoid"
	fi
	echo "$OLD" > "$PARA"
	CLEANUP_CMD=
	equals "perf_event_paranoid restored" "$(cat "$PARA")" "$OLD"
	# Off-CPU needs kernel samples: without CAP_PERFMON at paranoid >= 2 the
	# capability is the cause (no sysctl change needed to see it)
	if [ "$OLD" -ge 2 ]; then
		expect_exit "caps dropped: --engine perf --off-cpu fails" 5 "${DROP[@]}" "$CLRTAP" profile --engine perf --off-cpu -p "$PID" -d 1 -o "$WORK/no.folded"
		contains "caps dropped, off-CPU: names the capability and the sysctl" "$ERR" "kernel.perf_event_paranoid must be 1 or lower, or clrtap needs CAP_PERFMON"
		expect_exit "caps dropped: --off-cpu falls back to EventPipe" 0 "${DROP[@]}" "$CLRTAP" profile --off-cpu -p "$PID" -d 2 -o "$WORK/caps-off.folded"
		contains "caps dropped, off-CPU: the cause in the warning" "$ERR" "kernel stacks not allowed (perf_event_paranoid >= 2, no CAP_PERFMON)"
		contains "caps dropped, off-CPU: EventPipe engine" "$OUT" "engine: EventPipe"
		# the main thread waits for the workload thread: a blocked managed thread
		contains "caps dropped, off-CPU: the waiting thread's frame" "$(cat "$WORK/caps-off.folded")" "System.Threading.Monitor::Wait"
		lacks "caps dropped, off-CPU: no running frame" "$(cat "$WORK/caps-off.folded")" "$HOTA"
	fi
fi

stop_fixture "$PID"

# ---------------------------------------------------------------- no CAP_SYS_PTRACE
# Root without CAP_SYS_PTRACE on another user's process: CAP_PERFMON lets
# perf_event_open pass its ptrace check, but the target's memory mappings
# (which name the frames) and its /proc/PID/root (the socket) need ptrace
# access. The refusal names ptrace and CAP_SYS_PTRACE, not the sysctl.
NOPTRACE=(setpriv --inh-caps=-sys_ptrace --ambient-caps=-sys_ptrace --bounding-set=-sys_ptrace --)
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! "${NOPTRACE[@]}" true 2>/dev/null; then
	skip "no-ptrace run (needs root and setpriv)"
else
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 300 &
	NP=$!
	KILL_PIDS+=("$NP")
	for ((i = 0; i < 50; i++)); do [ "$(stat -c %u /proc/$NP 2>/dev/null)" = 65534 ] && break; sleep 0.1; done
	# this kernel's rule: may root without CAP_SYS_PTRACE open the mappings of nobody's process?
	MAPS=$("${NOPTRACE[@]}" python3 - "$NP" <<'EOF'
import os, sys
d = "/proc/%s/map_files" % sys.argv[1]
try:
    os.close(os.open(os.path.join(d, sorted(os.listdir(d))[0]), os.O_PATH))
    print("allowed")
except PermissionError:
    print("denied")
EOF
)
	echo "    root without CAP_SYS_PTRACE, nobody's map_files: $MAPS here"
	if [ "$MAPS" = denied ]; then
		expect_exit "no CAP_SYS_PTRACE: profile fails" 5 "${NOPTRACE[@]}" "$CLRTAP" profile -p "$NP" -d 1 -o "$WORK/no.folded"
		contains "no CAP_SYS_PTRACE: the mappings were refused" "$ERR" "reading the target's memory mappings was refused (no ptrace access to the target"
		contains "no CAP_SYS_PTRACE: names the fix" "$ERR" "add CAP_SYS_PTRACE"
		contains "no CAP_SYS_PTRACE: the socket out of reach too" "$ERR" "may not reach the diagnostics socket"
		lacks "no CAP_SYS_PTRACE: not the sysctl advice" "$ERR" "perf_event_paranoid <= 2"
		expect_exit "no CAP_SYS_PTRACE: top fails" 5 "${NOPTRACE[@]}" "$CLRTAP" top -p "$NP" -i 1
		contains "no CAP_SYS_PTRACE: top names ptrace" "$ERR" "no ptrace access to the target"
	else
		expect_exit "no CAP_SYS_PTRACE: profile works (this kernel allows it)" 0 "${NOPTRACE[@]}" "$CLRTAP" profile -p "$NP" -d 1 -o "$WORK/np.folded"
	fi
	kill "$NP" 2>/dev/null
	wait "$NP" 2>/dev/null
fi

# ---------------------------------------------------------------- a container: own PID + mount namespace
# The socket is in the target's private /tmp (reached through /proc/PID/root),
# the runtime reports thread ids of its own PID namespace.
start_fixture_ns cpu-split
expect_exit "ns: profile under the wrapper (EventPipe), --threads" 0 "$NOPERF" "$CLRTAP" profile -p "$FIX_PID" -d 5 --threads -o "$WORK/ns.folded"
contains "ns: the EventPipe engine" "$OUT" "engine: EventPipe"
contains "ns: HotA named" "$(cat "$WORK/ns.folded")" ";$HOTA"
contains "ns: thread named through NSpid" "$(cat "$WORK/ns.folded")" "[thread] workload;"
# each sample's thread found through NSpid: (almost) none kept unpolled
UNPOLLED=$(echo "$OUT" | sed -n 's/^basis: on-CPU: .*, \([0-9]*\) of threads not polled at their time kept$/\1/p')
KEPT=$(echo "$OUT" | sed -n 's/^samples: \([0-9]*\) kept of .*/\1/p')
check "ns: on-CPU through NSpid: $UNPOLLED of $KEPT samples of threads not polled" test "${UNPOLLED:-x}" -le $((${KEPT:-0} / 20))
SHARE=$(folded_share "$WORK/ns.folded" "$HOTA" "$HOTB")
check "ns: split 75 +- 5 ($SHARE %)" in_range "$SHARE" 70 80
stop_fixture "$FIX_PID"
finish
