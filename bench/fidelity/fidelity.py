#!/usr/bin/python3
"""Black-box fidelity harness: real waitroomd processes, realistic visitors, ground-truth scores.

It starts, on free loopback ports, a recording origin (in this process), one waitroomd with the
embedded store or three sharing a real redis-server, and drives a room with visitors that keep
their own cookie jars: they follow the `Refresh` header while queued (most as served, some late,
some early), browse a page every 5 s (±20 %) for 20–60 s once admitted, then leave without a
word; a share may give up while queued. Every score comes from ground truth: the origin's log
(who reached the site, when) and what each visitor saw (queue answers, the estimate shown).
The room's own counters are never used.

Standard library only.  See bench/README.md, "Fidelity against real processes".
"""

import argparse
import bisect
import fcntl
import http.client
import http.cookies
import http.server
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOM_ID = "fid"
HOST = "fid.test"

SCENARIOS = {
    # name: nodes, traffic shares, share of visitors that give up while queued
    "spike-1node": dict(nodes=1, shares=[1.0], abandon=0.0),
    "spike-1node-abandon30": dict(nodes=1, shares=[1.0], abandon=0.3),
    "spike-3nodes": dict(nodes=3, shares=[0.7, 0.2, 0.1], abandon=0.0),
    "spike-3nodes-abandon30": dict(nodes=3, shares=[0.7, 0.2, 0.1], abandon=0.3),
}

# The room and the crowd: a small room and a 20 s spike of three times its places (product time).
ROOM = dict(total_active_users=20, new_users_per_minute=60, session_s=60, refresh_s=5)
CROWD = dict(visitors=60, spike_s=20.0, browse_s=(20.0, 60.0), page_s=5.0, page_jitter=0.2,
             patience_s=(25.0, 35.0))
# How queued visitors honour Refresh: share, and the delay as a function of the served R.
REFRESHERS = [
    ("punctual", 0.70),  # R + page load: R x U(1.00, 1.05) + U(0.05, 0.5) s
    ("late", 0.20),      # background tab, slow network: R x U(1.3, 2.5)
    ("early", 0.10),     # reloads by hand: R x U(0.4, 0.9)
]
WINDOW_S = 10.0  # the engine's arrival bucket (room::windowing::window_ms)


_ports_given = set()


def free_port():
    """A loopback port free now and not given before by this process: the nodes bind theirs only
    once started, so the kernel may hand the port of one node's listener out again for the next
    node's admin (a node then failed to start: address already in use)."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        if p not in _ports_given:
            _ports_given.add(p)
            return p


# ---------------------------------------------------------------------------------------------
# The recording origin.

class Origin:
    def __init__(self):
        self.log = []  # (monotonic, visitor, page, node)
        self.lock = threading.Lock()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                t = time.monotonic()
                q = dict(p.split("=", 1) for p in self.path.partition("?")[2].split("&") if "=" in p)
                with outer.lock:
                    outer.log.append((t, int(q.get("v", -1)), int(q.get("k", -1)),
                                      int(q.get("n", -1))))
                body = b"origin page\n"
                # One write, so that Nagle and the gateway's delayed ACK add no 40 ms.
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                 b"X-Fid-Origin: 1\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(body), body))

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *a):
                pass

        http.server.ThreadingHTTPServer.daemon_threads = True
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.srv.shutdown()


# ---------------------------------------------------------------------------------------------
# The daemons.

class Cluster:
    def __init__(self, args, sc, workdir, origin_port):
        self.args, self.sc, self.dir = args, sc, workdir
        self.procs, self.nodes, self.redis = [], [], None
        self.origin_port = origin_port
        self.scale = args.scale

    def start(self):
        # Harnesses running at once pick ports one at a time, and each holds the lock until its
        # daemons are bound: a port picked by probing is free only until someone binds it (and
        # waitroomd binds with SO_REUSEPORT, so two runs could otherwise share a listener).
        lockf = open(os.path.join(tempfile.gettempdir(), "waitroom-fidelity-ports.lock"), "w")
        fcntl.flock(lockf, fcntl.LOCK_EX)
        try:
            self._start()
        finally:
            fcntl.flock(lockf, fcntl.LOCK_UN)
            lockf.close()

    def _start(self):
        d = self.dir
        key = subprocess.run([self.args.waitroomd, "keygen"], check=True, capture_output=True,
                             text=True).stdout.strip()
        keyfile = os.path.join(d, "k1.key")
        with open(keyfile, "w") as f:
            f.write(key + "\n")
        os.chmod(keyfile, 0o600)
        redis_port = None
        if self.sc["nodes"] > 1:
            redis_port = free_port()
            self.redis = subprocess.Popen(
                [self.args.redis_server, "--port", str(redis_port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", d, "--logfile",
                 os.path.join(d, "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self._wait_tcp(redis_port)
        # Product time: every configured duration is product time; only the sync timer runs on
        # real time, so scale it down to keep one product second per sync (see README).
        sync_ms = max(10, int(round(1000 / self.scale)))
        for i in range(self.sc["nodes"]):
            port, admin = free_port(), free_port()
            cfg = os.path.join(d, f"node{i + 1}.yaml")
            state = (f"state: {{backend: redis, url: \"redis://127.0.0.1:{redis_port}/0\", "
                     f"sync_interval: {sync_ms}ms}}" if redis_port else
                     f"state: {{backend: local, sync_interval: {sync_ms}ms}}")
            with open(cfg, "w") as f:
                f.write(f"""listen: ["127.0.0.1:{port}"]
