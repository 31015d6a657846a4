"""Every chunker, one module each, reached through `make_chunker(spec)`."""

from core.chunkers import chop, cosine, lgmgc, lumber, naive, paragraph, recursive, semantic, sentence  # noqa: F401  (registration)
from core.chunkers.base import Chunk, Chunker, ChunkerContext, Chunking, available, make_chunker

__all__ = ["Chunk", "Chunker", "ChunkerContext", "Chunking", "available", "make_chunker"]
