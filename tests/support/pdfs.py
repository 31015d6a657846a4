"""Tiny real PDFs for tests, written with raw PDF syntax (one line of Helvetica text per page)."""

from __future__ import annotations

import io
import zlib

from bench.hostile import assemble_pdf, stream_object
from tests.support.data import ROOT

SAMPLE_MANUALS = ROOT / "sample_data" / "manuals"


def make_pdf(pages: list[str], media: tuple[int, int] = (612, 792), at: tuple[int, int] = (72, 720)) -> bytes:
    """One page per string, each a `media` (width, height) page in points showing its line at `at`."""
    objects: list[bytes] = []
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    font_id = 3 + 2 * n
    for i, text in enumerate(pages):
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf {at[0]} {at[1]} Td ({safe}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {media[0]} {media[1]}] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        objects.append(stream_object(b"", stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return assemble_pdf(objects)


def sample_manual_pdf(name: str) -> bytes:
    """A sample manual (sample_data/manuals/NAME) as a PDF, one paragraph per page (headings left out)."""
    text = (SAMPLE_MANUALS / name).read_text(encoding="utf-8")
    return make_pdf([" ".join(p.split()) for p in text.split("\n\n") if p.strip() and not p.lstrip().startswith("#")])


def make_repeating_pdf(pages: int, line: str, repeats: int) -> bytes:
    """`pages` pages that all draw one shared, deflated content stream showing `line` on `repeats` lines: a file of
    a few KB whose text is pages * repeats * len(line) characters (a "text bomb")."""
    safe = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    drawing = b"BT /F1 12 Tf 72 720 Td 14 TL " + f"({safe}) ' ".encode() * repeats + b"ET"
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            b"/Resources << /Font << /F1 4 0 R >> >> >>")
    return assemble_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        stream_object(b"/Filter /FlateDecode ", zlib.compress(drawing, 9)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *[page] * pages,
    ])


def make_scanned_pdf() -> bytes:
    """One page that only paints an image (a 'scan'): no text operator anywhere."""
    pixels = bytes([0, 255, 255, 0] * 16)  # 8x8 grey checker
    image = b"/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 "
    return assemble_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /XObject << /Im1 5 0 R >> >> >>",
        stream_object(b"", b"q 612 0 0 792 0 0 cm /Im1 Do Q"),
        stream_object(image, pixels),
    ])


def make_aes_encrypted_pdf() -> bytes:
    """A PDF whose trailer says AES-256 encryption (revision 6) with an unknown user password. The key material
    is random: opening it needs AES either way, and the password is not empty."""
    import os

    encrypt = (b"<< /Filter /Standard /V 5 /R 6 /Length 256 /P -4 /CF << /StdCF << /CFM /AESV3 /Length 32 "
               b"/AuthEvent /DocOpen >> >> /StmF /StdCF /StrF /StdCF "
               b"/O <" + os.urandom(48).hex().encode() + b"> /U <" + os.urandom(48).hex().encode() + b"> "
               b"/OE <" + os.urandom(32).hex().encode() + b"> /UE <" + os.urandom(32).hex().encode() + b"> "
               b"/Perms <" + os.urandom(16).hex().encode() + b"> >>")
    doc_id = os.urandom(16).hex().encode()
    return assemble_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        encrypt,
    ], trailer=b"/Encrypt 4 0 R /ID [<" + doc_id + b"> <" + doc_id + b">] ")


def encrypt_pdf(data: bytes, password: str) -> bytes:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
