"""Loaded at the start of a child process whose PYTHONPATH starts here: no network (tests/support/offline.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.support.offline import block_network  # noqa: E402

block_network()
