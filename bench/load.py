"""Load: N concurrent browser sessions asking the real app questions on loopback; latency, errors and memory.

    python -m bench.load [--sessions 1,5,20] [--queries 3] [--seconds 90] [--timeout 120] [--docs 2] [--chars N]
                         [--workspace DIR] [--out OUT]

What runs, in order:
1. Prepare (in a child process, untimed against the app): the sample set (its first --docs manuals, each cut to
   --chars characters if given, and the questions whose gold spans are still whole) is put in one library of a
   throwaway workspace and run through the 8 default chunkers with `core`, exactly as the app's Chunk & compare page
   would, so every chunk run, vector and Chroma collection is cached and each session's own "Run chunkers" is a
   cache hit. With --workspace DIR the work is kept and a later run on the same folder skips it.
2. The real app: `streamlit run app.py`, headless, on a free loopback port, CHUNKLENS_WORKSPACE set to the
   workspace. A thread samples the RSS of the app process (and any children) every 100 ms. One untimed warm-up
   session loads the models (the app's st.cache_resource services) before any level starts.
3. For each N in --sessions: one Debian chromium, N browser contexts (one Streamlit session each, all at once).
   Each session opens the app on the prepared library (`/?lib=`), goes to Chunk & compare, presses "Run chunkers"
   (cached) and goes to the Query page: that is its set-up, timed apart. When every session is set up, each one
   asks up to --queries questions in turn (a different QA-set question each time, picked in the select box,
   untimed) and starts no new one once --seconds have passed since all were set up. A query's latency runs from the
   click on "Ask every chunker" until the script run has ended and every chunker's result header shows a new
   timing. An error is a set-up step or a question that timed out (--timeout), failed in Playwright, or left a
   Streamlit exception or error box on the page.

Percentiles are nearest-rank over every query of that N; queries/s is the level's answered queries over the time
from all sessions set up to the last answer. CPU seconds per level are split between the app's process tree and
chromium with the Playwright driver (psutil; renderers that ended count through their parent), to tell a slow
server from a busy browser. Sessions share one library (same documents, so the same caches):
they differ in Streamlit session, not in data. The browser runs on the same machine as the app, so on a small
machine the figures include chromium's own CPU use; that is part of what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import re
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench import run_cli, write_json
from bench.local_servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app
from core.infra.errors import ChunkLensError

ROOT = Path(__file__).resolve().parent.parent
LIB_ID = "loadbench01"
RSS_INTERVAL = 0.1
#: error elements Streamlit draws: an uncaught exception, and st.error boxes
ERROR_SELECTOR = '[data-testid="stException"], [data-testid="stAlertContentError"]'
#: true once the script run has ended and every chunker's "**spec** · N ms" header is there and differs from `before`
RESULTS_READY_JS = """([specs, before]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const heads = headers(specs);
  return heads.every(h => h !== null) && heads.join('|') !== before;
}"""
HEADERS_JS = """function headers(specs) {
  const texts = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'),
                           e => e.innerText.trim());
  return specs.map(s => texts.find(t => t.startsWith(s + ' · ')) ?? null);
}"""


# --- preparing the workspace (child process) ----------------------------------------------------------------------


def data_folder(workspace: Path, docs: int, chars: int | None = None) -> Path:
    """The sample set, or a qa-spans copy of its first `docs` manuals, each cut to its first `chars` characters,
    with only the questions whose gold spans are all still there, in the workspace."""
    from core.workbench import sample_folder

    source = sample_folder()
    lines = [line for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    if docs >= len(lines) and chars is None:
        return source
    folder = workspace / "bench-data" / f"sample-{docs}-{chars or 'all'}"
    folder.mkdir(parents=True, exist_ok=True)
    kept = [json.loads(line) for line in lines[:docs]]
    for d in kept:
        d["text"] = d["text"][:chars] if chars else d["text"]
    length = {d["doc_id"]: len(d["text"]) for d in kept}
    questions = [line for line in (source / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip() and all(r["doc_id"] in length and r["end"] <= length[r["doc_id"]]
                                         for r in json.loads(line)["references"])]
    if not questions:
        raise ChunkLensError(f"no question of the sample set has its gold spans in the first {chars} characters")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept), encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(q + "\n" for q in questions), encoding="utf-8")
    return folder


def prepare_library(workspace: Path, docs: int, chars: int | None) -> dict[str, Any]:
    """Put the set into library LIB_ID of the workspace (no model is loaded here); what the sessions will see."""
    from core.infra.workspace import Workspace
    from core.ingest.library import Library
    from core.workbench import DEFAULT_SPECS, make_corpus

    ws = Workspace.open(workspace)
    lib = Library(ws.uploads, LIB_ID)
    lib.load_dataset(data_folder(ws.root, docs, chars))
    corpus = make_corpus(lib.documents(), lib.dataset(), join=False)
    return {"documents": len(corpus.documents), "chars": sum(len(d.text) for d in corpus.documents),
            "questions": len(corpus.questions), "qids": [q.qid for q in corpus.questions],
            "specs": list(DEFAULT_SPECS)}


# --- the app ------------------------------------------------------------------------------------------------------


class RssSampler:
    """Peak RSS of a process tree (the app and anything it starts), sampled in a thread; `mark()` starts a new
    window whose peak `window_peak` reports, while `peak` keeps the whole run's."""

    def __init__(self, pid: int, interval: float = RSS_INTERVAL) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = self.window_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        total = 0
        with contextlib.suppress(psutil.Error):
            for p in [self.proc, *self.proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            now = self.rss()
            self.peak = max(self.peak, now)
            self.window_peak = max(self.window_peak, now)

    def start(self) -> RssSampler:
        self.peak = self.window_peak = self.rss()
        self._thread.start()
        return self

    def mark(self) -> None:
        self.window_peak = self.rss()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> RssSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cpu_seconds(p: psutil.Process) -> float:
    """CPU seconds of a process, with those of its children that have ended and been waited for."""
    t = p.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_split(app_pid: int) -> tuple[float, float]:
    """CPU seconds used so far by the app's process tree and by the rest of this process's descendants (the
    Playwright driver and chromium with its renderers; renderers that ended count through their parent)."""
    app_tree = {app_pid}
    app = client = 0.0
    with contextlib.suppress(psutil.Error):
        app_proc = psutil.Process(app_pid)
        app_tree |= {c.pid for c in app_proc.children(recursive=True)}
        app = sum(_cpu_seconds(psutil.Process(pid)) for pid in app_tree)
    for child in psutil.Process().children(recursive=True):
        if child.pid not in app_tree:
            with contextlib.suppress(psutil.Error):
                client += _cpu_seconds(child)
    return app, client


# --- sessions -----------------------------------------------------------------------------------------------------


@dataclass
class SessionResult:
    index: int
    setup_seconds: float | None = None
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class Level:
    sessions: int
    queries: int = 0
    errors: int = 0
    p50_s: float | None = None
    p95_s: float | None = None
    max_s: float | None = None
    mean_s: float | None = None
    setup_p50_s: float | None = None
    setup_max_s: float | None = None
    wall_s: float = 0.0
    query_phase_s: float = 0.0
    app_cpu_s: float = 0.0  # CPU seconds the app used during the level (set-up and queries)
    browser_cpu_s: float = 0.0  # CPU seconds chromium and the Playwright driver used during the level
    queries_per_s: float | None = None
    app_peak_rss_mb: float = 0.0
    error_messages: list[str] = field(default_factory=list)


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (pct in 0..100) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


async def _page_errors(page: Any) -> str | None:
    found = page.locator(ERROR_SELECTOR)
    if await found.count():
        return "error shown on the page: " + (await found.first.inner_text())[:200].replace("\n", " ")
    return None


async def _wait_idle(page: Any, timeout_ms: float) -> None:
    await page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') "
        "=== 'notRunning'", timeout=timeout_ms, polling=50)


