#!/usr/bin/env bash
# Proxy speed, side by side in one run: nginx `proxy_pass` (upstream keep-alive), HAProxy and
# waitroomd, in front of the same nginx origin, each proxy pinned to core 0 with one worker,
# driven in turn by wrk pinned to core 1 (the origin shares core 1). Prints req/s, p50, p99 and
# the proxy's CPU time per request (utime+stime from /proc), how often per request it slept
# waiting for work (voluntary context switches), and each one's ratio to nginx.
#   bench/proxy.sh [BUILD_DIR] [DURATION_S] [CONNECTIONS]
# Rows, each for /64 and /16k unless said:
#   nginx      proxy_pass
#   haproxy    Debian's HAProxy, one thread, server connections reused
#   waitroomd  a room on / with limits far above the load: every request is checked, and wrk
#              keeps the admission cookie the gateway last set, as a returning admitted
#              visitor's browser does (bench/browser-cookie.lua)
#   wr-bare    waitroomd with no room: the bare proxy (waitroomd - wr-bare = the room check)
#   wr-uring   with URING_BUILD=DIR: waitroomd as in the waitroomd row, built with io_uring in DIR
#   flash      the flash crowd: new visitors without a cookie at a full room, each answered with
#              the queue page and a fresh cookie (waitroomd), against nginx serving a static file
#              of the same size with a Set-Cookie header of the same length (nginx-static);
#              flash-uring the same with URING_BUILD's waitroomd
# HTTP/2 rows, driven by h2load (pinned like wrk, -c$H2_CONNS -m$H2_STREAMS, defaults 16 and 4)
# over TLS 1.3 with one self-signed certificate the script makes:
#   nginx-h2 haproxy-h2 waitroomd-h2   the three proxies above on TLS listeners offering h2
#              (waitroomd's room renews no session, see below), for /64 and /16k
#   flash-gz / nginx-gz  the flash crowd compressed: new visitors at a full room asking for gzip
#              (the gzip queue page and a fresh cookie), against nginx's `gzip_static` serving the
#              same gzip bytes with a Set-Cookie of the same length, over HTTP/1.1 (wrk)
#   flash-h2 / nginx-gz-h2  the same over h2 (h2load); h2load gives no percentiles of its own, so
#              p50 and p99 come from its --log-file
# With ROUNDS=N (default 1) the rows run N times, alternating, and the summary takes each
# figure's median: on a shared machine, neighbours' noise then hits all alike.
# With ONLY=REGEX only the rows whose "NAME PATH" matches run (e.g. ONLY='^(nginx|waitroomd) /64').
# With CPU_QUOTA=P (percent of one core) every proxy runs in a cgroup limited to P % of a core:
# the proxy, not wrk or the origin, is then the bottleneck, and the figures compare capacity at
# saturation (an idle-ish proxy also pays for waking up between bursts, a saturated one not).
# With THREADS=N (default 1) every proxy runs N workers (nginx worker_processes N with reuseport,
# HAProxy nbthread N, waitroomd threads: N) on cores 0..N-1, and so do wrk (-tN) and the origin
# (N workers): with N = 2 on this 2-core machine the load generator shares the proxies' cores, so
# only the ratios between proxies mean anything, not the scaling of one alone.
# With INSTRUCTIONS=1 it then counts each row's user-space instructions per request under
# valgrind's callgrind (start-up and TLS handshakes excluded; wrk -c16): a figure that
# neighbours' noise does not move, for comparing builds. With SYSCALLS=1 it then counts each proxy's system calls per
# request (strace -c on the nginx worker / HAProxy / waitroomd during an extra, untimed 3 s run)
# and prints them by call.
# Needs: scripts/install-deps.sh bench (nginx-light, haproxy, wrk, h2load from nghttp2-client).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
secs="${2:-10}"
conns="${3:-64}"
threads="${THREADS:-1}"
. bench/lib.sh
nginx_workers=$threads
if [[ "$threads" -gt 1 ]]; then
  # N workers on cores 0..N-1, and the load generator and origin beside them (a 2-core machine
  # has no core left over); each nginx worker gets its own listening socket, as each waitroomd
  # worker has its own SO_REUSEPORT acceptor.
  proxy_cpus="0-$((threads - 1))"; load_cpus=$proxy_cpus; reuseport=" reuseport"
