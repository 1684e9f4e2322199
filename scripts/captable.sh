#!/usr/bin/env bash
# captable.sh - which capabilities each clrtap command needs, measured.
#
# Runs every command briefly against the sample fixture running as uid 65534
# (nobody), as root (uid 0) with a reduced capability set (setpriv: the
# inheritable and bounding sets, so an exec as root gets exactly those):
#   all       the full set (every capability this kernel knows)
#   none      no capability at all
#   -CAP_X    the full set without CAP_X, for each capability of CAPS below
#   minimal   the capabilities whose removal alone changed the outcome; when
#             that set does not give the full set's outcome (two caps that
#             stand in for each other, like CAP_PERFMON and CAP_SYS_ADMIN),
#             the first of the rest, in CAPS order, that makes it so is added
# and classifies each outcome (exit code + what the command said or wrote).
#
# Output: one line per run, "command<TAB>set<TAB>exit<TAB>outcome", on stdout
# or -o FILE; --update rewrites the generated section of docs/capabilities.md.
#   scripts/captable.sh [--update] [-o FILE] [--commands "stacks profile"] [--sets "all none -CAP_SYS_PTRACE minimal"]
# --sets narrows the runs (a fast subset for tests/integration/t-captable.sh);
# "minimal" then uses the set recorded in docs/capabilities.md.
# Needs root, setpriv, dotnet and build/fixtures (scripts/build-fixtures.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CLRTAP=${CLRTAP:-$ROOT/build/clrtap}
FIXTURE_DLL=${FIXTURE_DLL:-$ROOT/build/fixtures/sample/sample.dll}
DOC=$ROOT/docs/capabilities.md

# The capabilities tried, broadest first: the order "minimal" adds them in
# is the reverse (the narrowest that works is preferred).
CAPS="CAP_SYS_ADMIN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_CHOWN CAP_SETUID CAP_SETGID
CAP_SYS_PTRACE CAP_PERFMON CAP_SYS_RESOURCE CAP_IPC_LOCK CAP_SYS_NICE CAP_KILL CAP_SYS_CHROOT
CAP_SYSLOG CAP_CHECKPOINT_RESTORE"
COMMANDS="profile top trace counters stacks probe dump gcdump agent analyze doctor watch"

UPDATE=0 OUT=/dev/stdout SETS=""
while [ $# -gt 0 ]; do
	case $1 in
	--update) UPDATE=1 ;;
	-o) OUT=$2; shift ;;
	--commands) COMMANDS=$2; shift ;;
	--sets) SETS=$2; shift ;;
	*) echo "captable: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
if [ "$(id -u)" != 0 ]; then
	echo "captable: needs root (it drops capabilities from root's full set)" >&2
	exit 77
fi
for t in setpriv dotnet; do
	command -v $t >/dev/null || { echo "captable: $t not found" >&2; exit 77; }
done
[ -x "$CLRTAP" ] && [ -f "$FIXTURE_DLL" ] || { echo "captable: build clrtap and the fixtures first" >&2; exit 77; }

