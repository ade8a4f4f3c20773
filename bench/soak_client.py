#!/usr/bin/env python3
"""Soak traffic for bench/soak.sh, besides wrk's admitted visitors: visitors of a small room
(new arrivals, queued visitors coming back with their cookie, admitted ones), and malformed or
hostile requests. Every answer is checked against what it must be; anything else counts as an
unexpected error. Prints one summary line at the end:

  soak_client requests=N unexpected=N by_kind=kind:ok/bad,...

  soak_client.py PORT SECONDS [THREADS]
"""
import random
import socket
import sys
import threading
import time

HOST = "127.0.0.1"
LINE = "/16k"  # the small room's path (bench/soak.sh): queue pages or the origin's 16 KiB
VISITORS = 300  # returning visitors kept per thread; a new arrival replaces one at random


def read_response(sock, deadline):
    """One response (status, body) or (0, reason). Bodies by Content-Length or chunked."""
    buf = b""
    sock.settimeout(max(0.1, deadline - time.monotonic()))
    while b"\r\n\r\n" not in buf:
        part = sock.recv(65536)
        if not part:
            return 0, "closed before a response" if not buf else "closed inside a head"
        buf += part
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        return 0, "bad status line " + lines[0][:60]
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.setdefault(name.strip().lower(), []).append(value.strip())
    if "content-length" in fields:
        n = int(fields["content-length"][0])
        while len(rest) < n:
            part = sock.recv(65536)
            if not part:
                return 0, "body cut short"
            rest += part
        return status, (rest[:n], fields)
    if fields.get("transfer-encoding", [""])[0].lower() == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            part = sock.recv(65536)
            if not part:
                return 0, "chunked body cut short"
            rest += part
        return status, (rest, fields)
    return status, (rest, fields)


def exchange(raw, timeout=10.0):
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((HOST, PORT), timeout=timeout) as s:
            s.sendall(raw)
            return read_response(s, deadline)
    except OSError as e:
        return 0, "socket: %s" % e


def request(path, cookie=None, accept=None):
    h = "GET %s HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: soak\r\n" % path
    if cookie:
        h += "Cookie: %s\r\n" % cookie
    if accept:
        h += "Accept: %s\r\n" % accept
    return (h + "\r\n").encode()


def room_cookie(fields):
    for v in fields.get("set-cookie", []):
        if v.startswith("_cfwaitingroom"):
            return v.split(";", 1)[0]
    return None


# Malformed or hostile requests and the statuses each may get (never a 5xx, never silence).
BAD = [
    ("garbage", b"GARBAGE\r\n\r\n", {400}),
    ("cl_and_te", b"POST /64 HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 5\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", {400}),
    ("two_lengths", b"POST /64 HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 1\r\n"
     b"Content-Length: 2\r\n\r\nab", {400}),
    ("bad_chunk", b"POST /64 HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\n", {400}),
    ("nul_in_field", b"GET /64 HTTP/1.1\r\nHost: shop.test\r\nX-A: a\x00b\r\n\r\n", {400}),
    ("huge_head", b"GET /64 HTTP/1.1\r\nHost: shop.test\r\nX-Pad: " + b"p" * 20000 + b"\r\n\r\n",
     {431, 400}),
    ("te_on_1_0", b"POST /64 HTTP/1.0\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n", {400}),
    ("forged_cookie", b"GET " + LINE.encode() + b" HTTP/1.1\r\nHost: shop.test\r\n"
     b"Cookie: _cfwaitingroom=AAAAforgedAAAA\r\n\r\n", {200}),
    ("two_hosts", b"GET /64 HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", {400}),
]

lock = threading.Lock()
stats = {}  # kind -> [ok, bad]
examples = []


def count(kind, ok, what=""):
    with lock:
        s = stats.setdefault(kind, [0, 0])
        s[0 if ok else 1] += 1
        if not ok and len(examples) < 20:
            examples.append("%s: %s" % (kind, what))


def visitor_loop(end, seed):
    rng = random.Random(seed)
    jars = [None] * VISITORS
    while time.monotonic() < end:
        roll = rng.random()
        if roll < 0.10:
            kind, raw, want = rng.choice(BAD)
            status, detail = exchange(raw)
            count("bad_" + kind, status in want, "%s %s" % (status, str(detail)[:80]))
            continue
        if roll < 0.13:
            # Half a request, then gone: the daemon must just drop it.
            try:
                with socket.create_connection((HOST, PORT), timeout=5) as s:
                    s.sendall(b"GET /64 HTTP/1.1\r\nHost: sho")
            except OSError:
                pass
            continue
        i = rng.randrange(VISITORS)
        kind = "returning" if jars[i] else "new"
        if roll < 0.25:
            jars[i], kind = None, "new"
        accept = "application/json" if rng.random() < 0.2 else None
        status, detail = exchange(request(LINE, jars[i], accept))
        if status != 200:
            count(kind, False, "%s %s" % (status, str(detail)[:80]))
            continue
        body, fields = detail
        c = room_cookie(fields)
        if c:
            jars[i] = c
        ok = len(body) == 16384 or b"You are in line" in body or b'"cfWaitingRoom"' in body
        count(kind, ok, "unexpected body %r" % body[:60])


if __name__ == "__main__":
    PORT = int(sys.argv[1])
    seconds = float(sys.argv[2])
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    end = time.monotonic() + seconds
    ts = [threading.Thread(target=visitor_loop, args=(end, k)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    total = sum(a + b for a, b in stats.values())
    bad = sum(b for _, b in stats.values())
    kinds = ",".join("%s:%d/%d" % (k, v[0], v[1]) for k, v in sorted(stats.items()))
    print("soak_client requests=%d unexpected=%d by_kind=%s" % (total, bad, kinds))
    for e in examples:
        print("  " + e)
