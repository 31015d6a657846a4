"""Query: one question against every chunker, their top-k side by side, and this question's metrics."""

from __future__ import annotations

from typing import NotRequired, TypedDict

import pandas as pd
import streamlit as st

from components import charts, judged_intervals, judging, state
from components.html import hit_card_html, md_escape, query_tags_html, retrieval_text
from components.progress import progress_status
from core.evaluation.collisions import question_grid
from core.evaluation.judging import corpus_question, record_judgment, verdict
from core.evaluation.relevance import source_resolver
from core.infra.errors import ChunkLensError
from core.ingest.datasets import MAX_QUESTION_CHARS
from core.ingest.judged import QID_PREFIX
from core.outputs.report_pages import app_settings, query_report_html
from core.schema.documents import documents_by_id
from core.schema.questions import Question
from core.services import Services
from core.workbench import (
    GeneratedAnswer,
    QueryResult,
    answer_each,
    ask_all,
    gold_overlap,
    judged_only,
    pool_depths,
    rescore,
    words_only_unread,
)


class Asked(TypedDict):
    """The question on show, kept in the session (`answers`) from "Ask every chunker" until the next one."""
    question: str
    gold: Question | None  # what its hits are scored against: the QA set's question, or this library's judgments
    answers: dict[str, QueryResult]
    own: bool  # the user judges its hits
    judged_text: str  # the wording its judgments are kept under
    generated: NotRequired[dict[str, GeneratedAnswer]]


state.through_app()
st.header("Query")
corpus = state.corpus()
results = {s: r for s, r in state.runs(corpus).items() if r.ok}
found = state.services()
if not results or found is None:
    st.info("Run the chunkers on the Chunk & compare page first.")
    st.stop()
services: Services = found  # the functions below see a global's declared type, not its narrowing

k = state.settings().top_k
retrieval = state.retrieval()
st.caption(f"Every chunker is searched the same way: {retrieval_text(retrieval)}, top {k} (change it in the "
           "sidebar's settings).")
gold = None
if corpus.questions:
    options = ["(type my own)"] + [f"{q.qid}: {q.question}" for q in corpus.questions]
    picked = st.selectbox("Question from the QA set", options)
    if picked != options[0]:
        gold = corpus.questions[options.index(picked) - 1]
qualify = st.checkbox("Put the product name in front of the question", value=False,
                      help="Near-duplicate manuals can only be told apart when the question names the product.")
default = gold.text(qualify) if gold else ""
question = st.text_input("Question", default, key=f"question-{gold.qid if gold else 'own'}-{qualify}",
                         max_chars=max(MAX_QUESTION_CHARS, len(default)))  # the browser's own stop

lib = state.library()
own = gold is None or gold.qid.startswith(QID_PREFIX)  # typed, or judged here before: the user judges its hits
source_of = source_resolver(corpus.documents)


def judged_gold(text: str) -> Question | None:
    """The library's judgments of this wording, in the corpus's offsets (None when nothing is judged yet)."""
    found = lib.judged.find(text)
    return corpus_question(corpus.documents, found) if found else None


if st.button("Ask every chunker", type="primary", disabled=not question.strip()):
    judged_text = gold.question if gold else question
    scoring = judged_gold(judged_text) if own else gold
    try:
        answers = ask_all(services, results, question, k, scoring, retrieval, source_of)
    except ChunkLensError as exc:  # a question over the length limit: one line, nothing asked
        st.error(md_escape(str(exc)))
        st.stop()
    st.session_state["answers"] = Asked(question=question, gold=scoring, answers=answers, own=own,
                                        judged_text=judged_text)
    log = st.session_state.setdefault("query_log", [])
    for spec, a in answers.items():
        row = {"question": question[:80], "chunker": spec, "retrieval": retrieval.mode,
               "ms": round(a.seconds * 1000, 1)}
        if a.score:
            row.update({m: round(v, 3) for m, v in a.score.values.items()})
        log.append(row)

stored: Asked | None = st.session_state.get("answers")  # only the button above sets it
if not stored:
    st.stop()
shown: Asked = stored  # as `services`: declared for the functions below
answers, gold = shown["answers"], shown["gold"]
by_id = documents_by_id(corpus.documents)
texts = {d.doc_id: d.text for d in corpus.documents}


def page_label(chunk) -> str:
    doc = by_id.get(chunk.doc_id)
    return doc.page_label(chunk.start, chunk.end) if doc else ""



def keep(judgment: judging.Judgment) -> None:
    """Save one judgment, score the hits on screen again against the question's new gold, and redraw."""
    hit = answers[judgment.spec].hits[judgment.rank - 1].chunk
    try:
        record_judgment(lib.judged, corpus.documents, lib.documents(), shown["judged_text"], hit, judgment.evidence)
    except ChunkLensError as exc:
        st.error(f"The judgment could not be saved: {md_escape(str(exc))}")
        return
    shown["gold"] = judged_gold(shown["judged_text"])
    if shown["gold"] is not None:  # the judgment just saved is found
        rescore(services, results, answers, shown["gold"], k, retrieval, source_of)
    st.rerun()


