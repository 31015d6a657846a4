"""A run of chunkers as it goes: what the chunkers done so far have given (their summary lines, chunks and errors)
and how many of the run are done, for a page that shows each chunker as soon as it is done (`run_chunkers`'
`on_result`) instead of after the last one. Everything here is computed once per chunker and cached on its result
(`run_summaries`), so the page's full view after the run costs no more."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.evaluation.fields import headline_fields, shown_fields
from core.evaluation.results import RunSummary
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.questions import Question
from core.services import Services
from core.workbench.corpus import make_corpus, sample_folder
from core.workbench.runs import ChunkerResult, run_summaries

#: one cell of a run's summary table: a count, a share, seconds, a name, whether it was cached, or empty
Cell = str | int | float | bool | None
#: one row of a run's summary table, column by column
Row = dict[str, Cell]


def short_columns() -> tuple[str, ...]:
    """The columns of a short row (the guided demo's, whose own table comes after the questions are scored): the
    summary's size columns, the methods' headline fields (CHOP's boundary F1), the seconds."""
    headline = tuple(show.label for show in shown_fields() if show.headline)
    return ("chunker", "chunks", "mean tokens", *headline, "seconds", "cached")


@dataclass
class RunSoFar:
    """The chunkers of one run that are done, in the order they finished. `documents` are the run's (for the
    share of text each chunker dropped, and CHOP's boundary F1 where they are a joined stream); `specs` the run's
    chunkers, for the done/total count."""

    services: Services
    specs: Sequence[str]
    documents: Sequence[Document] = ()
    summaries: dict[str, RunSummary] = field(default_factory=dict)
    chunks: dict[str, list[Chunk]] = field(default_factory=dict)  # spec -> the chunks retrieval returns (parents)
    errors: dict[str, str] = field(default_factory=dict)
    #: spec -> the methods' headline fields by label (CHOP's boundary F1 where the documents are a joined stream)
    headline: dict[str, Row] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.specs)

    @property
    def done(self) -> int:
        return len(self.summaries) + len(self.errors)

    def add(self, spec: str, result: ChunkerResult) -> None:
        """One chunker done: its summary line, chunks and headline fields, or its error."""
        if not result.ok:
            self.errors[spec] = result.error or "no result"
            return
        assert result.run is not None
        self.summaries.update(run_summaries(self.services, {spec: result}, self.documents))
        self.chunks[spec] = result.run.parents()
        self.headline[spec] = headline_fields(self.documents, result.run)

    def rows(self) -> list[Row]:
        """The summary table's rows of the chunkers done, as the full table shows them (`RunSummary.row`)."""
        return [line.row() for line in self.summaries.values()]

    def short_rows(self) -> list[Row]:
        """Chunks, mean size, the headline fields (CHOP's boundary F1: its decisions against the true joins, empty
        for the others) and seconds of each chunker done: what is known of it before the questions are scored."""
        columns = short_columns()
        rows = []
        for spec, line in self.summaries.items():
            row = {**line.row(), **self.headline.get(spec, {})}
            rows.append({c: row.get(c) for c in columns})
        return rows

    def progress_text(self, running: str | None = None) -> str:
        """'3/8 chunkers done', with the chunker under way and how many failed."""
        failed = f", {len(self.errors)} failed" if self.errors else ""
        now = f" · running {running}" if running and self.done < self.total else ""
        return f"{self.done}/{self.total} chunkers done{failed}{now}"


def gold_spans(questions: Sequence[Question], doc_id: str) -> list[tuple[int, int]]:
    """The (start, end) of every gold reference into `doc_id`: the shaded evidence of its boundary timeline."""
    return [(r.start, r.end) for q in questions for r in q.references if r.doc_id == doc_id]


def sample_stream() -> list[Document]:
    """The documents the guided demo chunks (`core.workbench.demo.guided_demo`): the sample manuals joined into
    one stream. What its chunkers' boundary F1 is scored against while the demo runs."""
    from core.ingest.datasets import load_dataset

    dataset = load_dataset(sample_folder())
    return make_corpus(dataset.documents, dataset, join=True).documents