else
  proxy_cpus=0; load_cpus=1; reuseport=""
fi
require_waitroomd "$build"
# strace and valgrind only for SYSCALLS=1 / INSTRUCTIONS=1; install-deps.sh bench has all four.
require_tools wrk h2load nginx haproxy openssl $([[ "${SYSCALLS:-0}" == 1 ]] && echo strace) \
              $([[ "${INSTRUCTIONS:-0}" == 1 ]] && echo valgrind)

origin_port=$(free_port); nginx_port=$(free_port); static_port=$(free_port)
haproxy_port=$(free_port); wr_port=$(free_port); bare_port=$(free_port); full_port=$(free_port)
nginx_h2_port=$(free_port); static_h2_port=$(free_port); haproxy_h2_port=$(free_port)
wr_h2_port=$(free_port); full_h2_port=$(free_port)
# 16 connections of 4 streams: 64 requests in flight, as wrk's 64 connections and the 64 origin
# connections each proxy keeps. With more streams than that nginx opens and closes an origin
# connection for each request its keep-alive cache cannot hold (-m10: twice its system time).
h2_conns="${H2_CONNS:-16}"; h2_streams="${H2_STREAMS:-4}"
# One TLS 1.3 suite for all (HAProxy would pick AES-256 by its own order, nginx and waitroomd
# h2load's AES-128), and nginx told to offer TLS 1.3 (Debian's 1.22 offers up to 1.2 unless told).
h2_cipher=TLS_AES_128_GCM_SHA256
mkdir -p "$work/proxy" "$work/static"
# One self-signed P-256 certificate for every TLS listener (HAProxy wants it and its key in one file).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
cat "$work/tls.crt" "$work/tls.key" > "$work/tls.pem"
# The flash crowd's static file and its Set-Cookie are sized from the queue page below; nginx
# reads both at start, so they are written before it starts (and rewritten, then reloaded).
touch "$work/static/queue" "$work/static/queuegz"; : > "$work/static/cookie"; : > "$work/static/cookie-h2"
nginx_servers() {
  cat <<NGINX
  upstream origin { server 127.0.0.1:$origin_port; keepalive 64; }
  ssl_certificate $work/tls.crt; ssl_certificate_key $work/tls.key; ssl_protocols TLSv1.2 TLSv1.3;
  server {
    listen 127.0.0.1:$nginx_port$reuseport;
    listen 127.0.0.1:$nginx_h2_port ssl http2$reuseport;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
    }
  }
  server {
    listen 127.0.0.1:$static_port$reuseport;
    root $work/static;
    default_type text/html;
    gzip_static on; gzip_vary on;
    location / { add_header Cache-Control no-store; add_header Set-Cookie "$(cat "$work/static/cookie")"; }
  }
  server {
    listen 127.0.0.1:$static_h2_port ssl http2$reuseport;
    root $work/static;
    default_type text/html;
    gzip_static on; gzip_vary on;
    location / { add_header Cache-Control no-store; add_header Set-Cookie "$(cat "$work/static/cookie-h2")"; }
  }
NGINX
}
write_nginx_conf "$work/proxy" "$(nginx_servers)"
cat > "$work/haproxy.cfg" <<CONF
global
  nbthread $threads
  maxconn 4096
defaults
  mode http
  option http-keep-alive
  option forwardfor
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend proxy
  bind 127.0.0.1:$haproxy_port
  bind 127.0.0.1:$haproxy_h2_port ssl crt $work/tls.pem alpn h2,http/1.1
  http-request set-header X-Forwarded-Proto https if { ssl_fc }
  http-request set-header X-Forwarded-Proto http unless { ssl_fc }
  http-request set-header X-Forwarded-Host %[req.hdr(host)]
  default_backend origin
backend origin
  server origin 127.0.0.1:$origin_port maxconn 64