WORK=$(mktemp -d /tmp/captable.XXXXXX)
chmod 755 "$WORK"
FIXTURES=()
cleanup() {
	local p i
	for p in "${FIXTURES[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${FIXTURES[@]}"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		rm -f /tmp/dotnet-diagnostic-"$p"-*-socket /tmp/clr-debug-pipe-"$p"-* /tmp/perf-"$p".map \
			/tmp/perfinfo-"$p".map /tmp/jit-"$p".dump
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# fixture MODE [ARGS]: the sample app as uid 65534; sets FPID.
fixture() {
	local out=$WORK/fix-$RANDOM.out i
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -i PATH=/usr/bin:/bin HOME=/tmp DOTNET_CLI_TELEMETRY_OPTOUT=1 \
		dotnet "$FIXTURE_DLL" "$@" >"$out" 2>&1 &
	FPID=$!
	FIXTURES+=("$FPID")
	for ((i = 0; i < 600; i++)); do
		grep -q '^READY ' "$out" 2>/dev/null && return 0
		kill -0 "$FPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "captable: fixture $* did not start: $(cat "$out")" >&2
	exit 1
}
unfixture() {
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# caps_of SET: the setpriv capability list ("-all,+sys_ptrace,...") of a set.
# "all" is what this process holds (a container may hold less than every
# capability the kernel knows): setpriv --list-caps is in bit order.
BND=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
ALLCAPS="" MISSING=""
i=0
for c in $(setpriv --list-caps); do
	if (( (BND >> i) & 1 )); then ALLCAPS+="$c "; else MISSING+="CAP_$(echo "$c" | tr 'a-z' 'A-Z') "; fi
	i=$((i + 1))
done
for c in $MISSING; do
	CAPS=$(echo $CAPS | tr ' ' '\n' | grep -vx "$c" | tr '\n' ' ')
done
caps_of() {
	local set=$1 c list="-all" drop
	case $set in
	all)
		for c in $ALLCAPS; do list+=",+$c"; done
		echo "$list"
		return ;;
	none) echo "-all"; return ;;
	-CAP_*)
		drop=$(echo "${set#-CAP_}" | tr 'A-Z' 'a-z')
		for c in $ALLCAPS; do
			[ "$c" = "$drop" ] || list+=",+$c"
		done
		echo "$list"
		return ;;
	esac
	for c in ${set//+/ }; do
		list+=",+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
	done
	echo "$list"
}

# what the command said: on failure its last "clrtap: " line that is not a
# warning (the error), else its first warning; paths and numbers made
# generic, cut to 110 characters.
first_msg() {
	{
		if [ "${2:-0}" != 0 ]; then grep '^clrtap: ' "$1" | grep -v '^clrtap: warning: ' | tail -1; fi
		grep '^clrtap: warning: ' "$1"
	} 2>/dev/null | head -1 | sed -E "s/^clrtap: //; s#/tmp/[^ ']*#PATH#g; s/0x[0-9a-fA-F]+/N/g;
		s/[0-9]+/N/g; s/\\\\n.*//" | cut -c1-110
}

