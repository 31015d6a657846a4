"""Every regular expression of `core` runs in linear time on hostile text.

Python's `re` backtracks, and holds the interpreter lock while it does: a pattern with overlapping quantifiers over
the same characters (`(.+?)[ \\t#]*$` after a heading's `#`) took seconds on one heading line followed by 20,000
blanks, and froze every other visitor of a shared server meanwhile. The lint test below imports every module of
`core`, collects every compiled pattern it holds at module and class level, and runs each over a small hostile
corpus at two sizes: a pattern whose time grows far more than the input's fails, naming the pattern and the input.
The tests after it hold each pattern that was fixed to a hostile line read in well under a tenth of a second.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
import types
from collections.abc import Callable, Iterator

import pytest

import core

#: the input grows by this factor between the two runs; a linear pattern's time grows about as much
GROWTH = 4
#: how much more than GROWTH the time may grow before the pattern is called superlinear (a quadratic one grows
#: 16x): the margin absorbs timing noise on a busy machine
RATIO = 2.5 * GROWTH
#: below this many seconds on the larger input no pattern is blamed, however the ratio looks (tiny timings jitter)
FLOOR = 0.03
SIZE = 4000  # characters of the smaller hostile input

#: hostile inputs, each made for `n` repetitions: long runs of one character and the shapes that made the
#: heading patterns backtrack (a heading or a title line followed by blanks, an unclosed bracket)
HOSTILE: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: " " * n,
    "tabs": lambda n: "\t" * n,
    "hashes": lambda n: "#" * n,
    "equals": lambda n: "=" * n,
    "dashes": lambda n: "-" * n,
    "newlines": lambda n: "\n" * n,
    "blank lines": lambda n: " \n" * (n // 2),
    "letters": lambda n: "a" * n,
    "capitals": lambda n: "A" * n,
    "digits": lambda n: "1" * n,
    "dotted": lambda n: "a." * (n // 2),
    "mixed": lambda n: ("a1 -=#\t\n.(" * n)[:n],
    "heading then blanks": lambda n: "# a" + " " * n + "b",
    "hash then blanks": lambda n: "#" + " " * n + "b",
    "hash then tabs": lambda n: "# " + "\t" * n + "#b",
    "heading then tabs and hashes": lambda n: "## a" + " \t#" * (n // 3) + "b",
    "title then blanks": lambda n: "Title" + " " * n + "x\n=====",
    "title then blanks, underlined": lambda n: "Title" + " " * n + "\n=====",
    "manual title then blanks": lambda n: "# Orbit user manual" + " " * n + "b",
    "open brackets": lambda n: "(" * n,
    "open braces": lambda n: "{" * n,
    "word then blanks": lambda n: "K5" + " " * n + "x",
}


def core_modules() -> Iterator[types.ModuleType]:
    """Every module of the `core` package (its command-line entry point aside: importing it runs the command)."""
    for info in pkgutil.walk_packages(core.__path__, "core."):
        if info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def patterns_of(module: types.ModuleType) -> dict[str, re.Pattern[str]]:
    """name -> every compiled text pattern a module holds at module level or in the body of a class it defines."""
    found: dict[str, re.Pattern[str]] = {}
    names = vars(module)
    holders: list[tuple[str, dict[str, object]]] = [(module.__name__, names)]
    holders += [(f"{module.__name__}.{k}", vars(v)) for k, v in names.items()
                if isinstance(v, type) and v.__module__ == module.__name__]
    for where, space in holders:
        for key, value in space.items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[f"{where}.{key}"] = value
    return found


def core_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled text pattern of `core`, by where it is (a pattern imported by another module, once)."""
    found: dict[str, re.Pattern[str]] = {}
    seen: set[int] = set()
    for module in core_modules():
        for name, pattern in patterns_of(module).items():
            if id(pattern) not in seen:
                seen.add(id(pattern))
                found[name] = pattern
    return found


def _seconds(pattern: re.Pattern[str], text: str) -> float:
    started = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - started


def _best(pattern: re.Pattern[str], text: str, tries: int) -> float:
    return min(_seconds(pattern, text) for _ in range(tries))


