"""The library's own question set: questions a user asked in the app and judged by hand.

A user has no gold spans for their own manuals, so the app lets them judge hits instead: "answers it" (narrowed to
the sentences that hold the answer) or "does not". Judgments are kept as character spans of the documents
themselves, never of a chunk, so they score every chunker, including ones run later:

- `relevant`: the evidence (qa-spans v1 `references`), what every metric scores against;
- `not_relevant`: text the user read and judged not to answer: a whole hit marked "does not", and the rest of a hit
  whose evidence was narrowed to some of its sentences.

A hit of any chunker is *judged* when it is relevant by the metrics' rule, or when every non-space character of it
lies inside judged text (`core.evaluation.pooling`): that is the pool depth the app reports, as TREC-style pooled
evaluation does, so nobody mistakes an unjudged hit for a miss.

Stored as `<library>/judged.jsonl`, one qa-spans v1 question per line with `not_relevant` and the fingerprints of
the documents it refers to beside the standard fields; written atomically under the library's lock. A question
whose documents changed since it was judged is left out of the set (its line is kept). It exports as a qa-spans v1
folder in a zip and imports back (`export_zip`, `read_zip`), byte for byte the same.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.infra.errors import DatasetError
from core.infra.jsonio import JsonObject, jsonl_lines, loads_checked
from core.infra.storage import write_atomically
from core.ingest.datasets import (
    QuestionLine,
    SpanLine,
    check_question,
    corpus_documents,
    corpus_jsonl,
    questions_jsonl,
    span_line,
)
from core.ingest.safezip import ArchiveError, ZipLimits, open_checked
from core.schema.documents import Document
from core.schema.questions import Question
from core.schema.spans import Span, subtract, union

QID_PREFIX = "mine-"
#: fixed time stamp of every zip member, so one set always exports to the same bytes
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class JudgedQuestion:
    qid: str
    question: str
    relevant: tuple[Span, ...] = ()
    not_relevant: tuple[Span, ...] = ()
    product: str | None = None
    answer: str | None = None
    #: doc_id -> Document.fingerprint of every document a span lies in, when it was judged
    fingerprints: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def usable(self) -> bool:
        """A question scores chunkers once some text was judged to answer it."""
        return bool(self.relevant)

    def fits(self, documents: dict[str, Document]) -> bool:
        """Every document it was judged on is in the library, with the same text."""
        return all(doc_id in documents and documents[doc_id].fingerprint == fp
                   for doc_id, fp in self.fingerprints.items())

    def as_question(self) -> Question:
        """The qa-spans v1 question every evaluation reads (`not_relevant` rides along in `extra`)."""
        return Question(self.qid, self.question, self.relevant, self.answer, self.product,
                        extra={"not_relevant": [s._asdict() for s in self.not_relevant],
                               "fingerprints": dict(sorted(self.fingerprints.items()))})


def same_question(a: str, b: str) -> bool:
    """Two typings of one question: equal up to case and runs of spaces."""
    return _SPACES.sub(" ", a).strip().casefold() == _SPACES.sub(" ", b).strip().casefold()


def _merged(spans: Iterable[Span]) -> tuple[Span, ...]:
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        if s.end > s.start:
            by_doc.setdefault(s.doc_id, []).append((s.start, s.end))
    return tuple(Span(d, a, b) for d in sorted(by_doc) for a, b in union(by_doc[d]))


def _minus(spans: Iterable[Span], cut: Span) -> list[Span]:
    out: list[Span] = []
    for s in spans:
        if s.doc_id != cut.doc_id:
            out.append(s)
        else:
            out.extend(Span(s.doc_id, a, b) for a, b in subtract([(s.start, s.end)], (cut.start, cut.end)))
    return out


def _inside(s: Span, outer: Span) -> bool:
    return s.doc_id == outer.doc_id and outer.start <= s.start and s.end <= outer.end


def judge(q: JudgedQuestion, hit: Span, evidence: Sequence[Span] | None) -> JudgedQuestion:
    """`q` after one judgment of the text `hit` (document offsets): `evidence` (spans inside `hit`) answers the
    question, or with None or empty, `hit` does not answer it. A new judgment of text replaces what was judged
    inside it before, so judging a hit again corrects it. Evidence spans outside `hit` are a caller's bug."""
    evidence = [s for s in evidence or () if s.end > s.start]
    if any(not _inside(s, hit) for s in evidence):
        raise ValueError("evidence must lie inside the judged hit")
    relevant = [s for s in q.relevant if not _inside(s, hit)] + evidence
    rest = [hit]
    for s in evidence:
        rest = _minus(rest, s)
    return replace(q, relevant=_merged(relevant), not_relevant=_merged([*_minus(q.not_relevant, hit), *rest]))


def _without_docs(q: JudgedQuestion, doc_ids: set[str]) -> JudgedQuestion:
    """`q` without its judgments of the documents named (documents whose text changed since)."""
    return replace(q, relevant=tuple(s for s in q.relevant if s.doc_id not in doc_ids),
                   not_relevant=tuple(s for s in q.not_relevant if s.doc_id not in doc_ids),
                   fingerprints={d: fp for d, fp in q.fingerprints.items() if d not in doc_ids})


