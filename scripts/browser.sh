#!/usr/bin/env bash
# Install headless Chromium and its WebDriver (Debian packages) for the browser tests, only when missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "== no apt-get: install chromium and chromedriver yourself to run tests/browser (they skip otherwise)"
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
  sudo_cmd=(sudo)
fi
echo "== installing chromium and chromium-driver (Debian packages) for the browser tests"
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver
