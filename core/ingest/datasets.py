"""Reading qa-spans v1 folders (see ../shared/data/README.md): `corpus.jsonl` + `questions.jsonl`, gold
references as exact character spans. Any folder in this format works, not only the named sets.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NotRequired, TypedDict

from core.infra.errors import DatasetError
from core.infra.jsonio import JsonObject, JsonValue, loads_checked
from core.ingest.documents import MAX_TEXT_CHARS, join_documents
from core.schema.documents import Document
from core.schema.questions import Question
from core.schema.spans import Span

#: the largest corpus.jsonl or questions.jsonl an upload may be: over ten times the largest set we know (chroma_eval's
#: corpus, 1.5 MB). Every line is parsed into memory, with the documents' text, before the set is checked.
MAX_QA_BYTES = 20 * 2**20


#: the longest question that is asked, judged, generated or read from a set: several times the longest question of
#: any set we know (covid_qa's, 194 characters), and a long paragraph pasted in. Past it a question is refused:
#: a 1 MB question took 53 s to embed and search every chunker, for a question no one asks.
MAX_QUESTION_CHARS = 2000


def check_question(text: str, where: str = "the question") -> str:
    """`text` when it is within MAX_QUESTION_CHARS; otherwise a DatasetError of one line naming the limit."""
    if len(text) > MAX_QUESTION_CHARS:
        raise DatasetError(f"{where}: {len(text):,} characters, over the {MAX_QUESTION_CHARS:,}-character limit "
                           "for a question (ask it shorter)")
    return text


@dataclass
class QADataset:
    name: str
    documents: list[Document]
    questions: list[Question]
    source: str = ""
    #: the doc_id of the documents joined into one stream (`joined`); by default named after the set. A library's
    #: judged questions use the id its documents' stream has without a set, so judging keeps its chunk runs.
    stream_id: str | None = None

    @property
    def n_chars(self) -> int:
        return sum(len(d.text) for d in self.documents)


class SpanLine(TypedDict):
    """A span as a qa-spans v1 file writes it (a reference, a judged question's `not_relevant`)."""

    doc_id: str
    start: int
    end: int


def span_line(span: Span) -> SpanLine:
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end}


class CorpusLine(TypedDict):
    """One line of a qa-spans v1 corpus.jsonl as `corpus_jsonl` writes it."""

    doc_id: str
    title: str
    text: str
    cnm: NotRequired[dict[str, str]]


class QuestionLine(TypedDict):
    """The fields of a qa-spans v1 questions.jsonl line that ChunkLens reads (a line may carry more: `extra`)."""

    qid: str
    question: str
    references: list[SpanLine]
    answer: NotRequired[str]
    product: NotRequired[str]


def _read_jsonl(path: Path) -> list[tuple[int, JsonObject]]:
    if not path.is_file():
        raise DatasetError(f"{path}: missing (a qa-spans v1 folder holds corpus.jsonl and questions.jsonl)")
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = loads_checked(line, f"{path}:{n}")
                except ValueError as exc:  # also text nested too deeply to parse (a RecursionError inside)
                    raise DatasetError(str(exc)) from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{n}: expected a JSON object")
                rows.append((n, obj))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text") from exc
    return rows


GOLD_FIELDS = ("category", "model")


def gold_cnm(value: object, where: str) -> dict[str, str] | None:
    """A document's optional gold tags: an object with string `category` and / or `model` (other keys ignored)."""
    if value is None:
        return None
    if not isinstance(value, dict) or any(not isinstance(value.get(k), str | None) for k in GOLD_FIELDS):
        raise DatasetError(f"{where}: 'cnm' must be an object with string fields category and model")
    gold = {k: value[k].strip() for k in GOLD_FIELDS if isinstance(value.get(k), str) and value[k].strip()}
    return gold or None


def _kind(value: object) -> str:
    """What a JSON value is, for a message: 'a number', 'a list'..."""
    if isinstance(value, bool):
        return "true / false"
    return {int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}.get(
        type(value), "null")


