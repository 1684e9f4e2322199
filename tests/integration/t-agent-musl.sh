#!/usr/bin/env bash
# clrtap's profiler on a real musl .NET process: the sample app published
# self-contained for linux-musl-x64 (Alpine's runtime build) runs under
# musl's own loader. clrtap tells musl from the target's maps, places and
# attaches the musl build, probes by ReJIT with exact calls and arguments,
# and refuses the glibc build with the wrong-libc code.
#
# This Debian machine has musl's loader and libc (musl-tools) but no musl
# libstdc++/libgcc_s, which libcoreclr.so needs: the test gives it copies of
# Debian's, with their loader dependency renamed to a small musl-built shim
# (tests/tools/musl/glibcshim.c says what it supplies). Everything else -
# loader, libc, runtime, profiler - is musl's.
. "$(dirname "$0")/lib.sh"

MUSL_APP=$ROOT/build/fixtures/sample-musl/sample
MUSL_LD=/lib/ld-musl-x86_64.so.1
LIB_MUSL=$(dirname "$CLRTAP")/profiler/musl/libclrtap-profiler.so

if ! command -v musl-gcc >/dev/null || [ ! -e "$MUSL_LD" ]; then
	not_ok "musl-tools installed (scripts/install-deps.sh)" "musl-gcc or $MUSL_LD missing"
	finish
fi
if [ ! -x "$MUSL_APP" ]; then
	# scripts/build-fixtures.sh could not get the musl runtime packs from NuGet
	skip "no musl fixture ($MUSL_APP not built: see scripts/build-fixtures.sh's note)"
	finish
fi
equals "the fixture is a musl program (its interpreter)" \
	"$(readelf -l "$MUSL_APP" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')" "$MUSL_LD"
equals "its runtime is musl's build" \
	"$(readelf -d "$ROOT/build/fixtures/sample-musl/libcoreclr.so" | grep -o 'libc\.[^]]*')" \
	"libc.musl-x86_64.so.1"

# The C++ runtime the musl runtime needs, from Debian's, on a musl shim.
GL=$WORK/gl
musl_cxx "$GL"
check "shim built with musl-gcc" test -s "$GL/ctshim-x86-64-0.so.2"

FIX_OUT=$WORK/fixture-musl.out
env LD_LIBRARY_PATH="$GL" DOTNET_CLI_TELEMETRY_OPTOUT=1 "$MUSL_APP" probe-targets --calls 300 \
	--interval-ms 1 --trigger "$WORK/go" >"$FIX_OUT" 2>&1 &
P=$!
KILL_PIDS+=("$P")
if ! wait_for_line "$FIX_OUT" '^READY ' 60 "$P"; then
	not_ok "the musl fixture started" "$(cat "$FIX_OUT")"
	finish
fi
MAPS=$(awk '{print $6}' "/proc/$P/maps" | sort -u)
contains "a real musl process: musl's libc is mapped" "$MAPS" "/usr/lib/x86_64-linux-musl/libc.so"
lacks "and glibc's is not" "$MAPS" "libc.so.6"
contains "the runtime mapped is the musl build" "$MAPS" "/build/fixtures/sample-musl/libcoreclr.so"

# wrong libc first: the target must be unharmed by it
expect_exit "glibc build into the musl process: wrong libc" 21 \
	"$CLRTAP" agent run -p "$P" -d 1 --libc glibc
contains "wrong libc: said plainly" "$ERR" "it was built for another C library than the one the target uses (glibc vs musl)"

# the right one, chosen from the maps
expect_exit "attach the musl build, detach" 0 "$CLRTAP" agent run -p "$P" -d 1
contains "musl build chosen from the target's maps" "$OUT" "(musl build"
contains "attached to the musl runtime" "$OUT" "attached: pid $P, mode main"
contains "detached" "$OUT" "detached: the profiler left within"
contains "the musl build is what the target mapped" "$(awk '{print $6}' "/proc/$P/maps" | sort -u)" "-musl.so"

"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Fixtures.ProbeTargets::AddInts' \
	'Clrtap.Fixtures.ProbeTargets::StaticEcho' 'Clrtap.Fixtures.Counter::Increment' \
	>"$WORK/probe.out" 2>&1 &
RUN=$!
wait_for_line "$WORK/probe.out" '^probe Clrtap.Fixtures.Counter::Increment.*ReJIT requested' 30 "$RUN"
touch "$WORK/go"
wait_for_line "$FIX_OUT" '^DONE ' 60 "$P"
kill -INT "$RUN"
wait "$RUN"
equals "probe on musl: exit code" "$?" 0
for m in ProbeTargets::AddInts ProbeTargets::StaticEcho Counter::Increment; do
	check "musl: $m: 300 calls counted" grep -qE "^calls Clrtap.Fixtures.$m \[0x06[0-9a-f]{6}\]: 300\$" "$WORK/probe.out"
done
CHECK=$(python3 - "$WORK/probe.out" <<'PY'
import re, sys
add, echo = [], []
for l in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r"call Clrtap.Fixtures.ProbeTargets::(AddInts|StaticEcho) (.*)  \d+ ns$", l.rstrip("\n"))
    if m:
        (add if m.group(1) == "AddInts" else echo).append(m.group(2))
want_add = [f"({i}, 1000) -> {i + 1000}" for i in range(300)]
want_echo = ['("héllo wörld ✓") -> "héllo wörld ✓"'] * 300
print("ok" if add == want_add and echo == want_echo else f"{len(add)} AddInts, {len(echo)} StaticEcho; first: {add[:1]} {echo[:1]}")
PY
)
equals "musl: every AddInts and StaticEcho call's arguments and return value exact, in order" "$CHECK" ok
contains "musl: reverted and dormant" "$(cat "$WORK/probe.out")" "probes reverted (original IL back)"
contains "the target's results right" "$(cat "$FIX_OUT")" "DONE calls=300"
lacks "no mismatch reported by the target" "$(cat "$FIX_OUT")" "mismatch"
stop_fixture "$P"
finish
