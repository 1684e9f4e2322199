#!/usr/bin/env bash
# clrtap on a real app (tests/fixtures/realapp: ASP.NET Core + EF Core over
# SQLite + Identity bearer tokens, Web SDK defaults), one process for every
# check, counts compared with what the app itself counted (GET /stats).
#  - probe on a generic, async, virtual framework method in ReadyToRun code
#    (UserManager`1<__Canon>::FindByIdAsync): its precompiled code is found and
#    every call counted, on R2R code and, under wrk load, on tier-1 code;
#  - probe on a static (string, int) method returning decimal at
#    OptimizedTier1 under load (Pricing::Quote): exact arguments and value;
#  - --list with a type pattern ('RealApp.*').
. "$(dirname "$0")/lib.sh"

need_realapp
HWBP=$("$TOOLS/hwbpcheck")
echo "    this machine: hardware execute breakpoints: $HWBP"
# Defaults, but tier-up without the call-counting delay: a method reaches its
# last tier within the first second of load (not after minutes of a busy
# machine's "startup-like activity"), so no new code version appears while counting.
start_realapp DOTNET_TC_CallCountingDelayMs=0
check "realapp: bearer token from /login" realapp_login
ME=$(curl -s -H "Authorization: Bearer $REALAPP_TOKEN" "$REALAPP_URL/api/me")
UID_=$(json_get "$ME" 'd["id"]')
FBI='Microsoft.AspNetCore.Identity.UserManager`1::FindByIdAsync'

# probe_start OUT ARGS...: a probe in the background, armed when it returns (PROBE = its pid)
probe_start() {
	local out=$1
	shift
	"$CLRTAP" probe -p "$REALAPP_PID" "$@" >"$WORK/$out.out" 2>"$WORK/$out.err" &
	PROBE=$!
	wait_for_line "$WORK/$out.err" 'tracing|nothing to trace' 30 "$PROBE" >/dev/null
}
# probe_under_load OUT PATH STAT ARGS...: probe ARGS while wrk loads PATH for
# 2 s; n = how much the app's /stats STAT grew meanwhile, E = probe's stderr
probe_under_load() {
	local out=$1 path=$2 stat=$3 s0
	shift 3
	probe_start "$out" -d 60 "$@"
	s0=$(realapp_stats "d[\"$stat\"]")
	realapp_load 2 "$path" 4
	n=$(($(realapp_stats "d[\"$stat\"]") - s0))
	probe_stop
	E=$(cat "$WORK/$out.err")
}
# warm_until PATH METHOD TIER [stable]: load on PATH until METHOD has TIER
# code, or with "stable" also until its code versions stop changing (at most 6 s)
warm_until() {
	local t cur prev=""
	for ((t = 0; t < 6; t++)); do
		realapp_load 1 "$1" 4
		cur=$("$CLRTAP" probe -p "$REALAPP_PID" --list "$2" 2>/dev/null | grep -E '^    JIT ')
		grep -qE " $3( \[.*\])?\$" <<<"$cur" && return 0
		[ "${4:-}" = stable ] && [ -n "$cur" ] && [ "$cur" = "$prev" ] && return 0
		prev=$cur
	done
	return 1
}
probe_stop() {
	kill -INT "$PROBE" 2>/dev/null
	wait "$PROBE"
}

# ---- FindByIdAsync on its ReadyToRun code (shared generic code over __Canon) ----
expect_exit "FindByIdAsync: --list" 0 "$CLRTAP" probe -p "$REALAPP_PID" --list "$FBI"
check "FindByIdAsync: its precompiled code for [System.__Canon] found (InstanceMethodEntryPoints)" \
	grep -qE '^    R2R  .*/Microsoft\.Extensions\.Identity\.Core\.dll\+0x[0-9a-f]+ size [0-9]+ addr 0x[0-9a-f]+ \[System\.__Canon\]$' <<<"$OUT"
UP=$("$CLRTAP" probe -p "$REALAPP_PID" --list 'System.Convert::ToString(int32,int32)' 2>&1 | grep -o 'uprobe ([a-z ]*)' | head -1)
probe_start r2r -d 60 --args --ret "$FBI"
s0=$(realapp_stats 'd["find_by_id_calls"]')
# 20 calls: fewer than the 30 that make the runtime tier a method up, so all run the R2R code
for ((i = 0; i < 20; i++)); do
	curl -s -o /dev/null -H "Authorization: Bearer $REALAPP_TOKEN" "$REALAPP_URL/api/me"
