"""How long the page view takes to draw a page of a PDF (core/outputs/pageview.py, Chunk & compare's "Chunks on
the page").

    python -m bench.pageview [--pdf tests/fixtures/debian/libtasn1.pdf] [--chunker naive-500t] [--repeat 5] [--json OUT]

Times, in this process: reading the PDF (PDFium, the loader the app uses), chunking it once, then for page 1 the
first draw (render, character boxes, the chunks' boxes and the Plotly figure: what a first look at the page
waits for; target under 1 s) and the same page again (served from the page cache; the chunks' boxes and the
figure are made again, as on every rerun of the page), and every page of the document once, cold. Prints the
figures; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench import write_json

ROOT = Path(__file__).resolve().parent.parent
MANUAL = ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf"
TARGET_SECONDS = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pageview", description=__doc__.split("\n")[0])
    parser.add_argument("--pdf", type=Path, default=MANUAL, help="a PDF (default: the 36-page libtasn1 manual)")
    parser.add_argument("--chunker", default="naive-500t", help="the chunker whose chunks are drawn")
    parser.add_argument("--repeat", type=int, default=5, help="cached draws of page 1 (default 5)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures here")
    args = parser.parse_args(argv)

    from core.chunkers.registry import make_chunker
    from core.ingest.documents import load_bytes
    from core.outputs import figures, pageview

    data = args.pdf.read_bytes()
    t0 = time.perf_counter()
    doc = load_bytes(args.pdf.name, data)
    read = time.perf_counter() - t0
    chunks = make_chunker(args.chunker).chunk(doc).chunks

    def draw(number: int) -> tuple[float, int]:
        t0 = time.perf_counter()
        page = pageview.load_page(doc, data, number)
        placed = pageview.place_chunks(page, chunks, doc)
        fig = figures.page_figure(page, placed)
        fig.to_json()  # what Streamlit sends to the browser
        return time.perf_counter() - t0, sum(len(p.boxes) for p in placed)

    first, boxes = draw(1)
    again = [draw(1)[0] for _ in range(args.repeat)]
    pages = len(doc.page_starts)
    every = [draw(n)[0] for n in range(2, pages + 1)]
    result = {"pdf": args.pdf.name, "pages": pages, "characters": len(doc.text), "chunker": args.chunker,
              "chunks": len(chunks), "read_pdf_s": read, "first_page_s": first, "first_page_boxes": boxes,
              "cached_page_median_s": statistics.median(again) if again else first,
              "other_pages_median_s": statistics.median(every) if every else first,
              "other_pages_max_s": max(every) if every else first, "target_s": TARGET_SECONDS,
              "met": first < TARGET_SECONDS}
    print(f"{args.pdf.name}: {pages} pages, {len(doc.text):,} characters, {len(chunks)} {args.chunker} chunks")
    print(f"read the PDF (PDFium)          {read:6.3f} s")
    print(f"page 1, first draw             {first:6.3f} s  ({boxes} boxes; target < {TARGET_SECONDS:g} s: "
          f"{'met' if result['met'] else 'NOT met'})")
    print(f"page 1 again, median of {args.repeat:<2d}    {result['cached_page_median_s']:6.3f} s  (page cached)")
    print(f"pages 2-{pages}, first draw each   {result['other_pages_median_s']:6.3f} s median, "
          f"{result['other_pages_max_s']:.3f} s max")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
