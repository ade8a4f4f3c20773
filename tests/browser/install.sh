#!/usr/bin/env bash
# Installs playwright-core and axe-core (pinned by package-lock.json) for the browser tests.
# It drives Debian's /usr/bin/chromium; no browser is downloaded. Skips when already installed.
set -euo pipefail
cd "$(dirname "$0")"
# Skipped only when every dependency of package.json is installed at its locked version.
if node -e '
  const fs = require("fs");
  const lock = require("./package-lock.json").packages;
  for (const name of Object.keys(require("./package.json").dependencies)) {
    const file = "./node_modules/" + name + "/package.json";
    if (!fs.existsSync(file) || require(file).version !== lock["node_modules/" + name].version) {
      process.exit(1);
    }
  }' 2>/dev/null; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
