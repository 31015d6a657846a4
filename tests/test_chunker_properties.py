"""Property tests: for every chunker and on English, Chinese and punctuation-free text, chunks are exact spans,
ordered, cover the text (gaps only whitespace), overlap as configured, and keep their size caps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import text as T
from core.chunkers.base import ChunkerContext, make_chunker
from core.chunkers.splitting import STRUCTURE_LEVELS, TOKENS, WORDS, keep_window, split_sized, split_to_cap
from core.ingest.documents import Document
from core.tokens import count_tokens, get_encoding

EN_WORDS = st.sampled_from([
    "the", "filter", "fan", "remote", "battery", "camera", "lens", "mode", "timer", "press", "hold", "clean",
    "water", "model", "225B", "Dr.", "e.g.", "temperature", "warranty", "(see", "Fig.", "2)", "3.5", "kg",
    "well-known",
])
ZH_CHARS = st.sampled_from(list("空调过滤网风扇遥控器电池相机镜头模式定时按住清洁水型号温度保修"))


@st.composite
def english(draw) -> str:
    paragraphs = []
    for _ in range(draw(st.integers(1, 5))):
        sentences = []
        for _ in range(draw(st.integers(1, 6))):
            words = draw(st.lists(EN_WORDS, min_size=1, max_size=30))
            sentences.append(" ".join(words).capitalize() + draw(st.sampled_from([".", "!", "?", ":", ""])))
        paragraphs.append(draw(st.sampled_from([" ", "  ", "\n"])).join(sentences))
    return draw(st.sampled_from(["\n\n", "\n \n", "\n\n\n"])).join(paragraphs)


@st.composite
def chinese(draw) -> str:
    paragraphs = []
    for _ in range(draw(st.integers(1, 4))):
        sentences = [
            "".join(draw(st.lists(ZH_CHARS, min_size=1, max_size=40))) + draw(st.sampled_from(["。", "！", "？", ""]))
            for _ in range(draw(st.integers(1, 6)))
        ]
        paragraphs.append("".join(sentences))
    return "\n\n".join(paragraphs)


@st.composite
def no_punctuation(draw) -> str:
    if draw(st.booleans()):
        return " ".join(draw(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x"]), min_size=1,
                                      max_size=400)))
    return draw(st.text(alphabet="abcdefghij", min_size=1, max_size=3000))  # no spaces at all


TEXTS = st.one_of(english(), chinese(), no_punctuation())

# (spec, measure for the cap, cap) -- small caps so that they bind on the generated texts
SPECS = [
    ("naive-500t:size=40:overlap=10", "tokens", 40),
    ("recursive:theta=25", "words", 25),
    ("paragraph:theta=25", "words", 25),
    ("sentence:max_tokens=40", "tokens", 40),
    ("cosine:max_tokens=40", "tokens", 40),
    ("cosine", None, None),
    ("semantic:max_tokens=40", "tokens", 40),
    ("semantic:buffer_by=text:max_tokens=40", "tokens", 40),
]


def check_spans(text: str, chunks, windows: bool = False) -> None:
    """`windows`: token-window chunks, whose token_count is the window's (checked in test_naive_windows)."""
    assert chunks or not text.strip(), "non-empty text produced no chunks"
    for c in chunks:
        assert text[c.start : c.end] == c.text, "chunk text is not its exact span"
        assert c.text and not c.text[0].isspace() and not c.text[-1].isspace()
        if not windows:
            assert c.token_count == count_tokens(c.text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end, "chunks out of order"
        assert b.index == a.index + 1
    covered = 0
    for c in chunks:
        if c.start > covered:
            assert not text[covered : c.start].strip(), f"uncovered text {text[covered:c.start]!r}"
        covered = max(covered, c.end)
    assert not text[covered:].strip(), "text after the last chunk is uncovered"


@pytest.mark.parametrize(("spec", "unit", "cap"), SPECS, ids=[s[0] for s in SPECS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(text=TEXTS)
def test_chunker_spans(cached_minilm, spec, unit, cap, text):
    chunker = make_chunker(spec, ChunkerContext(embedder=cached_minilm))
    chunks = chunker.chunk(Document("d", "d", text)).chunks
    check_spans(text, chunks, windows=spec.startswith("naive"))
    if cap is not None:
        for c in chunks:
            size = c.token_count if unit == "tokens" else T.count_words(c.text)
            assert size <= cap, f"{size} {unit} over the cap of {cap}"
    if not spec.startswith("naive"):
        for a, b in zip(chunks, chunks[1:]):
            assert b.start >= a.end, "this chunker has no overlap configured"


def test_separator_sentences_of_the_recursive_splitter():
    """sentencex cuts at sentence ends, keeps abbreviations and decimals, and its offsets are characters (emoji
    and CJK included), so the spans are exact cut points into the original text."""
    text = "Dr. Smith 🙂 paid $3.50 e.g. for tea. Then \"Stop!\" she said. 你好。我很好！ Last one"
    assert [text[s:e] for s, e in T.separator_sentences(text)] == [
        "Dr. Smith 🙂 paid $3.50 e.g. for tea.", 'Then "Stop!" she said.', "你好。", "我很好！", "Last one"]
    inner = T.separator_sentences(text, 4, 60)
    assert inner[0] == (4, text.index(".", 30) + 1) and inner[-1][1] <= 60


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, cut=st.integers(0, 40))
def test_separator_sentences_cover_the_span(text, cut):
    start, end = min(cut, len(text)), len(text)
    spans = T.separator_sentences(text, start, end)
    covered = start
    for s, e in spans:
        assert start <= s < e <= end and s >= covered
        assert not text[covered:s].strip(), "text between sentences is lost"
        assert text[s:e] == text[s:e].strip()
        covered = e
    assert not text[covered:end].strip()


def test_word_index_counts_like_count_words():
    text = "Alpha beta\u00a0gamma 中文字 🙂 x\u3000y\n\nend."
    index = T.WordIndex(text)
    for s in range(len(text) + 1):
        for e in range(s, len(text) + 1):
            assert index.count(s, e) == T.count_words(text[s:e]), (s, e)
    spans = [(s, e) for s in range(len(text) + 1) for e in range(len(text) + 1)]  # empty and reversed ones too
    assert index.count_many(spans) == [T.count_words(text[s:e]) for s, e in spans]
    assert T.WordIndex("").count_many([(0, 0)] * 20) == [0] * 20


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, cap=st.integers(1, 60), unit=st.sampled_from(["tokens", "words"]))
def test_split_sized_reports_each_spans_measured_size(text, cap, unit):
    """The splitter hands sizes up instead of measuring again: each must be the span's own measure."""
    measure = TOKENS if unit == "tokens" else WORDS
    sized = split_sized(text, 0, len(text), measure, cap, STRUCTURE_LEVELS)
    assert [(s, e) for s, e, _ in sized] == split_to_cap(text, 0, len(text), measure, cap, STRUCTURE_LEVELS)
    assert [n for *_, n in sized] == [measure.size(text, s, e) for s, e, _ in sized]
    assert all(n <= cap or e - s == 1 for s, e, n in sized)  # a character can be more tokens than the cap


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, size=st.integers(8, 60), ratio=st.floats(0.0, 0.5))
def test_naive_overlap_is_as_configured(text, size, ratio):
    overlap = int(size * ratio)
    chunks = make_chunker(f"naive-500t:size={size}:overlap={overlap}").chunk(Document("d", "d", text)).chunks
    check_spans(text, chunks, windows=True)
    for a, b in zip(chunks, chunks[1:]):
        shared = count_tokens(text[b.start : a.end]) if b.start < a.end else 0
        # window edges are trimmed of whitespace and CJK bytes snap to characters: allow a token either way
        assert overlap - 2 <= shared <= overlap + 1, (overlap, shared)
    for c in chunks:
        assert c.token_count <= size