# run CMD SET: runs one command under SET; prints "exit<TAB>outcome".
run() {
	local cmd=$1 set=$2 caps d rc out err pid verdict
	caps=$(caps_of "$set")
	d=$WORK/run-$cmd-$RANDOM
	mkdir -p "$d"
	chmod 755 "$d"
	out=$d/stdout err=$d/stderr
	pid=$P
	[ "$cmd" = agent ] && { fixture cpu-split; pid=$FPID; }
	local pre=(setpriv --inh-caps="$caps" --bounding-set="$caps" -- timeout -s INT 60)
	case $cmd in
	profile) "${pre[@]}" "$CLRTAP" profile -p "$pid" -d 1 -o "$d/p.html" >"$out" 2>"$err" ;;
	top) "${pre[@]}" "$CLRTAP" top -p "$pid" -d 1.5 >"$out" 2>"$err" ;;
	trace) "${pre[@]}" "$CLRTAP" trace collect -p "$pid" -d 1 -o "$d/t.nettrace" >"$out" 2>"$err" ;;
	counters) "${pre[@]}" "$CLRTAP" counters monitor -p "$pid" -d 2.5 --lines >"$out" 2>"$err" ;;
	stacks) "${pre[@]}" "$CLRTAP" stacks -p "$pid" >"$out" 2>"$err" ;;
	probe) "${pre[@]}" "$CLRTAP" probe -p "$PP" 'Clrtap.Fixtures.ProbeTargets::AddInts' -c -d 1.5 >"$out" 2>"$err" ;;
	dump) "${pre[@]}" "$CLRTAP" dump -p "$pid" --type mini -o "$d/core" >"$out" 2>"$err" ;;
	gcdump) "${pre[@]}" "$CLRTAP" gcdump collect -p "$pid" -o "$d/h.gcdump" >"$out" 2>"$err" ;;
	agent) "${pre[@]}" "$CLRTAP" agent run -p "$pid" -d 1 >"$out" 2>"$err" ;;
	analyze) "${pre[@]}" "$CLRTAP" analyze -p "$pid" hotpaths -d 1 >"$out" 2>"$err" ;;
	doctor) "${pre[@]}" "$CLRTAP" doctor -p "$pid" -d 2 >"$out" 2>"$err" ;;
	watch) "${pre[@]}" "$CLRTAP" watch -p "$pid" 'cpu > 5% count 1' --action stacks -d 4 -o "$d/w" \
		>"$out" 2>"$err" ;;
	esac
	rc=$?
	[ "$cmd" = agent ] && unfixture "$pid"
	# what it did: the fact each command is expected to show
	local ok=0
	case $cmd in
	profile) grep -q 'CpuSplit::HotA' "$d/p.html" 2>/dev/null && ok=1 ;;
	top | stacks | analyze) grep -q 'CpuSplit' "$out" && ok=1 ;;
	trace) [ -s "$d/t.nettrace" ] && "$CLRTAP" trace report "$d/t.nettrace" 2>/dev/null | grep -q CpuSplit && ok=1 ;;
	counters) grep -q 'cpu-usage' "$out" && ok=1 ;;
	probe) grep -Eq ': [1-9][0-9]* calls$' "$out" "$err" && ok=1 ;;
	dump) [ -s "$d/core" ] && ok=1 ;;
	gcdump) [ -s "$d/h.gcdump" ] && "$CLRTAP" gcdump report "$d/h.gcdump" 2>/dev/null | grep -q 'System.String' && ok=1 ;;
	agent) grep -q '^attached: ' "$out" && grep -q '^detached: ' "$out" && ok=1 ;;
	doctor) grep -q 'CpuSplit::HotA' "$out" && ok=1 ;;
	watch) grep -q '"event":"action-end".*"exit_code":0' "$out" && grep -q CpuSplit "$d"/w/1-stacks-*/result.json 2>/dev/null && ok=1 ;;
	esac
	if grep -q 'not allowed to inspect' "$err"; then
		verdict="refused: $(grep -m1 -o 'lacks CAP_[A-Za-z_ ]*' "$err" | sed 's/ *$//')"
	elif grep -q 'cannot use the diagnostics socket: Permission denied' "$err"; then
		verdict="refused: the diagnostics socket (EACCES)"
	elif [ "$cmd" = watch ] && grep -q '"event":"action-end"' "$out" && [ $ok = 0 ]; then
		verdict="fired; action failed: $(cat "$d"/w/1-*/log.txt 2>/dev/null | grep -m1 -v '^$' | sed -E 's/^clrtap: //; s/[0-9]+/N/g' | cut -c1-70)"
	elif [ $rc = 0 ] && [ $ok = 1 ]; then
		verdict="ok"
		grep -q 'sampling user stacks only' "$err" && verdict="ok, user stacks only (no kernel stacks)"
		grep -q 'perf_event_open was denied' "$err" && verdict="ok, EventPipe engine (perf_event_open denied)"
		grep -q 'cannot hand the dump file' "$err" && verdict="ok, but $(first_msg "$err")"
	elif [ $rc = 0 ]; then
		verdict="exit 0 without the result: $(first_msg "$err")"
	else
		verdict="failed: $(first_msg "$err" "$rc")"
		[ -n "$(first_msg "$err" "$rc")" ] || verdict="failed: no message, no result"
	fi
	printf '%s\t%s\n' "$rc" "$verdict"
	rm -rf "$d"
}

fixture cpu-split
P=$FPID
fixture probe-warm --calls 100000000 --interval-ms 2
PP=$FPID

recorded_minimal() {
	[ -f "$DOC" ] && awk -F'\t' -v c="$1" '$1 == c && $2 ~ /^minimal:/ { sub(/^minimal:/, "", $2); print $2; exit }' "$DOC"
}

