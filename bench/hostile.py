"""Hostile files, written with raw PDF syntax and zipfile: what the worker process (`core.ingest.worker`) and the
file limits stand against. The tests prove each is refused; `python -m bench.hostile` measures what each costs.

Usage: .venv/bin/python -m bench.hostile [--json OUT]

For each file: its size, the seconds until it was read or refused, the peak memory of the reader's worker
process and of this (the server's) process, and, read at the same time in another thread, a one-page PDF's seconds.
"""

from __future__ import annotations

import io


def stream_object(entries: bytes, body: bytes) -> bytes:
    """A stream object: its dictionary's `entries` and its `Length`, then `body`."""
    return b"<< " + entries + b"/Length %d >>\nstream\n" % len(body) + body + b"\nendstream"


def assemble_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """Numbered objects (1-based), a cross-reference table and a trailer whose root is object 1."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R ".encode() + trailer)
    out.write(f">>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def make_nested_forms_pdf(levels: int, fanout: int = 10, text: str = "x") -> bytes:
    """One page drawing form 1 `fanout` times; form k draws form k+1 `fanout` times, down `levels` levels; the
    last form shows `text`. A file of a few KB that stands for fanout**levels drawings (a "form bomb")."""
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    first_form = 5
    font = first_form + levels
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        f"/Resources << /XObject << /F {first_form} 0 R >> >> >>".encode(),
        stream_object(b"", b"q /F Do Q " * fanout),
    ]
    for level in range(levels):
        last = level == levels - 1
        body = f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET".encode() if last else b"q /F Do Q " * fanout
        resources = (f"/Resources << /Font << /F1 {font} 0 R >> >> " if last
                     else f"/Resources << /XObject << /F {first_form + level + 1} 0 R >> >> ")
        objects.append(stream_object(f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] {resources}".encode(), body))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return assemble_pdf(objects)


def poster_pdf(side: int, text: str = "A poster.") -> bytes:
    """One square page `side` points wide showing one line."""
    return assemble_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {side} {side}] /Contents 4 0 R "
        f"/Resources << /Font << /F1 5 0 R >> >> >>".encode(),
        stream_object(b"", f"BT /F1 12 Tf 72 72 Td ({text}) Tj ET".encode()),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def headers_docx(members: int = 64, size: int = 256 * 1024 - 1) -> bytes:
    """A DOCX (python-docx's own template) with `members` extra header parts of `size` spaces each: every member
    small, the whole far past any real document's compression."""
    import zipfile

    import docx

    template = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("Press the power button.")
    document.save(template)
    source = zipfile.ZipFile(template)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info))
        for i in range(members):
            archive.writestr(f"word/header{i + 10}.xml", b" " * size)
    return out.getvalue()


def xml_docx(megabytes: int = 40) -> bytes:
    """A DOCX whose document.xml holds `megabytes` MB of paragraphs of varied words (about 5:1 compressed)."""
    import random
    import zipfile

    import docx

    template = io.BytesIO()
    docx.Document().save(template)
    source = zipfile.ZipFile(template)
    words = [f"w{n}" for n in range(5000)]
    rng = random.Random(7)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                archive.writestr(info, source.read(info))
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
            written = 0
            while written < megabytes * 2**20:
                block = "".join(f"<w:p><w:r><w:t>{' '.join(rng.choices(words, k=10))}</w:t></w:r></w:p>"
                                for _ in range(1000)).encode()
                member.write(block)
                written += len(block)
            member.write(b"</w:body></w:document>")
    return out.getvalue()


def renamed_body(data: bytes, new: str = "word/document.dat") -> bytes:
    """The DOCX `data` with its main part renamed to `new`, as Word and python-docx still read it: the member, its
    relationships part, the package relationship that points at it and the Override that gives its content type.
    A limit that finds XML by file name misses such a body."""
    import zipfile

    body = "word/document.xml"
    source = zipfile.ZipFile(io.BytesIO(data))
    old_rels, new_rels = "word/_rels/document.xml.rels", f"word/_rels/{new.rsplit('/', 1)[1]}.rels"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as target:
        for info in source.infolist():
            blob = source.read(info)
            name = {body: new, old_rels: new_rels}.get(info.filename, info.filename)
            if info.filename == "[Content_Types].xml":
                if f'PartName="/{body}"'.encode() not in blob:
                    raise ValueError("no Override names the main part")
                blob = blob.replace(f'PartName="/{body}"'.encode(), f'PartName="/{new}"'.encode())
            elif info.filename == "_rels/.rels":
                blob = blob.replace(f'Target="{body}"'.encode(), f'Target="{new}"'.encode())
            target.writestr(name, blob)
    return out.getvalue()


