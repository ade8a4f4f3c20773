#!/usr/bin/env bash
# Soak: waitroomd under mixed traffic for a long while (10 minutes by default), on loopback, in
# front of the nginx origin of bench/lib.sh, watching for leaks.
#   bench/soak.sh [BUILD_DIR]
# Traffic, all at once for the whole run:
#   - admitted visitors: wrk -c8 on a room with limits far above the load (/64), keeping the
#     cookie the gateway last set (bench/browser-cookie.lua), paced by bench/soak-admitted.lua;
#   - a small room (/16k: 20 places, 60 new per minute, 1-minute sessions): new visitors,
#     queued visitors coming back with their cookie (1 in 5 asking for JSON), admitted ones;
#   - malformed and hostile requests (bad framing, a NUL in a field, a 20 KB header, two Hosts,
#     a forged cookie, half a request then gone), about 1 in 10 of the small room's traffic.
# The last two come from bench/soak_client.py, which checks every answer.
# Every second it samples the daemon's RSS (VmRSS) and open file descriptors (/proc/PID/fd) into
# OUT/soak.tsv and plots them into OUT/soak.png (gnuplot). It then prints three verdicts:
#   - RSS growth after warm-up under 5 %: the median of the last minute (or last 10 % of a
#     shorter run) against the median of the first minute after warm-up. The warm-up is half
#     the run: the allocator's arenas and the pools settle over the first minutes (the queue-page
#     cache holds only the pages of the last two state versions, so it fills in seconds);
#   - flat fds: the same two medians differ by at most SOAK_FD_SLACK (default 8: the origin
#     pool and the clients' connections move a little with the load);
#   - 0 unexpected errors: wrk's non-2xx and socket errors plus soak_client's wrong answers,
#     and the daemon still running at the end.
# It exits 1 when a verdict fails.
# Settings (environment): SOAK_SECONDS (600), SOAK_WARMUP (half the run),
# SOAK_PACE_MS (2: wrk's pause per request and connection), SOAK_THREADS (4: soak_client
# threads), SOAK_OUT (BUILD_DIR/soak). Needs: scripts/install-deps.sh bench (nginx-light, wrk,
# gnuplot-nox).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
secs="${SOAK_SECONDS:-600}"
warmup="${SOAK_WARMUP:-$((secs / 2))}"
pace="${SOAK_PACE_MS:-2}"
threads="${SOAK_THREADS:-4}"
fd_slack="${SOAK_FD_SLACK:-8}"
out="${SOAK_OUT:-$build/soak}"
((secs >= 20)) || { echo "SOAK_SECONDS must be at least 20" >&2; exit 2; }

. bench/lib.sh
require_waitroomd "$build"
require_tools wrk nginx gnuplot curl
mkdir -p "$out"

origin_port=$(free_port); wr_port=$(free_port)
cat > "$work/waitroom.yaml" <<CONF
listen: ["127.0.0.1:$wr_port"]
# One load generator, one address: no per-client cap.
origin: {url: "http://127.0.0.1:$origin_port", max_connections: 64, max_connections_per_client: 0}
threads: 2
admin: {listen: ""}
logging: {level: warn}
cookie: {key_file: $work/soak.key}
limits: {max_header_bytes: 8192}
rooms:
  - {name: Open, path: /64, total_active_users: 100000000, new_users_per_minute: 100000000,
     session_duration: 1h}
  - {name: Line, path: /16k, total_active_users: 20, new_users_per_minute: 60,
     session_duration: 1m, refresh_interval: 5s}
CONF

start_origin "$origin_port"
nice "$waitroomd" -c "$work/waitroom.yaml" > "$out/waitroomd.log" 2>&1 &
wr_pid=$!; pids+=($wr_pid)
wait_port "$origin_port"; wait_port "$wr_port"

cookie=$(curl -s -D - -o /dev/null "http://127.0.0.1:$wr_port/64" | tr -d '\r' |
         awk -F': ' 'tolower($1)=="set-cookie"{split($2,a,";"); print a[1]; exit}')
nice wrk -t1 -c8 -d"${secs}s" --timeout 10s -s bench/soak-admitted.lua "http://127.0.0.1:$wr_port/64" \
  -- "$cookie" "$pace" > "$out/wrk.txt" 2>&1 &
wrk_pid=$!; pids+=($wrk_pid)
nice python3 bench/soak_client.py "$wr_port" "$secs" "$threads" > "$out/client.txt" 2>&1 &
client_pid=$!; pids+=($client_pid)

