"""LumberChunker against a scripted chat client (no model): the paragraph id in a well-formed answer is where the
chunk ends; an answer without a usable id ends the chunk at its group's end and records why; a backend that
cannot answer stops the run with an LLMError."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.llm.base import LLMError
from core.schema.documents import Document
from core.tokens import count_tokens
from tests.support.fakes import ScriptedChat, listed_ids

PARAGRAPHS = [
    "The filter sits behind the front panel of the indoor unit, under the grille.",
    "Pull the filter out gently and rinse it in warm water, then let it dry in the shade.",
    "The remote control needs two AAA batteries; replace both of them at the same time.",
    "Press the timer button to set the hours, and press it again to cancel the timer.",
    "The warranty covers parts and labour for two years from the date of purchase.",
    "Keep the receipt: the service centre asks for it before any repair is made.",
]
TEXT = "\n\n".join(PARAGRAPHS)
STARTS = [TEXT.index(p) for p in PARAGRAPHS]
ENDS = [s + len(p) for s, p in zip(STARTS, PARAGRAPHS)]
#: the first group holds paragraphs 0-3 exactly: the fifth would take it over the budget
GROUP = sum(count_tokens(p) for p in PARAGRAPHS[:4])


def run(script, text: str = TEXT, group: int = GROUP):
    chat = ScriptedChat(script)
    client = chat.client()
    result = make_chunker(f"lumber:group_tokens={group}", ChunkerContext(chat=client)).chunk(Document("d", "d", text))
    return result, chat, client


@pytest.mark.parametrize("answer", ["Answer: ID 2", "ID 2", "Answer:ID2", "answer: id 2", "2",
                                    "The topic changes in paragraph 3, that is ID 2."])
def test_a_well_formed_answer_sets_the_split(answer):
    def script(prompt):
        ids = listed_ids(prompt)
        return answer if ids[0] == 0 else f"Answer: ID {ids[1]}"

    result, chat, client = run(script)
    # first group: paragraphs 0-3, cut before paragraph 2; the next group starts there: 2-5, cut before 3; the
    # next: 3-5, cut before 4; then 4-5, cut before 5; paragraph 5 is left alone (no call)
    assert [c.text for c in result.chunks] == [
        TEXT[STARTS[0] : ENDS[1]], PARAGRAPHS[2], PARAGRAPHS[3], PARAGRAPHS[4], PARAGRAPHS[5]]
    assert [listed_ids(r.prompt) for r in chat.requests] == [[0, 1, 2, 3], [2, 3, 4, 5], [3, 4, 5], [4, 5]]
    first = chat.requests[0]
    assert all(f"ID {i}: {PARAGRAPHS[i]}" in first.prompt for i in range(4)) and PARAGRAPHS[4] not in first.prompt
    assert (first.temperature, first.max_tokens) == (0.1, 20)
    d = result.trace["decisions"][0]
    assert d == {"start": STARTS[0], "group_end": ENDS[3], "cut_at": ENDS[1], "answer": answer, "error": None}
    assert all(d["error"] is None for d in result.trace["decisions"])
    assert client.stats.calls == 4 and client.stats.errors == 0


@pytest.mark.parametrize("answer", ["I cannot tell where the topic changes.", "", "Answer: ID 0", "Answer: ID 9",
                                    "Answer: none of them"])
def test_an_unusable_answer_ends_the_chunk_at_the_group_end(answer):
    result, chat, client = run(lambda prompt: answer)
    # no usable id: each group becomes one chunk, and the next group starts after it
    assert [c.text for c in result.chunks] == [TEXT[STARTS[0] : ENDS[3]], TEXT[STARTS[4] : ENDS[5]]]
    assert [listed_ids(r.prompt) for r in chat.requests] == [[0, 1, 2, 3], [4, 5]]
    decisions = result.trace["decisions"]
    assert [(d["start"], d["cut_at"], d["group_end"]) for d in decisions] == [
        (STARTS[0], ENDS[3], ENDS[3]), (STARTS[4], ENDS[5], ENDS[5])]
    assert all(d["error"] == f"unusable answer {answer[:60]!r}" for d in decisions)


def test_an_id_outside_the_group_is_unusable_even_when_it_is_a_real_paragraph():
    # "ID 5" names a paragraph of the document, but not one of the first group's (0-3)
    result, chat, _ = run(lambda prompt: "Answer: ID 5")
    assert result.chunks[0].text == TEXT[STARTS[0] : ENDS[3]]
    assert result.trace["decisions"][0]["error"] == "unusable answer 'Answer: ID 5'"
    assert result.trace["decisions"][1]["error"] is None  # in the group 4-5, ID 5 is a fine cut
    assert [c.text for c in result.chunks[1:]] == [PARAGRAPHS[4], PARAGRAPHS[5]]


def test_a_backend_that_cannot_answer_stops_the_run():
    calls = []

    def script(prompt):
        calls.append(prompt)
        return LLMError("connection refused") if len(calls) == 2 else "Answer: ID 2"

    with pytest.raises(LLMError, match="lumber: connection refused"):
        run(script)
    assert len(calls) == 2  # the first answer arrived, the second did not


def test_one_paragraph_asks_nothing():
    result, chat, _ = run(lambda prompt: pytest.fail("no decision needed"), text=PARAGRAPHS[0])
    assert [c.text for c in result.chunks] == [PARAGRAPHS[0]] and chat.requests == []
    assert run(lambda prompt: "", text="  \n\n ")[0].chunks == []