async def _nav(page: Any, title: str, timeout_ms: float) -> None:
    await page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click(timeout=timeout_ms)
    await page.get_by_role("heading", name=title).first.wait_for(timeout=timeout_ms)


async def set_up(page: Any, url: str, n_specs: int, timeout_ms: float) -> None:
    """Open the app on the prepared library, run the chunkers on Chunk & compare (cached but for the warm-up's
    first run), go to Query."""
    await page.goto(f"{url}/?lib={LIB_ID}", timeout=timeout_ms)
    await page.get_by_role("heading", name="ChunkLens").wait_for(timeout=timeout_ms)
    await _nav(page, "Chunk & compare", timeout_ms)
    await page.get_by_role("button", name="Run chunkers").click(timeout=timeout_ms)
    done = page.get_by_text(re.compile(r"^Ran \d+ chunker\(s\)")).first
    await done.wait_for(timeout=timeout_ms)
    if (said := (await done.inner_text()).strip()) != f"Ran {n_specs} chunker(s)":
        raise ChunkLensError(f"the app said '{said}' instead of 'Ran {n_specs} chunker(s)'")
    await _nav(page, "Query", timeout_ms)
    await page.get_by_role("button", name="Ask every chunker").wait_for(timeout=timeout_ms)
    await _wait_idle(page, timeout_ms)