def _optional_text(obj: Mapping[str, object], key: str, where: str) -> str | None:
    """`obj[key]` when it is a string, None when it is missing or null; any other type is a DatasetError. A number
    or a list kept as an answer or a title used to pass here and crash the page that showed it."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DatasetError(f"{where}: '{key}' must be a string, not {_kind(value)}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _reference(ref: object, where: str, docs: dict[str, Document]) -> Span:
    """One gold reference: a string doc_id of a document in the corpus and whole-number offsets inside its text."""
    if not isinstance(ref, dict) or not isinstance(ref.get("doc_id"), str) or not _whole(ref.get("start")) \
            or not _whole(ref.get("end")):
        raise DatasetError(f"{where}: a reference needs doc_id (a string), start and end (whole numbers)")
    span = Span(ref["doc_id"], ref["start"], ref["end"])
    doc = docs.get(span.doc_id)
    if doc is None:
        raise DatasetError(f"{where}: reference to unknown doc_id '{span.doc_id}'")
    if not 0 <= span.start < span.end <= len(doc.text):
        raise DatasetError(f"{where}: span {span.start}-{span.end} is outside '{span.doc_id}'")
    return span


_QUESTION_FIELDS = {"qid", "question", "answer", "references", "product"}
#: span lists a question may carry beside its references (a judged question's `not_relevant`, see
#: core.ingest.judged): checked like references on loading, and moved with them into a joined stream
EXTRA_SPAN_FIELDS = ("not_relevant",)


def _question(obj: JsonObject, n: int, where: str, docs: dict[str, Document]) -> Question:
    """One questions.jsonl line, every field of the type the app relies on (checked here, not where it is shown)."""
    question, refs_raw = obj.get("question"), obj.get("references")
    if not isinstance(question, str) or not isinstance(refs_raw, list) or not refs_raw:
        raise DatasetError(f"{where}: needs a string 'question' and a non-empty 'references' list")
    check_question(question, where)
    qid = obj.get("qid", n)
    if not isinstance(qid, str) and not _whole(qid):
        raise DatasetError(f"{where}: 'qid' must be a string or a whole number, not {_kind(qid)}")
    refs = tuple(_reference(r, where, docs) for r in refs_raw)
    for key in EXTRA_SPAN_FIELDS:  # checked like references, so code that reads them can trust them
        if key not in obj:
            continue
        spans = obj[key]
        if not isinstance(spans, list):
            raise DatasetError(f"{where}: '{key}' must be a list of references")
        for ref in spans:
            _reference(ref, where, docs)
    return Question(qid=str(qid), question=question, references=refs,
                    answer=_optional_text(obj, "answer", where), product=_optional_text(obj, "product", where),
                    extra={k: v for k, v in obj.items() if k not in _QUESTION_FIELDS})


def corpus_documents(rows: Iterable[tuple[int, Mapping[str, object]]], where: str,
                     source: str = "") -> dict[str, Document]:
    """The documents of corpus.jsonl lines given as (line number, object): string doc_id and text, no doc_id twice,
    an optional string title (else the doc_id) and optional gold tags; a problem is a DatasetError naming
    `where` and the line."""
    docs: dict[str, Document] = {}
    for n, obj in rows:
        doc_id, text = obj.get("doc_id"), obj.get("text")
        if not isinstance(doc_id, str) or not isinstance(text, str):
            raise DatasetError(f"{where}:{n}: needs string fields doc_id and text")
        if doc_id in docs:
            raise DatasetError(f"{where}:{n}: duplicate doc_id '{doc_id}'")
        if len(text) > MAX_TEXT_CHARS:  # what an uploaded document may hold (core.ingest.documents)
            raise DatasetError(f"{where}:{n}: document '{doc_id[:80]}' holds {len(text):,} characters, over the "
                               f"{MAX_TEXT_CHARS:,}-character limit for one document")
        docs[doc_id] = Document(doc_id, _optional_text(obj, "title", f"{where}:{n}") or doc_id, text,
                                source=source, cnm=gold_cnm(obj.get("cnm"), f"{where}:{n}"))
    return docs


def load_dataset(folder: str | Path) -> QADataset:
    """Load and check a qa-spans v1 folder; every problem is a `DatasetError` naming file and line."""
    root = Path(folder)
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder")
    corpus_path, questions_path = root / "corpus.jsonl", root / "questions.jsonl"
    docs = corpus_documents(_read_jsonl(corpus_path), str(corpus_path), source=str(corpus_path))
    if not docs:
        raise DatasetError(f"{corpus_path}: no documents")
    questions = [_question(obj, n, f"{questions_path}:{n}", docs) for n, obj in _read_jsonl(questions_path)]
    if not questions:
        raise DatasetError(f"{questions_path}: no questions")
    return QADataset(root.name, list(docs.values()), questions, source=str(root))


def attach_gold(dataset: QADataset, path: str | Path) -> QADataset:
    """The dataset with gold CNM tags from a file `{"documents": {doc_id: {"category", "model"}}}` (for a set whose
    corpus carries none, such as docs/gold/emanual_galaxy.json); a document the file does not name keeps its own."""
    source = Path(path)
    try:
        tags = loads_checked(source.read_bytes())["documents"]
        assert isinstance(tags, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as exc:
        raise DatasetError(f"{source}: not a gold-tags file (want {{\"documents\": {{doc_id: {{...}}}}}})") from exc
    known = {d.doc_id for d in dataset.documents}
    unknown = sorted(set(tags) - known)
    if unknown:
        raise DatasetError(f"{source}: no document {', '.join(repr(u) for u in unknown[:5])} in {dataset.name}")
    docs = [replace(d, cnm=gold_cnm(tags[d.doc_id], f"{source}: {d.doc_id}") if d.doc_id in tags else d.cnm)
            for d in dataset.documents]
    return replace(dataset, documents=docs)


def read_cnm_examples(dataset: QADataset, path: str | Path) -> dict[str, dict[str, str]]:
    """Hand corrections of some manuals' CNM tags from a file `{doc_id: {"category": ..., "model": ...}}` (either
    part may be left out), checked against the dataset's manuals (its documents, or the sources of a stream)."""
    source = Path(path)
    try:
        data = loads_checked(source.read_bytes())
        assert isinstance(data, dict) and data
        examples = {str(k): {p: str(v[p]).strip() for p in ("category", "model") if isinstance(v.get(p), str)
                             and v[p].strip()} for k, v in data.items() if isinstance(v, dict)}
        assert len(examples) == len(data) and all(examples.values())
    except (OSError, ValueError, AssertionError, AttributeError) as exc:
        raise DatasetError(f"{source}: not a CNM examples file (want {{doc_id: {{\"category\": ..., \"model\": "
                           "...}}}}, at least one part each)") from exc
    known = {d.doc_id for d in dataset.documents}
    unknown = sorted(set(examples) - known)
    if unknown:
        raise DatasetError(f"{source}: no document {', '.join(repr(u) for u in unknown[:5])} in {dataset.name}")
    return examples


