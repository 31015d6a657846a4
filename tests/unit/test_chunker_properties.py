"""Property tests: for every chunker and on English, Chinese and punctuation-free text, chunks are exact spans,
ordered, cover the text (gaps only whitespace), overlap as configured, and keep their size caps.

Every registered chunker is held to its contract (CONTRACTS) on varied documents; the chunkers that need a model
run on deterministic stand-ins (tests/support/fakes.py): CHOP on the rule backend, LGMGC on a hashed p(EOS),
LumberChunker on a scripted chat. Cosine and semantic use the real bundled MiniLM."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import text as T
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import available, make_chunker, parse_spec
from core.chunkers.sentence import sentence_units
from core.chunkers.splitting import STRUCTURE_LEVELS, TOKENS, WORDS, keep_window, split_sized, split_to_cap
from core.methods.chop.cnm import CNM, prefix_text
from core.methods.chop.rules import RuleCnm
from core.schema.chunks import check_spans as core_check_spans
from core.schema.documents import Document
from core.tokens import count_tokens, get_encoding
from tests.support.fakes import FakeEosScorer, ScriptedChat, hashed_answers, listed_ids, mixed_answers
from tests.support.spans import check_spans

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
    ("page", None, None),  # no cap: a page is the unit, however long (the embedder's unread part is greyed)
]


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
@given(text=TEXTS, size=st.integers(16, 60), ratio=st.floats(0.0, 0.5))
@example(text="The the the the the well-known well-known well-known.  2) the.  The.", size=19, ratio=0.375)
def test_naive_overlap_is_as_configured(text, size, ratio):
    overlap = int(size * ratio)
    chunks = make_chunker(f"naive-500t:size={size}:overlap={overlap}").chunk(Document("d", "d", text)).chunks
    check_spans(text, chunks, windows=True)
    for a, b in zip(chunks, chunks[1:]):
        shared = count_tokens(text[b.start : a.end]) if b.start < a.end else 0
        # window edges are trimmed of whitespace and CJK bytes snap to characters: allow a token either way, and
        # one more for every whitespace character trimmed at the overlap's two edges (a run of spaces can be
        # several tokens of the document's own, as in "well-known.  2) the.  The.")
        trimmed = (b.start - len(text[: b.start].rstrip())) + (len(text[a.end :]) - len(text[a.end :].lstrip()))
        assert overlap - 2 - trimmed <= shared <= overlap + 1, (overlap, shared, trimmed)
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
@given(text=TEXTS, size=st.integers(16, 60), ratio=st.floats(0.0, 0.5))
@example(text="调度修滤风。按机。", size=55, ratio=0.48)  # tokens that split a character's bytes
def test_naive_windows(text, size, ratio):
    """Windows are the document's own tokens (as in CHOP, LangChain and Chonkie), and token_count says how many."""
    overlap = min(size // 2, int(size * ratio))
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
@given(text=english(), theta=st.integers(8, 40))
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


# --------------------------------------------------------------------------------------------------------------
# Every registered chunker, on varied documents: the contract each one promises.

def _long_paragraphs() -> str:
    import random

    rng = random.Random(11)
    vocab = ["the", "filter", "battery", "camera", "remote", "water", "clean", "press", "mode", "timer", "Dr.",
             "e.g.", "3.5", "kg", "warranty", "lens"]
    return "\n\n".join(" ".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(4, 18))).capitalize() + "."
                                for _ in range(rng.randint(6, 12))) for _ in range(3))


MANUALS = ("# Nordwind 225B Air Conditioner - User Manual\n\n"
           + "Clean the air filter of the air conditioner every two weeks. The 225B indoor unit has a cooling mode "
             "and a heat mode. Press the mode button on the remote control. " * 4
           + "\n\n# Lumora X200 Camera - User Manual\n\n"
           + "Charge the camera battery before first use. The X200 lens cap protects the lens. Set the shutter "
             "and the aperture, then insert the memory card. " * 4)

VARIED_TEXTS = {
    "empty": "",
    "blank": " \n\n \t\n ",
    "one-word": "word",
    "one-cjk-char": "空",
    "unicode": "Café naïve résumé — “quoted” 🙂🚀 text. Ελληνικά κείμενα εδώ. Кириллица тоже! Ünïcödé ends",
    "cjk": ("空调过滤网每两周清洁一次。遥控器需要两节电池！相机镜头请用软布擦拭？" * 6
            + "\n\n" + "这是最后一段没有标点" * 8),
    "long-paragraphs": _long_paragraphs(),
    "markdown": ("# Quick start\n\n## Unpacking\n\nTake the unit out of the box. Keep the foam.\n\n### Parts\n\n"
                 "- remote control\n- two AAA batteries\n- filter\n\n## Cleaning\n\nRinse the filter in warm water "
                 "and let it dry in the shade before you put it back.\n\n```\nmode = cool\n```\n\n# Warranty\n\n"
                 "Two years."),
    "short-lines": "\n".join(f"line {i} ok" for i in range(90)),
    "no-spaces": "abcdefghij" * 150,
    "manuals": MANUALS,
}


