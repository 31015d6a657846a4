"""Opening a zip archive that someone else made, without trusting it.

Everything the central directory says is checked before a byte is inflated: member names that could leave the
target folder (absolute, `..`, backslashes, drive letters, NUL), symlinks, encrypted members, duplicate names, too
many members, and sizes (the total, and the compression ratio of big members and of the whole archive).

Sizes are measured, not believed. A zip states each member's packed and unpacked size, and CPython's zipfile (3.11)
takes both on trust: a judged zip of 80 KB that stated a packed size four times its real one passed the ratio
check and inflated 29 MB. So each member's packed size is measured from where the members lie in the file (from its
local header's end to the next member's header, or to the central directory), and a stated size that does not fit
there refuses the archive (`packed_sizes`); the ratios are judged on the measured sizes. Then every read counts the
bytes it inflates and stops at the cap those measured sizes allow (`CheckedZip.read`), whatever the archive states;
zipfile also stops at the stated unpacked size and checks the CRC, so a member that is bigger than it says is a
one-line refusal, never a bomb.
"""

from __future__ import annotations

import bisect
import stat
import struct
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

    def member_cap(self, packed: int) -> int:
        """The most one member of `packed` measured bytes may inflate to."""
        return max(self.ratio_floor, self.max_ratio * packed)

    def total_cap(self, packed: int) -> int:
        """The most a whole archive of `packed` measured bytes (its members' packed sizes) may inflate to."""
        return min(self.max_total_bytes, max(self.ratio_floor, self.max_total_ratio * packed))


#: the errors zipfile, zlib, bz2 and lzma raise on a damaged member or directory
READ_ERRORS: tuple[type[BaseException], ...] = (zipfile.BadZipFile, OSError, ValueError, NotImplementedError,
                                                EOFError, zlib.error)
_BLOCK = 256 * 1024  # what one read inflates at most: the count stops a member within one block of its cap
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then (after 22 bytes) the name's and extra field's lengths
_LOCAL_SIGNATURE = b"PK\x03\x04"


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
    """Bytes for people: '200.0 MB', '79 KB', '312 bytes'."""
    if n >= 2**20:
        return f"{n / 2**20:.1f} MB"
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} bytes"


def _data_start(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Where the member's packed data begins: after its local header, name and extra field, read from the file."""
    fp = zf.fp
    assert fp is not None, "zipfile sets fp to None only once the archive is closed"
    try:
        fp.seek(info.header_offset)
        header = fp.read(_LOCAL_HEADER.size)
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"member {info.filename[:80]!r} cannot be read ({str(exc)[:120]})") from exc
    if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
        raise ArchiveError(f"member {info.filename[:80]!r} has no header where the archive's directory puts it; "
                           "the archive is refused")
    _, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len


def _end_of_members(zf: zipfile.ZipFile) -> int:
    """Where the members end: the central directory's start (zipfile's `start_dir`), else the file's end."""
    start_dir = getattr(zf, "start_dir", None)
    if isinstance(start_dir, int):
        return start_dir
    fp = zf.fp
    assert fp is not None, "zipfile sets fp to None only once the archive is closed"
    fp.seek(0, 2)
    return fp.tell()


def packed_sizes(zf: zipfile.ZipFile) -> list[int]:
    """Each member's packed size as the file holds it, in `zf.infolist()` order: the bytes from the end of its
    local header to the next member's header (or the central directory). Raises ArchiveError when a member states
    more packed bytes than lie there (a false size, or members that overlap) or two members share one header."""
    infos = zf.infolist()
    end = _end_of_members(zf)
    starts = sorted({info.header_offset for info in infos} | {end})
    seen: dict[int, str] = {}
    out = []
    for info in infos:
        if info.header_offset in seen:
            raise ArchiveError(f"members {seen[info.header_offset][:80]!r} and {info.filename[:80]!r} share their "
                               "data; the archive is refused (refused as a likely zip bomb)")
        seen[info.header_offset] = info.filename
        after = bisect.bisect_right(starts, info.header_offset)
        room = (starts[after] if after < len(starts) else end) - _data_start(zf, info)
        if info.compress_size > room:
            raise ArchiveError(f"member {info.filename[:80]!r} states {_size(info.compress_size)} packed, but the "
                               f"archive holds {_size(max(room, 0))} for it: its sizes are false (refused as a "
                               "likely zip bomb)")
        out.append(max(room, 0))
    return out


