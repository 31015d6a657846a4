"""What run-app.sh asks before and beside Streamlit, with the standard library only (it starts in milliseconds).

    app_ready.py port ADDRESS          the first port from 8501 up that ADDRESS has free (Streamlit's own choice when
                                       no port is named, made here so the script knows it)
    app_ready.py wait ADDRESS PORT SERVER_PID WARM_PID WARM_LOG
                                       print "ChunkLens is listening on http://ADDRESS:PORT" as soon as the server's
                                       health endpoint answers, and whether the sample vectors are still being
                                       computed in the background (WARM_PID) with their log; give up when the server
                                       (SERVER_PID) ends first
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
import urllib.request

#: Streamlit's default port, and how far up it looks for a free one
FIRST_PORT, PORTS = 8501, 100
#: seconds between two looks at the health endpoint
POLL = 0.1


def free_port(address: str) -> int:
    for port in range(FIRST_PORT, FIRST_PORT + PORTS):
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Tornado binds: TIME_WAIT is free
            try:
                s.bind((address, port))
            except OSError:
                continue
            return port
    raise SystemExit(f"no free port from {FIRST_PORT} to {FIRST_PORT + PORTS - 1} on {address}")


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def healthy(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/_stcore/health", timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait(address: str, port: int, server: int, warm: int, log: str) -> int:
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(address, address)
    host = f"[{host}]" if ":" in host else host
    while not healthy(host, port):
        if not alive(server):
            return 1
        time.sleep(POLL)
    shown = f"[{address}]" if ":" in address else address
    print(f"ChunkLens is listening on http://{shown}:{port}", flush=True)
    if alive(warm):
        print(f"The sample vectors are being computed in the background (process {warm}, log: {log}); the guided "
              "demo waits for them, everything else works now", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["port"] and len(argv) == 2:
        print(free_port(argv[1]))
        return 0
    if argv[:1] == ["wait"] and len(argv) == 6:
        return wait(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
