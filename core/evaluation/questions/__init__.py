"""Generated questions with verified evidence: a qa-spans v1 set for documents that have no gold.

Users' own manuals come without questions, and the bench needs questions whose evidence is an exact character
span. A chat model writes the questions; the program makes sure each kept question's evidence is really in the
document, exactly once, so the set can be scored like the human-written ones.

Where to ask. Chunking matters most where near-duplicate manuals differ: a sentence holding a number, a unit, a
model code or a spec value that the other documents do not hold, a procedure step, a part name. Passages are drawn
from across each document (`candidate_passages`), weighted toward such sentences (`sentence_weight`), with a
seeded generator, so a seed fixes the draw.

Two designs (`DESIGNS`):
- `pick` (default, suits small local models): the program picks the evidence (one sentence with a distinctive
  fact, or two adjacent ones when the first is short) and the model writes only the question it answers, as JSON
  `{"question": str}`. The evidence is exact by construction.
- `quote`: the model gets a passage and writes a question and a verbatim evidence quote,
  `{"question": str, "quote": str}`; the program locates the quote (`locate_quote`).

What is kept (`check_answer`). A question is kept only if
(a) its evidence is found exactly once in its document: whitespace runs and curly / straight quote characters
    match loosely, the stored offsets are those of the original text ("quote not found", "quote found more than
    once"; "quote too short" for a quote of fewer than `MIN_QUOTE_WORDS` words);
(b) it does not copy its evidence ("copies its evidence"): more than `COPY_THRESHOLD` of the question's content
    words (stop words removed, Snowball stems) appear in the evidence AND at least `COPY_RUN_SHARE` of its words
    lie in runs of `COPY_RUN_WORDS` consecutive words copied from it (`copies_evidence`);
(c) it is not a duplicate of a question kept about the same product: the same normalised text, or a content-word
    Jaccard of at least `DUPLICATE_JACCARD` ("duplicate"). Questions are asked product-named
    (`Question.text(qualify=True)`), so the same words about two near-duplicate manuals ("What temperatures can I
    set?" of the 225B and of the 226R, with different answers) are two questions, and the hardest kind for a
    chunker: both are kept;
and its answer parses ("malformed answer": not JSON, not an object, an empty question) and looks like a question
("not a question": no question mark and no question word first). A request the backend could not answer is
"no answer from the model"; when every request of the first batch fails, the backend cannot answer at all and
`LLMError` is raised.

The copy rule, measured (`scripts/question_overlap_study.py`): each human-written question of the shared
qa-spans sets against its gold evidence, widened to the whole sentences it touches (the generator's evidence is
whole sentences; covid_qa's references are the answer's words alone):

                       overlap                          run share            rejected by
    set               n   median  p90   p95  at 1.0    median  p90   p95    overlap  the rule
    chroma_eval      472   0.60  0.90  1.00  0.08      0.00  0.50  0.55     0.093    0.008
    covid_qa         572   0.67  1.00  1.00  0.30      0.00  0.50  0.67     0.306    0.042
    emanual_galaxy    50   1.00  1.00  1.00  0.62      0.00  0.57  0.63     0.620    0.020
    eurorack_modules  40   0.71  1.00  1.00  0.28      0.00  0.36  0.40     0.275    0.000
    all             1134   0.62  1.00  1.00  0.22      0.00  0.50  0.61     0.230    0.026
    (run share over all: p97 0.69, p99 0.82)

Content-word overlap alone cannot tell a copy: people asking about a manual reuse its words ("How can I turn on
the GPS?" against "... Tap to turn on ..."), so the overall p90 and p95 are both 1.0 and 62 % of emanual_galaxy's
questions sit at 1.0; no overlap threshold above the 90th percentile rejects anything, and 0.9 alone would reject
23 % of real questions (62 % of emanual_galaxy's). What a copied question has and real ones rarely have is long
verbatim runs of the evidence: the run share's overall p95 is 0.61 and p97 0.69. The rule therefore asks for both,
overlap above 0.9 (all content words, give or take rounding) and run share at least 0.7 (above the p95 of the
pooled questions and of every set): it rejects 2.6 % of the human questions (4.2 % of covid_qa's, the most).
Every set's README repeats these figures.
"""

from core.evaluation.questions.asking import (
    DESIGNS,
    DUPLICATE_JACCARD,
    PASSAGE_CHARS,
    PICK_SCHEMA,
    QUOTE_SCHEMA,
    SYSTEM,
    Verdict,
    check_answer,
    is_duplicate,
    looks_like_question,
    normalised,
    parse_answer,
    passage_window,
    pick_request,
    product_of,
    quote_request,
    tidy_question,
)
from core.evaluation.questions.evidence import (
    COPY_RUN_SHARE,
    COPY_RUN_WORDS,
    COPY_THRESHOLD,
    MIN_QUOTE_WORDS,
    QuoteIndex,
    content_words,
    copied_run_share,
    copies_evidence,
    copy_overlap,
    locate_quote,
    loose_text,
)
from core.evaluation.questions.generate import (
    MAX_ATTEMPTS_PER_QUESTION,
    PROMPT_VERSION,
    GeneratedSet,
    check_out_folder,
    generate_questions,
    readme,
    write_set,
)
from core.evaluation.questions.passages import (
    MAX_SENTENCE_CHARS,
    MIN_SENTENCE_CHARS,
    SHORT_SENTENCE_CHARS,
    Passage,
    candidate_passages,
    facts,
    sample_passages,
    sentence_spans,
    sentence_weight,
)

__all__ = ["COPY_RUN_SHARE", "COPY_RUN_WORDS", "COPY_THRESHOLD", "DESIGNS", "DUPLICATE_JACCARD", "GeneratedSet",
    "MAX_ATTEMPTS_PER_QUESTION", "MAX_SENTENCE_CHARS", "MIN_QUOTE_WORDS", "MIN_SENTENCE_CHARS", "PASSAGE_CHARS",
    "PICK_SCHEMA", "PROMPT_VERSION", "Passage", "QUOTE_SCHEMA", "QuoteIndex", "SHORT_SENTENCE_CHARS", "SYSTEM",
    "Verdict", "candidate_passages", "check_answer", "check_out_folder", "content_words", "copied_run_share",
    "copies_evidence", "copy_overlap", "facts", "generate_questions", "is_duplicate", "locate_quote",
    "looks_like_question", "loose_text", "normalised", "parse_answer", "passage_window", "pick_request",
    "product_of", "quote_request", "readme", "sample_passages", "sentence_spans", "sentence_weight", "tidy_question",
    "write_set"]
