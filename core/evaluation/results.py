"""Typed results: views of a bench report, and a chunk run's summary line.

A bench report: what `python -m core bench` writes (`core.evaluation.bench`) is a JSON contract
other tools script against, extended and never renamed, so it stays one JSON object; pages, components and the
HTML report read it through these views, by attribute and metric name, never by a string key of their own.
`to_json()` gives back exactly the object the view was made from, so a report read, shown and written again
is byte for byte the report it was.

A report read from a file (`python -m core report`, the app's upload) is checked first (`BenchReport.of`): `k`
holds positive cut-offs and every chunker has hit@k and mrr@k at every k; every other field is optional and
reads as None (a number that is not finite, or of the wrong type, too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from core.infra.errors import ChunkLensError

T = TypeVar("T")

#: the metrics a result holds at each cut-off k, as "<metric>@<k>"
Metric = Literal["hit", "mrr", "ndcg", "dcg", "recall", "span_recall", "span_precision", "span_iou", "wrong_doc",
                 "judged"]
#: the stages a result times, in the order a run goes through them (a report may add others)
STAGES = ("chunk", "embed", "index", "query", "lexical")


def number_or_none(value: Any) -> float | None:
    """A finite int or float as a float; None for anything else (a bool, a string, NaN, a missing value)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_true(value: Any) -> bool:
    return value is True


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _View(Protocol):
    """What a `_Field` reads from: a view over one JSON object."""

    @property
    def raw(self) -> Mapping[str, object]: ...


class _Field(Generic[T]):
    """A field of the JSON object a view wraps, read by the attribute's own name through `convert` (which gives
    None, or a default, for a value of the wrong type)."""

    def __init__(self, convert: Callable[[Any], T]) -> None:
        self.convert = convert

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Field[T]: ...
    @overload
    def __get__(self, obj: _View, owner: type | None = None) -> T: ...

    def __get__(self, obj: _View | None, owner: type | None = None) -> T | _Field[T]:
        if obj is None:
            return self
        return self.convert(obj.raw.get(self.key))


