"""App performance figures, measured, not guessed: the sample set through every default chunker on the
offline defaults (cold and cached), one question across all chunkers, and the first page render in chromium.

Usage: .venv/bin/python scripts/bench_app.py [--no-browser]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def chunking_and_queries(workspace: Path) -> None:
    from core.datasets import load_dataset
    from core.settings import Settings
    from core.workbench import DEFAULT_SPECS, ask_all, build_services, make_corpus, run_chunkers, sample_folder

    ds = load_dataset(sample_folder())
    corpus = make_corpus(ds.documents, ds, join=False)
    t0 = time.perf_counter()
    services = build_services(Settings(workspace=str(workspace)))
    print(f"services (MiniLM, Chroma, rule CNM) ready in {time.perf_counter() - t0:.1f} s")
    for label in ("cold", "cached"):
        t0 = time.perf_counter()
        results = run_chunkers(services, corpus, DEFAULT_SPECS)
        total = time.perf_counter() - t0
        per = ", ".join(f"{s} {r.seconds:.1f}" for s, r in results.items())
        print(f"sample set ({len(ds.documents)} manuals, {ds.n_chars:,} chars) through {len(results)} chunkers, "
              f"{label}: {total:.1f} s  [{per}]")
    times = []
    for q in ds.questions[:20]:
        t0 = time.perf_counter()
        ask_all(services, results, q.text(True), 5, q)
        times.append(time.perf_counter() - t0)
    print(f"one question across all {len(results)} chunkers: median {statistics.median(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms over {len(times)} questions")
    print(f"peak memory (RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def first_render(workspace: Path) -> None:
    from playwright.sync_api import sync_playwright

    port = 8599
    env = {**os.environ, "CHUNKLENS_WORKSPACE": str(workspace)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for label in ("first load", "second load"):
                page = browser.new_page()
                t0 = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}")
                page.get_by_role("heading", name="ChunkLens").wait_for(timeout=60_000)
                print(f"home page rendered in chromium ({label}): {time.perf_counter() - t0:.2f} s")
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_browser:
            first_render(Path(tmp) / "render")
        chunking_and_queries(Path(tmp) / "ws")


if __name__ == "__main__":
    main()