results=$WORK/results.tsv
: >"$results"
for cmd in $COMMANDS; do
	declare -A res=()
	if [ -n "$SETS" ]; then
		sets=$SETS
	else
		sets="all none"
		for c in $CAPS; do sets+=" -$c"; done
		sets+=" minimal"
	fi
	for set in $sets; do
		if [ "$set" = minimal ]; then
			if [ -n "$SETS" ]; then
				min=$(recorded_minimal "$cmd")
				[ -n "$min" ] || { echo "captable: no recorded minimal set for $cmd" >&2; continue; }
			else
				# the caps whose removal alone changed the outcome
				min=""
				for c in $CAPS; do
					[ "${res[-$c]#*$'\t'}" != "${res[all]#*$'\t'}" ] && min+="${min:+ }$c"
				done
				[ -n "$min" ] || min=none
			fi
			if [ "$min" = none ]; then r=${res[none]:-$(run "$cmd" none)}
			else r=$(run "$cmd" "${min// /+}"); fi
			if [ -z "$SETS" ] && [ "${r#*$'\t'}" != "${res[all]#*$'\t'}" ]; then
				# a stand-in pair: add the narrowest cap that restores the outcome
				for c in $(echo $CAPS | tr ' ' '\n' | tac); do
					case " $min " in *" $c "*) continue ;; esac
					r2=$(run "$cmd" "${min// /+}+$c")
					if [ "${r2#*$'\t'}" = "${res[all]#*$'\t'}" ]; then
						min="$min $c" r=$r2
						break
					fi
				done
			fi
			set="minimal:${min// /+}"
		else
			r=$(run "$cmd" "$set")
			res[$set]=$r
		fi
		printf '%s\t%s\t%s\n' "$cmd" "$set" "$r" >>"$results"
		[ "$OUT" = /dev/stdout ] || printf '%s\t%s\t%s\n' "$cmd" "$set" "$r" >&2
	done
	unset res
done

if [ $UPDATE = 1 ]; then
	python3 - "$DOC" "$results" "$(uname -r)" "$(cat /proc/sys/kernel/perf_event_paranoid)" \
		"$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)" "$CAPS" "$MISSING" <<'PY'
import sys
doc, res, kernel, paranoid, yama, caps, missing = sys.argv[1:]
rows = [l.rstrip('\n').split('\t') for l in open(res) if l.strip()]
caps = caps.split()
cmds = []
by = {}
for c, s, rc, v in rows:
    if c not in cmds:
        cmds.append(c)
    by[(c, s)] = (rc, v)
out = []
out.append('<!-- captable:begin (generated by scripts/captable.sh --update; do not edit) -->')
out.append('')
out.append(f'Measured on Linux {kernel}, kernel.perf_event_paranoid = {paranoid}, '
           f'Yama ptrace_scope = {yama}; clrtap as uid 0, the fixture as uid 65534. '
           + (f'"All" is every capability this machine gives root, which lacks {", ".join(missing.split())}: '
              'that one could not be measured.' if missing.split() else ''))
out.append('')
out.append('| command | needs (minimal set) | with all capabilities | with none | without one capability (only those that change the outcome) |')
out.append('|---|---|---|---|---|')
for c in cmds:
    full = by.get((c, 'all'), ('?', '?'))
    none = by.get((c, 'none'), ('?', '?'))
    mins = [s for (cc, s) in by if cc == c and s.startswith('minimal:')]
    m = mins[0][len('minimal:'):].replace('+', ', ') if mins else '?'
    mv = by[(c, mins[0])][1] if mins else '?'
    if mins and mv != full[1]:
        m += f' (gives: {mv})'
    diffs = []
    for cap in caps:
        r = by.get((c, '-' + cap))
        if r and r[1] != full[1]:
            diffs.append(f'−{cap[4:]}: {r[1]} (exit {r[0]})')
    out.append(f'| `{c}` | {m} | {full[1]} | {none[1]} (exit {none[0]}) | {"<br>".join(diffs) or "no change"} |')
out.append('')
out.append('Every run (command, capability set, exit code, outcome); `-CAP_X` is the full set without CAP_X:')
out.append('')
out.append('```')
for r in rows:
    out.append('\t'.join(r))
out.append('```')
out.append('')
out.append('<!-- captable:end -->')
text = open(doc).read()
a = text.index('<!-- captable:begin')
b = text.index('<!-- captable:end -->') + len('<!-- captable:end -->')
open(doc, 'w').write(text[:a] + '\n'.join(out) + text[b:])
PY
fi
cat "$results" >"$OUT"
