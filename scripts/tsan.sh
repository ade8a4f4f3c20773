#!/usr/bin/env bash
# ThreadSanitizer run: builds the gateway, state, server and whole-process tests with
# -fsanitize=thread (build-tsan/, g++, ccache) and runs them. The whole-process tests start
# waitroomd (also under TSan) with `threads: 2`, so two workers share the config snapshot, the
# room runtime, the metrics and the store; the gateway tests run a worker on its own thread
# beside the test's. Any TSan report, from a test or from a daemon it started, fails the run.
#   scripts/tsan.sh [BUILD_DIR=build-tsan] [--no-redis]
# --no-redis skips the tests that need redis-server. Took 57 min from a cold ccache on 2 cores
# shared with three other builds (48 min of build, 9 min of tests). Suppressions: tsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-tsan
redis=1
for a in "$@"; do
  case "$a" in
    --no-redis) redis=0 ;;
    -*) echo "usage: $0 [BUILD_DIR] [--no-redis]" >&2; exit 2 ;;
    *) dir="$a" ;;
  esac
done

tests=(gateway_proxy_test page_renderer_test metrics_test admin_server_test room_admin_backend_test
  state_test overrides_sync_test sync_batch_test redis_protocol_test server_test
  integration_test room_integration_test admin_integration_test secrets_integration_test
  faults_integration_test)
if ((redis)); then tests+=(redis_store_test multinode_integration_test); fi

export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAITROOM_TSAN=ON \
  -DWAITROOM_BUILD_BENCH=OFF >/dev/null
nice ninja -C "$dir" waitroomd "${tests[@]}"

# Reports go to files (one per process, daemons included) as well as failing the process.
reports="$PWD/$dir/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 log_path=$reports/tsan suppressions=$PWD/scripts/tsan.supp"
status=0
for t in "${tests[@]}"; do
  # The newest of that name: a test moved to another folder leaves its old binary behind.
  bin="$(find "$dir/tests" -name "$t" -type f -perm -u+x -printf '%T@ %p\n' | sort -rn |
    head -n 1 | cut -d' ' -f2-)"
  echo "tsan: $t"
  if ! (cd "$(dirname "$bin")" && "./$t" --gtest_brief=1); then
    echo "tsan: $t FAILED"
    status=1
  fi
done
if compgen -G "$reports/tsan*" >/dev/null; then
  echo "tsan: ThreadSanitizer reports:"
  cat "$reports"/tsan*
  status=1
fi
((status == 0)) && echo "tsan: all clean"
exit "$status"
