#!/usr/bin/env bash
# The runtime matrix: the same checks on every runtime clrtap supports, each
# a self-contained app of its own (build/fixtures/matrix/<rt>: .NET 8, 9, 10
# and 11 from NuGet's runtime packs, and the musl builds of 8.0.34, 10.0.12
# and 11.0.0 under musl's loader; scripts/build-fixtures.sh). One target
# process per runtime serves every check, and the runtimes run at once (they
# mostly wait). Exact facts on each: the version, the hot method named in
# >= 95 % of a profile's samples (its own libcoreclr's frames named too), the
# calls of a JIT and a ReadyToRun method counted by probe, the exceptions
# counted by trace, analyze and counters, the parked thread in stacks, the
# objects held in a gcdump, every call seen by the agent's ReJIT probe.
# Where a runtime lacks a feature clrtap says which version it needs: .NET 8
# to 10 have no Block buffering (gcdump names .NET 11), and a .NET 11 whose
# perf map was on before clrtap keeps it buffered (profile says so).
. "$(dirname "$0")/lib.sh"

MX=$ROOT/build/fixtures/matrix
declare -A WANT=([net8]='8\.0\.[0-9]+' [net9]='9\.0\.[0-9]+' [net10]='10\.0\.[0-9]+' [net11]='11\.0\.0'
	[musl-net8]='8\.0\.34' [musl-net10]='10\.0\.12' [musl-net11]='11\.0\.0')
# The musl builds run under musl's loader with a C++ runtime made for them (lib.sh: musl_cxx).
GL=$WORK/gl
if ! command -v musl-gcc >/dev/null || [ ! -e /lib/ld-musl-x86_64.so.1 ] || ! musl_cxx "$GL"; then
	not_ok "musl-tools installed, the musl C++ runtime made (scripts/install-deps.sh)" "musl-gcc or /lib/ld-musl-x86_64.so.1 missing"
	GL=
fi
RTS=()
for rt in net8 net9 net10 net11 musl-net8 musl-net10 musl-net11; do
	[[ $rt == musl-* && -z $GL ]] && continue
	if [ -x "$MX/$rt/matrix" ]; then
		RTS+=("$rt")
	else
		skip "$rt ($MX/$rt/matrix not built: its runtime pack was not had from NuGet, see scripts/build-fixtures.sh's note)"
	fi
done
[ ${#RTS[@]} -gt 0 ] || finish

# One target per runtime, fed commands through a FIFO held open here (the
# fixture's stdin: "burn S", "calls N", "throw N", "keep N"; "DONE cmd" each).
declare -A FD PID
for rt in "${RTS[@]}"; do
	mkdir -p "$WORK/$rt"
	mkfifo "$WORK/$rt/ctl"
	exec {fd}<>"$WORK/$rt/ctl"
	FD[$rt]=$fd
	lp=
	[[ $rt == musl-* ]] && lp=$GL
	LD_LIBRARY_PATH=$lp DOTNET_CLI_TELEMETRY_OPTOUT=1 "$MX/$rt/matrix" <&"$fd" >"$WORK/$rt/out" 2>&1 &
	PID[$rt]=$!
	KILL_PIDS+=("$!")
done

# hot_share FOLDED MIN: "HOT ALL yes|no": of the samples in the hot method's
# code (the main thread's stack, through Program::Main, in Hot::Burn or in
# JIT code clrtap could not name, "[jit]"), how many name Hot::Burn; yes for
# >= 95 % of >= MIN.
hot_share() {
	awk '{n=$NF; if ($0 ~ /Clrtap\.Matrix\.Program::Main/ && $0 ~ /Clrtap\.Matrix\.Hot::Burn|\[jit\]/) {
		run+=n; if ($0 ~ /Clrtap\.Matrix\.Hot::Burn/) hot+=n}}
		END {printf "%d %d %s", hot, run, (run >= min && hot * 100 >= run * 95) ? "yes" : "no"}' min="$2" "$1"
}

