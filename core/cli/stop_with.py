"""Tie a background command to the process it works for: `python -m core warm --stop-with PID`, which run-app.sh
starts beside the server, stops when the server does. A shell's background job ignores Ctrl-C (bash sets SIGINT to
ignored for it), and a warm-up left running after the server stopped would only hold the CPU its user wants back.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType

#: seconds between two looks at the process
EVERY = 0.5
#: seconds the main thread has to clean up once told to stop, before the process ends without it (the signal
#: reaches Python code only between two of its steps; a step in native code that never returns would keep it)
GRACE = 30
#: set once this process is stopping because the process it works for ended: whatever the stop interrupted (an
#: import, a native call) may fail with its own error, which is the stop, not a failure
stopping = threading.Event()


def ended(pid: int, parent_at_start: int) -> bool:
    """Whether `pid` has ended: it was this process's parent and no longer is (a parent that ended, even one not yet
    reaped, hands its children on at once), or no process has that id."""
    if parent_at_start == pid and os.getppid() != pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # there, under another user
    return False


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def stop_with(pid: int, what: str) -> None:
    """From now on, end this process (SIGTERM, raised as SystemExit in the main thread, so `with` blocks and
    `finally` clauses clean up) once `pid` has ended, with one line on stderr: that `pid` has ended, then `what`.
    Call from the main thread: only it may set a signal handler."""
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _stop)

    def watch() -> None:
        while not ended(pid, parent):
            time.sleep(EVERY)
        print(f"process {pid} has ended: {what}", file=sys.stderr, flush=True)
        stopping.set()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="stop-with", daemon=True).start()
