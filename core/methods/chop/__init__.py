"""CHOP: CNM prefixes (category / nouns / model) written by an LLM, and continuity decisions that carry a
manual's tags across chunks, for many near-duplicate manuals in one vector store."""

from core.methods.chop import accuracy, backends, chunker, exported, report  # noqa: F401  (registration)
