"""`python -m bench.retrieval`: the default lexical weight is chosen over every set at once, and the Markdown it
renders from a report."""

from __future__ import annotations

from bench.retrieval import choose_weights, render, settings_grid


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


def test_render_names_every_setting_the_emanual_modes_and_the_index_cost(tmp_path):
    import json

    per = {"dense": _rep({"x": 0.2}, cold=True), "bm25": _rep({"x": 0.4}, lexical_built=True)}
    sweep = {"command": "python -m bench.retrieval --sets chroma_eval", "long_text": "truncate", "chunkers": ["x"],
             "reports": {"chroma_eval": per}, "choice": choose_weights({"chroma_eval": per})}
    (tmp_path / "retrieval_sweep.json").write_text(json.dumps(sweep))
    for mode, mrr in (("dense", 0.2), ("hybrid", 0.6)):
        report = {"retrieval": {"mode": mode}, **_rep({"chop": mrr})}
        (tmp_path / f"emanual_qualified_{mode}.json").write_text(json.dumps(report))
    cost = {"dataset": "chroma_eval", "results": {"x": {"n_chunks": 5, "seconds": {"embed": 10.0, "lexical": 0.4}}}}
    (tmp_path / "lexical_cost.json").write_text(json.dumps(cost))
    md = render(tmp_path)
    assert "| dense | 0.10 / 0.20 / 0.200 / 0.500 |" in md and "| bm25 |" in md and "--sets chroma_eval" in md
    assert "| `chop` | 0.10 / 0.20 / 0.200 / 0.25 | 0.30 / 0.60 / 0.600 / 0.25 |" in md  # dense, then hybrid
    assert "The best is `bm25` (0.400" in md
    assert "| chroma_eval | `x` | 5 | 10.0 | 0.40 | 4.0% |" in md
