#!/usr/bin/env bash
# Store load and top-up latency with several nodes (DESIGN.md §5 "Store load"): a
# redis-server, an nginx origin and three waitroomd nodes sharing one room through Redis.
# Nodes 1 and 2 carry a steady, paced mix of new and returning visitors (one wrk each, a Lua
# script with a fixed delay per connection); node 3 only carries a probe: one new visitor at a
# time, classed by whether it made the node ask Redis for a top-up (the node's top-up counter
# moved), next to a returning visitor as the baseline. Runs once per request rate and prints:
#   - store calls per node per minute: Redis `INFO commandstats` (evalsha + eval calls) and
#     each node's /metrics (syncs = waitroom_store_sync_duration_seconds_count, top-ups =
#     waitroom_room_lease_top_ups_total), before/after;
#   - the probe's latency: new visitor with a top-up, new visitor without, returning visitor.
#   bench/multinode.sh [BUILD_DIR] [DURATION_S] [RATES]     # defaults: build 60 "250 1000"
# RATES is the total req/s over nodes 1 and 2, one run each. NEW_SHARE (default 0.2) is the
# share of requests from new visitors. Needs redis-server, nginx-light, wrk, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
secs="${2:-60}"
rates="${3:-250 1000}"
new_share="${NEW_SHARE:-0.2}"
command -v redis-server >/dev/null || { echo "needs redis-server (scripts/install-deps.sh)" >&2; exit 1; }

. bench/lib.sh
require_waitroomd "$build"
require_tools wrk nginx curl

nodes=3
redis_port=$(free_port); origin_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize no --loglevel warning > "$work/redis.log" 2>&1 &
pids+=($!)
start_origin "$origin_port"
wait_port "$redis_port"; wait_port "$origin_port"

# One key for every node: each must read the cookies the others issue.
"$waitroomd" keygen > "$work/k1.key"
chmod 600 "$work/k1.key"
port=(); admin=()
for i in $(seq 1 $nodes); do
  port[i]=$(free_port); admin[i]=$(free_port)
  # Limits far above the load: every new visitor needs a slot (lease or top-up), none queues.
  cat > "$work/node-$i.yaml" <<CONF
listen: ["127.0.0.1:${port[i]}"]
# One load generator, one address: no per-client cap.
origin: {url: "http://127.0.0.1:$origin_port", max_connections: 64, max_connections_per_client: 0}
node: {id: node-$i}
threads: 1
admin: {listen: "127.0.0.1:${admin[i]}"}
logging: {level: warn}
cookie: {keys: [{id: k1, secret_file: "$work/k1.key"}]}
state: {backend: redis, url: "redis://127.0.0.1:$redis_port/0", sync_interval: 1s}
rooms:
  - id: bench
    name: Bench
    total_active_users: 100000000
    new_users_per_minute: 100000000
    session_duration: 1h
CONF
  "$waitroomd" -c "$work/node-$i.yaml" > "$work/node-$i.log" 2>&1 &
  pids+=($!)
done
for i in $(seq 1 $nodes); do wait_port "${port[i]}"; wait_port "${admin[i]}"; done

# Paced mixed traffic: NEW_SHARE of the requests carry no cookie (new visitors), the rest
# replay a cookie the gateway set earlier (returning visitors). wrk's delay() spaces each
# connection's requests, so rate ≈ connections × 1000 / (DELAY_MS + latency).
cat > "$work/mixed.lua" <<'LUA'
local new_share = tonumber(os.getenv("NEW_SHARE") or "0.2")
local delay_ms = tonumber(os.getenv("DELAY_MS") or "10")
local jar, n = {}, 0
function delay() return delay_ms end
function request()
  if n == 0 or math.random() < new_share then
    return wrk.format("GET", "/64")
  end
  return wrk.format("GET", "/64", {["Cookie"] = jar[math.random(n)]})
end
function response(status, headers, body)
  local sc = headers["Set-Cookie"] or headers["set-cookie"]
  if sc then
    local c = sc:match("^([^;]+)")
    if n < 2000 then n = n + 1; jar[n] = c else jar[math.random(n)] = c end
  end
end
LUA

metrics() { curl -s "http://127.0.0.1:${admin[$1]}/metrics"; }
metric_sum() { awk -v m="$2" '$1 ~ "^"m"([{]|$)" {s += $2} END {printf "%d", s}' <<<"$1"; }
store_calls() {
  redis-cli -p "$redis_port" info commandstats | tr -d '\r' |
    awk -F'[:=,]' '$1=="cmdstat_evalsha" || $1=="cmdstat_eval" {s += $3} END {printf "%d", s}'
}

