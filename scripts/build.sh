#!/usr/bin/env bash
# Configures and builds waitroom with CMake + Ninja (ccache when present).
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]   (default build dir: build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
ninja -C "$dir"
