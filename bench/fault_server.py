"""An OpenAI-compatible chat server that misbehaves on cue, run as a real separate process on loopback.

The llama.cpp server in `tests/support/llm_server.py` shows real answers but cannot be made to answer HTTP 429, to
close a connection half-way or to send a body that is not a chat completion, and it takes long to start.
This small stdlib server can, so every fault the client must survive goes over a real socket to a real
process. Its behaviour is a plan: a list of faults consumed one per request, then `default` for the rest.
The plan is posted to `/_plan` before a run; `/_stats` tells how many requests of each kind it served.

Faults: "ok", "429" (with Retry-After), "500", "slow" (sleeps past any client timeout), "close" (drops the
connection without a reply), "not_json" (an HTML page with status 200), "no_choices" (JSON, but not a chat
completion), "prose" (a chat completion whose content is chatter, not the JSON asked for).
`--exit-after K` makes the process kill itself (SIGKILL) once it has sent K good answers: a server that dies
mid-batch, at a known point. `--delay S` makes every good answer take S seconds, so a run can be caught
half-way.

Run: `python -m bench.fault_server --port 8123 [--exit-after K] [--delay S]`; `bench.local_servers.FaultServer`
starts it as a child process and scripts it (the fault tests and `bench.chop` use it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("ok", "429", "500", "slow", "close", "not_json", "no_choices", "prose")


class Plan:
    """The faults still to play, shared by the handler threads."""

    def __init__(self, exit_after: int | None, delay: float) -> None:
        self.lock = threading.Lock()
        self.queue: list[str] = []
        self.default = "ok"
        self.retry_after = 1
        self.exit_after = exit_after
        self.delay = delay
        self.served: Counter[str] = Counter()
        self.answers = 0  # good answers sent
        self.granted = 0  # good answers promised to requests so far (sent or being sent)

    def next(self) -> str:
        with self.lock:
            fault = self.queue.pop(0) if self.queue else self.default
            if fault == "ok" and self.exit_after is not None:
                # counted when promised, not when sent: two requests in flight must not both get the last answer
                if self.granted >= self.exit_after:
                    fault = "dead"  # the process is about to die: never answer this one
                else:
                    self.granted += 1
            self.served[fault] += 1
            return fault


def answer_for(prompt: str) -> str:
    """A fixed, valid answer to either CHOP task, told apart by the prompt's first words."""
    if prompt.startswith("Decide whether"):
        return json.dumps({"same": True, "reason": "same manual"})
    return json.dumps({"category": "air conditioner", "nouns": ["air conditioner filter"], "model": "225B",
                       "confidence": 0.9})


def completion(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()), "model": "fault",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers: the client reuses connections
    plan: Plan

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers=headers)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fault", "object": "model"}]})
        elif self.path == "/_stats":
            with self.plan.lock:
                self._json(200, {"served": dict(self.plan.served), "answers": self.plan.answers,
                                 "pending": list(self.plan.queue)})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        if self.path == "/_plan":
            with self.plan.lock:
                self.plan.queue = list(body.get("faults", []))
                self.plan.default = body.get("default", "ok")
                self.plan.retry_after = int(body.get("retry_after", 1))
                self.plan.served.clear()
                self.plan.answers = self.plan.granted = 0
            self._json(200, {"ok": True})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        self.play(self.plan.next(), body)

    def play(self, fault: str, body: dict[str, Any]) -> None:
        if fault == "ok":
            time.sleep(self.plan.delay)
            prompt = body["messages"][-1]["content"]
            self._json(200, completion(answer_for(prompt)))
            with self.plan.lock:
                self.plan.answers += 1
                last = self.plan.exit_after is not None and self.plan.answers >= self.plan.exit_after
            if last:  # give the client a moment to read this answer, then die like a crashed server
                threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
        elif fault == "dead":
            time.sleep(60)  # held until the process is killed
        elif fault == "429":
            self._json(429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                       {"Retry-After": str(self.plan.retry_after)})
        elif fault == "500":
            self._json(500, {"error": {"message": "internal error", "type": "server_error"}})
        elif fault == "slow":
            time.sleep(30)
            self._json(200, completion(answer_for(body["messages"][-1]["content"])))
        elif fault == "close":
            self.close_connection = True
            self.connection.shutdown(2)  # socket.SHUT_RDWR: no status line at all
        elif fault == "not_json":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "application/json")
        elif fault == "no_choices":
            self._json(200, {"id": "x", "object": "chat.completion", "model": "fault"})
        elif fault == "prose":
            self._json(200, completion("Sure! The product seems to be some kind of appliance."))
        else:
            self._json(400, {"error": {"message": f"unknown fault {fault!r}"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--exit-after", type=int, default=None)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    Handler.plan = Plan(args.exit_after, args.delay)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
