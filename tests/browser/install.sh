#!/usr/bin/env bash
# Installs playwright-core (pinned by package-lock.json) for the browser tests. It drives Debian's
# /usr/bin/chromium; no browser is downloaded. Skips when already installed.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/playwright-core/package.json ]] &&
   [[ "$(node -p 'require("./node_modules/playwright-core/package.json").version')" == \
      "$(node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version')" ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
