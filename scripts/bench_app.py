"""App performance figures, measured, not guessed: the guided demo (cold and cached), the sample set through every
default chunker on the offline defaults (cold and cached), one question across all chunkers in each retrieval
mode, and the first page render in chromium.
With --memory instead: the real app's peak memory with the local SmolLM2 loaded (see `app_memory`).

Each cold figure is printed beside its embedding floor: the seconds the run's embedder needs, in the same process,
to embed once the distinct texts that the cold run embedded (what no amount of reuse can save). A cold workspace
on a set-up machine copies the sample set's vectors from the machine's file (`python -m core warm`);
--no-machine-vectors times a machine without it.

Usage: .venv/bin/python scripts/bench_app.py [--no-browser] [--demo-only] [--embedder SPEC] [--no-machine-vectors]
       .venv/bin/python scripts/bench_app.py --pdf FILE   (one uploaded document through the default chunkers)
       .venv/bin/python scripts/bench_app.py --memory [--memory-specs SPECS] [--scorer-dtype D] [--memory-doc FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.catalog  # noqa: E402, F401  (the composition root: every chunker, method and service)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def chunking_and_queries(workspace: Path) -> None:
    from core.ingest.datasets import load_dataset
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import DEFAULT_SPECS, ask_all, make_corpus, run_chunkers, sample_folder

    ds = load_dataset(sample_folder())
    corpus = make_corpus(ds.documents, ds, join=False)
    t0 = time.perf_counter()
    services = build_services(Settings(workspace=str(workspace)))
    print(f"services (MiniLM, Chroma, {services.settings.cnm_backend} CNM) ready in {time.perf_counter() - t0:.1f} s")
    for label in ("cold", "cached"):
        t0 = time.perf_counter()
        results = run_chunkers(services, corpus, DEFAULT_SPECS)
        total = time.perf_counter() - t0
        per = ", ".join(f"{s} {r.seconds:.1f}" for s, r in results.items())
        print(f"sample set ({len(ds.documents)} manuals, {ds.n_chars:,} chars) through {len(results)} chunkers, "
              f"{label}: {total:.1f} s  [{per}]")
    from core.store.retrieval import RetrievalSettings

    default = services.settings.retrieval_settings()
    searches = {f"the default ({default.mode}, reranked by {default.rerank})": default,
                **{mode: RetrievalSettings(mode) for mode in ("hybrid", "bm25", "dense")}}
    for mode, retrieval in searches.items():  # the default first: it pays for embedding each new question
        ask_all(services, results, "warm-up question", 5, retrieval=retrieval)  # builds each run's retriever once
        times = []
        for q in ds.questions[:20]:
            t0 = time.perf_counter()
            ask_all(services, results, q.text(True), 5, q, retrieval)
            times.append(time.perf_counter() - t0)
        print(f"one question across all {len(results)} chunkers, {mode}: median "
              f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms over {len(times)} questions")
    print(f"peak memory (RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


DEMO_COLD_S, DEMO_CACHED_S = 30.0, 1.0


class TextRecorder:
    """Stands in for a cached embedder's model and writes down every text the cache sent it (the texts the run
    really embedded), so `floor` can time embedding exactly those once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: dict[str, None] = {}

    def embed(self, texts: Any, progress: Any = None) -> Any:
        self.texts.update(dict.fromkeys(texts))
        return self.inner.embed(texts, progress)

    def __getattr__(self, name: str) -> Any:  # key, describe, offsets, windows, ...: the model's own
        return getattr(self.inner, name)


def recording(services: Any) -> TextRecorder:
    """Put a `TextRecorder` between the services' vector cache and its model."""
    recorder = TextRecorder(services.embedder.inner)
    services.embedder.inner = recorder
    return recorder


def floor(recorder: TextRecorder) -> tuple[float, int]:
    """Seconds to embed the recorded distinct texts once, straight through the model (no cache), and how many."""
    texts = list(recorder.texts)
    t0 = time.perf_counter()
    if texts:
        recorder.inner.embed(texts)
    return time.perf_counter() - t0, len(texts)


def print_floor(label: str, seconds: float, recorder: TextRecorder) -> None:
    took, n = floor(recorder)
    ratio = f"{seconds / took:.2f}x the floor" if n else "no text embedded"
    print(f"  embedding floor of the {label} run: {took:.1f} s for its {n:,} distinct embedded texts, once "
          f"(the run took {seconds:.1f} s: {ratio})", flush=True)


