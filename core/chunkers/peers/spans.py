"""Where a library's chunk lies in the document: one exact span per chunk, found from the chunk's text.

A library returns texts (and sometimes offsets) that need not be its document's text at a place: it strips
whitespace, re-joins pieces with its own separator, re-wraps lines. Offsets are not to be trusted either:
LangChain's `add_start_index` searches from an estimate that is wrong on repeated text (langchain #21475). So every
chunk is placed by a search that moves forward with the chunks:

1. a library's own offset, when the text there is the chunk's text and lies at or past the floor below;
2. the chunk's text, exactly, from a floor: the previous chunk's end for a library that does not overlap, the
   previous end less the largest overlap it allows (at least the previous start + 1) for one that does;
3. the same, blind to whitespace (the chunk's non-space characters against the document's);
4. the chunk's head and tail (its first and last non-space characters, 64 down to 8) as anchors: text the library
   altered between them still gets the source range it came from.

A library that overlaps still covers its text: each chunk starts past the previous one's start and no later than
its end (whitespace skipped), and the last reaches the text's end. In repeated text the first copy past the floor
can start inside the previous chunk and end before the true one does (a floor counted in tokens is only a bound),
leaving the text's end covered by no chunk. So for such a library every chunk's exact copies that keep the chunks
contiguous are tried, in the order above (the one that shares least first, for a library whose `Overlap.least`
says so), backing up to the chunk before when one leads nowhere; a copy after which the chunks left hold too few
non-space characters to reach the text's end is not tried (`_contiguous`). Where no such run of copies exists
(text the library dropped or altered), or the search runs out of tries, each chunk is placed by the search above
alone. Where that search gives contiguous chunks, the copies tried first in the order above are its own.

The span is then trimmed of whitespace, and the chunk's match says how the library's text differs from its span:
`same`, `whitespace` (only in whitespace) or `altered` (in anything else). A chunk found nowhere is `unmatched`: it
has no span, and the text it came from counts as dropped (`core.evaluation.fidelity`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from core import text as T
from core.tokens import token_char_offsets

Match = Literal["same", "whitespace", "altered"]
#: the `Chunk.meta` key of a peer chunk's match
PEER_TEXT = "peer_text"
#: anchor lengths tried, in non-space characters, for a chunk whose text is not in the document
_ANCHORS = (64, 32, 16, 8)
#: tokens added to a library's token overlap when the next chunk's earliest start is worked out
_TOKENS_SPARED = 2
#: copies found to lead nowhere, per chunk, before the search for contiguous chunks gives up (pathological repeats)
_DEAD_ENDS_PER_CHUNK = 64


@dataclass(frozen=True)
class Placed:
    """One library chunk's exact source range and how its text differs from it."""

    start: int
    end: int
    match: Match


@dataclass
class Placement:
    """Every library chunk of a document placed: the spans in order, and the chunks that were not."""

    placed: list[Placed]
    library_chunks: int  # the library's chunks that held any non-space character
    unmatched: int = 0  # found nowhere in the document
    inside_previous: int = 0  # found, but inside the chunk before (or after: a library's overlap alone): left out


def squeeze(text: str) -> str:
    """The text without any whitespace."""
    return "".join(text.split())


class _Squeezed:
    """The document's non-space characters and where each one is, built on first need."""

    def __init__(self, text: str) -> None:
        self.at = [i for i, ch in enumerate(text) if not ch.isspace()]
        self.text = "".join(text[i] for i in self.at)

    def index(self, offset: int) -> int:
        """The first non-space character at or after document `offset`."""
        return bisect.bisect_left(self.at, offset)

    def span(self, first: int, last: int) -> tuple[int, int]:
        """The document range from non-space character `first` to `last`, both included."""
        return self.at[first], self.at[last] + 1


def match_of(piece: str, span_text: str) -> Match:
    if piece == span_text:
        return "same"
    return "whitespace" if squeeze(piece) == squeeze(span_text) else "altered"