CONF
# waitroomd_conf PORT ROOMS KEY: a one-worker config in front of the origin; PORT tls:N is a TLS
# listener on N (HTTP/2 by ALPN).
waitroomd_conf() {
  local listener="\"127.0.0.1:$1\""
  [[ "$1" == tls:* ]] &&
    listener="{address: \"127.0.0.1:${1#tls:}\", tls: {cert: $work/tls.crt, key: $work/tls.key}}"
  cat <<CONF
listen: [$listener]
# One load generator, one address: no per-client cap.
origin: {url: "http://127.0.0.1:$origin_port", max_connections: 64, max_connections_per_client: 0}
threads: $threads
admin: {listen: "127.0.0.1:$(free_port)"}
logging: {level: warn}
cookie: {key_file: $work/$3.key}
$2
CONF
}
waitroomd_conf "$wr_port" "rooms:
  - name: Bench
    total_active_users: 100000000
    new_users_per_minute: 100000000
    session_duration: 1h" waitroom > "$work/waitroom.yaml"
waitroomd_conf "$bare_port" "" bare > "$work/bare.yaml"
# One place, taken below by a first visitor: everyone after it is queued.
waitroomd_conf "$full_port" "rooms:
  - name: Full
    total_active_users: 1
    new_users_per_minute: 1
    session_duration: 1h" full > "$work/full.yaml"
# The h2 rows' room: h2load replays one cookie, and an admitted cookie from an earlier check-in
# window (at most 10 s) is renewed and sealed again on every request, which no browser causes
# (the HTTP/1.1 rows keep the last cookie set, bench/browser-cookie.lua). Without renewal the
# replayed cookie is checked and passes on every request, as a browser's does.
waitroomd_conf "tls:$wr_h2_port" "rooms:
  - name: Bench
    total_active_users: 100000000
    new_users_per_minute: 100000000
    session_duration: 1h
    disable_session_renewal: true" waitroom-h2 > "$work/waitroom-h2.yaml"
waitroomd_conf "tls:$full_h2_port" "rooms:
  - name: Full
    total_active_users: 1
    new_users_per_minute: 1
    session_duration: 1h" full-h2 > "$work/full-h2.yaml"

start_origin "$origin_port" taskset -c "$load_cpus"
taskset -c "$proxy_cpus" nginx -p "$work/proxy" -c "$work/proxy/nginx.conf" -g 'daemon off;' &
nginx_pid=$!; pids+=($nginx_pid)
taskset -c "$proxy_cpus" haproxy -f "$work/haproxy.cfg" -db > "$work/haproxy.log" 2>&1 &
haproxy_pid=$!; pids+=($haproxy_pid)
# URING_BUILD=DIR: the same room and full room served by DIR's waitroomd too (a build with
# -DWAITROOM_IO_URING=ON), as rows wr-uring and flash-uring.
declare -A wr_bins=([waitroom]="$waitroomd" [bare]="$waitroomd" [full]="$waitroomd"
                    [waitroom-h2]="$waitroomd" [full-h2]="$waitroomd")
ports=("$origin_port" "$nginx_port" "$haproxy_port" "$wr_port" "$bare_port" "$full_port"
       "$nginx_h2_port" "$static_h2_port" "$haproxy_h2_port" "$wr_h2_port" "$full_h2_port")
if [[ -n "${URING_BUILD:-}" ]]; then
  [[ -x "$URING_BUILD/src/waitroomd" ]] || { echo "no $URING_BUILD/src/waitroomd" >&2; exit 1; }
  uring_port=$(free_port); full_uring_port=$(free_port)
  sed -e "s/127.0.0.1:$wr_port/127.0.0.1:$uring_port/" -e "s/admin: .*/admin: {listen: \"\"}/" \
      -e "s|$work/waitroom.key|$work/uring.key|" "$work/waitroom.yaml" > "$work/uring.yaml"
  sed -e "s/127.0.0.1:$full_port/127.0.0.1:$full_uring_port/" -e "s/admin: .*/admin: {listen: \"\"}/" \
      -e "s|$work/full.key|$work/full-uring.key|" "$work/full.yaml" > "$work/full-uring.yaml"
  wr_bins[uring]="$URING_BUILD/src/waitroomd"; wr_bins[full-uring]="$URING_BUILD/src/waitroomd"
  ports+=("$uring_port" "$full_uring_port")
fi
declare -A wr_pids
for conf in "${!wr_bins[@]}"; do
  taskset -c "$proxy_cpus" "${wr_bins[$conf]}" -c "$work/$conf.yaml" > "$work/$conf.log" 2>&1 &
  wr_pids[$conf]=$!; pids+=($!)