if shown.get("own"):
    st.caption("Judge the hits: **✓ answers it** (then tick the sentences that hold the answer) or **✗ does not**. "
               "Judgments are kept on the documents themselves, in this library's own question set, so they score "
               "every chunker, also ones run later; Benchmark runs on them.")
    if gold is not None and gold.references:
        depth = pool_depths(corpus, answers, gold, k)
        table = [{"chunker": s, **{m: round(a.score.at(m, k) or 0.0, 3) for m in ("hit", "mrr", "ndcg")},
                  "judged": depth[s].label} for s, a in answers.items() if a.score]
        st.table(pd.DataFrame(table).set_index("chunker"))
        st.caption(f"'judged': how many of each chunker's top {k} your judgments cover. An unjudged hit counts as "
                   "not answering, as in pooled (TREC-style) evaluation: judge it to be sure.")
    elif gold is not None:
        st.info("No hit judged as answering yet: mark one that answers to get Hit and MRR for every chunker.")
    if gold is not None:
        with st.form("reference-answer", border=False):
            answer = st.text_input("Reference answer (optional)", gold.answer or "",
                                   help="Generated answers below are scored against it (token F1, ROUGE-L)")
            if st.form_submit_button("Save the answer"):
                lib.judged.set_answer(gold.qid, answer)
                shown["gold"] = judged_gold(shown["judged_text"])
                if shown["gold"] is not None:  # `gold` above was these judgments
                    rescore(services, results, answers, shown["gold"], k, retrieval, source_of)
                st.rerun()
elif gold:
    table = [{"chunker": s, **{m: round(v, 3) for m, v in a.score.values.items()}}
             for s, a in answers.items() if a.score]
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
judged = judged_only(lib.dataset())
if judged is not None:
    judged_intervals.render(services, judged, results, k, corpus.joined, retrieval)
picked_hit = judging.picking() if shown.get("own") else None
grid = question_grid({s: [h.span for h in a.hits]
                      for s, a in answers.items() if not a.error},
                     gold.references if gold else [], source_of)
grid_figure = charts.collision_grid(grid, "Where each chunker's hits come from (★ the document with the answer)"
                                    if gold and gold.references else "Where each chunker's hits come from")
st.plotly_chart(grid_figure, width="stretch", key="collision-grid")
st.download_button(
    "Download report", lambda: query_report_html(shown["question"], answers, corpus.documents, k,
                                                 app_settings(services, results, retrieval, corpus.joined),
                                                 grid_figure),
    "chunklens-question.html", "text/html", help="One HTML file that opens offline: the question, settings and "
    "versions, each chunker's metrics and hits with their pages, and a paragraph on what they show")
chat_label = getattr(services.chat, "label", "the chat model")
with st.expander(f"Answers from each chunker's top 3 ({md_escape(chat_label)})", expanded="generated" in shown):
    st.caption("The same model and prompt for every chunker, so the answers differ only by what was retrieved. "
               "Slow on a CPU with the local model; every finished answer is cached, so stopping and asking again "
               "costs nothing for those. An OpenAI-compatible server (sidebar: CNM backend) is much faster.")
    if st.session_state.pop("answering", False):  # the last run was cut short by Cancel (or a page change)
        st.warning("Answering was cancelled. The answers that had finished are cached: generating again asks "
                   "only for the rest.")
    if st.button("Generate the answers"):
        with progress_status("Generating answers…", lambda _, done, total: f"{done}/{total} answers") as (
                status, on_answer):
            st.button("Cancel", help="Stops after the answers in progress; they and all finished ones are cached")
            st.session_state["answering"] = True
            try:
                shown["generated"] = answer_each(services, answers, shown["question"], gold, 3, on_answer)
                status.update(label="Answers ready", state="complete")
            except ChunkLensError as exc:
                status.update(label=f"Answering stopped: {md_escape(str(exc))}", state="error")
            st.session_state.pop("answering", None)
    generated = shown.get("generated") or {}
    if generated:
        rows = [{"chunker": spec, "answer": g.error or g.text, "seconds": round(g.seconds, 1), "cached": g.cached,
                 **({"token F1": round(g.score.f1, 3), "ROUGE-L": round(g.score.rouge_l, 3)} if g.score else {})}
                for spec, g in generated.items()]
        if gold and gold.answer:
            st.markdown(f"Reference answer: {md_escape(gold.answer)}")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

specs = list(answers)
for row_start in range(0, len(specs), 4):
    for col, spec in zip(st.columns(4), specs[row_start : row_start + 4]):
        a = answers[spec]
        with col:
            st.markdown(f"**{md_escape(spec)}** · {a.seconds * 1000:.0f} ms")
            if a.error:
                st.error(md_escape(a.error))  # it may quote a server's reply
                continue
            if a.query_tags:
                st.html(query_tags_html(a.query_tags))
            matched = "title match" if a.query_tags and a.query_tags.label == "title routing" else "CNM match"
            for h in a.hits:
                relevant = a.score.relevant[h.rank - 1] if a.score else None
                mark = (' <span style="color:#15803d">relevant</span>' if relevant else
                        (' <span style="color:#b91c1c">not relevant</span>' if relevant is False else ""))
                if shown.get("own"):
                    mark = " " + judging.verdict_html(verdict(h.chunk, gold, texts))
                st.html(hit_card_html(spec, h, mark, f"{matched} {h.tag_match:g}" if h.tag_match else "",
                                      words_only_unread(services, h.chunk, shown["question"]),
                                      page_label(h.chunk),
                                      gold_overlap(h.chunk, gold)))
                if not shown.get("own"):
                    continue
                judgment = judging.hit_buttons(spec, h.rank, verdict(h.chunk, gold, texts))
                if picked_hit == (spec, h.rank):
                    judgment = judging.evidence_picker(spec, h.rank, h.chunk) or judgment
                if judgment:
                    keep(judgment)

if st.session_state.get("query_log"):
    st.subheader("This session's questions")
    st.dataframe(pd.DataFrame(st.session_state["query_log"]), hide_index=True, width="stretch")