@dataclass(frozen=True)
class Overlap:
    """The most a library's chunk may share with the one before: `amount` in `unit` ("chars" or "tokens",
    tiktoken's cl100k_base); 0: it never overlaps; None: no bound is known. `least`: among the copies of a chunk's
    text that keep the chunks contiguous, the one that shares least with the chunk before is tried first (the
    latest), not the first past the floor (a library whose overlap the floor bounds only loosely)."""

    amount: int | None = 0
    unit: str = "chars"
    least: bool = False


NO_OVERLAP = Overlap()


#: where a library says a chunk lies: its start, or (start, end) for a chunk the library built from several source
#: items that its text does not join as they stand (Docling merges the items on both sides of a heading it leaves out)
Offset = int | tuple[int, int] | None


def place_chunks(text: str, pieces: Sequence[str], offsets: Sequence[Offset] | None = None,
                 overlap: Overlap = NO_OVERLAP) -> Placement:
    """Exact spans of `text` for a library's chunk texts `pieces`, in order (see the module's docstring).
    `offsets`: the library's own start of each piece, checked before use; a (start, end) range is the piece's span
    where its text is not found at the start (its span is then the source range, and the piece counts as altered).
    `overlap`: how much a chunk may share with the one before."""
    ranges = [o if isinstance(o, tuple) else None for o in offsets] if offsets is not None else None
    starts = [o[0] if isinstance(o, tuple) else o for o in offsets] if offsets is not None else None
    if ranges is not None and any(ranges):
        return _forward(text, pieces, starts, overlap, ranges)
    if overlap.amount != 0:
        for leave_out in (False, True):  # a chunk is left out only where no placement keeps them all
            found = _contiguous(text, pieces, starts, overlap, leave_out)
            if found is not None:
                return found
    return _forward(text, pieces, starts, overlap)


def _forward(text: str, pieces: Sequence[str], offsets: Sequence[int | None] | None, overlap: Overlap,
             ranges: Sequence[tuple[int, int] | None] | None = None) -> Placement:
    """Each chunk placed by the search of the module's docstring, from where the chunk before was placed; a chunk
    with a source range (`ranges`) not found at its start is placed on that range, when it lies past the floor."""
    out = Placement([], 0)
    squeezed: _Squeezed | None = None
    prev_start, prev_end = -1, 0
    for i, piece in enumerate(pieces):
        if not piece.strip():
            continue
        out.library_chunks += 1
        floor = _floor(text, prev_start, prev_end, overlap)
        found = _from_offset(text, piece, offsets[i] if offsets is not None else None, floor, prev_end)
        source = ranges[i] if ranges is not None else None
        if found is None and source is not None and source[0] >= floor and source[1] > prev_end:
            found = source
        if found is None:
            found = _exact(text, piece, floor, prev_start, prev_end)
        if found is None:
            squeezed = squeezed or _Squeezed(text)
            found = _blind(squeezed, squeeze(piece), floor, prev_start, prev_end)
        if found is None:
            if out.placed and squeeze(piece) in squeeze(text[prev_start:prev_end]):
                out.inside_previous += 1  # the library gave text of the chunk before again (its overlap alone)
            else:
                out.unmatched += 1
            continue
        start, end = T.strip_span(text, *found)
        if start >= end:
            out.unmatched += 1
            continue
        if out.placed and (start <= prev_start or end <= prev_end):
            out.inside_previous += 1
            continue
        out.placed.append(Placed(start, end, match_of(piece, text[start:end])))
        prev_start, prev_end = start, end
    return out


#: a chunk's span, and whether it is placed there (False: left out, its text inside the chunk before or after)
_Step = tuple[int, int, bool]


