"""A question of a QA set: its text, the gold evidence as character spans of the documents, and what else the set
says about it (an answer, the product it is about, extra fields such as `not_relevant` spans)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.infra.jsonio import JsonObject
from core.schema.spans import Span


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    references: tuple[Span, ...]
    answer: str | None = None
    product: str | None = None
    extra: JsonObject = field(default_factory=dict, compare=False, hash=False)  # the set's other fields, as read

    def text(self, qualify: bool = False) -> str:
        """The question, prefixed with its product (`Product: question`) when asked and known."""
        if qualify and self.product:
            return f"{self.product}: {self.question}"
        return self.question
