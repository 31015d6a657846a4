#!/usr/bin/env bash
# Set up (first time only) and start the ChunkLens app on the offline defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/streamlit run app.py --server.headless true --browser.gatherUsageStats false "$@"
