#!/usr/bin/env bash
# Proxy speed, side by side in one run: nginx `proxy_pass` (upstream keep-alive) and waitroomd,
# in front of the same nginx origin, each proxy pinned to core 0 with one worker, driven in turn
# by wrk pinned to core 1 (the origin shares core 1). Prints req/s, p50, p99 and the proxy's CPU
# time per request (utime+stime from /proc), and waitroomd's ratio to nginx.
#   bench/proxy.sh [BUILD_DIR] [DURATION_S] [CONNECTIONS]
# With ROUNDS=N (default 1) the nginx/waitroomd pair runs N times, alternating, and the summary
# takes each figure's median: on a shared machine, neighbours' noise then hits both alike.
# With CPU_QUOTA=P (percent of one core) both proxies run in a cgroup limited to P % of a core:
# the proxy, not wrk or the origin, is then the bottleneck, and the figures compare capacity at
# saturation (an idle-ish proxy also pays for waking up between bursts, a saturated one not).
# With INSTRUCTIONS=1 it then counts each proxy's user-space instructions per request under
# valgrind's callgrind (start-up excluded; wrk -c16): a figure that neighbours' noise does not
# move, for comparing builds. With SYSCALLS=1 it then counts each proxy's system calls per
# request (strace -c on the nginx worker / waitroomd during an extra, untimed 3 s run) and prints
# them by call.
# Needs: scripts/install-deps.sh bench (nginx-light, wrk). A room with limits far above the load
# checks every request; wrk keeps the admission cookie the gateway last set, as a returning
# admitted visitor's browser does (bench/browser-cookie.lua).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
secs="${2:-10}"
conns="${3:-64}"
. bench/lib.sh
require_waitroomd "$build"
# strace and valgrind only for SYSCALLS=1 / INSTRUCTIONS=1; install-deps.sh bench has all four.
require_tools wrk nginx $([[ "${SYSCALLS:-0}" == 1 ]] && echo strace) \
              $([[ "${INSTRUCTIONS:-0}" == 1 ]] && echo valgrind)

origin_port=$(free_port); nginx_port=$(free_port); wr_port=$(free_port); admin_port=$(free_port)
mkdir -p "$work/proxy"
write_nginx_conf "$work/proxy" "
  upstream origin { server 127.0.0.1:$origin_port; keepalive 64; }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
    }
  }"
cat > "$work/waitroom.yaml" <<CONF
listen: ["127.0.0.1:$wr_port"]
# One load generator, one address: no per-client cap.
origin: {url: "http://127.0.0.1:$origin_port", max_connections: 64, max_connections_per_client: 0}
threads: 1
admin: {listen: "127.0.0.1:$admin_port"}
logging: {level: warn}
cookie: {key_file: $work/bench.key}
rooms:
  - name: Bench
    total_active_users: 100000000
    new_users_per_minute: 100000000
    session_duration: 1h
CONF

start_origin "$origin_port" taskset -c 1
taskset -c 0 nginx -p "$work/proxy" -c "$work/proxy/nginx.conf" -g 'daemon off;' &
nginx_pid=$!; pids+=($nginx_pid)
taskset -c 0 "$waitroomd" -c "$work/waitroom.yaml" > "$work/waitroomd.log" 2>&1 &
wr_pid=$!; pids+=($wr_pid)
wait_port "$origin_port"; wait_port "$nginx_port"; wait_port "$wr_port"

if [[ -n "${CPU_QUOTA:-}" ]]; then
  # cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us); every proxy process goes in.
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    cg=/sys/fs/cgroup/waitroom-bench-$$; mkdir -p "$cg"
    echo "$((CPU_QUOTA * 1000)) 100000" > "$cg/cpu.max"
  else
    cg=/sys/fs/cgroup/cpu/waitroom-bench-$$; mkdir -p "$cg"
    echo 100000 > "$cg/cpu.cfs_period_us"; echo $((CPU_QUOTA * 1000)) > "$cg/cpu.cfs_quota_us"
  fi
  for p in "$nginx_pid" $(pgrep -P "$nginx_pid") "$wr_pid"; do echo "$p" > "$cg/cgroup.procs"; done
  trap 'cleanup; rmdir "$cg" 2>/dev/null || true' EXIT
  echo "proxies limited to ${CPU_QUOTA} % of a core (cgroup $cg)"
