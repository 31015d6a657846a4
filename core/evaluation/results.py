"""Typed results: a bench report and each chunker's result in it, and a chunk run's summary line.

A bench report is what `python -m core bench` writes (`core.evaluation.bench`): a JSON contract other tools script
against, extended and never renamed. `BenchReport` and `ChunkerReport` are that contract as frozen dataclasses: the
keys every report has are typed fields, the metrics are held by "<metric>@<k>" (`at`, `interval`), and every other
key (a method's report fields, `core.evaluation.fields`; a key of an older or a newer report; a value of the wrong
type for its field) is kept as written in `extra`, so nothing is lost. `to_json()` writes the keys in the order the
report was read in (`order`), so a report read, shown and written again is byte for byte the report it was; a
report built by the bench writes them in the contract's order (its fields' order, then `extra`'s).

A report read from a file (`python -m core report`, the app's upload) is checked first (`BenchReport.from_json`):
`k` holds positive cut-offs, every chunker has hit@k and mrr@k at every k, and every value is JSON; anything else
is a ChunkLensError of one line. Every other field is optional and reads as None (or its empty value) when a
report lacks it or holds a value of another type there.
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, TypedDict, TypeVar

from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject, JsonValue

T = TypeVar("T")

#: the metrics a result holds at each cut-off k, as "<metric>@<k>"
Metric = Literal["hit", "mrr", "ndcg", "dcg", "recall", "span_recall", "span_precision", "span_iou", "wrong_doc",
                 "judged"]
#: the stages a result times, in the order a run goes through them (a report may add others)
STAGES = ("chunk", "embed", "index", "query", "lexical")

_METRIC_NAME = frozenset(string.ascii_lowercase + "_")


def _is_metric_at(key: str) -> bool:
    """Whether `key` is a metric at a cut-off ("hit@10", "span_recall_std@1", "judged@5"). Plain string tests, not a
    pattern: searched for, `[a-z_]+@[0-9]+` is quadratic on a long run of letters, and every compiled pattern of core
    is held to linear time on hostile text (tests/unit/test_linear_patterns.py)."""
    name, at, k = key.rpartition("@")
    return bool(at and name and k) and set(name) <= _METRIC_NAME and k.isascii() and k.isdigit()


_CI95 = "_ci95"


def number_or_none(value: object) -> float | None:
    """A finite int or float as a float; None for anything else (a bool, a string, NaN, a missing value)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class _Miss:
    """What a reader gives for a value of the wrong type: the field keeps its default, the value goes to `extra`."""


_MISS = _Miss()
Read = Callable[[object], T | _Miss]


def _number(value: object) -> float | _Miss:
    """A finite number as it is written (an int stays an int, so it is written back as one)."""
    if isinstance(value, int | float) and number_or_none(value) is not None:
        return value
    return _MISS


def _int(value: object) -> int | _Miss:
    return value if isinstance(value, int) and not isinstance(value, bool) else _MISS


def _text(value: object) -> str | _Miss:
    return value if isinstance(value, str) else _MISS


def _flag(value: object) -> bool | _Miss:
    return value if isinstance(value, bool) else _MISS


def _or_none(read: Read[T]) -> Read[T | None]:
    """`read`, with null read as None."""
    return lambda value: None if value is None else read(value)


def _map_of(read: Read[T]) -> Read[dict[str, T]]:
    """A JSON object whose every value `read` accepts."""
    def of(value: object) -> dict[str, T] | _Miss:
        if not isinstance(value, dict):
            return _MISS
        out: dict[str, T] = {}
        for key, item in value.items():
            got = read(item)
            if isinstance(got, _Miss) or not isinstance(key, str):
                return _MISS
            out[key] = got
        return out
    return of


def _list_of(read: Read[T]) -> Read[list[T]]:
    """A JSON array whose every item `read` accepts."""
    def of(value: object) -> list[T] | _Miss:
        if not isinstance(value, list):
            return _MISS
        out: list[T] = []
        for item in value:
            got = read(item)
            if isinstance(got, _Miss):
                return _MISS
            out.append(got)
        return out
    return of


def _interval(value: object) -> tuple[float, float] | _Miss:
    if not isinstance(value, list) or len(value) != 2:
        return _MISS
    low, high = _number(value[0]), _number(value[1])
    return _MISS if isinstance(low, _Miss) or isinstance(high, _Miss) else (low, high)


