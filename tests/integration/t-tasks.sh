#!/usr/bin/env bash
# The task table (lib/task) is the one source of the kinds and their
# defaults. build/tests/clrtap-tdef is clrtap with ONE default of the table
# changed (doctor's duration, 10 -> 7: Makefile, TDEF); its --help, its
# served openapi.json and GET /api/v1/tasks must all say 7 where clrtap says
# 10 (the UI's form: t-ui.sh). And the hidden child command of task_spawn
# is not offered to people and refuses to run by hand. No .NET process.
. "$(dirname "$0")/lib.sh"

TDEF=$(dirname "$CLRTAP")/tests/clrtap-tdef
if [ ! -x "$TDEF" ]; then
	not_ok "build/tests/clrtap-tdef built (make all)"
	finish
fi

# --help of a task-backed command shows the table's default
contains "doctor --help: the table's default (10s)" "$("$CLRTAP" doctor --help)" "how long to watch the process (default 10s; 0: until Ctrl-C)"
contains "clrtap-tdef doctor --help: the changed default (7s)" "$("$TDEF" doctor --help)" "how long to watch the process (default 7s; 0: until Ctrl-C)"

# serve: openapi.json and /api/v1/tasks from the table, of each binary
for bin in "$CLRTAP" "$TDEF"; do
	want=10
	[ "$bin" = "$TDEF" ] && want=7
	port=$(free_port)
	"$bin" serve --listen "127.0.0.1:$port" --db "$WORK/s-$want.db" >"$WORK/serve-$want.log" 2>&1 &
	KILL_PIDS+=("$!")
	if ! wait_for_line "$WORK/serve-$want.log" 'listening on' 30 "$!"; then
		not_ok "$(basename "$bin") serve started" "$(cat "$WORK/serve-$want.log")"
		continue
	fi
	tok=$(sed -n 's/^clrtap serve: token \([0-9a-f]*\) .*/\1/p' "$WORK/serve-$want.log")
	curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/openapi.json" >"$WORK/openapi-$want.json"
	curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/tasks" >"$WORK/tasks-$want.json"
	check "$(basename "$bin"): openapi's kinds are the table's names, its x-clrtap-tasks the table, doctor's duration default $want" \
		python3 - "$WORK/openapi-$want.json" "$WORK/tasks-$want.json" "$want" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
tab = json.load(open(sys.argv[2]))
names = [t["name"] for t in tab["tasks"]]
kinds = doc["components"]["schemas"]["SessionRequest"]["properties"]["kind"]["enum"]
assert kinds == names, (kinds, names)
assert doc["x-clrtap-tasks"] == tab, "x-clrtap-tasks is not GET /api/v1/tasks"
assert "/api/v1/tasks" in doc["paths"]
assert names == sorted(names) and {"analyze", "counters", "doctor", "probe", "profile", "stacks", "trace"} <= set(names), names
doctor = [t for t in tab["tasks"] if t["name"] == "doctor"][0]
dur = [p for p in doctor["params"] if p["name"] == "duration"][0]
assert dur["default"] == sys.argv[3] and dur["type"] == "duration", dur
EOF
done

# the hidden child command
"$CLRTAP" --list-cmds >"$WORK/cmds"
check "__task is not in --list-cmds" bash -c "! grep -q __task '$WORK/cmds'"
check "__task is not in --help" bash -c "! '$CLRTAP' --help | grep -q __task"
"$CLRTAP" __task doctor 3<&- 4<&- 2>"$WORK/child.err"
equals "__task by hand: usage error (exit 2)" "$?" 2
contains "__task by hand: says it is clrtap's own" "$(cat "$WORK/child.err")" "__task is run by clrtap itself"
finish