fi

# CPU ticks of a process and its children (nginx master + worker): "utime stime".
cpu_ticks() {
  local user=0 sys=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    read -r -a f < "/proc/$p/stat"
    user=$((user + f[13])); sys=$((sys + f[14]))
  done
  echo "$user $sys"
}
hz=$(getconf CLK_TCK)

cookie=$(curl -s -D - -o /dev/null "http://127.0.0.1:$wr_port/64" | tr -d '\r' |
         awk -F': ' 'tolower($1)=="set-cookie"{split($2,a,";"); print a[1]; exit}')
# Both proxies get the same client: one that keeps the last cookie set, as a browser does.
client=(-s bench/browser-cookie.lua)

# run NAME PORT PATH PID -> prints a table row
run() {
  local name=$1 port=$2 path=$3 pid=$4 extra=("${@:5}")
  taskset -c 1 wrk -t1 -c"$conns" -d2s "${client[@]}" "http://127.0.0.1:$port$path" "${extra[@]}" >/dev/null  # warm-up
  local out u0 s0 u1 s1
  read -r u0 s0 < <(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${secs}s" --latency "${client[@]}" "http://127.0.0.1:$port$path" "${extra[@]}")
  read -r u1 s1 < <(cpu_ticks "$pid")
  local reqs rps p50 p99 errs
  reqs=$(awk '/requests in/{print $1}' <<<"$out")
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  errs=$(awk '/Non-2xx|Socket errors/{print}' <<<"$out" | tr '\n' ' ')
  local us split
  us=$(awk -v t=$((u1 - u0 + s1 - s0)) -v hz="$hz" -v n="$reqs" 'BEGIN{printf "%.2f", t/hz*1e6/n}')
  split=$(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$hz" -v n="$reqs" \
              'BEGIN{printf "%.1f/%.1f", u/hz*1e6/n, s/hz*1e6/n}')
  printf '%-10s %-6s %12s %10s %10s %14s %11s  %s\n' "$name" "$path" "$rps" "$p50" "$p99" "$us" "$split" "$errs"
  echo "$name $path $rps $p50 $p99 $us" >> "$work/rows"
}

echo "proxy speed: ${secs}s per run, wrk -t1 -c$conns, proxies on core 0, wrk+origin on core 1"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-10s %-6s %12s %10s %10s %14s %11s\n' proxy body req/s p50 p99 "cpu us/req" "user/sys"
rounds="${ROUNDS:-1}"
for ((round = 1; round <= rounds; round++)); do
  for path in /64 /16k; do
    run nginx "$nginx_port" "$path" "$nginx_pid"
    run waitroomd "$wr_port" "$path" "$wr_pid" -- "$cookie"
  done
done

to_us() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); print v} else if (v ~ /ms$/) {sub(/ms$/,"",v); print v*1000} else if (v ~ /s$/) {sub(/s$/,"",v); print v*1e6} else print v}' <<<"$1"; }
# median NAME PATH -> "rps p99(us) cpu" medians over the rounds
median() {
  grep "^$1 $2 " "$work/rows" | while read -r _ _ rps _ p99 cpu; do
    echo "$rps $(to_us "$p99") $cpu"
  done | awk '{r[NR]=$1; p[NR]=$2; c[NR]=$3}
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { printf "%s %s %s\n", med(r, NR), med(p, NR), med(c, NR) }'
}
echo
[[ "$rounds" -gt 1 ]] && echo "medians over $rounds rounds"
echo "waitroomd / nginx (throughput higher is better; p99 and cpu lower is better)"
for path in /64 /16k; do
  read -r n_rps n_p99 n_cpu < <(median nginx "$path")
  read -r w_rps w_p99 w_cpu < <(median waitroomd "$path")
  [[ "$rounds" -gt 1 ]] && printf '%-6s median cpu us/req: nginx %s  waitroomd %s\n' "$path" "$n_cpu" "$w_cpu"
  awk -v p="$path" -v a="$w_rps" -v b="$n_rps" -v c="$w_p99" -v d="$n_p99" \
      -v e="$w_cpu" -v f="$n_cpu" \
      'BEGIN{printf "%-6s throughput %.2fx   p99 %.2fx   cpu/req %.2fx\n", p, a/b, c/d, e/f}'
