"""A warm test world: the sample set's vectors computed once per test run and copied into each test's workspace.

Most app, browser and integration tests start from a fresh workspace (so no test sees another's library, runs or
settings) and then load the sample set and chunk it. Without help each of them would embed the same 199k characters
again under the same default embedder. `build_sample_vectors` runs the guided demo (the sample set as one joined
stream, every default chunker, the demo's questions and the reranker's sentences) and the same chunkers on the
separate manuals once, in a template workspace; `seed_workspace` copies the template's vector cache into a new
workspace. Everything else in the new workspace is empty: each test still chunks, indexes into Chroma, builds its
BM25 indexes and searches for real; only vectors of texts the template has seen come from the cache, as they do for
a user on a second run. A text the template has not seen is embedded as usual.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from filelock import FileLock

from tests.support.appflow import FAST_SPECS, SESSION_SPECS

#: the vector cache's file in a workspace (core.store.embedders.make_embedder: cache_dir / "embeddings.sqlite")
VECTORS = Path("cache") / "embeddings.sqlite"


def build_sample_vectors(template: Path) -> Path:
    """Fill `template` (a workspace folder) with the sample set's vectors under the default settings; return the
    vector cache's path. One cold guided demo plus the default chunkers on the separate manuals."""
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import DEFAULT_SPECS, embed_sample_set

    services = build_services(Settings(workspace=str(template)))
    embed_sample_set(services, list(dict.fromkeys([*DEFAULT_SPECS, *FAST_SPECS, *SESSION_SPECS])))
    return template / VECTORS


def shared_sample_vectors(folder: Path) -> Path:
    """`build_sample_vectors` in `folder` once, for one process or several (pytest-xdist's workers, given one folder
    for the run): the first process to take the lock builds it, the others wait and use it. A build that failed
    leaves no `done` mark, so the next process tries again."""
    done = folder / "done"
    with FileLock(str(folder) + ".lock"):
        if not done.exists():
            vectors = build_sample_vectors(folder)
            done.write_text(str(vectors))
    return Path(done.read_text())


def seed_workspace(workspace: Path, vectors: Path) -> Path:
    """Give the workspace folder `workspace` (made if missing) a copy of the vector cache `vectors`; return it.
    SQLite's backup API copies a consistent snapshot whatever the source's journal holds."""
    target = workspace / VECTORS
    target.parent.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(str(vectors))
    copy = sqlite3.connect(str(target))
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    return workspace
