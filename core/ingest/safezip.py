"""Opening a zip archive that someone else made, without trusting it.

Everything is decided from the central directory before a byte is inflated: member names that could leave the
target folder (absolute, `..`, backslashes, drive letters, NUL), symlinks, encrypted members, duplicate names,
too many members, and sizes (the total, and the compression ratio of big members, as `core.ingest.documents` does for
DOCX). Reading a member afterwards is bounded by its declared size: zipfile stops there and checks the CRC, so
a directory that lies about a size gives a read error, not a bomb.
"""

from __future__ import annotations

import stat
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

from core.infra.errors import ChunkLensError


class ArchiveError(ChunkLensError):
    """An archive that is refused as a whole (unsafe, too large, damaged, or of an unknown version)."""


@dataclass(frozen=True)
class ZipLimits:
    max_members: int = 20_000
    max_total_bytes: int = 1024**3  # all members unpacked
    max_ratio: int = 200  # for members over ratio_floor bytes unpacked
    ratio_floor: int = 1024**2
    #: the whole archive, unpacked, over all it holds packed: many members just under `ratio_floor` each escape the
    #: per-member check (a 270 KB archive of them wrote 100 MB); JSON and text pack 3-10:1
    max_total_ratio: int = 100


def _unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if "\x00" in name or "\\" in name:
        return "has a backslash or NUL in its name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    stripped = name.rstrip("/")
    if not stripped or any(p in ("", ".", "..") for p in stripped.split("/")):
        return "has an empty, '.' or '..' path part"
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_ISLNK(mode):
        return "is a symbolic link"
    if info.flag_bits & 0x1:
        return "is encrypted"
    return None


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def checked_members(zf: zipfile.ZipFile, limits: ZipLimits) -> dict[str, zipfile.ZipInfo]:
    """The archive's file members by name, after every check above; raises ArchiveError naming the first
    problem. Directory entries are dropped (nothing is ever created from them)."""
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise ArchiveError(f"the archive holds {len(infos)} members, over the limit of {limits.max_members}")
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        reason = _unsafe_reason(info)
        if reason:
            raise ArchiveError(f"member {info.filename[:80]!r} {reason}; the archive is refused")
        if info.is_dir():
            continue
        if info.filename in members:
            raise ArchiveError(f"member {info.filename[:80]!r} appears twice; the archive is refused")
        total += info.file_size
        if total > limits.max_total_bytes:
            raise ArchiveError(f"the archive would unpack to over {_size(limits.max_total_bytes)} "
                               "(refused as a likely zip bomb)")
        if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * max(1, info.compress_size):
            ratio = info.file_size // max(1, info.compress_size)
            raise ArchiveError(f"member {info.filename[:80]!r} is compressed {ratio}:1, over the "
                               f"{limits.max_ratio}:1 limit (refused as a likely zip bomb)")
        members[info.filename] = info
    _check_total_ratio(members.values(), total, limits)
    return members


def _check_total_ratio(infos, total: int, limits: ZipLimits) -> None:
    """Refuse an archive that unpacks to far more than it holds, judged from the directory as a whole."""
    packed = max(1, sum(info.compress_size for info in infos))
    if total > limits.ratio_floor and total > limits.max_total_ratio * packed:
        raise ArchiveError(f"the archive would unpack to {_size(total)} from {_size(packed)}, compressed "
                           f"{total // packed}:1 as a whole, over the {limits.max_total_ratio}:1 limit (refused as a "
                           "likely zip bomb)")


def open_archive(source: IO[bytes]) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise ArchiveError(f"not a readable zip archive ({str(exc)[:120]})") from exc


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The member's bytes, never more than its declared size; a damaged member is an ArchiveError."""
    try:
        with zf.open(info) as f:
            return f.read(info.file_size + 1)[: info.file_size + 1]
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"member {info.filename[:80]!r} cannot be read ({str(exc)[:120]})") from exc