# The probe on node 3: every 200 ms one new visitor (no cookie), classed by whether the node's
# top-up counter moved during it, and one returning visitor with an admitted cookie.
probe() {
  local until=$1 out=$2 before after t cookie
  cookie=$(curl -s -D - -o /dev/null "http://127.0.0.1:${port[3]}/64" | tr -d '\r' |
           awk -F': ' 'tolower($1)=="set-cookie"{split($2,a,";"); print a[1]; exit}')
  while (( $(date +%s) < until )); do
    before=$(metric_sum "$(metrics 3)" waitroom_room_lease_top_ups_total)
    t=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:${port[3]}/64")
    after=$(metric_sum "$(metrics 3)" waitroom_room_lease_top_ups_total)
    if (( after > before )); then echo "topup $t" >> "$out"; else echo "new $t" >> "$out"; fi
    t=$(curl -s -o /dev/null -w '%{time_total}' -H "Cookie: $cookie" "http://127.0.0.1:${port[3]}/64")
    echo "returning $t" >> "$out"
    sleep 0.2
  done
}
# p50 / p90 in ms of one probe class, and the count.
stats() {
  awk -v c="$1" '$1==c {print $2 * 1000}' "$2" | sort -n |
    awk '{v[NR]=$1} END {if (NR==0) {print "n=0"; exit}
         printf "n=%d p50=%.2fms p90=%.2fms", NR, v[int((NR+1)*0.5)], v[int((NR-1)*0.9)+1]}'
}

echo "store load: $nodes nodes (Redis backend, sync_interval 1s), ${secs}s per rate," \
     "new visitors ${new_share}; nodes 1-2 loaded, node 3 probed"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
sleep 3   # a few syncs before measuring
declare -A syncs0 ups0
for rate in $rates; do
  conns=10
  delay=$(awk -v r="$rate" -v c="$conns" 'BEGIN{d = c * 2 * 1000 / r; printf "%d", d < 1 ? 1 : d}')
  for i in $(seq 1 $nodes); do
    m=$(metrics "$i")
    syncs0[$i]=$(metric_sum "$m" waitroom_store_sync_duration_seconds_count)
    ups0[$i]=$(metric_sum "$m" waitroom_room_lease_top_ups_total)
  done
  calls0=$(store_calls); t0=$(date +%s.%N)
  : > "$work/probe-$rate"
  probe $(( $(date +%s) + secs )) "$work/probe-$rate" &
  probe_pid=$!
  wrk_pids=()
  for i in 1 2; do
    NEW_SHARE=$new_share DELAY_MS=$delay wrk -t1 -c"$conns" -d"${secs}s" --latency \
      -s "$work/mixed.lua" "http://127.0.0.1:${port[i]}/64" > "$work/wrk-$i-$rate" &
    wrk_pids+=($!)
  done
  wait "${wrk_pids[@]}" "$probe_pid" || true
  t1=$(date +%s.%N); calls1=$(store_calls)
  minutes=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b - a) / 60}')

  echo
  total_rps=0
  for i in 1 2; do
    rps=$(awk '/Requests\/sec/{print $2}' "$work/wrk-$i-$rate")
    p50=$(awk '$1=="50%"{print $2}' "$work/wrk-$i-$rate")
    p99=$(awk '$1=="99%"{print $2}' "$work/wrk-$i-$rate")
    errs=$(awk '/Non-2xx|Socket errors/' "$work/wrk-$i-$rate" | tr '\n' ' ')
    total_rps=$(awk -v a="$total_rps" -v b="$rps" 'BEGIN{printf "%.1f", a + b}')
    echo "rate $rate: node-$i wrk $rps req/s  p50 $p50  p99 $p99  $errs"
  done
  printf 'rate %s: measured %s req/s over nodes 1-2, %.2f min\n' "$rate" "$total_rps" "$minutes"
  printf '  %-7s %14s %14s %16s\n' node "syncs/min" "top-ups/min" "store calls/min"
  for i in $(seq 1 $nodes); do
    m=$(metrics "$i")
    s=$(( $(metric_sum "$m" waitroom_store_sync_duration_seconds_count) - syncs0[$i] ))
    u=$(( $(metric_sum "$m" waitroom_room_lease_top_ups_total) - ups0[$i] ))
    awk -v n="node-$i" -v s="$s" -v u="$u" -v m="$minutes" \
      'BEGIN{printf "  %-7s %14.1f %14.1f %16.1f\n", n, s/m, u/m, (s+u)/m}'
  done
  awk -v c=$((calls1 - calls0)) -v n=$nodes -v m="$minutes" \
    'BEGIN{printf "  redis evalsha+eval: %d calls = %.1f per node per minute\n", c, c/n/m}'
  echo "  probe on node-3: new visitor + top-up: $(stats topup "$work/probe-$rate")"
  echo "                   new visitor, no top-up: $(stats new "$work/probe-$rate")"
  echo "                   returning visitor:      $(stats returning "$work/probe-$rate")"
done
