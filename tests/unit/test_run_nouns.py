"""A chunker's run has one home: what was chunked and what was indexed are nouns of `core.schema.runs`, the pipeline
makes them, and no other module of core defines a run type of its own (the app's holder aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import core.catalog  # noqa: F401  (registers the chunkers)
from core.chunkers.registry import make_chunker
from core.pipeline import chunk_documents, index_run
from core.schema import runs
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.store.index import StoreSettings, VectorStore
from core.store.lexical import LexicalIndex, LexicalStore

CORE = Path(__file__).resolve().parents[2] / "core"
#: the app's holder of a run on screen and what asking it a question keeps: the app's, not nouns
APP_HOLDERS = {"ChunkerResult", "RunQuery"}


def _classes() -> dict[str, list[str]]:
    """Every class core defines, by name: the modules that define it."""
    out: dict[str, list[str]] = {}
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append(str(path.relative_to(CORE.parent)))
    return out


def test_the_run_nouns_are_defined_once_in_schema() -> None:
    classes = _classes()
    assert classes["ChunkedRun"] == ["core/schema/runs.py"]
    assert classes["IndexedRun"] == ["core/schema/runs.py"]
    # the old name, and a `Run` that meant a stretch of chunks sharing a CHOP tag, are gone
    assert "ChunkRun" not in classes and "Run" not in classes
    runs_outside = {name for name, where in classes.items()
                    if name.endswith("Run") and where != ["core/schema/runs.py"]}
    assert runs_outside <= {"TagRun", "ScoredRun", "RunToScore"} | APP_HOLDERS, runs_outside


def test_schema_runs_imports_nothing_of_core_above_the_nouns() -> None:
    tree = ast.parse((CORE / "schema" / "runs.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    inside = {m for m in imported if m.startswith("core")}
    assert inside and all(m.startswith(("core.schema.", "core.infra.")) for m in inside), inside


def test_the_pipeline_makes_the_schema_nouns(tmp_path: Path, minilm) -> None:
    """chunk -> index: a ChunkedRun carrying its chunker (which the run's readers ask for its store metadata and
    retrieval policy), then an IndexedRun whose BM25 index comes from the lexical store as the protocol says."""
    docs = [Document("d1", "One", "Alpha beta gamma. " * 40), Document("d2", "Two", "Delta epsilon zeta. " * 40)]
    chunker = make_chunker("sentence:max_tokens=30")
    (tmp_path / "runs").mkdir()
    run = chunk_documents(docs, chunker, tmp_path / "runs")
    assert type(run) is runs.ChunkedRun and run.chunker is chunker and run.chunks
    assert run.chunker.store_metadata(run.chunks[0]) == {}
    again = chunk_documents(docs, chunker, tmp_path / "runs")  # from the cache: the same noun, the same chunker
    assert type(again) is runs.ChunkedRun and again.from_cache and again.chunker is chunker
    indexed = index_run(run, docs, minilm, VectorStore(StoreSettings(path=tmp_path / "chroma")))
    assert type(indexed) is runs.IndexedRun and indexed.lexical is None
    index = indexed.lexical_from(LexicalStore(tmp_path / "lexical"))
    assert isinstance(index, LexicalIndex) and index.ids == [c.chunk_id for c in run.index_units()]
    assert indexed.lexical is index


def test_notes_reads_only_lines_of_text() -> None:
    chunk = Chunk("d1", 0, 1, "a", 1)
    run = runs.ChunkedRun("page", "page", [chunk], {"d1": {"notes": ["kept whole", 3, "kept whole"]},
                                                    "d2": {"notes": "not a list"}, "d3": {}})
    assert run.notes() == ["kept whole"]
