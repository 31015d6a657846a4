"""LGMGC's scorer on two engines: torch (transformers, the de-quantised GGUF) against llama.cpp (the GGUF as it
is), on the same windows.

    python -m bench.scorer [--data DIR] [--max-docs N] [--theta 300] [--eos-mode eos] [--json OUT]

For every document, `lg` runs once with each scorer. Reported:
- load: seconds from nothing to the first scored window (model load, token sets, one window), per engine;
- speed: seconds per window (median and total over the windows both engines scored), forward passes;
- agreement on the windows torch's lg scored: Pearson r of the p(EOS) values, the share of windows where both
  put their maximum on the same sentence end (that is where lg cuts), and the share of lg parents the two runs
  have in common (same span).
The transformers scorer's one-off de-quantisation goes to the workspace cache; the first run pays it (reported
as part of its load), later runs do not. Both engines use 2 threads.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import run_cli, write_json

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "sample_data" / "qa"


def _timed_windows(scorer: Any, windows: list[dict[str, Any]], texts: dict[str, str]) -> tuple[list[float], list]:
    seconds, curves = [], []
    for w in windows:
        text = texts[w["doc"]][w["start"]: w["end"]]
        started = time.perf_counter()
        scored = scorer.score(text, [p - w["start"] for p in w["positions"]])
        seconds.append(time.perf_counter() - started)
        curves.append(scored.probabilities)
    return seconds, curves


def compare(data: Path, max_docs: int | None, theta: int, eos_mode: str, cache_dir: Path) -> dict[str, Any]:
    from core.ingest.datasets import first_documents, load_dataset
    from core.methods.lgmgc.chunker import logits_guided_spans
    from core.methods.lgmgc.scoring import EosScorer
    from core.methods.lgmgc.scoring_llamacpp import LlamaCppEosScorer

    dataset = load_dataset(data)
    if max_docs:
        dataset = first_documents(dataset, max_docs)
    docs = dataset.documents
    texts = {d.doc_id: d.text for d in docs}
    engines: dict[str, EosScorer | LlamaCppEosScorer] = {"torch": EosScorer(cache_dir=cache_dir, eos_mode=eos_mode),
               "llamacpp": LlamaCppEosScorer(eos_mode=eos_mode)}
    report: dict[str, Any] = {"data": str(data), "documents": len(docs), "theta": theta, "eos_mode": eos_mode,
                              "engines": {}}
    spans: dict[str, list] = {}
    windows: list[dict[str, Any]] = []
    for name, scorer in engines.items():
        started = time.perf_counter()
        first = docs[0].text[:2000]
        scorer.score(first, [len(first)])  # load, token sets, one window
        load = time.perf_counter() - started
        started = time.perf_counter()
        spans[name] = []
        for d in docs:
            parents, traced = logits_guided_spans(d.text, scorer, theta, 50)
            spans[name] += [(d.doc_id, s, e) for s, e in parents]
            if name == "torch":
                windows += [{**w, "doc": d.doc_id} for w in traced if w["positions"]]
        report["engines"][name] = {"label": scorer.label, "load_seconds": round(load, 3),
                                   "lg_seconds": round(time.perf_counter() - started, 3),
                                   "forward_passes": scorer.forward_passes}
    scored = windows  # the windows torch's lg scored (those with a candidate sentence end)
    curves = {}
    for name, scorer in engines.items():
        scorer._memo.clear()  # time the windows afresh
        seconds, curves[name] = _timed_windows(scorer, scored, texts)
        report["engines"][name].update({"seconds_per_window_median": round(statistics.median(seconds), 4),
                                        "seconds_windows_total": round(sum(seconds), 3)})
    flat_t = np.array([p for c in curves["torch"] for p in c])
    flat_l = np.array([p for c in curves["llamacpp"] for p in c])
    same_max = sum(int(np.argmax(t)) == int(np.argmax(c)) for t, c in zip(curves["torch"], curves["llamacpp"],
                                                                           strict=True))
    common = len(set(spans["torch"]) & set(spans["llamacpp"]))
    report["windows"] = len(scored)
    report["positions"] = int(flat_t.size)
    report["pearson_r"] = round(float(np.corrcoef(flat_t, flat_l)[0, 1]), 4) if flat_t.size > 1 else None
    report["mean_abs_diff"] = round(float(np.abs(flat_t - flat_l).mean()), 5) if flat_t.size else None
    report["same_split_share"] = round(same_max / len(scored), 4) if scored else None
    report["parents"] = {"torch": len(spans["torch"]), "llamacpp": len(spans["llamacpp"]), "same": common}
    t, ll = report["engines"]["torch"], report["engines"]["llamacpp"]
    ratio = ll["seconds_per_window_median"] / t["seconds_per_window_median"]
    report["llamacpp_time_per_window_x_torch"] = round(ratio, 2)
    return report


def print_report(r: dict[str, Any]) -> None:
    print(f"{r['documents']} documents, theta {r['theta']}, p({r['eos_mode']}), {r['windows']} windows, "
          f"{r['positions']} sentence ends")
    print(f"{'engine':<10} {'load s':>8} {'s/window':>9} {'windows s':>10} {'lg s':>8} {'passes':>7}")
    for name, e in r["engines"].items():
        print(f"{name:<10} {e['load_seconds']:>8.2f} {e['seconds_per_window_median']:>9.3f} "
              f"{e['seconds_windows_total']:>10.2f} {e['lg_seconds']:>8.2f} {e['forward_passes']:>7}")
    p = r["parents"]
    print(f"llama.cpp per window: {r['llamacpp_time_per_window_x_torch']}x torch's time; "
          f"p(EOS) Pearson r {r['pearson_r']}, "
          f"mean |diff| {r['mean_abs_diff']}; same split in {r['same_split_share']:.0%} of windows; "
          f"{p['same']} of {p['torch']} torch parents identical ({p['llamacpp']} llama.cpp parents)")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scorer", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--theta", type=int, default=300)
    parser.add_argument("--eos-mode", default="eos", choices=["eos", "paragraph", "sum"])
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where the de-quantised checkpoint is kept (default: a fresh temporary folder)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = compare(args.data, args.max_docs, args.theta, args.eos_mode, args.cache_dir or Path(tmp))
    print_report(report)
    write_json(args.json, report)


if __name__ == "__main__":
    raise SystemExit(run_cli(main))
