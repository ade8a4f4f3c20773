#!/usr/bin/python3
"""Side-by-side table: fidelity.py results (JSON lines) and waitroom_sim's report.json.

  table.py RESULTS.jsonl [--sim SIM_REPORT.json]
"""
import argparse
import json
import statistics

COLS = [("overshoot_active", "overshoot active", 1), ("overshoot_rate", "overshoot rate", 1),
        ("queue_onset_utilization", "onset", 1), ("idle_capacity_while_queued", "idle", 2),
        ("fifo_inversions_10s", "FIFO inv. 10 s", 2), ("fifo_inversions_60s", "FIFO inv. 60 s", 2),
        ("eta_error_median", "ETA error", 0), ("eta_bias_median", "ETA bias", 0),
        ("eta_error_minutes_median", "ETA error, whole min", 0),
        ("eta_bias_minutes_median", "ETA bias, whole min", 0)]
# waitroom_sim puts these under "waits", not "metrics".
SIM_WAITS = {"eta_bias_median", "eta_error_minutes_median", "eta_bias_minutes_median"}
SIM = {"overshoot_active": "overshoot_active", "overshoot_rate": "overshoot_rate",
       "queue_onset_utilization": "queue_onset_utilization",
       "idle_capacity_while_queued": "idle_capacity_while_queued",
       "fifo_inversions_10s": "fifo_inversions", "fifo_inversions_60s": "fifo_inversions_60s",
       "eta_error_median": "eta_error_median"}


def cell(vals, d):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    f = lambda v: f"{v * 100:.{d}f}"
    if len(vals) == 1:
        return f(vals[0])
    if len(vals) == 2:
        return f"{f(min(vals))} – {f(max(vals))}"
    return f"{f(min(vals))} / {f(statistics.median(vals))} / {f(max(vals))}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--sim")
    a = ap.parse_args()
    rows = {}
    for line in open(a.results):
        r = json.loads(line)
        rows.setdefault((r["scenario"], r["scale"]), []).append(r)
    sim = {}
    if a.sim:
        for s in json.load(open(a.sim))["scenarios"]:
            sim[s["name"]] = s.get("runs", [s])  # one seed: the run itself
    print("| scenario | source | runs | " + " | ".join(c[1] for c in COLS) + " | admitted / queued / gave up |")
    print("|---|---|---|" + "---|" * len(COLS) + "---|")
    for name in dict.fromkeys([k[0] for k in sorted(rows)] + list(sim)):
        for (n, scale), rs in sorted(rows.items()):
            if n != name:
                continue
            cells = [cell([r.get(k) for r in rs], d) for k, _, d in COLS]
            cnt = " – ".join(sorted({f"{r['admitted']}/{r['queued']}/{r['abandoned']}" for r in rs}))
            print(f"| {name} | waitroomd, time_scale {scale:g} | {len(rs)} | " + " | ".join(cells) + f" | {cnt} |")
        if name in sim:
            runs = sim[name]
            cells = []
            for k, _, d in COLS:
                if k in SIM_WAITS:
                    cells.append(cell([r["waits"].get(k) for r in runs], d))
                elif k in SIM:
                    cells.append(cell([r["metrics"].get(SIM[k]) for r in runs], d))
                else:
                    cells.append("-")
            c = [r["counts"] for r in runs]
            cnt = (f"{statistics.median(x['admitted'] for x in c):g}/"
                   f"{statistics.median(x['queued'] for x in c):g}/"
                   f"{statistics.median(x['abandoned'] for x in c):g} (median)")
            print(f"| {name} | waitroom_sim | {len(runs)} | " + " | ".join(cells) + f" | {cnt} |")


if __name__ == "__main__":
    main()