def superlinear(pattern: re.Pattern[str], make: Callable[[int], str]) -> tuple[float, float] | None:
    """(seconds on the small input, seconds on the large one) when the time grows superlinearly, else None. A
    suspicious first measurement is taken again, best of three, before the pattern is blamed."""
    small, large = make(SIZE), make(GROWTH * SIZE)
    t1, t4 = _seconds(pattern, small), _seconds(pattern, large)
    if t4 < FLOOR or t4 < RATIO * t1:
        return None
    if t4 > 20 * FLOOR:  # far past the floor: no noise explains that
        return t1, t4
    t1, t4 = _best(pattern, small, 3), _best(pattern, large, 3)
    return (t1, t4) if t4 >= FLOOR and t4 >= RATIO * t1 else None


def test_the_lint_finds_the_patterns_it_is_meant_to_check():
    """The collector sees module-level and class-level patterns of every part of `core`, and the timing check
    calls a quadratic pattern quadratic (so the lint cannot pass by looking at nothing)."""
    from core.chunkers import headers
    from core.methods.chop import reading, rules

    found = core_patterns()
    for pattern in (reading.TITLE_MARKER, reading._HASH_LINE, headers._FENCE, rules._DOC_MARKER):
        assert any(p is pattern for p in found.values())
    assert len(found) >= 40
    fake = types.ModuleType("fake")
    fake.Holder = type("Holder", (), {"__module__": "fake", "PATTERN": re.compile("x+y")})  # type: ignore[attr-defined]
    assert list(patterns_of(fake)) == ["fake.Holder.PATTERN"]
    quadratic = re.compile(r"(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$")  # the heading pattern as it was
    assert superlinear(quadratic, HOSTILE["heading then blanks"]) is not None


def test_every_pattern_of_core_runs_in_linear_time_on_hostile_text():
    slow = []
    for name, pattern in sorted(core_patterns().items()):
        for shape, make in HOSTILE.items():
            if (times := superlinear(pattern, make)) is not None:
                slow.append(f"{name} on {shape}: {times[0]:.3f} s at {SIZE} characters, {times[1]:.3f} s at "
                            f"{GROWTH * SIZE}")
    assert not slow, "superlinear patterns:\n" + "\n".join(slow)


@pytest.mark.parametrize("series", [("Model", "Series", "Type", "No."), ("Galaxy", "Tab", "Note", "Model")])
def test_the_model_patterns_built_per_library_run_in_linear_time(series):
    """The model pattern is built from the words a library's titles teach (`rules._named_model_re`): the same
    check on two of the series it is built with."""
    from core.methods.chop.rules import _named_model_re

    pattern = _named_model_re(series)
    slow = [shape for shape, make in HOSTILE.items() if superlinear(pattern, make) is not None]
    slow += [shape for shape, make in {"series then blanks": lambda n: "Model" + " " * n + "x"}.items()
             if superlinear(pattern, make) is not None]
    assert not slow