done
wr_pid=${wr_pids[waitroom]}
for p in "${ports[@]}"; do
  wait_port "$p"
done

# The flash crowd: a first visitor takes the full room's one place; the next one's answer, the
# queue page, sizes nginx's static file and Set-Cookie (value of the same length, attributes
# alike), and nginx reloads them.
# The compressed flash crowd: nginx's gzip_static file is the gzip queue page's own bytes, beside
# the page they unpack to; over TLS the Set-Cookie has its Secure attribute, so its own copy.
curl -s -o /dev/null "http://127.0.0.1:$full_port/64"
curl -sk -o /dev/null "https://127.0.0.1:$full_h2_port/64"
[[ -n "${URING_BUILD:-}" ]] && curl -s -o /dev/null "http://127.0.0.1:$full_uring_port/64"
curl -s -D "$work/queue.head" -o "$work/queue.body" "http://127.0.0.1:$full_port/64"
head -c "$(stat -c %s "$work/queue.body")" /dev/zero | tr '\0' 'q' > "$work/static/queue"
curl -s -H 'accept-encoding: gzip' -o "$work/static/queuegz.gz" "http://127.0.0.1:$full_port/64"
gzip -dc < "$work/static/queuegz.gz" > "$work/static/queuegz"
curl -sk --http2 -H 'accept-encoding: gzip' -D "$work/queue-h2.head" -o "$work/queue-h2.gz" \
  "https://127.0.0.1:$full_h2_port/64"
