# Shared by the bench scripts (sourced): a scratch folder removed on exit together with every
# process put in `pids`, free loopback ports, and the nginx origin the proxies stand in front of.

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# require_waitroomd BUILD_DIR: sets `waitroomd` to the built daemon, or stops with how to build it.
require_waitroomd() {
  waitroomd="$1/src/waitroomd"
  [[ -x "$waitroomd" ]] || { echo "build first: scripts/build.sh $1" >&2; exit 1; }
}
# require_tools TOOL...: installs the bench profile (scripts/install-deps.sh bench) when any is
# missing.
require_tools() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { scripts/install-deps.sh bench; return; }
  done
}

# free_port, wait_port
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/ports.sh"

# write_nginx_conf DIR SERVERS: DIR/nginx.conf for $nginx_workers workers (default one), logs,
# pid and temp files in DIR, no access log, keep-alive without a request limit, and SERVERS
# (upstream/server blocks) in http.
write_nginx_conf() {
  local dir=$1 servers=$2
  cat > "$dir/nginx.conf" <<CONF
worker_processes ${nginx_workers:-1};
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir; proxy_temp_path $dir;
  fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  keepalive_requests 1000000;
  $servers
}
CONF
}

# start_origin PORT [LAUNCHER...]: an nginx origin on 127.0.0.1:PORT serving /64 (64 bytes) and
# /16k (16 KiB) with keep-alive, started through LAUNCHER (e.g. `taskset -c 1`) when given.
start_origin() {
  local port=$1; shift
  mkdir -p "$work/www" "$work/origin"
  chmod 755 "$work" "$work/www"   # nginx workers run as an unprivileged user
  head -c 64 /dev/zero | tr '\0' 'a' > "$work/www/64"
  head -c 16384 /dev/zero | tr '\0' 'b' > "$work/www/16k"
  write_nginx_conf "$work/origin" \
    "server { listen 127.0.0.1:$port; root $work/www; default_type text/plain; }"
  "$@" nginx -p "$work/origin" -c "$work/origin/nginx.conf" -g 'daemon off;' &
  pids+=($!)
}