def demo_timing(workspace: Path, embedder: str | None = None) -> None:
    """The Home page's guided demo through `guided_demo`, as its button runs it: cold in a fresh workspace,
    then again from the caches (target: under 30 s cold, under 2 s cached)."""
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import guided_demo

    settings = Settings(workspace=str(workspace)) if embedder is None else Settings(workspace=str(workspace),
                                                                                     embedder=embedder)
    t0 = time.perf_counter()
    services = build_services(settings)
    print(f"services ({services.embedder.describe()}) ready in {time.perf_counter() - t0:.1f} s")
    recorder = recording(services)
    for label, target in (("cold", DEMO_COLD_S), ("cached", DEMO_CACHED_S)):
        computed, copied = services.embedder.stats.computed, services.embedder.stats.copied
        summary = guided_demo(services, services.settings.retrieval_settings())
        verdict = "met" if summary.seconds < target else "MISSED"
        per = ", ".join(f"{s} {r.seconds:.1f}" for s, r in summary.results.items())
        print(f"guided demo (sample set joined, {len(summary.results)} chunkers, "
              f"{summary.report['n_questions']} questions), {label}: {summary.seconds:.1f} s "
              f"(target under {target:g} s: {verdict}), {services.embedder.stats.computed - computed:,} texts "
              f"embedded, {services.embedder.stats.copied - copied:,} copied from the machine's vectors  [{per}]",
              flush=True)
        if label == "cold":
            print_floor("cold demo", summary.seconds, recorder)
    print_summary(summary.report)


def document_timing(workspace: Path, path: Path) -> None:
    """One uploaded document (a PDF, say) through the default chunkers, as Chunk & compare runs them on a library
    holding only it: cold in a fresh workspace, then again from the caches, the cold run beside its floor."""
    from core.ingest.documents import load_file
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import DEFAULT_SPECS, make_corpus, run_chunkers

    t0 = time.perf_counter()
    document = load_file(path)
    print(f"{path.name}: {len(document.text):,} characters read in {time.perf_counter() - t0:.1f} s")
    services = build_services(Settings(workspace=str(workspace)))
    recorder = recording(services)
    corpus = make_corpus([document], None, join=False)
    for label in ("cold", "cached"):
        t0 = time.perf_counter()
        results = run_chunkers(services, corpus, DEFAULT_SPECS)
        took = time.perf_counter() - t0
        per = ", ".join(f"{s} {r.seconds:.1f}" for s, r in results.items())
        print(f"{path.name} through {len(results)} chunkers, {label}: {took:.1f} s  [{per}]", flush=True)
        if label == "cold":
            print_floor(f"cold {path.name}", took, recorder)


def print_summary(report: dict[str, Any]) -> None:
    """The summary the demo lands on: hit@1, hit@10 and wrong_doc@10 per chunker."""
    print(f"{'chunker':<24}{'hit@1':>8}{'hit@10':>8}{'wrong_doc@10':>14}")
    for spec, r in report["results"].items():
        print(f"{spec:<24}{r['hit@1']:>8.3f}{r['hit@10']:>8.3f}{r['wrong_doc@10']:>14.3f}")


def first_render(workspace: Path) -> None:
    from playwright.sync_api import sync_playwright

    from bench.local_servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app

    with streamlit_app(workspace) as app, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for label in ("first load", "second load"):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(app.url)
            page.get_by_role("heading", name="ChunkLens").wait_for(timeout=60_000)
            print(f"home page rendered in chromium ({label}): {time.perf_counter() - t0:.2f} s")
            page.close()
        browser.close()


#: chunkers that load the local model: lg / lgmgc score with it, chop (CNM backend "local") chats with it. chop
#: gets 4,000-token windows so the sample set costs about a dozen generations rather than 110 (20 to 40 minutes).
MEMORY_SPECS = "lg,lgmgc,chop:size=4000:overlap=0"
MEMORY_TARGET_MB = 3 * 1024


def report_phase(rss: Any, label: str, started: float) -> None:
    """Print a phase's time and the app's peak RSS during it (`rss`: bench.load.RssSampler), then start the next."""
    now = rss.rss()
    print(f"  {label}: {time.perf_counter() - started:.0f} s, peak {max(rss.window_peak, now) / 2**20:,.0f} MB, "
          f"now {now / 2**20:,.0f} MB", flush=True)
    rss.mark()


def app_memory(workspace: Path, specs: str, scorer_dtype: str, document: Path | None = None) -> None:
    """The app's peak RSS (streamlit process and any children; not the browser) while chromium drives it through
    the sample set (or one uploaded `document`, when a busy machine makes the set too slow) with chunkers that load
    the local SmolLM2, then a question; CNM backend "local"."""
    from playwright.sync_api import sync_playwright

    from bench.load import RssSampler
    from bench.local_servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app
    from core.settings import Settings, save_settings

    save_settings(Settings(workspace=str(workspace), cnm_backend="local", scorer_dtype=scorer_dtype), workspace)
    app = streamlit_app(workspace, log_path=workspace / "streamlit.log")
    print(f"app memory: CNM backend local, scorer {scorer_dtype}, chunkers {specs}", flush=True)
    t0 = time.perf_counter()
    with app, RssSampler(app.proc.pid) as rss, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            _drive_memory_run(page, app.url, rss, specs, document, t0)
        except Exception:
            shot = Path(tempfile.gettempdir()) / "bench_app_memory_failure.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"the run failed on this page (screenshot {shot}):\n{page.inner_text('body')[:2000]}", flush=True)
            raise
        finally:
            browser.close()
    peak = rss.peak / 2**20
    verdict = "met" if peak < MEMORY_TARGET_MB else "MISSED"
    print(f"peak memory of the app (streamlit process tree, RSS): {peak:,.0f} MB "
          f"(target under {MEMORY_TARGET_MB:,} MB: {verdict})", flush=True)


