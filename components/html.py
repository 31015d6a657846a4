"""HTML built from document text. Every piece of document text goes through `html.escape` here, so a manual
that contains markup or script tags is shown as text, never run. Text the user did not write that goes into
Streamlit's Markdown (file names in error lines, archive member names) goes through `md_escape`, so a name
like `![x](http://tracker/p.png)` is shown as those characters, not fetched as an image."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

from core.evaluation.report import rerank_phrase
from core.methods.chop.cnm import CNM
from core.methods.chop.evidence import part_confidence
from core.schema.chunks import Chunk
from core.schema.hits import Hit

PALETTE = ["#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa"]
OVERLAP_STYLE = "background: repeating-linear-gradient(45deg,#fca5a5,#fca5a5 4px,#fecaca 4px,#fecaca 8px);"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def md_escape(text: str) -> str:
    """`text` with every Markdown (and Streamlit's LaTeX `$`) control character backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text)


UNREAD_STYLE = "color:#6b7280; background:#f3f4f6; text-decoration: line-through dotted #9ca3af;"


def chunk_spans_html(text: str, chunks: Sequence[Chunk], start: int, end: int,
                     unread: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The text between `start` and `end` with each chunk in its own colour; text that two chunks share is
    hatched red, and each chunk's first character carries its number. `unread` maps a chunk id to (the document
    offset where its embedder stops reading, the word pieces it leaves out): that part of the chunk is greyed."""
    inside = [c for c in chunks if c.end > start and c.start < end]
    unread = {cid: part for cid, part in (unread or {}).items() if part[1] > 0}
    cuts = sorted({start, end, *(max(start, c.start) for c in inside), *(min(end, c.end) for c in inside),
                   *(min(end, max(start, unread[c.chunk_id][0])) for c in inside if c.chunk_id in unread)})
    starts = {c.start: c.index for c in inside if c.start >= start}
    parts = ['<div style="white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.82rem; '
             'line-height: 1.55; max-height: 560px; overflow-y: auto; border: 1px solid #e5e7eb; padding: 8px;">']
    for a, b in zip(cuts, cuts[1:]):
        covering = [c for c in inside if c.start < b and c.end > a]
        piece = esc(text[a:b])
        if a in starts:
            parts.append(f'<sup style="color:#1e3a8a;font-weight:600">[{starts[a]}]</sup>')
        if not covering:
            parts.append(piece)
        elif len(covering) > 1:
            ids = ", ".join(str(c.index) for c in covering)
            parts.append(f'<span title="overlap of chunks {ids}" style="{OVERLAP_STYLE}">{piece}</span>')
        else:
            c = covering[0]
            cut, pieces = unread.get(c.chunk_id, (c.end, 0))
            if a >= cut:
                parts.append(f'<span class="unread" title="chunk {c.index}: past the embedder\'s input limit, '
                             f'{pieces} word pieces no vector reads (BM25 reads them)" style="{UNREAD_STYLE}">'
                             f'{piece}</span>')
            else:
                parts.append(f'<span title="chunk {c.index} · {c.token_count} tokens" '
                             f'style="background:{PALETTE[c.index % len(PALETTE)]}">{piece}</span>')
    parts.append("</div>")
    return "".join(parts)


def marked_text_html(text: str, marks: Sequence[tuple[int, int]], max_chars: int = 1200) -> str:
    """`text` escaped, with the given (start, end) ranges wrapped in <mark>; long text is cut with an ellipsis."""
    shown = text[:max_chars]
    out, pos = [], 0
    for s, e in sorted(marks):
        s, e = max(s, pos), min(e, len(shown))
        if e <= s:
            continue
        out.append(esc(shown[pos:s]))
        out.append(f'<mark style="background:#86efac">{esc(shown[s:e])}</mark>')
        pos = e
    out.append(esc(shown[pos:]))
    if len(text) > max_chars:
        out.append(" …")
    return "".join(out)


def cnm_badges_html(cnm: CNM | None, source: str | None = None, sources: Mapping[str, str] | None = None) -> str:
    """Category / nouns / model as small badges; inherited tags are drawn outlined, extracted ones filled. With
    `sources` (`meta["cnm_sources"]`) each badge says where its part came from and how far that kind of evidence
    is trusted (`core.methods.chop.evidence`), on hover and in small print."""
    if cnm is None:
        return ""
    filled = source != "inherited"
    style = ("background:#1e40af;color:white;" if filled else "border:1px solid #1e40af;color:#1e40af;")
    parts = []
    for label, key, value in (("cat", "category", cnm.category), ("nouns", "nouns", ", ".join(cnm.nouns) or None),
                              ("model", "model", cnm.model)):
        origin = (sources or {}).get(key)
        if value:
            hover = small = ""
            if origin:
                trust = part_confidence(origin) if key != "nouns" else None
                said = f"{origin}, confidence {trust:.2f}" if trust is not None else origin
                hover = f' title="from {esc(said)}"'
                small = f' <i style="opacity:0.8">({esc(said)})</i>'
            parts.append(f'<span{hover} style="{style}border-radius:6px;padding:1px 6px;margin-right:4px;'
                         f'font-size:0.75rem">{esc(label)}: {esc(str(value))}{small}</span>')
        elif origin and origin.startswith("unknown"):  # the tagger declined to guess: say so, and why
            why = origin.split(":", 1)[1].strip() if ":" in origin else ""
            parts.append(f'<span title="{esc(why)}" style="border:1px dashed #9ca3af;color:#6b7280;'
                         f'border-radius:6px;padding:1px 6px;margin-right:4px;font-size:0.75rem">'
                         f'{esc(label)}: unknown <i>({esc(why)})</i></span>')
    if source:
        parts.append(f'<span style="font-size:0.7rem;color:#6b7280">{esc(source)}</span>')
    return "".join(parts)


def query_tags_html(query_tags) -> str:
    """What a chunker's retrieval policy made of the question (a `QueryTags`): its name for the tags, what it
    applied ("filter", "route", "none (one document: no titles to route by)") and the tags as badges: CHOP's
    category / nouns / model, or the titles routing matched."""
    tags = query_tags.tags or {}
    titles = "".join(f'<span style="background:#047857;color:white;border-radius:6px;padding:1px 6px;'
                     f'margin-right:4px;font-size:0.75rem">title: {esc(t)}</span>' for t in tags.get("titles") or [])
    return (f"<small>{esc(query_tags.label)} ({esc(query_tags.applied)}):</small> "
            + cnm_badges_html(CNM.model_validate(tags)) + titles)


def hit_ranks_text(hit) -> str:
    """Where a hit stood on each side, whatever the mode: dense rank and cosine, lexical rank and BM25 score."""
    dense = ("dense " + (f"#{hit.dense_rank}" if hit.dense_rank else "beyond the pool")
             + (f" (cos {hit.dense_score:.3f})" if hit.dense_score is not None else ""))
    lexical = ("BM25 " + (f"#{hit.lexical_rank} ({hit.lexical_score:.2f})" if hit.lexical_rank
                          else "no match (no question word occurs)"))
    rerank = (f" · reranked from #{hit.first_rank} (score {hit.rerank_score:.3f})"
              if getattr(hit, "rerank_score", None) is not None else "")
    return f"{dense} · {lexical}{rerank}"


def retrieval_text(retrieval) -> str:
    """How every chunker is searched, in one phrase (a core.store.retrieval.RetrievalSettings)."""
    text = retrieval.mode
    if retrieval.mode == "hybrid":
        text += f" ({retrieval.fusion}, lexical weight {retrieval.lexical_weight:g})"
    return text + rerank_phrase(retrieval.describe())


def hit_card_html(spec: str, hit: Hit, mark: str, boost: str, only_unread: Sequence[str], pages: str,
                  gold_marks: Sequence[tuple[int, int]]) -> str:
    """One retrieved chunk on Query: rank, score (and a tag boost), the relevance `mark` (HTML, made here or by
    judging), where its ranks came from, the question's words only its unread part holds, the children that
    matched, where it lies (document, characters, pages), its prefix, and its text with gold evidence marked."""
    chunk = hit.chunk
    unread = (f'<div style="font-size:0.7rem;color:#92400e">question words only past the embedder\'s input limit '
              f'(BM25 reads them, no vector does): {esc(", ".join(only_unread))}</div>' if only_unread else "")
    kids = (f'<div style="font-size:0.7rem;color:#6b7280">best of {len(hit.children)} child hit(s): '
            + ", ".join(f"{esc(c.child)} {s:.3f}" for c, s in hit.children[:4]) + "</div>" if hit.children else "")
    prefix = (f'<div style="color:#1e40af;font-size:0.75rem">prefix: {esc(chunk.prefix)}</div>'
              if chunk.prefix else "")
    where = f"{esc(chunk.doc_id)} {chunk.start}–{chunk.end}" + (f" · {esc(pages)}" if pages else "")
    return (f'<div data-hit="{esc(spec)}-{hit.rank}" '
            'style="border:1px solid #e5e7eb;border-radius:6px;padding:6px;margin-bottom:6px">'
            f"<div><b>#{hit.rank}</b> score {hit.score:.3g}{' · ' + esc(boost) if boost else ''}{mark}</div>"
            f'<div style="font-size:0.7rem;color:#374151">{esc(hit_ranks_text(hit))}</div>{unread}{kids}'
            f'<div style="font-size:0.75rem;color:#6b7280" class="hit-where">{where}</div>{prefix}'
            f'<div style="font-size:0.8rem;white-space:pre-wrap">'
            f"{marked_text_html(chunk.text, gold_marks, 700)}</div></div>")
