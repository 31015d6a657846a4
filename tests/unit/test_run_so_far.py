"""`core.workbench.live.RunSoFar`: what the chunkers of a run done so far have given, as the full view shows it."""

from __future__ import annotations

import pytest

from core.ingest.documents import join_documents
from core.schema.documents import Document
from core.workbench import Corpus, run_chunkers, run_summaries
from core.workbench.live import RunSoFar, gold_spans, sample_stream, short_columns
from tests.unit.test_run_chunkers import DOC, TEXT, services_with


def test_each_chunker_done_gives_the_full_tables_row_or_its_error(tmp_path, minilm):
    services = services_with(tmp_path, minilm)
    specs = ["paragraph", "no-such-chunker", "recursive:theta=20"]
    so_far = RunSoFar(services, specs, [DOC])
    seen: list[tuple[int, str]] = []

    def on_result(spec, result):
        so_far.add(spec, result)
        seen.append((so_far.done, so_far.progress_text("next")))

    results = run_chunkers(services, Corpus([DOC]), specs, on_result=on_result)
    assert seen == [(1, "1/3 chunkers done · running next"), (2, "2/3 chunkers done, 1 failed · running next"),
                    (3, "3/3 chunkers done, 1 failed")]
    assert so_far.errors == {"no-such-chunker": results["no-such-chunker"].error}
    full = run_summaries(services, {s: r for s, r in results.items() if r.ok}, [DOC])
    assert so_far.rows() == [line.row() for line in full.values()]  # the same rows the page's table shows after
    assert so_far.chunks["paragraph"] == results["paragraph"].run.parents()
    assert short_columns() == ("chunker", "chunks", "mean tokens", "boundary F1", "seconds", "cached")
    assert [list(r) for r in so_far.short_rows()] == [list(short_columns())] * 2
    # CHOP's headline field for every chunker: no joins, no decisions
    assert so_far.headline == {"paragraph": {"boundary F1": None}, "recursive:theta=20": {"boundary F1": None}}


def test_chops_boundary_f1_on_a_joined_stream_is_the_bench_reports(tmp_path):
    from core.evaluation.fields import report_fields

    services = default_services(tmp_path)  # CHOP's default CNM backend
    stream = join_documents([Document("a", "Nordwind 225B", TEXT), Document("b", "Kaltluft K9", TEXT.replace(
        "Nordwind 225B", "Kaltluft K9"))], doc_id="stream")
    so_far = RunSoFar(services, ["chop"], [stream])
    results = run_chunkers(services, Corpus([stream], joined=True), ["chop"], on_result=so_far.add)
    f1 = report_fields([stream], results["chop"].run)["boundary_f1"]
    assert f1 is not None and so_far.headline == {"chop": {"boundary F1": f1}}
    assert so_far.short_rows()[0]["boundary F1"] == f1


def default_services(tmp_path):
    from core.services import build_services
    from core.settings import Settings

    return build_services(Settings(workspace=str(tmp_path / "ws")))


class Seen(Exception):
    pass


def test_the_sample_stream_is_the_one_the_guided_demo_chunks(tmp_path, monkeypatch):
    import core.workbench.demo as demo

    chunked = []

    def run_chunkers(services, corpus, *args, **kwargs):
        chunked.append(corpus.documents)
        raise Seen

    monkeypatch.setattr(demo, "run_chunkers", run_chunkers)
    with pytest.raises(Seen):
        demo.guided_demo(default_services(tmp_path))
    assert chunked == [sample_stream()] and len(chunked[0]) == 1 and chunked[0][0].joins


def test_gold_spans_are_the_references_into_one_document():
    from core.schema.questions import Question
    from core.schema.spans import Span

    questions = [Question("q1", "?", (Span("a", 1, 5), Span("b", 2, 3))), Question("q2", "?", (Span("a", 9, 12),))]
    assert gold_spans(questions, "a") == [(1, 5), (9, 12)] and gold_spans(questions, "c") == []
