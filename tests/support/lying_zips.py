"""Zip archives that lie about their sizes, made for real: a normal zip written by zipfile, then the size fields of
one member patched with struct, in its central directory entry and its local header (APPNOTE 4.3.7, 4.3.12).

CPython's zipfile reads a member's sizes from the central directory only; nothing in it checks a stated packed size
against the bytes that actually follow the member's local header, so an archive can state any packed size and so
any compression ratio it likes."""

from __future__ import annotations

import io
import struct
import zipfile

_LOCAL, _CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


def zipped(members: dict[str, bytes], level: int = 9) -> bytes:
    """A plain deflated zip of `members`, in order."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def restate(data: bytes, name: str, *, packed: int | None = None, unpacked: int | None = None) -> bytes:
    """`data` with member `name`'s packed (compressed) and/or unpacked size replaced by the values given, in both
    places a zip states them."""
    out = bytearray(data)
    found = False
    pos = out.find(_CENTRAL)
    while pos != -1:
        name_len = struct.unpack_from("<H", out, pos + 28)[0]
        if bytes(out[pos + 46:pos + 46 + name_len]) == name.encode():
            found = True
            _patch(out, pos + 20, packed, unpacked)
            header = struct.unpack_from("<L", out, pos + 42)[0]
            assert bytes(out[header:header + 4]) == _LOCAL
            _patch(out, header + 18, packed, unpacked)
        pos = out.find(_CENTRAL, pos + 4)
    assert found, f"no member {name!r}"
    return bytes(out)


def _patch(out: bytearray, at: int, packed: int | None, unpacked: int | None) -> None:
    if packed is not None:
        struct.pack_into("<L", out, at, packed)
    if unpacked is not None:
        struct.pack_into("<L", out, at + 4, unpacked)


def stated(data: bytes, name: str) -> tuple[int, int]:
    """(packed, unpacked) as zipfile reads them for member `name`."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    return info.compress_size, info.file_size
