"""Questions judged by hand (core.ingest.judged, core.evaluation.judging, core.evaluation.pooling): evidence picked
from any chunker's hit lands on the exact document characters, in separate documents and in a joined stream, for
chunkers whose chunks overlap (naive-500t), carry a prefix (chop) or nest (mg); pool depth counts what the
judgments cover; a judged set exports and imports back to identical files."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from core.chunkers.registry import make_chunker
from core.evaluation.judging import corpus_question, document_spans, evidence_choices, verdict
from core.evaluation.pooling import is_judged, pool_depth
from core.infra.errors import DatasetError
from core.ingest.datasets import extra_spans, load_dataset
from core.ingest.judged import JudgedQuestion, JudgedSet, export_zip, judge, read_zip
from core.ingest.library import Library
from core.schema.spans import Span
from core.services import build_services
from core.settings import Settings
from core.workbench import make_corpus, sample_folder


@pytest.fixture(scope="module")
def sample_docs():
    return load_dataset(sample_folder()).documents[:3]


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return build_services(Settings(workspace=str(tmp_path_factory.mktemp("ws"))), needs={"llm"}).context()


@pytest.mark.parametrize("join", [False, True])
@pytest.mark.parametrize("spec", ["naive-500t", "chop", "mg"])
def test_evidence_picked_from_a_hit_is_the_documents_own_text(spec, join, sample_docs, context, tmp_path):
    corpus = make_corpus(sample_docs, None, join)
    chunker = make_chunker(spec, context)
    chunker.prepare(corpus.documents)
    chunks = [c for d in corpus.documents for c in chunker.run(d).chunks]
    if spec == "naive-500t":  # the setting under test: neighbours share text
        assert any(a.doc_id == b.doc_id and a.end > b.start for a, b in zip(chunks, chunks[1:]))
    if spec == "chop":
        assert all(c.prefix for c in chunks) and all(c.prefix not in c.text for c in chunks[:5])
    if spec == "mg":
        assert any(c.child for c in chunks)
    texts = {d.doc_id: d.text for d in sample_docs}
    lib = Library(tmp_path / "uploads", "judgedlib1")
    for d in sample_docs:
        lib.import_document(d)
    checked = 0
    for chunk in chunks[:: max(1, len(chunks) // 12)]:
        choices = evidence_choices(chunk)
        assert choices and all(chunk.text[s.start - chunk.start : s.end - chunk.start] == t for s, t in choices)
        span, sentence = choices[len(choices) // 2]
        evidence = document_spans(corpus.documents, span)
        # the sentence, found in its manual at exactly the offsets kept (a sentence never crosses a blank line,
        # so never a join)
        assert len(evidence) == 1 and texts[evidence[0].doc_id][evidence[0].start : evidence[0].end] == sentence
        hit = document_spans(corpus.documents, chunk.span)
        if len(hit) != 1 or len(evidence) != 1:
            continue  # a chunk across a join: judged part by part in the app, covered in the next test
        saved = lib.judged.record(f"question {checked}", hit[0], evidence, lib.documents())
        assert [texts[r.doc_id][r.start : r.end] for r in saved.relevant] == [sentence]
        # back in the corpus's offsets, the same characters: the hit is judged and answers
        q = corpus_question(corpus.documents, saved)
        corpus_texts = {d.doc_id: d.text for d in corpus.documents}
        assert [corpus_texts[r.doc_id][r.start : r.end] for r in q.references] == [sentence]
        assert verdict(chunk, q, corpus_texts) == "answers"
        checked += 1
    assert checked >= 5


def test_a_chunk_across_a_join_splits_into_one_span_per_manual(sample_docs):
    corpus = make_corpus(sample_docs, None, True)
    stream = corpus.documents[0]
    seg_a, seg_b = stream.segments[:2]
    across = Span(stream.doc_id, seg_a.end - 30, seg_b.start + 40)
    parts = document_spans(corpus.documents, across)
    assert [p.doc_id for p in parts] == [seg_a.doc_id, seg_b.doc_id]
    assert parts[0].end == len(sample_docs[0].text) and parts[1] == Span(seg_b.doc_id, 0, 40)
    assert sample_docs[0].text[parts[0].start :] == stream.text[across.start : seg_a.end]
    assert stream.text[seg_b.start : across.end] == sample_docs[1].text[:40]


def test_judging_again_replaces_what_was_judged_inside_the_hit():
    q = JudgedQuestion("mine-1", "How often?")
    hit = Span("a", 100, 200)
    q = judge(q, hit, None)  # does not answer
    assert q.relevant == () and q.not_relevant == (hit,)
    q = judge(q, hit, [Span("a", 120, 150)])  # re-judged: answers, narrowed to one sentence
    assert q.relevant == (Span("a", 120, 150),)
    assert q.not_relevant == (Span("a", 100, 120), Span("a", 150, 200))  # the rest of the hit was read
    q = judge(q, Span("a", 180, 260), None)  # a neighbour that does not answer: merged with what is judged
    assert q.not_relevant == (Span("a", 100, 120), Span("a", 150, 260))
    q = judge(q, hit, None)  # and back: the evidence inside the hit is dropped
    assert q.relevant == () and q.not_relevant == (Span("a", 100, 260),)
    with pytest.raises(ValueError):
        judge(q, hit, [Span("a", 90, 110)])


def test_pool_depth_counts_hits_the_judgments_cover():
    text = "x" * 100 + "  \n\n" + "y" * 96 + "z" * 200
    texts = {"a": text}
    jq = judge(judge(JudgedQuestion("mine-1", "q"), Span("a", 0, 100), None), Span("a", 104, 200),
               [Span("a", 150, 170)])
    q = jq.as_question()
    assert extra_spans(q, "not_relevant") == (Span("a", 0, 100), Span("a", 104, 150), Span("a", 170, 200))
    hits = [
        Span("a", 0, 100),  # judged: does not answer
        Span("a", 40, 150),  # inside judged text but for the blank line between the two judged hits: judged
        Span("a", 140, 180),  # overlaps the evidence by more than half the evidence: relevant, judged
        Span("a", 190, 260),  # runs into unread text: not judged
        Span("b", 0, 10),  # another document nobody read: not judged
    ]
    assert [is_judged(h, q, texts) for h in hits] == [True, True, True, False, False]
    assert pool_depth(hits, q, texts, 5).label == "3/5"
    assert pool_depth(hits, q, texts, 2).label == "2/2"
    assert pool_depth(hits[3:], q, texts, 10).label == "0/2"


def test_the_set_is_saved_survives_a_new_library_object_and_can_be_deleted(tmp_path, sample_docs):
    lib = Library(tmp_path / "uploads", "judgedlib2")
    for d in sample_docs:
        lib.import_document(d)
    doc = sample_docs[0]
    first = lib.judged.record("How do I clean the filter?", Span(doc.doc_id, 0, 300), [Span(doc.doc_id, 10, 60)],
                              lib.documents(), product="X1")
    lib.judged.record("What voltage?", Span(doc.doc_id, 300, 600), None, lib.documents())
    again = Library(tmp_path / "uploads", "judgedlib2")  # a restart
    assert [q.question for q in again.judged.questions()] == ["How do I clean the filter?", "What voltage?"]
    assert again.judged.find("how do i  clean the FILTER?").qid == first.qid == "mine-1"
    ds = again.dataset()  # only the question with evidence scores chunkers
    assert ds is not None and [q.qid for q in ds.questions] == ["mine-1"] and ds.questions[0].product == "X1"
    again.judged.delete("mine-1")
    assert again.dataset() is None and [q.qid for q in again.judged.questions()] == ["mine-2"]


def test_a_question_judged_on_a_document_whose_text_changed_is_left_out(tmp_path, sample_docs):
    lib = Library(tmp_path / "uploads", "judgedlib3")
    doc = sample_docs[0]
    lib.import_document(doc)
    lib.judged.record("q", Span(doc.doc_id, 0, 100), [Span(doc.doc_id, 0, 50)], lib.documents())
    assert len(lib.dataset().questions) == 1
    lib.remove(doc.doc_id)
    from dataclasses import replace
    lib.import_document(replace(doc, text="Another text entirely. " * 20))
    assert lib.dataset() is None  # the judged spans no longer point at the text that was read
    assert len(lib.judged.questions()) == 1  # but the line is kept


def test_export_and_import_round_trip_to_identical_files(tmp_path, sample_docs):
    lib = Library(tmp_path / "uploads", "judgedlib4")
    for d in sample_docs:
        lib.import_document(d)
    a, b = sample_docs[:2]
    lib.judged.record("Filter?", Span(a.doc_id, 0, 400), [Span(a.doc_id, 20, 80)], lib.documents(), product="P")
    lib.judged.record("Filter?", Span(b.doc_id, 0, 300), None, lib.documents())
    lib.judged.record("Timer?", Span(b.doc_id, 300, 700), [Span(b.doc_id, 320, 390), Span(b.doc_id, 500, 560)],
                      lib.documents())
    lib.judged.record("Nothing yet", Span(a.doc_id, 500, 900), None, lib.documents())
    exported = export_zip(lib.judged.questions(), lib.documents())
    with zipfile.ZipFile(io.BytesIO(exported)) as zf:
        assert sorted(zf.namelist()) == ["judged/README.md", "judged/corpus.jsonl", "judged/questions.jsonl"]
        zf.extractall(tmp_path / "out")
        lines = [json.loads(x) for x in zf.read("judged/questions.jsonl").decode().splitlines()]
    assert [x["question"] for x in lines] == ["Filter?", "Timer?"]  # no evidence yet: not a qa-spans question
    ds = load_dataset(tmp_path / "out" / "judged")  # any qa-spans v1 reader takes it
    assert {d.doc_id for d in ds.documents} == {a.doc_id, b.doc_id}
    assert [a.text[r.start:r.end] for r in ds.questions[0].references] == [a.text[20:80]]

    fresh = Library(tmp_path / "uploads", "judgedlib5")  # another library (another machine) imports it
    imported = read_zip(exported, 10 * 2**20)
    for d in imported.documents:
        assert fresh.import_document(d)
    assert fresh.judged.merge(imported.questions) == (2, 0)
    assert export_zip(fresh.judged.questions(), fresh.documents()) == exported  # byte for byte
    assert fresh.judged.merge(imported.questions) == (0, 2)  # again: same wording, re-judged, nothing added
    assert export_zip(fresh.judged.questions(), fresh.documents()) == exported


def test_bad_files_give_one_line(tmp_path, sample_docs):
    with pytest.raises(DatasetError, match="not a readable zip"):
        read_zip(b"not a zip", 2**20)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("set/corpus.jsonl", '{"doc_id": "a", "text": "short"}\n')
        zf.writestr("set/questions.jsonl", '{"qid": "1", "question": "q", "references": '
                    '[{"doc_id": "a", "start": 0, "end": 99}]}\n')
    with pytest.raises(DatasetError, match="outside 'a'"):
        read_zip(buf.getvalue(), 2**20)
    with pytest.raises(DatasetError, match="no judged question has evidence"):
        export_zip([JudgedQuestion("mine-1", "q", (), (Span("a", 0, 5),))], sample_docs)
    lib = Library(tmp_path / "uploads", "judgedlib6")
    lib.import_document(sample_docs[0])
    lib.judged.path.write_text("{not json\n")
    assert lib.dataset() is None and any("judged.jsonl" in p for p in lib.problems)
    assert not lib.judged.path.exists()  # kept aside, so the next judgment starts a clean file
    JudgedSet(lib.judged.path, lib._locked).record("q", Span(sample_docs[0].doc_id, 0, 10), None, lib.documents())


def test_an_import_leaves_out_questions_on_clashing_documents(tmp_path, sample_docs):
    from dataclasses import replace

    source = Library(tmp_path / "uploads", "judgedlib7")
    for d in sample_docs[:2]:
        source.import_document(d)
    a, b = sample_docs[:2]
    source.judged.record("On a?", Span(a.doc_id, 0, 200), [Span(a.doc_id, 0, 50)], source.documents())
    source.judged.record("On b?", Span(b.doc_id, 0, 200), [Span(b.doc_id, 0, 50)], source.documents())
    exported = export_zip(source.judged.questions(), source.documents())
    target = Library(tmp_path / "uploads", "judgedlib8")
    target.import_document(replace(b, text="This library's own text under the same id. " * 10))
    line = target.import_judged(exported, 2**20)
    assert line == (f"Imported 1 judged question(s); added 1 document(s): {a.doc_id}; left out 1 judged on "
                    f"{b.doc_id}, which this library holds with other text.")
    assert [q.question for q in target.dataset().questions] == ["On a?"]
    with pytest.raises(DatasetError):
        target.import_judged(b"PK\x03\x04 broken", 2**20)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x1c", "\x0b"])
def test_a_line_separator_pasted_into_a_question_or_a_document_loses_nothing(tmp_path, sample_docs, separator):
    """Text pasted from a PDF or Word can hold U+2028, U+2029 or U+0085 (and other characters `str.splitlines()`
    splits at), which JSON Lines keep raw inside a string: the judged file and the judged zip round trip read them
    back whole, with every other judgment."""
    from dataclasses import replace

    lib = Library(tmp_path / "uploads", "judgedsep")
    a = replace(sample_docs[0], text=sample_docs[0].text[:200] + separator + sample_docs[0].text[200:1200])
    lib.import_document(a)
    lib.judged.record("How do I clean the filter?", Span(a.doc_id, 0, 400), [Span(a.doc_id, 150, 260)],
                      lib.documents())
    pasted = f"Filter{separator}cleaning interval?"
    lib.judged.record(pasted, Span(a.doc_id, 400, 800), [Span(a.doc_id, 420, 480)], lib.documents())
    again = Library(tmp_path / "uploads", "judgedsep")
    assert [q.question for q in again.judged.questions()] == ["How do I clean the filter?", pasted]
    assert len(again.dataset().questions) == 2

    exported = export_zip(again.judged.questions(), again.documents())
    imported = read_zip(exported, 10 * 2**20)
    assert [q.question for q in imported.questions] == ["How do I clean the filter?", pasted]
    assert imported.documents[0].text == a.text


def test_json_lines_split_at_line_feeds_only():
    from core.infra.jsonio import jsonl_lines

    assert jsonl_lines('{"a": 1}\r\n\n{"b": "x\u2028y\u0085z"}\n') == [(1, '{"a": 1}'), (3, '{"b": "x\u2028y\u0085z"}')]


def test_a_judged_line_keeps_its_keys_in_the_files_order():
    """judged.jsonl lines are written with their keys in one order (answer and product last, only when known), so
    an unchanged set writes the same bytes and an exported set imports back byte for byte."""
    from core.ingest.judged import parse_line, to_line

    q = JudgedQuestion("q1", "How?", (Span("d", 0, 4),), (Span("d", 5, 9),), product="X1", answer="So.",
                       fingerprints={"e": "2", "d": "1"})
    line = json.dumps(to_line(q), ensure_ascii=False)
    assert line == ('{"qid": "q1", "question": "How?", "references": [{"doc_id": "d", "start": 0, "end": 4}], '
                    '"not_relevant": [{"doc_id": "d", "start": 5, "end": 9}], "fingerprints": {"d": "1", "e": "2"}, '
                    '"answer": "So.", "product": "X1"}')
    assert parse_line(json.loads(line), "judged.jsonl:1") == q
    bare = to_line(JudgedQuestion("q2", "Why?"))
    assert list(bare) == ["qid", "question", "references", "not_relevant", "fingerprints"]
