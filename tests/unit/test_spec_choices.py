"""A chunker spec's values are converted by each parameter's declared type: a choice (`Literal`, `StrEnum`) takes
an exact member or fails with one line naming the allowed values; every registered chunker's defaults and every
spec of the committed reports still parse."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from pathlib import Path
from typing import Literal

import pytest

import core.catalog  # noqa: F401  (registers the methods)
from core.chunkers.registry import REGISTRY, convert_param, make_chunker, param_types, parse_spec
from core.infra.errors import ConfigError

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


class Colour(enum.StrEnum):
    RED = "red"
    GREEN = "green"


def test_a_literal_takes_an_exact_member_whatever_its_words_contain():
    # "int", "float", "bool" and "None" inside a choice's words must not steer the conversion
    kind = Literal["interval", "point", "floating", "boolean", "None"]
    for member in ("interval", "point", "floating", "boolean", "None"):
        assert convert_param(member, kind, "x", "k") == member
    with pytest.raises(ConfigError, match=re.escape("x: k must be one of interval, point, floating, boolean, None "
                                                    "(got 'Interval')")):
        convert_param("Interval", kind, "x", "k")


def test_a_str_enum_takes_an_exact_value_and_gives_the_member():
    assert convert_param("green", Colour, "x", "colour") is Colour.GREEN
    for bad in ("GREEN", "gre", "Colour.GREEN"):
        with pytest.raises(ConfigError, match=re.escape(f"x: colour must be one of red, green (got '{bad}')")):
            convert_param(bad, Colour, "x", "colour")


def test_an_optional_choice_keeps_its_none_words_as_members():
    kind = Literal["off", "on"] | None
    assert convert_param("off", kind, "x", "k") == "off"
    assert convert_param("none", kind, "x", "k") is None
    assert convert_param("none", int | None, "x", "k") is None and convert_param("7", int | None, "x", "k") == 7


def test_a_type_a_spec_cannot_spell_is_refused():
    with pytest.raises(ConfigError, match="cannot be set in a spec"):
        convert_param("1,2", tuple[int, ...], "x", "k")


@pytest.mark.parametrize(("spec", "allowed"), [
    ("paragraph:prefix=toc", "none, title, headings"),
    ("paragraph:prefix=Title", "none, title, headings"),
    ("naive-500t:retrieval=filter", "off, route"),
    ("chop:mode=pair", "pairs, anchor"),
    ("chop:prefix=title", "before, after, none"),
    ("chop:retrieval=boosts", "off, boost, filter, route"),
    ("semantic:buffer_by=vector", "vectors, text"),
    ("langchain-recursive:length=words", "chars, tokens"),
    ("text-splitter:markdown=yes", "auto, on, off"),
    ("text-splitter:length=char", "chars, tokens"),
])
def test_a_bad_choice_is_one_line_naming_the_allowed_values(spec, allowed):
    name, params = parse_spec(spec)
    (key, value), = params.items()
    with pytest.raises(ConfigError) as caught:
        make_chunker(spec)
    assert str(caught.value) == f"{name}: {key} must be one of {allowed} (got '{value}')"


def test_every_choice_parameter_is_typed_as_its_choices():
    """No chunker parameter is a free `str` but the one that names another chunker (mg's parents)."""
    free = {(name, key) for name, cls in REGISTRY.items() for key, kind in param_types(cls).items() if kind is str}
    assert free == {("mg", "parents")}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_chunkers_defaults_parse_back(name):
    chunker = make_chunker(name)
    defaults = {f.name: getattr(chunker, f.name) for f in dataclasses.fields(chunker) if f.init}
    spelled = ":".join([name, *(f"{k}={'none' if v is None else v}" for k, v in defaults.items())])
    again = make_chunker(spelled)
    assert {k: getattr(again, k) for k in defaults} == defaults
    assert make_chunker(chunker.spec).spec == chunker.spec


def _report_specs() -> set[str]:
    specs: set[str] = set()
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        results = data.get("results")
        named = list(data.get("chunkers") or []) + (list(results) if isinstance(results, dict) else [])
        specs.update(s for s in named if isinstance(s, str) and parse_spec(s)[0] in REGISTRY)
        for result in results.values() if isinstance(results, dict) else ():
            if isinstance(result, dict) and isinstance(result.get("config"), str):
                specs.add(result["config"])
    return specs


def test_every_spec_in_the_committed_reports_still_parses():
    specs = _report_specs()
    assert len(specs) > 20 and any(s.startswith("chop:") and "mode=" in s for s in specs)
    for spec in sorted(specs):
        assert make_chunker(spec).name == parse_spec(spec)[0], spec
