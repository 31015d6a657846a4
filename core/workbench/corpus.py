"""The texts a session works on: a library's documents (or the sample set, or a folder) as one corpus, each
manual apart or joined into one stream."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.infra.errors import ChunkLensError
from core.ingest.datasets import QADataset, joined
from core.ingest.documents import join_documents
from core.schema.documents import Document
from core.schema.questions import Question


@dataclass
class Corpus:
    """The documents as the chunkers see them (separate, or joined into one stream) and matching questions."""

    documents: list[Document]
    questions: list[Question] = field(default_factory=list)
    joined: bool = False


def make_corpus(documents: Sequence[Document], dataset: QADataset | None, join: bool) -> Corpus:
    if not documents:
        return Corpus([])
    join = join and len(documents) > 1  # one document is its own stream
    if dataset is not None:
        ds = joined(dataset) if join else dataset
        return Corpus(ds.documents, ds.questions, join)
    docs = [join_documents(list(documents), doc_id="stream")] if join else list(documents)
    return Corpus(docs, [], join)




def folder_documents(folder: Path) -> tuple[list[Document], QADataset | None]:
    """A qa-spans v1 folder's documents and set, or every PDF / DOCX / TXT / Markdown file in a plain folder."""
    from core.ingest.datasets import load_dataset
    from core.ingest.documents import SUPPORTED_SUFFIXES, load_file

    if (folder / "corpus.jsonl").exists():
        ds = load_dataset(folder)
        return ds.documents, ds
    if not folder.is_dir():
        raise ChunkLensError(f"{folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    if not files:
        raise ChunkLensError(f"{folder}: no corpus.jsonl and no {', '.join(SUPPORTED_SUFFIXES)} files")
    docs: list[Document] = []
    for path in files:
        doc = load_file(path)
        if doc.doc_id in {d.doc_id for d in docs}:
            doc.doc_id = f"{doc.doc_id}-{len(docs) + 1}"
        docs.append(doc)
    return docs, None


def sample_folder() -> Path:
    return Path(__file__).resolve().parents[2] / "sample_data" / "qa"
