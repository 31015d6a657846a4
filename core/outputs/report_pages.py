"""Self-contained HTML reports of what Chunk & compare and Query show, to hand a comparison to someone else.

They share `core.outputs.report_html`'s file (style, glossary, plotly.js inline once, everything escaped) and, like the
benchmark's report, open "What this shows" with sentences generated from the numbers on the page. A report is
made from the same values the page shows, so the file and the screen agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import core
from core.evaluation.relevance import QuestionScore
from core.evaluation.results import Metric, RunSummary
from core.outputs import figures
from core.outputs.report_html import (
    Figures,
    escape,
    page_html,
    plotly_label,
    rows_table,
    settings_table,
)
from core.outputs.report_summary import UNREAD_NOTABLE
from core.schema.documents import Document, documents_by_id

#: Chunk & compare's summary columns, as the page names them: (header, what it reads of a `RunSummary`, which
#: value is best)
CHUNK_COLUMNS: tuple[tuple[str, Callable[[RunSummary], Any], str], ...] = (
    ("chunks", lambda r: r.chunks, ""), ("children", lambda r: r.children, ""),
    ("mean tokens", lambda r: r.mean_tokens, ""), ("unread by embedder", lambda r: r.unread, "min"),
    ("seconds", lambda r: r.seconds, "min"), ("LLM calls", lambda r: r.llm_calls, ""),
    ("dropped text", lambda r: r.dropped, "min"), ("altered chunks", lambda r: r.altered, "min"))
HIT_EXCERPT = 400


def app_settings(services: Any, results: Mapping[str, Any], retrieval: Any, joined: bool) -> dict[str, str]:
    """The settings and versions a report of the app names: ChunkLens, embedder and its long-text policy, CNM
    backend, retrieval, the documents' form and every chunker's identity (what its caches are keyed by)."""
    described = retrieval.describe()
    details = ", ".join(f"{k} {v}" for k, v in described.items() if k not in ("mode", "lexical"))
    out = {"ChunkLens": core.__version__, "embedder": services.embedder.key,
           "long-text policy": services.settings.long_text, "CNM backend": services.settings.cnm_backend,
           "retrieval": described.get("mode", "dense") + (f" ({details})" if details else ""),
           "documents": "joined into one stream" if joined else "separate"}
    for spec, r in results.items():
        if r.run is not None:
            out[f"identity of {spec}"] = r.run.identity
    return out


def _summary(sentences: Sequence[str]) -> str:
    return (f"<section class='summary'><h3>What this shows</h3><p>{escape(' '.join(sentences))}</p></section>")


def _list(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else (names[0] if names else "")


def chunking_sentences(rows: Mapping[str, RunSummary], documents: Sequence[Document]) -> list[str]:
    """What the chunker summary says, from its numbers."""
    chars = sum(len(d.text) for d in documents)
    out = [f"{len(rows)} chunker{'s' if len(rows) != 1 else ''} cut {len(documents)} document"
           f"{'s' if len(documents) != 1 else ''} ({chars:,} characters)."]
    if len(rows) > 1:
        counts = sorted(rows, key=lambda s: rows[s].chunks)
        sizes = sorted(rows, key=lambda s: rows[s].mean_tokens)
        out.append(f"The fewest chunks come from {counts[0]} ({rows[counts[0]].chunks:,}), the most from "
                   f"{counts[-1]} ({rows[counts[-1]].chunks:,}); mean sizes run from "
                   f"{rows[sizes[0]].mean_tokens:g} tokens ({sizes[0]}) to {rows[sizes[-1]].mean_tokens:g} "
                   f"({sizes[-1]}).")
    unread = {s: r.unread for s, r in rows.items()}
    notable = sorted((s for s, v in unread.items() if v >= UNREAD_NOTABLE), key=lambda s: -unread[s])
    if notable:
        out.append("The embedder never reads " + _list([f"{unread[s]:.0%} of {s}'s text" for s in notable])
                   + ": those chunks pass its input limit, so the vector stands for their beginning only, while "
                   "BM25 reads them whole.")
    elif unread:
        out.append(f"Every chunker's chunks fit the embedder's input limit (at most {max(unread.values()):.0%} "
                   "unread).")
    calls = {s: r.llm_calls for s, r in rows.items() if r.llm_calls}
    if calls:
        out.append(_list([f"{s} asked the LLM {n:,} times" for s, n in calls.items()]) + ".")
    return out


def chunking_report_html(rows: Mapping[str, RunSummary], documents: Sequence[Document],
                         settings: Mapping[str, Any], shown: Mapping[str, Sequence[Any]], doc_id: str,
                         generated: str | None = None) -> str:
    """Chunk & compare as a file: the summary table, settings and versions, and the boundary timeline and size
    histogram of `shown` (spec -> chunks) for the document `doc_id`."""
    draw = Figures()
    doc = next(d for d in documents if d.doc_id == doc_id)
    labelled = {plotly_label(s): c for s, c in shown.items()}
    timeline = figures.boundary_timeline(labelled, doc_id, len(doc.text), doc.joins)
    sizes = figures.size_histogram(labelled)
    body = [_summary(chunking_sentences(rows, documents)), "<h3>Settings and versions</h3>", settings_table(settings),
            "<h3>Chunkers</h3>", rows_table(rows, CHUNK_COLUMNS, "unread by embedder: the share of each chunker's "
                                            "embedded text past the embedder's input limit"),
            f"<h3>Chunk boundaries in {escape(doc.title)}</h3>", draw(timeline), draw(sizes)]
    return page_html("ChunkLens: chunking compared", f"{len(rows)} chunkers on {len(documents)} document(s)",
                     body, "the Chunk &amp; compare page", generated)


@dataclass(frozen=True)
class HitRow:
    """One hit of the Query report: its rank and score, where it lies, whether it holds the answer (None: the
    question has no gold), and the start of its text."""

    rank: int
    score: float
    document: str
    characters: str
    pages: str
    relevant: bool | None
    text: str


def hit_rows(answers: Mapping[str, Any], documents: Sequence[Document]) -> dict[str, list[HitRow]]:
    """Each chunker's hits as rows, from `core.workbench.QueryResult`s."""
    by_id = documents_by_id(documents)
    out: dict[str, list[HitRow]] = {}
    for spec, a in answers.items():
        rows = []
        for h in a.hits:
            c = h.chunk
            doc = by_id.get(c.doc_id)
            rows.append(HitRow(h.rank, h.score, c.doc_id, f"{c.start}–{c.end}",
                               doc.page_label(c.start, c.end) if doc else "",
                               a.score.relevant[h.rank - 1] if a.score else None,
                               " ".join(c.text.split())[:HIT_EXCERPT]))
        out[spec] = rows
    return out


