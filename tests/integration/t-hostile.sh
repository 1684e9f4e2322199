#!/usr/bin/env bash
# A hostile container (issues 10 and 19): the sample app in `hostile` mode
# under tests/tools/contain-hostile.sh (pivot_root into a minimal tree, its
# /tmp full of absolute links to host sentinel files, a FIFO where the jitdump
# would be, TMPDIR a link to a host directory that holds a decoy socket, and
# evil argv, environment names, thread names and exception messages).
#
# Every command clrtap has is run against it. None may read, write, truncate
# or delete a host sentinel (content, mtime, inode, existence), connect to a
# host socket (a sentinel server logs every connection), or hang on the FIFO
# (each runs under `timeout`); each does its job or fails with a clear
# clrtap: line and a documented exit code. No stdout or stderr holds a raw
# control byte; every --json output (and serve's API) is strict JSON holding
# the hostile strings exactly.
#
# Then the container swaps its diagnostics socket (issue 19 cases 1-2 and a
# socket served by another process): clrtap refuses with exit 10, names the
# pids, prints none of the other process's data and connects to no host socket.
. "$(dirname "$0")/lib.sh"

E_NOT_TARGET=10
HOST=$WORK/host
NEWROOT=$WORK/newroot
mkdir -p "$HOST/tmpdir" "$NEWROOT"
for f in sentinel-perfmap sentinel-perfinfo sentinel-dump; do
	printf 'HOST SENTINEL %s: never to be read or written by clrtap\n' "$f" >"$HOST/$f"
done
touch -d '2001-02-03 04:05:06' "$HOST"/sentinel-*
# A read shows in the access time where this file system keeps it (relatime
# updates an atime older than a day): then the snapshot holds it too.
ATIME=""
touch -d '2001-02-03 04:05:06' "$WORK/atime-probe"
cat "$WORK/atime-probe" >/dev/null
if [ "$(stat -c %X "$WORK/atime-probe")" != "$(stat -c %Y "$WORK/atime-probe")" ]; then
	ATIME=" atime %X"
	ok "sentinel reads are seen (the file system updates atime)"
else
	skip "sentinel reads: this file system does not update atime (content, mtime and inode still checked)"
fi
SLOG=$WORK/sentinel-connections.log
: >"$SLOG"

# sentinel_server PATH: a host socket that logs every connection to $SLOG.
sentinel_server() {
	local out="$WORK/sentinel-$RANDOM.out"
	python3 "$ROOT/tests/tools/sentinel-sock.py" "$1" "$SLOG" >"$out" 2>&1 &
	KILL_PIDS+=("$!")
	wait_for_line "$out" '^READY' 10 "$!"
}
# Case 3: the host directory the container's TMPDIR link names holds a
# socket with the runtime's name for pid 1.
sentinel_server "$HOST/tmpdir/dotnet-diagnostic-1-1-socket"
# Case 2: any host socket.
sentinel_server "$HOST/any.sock"

snapshot() {
	local f
	for f in "$HOST"/sentinel-*; do
		printf '%s %s\n' "$(basename "$f")" "$(stat -c "%s %Y %i %F$ATIME" "$f")$(sha1sum <"$f")"
		# our own read set the atime: back to 2001, so the next read shows
		[ -n "$ATIME" ] && touch -a -d '2001-02-03 04:05:06' "$f"
	done
	# the host directory the container's TMPDIR link names: never listed
	[ -n "$ATIME" ] && stat -c "tmpdir$ATIME" "$HOST/tmpdir"
	ls -A "$HOST" "$HOST/tmpdir" | tr '\n' ' '
	[ -n "$ATIME" ] && touch -a -d '2001-02-03 04:05:06' "$HOST/tmpdir"
	printf '\nconnections: %s\n' "$(wc -l <"$SLOG")"
}
[ -n "$ATIME" ] && touch -a -d '2001-02-03 04:05:06' "$HOST/tmpdir"
BEFORE=$(snapshot)

# The hostile fixture.
EVIL_LABEL=$(printf 'lab\nel\033[2J"\\\377end')
FIX_OUT=$WORK/fixture-hostile.out
DOTNET_CLI_TELEMETRY_OPTOUT=1 "$ROOT/tests/tools/contain-hostile.sh" "$HOST" "$NEWROOT" "$FIXTURE_DLL" \
	hostile --label "$EVIL_LABEL" >"$FIX_OUT" 2>&1 &
