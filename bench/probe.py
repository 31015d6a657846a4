"""The hostile inputs of the shared-server review, replayed: each check runs in its own child process with an
address-space cap and a wall-clock limit, so a check that regresses to quadratic time or to gigabytes of memory
fails on its own line instead of freezing or killing the probe.

Usage: .venv/bin/python -m bench.probe [--only NAME ...] [--json OUT]

Each line: the check, PASS or FAIL, its seconds, and what it saw. Exit status 1 when any check fails. The tests
prove each of these one by one; this is the same set as one command, to run against a build or a server
configuration before a demo.
"""

from __future__ import annotations

import io
import json
import os
import resource
import struct
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MB = 2**20
MEMORY_CAP = 3 * 2**30  # the address space each check may take (numpy, scipy and PDFium fit well inside)
TIME_CAP = 120.0  # seconds before a check's process is killed


def _timed(call: Callable[[], object], limit: float) -> str:
    started = time.perf_counter()
    call()
    took = time.perf_counter() - started
    if took > limit:
        raise AssertionError(f"{took:.2f} s, over {limit} s")
    return f"{took:.3f} s"


def heading_followed_by_blanks() -> str:
    """A heading line and 200,000 blanks, read as CHOP learns a library and as the heading prefixes do (the
    review's 20,000 blanks took 3.9 to 8.5 s and grew 4x per doubling)."""
    from core.chunkers.headers import markdown_headings
    from core.methods.chop.reading import first_heading, first_level_lines

    blanks = " " * 200_000
    seen = [_timed(lambda: markdown_headings("# a" + blanks + "b\n"), 1.0),
            _timed(lambda: first_level_lines("# a" + blanks + "b\n"), 1.0),
            _timed(lambda: first_heading("a" + blanks + "b\n===\n"), 1.0)]
    return "ATX / # / underlined: " + ", ".join(seen)


def model_named_on_every_line() -> str:
    """A 72 KB manual naming its model 1,300 times (33 s of CPU before the first chunk in the review)."""
    from core.methods.chop.reading import types_after_models

    lines = [f"The Orbit K5 flight controller keeps step {i} and the Orbit K5 board holds it." for i in range(1300)]
    text = "\n".join(lines)[:72_000]
    return _timed(lambda: types_after_models([("Orbit K5", text)]), 5.0)


def intervals_for_many_figures() -> str:
    """12 chunkers x 8 metrics x 3,000 questions: 96 figures (4.6 GB at once before; the check may take 3 GB)."""
    import numpy as np

    from core.evaluation.significance import intervals

    table = (np.random.default_rng(1).random((96, 3000)) < 0.4).astype(np.float64)
    bounds = intervals(table)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if not np.all(bounds[:, 0] <= bounds[:, 1]):
        raise AssertionError("an interval's bounds are out of order")
    return f"peak {peak:.0f} MB"


def unanimous_winner_is_ahead() -> str:
    """One chunker right on both judged questions, the other on neither: the verdict said they "score the same"."""
    from core.evaluation.bench import with_intervals
    from core.evaluation.metric_at import MetricAt
    from core.evaluation.significance import compare
    from core.evaluation.verdicts import closest_gap

    hit_1 = MetricAt("hit", 1)
    hits = {"won": [1.0, 1.0], "lost": [0.0, 0.0]}
    results: dict[str, dict[str, Any]] = {
        s: {hit_1.key: sum(v) / len(v), **with_intervals({hit_1.key: v}), "per_question": {hit_1.key: v}}
        for s, v in hits.items()}
    pairs = compare({s: r["per_question"] for s, r in results.items()}, [hit_1.key])
    report = {"n_questions": 2, "k": [1], "results": results, "pairs": [p.to_json() for p in pairs]}
    gap = closest_gap(report, hit_1)
    said = gap.sentence("judged questions") if gap else ""
    if "score the same" in said or "won is ahead of lost" not in said:
        raise AssertionError(said or "no verdict")
    return said[:90]


def same_text_other_title() -> str:
    """Two libraries, one text under two titles: their chunk runs (and collections) must be keyed apart."""
    from core.pipeline import corpus_fingerprint
    from core.schema.documents import Document

    a = Document(doc_id="m", title="Fan F30 manual", text="Clean the filter.")
    b = Document(doc_id="m", title="Heater H2 manual", text="Clean the filter.")
    if corpus_fingerprint([a]) == corpus_fingerprint([b]):
        raise AssertionError("one key for two titles")
    return "keyed apart"


