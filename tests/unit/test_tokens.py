"""tiktoken's counts, and token offsets that are always valid cut points (loading from packaged files in a fresh
process: tests/integration/test_tokens_fresh_process.py)."""

from __future__ import annotations

from core.tokens import count_tokens, get_encoding, token_char_offsets
from tests.support.data import ROOT


def test_cl100k_counts():
    assert get_encoding().name == "cl100k_base"
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special tokens are counted as plain text, never refused


def reference_offsets(text: str) -> list[int]:
    """Where each token starts, worked out from tiktoken's own pieces: the bytes of every token, laid end to end
    over the UTF-8 text, each start moved to the next character boundary when it falls inside a character."""
    enc = get_encoding()
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate is 3 bytes here and in tiktoken's repair
    char_at_byte, pos = {}, 0
    for i, ch in enumerate(text):
        char_at_byte[pos] = i
        pos += len(ch.encode("utf-8", "surrogatepass"))
    char_at_byte[pos] = len(text)
    offsets, byte = [], 0
    for token in enc.encode(text, disallowed_special=()):
        b = byte
        while b not in char_at_byte:
            b += 1
        offsets.append(char_at_byte[b])
        byte += len(enc.decode_single_token_bytes(token))
    assert byte == len(data)  # the pieces are the whole text
    return [*offsets, len(text)]


def test_offsets_are_where_each_token_starts():
    texts = ["plain ascii text", "空调过滤网每两周清洁一次。", "mixed 中文 and émojis 🙂 here",
             "a lone \ud800 surrogate", "", "   leading and trailing   ", "<|endoftext|> as text", "调度修滤风。按机。"]
    for text in texts:
        offsets = token_char_offsets(text)
        assert offsets == reference_offsets(text), text
        assert len(offsets) == count_tokens(text) + 1
    # where no token splits a character, each slice is exactly tiktoken's decoded piece
    enc = get_encoding()
    text = "mixed 中文 and émojis here"
    offsets = token_char_offsets(text)
    pieces = [enc.decode_single_token_bytes(t).decode("utf-8") for t in enc.encode(text)]
    assert [text[a:b] for a, b in zip(offsets, offsets[1:])] == pieces


# characters that stress cl100k's pattern: spaces of every kind, line breaks after punctuation, contractions,
# digits (cut in threes), CJK, an emoji above the BMP, and special-token text
_PIECES = ["word", "Model", " ", "  ", "\t", "\n", "\n\n", "\r\n", ".", "...", "!\n", ",", "'s", "'ll", "don't",
           "12345", "3.5", "E4", "中文", "字", "🙂", "\u00a0", "\u3000", "\u2003", "\x1c", "(", ")", "-",
           "<|endoftext|>", "S10e", "Ärger", "naïve"]


def test_span_counts_from_one_pass_equal_each_spans_own_count():
    """`TokenMap.span_counts`: the head, the tail and the document's tokens between them add up to tiktoken's
    count of the span alone, for any span of any text built from the pieces above."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from core.tokens import TokenMap

    @settings(max_examples=300, deadline=None)
    @given(parts=st.lists(st.sampled_from(_PIECES), max_size=80), cuts=st.lists(st.integers(0, 400), max_size=12))
    def check(parts, cuts):
        text = "".join(parts)
        spans = [(min(a, b) % (len(text) + 1), max(a, b) % (len(text) + 1)) for a, b in zip(cuts, cuts[1:])]
        spans += [(0, len(text))]
        assert TokenMap(text).span_counts(spans) == [count_tokens(text[s:e]) for s, e in spans]

    check()


def test_span_counts_on_a_real_document_and_its_chunks():
    """Every sentence, every recursive chunk and a sliding set of spans of a sample manual, counted both ways;
    the long text is encoded in one part per core, which must give the whole text's tokens."""
    from core import text as T
    from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, split_to_cap
    from core.tokens import PARALLEL_FROM, TokenMap

    manuals = sorted((ROOT / "sample_data" / "manuals").glob("*.md"))
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in manuals * 2)
    assert len(text) > PARALLEL_FROM  # the parallel path is taken
    tokens = TokenMap(text)
    assert tokens.count == len(get_encoding().encode_ordinary(text))
    spans = [*T.sentences(text), *split_to_cap(text, 0, len(text), WORDS, 200, STRUCTURE_LEVELS),
             *((s, s + 997) for s in range(0, len(text) - 997, 4_001))]
    assert tokens.span_counts(spans) == [count_tokens(text[s:e]) for s, e in spans]


def test_a_texts_token_map_is_made_once_and_a_prefetch_is_waited_for():
    from core.tokens import clear_token_maps, prefetch_token_map, token_map

    clear_token_maps()
    text = "Press the power button for three seconds. " * 50
    prefetch_token_map(text)
    first = token_map(text)
    assert token_map(text) is first and first.count == count_tokens(text)
    clear_token_maps()
    assert token_map(text) is not first
    broken = "a lone surrogate \ud800 here"  # repaired by `encode`: counted directly, and still exactly
    assert token_map(broken).repaired and token_map(broken).span_counts([(0, 12), (2, 25)]) == [
        count_tokens(broken[:12]), count_tokens(broken[2:25])]