FIX_NS_PARENT=$!
KILL_PIDS+=("$FIX_NS_PARENT")
if ! wait_for_line "$FIX_OUT" '^READY ' 60 "$FIX_NS_PARENT"; then
	not_ok "hostile fixture started" "$(cat "$FIX_OUT")"
	finish
fi
P=""
for ((i = 0; i < 100; i++)); do
	P=$(pgrep -P "$FIX_NS_PARENT" | head -1)
	[ -n "$P" ] && break
	sleep 0.05
done
KILL_PIDS+=("$P")
check "the container's / is not the host's" test "$(stat -L -c '%d:%i' /proc/"$P"/root)" != "$(stat -c '%d:%i' /)"
check "the container's TMPDIR is a link" test -L "/proc/$P/root/tmp/odd"
check "the container's jitdump is a FIFO" test -p "/proc/$P/root/tmp/jit-1.dump"

# host_intact NAME: the sentinels are as they were, no host socket was reached.
host_intact() {
	local now
	now=$(snapshot)
	if [ "$now" == "$BEFORE" ]; then
		ok "$1: host sentinels untouched, no host socket connected"
	else
		not_ok "$1: host sentinels untouched, no host socket connected" \
			"$(diff <(printf '%s\n' "$BEFORE") <(printf '%s\n' "$now") | sed 's/^/    /')"
	fi
	BEFORE=$now
}

# run NAME WANT CMD...: under a 90 s timeout (a hang on the FIFO is exit 124);
# WANT is the exit code, or "any" for "a documented code with a clear message".
# Its stdout and stderr (kept in $WORK/stdout, $WORK/stderr) may hold no raw
# control byte: what the target chose is escaped on the terminal.
run() {
	local name=$1 want=$2
	shift 2
	timeout 90 "$@" >"$WORK/stdout" 2>"$WORK/stderr"
	RC=$?
	OUT=$(cat "$WORK/stdout")
	ERR=$(cat "$WORK/stderr")
	term_clean "$WORK/stdout" "$name: no control byte on stdout"
	term_clean "$WORK/stderr" "$name: no control byte on stderr"
	if [ "$want" == any ]; then
		if [ "$RC" -le 10 ] && { [ "$RC" -eq 0 ] || [[ "$ERR" == *clrtap:* ]]; }; then
			ok "$name (exit $RC)"
		else
			not_ok "$name: a documented exit code and a clear message" "exit $RC: $*" "stderr: ${ERR:0:600}"
		fi
	elif [ "$RC" -eq "$want" ]; then
		ok "$name (exit $RC)"
	else
		not_ok "$name" "want exit $want, got $RC: $*" "stdout: ${OUT:0:600}" "stderr: ${ERR:0:600}"
	fi
	host_intact "$name"
}

run "info" 0 "$CLRTAP" info -p "$P"
contains "info finds the real runtime inside the container" "$OUT" "pid in namespace: 1"
run "ps" 0 "$CLRTAP" ps
run "perfmap status" 0 "$CLRTAP" perfmap -p "$P" status
run "perfmap on" any "$CLRTAP" perfmap -p "$P" on
run "perfmap off" any "$CLRTAP" perfmap -p "$P" off
run "stacks" 0 "$CLRTAP" stacks -p "$P"
contains "stacks sees the throwing thread" "$OUT" "HostileThrower"
run "trace collect" 0 "$CLRTAP" trace collect -p "$P" -d 2 -o "$WORK/h.nettrace"
run "trace report" 0 "$CLRTAP" trace report "$WORK/h.nettrace"
run "counters collect" 0 "$CLRTAP" counters collect -p "$P" -d 2 -o "$WORK/h.csv"
run "counters monitor" 0 "$CLRTAP" counters monitor -p "$P" -d 2 --lines
run "profile" 0 "$CLRTAP" profile -p "$P" -d 2 -o "$WORK/h.folded"
check "profile removed no link of the container's" test -L "/proc/$P/root/tmp/perf-1.map"
run "top" 0 "$CLRTAP" top -p "$P" -d 2
run "probe" 0 "$CLRTAP" probe -p "$P" 'Clrtap.Fixtures.HostileThrower::Throw' -d 2
run "dump" 0 "$CLRTAP" dump -p "$P" --type mini -o "$WORK/h.core"
check "the dump is an ELF core" sh -c "readelf -h '$WORK/h.core' | grep -q 'Type:.*CORE'"
check "the dump was taken in the container's own temp dir and removed" \
	sh -c "! ls -A '/proc/$P/root$HOST/tmpdir' | grep -v '^clrtap-dump-1-[0-9]*\.core$' | grep -q clrtap-dump"