def _is_json(value: object) -> bool:
    """Whether `value` is JSON all the way down (walked without recursion: a report nested a thousand levels deep
    is refused, not a RecursionError)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, str | int | float | bool)):
            return False
    return True


def _json_object(value: object) -> JsonObject | _Miss:
    return value if isinstance(value, dict) and _is_json(value) else _MISS


def _json(value: object) -> JsonValue | _Miss:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list) and _is_json(value):
        return value
    return _json_object(value)


class _Reader:
    """The keys of one JSON object taken by the typed fields one by one; what no field took (or a field could not
    read) is `rest()`, as written. `source` and `of` name the object in an error ("upload", " of 'chop'")."""

    def __init__(self, data: Mapping[str, object], source: str, of: str = "") -> None:
        self.data, self.source, self.of, self.taken = data, source, of, set[str]()

    def take(self, key: str, read: Read[T], default: T) -> T:
        if key not in self.data:
            return default
        got = read(self.data[key])
        if isinstance(got, _Miss):
            return default
        self.taken.add(key)
        return got

    def take_if(self, wanted: Callable[[str], bool], read: Read[T]) -> dict[str, T]:
        """Every key `wanted` picks whose value `read` accepts."""
        out: dict[str, T] = {}
        for key, value in self.data.items():
            if key not in self.taken and wanted(key) and not isinstance(got := read(value), _Miss):
                out[key] = got
                self.taken.add(key)
        return out

    def rest(self) -> JsonObject:
        out: JsonObject = {}
        for key, value in self.data.items():
            if key not in self.taken:
                got = _json(value)
                if isinstance(got, _Miss):
                    raise ChunkLensError(f"{self.source}: not a bench report (the value of '{key}'{self.of} is not "
                                         "JSON)")
                out[key] = got
        return out


def _ordered(fields: JsonObject, present: Callable[[str], bool], order: tuple[str, ...],
             extra: JsonObject) -> JsonObject:
    """The JSON object of a report: its keys in `order` when it was read from one, else its typed fields that are
    `present` in their declared order, then `extra`'s keys."""
    every = {**fields, **extra}
    keys = order if order else (*(k for k in fields if present(k)), *extra)
    return {key: every[key] for key in keys if key in every}