CASES = {
    "forms-7.pdf": lambda: make_nested_forms_pdf(7),
    "forms-6.pdf": lambda: make_nested_forms_pdf(6),
    "headers.docx": headers_docx,
    "xml-40mb.docx": xml_docx,
    "wall-30000pt.pdf": lambda: poster_pdf(30_000),
    "poster-14400pt.pdf (page view)": lambda: poster_pdf(14_400),
    "forms-7.pdf (page view)": lambda: make_nested_forms_pdf(7),
}
NORMAL = "tests/fixtures/debian/libtasn1.pdf"  # a real 36-page manual, read beside each hostile file


def _read(name: str, data: bytes) -> str:
    """Read `name` as an upload (or draw its page 1 in the page view); the outcome's first line."""
    from core.infra.errors import ChunkLensError
    from core.ingest.documents import load_bytes
    from core.ingest.pdf import LOADER
    from core.outputs.pageview import load_page
    from core.schema.documents import Document

    try:
        if name.endswith("(page view)"):
            try:
                doc = load_bytes(name.removesuffix(" (page view)"), data)
            except ChunkLensError:  # refused at upload: draw it as if an older loader had let it in
                doc = Document("d", name, "x", page_starts=[0], loader=LOADER)
            page = load_page(doc, data, 1)
            return f"drawn: {page.width} x {page.height} pixels, {len(page.png):,} bytes of PNG"
        return f"read: {len(load_bytes(name, data).text):,} characters"
    except ChunkLensError as exc:
        return f"refused: {exc}"


def measure(case: str) -> dict:
    """One case in this process: the hostile file in one thread, the normal manual in another."""
    import resource
    import threading
    import time
    from pathlib import Path

    from core.ingest.documents import load_bytes

    data = CASES[case]()
    normal = Path(NORMAL).read_bytes()
    out: dict = {"case": case, "bytes": len(data)}

    def hostile() -> None:
        started = time.perf_counter()
        out["outcome"] = _read(case, data)
        out["seconds"] = round(time.perf_counter() - started, 2)

    thread = threading.Thread(target=hostile)
    thread.start()
    started = time.perf_counter()
    load_bytes("libtasn1.pdf", normal)
    out["normal_seconds"] = round(time.perf_counter() - started, 2)
    thread.join()
    out["worker_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    out["server_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return out


def main() -> None:
    import argparse
    import json
    import subprocess
    import sys
    import time

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=list(CASES), help="measure one case in this process (used internally)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(measure(args.case)))
        return
    from core.ingest.documents import load_bytes

    started = time.perf_counter()
    load_bytes("libtasn1.pdf", open(NORMAL, "rb").read())  # noqa: SIM115 - read once, alone
    alone = round(time.perf_counter() - started, 2)
    rows = []
    for case in CASES:  # each in a fresh process, so each peak is its own
        done = subprocess.run([sys.executable, "-m", "bench.hostile", "--case", case], capture_output=True,
                              text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{NORMAL} read alone: {alone} s")
    print(f"{'file':32} {'bytes':>8} {'seconds':>8} {'worker MB':>9} {'server MB':>9} {'normal s':>8}  outcome")
    for r in rows:
        print(f"{r['case']:32} {r['bytes']:>8,} {r['seconds']:>8} {r['worker_peak_mb']:>9} {r['server_peak_mb']:>9} "
              f"{r['normal_seconds']:>8}  {r['outcome'][:110]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"normal": NORMAL, "normal_alone_seconds": alone, "cases": rows}, f, indent=1)


if __name__ == "__main__":
    main()
