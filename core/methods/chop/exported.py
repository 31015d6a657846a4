"""CHOP's export fields (`core.chunkers.export_fields`): every exported chunk carries its CNM, how it got it and the
continuity decision before it, and a CSV spreads the CNM over three columns."""

from __future__ import annotations

from collections.abc import Mapping

from core.chunkers.export_fields import ExportFields, register_export_fields
from core.infra.jsonio import JsonObject, JsonValue
from core.methods.chop.cnm import ChopMeta
from core.schema.chunks import Chunk


def _read(chunk: Chunk) -> JsonObject:
    return {key: chunk.meta.get(key) for key in ChopMeta.KEYS}


def _flatten(metadata: Mapping[str, JsonValue]) -> JsonObject:
    """The CNM's three parts as CSV columns, from an exported record's `cnm` (a CNM's JSON form, as `_read` gives
    it; nothing where a chunk has none)."""
    found = metadata.get("cnm")
    cnm = found if isinstance(found, dict) else {}
    listed = cnm.get("nouns")
    nouns = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    return {"cnm_category": cnm.get("category"), "cnm_nouns": "; ".join(nouns) or None, "cnm_model": cnm.get("model")}


register_export_fields(ExportFields(
    keys=ChopMeta.KEYS,
    columns=("cnm_category", "cnm_nouns", "cnm_model", "cnm_source", "continuity", "continuity_reason"),
    read=_read, flatten=_flatten))
