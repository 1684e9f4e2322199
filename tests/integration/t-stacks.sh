#!/usr/bin/env bash
# clrtap stacks: the managed stack of every thread, merged. The `blocked`
# fixture has 5 threads in Blocker::WaitHere and 1 in
# OtherBlocker::WaitElsewhere: the tree groups them 5 and 1, on the host and
# in a namespaced fixture; --json parses and says the same; errors.
. "$(dirname "$0")/lib.sh"

# json_stacks FILE PYTHON-EXPR: d is the document; node(name) finds the first
# tree node with that frame name (depth first); leaf_tids(n) the thread ids
# that end at or below n.
json_stacks() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def walk(ns):
    for n in ns:
        yield n
        yield from walk(n["children"])
def node(name):
    return next((n for n in walk(d["tree"]) if n["frame"] == name), None)
def leaf_tids(n):
    return sorted(t["tid"] for m in walk([n]) for t in m["threads"])
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(d)[:1500], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

BLOCKER="Clrtap.Fixtures.Blocker::WaitHere"
OTHER="Clrtap.Fixtures.OtherBlocker::WaitElsewhere"

# tids of the fixture's named threads, as the target sees them
ns_tids() { # PID NAME-PREFIX
	local t
	for t in /proc/"$1"/task/*; do
		if grep -q "^Name:[[:space:]]*$2" "$t/status" 2>/dev/null; then
			awk '/^NSpid:/ { print $NF }' "$t/status"
		fi
	done | sort -n | tr '\n' ' ' | sed 's/ $//'
}

check_blocked() { # LABEL
	local label=$1 blockers others
	blockers=$(ns_tids "$FIX_PID" blocker-)
	others=$(ns_tids "$FIX_PID" other-)
	expect_exit "$label: stacks" 0 "$CLRTAP" stacks -p "$FIX_PID"
	check "$label: 5 threads under $BLOCKER" bash -c 'grep -qE "^ +5  .*$1$" <<<"$2"' _ "$BLOCKER" "$OUT"
	check "$label: 1 thread under $OTHER" bash -c 'grep -qE "^ +1  .*$1$" <<<"$2"' _ "$OTHER" "$OUT"
	contains "$label: the five blockers are listed by name" "$OUT" "(blocker-5)"
	contains "$label: other-1 listed" "$OUT" "(other-1)"
	expect_exit "$label: stacks --json" 0 "$CLRTAP" stacks -p "$FIX_PID" --json
	printf '%s\n' "$OUT" >"$WORK/st.json"
	check "$label json: $BLOCKER has count 5" json_stacks "$WORK/st.json" "node('$BLOCKER')['count'] == 5"
	check "$label json: $OTHER has count 1" json_stacks "$WORK/st.json" "node('$OTHER')['count'] == 1"
	check "$label json: the blocker group holds exactly the blocker-N threads ($blockers)" json_stacks "$WORK/st.json" \
		"' '.join(map(str, leaf_tids(node('$BLOCKER')))) == '$blockers'"
	check "$label json: the other group holds other-1 ($others)" json_stacks "$WORK/st.json" \
		"' '.join(map(str, leaf_tids(node('$OTHER')))) == '$others'"
	check "$label json: both groups share one parent with count >= 6" json_stacks "$WORK/st.json" \
		"any(p['count'] >= 6 and {c['frame'] for c in p['children']} >= {'$BLOCKER', '$OTHER'} for p in walk(d['tree']))"
	check "$label json: each blocker's own frames name WaitHere" json_stacks "$WORK/st.json" \
		"sorted(t['tid'] for t in d['threads'] if '$BLOCKER' in t['frames']) == leaf_tids(node('$BLOCKER'))"
	check "$label json: counts add up (root counts = threads with managed frames)" json_stacks "$WORK/st.json" \
		"sum(r['count'] for r in d['tree']) == d['threads_with_managed_frames'] and d['threads_with_managed_frames'] >= 7"
}

# 1. On the host.
start_fixture blocked
check_blocked "host"
# the target is untouched: a second run gives the same grouping
expect_exit "host: second run" 0 "$CLRTAP" stacks -p "$FIX_PID"
check "host: second run, 5 again" bash -c 'grep -qE "^ +5  .*$1$" <<<"$2"' _ "$BLOCKER" "$OUT"
expect_exit "host: --no-names" 0 "$CLRTAP" stacks -p "$FIX_PID" --no-names
lacks "host: --no-names has no thread names" "$OUT" "(blocker-1)"
stop_fixture "$FIX_PID"

# 2. In its own PID + mount namespace.
start_fixture_ns blocked
check_blocked "namespaced"

# 3. Errors.
sh -c 'exit 0' &
DEAD=$!
wait "$DEAD"
expect_exit "dead pid" 3 "$CLRTAP" stacks -p "$DEAD"
sleep 30 &
NOTNET=$!
KILL_PIDS+=("$NOTNET")
expect_exit "not a .NET process" 4 "$CLRTAP" stacks -p "$NOTNET"
expect_exit "bad --sample" 2 "$CLRTAP" stacks -p "$FIX_PID" --sample 0
expect_exit "stray argument" 2 "$CLRTAP" stacks -p "$FIX_PID" extra
finish
