"""The workspace folder: everything that must survive a restart (uploads, chunk runs, the Chroma database,
the embedding and LLM-answer caches). One folder, chosen by setting or CHUNKLENS_WORKSPACE."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def default_root() -> Path:
    return Path(os.environ.get("CHUNKLENS_WORKSPACE") or Path.home() / ".chunklens")


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def open(cls, root: str | Path | None = None) -> Workspace:
        ws = cls(Path(root) if root else default_root())
        for sub in (ws.chroma, ws.cache, ws.chunk_runs, ws.uploads):
            sub.mkdir(parents=True, exist_ok=True)
        return ws

    @property
    def chroma(self) -> Path:
        return self.root / "chroma"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def chunk_runs(self) -> Path:
        return self.root / "chunk_runs"

    @property
    def lexical(self) -> Path:
        """BM25 indexes, one folder per chunk run (created on first use)."""
        return self.root / "lexical"

    @property
    def uploads(self) -> Path:
        return self.root / "uploads"

    @property
    def datasets(self) -> Path:
        """qa-spans v1 sets brought in by an archive, and sets uploaded in the app before uploaded sets were kept
        in their own library (`Library.sets_dir`); libraries that point here still load them (created on first
        use)."""
        return self.root / "datasets"
