"""Peer chunkers: the splitters people deploy (LangChain, semchunk, text-splitter, Chonkie, LlamaIndex, Docling),
registered like every chunker, at their libraries' documented defaults, each chunk an exact span of the document
(docs/PEERS.md)."""

from core.chunkers.peers import chonkie, docling, langchain, llamaindex, semchunk, text_splitter  # noqa: F401  (registration)
from core.chunkers.peers.base import PEER_TRACE, PeerChunker, library_version
from core.chunkers.peers.spans import PEER_TEXT

#: the distributions of every peer's library, named with their versions in each bench report
PEER_LIBRARIES = ("langchain-text-splitters", "semchunk", "semantic-text-splitter", "chonkie",
                  "llama-index-core", "docling-core")


def peer_versions() -> dict[str, str | None]:
    """Every peer library's installed version, by distribution."""
    return {name: library_version(name) for name in PEER_LIBRARIES}


__all__ = ["PEER_LIBRARIES", "PEER_TEXT", "PEER_TRACE", "PeerChunker", "peer_versions"]