@dataclass
class Contract:
    """What a chunker promises: `windows` (token windows that may overlap, token_count = the window's tokens),
    `overlap` (chunks may overlap), a cap on each chunk (`unit`, `cap`), and `children` (parents plus θ/2 and θ/4
    children, exact spans inside their parent)."""

    spec: str
    unit: str | None = None
    cap: int | None = None
    windows: bool = False
    overlap: bool = False
    children: bool = False
    covers: bool = True  # every non-space character in a chunk (not Docling's: tests/unit/test_peer_docling.py)


#: the peers (core.chunkers.peers): the libraries' splitters, with sizes small enough to bind on these documents
PEER_CONTRACTS = [
    Contract("langchain-recursive:chunk_size=200:chunk_overlap=40", "chars", 200, overlap=True),
    Contract("semchunk:chunk_size=40", "tokens", 40),
    Contract("text-splitter:capacity=200", "chars", 200),
    Contract("chonkie-recursive:chunk_size=200", "chars", 200),
    Contract("docling-hierarchical", covers=False),  # headings in metadata; code and tables rewritten
    Contract("docling-hybrid:max_tokens=40", covers=False),  # its cap is in MiniLM word pieces
    # LlamaIndex sums its pieces' token counts, and a piece joined to the next can count a token more: 2 spared
    Contract("llamaindex-sentence:chunk_size=40:chunk_overlap=8", "tokens", 42, overlap=True),
    Contract("llamaindex-semantic"),  # no cap: LlamaIndex's semantic parser has none
    Contract("chonkie-semantic:chunk_size=200"),  # no cap: a sentence longer than chunk_size is one chunk
]

CONTRACTS = [
    Contract("naive-500t:size=40:overlap=10", "tokens", 40, windows=True, overlap=True),
    Contract("chop:size=40:overlap=10", "tokens", 40, windows=True, overlap=True),
    Contract("recursive:theta=25", "words", 25),
    Contract("paragraph:theta=25", "words", 25),
    Contract("sentence:max_tokens=40", "tokens", 40),
    Contract("cosine:max_tokens=40", "tokens", 40),
    Contract("semantic:max_tokens=40", "tokens", 40),
    Contract("lg:theta=30:min_words=5", "words", 30),
    Contract("mg:theta=30", "words", 30, children=True),
    Contract("lgmgc:theta=30:min_words=5", "words", 30, children=True),
    Contract("lumber:group_tokens=60", "unit tokens", 60),
    Contract("page"),  # no cap (a page however long); these documents have no pages: each is kept whole
    *PEER_CONTRACTS,
]


def services(embedder=None) -> ChunkerContext:
    return ChunkerContext(embedder=embedder, llm=RuleCnm(), scorer=FakeEosScorer(),
                          chat=ScriptedChat(hashed_answers).client())


def test_every_registered_chunker_has_a_contract():
    assert sorted(parse_spec(c.spec)[0] for c in CONTRACTS) == available()