done

if [[ "${SYSCALLS:-0}" == 1 ]] && command -v strace >/dev/null; then
  # syscalls NAME PORT PATH PID -> "NAME PATH total/req  call/req ..." (strace slows the proxy,
  # so only the counts per request mean anything here, never the times)
  syscalls() {
    local name=$1 port=$2 path=$3 pid=$4 extra=("${@:5}") out reqs sp
    strace -c -f -p "$pid" -o "$work/strace.$name" 2>/dev/null & sp=$!
    sleep 0.5
    out=$(taskset -c 1 wrk -t1 -c"$conns" -d3s "${client[@]}" "http://127.0.0.1:$port$path" "${extra[@]}")
    kill -INT "$sp"; wait "$sp" 2>/dev/null || true
    reqs=$(awk '/requests in/{print $1}' <<<"$out")
    awk -v n="$reqs" -v who="$name" -v p="$path" '
      $1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { c[$NF] = $4 }
      $NF == "total" { t = $4 }
      END { printf "%-10s %-6s %6.2f/req ", who, p, t / n
            for (k in c) if (c[k] / n >= 0.05) printf " %s %.2f", k, c[k] / n; print "" }' \
      "$work/strace.$name"
  }
  echo
  echo "system calls per request (strace -c; counts only)"
  nginx_worker=$(pgrep -P "$nginx_pid" | head -1)
  for path in /64 /16k; do
    syscalls nginx "$nginx_port" "$path" "$nginx_worker"
    syscalls waitroomd "$wr_port" "$path" "$wr_pid" -- "$cookie"
  done
fi

if [[ "${INSTRUCTIONS:-0}" == 1 ]] && command -v valgrind >/dev/null; then
  # instructions NAME PATH -> "NAME PATH N instructions/request": the proxy runs under callgrind
  # with instrumentation off until wrk's measured run starts.
  instructions() {
    local name=$1 path=$2 port pid out n ir cookie_arg=()
    port=$(free_port)
    if [[ "$name" == nginx ]]; then
      sed -e "s/listen 127.0.0.1:$nginx_port/listen 127.0.0.1:$port/" \
          -e "s|pid $work/proxy/nginx.pid|pid $work/proxy/cg.pid|" \
          -e '1i master_process off; daemon off;' "$work/proxy/nginx.conf" > "$work/proxy/cg.conf"
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
        nginx -p "$work/proxy" -c "$work/proxy/cg.conf" >/dev/null 2>&1 &
    else
      sed -e "s/127.0.0.1:$wr_port/127.0.0.1:$port/" \
          -e "s/admin: {listen: \"127.0.0.1:$admin_port\"}/admin: {listen: \"\"}/" \
          "$work/waitroom.yaml" > "$work/cg.yaml"
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
        "$waitroomd" -c "$work/cg.yaml" >/dev/null 2>&1 &
      cookie_arg=(-- "$cookie")
    fi
    pid=$!; pids+=($pid)
    wait_port "$port"
    taskset -c 1 wrk -t1 -c16 -d1s "${client[@]}" "http://127.0.0.1:$port$path" "${cookie_arg[@]}" >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    out=$(taskset -c 1 wrk -t1 -c16 -d5s "${client[@]}" "http://127.0.0.1:$port$path" "${cookie_arg[@]}")
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    n=$(awk '/requests in/{print $1}' <<<"$out")
    ir=$(callgrind_annotate "$work/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
    printf '%-10s %-6s %8s requests %10s instructions/request\n' "$name" "$path" "$n" "$((ir / n))"
    rm -f "$work/cg.out"
  }
  echo
  echo "user-space instructions per request (callgrind, wrk -c16, 5 s)"
  for path in /64 /16k; do
    instructions nginx "$path"
    instructions waitroomd "$path"
  done
fi
