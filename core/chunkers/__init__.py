"""The generic chunkers (the papers' baselines), one module each, reached through `make_chunker(spec)`.

The papers' own methods live in `core.methods`, one package each, and register the same way."""

from core.chunkers import (  # noqa: F401  (registration)
    cosine,
    lumber,
    naive,
    page,
    paragraph,
    recursive,
    semantic,
    sentence,
)
from core.chunkers.base import Chunker, ChunkerContext
from core.chunkers.registry import available, make_chunker
from core.schema.chunks import Chunk, Chunking

__all__ = ["Chunk", "Chunker", "ChunkerContext", "Chunking", "available", "make_chunker"]
