#!/usr/bin/env bash
# Create .venv and install pinned dependencies (idempotent: skips what is already installed).
# Usage: scripts/setup.sh [--test] [--bench]   --test also installs test tools, the browser and the loopback LLM
# server; --bench the peers `python -m bench.perf` times (Chonkie, LangChain), without changing requirements.txt's pins.
set -euo pipefail
TEST=0; BENCH=0
for arg in "$@"; do
  case "$arg" in
    --test) TEST=1 ;;
    --bench) BENCH=1 ;;
    *) echo "usage: scripts/setup.sh [--test] [--bench]" >&2; exit 2 ;;
  esac
done
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

if [ "$TEST" = 1 ]; then
  install_once requirements-test.txt
  if [ -f requirements-server.txt ]; then
    # llama-cpp-python builds llama.cpp from source. A native build on a CPU with AMX takes ggml's AMX kernels,
    # which crash on the first decode (ggml-org/llama.cpp#20824), so build for the portable x86-64 set (AVX2, FMA,
    # F16C) instead; --no-cache-dir keeps pip from reusing a wheel built with other flags.
    CMAKE_ARGS="-DGGML_NATIVE=OFF" install_once requirements-server.txt --no-cache-dir
  fi
  if ! command -v chromium >/dev/null 2>&1 && [ -d tests/browser ]; then
    echo "installing Debian's chromium for the browser tests"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq chromium >/dev/null
  fi
fi

if [ "$BENCH" = 1 ]; then
  install_once requirements-bench.txt -c requirements.txt
fi