@dataclass(frozen=True)
class ChunkerReport:
    """One chunker's result in a bench report (`results[spec]`)."""

    spec: str
    #: the metric means at each cut-off by "<metric>@<k>" ("hit@5", "span_recall_std@1", "judged@10")
    scores: dict[str, float] = field(default_factory=dict)
    #: each metric's 95 % bootstrap interval by "<key>_ci95" ("hit@5_ci95", "span_precision_omega_ci95")
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: every per-question value of every metric, in the order of the report's `qids`
    per_question: dict[str, list[float]] = field(default_factory=dict)
    n_chunks: int | None = None
    n_children: int | None = None
    mean_chunk_tokens: float | None = None
    config: str | None = None  # the chunker's spec as it ran, every parameter named
    llm: str | None = None  # the LLM a chunker used (CHOP's CNM backend, lumber's chat model)
    llm_calls: int = 0
    llm_tokens_in: int = 0
    llm_tokens_out: int = 0
    scorer: str | None = None  # the scoring model of LGMGC's chunkers
    mean_parent_words: float | None = None
    unread_share: float | None = None  # the share of the embedded text past the embedder's input limit
    #: [qid, gold source, top-1 source] per question (`core.evaluation.collisions`)
    top1_sources: list[list[str | None]] | None = None
    #: what the chunker's retrieval policy did with the questions, counted ({"filter": 48})
    retrieval_applied: dict[str, int] | None = None
    judged_questions: int | None = None
    answer_f1: float | None = None
    answer_rouge_l: float | None = None
    answers_scored: int | None = None
    answer_errors: int | None = None
    answer_calls: int | None = None
    answer_tokens_in: int | None = None
    answer_tokens_out: int | None = None
    answer_seconds: float | None = None
    answer_k: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # per stage (`STAGES`)
    cached: dict[str, bool] | None = None  # which stages were read from a cache
    scores_cached: bool | None = None  # the scores were read from this process's memo (`bench._memo_get`)
    vectors_computed: int | None = None
    #: every other key as written: a method's report fields, a key of another report version, a wrong-typed value
    extra: JsonObject = field(default_factory=dict)
    #: the keys in the order the report was read in; () for a result built here (the contract's order)
    order: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_json(cls, spec: str, data: Mapping[str, object], source: str = "report") -> ChunkerReport:
        """The typed result of `data` (one entry of a report's `results`)."""
        read = _Reader(data, source, f" of '{spec}'")
        num, opt_int, opt_text = _or_none(_number), _or_none(_int), _or_none(_text)
        return cls(
            spec=spec,
            scores=read.take_if(_is_metric_at, _number),
            intervals=read.take_if(lambda key: key.endswith(_CI95), _interval),
            per_question=read.take("per_question", _map_of(_list_of(_number)), {}),
            n_chunks=read.take("n_chunks", opt_int, None),
            n_children=read.take("n_children", opt_int, None),
            mean_chunk_tokens=read.take("mean_chunk_tokens", num, None),
            config=read.take("config", opt_text, None),
            llm=read.take("llm", opt_text, None),
            llm_calls=read.take("llm_calls", _int, 0),
            llm_tokens_in=read.take("llm_tokens_in", _int, 0),
            llm_tokens_out=read.take("llm_tokens_out", _int, 0),
            scorer=read.take("scorer", opt_text, None),
            mean_parent_words=read.take("mean_parent_words", num, None),
            unread_share=read.take("unread_share", num, None),
            top1_sources=read.take("top1_sources", _or_none(_list_of(_list_of(_or_none(_text)))), None),
            retrieval_applied=read.take("retrieval_applied", _or_none(_map_of(_int)), None),
            judged_questions=read.take("judged_questions", opt_int, None),
            answer_f1=read.take("answer_f1", num, None),
            answer_rouge_l=read.take("answer_rouge_l", num, None),
            answers_scored=read.take("answers_scored", opt_int, None),
            answer_errors=read.take("answer_errors", opt_int, None),
            answer_calls=read.take("answer_calls", opt_int, None),
            answer_tokens_in=read.take("answer_tokens_in", opt_int, None),
            answer_tokens_out=read.take("answer_tokens_out", opt_int, None),
            answer_seconds=read.take("answer_seconds", num, None),
            answer_k=read.take("answer_k", opt_int, None),
            seconds=read.take("seconds", _map_of(_number), {}),
            cached=read.take("cached", _or_none(_map_of(_flag)), None),
            scores_cached=read.take("scores_cached", _or_none(_flag), None),
            vectors_computed=read.take("vectors_computed", opt_int, None),
            extra=read.rest(),  # last: what no field above took
            order=tuple(data),
        )

    @cached_property
    def _fields_json(self) -> JsonObject:
        """The typed fields as JSON, in the contract's order (the metrics, their intervals, then the rest)."""
        fields: JsonObject = {**self.scores, **{key: list(bounds) for key, bounds in self.intervals.items()},
                              "per_question": {m: list(v) for m, v in self.per_question.items()}}
        for f in dataclasses.fields(self):
            if f.name not in ("spec", "scores", "intervals", "per_question", "extra", "order"):
                fields[f.name] = _as_json(getattr(self, f.name))
        return fields

    def to_json(self) -> JsonObject:
        """The result as the report writes it (see the module's doc for the order of its keys)."""
        return _ordered(self._fields_json, lambda key: self._fields_json[key] is not None, self.order, self.extra)

    def get(self, key: str) -> JsonValue:
        """A field by its key as the report writes it (a method's field: `core.evaluation.fields`); None when the
        result has none."""
        if key in self.extra:
            return self.extra[key]
        if self.order and key not in self.order:
            return None
        return self._fields_json.get(key)

    def holds(self, key: str) -> bool:
        """Whether the result writes `key` (null or not)."""
        return key in self.order if self.order else key in self.extra or self._fields_json.get(key) is not None

    def at(self, metric: Metric, k: int) -> float | None:
        """The metric at cut-off k ("hit@5"), None when the report has no number there."""
        return self.scores.get(f"{metric}@{k}")

    def interval(self, metric: Metric, k: int) -> tuple[float, float] | None:
        """The metric's 95 % bootstrap interval at k, when the report has one."""
        return self.intervals.get(f"{metric}@{k}{_CI95}")

    def number(self, key: str) -> float | None:
        """A numeric field by its key (a method's report field: `core.evaluation.fields`), None when the result
        has no finite number there."""
        return number_or_none(self.get(key))

    def flat_numbers(self) -> dict[str, float | int]:
        """Every number of the result in one flat row, for a spreadsheet: the numeric fields as they are, each
        stage's seconds as `seconds_<stage>`, and each 95 % interval as `<metric>_ci95_low` / `_high`."""
        written = self.to_json()
        row: dict[str, float | int] = {k: v for k, v in written.items()
                                       if isinstance(v, int | float) and not isinstance(v, bool)}
        row.update({f"seconds_{s}": v for s, v in self.seconds.items()})
        for key in written:
            if key in self.intervals:
                row[f"{key}_low"], row[f"{key}_high"] = self.intervals[key]
        return row

    def with_run(self, seconds: dict[str, float], cached: dict[str, bool], scores_cached: bool,
                 vectors_computed: int) -> ChunkerReport:
        """The result with what this particular run cost: its seconds per stage, what it read from the caches."""
        keys = ("seconds", "cached", "scores_cached", "vectors_computed")
        return dataclasses.replace(self, seconds=seconds, cached=cached, scores_cached=scores_cached,
                                   vectors_computed=vectors_computed, **self._setting(keys))

    def with_llm_use(self, calls: int = 0, tokens_in: int = 0, tokens_out: int = 0) -> ChunkerReport:
        """The result with LLM use this process did not see added to its counts (requests an executor's workers
        sent while chunking: `core.evaluation.prefetch`)."""
        return dataclasses.replace(self, llm_calls=self.llm_calls + calls, llm_tokens_in=self.llm_tokens_in + tokens_in,
                                   llm_tokens_out=self.llm_tokens_out + tokens_out,
                                   **self._setting(("llm_calls", "llm_tokens_in", "llm_tokens_out")))

    def _setting(self, keys: tuple[str, ...]) -> _Place:
        """Where typed fields being set go: out of `extra` (a wrong-typed value they replace), and a key the result
        was read without last, as the bench adds it."""
        order = (*self.order, *(k for k in keys if k not in self.order)) if self.order else ()
        return {"extra": {k: v for k, v in self.extra.items() if k not in keys}, "order": order}


