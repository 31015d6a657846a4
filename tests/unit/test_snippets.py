""""Use it in your code" (`Chunker.snippet`, core/chunkers/snippets.py): every chunker's snippet is valid Python that
names its parameters, ChunkLens's own snippets rebuild the same chunker, and each library snippet, run with the
network unreachable, cuts the same chunks as the chunker it stands for."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from core.chunkers.peers import PeerChunker
from core.chunkers.registry import REGISTRY, make_chunker
from tests.support.data import ROOT
from tests.support.offline import OFFLINE_SITE

#: specs with parameters away from their defaults, beside every registered chunker at its defaults
SPECS = ["langchain-recursive:chunk_size=300:chunk_overlap=50",
         "langchain-recursive:length=tokens:chunk_size=60:chunk_overlap=10",
         "langchain-recursive:prefix=title:retrieval=route", "semchunk:chunk_size=60:overlap=10",
         "text-splitter:capacity=300:overlap=20:markdown=off", "text-splitter:length=tokens:capacity=60:markdown=on",
         "chonkie-recursive:chunk_size=300:min_characters_per_chunk=12", "naive-500t:size=60:overlap=10",
         "naive-500t:prefix=headings", "recursive:theta=50", "cosine:threshold=0.5", "chop:retrieval=filter"]


def all_specs() -> list[str]:
    return sorted(REGISTRY) + SPECS


def _shown(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@pytest.mark.parametrize("spec", all_specs())
def test_every_snippet_is_valid_python_that_names_its_parameter_values(spec):
    chunker = make_chunker(spec)
    snippet = chunker.snippet()
    if snippet is None:
        return
    ast.parse(snippet)
    defaults = {f.name: f.default for f in dataclasses.fields(chunker)}  # type: ignore[arg-type]
    for name, value in chunker.params().items():
        if _shown(value) or value != defaults.get(name):  # every number; a word where it is not the default
            assert str(value) in snippet, f"{spec}: {name}={value} not in\n{snippet}"
    assert "chunks = " in snippet


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_chunker_of_today_has_a_snippet_and_our_own_rebuild_the_same_chunker(name):
    chunker = make_chunker(name)
    snippet = chunker.snippet()
    assert snippet, f"{name} offers no snippet"
    if isinstance(chunker, PeerChunker) or "make_chunker(" not in snippet:
        return
    built = next(node for node in ast.walk(ast.parse(snippet))
                 if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "make_chunker")
    spec = ast.literal_eval(built.args[0])
    assert make_chunker(spec).identity == chunker.identity
    assert ("services.context()" in snippet) == bool(chunker.needs)


RUN_SNIPPETS = """
import json
import re
import sys

import core.catalog
from core.chunkers.peers import PeerChunker
from core.chunkers.registry import make_chunker
from core.ingest.datasets import load_dataset
from core.schema.documents import Document
from core.tokens import get_encoding
from tests.support.offline import REFUSED

get_encoding()  # tiktoken's cl100k_base from the packaged files, where a user's machine has it cached
docs = load_dataset("sample_data/qa").documents
markdown = docs[0].text[:6000]
plain = re.sub(r"(?m)^#+ ", "", docs[1].text[:6000])
out = {}
for spec in json.loads(sys.argv[1]):
    for label, text in (("markdown", markdown), ("plain", plain)):
        chunker = make_chunker(spec)
        doc = Document("d", "d", text)
        expected = chunker.split(doc)[0] if isinstance(chunker, PeerChunker) else \\
            [c.text for c in chunker.run(doc).chunks]
        scope = {"text": text}
        exec(chunker.snippet(), scope)
        out[f"{spec} {label}"] = [list(scope["chunks"]) == list(expected), len(expected)]
print(json.dumps({"runs": out, "refused": REFUSED}))
"""
#: the specs whose snippet gives the same chunk texts as the chunker: every peer's library call, LangChain's token
#: windows for naive-500t, and ChunkLens's core for one of its own (markdown=auto is left to the user: `plain` only)
SAME_CHUNKS = ["langchain-recursive:chunk_size=300:chunk_overlap=50",
               "langchain-recursive:length=tokens:chunk_size=60:chunk_overlap=10", "semchunk:chunk_size=60",
               "semchunk:chunk_size=60:overlap=10", "text-splitter:capacity=300:overlap=20:markdown=off",
               "text-splitter:length=tokens:capacity=60:markdown=on", "chonkie-recursive:chunk_size=300",
               "chonkie-recursive:chunk_size=120:min_characters_per_chunk=12", "naive-500t:size=60:overlap=10",
               "naive-500t", "recursive:theta=50", "paragraph"]


def test_each_snippet_run_offline_cuts_the_chunkers_chunks(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{OFFLINE_SITE}{os.pathsep}{ROOT}", "HF_HUB_OFFLINE": "1",
           "CHUNKLENS_TIKTOKEN_CACHE": str(tmp_path / "tiktoken")}
    specs = [*SAME_CHUNKS, "text-splitter:capacity=300"]
    proc = subprocess.run([sys.executable, "-c", RUN_SNIPPETS, json.dumps(specs)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert shown["refused"] == []
    runs = shown["runs"]
    for spec in SAME_CHUNKS:
        for label in ("markdown", "plain"):
            same, n = runs[f"{spec} {label}"]
            assert same and n > 1, f"{spec} on the {label} text: the snippet's chunks differ ({n} expected)"
    assert runs["text-splitter:capacity=300 plain"][0]  # markdown=auto on a text without headings: TextSplitter
