"""Shared fixtures: a throwaway workspace, the real bundled MiniLM embedder, and ../shared/data when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_dataset(name: str) -> Path:
    path = SHARED_DATA / name
    if not (path / "corpus.jsonl").exists():
        pytest.skip(f"{path} is not present beside the checkout")
    return path


@pytest.fixture(scope="session")
def minilm():
    """The real bundled all-MiniLM-L6-v2 (loaded once per test session)."""
    from core.store.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def cached_minilm(minilm, tmp_path_factory):
    from core.store.embeddings import CachedEmbedder, EmbeddingCache

    return CachedEmbedder(minilm, EmbeddingCache(tmp_path_factory.mktemp("emb") / "embeddings.sqlite"))


@pytest.fixture()
def workspace(tmp_path):
    from core.workspace import Workspace

    return Workspace.open(tmp_path / "ws")
