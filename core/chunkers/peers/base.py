"""What every peer chunker shares: the library's chunks turned into exact spans (`core.chunkers.peers.spans`), the
library's version in the chunker's identity, and the trace that says how many of its chunks were placed.

A peer is a chunker people deploy from a library (LangChain, semchunk, text-splitter, Chonkie), run at that
library's documented defaults with its main parameters passed through. The library is imported when a document is
first chunked, never at registration: the app lists every chunker without loading any of them.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from typing import ClassVar, Literal, get_args

from core.chunkers.base import Chunker, build_chunks, check_overlap, check_range, check_tokens
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunking
from core.schema.documents import Document
from core.tokens import count_tokens

from .spans import NO_OVERLAP, PEER_TEXT, Offset, Overlap, place_chunks

#: the values of a peer's `length` parameter: what its sizes count
Length = Literal["chars", "tokens"]
LENGTHS: tuple[Length, ...] = get_args(Length)
#: bounds of a size in characters (about MIN_CHUNK_TOKENS..MAX_CHUNK_TOKENS tokens of English at 4 characters each)
MIN_CHUNK_CHARS, MAX_CHUNK_CHARS = 64, 32_768
#: the trace key of a peer's placement counts (`core.evaluation.fidelity` reads it)
PEER_TRACE = "peer"
#: the bundled MiniLM as Hugging Face names it, in the snippets of the peers that embed with it
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@cache
def library_version(distribution: str) -> str | None:
    """The installed version of a peer's library (None when it is not installed)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


class PeerChunker(Chunker):
    """A library's splitter as a chunker. Subclasses name the `library` (its distribution) and return the
    library's chunk texts, with the library's own offsets where it has them. Chunks are exact spans of the
    document, ordered, without overlap unless the library's parameters ask for it; gaps are whitespace unless the
    library dropped text (`dropped_chars_share` in a bench report says how much)."""

    library: ClassVar[str]
    #: the placement's version, for every peer (docs/CHANGELOG.md): v2 keeps an overlapping library's chunks
    #: contiguous to the text's end and places Docling's chunks at their items' starts, so a chunk run cached
    #: under v1's placement is never taken for this one's
    version: ClassVar[int] = 2

    @abstractmethod
    def split(self, doc: Document) -> tuple[list[str], Sequence[Offset] | None]:
        """The library's chunk texts of `doc`, and each one's start offset as the library gives it (or None; a
        (start, end) range for a chunk built from source items its text does not join as they stand)."""

    def overlap_bound(self) -> Overlap:
        """The most a chunk may share with the one before (none, unless the library's parameters ask for it)."""
        return NO_OVERLAP

    def chunk(self, doc: Document) -> Chunking:
        if not doc.text.strip():
            return Chunking([], {PEER_TRACE: {"library_chunks": 0, "unmatched": 0}})
        texts, offsets = self.split(doc)
        placement = place_chunks(doc.text, texts, offsets, self.overlap_bound())
        chunks = build_chunks(doc, [(p.start, p.end) for p in placement.placed])
        for chunk, placed in zip(chunks, placement.placed, strict=True):
            chunk.meta[PEER_TEXT] = placed.match
        trace: JsonObject = {PEER_TRACE: {"library": self.library,
                                          "version": library_version(self.library),
                                          "library_chunks": placement.library_chunks,
                                          "unmatched": placement.unmatched,
                                          "inside_previous": placement.inside_previous}}
        return Chunking(chunks, trace)

    @property
    def identity(self) -> str:
        """The parameters and the library's version: a new release may cut the same text elsewhere, so a cached
        run of another version is never taken for this one's."""
        return f"{super().identity}:{self.library}={library_version(self.library)}"


def check_sizes(chunker: str, size_name: str, size: int, overlap: int, length: str) -> None:
    """A peer's size in its unit (`length`), within the bounds every chunker holds (`check_tokens` for tokens),
    and its overlap up to half of it (`check_overlap`)."""
    if length not in LENGTHS:
        raise ConfigError(f"{chunker}: length must be one of {', '.join(LENGTHS)} (got '{length}')")
    check_size(chunker, size_name, size, length)
    check_overlap(chunker, overlap, size, "characters" if length == "chars" else "tokens")


def check_size(chunker: str, name: str, value: int, length: str) -> None:
    """A chunk size in the peer's unit, within the bounds every chunker holds (`check_tokens` for tokens)."""
    if length == "tokens":
        check_tokens(chunker, name, value)
    else:
        check_range(chunker, name, value, MIN_CHUNK_CHARS, MAX_CHUNK_CHARS, "characters",
                    "smaller makes a chunk of every few words, each embedded" if value < MIN_CHUNK_CHARS else "")


def length_function(length: str) -> Callable[[str], int]:
    """`len` for characters, the project's tiktoken count (cl100k_base, from packaged files) for tokens."""
    return len if length == "chars" else count_tokens
