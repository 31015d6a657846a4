"""How much of their evidence do human-written questions copy? The figures behind the question generator's
"copies its evidence" rule (`COPY_THRESHOLD`, `COPY_RUN_SHARE` in core/evaluation/questions/evidence.py).

Usage: .venv/bin/python scripts/question_overlap_study.py [--shared ../shared/data] [--sets a,b,...]

Why: the generator rejects a question that is a near-copy of its evidence. Where to draw that line is measured
here, with the generator's own measures, on every human-written question of the shared qa-spans sets:
- overlap (`copy_overlap`): the share of the question's content words (stop words removed, stemmed) that appear
  in its evidence;
- run share (`copied_run_share`): the share of the question's words inside a run of 4 consecutive words that the
  evidence holds in the same order.
A question's evidence is the text of its gold references joined, once as given, once widened to the whole
sentences they touch: the generator's evidence is whole sentences, and covid_qa's references are the answer's
words alone ("over half"). Prints, per set and overall: the number of questions, the median and the 90th / 95th
percentiles of each measure, the share of questions at overlap 1.0, and the share of questions each rule would
reject: overlap alone (> COPY_THRESHOLD), and the generator's rule (overlap > COPY_THRESHOLD and run share >=
COPY_RUN_SHARE).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.evaluation.questions import (  # noqa: E402
    COPY_RUN_SHARE,
    COPY_THRESHOLD,
    copied_run_share,
    copy_overlap,
)
from core.ingest.datasets import load_dataset  # noqa: E402
from core.text import sentences  # noqa: E402

DEFAULT_SETS = ("chroma_eval", "covid_qa", "emanual_galaxy", "eurorack_modules")


def widened(text: str, start: int, end: int) -> tuple[int, int]:
    """The span grown to the whole sentences (`core.text.sentences`) it touches."""
    touched = [(s, e) for s, e in sentences(text) if s < end and e > start]
    return (min(start, touched[0][0]), max(end, touched[-1][1])) if touched else (start, end)


def measures(folder: Path, whole_sentences: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each question's (overlap, run share) against its evidence, as given or widened to whole sentences."""
    ds = load_dataset(folder)
    texts = {d.doc_id: d.text for d in ds.documents}
    overlap, runs = [], []
    for q in ds.questions:
        parts = []
        for r in q.references:
            s, e = widened(texts[r.doc_id], r.start, r.end) if whole_sentences else (r.start, r.end)
            parts.append(texts[r.doc_id][s:e])
        evidence = " ".join(parts)
        overlap.append(copy_overlap(q.question, evidence))
        runs.append(copied_run_share(q.question, evidence))
    return np.array(overlap), np.array(runs)


HEADER = (f"{'set':18s} {'n':>5s} | {'overlap: median':>15s} {'p90':>5s} {'p95':>5s} {'at 1.0':>6s} | "
          f"{'run share: median':>17s} {'p90':>5s} {'p95':>5s} | {'rejected: overlap':>17s} {'rule':>5s}")


def row(name: str, overlap: np.ndarray, runs: np.ndarray) -> str:
    o50, o90, o95 = np.percentile(overlap, [50, 90, 95])
    r50, r90, r95 = np.percentile(runs, [50, 90, 95])
    alone = (overlap > COPY_THRESHOLD).mean()
    rule = ((overlap > COPY_THRESHOLD) & (runs >= COPY_RUN_SHARE)).mean()
    return (f"{name:18s} {len(overlap):5d} | {o50:15.2f} {o90:5.2f} {o95:5.2f} {(overlap >= 1.0).mean():6.2f} | "
            f"{r50:17.2f} {r90:5.2f} {r95:5.2f} | {alone:17.3f} {rule:5.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS))
    args = parser.parse_args()
    print(f"COPY_THRESHOLD = {COPY_THRESHOLD}, COPY_RUN_SHARE = {COPY_RUN_SHARE}")
    for whole in (False, True):
        print(f"\nevidence: {'the references widened to whole sentences' if whole else 'the references as given'}")
        print(HEADER)
        every_o: list[np.ndarray] = []
        every_r: list[np.ndarray] = []
        for name in [s for s in args.sets.split(",") if s]:
            folder = args.shared / name
            if not (folder / "corpus.jsonl").exists():
                print(f"{name:18s} missing ({folder})")
                continue
            overlap, runs = measures(folder, whole)
            every_o.append(overlap)
            every_r.append(runs)
            print(row(name, overlap, runs))
        if every_o:
            o, r = np.concatenate(every_o), np.concatenate(every_r)
            print(row("all", o, r))
            print(f"{'':18s} run share p97 {np.percentile(r, 97):.2f}, p99 {np.percentile(r, 99):.2f}")


if __name__ == "__main__":
    main()
