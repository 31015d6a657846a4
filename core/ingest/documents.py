"""Turning files into text: a `Document` (`core.schema.documents`) from a file's bytes, within limits that keep a
bad file from taking the server with it, and several documents joined into one stream (the papers' "rebuilt as
one continuous file" setting), which remembers where each source document sits, so gold spans can be moved into
stream coordinates and continuity decisions can be scored against the true joins.
"""

from __future__ import annotations

import io
import posixpath
import re
import time
import unicodedata
import zipfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from core.infra.errors import DocumentError
from core.ingest import pdf as pdf_reader
from core.ingest import worker
from core.ingest.answers import DocxTextAnswer, PdfTextAnswer
from core.ingest.safezip import ArchiveError, packed_sizes
from core.schema.documents import Document, Segment

MAX_FILE_BYTES = 50 * 1024 * 1024  # default upload limit; the app's setting `max_upload_mb` overrides it
SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".docx")
JOIN_SEPARATOR = "\n\n"

#: A DOCX is a ZIP archive that python-docx inflates whole into memory. These limits are checked on the ZIP's
#: central directory (packed sizes measured in the file) before anything but [Content_Types].xml is inflated: the
#: declared unpacked sizes bound what CPython's zipfile will return.
MAX_DOCX_UNPACKED_BYTES = 256 * 1024 * 1024  # everything, images included
#: The XML python-docx parses (it builds every element as a Python object: about 2.3 s and 20 MB per MB of XML); a
#: 500-page Word manual holds some 10 MB.
MAX_DOCX_XML_BYTES = 32 * 1024 * 1024
MAX_DOCX_RATIO = 100  # deflate tops out near 1030:1; real Word XML stays far below 100:1
#: [Content_Types].xml, read here to find the XML parts: a real one lists a few dozen types in a few KB
MAX_CONTENT_TYPES_BYTES = 2**20
_CONTENT_TYPES = "[Content_Types].xml"
_RATIO_CHECK_FROM = 256 * 1024  # small members (and archives) can have any ratio without doing harm
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)  # what zipfile reads