class _Place(TypedDict):
    extra: JsonObject
    order: tuple[str, ...]


def _as_json(value: object) -> JsonValue:
    """A typed field's value as JSON: tuples as lists, containers copied."""
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"not JSON: {type(value).__name__}")


@dataclass(frozen=True)
class BenchReport:
    """One bench report (one dataset): its settings and every chunker's result, in the order they ran."""

    dataset: str | None = None
    embedder: str | None = None
    n_documents: int | None = None
    n_questions: int | None = None
    k: list[int] = field(default_factory=list)  # the cut-offs (`ks`)
    protocol: str | None = None  # "chroma": Chroma's evaluation beside ours (`bench --protocol chroma`)
    evidence_cap: int | None = None
    qualify_queries: bool = False  # each question was prefixed with its product
    joined: bool = False  # the documents were joined into one stream
    store: str | None = None
    #: the search every chunker got ({"mode": "hybrid", "fusion": "rrf", ...}); {} when the report does not say
    retrieval: JsonObject = field(default_factory=dict)
    peer_versions: dict[str, str | None] | None = None  # each peer library's version (None: not installed)
    results: dict[str, ChunkerReport] = field(default_factory=dict)
    cnm_examples: list[str] | None = None  # the documents whose hand-corrected tags CHOP learned from
    qids: list[str] | None = None
    pairs: list[JsonObject] | None = None  # the paired tests (`core.evaluation.significance`)
    #: every other key as written (a capped set's `question_cap`, the executor's figures, a newer report's keys)
    extra: JsonObject = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), repr=False)  # as in ChunkerReport

    @classmethod
    def of(cls, data: object, source: str = "report") -> BenchReport:
        """`data` as a typed report: itself when it is one, else read by `from_json`."""
        return data if isinstance(data, BenchReport) else cls.from_json(data, source)

    @classmethod
    def from_json(cls, data: object, source: str = "report") -> BenchReport:
        """The typed report of a JSON value, or a ChunkLensError naming `source` when it is not a bench report (see
        the module's doc)."""
        check_report(data, source)
        if not isinstance(data, Mapping) or not isinstance(data["results"], Mapping):  # what check_report checked
            raise ChunkLensError(f"{source}: not a bench report")
        read = _Reader(data, source)
        opt_int, opt_text = _or_none(_int), _or_none(_text)
        results = data["results"]
        return cls(
            dataset=read.take("dataset", opt_text, None),
            embedder=read.take("embedder", opt_text, None),
            n_documents=read.take("n_documents", opt_int, None),
            n_questions=read.take("n_questions", opt_int, None),
            k=read.take("k", _list_of(_int), []),
            protocol=read.take("protocol", opt_text, None),
            evidence_cap=read.take("evidence_cap", opt_int, None),
            qualify_queries=read.take("qualify_queries", _flag, False),
            joined=read.take("joined", _flag, False),
            store=read.take("store", opt_text, None),
            retrieval=read.take("retrieval", _json_object, {}),
            peer_versions=read.take("peer_versions", _or_none(_map_of(_or_none(_text))), None),
            results=read.take("results", lambda _: {str(spec): ChunkerReport.from_json(str(spec), r, source)
                                                    for spec, r in results.items()}, {}),
            cnm_examples=read.take("cnm_examples", _or_none(_list_of(_text)), None),
            qids=read.take("qids", _or_none(_list_of(_text)), None),
            pairs=read.take("pairs", _or_none(_list_of(_json_object)), None),
            extra=read.rest(),  # last: what no field above took
            order=tuple(data),
        )

    def to_json(self) -> JsonObject:
        """The report as the bench writes it (see the module's doc for the order of its keys)."""
        fields: JsonObject = {}
        for f in dataclasses.fields(self):
            if f.name == "results":
                fields["results"] = {spec: r.to_json() for spec, r in self.results.items()}
            elif f.name not in ("extra", "order"):
                fields[f.name] = _as_json(getattr(self, f.name))
        return _ordered(fields, lambda key: getattr(self, key) is not None, self.order, self.extra)

    def adding(self, key: str, value: JsonValue) -> BenchReport:
        """The report with one more key of its own (a capped set's `question_cap`, a sample's `question_sample`),
        written after the others."""
        if key in {f.name for f in dataclasses.fields(self)}:
            raise ValueError(f"'{key}' is a typed field of a bench report")
        order = (*self.order, key) if self.order and key not in self.order else self.order
        return dataclasses.replace(self, extra={**self.extra, key: value}, order=order)

    def with_llm_use(self, used: Mapping[str, Mapping[str, int]]) -> BenchReport:
        """Each chunker's LLM counts with the requests this process did not see added ({spec: {"calls": n,
        "tokens_in": n, "tokens_out": n}}: `core.evaluation.prefetch`)."""
        results = {spec: r.with_llm_use(**used[spec]) if spec in used else r for spec, r in self.results.items()}
        return dataclasses.replace(self, results=results)

    def without_sources(self) -> BenchReport:
        """The report without each result's per-question top-1 sources (the bulk of a report), as a study that does
        not read them writes it."""
        return dataclasses.replace(self, results={spec: dataclasses.replace(
            r, top1_sources=None, extra={k: v for k, v in r.extra.items() if k != "top1_sources"},
            order=tuple(k for k in r.order if k != "top1_sources")) for spec, r in self.results.items()})

    @property
    def ks(self) -> list[int]:
        return list(self.k)

    @property
    def retrieval_in_words(self) -> str | None:
        """How a report from before retrieval modes said its search ("dense"); None for a newer report."""
        retrieval = self.extra.get("retrieval")
        return None if retrieval is None else str(retrieval)

    def labelled(self, label: Callable[[str], str]) -> BenchReport:
        """The same report with every chunker spec, in its results and its paired comparisons, passed through
        `label` (the numbers untouched): for a renderer that must escape the names."""
        pairs = None if self.pairs is None else [{**p, "a": label(str(p["a"])), "b": label(str(p["b"]))}
                                                 for p in self.pairs]
        return dataclasses.replace(self, results={label(spec): dataclasses.replace(r, spec=label(spec))
                                                  for spec, r in self.results.items()}, pairs=pairs)

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

    def row(self) -> dict[str, str | int | float | bool | None]:
        """The line as the page's table shows it, column by column."""
        return {"chunker": self.chunker, "chunks": self.chunks, "children": self.children,
                "mean tokens": self.mean_tokens, "unread by embedder": self.unread, "seconds": self.seconds,
                "cached": self.cached, "LLM calls": self.llm_calls, "dropped text": self.dropped,
                "altered chunks": self.altered}


def check_report(report: object, source: str = "report") -> None:
    """A ChunkLensError naming `source` unless `report` is a bench report the types can read: `k` (positive
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