# Every --json output of every command, run against the hostile container, is
# strict JSON (UTF-8, one value) and holds the hostile strings exactly: the
# environment and argv (the runtime reports them as UTF-16: an invalid byte
# arrives as U+FFFD; what clrtap reads from /proc keeps it, by the
# surrogateescape rule of lib/common/json.h), the thread names, the exception
# message. The text form of the same commands was checked above (run).
export P EVIL_LABEL WORK
# shellcheck disable=SC2016
PYEVIL='EVIL = "evil\n\x1b[31mred\x1b[0m\"q\"\\b\x07\u009b2J\u202eend"
LABEL = env("EVIL_LABEL")
ARGV = open("/proc/%s/cmdline" % os.environ["P"], "rb").read().rstrip(b"\0").split(b"\0")
assert ARGV[-1] == LABEL, ARGV
'
run "info --env --json" 0 "$CLRTAP" info -p "$P" --env --json
jcheck "info --env --json: every environment entry exact, the evil label in argv" "$WORK/stdout" "$PYEVIL"'
want = {}
for e in open("/proc/%s/environ" % os.environ["P"], "rb").read().split(b"\0"):
    if e:
        k, _, v = e.partition(b"=")
        want[k.decode("utf-8", "replace")] = v.decode("utf-8", "replace")
assert d["environment"] == want, (d["environment"], want)
assert "EVIL_NL\nNAME" in want and "EVIL_ESC\x1b[31mRED\x1b[0m" in want and "EVIL_Q\"\\b\\" in want, want
assert d["cmdline"].endswith("--label " + LABEL.decode("utf-8", "replace")), d["cmdline"]
print("ok")'
run "ps --json" 0 "$CLRTAP" ps --json
jcheck "ps --json: the command line byte for byte (0xff too)" "$WORK/stdout" "$PYEVIL"'
row = [r for r in d if r["pid"] == int(os.environ["P"])][0]
assert raw(row["cmdline"]) == b" ".join(ARGV), (raw(row["cmdline"]), ARGV)
print("ok")'
run "perfmap status --json" 0 "$CLRTAP" perfmap -p "$P" status --json
jcheck "perfmap status --json: strict, the map named as clrtap looks at it" "$WORK/stdout" '
assert d["perfmap_file"] == "/proc/%s/root/tmp/perf-1.map" % os.environ["P"], d
print("ok")'
run "stacks --json" 0 "$CLRTAP" stacks -p "$P" --json
jcheck "stacks --json: the evil thread names exact (their comm bytes)" "$WORK/stdout" "$PYEVIL"'
evil = [t for t in d["threads"] if (t["name"] or "").startswith("evil")]
assert len(evil) == 3, [t["name"] for t in d["threads"]]
for t in evil:
    assert raw(t["name"]) == EVIL.encode()[:15], (t["name"], EVIL.encode()[:15])
