#!/usr/bin/env bash
# clrtap watch on the realapp fixture (ASP.NET Core, EF Core, Identity; Web
# SDK defaults), through --all: a request-duration rule among fast routes
# fires for the one slow request only and names it; a 5xx rule stays quiet
# while /api/fail answers 200 and fires once the app fails; a per-rule
# action runs for its rule only; request-rate fires under a burst of
# requests; "times 15 in 30s" fires at the 15th request of a route and
# "times 16" never; an exception rule on a nested type fires on
# /api/throw with the stack of the throw (RealApp.Ledger::Post, called by
# RealApp.Ledger::Reconcile) in the fired line and in exception.txt.
. "$(dirname "$0")/lib.sh"
need_realapp

start_realapp
# --all, matched on this test's own database path (in the command line)
"$CLRTAP" watch --all --match "$WORK/realapp-" 'request > 300ms' \
	'status 5xx do "exec:echo five-$CLRTAP_WATCH_RULE"' 'exception RealApp.Ledger+ReconcileFault' \
	'request-rate > 5 count 1 do "exec:true"' \
	'status 2xx path /api/quote times 15 in 30s do "exec:true"' 'status 2xx path /api/quote times 16 in 30s' \
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
check "the request-rate rule fires" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"rule":3,' 10 "$W"
check "no 5xx firing while /api/fail answers 200" jl_true "$WORK/ra.jsonl" \
	"not any(l['event'] == 'fired' and l['rule'] == 1 for l in L)"
equals "the app answered 200 so far" "$(realapp_stats 'd["fail_responses"]' 2>/dev/null || echo '?')" "0"
curl -s -o /dev/null -X POST "$REALAPP_URL/admin/fail?on=1"
for i in 1 2 3; do curl -s -o /dev/null "$REALAPP_URL/api/fail"; done
check "the 5xx rule fires once the app fails" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"rule":1,' 10 "$W"
curl -s -o /dev/null "$REALAPP_URL/api/throw"
check "the exception rule fires" wait_for_line "$WORK/ra.jsonl" '"event":"fired".*"trigger":"exception"' 15 "$W"
for i in $(seq 100); do
	[ "$(jl "$WORK/ra.jsonl" "sum(l['event'] == 'action-end' for l in L)")" = 5 ] && break
	sleep 0.1
done
kill -INT "$W"
wait "$W"
equals "watch exits 0 on Ctrl-C" "$?" "0"
check "the request rule fired once, for the slow request only, with its details" jl_true "$WORK/ra.jsonl" \
	"[(l['request']['method'], l['request']['path'], l['request']['query'], l['request']['status'], l['value'] > 300, l['value'] == l['request']['ms']) for l in L if l['event'] == 'fired' and l['trigger'] == 'request'] == [('GET', '/api/slow', '?ms=600', 200, True, True)]"
equals "the app served /api/quote 15 times" "$(realapp_stats 'd["requests"]["/api/quote"]' 2>/dev/null || echo '?')" "15"
check "'times 15 in 30s' on /api/quote 2xx fired once, at the 15th; 'times 16' never" jl_true "$WORK/ra.jsonl" \
	"[(l['rule'], l['request']['path'], l['window_count'], l['window_ms']) for l in L if l['event'] == 'fired' and l['rule'] in (4, 5)] == [(4, '/api/quote', 15, 30000)]"
check "no fast request met it afterwards either (no suppressed line)" jl_true "$WORK/ra.jsonl" \
	"not any(l['event'] == 'suppressed' and l['trigger'] == 'request' for l in L)"
check "the request-rate rule fired once, over 5 requests a second (Microsoft.AspNetCore.Hosting/requests-per-second)" jl_true "$WORK/ra.jsonl" \
	"[(l['trigger'], l['value'] > 5) for l in L if l['event'] == 'fired' and l['rule'] == 3] == [('counter', True)]"
check "the 5xx rule fired once (default cooldown), naming /api/fail and 500" jl_true "$WORK/ra.jsonl" \
	"[(l['request']['path'], l['request']['status'], l['value']) for l in L if l['event'] == 'fired' and l['rule'] == 1] == [('/api/fail', 500, 500)]"
check "the rules without 'do' ran --action; the others only their own" jl_true "$WORK/ra.jsonl" \
	"sorted(({f['fire']: f['rule'] for f in L if f['event'] == 'fired'}[l['fire']], l['argv'][2]) for l in L if l['event'] == 'action-start') == [(0, 'echo global-\$CLRTAP_WATCH_RULE'), (1, 'echo five-\$CLRTAP_WATCH_RULE'), (2, 'echo global-\$CLRTAP_WATCH_RULE'), (3, 'true'), (4, 'true')]"
FIVE=$(jl "$WORK/ra.jsonl" "[l['fire'] for l in L if l['event'] == 'fired' and l['rule'] == 1][0]")
check "the 5xx rule's action ran for rule 1" grep -qx "five-1" "$WORK/ra/$FIVE-exec-$REALAPP_PID/stdout.txt"
EXC=$(jl "$WORK/ra.jsonl" "[l['fire'] for l in L if l['event'] == 'fired' and l['rule'] == 2][0]")
check "the exception firing: the type the runtime names, the message, the stack of the throw" jl_true "$WORK/ra.jsonl" \
	"[(l['type'], l['message'], l['stack'][:2]) for l in L if l['event'] == 'fired' and l['trigger'] == 'exception'] == [('ReconcileFault', 'ledger out of balance by 3', ['RealApp.Ledger::Post', 'RealApp.Ledger::Reconcile'])]"
check "exception.txt in its action's folder holds the throw" python3 -c '
import sys; l = open(sys.argv[1]).read().splitlines()
sys.exit(0 if l[:3] == ["ReconcileFault: ledger out of balance by 3", "   at RealApp.Ledger::Post", "   at RealApp.Ledger::Reconcile"] else 1)' \
	"$WORK/ra/$EXC-exec-$REALAPP_PID/exception.txt"
equals "the app threw exactly once" "$(realapp_stats 'd["reconcile_faults"]' 2>/dev/null || echo '?')" "1"

expect_exit "a request rule with 'for'" 2 "$CLRTAP" watch -p 1 'request > 1s for 2s'
expect_exit "'times' without 'in'" 2 "$CLRTAP" watch -p 1 'status 5xx times 3'
contains "says what it needs" "$ERR" "'times' needs N"

finish
