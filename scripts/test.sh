#!/usr/bin/env bash
# README command (b): installs what is missing, builds, and runs every test:
#   0. scripts/check-includes.sh: every include follows the module direction of DESIGN.md §3;
#   1. the normal build (build/): unit, integration, redis and browser tests;
#   2. a second build under ASan + UBSan (build-asan/): the unit tests;
#   3. every libFuzzer target (tests/fuzz/run.sh) for a bounded time when clang is present;
# then a short summary: the tests per label, the sanitizer build's result and the fuzz runs.
# Options: --no-sanitize skips 2, --fuzz-seconds N sets 3 (seconds per target, default 20, 0 skips).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
fuzz_seconds=20
while (($#)); do
  case "$1" in
    --no-sanitize) sanitize=0 ;;
    --fuzz-seconds) fuzz_seconds="$2"; shift ;;
    *) echo "usage: $0 [--no-sanitize] [--fuzz-seconds N]" >&2; exit 2 ;;
  esac
  shift
done

# What ran and how it ended, printed last (also when a stage fails): counts per label, the
# sanitizer build's result and the fuzz runs.
logs="$(mktemp -d)"
summary=()
completed=0  # set on the last line: an exit before it (a signal, say) is never a pass
stage="the include check"
finish() {
  local rc=$?
  echo
  echo "test.sh summary"
  for line in "${summary[@]}"; do echo "  ${line}"; done
  if ((rc == 0 && completed)); then
    echo "  all tests passed"
  else
    echo "  FAILED in ${stage} (exit ${rc}); its output is above"
  fi
  rm -rf "${logs}"
}
trap finish EXIT
# A stopped run (CI's timeout, Ctrl-C) is a failure, which the EXIT trap would not see.
trap 'stage="${stage} (stopped by a signal)"; exit 143' TERM
trap 'stage="${stage} (interrupted)"; exit 130' INT

# "build: 100% tests passed, 0 tests failed out of 620 (browser 3, integration 97, ...)" from a
# ctest log.
count_tests() {
  local totals labels
  totals="$(grep -E '^[0-9]+% tests passed' "$2" | tail -n 1 || true)"
  labels="$(awk '/^Label Time Summary:/ { on = 1; next }
                 on && /^[a-z_]+ +=/ { gsub(/[()]/, ""); printf "%s%s %s", sep, $1, $(NF - 1); sep = ", " }
                 on && !/^[a-z_]+ +=/ { on = 0 }' "$2")"
  summary+=("$1: ${totals:-no result} (${labels:-no labels})")
}

scripts/check-includes.sh
summary+=("includes: every one follows DESIGN.md §3")
stage="the install"
scripts/install-deps.sh test
if [[ -x tests/browser/install.sh ]]; then tests/browser/install.sh; fi

jobs=$(nproc)
stage="the build (build/)"
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
stage="the tests in build/"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600) | tee "${logs}/build.log"
count_tests "build/" "${logs}/build.log"

if ((sanitize)); then
  stage="the ASan + UBSan build (build-asan/)"
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DWAITROOM_SANITIZE=ON -DWAITROOM_BUILD_BENCH=OFF
  stage="the unit tests under ASan + UBSan"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -L unit --timeout 600) | tee "${logs}/asan.log"
  count_tests "build-asan/ under ASan + UBSan" "${logs}/asan.log"
else
  summary+=("build-asan/: skipped (--no-sanitize)")
fi

if ((fuzz_seconds > 0)) && [[ -x tests/fuzz/run.sh ]]; then
  stage="the fuzzers"
  tests/fuzz/run.sh all "$fuzz_seconds" | tee "${logs}/fuzz.log"
  if grep -q "clang++ not found" "${logs}/fuzz.log"; then
    summary+=("fuzz: skipped (no clang++)")
  else
    summary+=("$(awk '/^fuzz: [a-z_]+ clean: runs/ { n++; runs += $5 }
                      END { printf "fuzz: %d targets clean, %d runs in all (%s s each)", n, runs, s }' \
                 s="${fuzz_seconds}" "${logs}/fuzz.log")")
  fi
else
  summary+=("fuzz: skipped (--fuzz-seconds 0)")
fi
completed=1
