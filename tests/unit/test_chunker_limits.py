"""Chunker parameters have floors and ceilings (issue 39, item 7): `naive-500t:size=1` made about one chunk per
token, and `semantic:buffer_by=text` with a buffer as long as the text read all of it once per sentence
(quadratic: 10 KB 63 s, 20 KB 243 s under the `window` long-text policy). Each refusal is one line naming the
chunker, the parameter, its bounds and the value given; make_chunker checks it before any service is built."""

from __future__ import annotations

import numpy as np
import pytest

from core.catalog import available
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError
from core.schema.documents import Document


@pytest.mark.parametrize(("spec", "message"), [
    ("naive-500t:size=1", "naive-500t: size must be between 16 and 8192 tokens (got 1); smaller makes a chunk of"),
    ("naive-500t:size=100000", "naive-500t: size must be between 16 and 8192 tokens (got 100000)"),
    ("naive-500t:size=500:overlap=499", "naive-500t: overlap must be between 0 and 250 tokens (got 499)"),
    ("naive-500t:overlap=-1", "naive-500t: overlap must be between 0 and 250 tokens (got -1)"),
    ("chop:size=2:overlap=1", "chop: size must be between 16 and 8192 tokens (got 2)"),
    ("chop:boost=5", "chop: boost must be between 0 and 1 (got 5)"),
    ("recursive:theta=1", "recursive: theta must be between 8 and 6000 words (got 1)"),
    ("paragraph:theta=100000", "paragraph: theta must be between 8 and 6000 words (got 100000)"),
    ("paragraph:fragment=-1", "paragraph: fragment must be between 0 and 6000 words (got -1)"),
    ("sentence:max_tokens=1", "sentence: max_tokens must be between 16 and 8192 tokens (got 1)"),
    ("sentence:overlap_sentences=50", "sentence: overlap_sentences must be between 0 and 8 sentences (got 50)"),
    ("cosine:max_tokens=2", "cosine: max_tokens must be between 16 and 8192 tokens (got 2)"),
    ("semantic:buffer_by=text:buffer=1000",
     "semantic: buffer must be between 0 and 4 sentences either side (got 1000)"),
    ("semantic:buffer=5", "semantic: buffer must be between 0 and 4 sentences either side (got 5)"),
    ("semantic:max_tokens=1", "semantic: max_tokens must be between 16 and 8192 tokens (got 1)"),
    ("semantic:percentile=150", "semantic: percentile must be between 0 and 100 (got 150)"),
    ("lumber:group_tokens=100000", "lumber: group_tokens must be between 50 and 4000 tokens (got 100000)"),
    ("lg:theta=2", "lg: theta must be between 8 and 6000 words (got 2)"),
    ("lgmgc:theta=300:min_words=300", "lgmgc: min_words must be between 0 and 299 words (got 300)"),
    ("mg:theta=100000", "mg: theta must be between 8 and 6000 words (got 100000)"),
])
def test_a_parameter_out_of_its_bounds_is_one_line_naming_them(spec, message):
    with pytest.raises(ConfigError) as caught:
        make_chunker(spec)
    assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.parametrize("spec", [*available(), "naive-500t:size=16:overlap=8", "naive-500t:size=8192",
                                  "recursive:theta=8", "semantic:buffer_by=text:buffer=4",
                                  "sentence:overlap_sentences=8", "cosine:max_tokens=none", "lumber:group_tokens=50"])
def test_defaults_and_the_bounds_themselves_are_accepted(spec):
    make_chunker(spec)


class CountingEmbedder:
    """Counts the characters it is asked to read; every text gets a vector of its own."""

    key = "counting"

    def __init__(self) -> None:
        self.chars = 0

    def embed(self, texts: list[str], progress=None) -> np.ndarray:
        self.chars += sum(len(t) for t in texts)
        return np.array([[1.0, (hash(t) % 97) / 97.0, len(t) % 7] for t in texts], dtype=np.float32)


def test_semantic_windows_of_text_read_each_sentence_a_bounded_number_of_times():
    """At the largest buffer allowed, the text the embedder reads grows with the text, not with its square."""
    sentence = "The filter of the air purifier is cleaned with warm water every month. "
    read = {}
    for n in (100, 200):
        embedder = CountingEmbedder()
        text = sentence * n
        make_chunker("semantic:buffer_by=text:buffer=4", ChunkerContext(embedder=embedder)).chunk(
            Document("d", "d", text))
        read[n] = embedder.chars / len(text)
    assert read[200] <= 9 and read[200] <= read[100] * 1.05  # 2 * 4 + 1 readings of each sentence at most


def test_a_run_of_more_chunkers_than_the_shared_limit_is_refused_before_any_work():
    """40 specs made 40 collections; on a shared server a run holds at most MAX_SPECS_SHARED."""
    from types import SimpleNamespace

    from core.workbench import MAX_SPECS_SHARED, benchmark, run_chunkers

    specs = [f"recursive:theta={100 + i}" for i in range(40)]
    untouched = SimpleNamespace()  # no services: nothing may be chunked, embedded or stored
    for call in (lambda: run_chunkers(untouched, None, specs, max_specs=MAX_SPECS_SHARED),
                 lambda: benchmark(untouched, None, specs, [1], False, False, max_specs=MAX_SPECS_SHARED)):
        with pytest.raises(ConfigError, match="40 chunkers in one run, over the limit of 12 on this shared server"):
            call()
    assert run_chunkers(untouched, None, [], max_specs=MAX_SPECS_SHARED) == {}
