"""One PDF through the default chunkers, cold, with any checkout's own code: the side-by-side figure for an uploaded
document against an older commit (run it in a worktree of that commit and in this one, on one machine, in turn).

Usage: .venv/bin/python scripts/pdf_cold.py CHECKOUT PDF [--embedder SPEC]
   e.g. git worktree add /tmp/old ecd3c31
        for c in /tmp/old . . ; do .venv/bin/python scripts/pdf_cold.py $c tests/fixtures/debian/libtasn1.pdf; done

A fresh workspace, the machine's sample vectors off: every vector the run needs is computed. Prints the seconds
from building the services to the last chunker indexed, and the vectors computed. Only `core` APIs that have not
changed since 2 Dec are used (`build_services`, `load_file`, `make_corpus`, `run_chunkers`, `DEFAULT_SPECS`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="the project folder whose code runs")
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--embedder", default="", help="embedder spec (default: that checkout's default)")
    args = parser.parse_args()
    pdf = args.pdf.resolve()
    sys.path.insert(0, str(args.checkout.resolve()))
    os.chdir(args.checkout)
    os.environ["CHUNKLENS_MACHINE_VECTORS"] = "off"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with contextlib.suppress(ImportError):  # newer checkouts: the composition root that registers every chunker
        import core.catalog  # noqa: F401
    from core.ingest.documents import load_file
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import DEFAULT_SPECS, make_corpus, run_chunkers

    with tempfile.TemporaryDirectory(prefix="chunklens-pdf-cold-") as ws:
        settings = Settings(workspace=ws, **({"embedder": args.embedder} if args.embedder else {}))
        started = time.perf_counter()
        services = build_services(settings)
        results = run_chunkers(services, make_corpus([load_file(pdf)], None, join=False), DEFAULT_SPECS)
        took = time.perf_counter() - started
        failed = [s for s, r in results.items() if not r.ok]
        print(f"{args.checkout}: {pdf.name} through {len(DEFAULT_SPECS)} chunkers, cold, {services.embedder.key}: "
              f"{took:.1f} s, {services.embedder.stats.computed:,} vectors computed"
              + (f", failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
