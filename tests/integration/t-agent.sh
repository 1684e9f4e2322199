#!/usr/bin/env bash
# clrtap agent: attach libclrtap-profiler to a real fixture, read its events
# over EventPipe, detach; attach again; SIGKILL of clrtap makes the profiler
# detach by itself; a namespaced target; bad input (missing library, wrong
# libc, slot taken) with its exit code; the target's answers unchanged.
. "$(dirname "$0")/lib.sh"

LIB_GLIBC=$(dirname "$CLRTAP")/profiler/glibc/libclrtap-profiler.so
LIB_MUSL=$(dirname "$CLRTAP")/profiler/musl/libclrtap-profiler.so

# --- the two builds: one export each, linked against their own libc -------
check "glibc build exists" test -s "$LIB_GLIBC"
check "musl build exists" test -s "$LIB_MUSL"
equals "glibc build exports only DllGetClassObject" \
	"$(nm -D --defined-only "$LIB_GLIBC" | awk '{print $3}' | tr '\n' ' ')" "DllGetClassObject "
equals "musl build exports only DllGetClassObject" \
	"$(nm -D --defined-only "$LIB_MUSL" | awk '{print $3}' | tr '\n' ' ')" "DllGetClassObject "
# glibc's own parts only: libc, and its dynamic loader (__tls_get_addr for
# the probes' per-thread call stack)
equals "glibc build needs only glibc (libc.so.6, ld-linux)" \
	"$(readelf -d "$LIB_GLIBC" | grep NEEDED | grep -o '\[.*\]' | grep -v -e 'libc.so.6' -e 'ld-linux-x86-64.so.2' | tr '\n' ' ')" ""
equals "musl build needs no versioned (glibc) symbol" \
	"$(nm -D --undefined-only "$LIB_MUSL" | grep -c '@')" 0
equals "musl build needs only musl's libc" \
	"$(readelf -d "$LIB_MUSL" | grep NEEDED | grep -o '\[.*\]' | tr '\n' ' ')" "[libc.so] "
contains "builds are NODELETE (stay mapped after detach)" "$(readelf -d "$LIB_GLIBC")" "NODELETE"
# Each build loaded the way the runtime loads it, by its own libc's loader:
# class factory, QueryInterface for Callback11, LoadAsNotificationOnly per class id.
PROFDIR=$(dirname "$CLRTAP")/profiler
expect_exit "glibc build loads under glibc" 0 "$PROFDIR/glibc/profload" "$LIB_GLIBC"
contains "glibc build: COM checks" "$OUT" "all ok"
expect_exit "musl build loads under musl's loader" 0 "$PROFDIR/musl/profload" "$LIB_MUSL"
contains "musl build: COM checks" "$OUT" "all ok"
contains "musl's loader ran it" "$(readelf -l "$PROFDIR/musl/profload")" "ld-musl-x86_64.so.1"
expect_exit "glibc's loader refuses the musl build (the wrong-libc case)" 1 \
	"$PROFDIR/glibc/profload" "$LIB_MUSL"

fib10() { curl -sf "http://127.0.0.1:$PORT/api/fibonacci?pos=10"; }

PORT=$(free_port)
start_fixture web --port "$PORT"
HOST_PID=$FIX_PID
equals "target answers before" "$(fib10)" 89

