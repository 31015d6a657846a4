"""`python -m bench.retrieval`: the default lexical weight is chosen over every set at once, and the Markdown it
renders from a report."""

from __future__ import annotations

from bench.retrieval import choose_weights, index_costs, render, settings_grid


def _rep(values: dict[str, float], cold: bool = False, lexical_built: bool | None = None) -> dict:
    results = {}
    for spec, mrr in values.items():
        r = {"hit@1": mrr / 2, "hit@10": mrr, "mrr@10": mrr, "span_recall@5": 0.5, "wrong_doc@10": 0.25,
             "cached": {"collection": not cold}, "seconds": {"embed": 10.0 if cold else 0.0, "lexical": 0.4}}
        if lexical_built is not None:
            r["cached"]["lexical"] = not lexical_built
        results[spec] = r
    return {"results": results}


def test_the_weight_with_the_best_mean_over_every_set_wins_not_one_set():
    grid = [label for label, _ in settings_grid([0.3, 0.7])]
    assert grid == ["dense", "bm25", "hybrid-rrf-0.3", "hybrid-rrf-0.7", "hybrid-weighted-0.3", "hybrid-weighted-0.7"]
    # set a prefers 0.7 a little; set b prefers 0.3 a lot: 0.3 has the better mean
    a = {"dense": 0.1, "bm25": 0.2, "hybrid-rrf-0.3": 0.40, "hybrid-rrf-0.7": 0.45, "hybrid-weighted-0.3": 0.3,
         "hybrid-weighted-0.7": 0.2}
    b = {"dense": 0.1, "bm25": 0.2, "hybrid-rrf-0.3": 0.60, "hybrid-rrf-0.7": 0.30, "hybrid-weighted-0.3": 0.1,
         "hybrid-weighted-0.7": 0.5}
    reports = {"a": {lb: _rep({"x": v}) for lb, v in a.items()}, "b": {lb: _rep({"x": v}) for lb, v in b.items()}}
    choice = choose_weights(reports)
    assert choice["best"]["rrf"]["lexical_weight"] == 0.3
    assert choice["best"]["weighted"]["lexical_weight"] == 0.7  # (0.2 + 0.5) / 2 beats (0.3 + 0.1) / 2
    assert choice["means"]["hybrid-rrf-0.3"] == 0.5


def test_render_names_every_setting_and_the_index_cost():
    per = {"dense": _rep({"x": 0.2}, cold=True), "bm25": _rep({"x": 0.4}, lexical_built=True)}
    assert index_costs(per) == {"x": {"embed": 10.0, "lexical": 0.4}}
    md = render({"long_text": "truncate", "chunkers": ["x"], "reports": {"chroma_eval": per},
                 "choice": choose_weights({"chroma_eval": per})}, "python -m bench.retrieval --sets chroma_eval")
    assert "| dense | 0.10 / 0.20 / 0.200 / 0.500 |" in md and "| bm25 |" in md
    assert "x 0.40 s vs 10.0 s (4.0%)" in md and "--sets chroma_eval" in md
