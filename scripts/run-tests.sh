#!/usr/bin/env bash
# Set up (first time only) and run the whole test suite plus the linter. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test --bench
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache
.venv/bin/python -m pytest -q --timeout=1200 "$@"