# --- attach, events, detach ---------------------------------------------
"$CLRTAP" agent run -p "$HOST_PID" -d 4 --json >"$WORK/run1.json" 2>"$WORK/run1.err" &
RUN=$!
sleep 2
curl -sf "http://127.0.0.1:$PORT/api/exception/7" >/dev/null
expect_exit "status while attached" 0 "$CLRTAP" agent status -p "$HOST_PID" --json
equals "status: attached" "$(json_get "$OUT" "d['attached']")" True
equals "status: main mode" "$(json_get "$OUT" "d['mode']")" main
equals "status: 7 exceptions counted (ThrowMany(7))" "$(json_get "$OUT" "d['exceptions']")" 7
equals "status: no write errors" "$(json_get "$OUT" "d['write_errors']")" 0
wait "$RUN"
equals "run exit code" "$?" 0
RUN1=$(cat "$WORK/run1.json")
equals "run: attached" "$(json_get "$RUN1" "d['attached']")" True
equals "run: glibc picked from the target's maps" "$(json_get "$RUN1" "d['libc']")" glibc
equals "run: detach confirmed" "$(json_get "$RUN1" "d['detach_confirmed']")" True
equals "run: no events lost" "$(json_get "$RUN1" "d['events_lost']")" 0
LIBPATH=$(json_get "$RUN1" "d['library']")
contains "library named by content hash" "$LIBPATH" "/tmp/clrtap-profiler-"
expect_exit "status after detach" 0 "$CLRTAP" agent status -p "$HOST_PID" --json
equals "status after detach: not attached" "$(json_get "$OUT" "d['attached']")" False
equals "library stays mapped after detach" "$(json_get "$OUT" "d['library_mapped']")" True
equals "target answers after detach" "$(fib10)" 89

# --- attach again: same file reused, never rewritten ----------------------
before=$(stat -c %i:%Y "$LIBPATH")
expect_exit "second attach after detach" 0 "$CLRTAP" agent run -p "$HOST_PID" -d 1 --modules
contains "second attach: attached line" "$OUT" "attached: pid $HOST_PID, mode main"
contains "second attach: existing file reused" "$OUT" "already there"
equals "mapped library file not rewritten" "$(stat -c %i:%Y "$LIBPATH")" "$before"

# --- Ctrl-C ends the run and detaches ------------------------------------
"$CLRTAP" agent run -p "$HOST_PID" --json >"$WORK/runc.json" 2>"$WORK/runc.err" &
RUN=$!
for ((i = 0; i < 100; i++)); do
	"$CLRTAP" agent status -p "$HOST_PID" --json 2>/dev/null | grep -q '"attached":true' && break
	sleep 0.1
done
kill -INT "$RUN"
wait "$RUN"
equals "Ctrl-C: exit 0" "$?" 0
equals "Ctrl-C: detach confirmed" "$(json_get "$(cat "$WORK/runc.json")" "d['detach_confirmed']")" True

# --- slot taken by our own running profiler ------------------------------
"$CLRTAP" agent run -p "$HOST_PID" -d 4 >"$WORK/run2.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/run2.out" '^attached:' 20 "$RUN"
expect_exit "second clrtap profiler refused" 22 "$CLRTAP" agent run -p "$HOST_PID" -d 1
contains "already-active message" "$ERR" "already active"
wait "$RUN"

# --- SIGKILL of clrtap: the profiler detaches by itself within 3 s --------
"$CLRTAP" agent run -p "$HOST_PID" >"$WORK/run3.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/run3.out" '^attached:' 20 "$RUN"
curl -sf "http://127.0.0.1:$PORT/api/exception/3" >/dev/null
kill -KILL "$RUN"
sleep 3
expect_exit "status 3 s after SIGKILL" 0 "$CLRTAP" agent status -p "$HOST_PID" --json
equals "profiler gone 3 s after clrtap was killed" "$(json_get "$OUT" "d['attached']")" False
equals "target answers after SIGKILL" "$(fib10)" 89
expect_exit "attach works after the self-detach" 0 "$CLRTAP" agent run -p "$HOST_PID" -d 1 --mode main
contains "main slot free again" "$OUT" "mode main"

# --- bad input ------------------------------------------------------------
expect_exit "missing library in the target's filesystem" 20 \
	"$CLRTAP" agent run -p "$HOST_PID" -d 1 --library /nonexistent/libx.so
contains "missing library message" "$ERR" "not found in the target's filesystem"
CLRTAP_PROFILER_DIR=$WORK/none expect_exit "missing host copy" 20 \
	"$CLRTAP" agent run -p "$HOST_PID" -d 1
