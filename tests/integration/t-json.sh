#!/usr/bin/env bash
# Hostile strings in every --json output and on the terminal (issue 10).
# The hostile-strings fixture is started with an argv, environment names,
# a TMPDIR, a thread name (raw comm bytes), an emitted type and method name
# and an exception message that carry ANSI escapes, newlines, quotes,
# backslashes and (where the channel allows) invalid UTF-8. Every --json
# output of ps, info, stacks, perfmap, counters collect and trace report must
# be strict JSON (UTF-8, no NaN, one value) holding the exact strings that
# clrtap read (invalid bytes by the surrogateescape rule of
# lib/common/json.h); the text output of the same commands, and clrtap's
# stderr, must hold no raw ESC or other control byte but the line ends.
# (probe and profile --json: their task results, checked in t-probe.sh and t-profile.sh.)
. "$(dirname "$0")/lib.sh"

ESC=$'\x1b'
TAG=$'arg\x1b[31m"q"\\\nx\xffy'
ENV_NAME=$'E\x1b[31m"q"\\\nN'
ENV_VAL=$'v\x1b[0m"\\\n'
NOEQ=$'NOEQ\x1b[31m'
HTMP="$WORK/"$'tmp\x1b[31m"q"\\\nd'
mkdir -p "$HTMP"
export HTMP TAG ENV_NAME ENV_VAL NOEQ

# jcheck and term_clean: lib.sh.

# The fixture, with entries env(1) cannot make ('=' first, no '=').
FIX_OUT=$WORK/fixture.out
"$TOOLS/execenv" "$ENV_NAME=$ENV_VAL" "$NOEQ" "=emptyname" "TMPDIR=$HTMP" \
	DOTNET_CLI_TELEMETRY_OPTOUT=1 -- \
	dotnet "$FIXTURE_DLL" hostile-strings --count 17 --trigger "$WORK/go" --tag "$TAG" \
	>"$FIX_OUT" 2>&1 &
FIX_PID=$!
KILL_PIDS+=("$FIX_PID")
CLEANUP_CMD='rm -f "$HTMP"/dotnet-diagnostic-* "$HTMP"/clr-debug-pipe-*'
if ! wait_for_line "$FIX_OUT" '^READY ' 60 "$FIX_PID"; then
	not_ok "hostile-strings fixture started" "$(cat "$FIX_OUT")"
	finish
fi
export FIX_PID

# ----- ps -----
"$CLRTAP" ps --json >"$WORK/ps.json" 2>"$WORK/ps.err"
jcheck "ps --json: strict JSON, the command line byte for byte (0xff too)" "$WORK/ps.json" '
want = open("/proc/%s/cmdline" % os.environ["FIX_PID"], "rb").read().rstrip(b"\0").replace(b"\0", b" ")
row = [r for r in d if r["pid"] == int(os.environ["FIX_PID"])][0]
assert raw(row["cmdline"]) == want, (raw(row["cmdline"]), want)
assert raw(row["cmdline"]).endswith(b"--tag " + env("TAG")), row["cmdline"]
print("ok")'
"$CLRTAP" ps -w >"$WORK/ps.txt" 2>>"$WORK/ps.err"
term_clean "$WORK/ps.txt" "ps: no control byte on the terminal"
contains "ps: the argument shown escaped" "$(cat "$WORK/ps.txt")" 'arg\x1b[31m"q"\\\nx\xffy'

# ----- info -----
"$CLRTAP" info -p "$FIX_PID" --env --json >"$WORK/info.json" 2>"$WORK/info.err"
jcheck "info --env --json: env names and values exact, '=x' and no-'=' entries kept" "$WORK/info.json" '
e = d["environment"]
assert e[os.environ["ENV_NAME"]] == os.environ["ENV_VAL"], e.get(os.environ["ENV_NAME"])
assert e[os.environ["NOEQ"]] is None
assert e[""] == "emptyname"
assert raw(e["TMPDIR"]) == env("HTMP")
# the runtime reports argv as UTF-16: the 0xff byte arrives as U+FFFD
assert d["cmdline"].endswith("--tag " + os.environ["TAG"].split("\udcff")[0] + "\ufffdy"), d["cmdline"]
assert raw(d["tmpdir"]).startswith(env("HTMP")), d["tmpdir"]
assert raw(d["socket"]).startswith(env("HTMP") + b"/dotnet-diagnostic-"), d["socket"]
print("ok")'
"$CLRTAP" info -p "$FIX_PID" --env >"$WORK/info.txt" 2>>"$WORK/info.err"
term_clean "$WORK/info.txt" "info --env: no control byte on the terminal"
contains "info: the hostile env name shown escaped" "$(cat "$WORK/info.txt")" \
	'  E\x1b[31m"q"\\\nN=v\x1b[0m"\\\n'
contains "info: the temp dir shown escaped" "$(cat "$WORK/info.txt")" 'tmp\x1b[31m"q"\\\nd'

