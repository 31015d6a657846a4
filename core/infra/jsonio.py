"""Reading JSON that someone else wrote (an upload, an archive member, a model's answer) with one short reason for
every way it can be unreadable.

`json.loads` raises three unrelated errors on bad input, and one of them is not a ValueError: text nested a few
thousand levels deep (`[[[[...`, a few KB) exhausts the parser's recursion limit and raises RecursionError, which
no `except ValueError` catches, so it ended as a traceback. Every reader of outside JSON goes through
`loads_checked`, which turns all of them into a ValueError its caller wraps in its own `ChunkLensError`.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

#: a value as JSON holds it, typed all the way down, for what is written to (or read back from) a JSON file: a
#: checked type where a dict of `Any` would let any value through unread. Read a field by narrowing it
#: (`isinstance`), or through a typed view; build one as a literal under a `JsonObject` annotation.
JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"
#: a JSON object: what `json.dumps` writes as `{...}` and `json.loads` gives back
JsonObject: TypeAlias = "dict[str, JsonValue]"

TOO_DEEP = "nested too deeply (arrays or objects inside each other thousands of levels deep)"


def count_in(obj: JsonObject, key: str) -> int:
    """A count a chunker wrote into its JSON trace; 0 where there is none or the value is no whole number (a bool
    is not one), as in another chunker's trace or an edited one."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def reason(exc: BaseException) -> str:
    """Why JSON did not load, in a few words: for the errors `json.loads` and `raw_decode` raise."""
    if isinstance(exc, RecursionError):
        return f"not valid JSON: {TOO_DEEP}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg})"
    return f"not valid JSON ({str(exc)[:120]})"


def loads_checked(data: str | bytes, where: str = "") -> Any:
    """The JSON value in `data` (bytes are read as UTF-8). Raises ValueError `"<where>: <reason>"` (just the reason
    without `where`) for text that is not JSON, not UTF-8, or nested too deeply to parse."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{where}: {reason(exc)}" if where else reason(exc)) from None


def jsonl_lines(text: str) -> list[tuple[int, str]]:
    """The non-blank lines of JSON Lines text, numbered from 1, split at line feeds only (a CRLF file's carriage
    returns dropped). Not `str.splitlines()`: it also splits at U+2028, U+2029, U+0085 and other separators that
    `json.dumps(..., ensure_ascii=False)` leaves raw inside a string, so one pasted character would cut a line in
    two and make the whole file unreadable."""
    return [(n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
