"""LumberChunker (Duarte et al., 2024), one of LGMGC's baselines: paragraphs are grouped until the group holds
about `group_tokens` tokens; a chat LLM names the first paragraph where the content clearly changes; the
chunk ends just before it and the next group starts there. Needs a chat backend (local or OpenAI-compatible).
An answer without a usable paragraph id ends the chunk at the group's end, and the error is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core import text as T
from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_range
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.chunkers.splitting import STRUCTURE_LEVELS, TOKENS, split_sized
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonValue
from core.llm.base import ChatRequest, LLMError
from core.schema.chunks import Chunking
from core.schema.documents import Document

LUMBER_PROMPT = """You will read a document split into numbered paragraphs ("ID n: ...").
Find the first paragraph, after the first one, where the content clearly changes topic compared with the
paragraphs before it. Answer with that paragraph's id only, as "Answer: ID n". If nothing changes, answer with
the last id.

{paragraphs}"""

#: the largest group of paragraphs sent to the chat model in one prompt (the paper's 550 tokens; small local
#: models read a few thousand)
MAX_GROUP_TOKENS = 4000


@register
@dataclass
class LumberChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "lumber"
    version = 2  # long paragraphs split by the v2 recursive levels (sentencex)
    needs = ("chat",)
    group_tokens: int = 550
    temperature: float = 0.1

    def validate(self) -> None:
        check_range(self.name, "group_tokens", self.group_tokens, 50, MAX_GROUP_TOKENS, "tokens",
                    "the paragraphs of one group go to the chat model in one prompt")
        check_range(self.name, "temperature", self.temperature, 0, 2)

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        sized = [piece for s, e in T.paragraphs(doc.text)  # paragraphs longer than a group are split first
                 for piece in split_sized(doc.text, s, e, TOKENS, self.group_tokens, STRUCTURE_LEVELS[1:])]
        units, sizes = [(s, e) for s, e, _ in sized], [n for *_, n in sized]
        spans: list[tuple[int, int]] = []
        decisions: list[JsonValue] = []  # one per group of paragraphs asked about, for the app
        i = 0
        while i < len(units):
            self.context.check_stop()  # one chat request per group: the slow step
            j, total = i, 0
            while j < len(units) and (j == i or total + sizes[j] <= self.group_tokens):
                total += sizes[j]
                j += 1
            if j - i == 1:  # a single paragraph needs no decision
                spans.append((units[i][0], units[j - 1][1]))
                i = j
                continue
            listing = "\n".join(f"ID {n}: {doc.text[s:e][:600]}" for n, (s, e) in enumerate(units[i:j], start=i))
            chat = self.context.chat
            if chat is None:  # make_chunker refuses a lumber chunker without one
                raise ConfigError(f"{self.name}: needs a chat LLM, and none is configured")
            answer = chat.ask(ChatRequest(LUMBER_PROMPT.format(paragraphs=listing),
                                          temperature=self.temperature, max_tokens=20))
            if answer.error:
                raise LLMError(f"lumber: {answer.error}")
            found = re.search(r"ID\s*(\d+)", answer.text) or re.search(r"\b(\d+)\b", answer.text)
            cut = int(found.group(1)) if found else j
            error = None if found and i < cut <= j else f"unusable answer {answer.text[:60]!r}"
            cut = cut if i < cut <= j else j
            decisions.append({"start": units[i][0], "group_end": units[j - 1][1], "cut_at": units[cut - 1][1],
                              "answer": answer.text[:80], "error": error})
            spans.append((units[i][0], units[cut - 1][1]))
            i = cut
        return Chunking(build_chunks(doc, spans), {"kind": "lumber", "decisions": decisions})