def zip_that_overstates_a_packed_size() -> str:
    """A judged zip of 80 KB that inflates to 29 MB (two documents, each under the character limit), stating a
    packed size 1/90 of its unpacked size (410:1 was stored before)."""
    from core.infra.errors import DatasetError
    from core.ingest.judged import read_zip

    text = "".join(" " * 1500 + "abcdefghij"[i % 10] for i in range(14 * MB // 1501))
    corpus = "".join(json.dumps({"doc_id": d, "text": text}) + "\n" for d in ("big", "bigger")).encode()
    questions = json.dumps({"question": "q?", "references": [{"doc_id": "big", "start": 0, "end": 5}]}).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("set/corpus.jsonl", corpus)
        zf.writestr("set/questions.jsonl", questions + b"\n")
    data = _restate_packed(buf.getvalue(), "set/corpus.jsonl", len(corpus) // 90)
    try:
        read_zip(data, 200 * MB)
    except DatasetError as exc:
        if "sizes are false" not in str(exc) and "compressed" not in str(exc):
            raise AssertionError(f"refused for another reason: {exc}") from exc
        return str(exc)[:90]
    raise AssertionError("stored")


def _restate_packed(data: bytes, name: str, packed: int) -> bytes:
    """`data` with member `name`'s packed size stated as `packed`, in its central entry and its local header."""
    out = bytearray(data)
    pos = out.find(b"PK\x01\x02")
    while pos != -1:
        length = struct.unpack_from("<H", out, pos + 28)[0]
        if bytes(out[pos + 46:pos + 46 + length]) == name.encode():
            struct.pack_into("<L", out, pos + 20, packed)
            struct.pack_into("<L", out, struct.unpack_from("<L", out, pos + 42)[0] + 18, packed)
        pos = out.find(b"PK\x01\x02", pos + 4)
    return bytes(out)


def docx_body_under_another_name() -> str:
    """40 MB of XML as `word/document.dat`: refused by the XML limit before python-docx parses it (which counted
    parts by file name, so python-docx spent 15 s on it before the character limit refused the text)."""
    from bench.hostile import renamed_body, xml_docx
    from core.infra.errors import DocumentError
    from core.ingest.documents import load_bytes

    data = renamed_body(xml_docx(40))
    started = time.perf_counter()
    try:
        load_bytes("renamed.docx", data)
    except DocumentError as exc:
        if time.perf_counter() - started > 5:
            raise AssertionError(f"{time.perf_counter() - started:.1f} s to refuse: {exc}") from exc
        if "XML" not in str(exc):
            raise AssertionError(f"refused for another reason: {exc}") from exc
        return str(exc)[:90]
    raise AssertionError("read")


def worker_environment_holds_no_key() -> str:
    """A reader worker must not inherit the server's keys."""
    from core.ingest.worker import worker_environment

    env = worker_environment({"OPENAI_API_KEY": "sk-probe", "PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "x"})
    leaked = [k for k in env if "KEY" in k or "SECRET" in k or "TOKEN" in k]
    if leaked:
        raise AssertionError(f"worker sees {leaked}")
    return f"{len(env)} variables"


def damaged_vector_rows() -> str:
    """Sample vectors of the wrong length, with a NaN or an infinity, or not unit length, as a damaged machine file
    holds them: none may be served (7 of 8 chunkers failed and `cosine` scored 1.00 for a true 0.11)."""
    import numpy as np

    from core.store.vector_checks import sound_rows

    good = np.full(384, 384 ** -0.5, dtype=np.float32)
    rows = {"good": good.tobytes(), "short": good[:100].tobytes(), "nan": np.where(good > 0, np.nan, 0).astype(
        np.float32).tobytes(), "inf": np.full(384, np.inf, dtype=np.float32).tobytes(),
        "long": (2 * good).tobytes()}
    served, refused = sound_rows(rows, 384)
    if set(served) != {"good"}:
        raise AssertionError(f"served {sorted(served)}")
    return f"served 1 of 5; refused {dict(refused)}"


CHECKS: dict[str, Callable[[], str]] = {
    "heading-blanks": heading_followed_by_blanks,
    "types-after-models": model_named_on_every_line,
    "intervals-memory": intervals_for_many_figures,
    "unanimous-verdict": unanimous_winner_is_ahead,
    "title-keys": same_text_other_title,
    "zip-lies": zip_that_overstates_a_packed_size,
    "docx-renamed-xml": docx_body_under_another_name,
    "worker-env": worker_environment_holds_no_key,
    "damaged-vectors": damaged_vector_rows,
}


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_capped(name: str) -> dict[str, object]:
    """Run one check in a child process under the caps: its outcome, seconds and last line."""
    started = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    try:
        done = subprocess.run([sys.executable, "-m", "bench.probe", "--inside", name], capture_output=True,
                              text=True, timeout=TIME_CAP, preexec_fn=_cap, env=env,
                              cwd=Path(__file__).resolve().parent.parent)
        lines = (done.stdout.strip() or done.stderr.strip() or "no output").splitlines()
        ok, said = done.returncode == 0, lines[-1]
    except subprocess.TimeoutExpired:
        ok, said = False, f"killed after {TIME_CAP:.0f} s"
    return {"check": name, "ok": ok, "seconds": round(time.perf_counter() - started, 2), "saw": said}


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(CHECKS), help="run only these checks")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        try:
            print(CHECKS[args.inside]())
        except AssertionError as exc:
            print(f"failed: {exc}")
            return 1
        return 0
    outcomes = []
    for name in args.only or CHECKS:
        outcome = run_capped(name)
        outcomes.append(outcome)
        print(f"{name:20} {'PASS' if outcome['ok'] else 'FAIL'} {outcome['seconds']:7.2f} s  {outcome['saw']}",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=2) + "\n")
    return 0 if all(o["ok"] for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
