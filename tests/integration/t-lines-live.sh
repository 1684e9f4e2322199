#!/usr/bin/env bash
# Source lines in the live views, against what the runtime itself prints
# (tests/fixtures/lines prints StackFrame file:line for three frames before
# READY): for each build of the fixture (Debug + PDB beside it, Release +
# embedded PDB, Release ReadyToRun + PDB beside it):
#   the hot loop's line in `profile --lines` (pprof decoded by go tool pprof -lines;
#   the EventPipe engine's folded output for the Release build),
#   the throw site in `analyze exceptions --lines`,
#   the probed method's caller in `probe --stack --lines`,
#   the hot loop in `stacks --lines --json` (file and line fields);
# and (Debug) with a PDB of another build put beside the assembly: refused,
# said in one line. One fixture process per build.
. "$(dirname "$0")/lib.sh"

LINES_DIR=$ROOT/build/fixtures/lines

# ref WHAT: "FILE:LINE" the runtime printed ("REF what FILE:LINE Type.Method")
ref() { sed -n "s/^REF $1 \([^ ]*\) .*/\1/p" "$FIX_OUT" | head -1; }
# as clrtap writes it: "FILE:line N"
as_clrtap() { printf '%s' "$1" | sed 's/:\([0-9]*\)$/:line \1/'; }

start_lines() {
	FIX_OUT=$WORK/lines-$1-$RANDOM.out
	DOTNET_CLI_TELEMETRY_OPTOUT=1 dotnet "$2" >"$FIX_OUT" 2>&1 &
	FIX_PID=$!
	KILL_PIDS+=("$FIX_PID")
	wait_for_line "$FIX_OUT" '^READY ' 30 "$FIX_PID" >/dev/null
}

for v in debug release-embedded r2r; do
	if [ ! -f "$LINES_DIR/$v/lines.dll" ]; then
		skip "$v: $LINES_DIR/$v not built (scripts/build-fixtures.sh says why)"
		continue
	fi
	# from a copy: the debug build's PDB is swapped for another build's below
	mkdir -p "$WORK/$v"
	cp "$LINES_DIR/$v/"lines.* "$WORK/$v/"
	start_lines "$v" "$WORK/$v/lines.dll"
	HOT=$(ref hot) THROW=$(ref throw) CALLER=$(ref caller)
	check "$v: the runtime printed its three frames" test -n "$HOT" -a -n "$THROW" -a -n "$CALLER"

	expect_exit "$v: profile --lines" 0 "$CLRTAP" profile -p "$FIX_PID" -d 0.5 --lines -o "$WORK/$v.pb.gz"
	if command -v go >/dev/null; then
		go tool pprof -lines -top "$WORK/$v.pb.gz" >"$WORK/$v.pp" 2>&1
		contains "$v: go tool pprof -lines: the hot loop's line as the runtime prints it" \
			"$(cat "$WORK/$v.pp")" "Clrtap.Lines.Hot::Spin $HOT"
	else
		skip "go tool pprof: golang-go not installed (scripts/install-deps.sh)"
	fi

	if [ "$v" = release-embedded ]; then
		expect_exit "$v: profile --engine eventpipe --lines" 0 "$CLRTAP" profile -p "$FIX_PID" -d 0.5 \
			--engine eventpipe --lines -o "$WORK/ep.folded"
		contains "$v: EventPipe engine: the hot loop's line" "$(cat "$WORK/ep.folded")" \
			"Clrtap.Lines.Hot::Spin in $(as_clrtap "$HOT");"
	fi

	expect_exit "$v: analyze exceptions --lines" 0 "$CLRTAP" analyze -p "$FIX_PID" exceptions -d 0.5 --lines --json
	equals "$v: the throw site's line as the runtime prints it" \
		"$(json_get "$OUT" '[f for f in d["result"]["groups"][0]["stack"] if "::ThrowIt" in f][0]')" \
		"Clrtap.Lines.Thrower::ThrowIt in $(as_clrtap "$THROW")"

	expect_exit "$v: probe --stack --lines" 0 "$CLRTAP" probe -p "$FIX_PID" -d 0.5 --stack --lines \
		'Clrtap.Lines.Probed::Target'
	contains "$v: the probed method's caller's line as the runtime prints it" "$OUT" \
		"at Clrtap.Lines.Driver::CallLoop in $(as_clrtap "$CALLER") <- "

	expect_exit "$v: stacks --lines --json" 0 "$CLRTAP" stacks -p "$FIX_PID" --lines --json
	# One snapshot: Spin is mostly the caller of Work (the call's line, as the
	# runtime prints it); caught as the leaf it is on the loop's own lines
	# (the Debug build's loop header is a line of its own): then within the
	# two lines above the call, in the same file.
	equals "$v: stacks: the hot loop's node has the file and line" "$(python3 -c '
import json, sys
hot = sys.argv[2]; hf, hl = hot.rsplit(":", 1)
def walk(n):
    if n["frame"].startswith("Clrtap.Lines.Hot::Spin in "):
        got = "%s:%d" % (n["file"], n["line"])
        if not n["children"] and n["file"] == hf and int(hl) - 2 <= n["line"] <= int(hl):
            return hot
        return got
    for c in n["children"]:
        r = walk(c)
        if r:
            return r
print(([r for r in map(walk, json.loads(sys.argv[1])["tree"]) if r] + [""])[0])' "$OUT" "$HOT")" "$HOT"
	if [ "$v" = debug ]; then
		# Another build's PDB under the assembly's name: refused, said once, never used.
		cp "$ROOT/tests/data/pdb/lines-debug.pdb" "$WORK/$v/lines.pdb"
		expect_exit "mismatch: analyze exceptions --lines" 0 "$CLRTAP" analyze -p "$FIX_PID" exceptions -d 0.5 --lines
		contains "mismatch: the frame says why it has no line" "$OUT" \
			"Clrtap.Lines.Thrower::ThrowIt (no line: PDB does not match the assembly)"
		equals "mismatch: one warning line" "$(grep -c 'its PDB does not match the assembly' "$WORK/stderr")" 1
		lacks "mismatch: no line from it" "$OUT" "Program.cs:line"
		expect_exit "mismatch: profile --lines" 0 "$CLRTAP" profile -p "$FIX_PID" -d 0.5 --lines -o "$WORK/mm.folded"
		contains "mismatch: profile says it" "$ERR" "$WORK/$v/lines.dll: its PDB does not match the assembly"
		check "mismatch: no line in the profile" bash -c "! grep -q 'Program.cs:line' '$WORK/mm.folded'"
	fi
	stop_fixture "$FIX_PID"
done

finish