def check_children(text: str, chunks, theta: int) -> None:
    """Parents first (a single-level run), then for each parent its θ/2 ("h") and θ/4 ("q") children: exact
    spans inside the parent, in order, covering it but for whitespace, each within its word cap."""
    parents = [c for c in chunks if c.parent_id is None]
    children = [c for c in chunks if c.parent_id is not None]
    assert chunks[: len(parents)] == parents, "parents come first"
    assert len({c.chunk_id for c in chunks}) == len(chunks), "chunk ids are unique"
    by_id = {p.chunk_id: p for p in parents}
    for p in parents:
        for label, cap in (("h", max(1, theta // 2)), ("q", max(1, theta // 4))):
            kids = [c for c in children if c.parent_id == p.chunk_id and c.child.startswith(label)]
            assert kids, f"parent {p.chunk_id} has no {label} children"
            assert [c.child for c in kids] == [f"{label}{j}" for j in range(len(kids))]
            covered = p.start
            for k in kids:
                assert text[k.start : k.end] == k.text and p.start <= k.start < k.end <= p.end
                assert k.index == p.index and k.token_count == count_tokens(k.text)
                assert k.start >= covered and not text[covered : k.start].strip(), "a child lost parent text"
                assert T.count_words(k.text) <= cap, f"{label} child over {cap} words"
                covered = k.end
            assert not text[covered : p.end].strip()
    assert all(c.parent_id in by_id for c in children)


def check_contract(contract: Contract, text: str, chunks) -> None:
    single = [c for c in chunks if c.parent_id is None] if contract.children else chunks
    check_spans(text, single, windows=contract.windows, covers=contract.covers)
    core_check_spans(chunks, [Document("d", "d", text)])
    if not contract.overlap:
        for a, b in zip(single, single[1:]):
            assert b.start >= a.end, "chunks overlap"
    for c in single:
        if contract.unit == "tokens":
            assert c.token_count <= contract.cap and (contract.windows or count_tokens(c.text) <= contract.cap)
        elif contract.unit == "words":
            assert T.count_words(c.text) <= contract.cap, f"{T.count_words(c.text)} words over {contract.cap}"
        elif contract.unit == "chars":
            assert len(c.text) <= contract.cap, f"{len(c.text)} characters over {contract.cap}"
    if contract.unit == "unit tokens":
        check_lumber_groups(text, chunks, contract.cap)
    if contract.children:
        check_children(text, chunks, contract.cap)


def lumber_units(text: str, group_tokens: int) -> list[tuple[int, int, int]]:
    """LumberChunker's units: paragraphs, the ones longer than a group split on lines, sentences and words."""
    return [piece for s, e in T.paragraphs(text)
            for piece in split_sized(text, s, e, TOKENS, group_tokens, STRUCTURE_LEVELS[1:])]


def check_lumber_groups(text: str, chunks, group_tokens: int) -> None:
    """Every chunk is a run of whole units whose token counts add up to at most `group_tokens` (a single unit
    is within the cap by itself). The span's own token count can be a little higher: the separators between the
    units (a blank line is a token) are not counted, which is what "about group_tokens" means in lumber.py."""
    units = lumber_units(text, group_tokens)
    starts, ends = {s: i for i, (s, _, _) in enumerate(units)}, {e: i for i, (_, e, _) in enumerate(units)}
    for c in chunks:
        assert c.start in starts and c.end in ends, "a chunk does not start and end at unit edges"
        run = units[starts[c.start] : ends[c.end] + 1]
        assert run and sum(n for *_, n in run) <= group_tokens, [n for *_, n in run]
        separators = sum(count_tokens(text[a[1] : b[0]]) for a, b in zip(run, run[1:]))
        assert c.token_count <= group_tokens + separators


@pytest.mark.parametrize("contract", CONTRACTS, ids=[c.spec for c in CONTRACTS])
def test_every_chunker_keeps_its_contract_on_varied_documents(cached_minilm, contract):
    chunker = make_chunker(contract.spec, services(cached_minilm))
    for name, text in VARIED_TEXTS.items():
        chunks = chunker.run(Document("d", "d", text)).chunks
        assert bool(chunks) == bool(text.strip()), name
        try:
            check_contract(contract, text, chunks)
        except AssertionError as exc:
            raise AssertionError(f"{contract.spec} on the {name!r} document: {exc}") from exc


MANUAL_LINES = st.sampled_from([
    "# Nordwind 225B Air Conditioner - User Manual", "# Lumora X200 Camera - User Manual", "Table of contents",
    "Clean the air filter of the air conditioner every two weeks.", "The 225B indoor unit has a cooling mode.",
    "Charge the camera battery before first use.", "The X200 lens cap protects the lens and the shutter.",
    "The 226R heat pump is quiet. Press 226R mode.", "Rinse the filter in warm water.", "Press the timer button.",
])


@st.composite
def manuals(draw) -> str:
    count = draw(st.integers(1, 8))
    return "\n\n".join(" ".join(draw(st.lists(MANUAL_LINES, min_size=1, max_size=8))) for _ in range(count))


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(TEXTS, manuals()), size=st.integers(16, 80), ratio=st.floats(0.0, 0.5),
       mode=st.sampled_from(["pairs", "anchor"]))
@example(text=MANUALS, size=40, ratio=0.25, mode="pairs")  # a new-document marker: a FALSE and a second run
@example(text=MANUALS, size=40, ratio=0.25, mode="anchor")
def test_chop_windows_are_naive_windows_with_a_piecewise_constant_cnm(text, size, ratio, mode):
    overlap = int(size * ratio)
    doc = Document("d", "Some manual.pdf", text)
    result = make_chunker(f"chop:size={size}:overlap={overlap}:mode={mode}", services()).chunk(doc)
    chunks = result.chunks
    check_contract(Contract("chop", "tokens", size, windows=True, overlap=True), text, chunks)
    naive = make_chunker(f"naive-500t:size={size}:overlap={overlap}").chunk(doc).chunks
    assert [(c.start, c.end, c.token_count) for c in chunks] == [(c.start, c.end, c.token_count) for c in naive]
    assert result.trace["decisions"][:1] in ([], [None]) and len(result.trace["decisions"]) == len(chunks)
    for i, c in enumerate(chunks):
        cnm = CNM.model_validate(c.meta["cnm"])
        assert c.prefix == prefix_text(cnm) and c.prefix_place == "before"
        if i and c.meta["continuity"]:
            assert c.meta["cnm"] == chunks[i - 1].meta["cnm"] and c.meta["cnm_source"] == "inherited"
            assert c.meta["cnm_from"] == chunks[i - 1].meta["cnm_from"]
        else:
            assert c.meta["cnm_source"] == "extracted" and c.meta["cnm_from"] == i
            # the run's CNM is the rule backend's reading of the run's first window (the first one with its title)
            shown = f"Document title: {doc.title}\n\n{c.text}" if i == 0 else c.text
            assert cnm == RuleCnm().extract_one(shown[:1000])


@settings(max_examples=100, deadline=None)
@given(text=TEXTS, theta=st.integers(8, 60), min_share=st.floats(0.0, 0.99))
@example(text="The fig.. The. " * 4, theta=8, min_share=0.0)  # a sentence end inside "fig..": the cut moves past it
def test_lg_cuts_each_window_at_its_most_likely_sentence_end(text, theta, min_share):
    min_words = min(theta - 1, int(theta * min_share))
    scorer = FakeEosScorer()
    result = make_chunker(f"lg:theta={theta}:min_words={min_words}", ChunkerContext(scorer=scorer)).chunk(
        Document("d", "d", text))
    chunks = result.chunks
    check_contract(Contract("lg", "words", theta), text, chunks)
    for c in chunks[:-1]:  # only the rest of the text, at most θ words, may be shorter than min_words
        assert T.count_words(c.text) >= min_words
    windows = result.trace["windows"]
    assert len(windows) == len(chunks) - 1 if chunks else not windows
    assert result.trace["forward_passes"] == len(scorer.calls) == sum(1 for w in windows if w["positions"])
    for w, c in zip(windows, chunks):
        if w["positions"]:
            best = max(range(len(w["p"])), key=w["p"].__getitem__)
            assert w["split"] == w["positions"][best]
            assert w["p"] == [round(scorer.probability(text[w["start"]:w["end"]], p - w["start"]), 5)
                              for p in w["positions"]]
        else:
            assert w["split"] == w["end"]
        assert w["cut"] >= w["split"] and not T.words(text[w["split"]:w["cut"]])[1:]  # at most the word's rest
        assert (c.start, c.end) == T.strip_span(text, w["start"], w["cut"])


class FirstEndScorer(FakeEosScorer):
    """Always prefers the first candidate sentence end."""

    def probability(self, text: str, position: int) -> float:
        return 1.0 / position


def test_lg_keeps_the_rest_of_a_word_cut_by_a_sentence_end():
    text = "Call the dr.. Then wait for the answer to come back soon."
    assert [text[s:e] for s, e in T.sentences(text)][:2] == ["Call the dr.", "."]  # pysbd ends one inside "dr.."
    chunks = make_chunker("lg:theta=8:min_words=0", ChunkerContext(scorer=FirstEndScorer())).chunk(
        Document("d", "d", text)).chunks
    assert chunks[0].text == "Call the dr.."  # the cut moves to the end of the word it fell inside
    check_spans(text, chunks)  # no character is left out of every chunk


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, theta=st.integers(8, 60))
def test_mg_and_lgmgc_add_children_to_their_parents(text, theta):
    doc = Document("d", "d", text)
    for spec, parents in ((f"mg:theta={theta}", f"recursive:theta={theta}"),
                          (f"lgmgc:theta={theta}:min_words=0", f"lg:theta={theta}:min_words=0")):
        chunks = make_chunker(spec, services()).chunk(doc).chunks
        check_contract(Contract(spec, "words", theta, children=True), text,
                       chunks)
        expected = make_chunker(parents, services()).chunk(doc).chunks
        assert [(c.start, c.end) for c in chunks if c.parent_id is None] == [(c.start, c.end) for c in expected]


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(english(), chinese(), manuals()), group_tokens=st.integers(50, 150))
def test_lumber_groups_whole_units_and_cuts_where_the_answer_says(text, group_tokens):
    chat = ScriptedChat(mixed_answers)
    result = make_chunker(f"lumber:group_tokens={group_tokens}", ChunkerContext(chat=chat.client())).chunk(
        Document("d", "d", text))
    check_contract(Contract("lumber", "unit tokens", group_tokens), text, result.chunks)
    units = lumber_units(text, group_tokens)
    decisions = result.trace["decisions"]
    assert len(chat.requests) == len(decisions)
    for request, d in zip(chat.requests, decisions):
        ids = listed_ids(request.prompt)
        assert units[ids[0]][0] == d["start"] and units[ids[-1]][1] == d["group_end"] and len(ids) >= 2
        answer = mixed_answers(request.prompt)
        named = int(re.search(r"\d+", answer).group()) if re.search(r"\d+", answer) else None
        if named is not None and ids[0] < named <= ids[-1]:  # a listed paragraph after the first: cut before it
            assert d["cut_at"] == units[named - 1][1] and d["error"] is None
        else:
            assert d["cut_at"] == d["group_end"] and d["error"].startswith("unusable answer")
    assert [(c.start, c.end) for c in result.chunks if c.start in {d["start"] for d in decisions}] == [
        (d["start"], d["cut_at"]) for d in decisions]


