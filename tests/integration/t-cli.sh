#!/usr/bin/env bash
# One command line. Walks every command's option table (clrtap --help-table,
# the table --help prints) and checks: one letter means one option
# everywhere, a long name has one type and one letter everywhere, -p/-n/-d/-o/
# --json/--timeout are the same option in every command; man pages and
# completions (scripts/gen-docs.sh) hold every option. Durations take one
# syntax. The exit-code cases of docs/cmd/exit-codes.md, each asserted with
# its one stderr line and an empty stdout. doctor -o writes its file.
. "$(dirname "$0")/lib.sh"

# --- the tables -------------------------------------------------------------
"$CLRTAP" --help-table >"$WORK/cmds"
check "command table: 18 commands or more" test "$(wc -l <"$WORK/cmds")" -ge 18
: >"$WORK/opts"
while IFS=$'\t' read -r _ name subs _ _; do
	if [ "$subs" = - ]; then keys=("$name"); else keys=(); for s in $subs; do keys+=("$name $s"); done; fi
	for k in "${keys[@]}"; do
		# shellcheck disable=SC2086
		if ! "$CLRTAP" $k --help-table >"$WORK/t" 2>"$WORK/t.err"; then
			not_ok "$k --help-table" "$(cat "$WORK/t.err")"
			continue
		fi
		awk -F'\t' -v k="$k" '$1 == "opt" { print k "\t" $0 }' "$WORK/t" >>"$WORK/opts"
	done
done <"$WORK/cmds"
NOPTS=$(wc -l <"$WORK/opts")
check "option tables read ($NOPTS options)" test "$NOPTS" -ge 150

# rules over the non-deprecated options: "cmd \t opt \t short \t long \t type \t argh \t help \t dep"
RULES=$(awk -F'\t' '$8 != "deprecated" {
	cmd = $1; sh = $3; lo = $4; ty = $5
	if (sh != "-") {
		if ((sh in s2l) && s2l[sh] != lo) printf "-%s is --%s in %s but --%s in %s\n", sh, s2l[sh], s2where[sh], lo, cmd
		else { s2l[sh] = lo; s2where[sh] = cmd }
	}
	sig = (lo == "output" ? "" : ty) "/" sh   # -o: a file, or a folder (watch)
	if ((lo in l2sig) && l2sig[lo] != sig) printf "--%s is %s in %s but %s in %s\n", lo, l2sig[lo], l2where[lo], sig, cmd
	else if (!(lo in l2sig)) { l2sig[lo] = sig; l2where[lo] = cmd }
}' "$WORK/opts")
equals "one letter, one option; one long name, one type and letter" "$RULES" ""
want_sig() {
	equals "$1 is $2 in every command" \
		"$(awk -F'\t' -v l="$1" '$4 == l && $8 != "deprecated" { print $5 "/" $3 }' "$WORK/opts" | sort -u)" "$2"
}
want_sig pid pid/p
want_sig name string/n
want_sig duration duration/d
want_sig json bool/-
want_sig timeout timeout/-
equals "-o is --output everywhere" \
	"$(awk -F'\t' '$3 == "o" && $8 != "deprecated" { print $4 }' "$WORK/opts" | sort -u)" output
equals "every -d is a duration (no whole-seconds option left)" \
	"$(awk -F'\t' '$4 ~ /seconds|timeout-s/ && $8 != "deprecated"' "$WORK/opts")" ""
equals "no option help says MS (durations take units)" \
	"$(awk -F'\t' '$8 != "deprecated" && $6 == "MS"' "$WORK/opts")" ""

# --- man pages and completions hold every option --------------------------
"$ROOT/scripts/gen-docs.sh" "$CLRTAP" "$WORK/share"
MISSING=""
while IFS=$'\t' read -r k _ sh lo _ _ _ dep; do
	[ "$dep" = deprecated ] && continue
	page="$WORK/share/man/man1/clrtap-${k%% *}.1"
	grep -qF -- "\\-\\-${lo//-/\\-}" "$page" || MISSING="$MISSING man:$k:--$lo"
	grep -qF -- "--$lo" "$WORK/share/completion/clrtap.bash" || MISSING="$MISSING bash:$k:--$lo"
	grep -qF -- "-l $lo" "$WORK/share/completion/clrtap.fish" || MISSING="$MISSING fish:$k:--$lo"
done <"$WORK/opts"
equals "every option in its man page, bash and fish completion" "$MISSING" ""
check "bash completion parses" bash -n "$WORK/share/completion/clrtap.bash"
COMP=$(bash -c '. "$1"; COMP_WORDS=(clrtap profile --fr); COMP_CWORD=2; _clrtap; echo "${COMPREPLY[*]}"' _ \
	"$WORK/share/completion/clrtap.bash")
equals "bash completes 'clrtap profile --fr'" "$COMP" "--frequency"
COMP=$(bash -c '. "$1"; COMP_WORDS=(clrtap trace co); COMP_CWORD=2; _clrtap; echo "${COMPREPLY[*]}"' _ \
	"$WORK/share/completion/clrtap.bash")
equals "bash completes 'clrtap trace co'" "$COMP" "collect convert"
if command -v fish >/dev/null; then
	check "fish completion parses" fish -n "$WORK/share/completion/clrtap.fish"
