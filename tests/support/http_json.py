"""One JSON reply from a stdlib `BaseHTTPRequestHandler`: what the small recording servers of the tests send."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
    body = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
