#!/usr/bin/env bash
# Set up (first time only) and run the whole test suite plus the linter. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test --bench
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache
# --durations prints the 30 slowest steps; the JUnit report keeps every test's time for `python -m bench.suite`,
# which prints the suite's time by kind (unit, app, integration, browser, bench) and by module
mkdir -p artifacts
status=0
.venv/bin/python -m pytest -q --timeout=1200 --durations=30 --junitxml=artifacts/test-times.xml "$@" || status=$?
if [ -f artifacts/test-times.xml ]; then .venv/bin/python -m bench.suite --top 10 || true; fi
exit "$status"
