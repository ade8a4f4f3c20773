#!/usr/bin/env bash
# README command (b): installs what is missing, builds, and runs every test:
#   0. scripts/check-includes.sh: every include follows the module direction of DESIGN.md §3;
#   1. the normal build (build/): unit, integration, redis and browser tests;
#   2. a second build under ASan + UBSan (build-asan/): the unit tests;
#   3. every libFuzzer target (tests/fuzz/run.sh) for a bounded time when clang is present.
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

scripts/check-includes.sh
scripts/install-deps.sh test
if [[ -x tests/browser/install.sh ]]; then tests/browser/install.sh; fi

jobs=$(nproc)
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

if ((sanitize)); then
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DWAITROOM_SANITIZE=ON -DWAITROOM_BUILD_BENCH=OFF
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -L unit --timeout 600)
fi

if ((fuzz_seconds > 0)) && [[ -x tests/fuzz/run.sh ]]; then
  tests/fuzz/run.sh all "$fuzz_seconds"
fi
echo "test.sh: all tests passed"
