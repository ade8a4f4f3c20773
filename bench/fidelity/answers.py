#!/usr/bin/env python3
"""Every queue answer's wait estimate against the wait then left, from fidelity runs.

fidelity.py scores the estimate on a visitor's first queue answer only. A queued visitor sees a
new estimate on every refresh; this reads the runs' visitors.json and scores all of them:
waitTimeSeconds of each queue answer against (admitted - that answer), for visitors who were
admitted, grouped by the time since the run's first queue answer. Answers with less than 5 s
left are skipped (a 10 s estimate of a 2 s wait is not an error worth a median).

    bench/fidelity/answers.py OUT [OUT...]     # OUT: run.sh's OUT folder(s)
    bench/fidelity/answers.py --sim DIR [DIR...]   # DIR: waitroom_sim --out DIR --visitors

With --sim it scores the simulator's visitor dumps (DIR/visitors/NAME-SEED.json) the same way,
one run per file, to check the simulator's every-answer estimates against the daemons'.

    bench/fidelity/answers.py --by-rank OUT [OUT...]   # also with --sim after it

--by-rank scores the first answers only, grouped by the visitor's rank in the queue (the order of
every queued visitor's first queue answer in the run, those who gave up too, in tens; one queue
a run, as in the harness's spikes): the front's wait is the first places to free, the
back's depends on how many ahead give up.

Prints, per scenario, the runs found, then for each phase the answers counted and the median
|error| / actual and signed error / actual in %, pooled over the runs ('first' = the first
answers, which fidelity.py scores; 'all' = every answer of every phase).
"""
import glob
import json
import os
import statistics
import sys

PHASES = [(0, 60), (60, 120), (120, 180), (180, 10**9)]


# Each run's answers are tuples (t, estimate s or None, wait left s or None, first answer?) for
# every queue answer of every queued visitor: estimate None when the answer had none
# (waitTimeKnown false), wait left None for a visitor never admitted (who gave up). Scores use
# the answers with both; ranks count every queued visitor.


def answers(run):
    with open(os.path.join(run, "visitors.json")) as f:
        visitors = json.load(f)
    out = []
    for v in visitors:
        queue = [e for e in v["log"] if e["kind"] == "queue"]
        if not queue:
            continue
        admit = next((e["t"] for e in v["log"] if e["kind"] == "origin" and e["t"] > queue[0]["t"]),
                     None)
        for i, e in enumerate(queue):
            known = e.get("known") and e.get("wait_s") is not None
            out.append((e["t"], float(e["wait_s"]) if known else None,
                        None if admit is None else admit - e["t"], i == 0))
    return out


def scored(a):
    """The answers of `a` with an estimate and a wait left."""
    return [x for x in a if x[1] is not None and x[2] is not None]


def first_answer_ranks(a):
    """Every queued visitor's first answer in `a`, ranked by its time (0 = the queue's first),
    as (rank, estimate, left) for those scored."""
    firsts = sorted(((t, est, left) for t, est, left, first in a if first), key=lambda x: x[0])
    return [(rank, est, left) for rank, (_, est, left) in enumerate(firsts)
            if est is not None and left is not None]


def sim_answers(path):
    """The same tuples from one waitroom_sim --visitors file (times already product seconds)."""
    with open(path) as f:
        visitors = json.load(f)
    out = []
    for v in visitors:
        answers = v.get("queue_answers") or []
        waits = v.get("queue_waits") or [None] * len(answers)
        admit = v.get("admit")
        for i, ((t, _), w) in enumerate(zip(answers, waits)):
            out.append((t, None if w is None else float(w), None if admit is None else admit - t,
                        i == 0))
    return out


def sim_runs(dirs):
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "visitors", "*.json"))):
            scenario = os.path.basename(path)[:-len(".json")].rsplit("-", 1)[0]
            yield scenario, 1.0, sim_answers(path)


def harness_runs(dirs):
    for out in dirs:
        for run in sorted(glob.glob(os.path.join(out, "runs", "*"))):
            res = os.path.join(run, "result.json")
            if not os.path.isdir(run) or not os.path.exists(res):
                continue
            with open(res) as f:
                scale = json.load(f).get("scale", 1.0)
                f.seek(0)
                scenario = json.load(f)["scenario"]
            yield scenario, scale, answers(run)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    dirs = [a for a in sys.argv[1:] if not a.startswith("--")]
    if flags - {"--by-rank", "--sim"} or not dirs:
        print(__doc__)
        return 2
    by_rank = "--by-rank" in flags
    runs = sim_runs(dirs) if "--sim" in flags else harness_runs(dirs)
    by_scenario = {}
    for scenario, scale, a in runs:
        if not scored(a):
            continue
        if by_rank:
            groups = by_scenario.setdefault(scenario, {"runs": 0})
            groups["runs"] += 1
            for rank, est, left in first_answer_ranks(a):
                left *= scale
                if left >= 5:
                    groups.setdefault(rank // 10, []).append((est - left) / left)
            continue
        t0 = min(t for t, _, _, _ in a)
        groups = by_scenario.setdefault(scenario, {"runs": 0})
        groups["runs"] += 1
        for t, est, left, first in scored(a):
            left *= scale  # product seconds, as the estimate
            if left < 5:
                continue
            since = (t - t0) * scale
            err = (est - left) / left
            groups.setdefault("all", []).append(err)
            if first:
                groups.setdefault("first", []).append(err)
            for lo, hi in PHASES:
                if lo <= since < hi:
                    groups.setdefault((lo, hi), []).append(err)
    for scenario, groups in sorted(by_scenario.items()):
        if by_rank:
            cells = [f"{10 * g + 1}-{10 * g + 10}: n {len(e)} {100 * statistics.median(map(abs, e)):.0f}"
                     f" / {100 * statistics.median(e):+.0f}"
                     for g, e in sorted((k, v) for k, v in groups.items() if k != "runs")]
            print(f"{scenario} ({groups['runs']} runs), first answers by rank: " + " | ".join(cells))
            continue
        cells = []
        for key in ["first", "all"] + PHASES:
            errs = groups.get(key, [])
            name = key if key in ("first", "all") else (f"{key[0]}-{key[1]} s" if key[1] < 10**9
                                                else f">= {key[0]} s")
            if errs:
                cells.append(f"{name}: n {len(errs)} {100 * statistics.median(map(abs, errs)):.0f}"
                             f" / {100 * statistics.median(errs):+.0f}")
        print(f"{scenario} ({groups['runs']} runs): " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
