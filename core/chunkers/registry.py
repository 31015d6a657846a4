"""The chunker registry: every chunker is registered under its name and built from a spec string.

The registry imports no chunker. The generic chunkers register when `core.chunkers` is imported, the methods
when `core.methods` is; `core.catalog`, the composition root every entry point imports, loads both.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Callable
from functools import cache
from types import UnionType
from typing import Literal, Union, get_args, get_origin, get_type_hints

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


_NONE_WORDS = ("none", "null", "off")
_TRUE_WORDS, _FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@cache
def param_types(cls: type[Chunker]) -> dict[str, object]:
    """Each spec parameter of `cls` (its dataclass fields set at construction) with its declared type, resolved
    from the annotation (the modules use `from __future__ import annotations`, so a field's `type` is a string)."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _choices(kind: object) -> tuple[object, ...] | None:
    """The members a choice type allows (a `Literal`'s values, a `StrEnum`'s members), None for another type."""
    if get_origin(kind) is Literal:
        return get_args(kind)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return tuple(kind)
    return None


def _choice(value: str, members: tuple[object, ...], chunker: str, key: str) -> object:
    """The member spelled exactly `value` (an enum member by its value); else one line naming the allowed values."""
    spelled = {str(m.value if isinstance(m, enum.Enum) else m): m for m in members}
    if value in spelled:
        return spelled[value]
    raise ConfigError(f"{chunker}: {key} must be one of {', '.join(spelled)} (got '{value}')")


def _boolean(value: str) -> bool:
    if value.lower() in _TRUE_WORDS:
        return True
    if value.lower() in _FALSE_WORDS:
        return False
    raise ValueError(value)


#: the plain types a spec can spell, each with its reader (a ValueError for a value it does not take)
_READERS: dict[object, tuple[str, Callable[[str], object]]] = {
    bool: ("bool", _boolean), int: ("int", int), float: ("float", float), str: ("str", str)}


def _scalar(value: str, kind: object, chunker: str, key: str) -> object:
    if kind not in _READERS:
        raise ConfigError(f"{chunker}:{key}: a parameter of type {kind} cannot be set in a spec")
    name, read = _READERS[kind]
    try:
        return read(value)
    except ValueError as exc:
        raise ConfigError(f"{chunker}:{key}: '{value}' is not a valid {name}") from exc


def convert_param(value: str, kind: object, chunker: str, key: str) -> object:
    """`value` as a spec spells it, converted to the parameter's declared type `kind`. Decided by the type itself,
    never by words in its name: a choice (`Literal`, `StrEnum`) takes an exact member only, else one ConfigError
    line naming the allowed values; an optional type (`X | None`) takes none, null or off as None, unless that word
    is one of its choices; bool, int, float and str are read as such; any other type is refused."""
    arms = get_args(kind) if get_origin(kind) in (Union, UnionType) else (kind,)
    real = tuple(a for a in arms if a is not type(None))
    if len(real) != 1:
        raise ConfigError(f"{chunker}:{key}: a parameter of type {kind} cannot be set in a spec")
    (arm,) = real
    members = _choices(arm)
    is_member = members is not None and value in {str(m.value if isinstance(m, enum.Enum) else m) for m in members}
    if len(real) < len(arms) and value.lower() in _NONE_WORDS and not is_member:
        return None
    if members is not None:
        return _choice(value, members, chunker, key)
    return _scalar(value, arm, chunker, key)


def make_chunker(spec: str, context: ChunkerContext | None = None) -> Chunker:
    """Build a chunker from its spec string, checking names, parameter types and values. With a context, the
    services the chunker needs must be in it; without one, the chunker can be inspected (spec, needs,
    parameters) but not run, which is how callers check specs before building any service."""
    cls = chunker_class(spec)
    name, raw = parse_spec(spec)
    fields = param_types(cls)
    kwargs: dict[str, object] = {}
    for key, value in raw.items():
        if key not in fields:
            raise ConfigError(f"chunker '{name}' has no parameter '{key}' (has: {', '.join(fields) or 'none'})")
        kwargs[key] = convert_param(value, fields[key], name, key)
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