def reference_windows(text: str, size: int, overlap: int) -> list[tuple[int, int, int]]:
    """Naive-500T's windows worked out the slow way: tiktoken's tokens of the whole text, each token's first
    character found by walking the text byte by byte, then windows of `size` tokens every `size - overlap`."""
    enc = get_encoding()
    tokens = enc.encode(text, disallowed_special=())
    char_at_byte, pos = {}, 0
    for i, ch in enumerate(text):
        char_at_byte[pos] = i
        pos += len(ch.encode("utf-8"))
    char_at_byte[pos] = len(text)
    offsets, token_start = [], 0
    for t in tokens:
        pos = token_start
        while pos not in char_at_byte:  # a token that starts inside a character: its next character
            pos += 1
        offsets.append(char_at_byte[pos])
        token_start += len(enc.decode_single_token_bytes(t))
    offsets.append(len(text))
    out, i, n = [], 0, len(tokens)
    while i < n:
        j = min(i + size, n)
        keep_window(out, (*T.strip_span(text, offsets[i], offsets[j]), j - i))
        if j >= n:
            break
        i = j - overlap
    return out


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, size=st.integers(4, 60), ratio=st.floats(0.0, 0.9))
@example(text="调度修滤风。按机。", size=55, ratio=0.48)  # tokens that split a character's bytes
def test_naive_windows(text, size, ratio):
    """Windows are the document's own tokens (as in CHOP, LangChain and Chonkie), and token_count says how many."""
    overlap = min(size - 1, int(size * ratio))
    chunks = make_chunker(f"naive-500t:size={size}:overlap={overlap}").chunk(Document("d", "d", text)).chunks
    assert [(c.start, c.end, c.token_count) for c in chunks] == reference_windows(text, size, overlap)
    for c in chunks:  # the span alone, re-tokenised, can only differ at its two edges (stripping only removes)
        assert count_tokens(c.text) <= c.token_count + 2


def test_naive_defaults_match_methods():
    chunker = make_chunker("naive-500t")
    assert (chunker.size, chunker.overlap) == (500, 100)


