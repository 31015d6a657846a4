"""Report fields: what a method adds to every chunker's result in a bench report (CHOP's CNM accuracy and
boundary scores, LGMGC's pass counts), and how each of them shows in a table. A method registers a function here
with the columns it shows; the bench calls every function, and every table (the command line's, RESULTS.md's, the
guided demo's, the HTML report's) draws those columns from here, so no generic table names a method's key."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, overload

from core.infra.jsonio import JsonObject, JsonValue
from core.schema.documents import Document
from core.schema.runs import ChunkedRun

#: report_fields(documents, run) -> extra fields of one chunker's result in a bench report (JSON values)
ReportFields = Callable[[Sequence[Document], ChunkedRun], Mapping[str, JsonValue]]
#: which way a column is better ("" for a cost or a count that is neither)
Better = Literal["max", "min", ""]
#: where a column sits among the generic ones: a method's cost (after the wall time), its quality (after the LLM
#: use), or what a chunker did to the text (last)
Place = Literal["cost", "quality", "fidelity"]
#: one cell of a table: a count, a share, a name, a flag, or empty
Cell = str | int | float | bool | None


class Result(Protocol):
    """What a column reads a field from: one chunker's result, typed (`core.evaluation.results.ChunkerReport`) or
    as its JSON object (a dict), either by `get(key)`."""

    def get(self, key: str, /) -> object: ...


@dataclass(frozen=True)
class FieldShow:
    """How one report field shows: its column heading in RESULTS.md and the reports, which way is better, where
    it sits, and in which tables. `headline` fields are in the compact tables too (the guided demo's, the HTML
    report's chunker table, the live rows of a run); `command_line` ones in `core bench`'s printed table, headed by
    the key itself. `shown_when` decides whether a result calls for the column (default: it has a value). Within
    a place, columns go by `rank`, then by when they were registered (which follows import order)."""

    key: str
    label: str
    better: Better = ""
    place: Place = "quality"
    rank: int = 0
    headline: bool = False
    command_line: bool = True
    markdown: bool = True
    shown_when: Callable[[Result], bool] | None = None

    def value(self, result: Result) -> object:
        return result.get(self.key)

    def wanted_by(self, result: Result) -> bool:
        return self.shown_when(result) if self.shown_when else result.get(self.key) is not None


@dataclass(frozen=True)
class _FieldSet:
    compute: ReportFields
    shows: tuple[FieldShow, ...]


_FIELD_SETS: list[_FieldSet] = []


@overload
def register_report_fields(fn: ReportFields, *, shows: Sequence[FieldShow] = ()) -> ReportFields: ...
@overload
def register_report_fields(fn: None = None, *,
                           shows: Sequence[FieldShow] = ()) -> Callable[[ReportFields], ReportFields]: ...


def register_report_fields(fn: ReportFields | None = None, *,
                           shows: Sequence[FieldShow] = ()) -> ReportFields | Callable[[ReportFields], ReportFields]:
    """Decorator for a method's report fields, bare or with the columns they show (`shows`). Every bench result
    carries them, for every chunker (None or 0 where they do not apply), so the report's keys do not depend on
    which chunkers ran."""
    def add(f: ReportFields) -> ReportFields:
        if all(s.compute is not f for s in _FIELD_SETS):
            _FIELD_SETS.append(_FieldSet(f, tuple(shows)))
        return f
    return add(fn) if fn is not None else add


def report_fields(docs: Sequence[Document], run: ChunkedRun) -> JsonObject:
    """Every registered method's report fields for one chunk run."""
    out: JsonObject = {}
    for s in _FIELD_SETS:
        out.update(s.compute(docs, run))
    return out


def headline_fields(docs: Sequence[Document], run: ChunkedRun) -> dict[str, Cell]:
    """The headline fields of one chunk run by label (boundary F1), computing only the methods that have one: for
    a table drawn before the run is scored. A table cell holds one value: a list or an object shows as its text."""
    out: dict[str, Cell] = {}
    for s in _FIELD_SETS:
        if any(show.headline for show in s.shows):
            values = s.compute(docs, run)
            out.update({show.label: _cell(values.get(show.key)) for show in s.shows if show.headline})
    return out


def _cell(value: JsonValue) -> Cell:
    return str(value) if isinstance(value, list | dict) else value


def shown_fields(place: Place | None = None) -> list[FieldShow]:
    """Every registered column by place and rank; only those of `place` when given."""
    places: tuple[Place, ...] = ("cost", "quality", "fidelity")
    shows = [show for s in _FIELD_SETS for show in s.shows if place is None or show.place == place]
    return sorted(shows, key=lambda show: (places.index(show.place), show.rank))
