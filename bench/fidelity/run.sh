#!/usr/bin/env bash
# Fidelity against real processes (DESIGN.md §5): the harness on real waitroomd processes, then
# waitroom_sim on the same scenarios, then both side by side.
#
#   bench/fidelity/run.sh [SCENARIO...]        # default: all four
#
# Scenarios: spike-1node, spike-1node-abandon30, spike-3nodes, spike-3nodes-abandon30.
# Environment:
#   BUILD_DIR=build   folder with src/waitroomd and bench/waitroom_sim
#   SCALE=1           testing.time_scale (1 = real time, about 7 minutes a run; 10 = ~40 s)
#   SEEDS="1 2"       one harness run per seed and scenario
#   SIM_SEEDS=10      waitroom_sim --seeds
#   PARALLEL=1        run every (scenario, seed) at once (each uses ~1 % of a core at SCALE=1);
#                     0 = one after the other
#   LB=sticky         3-node runs: sticky (a visitor keeps its node) or spread (every request
#                     to a node drawn by the shares)
#   OUT=fidelity-out  results.jsonl, sim/report.json, table.md, paired.txt and one folder per run
#   PAIRED=1          also replay each run's own crowd in waitroom_sim (SIM_SEEDS seeds each, in
#                     OUT/replay/) and set the scores side by side, run for run: paired.txt
# Only loopback: the origin is in the harness, waitroomd and redis-server bind free ports on
# 127.0.0.1. Needs python3 (standard library) and, for the 3-node scenarios, redis-server.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${BUILD_DIR:-$root/build}" && pwd)"
scale="${SCALE:-1}"
seeds="${SEEDS:-1 2}"
out="${OUT:-fidelity-out}"
mkdir -p "$out/runs"
out="$(cd "$out" && pwd)"
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(spike-1node spike-1node-abandon30 spike-3nodes spike-3nodes-abandon30)
for f in "$build/src/waitroomd" "$build/bench/waitroom_sim"; do
  [ -x "$f" ] || { echo "missing $f (build waitroomd and waitroom_sim)" >&2; exit 1; }
done
py=/usr/bin/python3; [ -x "$py" ] || py=python3

pids=()
for sc in "${scenarios[@]}"; do
  for seed in $seeds; do
    cmd=("$py" "$here/fidelity.py" --build "$build" --scale "$scale" --seed "$seed"
         --lb "${LB:-sticky}" --tmp "$out/runs" --json "$out/results.jsonl" "$sc")
    if [ "${PARALLEL:-1}" = 1 ]; then
      "${cmd[@]}" > "$out/runs/$sc-$seed-x$scale.out" 2>&1 &
      pids+=($!)
    else
      "${cmd[@]}" | tee "$out/runs/$sc-$seed-x$scale.out"
    fi
  done
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ "${PARALLEL:-1}" = 1 ] && cat "$out"/runs/*-x"$scale".out

simargs=()
for sc in "${scenarios[@]}"; do simargs+=(--scenario "$here/sim/$sc.yaml"); done
"$build/bench/waitroom_sim" --seeds "${SIM_SEEDS:-10}" "${simargs[@]}" --out "$out/sim" > "$out/sim.txt"
"$py" "$here/table.py" "$out/results.jsonl" --sim "$out/sim/report.json" | tee "$out/table.md"
if [ "${PAIRED:-1}" = 1 ]; then
  # The same crowds in the simulator: what differs is then the model, not the draw of a crowd.
  rm -rf "$out/replay"
  while read -r f; do
    "$build/bench/waitroom_sim" --seeds "${SIM_SEEDS:-10}" --scenario "$f" \
      --out "$out/replay/$(basename "$f" .yaml)" > /dev/null 2>&1
  done < <("$py" "$here/compare.py" --real "$out/runs" --write-replay "$out/replay")
  "$py" "$here/compare.py" --paired "$out/results.jsonl" --replayed "$out/replay" \
    | tee "$out/paired.txt"
fi
exit $fail