@settings(max_examples=80, deadline=None)
@given(text=TEXTS, cap=st.integers(16, 60), overlap=st.integers(1, 3))
def test_sentence_overlap_repeats_whole_sentences_within_the_cap(text, cap, overlap):
    chunker = make_chunker(f"sentence:max_tokens={cap}:overlap_sentences={overlap}")
    chunks = chunker.chunk(Document("d", "d", text)).chunks
    units = sentence_units(text, cap)
    starts, ends = {s: i for i, (s, _) in enumerate(units)}, {e: i for i, (_, e) in enumerate(units)}
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.token_count == count_tokens(c.text) <= cap
        assert c.start in starts and c.end in ends, "a chunk cuts a sentence"
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end <= b.end
        shared = ends[a.end] - starts[b.start] + 1  # sentences in both
        assert shared <= overlap, "more sentences repeated than configured"
    covered = 0
    for c in chunks:
        assert not text[covered : max(covered, c.start)].strip(), "uncovered text"
        covered = max(covered, c.end)
    assert not text[covered:].strip()


def test_sentence_overlap_never_emits_a_chunk_inside_the_one_before():
    text = ("Go now. Eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen. "
            "Eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four.")  # 3, 11 and 13 tokens
    chunks = make_chunker("sentence:max_tokens=16:overlap_sentences=1").chunk(Document("d", "d", text)).chunks
    assert [c.text for c in chunks][0] == text[:text.index("Eighteen")].rstrip()
    for a, b in zip(chunks, chunks[1:]):
        assert b.end > a.end, f"{b.text!r} adds nothing to {a.text!r}"