def test_cosine_breaks_where_similarity_falls(cached_minilm):
    text = ("The camera battery charges in two hours. Charge the camera battery before first use. "
            "Tomato soup needs basil and garlic. Simmer the soup for twenty minutes.")
    result = make_chunker("cosine", ChunkerContext(embedder=cached_minilm)).chunk(Document("d", "d", text))
    assert [c.text.split(".")[0] for c in result.chunks] == [
        "The camera battery charges in two hours", "Tomato soup needs basil and garlic"]
    assert result.trace["values"][1] < 0.35 <= min(result.trace["values"][0], result.trace["values"][2])


def test_sentence_splitting_handles_abbreviations_and_chinese():
    en = "Dr. Smith uses e.g. the filter. See Fig. 2 for details. Done!"
    assert [en[s:e] for s, e in T.sentences(en)] == ["Dr. Smith uses e.g. the filter.", "See Fig. 2 for details.",
                                                    "Done!"]
    zh = "这是第一句。这是第二句！第三句？"
    assert [zh[s:e] for s, e in T.sentences(zh)] == ["这是第一句。", "这是第二句！", "第三句？"]


@settings(max_examples=60, deadline=None)
@given(text=english(), theta=st.integers(5, 40))
def test_paragraph_chunks_are_whole_paragraphs_or_inside_one(text, theta):
    chunks = make_chunker(f"paragraph:theta={theta}").chunk(Document("d", "d", text)).chunks
    check_spans(text, chunks)
    paras = T.paragraphs(text)
    starts, ends = {s for s, _ in paras}, {e for _, e in paras}
    for c in chunks:
        inside_one = any(s <= c.start and c.end <= e for s, e in paras)
        assert inside_one or (c.start in starts and c.end in ends), (c.start, c.end)


def test_paragraph_differs_from_recursive_at_a_long_paragraph():
    long_para = " ".join(f"word{i}" for i in range(25)) + "."
    text = f"{long_para}\n\nA short closing paragraph."
    doc = Document("d", "d", text)
    rec = [c.text for c in make_chunker("recursive:theta=20").chunk(doc).chunks]
    par = [c.text for c in make_chunker("paragraph:theta=20").chunk(doc).chunks]
    assert par[-1] == "A short closing paragraph."  # the long paragraph's tail keeps to itself
    assert rec[-1].endswith("word24.\n\nA short closing paragraph.")  # recursive packs it with the next one
    assert make_chunker("paragraph").identity.startswith("paragraph:v4:")


def test_long_paragraphs_split_like_pysbd_in_blocks():
    """A paragraph over PYSBD_BLOCK characters is given to pysbd block by block, which keeps the time linear
    (pysbd's own is quadratic) and finds the same sentences as pysbd on the whole paragraph: abbreviations,
    decimals, ellipses and quotes included. Some pysbd rules look across the whole input (list markers like "2)",
    parentheses, the pairing of unbalanced quotes); near those the readings can differ, neither more right."""
    import random

    rng = random.Random(7)
    vocab = ["the", "filter", "fan", "remote", "battery", "Dr.", "e.g.", "timer", "3.5", "kg", "Fig.",
             "U.S.", "i.e.", '"quote"', "No."]
    sentences = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 40))).capitalize()
                 + rng.choice([".", "!", "?", "...", ""]) for _ in range(600)]
    text = " ".join(sentences)
    assert len(text) > 3 * T.PYSBD_BLOCK and "\n" not in text
    assert T.sentences(text) == T._pysbd_sentences(text, 0, len(text))
    no_stops = " ".join(rng.choice(["alpha", "beta", "gamma"]) for _ in range(6000))
    spans = T.sentences(no_stops)
    assert len(spans) > 1 and all(e - s <= T.PYSBD_BLOCK for s, e in spans)
    assert " ".join(no_stops[s:e] for s, e in spans) == no_stops


def test_semantic_window_vectors_are_the_mean_of_their_sentences(cached_minilm):
    text = ("The filter sits behind the front panel. Pull it out gently. Rinse it in warm water. "
            "The remote needs two AAA batteries. Press the timer button to set hours.")
    chunker = make_chunker("semantic:buffer=1", ChunkerContext(embedder=cached_minilm))
    units = T.sentences(text)
    got = chunker._window_vectors(text, units)
    vecs = np.asarray(cached_minilm.embed([text[s:e] for s, e in units]), dtype=np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for i in range(len(units)):
        mean = vecs[max(0, i - 1) : i + 2].mean(axis=0)
        assert np.allclose(got[i], mean / np.linalg.norm(mean), atol=1e-5)
    by_text = make_chunker("semantic:buffer=1:buffer_by=text", ChunkerContext(embedder=cached_minilm))
    joined = by_text._window_vectors(text, units)
    expected = np.asarray(cached_minilm.embed([text[units[max(0, i - 1)][0] : units[min(len(units) - 1, i + 1)][1]]
                                               for i in range(len(units))]))
    assert np.allclose(joined, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-5)