echo "soak: ${secs}s of mixed traffic on 127.0.0.1:$wr_port (warm-up ${warmup}s), samples in $out"
printf 't_s\trss_kib\tfds\n' > "$out/soak.tsv"
start=$(date +%s)
for ((i = 0; i < secs; i++)); do
  # Sampling on the second, whatever the last sample cost.
  now_s=$(date +%s.%N)
  wait_s=$(awk -v n="$now_s" -v s="$start" -v i="$((i + 1))" 'BEGIN{d = s + i - n; print (d > 0 ? d : 0)}')
  sleep "$wait_s"
  [[ -d /proc/$wr_pid ]] || { echo "waitroomd is gone after ${i}s" >&2; break; }
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$wr_pid/status")
  fds=$(ls "/proc/$wr_pid/fd" | wc -l)
  printf '%d\t%d\t%d\n' "$((i + 1))" "$rss" "$fds" >> "$out/soak.tsv"
done
wait "$wrk_pid" "$client_pid" || true
alive=0; [[ -d /proc/$wr_pid ]] && alive=1

gnuplot <<PLOT
set terminal pngcairo size 1000,500
set output "$out/soak.png"
set title "waitroomd soak: RSS and open fds per second (${secs}s, warm-up ${warmup}s)"
set xlabel "seconds"
set ylabel "RSS (MiB)"
set y2label "open fds"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key bottom right
set arrow from $warmup, graph 0 to $warmup, graph 1 nohead dashtype 2
plot "$out/soak.tsv" using 1:(\$2/1024) skip 1 with lines lw 2 title "RSS (MiB)", \
     "$out/soak.tsv" using 1:3 skip 1 axes x1y2 with lines lw 2 title "open fds"
PLOT

# Medians of the first minute after warm-up and of the last minute (a tenth of a short run).
span=$(((secs - warmup) / 10 < 60 ? (secs - warmup) / 10 : 60))
((span >= 1)) || span=1
median() {  # COLUMN FROM TO -> median of the column over t in [FROM, TO)
  awk -F'\t' -v c="$1" -v a="$2" -v b="$3" 'NR > 1 && $1 >= a && $1 < b {print $c}' "$out/soak.tsv" |
    sort -n | awk '{v[NR]=$1} END{if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'
}
last=$(tail -1 "$out/soak.tsv" | cut -f1)
rss0=$(median 2 "$warmup" "$((warmup + span))"); rss1=$(median 2 "$((last - span + 1))" "$((last + 1))")
fd0=$(median 3 "$warmup" "$((warmup + span))"); fd1=$(median 3 "$((last - span + 1))" "$((last + 1))")
growth=$(awk -v a="$rss0" -v b="$rss1" 'BEGIN{printf "%.2f", (a > 0 ? (b - a) * 100 / a : 100)}')
fd_min=$(awk -F'\t' -v w="$warmup" 'NR > 1 && $1 >= w {print $3}' "$out/soak.tsv" | sort -n | head -1)
fd_max=$(awk -F'\t' -v w="$warmup" 'NR > 1 && $1 >= w {print $3}' "$out/soak.tsv" | sort -n | tail -1)

wrk_reqs=$(awk '/requests in/{print $1}' "$out/wrk.txt")
wrk_non2xx=$(awk '/Non-2xx/{print $NF}' "$out/wrk.txt"); wrk_non2xx=${wrk_non2xx:-0}
wrk_sock=$(awk '/Socket errors/{gsub(",", ""); print $4 + $6 + $8 + $10}' "$out/wrk.txt")
wrk_sock=${wrk_sock:-0}
client_line=$(grep '^soak_client' "$out/client.txt" || echo "soak_client requests=0 unexpected=1")
client_reqs=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$client_line")
client_bad=$(sed -E 's/.*unexpected=([0-9]+).*/\1/' <<<"$client_line")
errors=$((wrk_non2xx + wrk_sock + client_bad + (alive ? 0 : 1)))

echo "admitted (wrk): ${wrk_reqs:-0} requests, non-2xx $wrk_non2xx, socket errors $wrk_sock"
echo "small room + malformed (soak_client): $client_reqs requests, $client_bad unexpected"
sed -n '1s/.*by_kind=//p' "$out/client.txt" | tr ',' '\n' | sed 's/^/  /'
sed -n '2,$p' "$out/client.txt"
echo "RSS: ${rss0} KiB after warm-up, ${rss1} KiB at the end (medians of ${span}s): ${growth} %"
echo "fds: ${fd0} after warm-up, ${fd1} at the end (medians), ${fd_min}..${fd_max} after warm-up"
ok=1
verdict() { if (($2)); then echo "PASS  $1"; else echo "FAIL  $1"; ok=0; fi; }
verdict "RSS growth after warm-up under 5 % (${growth} %)" \
  "$(awk -v g="$growth" 'BEGIN{print (g < 5 ? 1 : 0)}')"
verdict "flat fds (end - warm-up = $((fd1 - fd0)), slack $fd_slack)" \
  "$((fd1 - fd0 <= fd_slack))"
verdict "0 unexpected errors ($errors; daemon running: $alive)" "$((errors == 0))"
echo "table: $out/soak.tsv  plot: $out/soak.png"
((ok))
