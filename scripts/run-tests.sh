#!/usr/bin/env bash
# Set up (first time only) and run the whole test suite plus the linter. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test --bench
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache
# mypy reads pyproject.toml's [tool.mypy]: core/, bench/, components/, pages/ and app.py type-checked (untyped functions too); a stale ignore fails
.venv/bin/mypy
# Two workers (pytest-xdist): most tests spend their time in one thread of Python, so two of them fill two cores;
# tests that share a server run in one worker (--dist loadgroup; tests/conftest.py groups them). --durations
# prints the 30 slowest steps; the JUnit report keeps every test's time for `python -m bench.suite`, which prints
# the suite's time by kind (unit, app, integration, browser, bench) and by module.
mkdir -p artifacts
status=0
.venv/bin/python -m pytest -q -n 2 --dist loadgroup --timeout=1200 --durations=30 --junitxml=artifacts/test-times.xml "$@" || status=$?
if [ -f artifacts/test-times.xml ]; then .venv/bin/python -m bench.suite --top 10 || true; fi
exit "$status"
