#!/usr/bin/env bash
# clrtap watch on the realapp fixture (ASP.NET Core, EF Core, Identity; Web
# SDK defaults), through --all: a request-duration rule among fast routes
# fires for the one slow request only and names it; a 5xx rule stays quiet
# while /api/fail answers 200 and fires once the app fails; a per-rule
# action runs for its rule only; an exception rule on a nested type fires on
# /api/throw with the stack of the throw (RealApp.Ledger::Post, called by
# RealApp.Ledger::Reconcile) in the fired line and in exception.txt.
. "$(dirname "$0")/lib.sh"
need_realapp

start_realapp
# --all, matched on this test's own database path (in the command line)
"$CLRTAP" watch --all --match "$WORK/realapp-" 'request > 300ms' \
	'status 5xx do "exec:echo five-$CLRTAP_WATCH_RULE"' 'exception RealApp.Ledger+ReconcileFault' \
	--action 'exec:echo global-$CLRTAP_WATCH_RULE' -o "$WORK/ra" -d 60 >"$WORK/ra.jsonl" 2>"$WORK/ra.err" &
W=$!
check "--all watches the realapp" wait_for_line "$WORK/ra.jsonl" "\"event\":\"watching\",\"pid\":$REALAPP_PID," 10 "$W"
sleep 2.5 # the EventPipe session is up well within this
for i in $(seq 10); do
	curl -s -o /dev/null "$REALAPP_URL/api/quote?sku=SKU1&qty=2"
	curl -s -o /dev/null "$REALAPP_URL/api/fail"
	curl -s -o /dev/null "$REALAPP_URL/api/slow?ms=5"
done
curl -s -o /dev/null "$REALAPP_URL/api/slow?ms=600"
for i in $(seq 5); do curl -s -o /dev/null "$REALAPP_URL/api/quote?sku=SKU1&qty=2"; done
check "the request rule fires" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"trigger":"request"' 10 "$W"
sleep 1
check "no 5xx firing while /api/fail answers 200" jl_true "$WORK/ra.jsonl" \
	"not any(l['event'] == 'fired' and l['trigger'] == 'status' for l in L)"
equals "the app answered 200 so far" "$(realapp_stats 'd["fail_responses"]' 2>/dev/null || echo '?')" "0"
curl -s -o /dev/null -X POST "$REALAPP_URL/admin/fail?on=1"
for i in 1 2 3; do curl -s -o /dev/null "$REALAPP_URL/api/fail"; done
check "the 5xx rule fires once the app fails" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"trigger":"status"' 10 "$W"
curl -s -o /dev/null "$REALAPP_URL/api/throw"
check "the exception rule fires" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"trigger":"exception"' 15 "$W"
wait_for_line "$WORK/ra.jsonl" '"event":"action-end".*"fire":3,' 10 "$W" >/dev/null
kill -INT "$W"
wait "$W"
check "the request rule fired once, for the slow request only, with its details" jl_true "$WORK/ra.jsonl" \
	"[(l['request']['method'], l['request']['path'], l['request']['query'], l['request']['status'], l['value'] >= 600) for l in L if l['event'] == 'fired' and l['trigger'] == 'request'] == [('GET', '/api/slow', '?ms=600', 200, True)]"
check "no fast request met it afterwards either (no suppressed line)" jl_true "$WORK/ra.jsonl" \
	"not any(l['event'] == 'suppressed' and l['trigger'] == 'request' for l in L)"
check "the 5xx rule fired once (default cooldown), naming /api/fail and 500" jl_true "$WORK/ra.jsonl" \
	"[(l['request']['path'], l['request']['status'], l['value']) for l in L if l['event'] == 'fired' and l['trigger'] == 'status'] == [('/api/fail', 500, 500)]"
check "the rule without 'do' ran --action; the 5xx rule only its own" jl_true "$WORK/ra.jsonl" \
	"sorted((l['fire'], l['argv'][2]) for l in L if l['event'] == 'action-start') == [(1, 'echo global-\$CLRTAP_WATCH_RULE'), (2, 'echo five-\$CLRTAP_WATCH_RULE'), (3, 'echo global-\$CLRTAP_WATCH_RULE')]"
check "the 5xx rule's action ran for rule 1" grep -qx "five-1" "$WORK/ra/2-exec-$REALAPP_PID/stdout.txt"
check "the exception firing: the type the runtime names, the message, the stack of the throw" jl_true "$WORK/ra.jsonl" \
	"[(l['type'], l['message'], l['stack'][:2]) for l in L if l['event'] == 'fired' and l['trigger'] == 'exception'] == [('ReconcileFault', 'ledger out of balance by 3', ['RealApp.Ledger::Post', 'RealApp.Ledger::Reconcile'])]"
check "exception.txt in its action's folder holds the throw" python3 -c '
import sys; l = open(sys.argv[1]).read().splitlines()
sys.exit(0 if l[:3] == ["ReconcileFault: ledger out of balance by 3", "   at RealApp.Ledger::Post", "   at RealApp.Ledger::Reconcile"] else 1)' \
	"$WORK/ra/3-exec-$REALAPP_PID/exception.txt"
equals "the app threw exactly once" "$(realapp_stats 'd["reconcile_faults"]' 2>/dev/null || echo '?')" "1"

expect_exit "a request rule with 'for'" 2 "$CLRTAP" watch -p 1 'request > 1s for 2s'
expect_exit "'times' without 'in'" 2 "$CLRTAP" watch -p 1 'status 5xx times 3'
contains "says what it needs" "$ERR" "'times' needs N"

finish