def _seconds_for(read: Callable[[], object]) -> float:
    """The best of three timings of `read` (one slow run on a busy machine is no finding)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - started)
    return best


#: headings of the largest length read as one, each followed by many blanks: the backtracking shape, line after line
BLANKS = 480
MANY = 400


def test_a_hash_heading_followed_by_blanks_is_read_at_once():
    """`reading.HEADING` (`(.+?)[ \\t#]*$`) took 3.9 s on `# a`, 20,000 blanks and `b`, 4x per doubling."""
    from core.methods.chop.reading import first_level_lines, hash_headings

    hostile = "# a" + " " * 40_000 + "b"
    assert _seconds_for(lambda: first_level_lines(hostile)) < 0.1
    assert first_level_lines(hostile) == []  # past MAX_HEADING_CHARS: prose, not a heading
    lines = ("# a" + " " * BLANKS + "b\n") * MANY
    assert _seconds_for(lambda: hash_headings(lines)) < 0.1
    assert [h.text for h in hash_headings(lines)] == ["a" + " " * BLANKS + "b"] * MANY


def test_an_underlined_heading_with_blanks_is_read_at_once():
    """`reading.UNDERLINED` (a lazy heading text before `[ \\t]*\\n`) was quadratic on a line of many blanks."""
    from core.methods.chop.reading import first_level_lines, underlined_headings

    hostile = "Title" + " " * 40_000 + "x\n=====\n"
    assert _seconds_for(lambda: first_level_lines(hostile)) < 0.1
    lines = ("Title" + " " * BLANKS + "\n=====\n") * MANY
    assert _seconds_for(lambda: underlined_headings(lines)) < 0.1
    assert len(first_level_lines(lines)) == MANY


def test_a_markdown_heading_followed_by_blanks_is_read_at_once():
    """`headers._ATX` (`(.+?)(?:[ \\t]+#+)?[ \\t]*$`) took seconds on one heading line followed by blanks."""
    from core.chunkers.headers import markdown_headings

    hostile = "# a" + " " * 40_000 + "b\n"
    assert _seconds_for(lambda: markdown_headings(hostile)) < 0.1
    assert markdown_headings(hostile) == []
    lines = ("# a" + " " * BLANKS + "b #\n") * MANY
    assert _seconds_for(lambda: markdown_headings(lines)) < 0.1
    assert {t for _, _, t in markdown_headings(lines)} == {"a" + " " * BLANKS + "b"}


def test_a_hash_followed_by_blanks_is_no_slow_document_marker():
    """`rules._DOC_MARKER` (`#[ \\t]+[^\\n]*`) took 16 s on `#`, 20,000 blanks and `b` in a window the rule
    backend judged."""
    from core.methods.chop.rules import RuleCnm

    hostile = "#" + " " * 10_000 + "b"
    assert _seconds_for(lambda: RuleCnm().decide_one("The fan.", hostile)) < 0.1
    assert RuleCnm().decide_one("The fan.", "# Fan F30 user manual")[0] is False  # a title still cuts


def test_blanks_are_no_slow_variant_tail():
    """`rules._VARIANT_TAIL` began a scan at every blank of a run: 1.3 s on 4,000 blanks."""
    from core.methods.chop.rules import _VARIANT_TAIL, model_candidates

    assert _seconds_for(lambda: list(_VARIANT_TAIL.finditer(" " * 4000))) < 0.1
    assert model_candidates("the 225B Lite and 225B" + " " * 40_000 + "x") == {"225B Lite": 1, "225B": 1}


def test_unclosed_brackets_in_a_title_are_read_at_once():
    """A title's bracketed asides are dropped (`ExtractCnm.name_of`); `\\([^)]*\\)` scanned to the line's end from
    every unclosed bracket: quadratic on a title of "(" characters."""
    from core.methods.chop.extract import ExtractCnm, without_brackets

    assert _seconds_for(lambda: ExtractCnm().name_of("(" * 60_000 + " Orbit K5")) < 0.1
    assert without_brackets("Orbit K5 (rev. 2) [draft] (open") == "Orbit K5     (open"
    assert without_brackets("a (b (c) d) e [f") == "a   d) e [f"


def test_a_run_of_capitals_is_no_slow_fact():
    """`passages._FACT` (the facts a generated question may quote) split a run of capitals in every way before
    failing on a hyphenated code: 2.6 s on 16,000 capitals."""
    from core.evaluation.questions.passages import facts

    assert _seconds_for(lambda: facts("A" * 20_000)) < 0.1
    assert facts("the SM-G973F and the AC-DC adapter, 25 mm") == {"sm-g973f", "ac-dc", "25mm"}


def test_the_types_stated_after_a_model_are_read_in_one_pass():
    """`reading.types_after_models` searched the whole text again for each mention of the model: this 72 KB
    manual, naming its model on every line, took 13 s (a real one 33 s of CPU before its first chunk), and Stop
    could not end it. The result is the same, read in one pass over the mentions and one over the determiners."""
    from core.methods.chop.reading import types_after_models

    sentences = [f"The Orbit K5 mixer channel {i} is set.\n" for i in range(1900)]
    text = "# Orbit K5 Flight Controller\n\nThe Orbit K5 flight controller is small.\n" + "".join(sentences)
    text += "Mount the flight controller on the frame."
    assert len(text) > 72_000
    assert _seconds_for(lambda: types_after_models([("Orbit K5", text)])) < 1.0
    assert types_after_models([("Orbit K5", text)]) == {"flight controller": 1, "flight": 1}
