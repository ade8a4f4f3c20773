#!/usr/bin/env bash
# Checks that every include in src/ and include/ points the way DESIGN.md §3 allows:
#
#   util <- config <- room <- cookie <- state <- state_redis
#                       room <- pages;  metrics;  net <- admin <- gateway <- server <- main
#
# A module's public headers live under its own include root, include/<module>/waitroom/..., and
# its private ones beside its sources in src/<module>/. The check fails on:
#   - an include of another module's public header that the table below does not allow;
#   - a quoted include that climbs out of its folder ("../x.hpp") or names a private header of
#     another module;
#   - Asio or Beast seen by a module that must build without them (room, cookie, state, pages,
#     metrics, config, util).
# The build enforces most of it too (each library exports only its own root), but a header
# reached through a PUBLIC link can still be included by a module that should not: this says so.
# Usage: scripts/check-includes.sh   (exit 1 and one line per problem when any is found)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# module → the modules whose public headers it may include (itself always)
declare -A allowed=(
  [util]=""
  [config]="util"
  [room]="config util"
  [cookie]="room config util"
  [state]="cookie room config util"
  [state_redis]="state cookie room config util net"
  [pages]="room config util"
  [metrics]=""
  [net]=""
  [admin]="metrics net config util"
  [gateway]="pages admin metrics state cookie room config util net"
  [server]="gateway pages admin metrics state_redis state cookie room config util net"
  [main]="server gateway pages admin metrics state_redis state cookie room config util net"
)
no_asio="util config room cookie state pages metrics"

# The module a file belongs to, from its path.
module_of() {
  case "$1" in
    include/*) local rest="${1#include/}"; echo "${rest%%/*}" ;;
    src/main.cpp) echo main ;;
    src/state/redis/*) echo state_redis ;;
    src/*) local rest="${1#src/}"; echo "${rest%%/*}" ;;
  esac
}

# The module whose include root holds each public header `waitroom/...`.
declare -A owner_of
while IFS= read -r header; do
  root="${header#include/}"
  owner_of["${root#*/}"]="${root%%/*}"
done < <(git ls-files include)

problems=0
report() { echo "check-includes: $*" >&2; problems=$((problems + 1)); }

while IFS= read -r file; do
  mod="$(module_of "${file}")"
  [[ -n "${mod}" && -v "allowed[${mod}]" ]] || { report "${file}: not in any module of DESIGN.md §3"; continue; }
  dir="$(dirname "${file}")"
  while IFS=: read -r line text; do
    [[ "${text}" =~ include[[:space:]]*[\<\"]([^\>\"]+) ]] || continue
    inc="${BASH_REMATCH[1]}"
    if [[ "${inc}" == waitroom/* ]]; then
      owner="${owner_of[${inc}]:-}"
      if [[ -z "${owner}" ]]; then
        report "${file}:${line}: ${inc} is no module's public header"
      elif [[ "${owner}" != "${mod}" && " ${allowed[${mod}]} " != *" ${owner} "* ]]; then
        report "${file}:${line}: ${mod} may not include ${owner}'s ${inc}"
      fi
    elif [[ "${text}" == *'"'* ]]; then
      if [[ "${inc}" == *..* ]]; then
        report "${file}:${line}: \"${inc}\" climbs out of its folder"
      elif [[ ! -f "${dir}/${inc}" && "${file}" != *.in ]]; then
        # generated headers live in the build folder; everything else must sit beside the file
        report "${file}:${line}: \"${inc}\" is not beside ${file} (another module's private header?)"
      fi
    elif [[ " ${no_asio} " == *" ${mod} "* && "${inc}" =~ ^boost/(asio|beast) ]]; then
      report "${file}:${line}: ${mod} must build without Asio and Beast (<${inc}>)"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "${file}" || true)
done < <(git ls-files src include | grep -E '\.(cpp|hpp|h|ipp)$')

if ((problems > 0)); then
  echo "check-includes: ${problems} include(s) against DESIGN.md §3" >&2
  exit 1
fi
echo "check-includes: every include in src/ and include/ follows DESIGN.md §3"
