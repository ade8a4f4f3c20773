#!/usr/bin/python3
"""Per-visitor distributions of the harness's real runs beside waitroom_sim's, to find where the
model and the daemons part (DESIGN.md §5: the simulator must agree with the harness).

  bench/fidelity/compare.py --real OUT/runs --sim SIMOUT/visitors [--scenario spike-1node]

--real: folders of fidelity.py runs at time_scale 1 (each with visitors.json, origin.tsv and
access1.jsonl), or a folder that holds them; --sim: the files `waitroom_sim --visitors` writes (DIR/visitors/NAME-SEED.json), or
their folder. Each side is pooled over its runs. Times are product seconds from the run's first
arrival, so the two clocks need not agree.

  bench/fidelity/compare.py --real OUT/runs --write-replay DIR   # each run's crowd, a scenario
  bench/fidelity/compare.py --paired OUT/results.jsonl --replayed SIMROOT  # run for run

Standard library only. See bench/README.md, "Simulator against the daemons".
"""

import argparse
import bisect
import glob
import json
import math
import os
import re
import statistics
import sys

SESSION_S = 60.0
WINDOW_S = 10.0  # the engine's arrival window


def product_offset(folder, origin_t):
    """The product clock at harness time 0, from the first admitted request in the access log
    (wall ms) and the origin's record of the same request: arrival windows are on that clock."""
    with open(os.path.join(folder, "access1.jsonl")) as f:
        for line in f:
            a = json.loads(line)
            qs = dict(x.split("=", 1) for x in a["target"].partition("?")[2].split("&") if "=" in x)
            key = (int(qs.get("v", -1)), int(qs.get("k", -1)))
            if a.get("decision") == "admit" and key in origin_t:
                return a["ts"] / 1000.0 - origin_t[key]
    raise SystemExit(f"{folder}: no admitted request in access1.jsonl to date the run")