assert any("HostileThrower::" in f for t in evil for f in t["frames"]), evil
print("ok")'
run "trace collect --profile exceptions" 0 "$CLRTAP" trace collect -p "$P" --profile exceptions -d 2 -o "$WORK/hx.nettrace"
run "trace report --json" 0 "$CLRTAP" trace report "$WORK/hx.nettrace" --json
jcheck "trace report --json: the exception message exact" "$WORK/stdout" "$PYEVIL"'
g = [g for g in d["exceptions"]["groups"] if g["type"] == "System.InvalidOperationException"][0]
assert g["message"] == EVIL and g["count"] > 0, g
print("ok")'
run "trace report (text)" 0 "$CLRTAP" trace report "$WORK/hx.nettrace"
contains "trace report: the message shown escaped" "$OUT" 'evil\n\x1b[31mred\x1b[0m"q"\\b\x07\u{009b}2J\u{202e}end'
run "counters collect --format json" 0 "$CLRTAP" counters collect -p "$P" -d 2 --format json -o "$WORK/hc.json"
jcheck "counters collect --format json: strict, with values" "$WORK/hc.json" '
assert d["pid"] == int(os.environ["P"]) and len(d["values"]) > 0, d
print("ok")'
run "dump --json" 0 "$CLRTAP" dump -p "$P" --type mini -o "$WORK/hj.core" --json
jcheck "dump --json: strict, the path" "$WORK/stdout" '
assert d["path"] == os.environ["WORK"] + "/hj.core" and d["bytes"] > 0, d
print("ok")'
rm -f "$WORK/hj.core"
run "analyze exceptions --json" 0 "$CLRTAP" analyze -p "$P" exceptions -d 2 --json
jcheck "analyze exceptions --json: the message exact" "$WORK/stdout" "$PYEVIL"'
g = d["result"]["groups"][0]
assert g["message"] == EVIL and g["count"] > 0, g
print("ok")'
run "analyze exceptions (text)" 0 "$CLRTAP" analyze -p "$P" exceptions -d 2
contains "analyze: the message shown escaped" "$OUT" 'evil\n\x1b[31mred\x1b[0m"q"\\b\x07\u{009b}2J\u{202e}end'
run "analyze stacks --json" 0 "$CLRTAP" analyze -p "$P" stacks -d 1 --json
jcheck "analyze stacks --json: strict" "$WORK/stdout" '
assert d["analyzer"] == "stacks", d
print("ok")'
run "doctor --json" 0 "$CLRTAP" doctor -p "$P" -d 2 --json
jcheck "doctor --json: strict, it saw the exceptions" "$WORK/stdout" '
assert any(f["analyzer"] == "exceptions" for f in d["findings"]), d
print("ok")'
run "doctor" 0 "$CLRTAP" doctor -p "$P" -d 1
run "gcdump report -p --json" 0 "$CLRTAP" gcdump report -p "$P" --json
jcheck "gcdump report --json: strict, the process" "$WORK/stdout" '
assert d["pid"] == int(os.environ["P"]) and d["objects"] > 0, d
print("ok")'
run "gcdump report (text)" 0 "$CLRTAP" gcdump report -p "$P"
contains "gcdump report: the process named" "$OUT" "Heap snapshot of pid $P"
run "gcdump watch --json" 0 "$CLRTAP" gcdump watch -p "$P" --every 500ms --snapshots 2 -o "$WORK/hw" --json
jcheck "gcdump watch --json: strict" "$WORK/stdout" '
assert isinstance(d, dict), d
print("ok")'
run "gcdump diff --json" 0 "$CLRTAP" gcdump diff "$WORK/hw-1.heap" "$WORK/hw-2.heap" --json
jcheck "gcdump diff --json: strict" "$WORK/stdout" '
assert isinstance(d, dict), d
print("ok")'
run "watch" 0 "$CLRTAP" watch -p "$P" 'exception System.InvalidOperationException count 1' -d 3
JCHECK_LINES=1 jcheck "watch: strict JSON lines, the message and argv exact" "$WORK/stdout" "$PYEVIL"'
w = [l for l in d if l["event"] == "watching"][0]
assert raw(w["cmdline"]) == b" ".join(ARGV), w
f = [l for l in d if l["event"] == "fired"][0]
assert f["message"] == EVIL, f
print("ok")'
contains "watch: the message shown escaped once" "$ERR" 'evil\n\x1b[31mred\x1b[0m"q"\\b\x07\u{009b}2J\u{202e}end'
# The profiler library is placed inside the container (through lib/proc).
run "agent run --json" 0 "$CLRTAP" agent run -p "$P" -d 1 --json
jcheck "agent run --json: strict, attached, the library inside the container's TMPDIR" "$WORK/stdout" '
assert d["attached"] is True and d["library"].startswith("/tmp/odd/clrtap-profiler-"), d
print("ok")'
check "agent: the library is in the container's own TMPDIR" \
	sh -c "ls '/proc/$P/root$HOST/tmpdir' | grep -q '^clrtap-profiler-'"
