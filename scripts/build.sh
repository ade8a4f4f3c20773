#!/usr/bin/env bash
# Configures and builds waitroom with CMake + Ninja (ccache when present).
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]   (default build dir: build)
# WAITROOM_BUILD_TARGETS="a b" builds only those targets (and what they need), e.g. the demo's two.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
# Let ccache reuse objects across clones and folders (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
# shellcheck disable=SC2086
ninja -C "$dir" ${WAITROOM_BUILD_TARGETS:-}
