#!/usr/bin/env bash
# CPU per ASP.NET Core endpoint (issue 29): the sample fixture's web mode
# under a load that alternates GET /api/split/a (3 units of CPU work after a
# yield) and GET /api/split/b (1 unit): profile --engine eventpipe
# --by-endpoint reports a at 75 +- 5 % and b at 25 +- 5 % of the samples tied
# to a request, puts a root frame "[endpoint] GET /api/split/a" (and b) over
# the samples, with >= 90 % of Split::Work's samples under one of them and
# the 3:1 split there too; with the perf engine it is refused. One target,
# about 8 s.
. "$(dirname "$0")/lib.sh"

PORT=$(free_port)
start_fixture web --port "$PORT"
PID=$FIX_PID
URL=http://127.0.0.1:$PORT/api/split
(while :; do curl -s "$URL/a" >/dev/null; curl -s "$URL/b" >/dev/null; done) &
KILL_PIDS+=("$!")
sleep 1 # the routes compiled, the load running

expect_exit "profile --by-endpoint" 0 "$CLRTAP" profile -p "$PID" -d 4 --engine eventpipe --by-endpoint -o "$WORK/ep.folded"
contains "the summary says how many requests began" "$OUT" "requests began;"
A=$(sed -n 's|^ *\([0-9.]*\) %.*  GET /api/split/a$|\1|p' <<<"$OUT")
B=$(sed -n 's|^ *\([0-9.]*\) %.*  GET /api/split/b$|\1|p' <<<"$OUT")
echo "    endpoints: a $A %, b $B % (work 3:1)"
check "GET /api/split/a at 75 +- 5 % ($A %)" python3 -c "import sys; sys.exit(not 70 <= float('${A:-0}') <= 80)"
check "GET /api/split/b at 25 +- 5 % ($B %)" python3 -c "import sys; sys.exit(not 20 <= float('${B:-0}') <= 30)"
R=$(python3 - "$WORK/ep.folded" <<'PY'
import sys
a = b = other = 0
for line in open(sys.argv[1]):
    st, n = line.rstrip("\n").rsplit(" ", 1)
    if "Clrtap.Fixtures.Split::Work" not in st.split(";"):
        continue
    if st.startswith("[endpoint] GET /api/split/a;"):
        a += int(n)
    elif st.startswith("[endpoint] GET /api/split/b;"):
        b += int(n)
    else:
        other += int(n)
tot = a + b + other
print(int(100 * (a + b) / tot) if tot else -1, int(100 * a / (a + b)) if a + b else -1)
PY
)
echo "    Split::Work: ${R% *} % of its samples under an endpoint root, ${R#* } % of those under a"
check "flame: >= 90 % of Split::Work's samples under an endpoint root (${R% *} %)" test "${R% *}" -ge 90
check "flame: a's share of Split::Work at 75 +- 5 (${R#* } %)" test "${R#* }" -ge 70 -a "${R#* }" -le 80
expect_exit "--by-endpoint with the perf engine" 2 "$CLRTAP" profile -p "$PID" -d 1 --engine perf --by-endpoint -o "$WORK/x.folded"
contains "--by-endpoint with the perf engine: says why" "$ERR" "--by-endpoint needs --engine eventpipe"

finish