async def ask(page: Any, qid: str, specs: Sequence[str], timeout_ms: float) -> float:
    """Pick QA-set question `qid` (typed into the select box's search, as a user would in a long list; not timed),
    then time "Ask every chunker" until every chunker's result shows."""
    await page.get_by_test_id("stSelectbox").filter(has_text="Question from the QA set").click(timeout=timeout_ms)
    await page.keyboard.type(qid)
    await page.get_by_role("option", name=re.compile(f"^{re.escape(qid)}:")).first.click(timeout=timeout_ms)
    await _wait_idle(page, timeout_ms)
    before = await page.evaluate(f"(specs) => {{ {HEADERS_JS}; return headers(specs).join('|'); }}", list(specs))
    button = page.get_by_role("button", name="Ask every chunker")
    await button.wait_for(timeout=timeout_ms)
    t0 = time.perf_counter()
    await button.click(timeout=timeout_ms)
    await page.wait_for_function(_ready_expression(specs, before), timeout=timeout_ms, polling=50)
    return time.perf_counter() - t0


def _ready_expression(specs: Sequence[str], before: str) -> str:
    args = json.dumps([list(specs), before])
    return f"(() => {{ {HEADERS_JS}; return ({RESULTS_READY_JS})({args}); }})()"


async def run_session(browser: Any, url: str, index: int, specs: Sequence[str], qids: Sequence[str], queries: int,
                      deadline: list[float], all_ready: asyncio.Event, ready_count: list[int], n_sessions: int,
                      timeout_ms: float) -> SessionResult:
    result = SessionResult(index)
    context = await browser.new_context(viewport={"width": 1500, "height": 1100})
    page = await context.new_page()
    try:
        t0 = time.perf_counter()
        try:
            await set_up(page, url, len(specs), timeout_ms)
            result.setup_seconds = time.perf_counter() - t0
            if err := await _page_errors(page):
                result.errors.append(f"set-up: {err}")
        except Exception as exc:  # noqa: BLE001 - a timeout or a Playwright error is a counted error
            result.errors.append(f"set-up: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        ready_count[0] += 1
        if ready_count[0] == n_sessions:
            all_ready.set()
        await all_ready.wait()
        if result.setup_seconds is None:
            return result
        for q in range(queries):
            if time.perf_counter() >= deadline[0]:
                break
            qid = qids[(index * 7 + q * 3) % len(qids)]
            try:
                result.latencies.append(await ask(page, qid, specs, timeout_ms))
                if err := await _page_errors(page):
                    result.errors.append(err)
            except Exception as exc:  # noqa: BLE001
                result.errors.append(f"query: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                with contextlib.suppress(Exception):
                    await _wait_idle(page, timeout_ms)
    finally:
        with contextlib.suppress(Exception):
            await context.close()
    return result


async def run_level(browser: Any, url: str, n: int, specs: Sequence[str], qids: Sequence[str], queries: int,
                    seconds: float, timeout_ms: float) -> tuple[list[SessionResult], float, float]:
    """N sessions at once; the --seconds budget for queries starts when all are set up. Returns the sessions'
    results, the level's wall seconds and the seconds from all set up to the end."""
    all_ready = asyncio.Event()
    deadline = [math.inf]
    ready_count = [0]
    started = [0.0]

    async def start_clock() -> None:
        await all_ready.wait()
        started[0] = time.perf_counter()
        deadline[0] = started[0] + seconds

    clock = asyncio.create_task(start_clock())
    t0 = time.perf_counter()
    results = await asyncio.gather(*(run_session(browser, url, i, specs, qids, queries, deadline, all_ready,
                                                 ready_count, n, timeout_ms) for i in range(n)))
    end = time.perf_counter()
    clock.cancel()
    return list(results), end - t0, end - (started[0] or end)


async def warm_up(browser: Any, url: str, n_specs: int, timeout_ms: float) -> float:
    """One session set up and closed before the levels: it loads the app's models and, on a fresh workspace, runs
    every chunker cold, so every later "Run chunkers" is a cache hit; its seconds."""
    context = await browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        t0 = time.perf_counter()
        await set_up(await context.new_page(), url, n_specs, timeout_ms)
        return time.perf_counter() - t0
    finally:
        await context.close()


def summarise(n: int, results: Sequence[SessionResult], wall: float, phase: float, peak_rss: int) -> Level:
    latencies = [x for r in results for x in r.latencies]
    setups = [r.setup_seconds for r in results if r.setup_seconds is not None]
    messages = [m for r in results for m in r.errors]
    level = Level(n, queries=len(latencies) + sum(1 for m in messages if m.startswith("query:")),
                  errors=len(messages), p50_s=percentile(latencies, 50), p95_s=percentile(latencies, 95),
                  max_s=max(latencies) if latencies else None,
                  mean_s=sum(latencies) / len(latencies) if latencies else None,
                  setup_p50_s=percentile(setups, 50), setup_max_s=max(setups) if setups else None,
                  wall_s=wall, query_phase_s=phase,
                  queries_per_s=len(latencies) / phase if phase > 0 and latencies else None,
                  app_peak_rss_mb=peak_rss / 2**20, error_messages=messages[:20])
    return level


async def drive(url: str, levels: Sequence[int], specs: Sequence[str], qids: Sequence[str], queries: int,
                seconds: float, timeout_ms: float, warm_up_timeout_ms: float,
                sampler: RssSampler) -> tuple[list[Level], float, int]:
    """Warm the app up, then run every level; returns the levels, the warm-up's seconds and the app's RSS after it."""
    from playwright.async_api import async_playwright

    out = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            warm = await warm_up(browser, url, len(specs), warm_up_timeout_ms)
            rss_warm = sampler.rss()
            print(f"warm-up session set up in {warm:.1f} s", file=sys.stderr, flush=True)
            for n in levels:
                sampler.mark()
                cpu_before = cpu_split(sampler.proc.pid)
                results, wall, phase = await run_level(browser, url, n, specs, qids, queries, seconds,
                                                       timeout_ms)
                cpu_after = cpu_split(sampler.proc.pid)
                level = summarise(n, results, wall, phase, sampler.window_peak)
                level.app_cpu_s, level.browser_cpu_s = (after - before for after, before in zip(cpu_after, cpu_before))
                out.append(level)
                print(f"N={n}: {level.queries} queries, {level.errors} errors, p50 {_fmt(level.p50_s)} s, p95 "
                      f"{_fmt(level.p95_s)} s, set-up max {_fmt(level.setup_max_s)} s, {wall:.1f} s wall, CPU s app "
                      f"{level.app_cpu_s:.0f} / browser {level.browser_cpu_s:.0f}",
                      file=sys.stderr, flush=True)
        finally:
            await browser.close()
    return out, warm, rss_warm


# --- output -------------------------------------------------------------------------------------------------------


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "" if value is None else pattern.format(value)


def render_table(levels: Sequence[Level]) -> str:
    header = ["N", "queries", "errors", "p50 s", "p95 s", "max s", "queries/s", "set-up p50 / max s",
              "wall s", "CPU s app / browser", "app peak RSS MB"]
    rows = [[str(lv.sessions), str(lv.queries), str(lv.errors), _fmt(lv.p50_s), _fmt(lv.p95_s), _fmt(lv.max_s),
             _fmt(lv.queries_per_s), f"{_fmt(lv.setup_p50_s, '{:.1f}')} / {_fmt(lv.setup_max_s, '{:.1f}')}",
             f"{lv.wall_s:.0f}", f"{lv.app_cpu_s:.0f} / {lv.browser_cpu_s:.0f}", f"{lv.app_peak_rss_mb:,.0f}"]
            for lv in levels]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {"cpu_count": os.cpu_count(), "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1), "python": platform.python_version(),
            "platform": platform.platform()}


# --- entry point --------------------------------------------------------------------------------------------------


def _levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sessions wants numbers separated by commas, not '{text}'") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("--sessions wants at least one number, each at least 1")
    return levels


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=_levels, default=[1, 5, 20], metavar="N,N,...",
                        help="concurrent browser sessions, one level after the other (default 1,5,20)")
    parser.add_argument("--queries", type=int, default=3, help="questions each session asks per level (default 3)")
    parser.add_argument("--seconds", type=float, default=90.0,
                        help="per level, no session starts a new question after this many seconds from the moment "
                             "all are set up (default 90)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds one set-up step or one question may take before it counts as an error")
    parser.add_argument("--warm-up-timeout", type=float, default=900.0,
                        help="seconds the warm-up session may take (on a fresh workspace it chunks the set cold)")
    parser.add_argument("--docs", type=int, default=2,
                        help="the sample set's first DOCS manuals (default 2, 16 questions: a fresh workspace then "
                             "chunks 60k characters cold in the warm-up; 7 is the whole set, 6 to 7 minutes cold on a "
                             "busy 2-core machine, so keep it with --workspace)")
    parser.add_argument("--chars", type=int, default=None,
                        help="cut each manual to its first CHARS characters, keeping the questions whose gold spans "
                             "are still whole (quick runs)")
    parser.add_argument("--workspace", type=Path, default=None,
                        help="workspace folder to prepare and keep (default: a throwaway one); a second run on the "
                             "same folder skips the cold chunking")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    if args.queries < 1 or args.seconds <= 0 or args.timeout <= 0 or args.docs < 1 or (args.chars or 1) < 1:
        raise ChunkLensError("--queries, --docs and --chars must be at least 1, --seconds and --timeout above 0")
    if not Path(CHROMIUM).exists():
        raise ChunkLensError(f"chromium is not at {CHROMIUM} (scripts/setup.sh --test installs it)")
    host = machine()
    with contextlib.ExitStack() as stack:
        if args.workspace is None:
            workspace = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chunklens-load-")))
        else:
            workspace = args.workspace.resolve()
            workspace.mkdir(parents=True, exist_ok=True)
        prepared = prepare_library(workspace, args.docs, args.chars)
        app = stack.enter_context(streamlit_app(workspace, log_path=workspace / "streamlit-load.log"))
        url, start_seconds = app.url, app.start_seconds
        print(f"app on {url}, workspace {workspace}; warm-up session ({prepared['documents']} manual(s) through "
              f"{len(prepared['specs'])} chunkers)…", file=sys.stderr, flush=True)
        assert app.proc is not None, "a started server has its process"
        sampler = RssSampler(app.proc.pid).start()
        rss_idle = sampler.rss()
        try:
            levels, warm, rss_warm = asyncio.run(drive(
                url, args.sessions, prepared["specs"], prepared["qids"], args.queries, args.seconds,
                args.timeout * 1000, args.warm_up_timeout * 1000, sampler))
        finally:
            sampler.stop()
    report = {
        "machine": host,
        "options": {"sessions": args.sessions, "queries": args.queries, "seconds": args.seconds,
                    "timeout": args.timeout, "docs": args.docs, "chars": args.chars},
        "data": prepared,
        "app": {"start_seconds": start_seconds, "warm_up_seconds": warm, "rss_idle_mb": rss_idle / 2**20,
                "rss_after_warm_up_mb": rss_warm / 2**20, "peak_rss_mb": sampler.peak / 2**20},
        "levels": [asdict(lv) for lv in levels],
    }
    print(f"load: {prepared['documents']} manual(s), {prepared['chars']:,} chars, {len(prepared['specs'])} chunkers, "
          f"{prepared['questions']} questions; up to {args.queries} question(s) per session within {args.seconds:g} s "
          f"per level; machine: {host['cpu_count']} CPUs, load {host['load_average_at_start']} at start")
    print(f"app: started in {start_seconds:.1f} s; warm-up session set up in {warm:.1f} s (models loaded, chunkers "
          f"run); RSS {rss_idle / 2**20:,.0f} MB idle, {rss_warm / 2**20:,.0f} MB after the warm-up, peak "
          f"{sampler.peak / 2**20:,.0f} MB")
    print(render_table(levels))
    write_json(args.out, report)
    return report


if __name__ == "__main__":
    sys.exit(run_cli(main))