# cookie_like HEAD: a Set-Cookie field as long as HEAD's, attributes alike, the value all 'c'
cookie_like() {
  local set_cookie cookie_rest cookie_value
  set_cookie=$(tr -d '\r' < "$1" | awk -F': ' 'tolower($1)=="set-cookie"{print $2; exit}')
  cookie_rest=${set_cookie#*=}; cookie_value=${cookie_rest%%;*}
  printf '%s=%s%s' "${set_cookie%%=*}" "$(head -c "${#cookie_value}" /dev/zero | tr '\0' 'c')" \
    "${cookie_rest#"$cookie_value"}"
}
cookie_like "$work/queue.head" > "$work/static/cookie"
cookie_like "$work/queue-h2.head" > "$work/static/cookie-h2"
set_cookie=$(cat "$work/static/cookie")
write_nginx_conf "$work/proxy" "$(nginx_servers)"
kill -HUP "$nginx_pid"
for _ in $(seq 50); do   # until the new worker answers with the cookie
  curl -s -D - -o /dev/null "http://127.0.0.1:$static_port/queue" | grep -qi '^set-cookie: ..' && break
  sleep 0.1
done
nginx_queue=$(curl -s "http://127.0.0.1:$static_port/queue" | wc -c)
echo "flash crowd: queue page $(stat -c %s "$work/queue.body") B (nginx's file $nginx_queue B)," \
     "Set-Cookie ${#set_cookie} B"
nginx_gz=$(curl -s -H 'accept-encoding: gzip' "http://127.0.0.1:$static_port/queuegz" | wc -c)
echo "compressed: gzip page $(stat -c %s "$work/static/queuegz.gz") B, over h2" \
     "$(stat -c %s "$work/queue-h2.gz") B (nginx's gzip_static $nginx_gz B)," \
     "Set-Cookie over TLS $(wc -c < "$work/static/cookie-h2") B"
# What each TLS listener negotiates with h2load: the same protocol, suite and ALPN for all.
for l in "nginx $nginx_h2_port" "nginx-static $static_h2_port" "haproxy $haproxy_h2_port" \
         "waitroomd $wr_h2_port" "waitroomd-full $full_h2_port"; do
  read -r who p <<<"$l"
  printf '%s %s ' "$who" "$(h2load -n1 -c1 --tls13-ciphers="$h2_cipher" "https://127.0.0.1:$p/" 2>&1 |
    awk -F': ' '/^TLS Protocol|^Cipher|^Application protocol/{printf "%s/", $2}')"
done
echo

if [[ -n "${CPU_QUOTA:-}" ]]; then
  # cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us); every proxy process goes in.
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    cg=/sys/fs/cgroup/waitroom-bench-$$; mkdir -p "$cg"
    echo "$((CPU_QUOTA * 1000)) 100000" > "$cg/cpu.max"
  else
    cg=/sys/fs/cgroup/cpu/waitroom-bench-$$; mkdir -p "$cg"
    echo 100000 > "$cg/cpu.cfs_period_us"; echo $((CPU_QUOTA * 1000)) > "$cg/cpu.cfs_quota_us"
  fi
  for p in "$nginx_pid" $(pgrep -P "$nginx_pid") "$haproxy_pid" "${wr_pids[@]}"; do
    echo "$p" > "$cg/cgroup.procs"
  done
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
# Voluntary context switches of a process, its threads and its children: how often it slept
# waiting for work (each sleep costs an epoll_wait and a wake-up, the cost an idle-ish proxy
# pays per burst and a saturated one does not).
wakeups() {
  local n=0 p v
  for p in "$1" $(pgrep -P "$1" || true); do
    for v in $(awk '/^voluntary_ctxt_switches/{print $2}' /proc/"$p"/task/*/status 2>/dev/null); do
      n=$((n + v))
    done
  done
  echo "$n"
}

# set_cookie_of URL: the name=value of the Set-Cookie in URL's answer
set_cookie_of() {
  curl -sk -D - -o /dev/null "$1" | tr -d '\r' |
    awk -F': ' 'tolower($1)=="set-cookie"{split($2,a,";"); print a[1]; exit}'
}
cookie=$(set_cookie_of "http://127.0.0.1:$wr_port/64")
h2_cookie=$(set_cookie_of "https://127.0.0.1:$wr_h2_port/64")

# The rows: NAME PORT PATH PID CLIENT. CLIENT "browser" keeps the last cookie set, as a browser
# does (every proxy gets it, so all see the same requests); "new" sends no cookie and keeps none:
# every request is a new visitor; "new-gz" is "new" with `Accept-Encoding: gzip`. The h2 clients
# (h2load over TLS): "h2" replays an admitted cookie (waitroomd-h2's, to every proxy),
# "h2-new-gz" is "new-gz".
rows=()
for path in /64 /16k; do
  rows+=("nginx $nginx_port $path $nginx_pid browser"
         "haproxy $haproxy_port $path $haproxy_pid browser"
         "waitroomd $wr_port $path ${wr_pids[waitroom]} browser"
         "wr-bare $bare_port $path ${wr_pids[bare]} browser")
  [[ -n "${URING_BUILD:-}" ]] && rows+=("wr-uring $uring_port $path ${wr_pids[uring]} browser")
done
rows+=("nginx-static $static_port /queue $nginx_pid new"
       "flash $full_port /64 ${wr_pids[full]} new")
[[ -n "${URING_BUILD:-}" ]] && rows+=("flash-uring $full_uring_port /64 ${wr_pids[full-uring]} new")
for path in /64 /16k; do
  rows+=("nginx-h2 $nginx_h2_port $path $nginx_pid h2"
         "haproxy-h2 $haproxy_h2_port $path $haproxy_pid h2"
         "waitroomd-h2 $wr_h2_port $path ${wr_pids[waitroom-h2]} h2")
done
rows+=("nginx-gz $static_port /queuegz $nginx_pid new-gz"
       "flash-gz $full_port /64 ${wr_pids[full]} new-gz"
       "nginx-gz-h2 $static_h2_port /queuegz $nginx_pid h2-new-gz"
       "flash-h2 $full_h2_port /64 ${wr_pids[full-h2]} h2-new-gz")
if [[ -n "${ONLY:-}" ]]; then   # ONLY=REGEX: the rows whose "NAME PATH" matches
  kept=()
  for row in "${rows[@]}"; do
    read -r n _ p _ <<<"$row"
    [[ "$n $p" =~ $ONLY ]] && kept+=("$row")
  done
  rows=("${kept[@]}")
fi

# load CLIENT PORT PATH SECS CONNS CPUS -> "REQUESTS REQ/S P50 P99 ERRORS...": the client's
# load on 127.0.0.1:PORT for SECS seconds from cores CPUS, wrk with CONNS connections or h2load
# with -c$h2_conns -m$h2_streams (CONNS unused: every h2 row has the same streams).
load() {
  local client=$1 port=$2 path=$3 secs=$4 n=$5 cpus=$6 out
  case "$client" in
    h2*)
      local hdr=(-H "cookie: $h2_cookie")
      [[ "$client" == h2-new-gz ]] && hdr=(-H 'accept-encoding: gzip')
      out=$(taskset -c "$cpus" h2load -t"$threads" -c"$h2_conns" -m"$h2_streams" -D "$secs" \
              --tls13-ciphers="$h2_cipher" --log-file="$work/h2.log" "${hdr[@]}" "https://127.0.0.1:$port$path")
      # requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout
      local head lat head_f
      head=$(awk '/^finished in/{r=$4} /^requests:/{d=$6; e=$10 + $12 + $14}
                  END{printf "%s %s", d, r; if (e) printf " failed/errored/timeout: %d", e}' <<<"$out")
      # the log: start (us since epoch), status, microseconds to the end of the response
      lat=$(sort -n -k3 "$work/h2.log" | awk '{v[NR] = $3} $2 !~ /^2/{x++}
              END{printf "%dus %dus", v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1]
                  if (x) printf " Non-2xx: %d", x}')
      read -r -a head_f <<<"$head"
      echo "${head_f[0]} ${head_f[1]} $lat ${head_f[*]:2}"
      rm -f "$work/h2.log" ;;
    *)
      local pre=() post=()
      [[ "$client" == browser ]] && pre=(-s bench/browser-cookie.lua) && post=(-- "$cookie")
      [[ "$client" == new-gz ]] && pre=(-H 'Accept-Encoding: gzip')
      out=$(taskset -c "$cpus" wrk -t"$threads" -c"$n" -d"${secs}s" --latency "${pre[@]}" \
              "http://127.0.0.1:$port$path" "${post[@]}")
      awk '/requests in/{q=$1} /Requests\/sec/{r=$2} $1=="50%"{a=$2} $1=="99%"{b=$2}
           /Non-2xx|Socket errors/{e = e " " $0} END{print q, r, a, b e}' <<<"$out" ;;
  esac
}

# run NAME PORT PATH PID CLIENT -> prints a table row
run() {
  local name=$1 port=$2 path=$3 pid=$4 client=$5
  load "$client" "$port" "$path" 2 "$conns" "$load_cpus" >/dev/null  # warm-up
  local out u0 s0 u1 s1 w0 w1
  read -r u0 s0 < <(cpu_ticks "$pid"); w0=$(wakeups "$pid")
  out=$(load "$client" "$port" "$path" "$secs" "$conns" "$load_cpus")
  read -r u1 s1 < <(cpu_ticks "$pid"); w1=$(wakeups "$pid")
  local reqs rps p50 p99 errs
  read -r reqs rps p50 p99 errs <<<"$out"
  local us split
  us=$(awk -v t=$((u1 - u0 + s1 - s0)) -v hz="$hz" -v n="$reqs" 'BEGIN{printf "%.2f", t/hz*1e6/n}')
  split=$(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$hz" -v n="$reqs" \
              'BEGIN{printf "%.1f/%.1f", u/hz*1e6/n, s/hz*1e6/n}')
  local wakes
  wakes=$(awk -v w=$((w1 - w0)) -v n="$reqs" 'BEGIN{printf "%.2f", w/n}')
  printf '%-12s %-8s %12s %10s %10s %14s %11s %9s  %s\n' "$name" "$path" "$rps" "$p50" "$p99" "$us" "$split" "$wakes" "$errs"
  echo "$name $path $rps $p50 $p99 $us" >> "$work/rows"
}

echo "proxy speed: ${secs}s per run, wrk -t$threads -c$conns (h2 rows: h2load -t$threads" \
     "-c$h2_conns -m$h2_streams, TLS 1.3 $h2_cipher), $threads worker(s) per proxy on core(s) $proxy_cpus," \
     "load+origin on core(s) $load_cpus"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-12s %-8s %12s %10s %10s %14s %11s %9s\n' proxy path req/s p50 p99 "cpu us/req" "user/sys" "sleeps/req"
rounds="${ROUNDS:-1}"
for ((round = 1; round <= rounds; round++)); do
  for row in "${rows[@]}"; do
    # shellcheck disable=SC2086
    run $row
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
# ratio NAME PATH BASE BASE_PATH -> one summary line
ratio() {
  local b_rps b_p99 b_cpu rps p99 cpu
  read -r b_rps b_p99 b_cpu < <(median "$3" "$4")
  read -r rps p99 cpu < <(median "$1" "$2")
  awk -v n="$1 $2" -v b="$3" -v a="$rps" -v bb="$b_rps" -v c="$p99" -v d="$b_p99" \
      -v e="$cpu" -v f="$b_cpu" \
      'BEGIN{printf "%-17s cpu %6.2f us/req  / %-12s throughput %.2fx   p99 %.2fx   cpu/req %.2fx\n",
             n, e, b, a/bb, c/d, e/f}'
}
echo
[[ "$rounds" -gt 1 ]] && echo "medians over $rounds rounds"
echo "against nginx (throughput higher is better; p99 and cpu lower is better)"
has() { grep -q "^$1 $2 " "$work/rows" 2>/dev/null; }
for path in /64 /16k; do
  for name in haproxy waitroomd wr-bare wr-uring; do
    has "$name" "$path" && has nginx "$path" && ratio "$name" "$path" nginx "$path"
  done
  if has waitroomd "$path" && has wr-bare "$path"; then
    read -r _ _ w_cpu < <(median waitroomd "$path"); read -r _ _ b_cpu < <(median wr-bare "$path")
    awk -v p="$path" -v a="$w_cpu" -v b="$b_cpu" \
        'BEGIN{printf "%-17s %+.2f us/req (waitroomd - wr-bare)\n", "room check " p, a - b}'
  fi
done
for name in flash flash-uring; do
  has "$name" /64 && has nginx-static /queue && ratio "$name" /64 nginx-static /queue
done
for path in /64 /16k; do
  for name in haproxy-h2 waitroomd-h2; do
    has "$name" "$path" && has nginx-h2 "$path" && ratio "$name" "$path" nginx-h2 "$path"
  done
done
has flash-gz /64 && has nginx-gz /queuegz && ratio flash-gz /64 nginx-gz /queuegz
has flash-h2 /64 && has nginx-gz-h2 /queuegz && ratio flash-h2 /64 nginx-gz-h2 /queuegz

if [[ "${SYSCALLS:-0}" == 1 ]] && command -v strace >/dev/null; then
  # syscalls NAME PORT PATH PID CLIENT -> "NAME PATH total/req  call/req ..." (strace slows the
  # proxy, so only the counts per request mean anything here, never the times)
  syscalls() {
    local name=$1 port=$2 path=$3 pid=$4 client=$5 out reqs sp
    local traced=(-p "$pid") w
    if [[ "$name" == nginx* ]]; then  # the workers
      traced=()
      for w in $(pgrep -P "$pid"); do traced+=(-p "$w"); done
    fi
    strace -c -f "${traced[@]}" -o "$work/strace.$name" 2>/dev/null & sp=$!
    sleep 0.5
    out=$(load "$client" "$port" "$path" 3 "$conns" "$load_cpus")
    kill -INT "$sp"; wait "$sp" 2>/dev/null || true
    reqs=${out%% *}
    awk -v n="$reqs" -v who="$name" -v p="$path" '
      $1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { c[$NF] = $4 }
      $NF == "total" { t = $4 }
      END { printf "%-12s %-6s %6.2f/req ", who, p, t / n
            for (k in c) if (c[k] / n >= 0.05) printf " %s %.2f", k, c[k] / n; print "" }' \
      "$work/strace.$name"
  }
  echo
  echo "system calls per request (strace -c; counts only)"
  for row in "${rows[@]}"; do
    # shellcheck disable=SC2086
    syscalls $row
  done
fi

if [[ "${INSTRUCTIONS:-0}" == 1 ]] && command -v valgrind >/dev/null; then
  # instructions NAME PORT PATH PID CLIENT -> "NAME PATH N instructions/request": a copy of the
  # row's proxy on another port runs under callgrind with instrumentation off until wrk's
  # measured run starts.
  instructions() {
    local name=$1 old_port=$2 path=$3 client=$5 port pid out n ir
    port=$(free_port)
    # The copy's listeners all move (the running proxies hold theirs): the row's to PORT.
    local moves=() p
    for p in "$nginx_port" "$static_port" "$nginx_h2_port" "$static_h2_port" "$haproxy_port" \
             "$haproxy_h2_port"; do
      moves+=(-e "s/127.0.0.1:$p\b/127.0.0.1:$([[ $p == "$old_port" ]] && echo "$port" || free_port)/")
    done
    case "$name" in
      nginx*)
        sed "${moves[@]}" -e "s|pid $work/proxy/nginx.pid|pid $work/proxy/cg.pid|" \
            -e '1i master_process off; daemon off;' "$work/proxy/nginx.conf" > "$work/proxy/cg.conf"
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
          nginx -p "$work/proxy" -c "$work/proxy/cg.conf" >/dev/null 2>&1 & ;;
      haproxy)
        sed "${moves[@]}" "$work/haproxy.cfg" > "$work/cg.cfg"
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
          haproxy -f "$work/cg.cfg" -db >/dev/null 2>&1 & ;;
      *)
        local conf
        case "$name" in
          wr-bare) conf=bare ;; flash | flash-gz) conf=full ;; wr-uring) conf=uring ;;
          flash-uring) conf=full-uring ;; flash-h2) conf=full-h2 ;;
          waitroomd-h2) conf=waitroom-h2 ;; *) conf=waitroom ;;
        esac
        sed -e "s/127.0.0.1:$old_port/127.0.0.1:$port/" \
            -e 's/^admin: .*/admin: {listen: ""}/' "$work/$conf.yaml" > "$work/cg.yaml"
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
          "${wr_bins[$conf]}" -c "$work/cg.yaml" >/dev/null 2>&1 & ;;
    esac
    pid=$!; pids+=($pid)
    wait_port "$port"
    # The full room's copy has its place taken first, as above.
    local scheme=http
    [[ "$client" == h2* ]] && scheme=https
    [[ "$name" == flash* ]] && curl -sk -o /dev/null "$scheme://127.0.0.1:$port/64"
    load "$client" "$port" "$path" 1 16 1 >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    out=$(load "$client" "$port" "$path" 5 16 1)
    callgrind_control -i off "$pid" >/dev/null 2>&1  # the shutdown is no request's cost
    # nginx under callgrind lets a TERM go after h2 connections; INT is its fast stop too
    kill "-$([[ "$name" == nginx* ]] && echo INT || echo TERM)" "$pid"; wait "$pid" 2>/dev/null || true
    n=${out%% *}
    # TLS handshakes (SSL_do_handshake, inclusive) are left out: under callgrind a proxy serves
    # a few thousand requests on its 16 connections, so their handshakes would weigh 10-30 % of
    # each request, against well under 1 % in the timed rows.
    local annotated hs
    annotated=$(callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null)
    ir=$(awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}' <<<"$annotated")
    hs=$(awk '/:SSL_do_handshake /{gsub(",","",$1); print $1; exit}' <<<"$annotated")
    ir=$((ir - ${hs:-0}))
    printf '%-12s %-6s %8s requests %10s instructions/request (%s in handshakes left out)\n' \
      "$name" "$path" "$n" "$((ir / n))" "${hs:-0}"
    [[ -n "${CALLGRIND_KEEP:-}" ]] && mkdir -p "$CALLGRIND_KEEP" && \
      cp "$work/cg.out" "$CALLGRIND_KEEP/callgrind.$name.${path//\//}"
    rm -f "$work/cg.out"
  }
  echo
  echo "user-space instructions per request (callgrind, wrk -c16 or h2load -c$h2_conns -m$h2_streams, 5 s)"
  for row in "${rows[@]}"; do
    # Valgrind 3.19 hangs in Asio's io_uring set-up, and this VM has no hardware counters.
    if [[ "$row" == *uring* ]]; then
      printf '%-12s %-6s not measured (valgrind cannot run the io_uring build)\n' ${row%% *} \
        "$(cut -d' ' -f3 <<<"$row")"
      continue
    fi
    # shellcheck disable=SC2086
    instructions $row
  done
fi
