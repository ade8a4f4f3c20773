# Loopback ports for scripts that start servers (sourced by bench/lib.sh and tests/package):
#   free_port            a port the kernel gave to a socket bound to 127.0.0.1:0 a moment ago
#   wait_port PORT       waits up to 10 s until something accepts on 127.0.0.1:PORT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
