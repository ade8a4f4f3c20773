#!/usr/bin/env bash
# README command (a): installs what is missing, builds, then runs the gateway on the embedded
# default (config/waitroom.yaml: one room with small limits) in front of a demo origin.
# Open the printed URL in a few browser windows: past the room's limits you see the queue page.
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh run
# Only the gateway and the demo origin (not the tests and benchmarks): a first run takes minutes.
WAITROOM_BUILD_TARGETS="waitroomd waitroom-demo-origin" scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo

origin_pid=
cleanup() { [[ -n "$origin_pid" ]] && kill "$origin_pid" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

build/tests/support/waitroom-demo-origin --listen 127.0.0.1:3000 &
origin_pid=$!

cat <<MSG

  waitroom demo
  -------------
  demo origin : http://127.0.0.1:3000/   (what the gateway protects)
  gateway     : http://127.0.0.1:8080/   <- open this, in several windows/browsers
  admin       : http://127.0.0.1:9090/
  The room "Demo shop" admits 3 active visitors; the 4th waits on the queue page and gets in
  when a session ends (2 minutes idle). Ctrl-C stops.

MSG
build/src/waitroomd -c config/waitroom.yaml
