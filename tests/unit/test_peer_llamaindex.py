"""The LlamaIndex peers and Chonkie's semantic peer (core.chunkers.peers.llamaindex, .chonkie): the libraries' own
default chunks, exact spans with what each library changed measured, the run's embedder handed to the semantic
ones, nothing fetched whatever NLTK_DATA and TIKTOKEN_CACHE_DIR say, and a snippet that builds each in the user's
own stack."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.evaluation.fidelity import fidelity_fields
from core.infra.errors import ConfigError
from core.pipeline import chunk_documents
from core.schema.documents import Document
from tests.support.data import ROOT
from tests.support.offline import OFFLINE_SITE
from tests.support.spans import check_spans

MANUAL = ("Clean the air filter every two weeks. Rinse it in warm water and let it dry in the shade. "
          "Do not use a dryer or a heater on the filter.\n\n"
          "Press the mode button twice to reach the timer. The display shows the hours left. "
          "Hold the button for three seconds to clear the timer.\n\n"
          "Replace the batteries of the remote control when the lamp blinks. Use two AAA batteries. "
          "Dispose of the old batteries as local rules require.\n\n"
          "If the unit makes a rattling noise, check that it stands level. Tighten the screws of the front "
          "panel. Call the service centre if the noise goes on.")


def _context(embedder) -> ChunkerContext:
    return ChunkerContext(embedder=embedder)


def test_sentence_peer_gives_the_librarys_own_default_chunks(monkeypatch):
    """The peer hands LlamaIndex its default tokenizer and sentence splitter, built without a download: the
    chunks are those of SentenceSplitter as a user builds it, with its own tokenizer and NLTK."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import SentenceSplitter

    monkeypatch.delenv("NLTK_DATA", raising=False)
    for size, overlap in [(32, 8), (64, 0), (1024, 200)]:
        own = SentenceSplitter(chunk_size=size, chunk_overlap=overlap)
        theirs = [n.text for n in own.get_nodes_from_documents([LlamaDocument(text=MANUAL)])]
        chunks = make_chunker(f"llamaindex-sentence:chunk_size={size}:chunk_overlap={overlap}").chunk(
            Document("d", "d", MANUAL)).chunks
        assert [c.text for c in chunks] == [t.strip() for t in theirs]
        check_spans(MANUAL, chunks)
    assert len(theirs) == 1 and size == 1024  # the defaults fit the whole manual


