"""What a chunker kept of its documents, in every bench result: `dropped_chars_share` (the share of the documents'
non-space characters that no chunk covers) and `altered_chunks_share` (the share of a library's chunks whose text
differs from their source span beyond whitespace, those found nowhere included).

Every chunker can drop text, so the first is computed for all; ChunkLens's own chunkers take their chunk texts from
the document (`build_chunks`), so the second applies to the peers only (`core.chunkers.peers`) and is None for the
rest."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.chunkers.peers import PEER_TEXT, PEER_TRACE
from core.evaluation.fields import FieldShow, register_report_fields
from core.infra.jsonio import count_in
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.runs import ChunkedRun
from core.text import are_spaces


def dropped_chars_share(docs: Sequence[Document], chunks: Sequence[Chunk]) -> float:
    """The share of the documents' non-space characters outside every chunk (0.0 for documents of whitespace)."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    total = dropped = 0
    for doc in docs:
        code_points = np.frombuffer(doc.text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        text_chars = ~are_spaces(code_points)
        edges = np.zeros(len(code_points) + 1, dtype=np.int64)
        for c in by_doc.get(doc.doc_id, ()):
            edges[c.start] += 1
            edges[c.end] -= 1
        covered = np.cumsum(edges[:-1]) > 0
        total += int(text_chars.sum())
        dropped += int((text_chars & ~covered).sum())
    return dropped / total if total else 0.0


def altered_chunks_share(run: ChunkedRun) -> float | None:
    """The share of a peer's library chunks altered beyond whitespace or found nowhere; None for a chunker whose
    chunks are not a library's."""
    placements = [p for t in run.traces.values() if isinstance(p := t.get(PEER_TRACE), dict)]
    if not placements:
        return None
    library_chunks = sum(count_in(p, "library_chunks") for p in placements)
    off = (sum(count_in(p, "unmatched") for p in placements)
           + sum(1 for c in run.chunks if c.meta.get(PEER_TEXT) == "altered"))
    return off / library_chunks if library_chunks else 0.0


@register_report_fields(shows=[
    # dropped text where a peer ran (its library may drop text) or some chunker dropped any, not a column of
    # zeros beside every report; reports made before these keys show neither column
    FieldShow("dropped_chars_share", "dropped text", better="min", place="fidelity", rank=10,
              shown_when=lambda r: r.get("altered_chunks_share") is not None or bool(r.get("dropped_chars_share"))),
    FieldShow("altered_chunks_share", "altered chunks", better="min", place="fidelity", rank=11),
])
def fidelity_fields(docs: Sequence[Document], run: ChunkedRun) -> dict[str, float | None]:
    """The two fidelity keys of one chunker's bench result."""
    return {"dropped_chars_share": dropped_chars_share(docs, run.chunks),
            "altered_chunks_share": altered_chunks_share(run)}