def test_a_texts_sentences_are_split_once_and_every_caller_gets_its_own_list():
    text = "The fan has three speeds. Press the button twice! Does it turn? Yes.\n\nA new paragraph here."
    T.clear_caches()
    first = T.sentences(text)
    assert T._sentence_spans.cache_info().misses == 1
    first.append((0, 1))  # a caller's list is its own
    second = T.sentences(text)
    assert T._sentence_spans.cache_info().hits == 1
    assert second == first[:-1] and len(second) == 5
    assert T.sentences(text, 0, 25) == [second[0]]  # a part of the text is its own entry
    T.clear_caches()
    assert T._sentence_spans.cache_info().currsize == 0 and T.word_index.cache_info().currsize == 0


@settings(max_examples=80, deadline=None)
@given(text=TEXTS, cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_page_chunks_are_the_trimmed_pages_each_on_its_page(text, cuts):
    """Page starts anywhere in the text (repeated ones are empty pages): every chunk is one page's text, trimmed,
    the chunks cover the text but for whitespace, and each lies on the page it came from."""
    starts = sorted([0, *(c for c in cuts if c <= len(text))])  # a start given twice makes an empty page
    doc = Document("d", "d", text, page_starts=starts)
    chunks = make_chunker("page").run(doc).chunks
    check_spans(text, chunks)
    edges = [*starts, len(text)]
    pages = [(n, text[a:b].strip()) for n, (a, b) in enumerate(zip(edges, edges[1:]), 1) if text[a:b].strip()]
    assert [(doc.pages_of(c.start, c.end), c.text) for c in chunks] == [((n, n), t) for n, t in pages]