done
n=$(($(realapp_stats 'd["find_by_id_calls"]') - s0))
probe_stop
E=$(cat "$WORK/r2r.err")
equals "FindByIdAsync (R2R): the app made 20 calls" "$n" 20
if [ "$UP" = "uprobe (fires here)" ]; then
	contains "FindByIdAsync (R2R): every call counted (calls == the app's count)" "$E" \
		"FindByIdAsync(string): $n calls"
	contains "FindByIdAsync (R2R): on its ReadyToRun code, by uprobe" "$E" "[ReadyToRun] $n calls (uprobe)"
	equals "FindByIdAsync (R2R): one line per call" "$(wc -l <"$WORK/r2r.out")" "$n"
	equals "FindByIdAsync (R2R): the user id argument decoded on every call" \
		"$(grep -cF "FindByIdAsync(this=0x" "$WORK/r2r.out" | tr -d ' ')/$(grep -cF "userId=\"$UID_\") = " "$WORK/r2r.out")" "$n/$n"
	check "FindByIdAsync (R2R): the returned Task object shown" \
		grep -qE "userId=\"$UID_\"\) = System\.Threading\.Tasks\.Task\`1\[!0\]@0x[0-9a-f]+ " "$WORK/r2r.out"
else
	contains "FindByIdAsync (R2R): uprobes do not fire here: said, no count" "$E" "NOT"
fi
lacks "FindByIdAsync (R2R): no false zero" "$E" ": 0 calls"

# ---- under load, once tiered up (JIT code of UserManager`1[System.__Canon]) ----
check "FindByIdAsync: tiered up under load (JIT code, versions stable)" warm_until /api/me "$FBI" OptimizedTier1 stable
probe_under_load load /api/me find_by_id_calls --count "$FBI"
check "FindByIdAsync under load: the app made calls" test "$n" -gt 50
if [[ $HWBP == fires* ]]; then
	contains "FindByIdAsync under load: calls == the app's count ($n)" "$E" "FindByIdAsync(string): $n calls"
else
	contains "FindByIdAsync under load: JIT code not watchable here: said" "$E" "NOT"
fi
lacks "FindByIdAsync under load: no false zero" "$E" ": 0 calls"

# ---- Pricing::Quote(string, int) -> decimal at OptimizedTier1, under load ----
Q="/api/quote?sku=SKU7&qty=3"
check "Quote: tiered up to OptimizedTier1 under load" warm_until "$Q" 'RealApp.Pricing::Quote' OptimizedTier1
WANT=$(curl -s "$REALAPP_URL$Q")
probe_under_load quote "$Q" quote_calls --args --ret --latency 'RealApp.Pricing::Quote'
check "Quote: the app made calls" test "$n" -gt 50
if [[ $HWBP == fires* ]]; then
	contains "Quote: calls == the app's count ($n)" "$E" "RealApp.Pricing::Quote(string, int32): $n calls"
	equals "Quote: every call at OptimizedTier1 with exact arguments and decimal value ($WANT)" \
		"$(grep -cE "^[0-9:.]+ tid=[0-9]+ RealApp\.Pricing::Quote\(sku=\"SKU7\", qty=3\) = $WANT [0-9.]+(us|ms) \[OptimizedTier1\]$" "$WORK/quote.out")" "$n"
	lacks "Quote: no unexplained ?" "$(cat "$WORK/quote.out")" "?"
else
	contains "Quote: JIT code not watchable here: said" "$E" "NOT"
fi

# ---- --list with a type pattern ----
expect_exit "--list 'RealApp.*' (a type pattern, no '::')" 0 "$CLRTAP" probe -p "$REALAPP_PID" --list 'RealApp.*'
contains "--list 'RealApp.*': RealApp.Pricing::Quote listed" "$OUT" "RealApp.Pricing::Quote(string, int32) System.Decimal [realapp]"
contains "--list 'RealApp.*': RealApp.Accounts::GetProfileAsync listed" "$OUT" "RealApp.Accounts::GetProfileAsync(string)"
expect_exit "--list 'RealApp.Pricing': that type's methods only" 0 "$CLRTAP" probe -p "$REALAPP_PID" --list 'RealApp.Pricing'
equals "--list 'RealApp.Pricing': Quote and SkuNumber" "$(grep -oE '^RealApp\.Pricing::[A-Za-z]+' <<<"$OUT" | sort | tr '\n' ' ')" "RealApp.Pricing::Quote RealApp.Pricing::SkuNumber "
finish