contains "missing host copy message" "$ERR" "copy of libclrtap-profiler.so is missing"
expect_exit "wrong libc (musl build into a glibc process)" 21 \
	"$CLRTAP" agent run -p "$HOST_PID" -d 1 --libc musl
contains "wrong libc message" "$ERR" "another C library"
# a runtime too old for the profiler (a fake .NET 6 diagnostics server: only
# .NET 10 is installed here)
"$TOOLS/fakeds" oldruntime >"$WORK/old.out" 2>&1 &
OLD=$!
KILL_PIDS+=("$OLD")
wait_for_line "$WORK/old.out" '^READY' 10 "$OLD"
expect_exit "runtime too old" 7 "$CLRTAP" agent run -p "$OLD" -d 1
contains "too-old message" "$ERR" "needs .NET 8 or later"
contains "too-old message names the version" "$ERR" "this one is 6"
kill -TERM "$OLD"
expect_exit "bad --mode" 2 "$CLRTAP" agent run -p "$HOST_PID" --mode sideways
expect_exit "bad action" 2 "$CLRTAP" agent fly -p "$HOST_PID"
expect_exit "relative --library" 2 "$CLRTAP" agent run -p "$HOST_PID" --library x.so
equals "target answers after the bad input" "$(fib10)" 89
expect_exit "no profiler left behind" 0 "$CLRTAP" agent status -p "$HOST_PID" --json
equals "not attached at the end" "$(json_get "$OUT" "d['attached']")" False
stop_fixture "$HOST_PID"

# --- a foreign main profiler (startup-loaded copy) holds the slot ---------
cp "$LIB_GLIBC" "$WORK/apm.so"
FIX_ENV="CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER={c1a7a9e0-7a11-4c1b-9e11-c17a90000001} CORECLR_PROFILER_PATH=$WORK/apm.so" \
	start_fixture idle
APM_PID=$FIX_PID
check "foreign profiler loaded at startup" grep -q "$WORK/apm.so" "/proc/$APM_PID/maps"
expect_exit "slot taken: --mode main refused" 22 "$CLRTAP" agent run -p "$APM_PID" -d 1 --mode main
contains "slot-taken message" "$ERR" "holds the main profiler slot"
expect_exit "slot taken: auto falls back to notification" 0 \
	"$CLRTAP" agent run -p "$APM_PID" -d 2 --json
equals "notification mode" "$(json_get "$OUT" "d['mode']")" notification
equals "notification: detach confirmed" "$(json_get "$OUT" "d['detach_confirmed']")" True
stop_fixture "$APM_PID"

# --- a namespaced target: PID + mount namespace, private /tmp -------------
start_fixture_ns idle
NS_PID=$FIX_PID
# The target controls its /tmp: a symlink planted under the library's name
# is neither followed nor replaced.
ln -s /etc/hostname "/proc/$NS_PID/root/tmp/$(basename "$LIBPATH")"
expect_exit "namespaced: planted symlink refused" 20 "$CLRTAP" agent run -p "$NS_PID" -d 1
contains "planted symlink message" "$ERR" "neither follows nor replaces it"
check "planted symlink left as it was" test -L "/proc/$NS_PID/root/tmp/$(basename "$LIBPATH")"
rm -f "/proc/$NS_PID/root/tmp/$(basename "$LIBPATH")"
expect_exit "namespaced: attach, stream, detach" 0 "$CLRTAP" agent run -p "$NS_PID" -d 2 --json
equals "namespaced: attached" "$(json_get "$OUT" "d['attached']")" True
equals "namespaced: detach confirmed" "$(json_get "$OUT" "d['detach_confirmed']")" True
NSLIB=$(json_get "$OUT" "d['library']")
check "namespaced: library inside the target's private /tmp" test -s "/proc/$NS_PID/root$NSLIB"
check "namespaced: target maps it" grep -q "$NSLIB" "/proc/$NS_PID/maps"
expect_exit "namespaced: again (reuse)" 0 "$CLRTAP" agent run -p "$NS_PID" -d 1
contains "namespaced: reused" "$OUT" "already there"
stop_fixture "$NS_PID"
finish