run "agent status --json" 0 "$CLRTAP" agent status -p "$P" --json
jcheck "agent status --json: strict" "$WORK/stdout" '
assert d["pid"] == int(os.environ["P"]), d
print("ok")'
# serve makes the same reachable over HTTP: its JSON about the container.
SOCK=$WORK/serve.sock
"$CLRTAP" serve --unix "$SOCK" --db "$WORK/serve.db" --pids "$P" >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE=$!
KILL_PIDS+=("$SERVE")
if wait_for_line "$WORK/serve.out" 'history in' 20 "$SERVE" >/dev/null; then
	curl -s --unix-socket "$SOCK" "http://clrtap/api/v1/processes/$P" >"$WORK/serve-proc.json"
	jcheck "serve: GET /api/v1/processes/PID is strict JSON with the argv exact" "$WORK/serve-proc.json" "$PYEVIL"'
assert d["pid"] == int(os.environ["P"]), d
assert raw(d["cmdline"]) == b" ".join(ARGV), (d["cmdline"], ARGV)
print("ok")'
	curl -s --unix-socket "$SOCK" "http://clrtap/api/v1/processes" >"$WORK/serve-procs.json"
	jcheck "serve: GET /api/v1/processes is strict JSON and lists the container" "$WORK/serve-procs.json" '
assert [p["pid"] for p in d["processes"] if p["pid"] == int(os.environ["P"])], d
print("ok")'
	curl -s --unix-socket "$SOCK" "http://clrtap/metrics" >"$WORK/metrics"
	term_clean "$WORK/metrics" "serve: /metrics holds no control byte"
else
	not_ok "serve started" "$(cat "$WORK/serve.out" "$WORK/serve.err")"
fi
kill -TERM "$SERVE" 2>/dev/null
wait "$SERVE" 2>/dev/null
term_clean "$WORK/serve.err" "serve: no control byte on stderr"
host_intact "serve"
check "the fixture survived every command" kill -0 "$P"

# The same without openat2 (the component walk older kernels get): the real
# runtime is found, the dump is taken, nothing of the host is touched.
CLRTAP_NO_OPENAT2=1 run "no openat2: info" 0 "$CLRTAP" info -p "$P"
contains "no openat2: the real runtime inside the container" "$OUT" "pid in namespace: 1"
CLRTAP_NO_OPENAT2=1 run "no openat2: dump" 0 "$CLRTAP" dump -p "$P" --type mini -o "$WORK/w.core"
check "no openat2: the dump is an ELF core" sh -c "readelf -h '$WORK/w.core' | grep -q 'Type:.*CORE'"
CLRTAP_NO_OPENAT2=1 run "no openat2: profile" 0 "$CLRTAP" profile -p "$P" -d 1 -o "$WORK/w.folded"
if strace -f -qq -o /dev/null true 2>/dev/null; then
	CLRTAP_NO_OPENAT2=1 strace -f -qq -e trace=openat2 -o "$WORK/strace.log" "$CLRTAP" info -p "$P" >/dev/null 2>&1
	equals "no openat2: no openat2 call made" "$(grep -c 'openat2(' "$WORK/strace.log")" 0
fi

# What the kernel was asked (strace, where this machine allows ptrace): no
# path below /proc/PID/root is ever handed to a file call (every one goes
# through an fd of the target's root), and every connect is to the socket's
# own descriptor, /proc/self/fd/N.
if strace -f -qq -o /dev/null true 2>/dev/null; then
	for cmd in "info --env" "perfmap status" "stacks" "dump --type mini -o $WORK/s.core" \
		"profile -d 1 -o $WORK/s.folded" "trace collect -d 1 -o $WORK/s.nettrace"; do
		# shellcheck disable=SC2086
		timeout 90 strace -f -qq -e trace=%file,connect -o "$WORK/strace.log" "$CLRTAP" $cmd -p "$P" >/dev/null 2>&1
		equals "strace $cmd: no file call on a path under /proc/$P/root" \
			"$(grep -c "/proc/$P/root/" "$WORK/strace.log")" 0
		equals "strace $cmd: connects only through /proc/self/fd" \
			"$(grep 'connect(' "$WORK/strace.log" | grep -vc 'sun_path="/proc/self/fd/')" 0
	done
	host_intact "strace runs"
