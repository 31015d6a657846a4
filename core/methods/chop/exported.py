"""CHOP's export fields (`core.chunkers.export_fields`): every exported chunk carries its CNM, how it got it and the
continuity decision before it, and a CSV spreads the CNM over three columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.chunkers.export_fields import ExportFields, register_export_fields
from core.methods.chop.cnm import ChopMeta
from core.schema.chunks import Chunk


def _read(chunk: Chunk) -> dict[str, Any]:
    return {key: chunk.meta.get(key) for key in ChopMeta.KEYS}


def _flatten(metadata: Mapping[str, Any]) -> dict[str, Any]:
    cnm = metadata.get("cnm") or {}
    return {"cnm_category": cnm.get("category"), "cnm_nouns": "; ".join(cnm.get("nouns") or []) or None,
            "cnm_model": cnm.get("model")}


register_export_fields(ExportFields(
    keys=ChopMeta.KEYS,
    columns=("cnm_category", "cnm_nouns", "cnm_model", "cnm_source", "continuity", "continuity_reason"),
    read=_read, flatten=_flatten))