# rt_checks RT: every check on one runtime; its ok/not ok lines to stdout.
rt_checks() {
	local rt=$1 W=$WORK/$1 fd=${FD[$1]} P=${PID[$1]} ndone=0 VER OUT T

	# send CMD: one command; waits for its DONE line (60 s at most).
	send() {
		local i
		echo "$1" >&"$fd"
		ndone=$((ndone + 1))
		for ((i = 0; i < 1200; i++)); do
			[ "$(grep -c '^DONE ' "$W/out")" -ge "$ndone" ] && return 0
			sleep 0.05
		done
		not_ok "$rt: '$1' done" "$(tail -5 "$W/out")"
		return 1
	}
	# started FILE PATTERN PID: the tool in the background said it is ready.
	started() {
		wait_for_line "$1" "$2" 30 "$3" || not_ok "$rt: $(basename "$1") started" "$(cat "$1")"
	}

	if ! wait_for_line "$W/out" '^READY ' 60 "$P"; then
		not_ok "$rt: fixture started" "$(cat "$W/out")"
		return
	fi
	VER=$(sed -n 's/^READY .* version=//p' "$W/out")
	check "$rt: runtime $VER is the wanted one" grep -qxE "${WANT[$rt]}" <<<"$VER"

	if [[ $rt == musl-* ]]; then
		OUT=$(awk '{print $6}' "/proc/$P/maps" | sort -u)
		contains "$rt: a musl process: musl's libc mapped" "$OUT" "/usr/lib/x86_64-linux-musl/libc.so"
		lacks "$rt: and not glibc's" "$OUT" "libc.so.6"
		equals "$rt: its runtime is a musl build" \
			"$(readelf -d "$MX/$rt/libcoreclr.so" | grep -o 'libc\.[^]]*')" "libc.musl-x86_64.so.1"
	fi

	# ---- ps, info ----
	OUT=$("$CLRTAP" info -p "$P" 2>&1)
	contains "$rt: info: the runtime version" "$OUT" "runtime version:  $VER"
	contains "$rt: info: the entry assembly" "$OUT" "entry assembly:   matrix"
	"$CLRTAP" ps --json >"$W/ps.json" 2>/dev/null
	equals "$rt: ps: the target with its version" "$(python3 -c '
import json, sys
e = [p for p in json.load(open(sys.argv[1])) if p["pid"] == int(sys.argv[2])]
print(" ".join(str(p[k]) for p in e for k in ("status", "runtime", "assembly")))' "$W/ps.json" "$P")" "ok $VER matrix"

	# ---- profile: the hot JIT method named in >= 95 % of the samples ----
	echo "burn 8" >&"$fd"
	ndone=$((ndone + 1))
	"$CLRTAP" profile -p "$P" -F 999 -d 3 -o "$W/cpu.folded" >"$W/prof.out" 2>&1
	equals "$rt: profile: exit code" "$?" 0
	send "calls 0" >/dev/null # the burn's DONE is counted, then this one
	T=$(hot_share "$W/cpu.folded" 50)
	echo "    $rt: profile: Hot::Burn named in ${T% *} samples in the hot method's code"
	check "$rt: profile names Hot::Burn in >= 95 % of >= 50 samples in the hot method's code" test "${T##* }" = yes
	T=$(sed -n 's/^unnamed leaf frames: \([0-9.]*\) %.*/\1/p' "$W/prof.out")
	check "$rt: profile: unnamed leaf frames under 5 % (${T:-?} %)" awk -v t="${T:-100}" 'BEGIN {exit !(t < 5)}'
	contains "$rt: profile: the hot method is the top self frame" \
		"$(sed -n '/^top/{n;p}' "$W/prof.out")" "Clrtap.Matrix.Hot::Burn"
	check "$rt: profile: its own libcoreclr's frames named (coreclr_execute_assembly)" \
		grep -q 'libcoreclr.so!coreclr_execute_assembly' "$W/cpu.folded"
	check "$rt: profile: the perf map it turned on is off and gone" \
		test ! -e "/tmp/perf-$P.map"
	# the same with the runtime's own sample profiler (EventPipe: no perf map)
	echo "burn 5" >&"$fd"
	ndone=$((ndone + 1))
	"$CLRTAP" profile -p "$P" --engine eventpipe -d 3 -o "$W/ep.folded" >"$W/ep.out" 2>&1
	equals "$rt: profile --engine eventpipe: exit code" "$?" 0
	send "calls 0" >/dev/null
	T=$(hot_share "$W/ep.folded" 5) # on-CPU samples only: few on a busy machine
	echo "    $rt: profile --engine eventpipe: Hot::Burn named in ${T% *} samples in the hot method's code"
	if [[ $rt == *net9 ]]; then
		# .NET 9's sampler marks the running thread as outside managed code: said so
		contains "$rt: profile --engine eventpipe: no managed-code samples, and why (naming .NET 9)" \
			"$(cat "$W/ep.out")" "samples: nearly all marked outside managed code by the runtime: idle threads, or .NET 9, which marks running threads so too"
	else
		check "$rt: profile --engine eventpipe names Hot::Burn in >= 95 % of >= 5 samples in the hot method's code" test "${T##* }" = yes
	fi
	if [[ $rt == *net11 ]]; then
		# its perf map is buffered: top names JIT code from the jitdump file clrtap turns on with it
		echo "burn 3" >&"$fd"
		ndone=$((ndone + 1))
		"$CLRTAP" top -p "$P" -d 2 >"$W/top.out" 2>"$W/top.err"
		equals "$rt: top: exit code" "$?" 0
		send "calls 0" >/dev/null
		contains "$rt: top names the hot method live (from jitdump)" "$(cat "$W/top.out")" \
			"Clrtap.Matrix.Hot::Burn"
		lacks "$rt: top: no buffered-map warning (jitdump read)" "$(cat "$W/top.err")" "buffers its perf map"
		check "$rt: top: the jitdump file clrtap made is removed" test ! -e "/tmp/jit-$P.dump"
	fi

	# ---- probe: a JIT method (breakpoint) and a ReadyToRun one (uprobe), exact calls ----
	# Target::Hit not called yet: the probe waits for its code and finds it as
	# it is compiled (.NET 11: in jitdump, its perf map buffered); that first
	# call runs before a breakpoint can be armed, the 300 after it are counted
	"$CLRTAP" probe -p "$P" -d 0 --count 'Clrtap.Matrix.Target::Hit' >"$W/pj.out" 2>&1 &
	local pj=$!
	started "$W/pj.out" '^clrtap: tracing 1 method' "$pj"
	contains "$rt: probe: Target::Hit not compiled yet, waited for" "$(cat "$W/pj.out")" \
		"clrtap: Clrtap.Matrix.Target::Hit(int32) has no code yet: waiting for it to be compiled"
	send "calls 1"
	started "$W/pj.out" '^clrtap: Clrtap\.Matrix\.Target::Hit\(int32\) \[QuickJitted\] at 0x' "$pj"
	"$CLRTAP" probe -p "$P" -d 0 --count 'System.Convert::ToString(int32,int32)' >"$W/pr.out" 2>&1 &
	local pr=$!
	started "$W/pr.out" '^clrtap: tracing 1 method' "$pr"
	send "calls 300"
	kill -INT "$pj" "$pr"
	wait "$pj"
	equals "$rt: probe (JIT code): exit code" "$?" 0
	wait "$pr"
	equals "$rt: probe (ReadyToRun code): exit code" "$?" 0
	# .NET 11 buffers its perf map: the code compiled during the 300 calls
	# (tier-up) is found in the jitdump file clrtap turns on with the map
	# the 300 calls made once its code was found, exact; the first call, which
	# the runtime runs right after publishing the code, races the arming
	# (the summary says the calls before its code was armed are not counted)
	T=$(sed -n 's/^clrtap: Clrtap\.Matrix\.Target::Hit(int32): \([0-9]*\) calls counted from +[0-9.]*s, when its first code (\[QuickJitted\], compiled at +[0-9.]*s) was armed; calls before that are NOT counted$/\1/p' "$W/pj.out")
	check "$rt: probe: Target::Hit (JIT): the 300 calls after its first (${T:-none}: 300, or 301 with the first)" \
		test "${T:-0}" -eq 300 -o "${T:-0}" -eq 301
	lacks "$rt: probe: no buffered-map warning" "$(cat "$W/pj.out")" "buffers its perf map"
	contains "$rt: probe: Convert.ToString (ReadyToRun): uprobe" "$(cat "$W/pr.out")" \
		"System.Convert::ToString(int32, int32) [ReadyToRun] at System.Private.CoreLib.dll+0x"
	contains "$rt: probe: Convert.ToString (ReadyToRun): 300 calls" "$(cat "$W/pr.out")" \
		"clrtap: System.Convert::ToString(int32, int32): 300 calls"
	if [[ $rt == *net11 ]]; then
		check "$rt: probe: the jitdump file clrtap made is removed" test ! -e "/tmp/jit-$P.dump"
	fi

	# ---- one burst of 120 exceptions seen by trace, analyze, counters and doctor at once ----
	"$CLRTAP" trace collect -p "$P" --profile exceptions -d 0 -o "$W/exc.nettrace" >"$W/tr.out" 2>&1 &
	local tr=$!
	"$CLRTAP" analyze -p "$P" exceptions -d 4 >"$W/an.out" 2>&1 &
	local an=$!
	"$CLRTAP" counters monitor -p "$P" -d 4 --counters 'System.Runtime[exception-count]' >"$W/co.out" 2>&1 &
	local co=$!
	"$CLRTAP" doctor -p "$P" -d 4 >"$W/dr.out" 2>&1 &
	local dr=$!
	started "$W/tr.out" '^clrtap: tracing pid' "$tr"
	started "$W/an.out" '^clrtap: analyzing pid' "$an"
	started "$W/co.out" 'exception-count' "$co" # its first interval: the others are up too
	started "$W/dr.out" '^clrtap: examining pid' "$dr"
	send "throw 120"
	kill -INT "$tr"
	wait "$tr"
	equals "$rt: trace collect: exit code" "$?" 0
	"$CLRTAP" trace report "$W/exc.nettrace" >"$W/rep.out" 2>&1
	equals "$rt: trace report: exit code" "$?" 0
	contains "$rt: trace report: 120 exceptions" "$(cat "$W/rep.out")" "Exceptions: 120 thrown, 1 type, 2 distinct type+message"
	equals "$rt: trace report: 60 of each message (2 lines)" "$(grep -cE '^ +60 +matrix [01]$' "$W/rep.out")" 2
	contains "$rt: trace report: the throw site" "$(cat "$W/rep.out")" "at Clrtap.Matrix.Thrower::Throw"
	wait "$an"
	equals "$rt: analyze exceptions: exit code" "$?" 0
	contains "$rt: analyze exceptions: 120" "$(cat "$W/an.out")" "120 exceptions thrown: 120 first throws, 0 rethrown"
	contains "$rt: analyze exceptions: by type" "$(cat "$W/an.out")" "| 120 | 120 | 0 | System.InvalidOperationException | 2 |"
	wait "$co"
	equals "$rt: counters monitor: exit code" "$?" 0
	equals "$rt: counters: exception-count adds up to 120" \
		"$(awk '$3 == "exception-count" {s += $4} END {print s + 0}' "$W/co.out")" 120
	wait "$dr"
	equals "$rt: doctor: exit code" "$?" 0
	contains "$rt: doctor: the exceptions found" "$(cat "$W/dr.out")" "evidence: 120 thrown in"

	# ---- stacks ----
	OUT=$("$CLRTAP" stacks -p "$P" --sample 200ms 2>&1) # a busy machine: more than one sampler round
	contains "$rt: stacks: the parked thread's method" "$OUT" "Clrtap.Matrix.Parked::Wait"
	contains "$rt: stacks: the parked thread" "$OUT" "(parked)"
	contains "$rt: stacks: the main thread in Main" "$OUT" "Clrtap.Matrix.Program::Main"

	# ---- gcdump: the 5000 objects held; Block buffering where the runtime has it ----
	send "keep 5000"
	"$CLRTAP" gcdump collect -p "$P" -o "$W/h.heap" >"$W/gc.out" 2>&1
	equals "$rt: gcdump collect: exit code" "$?" 0
	OUT=$("$CLRTAP" gcdump report "$W/h.heap" 2>&1)
	check "$rt: gcdump: 5,000 Keep objects" grep -qE '^ +[0-9,]+ +[0-9,]+ +5,000 +Clrtap\.Matrix\.Keep$' <<<"$OUT"
	if [[ $rt == *net11 ]]; then
		contains "$rt: gcdump: lossless, the runtime's Block buffering" "$(cat "$W/gc.out")" \
			"events: lossless (the runtime's Block buffering: it waits rather than drop)"
	else
		contains "$rt: gcdump: no Block buffering before .NET 11, said so" "$(cat "$W/gc.out")" \
			"events: the runtime's lossy buffer (Block buffering needs .NET 11); none was lost"
	fi

	# ---- the app's own libcoreclr named by the shared runtime's debug file ----
	# A debug file for the shared runtime of the same version (its build-id
	# is the copy's) names the copy's functions too: one made here with a
	# symbol at the start of the function under coreclr_execute_assembly,
	# in a shared-runtime directory of the test's own.
	if [ "$rt" = net10 ]; then
		local fn lib base addr
		fn=$(grep -o 'libcoreclr.so!coreclr_execute_assembly;libcoreclr.so!sub_[0-9a-f]*' "$W/cpu.folded" |
			head -1 | sed 's/.*!sub_//')
		lib=$MX/$rt/libcoreclr.so
		mkdir -p "$W/fx/10.0.99"
		objcopy --only-keep-debug "$lib" "$W/dbg.tmp" &&
			objcopy --add-symbol "clrtap_matrix_fn=0x$fn,function,global" "$W/dbg.tmp" \
				"$W/fx/10.0.99/libcoreclr.so.dbg" 2>"$W/objcopy.err"
		base=$(awk -v p="$lib" '$6 == p && $3 == "00000000" {print $1; exit}' "/proc/$P/maps" | cut -d- -f1)
		addr=$(printf '%x' $((0x$base + 0x${fn:-0} + 4)))
		OUT=$(env CLRTAP_TEST_SHARED_FX="$W/fx" "$TOOLS/symcheck" "$P" "$addr" 2>&1)
		contains "$rt: the copy's libcoreclr function named from the shared runtime's debug file (sub_$fn)" \
			"$OUT" "clrtap_matrix_fn"
		OUT=$("$TOOLS/symcheck" "$P" "$addr" 2>&1)
		contains "$rt: without it: sub_$fn, as before" "$OUT" "sub_$fn"
	fi

	# ---- agent: attach, ReJIT probe of every call with arguments (last: it stays loaded) ----
	"$CLRTAP" agent probe -p "$P" --args 'Clrtap.Matrix.Target::Hit' 'System.Convert::ToString(int32,int32)' \
		>"$W/ag.out" 2>&1 &
	local ag=$!
	started "$W/ag.out" '^probe System.Convert::ToString.*ReJIT requested' "$ag"
	send "calls 200"
	sleep 0.2
	kill -INT "$ag"
	wait "$ag"
	equals "$rt: agent probe: exit code" "$?" 0
	contains "$rt: agent: attached to this runtime" "$(cat "$W/ag.out")" "attached: pid $P, mode main"
	if [[ $rt == musl-* ]]; then
		contains "$rt: agent: the musl build, chosen from the target's maps" "$(cat "$W/ag.out")" "(musl build"
	fi
	contains "$rt: agent: runtime version" "$(cat "$W/ag.out")" "runtime $VER,"
	check "$rt: agent: 200 calls of Target::Hit counted" grep -qE '^calls Clrtap.Matrix.Target::Hit \[0x06[0-9a-f]{6}\]: 200$' "$W/ag.out"
	check "$rt: agent: 200 calls of Convert.ToString (ReadyToRun, past tier-up) counted" \
		grep -qE '^calls System.Convert::ToString\(int32,int32\) \[0x06[0-9a-f]{6}\]: 200$' "$W/ag.out"
	equals "$rt: agent: every call's argument and return value, in order" \
		"$(grep '^call Clrtap' "$W/ag.out" | sed -E 's/  [0-9]+ ns$//' | md5sum)" \
		"$(for ((i = 0; i < 200; i++)); do echo "call Clrtap.Matrix.Target::Hit ($i) -> $((i * 3 + 1))"; done | md5sum)"
	echo "    $rt: done in $SECONDS s"
}

