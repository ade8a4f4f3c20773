#!/usr/bin/env python3
"""What a client connection holding an unfinished request head costs waitroomd.

Starts waitroomd (one worker, no origin needed: no request is ever complete), opens N
connections that each send HEAD_BYTES of a request head that never ends, and reports the
daemon's resident memory before and after, per connection. Then the same for N idle
connections (connected, nothing sent) as the baseline of a connection itself.

    bench/head_memory.py build/src/waitroomd [N] [HEAD_BYTES] [extra limits YAML]

The extra limits are appended to the limits section, e.g. ", header_buffer_budget: 1GiB".
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settle(pid, seconds=1.5):
    """RSS once it has stopped growing for `seconds` (the daemon reads what was sent)."""
    last = rss_kib(pid)
    stable_since = time.monotonic()
    while time.monotonic() - stable_since < seconds:
        time.sleep(0.1)
        now = rss_kib(pid)
        if now != last:
            last = now
            stable_since = time.monotonic()
    return last


def answered_or_closed(s):
    """True when the gateway answered (a 408) or closed the connection."""
    try:
        return s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    except OSError:
        return True


def start(binary, extra):
    folder = tempfile.mkdtemp(prefix="head-memory-")
    path = os.path.join(folder, "config.yaml")
    with open(path, "w") as f:
        f.write('admin: {listen: ""}\nlisten: ["127.0.0.1:0"]\nthreads: 1\n'
                'origin: {url: "http://127.0.0.1:9"}\nlogging: {level: info}\n'
                "limits: {header_timeout: 120s, keepalive_timeout: 120s, "
                f"max_connections: 100000{extra}}}\n")
    proc = subprocess.Popen([binary, "-c", path], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            # Keep reading its output, or a full pipe would stop the daemon.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, int(m.group(1))
    raise RuntimeError("waitroomd did not announce a listener")


def measure(binary, n, head_bytes, extra, send):
    proc, port = start(binary, extra)
    try:
        before = settle(proc.pid)
        head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: "
        head += b"p" * max(0, head_bytes - len(head))
        conns = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            if send:
                s.sendall(head)
            conns.append(s)
        after = settle(proc.pid)
        answered = sum(1 for s in conns if answered_or_closed(s))
        for s in conns:
            s.close()
        return before, after, n - answered
    finally:
        proc.terminate()
        proc.wait()


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    head_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 16 * 1024 - 64
    extra = sys.argv[4] if len(sys.argv) > 4 else ""
    for label, send in (("unfinished head", True), ("connected, nothing sent", False)):
        before, after, held = measure(binary, n, head_bytes, extra, send)
        per = (after - before) * 1024 / n
        print(f"{label}: {n} connections ({held} still waiting), RSS {before} KiB -> "
              f"{after} KiB, {per:,.0f} bytes each")


if __name__ == "__main__":
    main()
