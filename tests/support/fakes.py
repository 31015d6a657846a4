"""Deterministic stand-ins for the model services chunkers need, for tests that must run without a model.

- `FakeEosScorer`: what LGMGC's `lg` / `lgmgc` call on `context.scorer` (`score`, `forward_passes`, `label`, `key`):
  p(end of text) at each position is a hash of the characters just before it, so splits are fixed but arbitrary.
- `ScriptedChat`: a chat backend (`core.llm.base.ChatBackend`) that answers from a script; wrap it in the real
  `LLMClient` (`ScriptedChat.client()`), which is what LumberChunker calls (`ask`, `ChatAnswer.error`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

from core.llm.base import ChatAnswer, ChatRequest, LLMClient, LLMError
from core.methods.lgmgc.scoring import ScoredWindow


def stable_fraction(text: str) -> float:
    """A number in [0, 1) fixed by `text` (not by Python's per-process string hash)."""
    return int(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16) / 16**12


class FakeEosScorer:
    """`EosScorer`'s interface, deterministic: p at a sentence end is a hash of the 16 characters before it."""

    key = "fake-eos:v1"
    label = "fake p(eos) (hash of the sentence end)"

    def __init__(self) -> None:
        self.forward_passes = 0
        self.calls: list[tuple[str, list[int]]] = []

    def probability(self, text: str, position: int) -> float:
        return stable_fraction(text[max(0, position - 16) : position])

    def score(self, text: str, positions: Sequence[int]) -> ScoredWindow:
        assert all(0 < p <= len(text) for p in positions), "a position outside the scored window"
        self.forward_passes += 1
        self.calls.append((text, list(positions)))
        return ScoredWindow([self.probability(text, p) for p in positions], n_tokens=len(text.split()))


#: a script: the prompt -> the answer's text, or an LLMError to raise (the backend could not answer)
Script = Callable[[str], "str | LLMError"]
LISTED_ID = re.compile(r"^ID (\d+): ", re.MULTILINE)


def listed_ids(prompt: str) -> list[int]:
    """The paragraph ids a LumberChunker prompt lists, in order."""
    return [int(n) for n in LISTED_ID.findall(prompt)]


class ScriptedChat:
    """A `ChatBackend` answering from `script`; every request is kept in `requests`."""

    label = "scripted chat"
    max_concurrency = 1

    def __init__(self, script: Script, key: str = "scripted:v1") -> None:
        self.script = script
        self.key = key
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatAnswer:
        self.requests.append(request)
        answer = self.script(request.prompt)
        if isinstance(answer, LLMError):
            raise answer
        return ChatAnswer(answer, tokens_in=len(request.prompt.split()), tokens_out=len(answer.split()))

    def client(self) -> LLMClient:
        return LLMClient(self)


def hashed_answers(prompt: str) -> str:
    """A well-formed answer naming one of the listed ids after the first, picked by a hash of the prompt."""
    ids = listed_ids(prompt)
    return f"Answer: ID {ids[1:][int(stable_fraction(prompt) * (len(ids) - 1))]}"


def mixed_answers(prompt: str) -> str:
    """Well-formed, bare-number, out-of-range and unparseable answers, picked by a hash of the prompt."""
    ids = listed_ids(prompt)
    pick = stable_fraction(prompt)
    if pick < 0.4:
        return hashed_answers(prompt)
    if pick < 0.55:
        return str(ids[-1])  # a bare number: read by the second pattern
    if pick < 0.7:
        return f"Answer: ID {ids[0]}"  # the group's first paragraph: no cut there
    if pick < 0.85:
        return f"Answer: ID {ids[-1] + 7}"  # beyond the group
    return "I am not sure where the topic changes."