def _contiguous(text: str, pieces: Sequence[str], offsets: Sequence[int | None] | None, overlap: Overlap,
                leave_out: bool) -> Placement | None:
    """Every chunk at an exact copy of its text, each starting past the previous start and no later than the
    previous end (whitespace skipped), the last reaching the text's end; with `leave_out`, a chunk whose text lies
    inside the chunk before, or is part of the next one's, may be left out (a library can give its overlap alone as
    a chunk, before or after the chunk that holds it). A depth-first search
    over the copies, each chunk's tried in the forward search's order, a copy found to lead nowhere never tried
    again. None: no such placement (or more than `_DEAD_ENDS_PER_CHUNK` copies per chunk led nowhere)."""
    kept = [i for i, piece in enumerate(pieces) if piece.strip()]
    if not kept:
        return None
    at = [offsets[i] if offsets is not None else None for i in kept]
    text_end = len(text.rstrip())
    # a copy is worth trying only if the chunks after it hold enough non-space characters to cover the rest
    doc = _Squeezed(text)
    room = [len(squeeze(pieces[i])) for i in kept]
    for k in range(len(room) - 2, -1, -1):
        room[k] += room[k + 1]
    room = [*room[1:], 0]  # room[k]: the non-space characters of the chunks after kept piece k
    path: list[_Step] = []
    following = [*(pieces[i].strip() for i in kept[1:]), ""]  # each kept piece's next one
    tries = [_copies(text, pieces[kept[0]], at[0], overlap, (-1, 0), following[0] if leave_out else None)]
    dead: set[tuple[int, _Step]] = set()  # kept piece k at that step leads nowhere
    while tries:
        k = len(path)
        step = next(tries[-1], None)
        if step is None:  # every step of piece k led nowhere: so does the step of piece k - 1 before it
            tries.pop()
            if path:
                dead.add((k - 1, path.pop()))
                if len(dead) > _DEAD_ENDS_PER_CHUNK * len(kept):
                    return None
            continue
        if (k, step) in dead or len(doc.at) - doc.index(step[1]) > room[k]:
            continue
        path.append(step)
        if k + 1 < len(kept):
            tries.append(_copies(text, pieces[kept[k + 1]], at[k + 1], overlap, step[:2],
                                 following[k + 1] if leave_out else None))
        elif step[1] >= text_end:
            placed = [Placed(s, e, match_of(pieces[i], text[s:e])) for i, (s, e, new) in zip(kept, path) if new]
            return Placement(placed, len(kept), inside_previous=len(kept) - len(placed))
        else:
            tries.append(iter(()))  # the last chunk short of the text's end: it leads nowhere
    return None


def _copies(text: str, piece: str, offset: int | None, overlap: Overlap, previous: tuple[int, int],
            following: str | None) -> Iterator[_Step]:
    """The trimmed spans of `piece` that keep the chunks contiguous after the `previous` chunk's span: the library's
    offset, then the piece's copies from the floor, then from just past the previous start; then the same for the
    piece stripped of whitespace. With `overlap.least`, after the offset, the latest copy first. Last, given the
    next piece's text (`following`, None: no piece is left out), where the piece lies inside the previous chunk or
    that text: the previous span, the piece left out."""
    prev_start, prev_end = previous
    floor = _floor(text, prev_start, prev_end, overlap)
    limit = prev_end
    while limit < len(text) and text[limit].isspace():
        limit += 1
    found = _from_offset(text, piece, offset, floor, prev_end)
    spans = [] if found is None else [found]
    for wanted in dict.fromkeys((piece, piece.strip())):
        for start_at in dict.fromkeys((floor, prev_start + 1)):
            spans += ((at, at + len(wanted)) for at in
                      _find_all(text, wanted, max(start_at, prev_end - len(wanted) + 1), limit + len(wanted)))
    trimmed = [T.strip_span(text, *span) for span in spans]
    if overlap.least:  # the library's offset still first
        first = 0 if found is None else 1
        trimmed[first:] = sorted(trimmed[first:], reverse=True)
    seen: set[int] = set()
    for start, end in trimmed:
        if prev_start < start <= limit and end > prev_end and start not in seen:
            seen.add(start)
            yield start, end, True
    core = piece.strip()
    if following is not None and ((prev_start >= 0 and core in text[prev_start:prev_end]) or core in following):
        yield prev_start, prev_end, False