fi
MAN=$(MANWIDTH=120 man -l "$WORK/share/man/man1/clrtap.1" 2>&1)
contains "clrtap(1): EXIT STATUS from exit-codes.md" "$MAN" "20 (agent library)"
contains "clrtap(1): the supported runtimes" "$MAN" "Supported runtimes: .NET 8, 9, 10, 11"
expect_exit "--version" 0 "$CLRTAP" --version
check "--version: semantic version and commit" grep -qE '^clrtap [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}' <<<"$OUT"
contains "--version: runtimes" "$OUT" ".NET 8, 9, 10, 11"
expect_exit "help --help" 0 "$CLRTAP" help --help
contains "help --help: the usage" "$OUT" "usage: clrtap <command>"

# --- the cases of exit-codes.md ----------------------------------------------
start_fixture idle
PID=$FIX_PID
sleep 100 &
NATIVE=$!
KILL_PIDS+=("$NATIVE")
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
JUNK=$WORK/junk.nettrace
head -c 2000 /dev/urandom >"$JUNK"
DIR=$WORK/out
mkdir -p "$DIR"
NOBODY="setpriv --reuid 65534 --regid 65534 --clear-groups"
export PID NATIVE DEAD JUNK DIR
NCASES=0
CODES=$(awk -F'|' '/^\| *[0-9]+ *\|/ { gsub(/ /, "", $2); print $2 }' "$ROOT/docs/cmd/exit-codes.md" | sort -un)
while IFS='|' read -r _ code cmd where _; do
	code=${code// /}
	cmd=$(sed -e 's/^ *//' -e 's/ *$//' -e 's/^`//' -e 's/`$//' <<<"$cmd")
	where=${where// /}
	if [ -z "$cmd" ]; then
		check "exit $code: asserted in $where" grep -qE "(expect_exit \"[^\"]*\" |want=|E_[A-Z]+=|\" |exit |=)$code\b" \
			"$ROOT/tests/integration/$where"
		continue
	fi
	NCASES=$((NCASES + 1))
	line=${cmd/clrtap/\"\$CLRTAP\"}
	line=${line/\$NOBODY/$NOBODY}
	OUT=$(eval "$line" 2>"$WORK/err" </dev/null)
	RC=$?
	ERR=$(cat "$WORK/err")
	if [ "$RC" = "$code" ]; then ok "exit $code: $cmd"; else not_ok "exit $code: $cmd" "got $RC" "stdout: ${OUT:0:300}" "stderr: ${ERR:0:300}"; fi
	if [ "$code" = 0 ]; then
		check "exit 0: $cmd: a result on stdout" test -n "$OUT"
		continue
	fi
	equals "exit $code: $cmd: nothing on stdout" "$OUT" ""
	# one line (an announcement of a file replaced is not an error)
	equals "exit $code: $cmd: one stderr line, 'clrtap: ...'" \
		"$(grep -v '^clrtap: note: ' <<<"$ERR" | grep -c '')/$(grep -v '^clrtap: note: ' <<<"$ERR" | grep -c '^clrtap: ')" "1/1"
done < <(sed -n '/^## Cases/,$p' "$ROOT/docs/cmd/exit-codes.md" | grep -E '^\| *[0-9]+ *\|')
check "exit-codes.md: $NCASES cases run" test "$NCASES" -ge 25
COVERED=$(sed -n '/^## Cases/,$p' "$ROOT/docs/cmd/exit-codes.md" | awk -F'|' '/^\| *[0-9]+ *\|/ { gsub(/ /, "", $2); print $2 }' | sort -un)
equals "every code of the table has a case or a test" "$COVERED" "$CODES"

# --- durations: one syntax --------------------------------------------------
for d in 5 5s 1.5 500ms 2m; do
	expect_exit "profile -d $d parses (then: no process)" 3 "$CLRTAP" profile -p "$DEAD" -d "$d"
done
expect_exit "agent -d (the old -s spelling) parses" 3 "$CLRTAP" agent run -p "$DEAD" -d 1.5
expect_exit "agent --seconds still works, deprecated" 3 "$CLRTAP" agent run -p "$DEAD" --seconds 2
contains "agent --seconds: a deprecation warning" "$ERR" "deprecated"
expect_exit "--timeout 5000 (old milliseconds) still works" 0 "$CLRTAP" info -p "$PID" --timeout 5000
contains "--timeout 5000: read as milliseconds, said" "$ERR" "read as milliseconds"
expect_exit "--timeout 2s" 0 "$CLRTAP" info -p "$PID" --timeout 2s
equals "--timeout 2s: no warning" "$ERR" ""
expect_exit "gcdump --gc-timeout 2m parses" 3 "$CLRTAP" gcdump collect -p "$DEAD" --gc-timeout 2m

# --- check before work; doctor -o ----------------------------------------
: >"$DIR/old.md"
expect_exit "doctor -o FILE over an existing file" 0 "$CLRTAP" doctor -p "$PID" -d 1 -o "$DIR/old.md"
contains "doctor -o: the existing file announced" "$ERR" "$DIR/old.md exists"
check "doctor -o: the findings written" grep -q "pid $PID" "$DIR/old.md"
equals "doctor -o: nothing on stdout" "$OUT" ""
expect_exit "doctor -o FILE.json" 0 "$CLRTAP" doctor -p "$PID" -d 0.5 -o "$DIR/d.json"
check "doctor -o .json is JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$DIR/d.json"

finish
