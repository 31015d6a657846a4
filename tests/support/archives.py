"""ChunkLens archives for tests, built with zipfile: `archive` (a manifest and the members given) and `HOSTILE`,
archives an import must refuse before it writes anything (absolute and `..` paths, a symlink, an encrypted
member, another format or version, a zip bomb...), each with the words of its refusal."""

from __future__ import annotations

import io
import json
import stat
import zipfile


def archive(members: dict[str, bytes], manifest: dict | None = None, extra=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest or {"format": "chunklens-archive", "version": 1}))
        for name, data in members.items():
            zf.writestr(name, data)
        if extra:
            extra(zf)
    return buf.getvalue()


def symlink(zf: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("libraries/abcdef12/texts/link.json")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(info, "/etc/passwd")


def mark_encrypted(data: bytes, name: str) -> bytes:
    """The archive with `name` flagged as encrypted in its central directory (zipfile cannot write that flag)."""
    out = bytearray(data)
    pos = out.find(b"PK\x01\x02")
    while pos != -1:
        name_len = int.from_bytes(out[pos + 28:pos + 30], "little")
        if out[pos + 46:pos + 46 + name_len] == name.encode():
            out[pos + 8] |= 0x1
        pos = out.find(b"PK\x01\x02", pos + 4)
    return bytes(out)


DOC = json.dumps({"doc_id": "a", "title": "a", "text": "Filter monthly."}).encode()
HOSTILE = {
    "absolute": (archive({"/etc/cron.d/evil": b"x"}), "is an absolute path"),
    "drive": (archive({"C:/evil.txt": b"x"}), "is an absolute path"),
    "dotdot": (archive({"libraries/abcdef12/../../../evil.json": DOC}), "'..' path part"),
    "backslash": (archive({"libraries\\..\\evil.json": DOC}), "backslash"),
    "symlink": (archive({}, extra=symlink), "is a symbolic link"),
    "encrypted": (mark_encrypted(archive({"libraries/abcdef12/texts/a.json": DOC}), "libraries/abcdef12/texts/a.json"),
                  "is encrypted"),
    "version-2": (archive({"libraries/abcdef12/texts/a.json": DOC}, {"format": "chunklens-archive", "version": 2}),
                  "format version 2 is not one this ChunkLens reads"),
    "no-version": (archive({}, {"format": "chunklens-archive"}), "format version None"),
    "other-format": (archive({}, {"format": "something", "version": 1}), "names another format"),
    "no-manifest": (b"PK\x05\x06" + b"\x00" * 18, "no manifest.json"),  # an empty zip
    "not-a-zip": (b"just some text", "not a readable zip archive"),
    "bomb": (archive({"libraries/abcdef12/texts/a.json": b" " * (8 * 2**20)}), "compressed"),
}
