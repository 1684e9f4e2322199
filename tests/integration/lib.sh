#!/usr/bin/env bash
# Shared helpers for integration tests: start real fixture processes (on the
# host or in their own PID + mount namespace with a private /tmp), always
# kill them, and count assertions.
#
# A test file sources this, calls the helpers, and ends with `finish`.
# Environment: CLRTAP (the binary), TOOLS (built test tools), FIXTURE_DLL.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
TOOLS=${TOOLS:-$ROOT/build/tests/tools}
FIXTURE_DLL=${FIXTURE_DLL:-$ROOT/build/fixtures/sample/sample.dll}
REALAPP_DLL=${REALAPP_DLL:-$ROOT/build/fixtures/realapp/realapp.dll}
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/clrtap-test.XXXXXX")
chmod 755 "$WORK"

PASSED=0
FAILED=0
SKIPPED=0
KILL_PIDS=()

cleanup() {
	local p i
	# SIGTERM first: a fixture that exits cleanly removes its socket.
	for p in "${KILL_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${KILL_PIDS[@]}"; do
		for ((i = 0; i < 60; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$p" 2>/dev/null
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
		rm -f /tmp/dotnet-diagnostic-"$p"-*-socket /tmp/clr-debug-pipe-"$p"-* \
			/tmp/perf-"$p".map /tmp/jit-"$p".dump /tmp/perfinfo-"$p".map
	done
	# Extra clean-up a test registered (after its processes are gone).
	if [ -n "${CLEANUP_CMD:-}" ]; then
		eval "$CLEANUP_CMD"
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	PASSED=$((PASSED + 1))
	echo "ok - $TEST_NAME: $1"
}

# skip REASON: a check this machine cannot make; counted apart from passes
# (TAP "# SKIP"), never as ok. Say what could not be checked and why.
skip() {
	SKIPPED=$((SKIPPED + 1))
	echo "ok - $TEST_NAME: $1 # SKIP"
}

not_ok() {
	FAILED=$((FAILED + 1))
	echo "not ok - $TEST_NAME: $1"
	shift
	local line
	for line in "$@"; do
		printf '    %s\n' "$line"
	done
}

# check NAME CONDITION-COMMAND...: passes when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

# expect_exit NAME CODE CMD...: runs CMD, output in $OUT (stdout) and $ERR (stderr).
expect_exit() {
	local name=$1 want=$2
	shift 2
	OUT=$("$@" 2>"$WORK/stderr")
	RC=$?
	ERR=$(cat "$WORK/stderr")
	if [ "$RC" -eq "$want" ]; then
		ok "$name (exit $RC)"
	else
		not_ok "$name" "want exit $want, got $RC: $*" "stdout: ${OUT:0:600}" "stderr: ${ERR:0:600}"
	fi
}

# contains NAME HAYSTACK NEEDLE
contains() {
	if [[ "$2" == *"$3"* ]]; then ok "$1"; else not_ok "$1" "missing '$3' in:" "${2:0:1500}"; fi
}

# lacks NAME HAYSTACK NEEDLE
lacks() {
	if [[ "$2" != *"$3"* ]]; then ok "$1"; else not_ok "$1" "unexpected '$3' in:" "${2:0:1500}"; fi
}

equals() {
	if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1" "want '$3', got '$2'"; fi
}

# wait_for_line FILE PATTERN [SECONDS [PID]]: waits until FILE has a line
# matching PATTERN; gives up early if PID (when given) exits.
wait_for_line() {
	local file=$1 pat=$2 secs=${3:-60} pid=${4:-} i
	for ((i = 0; i < secs * 20; i++)); do
		if grep -qE "$pat" "$file" 2>/dev/null; then
			return 0
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			echo "process $pid exited before /$pat/ appeared in $file:" >&2
			tail -20 "$file" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "timed out after ${secs}s waiting for /$pat/ in $file:" >&2
	tail -20 "$file" >&2
	return 1
}

# musl_cxx DIR: the C++ runtime a musl libcoreclr.so needs, in DIR (for
# LD_LIBRARY_PATH): this Debian machine has musl's loader and libc
# (musl-tools) but no musl libstdc++/libgcc_s, so DIR gets copies of
# Debian's with their loader dependency renamed to a small musl-built shim
# (tests/tools/musl/glibcshim.c says what it supplies). Fails when
# musl-gcc or the copies cannot be made.
musl_cxx() {
	local dir=$1
	mkdir -p "$dir" &&
		musl-gcc -std=c11 -O2 -fPIC -shared -o "$dir/ctshim-x86-64-0.so.2" "$ROOT/tests/tools/musl/glibcshim.c" &&
		python3 - "$dir" <<'PY'
import sys
for src in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libgcc_s.so.1"):
    b = open(src, "rb").read()
    open(sys.argv[1] + "/" + src.rsplit("/", 1)[1], "wb").write(
        b.replace(b"ld-linux-x86-64.so.2", b"ctshim-x86-64-0.so.2"))
PY
}

# start_fixture MODE [ARGS...]: starts the sample app on the host.
# Sets FIX_PID (host pid), FIX_OUT (its stdout file).
# Extra environment for the fixture: FIX_ENV="A=1 B=2".
start_fixture() {
	local mode=$1
	shift
	FIX_OUT=$WORK/fixture-$mode-$RANDOM.out
	# shellcheck disable=SC2086
	env ${FIX_ENV:-} DOTNET_CLI_TELEMETRY_OPTOUT=1 dotnet "$FIXTURE_DLL" "$mode" "$@" \
		>"$FIX_OUT" 2>&1 &
	FIX_PID=$!
	KILL_PIDS+=("$FIX_PID")
	if ! wait_for_line "$FIX_OUT" '^READY ' 60 "$FIX_PID"; then
		not_ok "fixture $mode started" "$(cat "$FIX_OUT")"
		finish
	fi
}

# start_fixture_ns MODE [ARGS...]: the sample app as PID 1 of its own PID and
# mount namespaces with a private /tmp (what a container looks like from the
# host). Sets FIX_PID to the dotnet process's host pid and FIX_NS_PARENT.
start_fixture_ns() {
	local mode=$1 i
	shift
	FIX_OUT=$WORK/fixture-ns-$mode-$RANDOM.out
	# shellcheck disable=SC2086
	env ${FIX_ENV:-} DOTNET_CLI_TELEMETRY_OPTOUT=1 \
		"$ROOT/tests/tools/contain.sh" "$FIXTURE_DLL" "$mode" "$@" >"$FIX_OUT" 2>&1 &
	FIX_NS_PARENT=$!
	KILL_PIDS+=("$FIX_NS_PARENT")
	if ! wait_for_line "$FIX_OUT" '^READY ' 60 "$FIX_NS_PARENT"; then
		not_ok "namespaced fixture $mode started" "$(cat "$FIX_OUT")"
		finish
	fi
	FIX_PID=""
	for ((i = 0; i < 100; i++)); do
		FIX_PID=$(pgrep -P "$FIX_NS_PARENT" | head -1)
		[ -n "$FIX_PID" ] && break
		sleep 0.05
	done
	KILL_PIDS+=("$FIX_PID")
}

# stop_fixture PID: SIGTERM, wait up to 5 s, then SIGKILL.
stop_fixture() {
	local p=$1 i
	kill -TERM "$p" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$p" 2>/dev/null
	return 1
}

# A free TCP port on loopback.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# need_realapp: ends the test with one stated SKIP when the realapp fixture
# was not built (scripts/build-fixtures.sh needs NuGet for it).
need_realapp() {
	if [ ! -f "$REALAPP_DLL" ]; then
		skip "no realapp fixture ($REALAPP_DLL not built: see scripts/build-fixtures.sh's note)"
		finish
	fi
}

# start_realapp [ENV=VAL ...]: starts the realapp fixture (docs/fixtures.md)
# on a free loopback port with its SQLite database in $WORK, waits until
# GET /health answers. Sets REALAPP_PID, REALAPP_URL, REALAPP_OUT.
start_realapp() {
	local port i
	port=$(free_port)
	REALAPP_OUT=$WORK/realapp-$port.out
	REALAPP_URL=http://127.0.0.1:$port
	env "$@" DOTNET_CLI_TELEMETRY_OPTOUT=1 dotnet "$REALAPP_DLL" --port "$port" --db "$WORK/realapp-$port.db" \
		>"$REALAPP_OUT" 2>&1 &
	REALAPP_PID=$!
	KILL_PIDS+=("$REALAPP_PID")
	for ((i = 0; i < 1200; i++)); do
		if [ "$(curl -s -m 2 "$REALAPP_URL/health" 2>/dev/null)" = ok ]; then
			return 0
		fi
		if ! kill -0 "$REALAPP_PID" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	not_ok "realapp started" "$(tail -20 "$REALAPP_OUT")"
	finish
}

# realapp_login: registers a user (once) and logs in; sets REALAPP_TOKEN (a
# bearer token for GET /api/me). realapp_load sends it when set.
realapp_login() {
	local body='{"email":"probe@realapp.test","password":"Realapp-1"}'
	curl -s -o /dev/null -X POST -H 'content-type: application/json' -d "$body" "$REALAPP_URL/register"
	REALAPP_TOKEN=$(curl -s -X POST -H 'content-type: application/json' -d "$body" "$REALAPP_URL/login" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])' 2>/dev/null)
	[ -n "$REALAPP_TOKEN" ]
}

# realapp_load SECONDS PATH [CONNECTIONS]: bounded wrk load (1 thread, 4
# connections unless given) on PATH (with its query); output in $WORK/wrk.out.
# REALAPP_BODY=JSON makes the requests POSTs with that body. Returns once the
# app answered every request (realapp_settle). Counts of what the app served:
# realapp_stats, not wrk's (wrk leaves requests in flight uncounted).
realapp_load() {
	local secs=$1 path=$2 conns=${3:-4} args=()
	if [ -n "${REALAPP_TOKEN:-}" ]; then
		args+=(-H "Authorization: Bearer $REALAPP_TOKEN")
	fi
	if [ -n "${REALAPP_BODY:-}" ]; then
		printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' \
			"$REALAPP_BODY" >"$WORK/wrk-post.lua"
		args+=(-s "$WORK/wrk-post.lua")
	fi
	wrk -t1 -c"$conns" -d"${secs}s" --timeout 10s "${args[@]}" "$REALAPP_URL$path" >"$WORK/wrk.out" 2>&1
	realapp_settle
}

# realapp_settle: waits (at most 10 s) until the app has answered every request
# it began (/stats "in_flight" 0), so its counts are final.
realapp_settle() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(realapp_stats 'd["in_flight"]' 2>/dev/null)" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# realapp_stats EXPR: a value from the app's own GET /stats (d is the JSON),
# e.g. realapp_stats 'd["quote_calls"]' or 'd["requests"]["/api/me"]'.
realapp_stats() {
	json_get "$(curl -s -m 5 "$REALAPP_URL/stats")" "$1"
}

# ---- post-mortem dumps (issue 32; docs/fixtures.md, modes crash and keep10k) ----

# pm_crash_dump OUT: the sample app in mode crash, with the runtime's crash
# dump settings: its createdump writes a full dump (DbgMiniDumpType 4) to OUT
# before the process aborts (exit 134). About 1 s and 160 MB here. Sets
# PM_CRASH_PID (the pid in READY) and PM_CRASH_LOG (stdout and stderr, with
# createdump's lines and the runtime's unhandled-exception text). Fails, with
# the log on stderr, when the process did not abort or no dump appeared.
pm_crash_dump() {
	local out=$1 rc
	PM_CRASH_LOG=$WORK/crash-$RANDOM.out
	rm -f "$out"
	# (in a subshell whose stderr is discarded: bash's own "Aborted" line)
	(env DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_DbgEnableMiniDump=1 DOTNET_DbgMiniDumpType=4 \
		DOTNET_DbgMiniDumpName="$out" timeout 120 dotnet "$FIXTURE_DLL" crash >"$PM_CRASH_LOG" 2>&1; exit $?) 2>/dev/null
	rc=$?
	PM_CRASH_PID=$(sed -n 's/^READY pid=\([0-9]*\) .*/\1/p' "$PM_CRASH_LOG")
	if [ "$rc" -ne 134 ] || [ ! -s "$out" ]; then
		echo "pm_crash_dump: exit $rc (want 134), dump $(stat -c %s "$out" 2>/dev/null || echo missing):" >&2
		tail -20 "$PM_CRASH_LOG" >&2
		return 1
	fi
}

# pm_keep10k_dumps CREATEDUMP_OUT CLRTAP_OUT: the sample app in mode keep10k
# (10 000 Keep.Item reachable only from Keep.Holder.Items); once it printed
# DONE, a heap dump by the runtime's createdump (the binary beside the
# target's libcoreclr.so, run directly: createdump --withheap) to
# CREATEDUMP_OUT and one by `clrtap dump --type heap` to CLRTAP_OUT (either
# may be "" to skip it); then the process is stopped. About 2 s per dump and
# 80 MB each here. Sets PM_KEEP_PID. Fails with what went wrong on stderr.
pm_keep10k_dumps() {
	local cd_out=$1 ct_out=$2 lib
	start_fixture keep10k
	PM_KEEP_PID=$FIX_PID
	wait_for_line "$FIX_OUT" '^DONE kept=10000$' 60 "$FIX_PID" || return 1
	if [ -n "$cd_out" ]; then
		lib=$(awk '$6 ~ /\/libcoreclr\.so$/ { print $6; exit }' "/proc/$FIX_PID/maps")
		if [ -z "$lib" ] || ! "$(dirname "$lib")/createdump" --withheap -f "$cd_out" "$FIX_PID" \
			>"$WORK/createdump.out" 2>&1 || [ ! -s "$cd_out" ]; then
			echo "pm_keep10k_dumps: createdump (beside '$lib') wrote no dump:" >&2
			cat "$WORK/createdump.out" >&2 2>/dev/null
			stop_fixture "$FIX_PID"
			return 1
		fi
	fi
	if [ -n "$ct_out" ] && ! "$CLRTAP" dump -p "$FIX_PID" --type heap -o "$ct_out" >"$WORK/clrtap-dump.out" 2>&1; then
		echo "pm_keep10k_dumps: clrtap dump failed:" >&2
		cat "$WORK/clrtap-dump.out" >&2
		stop_fixture "$FIX_PID"
		return 1
	fi
	stop_fixture "$FIX_PID"
}

# pm_musl_dump OUT: a heap dump by `clrtap dump` of the matrix fixture's
# musl build (build/fixtures/matrix/musl-net10: Alpine's runtime, run under
# musl's loader with lib.sh's musl_cxx) after `keep 1000`; the process is then
# ended. About 1.5 s and 23 MB. Sets PM_MUSL_PID. Returns 77 with the reason
# in PM_MUSL_WHY when this machine cannot run it (fixture not built, no
# musl-tools), 1 when the dump failed.
pm_musl_dump() {
	local out=$1 mx=$ROOT/build/fixtures/matrix/musl-net10 fd
	if [ ! -x "$mx/matrix" ]; then
		PM_MUSL_WHY="$mx/matrix not built (scripts/build-fixtures.sh's note)"
		return 77
	fi
	if ! command -v musl-gcc >/dev/null || [ ! -e /lib/ld-musl-x86_64.so.1 ] || ! musl_cxx "$WORK/gl"; then
		PM_MUSL_WHY="no musl-tools (musl-gcc, /lib/ld-musl-x86_64.so.1): scripts/install-deps.sh"
		return 77
	fi
	mkfifo "$WORK/musl.ctl"
	exec {fd}<>"$WORK/musl.ctl"
	LD_LIBRARY_PATH=$WORK/gl DOTNET_CLI_TELEMETRY_OPTOUT=1 "$mx/matrix" <&"$fd" >"$WORK/musl.out" 2>&1 &
	PM_MUSL_PID=$!
	KILL_PIDS+=("$PM_MUSL_PID")
	wait_for_line "$WORK/musl.out" '^READY ' 60 "$PM_MUSL_PID" || return 1
	echo "keep 1000" >&"$fd"
	wait_for_line "$WORK/musl.out" '^DONE keep' 60 "$PM_MUSL_PID" || return 1
	if ! "$CLRTAP" dump -p "$PM_MUSL_PID" --type heap -o "$out" >"$WORK/musl-dump.out" 2>&1; then
		cat "$WORK/musl-dump.out" >&2
		return 1
	fi
	exec {fd}>&-
	stop_fixture "$PM_MUSL_PID"
}

# json_get JSON EXPR: python3 one-liner over the parsed JSON (d is the value).
json_get() {
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

finish() {
	echo "$TEST_NAME: $PASSED passed, $FAILED failed, ${SKIPPED:-0} skipped"
	[ "$FAILED" -eq 0 ]
	exit $?
}

# jl FILE PYTHON-EXPR: L is the list of JSON lines of FILE (dicts, e.g. a
# watch log); prints the value. jl_true: the value is True.
jl() {
	python3 - "$1" "$2" <<'PY'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(eval(sys.argv[2]))
PY
}
jl_true() {
	[ "$(jl "$1" "$2")" == "True" ]
}

# jcheck NAME FILE PYTHON: FILE must be strict JSON (with JCHECK_LINES=1: one
# JSON value a line, d their list); PYTHON (d = the value, raw(s) = a decoded
# string's exact bytes, env(k) = an exported variable's bytes) must print "ok".
jcheck() {
	local name=$1 file=$2 code=$3 out
	out=$(python3 - "$file" "$code" <<'EOF' 2>&1
import json, os, sys
def no_const(c):
    raise ValueError("not JSON: " + c)
def raw(s):
    return s.encode("utf-8", "surrogateescape")
def env(k):
    return os.environb[k.encode()]
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8")  # strict: the output itself is valid UTF-8
if os.environ.get("JCHECK_LINES"):
    d = [json.loads(l, parse_constant=no_const) for l in text.split("\n") if l.strip()]
else:
    d = json.loads(text, parse_constant=no_const)
exec(sys.argv[2])
EOF
)
	if [ "$out" = ok ]; then ok "$name"; else not_ok "$name" "$(printf %s "$out" | tail -c 1500 | tr "\n" " ")"; fi
}

# term_clean FILE NAME: no control byte in FILE but newline and tab (C0, DEL,
# and C1 controls as UTF-8).
term_clean() {
	if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1"; then
		not_ok "$2" "control bytes in: $(cat -v "$1" | head -c 1500)"
	else
		ok "$2"
	fi
}

# The same heap session through dotnet-gcdump's own graph reader (the
# TraceEvent-based DotNetHeapDumpGraphReader PerfView uses; TraceEvent's NuGet
# package has no .gcdump reader): convert, then its type histogram. Its
# "Object Bytes" column is the first instance's size (wave2-anchors 2.5), so
# bytes are compared for the total and the single-instance types. Its "GC Heap
# objects" headline counts the graph's nodes, its root and pseudo nodes too;
# the objects are the sum of its histogram.
DGC=${DOTNET_GCDUMP:-$ROOT/build/tools/dotnet-gcdump}
[ -x "$DGC" ] || DGC=$HOME/.dotnet/tools/dotnet-gcdump
# dgc_same LABEL NETTRACE CLRTAP_JSON TYPE COUNT: dotnet-gcdump reads the same
# objects from NETTRACE as CLRTAP_JSON (gcdump report --json --top 0) holds,
# and COUNT objects of TYPE. Needs $DGC (check -x "$DGC" first).
dgc_same() {
	local label=$1 nt=$2 js=$3 type=$4 n=$5
	"$DGC" convert "$nt" -o "$WORK/dgc.gcdump" >"$WORK/dgc.out" 2>&1
	"$DGC" report "$WORK/dgc.gcdump" >"$WORK/dgc.txt" 2>>"$WORK/dgc.out"
	check "$label: dotnet-gcdump convert+report of the same session: same bytes, objects and count per type name" \
		python3 - "$WORK/dgc.txt" "$js" "$type" "$n" <<'EOF'
import collections, json, re, sys
norm = lambda n: n.replace("[", "<").replace("]", ">")  # its rule turns [,] into <,>
total, cnt, byt = None, collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+)\s+GC Heap bytes", line)
    if m:
        total = int(m.group(1).replace(",", ""))
    m = re.match(r"\s*([\d,]+)\s+([\d,]+)\s+(.*?)\s+\[.*\]$", line)
    if m:
        name = norm(re.sub(r" \(Bytes > [0-9]+[KM]\)$", "", m.group(3)))
        cnt[name] += int(m.group(2).replace(",", ""))
        byt[name] += int(m.group(1).replace(",", ""))
d = json.load(open(sys.argv[2]))
ours, ob = collections.Counter(), collections.Counter()
for t in d["types"]:
    ours[norm(t["type"])] += t["count"]
    ob[norm(t["type"])] += t["shallow"]
single = [k for k in ours if ours[k] == 1 and cnt[k] == 1]
ok = (total == d["bytes"] and sum(cnt.values()) == d["objects"] and cnt == ours and len(cnt) > 50
      and cnt[norm(sys.argv[3])] == int(sys.argv[4]) and all(byt[k] == ob[k] for k in single) and len(single) > 10)
if not ok:
    print("dotnet-gcdump", total, sum(cnt.values()), len(cnt), "clrtap", d["bytes"], d["objects"], len(ours), file=sys.stderr)
    print(sorted(set(cnt.items()) ^ set(ours.items()))[:20], [k for k in single if byt[k] != ob[k]][:10], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}
