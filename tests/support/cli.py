"""ChunkLens's command line as a child process (`python -m core ...`), run from the checkout on a workspace of the
test's own, with nothing fetched from the Hugging Face hub."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.data import ROOT


def run_cli(*args, workspace):
    env = {**os.environ, "CHUNKLENS_WORKSPACE": str(workspace), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