else
	skip "strace checks: this machine does not allow ptrace"
fi

# The container swaps its socket. The host .NET process holds a secret.
FIX_ENV="CLRTAP_HOST_SECRET=hunter2-host-only" start_fixture idle
HOST_FIX=$FIX_PID
HOST_SOCK=$(ls /tmp/dotnet-diagnostic-"$HOST_FIX"-*-socket)
REAL=$(cd "/proc/$P/root$HOST/tmpdir" && ls dotnet-diagnostic-1-*-socket)
swap() {
	nsenter -t "$P" -m -r -w -- sh -c "rm -f '$HOST/tmpdir/$REAL' && $1"
}

# Case 1: a link to a host .NET process's socket.
swap "ln -s '$HOST_SOCK' '$HOST/tmpdir/$REAL'"
for cmd in "info --env" "trace collect -d 1 -o $WORK/x.nettrace" "counters collect -d 1 -o $WORK/x.csv" \
	"stacks" "dump --type mini -o $WORK/x.core" "perfmap on"; do
	# shellcheck disable=SC2086
	run "case 1: $cmd" $E_NOT_TARGET "$CLRTAP" $cmd -p "$P"
	contains "case 1: $cmd says the socket is not the target's" "$ERR" "not the target's socket"
	lacks "case 1: $cmd prints nothing of the host process" "$OUT$ERR" "hunter2"
done
if strace -f -qq -o /dev/null true 2>/dev/null; then
	timeout 60 strace -f -qq -e trace=connect -o "$WORK/strace1.log" "$CLRTAP" info -p "$P" --env >/dev/null 2>&1
	equals "case 1: strace: no connect call at all (the link is refused before connecting)" \
		"$(grep -c 'connect(' "$WORK/strace1.log")" 0
fi
check "case 1: no file written" test ! -e "$WORK/x.nettrace" -a ! -e "$WORK/x.csv" -a ! -e "$WORK/x.core"
# Sampling needs no socket: profile and top go on with native frames, and say why.
run "case 1: profile" 0 "$CLRTAP" profile -p "$P" -d 1 -o "$WORK/x.folded"
contains "case 1: profile says the socket is not the target's" "$ERR" "not the target's socket"
lacks "case 1: profile prints nothing of the host process" "$OUT$ERR" "hunter2"
run "case 1: ps" 0 "$CLRTAP" ps --json
equals "case 1: ps marks the container refused" \
	"$(json_get "$OUT" "[r['status'] for r in d if r['pid']==$P][0]")" "refused: not the target's socket"

# Case 2: a link to any host socket (the sentinel server logs connections).
swap "rm -f '$HOST/tmpdir/$REAL' && ln -s '$HOST/any.sock' '$HOST/tmpdir/$REAL'"
run "case 2: info" $E_NOT_TARGET "$CLRTAP" info -p "$P"
contains "case 2: says the socket is not the target's" "$ERR" "not the target's socket"

# Another process in the container serves the runtime's socket name: the
# peer check (SO_PEERCRED) refuses before anything is sent.
swap "rm -f '$HOST/tmpdir/$REAL'"
nsenter -t "$P" -m -r -w -- /usr/bin/python3 - "$HOST/tmpdir/$REAL" /tmp/decoy.log <"$ROOT/tests/tools/sentinel-sock.py" \
	>"$WORK/decoy.out" 2>&1 &
DECOY=$!
KILL_PIDS+=("$DECOY")
wait_for_line "$WORK/decoy.out" '^READY' 10 "$DECOY"
run "another process's socket: info" $E_NOT_TARGET "$CLRTAP" info -p "$P" --env
contains "names the target's pid" "$ERR" "not by pid $P"
contains "names the other pid" "$ERR" "served by pid $DECOY"
lacks "prints no process data" "$OUT" "runtime version"
sleep 0.6
equals "the decoy was connected to and sent nothing" "$(sort -u "/proc/$P/root/tmp/decoy.log" 2>/dev/null)" "CONNECT "

check "the fixture survived" kill -0 "$P"
finish
