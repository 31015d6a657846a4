"""Home's guided demo: "Beside CHOP, your framework's default" lists the registered framework defaults, picks none
unless asked, and hands the picked ones to the demo."""

from __future__ import annotations

from components import demo
from core.infra.errors import ChunkLensError
from core.workbench.demo import framework_defaults
from tests.support.appflow import click, new_session


def test_the_picked_framework_default_reaches_the_guided_demo(tmp_path, monkeypatch):
    asked: list[list[str]] = []

    def guided_demo(services, retrieval=None, progress=None, frameworks=(), on_result=None):
        asked.append(list(frameworks))
        raise ChunkLensError("stopped by the test")

    monkeypatch.setattr(demo, "guided_demo", guided_demo)
    at = new_session(monkeypatch, tmp_path / "ws")
    [choice] = [m for m in at.multiselect if m.label == "Beside CHOP, your framework's default"]
    assert choice.options == framework_defaults() and choice.value == []
    at = click(at, "Run the guided demo")
    choice = next(m for m in at.multiselect if m.key == "demo-frameworks")
    at = click(choice.select("langchain-recursive").run(), "Run the guided demo")
    assert not at.exception
    assert asked == [[], ["langchain-recursive"]]