#: Leading bytes of file types users mistake for (or rename to) one of ours; any match is never plain text.
_MAGIC = (
    (b"%PDF-", "PDF file"),
    (b"PK\x03\x04", "ZIP archive (DOCX, XLSX, ...)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy or password-protected Office file"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "program (ELF)"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_MAX_CONTROL_SHARE = 0.05  # more control characters than this in decoded text means binary data

#: What reading one PDF may cost, checked page by page so the work stops at the page that passes a limit. A PDF's
#: pages may all draw one shared content stream, and a stream may repeat a string thousands of times: a 2 KB file
#: can stand for a million characters and minutes of a parser's time, so the file's size bounds nothing.
MAX_PDF_PAGES = 2000  # the longest product manuals run to a few hundred pages; checked before any page is read
MAX_EXTRACT_SECONDS = 120.0  # PDFium reads an ordinary page in milliseconds: 2000 real pages take well under this
MAX_TEXT_CHARS = 20_000_000  # some 6000 dense pages; every chunker and the embedders hold the whole text in memory
#: Text per byte of file: real PDFs give at most a few characters per byte (fonts, layout and compression overhead
#: outweigh text that compresses 3-4:1). Far past that, pages repeat one stream; it is refused once the text is
#: past TEXT_RATIO_FROM characters, so small files of any ratio still load.
MAX_CHARS_PER_BYTE = 100
#: The PDF format's largest page side (ISO 32000-1, annex C: 14,400 units of 1/72 inch, 200 inches).
MAX_PAGE_POINTS = 14_400
TEXT_RATIO_FROM = 100_000


@dataclass(frozen=True)
class PdfLimits:
    """The limits above, as one value a caller (or a test) can tighten."""

    pages: int = MAX_PDF_PAGES
    seconds: float = MAX_EXTRACT_SECONDS
    chars: int = MAX_TEXT_CHARS
    chars_per_byte: int = MAX_CHARS_PER_BYTE

    def max_chars(self, file_bytes: int) -> int:
        """The text limit for a file of `file_bytes`: the ratio's, never below TEXT_RATIO_FROM nor above `chars`."""
        return min(self.chars, max(TEXT_RATIO_FROM, self.chars_per_byte * file_bytes))


MAX_SLUG_CHARS = 80  # a doc id names files in the workspace: kept well under the 255-byte file-name limit


def slugify(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:MAX_SLUG_CHARS].rstrip("-.")
    return slug or "document"


def load_bytes(name: str, data: bytes, doc_id: str | None = None, max_bytes: int = MAX_FILE_BYTES,
               pdf_limits: PdfLimits | None = None) -> Document:
    """Extract text from the bytes of a file called `name`.

    Every problem with the file is a `DocumentError` whose one-line message names the file and what is wrong;
    no other exception escapes (the fuzz tests hold this), so a batch can report a bad file and keep going.
    """
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentError(f"{name}: unsupported file type '{suffix or 'none'}' (use {', '.join(SUPPORTED_SUFFIXES)})")
    check_size(name, len(data), max_bytes)
    if not data:
        raise DocumentError(f"{name}: the file is empty")
    notes: list[str] = []
    page_starts: list[int] = []
    outline: list[tuple[int, int, str]] = []
    limits = pdf_limits or PdfLimits()
    if suffix == ".pdf":
        text, page_starts, outline = _pdf_text_isolated(name, data, limits)
        empty = "no text layer (a scanned PDF? run OCR on it first)"
    elif suffix == ".docx":
        text = _docx_text_isolated(name, data, limits)
        empty = "the document holds no text"
    else:
        text, notes = _decode_text(name, data)
        empty = "the file is empty (only whitespace)"
    if not text.strip():
        raise DocumentError(f"{name}: {empty}")
    _check_chars(name, text, len(data), limits)
    stem = Path(name).stem
    return Document(doc_id=doc_id or slugify(stem), title=stem, text=text, source=name, page_starts=page_starts,
                    notes=notes, outline=outline, loader=pdf_reader.LOADER if suffix == ".pdf" else "")


def check_size(name: str, size: int, max_bytes: int = MAX_FILE_BYTES) -> None:
    """Refuse a file over the upload limit before any of it is parsed."""
    if size > max_bytes:
        limit = _size(max_bytes)
        raise DocumentError(f"{name}: {_size(size)} is over the {limit} upload limit (setting max_upload_mb)")


def _size(n: int) -> str:
    """Bytes for people: '200.0 MB', '12 KB'."""
    if n >= 2**20:
        return f"{n / 2**20:.1f} MB"
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"


def load_file(path: str | Path, doc_id: str | None = None, max_bytes: int = MAX_FILE_BYTES) -> Document:
    """Load a file from disk; its size is checked before it is read, so an oversized file costs no memory."""
    path = Path(path)
    try:
        check_size(path.name, path.stat().st_size, max_bytes)
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    return load_bytes(path.name, data, doc_id=doc_id, max_bytes=max_bytes)


def _sniff(data: bytes) -> str | None:
    """The kind of file `data` is, when its first bytes say so."""
    return next((kind for magic, kind in _MAGIC if data.startswith(magic)), None)


def _decode_text(name: str, data: bytes) -> tuple[str, list[str]]:
    """Text of a .txt / .md file and notes for the user; refuses files that are not text at all."""
    kind = _sniff(data)
    if kind:
        raise DocumentError(f"{name}: the content is a {kind}, not text")
    text, notes = _decode(name, data)
    if _control_share(text) > _MAX_CONTROL_SHARE:
        raise DocumentError(f"{name}: looks like a binary file, not text")
    return _normalise_newlines(text), notes


def _decode(name: str, data: bytes) -> tuple[str, list[str]]:
    """UTF-8 (with or without BOM) and UTF-16 with a BOM are read as they are; anything else is read line by
    line, UTF-8 where a line is valid UTF-8 and Windows-1252 where not, which also recovers files that mix the
    two (the usual result of pasting between editors). A note says when that happened."""
    if data.startswith(_UTF16_BOMS):
        try:
            return data.decode("utf-16"), []
        except UnicodeDecodeError as exc:
            raise DocumentError(f"{name}: starts like UTF-16 text but is not valid UTF-16") from exc
    if b"\x00" in data[:8192]:
        raise DocumentError(f"{name}: looks like a binary file, not text")
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    text, legacy, total = _decode_lines(data)
    if legacy == total:
        return text, [f"{name}: not UTF-8; read as Windows-1252 (Western European)"]
    return text, [f"{name}: mixed encodings; {legacy} of {total} lines are not UTF-8 and were read as Windows-1252"]


#: Windows-1252 for every byte: its five undefined bytes keep their Latin-1 meaning, so decoding never fails.
_CP1252 = {b: bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(0x80, 0xA0)}


def _decode_lines(data: bytes) -> tuple[str, int, int]:
    """(text, lines read as Windows-1252, all lines). Linear: each line is decoded once or twice."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    out: list[str] = []
    legacy = 0
    for line in lines:
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(line.decode("latin-1").translate(_CP1252))
            legacy += 1
    return "\n".join(out), legacy, len(lines)


def _control_share(text: str, sample: int = 100_000) -> float:
    """Share of control characters (other than tab, newlines, form feed) in the first `sample` characters."""
    head = text[:sample]
    if not head:
        return 0.0
    controls = sum(1 for ch in head if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\x0b\x0c")
    return controls / len(head)


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_chars(name: str, text: str, file_bytes: int, limits: PdfLimits) -> None:
    """Refuse text past the character limit for a file of its size (every type: a DOCX or a text file too)."""
    max_chars = limits.max_chars(file_bytes)
    if len(text) > max_chars:
        raise DocumentError(f"{name}: {len(text):,} characters, over the {max_chars:,}-character limit for the text "
                            f"of a {_size(file_bytes)} file")


def _pdf_text_isolated(name: str, data: bytes,
                       limits: PdfLimits) -> tuple[str, list[int], list[tuple[int, int, str]]]:
    """`_pdf_text` in a worker process (`core.ingest.worker`): a PDF that exhausts PDFium ends the worker, not us."""
    kind = _sniff(data)
    if kind and b"%PDF-" not in data[:1024]:
        raise DocumentError(f"{name}: the content is a {kind}, not a PDF")
    result, _ = worker.run_job("pdf_text", name, data, {"limits": asdict(limits)},
                               worker.WorkerLimits(seconds=limits.seconds + worker.START_UP_SECONDS))
    outline = [(int(offset), int(level), str(title)) for offset, level, title in result["outline"]]
    return str(result["text"]), [int(start) for start in result["starts"]], outline


def pdf_text_job(name: str, data: bytes, options: dict) -> PdfTextAnswer:
    """The worker's side of `_pdf_text_isolated`."""
    text, starts, outline = _pdf_text(name, data, PdfLimits(**options["limits"]))
    return {"text": text, "starts": starts, "outline": outline}


def _docx_text_isolated(name: str, data: bytes, limits: PdfLimits) -> str:
    """`_docx_text` in a worker process, after the archive's directory passed `_check_zip` here."""
    _check_zip(name, data)
    result, _ = worker.run_job("docx_text", name, data, {},
                               worker.WorkerLimits(seconds=limits.seconds + worker.START_UP_SECONDS))
    return str(result["text"])


def docx_text_job(name: str, data: bytes, options: dict) -> DocxTextAnswer:
    """The worker's side of `_docx_text_isolated`."""
    return {"text": _docx_text(name, data)}


def _pdf_text(name: str, data: bytes,
              limits: PdfLimits) -> tuple[str, list[int], list[tuple[int, int, str]]]:
    """Text of every page joined by blank lines, with each page's start offset and the outline (bookmarks), read by
    PDFium (`core.ingest.pdf`, which the page view uses too). Pages, time and text are held to `limits` while the
    pages are read."""
    from pypdfium2 import PdfiumError

    try:
        with pdf_reader.open_pdf(data) as pdf:
            pages, drawn = _pages_within(name, pdf, limits, len(data))
            marks = pdf_reader.outline(pdf)
    except PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DocumentError(f"{name}: the PDF is encrypted with a password") from exc
        raise DocumentError(f"{name}: not a readable PDF, it may be damaged or cut short ({_reason(exc)})") from exc
    if not any(page.strip() for page in pages) and not drawn:
        raise DocumentError(f"{name}: no text could be read: its pages draw nothing (a blank or damaged PDF)")
    starts: list[int] = []
    pos = 0
    for page in pages:
        starts.append(pos)
        pos += len(page) + len(JOIN_SEPARATOR)
    outline = [(starts[page], level, title) for page, level, title in marks if 0 <= page < len(starts)]
    return JOIN_SEPARATOR.join(pages), starts, outline


def _pages_within(name: str, pdf, limits: PdfLimits, file_bytes: int) -> tuple[list[str], bool]:
    """Each page's text, and whether any page draws anything at all (a scan draws an image), stopping with a
    DocumentError at the first page that passes a limit of `limits`."""
    if len(pdf) > limits.pages:
        raise DocumentError(f"{name}: over the {limits.pages}-page limit ({len(pdf)} pages)")
    max_chars, started = limits.max_chars(file_bytes), time.monotonic()
    pages: list[str] = []
    drawn = False
    total = 0
    for n in range(1, len(pdf) + 1):
        page = pdf[n - 1]
        _check_page_size(name, n, page)
        pages.append(pdf_reader.page_text(page.get_textpage()).text)
        drawn = drawn or bool(pages[-1]) or next(iter(page.get_objects(max_depth=1)), None) is not None
        total += len(pages[-1])
        if total > max_chars:
            raise DocumentError(f"{name}: over the {max_chars:,}-character limit for the text of a {_size(file_bytes)} "
                                f"PDF (reached on page {n}; do its pages repeat one drawing?)")
        if time.monotonic() - started > limits.seconds:
            raise DocumentError(f"{name}: over the {limits.seconds:g}-second limit for reading a PDF (stopped after "
                                f"page {n} of {len(pdf)})")
    return pages, drawn


def _check_page_size(name: str, n: int, page) -> None:
    """Refuse a page larger than the PDF format's own maximum: nothing real is that size, and drawing it for the page
    view would cost gigabytes."""
    width, height = page.get_size()
    if max(width, height) > MAX_PAGE_POINTS:
        raise DocumentError(f"{name}: page {n} is {width:,.0f} x {height:,.0f} points, over the PDF format's "
                            f"{MAX_PAGE_POINTS:,}-point ({MAX_PAGE_POINTS // 72}-inch) page size limit")


def _reason(exc: BaseException) -> str:
    """The first line of an exception's message, shortened, for a one-line user message."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _check_zip(name: str, data: bytes) -> None:
    """Refuse a DOCX that is not a ZIP archive, whose members would unpack to too much (a zip bomb), or that holds
    more XML than one document may. Judged on the central directory, with each member's packed size measured in the
    file (`core.ingest.safezip.packed_sizes`), and on [Content_Types].xml, the one member inflated here (at most
    MAX_CONTENT_TYPES_BYTES), which says which parts are XML. python-docx reads members with zipfile, which stops at
    each one's stated size and checks its CRC, so what it inflates and parses is what was counted here."""
    kind = _sniff(data)
    if kind and not data.startswith(b"PK"):
        hint = "; save it without a password as .docx" if kind.startswith("legacy") else ""
        raise DocumentError(f"{name}: the content is a {kind}, not a DOCX{hint}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            packed = packed_sizes(archive)
            _check_unpacked(name, members, packed)
            xml = sum(m.file_size for m in members if m.filename in _xml_parts(name, archive))
    except ArchiveError as exc:
        raise DocumentError(f"{name}: {exc}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError) as exc:
        # NotImplementedError: a 'version needed to extract' above what zipfile knows (found by atheris)
        raise DocumentError(f"{name}: not a readable DOCX file (not a valid ZIP archive: {_reason(exc)})") from exc
    if xml > MAX_DOCX_XML_BYTES:
        raise DocumentError(f"{name}: the DOCX holds {_size(xml)} of XML, over the {_size(MAX_DOCX_XML_BYTES)} limit "
                            "for one document")


def _check_unpacked(name: str, members: list[zipfile.ZipInfo], packed: list[int]) -> None:
    """The size checks of `_check_zip`, on the stated unpacked sizes (what zipfile inflates at most) over the
    measured packed ones."""
    total = sum(m.file_size for m in members)
    if total > MAX_DOCX_UNPACKED_BYTES:
        raise DocumentError(f"{name}: the DOCX would unpack to {_size(total)}, over the "
                            f"{_size(MAX_DOCX_UNPACKED_BYTES)} limit (refused as a likely zip bomb)")
    for m, held in zip(members, packed):
        if m.flag_bits & 0x1:
            raise DocumentError(f"{name}: {m.filename} is encrypted inside the ZIP archive; save the document again "
                                "from Word without a password")
        if m.compress_type not in _ZIP_METHODS:
            raise DocumentError(f"{name}: {m.filename} uses ZIP method {m.compress_type}, which cannot be unpacked; "
                                "save the document again from Word")
        ratio = m.file_size / max(held, 1)
        if m.file_size >= _RATIO_CHECK_FROM and ratio > MAX_DOCX_RATIO:
            raise DocumentError(f"{name}: {m.filename} is compressed {ratio:.0f}:1, over the {MAX_DOCX_RATIO}:1 "
                                "limit (refused as a likely zip bomb)")
    all_packed = max(sum(packed), 1)
    if total >= _RATIO_CHECK_FROM and total / all_packed > MAX_DOCX_RATIO:
        raise DocumentError(f"{name}: the DOCX is compressed {total / all_packed:.0f}:1 as a whole, over the "
                            f"{MAX_DOCX_RATIO}:1 limit (refused as a likely zip bomb)")


def _xml_parts(name: str, archive: zipfile.ZipFile) -> set[str]:
    """The members a DOCX reader parses as XML, whatever their names: [Content_Types].xml, every relationships part
    (`.rels`, found by that name), and every part whose content type in [Content_Types].xml is XML (an Override
    for its part name, else the Default for its extension, case-insensitive as in python-docx's
    `_ContentTypeMap`); members named .xml are counted whatever their type."""
    overrides, defaults = _content_types(name, archive)
    parts = set()
    for member in archive.namelist():
        lower = member.lower()
        ext = posixpath.splitext(lower)[1].removeprefix(".")
        kind = overrides.get(f"/{lower}", defaults.get(ext, "")).split(";")[0].strip()
        if lower.endswith((".xml", ".rels")) or kind.endswith(("+xml", "/xml")):
            parts.add(member)
    return parts


def _content_types(name: str, archive: zipfile.ZipFile) -> tuple[dict[str, str], dict[str, str]]:
    """[Content_Types].xml's Overrides (part name -> type) and Defaults (extension -> type), all lower case; none
    when the member is missing (python-docx then refuses the file). Inflated with its bytes counted, and parsed
    without entities, DTDs or network."""
    from lxml import etree

    try:
        info = archive.getinfo(_CONTENT_TYPES)
    except KeyError:
        return {}, {}
    if info.file_size > MAX_CONTENT_TYPES_BYTES:
        raise DocumentError(f"{name}: its {_CONTENT_TYPES} is {_size(info.file_size)}, over the "
                            f"{_size(MAX_CONTENT_TYPES_BYTES)} a DOCX's list of part types may take")
    try:
        with archive.open(info) as f:
            blob = f.read(MAX_CONTENT_TYPES_BYTES + 1)
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
        root = etree.fromstring(blob, parser)
    except (etree.LxmlError, *_DOCX_ERRORS, EOFError, NotImplementedError) as exc:
        raise DocumentError(f"{name}: not a readable DOCX file ({_CONTENT_TYPES}: {_reason(exc)})") from exc
    overrides: dict[str, str] = {}
    defaults: dict[str, str] = {}
    for el in root:
        if not isinstance(el.tag, str):  # a comment or processing instruction
            continue
        kind = str(el.get("ContentType") or "").lower()
        local = etree.QName(el).localname
        if local == "Override":
            overrides[str(el.get("PartName") or "").lower()] = kind
        elif local == "Default":
            defaults[str(el.get("Extension") or "").lower()] = kind
    return overrides, defaults


#: What python-docx, zipfile and lxml raise on damaged archives and XML, found by the fuzz tests: zlib.error for a
#: damaged deflate stream, AttributeError when a part's root element is not the one expected, TypeError for a
#: relationship without a target.
_DOCX_ERRORS: tuple[type[BaseException], ...] = (zipfile.BadZipFile, KeyError, ValueError, zlib.error,
                                                AttributeError, TypeError)


def _docx_text(name: str, data: bytes) -> str:
    """Paragraphs, then table rows (cells joined by ' | '), separated by blank lines; the archive is checked
    first (`_check_zip`), so python-docx only ever inflates a bounded amount."""
    import docx
    from docx.opc.exceptions import OpcError
    from lxml.etree import LxmlError

    _check_zip(name, data)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = [p.text for p in document.paragraphs]
        for table in document.tables:
            for row in table.rows:
                blocks.append(" | ".join(cell.text for cell in row.cells))
    except (OpcError, LxmlError, *_DOCX_ERRORS) as exc:
        raise DocumentError(f"{name}: not a readable DOCX file ({_reason(exc)})") from exc
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
        segments.append(Segment(doc.doc_id, doc.title, pos, pos + len(doc.text), doc.cnm, tuple(doc.page_starts)))
        parts.append(doc.text)
        pos += len(doc.text)
    return Document(doc_id=doc_id, title=f"{len(docs)} documents joined", text="".join(parts), segments=segments)
