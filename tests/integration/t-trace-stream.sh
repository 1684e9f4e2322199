#!/usr/bin/env bash
# The session stream is untrusted (issue 19, cases 4-6): a fake diagnostics
# server (tests/tools/fakeds) answers CollectTracing with "OK" and a session
# id, then misbehaves. trace collect, counters and stacks must each end within
# the duration plus the timeout, with a documented exit code, a clear message,
# and no file that could pass for a trace (nothing, or a capped file marked
# .partial).
. "$(dirname "$0")/lib.sh"

E_PROTO=6 E_PARTIAL=9

fake() {
	local mode=$1
	local out="$WORK/fake-$mode-$RANDOM.out"
	"$TOOLS/fakeds" "$mode" >"$out" 2>&1 &
	FAKE_PID=$!
	KILL_PIDS+=("$FAKE_PID")
	wait_for_line "$out" '^READY' 10 "$FAKE_PID"
}

unfake() {
	kill -TERM "$FAKE_PID" 2>/dev/null
	wait "$FAKE_PID" 2>/dev/null
}

# timed NAME MAX_MS CODE CMD...: expect_exit, plus the elapsed time bound.
timed() {
	local name=$1 max=$2 code=$3 t0 ms
	shift 3
	t0=${EPOCHREALTIME/./}
	expect_exit "$name" "$code" timeout 60 "$@"
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	if [ "$ms" -le "$max" ]; then ok "$name: ended in ${ms} ms (bound $max)"; else not_ok "$name: took ${ms} ms, bound $max"; fi
}

# no_files NAME: nothing in $OUTDIR (no 0-byte file, no temporary, no .partial).
no_files() {
	local left
	left=$(ls -A "$OUTDIR")
	equals "$1: no file left in the output directory" "$left" ""
}

OUTDIR=$WORK/out
mkdir -p "$OUTDIR"

