"""Export fields: what a method adds to every exported chunk (CHOP's CNM and continuity decision). A method
registers them here; `core.outputs.export` writes them for every chunk of every run (None where a chunk has none),
so an export's keys and columns do not depend on which chunkers ran, and generic code never reads a method's
`chunk.meta` keys itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.infra.jsonio import JsonObject, JsonValue
from core.schema.chunks import Chunk


@dataclass(frozen=True)
class ExportFields:
    """One method's export fields: the metadata `keys` every JSONL record carries and what `read` gives them for a
    chunk (JSON-safe, None where it has none); the CSV `columns` they spread over and what `flatten` gives those
    of them that are not one of `keys` as they are (the CNM's three parts, say)."""

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    read: Callable[[Chunk], JsonObject]
    flatten: Callable[[Mapping[str, JsonValue]], JsonObject]


EXPORT_FIELDS: list[ExportFields] = []


def register_export_fields(fields: ExportFields) -> ExportFields:
    """Add a method's export fields (once), after those registered before it."""
    if fields not in EXPORT_FIELDS:
        EXPORT_FIELDS.append(fields)
    return fields
