"""Turning files into text.

A `Document` is plain text plus where it came from; PDF page starts are kept as character offsets. Several
documents can be joined into one stream (the papers' "rebuilt as one continuous file" setting); the stream
remembers where each source document sits, so gold spans can be moved into stream coordinates and continuity
decisions can be scored against the true joins.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import DocumentError

MAX_FILE_BYTES = 50 * 1024 * 1024
SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".docx")
JOIN_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Segment:
    """Where one source document lies inside a joined stream."""

    doc_id: str
    title: str
    start: int
    end: int


@dataclass
class Document:
    doc_id: str
    title: str
    text: str
    source: str = ""
    page_starts: list[int] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    @property
    def joins(self) -> list[int]:
        """Offsets where a new source document begins inside a stream (none for a single document)."""
        return [seg.start for seg in self.segments[1:]]

    def page_at(self, offset: int) -> int | None:
        """1-based page number holding `offset`, for PDFs."""
        if not self.page_starts:
            return None
        page = 0
        for i, s in enumerate(self.page_starts):
            if s <= offset:
                page = i
        return page + 1


def slugify(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return slug or "document"


def load_bytes(name: str, data: bytes, doc_id: str | None = None) -> Document:
    """Extract text from the bytes of a file called `name`. Raises `DocumentError` with a readable reason."""
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentError(f"{name}: unsupported file type '{suffix or 'none'}' (use {', '.join(SUPPORTED_SUFFIXES)})")
    if not data:
        raise DocumentError(f"{name}: the file is empty")
    if len(data) > MAX_FILE_BYTES:
        raise DocumentError(f"{name}: {len(data) / 2**20:.0f} MB is over the {MAX_FILE_BYTES // 2**20} MB limit")
    page_starts: list[int] = []
    if suffix == ".pdf":
        text, page_starts = _pdf_text(name, data)
    elif suffix == ".docx":
        text = _docx_text(name, data)
    else:
        text = _decode_text(name, data)
    if not text.strip():
        raise DocumentError(f"{name}: no text could be extracted (scanned images or an empty document?)")
    stem = Path(name).stem
    return Document(doc_id=doc_id or slugify(stem), title=stem, text=text, source=name, page_starts=page_starts)


def load_file(path: str | Path, doc_id: str | None = None) -> Document:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    return load_bytes(path.name, data, doc_id=doc_id)


def _decode_text(name: str, data: bytes) -> str:
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(f"{name}: looks like a binary file, not text")
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            if encoding == "utf-16" and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
                continue
            return _normalise_newlines(data.decode(encoding))
        except UnicodeDecodeError:
            continue
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{name}: not valid UTF-8 and not a known legacy encoding") from exc
    return _normalise_newlines(text)


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _pdf_text(name: str, data: bytes) -> tuple[str, list[int]]:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:  # noqa: BLE001 - pypdf raises several types for unsupported crypto
                ok = 0
            if not ok:
                raise DocumentError(f"{name}: the PDF is encrypted with a password")
        pages = [page.extract_text() or "" for page in reader.pages]
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise DocumentError(f"{name}: not a readable PDF ({exc})") from exc
    starts: list[int] = []
    parts: list[str] = []
    pos = 0
    for page in pages:
        starts.append(pos)
        page = _normalise_newlines(page).strip("\n")
        parts.append(page)
        pos += len(page) + len(JOIN_SEPARATOR)
    return JOIN_SEPARATOR.join(parts), starts


def _docx_text(name: str, data: bytes) -> str:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentError(f"{name}: not a readable DOCX file ({exc})") from exc
    blocks = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            blocks.append(" | ".join(cell.text for cell in row.cells))
    return "\n\n".join(b for b in blocks if b.strip())


def join_documents(docs: list[Document], doc_id: str = "stream", separator: str = JOIN_SEPARATOR) -> Document:
    """One continuous text from several documents, recording each document's place in it."""
    if not docs:
        raise DocumentError("nothing to join: no documents")
    parts: list[str] = []
    segments: list[Segment] = []
    pos = 0
    for i, doc in enumerate(docs):
        if i:
            parts.append(separator)
            pos += len(separator)
        segments.append(Segment(doc.doc_id, doc.title, pos, pos + len(doc.text)))
        parts.append(doc.text)
        pos += len(doc.text)
    return Document(doc_id=doc_id, title=f"{len(docs)} documents joined", text="".join(parts), segments=segments)
