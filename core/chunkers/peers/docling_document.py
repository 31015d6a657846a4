"""ChunkLens's own reading of a document turned into a Docling document, for Docling's chunkers.

Docling chunks a `DoclingDocument`, which its converter builds from a file with layout models that no registry
package ships (and that would be a download). The document here is built from what ChunkLens read instead, one
block at a time, with docling-core's own API (`add_heading`, `add_text`, `add_list_item`, `add_code`,
`add_table`):

- Markdown (a file named .md or a text with Markdown headings): blocks as markdown-it-py (CommonMark, with tables)
  parses them. An item's text is the block's inline source, emphasis marks and links kept as written, so a chunk
  is the document's text wherever Docling's serializer leaves it as it is.
- A PDF (a document with page starts): ChunkLens's PDFium reading has lines and pages but no paragraphs inside a
  page, so an item is the text between two cuts: a blank line, a page start, or a heading. The headings are the
  PDF's outline (bookmarks), each found as a line of the page it points to (an optional section number before
  its title); a title found on no line of its page is no heading. Each item carries its page (Docling's
  provenance); ChunkLens's reading keeps no box, so the provenance box is empty (0, 0, 0, 0).
- Plain text: one text item per paragraph (blank lines).

Every block keeps its source range in the document (`Block.start`, `Block.end`), used for its page and as the
offset of a chunk that begins with its item; the chunks are placed from the texts Docling returns, each offset
checked against the text (`core.chunkers.peers.spans`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from core import text as T
from core.chunkers.headers import MAX_HEADING_CHARS
from core.schema.documents import Document

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

Kind = Literal["heading", "text", "list_item", "code", "table"]
#: how a document was read into blocks
SOURCES = ("markdown", "pdf", "text")
#: what may stand before an outline title on its line: "2.1 ", "A.3. ", "IV ", "Appendix A ", "Chapter 3 "
_SECTION_NUMBER = r"(?:(?i:appendix|chapter|part|section)[ \t]+)?(?:[0-9A-Z]{1,4}(?:\.[0-9A-Z]{1,4})*\.?[ \t]+)?"
_BLANKS = r"[ \t]+"


@dataclass(frozen=True)
class Block:
    """One Docling item to be: its kind, its source range in the document and the text handed to Docling."""

    kind: Kind
    start: int
    end: int
    text: str = ""
    level: int = 0  # a heading's level (from 1); a list item's depth (0: a top-level list)
    enumerated: bool = False  # a list item of an ordered list
    opens_list: bool = False  # the first item of a list
    rows: tuple[tuple[str, ...], ...] = ()  # a table's cells by row, its header row first


def source_of(doc: Document) -> str:
    """How `doc` is read: "pdf" for a text with page starts, "markdown" for a Markdown file or a text with
    Markdown headings, else "text"."""
    from .text_splitter import is_markdown

    if doc.page_starts:
        return "pdf"
    return "markdown" if is_markdown(doc) else "text"


def blocks_of(doc: Document) -> list[Block]:
    """The document's blocks in reading order (see the module's docstring)."""
    source = source_of(doc)
    if source == "pdf":
        return pdf_blocks(doc)
    if source == "markdown":
        return markdown_blocks(doc.text)
    return [Block("text", s, e, doc.text[s:e]) for s, e in T.paragraphs(doc.text)]


# ------------------------------------------------------------------------------------------------ Markdown


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")  # the preset's nesting limit (20) holds on hostile input


class _Lines:
    """Character offsets of a text's lines, to turn markdown-it's line ranges into source ranges."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def span(self, line_map: list[int] | None) -> tuple[int, int]:
        if not line_map:
            return 0, 0
        first, last = line_map
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        return T.strip_span(self.text, self.starts[first], end)


def markdown_blocks(text: str) -> list[Block]:
    """Headings, paragraphs, list items (the first paragraph of each item; its later ones are text), fenced and
    indented code, tables and HTML blocks of a Markdown text; a block quote's paragraphs are text."""
    lines = _Lines(text)
    tokens = _parser().parse(text)
    out: list[Block] = []
    lists: list[bool] = []  # the open lists, innermost last: enumerated or not
    item_open = False  # a list item whose first paragraph is still to come
    list_opened = False  # the next list item opens a list
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        kind = tok.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            lists.append(kind == "ordered_list_open")
            list_opened = True
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            item_open = True
        elif kind == "heading_open":
            content = tokens[i + 1].content.strip()
            if content:
                out.append(Block("heading", *lines.span(tok.map), content, level=int(tok.tag[1:])))
            i += 2
        elif kind == "paragraph_open":
            content = tokens[i + 1].content.strip()
            if content and lists and item_open:
                out.append(Block("list_item", *lines.span(tok.map), content, level=len(lists) - 1,
                                 enumerated=lists[-1], opens_list=list_opened))
                list_opened = False
            elif content:
                out.append(Block("text", *lines.span(tok.map), content))
            item_open = False
            i += 2
        elif kind in ("fence", "code_block") and tok.content.strip():
            out.append(Block("code", *lines.span(tok.map), tok.content))
        elif kind == "html_block" and tok.content.strip():
            out.append(Block("text", *lines.span(tok.map), tok.content.strip()))
        elif kind == "table_open":
            i, rows = _table_rows(tokens, i)
            if rows:
                out.append(Block("table", *lines.span(tok.map), rows=rows))
        i += 1
    return out


