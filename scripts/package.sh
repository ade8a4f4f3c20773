#!/usr/bin/env bash
# Builds the Debian package: waitroomd_<version>_amd64.deb in BUILD_DIR (default build-package/),
# with CPack's DEB generator (cmake/package.cmake says what it holds). Prints the .deb's path last.
#   scripts/package.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-package}"
scripts/install-deps.sh package >&2
# Release flags of its own folder; ccache makes the objects shared with build/ cheap.
scripts/build.sh "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAITROOM_PACKAGE=ON \
  -DWAITROOM_BUILD_TESTS=OFF -DWAITROOM_BUILD_BENCH=OFF >&2
(cd "$dir" && cpack -G DEB >&2)
ls -t "$dir"/waitroomd_*_*.deb | head -n 1