# ----- perfmap -----
"$CLRTAP" perfmap -p "$FIX_PID" status --json >"$WORK/pm.json" 2>"$WORK/pm.err"
jcheck "perfmap status --json: the map path in the hostile TMPDIR, exact" "$WORK/pm.json" '
assert raw(d["perfmap_file"]).startswith(env("HTMP")) or d["perfmap_file"].startswith("/tmp/"), d
print("ok")'
"$CLRTAP" perfmap -p "$FIX_PID" status >"$WORK/pm.txt" 2>>"$WORK/pm.err"
term_clean "$WORK/pm.txt" "perfmap status: no control byte on the terminal"

# ----- stacks: the emitted method and the thread's raw comm -----
SLEEPER=""
for t in /proc/"$FIX_PID"/task/*; do
	if LC_ALL=C grep -q "^h$ESC" "$t/comm" 2>/dev/null; then SLEEPER=${t##*/}; fi
done
export SLEEPER
check "the fixture named a thread with raw bytes" test -n "$SLEEPER"
CLRTAP_DEBUG=1 "$CLRTAP" stacks -p "$FIX_PID" --json >"$WORK/stacks.json" 2>"$WORK/stacks.err"
jcheck "stacks --json: the emitted method name and the thread name exact" "$WORK/stacks.json" '
tid = int(os.environ["SLEEPER"])
# comm holds the bytes the thread set (status shows them escaped by the kernel)
name = open("/proc/%d/task/%d/comm" % (int(os.environ["FIX_PID"]), tid), "rb").read()[:-1]
assert b"\n" in name and b"\xff" in name, name
th = [t for t in d["threads"] if t["tid"] == tid][0]
assert raw(th["name"]) == name, (raw(th["name"]), name)
f = [f for f in th["frames"] if "::Spin" in f][0]
assert f.endswith("::Spin\x1b[0m\r\n\"\\"), f
assert f.startswith("Hostile\x1b") and "Type\"q\"" in f and "\n" in f, f
print("ok")'
term_clean "$WORK/stacks.err" "stacks (CLRTAP_DEBUG=1): no control byte in the log lines"
"$CLRTAP" stacks -p "$FIX_PID" >"$WORK/stacks.txt" 2>>"$WORK/stacks.err"
term_clean "$WORK/stacks.txt" "stacks: no control byte on the terminal"
contains "stacks: the method name shown escaped" "$(cat "$WORK/stacks.txt")" '::Spin\x1b[0m\r\n"\\'
contains "stacks: the thread name shown escaped once" "$(cat "$WORK/stacks.txt")" '(h\x1b[31m"\\\n\xffz)'

# ----- trace: exception messages -----
( sleep 1.5; touch "$WORK/go" ) &
expect_exit "trace collect of the hostile exceptions" 0 \
	"$CLRTAP" trace collect -p "$FIX_PID" --profile exceptions -d 4 -o "$WORK/ex.nettrace"
wait_for_line "$FIX_OUT" '^DONE thrown=17' 5
"$CLRTAP" trace report "$WORK/ex.nettrace" --json >"$WORK/report.json" 2>"$WORK/report.err"
jcheck "trace report --json: the exception message exact (lone surrogate as U+FFFD)" "$WORK/report.json" '
g = [x for x in d["exceptions"]["groups"] if "HostileException" in x["type"]][0]
want = "boom\x1b[31m \"q\" \\ a\r\nb\u2028c \ufffd d \U0001F600 end"
assert g["message"] == want, (g["message"], want)
assert g["count"] == 17, g["count"]
print("ok")'
grep -q 'u2028' "$WORK/report.json"
check "trace report --json: U+2028 written as an escape" test $? -eq 0
"$CLRTAP" trace report "$WORK/ex.nettrace" >"$WORK/report.txt" 2>>"$WORK/report.err"
term_clean "$WORK/report.txt" "trace report: no control byte on the terminal"
contains "trace report: the message shown escaped" "$(cat "$WORK/report.txt")" \
	'boom\x1b[31m "q" \\ a\r\nb\u{2028}c'

# ----- counters collect --format json -----
expect_exit "counters collect --format json" 0 \
	"$CLRTAP" counters collect -p "$FIX_PID" --format json -d 2 -o "$WORK/counters.json"
jcheck "counters collect --format json: strict JSON with values" "$WORK/counters.json" '
assert d["pid"] == int(os.environ["FIX_PID"]) and len(d["values"]) > 0, d
print("ok")'

# ----- dump: a hostile output name (the operator's, but printed back) -----
DUMP="$HTMP/"$'d\x1b[31m.core'
export DUMP
"$CLRTAP" dump -p "$FIX_PID" --type mini -o "$DUMP" --json >"$WORK/dump.json" 2>"$WORK/dump.err"
jcheck "dump --json: the path exact" "$WORK/dump.json" '
assert raw(d["path"]) == env("DUMP") and d["bytes"] > 0, d
print("ok")'
rm -f "$DUMP"
"$CLRTAP" dump -p "$FIX_PID" --type mini -o "$DUMP" >"$WORK/dump.txt" 2>>"$WORK/dump.err"
term_clean "$WORK/dump.txt" "dump: no control byte on the terminal"
contains "dump: the path shown escaped" "$(cat "$WORK/dump.txt")" 'd\x1b[31m.core'
rm -f "$DUMP"

# every stderr of the above
for f in ps info pm report dump; do
	term_clean "$WORK/$f.err" "$f: no control byte in the messages"
done

stop_fixture "$FIX_PID"
finish
