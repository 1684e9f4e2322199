#!/usr/bin/env bash
# The web UI of clrtap serve in a real browser: Debian's chromium driven by
# npm's playwright-core (tests/ui/ui.mjs; installed by tests/ui/setup.sh with
# `npm ci` from the committed lock file, once). Against a real server and real
# fixtures: the process list (a namespaced fixture marked as a container), a
# 3 s profile whose flame graph names the hot method, a download checked
# byte for byte, an exceptions analysis with the exact count, a doctor session
# with its findings (every analyzer offered by the form), a live counter
# that changes, the differential flame graph of two profiles; and in the same
# browser, a page of another loopback port that tries fetch and form POSTs
# against serve, and a DNS-rebinding name for its address (all refused).
# Screenshots: build/test-output/t-ui/ (UI_OUT to change).
. "$(dirname "$0")/lib.sh"

O=$(dirname "$CLRTAP")
UI_OUT=${UI_OUT:-$O/test-output/t-ui}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	not_ok "node and npm present" "scripts/install-deps.sh installs nodejs"
	finish
fi
# take_lines FILE: the node scripts' "ok NAME" / "not ok NAME" lines as this test's
take_lines() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok "${line#ok }" ;;
		"not ok "*) not_ok "${line#not ok }" ;;
		*) printf '%s\n' "$line" ;;
		esac
	done <"$1"
}

# flame.js's parsers and trees, in node (no browser)
node "$ROOT/tests/ui/flame-unit.mjs" >"$WORK/unit.out" 2>&1
rc=$?
take_lines "$WORK/unit.out"
[ "$rc" -ne 0 ] && ! grep -q '^not ok' "$WORK/unit.out" && not_ok "flame-unit.mjs ran (exit $rc)"

if [ ! -x /usr/bin/chromium ]; then
	not_ok "Debian's chromium at /usr/bin/chromium" "scripts/install-deps.sh installs chromium"
	finish
fi
if ! NPM_DIR=$("$ROOT/tests/ui/setup.sh" "$O" 2>"$WORK/npm.err"); then
	not_ok "npm ci of tests/ui (playwright-core)" "$(tail -20 "$WORK/npm.err")"
	finish
fi
ok "playwright-core installed from the lock file ($(node -p "require('$NPM_DIR/node_modules/playwright-core/package.json').version"))"

start_fixture cpu-split
CPU_PID=$FIX_PID
WEB_PORT=$(free_port)
start_fixture web --port "$WEB_PORT"
WEB_PID=$FIX_PID
start_fixture_ns idle
NS_PID=$FIX_PID
HOSTILE_LABEL='<img src=x onerror=alert(1)><b>bold</b><script>alert(2)</script>'
start_fixture hostile --label "$HOSTILE_LABEL"
HOSTILE_PID=$FIX_PID

SPORT=$(free_port)
"$CLRTAP" serve --listen "127.0.0.1:$SPORT" --db "$WORK/serve.db" >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
KILL_PIDS+=("$SERVE_PID")
if ! wait_for_line "$WORK/serve.log" 'listening on' 30 "$SERVE_PID"; then
	not_ok "clrtap serve started" "$(cat "$WORK/serve.log")"
	finish
fi
# the per-start token it printed (loopback too): the UI is opened at .../?token=T
SERVE_TOKEN=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$WORK/serve.log")

# a second server with a token in force (loopback, --token-file)
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$TOKEN" >"$WORK/token"
chmod 600 "$WORK/token"
TPORT=$(free_port)
"$CLRTAP" serve --listen "127.0.0.1:$TPORT" --token-file "$WORK/token" --db "$WORK/serve-tok.db" >"$WORK/serve-tok.log" 2>&1 &
KILL_PIDS+=("$!")
if ! wait_for_line "$WORK/serve-tok.log" 'listening on' 30 "$!"; then
	not_ok "clrtap serve --token-file started" "$(cat "$WORK/serve-tok.log")"
	finish
fi

# a third server from build/tests/clrtap-tdef: the task table with doctor's
# duration default changed to 7 (Makefile, TDEF): the UI must show 7 there
TDEF_PORT=$(free_port)
"$O/tests/clrtap-tdef" serve --listen "127.0.0.1:$TDEF_PORT" --db "$WORK/serve-tdef.db" >"$WORK/serve-tdef.log" 2>&1 &
KILL_PIDS+=("$!")
if ! wait_for_line "$WORK/serve-tdef.log" 'listening on' 30 "$!"; then
	not_ok "clrtap-tdef serve started" "$(cat "$WORK/serve-tdef.log")"
	finish
fi
TDEF_TOKEN=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$WORK/serve-tdef.log")
# a probe target for the call records
start_fixture probe-warm --calls 5 --interval-ms 2 --trigger "$WORK/trig-probe"
PROBE_PID=$FIX_PID

rm -rf "$UI_OUT"
mkdir -p "$UI_OUT"
UI_NPM=$NPM_DIR BASE="http://127.0.0.1:$SPORT" SERVE_TOKEN=$SERVE_TOKEN OUT="$UI_OUT" CPU_PID=$CPU_PID WEB_PID=$WEB_PID WEB_PORT=$WEB_PORT \
	NS_PID=$NS_PID HOSTILE_PID=$HOSTILE_PID HOSTILE_LABEL=$HOSTILE_LABEL BASE_TOK="http://127.0.0.1:$TPORT" TOKEN=$TOKEN \
	BASE_TDEF="http://127.0.0.1:$TDEF_PORT" TDEF_TOKEN=$TDEF_TOKEN PROBE_PID=$PROBE_PID PROBE_TRIGGER="$WORK/trig-probe" SESSIONS_DIR="$WORK/sessions" timeout 600 node "$ROOT/tests/ui/ui.mjs" >"$WORK/ui.out" 2>&1
rc=$?
take_lines "$WORK/ui.out"
if [ "$rc" -ne 0 ] && [ "$FAILED" -eq 0 ]; then
	not_ok "the browser test ran to its end (exit $rc)" "$(tail -20 "$WORK/ui.out")"
fi
check "clrtap serve still running after the browser test" kill -0 "$SERVE_PID"
echo "# screenshots: $UI_OUT"
finish