def without_gold(dataset: QADataset, doc_ids: set[str]) -> QADataset:
    """The dataset with the gold tags of `doc_ids` removed: tags scored on the other documents only (the ones a
    correction of `doc_ids` has to carry to)."""
    return replace(dataset, documents=[replace(d, cnm=None) if d.doc_id in doc_ids else d for d in dataset.documents])


def corpus_jsonl(documents: list[Document]) -> bytes:
    """`documents` as the lines of a qa-spans v1 corpus.jsonl (doc_id, title, text, and gold `cnm` when known)."""
    lines = []
    for d in documents:
        obj: CorpusLine = {"doc_id": d.doc_id, "title": d.title, "text": d.text}
        if d.cnm:
            obj["cnm"] = d.cnm
        lines.append(json.dumps(obj, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def questions_jsonl(questions: list[Question]) -> bytes:
    """`questions` as the lines of a qa-spans v1 questions.jsonl (what `load_dataset` reads back)."""
    lines = []
    for q in questions:
        obj: QuestionLine = {"qid": q.qid, "question": q.question, "references": [span_line(r) for r in q.references]}
        if q.answer is not None:
            obj["answer"] = q.answer
        if q.product is not None:
            obj["product"] = q.product
        lines.append(json.dumps({**q.extra, **obj}, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def extra_spans(q: Question, key: str) -> tuple[Span, ...]:
    """A span list kept in `q.extra` (as JSON objects, checked like references on loading), as Spans; () when
    absent or not a list."""
    spans = q.extra.get(key)
    return tuple(_extra_span(s, key) for s in spans) if isinstance(spans, list) else ()


def _extra_span(value: JsonValue, key: str) -> Span:
    span = value if isinstance(value, dict) else {}
    doc_id, start, end = span.get("doc_id"), span.get("start"), span.get("end")
    if not isinstance(doc_id, str) or not isinstance(start, int) or not isinstance(end, int) or not _whole(start) \
            or not _whole(end):
        raise DatasetError(f"'{key}' holds something that is not a span: {str(value)[:80]}")
    return Span(doc_id, start, end)


def in_stream(q: Question, stream: Document) -> Question:
    """`q` with its spans (references and the extra span lists) moved from its documents into `stream`, a
    joined stream of them (`join_documents`)."""
    offset = {seg.doc_id: seg.start for seg in stream.segments}

    def moved(r: Span) -> Span:
        return Span(stream.doc_id, offset[r.doc_id] + r.start, offset[r.doc_id] + r.end)

    extra = dict(q.extra)
    for key in EXTRA_SPAN_FIELDS:
        if isinstance(extra.get(key), list):
            extra[key] = [moved(s)._asdict() for s in extra_spans(q, key)]
    return replace(q, references=tuple(moved(r) for r in q.references), extra=extra)


def joined(dataset: QADataset) -> QADataset:
    """The dataset as one continuous stream: documents joined, gold spans moved into stream offsets."""
    stream = join_documents(dataset.documents, doc_id=dataset.stream_id or f"{dataset.name}-stream")
    questions = [in_stream(q, stream) for q in dataset.questions]
    return QADataset(f"{dataset.name} (joined)", [stream], questions, source=dataset.source)


def _slice(dataset: QADataset, docs: list[Document], label: str) -> QADataset:
    kept = {d.doc_id for d in docs}
    questions = [q for q in dataset.questions if all(r.doc_id in kept for r in q.references)]
    if not questions:
        raise DatasetError(f"{dataset.name}: no question refers only to {label}")
    return QADataset(f"{dataset.name} ({label})", docs, questions, source=dataset.source)


def stratified_questions(questions: Sequence[Question], n: int, seed: int = 0) -> list[Question]:
    """At most `n` of `questions`, stratified by document: each document (of a question's first gold span) keeps
    its share of `n`, by largest remainder, and within it a seeded draw picks which; the chosen keep the set's
    order. A sample drawn this way asks about every document as the whole set does, so a chunker that is good on
    one manual only neither gains nor loses by the cut."""
    if n < 1:
        raise DatasetError("the number of questions to sample must be at least 1")
    if len(questions) <= n:
        return list(questions)
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(q.references[0].doc_id if q.references else "", []).append(i)
    exact = {doc: n * len(members) / len(questions) for doc, members in groups.items()}
    quota = {doc: int(share) for doc, share in exact.items()}
    by_remainder = sorted(groups, key=lambda doc: exact[doc] - quota[doc], reverse=True)  # stable: first seen wins
    for doc in by_remainder[:n - sum(quota.values())]:
        quota[doc] += 1
    rng = random.Random(seed)
    kept = sorted(i for doc, members in groups.items() for i in rng.sample(members, quota[doc]))
    return [questions[i] for i in kept]


def sample_questions(dataset: QADataset, n: int, seed: int = 0) -> QADataset:
    """The set with every document and `n` of its questions (`stratified_questions`): at scale the store still holds
    the whole library, so collisions between look-alike manuals are as they are; only the questions are fewer,
    and each figure's interval says what that many questions allow."""
    chosen = stratified_questions(dataset.questions, n, seed)
    if len(chosen) == len(dataset.questions):
        return dataset
    return replace(dataset, name=f"{dataset.name} ({len(chosen)} of {len(dataset.questions)} questions, seed {seed})",
                   questions=chosen)


def first_documents(dataset: QADataset, n: int) -> QADataset:
    """The first `n` documents in file order and the questions whose references all lie in them: a smaller,
    reproducible slice for methods too slow to run over a whole set on a CPU."""
    if n < 1:
        raise DatasetError("max documents must be at least 1")
    if n >= len(dataset.documents):
        return dataset
    return _slice(dataset, dataset.documents[:n], f"first {n} documents")


def select_documents(dataset: QADataset, doc_ids: list[str]) -> QADataset:
    """The named documents (in file order) and the questions whose references all lie in them."""
    known = {d.doc_id for d in dataset.documents}
    missing = [i for i in doc_ids if i not in known]
    if missing:
        raise DatasetError(f"{dataset.name}: no document {', '.join(repr(m) for m in missing)}")
    wanted = set(doc_ids)
    return _slice(dataset, [d for d in dataset.documents if d.doc_id in wanted], ", ".join(doc_ids))