def _drive_memory_run(page: Any, url: str, rss: Any, specs: str, document: Path | None, t0: float) -> None:
    """The memory run in the browser: the documents, the chunkers that load SmolLM2, then one question."""
    page.goto(url)
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=120_000)
    report_phase(rss, "app started, home page", t0)

    def nav(title: str) -> None:
        page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
        page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)

    t0 = time.perf_counter()
    nav("Documents")
    if document is None:
        page.get_by_role("button", name="Load the sample set").click()
        page.get_by_text("Loaded 7 documents").wait_for(timeout=120_000)
    else:
        page.locator("input[type=file][multiple]").set_input_files(str(document))  # not the archive import
        page.get_by_role("button", name="Add uploaded files").click()
        page.get_by_text("Added 1 document").wait_for(timeout=120_000)
    report_phase(rss, "documents loaded", t0)

    t0 = time.perf_counter()
    nav("Chunk & compare")
    chosen = page.get_by_test_id("stMultiSelect").first
    chosen.wait_for(timeout=600_000)  # the page builds the services (MiniLM, Chroma) first
    tags = chosen.locator('[aria-label^="Remove "]')  # one per selected chunker
    for _ in range(5):  # drop the default chunkers (a rerun of the page can swallow a click: check)
        chosen.get_by_label("Clear all").click()
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)
        if tags.count() == 0:
            break
    else:
        raise RuntimeError("could not clear the default chunkers")
    extra = page.get_by_label("More chunkers with parameters (comma separated)")
    extra.fill(", ".join(specs.split(",")))
    extra.press("Enter")
    page.wait_for_timeout(1500)
    page.get_by_role("button", name="Run chunkers").click()
    page.get_by_text("Ran ").first.wait_for(timeout=3_600_000)
    status = page.get_by_text("Ran ").first.inner_text()
    if not status.strip().startswith(f"Ran {len(specs.split(','))} chunker"):
        raise RuntimeError(f"expected the {specs} chunkers only, the page says {status.strip()!r}")
    report_phase(rss, f"chunked ({status.strip()})", t0)

    t0 = time.perf_counter()
    nav("Query")
    if document is None:
        page.get_by_test_id("stSelectbox").filter(has_text="Question from the QA set").click()
        page.get_by_role("option").nth(1).click()
    else:
        page.get_by_label("Question", exact=True).fill("How do I clean the filter?")
        page.get_by_label("Question", exact=True).press("Enter")
        page.wait_for_timeout(1000)
    page.get_by_role("button", name="Ask every chunker").click()
    page.get_by_text("This session's questions").wait_for(timeout=600_000)
    report_phase(rss, "one question asked", t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--demo-only", action="store_true", help="only the guided demo, cold and cached")
    parser.add_argument("--embedder", default=None, help="embedder spec (default: the settings' default)")
    parser.add_argument("--pdf", type=Path, default=None,
                        help="only this one document (PDF, DOCX, TXT, Markdown) through the default chunkers")
    parser.add_argument("--memory", action="store_true", help="only the app's peak memory with the local model")
    parser.add_argument("--memory-specs", default=MEMORY_SPECS, help="comma-separated chunkers for --memory")
    parser.add_argument("--scorer-dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--memory-doc", type=Path, default=None,
                        help="upload this one document instead of loading the sample set (quicker)")
    parser.add_argument("--no-machine-vectors", action="store_true",
                        help="ignore the sample vectors `python -m core warm` computed: time a machine without them")
    args = parser.parse_args()
    if args.no_machine_vectors:
        from core.store.embedders import MACHINE_VECTORS_ENV

        os.environ[MACHINE_VECTORS_ENV] = "off"
    with tempfile.TemporaryDirectory() as tmp:
        if args.pdf:
            document_timing(Path(tmp) / "doc", args.pdf)
            return
        if args.memory:
            (Path(tmp) / "memory").mkdir()
            app_memory(Path(tmp) / "memory", args.memory_specs, args.scorer_dtype, args.memory_doc)
            return
        if not (args.no_browser or args.demo_only):
            first_render(Path(tmp) / "render")
        demo_timing(Path(tmp) / "demo", args.embedder)
        if args.demo_only:
            return
        chunking_and_queries(Path(tmp) / "ws")


if __name__ == "__main__":
    main()
