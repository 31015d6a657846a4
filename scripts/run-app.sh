#!/usr/bin/env bash
# Set up (first time only) and start the ChunkLens app on the offline defaults.
# Usage: scripts/run-app.sh [--expose] [streamlit flags...]
#   By default the app listens on 127.0.0.1 only: a single-user local server, every setting editable.
#   --expose listens on every interface (0.0.0.0) as a shared server: visitors choose only among the operator's
#   settings (server.toml / CHUNKLENS_* variables) and Streamlit's own upload cap drops to 200 MB. Put a reverse
#   proxy with authentication in front of it (docs/SECURITY.md).
# The app serves first: the sample set's vectors (`python -m core warm`, once per machine, a few minutes on 2 cores
# the first time) are computed in the background beside it, at a lower priority, and stop when the server stops.
# The script prints where the app is as soon as it answers.
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
bash scripts/setup.sh --no-warm
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# X-Forwarded-For names a visitor only through the proxies server.toml trusts (trusted_proxies), not through
# uvicorn's own default of trusting any peer on loopback
export FORWARDED_ALLOW_IPS="${FORWARDED_ALLOW_IPS-}"

# Where Streamlit will listen: the last --server.address / --server.port among its flags win, as in Streamlit. With
# no port named, the first free one from 8501 up (Streamlit's own choice), named to it so this script knows it.
PORT="${STREAMLIT_SERVER_PORT:-}"
prev=""
for arg in "$@"; do
  case "$arg" in
    --server.port=*) PORT=${arg#*=} ;;
    --server.address=*) ADDRESS=${arg#*=} ;;
  esac
  case "$prev" in
    --server.port) PORT=$arg ;;
    --server.address) ADDRESS=$arg ;;
  esac
  prev=$arg
done
if [ -z "$PORT" ]; then
  PORT=$(.venv/bin/python scripts/app_ready.py port "$ADDRESS")
  EXTRA+=(--server.port "$PORT")
fi

# The warm-up runs beside the server, nice'd so the server and its visitors get the CPU first. It is started from a
# subshell, so it is no child of the server (which would never reap it), and --stop-with $$ (this script's process,
# Streamlit's after the exec below) ends it with the server: a background job ignores Ctrl-C.
# Its log is appended to (a few lines each start; two servers may start at once), each start under a line of its own.
WARM_LOG=${CHUNKLENS_WARM_LOG:-.venv/setup-logs/warm.log}
mkdir -p "$(dirname "$WARM_LOG")"
echo "== $(date -u '+%Y-%m-%d %H:%M:%S') UTC: the warm-up of the server on port $PORT (process $$)" >>"$WARM_LOG"
WARM_PID=$( (nice -n 10 .venv/bin/python -m core warm --stop-with $$ >>"$WARM_LOG" 2>&1 & echo $!) )
(.venv/bin/python scripts/app_ready.py wait "$ADDRESS" "$PORT" $$ "$WARM_PID" "$WARM_LOG" &)

# Streamlit in the foreground, as this very process: it gets the terminal's signals and its exit status is the script's
exec .venv/bin/streamlit run app.py --server.headless true --browser.gatherUsageStats false \
  --server.address "$ADDRESS" "${EXTRA[@]}" "$@"