# trace collect -d 2 --timeout 5s ends within 8 s (the issue's bound) and keeps nothing.
for spec in "stream-random:not a nettrace stream" "stream-huge:not a nettrace stream" \
	"stream-silent:sent no trace within the timeout (5000 ms)" \
	"stream-half:did not answer in time" "hang:did not answer in time" \
	"stream-close:closed the session's stream before sending a trace"; do
	mode=${spec%%:*}
	msg=${spec#*:}
	fake "$mode"
	timed "trace collect, $mode" 8000 $E_PROTO "$CLRTAP" trace collect -p "$FAKE_PID" -d 2 \
		--timeout 5s -o "$OUTDIR/t.nettrace"
	contains "trace collect, $mode: says why" "$ERR" "$msg"
	if [ "$mode" == hang ]; then
		# The target check (ProcessInfo before anything else) already fails: no file was begun.
		contains "trace collect, $mode: fails at the target check" "$ERR" "cannot use the diagnostics socket"
	else
		contains "trace collect, $mode: says nothing was kept" "$ERR" "kept nothing, $OUTDIR/t.nettrace not written"
	fi
	no_files "trace collect, $mode"
	unfake
done

# An existing output file is left as it was by a failed collect.
echo "an older trace" >"$OUTDIR/old.nettrace"
fake stream-random
expect_exit "trace collect over an existing file, random stream" $E_PROTO "$CLRTAP" trace collect \
	-p "$FAKE_PID" -d 2 --timeout 5s -o "$OUTDIR/old.nettrace"
equals "the existing file is untouched" "$(cat "$OUTDIR/old.nettrace")" "an older trace"
rm -f "$OUTDIR/old.nettrace"
unfake

# A valid prologue, then endless random bytes: stopped at --max-size, marked partial.
fake stream-flood
timed "trace collect, stream-flood, --max-size 1M" 8000 $E_PARTIAL "$CLRTAP" trace collect \
	-p "$FAKE_PID" -d 2 --timeout 5s --max-size 1M -o "$OUTDIR/t.nettrace"
contains "stream-flood: says it stopped at --max-size" "$ERR" "stopped at --max-size (1048576 bytes)"
contains "stream-flood: names the partial file" "$ERR" "kept $OUTDIR/t.nettrace.partial, incomplete"
check "stream-flood: no t.nettrace" test ! -e "$OUTDIR/t.nettrace"
size=$(stat -c %s "$OUTDIR/t.nettrace.partial" 2>/dev/null || echo missing)
equals "stream-flood: the partial file holds exactly 1 MiB" "$size" 1048576
rm -f "$OUTDIR"/t.nettrace.partial
no_files "trace collect, stream-flood"
unfake

# A valid prologue, then silence, also after StopTracing: duration + timeout.
fake stream-stall
timed "trace collect, stream-stall" 8000 $E_PARTIAL "$CLRTAP" trace collect -p "$FAKE_PID" -d 2 \
	--timeout 5s -o "$OUTDIR/t.nettrace"
contains "stream-stall: says the stop timed out" "$ERR" "did not end the stream within the timeout (5000 ms) after StopTracing"
check "stream-stall: no t.nettrace" test ! -e "$OUTDIR/t.nettrace"
size=$(stat -c %s "$OUTDIR/t.nettrace.partial" 2>/dev/null || echo missing)
equals "stream-stall: the partial file holds the 32-byte prologue only" "$size" 32
rm -f "$OUTDIR"/t.nettrace.partial
unfake

# The same from a fake in its own PID and mount namespace with a private /tmp
# (what a container looks like from the host; tests/tools/contain.sh does the
# same for the .NET fixture).
fake_ns() {
	local mode=$1 i
	local out="$WORK/fakens-$mode-$RANDOM.out"
	# The tools directory is bound on /mnt first: a checkout under /tmp would
	# be hidden by the private /tmp (as tests/tools/contain.sh does).
	unshare --pid --mount --fork --mount-proc --kill-child \
		sh -c 'mount --bind "$0" /mnt && mount -t tmpfs -o mode=1777 clrtap-private-tmp /tmp &&
			exec /mnt/fakeds "$1"' \
		"$TOOLS" "$mode" >"$out" 2>&1 &
	FAKE_NS_PARENT=$!
	KILL_PIDS+=("$FAKE_NS_PARENT")
	wait_for_line "$out" '^READY' 10 "$FAKE_NS_PARENT"
	FAKE_PID=""
	for ((i = 0; i < 100; i++)); do
		FAKE_PID=$(pgrep -P "$FAKE_NS_PARENT" | head -1)
		[ -n "$FAKE_PID" ] && break
		sleep 0.05
	done
}
# Every case for trace collect, counters and stacks (and info where the
# reply itself is bad), each with its exit code, time bound, message and files.
for spec in "stream-random:not a nettrace stream" "stream-huge:not a nettrace stream" \
	"stream-silent:sent no trace within the timeout (%s ms)" "stream-half:did not answer in time" \
	"hang:did not answer in time" "stream-close:closed the session's stream before sending a trace"; do
	mode=${spec%%:*}
	msg=${spec#*:}
	fake_ns "$mode"
	# shellcheck disable=SC2059
	timed "namespaced fake: trace collect, $mode" 8000 $E_PROTO "$CLRTAP" trace collect -p "$FAKE_PID" \
		-d 2 --timeout 5s -o "$OUTDIR/t.nettrace"
	# shellcheck disable=SC2059
	contains "namespaced fake: $mode: says why" "$ERR" "$(printf "$msg" 5000)"
	no_files "namespaced fake: trace collect, $mode"
	if [ "$mode" != stream-close ]; then
		timed "namespaced fake: counters collect, $mode" 5000 $E_PROTO "$CLRTAP" counters collect \
			-p "$FAKE_PID" -d 2 --timeout 2s -o "$OUTDIR/c.csv"
		# shellcheck disable=SC2059
		contains "namespaced fake: counters, $mode: says why" "$ERR" "$(printf "$msg" 2000)"
		no_files "namespaced fake: counters collect, $mode"
		timed "namespaced fake: stacks, $mode" 3000 $E_PROTO "$CLRTAP" stacks -p "$FAKE_PID" --timeout 2s
		# shellcheck disable=SC2059
		contains "namespaced fake: stacks, $mode: says why" "$ERR" "$(printf "$msg" 2000)"
	fi
	if [ "$mode" == hang ]; then
		timed "namespaced fake: info, $mode" 3000 $E_PROTO "$CLRTAP" info -p "$FAKE_PID" --timeout 2s
		contains "namespaced fake: info, $mode: says why" "$ERR" "did not answer in time"
	fi
	# unshare ignores SIGTERM while it waits for its child: stop the fake itself
	kill -TERM "$FAKE_PID" 2>/dev/null
	wait "$FAKE_NS_PARENT" 2>/dev/null
done

# clrtap killed (SIGKILL) mid-session: the output is an unnamed file until
# complete, so nothing is left behind (where the file system has O_TMPFILE).
fake stream-stall
"$CLRTAP" trace collect -p "$FAKE_PID" -d 30 -o "$OUTDIR/k.nettrace" >/dev/null 2>&1 &
COLLECT=$!
sleep 1
kill -KILL "$COLLECT"
wait "$COLLECT" 2>/dev/null
if python3 -c 'import os,sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o600))' "$OUTDIR" 2>/dev/null; then
	no_files "trace collect killed with SIGKILL"
else
	skip "SIGKILL leaves nothing: no O_TMPFILE on this file system"
	rm -f "$OUTDIR"/k.nettrace.tmp-*
fi
unfake

# counters and stacks: the same cases, a 2 s timeout: duration + timeout (+1 s slack).
for spec in "stream-random:not a nettrace stream" "stream-huge:not a nettrace stream" \
	"stream-silent:sent no trace within the timeout (2000 ms)" \
	"stream-half:did not answer in time" "hang:did not answer in time"; do
	mode=${spec%%:*}
	msg=${spec#*:}
	fake "$mode"
	timed "counters collect, $mode" 5000 $E_PROTO "$CLRTAP" counters collect -p "$FAKE_PID" -d 2 \
		--timeout 2s -o "$OUTDIR/c.csv"
	contains "counters collect, $mode: says why" "$ERR" "$msg"
	if [ "$mode" == hang ]; then
		contains "counters collect, $mode: fails at the target check" "$ERR" "cannot use the diagnostics socket"
	else
		contains "counters collect, $mode: says no file was written" "$ERR" "no file written"
	fi
	no_files "counters collect, $mode"
	timed "stacks, $mode" 3000 $E_PROTO "$CLRTAP" stacks -p "$FAKE_PID" --timeout 2s
	contains "stacks, $mode: says why" "$ERR" "$msg"
	unfake
done
for mode in stream-flood stream-stall; do
	fake "$mode"
	timed "counters collect, $mode" 5000 $E_PROTO "$CLRTAP" counters collect -p "$FAKE_PID" -d 2 \
		--timeout 2s -o "$OUTDIR/c.csv"
	contains "counters collect, $mode: says where the stream broke" "$ERR" "the session stream broke at byte 32"
	no_files "counters collect, $mode"
	timed "stacks, $mode" 3000 $E_PROTO "$CLRTAP" stacks -p "$FAKE_PID" --timeout 2s
	unfake
done
contains "stacks, stream-stall: says the stop timed out" "$ERR" "did not end the stream within the timeout (2000 ms)"

# Usage errors are found before any file exists.
cd "$OUTDIR" || exit 1
fake stream-silent
expect_exit "--providers ',,,' is a usage error" 2 "$CLRTAP" trace collect -p "$FAKE_PID" --providers ',,,'
contains "',,,': says no provider is named" "$ERR" "names no provider"
expect_exit "--providers ',,' beside a profile is a usage error too" 2 "$CLRTAP" trace collect -p "$FAKE_PID" --profile exceptions --providers ',,'

expect_exit "a 70 kB provider list is a usage error" 2 "$CLRTAP" trace collect -p "$FAKE_PID" \
	--providers "$(head -c 70000 /dev/zero | tr '\0' a)"
contains "70 kB list: says it does not fit" "$ERR" "does not fit in one request"
expect_exit "-d 1.2.3 is a usage error" 2 "$CLRTAP" trace collect -p "$FAKE_PID" -d 1.2.3
expect_exit "-d -1 is a usage error" 2 "$CLRTAP" counters monitor -p "$FAKE_PID" -d -1
expect_exit "--max-size 12X is a usage error" 2 "$CLRTAP" trace collect -p "$FAKE_PID" --max-size 12X
no_files "usage errors"
unfake
cd / || exit 1
finish