def _find_all(text: str, wanted: str, start_at: int, end_by: int) -> Iterator[int]:
    """Every start of `wanted` at or after `start_at` that ends by `end_by`."""
    at = text.find(wanted, start_at, end_by)
    while at >= 0:
        yield at
        at = text.find(wanted, at + 1, end_by)


def _floor(text: str, prev_start: int, prev_end: int, overlap: Overlap) -> int:
    """The earliest place the next chunk can start: the previous end, less the most the library shares. Overlap
    in tokens is measured back from the previous chunk's end, with two tokens to spare (a library that sums its
    pieces' counts can count a join's tokens apart)."""
    if prev_start < 0:
        return 0
    if overlap.amount is None:
        return prev_start + 1
    if overlap.unit == "tokens" and overlap.amount:
        starts = token_char_offsets(text[prev_start:prev_end])  # each token's start, and the end
        back = starts[max(0, len(starts) - 1 - overlap.amount - _TOKENS_SPARED)]
        return max(prev_start + 1, prev_start + back)
    return max(prev_start + 1, prev_end - overlap.amount)


def _from_offset(text: str, piece: str, offset: int | None, floor: int, prev_end: int) -> tuple[int, int] | None:
    """The library's offset, where the text there is the piece's, at or past the floor and ending past the previous
    chunk (the floor is past the previous start)."""
    if (offset is None or offset < floor or offset + len(piece) <= prev_end
            or text[offset : offset + len(piece)] != piece):
        return None
    return offset, offset + len(piece)


def _exact(text: str, piece: str, floor: int, prev_start: int, prev_end: int) -> tuple[int, int] | None:
    """The piece's first occurrence from the floor that ends past the previous chunk (a library's chunks move
    forward); else from just past the previous start (a chunk placed too early before, in repeated text, must not
    hide the next one)."""
    core = piece.strip()  # a library that kept whitespace the document has not (a trailing separator it added)
    for wanted in dict.fromkeys((piece, core)):
        for start_at in dict.fromkeys((floor, prev_start + 1)):
            at = _find_past(text, wanted, start_at, prev_end)
            if at >= 0:
                return at, at + len(wanted)
    return None


def _find_past(text: str, wanted: str, start_at: int, prev_end: int) -> int:
    """The first occurrence of `wanted` at or after `start_at` that ends past `prev_end` (-1: none)."""
    at = text.find(wanted, start_at)
    while at >= 0 and at + len(wanted) <= prev_end:
        at = text.find(wanted, at + 1)
    return at


def _blind(doc: _Squeezed, piece: str, floor: int, prev_start: int, prev_end: int) -> tuple[int, int] | None:
    """The piece's non-space characters among the document's; else its head and tail as anchors."""
    if not piece:
        return None
    starts = list(dict.fromkeys((doc.index(floor), doc.index(prev_start + 1))))
    end_index = doc.index(prev_end)  # non-space characters before it lie inside the previous chunk
    for j in starts:
        at = _find_past(doc.text, piece, j, end_index)
        if at >= 0:
            return doc.span(at, at + len(piece) - 1)
    for n in _ANCHORS:
        if len(piece) < 2 * n:
            continue
        head, tail = piece[:n], piece[-n:]
        for j in starts:
            at = doc.text.find(head, j)
            if at < 0:
                continue
            # the tail where the piece's length puts it, or up to twice as far (text the library left out)
            last = doc.text.find(tail, at + max(n, (len(piece) - n) // 2), at + 2 * len(piece))
            if last >= 0:
                return doc.span(at, last + n - 1)
    return None