@dataclass(frozen=True)
class ChunkerReport:
    """One chunker's result in a bench report (`results[spec]`)."""

    spec: str
    raw: Mapping[str, Any]

    def at(self, metric: Metric, k: int) -> float | None:
        """The metric at cut-off k ("hit@5"), None when the report has no number there."""
        return number_or_none(self.raw.get(f"{metric}@{k}"))

    def interval(self, metric: Metric, k: int) -> tuple[float, float] | None:
        """The metric's 95 % bootstrap interval at k, when the report has one."""
        bounds = self.raw.get(f"{metric}@{k}_ci95")
        if not isinstance(bounds, list) or len(bounds) != 2:
            return None
        low, high = number_or_none(bounds[0]), number_or_none(bounds[1])
        return None if low is None or high is None else (low, high)

    #: the fields read as they are written (None where a report lacks one or holds another type there)
    config = _Field(_text_or_none)
    n_chunks = _Field(_int_or_none)
    n_children = _Field(_int_or_none)
    mean_chunk_tokens = _Field(number_or_none)
    llm = _Field(_text_or_none)  # the LLM a chunker used (CHOP's CNM backend, lumber's chat model)
    scorer = _Field(_text_or_none)
    unread_share = _Field(number_or_none)
    answer_f1 = _Field(number_or_none)
    answer_rouge_l = _Field(number_or_none)
    answers_scored = _Field(_int_or_none)
    judged_questions = _Field(_int_or_none)

    def number(self, key: str) -> float | None:
        """Any numeric field by its key (a method's report field: `core.evaluation.fields`), None when the result
        has no finite number there."""
        return number_or_none(self.raw.get(key))

    @property
    def llm_calls(self) -> int:
        return _int_or_none(self.raw.get("llm_calls")) or 0

    @property
    def seconds(self) -> dict[str, float]:
        """Seconds per stage, only the stages with a number."""
        stages = self.raw.get("seconds")
        if not isinstance(stages, Mapping):
            return {}
        return {str(s): v for s, value in stages.items() if (v := number_or_none(value)) is not None}

    def flat_numbers(self) -> dict[str, float | int]:
        """Every number of the result in one flat row, for a spreadsheet: the numeric fields as they are, each
        stage's seconds as `seconds_<stage>`, and each 95 % interval as `<metric>_ci95_low` / `_high`."""
        row: dict[str, float | int] = {k: v for k, v in self.raw.items()
                                       if isinstance(v, int | float) and not isinstance(v, bool)}
        row.update({f"seconds_{s}": v for s, v in self.seconds.items()})
        for key, bounds in self.raw.items():
            if key.endswith("_ci95") and isinstance(bounds, list) and len(bounds) == 2:
                row[f"{key}_low"], row[f"{key}_high"] = bounds
        return row

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class BenchReport:
    """One bench report (one dataset): its settings and every chunker's result, in the order they ran."""

    raw: Mapping[str, Any]

    @classmethod
    def of(cls, data: Any, source: str = "report") -> BenchReport:
        """The view of `data`, or a ChunkLensError naming `source` when it is not a bench report (see the module's
        doc)."""
        check_report(data, source)
        return cls(data)

    @property
    def ks(self) -> list[int]:
        return list(self.raw["k"])

    @cached_property
    def results(self) -> dict[str, ChunkerReport]:
        return {str(spec): ChunkerReport(str(spec), r) for spec, r in self.raw["results"].items()}

    #: the settings read as they are written (None, or False, where a report lacks one)
    dataset = _Field(_text_or_none)
    embedder = _Field(_text_or_none)
    n_documents = _Field(_int_or_none)
    n_questions = _Field(_int_or_none)
    joined = _Field(_is_true)  # the documents were joined into one stream
    qualify_queries = _Field(_is_true)  # each question was prefixed with its product

    @property
    def qids(self) -> list[str] | None:
        qids = self.raw.get("qids")
        return [str(q) for q in qids] if isinstance(qids, list) else None

    @property
    def retrieval(self) -> Mapping[str, Any]:
        """The search every chunker got ({"mode": "hybrid", "fusion": "rrf", ...}); {} when the report does not
        say (reports from before retrieval modes, or a hand-written one, searched dense)."""
        retrieval = self.raw.get("retrieval")
        return retrieval if isinstance(retrieval, Mapping) else {}

    @property
    def retrieval_in_words(self) -> str | None:
        """How a report from before retrieval modes said its search ("dense"); None for a newer report."""
        retrieval = self.raw.get("retrieval")
        return None if retrieval is None or isinstance(retrieval, Mapping) else str(retrieval)

    def labelled(self, label: Callable[[str], str]) -> BenchReport:
        """The same report with every chunker spec, in its results and its paired comparisons, passed through
        `label` (the numbers untouched): for a renderer that must escape the names."""
        raw = dict(self.raw)
        raw["results"] = {label(spec): r.raw for spec, r in self.results.items()}
        pairs = raw.get("pairs")
        if isinstance(pairs, list):
            raw["pairs"] = [{**p, "a": label(p["a"]), "b": label(p["b"])} for p in pairs]
        return BenchReport(raw)

    def stages(self) -> list[str]:
        """The stages any chunker was timed on, in run order (others after, sorted)."""
        seen = {s for r in self.results.values() for s in r.seconds}
        return [s for s in STAGES if s in seen] + sorted(seen - set(STAGES))

    def values(self, metric: Metric, k: int) -> dict[str, float]:
        """The metric at k of every chunker, or {} unless every chunker has a number there."""
        out = {spec: r.at(metric, k) for spec, r in self.results.items()}
        return {s: v for s, v in out.items() if v is not None} if all(v is not None for v in out.values()) else {}

    def has(self, metric: Metric, k: int) -> bool:
        """Whether any chunker has a number for the metric at k."""
        return any(r.at(metric, k) is not None for r in self.results.values())

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class RunSummary:
    """One chunker's line in Chunk & compare's summary (and its HTML report)."""

    chunker: str
    chunks: int
    children: int
    mean_tokens: float
    unread: float  # the share of the embedded text past the embedder's input limit (`unread_share_of`)
    seconds: float
    cached: bool
    llm_calls: int
    #: the share of the documents' non-space characters no chunk covers (`core.evaluation.fidelity`)
    dropped: float | None = None
    #: the share of a peer library's chunks whose text differs from their span beyond whitespace; None for ours
    altered: float | None = None

    def row(self) -> dict[str, Any]:
        """The line as the page's table shows it, column by column."""
        return {"chunker": self.chunker, "chunks": self.chunks, "children": self.children,
                "mean tokens": self.mean_tokens, "unread by embedder": self.unread, "seconds": self.seconds,
                "cached": self.cached, "LLM calls": self.llm_calls, "dropped text": self.dropped,
                "altered chunks": self.altered}


def check_report(report: Any, source: str = "report") -> None:
    """A ChunkLensError naming `source` unless `report` is a bench report the views can read: `k` (positive
    integers), `results` with hit@k and mrr@k of every chunker at every k. Everything else is optional."""
    if not isinstance(report, Mapping) or "results" not in report or "k" not in report:
        raise ChunkLensError(f"{source}: not a bench report (no 'results' and 'k')")
    ks, results = report["k"], report["results"]
    if (not isinstance(ks, list) or not ks
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks)):
        raise ChunkLensError(f"{source}: not a bench report ('k' is not a list of cut-offs)")
    if not isinstance(results, Mapping) or not results:
        raise ChunkLensError(f"{source}: not a bench report (no chunker results)")
    for spec, r in results.items():
        if not isinstance(r, Mapping):
            raise ChunkLensError(f"{source}: not a bench report (the result of '{spec}' is not an object)")
        missing = [f"{m}@{k}" for m in ("hit", "mrr") for k in ks if number_or_none(r.get(f"{m}@{k}")) is None]
        if missing:
            raise ChunkLensError(f"{source}: not a bench report ('{spec}' has no {', '.join(missing[:3])})")
