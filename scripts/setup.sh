#!/usr/bin/env bash
# Create .venv and install pinned dependencies (idempotent: skips what is already installed).
# Usage: scripts/setup.sh [--test]   --test also installs test tools, the browser and the loopback LLM server.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
fi

install_once() {  # install a requirements file unless the same file was installed before
  local file=$1; shift
  local stamp=".venv/.installed-$(basename "$file")"
  if [ -f "$stamp" ] && cmp -s "$file" "$stamp"; then return; fi
  echo "installing $file"
  .venv/bin/pip install --quiet "$@" -r "$file"
  cp "$file" "$stamp"
}

install_once requirements.txt
if [ -f requirements-nodeps.txt ]; then install_once requirements-nodeps.txt --no-deps; fi

if [ "${1:-}" = "--test" ]; then
  install_once requirements-test.txt
  if [ -f requirements-server.txt ]; then install_once requirements-server.txt; fi
  if ! command -v chromium >/dev/null 2>&1 && [ -d tests/browser ]; then
    echo "installing Debian's chromium for the browser tests"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq chromium >/dev/null
  fi
fi