def _checked_members(zf: zipfile.ZipFile, packed: dict[str, int], limits: ZipLimits) -> dict[str, zipfile.ZipInfo]:
    """The archive's file members by name, after every check of the module's docstring, the ratios judged on the
    measured `packed` sizes; raises ArchiveError naming the first problem. Directory entries are dropped (nothing is
    ever created from them)."""
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in zf.infolist():
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
        held = max(1, packed[info.filename])
        if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * held:
            raise ArchiveError(f"member {info.filename[:80]!r} is compressed {info.file_size // held}:1, over the "
                               f"{limits.max_ratio}:1 limit (refused as a likely zip bomb)")
        members[info.filename] = info
    all_packed = max(1, sum(packed[name] for name in members))
    if total > limits.ratio_floor and total > limits.max_total_ratio * all_packed:
        raise ArchiveError(f"the archive would unpack to {_size(total)} from {_size(all_packed)}, compressed "
                           f"{total // all_packed}:1 as a whole, over the {limits.max_total_ratio}:1 limit (refused "
                           "as a likely zip bomb)")
    return members


class CheckedZip:
    """An archive whose directory passed every check, read member by member with the inflated bytes counted: a
    member stops at `ZipLimits.member_cap` of its measured packed size, and all members together (each counted once,
    however often it is read) at `ZipLimits.total_cap`."""

    def __init__(self, zf: zipfile.ZipFile, limits: ZipLimits) -> None:
        self.zf, self.limits = zf, limits
        if len(zf.infolist()) > limits.max_members:
            raise ArchiveError(f"the archive holds {len(zf.infolist())} members, over the limit of "
                               f"{limits.max_members}")
        measured = packed_sizes(zf)
        #: each file member's packed size as measured in the file
        self.packed = {info.filename: n for info, n in zip(zf.infolist(), measured) if not info.is_dir()}
        self.members = _checked_members(zf, self.packed, limits)
        self._cap = limits.total_cap(sum(self.packed[name] for name in self.members))
        self._inflated: dict[str, int] = {}

    @property
    def inflated(self) -> int:
        """The bytes inflated so far, each member counted once (at the most any read of it inflated)."""
        return sum(self._inflated.values())

    def inflated_size(self, name: str) -> int:
        """The most bytes any read of member `name` inflated (0 before it is read)."""
        return self._inflated.get(name, 0)

    def read(self, info: zipfile.ZipInfo, keep: bool = True) -> bytes:
        """The member's bytes (none kept with `keep=False`: the member is only inflated and its CRC checked),
        counted while they are inflated; ArchiveError past the member's or the archive's cap, or for a member that
        does not hold what the directory states."""
        name = info.filename
        others = self.inflated - self._inflated.get(name, 0)
        limit = min(self.limits.member_cap(self.packed.get(name, 0)), self._cap - others)
        parts: list[bytes] = []
        count = 0
        try:
            with self.zf.open(info) as member:
                while block := member.read(_BLOCK):
                    count += len(block)
                    if count > limit:
                        raise ArchiveError(f"member {name[:80]!r} inflates past {_size(limit)} from "
                                           f"{_size(self.packed.get(name, 0))} packed, more than the archive states "
                                           "(refused as a likely zip bomb)")
                    if keep:
                        parts.append(block)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ArchiveError(f"member {name[:80]!r} does not hold what the archive states (its size or checksum "
                               f"is false); the archive is refused ({str(exc)[:80]})") from exc
        except READ_ERRORS as exc:
            raise ArchiveError(f"member {name[:80]!r} cannot be read ({str(exc)[:120]})") from exc
        finally:
            self._inflated[name] = max(self._inflated.get(name, 0), count)
        return b"".join(parts)

    def verify(self) -> None:
        """Inflate every member once, counted and discarded, so a damaged one refuses the archive before anything
        of it is used."""
        for info in self.members.values():
            self.read(info, keep=False)

    def close(self) -> None:
        self.zf.close()

    def __enter__(self) -> CheckedZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_archive(source: IO[bytes]) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise ArchiveError(f"not a readable zip archive ({str(exc)[:120]})") from exc


def open_checked(source: IO[bytes], limits: ZipLimits) -> CheckedZip:
    """The archive in `source`, its directory checked and its packed sizes measured (`CheckedZip`); ArchiveError,
    with the archive closed, for the first problem found."""
    zf = open_archive(source)
    try:
        return CheckedZip(zf, limits)
    except BaseException:
        zf.close()
        raise