def test_sentence_chunks_are_placed_where_llamaindexs_start_is_wrong(capsys):
    """LlamaIndex searches for a node's text from just past the previous node's start: in repeated text the second
    chunk, which shares 8 tokens with the first, is found at an earlier copy and the end of the text is left out.
    So is the first copy past a floor counted back 8 tokens, in periodic text."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import SentenceSplitter

    title = "# Nordwind 225B Air Conditioner - User Manual"
    text = "\n\n".join([title] * 4)
    own = SentenceSplitter(chunk_size=30, chunk_overlap=8).get_nodes_from_documents([LlamaDocument(text=text)])
    assert [n.start_char_idx for n in own] == [0, 32]  # 32: an earlier copy of the second chunk's text
    capsys.readouterr()
    chunks = make_chunker("llamaindex-sentence:chunk_size=30:chunk_overlap=8").chunk(Document("d", "d", text)).chunks
    assert [c.text for c in chunks] == [n.text for n in own]
    assert [(c.start, c.end) for c in chunks] == [(0, 104), (79, len(text))]
    check_spans(text, chunks)
    assert capsys.readouterr().out == ""  # not LlamaIndex's warning of a chunk size under 50 tokens, printed
    periodic = "abcdefghij" * 150  # each chunk's text is found every 10 characters: the least overlap is taken
    chunker = make_chunker("llamaindex-sentence:chunk_size=40:chunk_overlap=8")
    chunks = chunker.chunk(Document("d", "d", periodic)).chunks
    check_spans(periodic, chunks)
    assert chunks[-1].end == len(periodic) and len(chunks) == 47


def test_defaults_are_the_libraries_and_sizes_are_bounded():
    sentence = make_chunker("llamaindex-sentence")
    assert (sentence.chunk_size, sentence.chunk_overlap) == (1024, 200)
    assert sentence.identity.endswith(":llama-index-core=0.14.25")
    semantic = make_chunker("llamaindex-semantic")
    assert (semantic.buffer_size, semantic.breakpoint_percentile_threshold) == (1, 95)
    assert semantic.needs == ("embedder",)
    chonkie = make_chunker("chonkie-semantic")
    assert (chonkie.chunk_size, chonkie.threshold, chonkie.similarity_window) == (2048, 0.8, 3)
    assert chonkie.identity.endswith(":chonkie=1.7.0")
    for spec, message in [
        ("llamaindex-sentence:chunk_size=9000", "llamaindex-sentence: chunk_size must be between 16 and 8192 tokens"),
        ("llamaindex-sentence:chunk_size=100:chunk_overlap=60", "overlap must be between 0 and 50 tokens"),
        ("llamaindex-semantic:buffer_size=9", "buffer_size must be between 0 and 4 sentences either side"),
        ("llamaindex-semantic:breakpoint_percentile_threshold=101", "must be between 0 and 100"),
        ("chonkie-semantic:chunk_size=10", "chonkie-semantic: chunk_size must be between 64 and 32768 characters"),
        ("chonkie-semantic:threshold=1", "threshold must be between 0.01 and 0.99"),
        ("chonkie-semantic:similarity_window=0", "similarity_window must be between 1 and 9 sentences"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_chunker(spec)
    with pytest.raises(ConfigError, match="needs an embedder"):
        make_chunker("chonkie-semantic", ChunkerContext())


@pytest.mark.parametrize("spec", ["llamaindex-semantic", "llamaindex-semantic:buffer_size=0:"
                                  "breakpoint_percentile_threshold=50", "chonkie-semantic",
                                  "chonkie-semantic:chunk_size=120:similarity_window=1"])
def test_semantic_peers_embed_with_the_runs_embedder_and_give_exact_spans(spec, cached_minilm):
    doc = Document("d", "d", MANUAL)
    run = chunk_documents([doc], make_chunker(spec, _context(cached_minilm)))
    chunks = run.chunks
    check_spans(MANUAL, chunks)
    assert len(chunks) > 1  # the manual's four topics are told apart
    assert all(c.meta["peer_text"] in ("same", "whitespace") for c in chunks)
    assert fidelity_fields([doc], run) == {"dropped_chars_share": 0.0, "altered_chunks_share": 0.0}
    placement = run.traces["d"]["peer"]
    assert placement["unmatched"] == placement["inside_previous"] == 0
    if "chunk_size=120" in spec:
        longest_sentence = max(len(s) for s in re.split(r"(?<=\.) ", MANUAL))
        assert all(len(c.text) <= max(120, longest_sentence) for c in chunks)


def test_the_semantic_peers_use_the_embedders_vectors(cached_minilm):
    """The adapters hand each library the run's embedder's vectors (unit length), nothing loaded by name."""
    import numpy as np

    from core.chunkers.peers.chonkie_embedding import ChunkLensEmbeddings
    from core.chunkers.peers.llamaindex_embedding import ChunkLensEmbedding

    texts = ["Clean the air filter.", "Replace the batteries."]
    want = np.asarray(cached_minilm.embed(texts))
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    llama = np.asarray(ChunkLensEmbedding(cached_minilm).get_text_embedding_batch(texts))
    chonkie = ChunkLensEmbeddings(cached_minilm)
    assert np.allclose(llama, want, atol=1e-6) and np.allclose(np.stack(chonkie.embed_batch(texts)), want, atol=1e-6)
    assert chonkie.dimension == want.shape[1] == 384
    assert chonkie.get_tokenizer().count_tokens("héllo") == 5  # characters


OFFLINE_SCRIPT = """
import json
import core.catalog
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.schema.documents import Document
from core.store.embeddings import SentenceTransformerEmbedder
from tests.support.offline import REFUSED

