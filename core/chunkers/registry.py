"""The chunker registry: every chunker is registered under its name and built from a spec string.

The registry imports no chunker. The generic chunkers register when `core.chunkers` is imported, the methods
when `core.methods` is; `core.catalog`, the composition root every entry point imports, loads both.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from core.chunkers.base import NEED_NAMES, Chunker, ChunkerContext, MetadataPrefix, TitleRouting
from core.infra.errors import ConfigError

REGISTRY: dict[str, type[Chunker]] = {}


def register(cls: type[Chunker]) -> type[Chunker]:
    """Class decorator: make the chunker reachable as `cls.name`; a name already taken is refused."""
    held = REGISTRY.get(cls.name)
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ConfigError(f"a chunker named '{cls.name}' is already registered ({held.__module__}.{held.__qualname__})")
    REGISTRY[cls.name] = cls
    return cls


def chunker_class(spec: str) -> type[Chunker]:
    """The registered class of a spec's chunker."""
    name = parse_spec(spec)[0]
    if name not in REGISTRY:
        hint = "" if "core.methods" in sys.modules else "; the papers' methods load with `import core.catalog`"
        raise ConfigError(f"unknown chunker '{name}' (available: {', '.join(sorted(REGISTRY))}{hint})")
    return REGISTRY[name]


def available() -> list[str]:
    return sorted(REGISTRY)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name:key=value:key=value` -> (name, {key: value})."""
    name, *pairs = [p.strip() for p in spec.strip().split(":")]
    params: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"chunker '{spec}': parameter '{pair}' must look like key=value")
        key, value = pair.split("=", 1)
        params[key.strip()] = value.strip()
    return name, params


def _convert(value: str, kind: Any, where: str) -> Any:
    text = str(kind)
    if value.lower() in ("none", "null", "off") and "None" in text:
        return None
    try:
        if "bool" in text:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "int" in text:
            return int(value)
        if "float" in text:
            return float(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: '{value}' is not a valid {text}") from exc
    return value


def make_chunker(spec: str, context: ChunkerContext | None = None) -> Chunker:
    """Build a chunker from its spec string, checking names, parameter types and values. With a context, the
    services the chunker needs must be in it; without one, the chunker can be inspected (spec, needs,
    parameters) but not run, which is how callers check specs before building any service."""
    cls = chunker_class(spec)
    name, raw = parse_spec(spec)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields:
            raise ConfigError(f"chunker '{name}' has no parameter '{key}' (has: {', '.join(fields) or 'none'})")
        kwargs[key] = _convert(value, fields[key].type, f"{name}:{key}")
    chunker = cls(**kwargs)
    chunker.context = context or ChunkerContext()
    for need in chunker.needs if context is not None else ():
        if chunker.context.get(need) is None:
            raise ConfigError(f"chunker '{name}' needs {NEED_NAMES.get(need, need)}, and none is configured")
    if isinstance(chunker, MetadataPrefix):
        chunker.check_prefix()
    if isinstance(chunker, TitleRouting):
        chunker.check_retrieval()
    chunker.validate()
    return chunker
