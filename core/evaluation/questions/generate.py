"""A whole generation run (requests in batches, each answer checked, the reasons for every rejection counted)
and the qa-spans v1 folder it writes, with a README."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.evaluation.questions.asking import DESIGNS, check_answer, pick_request, product_of, quote_request
from core.evaluation.questions.evidence import COPY_RUN_SHARE, COPY_RUN_WORDS, COPY_THRESHOLD, QuoteIndex
from core.evaluation.questions.passages import Passage, sample_passages
from core.infra.errors import GenerationError
from core.ingest.datasets import corpus_jsonl, questions_jsonl
from core.llm.base import ChatAnswer, ChatRequest, LLMClient, LLMError
from core.schema.documents import Document, documents_by_id
from core.schema.questions import Question
from core.schema.spans import Span

PROMPT_VERSION = "questions-v2"
MAX_ATTEMPTS_PER_QUESTION = 3  # candidates asked about per question wanted, at most



@dataclass
class GeneratedSet:
    """The kept questions and the account of the run: what was rejected and why, which model, which prompt, and
    how many answers the model really produced against those the cache held."""

    questions: list[Question]
    rejected: Counter[str]
    model: str
    prompt_version: str = PROMPT_VERSION
    design: str = "pick"
    seed: int = 0
    threshold: float = COPY_THRESHOLD
    calls: int = 0
    cached: int = 0
    errors: int = 0
    stopped: bool = False
    wanted: int = 0

    @property
    def attempts(self) -> int:
        """Answers judged: every one was kept or rejected for one reason."""
        return len(self.questions) + sum(self.rejected.values())

    def rejections(self) -> str:
        """The rejection counts as one line, most frequent first ("none" for none)."""
        return ", ".join(f"{reason} {n}" for reason, n in self.rejected.most_common()) or "none"

    def require_questions(self) -> None:
        """Raise GenerationError, with the rejection counts, when no question was kept."""
        if not self.questions:
            raise GenerationError(f"no question kept of {self.attempts} answers ({self.rejections()})")


def _request(design: str, doc: Document, passage: Passage) -> ChatRequest:
    return pick_request(doc, passage) if design == "pick" else quote_request(doc, passage)


def generate_questions(documents: Sequence[Document], chat: LLMClient, n: int, design: str = "pick",
                       seed: int = 0, progress: Callable[[int, int], None] | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       threshold: float = COPY_THRESHOLD) -> GeneratedSet:
    """Up to `n` questions with verified evidence about `documents`.

    Passages are drawn once (`sample_passages`, at most `MAX_ATTEMPTS_PER_QUESTION * n`) and asked about a few at
    a time (the backend's concurrency), until `n` are kept or the passages run out. `should_stop` is read before
    each batch; every answer received stays in the client's cache, so a rerun after a stop asks only for the rest.
    `progress(done, total)` counts requests against the most that may be sent."""
    if design not in DESIGNS:
        raise GenerationError(f"no question design '{design}' (use {' or '.join(DESIGNS)})")
    if n < 1:
        raise GenerationError("the number of questions must be at least 1")
    docs = [d for d in documents if d.text.strip()]
    if not docs:
        raise GenerationError("no documents with text to ask about")
    passages = sample_passages(docs, MAX_ATTEMPTS_PER_QUESTION * n, seed)
    if not passages:
        raise GenerationError(f"no sentence to ask about in {len(docs)} document(s) (too short, or no prose)")
    by_id = documents_by_id(docs)
    quotes = {d.doc_id: QuoteIndex(d.text) for d in docs}
    before = (chat.stats.calls, chat.stats.cached, chat.stats.errors)
    result = GeneratedSet([], Counter(), chat.label, design=design, seed=seed, threshold=threshold, wanted=n)
    batch = max(1, int(getattr(chat.backend, "max_concurrency", 1) or 1))
    done, pos = 0, 0
    while len(result.questions) < n and pos < len(passages):
        if should_stop is not None and should_stop():
            result.stopped = True
            break
        chunk = passages[pos : pos + min(batch, n - len(result.questions))]
        pos += len(chunk)
        answers = chat.ask_many([_request(design, by_id[p.doc_id], p) for p in chunk])
        if done == 0 and all(a.error for a in answers):
            raise LLMError(f"the chat backend ({chat.label}) could not answer: {answers[0].error}")
        for passage, answer in zip(chunk, answers, strict=True):
            _judge(result, passage, answer, by_id[passage.doc_id], quotes[passage.doc_id])
        done += len(chunk)
        if progress is not None:
            progress(done, len(passages))
    result.calls, result.cached, result.errors = (chat.stats.calls - before[0], chat.stats.cached - before[1],
                                                  chat.stats.errors - before[2])
    return result


def _judge(result: GeneratedSet, passage: Passage, answer: ChatAnswer, doc: Document, quotes: QuoteIndex) -> None:
    """Add one answer to the set: a kept question, or one more rejection under its reason."""
    if len(result.questions) >= result.wanted:
        return
    product = product_of(doc)
    verdict = check_answer(answer, passage, result.design, quotes,
                           [q.question for q in result.questions if q.product == product], result.threshold)
    if verdict.reason is not None or verdict.span is None:
        result.rejected[verdict.reason or "malformed answer"] += 1
        return
    start, end = verdict.span
    result.questions.append(Question(
        qid=f"gen-{len(result.questions) + 1:03d}", question=verdict.question,
        references=(Span(doc.doc_id, start, end),), answer=doc.text[start:end], product=product,
        extra={"qa_type": "generated", "design": result.design, "facts": list(passage.distinctive)}))


# --- writing -----------------------------------------------------------------------------------------------------

def check_out_folder(folder: Path) -> None:
    """The output folder must be new or empty: a set is never written over another."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise GenerationError(f"{folder}: exists and is not an empty folder (choose a new --out)")


def readme(generated: GeneratedSet, documents: Sequence[Document]) -> str:
    """The set's README: how it was made, so a score on it can be read for what it is."""
    rows = "\n".join(f"| {reason} | {n} |" for reason, n in generated.rejected.most_common()) or "| (none) | 0 |"
    return (
        "# Generated questions (qa-spans v1)\n\n"
        f"{len(generated.questions)} questions about {len(documents)} document(s), written by a chat model and "
        "checked by ChunkLens (`python -m core questions`, package `core/evaluation/questions`).\n\n"
        f"- model: {generated.model}\n- prompt version: {generated.prompt_version}\n"
        f"- design: {generated.design} ({'the program picks the evidence, the model writes the question' if generated.design == 'pick' else 'the model writes the question and quotes its evidence, the program locates the quote'})\n"  # noqa: E501
        f"- seed: {generated.seed}\n- questions wanted: {generated.wanted}; answers judged: {generated.attempts}"
        f"{' (stopped early)' if generated.stopped else ''}\n"
        f"- model calls: {generated.calls}; answers from the cache: {generated.cached}; failed requests: "
        f"{generated.errors}\n"
        f"- copy rule: rejected as \"copies its evidence\" when more than {generated.threshold} of the question's "
        f"content words appear in its evidence and at least {COPY_RUN_SHARE} of its words lie in runs of "
        f"{COPY_RUN_WORDS} words copied from it. Measured by scripts/question_overlap_study.py on the 1134 "
        "human-written questions of chroma_eval, covid_qa, emanual_galaxy and eurorack_modules (evidence widened "
        "to whole sentences): content-word overlap median 0.62, p90 1.00, p95 1.00 (so overlap alone cannot "
        "separate copies); run share median 0.00, p90 0.50, p95 0.61, p97 0.69; the rule rejects 2.6 % of the "
        "human questions.\n\n"
        "Every reference is an exact span of its document that occurs there once. Each question's product (its "
        "document's gold model, else its title) is in `product`: `bench --qualify-queries` asks "
        "`Product: question`.\n\n"
        "## Rejected answers by reason\n\n| reason | answers |\n|---|---|\n" + rows + "\n")


def write_set(folder: str | Path, documents: Sequence[Document], generated: GeneratedSet) -> Path:
    """Write corpus.jsonl, questions.jsonl and README.md into a new (or empty) folder; `load_dataset` reads it."""
    root = Path(folder)
    check_out_folder(root)
    generated.require_questions()
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_bytes(corpus_jsonl(list(documents)))
    (root / "questions.jsonl").write_bytes(questions_jsonl(generated.questions))
    (root / "README.md").write_text(readme(generated, documents), encoding="utf-8")
    return root
