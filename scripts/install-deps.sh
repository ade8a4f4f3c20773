#!/usr/bin/env bash
# Installs, from Debian 12's packages, what waitroom needs and this machine lacks. Idempotent:
# packages already present are skipped, and apt is not touched at all when nothing is missing.
#   scripts/install-deps.sh [build|run|test|bench|package|all]   (default: test)
set -euo pipefail

profile="${1:-test}"

build_pkgs=(g++ cmake ninja-build ccache pkg-config libboost1.81-dev libboost-url1.81-dev libssl-dev libnghttp2-dev
            nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libhiredis-dev libkainjow-mustache-dev
            zlib1g-dev libbrotli-dev
            libgtest-dev libgmock-dev libbenchmark-dev)
test_pkgs=(nghttp2-client redis-server chromium fonts-ipafont-gothic fonts-dejavu-core nodejs npm clang libclang-rt-14-dev procps groff-base python3
           curl)
package_pkgs=(dpkg-dev)
bench_pkgs=(nginx-light haproxy wrk nghttp2-client liburing-dev util-linux procps gnuplot-nox redis-server strace valgrind)

case "$profile" in
  build|run) want=("${build_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${package_pkgs[@]}") ;;
  bench) want=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
  package) want=("${build_pkgs[@]}" "${package_pkgs[@]}") ;;
  all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}" "${package_pkgs[@]}") ;;
  *) echo "usage: $0 [build|run|test|bench|package|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  # node and npm may come from elsewhere than Debian (e.g. a preinstalled Node.js): accept them.
  if [[ "$p" == nodejs ]] && command -v node >/dev/null; then continue; fi
  if [[ "$p" == npm ]] && command -v npm >/dev/null; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages of profile '$profile' are present"
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then SUDO=(sudo); fi
echo "install-deps: installing ${missing[*]}"
log=$(mktemp)
if ! { "${SUDO[@]}" apt-get update -qq &&
       DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
         "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-deps: apt-get failed (log above)" >&2
  exit 1
fi
rm -f "$log"
echo "install-deps: done"
