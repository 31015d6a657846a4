"""A scripted `/rerank` server, run as a real separate process on loopback, for the reranker's HTTP path.

No reranker's weights come in a package we can install, so this server stands in for one with a rule anyone can
check by hand: a document's score is the number of the query's words it contains (lower-cased, words of two
letters or more). It answers in the shape `--shape` names:
- "cohere" (Cohere, Jina, vLLM, llama.cpp): POST {"query", "documents"} -> {"results": [{"index",
  "relevance_score"}]}, best first;
- "tei" (Hugging Face text-embeddings-inference): POST {"query", "texts"} -> [{"index", "score"}], best first; a
  body with "documents" instead gets HTTP 422, as TEI answers an unknown shape;
- "broken": HTTP 200 with a body that is JSON but no ranking.
`GET /health` answers once it is up; `GET /_stats` says how many rerank requests it served.

Run: `python -m tests.support.rerank_server --port 8124 --shape cohere`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.local_servers import ChildServer, free_port
from tests.support.http_json import send_json

SHAPES = ("cohere", "tei", "broken")


def overlap_score(query: str, text: str) -> float:
    words = set(re.findall(r"\w{2,}", query.lower()))
    return float(len(words & set(re.findall(r"\w{2,}", text.lower()))))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    shape = "cohere"
    served = 0
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, obj: Any) -> None:
        send_json(self, status, obj)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path == "/health":
            self._json(200, {"ok": True})
        elif self.path == "/_stats":
            self._json(200, {"served": Handler.served})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        if not self.path.rstrip("/").endswith("/rerank"):
            self._json(404, {"error": "not found"})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with Handler.lock:
            Handler.served += 1
        if self.shape == "broken":
            self._json(200, {"object": "list", "data": "no ranking here"})
            return
        key = "texts" if self.shape == "tei" else "documents"
        if key not in body:
            self._json(422, {"error": f"missing field '{key}'"})
            return
        scored = sorted(((overlap_score(body["query"], t), i) for i, t in enumerate(body[key])),
                        key=lambda si: (-si[0], si[1]))
        if self.shape == "tei":
            self._json(200, [{"index": i, "score": s} for s, i in scored])
        else:
            self._json(200, {"model": body.get("model", "scripted"),
                             "results": [{"index": i, "relevance_score": s} for s, i in scored]})


class RerankServer(ChildServer):
    def __init__(self, shape: str = "cohere", port: int | None = None) -> None:
        port = port or free_port()
        super().__init__([sys.executable, "-m", "tests.support.rerank_server", "--port", str(port), "--shape", shape],
                         port, "/health", f"scripted rerank server ({shape})", timeout=30.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--shape", choices=SHAPES, default="cohere")
    args = parser.parse_args(argv)
    Handler.shape = args.shape
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
