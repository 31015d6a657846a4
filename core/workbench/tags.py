"""CHOP's tags in the app: how right they are against gold tags, and the edits a person makes or imports."""

from __future__ import annotations

import time
from collections.abc import Sequence

from core.infra.errors import ChunkLensError
from core.infra.jsonio import loads_checked
from core.methods.chop.accuracy import CnmAccuracy, cnm_accuracy, gold_of
from core.methods.chop.cnm import cnm_backend_of
from core.methods.chop.edits import CnmEdit, apply_edits, edits_digest, import_tags
from core.pipeline import index_run
from core.schema.chunks import Chunk
from core.schema.documents import documents_by_id
from core.schema.runs import ChunkedRun
from core.services import Services
from core.store.routing import document_titles
from core.workbench.corpus import Corpus
from core.workbench.runs import ChunkerResult


def tag_accuracy(corpus: Corpus, result: ChunkerResult) -> CnmAccuracy | None:
    """How right a CHOP run's tags are against the corpus's gold tags (None without tags or gold)."""
    return cnm_accuracy(result.run.chunks, corpus.documents) if result.run is not None else None


def gold_tags(corpus: Corpus, chunks: Sequence[Chunk]) -> list[dict[str, str] | None]:
    """Each chunk's gold tags (its document's, or its source document's in a stream), for showing beside it."""
    docs = documents_by_id(corpus.documents)
    return [gold_of(c, docs) for c in chunks]


def apply_cnm_edits(services: Services, corpus: Corpus, result: ChunkerResult,
                    edits: Sequence[CnmEdit]) -> tuple[ChunkerResult, int]:
    """A new chunk run with hand-corrected tags, indexed; only chunks whose text changed are embedded anew
    (the others come from the embedding cache). Returns the run and how many chunks changed."""
    assert result.run is not None
    chunks, changed = apply_edits(result.run.chunks, edits, cnm_backend_of(services))
    identity = f"{result.run.identity}:edits={edits_digest(edits)}"
    run = ChunkedRun(result.spec, identity, chunks, result.run.traces, 0.0, False, result.run.chunker)
    started = time.perf_counter()
    indexed = index_run(run, corpus.documents, services.embedder, services.store, lexical=services.lexical)
    return ChunkerResult(result.spec, run, indexed, seconds=time.perf_counter() - started,
                         titles=document_titles(corpus.documents)), changed


def replay_cnm_edits(services: Services, corpus: Corpus, result: ChunkerResult,
                     batches: Sequence[Sequence[CnmEdit]]) -> ChunkerResult:
    """The run as it was after its saved batches of hand edits (an `EditLog`), applied in order. Raises
    ChunkLensError when an edit no longer fits the run."""
    for batch in batches:
        result, _ = apply_cnm_edits(services, corpus, result, batch)
    return result


#: the largest tag file an upload may be: an export holds some 200 bytes per chunk, so this is about 100 000 chunks,
#: far more than any run the app shows
MAX_TAGS_BYTES = 20 * 2**20


def tag_file_edits(chunks: Sequence[Chunk], name: str, data: bytes) -> list[CnmEdit]:
    """The edits an uploaded tag file (an `export_tags` JSON list) asks for. The file is someone else's: text that is
    not JSON, JSON nested too deeply to parse, or entries of the wrong types are one ChunkLensError line naming it,
    never a traceback."""
    try:
        rows = loads_checked(data, name)
    except ValueError as exc:
        raise ChunkLensError(str(exc)) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ChunkLensError(f"{name}: a tag file is a JSON list of chunk entries (as 'Export tags' writes it)")
    try:
        return import_tags(chunks, rows)
    except ChunkLensError as exc:
        raise ChunkLensError(f"{name}: {exc}") from None
    except ValueError as exc:  # pydantic's ValidationError: a tag whose fields have the wrong types
        raise ChunkLensError(f"{name}: a tag is not category / nouns / model text ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:120]