def query_sentences(question: str, hits: Mapping[str, Sequence[HitRow]],
                    metrics: Mapping[str, QuestionScore], k: int) -> list[str]:
    """What one question's hits and metrics say, from the numbers."""
    out = [f"{len(hits)} chunkers were asked \u201c{question}\u201d and each returned its top {k}."]
    judged = [s for s, rows in hits.items() if rows and rows[0].relevant is not None]
    if judged:
        first = [s for s in judged if hits[s][0].relevant]
        none = [s for s in judged if not any(r.relevant for r in hits[s])]
        out.append(f"{len(first)} of {len(judged)} put a relevant chunk first"
                   + (f" ({_list(first)})" if first and len(first) < len(judged) else "") + ".")
        if none:
            out.append(f"No relevant chunk in the top {k}: {_list(none)}.")
        mrr = {s: v for s, m in metrics.items() if (v := m.at("mrr", k)) is not None}
        if len(mrr) > 1 and len(set(mrr.values())) > 1:
            best = max(mrr.values())
            out.append(f"Best MRR@{k}: {best:.2f} ({_list([s for s, v in mrr.items() if v == best])}).")
    else:
        out.append("The question has no gold evidence, so the hits are listed, not scored.")
    tops: dict[str, list[str]] = {}
    for s, rows in hits.items():
        if rows:
            tops.setdefault(rows[0].document, []).append(s)
    if len(tops) > 1:
        out.append("The first hits come from " + _list([f"{d} ({len(v)})" for d, v in tops.items()]) + ".")
    elif tops:
        out.append(f"Every chunker's first hit comes from {next(iter(tops))}.")
    return out


def _score_at(metric: Metric, k: int) -> Callable[[QuestionScore], float | None]:
    return lambda score: score.at(metric, k)


def query_report_html(question: str, answers: Mapping[str, Any], documents: Sequence[Document], k: int,
                      settings: Mapping[str, Any], grid_figure: Any, generated: str | None = None) -> str:
    """Query as a file: the question, each chunker's metrics (when it has gold) and hits with their pages, the
    where-from grid, settings and versions."""
    hits = hit_rows(answers, documents)
    metrics = {s: a.score for s, a in answers.items() if a.score}
    body = [f"<p><strong>Question:</strong> {escape(question)}</p>",
            _summary(query_sentences(question, hits, metrics, k)), "<h3>Settings and versions</h3>",
            settings_table(settings)]
    if metrics:
        shown: tuple[Metric, ...] = ("hit", "mrr", "ndcg", "wrong_doc")
        names = [m for m in shown if any(v.at(m, k) is not None for v in metrics.values())]
        body += ["<h3>This question's metrics</h3>",
                 rows_table(metrics, [(f"{m}@{k}", _score_at(m, k), "min" if m == "wrong_doc" else "max")
                                      for m in names])]
    body += ["<h3>Where each chunker's hits come from</h3>", Figures()(grid_figure), "<h3>Hits</h3>"]
    for spec, rows in hits.items():
        error = answers[spec].error
        body.append(f"<h4><code>{escape(spec)}</code></h4>")
        if error:
            body.append(f"<p class='note'>{escape(error)}</p>")
            continue
        cells = "".join(
            f"<tr><td>{r.rank}</td><td>{r.score:.3g}</td><td class='text'>{escape(r.document)}</td>"
            f"<td class='text'>{escape(r.characters)}</td><td class='text'>{escape(r.pages)}</td>"
            f"<td class='text'>{'' if r.relevant is None else 'yes' if r.relevant else 'no'}</td>"
            f"<td class='text'>{escape(r.text)}</td></tr>" for r in rows)
        body.append("<table><thead><tr><th>rank</th><th>score</th><th class='text'>document</th>"
                    "<th class='text'>characters</th><th class='text'>pages</th><th class='text'>relevant</th>"
                    f"<th class='text'>text</th></tr></thead><tbody>{cells}</tbody></table>")
    return page_html("ChunkLens: one question, every chunker", f"{len(answers)} chunkers, top {k}", body,
                     "the Query page", generated)