def write_replay(folder, out_dir, here):
    """A waitroom_sim scenario with this run's crowd (visitors.replay), at the same phase of the
    arrival window and of the minute; returns its path."""
    with open(os.path.join(folder, "result.json")) as f:
        res = json.load(f)
    with open(os.path.join(folder, "visitors.json")) as f:
        vis = json.load(f)
    origin_t = {}
    with open(os.path.join(folder, "origin.tsv")) as f:
        for line in f:
            t, v, k, _ = line.split("\t")
            origin_t[(int(v), int(k))] = float(t)
    off = product_offset(folder, origin_t)
    first = min(v["arrival"] for v in vis)
    base = 60.0 * math.floor((off + first - 5.0) / 60.0)  # the simulator's run starts on a minute
    rows = []
    for v in vis:
        at = round((v["arrival"] + off - base) * 1000)
        row = f"    - {{at: {at}ms, kind: {v['kind']}, node: {v['node']}"
        if v.get("browse_s") is not None:
            row += f", browse: {round(v['browse_s'] * 1000)}ms"
        if v.get("patience") is not None:
            row += f", patience: {round(v['patience'] * 1000)}ms"
        rows.append(row + "}")
    name = f"{res['scenario']}-replay{res['seed']}"
    with open(os.path.join(here, "sim", res["scenario"] + ".yaml")) as f:
        text = f.read()
    lines = []
    for line in text.splitlines():
        if line.startswith("name:"):
            line = f"name: {name}"
        elif line.strip().startswith("crowd:"):
            line = f"  replay:   # {len(rows)} visitors of {os.path.abspath(folder)}\n" + \
                "\n".join(rows)
        lines.append(line)
    path = os.path.join(out_dir, name + ".yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def real_run(folder):
    """One harness run as per-visitor dicts."""
    with open(os.path.join(folder, "visitors.json")) as f:
        vis = json.load(f)
    first_o, last_o, pages, origin_t = {}, {}, {}, {}
    with open(os.path.join(folder, "origin.tsv")) as f:
        for line in f:
            t, v, k, _ = line.split("\t")
            t, v = float(t), int(v)
            origin_t[(v, int(k))] = t
            first_o.setdefault(v, t)
            last_o[v] = t
            pages[v] = pages.get(v, 0) + 1
    off = product_offset(folder, origin_t)
    out = []
    for v in vis:
        q = [r for r in v["log"] if r.get("kind") == "queue"]
        out.append(dict(
            window=math.floor((v["arrival"] + off) / WINDOW_S),
            arrival=v["arrival"], kind=v["kind"], node=v["node"],
            first_q=q[0]["t"] if q else None,
            wait_s=q[0].get("wait_s") if q and q[0].get("known") else None,
            pos=q[0].get("pos") if q else None,
            admit=first_o.get(v["vid"]), last=last_o.get(v["vid"]),
            pages=pages.get(v["vid"], 0), gave_up=v["gave_up"] or None,
            answers=[(r["t"], r["refresh"]) for r in q]))
    return out


def sim_run(path):
    with open(path) as f:
        vis = json.load(f)
    for v in vis:
        v["answers"] = [tuple(a) for a in v.pop("queue_answers")]
        v["window"] = math.floor(v["arrival"] / WINDOW_S)  # the run starts on a minute
    return vis


def rebase(run):
    """Times from the run's first arrival."""
    t0 = min(v["arrival"] for v in run)
    for v in run:
        for k in ("arrival", "first_q", "admit", "last", "gave_up"):
            if v.get(k) is not None:
                v[k] -= t0
        v["answers"] = [(t - t0, r) for t, r in v["answers"]]
    return run


def q(xs, ps=(0.1, 0.25, 0.5, 0.75, 0.9)):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return "-"
    pick = lambda p: xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
    return f"n={len(xs):4d} " + " ".join(f"{pick(p):7.2f}" for p in ps) + \
        f"  mean {statistics.mean(xs):7.2f}"


def idle_share(run, A=20, R=60, step=0.01):
    """fidelity.py's idle capacity while someone waits (10 ms steps), on either side's records:
    so that a difference is the runs', not the two scorers'."""
    adm = sorted(v["admit"] for v in run if v["admit"] is not None)
    ends = sorted(v["last"] + SESSION_S for v in run if v["admit"] is not None)
    qf = sorted(v["first_q"] for v in run if v["first_q"] is not None)
    qt = sorted(v["admit"] if v["admit"] is not None else v["gave_up"]
                if v["gave_up"] is not None else math.inf for v in run if v["first_q"] is not None)
    if not qf:
        return None
    up = bisect.bisect_right
    total = n = 0
    t, tmax = qf[0], max([x for x in qt if x != math.inf] + [qf[-1]])
    while t < tmax:
        if up(qf, t) - up(qt, t) > 0:
            active = up(adm, t) - up(ends, t)
            adm60 = up(adm, t) - up(adm, t - 60)
            total += max(0.0, min((A - active) / A, (R - adm60) / R))
            n += 1
        t += step
    return total / n if n else None


def measures(runs):
    """name -> list of values, pooled over runs."""
    m = {}

    def add(k, x):
        m.setdefault(k, []).append(x)

    for run in runs:
        queued = [v for v in run if v["first_q"] is not None]
        onset = min((v["first_q"] for v in queued), default=None)
        adm = sorted(v["admit"] for v in run if v["admit"] is not None)
        add("run: admitted before the first queue", sum(1 for a in adm if onset is None or a < onset))
        add("run: first queued at (s)", onset)
        add("run: queued", len(queued))
        idle = idle_share(run)
        add("run: idle capacity while queued, harness scorer (%)",
            None if idle is None else 100 * idle)
        add("run: gave up", sum(1 for v in run if v["gave_up"] is not None))
        add("run: last admission (s)", adm[-1] if adm else None)
        # Admissions of the queue, in generations: when the 21st, 30th, 40th visitor got in.
        for k in (21, 30, 40, 50):
            add(f"run: admission no. {k} at (s)", adm[k - 1] if len(adm) >= k else None)
        if queued:
            w0 = min(w["window"] for w in queued)
            add("run: queued in the queue's first window", sum(1 for w in queued if w["window"] == w0))
        # What the first answer's position should have been, from ground truth: those queued
        # before it in earlier windows and not yet gone, plus half its own window's so far.
        def gone(w, t):
            return (w["admit"] is not None and w["admit"] <= t) or \
                (w["gave_up"] is not None and w["gave_up"] <= t)
        for v in queued:
            t = v["first_q"]
            older = sum(1 for w in queued if w["window"] < v["window"] and w["first_q"] <= t
                        and not gone(w, t))
            own = sum(1 for w in queued if w["window"] == v["window"] and w["first_q"] <= t
                      and not gone(w, t))
            if v["pos"] is not None:
                add("queued: position shown - true position (older + own/2)",
                    v["pos"] - (older + own // 2))
            add("queued: windows of the queue before it", len({w["window"] for w in queued
                                                               if w["window"] < v["window"]}))
        for v in run:
            if v["admit"] is not None:
                add("session: last page - admission (s)", v["last"] - v["admit"])
                add("session: pages", v["pages"])
                add("session: admission to its end (s)", v["last"] + SESSION_S - v["admit"])
            if v["first_q"] is None:
                continue
            add("queued: first answer - arrival (s)", v["first_q"] - v["arrival"])
            add("queued: position on first answer", v["pos"])
            add("queued: estimate on first answer (s)", v["wait_s"])
            if v["wait_s"] is not None and v["pos"] is not None:
                add("queued: estimate / (position + 1) (s)", v["wait_s"] / (v["pos"] + 1))
            add("queued: answers", len(v["answers"]))
            for (t1, r), (t2, _) in zip(v["answers"], v["answers"][1:]):
                add("refresh: served (s)", r)
                add(f"refresh: gap / served, {v['kind']}", (t2 - t1) / r)
            if v["admit"] is not None and v["answers"]:
                t_last, r_last = v["answers"][-1]
                add(f"refresh: last answer to admission / served, {v['kind']}",
                    (v["admit"] - t_last) / r_last)
            if v["admit"] is None:
                continue
            actual = v["admit"] - v["first_q"]
            add("queued: actual wait (s)", actual)
            if v["wait_s"] is not None and actual > 0:
                add("queued: bias (estimate - actual) / actual", (v["wait_s"] - actual) / actual)
                add("queued: estimate - actual (s)", v["wait_s"] - actual)
    return m


def scenario_of(path):
    """fid-NAME-XXXXXXXX (a harness run), NAME-SEED.json or NAME-replayN-SEED.json (the
    simulator's): NAME."""
    base = os.path.basename(path.rstrip("/")).removeprefix("fid-").removesuffix(".json")
    return re.sub(r"-replay\d+$", "", base.rsplit("-", 1)[0])


def files_of(paths, real):
    """Harness run folders (real) or simulator visitor files, from the paths given or the
    folders that hold them."""
    out = []
    for p in paths:
        if real and os.path.isdir(p) and not os.path.exists(os.path.join(p, "visitors.json")):
            out += sorted(d for d in glob.glob(os.path.join(p, "*"))
                          if os.path.exists(os.path.join(d, "visitors.json")))
        elif not real and os.path.isdir(p):
            out += sorted(glob.glob(os.path.join(p, "*.json")))
        else:
            out.append(p)
    return out


# The scores set side by side run for run: (fidelity.py's name, where waitroom_sim keeps it).
PAIRED = [("eta_bias_median", "waits", "eta_bias_median"),
          ("eta_error_median", "metrics", "eta_error_median"),
          ("eta_bias_minutes_median", "waits", "eta_bias_minutes_median"),
          ("eta_error_minutes_median", "waits", "eta_error_minutes_median"),
          ("idle_capacity_while_queued", "metrics", "idle_capacity_while_queued"),
          ("fifo_inversions_10s", "metrics", "fifo_inversions"),
          ("queue_onset_utilization", "metrics", "queue_onset_utilization")]


def paired(results, replayed):
    """Each real run's scores beside the simulator's on the same crowd (its replay, median over
    the simulator's seeds), then per scenario the mean of each and of their difference."""
    real = {}
    for path in results:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                real[(r["scenario"], r["seed"])] = r
    agg = {}
    print("scenario seed | " + " | ".join(f"{k}: real sim" for k, _, _ in PAIRED))
    for (sc, seed), r in sorted(real.items()):
        path = os.path.join(replayed, f"{sc}-replay{seed}", "report.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            runs = json.load(f)["scenarios"][0]["runs"]
        cells = []
        for k, sect, sk in PAIRED:
            sv = [x[sect][sk] or 0.0 for x in runs]
            rv = r.get(k) or 0.0
            cells.append(f"{rv * 100:6.2f} {statistics.median(sv) * 100:6.2f}")
            agg.setdefault((sc, k), []).append((rv, statistics.mean(sv)))
        print(f"{sc} {seed} | " + " | ".join(cells))
    print("\nmean over the runs (the simulator: mean over its seeds first), in %")
    for (sc, k), v in sorted(agg.items()):
        print(f"{sc:24s} {k:28s} real {statistics.mean(a for a, _ in v) * 100:7.2f} "
              f"sim {statistics.mean(b for _, b in v) * 100:7.2f} "
              f"real - sim {statistics.mean(a - b for a, b in v) * 100:6.2f} (runs {len(v)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", nargs="+", default=[])
    ap.add_argument("--sim", nargs="+", default=[])
    ap.add_argument("--scenario", help="only runs of this scenario (folder/file name prefix)")
    ap.add_argument("--write-replay", metavar="DIR",
                    help="write, for each --real run, a waitroom_sim scenario with its crowd "
                         "(visitors.replay) to DIR, print their paths, and stop")
    ap.add_argument("--paired", nargs="+", metavar="RESULTS.jsonl",
                    help="fidelity.py results to set beside --replayed, run for run")
    ap.add_argument("--replayed", metavar="DIR",
                    help="folder of waitroom_sim --out folders named NAME-replaySEED")
    args = ap.parse_args()
    if args.paired:
        if not args.replayed:
            sys.exit("--paired needs --replayed")
        paired(args.paired, args.replayed)
        return
    keep = lambda f: not args.scenario or scenario_of(f) == args.scenario
    if args.write_replay:
        os.makedirs(args.write_replay, exist_ok=True)
        here = os.path.dirname(os.path.abspath(__file__))
        for f in files_of(args.real, real=True):
            if keep(f):
                print(write_replay(f, args.write_replay, here))
        return
    real = [rebase(real_run(f)) for f in files_of(args.real, real=True) if keep(f)]
    sim = [rebase(sim_run(f)) for f in files_of(args.sim, real=False) if keep(f)]
    if not real and not sim:
        sys.exit("no runs found")
    mr, ms = measures(real), measures(sim)
    print(f"real: {len(real)} runs, sim: {len(sim)} runs; quantiles 10 25 50 75 90 %, pooled")
    for k in sorted(set(mr) | set(ms)):
        print(k)
        print(f"  real {q(mr.get(k, []))}")
        print(f"  sim  {q(ms.get(k, []))}")


if __name__ == "__main__":
    main()