def _table_rows(tokens: list[Token], i: int) -> tuple[int, tuple[tuple[str, ...], ...]]:
    """The cells of the table opened at token `i`, by row, and the index of its closing token."""
    rows: list[tuple[str, ...]] = []
    row: list[str] = []
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            row = []
        elif tok.type == "inline":
            row.append(tok.content.strip())
        elif tok.type == "tr_close":
            rows.append(tuple(row))
        i += 1
    return i, tuple(rows)


# ------------------------------------------------------------------------------------------------ PDF


def outline_lines(doc: Document) -> list[tuple[int, int, int]]:
    """(start, end, level) of each outline title's line, in the outline's order: searched on the page the entry
    points to, after the previous title found there (entries on one page are in reading order), else anywhere on
    that page not yet taken. A section number ("2.1", "A.3.") may stand before the title, and a word such as
    "Appendix" before that."""
    found: list[tuple[int, int, int]] = []
    taken: set[int] = set()
    floor = 0
    for offset, level, title in sorted(doc.outline, key=lambda entry: entry[0]):  # stable: the outline's order
        words = title.split()
        if not words or len(title) > MAX_HEADING_CHARS:
            continue
        page_end = _page_end(doc, offset)
        title_words = _BLANKS.join(map(re.escape, words))
        pattern = re.compile(rf"^[ \t]*{_SECTION_NUMBER}{title_words}[ \t]*$", re.MULTILINE)
        match = next((m for start_at in dict.fromkeys((max(offset, floor), offset)) if start_at < page_end
                      for m in pattern.finditer(doc.text, start_at, page_end) if m.start() not in taken), None)
        if match:
            start, end = T.strip_span(doc.text, match.start(), match.end())
            found.append((start, end, max(1, int(level))))
            taken.add(match.start())
            floor = end
    return sorted(found)


def _page_end(doc: Document, offset: int) -> int:
    at = bisect.bisect_right(doc.page_starts, offset)
    return doc.page_starts[at] if at < len(doc.page_starts) else len(doc.text)


def pdf_blocks(doc: Document) -> list[Block]:
    """Text items cut at blank lines, page starts and outline headings; the headings as heading items."""
    headings = outline_lines(doc)
    heading_at = {start: (end, level) for start, end, level in headings}
    cuts = sorted({*doc.page_starts, *(s for s, _, _ in headings), *(e for _, e, _ in headings)})
    out: list[Block] = []
    for p_start, p_end in T.paragraphs(doc.text):
        pos = p_start
        for cut in [c for c in cuts if p_start < c < p_end] + [p_end]:
            start, end = T.strip_span(doc.text, pos, cut)
            if start < end:
                if start in heading_at and heading_at[start][0] == end:
                    out.append(Block("heading", start, end, doc.text[start:end], level=heading_at[start][1]))
                else:
                    out.append(Block("text", start, end, doc.text[start:end]))
            pos = cut
    return out


# ------------------------------------------------------------------------------------------------ the document


def docling_document(doc: Document) -> DoclingDocument:
    """The Docling document of `doc`'s blocks, with each item's page for a PDF."""
    return read_into_docling(doc)[0]


def read_into_docling(doc: Document) -> tuple[DoclingDocument, dict[str, tuple[int, int]]]:
    """The Docling document of `doc`'s blocks, and each item's source range by its reference (`#/texts/3`): where
    a chunk made of those items lies (a chunk's words can stand earlier in the document too, in a heading no chunk
    holds)."""
    from docling_core.types.doc import DoclingDocument, Size

    dl = DoclingDocument(name=doc.doc_id or "document")
    pages = len(doc.page_starts)
    for page in range(1, pages + 1):
        dl.add_page(page_no=page, size=Size())  # ChunkLens's reading keeps no page size
    lists: list[Any] = []  # the open list groups, innermost last
    last_item: Any = None  # the last list item added (a nested list's parent)
    ranges: dict[str, tuple[int, int]] = {}
    for block in blocks_of(doc):
        prov = _provenance(doc, block) if pages else None
        if block.kind != "list_item":
            lists, last_item = [], None
        if block.kind == "heading":
            item = dl.add_heading(block.text, level=block.level, prov=prov)
        elif block.kind == "text":
            from docling_core.types.doc import DocItemLabel

            item = dl.add_text(DocItemLabel.TEXT, block.text, prov=prov)
        elif block.kind == "code":
            item = dl.add_code(block.text, prov=prov)
        elif block.kind == "table":
            item = dl.add_table(_table_data(block.rows), prov=prov)
        else:
            del lists[block.level + 1:]
            if block.opens_list or len(lists) <= block.level:
                del lists[block.level:]
                parent = last_item if block.level and last_item is not None else None
                lists.append(dl.add_list_group(parent=parent))
            item = last_item = dl.add_list_item(block.text, enumerated=block.enumerated, parent=lists[-1], prov=prov)
        ranges[item.self_ref] = (block.start, block.end)
    return dl, ranges


def _provenance(doc: Document, block: Block) -> Any:
    from docling_core.types.doc import BoundingBox, ProvenanceItem

    return ProvenanceItem(page_no=doc.page_at(block.start) or 1, bbox=BoundingBox(l=0, t=0, r=0, b=0),
                          charspan=(0, len(block.text)))


def _table_data(rows: tuple[tuple[str, ...], ...]) -> Any:
    from docling_core.types.doc import TableCell, TableData

    n_cols = max(len(r) for r in rows)
    cells = [TableCell(text=text, start_row_offset_idx=r, end_row_offset_idx=r + 1, start_col_offset_idx=c,
                       end_col_offset_idx=c + 1, column_header=r == 0)
             for r, row in enumerate(rows) for c, text in enumerate(row)]
    return TableData(table_cells=cells, num_rows=len(rows), num_cols=n_cols)