threads: {self.args.threads}
origin: {{url: "http://127.0.0.1:{self.origin_port}", max_connections_per_client: 0}}
node: {{id: node-{i + 1}}}
cookie:
  keys: [{{id: k1, secret_file: {keyfile}}}]
{state}
admin: {{listen: "127.0.0.1:{admin}"}}
logging: {{level: info, access_log: {os.path.join(d, f"access{i + 1}.jsonl")}}}
testing: {{time_scale: {self.scale}}}
rooms:
  - id: {ROOM_ID}
    name: Fidelity
    host: {HOST}
    total_active_users: {ROOM['total_active_users']}
    new_users_per_minute: {ROOM['new_users_per_minute']}
    session_duration: {ROOM['session_s']}s
    refresh_interval: {ROOM['refresh_s']}s
    json_response_enabled: true
""")
            self.nodes.append(dict(port=port, admin=admin, cfg=cfg))
        # Start the nodes together: under a time_scale each node's product clock starts at its
        # own start, so a late node's clock lags by (delay x scale).
        for i, n in enumerate(self.nodes):
            log = open(os.path.join(d, f"node{i + 1}.log"), "w")
            p = subprocess.Popen([self.args.waitroomd, "-c", n["cfg"]], stdout=log,
                                 stderr=subprocess.STDOUT)
            self.procs.append(p)
        for p, n in zip(self.procs, self.nodes):
            self._wait_ready(n["admin"], p)
        time.sleep(0.2)
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                raise RuntimeError(f"node {i + 1} exited ({p.returncode}); see {d}/node{i + 1}.log")

    def _wait_tcp(self, port, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"port {port} never opened")

    def _wait_ready(self, admin, proc, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"a node exited at start ({proc.returncode})")
            try:
                c = http.client.HTTPConnection("127.0.0.1", admin, timeout=1)
                c.request("GET", "/readyz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"node with admin {admin} never ready")

    def metrics(self):
        out = []
        for n in self.nodes:
            try:
                c = http.client.HTTPConnection("127.0.0.1", n["admin"], timeout=2)
                c.request("GET", "/metrics")
                out.append(c.getresponse().read().decode())
                c.close()
            except OSError as e:
                out.append(f"# error {e}")
        return out

    def stop(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.redis:
            self.redis.terminate()
            self.redis.wait(5)


# ---------------------------------------------------------------------------------------------
# Visitors.

class Visitor(threading.Thread):
    def __init__(self, h, vid, arrival, node, kind, patience, rng):
        super().__init__(daemon=True)
        self.h, self.vid, self.arrival, self.node = h, vid, arrival, node
        self.kind, self.patience, self.rng = kind, patience, rng
        self.jar = {}
        self.conns = {}
        self.log = []  # dicts: t (monotonic at answer), kind, refresh, wait, pos, known, cookie
        self.admitted_seen = None
        self.gave_up = None
        self.lost = False
        self.errors = 0
        self.page = 0
        self.browse_s = None

    def sleep_until(self, t):
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)

    def request(self, node):
        port = self.h.cluster.nodes[node]["port"]
        headers = {"Host": HOST, "Accept": "application/json", "User-Agent": f"fid/{self.vid}"}
        if self.jar:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.jar.items())
        self.page += 1
        path = f"/shop?v={self.vid}&k={self.page}&n={node}"
        for attempt in range(3):
            c = self.conns.get(node)
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                self.conns[node] = c
            t_send = time.monotonic()
            try:
                c.request("GET", path, headers=headers)
                r = c.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                self.conns.pop(node, None)
                self.errors += 1
                continue
            t = time.monotonic()
            for sc in r.msg.get_all("Set-Cookie") or []:
                ck = http.cookies.SimpleCookie()
                ck.load(sc)
                for name, m in ck.items():
                    if m["max-age"] == "0":
                        self.jar.pop(name, None)
                    else:
                        self.jar[name] = m.value
            rec = dict(t=t, t_send=t_send, node=node, status=r.status,
                       cookie=self.jar.get("_cfwaitingroom"))
            if r.getheader("X-Fid-Origin"):
                rec["kind"] = "origin"
            elif r.getheader("Refresh") is not None:
                rec["kind"] = "queue"
                rec["refresh"] = float(r.getheader("Refresh"))
                try:
                    j = json.loads(body)["cfWaitingRoom"]
                    rec.update(wait=j.get("waitTime"), wait_s=j.get("waitTimeSeconds"),
                               known=j.get("waitTimeKnown"),
                               pos=j.get("queuePosition"), p25=j.get("waitTime25Percentile"),
                               p75=j.get("waitTime75Percentile"))
                except (ValueError, KeyError):
                    pass
            else:
                rec["kind"] = f"other-{r.status}"
            self.log.append(rec)
            return rec
        rec = dict(t=time.monotonic(), node=node, kind="error")
        self.log.append(rec)
        return rec

    def pick_node(self):
        if self.h.args.lb == "spread":
            return self.h.pick_node(self.rng)
        return self.node

    def refresh_delay(self, served):
        r = self.rng
        if self.kind == "punctual":
            d = served * r.uniform(1.0, 1.05) + r.uniform(0.05, 0.5)
        elif self.kind == "late":
            d = served * r.uniform(1.3, 2.5)
        else:
            d = served * r.uniform(0.4, 0.9)
        return d / self.h.args.scale

    def run(self):
        S = self.h.args.scale
        t0 = self.h.t0
        self.sleep_until(t0 + self.arrival / S)
        while True:
            rec = self.request(self.pick_node())
            if rec["kind"] == "origin":
                break
            if rec["kind"] == "queue":
                nxt = time.monotonic() + self.refresh_delay(rec["refresh"])
                if self.patience is not None:
                    give_up = t0 + (self.arrival + self.patience) / S
                    if nxt > give_up:
                        self.sleep_until(give_up)
                        self.gave_up = max(time.monotonic(), rec["t"])
                        return
                self.sleep_until(nxt)
            else:
                time.sleep(1.0 / S)
            if time.monotonic() > self.h.deadline:
                return
        # Admitted: browse a page every 5 s (±20 %) for 20-60 s, then leave without a word.
        self.admitted_seen = rec["t"]
        self.browse_s = self.rng.uniform(*CROWD["browse_s"])
        end = rec["t"] + self.browse_s / S
        p = CROWD["page_s"]
        nxt = rec["t"] + self.rng.uniform(p * (1 - CROWD["page_jitter"]),
                                          p * (1 + CROWD["page_jitter"])) / S
        while nxt <= end:
            self.sleep_until(nxt)
            rec = self.request(self.pick_node())
            if rec["kind"] == "queue":
                self.lost = True  # the room forgot a live session
                return
            nxt = rec["t"] + self.rng.uniform(p * (1 - CROWD["page_jitter"]),
                                              p * (1 + CROWD["page_jitter"])) / S
        for c in self.conns.values():
            c.close()


class Harness:
    def __init__(self, args, name):
        self.args, self.name, self.sc = args, name, SCENARIOS[name]
        self.rng = random.Random(args.seed)

    def pick_node(self, rng):
        x, acc = rng.random(), 0.0
        for i, s in enumerate(self.sc["shares"]):
            acc += s
            if x < acc:
                return i
        return len(self.sc["shares"]) - 1

    def run(self):
        args = self.args
        S = args.scale
        workdir = tempfile.mkdtemp(prefix=f"fid-{self.name}-", dir=args.tmp)
        origin = Origin()
        self.cluster = Cluster(args, self.sc, workdir, origin.port)
        cpu0 = os.times()
        try:
            self.cluster.start()
            rng = self.rng
            kinds = [k for k, _ in REFRESHERS]
            weights = [w for _, w in REFRESHERS]
            visitors = []
            # The nodes run a few product seconds before the spike (first syncs done), and the
            # spike starts at a random phase of the window.
            lead = args.lead + rng.uniform(0, WINDOW_S)
            arrivals = sorted(lead + rng.uniform(0, CROWD["spike_s"])
                              for _ in range(CROWD["visitors"]))
            for vid, a in enumerate(arrivals):
                kind = rng.choices(kinds, weights)[0]
                patience = (rng.uniform(*CROWD["patience_s"])
                            if rng.random() < self.sc["abandon"] else None)
                v = Visitor(self, vid, a, self.pick_node(rng), kind, patience,
                            random.Random(rng.getrandbits(64)))
                visitors.append(v)
            self.t0 = time.monotonic()
            self.wall0 = time.time()
            self.deadline = self.t0 + args.max_product_s / S
            for v in visitors:
                v.start()
            for v in visitors:
                v.join(max(0.0, self.deadline - time.monotonic() + 30 / S))
            self.t_end = time.monotonic()
            metrics = self.cluster.metrics()
        finally:
            self.cluster.stop()
            origin.stop()
        cpu1 = os.times()
        self.prod_offset_s = estimate_offset(self, visitors)
        res = score(self, visitors, origin.log, workdir)
        res["harness_cpu_s"] = round((cpu1.user - cpu0.user) + (cpu1.system - cpu0.system), 2)
        res["daemon_cpu_s"] = round((cpu1.children_user - cpu0.children_user) +
                                    (cpu1.children_system - cpu0.children_system), 2)
        res["real_s"] = round(self.t_end - self.t0, 1)
        res["loadavg"] = os.getloadavg()
        res["workdir"] = workdir
        with open(os.path.join(workdir, "metrics.txt"), "w") as f:
            f.write("\n\n".join(metrics))
        with open(os.path.join(workdir, "visitors.json"), "w") as f:
            json.dump([dict(vid=v.vid, arrival=v.arrival, node=v.node, kind=v.kind,
                            patience=v.patience, browse_s=v.browse_s, lost=v.lost,
                            gave_up=v.gave_up and (v.gave_up - self.t0) * S,
                            log=[{k: ((x - self.t0) * S if k in ("t", "t_send") else x)
                                  for k, x in r.items()} for r in v.log]) for v in visitors],
                      f, indent=0)
        with open(os.path.join(workdir, "origin.tsv"), "w") as f:
            for t, v, k, n in sorted(origin.log):
                f.write(f"{(t - self.t0) * S:.3f}\t{v}\t{k}\t{n}\n")
        with open(os.path.join(workdir, "result.json"), "w") as f:
            json.dump(res, f, indent=1)
        if not args.keep:
            for fn in os.listdir(workdir):
                if fn.endswith((".key", ".rdb")):
                    os.remove(os.path.join(workdir, fn))
        return res


# ---------------------------------------------------------------------------------------------
# Scores, from ground truth only.

def decode_cookie(waitroomd, cfg, value):
    r = subprocess.run([waitroomd, "cookie", "-c", cfg, "--room", ROOM_ID, value],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def inversions(adm):
    """adm: list of (admitted_at, window). Pairs from different windows, and those where the
    later window was admitted strictly first."""
    inv = pairs = 0
    for i in range(len(adm)):
        for j in range(i + 1, len(adm)):
            (ta, wa), (tb, wb) = adm[i], adm[j]
            if wa == wb:
                continue
            pairs += 1
            if (wa < wb and ta > tb) or (wb < wa and tb > ta):
                inv += 1
    return inv, pairs


def arrivals_as_seen(h, V, off):
    """Sets d["seen"], when each visitor reached the room on the product clock (absolute s), for
    the arrival windows. It is the first request's send time: the harness's own lag behind the
    planned arrival (threads waking late on a loaded machine, up to a quarter second seen) is not
    the visitor's. Within the first answer's latency (plus 50 ms of clock offset) of a window's
    edge, the harness cannot tell which side of it the daemon read its clock, so there the
    window is the one the room sealed in the visitor's first cookie (its arrival bucket), if it
    is one of the two at that edge. Returns [buckets farther off than that, cookies decoded]:
    any of the first would be the room misplacing a visitor, not a tie."""
    S = h.args.scale
    P = lambda t: (t - h.t0) * S
    far = checked = 0
    for d in V:
        first = d["log"][0] if d["log"] else None
        if first is None or "t_send" not in first:
            d["seen"] = d["arrival"] + off
            continue
        seen = P(first["t_send"]) + off
        d["seen"] = seen
        c = (decode_cookie(h.args.waitroomd, h.cluster.nodes[first["node"]]["cfg"], first["cookie"])
             if h.args.decode and first.get("cookie") else None)
        if not c or "bucket" not in c:
            continue
        checked += 1
        room_w = int(c["bucket"]) // int(WINDOW_S * 1000)
        mine = math.floor(seen / WINDOW_S)
        if room_w == mine:
            continue
        tol = (first["t"] - first["t_send"] + 0.05) * S
        edge = (mine + 1) * WINDOW_S if room_w == mine + 1 else mine * WINDOW_S
        if room_w in (mine - 1, mine + 1) and abs(seen - edge) <= tol:
            d["seen"] = edge + (1e-6 if room_w > mine else -1e-6)
        else:
            far += 1
    return [far, checked]


def score(h, visitors, olog, workdir):
    S = h.args.scale
    A, R = ROOM["total_active_users"], ROOM["new_users_per_minute"]
    sess = ROOM["session_s"]
    P = lambda t: (t - h.t0) * S  # product seconds since t0

    first_o, last_o = {}, {}
    for t, v, k, n in sorted(olog):
        first_o.setdefault(v, P(t))
        last_o[v] = P(t)
    V = []
    for v in visitors:
        q = [r for r in v.log if r["kind"] == "queue"]
        d = dict(vid=v.vid, arrival=v.arrival, node=v.node, kind=v.kind,
                 admit=first_o.get(v.vid), last=last_o.get(v.vid),
                 first_q=P(q[0]["t"]) if q else None, q0=q[0] if q else None,
                 gave_up=P(v.gave_up) if v.gave_up else None, lost=v.lost,
                 first_cookie=v.log[0].get("cookie") if v.log else None, log=v.log)
        V.append(d)
    adm_t = sorted(d["admit"] for d in V if d["admit"] is not None)
    ends = sorted(d["last"] + sess for d in V if d["admit"] is not None)
    qf = sorted(d["first_q"] for d in V if d["first_q"] is not None)
    qt = sorted((d["admit"] if d["admit"] is not None else d["gave_up"] if d["gave_up"]
                 is not None else math.inf) for d in V if d["first_q"] is not None)
    up = lambda arr, t: bisect.bisect_right(arr, t)
    active = lambda t: up(adm_t, t) - up(ends, t)
    adm60 = lambda t: up(adm_t, t) - up(adm_t, t - 60)
    waiting = lambda t: up(qf, t) - up(qt, t)

    res = dict(scenario=h.name, seed=h.args.seed, scale=S, nodes=h.sc["nodes"],
               lb=h.args.lb if h.sc["nodes"] > 1 else "-")
    res["arrivals"] = len(V)
    res["admitted"] = len(adm_t)
    res["queued"] = len(qf)
    res["abandoned"] = sum(1 for d in V if d["gave_up"] is not None)
    res["still_waiting"] = sum(1 for d in V if d["first_q"] is not None and d["admit"] is None
                               and d["gave_up"] is None)
    res["lost_sessions"] = sum(1 for d in V if d["lost"])
    res["errors"] = sum(v.errors for v in visitors)
    res["overshoot_active"] = max((active(t) for t in adm_t), default=0) / A - 1
    res["overshoot_rate"] = max((adm60(t) for t in adm_t), default=0) / R - 1

    # Onset: the first visitor queued while nobody truly waited.
    onset = None
    for d in sorted((d for d in V if d["first_q"] is not None), key=lambda d: d["first_q"]):
        t = d["first_q"]
        if waiting(t - 1e-9) == 0:
            onset = max(active(t) / A, adm60(t) / R)
            res["onset_at_s"] = round(t, 2)
            # Diagnostic, not scored: admissions in flight then (their request sent before this
            # queue answer came back, at the origin only after it). The gateway may have given
            # their places before it answered the queue page (proxying takes longer than a queue
            # answer), or after it: the visitors' clocks cannot tell which, nor the access log's
            # milliseconds (a request admitted 0.2 ms before the queue's first by its start).
            fly = 0
            for o in V:
                sent = next((r.get("t_send") for r in o["log"] if r.get("kind") == "origin"), None)
                if o["admit"] is not None and sent is not None and P(sent) <= t < o["admit"]:
                    fly += 1
            res["onset_in_flight"] = fly
            break
    res["queue_onset_utilization"] = onset

    # Idle capacity while someone waits: mean over product time (10 ms steps) with >= 1 truly
    # waiting of max(0, min((A - active)/A, (R - admitted_60s)/R)).
    # Attribution: the store counts a session until floor(last check-in, window) + window +
    # session_duration (limits.hpp, active_window_live), i.e. up to one window longer than
    # the visitor's own session. `held` is the share of the idle capacity that is such
    # sessions, `unheld` what was free in the room's own count too.
    # The store's windows are aligned on the product clock's epoch.
    off = h.prod_offset_s
    store_ends = sorted((math.floor((d["last"] + off) / WINDOW_S) * WINDOW_S + WINDOW_S + sess
                         - off) for d in V if d["admit"] is not None)
    store_active = lambda t: up(adm_t, t) - up(store_ends, t)
    step = 0.01
    t, tmax = 0.0, max([x for x in qt if x != math.inf] + [d["first_q"] or 0 for d in V] +
                       [P(h.t_end)])
    idle_sum = held_sum = n = 0
    idle_intervals = []
    cur = None
    while t < tmax:
        if waiting(t) > 0:
            free = max(0.0, min((A - active(t)) / A, (R - adm60(t)) / R))
            sfree = max(0.0, min((A - store_active(t)) / A, (R - adm60(t)) / R))
            idle_sum += free
            held_sum += max(0.0, free - sfree)
            n += 1
            if free > 0 and cur is None:
                cur = [t, t]
            elif free > 0:
                cur[1] = t
            elif cur is not None:
                idle_intervals.append(cur)
                cur = None
        elif cur is not None:
            idle_intervals.append(cur)
            cur = None
        t += step
    res["idle_capacity_while_queued"] = idle_sum / n if n else None
    res["idle_held_by_window_rounding"] = held_sum / n if n else None
    res["waiting_seconds"] = round(n * step, 1)

    # FIFO inversions between arrival windows, on the product clock's windows (the daemon's
    # arrival buckets at WINDOW_S, and arrival minutes).
    check = arrivals_as_seen(h, V, off)
    adm = [(d["admit"], d["seen"]) for d in V if d["admit"] is not None]
    for label, W in (("10s", WINDOW_S), ("60s", 60.0), ("5s", 5.0)):
        inv, pairs = inversions([(t, math.floor(a / W)) for t, a in adm])
        res[f"fifo_inversions_{label}"] = inv / pairs if pairs else None
        res[f"fifo_pairs_{label}"] = [inv, pairs]
    # Ordering within the queue only (both queued), for the explanation.
    qadm = [(d["admit"], math.floor(d["seen"] / WINDOW_S), d) for d in V
            if d["admit"] is not None and d["first_q"] is not None]
    causes = dict(earlier_absent=0, earlier_refused=0)
    kinds = {}  # refresher kind of the visitor passed
    refused_examples = []
    for a in qadm:
        for b in qadm:
            if a[1] < b[1] and a[0] > b[0]:  # a arrived in an earlier window, admitted later
                # Did a get a queue answer after b was admitted (refused while b was in)?
                later = [r for r in a[2]["log"] if r["kind"] == "queue" and P(r["t"]) > b[0]]
                kinds[a[2]["kind"]] = kinds.get(a[2]["kind"], 0) + 1
                if later:
                    causes["earlier_refused"] += 1
                    if len(refused_examples) < 5:
                        refused_examples.append(dict(
                            earlier=a[2]["vid"], later=b[2]["vid"],
                            later_admit=round(b[0], 2), earlier_refused_at=round(P(later[0]["t"]), 2),
                            earlier_admit=round(a[0], 2)))
                else:
                    causes["earlier_absent"] += 1
    res["fifo_inversion_causes_10s"] = causes
    res["fifo_refused_examples"] = refused_examples
    res["fifo_passed_by_kind"] = kinds
    res["refreshers"] = {k: sum(1 for d in V if d["kind"] == k) for k, _ in REFRESHERS}

    # Wait estimate on the first queue answer vs the wait it actually had (admitted − first queue
    # answer), at its finest: waitTimeSeconds, which the page shows, where the answer has it;
    # waitTime (whole minutes) alone gives the _minutes figures.
    errs, biases, waits, pos_err = [], [], [], []
    m_errs, m_biases = [], []
    for d in V:
        if d["first_q"] is None or d["admit"] is None:
            continue
        actual = d["admit"] - d["first_q"]
        waits.append(actual)
        q0 = d["q0"]
        if actual > 0 and q0.get("known"):
            est_m = q0["wait"] * 60.0
            est = float(q0["wait_s"]) if q0.get("wait_s") is not None else est_m
            errs.append(abs(est - actual) / actual)
            biases.append((est - actual) / actual)
            m_errs.append(abs(est_m - actual) / actual)
            m_biases.append((est_m - actual) / actual)
    res["eta_error_median"] = statistics.median(errs) if errs else None
    res["eta_bias_median"] = statistics.median(biases) if biases else None
    res["eta_error_minutes_median"] = statistics.median(m_errs) if m_errs else None
    res["eta_bias_minutes_median"] = statistics.median(m_biases) if m_biases else None
    res["wait_median_s"] = statistics.median(waits) if waits else None
    res["wait_max_s"] = max(waits) if waits else None
    # The turnover the room really had while visitors waited: sessions ended per minute.
    if adm_t and qf:
        span = [qf[0], max(x for x in qt if x != math.inf) if any(x != math.inf for x in qt)
                else qf[0]]
        from_q = [t for t in adm_t if span[0] < t <= span[1]]
        res["admissions_per_min_while_queued"] = (len(from_q) / ((span[1] - span[0]) / 60)
                                                  if span[1] > span[0] else None)
    res["session_len_mean_s"] = statistics.mean(
        [d["last"] + sess - d["admit"] for d in V if d["admit"] is not None]) if adm_t else None
    # Refresh values served to queued visitors.
    served = [r["refresh"] for d in V for r in d["log"] if r["kind"] == "queue"]
    res["refresh_served"] = {str(int(k)): served.count(k) for k in sorted(set(served))}
    res["bucket_check"] = check
    # Starvation check: real-time latency of every answer (a CPU-starved run shows it here).
    lat = sorted((r["t"] - r["t_send"]) * 1000 for d in V for r in d["log"] if "t_send" in r)
    if lat:
        res["latency_ms"] = dict(p50=round(lat[len(lat) // 2], 2),
                                 p99=round(lat[int(len(lat) * 0.99)], 2), max=round(lat[-1], 2),
                                 n=len(lat))
    res["idle_intervals"] = [[round(a, 2), round(b, 2)] for a, b in idle_intervals]
    return res


def estimate_offset(h, visitors):
    """Product seconds (absolute, Unix epoch) at harness product time 0, from the visitors'
    cookies: last_check_in is the product clock at the answer."""
    S = h.args.scale
    if S == 1.0:
        return h.wall0 - 0.0  # product clock = wall clock; product t = (mono - t0)
    samples = []
    for v in visitors:
        for r in v.log[:1]:
            if r.get("cookie"):
                c = decode_cookie(h.args.waitroomd, h.cluster.nodes[r["node"]]["cfg"], r["cookie"])
                if c and c.get("last_check_in"):
                    samples.append(c["last_check_in"] / 1000.0 - (r["t"] - h.t0) * S)
        if len(samples) >= 9:
            break
    return statistics.median(samples) if samples else h.wall0


FIELDS = [("overshoot_active", "overshoot active", 1), ("overshoot_rate", "overshoot rate", 1),
          ("queue_onset_utilization", "onset", 1), ("idle_capacity_while_queued", "idle", 2),
          ("fifo_inversions_10s", "FIFO inv. 10 s", 2), ("fifo_inversions_60s", "FIFO inv. 60 s", 2),
          ("eta_error_median", "ETA error", 1), ("eta_bias_median", "ETA bias", 1)]


def fmt(v, digits):
    return "-" if v is None else f"{v * 100:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--build", default="build")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="testing.time_scale (product seconds per real second)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lb", choices=["sticky", "spread"], default="sticky")
    ap.add_argument("--threads", type=int, default=2, help="worker threads per node")
    ap.add_argument("--lead", type=float, default=5.0, help="product s before the spike")
    ap.add_argument("--max-product-s", type=float, default=900.0)
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--no-decode", dest="decode", action="store_false")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", help="append each result as one JSON line to this file")
    args = ap.parse_args()
    args.waitroomd = os.path.join(args.build, "src", "waitroomd")
    args.redis_server = shutil.which("redis-server") or "/usr/bin/redis-server"
    for name in args.scenarios:
        if name not in SCENARIOS:
            sys.exit(f"unknown scenario {name}; known: {', '.join(SCENARIOS)}")
    for name in args.scenarios:
        res = Harness(args, name).run()
        line = " | ".join(f"{label} {fmt(res.get(k), d)}" for k, label, d in FIELDS)
        print(f"{name} seed {args.seed} scale {args.scale:g}: {line} | admitted {res['admitted']}"
              f"/{res['arrivals']} abandoned {res['abandoned']} lost {res['lost_sessions']} "
              f"errors {res['errors']} | {res['workdir']}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
