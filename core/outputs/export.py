"""Every chunker's chunks as JSONL or CSV, in a shape RAG frameworks load as they are.

A JSONL line is `{"id": <chunk id>, "page_content": <the exact span>, "metadata": {...}}`: LangChain's
`Document(**line)` takes it whole, and LlamaIndex's `TextNode(id_=line["id"], text=line["page_content"],
metadata=line["metadata"])`. The metadata says where the span lies (doc_id, start, end, and for a PDF, also
inside a joined stream, its first and last page: `page`, `page_end`), which chunker cut it (its spec), the prefix
that was embedded with it, LGMGC's parent, and what each method registers (`core.chunkers.export_fields`: CHOP's
CNM and continuity decision). CSV has one row per chunk with the same fields, the CNM spread over three columns.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from core.chunkers.export_fields import EXPORT_FIELDS
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject, JsonValue
from core.schema.chunks import Chunk
from core.schema.documents import Document, documents_by_id

FORMATS = (".jsonl", ".csv")
#: the CSV's columns before and after those of the methods' export fields (`core.chunkers.export_fields`)
CSV_HEAD = ("id", "chunker", "doc_id", "title", "start", "end", "page", "page_end", "token_count", "prefix")
CSV_TAIL = ("parent_id", "child", "page_content")


def csv_fields() -> tuple[str, ...]:
    """The CSV's columns: the chunk's own, with every registered method's columns before the parent link."""
    return CSV_HEAD + tuple(c for f in EXPORT_FIELDS for c in f.columns) + CSV_TAIL


class ChunkRecord(TypedDict):
    """One JSONL line: LangChain's `Document(**line)` (see the module's doc)."""

    id: str
    page_content: str
    metadata: JsonObject


#: one CSV row by column (`csv_fields`)
CsvRow = dict[str, JsonValue]


def chunk_record(spec: str, chunk: Chunk, doc: Document | None = None) -> ChunkRecord:
    metadata: JsonObject = {
        "doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end, "chunker": spec, "chunk_id": chunk.chunk_id,
        "index": chunk.index, "token_count": chunk.token_count, "prefix": chunk.prefix or None,
        "prefix_place": chunk.prefix_place if chunk.prefix else None,
    }
    for fields in EXPORT_FIELDS:
        metadata.update(fields.read(chunk))
    metadata.update(parent_id=chunk.parent_id, child=chunk.child or None)
    if doc is not None:
        metadata["title"] = doc.title
        if (pages := doc.pages_of(chunk.start, chunk.end)) is not None:
            metadata["page"], metadata["page_end"] = pages
    return {"id": f"{spec}|{chunk.chunk_id}", "page_content": chunk.text, "metadata": metadata}


def records(runs: Mapping[str, Sequence[Chunk]], documents: Sequence[Document]) -> Iterator[ChunkRecord]:
    """One record per chunk of every run (parents and children alike), in run and chunk order."""
    by_id = documents_by_id(documents)
    for spec, chunks in runs.items():
        for c in chunks:
            yield chunk_record(spec, c, by_id.get(c.doc_id))


def to_jsonl(recs: Iterator[ChunkRecord] | Sequence[ChunkRecord]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)


def csv_row(rec: ChunkRecord) -> CsvRow:
    m = rec["metadata"]
    flat: CsvRow = {k: m.get(k) for k in csv_fields() if k in m}
    flat.update(id=rec["id"], page_content=rec["page_content"])
    for fields in EXPORT_FIELDS:
        flat.update(fields.flatten(m))
    return flat


def to_csv(recs: Iterator[ChunkRecord] | Sequence[ChunkRecord]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=csv_fields(), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in recs:
        writer.writerow(csv_row(r))
    return out.getvalue()


def write(path: Path, recs: Sequence[ChunkRecord]) -> None:
    """JSONL or CSV by the file's suffix (anything else is a ConfigError, before anything is written)."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(f"--out must end in .jsonl or .csv (got '{path.name}')")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_jsonl(recs) if suffix == ".jsonl" else to_csv(recs), encoding="utf-8")