text = json.loads(input())
out = {"library": {}}
# the library's own defaults, first: with these variables they reach for the network
from llama_index.core.utils import get_tokenizer, globals_helper
for what, load in [("tokenizer", get_tokenizer), ("nltk", lambda: globals_helper.punkt_tokenizer)]:
    try:
        load()
        out["library"][what] = "loaded"
    except Exception as exc:
        out["library"][what] = type(exc).__name__
out["library_refused"] = sorted({host for _, host in REFUSED})
REFUSED.clear()
context = ChunkerContext(embedder=SentenceTransformerEmbedder())
out["chunks"] = {spec: [c.text for c in make_chunker(spec, context).run(Document("d", "d", text)).chunks]
                 for spec in ("llamaindex-sentence:chunk_size=32:chunk_overlap=8", "llamaindex-semantic",
                              "chonkie-semantic")}
out["refused"] = REFUSED
print(json.dumps(out))
"""


def test_llamaindex_fetches_nothing_whatever_nltk_data_and_tiktoken_cache_dir_say(tmp_path):
    """With NLTK_DATA and TIKTOKEN_CACHE_DIR naming an empty folder, LlamaIndex's own defaults reach for the network
    (NLTK's stopwords, tiktoken's BPE file); the peers, handed the same tokenizer and sentence splitter, do not,
    and give the chunks they give anywhere else."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{OFFLINE_SITE}{os.pathsep}{ROOT}", "NLTK_DATA": str(empty),
           "TIKTOKEN_CACHE_DIR": str(empty), "CHUNKLENS_TIKTOKEN_CACHE": str(tmp_path / "tiktoken"),
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT], cwd=ROOT, env=env, input=json.dumps(MANUAL),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert shown["library"] == {"tokenizer": "ConnectionError", "nltk": "LookupError"}  # the guard was in force
    assert shown["library_refused"] == ["openaipublic.blob.core.windows.net", "raw.githubusercontent.com"]
    assert shown["refused"] == []
    assert list(empty.iterdir()) == []
    here = make_chunker("llamaindex-sentence:chunk_size=32:chunk_overlap=8").chunk(Document("d", "d", MANUAL))
    assert shown["chunks"]["llamaindex-sentence:chunk_size=32:chunk_overlap=8"] == [c.text for c in here.chunks]
    assert all(shown["chunks"].values())


@pytest.mark.parametrize(("spec", "named"), [
    ("llamaindex-sentence", ["SentenceSplitter(chunk_size=1024, chunk_overlap=200)"]),
    ("llamaindex-sentence:chunk_size=512:chunk_overlap=64", ["chunk_size=512, chunk_overlap=64"]),
    ("llamaindex-semantic:buffer_size=2:breakpoint_percentile_threshold=90",
     ["buffer_size=2", "breakpoint_percentile_threshold=90",
      'HuggingFaceEmbedding(model_name="sentence-transformers/all-MiniLM-L6-v2")']),
    ("chonkie-semantic:chunk_size=1000:threshold=0.7:similarity_window=2",
     ['embedding_model="sentence-transformers/all-MiniLM-L6-v2"', "chunk_size=1000", "threshold=0.7",
      "similarity_window=2"]),
])
def test_each_snippet_is_python_that_names_the_instances_parameters(spec, named):
    snippet = make_chunker(spec).snippet()
    tree = ast.parse(snippet)
    assert all(part in snippet for part in named), snippet
    assigned = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    assert "chunks" in assigned  # reads `text`, leaves the chunk texts in `chunks`


def test_the_sentence_snippet_run_as_written_gives_the_peers_chunks():
    chunker = make_chunker("llamaindex-sentence:chunk_size=48:chunk_overlap=12")
    scope: dict = {"text": MANUAL}
    exec(compile(chunker.snippet(), "snippet", "exec"), scope)  # noqa: S102  (our own snippet, as a user runs it)
    assert [c.text for c in chunker.chunk(Document("d", "d", MANUAL)).chunks] == [t.strip() for t in scope["chunks"]]
