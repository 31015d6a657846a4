"""What the app does, as plain functions over `core`, one module per use case (corpus, runs, queries,
scoring, tags, demo): build the services a settings object names, run a set
of chunkers over documents, ask one question of every chunker, benchmark. No Streamlit here; pages call these
and draw the results.

Failures are per chunker: one chunker that cannot run (an LLM server that is down, say) is reported with its
message while every other chunker's results are kept.
"""

from core.evaluation.results import RunSummary
from core.workbench.corpus import Corpus, folder_documents, make_corpus, sample_folder
from core.workbench.demo import DemoSummary, embed_sample_set, guided_demo
from core.workbench.queries import (
    GeneratedAnswer,
    QueryResult,
    answer_each,
    ask_all,
    gold_overlap,
    pool_depths,
    rescore,
    retriever_for,
    run_query,
)
from core.workbench.runs import (
    DEFAULT_SPECS,
    MAX_SPECS_SHARED,
    MORE_SPECS,
    ChunkerResult,
    RunQuery,
    UnreadPart,
    check_spec_count,
    edits_key,
    restore_runs,
    run_chunkers,
    run_summaries,
    unread_part,
    unread_parts,
    unread_share_of,
    words_only_unread,
)
from core.workbench.scoring import (
    MIN_JUDGED_FOR_INTERVALS,
    RESULTS_DIR,
    benchmark,
    capped_questions,
    evaluate_result,
    fast_embedding_cost,
    generate_library_set,
    generated_set_trust,
    judged_benchmark,
    judged_only,
    question_cap_line,
)
from core.workbench.tags import (
    MAX_TAGS_BYTES,
    apply_cnm_edits,
    gold_tags,
    replay_cnm_edits,
    tag_accuracy,
    tag_file_edits,
)

__all__ = ["ChunkerResult", "Corpus", "DEFAULT_SPECS", "DemoSummary", "GeneratedAnswer", "MAX_SPECS_SHARED",
    "MAX_TAGS_BYTES", "MIN_JUDGED_FOR_INTERVALS", "MORE_SPECS", "QueryResult", "RESULTS_DIR", "RunQuery",
    "RunSummary", "UnreadPart", "answer_each", "apply_cnm_edits", "ask_all", "benchmark", "capped_questions",
    "check_spec_count",
    "edits_key", "embed_sample_set", "evaluate_result", "folder_documents", "generate_library_set",
    "fast_embedding_cost", "generated_set_trust",
    "gold_overlap", "gold_tags", "guided_demo", "judged_benchmark", "judged_only", "make_corpus", "pool_depths",
    "question_cap_line",
    "replay_cnm_edits", "rescore", "restore_runs", "retriever_for", "run_chunkers", "run_query", "run_summaries",
    "sample_folder", "tag_accuracy", "tag_file_edits", "unread_part", "unread_parts", "unread_share_of",
    "words_only_unread"]