def _spans(value: object, where: str) -> tuple[Span, ...]:
    if not isinstance(value, list):
        raise DatasetError(f"{where}: span lists must be lists")
    out = []
    for s in value:
        if not (isinstance(s, dict) and isinstance(s.get("doc_id"), str) and type(s.get("start")) is int
                and type(s.get("end")) is int and 0 <= s["start"] < s["end"]):
            raise DatasetError(f"{where}: a span needs doc_id (a string) and whole-number start < end")
        out.append(Span(s["doc_id"], s["start"], s["end"]))
    return tuple(out)


def _text_or_none(obj: Mapping[str, object], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise DatasetError(f"{where}: '{key}' must be a string")
    return value


def parse_line(obj: object, where: str) -> JudgedQuestion:
    """One stored line (a qa-spans v1 question that may have no references yet)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("qid"), str) or not isinstance(obj.get("question"), str):
        raise DatasetError(f"{where}: needs string fields qid and question")
    prints = obj.get("fingerprints", {})
    if not isinstance(prints, dict) or not all(isinstance(v, str) for v in prints.values()):
        raise DatasetError(f"{where}: 'fingerprints' must map doc ids to strings")
    return JudgedQuestion(obj["qid"], obj["question"], _spans(obj.get("references", []), where),
                          _spans(obj.get("not_relevant", []), where), _text_or_none(obj, "product", where),
                          _text_or_none(obj, "answer", where), dict(prints))


class JudgedLine(QuestionLine):
    """One line of a library's judged.jsonl: a qa-spans v1 question with the spans judged not relevant and the
    fingerprints of the documents its spans were judged on."""

    not_relevant: list[SpanLine]
    fingerprints: dict[str, str]


def to_line(q: JudgedQuestion) -> JudgedLine:
    # the keys in the order the file has always had them: answer and product last, and only when known
    obj: JudgedLine = {"qid": q.qid, "question": q.question, "references": [span_line(s) for s in q.relevant],
                       "not_relevant": [span_line(s) for s in q.not_relevant],
                       "fingerprints": dict(sorted(q.fingerprints.items()))}
    if q.answer is not None:
        obj["answer"] = q.answer
    if q.product is not None:
        obj["product"] = q.product
    return obj


class JudgedSet:
    """The file of one library's judged questions. Every change reads, edits and writes the file under the
    library's lock (`locked`), so two tabs judging at once lose nothing."""

    def __init__(self, path: Path, locked: Callable[[], AbstractContextManager[None]]) -> None:
        self.path = path
        self._locked = locked

    def questions(self) -> list[JudgedQuestion]:
        """Every judged question in the order first asked; a damaged file raises DatasetError naming the line."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for n, line in jsonl_lines(raw.decode("utf-8", errors="replace")):
            where = f"{self.path}:{n}"
            try:
                obj = loads_checked(line, where)
            except ValueError as exc:
                raise DatasetError(str(exc)) from None
            out.append(parse_line(obj, where))
        return out

    def _write(self, questions: Sequence[JudgedQuestion]) -> None:
        lines = "".join(json.dumps(to_line(q), ensure_ascii=False) + "\n" for q in questions)
        if lines:
            write_atomically(self.path, lines, durable=True)
        else:
            self.path.unlink(missing_ok=True)

    def find(self, question: str) -> JudgedQuestion | None:
        return next((q for q in self.questions() if same_question(q.question, question)), None)

    def record(self, question: str, hit: Span, evidence: Sequence[Span] | None, documents: Sequence[Document],
               product: str | None = None) -> JudgedQuestion:
        """Judge `hit` for `question` (a new question gets the next `mine-N` id) and save; returns the question
        as saved. `documents`: the library's documents, whose fingerprints the judged spans are kept with."""
        check_question(question)
        prints = {d.doc_id: d.fingerprint for d in documents}
        for s in [hit, *(evidence or ())]:
            if s.doc_id not in prints:
                raise DatasetError(f"no document '{s.doc_id}' in this library")
        with self._locked():
            qs = self.questions()
            i = next((n for n, q in enumerate(qs) if same_question(q.question, question)), None)
            if i is None:
                qs.append(JudgedQuestion(_next_qid(qs), question.strip(), product=product))
                i = len(qs) - 1
            stale = {d for d, fp in qs[i].fingerprints.items() if prints.get(d) != fp}
            q = judge(_without_docs(qs[i], stale), hit, evidence)
            used = {s.doc_id for s in [*q.relevant, *q.not_relevant]}
            qs[i] = replace(q, fingerprints={d: prints[d] for d in sorted(used)})
            self._write(qs)
            return qs[i]

    def set_answer(self, qid: str, answer: str | None) -> None:
        """The question's reference answer (optional; generated answers are scored against it), or none."""
        with self._locked():
            self._write([replace(q, answer=(answer or "").strip() or None) if q.qid == qid else q
                         for q in self.questions()])

    def delete(self, qid: str) -> None:
        with self._locked():
            self._write([q for q in self.questions() if q.qid != qid])

    def merge(self, imported: Sequence[JudgedQuestion]) -> tuple[int, int]:
        """Add imported questions: one asked here already (same wording) takes the imported judgments, a new one
        keeps its id unless the id is taken here. Returns (added, replaced)."""
        added = replaced_n = 0
        with self._locked():
            qs = self.questions()
            for q in imported:
                i = next((n for n, mine in enumerate(qs) if same_question(mine.question, q.question)), None)
                if i is not None:
                    qs[i] = replace(q, qid=qs[i].qid)
                    replaced_n += 1
                    continue
                taken = {m.qid for m in qs}
                qs.append(q if q.qid not in taken else replace(q, qid=_next_qid(qs)))
                added += 1
            self._write(qs)
        return added, replaced_n


def _next_qid(qs: Sequence[JudgedQuestion]) -> str:
    numbers = [int(q.qid[len(QID_PREFIX):]) for q in qs
               if q.qid.startswith(QID_PREFIX) and q.qid[len(QID_PREFIX):].isdigit()]
    return f"{QID_PREFIX}{max(numbers, default=0) + 1}"


def _zip_member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def export_zip(questions: Sequence[JudgedQuestion], documents: Sequence[Document], name: str = "judged") -> bytes:
    """A qa-spans v1 folder `name/` in a zip: the documents the usable questions refer to (corpus.jsonl) and those
    questions (questions.jsonl, `not_relevant` and fingerprints beside the standard fields), plus a README.
    Questions with no evidence yet are left out: a qa-spans question needs references."""
    kept = [q for q in questions if q.usable]
    if not kept:
        raise DatasetError("no judged question has evidence yet: mark a hit that answers one first")
    used = {s.doc_id for q in kept for s in [*q.relevant, *q.not_relevant]}
    docs = [d for d in documents if d.doc_id in used]
    missing = used - {d.doc_id for d in docs}
    if missing:
        raise DatasetError(f"judged documents no longer in the library: {', '.join(sorted(missing))}")
    n_rel = sum(len(q.relevant) for q in kept)
    readme = (f"# {name}\n\nA qa-spans v1 set judged by hand in ChunkLens: {len(kept)} questions over {len(docs)} "
              f"documents, {n_rel} evidence spans. `references` are the evidence; `not_relevant` lists text judged "
              "not to answer; `fingerprints` are the documents' text hashes when judged.\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        _zip_member(zf, f"{name}/README.md", readme.encode("utf-8"))
        _zip_member(zf, f"{name}/corpus.jsonl", corpus_jsonl(docs))
        _zip_member(zf, f"{name}/questions.jsonl", questions_jsonl([q.as_question() for q in kept]))
    return buf.getvalue()


@dataclass
class ImportedSet:
    documents: list[Document]
    questions: list[JudgedQuestion]


def read_zip(data: bytes, max_bytes: int) -> ImportedSet:
    """The documents and questions of an exported set (or any qa-spans v1 folder zipped, one level deep or at
    the top). Every span is checked against its document; any problem is a DatasetError of one line."""
    try:
        with open_checked(io.BytesIO(data), ZipLimits(max_members=50, max_total_bytes=max_bytes)) as archive:
            by_name = {Path(n).name: info for n, info in archive.members.items() if n.count("/") <= 1}
            if "corpus.jsonl" not in by_name or "questions.jsonl" not in by_name:
                raise DatasetError("the zip holds no qa-spans v1 folder (corpus.jsonl and questions.jsonl)")
            corpus, questions = (archive.read(by_name[n]).decode("utf-8") for n in ("corpus.jsonl", "questions.jsonl"))
    except ArchiveError as exc:
        raise DatasetError(str(exc)) from None
    except UnicodeDecodeError:
        raise DatasetError("corpus.jsonl or questions.jsonl is not UTF-8 text") from None
    docs = corpus_documents(((n, _json_line(line, f"corpus.jsonl:{n}")) for n, line in jsonl_lines(corpus)),
                            "corpus.jsonl")
    out = []
    for n, line in jsonl_lines(questions):
        where = f"questions.jsonl:{n}"
        obj = _json_line(line, where)
        obj.setdefault("qid", f"{QID_PREFIX}{n}")
        obj["qid"] = str(obj["qid"])
        q = parse_line(obj, where)
        check_question(q.question, where)
        for s in [*q.relevant, *q.not_relevant]:
            doc = docs.get(s.doc_id)
            if doc is None:
                raise DatasetError(f"{where}: reference to unknown doc_id '{s.doc_id}'")
            if s.end > len(doc.text):
                raise DatasetError(f"{where}: span {s.start}-{s.end} is outside '{s.doc_id}'")
        if not q.fingerprints:
            q = replace(q, fingerprints={d: docs[d].fingerprint for d in sorted({s.doc_id for s in q.relevant})})
        out.append(q)
    if not out:
        raise DatasetError("questions.jsonl holds no question")
    return ImportedSet(list(docs.values()), out)


def _json_line(line: str, where: str) -> JsonObject:
    try:
        obj = loads_checked(line, where)
    except ValueError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object")
    return obj
