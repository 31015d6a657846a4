#!/usr/bin/env bash
# Set up (first time only) and start the ChunkLens app on the offline defaults.
# Usage: scripts/run-app.sh [--expose] [streamlit flags...]
#   By default the app listens on 127.0.0.1 only: a single-user local server, every setting editable.
#   --expose listens on every interface (0.0.0.0) as a shared server: visitors choose only among the operator's
#   settings (server.toml / CHUNKLENS_* variables) and Streamlit's own upload cap drops to 200 MB. Put a reverse
#   proxy with authentication in front of it (docs/SECURITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ADDRESS=127.0.0.1
EXTRA=()
if [ "${1:-}" = "--expose" ]; then
  shift
  ADDRESS=0.0.0.0
  export CHUNKLENS_MODE="${CHUNKLENS_MODE:-shared}"
  EXTRA=(--server.maxUploadSize 200)
fi
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# X-Forwarded-For names a visitor only through the proxies server.toml trusts (trusted_proxies), not through
# uvicorn's own default of trusting any peer on loopback
export FORWARDED_ALLOW_IPS="${FORWARDED_ALLOW_IPS-}"
exec .venv/bin/streamlit run app.py --server.headless true --browser.gatherUsageStats false \
  --server.address "$ADDRESS" "${EXTRA[@]}" "$@"
