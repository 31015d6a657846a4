"""The figures the retrieval studies show (`bench.retrieval`, `bench.rerank`), each read from a row of scores by name
(`MetricAt.read`): one definition both studies import, so neither imports the other for them."""

from __future__ import annotations

from core.evaluation.metric_at import MetricAt

HIT_1, HIT_10, MRR_10 = MetricAt("hit", 1), MetricAt("hit", 10), MetricAt("mrr", 10)
WRONG_DOC_10, SPAN_RECALL_5 = MetricAt("wrong_doc", 10), MetricAt("span_recall", 5)