JOBS=()
for rt in "${RTS[@]}"; do
	rt_checks "$rt" >"$WORK/$rt.log" 2>&1 &
	JOBS+=("$!")
done
wait "${JOBS[@]}"

# ---- a .NET 11 whose perf map was on before clrtap: buffered, and said so ----
if [ -x "$MX/net11/matrix" ]; then
	mkfifo "$WORK/pm-ctl"
	exec {PMFD}<>"$WORK/pm-ctl"
	DOTNET_PerfMapEnabled=3 "$MX/net11/matrix" <&"$PMFD" >"$WORK/pm.out" 2>&1 &
	PMP=$!
	KILL_PIDS+=("$PMP")
	if wait_for_line "$WORK/pm.out" '^READY ' 60 "$PMP"; then
		echo "burn 2" >&"$PMFD"
		expect_exit "net11, map on at start: profile" 0 "$CLRTAP" profile -p "$PMP" -d 1 -o "$WORK/pm.folded"
		contains "net11, map on at start: JIT frames unnamed, and why (the version named)" "$OUT" \
			"perf map: on before this command (by the target's settings), so not turned off to be read whole: a runtime that buffers its map (.NET 11 writes it out only when it is turned off)"
		contains "net11, map on at start: left on" "$("$CLRTAP" info -p "$PMP" 2>&1)" "perf map:         on"
	else
		not_ok "net11 with DOTNET_PerfMapEnabled=3 started" "$(cat "$WORK/pm.out")"
	fi
fi

for rt in "${RTS[@]}"; do
	while IFS= read -r line; do
		case $line in
		"ok - "*) PASSED=$((PASSED + 1)) ;;
		"not ok - "*) FAILED=$((FAILED + 1)) ;;
		esac
		echo "$line"
	done <"$WORK/$rt.log"
done
# KEEP_WORK=DIR keeps every tool's output for a look after the run
[ -n "${KEEP_WORK:-}" ] && cp -r "$WORK" "$KEEP_WORK"
finish
