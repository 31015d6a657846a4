"""Each chunker's result on the page as soon as it is done, while the others still run: an overall progress bar
(chunkers done of all), the summary table growing a row at a time, a failed chunker's error at once, and (unless
`compact`) the selected document's boundary timeline and the chunk sizes growing a chunker at a time. Drawn inside
a status box; `clear` removes it when the run is over and the page draws its full view."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pandas as pd
import streamlit as st

from components import charts
from components.html import md_escape
from core.schema.documents import Document
from core.workbench import ChunkerResult
from core.workbench.live import RunSoFar


class LiveResults:
    """The run so far (`core.workbench.live.RunSoFar`) drawn in place: `progress` and `add` are `run_chunkers`'
    `progress` and `on_result`, both called from the page's thread."""

    def __init__(self, so_far: RunSoFar, doc: Document | None = None, gold: Sequence[tuple[int, int]] = (),
                 compact: bool = False, after: str = "") -> None:
        self.so_far, self.doc, self.gold, self.compact, self.after = so_far, doc, gold, compact, after
        self._running: str | None = None
        self._box = st.empty()
        with self._box.container():
            self._bar = st.progress(0.0, text=so_far.progress_text())
            self._errors = st.container()
            self._table = st.empty()
            self._timeline = st.empty()
            self._sizes = st.empty()

    def progress(self, name: str, done: int, total: int) -> None:
        """`run_chunkers`' progress: the chunker under way, and the bar counts the chunkers done; "done" when they
        all are (then `after`, what the caller does next). Any other name is a step before the chunkers (the
        guided demo waiting for the sample vectors): shown as it comes, with its own count."""
        if name == "done" or name in self.so_far.specs:
            self._running = None if name == "done" else name
            self._draw_bar()
        else:
            self._bar.progress(min(1.0, done / total) if total else 0.0, text=md_escape(name))

    def add(self, spec: str, result: ChunkerResult) -> None:
        """One chunker done: its error, or its row and figures, on the page at once."""
        self.so_far.add(spec, result)
        self._draw_bar()
        if spec in self.so_far.errors:
            self._errors.error(f"{md_escape(spec)}: {md_escape(self.so_far.errors[spec])}")
            return
        # keyed by the count done: each draw is a new element, and none has the ID the full view's will have
        n = self.so_far.done
        rows = self.so_far.short_rows() if self.compact else self.so_far.rows()
        self._table.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config=_formats(rows),
                              key=f"live-table-{n}")
        if self.compact or self.doc is None:
            return
        runs = self.so_far.chunks
        self._timeline.plotly_chart(charts.boundary_timeline(runs, self.doc.doc_id, len(self.doc.text),
                                                             self.doc.joins, self.gold), width="stretch",
                                    key=f"live-timeline-{n}")
        self._sizes.plotly_chart(charts.size_histogram(runs), width="stretch", key=f"live-sizes-{n}")

    def clear(self) -> None:
        """The run is over: the page's full view takes the place of this one."""
        self._box.empty()

    def _draw_bar(self) -> None:
        so_far = self.so_far
        text = so_far.progress_text(self._running)
        if self.after and so_far.done == so_far.total:
            text += f" · {self.after}"
        self._bar.progress(so_far.done / max(1, so_far.total), text=md_escape(text))


def _formats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares as percents, as the full table shows them."""
    shares = ("unread by embedder", "dropped text", "altered chunks")
    return {c: st.column_config.NumberColumn(format="percent") for c in shares if rows and c in rows[0]}


@contextmanager
def live_status(label: str, so_far: RunSoFar, doc: Document | None = None, gold: Sequence[tuple[int, int]] = (),
                compact: bool = False, after: str = "") -> Iterator[tuple[Any, LiveResults]]:
    """`st.status(label)`, expanded, holding the run's live results; yields the status (to set its end label) and
    the `LiveResults` to pass to `run_chunkers` (`progress=live.progress, on_result=live.add`)."""
    with st.status(label, expanded=True) as status:
        yield status, LiveResults(so_far, doc, gold, compact, after)
