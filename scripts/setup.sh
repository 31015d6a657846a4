#!/usr/bin/env bash
# Create .venv and install pinned dependencies (idempotent: skips what is already installed).
# Usage: scripts/setup.sh [--test] [--bench] [--no-warm]   --test also installs test tools, the browser and the
# loopback LLM server; --bench the extras `python -m bench.perf` needs (LangChain's semantic chunker, psutil), within
# requirements.txt's pins; --no-warm leaves out the last step, the sample set's vectors (run-app.sh computes them in
# the background while the app already serves).
set -euo pipefail
TEST=0; BENCH=0; WARM=1
for arg in "$@"; do
  case "$arg" in
    --test) TEST=1 ;;
    --bench) BENCH=1 ;;
    --no-warm) WARM=0 ;;
    *) echo "usage: scripts/setup.sh [--test] [--bench] [--no-warm]" >&2; exit 2 ;;
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

stamp_of() { echo ".venv/.installed-$(basename "$1")"; }
stamped() { [ -f "$(stamp_of "$1")" ] && cmp -s "$1" "$(stamp_of "$1")"; }  # this very file was installed before

install_once() {  # install a requirements file unless the same file was installed before
  local file=$1; shift
  if stamped "$file"; then return; fi
  echo "installing $file"
  .venv/bin/pip install --quiet "$@" -r "$file"
  cp "$file" "$(stamp_of "$file")"
}

# The test set-up's two slow steps need no Python package of ours, so they start first and run in the background
# while the packages download and install: compiling llama.cpp (most of the set-up: all of it runs on the CPU)
# and Debian's chromium (apt). Each writes its log under .venv/setup-logs; a failure prints the log's tail.
mkdir -p .venv/setup-logs
LLAMA_PID=""; CHROMIUM_PID=""
if [ "$TEST" = 1 ] && [ -f requirements-server.txt ] && ! stamped requirements-server.txt; then
  # llama-cpp-python builds llama.cpp from source, as a wheel into .venv/wheels that the install below takes.
  # -DGGML_NATIVE=OFF: a native build on a CPU with AMX takes ggml's AMX kernels, which crash on the first decode
  # (ggml-org/llama.cpp#20824), so build for the portable x86-64 set (AVX2, FMA, F16C) instead. -DLLAVA_BUILD=OFF:
  # no multimodal library (the tests serve a text model; llama_cpp loads that library only for image chats).
  # --no-cache-dir keeps pip from reusing a wheel built with other flags.
  LLAMA=$(grep -E '^llama-cpp-python' requirements-server.txt)
  echo "building $LLAMA in the background (log: .venv/setup-logs/llama.log)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" .venv/bin/pip wheel --no-deps --no-cache-dir \
    -w .venv/wheels "$LLAMA" >.venv/setup-logs/llama.log 2>&1 &
  LLAMA_PID=$!
fi
if [ "$TEST" = 1 ] && [ -d tests/browser ] && ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests in the background (log: .venv/setup-logs/chromium.log)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  ($SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium) >.venv/setup-logs/chromium.log 2>&1 &
  CHROMIUM_PID=$!
fi
wait_for() {  # wait_for PID WHAT LOG: wait for a background step, or stop with its log's tail
  if [ -n "$1" ] && ! wait "$1"; then
    echo "set-up failed: $2 (the end of $3 follows)" >&2
    tail -n 40 "$3" >&2
    exit 1
  fi
}

install_once requirements.txt
if [ -f requirements-nodeps.txt ]; then install_once requirements-nodeps.txt --no-deps; fi
if [ "$TEST" = 1 ]; then
  install_once requirements-test.txt
fi

if [ "$BENCH" = 1 ]; then
  # requirements.txt's pins hold the extras too; pip takes no extras in a constraint (docling-core[chunking])
  sed -E 's/^([A-Za-z0-9_.-]+)\[[^]]*\]/\1/' requirements.txt > .venv/constraints.txt
  install_once requirements-bench.txt -c .venv/constraints.txt
fi
if [ "$TEST" = 1 ] && [ -f requirements-server.txt ]; then
  wait_for "$LLAMA_PID" "building llama-cpp-python" .venv/setup-logs/llama.log
  install_once requirements-server.txt --find-links .venv/wheels --only-binary llama-cpp-python
fi
wait_for "$CHROMIUM_PID" "installing chromium" .venv/setup-logs/chromium.log

# The sample set's vectors, computed once per machine (about 1.5 minutes on 2 cores; nothing when they exist):
# every new workspace, a shared server's visitors included, copies them, so the guided demo embeds nothing. The tests
# rely on them being there when the set-up ends; run-app.sh computes them beside the server instead (--no-warm).
if [ "$WARM" = 1 ]; then
  HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false .venv/bin/python -m core warm
fi
